"""Label reuse across system versions.

Version A is the pool's prediction, version B a threshold on the score
(``--threshold``). Per repetition: the sampler (``--sampler``: OASIS, adaptive, or static
importance sampling, a proposal fixed in advance) spends ``--labels-a`` labels evaluating A
(:func:`sample_traced`, which records every proposal). B is then estimated (1) from A's
labels alone (``reuse_estimate``, no new label), (2) from A's labels plus ``--labels-b``
new labels drawn by the same kind of sampler targeted at B (``continue_sampling``), and
(3) from scratch with that sampler and the same total number of labels as (2). Each of the three samples is estimated with
two weightings of the same draws: ``mixture`` (every draw weighted against the mixture of
all proposals used: the balance heuristic of Chaganty et al. 2017, the library's choice
when every proposal is fixed) and ``own`` (each draw's own p/q_t, Marchant & Rubinstein
2021; the library's choice when a proposal adapted). Both go
through ``estimate_from_labels`` (labelled groups exact, Wilson interval on n_eff), with
each variance of ``--variance``: ``model`` (the library's: fresh draws at the oracle
model's match rate of their stratum) and ``labels`` (labels only, no oracle model).
Reports bias with its Monte-Carlo standard error, MSE and 95% interval coverage of B's
precision, recall and F1 (an undefined estimate counts as a miss and as squared error 1).

    nice -n 10 python benchmarks/bench_pairs_reuse.py --pool abt-buy --sampler oasis --reps 400 --out runs_abt-buy_oasis.csv
    python benchmarks/bench_pairs_reuse.py --report runs_*_oasis.csv --summary-out benchmarks/data/bench_pairs_reuse_oasis.csv
    python benchmarks/bench_pairs_reuse.py --report benchmarks/data/bench_pairs_reuse_oasis.csv --markdown
    python benchmarks/bench_pairs_reuse.py --smoke   # abt-buy, both samplers, 2 runs of
                                                     # 200 + 50 labels; temp files
"""

from __future__ import annotations

import argparse
import itertools
import pickle
import sys
import tempfile
import time
import warnings
from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import pandas as pd

from er_evaluation.datasets import POOLS, load_pool
from er_evaluation.errors import UndefinedMetricWarning
from er_evaluation.pairs import (
    LabelOracle,
    LabelRun,
    continue_sampling,
    make_sampler,
    reuse_estimate,
)
from er_evaluation.pairs._search import _searched_region
from er_evaluation.pairs.reuse import sample_traced
from er_evaluation.vocabulary import pair_metric_names

sys.path.insert(0, str(Path(__file__).parent))
from bench_pairs_pools import cached, febrl_pool, patentsview_pool  # noqa: E402

BUILDERS = {"febrl": febrl_pool, "patentsview": patentsview_pool}
METRICS = ("P", "R", "F1")


def _search_bound(run, predicted_b, est) -> tuple[bool, float]:
    """(misses drawn, the lowest recall the unsearched predicted non-matches allow at 95%):
    the numbers behind the diagnostic of ``reuse_estimate``."""
    (_, _, hidden), misses = _searched_region(run, predicted_b, run.strata, 0.95)
    pp = float(predicted_b.sum())
    tp = est.precision.value * pp
    r = est.recall.value
    if not (tp > 0 and r > 0):
        return misses, 0.0
    return misses, tp / (tp / r + hidden)


VARIANCES = ("model", "labels")


def _with_variance(run, variance: str):
    """``run`` estimated with the library's variance (``model``: fresh draws at the oracle
    model's match rate of their stratum, the run's ``stratum_prior``) or the labels-only
    one (``labels``: no oracle model, as ``bench_pairs.py``'s ``:labels``)."""
    return run if variance == "model" else replace(run, stratum_prior=None)


def _setting(args):
    """The pool, B's prediction and pool, the truths and both sets of strata of a run."""
    pool = load_pool(args.pool) if args.pool in POOLS else cached(args.pool, BUILDERS[args.pool])
    predicted_b = (pool.scores >= args.threshold).astype(np.int8)
    pool_b = pool.with_prediction(predicted_b)
    truth = pool_b.truth()
    setting = {
        "pool": pool,
        "pool_b": pool_b,
        "predicted_b": predicted_b,
        "truth": [truth[m] for m in pair_metric_names(1.0)],
        "tp": float(np.sum(pool.labels * predicted_b)),
        "fn": float(np.sum(pool.labels * (1 - predicted_b))),
        "oracle": LabelOracle(pool.labels),
        "misses": np.flatnonzero((pool.labels == 1) & (predicted_b == 0)),
        # OASIS's default strata of each version (cut into chunks)
        "strata": {
            "a": make_sampler("oasis", pool, 0).strata,
            "b": make_sampler("oasis", pool_b, 0).strata,
        },
    }
    t = setting["truth"]
    print(
        f"pool {args.pool}: B = score >= {args.threshold} (PP {int(predicted_b.sum())}), "
        f"truth of B: P {t[0]:.4f}, R {t[1]:.4f}, F1 {t[2]:.4f}, "
        f"TP {setting['tp']:.0f}, FN {setting['fn']:.0f}",
        flush=True,
    )
    return setting


def _params(args, strata) -> dict:
    return {"strata": strata} if args.sampler == "oasis" else {}


def sample(args, setting, rep: int) -> list[tuple[str, int, dict]]:
    """Repetition ``rep``'s samples: (estimate name, new labels paid, {weighting: run})
    for A's labels alone, A's plus ``--labels-b`` new ones (and with ``--search``), and a
    fresh run of B."""
    pool, pool_b = setting["pool"], setting["pool_b"]
    strata_a, strata_b = setting["strata"]["a"], setting["strata"]["b"]
    oracle = setting["oracle"]
    seed = args.seed + rep

    def sampler(p, seed, strata):
        return make_sampler(args.sampler, p, seed, **_params(args, strata))

    run_a = sample_traced(pool, sampler(pool, seed, strata_a), oracle, args.labels_a)
    runs = [("reuse only", 0, run_a)]
    searches = [0.0] + ([args.search] if args.sampler == "oasis" and args.search > 0 else [])
    for search in searches:
        combined = continue_sampling(
            pool_b,
            run_a,
            oracle,
            args.labels_b,
            seed=10_000 + seed,
            method=args.sampler,
            search=search,
            **_params(args, strata_b),
        )
        name = "reuse + new" + (f", search {search:g}" if search else "")
        runs.append((name, combined.n_labels - run_a.n_labels, combined))
    fresh = sample_traced(
        pool_b, sampler(pool_b, 20_000 + seed, strata_b), oracle, args.labels_a + args.labels_b
    )
    runs.append(("fresh", fresh.n_labels, fresh))
    return [
        (name, paid, {"mixture": run.mixture_run(), "own": run.own_weights_run()})
        for name, paid, run in runs
    ]


def _stored(run, setting) -> dict:
    """``run`` without its strata, model strata and oracle-model prior (kept by name: the
    strata of A or of B), so that a later estimator re-attaches them as the current code
    builds them (:func:`_restored`)."""
    tag = (
        next((k for k, st in setting["strata"].items() if run.strata is st), None)
        if run.strata is not None
        else None
    )
    if run.strata is not None and tag is None:
        raise ValueError("a run's strata are neither A's nor B's")
    plain = {f.name: getattr(run, f.name) for f in fields(LabelRun)}
    plain |= {"strata": None, "model_strata": None, "stratum_prior": None}
    return {"run": plain, "strata": tag, "prior": run.stratum_prior is not None}


def _restored(stored: dict, args, setting) -> LabelRun:
    """The run of :func:`_stored` with its strata and the oracle-model prior the current
    sampler code gives them (OASIS's ``stratum_prior``)."""
    values = dict(stored["run"])
    tag = stored["strata"]
    if tag is not None:
        strata = setting["strata"][tag]
        pool = setting["pool"] if tag == "a" else setting["pool_b"]
        sampler = make_sampler(args.sampler, pool, 0, **_params(args, strata))
        model = getattr(sampler, "model_strata", None) or strata
        values |= {"strata": strata, "model_strata": model}
        if stored["prior"]:
            values["stratum_prior"] = sampler.stratum_prior
    return LabelRun(**values)


def _least_drawn(index: np.ndarray, misses: np.ndarray) -> int:
    """How often the least-drawn of B's missed matches (``misses``, pool rows) was drawn
    in a run's draws ``index``: 0 when one was never drawn."""
    drawn, counts = np.unique(index[np.isin(index, misses)], return_counts=True)
    return int(counts.min()) if len(drawn) == len(misses) and len(misses) else 0


def estimate_rows(args, setting, rep: int, samples) -> list[dict]:
    """One row per estimate x weighting x variance x metric of repetition ``rep``."""
    predicted_b = setting["predicted_b"]
    pp = float(predicted_b.sum())
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for (name, paid, by_weighting), variance in itertools.product(samples, args.variance):
            for weighting, r in by_weighting.items():
                least = _least_drawn(r.index, setting["misses"])
                est = reuse_estimate(_with_variance(r, variance), predicted_b)
                misses, bound = _search_bound(r, predicted_b, est)
                tp = est.precision.value * pp
                fn = tp / est.recall.value - tp if est.recall.value > 0 else np.nan
                for metric, e, t in zip(
                    METRICS, (est.precision, est.recall, est.f[0]), setting["truth"], strict=True
                ):
                    rows.append(
                        {
                            "pool": args.pool,
                            "sampler": args.sampler,
                            "threshold": args.threshold,
                            "rep": rep,
                            "estimate": name,
                            "weighting": weighting,
                            "variance": variance,
                            "new_labels": paid,
                            "metric": metric,
                            "value": e.value,
                            "low": e.ci_low,
                            "high": e.ci_high,
                            "truth": t,
                            "reliable": e.reliable,
                            "misses_drawn": misses,
                            "recall_bound": bound,
                            "tp": tp,
                            "fn": fn,
                            "tp_truth": setting["tp"],
                            "fn_truth": setting["fn"],
                            "least_drawn_miss": least,
                        }
                    )
    return rows


def simulate(args) -> pd.DataFrame:
    """One row per repetition x estimate x weighting x variance x metric: value, low,
    high, truth, the diagnostic (reliable, misses drawn, the hidden-match bound on R) and
    the estimated TP and FN of B. With ``--save-runs DIR`` every repetition's samples are
    also stored (``rep_<n>.pkl``); with ``--from-runs DIR`` they are read from there and
    only estimated (the samplers do not depend on the estimator: a new variance is
    measured on the same draws)."""
    setting = _setting(args)
    if args.from_runs:
        paths = sorted(Path(args.from_runs).glob("rep_*.pkl"), key=lambda p: int(p.stem[4:]))
        reps = [int(p.stem[4:]) for p in paths]
    else:
        reps = list(range(args.reps))
    if args.save_runs:
        Path(args.save_runs).mkdir(parents=True, exist_ok=True)
    rows = []
    start = time.time()
    for i, rep in enumerate(reps):
        if args.from_runs:
            with open(Path(args.from_runs) / f"rep_{rep}.pkl", "rb") as fh:
                stored = pickle.load(fh)
            samples = [
                (name, paid, {w: _restored(r, args, setting) for w, r in runs.items()})
                for name, paid, runs in stored
            ]
        else:
            samples = sample(args, setting, rep)
            if args.save_runs:
                stored = [
                    (name, paid, {w: _stored(r, setting) for w, r in runs.items()})
                    for name, paid, runs in samples
                ]
                with open(Path(args.save_runs) / f"rep_{rep}.pkl", "wb") as fh:
                    pickle.dump(stored, fh)
        rows += estimate_rows(args, setting, rep, samples)
        if (i + 1) % 20 == 0 or i + 1 == len(reps):
            print(f"  {i + 1}/{len(reps)} reps, {time.time() - start:.0f} s", flush=True)
            if args.out:
                pd.DataFrame(rows).to_csv(args.out, index=False)
    return pd.DataFrame(rows)


def _mean_where(g: pd.DataFrame, rows: pd.Series) -> float:
    """Mean draws of the least-drawn missed match over the selected runs (NaN if none, or
    for per-run files written before that column)."""
    if "least_drawn_miss" not in g or not rows.any():
        return np.nan
    return float(g.loc[rows, "least_drawn_miss"].mean())


def summarise(frame: pd.DataFrame) -> pd.DataFrame:
    """Bias +- Monte-Carlo SE, MSE and coverage per pool x estimate x weighting x metric;
    the diagnostic's flag rate, coverage among the estimates it leaves reliable and how
    often its recall bound lies below the truth and below the interval's lower end; the bias of B's estimated TP and FN, and
    the recall bias split in two with g(TP, FN) = TP / (TP + FN) and means over the runs:
    the part of the totals, g(mean TP^, mean FN^) - g(TP, FN) (with its delta-method
    Monte-Carlo SE), and Jensen's gap, mean g(TP^, FN^) - g(mean TP^, mean FN^) (recall
    is convex in FN: an unbiased FN^ still gives a recall biased upwards)."""
    out = []
    keys = ["pool", "sampler", "estimate", "weighting", "variance", "metric"]
    if "variance" not in frame:  # per-run files written before the variance switch
        frame = frame.assign(variance="model")
    # one pool, several truths of B: the pool is named with B's threshold
    frame = frame.assign(pool=frame["pool"] + ", B >= " + frame["threshold"].map("{:g}".format))
    for key, g in frame.groupby(keys, sort=False):
        err = (g["value"] - g["truth"]).to_numpy()
        ok = ~np.isnan(err)
        covered = (g["low"] <= g["truth"] + 1e-12) & (g["truth"] <= g["high"] + 1e-12)
        cover = float(covered.mean())
        reliable = g["reliable"].astype(bool)
        tp, fn = g["tp"].to_numpy(), g["fn"].to_numpy()
        both = ~np.isnan(tp) & ~np.isnan(fn)
        tp_t, fn_t = float(g["tp_truth"].iloc[0]), float(g["fn_truth"].iloc[0])
        cov = np.cov(tp[both], fn[both]) / both.sum() if both.sum() > 2 else np.full((2, 2), np.nan)
        tp_m, fn_m = float(np.mean(tp[both])), float(np.mean(fn[both]))
        ap_m = tp_m + fn_m
        totals = tp_m / ap_m - tp_t / (tp_t + fn_t)
        grad = np.array([fn_m / ap_m**2, -tp_m / ap_m**2])
        totals_mcse = float(np.sqrt(max(grad @ cov @ grad, 0.0)))
        recall = tp[both] / (tp[both] + fn[both])
        jensen = float(np.mean(recall)) - tp_m / ap_m

        def bias(x):
            x = x[~np.isnan(x)]
            return float(np.mean(x)), float(np.std(x, ddof=1) / np.sqrt(len(x)))

        out.append(
            dict(zip(keys, key, strict=True))
            | dict(
                reps=len(g),
                new_labels=float(g["new_labels"].mean()),
                bias=float(np.mean(err[ok])),
                bias_mcse=float(np.std(err[ok], ddof=1) / np.sqrt(ok.sum())),
                mse=float(np.mean(np.where(ok, err, 1.0) ** 2)),
                cover=cover,
                width=float(np.nanmean(g["high"] - g["low"])),
                exact=float(np.mean(g["high"] - g["low"] == 0)),
                sd=float(np.nanstd(g["value"], ddof=1)),
                above=float(np.mean(g["low"] > g["truth"] + 1e-12)),
                below=float(np.mean(g["high"] < g["truth"] - 1e-12)),
                least_above=_mean_where(g, g["low"] > g["truth"] + 1e-12),
                least_other=_mean_where(g, ~(g["low"] > g["truth"] + 1e-12)),
                cover_mcse=float(np.sqrt(cover * (1 - cover) / len(g))),
                undefined=float(np.mean(~ok)),
                flagged=float(np.mean(~reliable)),
                cover_reliable=float(covered[reliable].mean()) if reliable.any() else np.nan,
                misses_drawn=float(g["misses_drawn"].astype(bool).mean()),
                bound_below_truth=float(np.mean(g["recall_bound"] <= g["truth"] + 1e-12)),
                bound_below_interval=float(np.mean(g["recall_bound"] < g["low"])),
                tp_bias=bias(tp - tp_t)[0],
                tp_bias_mcse=bias(tp - tp_t)[1],
                fn_bias=bias(fn - fn_t)[0],
                fn_bias_mcse=bias(fn - fn_t)[1],
                recall_bias_totals=totals,
                recall_bias_totals_mcse=totals_mcse,
                recall_bias_jensen=jensen,
            )
        )
    return pd.DataFrame(out)


SUMMARY_COLUMNS = {"pool", "sampler", "estimate", "weighting", "variance", "metric", "bias"}
LATER_COLUMNS = ("exact", "least_above", "least_other")
RUN_COLUMNS = {"pool", "threshold", "rep", "value", "low", "high", "truth"}


def _read_report(parser: argparse.ArgumentParser, paths: list[str]) -> pd.DataFrame:
    """The summary of ``--report``'s CSVs: stored summaries as they are, per-repetition
    rows summarised (:func:`summarise`). A missing file or one of neither kind stops with
    a message naming it."""
    summaries, runs = [], []
    for path in paths:
        try:
            frame = pd.read_csv(path)
        except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
            parser.error(f"--report {path}: cannot read it ({error})")
        if RUN_COLUMNS <= set(frame.columns):
            runs.append(frame)
        elif SUMMARY_COLUMNS <= set(frame.columns):
            summaries.append(frame)
        else:
            parser.error(
                f"--report {path}: neither per-repetition rows (--out; columns "
                f"{sorted(RUN_COLUMNS)}) nor a summary (--summary-out; columns "
                f"{sorted(SUMMARY_COLUMNS)})"
            )
    if runs:
        summaries.append(summarise(pd.concat(runs, ignore_index=True)))
    summary = pd.concat(summaries, ignore_index=True)
    # summaries written before these columns existed show them as "-"
    return summary.assign(**{c: np.nan for c in LATER_COLUMNS if c not in summary})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pool", default="abt-buy")
    parser.add_argument(
        "--sampler", default="oasis", choices=("oasis", "importance"), help="for A, B and fresh"
    )
    parser.add_argument("--threshold", type=float, default=0.3, help="B: score >= threshold")
    parser.add_argument("--labels-a", type=int, default=1000)
    parser.add_argument("--labels-b", type=int, default=300)
    parser.add_argument(
        "--search",
        type=float,
        default=0.0,
        help="also continue with continue_sampling(search=...) (OASIS only)",
    )
    parser.add_argument(
        "--variance",
        nargs="+",
        default=["model"],
        choices=VARIANCES,
        help="variance(s) to estimate every sample with (model: the library's; labels: "
        "labels only, no oracle model)",
    )
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="CSV of the per-repetition rows (written as it goes)")
    parser.add_argument("--save-runs", help="directory to store every repetition's samples in")
    parser.add_argument(
        "--from-runs",
        help="directory of stored samples (--save-runs, same pool, threshold and sampler): "
        "estimate them instead of sampling",
    )
    parser.add_argument(
        "--report",
        nargs="+",
        help="summarise per-repetition CSVs (--out) or read stored summaries (--summary-out, "
        "as benchmarks/data/bench_pairs_reuse_oasis.csv) and exit",
    )
    parser.add_argument("--markdown", action="store_true", help="the summary as the README table")
    parser.add_argument(
        "--details",
        action="store_true",
        help="the summary as detailed tables (every weighting and variance, the diagnostic, "
        "the recall bias split into totals and Jensen's gap, interval widths)",
    )
    parser.add_argument("--summary-out", help="CSV of the summary (one row per metric)")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="abt-buy, OASIS (stored runs, then estimated again from them, with the search) "
        "and static IS, 2 runs of 200 + 50 labels, both variances, the README tables; files "
        "in a temporary folder (seconds)",
    )
    args = parser.parse_args()
    if args.smoke:
        smoke(parser)
        return
    summary = _read_report(parser, args.report) if args.report else summarise(simulate(args))
    if args.summary_out:
        summary.to_csv(args.summary_out, index=False)
    if args.markdown or args.details:
        print(details(summary) if args.details else markdown(summary))
        return
    pd.set_option("display.width", 200)
    print(summary.to_string(index=False, float_format=lambda x: f"{x:.4g}"))


def smoke(parser: argparse.ArgumentParser) -> None:
    """Every path of the script at toy size (see ``--smoke``)."""
    with tempfile.TemporaryDirectory() as tmp:
        argv = ["--labels-a", "200", "--labels-b", "50", "--reps", "2"]
        argv += ["--variance", *VARIANCES, "--search", "0.5"]
        runs = str(Path(tmp) / "runs")
        frames = [
            simulate(parser.parse_args([*argv, "--save-runs", runs, "--out", f"{tmp}/a.csv"])),
            simulate(parser.parse_args([*argv, "--from-runs", runs])),
            simulate(parser.parse_args([*argv, "--sampler", "importance", "--search", "0"])),
        ]
        summary = summarise(pd.concat(frames, ignore_index=True))
        summary.to_csv(Path(tmp) / "summary.csv", index=False)
        stored = _read_report(parser, [str(Path(tmp) / "summary.csv")])
    print(markdown(stored))
    print(details(summary))


def _library_weighting(summary: pd.DataFrame) -> pd.Series:
    """The rows of the library's weighting: own weights for OASIS (a proposal that adapts),
    mixture weights for static IS (fixed proposals)."""
    return ((summary.sampler == "oasis") & (summary.weighting == "own")) | (
        (summary.sampler == "importance") & (summary.weighting == "mixture")
    )


def markdown(summary: pd.DataFrame) -> str:
    """The README table: per pool x estimate of B (without the ``--search`` rows), recall
    bias +- Monte-Carlo SE under both weightings, then for the library's weighting with the
    library's variance F1 MSE, coverage of P / R / F1 and the share of runs whose recall is
    flagged not reliable, and recall coverage with the labels-only variance ("-" where that
    variance was not run)."""
    lines = [
        "| pool | estimate of B | new labels | runs | recall bias, own weights | mixture weights "
        "| F1 MSE | coverage P / R / F1 | R, labels only | R flagged |",
        "|---|---|---:|---:|---|---|---:|---|---:|---:|",
    ]
    shown = summary[~summary.estimate.str.contains("search")]
    library = _library_weighting(shown)
    for (pool, _, estimate), g in shown.groupby(["pool", "sampler", "estimate"], sort=False):
        recall = g[g.metric == "R"]
        model = g[library[g.index] & (g.variance == "model")].set_index("metric")
        labels = recall[library[recall.index] & (recall.variance == "labels")]
        bias = {
            w: recall[(recall.weighting == w) & (recall.variance == "model")].iloc[0]
            for w in ("own", "mixture")
        }
        cover = " / ".join(f"{100 * model.cover[m]:.1f}" for m in METRICS)
        labels_only = f"{100 * labels.cover.iloc[0]:.1f}" if len(labels) else "-"
        lines.append(
            f"| {pool.split(',')[0]} | {estimate} | {model.new_labels['R']:,.0f} | "
            f"{int(model.reps['R'])} | "
            + " | ".join(f"{b.bias:+.4f} ± {b.bias_mcse:.4f}" for b in bias.values())
            + f" | {model.mse['F1']:.2e} | {cover} | {labels_only} | "
            f"{100 * model.flagged['R']:.0f}% |"
        )
    return "\n".join(lines)


def _shown(value: float, spec: str, unit: str = "") -> str:
    """``value`` formatted, or "-" where the summary has no such figure (NaN)."""
    return "-" if np.isnan(value) else format(value, spec) + unit


def details(summary: pd.DataFrame) -> str:
    """Detailed tables: per pool x sampler x estimate x weighting, bias, MSE, coverage and
    the share of runs whose precision is exact (every predicted match of B labelled: an
    interval of zero width);
    then, for the library's weighting (own for OASIS, mixture for static IS) and
    variance, the diagnostic and the decomposition of the recall bias; last, for that
    weighting and each variance, recall's interval against the spread of the estimates
    over the runs (mean width / (2 x 1.96 x their SD): about 1 for a normal estimate
    whose interval is right on average)."""
    lines = [
        "| pool | sampler | estimate of B | weights | variance | new labels | runs | bias P "
        "| bias R | bias F1 | MSE F1 | cover P / R / F1 | width R / F1 | P exact |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    keys = ["pool", "sampler", "estimate", "weighting", "variance"]
    for key, g in summary.groupby(keys, sort=False):
        m = g.set_index("metric")
        bias = [f"{m.bias[x]:+.4f} ± {m.bias_mcse[x]:.4f}" for x in METRICS]
        cover = " / ".join(f"{100 * m.cover[x]:.1f}%" for x in METRICS)
        width = " / ".join(f"{m.width[x]:.3f}" for x in METRICS[1:])
        lines.append(
            f"| {' | '.join(key)} | {m.new_labels['P']:,.0f} | {int(m.reps['P'])} | "
            f"{' | '.join(bias)} | {m.mse['F1']:.2e} | {cover} | {width} | "
            f"{_shown(100 * m.exact['P'], '.0f', '%')} |"
        )
    lines += [
        "",
        "| pool | sampler | estimate of B | runs | miss drawn | R flagged | cover R: all / "
        "unflagged | R bound <= truth | R bound < interval | bias TP | bias FN | bias R | of which: totals | "
        "Jensen |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    library = summary[_library_weighting(summary) & (summary.variance == "model")]
    for key, g in library.groupby(keys[:3], sort=False):
        r = g.set_index("metric").loc["R"]
        lines.append(
            f"| {' | '.join(key)} | {int(r.reps)} | {100 * r.misses_drawn:.0f}% | "
            f"{100 * r.flagged:.0f}% | {100 * r.cover:.1f}% / {100 * r.cover_reliable:.1f}% | "
            f"{100 * r.bound_below_truth:.0f}% | {100 * r.bound_below_interval:.1f}% | "
            f"{r.tp_bias:+.2f} ± {r.tp_bias_mcse:.2f} | "
            f"{r.fn_bias:+.2f} ± {r.fn_bias_mcse:.2f} | {r.bias:+.4f} ± {r.bias_mcse:.4f} | "
            f"{r.recall_bias_totals:+.4f} ± {r.recall_bias_totals_mcse:.4f} | "
            f"{r.recall_bias_jensen:+.4f} |"
        )
    lines += [
        "",
        "| pool | sampler | estimate of B | variance | runs | cover R | interval above / "
        "below truth | mean width R | SD of R over runs | width / (2 x 1.96 SD) | draws of "
        "the least-drawn miss: runs above truth / others |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    weighting = summary[_library_weighting(summary)]
    for key, g in weighting.groupby(["pool", "sampler", "estimate", "variance"], sort=False):
        r = g.set_index("metric").loc["R"]
        lines.append(
            f"| {' | '.join(key)} | {int(r.reps)} | {100 * r.cover:.1f}% | "
            f"{100 * r.above:.1f}% / {100 * r.below:.1f}% | {r.width:.3f} | {r.sd:.4f} | "
            f"{r.width / (2 * 1.96 * r.sd) if r.sd > 0 else np.inf:.2f} | "
            f"{_shown(r.least_above, '.1f')} / {_shown(r.least_other, '.1f')} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
