"""Pair-label intervals against the error they should reflect, and the flag against the misses.

For OASIS, the adaptive importance sampler of Marchant & Rubinstein (2021) ("ais") and
static importance sampling ("importance") on the benchmark pools, per pool x method x
budget (500 / 1,000 / 2,000 labels) and metric (precision, recall, F1):

- coverage of the library's 95% interval, with its Monte-Carlo SE sqrt(p (1 - p) / n);
- the width ratio: mean interval width / (2 x 1.96 x RMSE), which is about 1 for an
  interval as wide as the estimate's error calls for; its Monte-Carlo SE by bootstrap
  over the runs;
- F1's mean squared error with its Monte-Carlo SE (sd of the squared errors / sqrt(runs));
- the flag: the share of runs whose estimate is marked not reliable, and how many of
  the runs whose interval misses the truth are flagged (flag recall).

Cells where every run's estimate is exact (a census of the pairs the metric depends on:
zero width, zero error) are reported as "exact"; so is the width ratio of a cell whose
estimates are all exact while their intervals are not (RMSE 0: no error to reflect, the
ratio is undefined), whose coverage is shown as measured. A width ratio's SE is "n/a"
where some bootstrap resample of the runs has no error (its ratio undefined).

Stages, each resumable (what exists is kept, so a stage can be run in parts and
interrupted at any time):

- ``--draw``: one run per pool x method x seed to ``--labels`` labels (default 2,000), saved
  as ``CACHE/runs/<pool>/<method>/<seed>.npz`` (draw order: pool rows, labels, weights,
  strata, new-label flags);
- ``--estimate``: the library's estimates at each budget (the run cut right after the
  draw that paid for the budget's last label, where a run of that budget stops), one row
  per run x budget x metric in ``CACHE/rows/<pool>_<method>.csv``;
- ``--report``: the table above from the rows, as a Markdown table (``--out`` a CSV; from
  a stored one with ``--from-summary``; ``--table-labels``: some budgets only), and
  the flag's frontier: misses flagged against the flag rate of the in-band cells for
  several oracle-model gaps (``flag_frontier``).

``--hidden none`` (with ``--estimate`` and a variant ``--rows`` folder): the ablation without
the oracle model's hidden matches, each interval the labels' own (``drop_hidden``).

Commands (benchmarks/README.md, "Pair-label intervals"):

    nice -n 10 python benchmarks/bench_pairs_intervals.py --draw --estimate \\
        --pools abt-buy --methods oasis ais importance --seeds 23000000 100 \\
        --cache /work/scratch/pairs/intervals
    python benchmarks/bench_pairs_intervals.py --report --cache /work/scratch/pairs/intervals \\
        --out benchmarks/data/bench_pairs_intervals.csv
    python benchmarks/bench_pairs_intervals.py --report \\
        --from-summary benchmarks/data/bench_pairs_intervals.csv --table-labels 2000

``--smoke``: a few runs of 60 labels on one small pool, in seconds.
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))

from bench_pairs import pools  # noqa: E402

from er_evaluation.pairs import (  # noqa: E402
    LabelOracle,
    _remainder,
    _variance,
    estimate_from_labels,
    estimates,
    make_sampler,
    measures,
)
from er_evaluation.pairs._search import label_range  # noqa: E402
from er_evaluation.pairs._variance import _model, _unlabelled_non_matches  # noqa: E402
from er_evaluation.pairs.run import run_of_sampler, sample_labels  # noqa: E402

POOLS = ("abt-buy", "dblp-acm", "restaurant", "restaurant-all", "febrl", "patentsview")
METHODS = ("oasis", "ais", "importance")
BUDGETS = (500, 1000, 2000)
METRICS = ("pairwise_precision", "pairwise_recall", "pairwise_f1")
Z95 = 1.959963984540054
BAND = (0.93, 0.98)


# --- runs ---------------------------------------------------------------------------------

_TEMPLATES: dict[tuple[str, str], object] = {}


def template(name: str, pool, method: str):
    """The sampler of ``method`` on ``pool`` with seed 0: its strata, priors and proposal
    are shared by every run (only the random stream differs)."""
    key = (name, method)
    if key not in _TEMPLATES:
        _TEMPLATES[key] = make_sampler(method, pool, 0)
    return _TEMPLATES[key]


def sampler_for(name: str, pool, method: str, seed: int):
    base = template(name, pool, method)
    if method == "importance":  # a fixed proposal: only the stream differs
        sampler = copy.copy(base)
        sampler.rng = np.random.Generator(np.random.PCG64(seed))
        return sampler
    return make_sampler(method, pool, seed, strata=base.strata)


def run_path(cache: Path, name: str, method: str, seed: int) -> Path:
    return cache / "runs" / name / method / f"{seed}.npz"


def draw(cache: Path, name: str, pool, method: str, seeds, n_labels: int) -> int:
    """Draw and save the runs not saved yet; returns how many were drawn."""
    drawn = 0
    for seed in seeds:
        path = run_path(cache, name, method, seed)
        if path.exists():
            continue
        sampler = sampler_for(name, pool, method, seed)
        run = sample_labels(pool, sampler, LabelOracle(pool.labels), n_labels)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(
            tmp,
            index=run.index,
            label=run.label,
            weight=run.weight,
            stratum=run.stratum,
            new_label=run.new_label,
        )
        tmp.rename(path)
        drawn += 1
    return drawn


def load_run(cache: Path, name: str, pool, method: str, seed: int):
    data = np.load(run_path(cache, name, method, seed))
    return run_of_sampler(
        template(name, pool, method),
        pool.n_pairs,
        data["index"],
        data["label"],
        data["weight"],
        data["stratum"],
        data["new_label"],
    )


# --- estimates ----------------------------------------------------------------------------


def truth_of(pool) -> dict[str, float]:
    return pool.truth(1.0)


def budget_ends(run, budgets) -> dict[int, int]:
    """Draw count at which a run of each budget stops (right after the draw paying for
    the budget's last label); budgets the run did not reach are left out."""
    n_labels = np.cumsum(run.new_label)
    ends = {}
    for b in budgets:
        if n_labels[-1] >= b:
            ends[b] = int(np.searchsorted(n_labels, b, side="left")) + 1
    return ends


def reason_code(reason: str) -> str:
    """A short name for why an estimate is flagged (the diagnostics' text starts with it)."""
    if not reason:
        return ""
    for code, words in (
        ("undefined", "undefined"),
        ("search", "no match was drawn among the predicted non-matches"),
        ("boundary", "at its boundary"),
        ("model", "above what the oracle model"),
        ("few", "effective"),
    ):
        if words in reason:
            return code
    return "other"


def deficit_features(run, predicted) -> dict:
    """How the labelled deficits (missed matches among the predicted non-matches, false
    positives among the predicted matches) of a run carry the estimate: distinct pairs
    found, Kish's effective number of their weighted draws and the share of the largest
    one (for screening a reliability flag)."""
    h = predicted[run.index]
    w = run.weight.astype(np.float64)
    rows, first = np.unique(run.index, return_index=True)
    out = {}
    for name, pred, lab in (("miss", 0, 1), ("fp", 1, 0)):
        hit = (h == pred) & (run.label == lab)
        wd = w[hit]
        out[f"{name}_found"] = int(np.sum((predicted[rows] == pred) & (run.label[first] == lab)))
        out[f"{name}_neff"] = float(wd.sum() ** 2 / np.sum(wd**2)) if len(wd) else 0.0
        out[f"{name}_top"] = float(wd.max() / wd.sum()) if len(wd) else np.nan
    return out


def model_features(run, predicted, tp: float) -> dict:
    """Missed matches of the oracle model against the estimate (for screening a flag):
    the model's posterior-predictive count of matches among the predicted non-matches
    (labelled misses plus U_k r_k over the model strata), the model's count in the
    strata where no match was drawn, and the pairs one predicted-non-match draw stands
    for (mean and largest, as a count of missed matches PP w / D)."""
    out = {"fn_model": np.nan, "fn_blind": np.nan, "w0_mean": np.nan, "w0_max": np.nan}
    found = _model(run)
    h = predicted[run.index]
    w = run.weight.astype(np.float64)
    dd = float(np.sum(w[h == 1]))
    pp = float(np.sum(predicted))
    if dd > 0 and np.any(h == 0):
        out["w0_mean"] = pp * float(np.mean(w[h == 0])) / dd
        out["w0_max"] = pp * float(np.max(w[h == 0])) / dd
    if found is None:
        return out
    strata, _, rates, rows, labelled, label = found
    u0, _, m, m0 = _unlabelled_non_matches(strata, predicted, rows, labelled, label)
    out["fn_model"] = m0 + float(np.sum(u0 * rates))
    out["fn_blind"] = float(np.sum((u0 * rates)[m == 0]))
    return out


def estimate_rows(name: str, pool, method: str, seed: int, run, truth) -> list[dict]:
    rows = []
    for budget, end in budget_ends(run, BUDGETS).items():
        part = run.prefix(end)
        features = deficit_features(part, pool.predicted)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = estimate_from_labels(part, pool.predicted)
        pp = float(np.sum(pool.predicted))
        tp = result.precision.value * pp
        features |= model_features(part, pool.predicted, tp)
        possible = label_range(part, pool.predicted, [1.0, 0.0, 0.5])
        for j, (e, alpha) in enumerate(
            zip((result.precision, result.recall, result.f[0]), (1, 0, 0.5), strict=True)
        ):
            d = e.diagnostics
            # the oracle-model gap of every recall / F estimate, flagged or not, for the
            # flag's frontier (catch rate against false alarms per MODEL_GAP)
            # judged on the weighted value before the labels' range clipped it (plugin)
            tp_w = result.precision.plugin * pp
            model_value = tp_w / (alpha * pp + (1 - alpha) * (tp_w + features["fn_model"]))
            gap = (
                (e.plugin - model_value) / e.std_error if alpha < 1 and e.std_error > 0 else np.nan
            )
            rows.append(
                {
                    "pool": name,
                    "method": method,
                    "seed": seed,
                    "budget": budget,
                    "metric": e.metric,
                    "value": e.value,
                    "std_error": e.std_error,
                    "ci_low": e.ci_low,
                    "ci_high": e.ci_high,
                    "ci_method": e.ci_method,
                    "truth": truth[e.metric],
                    "reliable": bool(d.reliable) if d is not None else False,
                    "reason": reason_code(d.reason if d is not None else "undefined"),
                    "n_draws": e.n_draws,
                    "n_effective": d.n_effective if d is not None else np.nan,
                    "top_share": d.top_share if d is not None else np.nan,
                    "model_gap": gap,
                    "label_low": possible[0, j],
                    "label_high": possible[1, j],
                    **features,
                }
            )
    return rows


ROWS = "rows"  # folder of the estimates' rows under the cache (--rows)


def drop_hidden() -> None:
    """The ablation ``--hidden none``: every pair-label interval without the oracle model's
    draws of the hidden matches (``_variance.finish`` called without its ``shift``), so
    recall and F carry the labels' own Wilson interval on the martingale variance."""
    original = _variance.finish

    def finish(*args, shift=None, **kwargs):
        return original(*args, **kwargs)

    for module in (_variance, _remainder, estimates, measures):
        module.finish = finish


def rows_path(cache: Path, name: str, method: str) -> Path:
    return cache / ROWS / f"{name}_{method}.csv"


def estimate(cache: Path, name: str, pool, method: str, seeds) -> int:
    """Estimate the saved runs of ``seeds`` whose rows are not written yet."""
    path = rows_path(cache, name, method)
    done = set(pd.read_csv(path, usecols=["seed"])["seed"]) if path.exists() else set()
    truth = truth_of(pool)
    count = 0
    for seed in seeds:
        if seed in done or not run_path(cache, name, method, seed).exists():
            continue
        run = load_run(cache, name, pool, method, seed)
        frame = pd.DataFrame(estimate_rows(name, pool, method, seed, run, truth))
        path.parent.mkdir(parents=True, exist_ok=True)
        frame.to_csv(path, mode="a", header=not path.exists(), index=False)
        count += 1
    return count


# --- report -------------------------------------------------------------------------------


def _ratio(width: np.ndarray, error: np.ndarray) -> float:
    rmse = float(np.sqrt(np.mean(error**2)))
    return float(np.mean(width)) / (2 * Z95 * rmse) if rmse > 0 else np.inf


def summarize(rows: pd.DataFrame, n_boot: int = 200, seed: int = 0) -> pd.DataFrame:
    """One row per pool x method x budget x metric (module docstring)."""
    rng = np.random.default_rng(seed)
    rows = rows.dropna(subset=["value"]).copy()
    rows["width"] = rows["ci_high"] - rows["ci_low"]
    rows["error"] = rows["value"] - rows["truth"]
    rows["covered"] = (rows["ci_low"] <= rows["truth"] + 1e-12) & (
        rows["truth"] <= rows["ci_high"] + 1e-12
    )
    rows["flagged"] = ~rows["reliable"].astype(bool)
    out = []
    for key, g in rows.groupby(["pool", "method", "budget", "metric"], sort=False):
        n = len(g)
        cover = float(g["covered"].mean())
        width, error = g["width"].to_numpy(), g["error"].to_numpy()
        exact = bool(np.all(width == 0) and np.all(np.abs(error) < 1e-12))
        ratio = _ratio(width, error)
        boot = []
        if not exact and np.isfinite(ratio):
            for _ in range(n_boot):
                pick = rng.integers(0, n, n)
                boot.append(_ratio(width[pick], error[pick]))
        misses = g[~g["covered"]]
        out.append(
            {
                "pool": key[0],
                "method": key[1],
                "budget": key[2],
                "metric": key[3],
                "runs": n,
                "coverage": cover,
                "coverage_se": float(np.sqrt(cover * (1 - cover) / n)),
                "mean_width": float(width.mean()),
                "rmse": float(np.sqrt(np.mean(error**2))),
                "mse": float(np.mean(error**2)),
                "mse_se": float(np.std(error**2, ddof=1) / np.sqrt(n)) if n > 1 else np.nan,
                "bias": float(error.mean()),
                "width_ratio": ratio,
                "width_ratio_se": float(np.std(boot)) if boot else np.nan,
                "exact": exact,
                "flagged": float(g["flagged"].mean()),
                "misses": len(misses),
                "misses_flagged": int(misses["flagged"].sum()),
            }
        )
    return pd.DataFrame(out)


def _short(metric: str) -> str:
    return {"pairwise_precision": "P", "pairwise_recall": "R", "pairwise_f1": "F1"}[metric]


def markdown(summary: pd.DataFrame) -> str:
    """The table of benchmarks/README.md: one line per pool x method x budget."""
    lines = [
        "| pool | method | labels | runs | coverage P / R / F1 (MC SE) | width ratio P / R / F1 "
        "(MC SE) | F1 MSE (MC SE) | flagged P / R / F1 | misses flagged |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key, g in summary.groupby(["pool", "method", "budget"], sort=False):
        g = g.set_index("metric").reindex(list(METRICS))

        def cov(m, g=g):
            r = g.loc[m]
            return "exact" if r["exact"] else f"{100 * r['coverage']:.1f}"

        def ratio(m, g=g):
            r = g.loc[m]
            if r["exact"] or r["rmse"] == 0:  # no error for the width to reflect
                return "exact"
            # a bootstrap resample without error has no ratio: then the SE is not shown
            se = r["width_ratio_se"]
            return f"{r['width_ratio']:.2f} ({f'{se:.2f}' if np.isfinite(se) else 'n/a'})"

        flagged = " / ".join(f"{100 * g.loc[m, 'flagged']:.0f}%" for m in METRICS)
        se = max(g["coverage_se"]) * 100
        misses, caught = int(g["misses"].sum()), int(g["misses_flagged"].sum())
        lines.append(
            f"| {key[0]} | {key[1]} | {key[2]:,} | {int(g['runs'].max())} | "
            f"{' / '.join(cov(m) for m in METRICS)} ({se:.1f}) | "
            f"{' / '.join(ratio(m) for m in METRICS)} | "
            f"{g.loc['pairwise_f1', 'mse']:.1e} ({g.loc['pairwise_f1', 'mse_se']:.1e}) | "
            f"{flagged} | "
            f"{caught} of {misses} |"
        )
    return "\n".join(lines)


def flag_summary(summary: pd.DataFrame, band=BAND) -> str:
    """Flag recall over every miss, and the flag rate over the cells whose coverage is in
    the band (exact cells left out)."""
    live = summary[~summary["exact"]]
    misses, caught = int(live["misses"].sum()), int(live["misses_flagged"].sum())
    in_band = live[(live["coverage"] >= band[0]) & (live["coverage"] <= band[1])]
    rate = float(np.average(in_band["flagged"], weights=in_band["runs"])) if len(in_band) else 0.0
    return (
        f"misses flagged: {caught} of {misses} ({caught / max(misses, 1):.0%}); "
        f"flag rate in the {len(in_band)} cells in [{band[0]:.0%}, {band[1]:.0%}]: {rate:.1%}"
    )


FRONTIER_GAPS = (0.2, 0.25, 0.35, 0.5, 0.75, np.inf)
CHOSEN_ON = ("abt-buy", "restaurant")  # the pools MODEL_GAP was chosen on


def _rate(flags: np.ndarray) -> str:
    """Share of True with its binomial Monte-Carlo SE."""
    if len(flags) == 0:
        return "n/a"
    p = float(np.mean(flags))
    return f"{p:.1%} ({np.sqrt(p * (1 - p) / len(flags)):.1%})"


def flag_frontier(rows: pd.DataFrame, band=BAND, gaps=FRONTIER_GAPS) -> str:
    """The flag's catch rate (misses flagged) against its false alarms (flag rate in the
    cells whose coverage is in ``band``, exact cells left out) for each oracle-model gap
    in ``gaps`` (inf: without that flag), with binomial Monte-Carlo SEs, on the pools
    ``MODEL_GAP`` was chosen on and on the others. The other flags (boundary, undefined)
    as the library raises them."""
    rows = rows.dropna(subset=["value"]).copy()
    tol = 1e-12
    covered = (rows["ci_low"] <= rows["truth"] + tol) & (rows["truth"] <= rows["ci_high"] + tol)
    rows["miss"] = ~covered
    width = rows["ci_high"] - rows["ci_low"]
    keys = ["pool", "method", "budget", "metric"]
    exact = (width == 0) & ((rows["value"] - rows["truth"]).abs() < tol)
    cell = rows.assign(covered=covered, exact=exact).groupby(keys)
    cov, all_exact = cell["covered"].transform("mean"), cell["exact"].transform("all")
    rows = rows[~all_exact]
    in_band = ((cov >= band[0]) & (cov <= band[1]))[~all_exact]
    other = ~rows["reliable"].astype(bool) & (rows["reason"] != "model")
    lines = []
    for gap in gaps:
        flag = other | (rows["model_gap"] >= gap)
        parts = []
        for name, part in (
            ("all pools", np.ones(len(rows), bool)),
            ("chosen on", rows["pool"].isin(CHOSEN_ON).to_numpy()),
            ("held out", ~rows["pool"].isin(CHOSEN_ON).to_numpy()),
        ):
            miss = rows["miss"].to_numpy() & part
            band_part = in_band.to_numpy() & part
            parts.append(
                f"{name} {_rate(flag.to_numpy()[miss])} of {miss.sum()} / "
                f"{_rate(flag.to_numpy()[band_part])}"
            )
        lines.append(f"model gap >= {gap}: misses flagged / in-band flag rate: " + "; ".join(parts))
    return "\n".join(lines)


def read_rows(cache: Path) -> pd.DataFrame:
    files = sorted((cache / ROWS).glob("*.csv"))
    if not files:
        raise SystemExit(
            f"no rows under {cache / ROWS}: run --estimate first, or report a stored summary "
            "with --from-summary benchmarks/data/bench_pairs_intervals.csv"
        )
    return pd.concat([pd.read_csv(f) for f in files], ignore_index=True)


SUMMARY_COLUMNS = ("pool", "method", "budget", "metric", "runs", "coverage", "flagged", "misses")


def read_summary(path: Path) -> pd.DataFrame:
    """A summary stored by ``--report --out``; a file that cannot be read or is of another
    kind stops with a message naming it."""
    try:
        summary = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise SystemExit(f"--from-summary {path}: cannot read it ({error})") from None
    missing = [c for c in SUMMARY_COLUMNS if c not in summary]
    if missing:
        raise SystemExit(f"--from-summary {path}: not a summary of --report --out (no {missing})")
    return summary


def main(argv=None) -> None:
    global BUDGETS, ROWS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pools", nargs="+", default=list(POOLS), choices=POOLS)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--seeds", nargs=2, type=int, metavar=("FIRST", "COUNT"))
    parser.add_argument("--labels", type=int, default=max(BUDGETS))
    parser.add_argument("--cache", type=Path, default=Path("benchmarks/_out/intervals"))
    parser.add_argument(
        "--rows", default="rows", help="folder under --cache of the estimates' rows (a variant)"
    )
    parser.add_argument(
        "--hidden",
        choices=("model", "none"),
        default="model",
        help="none: estimate without the oracle model's hidden matches (an ablation)",
    )
    parser.add_argument("--draw", action="store_true")
    parser.add_argument("--estimate", action="store_true")
    parser.add_argument("--report", action="store_true")
    parser.add_argument("--out", type=Path, help="summary CSV of --report")
    parser.add_argument(
        "--from-summary",
        type=Path,
        metavar="CSV",
        help="with --report: the table from a stored summary (--out, as "
        "benchmarks/data/bench_pairs_intervals.csv) instead of the rows; no flag frontier "
        "(it needs the rows)",
    )
    parser.add_argument(
        "--table-labels",
        nargs="+",
        type=int,
        metavar="N",
        help="with --report: the table's lines at these budgets only (the flag summary "
        "still counts every budget)",
    )
    parser.add_argument("--smoke", action="store_true", help="a few short runs, in seconds")
    args = parser.parse_args(argv)
    ROWS = args.rows
    if args.hidden == "none":
        if args.rows == "rows":
            parser.error("--hidden none estimates a variant: give it its own --rows folder")
        drop_hidden()
    if args.smoke:
        BUDGETS = (20, 40, 60)
        args.pools, args.methods, args.labels = ["abt-buy"], list(METHODS), 60
        args.seeds = [0, 3]
        args.draw = args.estimate = args.report = True
        with tempfile.TemporaryDirectory() as tmp:  # a smoke run writes nothing in the repository
            args.smoke, args.cache = False, Path(tmp)
            return run(args)
    run(args)


def run(args: argparse.Namespace) -> None:
    """Draw, estimate and report as ``args`` asks (module docstring)."""
    seeds = range(args.seeds[0], args.seeds[0] + args.seeds[1]) if args.seeds else range(0)
    if args.draw or args.estimate:
        for name, pool in pools(args.pools):
            for method in args.methods:
                start = time.perf_counter()
                n = draw(args.cache, name, pool, method, seeds, args.labels) if args.draw else 0
                m = estimate(args.cache, name, pool, method, seeds) if args.estimate else 0
                print(
                    f"{name} {method}: {n} runs drawn, {m} estimated, "
                    f"{time.perf_counter() - start:.0f}s",
                    file=sys.stderr,
                    flush=True,
                )
    if args.report:
        rows = None if args.from_summary else read_rows(args.cache)
        if rows is None:
            summary = read_summary(args.from_summary)
        else:
            rows = rows[rows["pool"].isin(args.pools) & rows["method"].isin(args.methods)]
            summary = summarize(rows)
        summary = summary[summary["pool"].isin(args.pools) & summary["method"].isin(args.methods)]
        if args.out:
            summary.to_csv(args.out, index=False)
        shown = summary[summary["budget"].isin(args.table_labels or summary["budget"])]
        print(markdown(shown))
        print(flag_summary(summary))
        if rows is not None and "model_gap" in rows:
            print(flag_frontier(rows))


if __name__ == "__main__":
    main()
