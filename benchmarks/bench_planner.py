"""The sample-size planner (:func:`~er_evaluation.planning.plan_sample_size`) by
simulation: does the planned design achieve the target interval half-width?

For a truth, a misattribution rate (:func:`~er_evaluation.simulation.misattribute`), a
metric, a target half-width and a source of the stratum standard deviations, the script
plans a design, draws it ``--reps`` times against the truth, estimates the metric with the
package defaults (interval ``score``) and records:

- achieved half-width = 1.96 x the standard deviation of the estimates over replicates
  (relative Monte-Carlo SE about 1/sqrt(2 (reps - 1))), over the target and over the
  plan's own half-width;
- reported half-width = mean half-width of the reported intervals, over the target;
- coverage of the reported intervals (Monte-Carlo SE sqrt(c (1 - c)/reps)).

Designs (the planner's defaults): precision on the predicted-cluster design (predicted
clusters drawn without replacement within bands of predicted size (2, 5, 20, 100, 500,
2,000), Neyman allocation, strata taken entirely when their Neyman share exceeds their
size); recall and F1 on the uniform record design (one stratum, records drawn without
replacement, their true clusters reviewed). Sources: ``rate`` = the true misattribution
rate as the assumed rate; ``pilot`` = reviewed pilots (precision: 10 predicted clusters per stratum, reviewed;
recall and F1: 200 records drawn uniformly, their true clusters reviewed);
``benchmark`` (precision only) = a 200-record pilot of true clusters, whose precision
gives the rate for the misattribution model. A pilot cell draws ``--pilots`` pilots, each
planning an equal share of the replicates, so its achieved half-width is that of
pilot-then-plan.

Truths: ``rldata`` (RLdata10000 identities: singletons and pairs), ``patentsview`` (the
bundled 2022-06-30 disambiguation), ``zipf2`` (200,000 records in clusters of Zipf(2)
sizes capped at 5,000) and ``zipf1.5`` (Zipf(1.5) capped at 20,000). Each run writes its
per-cell summary rows into ``benchmarks/data/bench_planner.csv`` (rows of the same cell
are replaced), so cells can be run in separate processes:

    nice -n 10 python benchmarks/bench_planner.py --truth zipf2 --metrics pairwise_precision \\
        --targets 0.001 --sources rate pilot benchmark --reps 400 --pilots 20
    python benchmarks/bench_planner.py --smoke   # every metric, design and source at toy
                                                 # size; the summary in a temporary folder

Seeds: a cell's pilot and replicates draw from Generators seeded by tuples of whole
numbers (the run's seed and the cell's keys), so a cell run on its own reproduces itself.
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

from er_evaluation.datasets import load_patentsview_predictions, load_rldata10000
from er_evaluation.designs import sample_stratified, sample_stratified_clusters, size_strata
from er_evaluation.estimators import estimate_table
from er_evaluation.planning import default_design, plan_sample_size
from er_evaluation.sampling import sample_records
from er_evaluation.simulation import misattribute, zipf_clustering

sys.path.insert(0, str(Path(__file__).parent))
from bench_stratified import BANDS, EXACT, F1, SMOKE_RECORDS, P, R, rng, zipf_truth  # noqa: E402

DATA = Path(__file__).parent / "data"
SUMMARY = DATA / "bench_planner.csv"
KEYS = ["truth", "rate", "metric", "design", "source", "target"]


TRUTHS = ("rldata", "patentsview", "zipf2", "zipf1.5")


def load_truth(name: str, smoke: bool = False) -> pd.Series:
    if smoke:  # a small Zipf truth stands for each
        return zipf_truth(SMOKE_RECORDS)
    if name == "zipf2":
        return zipf_clustering(200_000, 2.0, max_size=5_000, seed=0)
    if name == "zipf1.5":
        return zipf_clustering(200_000, 1.5, max_size=20_000, seed=0)
    if name == "patentsview":
        truth = load_patentsview_predictions(["2022-06-30"])["2022-06-30"]
    elif name == "rldata":
        truth = load_rldata10000()[1]
    else:
        raise ValueError(f"unknown truth {name!r}")
    # integer codes: the metrics do not depend on labels and factorisations are faster
    return pd.Series(pd.factorize(truth.to_numpy())[0], name="truth")


def _cluster_labels(pred: pd.Series, strata: pd.Series) -> pd.Series:
    return pd.Series(strata.to_numpy(), index=pred.to_numpy()).groupby(level=0).first()


def _plan(pred, truth, metric, design, target, source, rate, seed):
    """(plan, strata, cluster labels) for one cell; pilots drawn with ``seed``."""
    if design == "predicted_clusters":
        strata = size_strata(pred, BANDS)
        labels = _cluster_labels(pred, strata)
    else:
        strata = pd.Series("all", index=pred.index, name="stratum")
        labels = None
    kwargs = {}
    if source == "rate":
        kwargs["error_rate"] = rate
    elif source == "benchmark" or (source == "pilot" and design == "records"):
        kwargs["pilot"] = sample_records(truth, 200, seed=rng(*seed))
    else:  # a reviewed pilot of predicted clusters, 10 per stratum
        F = labels.value_counts(sort=False)
        pilot = sample_stratified_clusters(pred, labels, F.clip(upper=10), seed=rng(*seed))
        kwargs["pilot"] = pilot.reviewed_predicted(truth)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the heavy-tail warning is measured, not shown
        plan = plan_sample_size(pred, strata, target, metric=metric, design=design, **kwargs)
    if plan.design != design:
        raise RuntimeError(f"planned {plan.design}, asked for {design}")
    return plan, strata, labels


def run_cell(truth, pred, exact, metric, design, target, source, rate, reps, seed, pilots) -> dict:
    """One cell: the plan (from the rate, or one per pilot: ``pilots`` pilots, each
    planning an equal share of the ``reps`` replicates) and its replicates."""
    t0 = time.perf_counter()
    n_plans = 1 if source == "rate" else max(1, min(pilots, reps))
    plans = [
        _plan(pred, truth, metric, design, target, source, rate, (*seed, 7, k))
        for k in range(n_plans)
    ]
    values, halves, covered, cost = [], [], [], []
    for r in range(reps):
        plan, strata, labels = plans[r % n_plans]
        if plan.design == "predicted_clusters":
            s = sample_stratified_clusters(pred, labels, plan.draws, seed=rng(*seed, r))
            s = s.reviewed_predicted(truth)
        else:
            s = sample_stratified(truth, strata, plan.draws, seed=rng(*seed, r))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # reliability flags are not measured here
            row = estimate_table({"p": pred}, s, (metric,), validate=False).iloc[0]
        values.append(row.value)
        halves.append((row.ci_high - row.ci_low) / 2)
        covered.append(row.ci_low <= exact <= row.ci_high)
        cost.append(s.n_records)
    sd = float(np.std(values, ddof=1))
    achieved = 1.96 * sd
    cov = float(np.mean(covered))
    planned = np.array([p.half_width for p, _, _ in plans])
    draws = np.array([p.n_draws for p, _, _ in plans])
    # the plans' half-width where the design's variance is a mixture over the pilots
    planned_half = 1.96 * math.sqrt(float(np.mean((planned / 1.96) ** 2)))
    return {
        "plans": n_plans,
        "planned_draws": float(draws.mean()),
        "planned_draws_min": int(draws.min()),
        "planned_draws_max": int(draws.max()),
        "planned_half_width": planned_half,
        "floor_bound": bool(np.mean(planned < 0.98 * target) > 0.5),
        "achieved_half_width": achieved,
        "achieved/target": achieved / target,
        "achieved/planned": achieved / planned_half if planned_half > 0 else math.nan,
        "ratio_mc_se_rel": 1 / math.sqrt(2 * (reps - 1)),
        "reported/target": float(np.nanmean(halves)) / target,
        "coverage": cov,
        "coverage_mc_se": math.sqrt(cov * (1 - cov) / reps),
        "bias": float(np.mean(values)) - exact,
        "mean_records_read": float(np.mean(cost)),
        "reps": reps,
        "seconds": time.perf_counter() - t0,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--truth", choices=list(TRUTHS))
    parser.add_argument(
        "--report",
        type=Path,
        nargs="+",
        help="print the markdown table of these summary files (no simulation; with "
        "--metrics: the table's rows of those metrics only)",
    )
    parser.add_argument("--rates", type=float, nargs="+", default=[0.05, 0.10])
    parser.add_argument(
        "--metrics", nargs="+", help=f"metrics to run (default {P}, {R}, {F1}) or to show"
    )
    parser.add_argument("--targets", type=float, nargs="+", default=[0.01, 0.02])
    parser.add_argument("--sources", nargs="+", default=["rate", "pilot"])
    parser.add_argument(
        "--design",
        choices=["default", "records"],
        default="default",
        help="default: the planner's design for the metric; records: the record design",
    )
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument(
        "--pilots",
        type=int,
        default=20,
        help="pilot and benchmark sources: pilots per cell, each planning an equal share of "
        "the replicates (the achieved half-width is that of pilot-then-plan)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=SUMMARY,
        help="summary file (default benchmarks/data/bench_planner.csv; one per parallel run)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="every metric and source, both designs, at toy size (seconds); files in a "
        "temporary folder",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "bench_planner.csv"
            for design in ("default", "records"):
                run(
                    parser.parse_args(
                        ["--truth", "zipf2", "--rates", "0.1", "--targets", "0.05", "--reps", "2"]
                        + ["--sources", "rate", "pilot", "benchmark", "--design", design]
                        + ["--out", str(out)]
                    ),
                    smoke=True,
                )
            print(report(pd.read_csv(out)))
        return 0
    if args.report:
        frames = []
        for path in args.report:
            try:
                frames.append(pd.read_csv(path))
            except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
                parser.error(f"--report {path}: cannot read it ({error})")
        print(report(pd.concat(frames, ignore_index=True), args.metrics))
        return 0
    if args.truth is None:
        parser.error("--truth is required (or --report, --smoke)")
    run(args)
    return 0


def run(args: argparse.Namespace, smoke: bool = False) -> None:
    """Every cell of the grid in ``args``, each written to ``args.out`` once done."""
    print(
        f"# {platform.processor() or platform.machine()}, python {platform.python_version()}, "
        f"numpy {np.__version__}, pandas {pd.__version__}; {args.reps} replicates per cell",
        file=sys.stderr,
    )
    args.out.parent.mkdir(exist_ok=True)
    truth = load_truth(args.truth, smoke)
    for rate in args.rates:
        pred = misattribute(truth, rate, seed=args.seed + 1)
        for metric in args.metrics or (P, R, F1):
            exact = EXACT[metric](pred, truth)
            for target in args.targets:
                for source in args.sources:
                    if source == "benchmark" and metric != P:
                        continue
                    seed = (args.seed, int(rate * 1000), PLAN_SEED[metric], int(target * 1e4))
                    design = default_design(metric) if args.design == "default" else "records"
                    row = {
                        "truth": args.truth,
                        "rate": rate,
                        "metric": metric,
                        "design": design,
                        "source": source,
                        "target": target,
                        **run_cell(
                            truth,
                            pred,
                            exact,
                            metric,
                            design,
                            target,
                            source,
                            rate,
                            args.reps,
                            seed,
                            args.pilots,
                        ),
                    }
                    _save(row, args.out)
                    print(
                        " ".join(
                            f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                            for k, v in row.items()
                        ),
                        file=sys.stderr,
                        flush=True,
                    )


PLAN_SEED = {P: 1, R: 2, F1: 3}


def report(df: pd.DataFrame, metrics=None) -> str:
    """Markdown table of summary rows (those of ``metrics`` only, if given), and the mean
    achieved/target over every row whose size the variance model set (not the 30-draw
    floor)."""
    order = {name: i for i, name in enumerate(TRUTHS)}
    df = df.assign(_o=df["truth"].map(order)).sort_values(
        ["_o", "metric", "design", "rate", "target", "source"]
    )
    shown = df if metrics is None else df[df["metric"].isin(metrics)]
    lines = [
        "| truth | metric | design | rate | target | S_h from | planned draws | records read "
        "| achieved / target | achieved / planned | reported / target | coverage | reps |",
        "| --- | --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for _, r in shown.iterrows():
        floor = " (floor)" if r["floor_bound"] else ""
        lines.append(
            f"| {r['truth']} | {r['metric'].replace('pairwise_', '')} | {r['design']} "
            f"| {r['rate']:.0%} | {r['target']:g} | {r['source']} | "
            f"{_draws(r)}{floor} | {r['mean_records_read']:,.0f} | "
            f"{r['achieved/target']:.2f} | {r['achieved/planned']:.2f} | "
            f"{r['reported/target']:.2f} | {r['coverage']:.3f} ± {r['coverage_mc_se']:.3f} "
            f"| {int(r['reps'])} |"
        )
    free = df[~df["floor_bound"]]
    lines.append("")
    for key, g in [("all cells", free), *free.groupby(["metric", "design"])]:
        name = key if isinstance(key, str) else " / ".join(key)
        lines.append(
            f"- {name}: mean achieved/target {g['achieved/target'].mean():.3f} over "
            f"{len(g)} cells (range {g['achieved/target'].min():.2f}-"
            f"{g['achieved/target'].max():.2f})"
        )
    return "\n".join(lines)


def _draws(r: pd.Series) -> str:
    """Planned draws of a cell: one plan's, or the mean and range over its pilots."""
    if r.get("plans", 1) > 1:
        return (
            f"{r['planned_draws']:,.0f} ({int(r['planned_draws_min']):,}-"
            f"{int(r['planned_draws_max']):,})"
        )
    return f"{int(r['planned_draws']):,}"


def _save(row: dict, path: Path) -> None:
    """Replace this cell's row in the summary file (cells run in separate processes)."""
    new = pd.DataFrame([row])
    if path.exists():
        old = pd.read_csv(path)
        same = (old[KEYS].astype(str) == new[KEYS].astype(str).iloc[0]).all(axis=1)
        new = pd.concat([old[~same], new], ignore_index=True)
    new.to_csv(path, index=False)


if __name__ == "__main__":
    sys.exit(main())
