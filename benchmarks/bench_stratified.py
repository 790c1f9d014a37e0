"""Stratified designs, the change-focused comparison and the planner, by simulation.

Four experiments, each writing its per-replicate rows to ``benchmarks/_out/`` and its
summary to ``benchmarks/data/bench_stratified_*.csv`` and stdout (copied into
``benchmarks/README.md``); ``--smoke`` runs all four at toy size (2 replicates, a
3,000-record Zipf truth for every truth) with every file in a temporary folder:

``zipf``
    Heavy-tailed truth: 200,000 records in clusters of Zipf(2) sizes capped at 5,000;
    predictions with 5% and 10% misattribution (:func:`~er_evaluation.simulation.misattribute`).
    The uniform record design (``n`` records drawn with replacement, their true clusters
    reviewed) against a take-all + size-stratified design with the same expected number
    of reviewed records (records of the reviewed true clusters). The stratified design is
    built from the prediction alone: predicted-size bands, the largest predicted clusters
    taken entirely (the largest take-all set within 80% of the budget), the rest
    allocated n_h ∝ F_h S_h/sqrt(c_h) (S_h from an assumed 5% misattribution rate, c_h the
    mean predicted cluster size: records read per draw) to fill the budget.
    Precision (cluster-block), recall, F1: bias, RMSE, coverage of the 95% interval of
    each design's default method. The design of predicted clusters is estimated with the
    combined and with the separate ratio estimator (:func:`~er_evaluation.designs.with_ratio`;
    the record designs' denominators are not known per stratum, so only combined).
``change``
    PatentsView: the bundled 2022-06-30 disambiguation as truth; version A = 5%
    misattribution of it, version B = A with a further ``--extra-rate`` (0.2% by default;
    1% in a second run) of its records misattributed. Paired F1
    difference B - A: uniform record design (``compare``) vs the change-focused design
    (``sample_changed`` + ``compare_changed``, with a fresh 400-record benchmark of the
    whole population per replicate standing for an existing benchmark; its reviews are
    not counted as cost).
``waves``
    Two waves of one population (``--truth`` rldata10000 or patentsview; 5% and 10%
    misattribution): a uniform 200-record benchmark and a later wave of 200 records in
    predicted-size strata, drawn anew per replicate; P, R, F1 of each wave alone, of the
    union (:func:`~er_evaluation.waves.union_sample`) and of the per-wave estimates
    combined (:func:`~er_evaluation.waves.combine_estimates`): bias, RMSE, coverage.
``planner``
    The planner (:func:`~er_evaluation.planning.plan_sample_size`) on the Zipf truth
    (or, ``--truth patentsview``, the bundled 2022-06-30 disambiguation, target 0.02 only):
    for each rate, target half-width and source of S_h (a 200-draw uniform pilot drawn
    anew per plan, or the assumed true misattribution rate), plan a Neyman
    size-stratified design, draw it ``reps`` times and compare the achieved half-width
    (1.96 x the standard deviation of the estimates over replicates, and the mean
    reported half-width) with the target.

    nice -n 10 python benchmarks/bench_stratified.py zipf --reps 400 --cell 0.05 100   # one
    ... --cell 0.05 400, --cell 0.1 100, --cell 0.1 400 (each cell's summary rows replace
    that cell's in benchmarks/data/bench_stratified_zipf.csv); then, from that file alone,
    the tables of benchmarks/README.md: zipf --report
    nice -n 10 python benchmarks/bench_stratified.py change --reps 400 [--extra-rate 0.01]
    nice -n 10 python benchmarks/bench_stratified.py planner --reps 400 [--truth patentsview]
    nice -n 10 python benchmarks/bench_stratified.py waves --reps 400 --truth rldata10000
    nice -n 10 python benchmarks/bench_stratified.py waves --reps 400 --truth patentsview
    python benchmarks/bench_stratified.py --smoke

Seeds: every draw takes a Generator seeded by a tuple of whole numbers (the experiment's
seed and the cell's keys: :func:`rng`), so a cell run on its own draws what it draws in
a full run.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from er_evaluation import metrics
from er_evaluation.datasets import load_patentsview_predictions, load_rldata10000
from er_evaluation.designs import (
    TAKE_ALL,
    allocate,
    sample_changed,
    sample_stratified,
    sample_stratified_clusters,
    size_strata,
    with_ratio,
)
from er_evaluation.errors import UndefinedMetricWarning, UnreliableEstimateWarning
from er_evaluation.estimators import compare, estimate_from_units, estimate_table, unit_table
from er_evaluation.estimators.change import compare_changed
from er_evaluation.estimators.results import estimates_frame
from er_evaluation.planning import PlanWarning, plan_sample_size, stratum_sd_from_rates
from er_evaluation.sampling import sample_records
from er_evaluation.simulation import misattribute
from er_evaluation.waves import combine_estimates, union_sample

DATA = Path(__file__).parent / "data"  # summaries (kept)
OUT = Path(__file__).parent / "_out"  # per-replicate rows (not kept in git)
P, R, F1 = "pairwise_precision", "pairwise_recall", "pairwise_f1"
BANDS = (2, 5, 20, 100, 500, 2000)
EXACT = {P: metrics.pairwise_precision, R: metrics.pairwise_recall, F1: metrics.pairwise_f1}


SMOKE_RECORDS = 3000  # --smoke: every truth is a Zipf truth of this many records


def rng(*key: int) -> np.random.Generator:
    """A generator seeded by ``key`` (numpy's SeedSequence takes a sequence of whole
    numbers as its entropy): one independent stream per replicate and design."""
    return np.random.default_rng(key)


def zipf_truth(n_records: int = 200_000, seed: int = 0) -> pd.Series:
    rng = np.random.default_rng(seed)
    sizes = np.minimum(rng.zipf(2.0, size=n_records), 5000)
    sizes = sizes[: np.searchsorted(np.cumsum(sizes), n_records) + 1]
    labels = np.repeat(np.arange(len(sizes)), sizes)[:n_records]
    return pd.Series(labels, index=pd.RangeIndex(n_records, name="record"), name="truth")


def _rows(table: pd.DataFrame, exact: dict, **keys) -> list[dict]:
    out = []
    for row in table.itertuples():
        truth = exact[row.metric]
        out.append(
            {
                **keys,
                "metric": row.metric,
                "value": row.value,
                "std_error": row.std_error,
                "ci_low": row.ci_low,
                "ci_high": row.ci_high,
                "ci_method": row.ci_method,
                "truth": truth,
                "covered": row.ci_low <= truth <= row.ci_high,
            }
        )
    return out


def _true_cost(truth_codes: np.ndarray, truth_size: np.ndarray, mask: np.ndarray) -> int:
    """Records of the true clusters touching the records in ``mask``."""
    return int(truth_size[np.unique(truth_codes[mask])].sum())


def record_budget_design(
    pred: pd.Series, truth: pd.Series, budget: float, assumed_rate: float = 0.05
):
    """Take-all + size-stratified RECORD design reading about ``budget`` records.

    Strata and allocation use the prediction only (size bands; n_h ∝ F_h S_h / sqrt(c_h),
    S_h from an assumed 5% misattribution rate, c_h the mean predicted size); the truth is
    used only to match the budget (records of the true clusters the take-all stratum
    reveals, and the mean true-cluster size per draw elsewhere)."""
    codes, _ = pd.factorize(pred.to_numpy())
    rec_size = np.bincount(codes)[codes]
    tcodes, _ = pd.factorize(truth.to_numpy())
    tsize = np.bincount(tcodes)
    threshold = None
    for t in (20, 100, 500, 2000, 5000):
        if _true_cost(tcodes, tsize, rec_size >= t) <= 0.8 * budget:
            threshold = t
            break
    strata = size_strata(pred, BANDS, take_all_size=threshold)
    ta = (strata == TAKE_ALL).to_numpy()
    revealed = np.zeros(len(tsize), dtype=bool)
    revealed[np.unique(tcodes[ta])] = True
    F = strata.value_counts(sort=False)
    sd = stratum_sd_from_rates(pred, strata, assumed_rate)
    cost = pd.Series(rec_size, index=pred.index).groupby(strata.to_numpy()).mean().reindex(F.index)
    # records read per draw outside the take-all stratum (clusters already revealed are free)
    per_draw = pd.Series(np.where(revealed[tcodes], 0, tsize[tcodes]), index=pred.index)
    per_draw = per_draw.groupby(strata.to_numpy()).mean().reindex(F.index)
    return _fill(
        F, sd, cost, per_draw, budget - (_true_cost(tcodes, tsize, ta) if ta.any() else 0)
    ) + (
        strata,
        threshold,
    )


def _fill(F, sd, cost, per_draw, budget):
    """Neyman allocation with cost (n_h ∝ F_h S_h / sqrt(c_h)) spending ``budget`` records
    (``per_draw``: records read per draw) outside the take-all stratum."""
    rest = F.index != TAKE_ALL
    score = (F * sd / np.sqrt(cost))[rest]
    k = max(budget, 0) / float((score * per_draw[rest]).sum())
    n_rest = max(int(round(float((k * score).sum()))), 2 * int(rest.sum()))
    take_all = [TAKE_ALL] if TAKE_ALL in F.index else []
    n = int(F[take_all].sum()) + n_rest
    return (allocate(F, n, method="neyman", sd=sd, cost=cost, take_all=take_all),)


def _rescale(alloc: pd.Series, strata: pd.Series, factor: float) -> pd.Series:
    """The allocation with the sampled strata's draws scaled by ``factor``."""
    F = strata.value_counts(sort=False).reindex(alloc.index)
    scaled = np.where(alloc < F, np.clip(np.round(alloc * factor), 2, F), F)
    return pd.Series(scaled.astype(np.int64), index=alloc.index)


def cluster_budget_design(pred: pd.Series, budget: float, assumed_rate: float = 0.05):
    """Take-all + size-stratified design of PREDICTED clusters reading about ``budget``
    records (a reviewed predicted cluster costs its records): the largest predicted
    clusters within 80% of the budget taken entirely, the rest n_h ∝ F_h S_h / sqrt(c_h)
    with S_h² ∝ E_h[s (s-1)²] ε(1-ε) (a cluster of s records with Binomial(s, ε) foreign
    records) and c_h the mean size."""
    sizes = pred.value_counts(sort=False)
    s = sizes.to_numpy()
    order = np.sort(s)[::-1]
    within = np.cumsum(order) <= 0.8 * budget
    threshold = int(order[within][-1]) if within.any() else int(order[0]) + 1
    edges = np.array([1, *BANDS])
    names = np.array(
        [f"{a}-{b - 1}" for a, b in zip(edges[:-1], edges[1:], strict=True)] + [f"{edges[-1]}+"],
        dtype=object,
    )
    labels = np.where(s >= threshold, TAKE_ALL, names[np.searchsorted(edges, s, side="right") - 1])
    strata = pd.Series(labels, index=sizes.index)
    F = strata.value_counts(sort=False)
    g = pd.DataFrame({"h": labels, "s": s.astype(float)})
    eps = assumed_rate
    sd = (g["s"] * (g["s"] - 1) ** 2 * eps * (1 - eps)).groupby(g["h"]).mean() ** 0.5
    cost = g.groupby("h")["s"].mean().reindex(F.index)
    spent = int(s[s >= threshold].sum())
    return _fill(F, sd.reindex(F.index), cost, cost, budget - spent) + (strata, threshold)


def _replicates(reps: int, rows: list, path: Path | None, label: str, every: int = 10):
    """Yield the replicate numbers 0..reps-1; after each replicate write the rows so far
    every ``every`` replicates (the CPU is shared: a run cut short still leaves its
    completed replicates) and report progress every 25. ``rows`` is the list the caller
    extends in place."""
    t0 = time.perf_counter()
    for r in range(reps):
        yield r
        if path is not None and (r + 1) % every == 0:
            pd.DataFrame(rows).to_csv(path, index=False)
        if (r + 1) % 25 == 0:
            print(f"{label}: {r + 1} replicates, {time.perf_counter() - t0:.0f} s", file=sys.stderr)


ZIPF_KEYS = ["rate", "n", "metric", "design"]


def _merge_cells(stored: Path, new: pd.DataFrame) -> pd.DataFrame:
    """The stored zipf summary with the (rate, n) cells of ``new`` replaced by ``new``'s
    rows (a summary row depends on its own cell's replicates only), cells in order."""
    if not stored.exists():
        return new
    old = pd.read_csv(stored, index_col=ZIPF_KEYS)
    cells = set(
        zip(new.index.get_level_values("rate"), new.index.get_level_values("n"), strict=True)
    )
    keep = [
        (rate, n) not in cells
        for rate, n in zip(
            old.index.get_level_values("rate"), old.index.get_level_values("n"), strict=True
        )
    ]
    merged = pd.concat([old[keep], new]).reset_index()
    return merged.sort_values(["rate", "n"], kind="stable").set_index(ZIPF_KEYS)


def _design_words(design: str) -> str:
    """A design of the zipf summary as benchmarks/README.md names it."""
    if design == "uniform":
        return "uniform records"
    if design.startswith("records:"):
        return "records, size strata"
    take_all = int(design.split(">=")[1].split()[0])
    separate = ", separate ratio" if design.endswith("separate ratio") else ""
    return f"predicted clusters, take-all ≥ {take_all:,}{separate}"


def zipf_markdown(s: pd.DataFrame) -> str:
    """The zipf table of benchmarks/README.md from the summary ``s``: one line per rate x n
    x design; coverage P / R / F1 ("-": not estimated) with the largest MC SE."""
    lines = [
        "| rate | n | design | records read | precision bias | precision RMSE | RMSE / uniform "
        "| coverage P / R / F1 |",
        "|---:|---:|---|---:|---:|---:|---:|---|",
    ]
    flat = s.reset_index()
    for (rate, n), cell in flat.groupby(["rate", "n"], sort=False):
        uniform = cell[(cell["design"] == "uniform") & (cell["metric"] == P)].iloc[0]
        for design, g in cell.groupby("design", sort=False):
            by = g.set_index("metric")
            prec = by.loc[P]
            cover = " / ".join(
                f"{by.at[m, 'coverage']:.3f}" if m in by.index else "-" for m in (P, R, F1)
            )
            lines.append(
                f"| {rate:.0%} | {n} | {_design_words(design)} | {prec['mean_cost']:,.0f} | "
                f"{prec['bias']:+.4f} | {prec['rmse']:.4f} | "
                f"{prec['rmse'] / uniform['rmse']:.3f} | "
                f"{cover} (± {by['coverage_mc_se'].max():.3f}) |"
            )
    return "\n".join(lines)


def change_markdown(s: pd.DataFrame, extra_rate: float) -> str:
    """The change-focused table of benchmarks/README.md from the summary ``s`` of one
    ``--extra-rate``: the uniform design, then the change-focused one by n; the first line
    names B's extra errors and the true F1 difference."""
    lines = [
        "| B - A | design | n | records reviewed | SD of the estimates | mean SE | bias | coverage |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    flat = s.reset_index()
    flat = flat.assign(_first=flat["design"] != "uniform").sort_values(["_first", "n"])
    for i, (_, r) in enumerate(flat.iterrows()):
        label = (
            f"{100 * extra_rate:g}% more errors (F1 difference {r['truth']:+.5f})" if i == 0 else ""
        )
        lines.append(
            f"|{f' {label}' if label else ''} | {r['design']} | {int(r['n'])} | {r['mean_cost']:,.0f} | {r['sd']:.5f} | "
            f"{r['mean_se']:.5f} | {r['bias']:+.5f} | {r['coverage']:.3f} |"
        )
    return "\n".join(lines)


def _planner_summary(df: pd.DataFrame, out: Path, args: argparse.Namespace) -> pd.DataFrame:
    """Per rate x target x source: the plan, and the half-width achieved over the
    replicates (1.96 x their SD) and reported (1.96 x the mean SE) against the target;
    the replicates written under ``out``."""
    df.to_csv(out / f"bench_stratified_planner_{args.truth}.csv", index=False)
    g = df.groupby(["rate", "target", "source"], sort=False)
    s = g.agg(
        planned_draws=("planned_draws", "first"),
        planned_half_width=("planned_half_width", "first"),
        sd=("value", "std"),
        mean_se=("std_error", "mean"),
        coverage=("covered", "mean"),
        mean_cost=("cost", "mean"),
    )
    s["achieved_half_width"] = 1.96 * s["sd"]
    s["reported_half_width"] = 1.96 * s["mean_se"]
    targets = s.index.get_level_values("target").to_numpy()
    s["achieved/target"] = s["achieved_half_width"] / targets
    s["reported/target"] = s["reported_half_width"] / targets
    return s


def _stored(path: Path, keys: list[str]) -> pd.DataFrame:
    """The summary stored at ``path``: what ``--report`` prints."""
    if not path.exists():
        sys.exit(f"--report reads {path}: run the experiment first")
    return pd.read_csv(path, index_col=keys)


def uniform_cost(truth: pd.Series, n: int) -> float:
    """Expected records read by the uniform record design: n records drawn with
    replacement reach true cluster c with probability 1 - (1 - |c|/N)^n, and reviewing it
    reads its |c| records."""
    sizes = truth.value_counts(sort=False).to_numpy(dtype=float)
    N = sizes.sum()
    return float(np.sum(sizes * -np.expm1(n * np.log1p(-sizes / N))))


def run_zipf(
    truth: pd.Series,
    reps: int,
    seed: int,
    rates=(0.05, 0.10),
    ns: tuple[int, ...] = (100, 400),
    out: Path | None = None,
) -> pd.DataFrame:
    """The designs are drawn in turn within each replicate (so a run cut short has the
    same replicates of every design); the stratified designs' budget is the uniform
    design's expected cost (:func:`uniform_cost`)."""
    rows = []
    for rate in rates:
        pred = misattribute(truth, rate, seed=seed + 1)
        exact = {m: f(pred, truth) for m, f in EXACT.items()}
        for n in ns:
            budget = uniform_cost(truth, n)
            alloc, strata, threshold = record_budget_design(pred, truth, budget)
            for step in range(2):  # duplicates make draws cheaper than planned: rescale twice
                spent = np.mean(
                    [
                        sample_stratified(
                            truth, strata, alloc, seed=rng(seed, 99, step, j)
                        ).n_records
                        for j in range(5)
                    ]
                )
                alloc = _rescale(alloc, strata, budget / spent)
            c_alloc, c_strata, c_threshold = cluster_budget_design(pred, budget)
            keys = dict(rate=rate, n=n)
            for r in _replicates(reps, rows, out, f"zipf rate={rate} n={n}"):
                s = sample_records(truth, n, seed=rng(seed, int(rate * 100), n, r))
                table = estimate_table({"p": pred}, s, (P, R, F1), validate=False)
                rows += _rows(table, exact, design="uniform", rep=r, cost=s.n_records, **keys)
                s = sample_stratified(
                    truth, strata, alloc, seed=rng(seed, int(rate * 100), n, r, 1)
                )
                table = estimate_table({"p": pred}, s, (P, R, F1), validate=False)
                rows += _rows(
                    table,
                    exact,
                    design=f"records: take-all>={threshold} + size strata",
                    rep=r,
                    cost=s.n_records,
                    draws=s.n_draws,
                    **keys,
                )
                s = sample_stratified_clusters(
                    pred, c_strata, c_alloc, seed=rng(seed, int(rate * 100), n, r, 2)
                ).reviewed_predicted(truth)
                for ratio in ("combined", "separate"):
                    table = estimate_table({"p": pred}, with_ratio(s, ratio), (P,), validate=False)
                    rows += _rows(
                        table,
                        exact,
                        design=f"predicted clusters: take-all>={c_threshold} + size strata"
                        + (", separate ratio" if ratio == "separate" else ""),
                        rep=r,
                        cost=s.n_records,
                        draws=s.n_draws,
                        **keys,
                    )
    return pd.DataFrame(rows)


def summarize(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    g = df.assign(err=df["value"] - df["truth"]).groupby(keys, sort=False)
    out = g.agg(
        truth=("truth", "first"),
        bias=("err", "mean"),
        rmse=("err", lambda e: float(np.sqrt(np.mean(e**2)))),
        sd=("value", "std"),
        mean_se=("std_error", "mean"),
        coverage=("covered", "mean"),
        mean_cost=("cost", "mean"),
        reps=("value", "size"),
    )
    out["coverage_mc_se"] = np.sqrt(out["coverage"] * (1 - out["coverage"]) / out["reps"])
    return out


def run_change(
    truth: pd.Series,
    reps: int,
    seed: int,
    extra_rate: float,
    change_n: tuple[int, ...] = (50, 100, 200),
    out: Path | None = None,
) -> pd.DataFrame:
    a = misattribute(truth, 0.05, seed=seed + 1).rename("A")
    b = misattribute(a, extra_rate, seed=seed + 2).rename("B")
    exact = EXACT[F1](b, truth) - EXACT[F1](a, truth)
    from er_evaluation.designs import changed_records

    changed = changed_records(a, b)
    print(f"change: {int(changed.sum()):,} of {len(a):,} records changed", file=sys.stderr)
    rows = []
    # the designs in turn within each replicate (see run_zipf)
    for r in _replicates(reps, rows, out, "change"):
        s = sample_records(truth, 400, seed=rng(seed, 400, r))
        e = compare({"B": b, "A": a}, s, F1, baseline="A", ci_method="normal", validate=False).iloc[
            0
        ]
        rows.append(_diff_row(e, exact, "uniform", 400, r, s.n_records))
        for n in change_n:
            s = sample_changed(truth, a, b, n, seed=rng(seed, n, r, 1))
            bench = sample_records(truth, 400, seed=rng(seed, n, r, 2))
            e = compare_changed(a, b, s, bench, F1)
            rows.append(_diff_row(e, exact, "change-focused", n, r, s.n_records))
    df = pd.DataFrame(rows)
    df.attrs["changed"] = int(changed.sum())
    return df


def _diff_row(e, exact, design, n, r, cost) -> dict:
    return {
        "design": design,
        "n": n,
        "rep": r,
        "metric": e.metric,
        "value": e.value,
        "std_error": e.std_error,
        "ci_low": e.ci_low,
        "ci_high": e.ci_high,
        "truth": exact,
        "covered": e.ci_low <= exact <= e.ci_high,
        "cost": cost,
    }


def load_truth(name: str, seed: int, smoke: bool = False) -> pd.Series:
    """The truth ``name`` (zipf, patentsview, rldata10000); with ``smoke`` a small Zipf
    truth stands for each."""
    if smoke:
        return zipf_truth(SMOKE_RECORDS, seed=seed)
    if name == "zipf":
        return zipf_truth(seed=seed)
    if name == "patentsview":
        return patentsview_truth()
    return load_rldata10000()[1]


def patentsview_truth() -> pd.Series:
    """The bundled 2022-06-30 disambiguation, with integer record and cluster codes (the
    metrics do not depend on labels; string ids make every factorisation slower)."""
    truth = load_patentsview_predictions(["2022-06-30"])["2022-06-30"]
    return pd.Series(pd.factorize(truth.to_numpy())[0], name="truth")


def run_planner(truth: pd.Series, reps: int, seed: int, truth_name: str = "zipf") -> pd.DataFrame:
    targets = (0.01, 0.02) if truth_name == "zipf" else (0.02,)
    rows = []
    for rate in (0.05, 0.10):
        pred = misattribute(truth, rate, seed=seed + 1)
        exact = EXACT[P](pred, truth)
        strata = size_strata(pred, BANDS)
        for target in targets:
            for source in ("pilot", "assumed rate"):
                t0 = time.perf_counter()
                if source == "pilot":
                    pilot = sample_records(truth, 200, seed=rng(seed, int(rate * 100), 7))
                    plan = plan_sample_size(pred, strata, target, pilot=pilot, design="records")
                else:
                    plan = plan_sample_size(pred, strata, target, error_rate=rate, design="records")
                for r in range(reps):
                    s = sample_stratified(
                        truth, strata, plan.draws, seed=rng(seed, int(target * 1000), r, 3)
                    )
                    table = estimate_table({"p": pred}, s, (P,), validate=False)
                    for row in _rows(
                        table,
                        {P: exact},
                        rate=rate,
                        target=target,
                        source=source,
                        rep=r,
                        cost=s.n_records,
                    ):
                        row.update(planned_draws=plan.n_draws, planned_half_width=plan.half_width)
                        rows.append(row)
                print(
                    f"planner rate={rate} target={target} {source}: {plan.n_draws} draws, "
                    f"{time.perf_counter() - t0:.0f} s",
                    file=sys.stderr,
                )
    return pd.DataFrame(rows)


def run_waves(
    truth: pd.Series, reps: int, seed: int, truth_name: str, out: Path | None = None
) -> pd.DataFrame:
    """Two waves of one population, estimated from their union and by combining per-wave
    estimates: wave 1 = a uniform record benchmark of 200 draws with replacement (the
    existing benchmark), wave 2 = 200 records drawn without replacement in predicted-size
    strata with proportional allocation (a later wave of another design). Each replicate
    draws both waves anew; P (cluster-block), R (record or cluster) and F1 of one
    misattributed prediction per rate, with the default interval."""
    n_records = len(truth)
    rows = []
    cases = {}
    for rate in (0.05, 0.10):
        pred = misattribute(truth, rate, seed=seed + 1)
        exact = {m: f(pred, truth) for m, f in EXACT.items()}
        cases[rate] = (pred, exact, size_strata(pred, (2, 5, 20)))
    # both rates within each replicate (see run_zipf)
    for r in _replicates(reps, rows, out, f"waves {truth_name}"):
        for rate, (pred, exact, strata) in cases.items():
            w1 = sample_records(truth, 200, seed=rng(seed, int(rate * 100), r, 11))
            w2 = sample_stratified(truth, strata, 200, seed=rng(seed, int(rate * 100), r, 12))
            u = union_sample([w1, w2], [None, strata], n_records)
            keys = dict(truth_name=truth_name, rate=rate, rep=r)
            per_wave = []
            for design, s in (("wave 1: uniform 200", w1), ("wave 2: size strata 200", w2)):
                ut = unit_table(pred, s, validate=False)
                ests = [estimate_from_units(ut, m) for m in (P, R, F1)]
                rows += _rows(estimates_frame(ests), exact, design=design, cost=s.n_records, **keys)
                per_wave.append(ests)
            table = estimate_table({"p": pred}, u, (P, R, F1), validate=False)
            rows += _rows(table, exact, design="union of waves", cost=u.n_records, **keys)
            combined = [
                combine_estimates(pair)
                for pair in zip(*per_wave, strict=True)
                if all(np.isfinite(e.std_error) and e.std_error > 0 for e in pair)
            ]
            if combined:
                rows += _rows(
                    estimates_frame(combined),
                    exact,
                    design="per-wave estimates combined",
                    cost=u.n_records,
                    **keys,
                )
    return pd.DataFrame(rows)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("experiment", nargs="?", choices=["zipf", "change", "planner", "waves"])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--truth",
        choices=["zipf", "patentsview", "rldata10000"],
        default="zipf",
        help="planner and waves: the truth",
    )
    parser.add_argument(
        "--extra-rate", type=float, default=0.002, help="change: B = A with this rate misattributed"
    )
    parser.add_argument(
        "--cell",
        nargs=2,
        metavar=("RATE", "N"),
        help="zipf: run one (misattribution rate, uniform n) cell only",
    )
    parser.add_argument(
        "--report",
        action="store_true",
        help="instead of running, print the tables: zipf and planner from their stored "
        "summaries; change, waves from the replicates written so far, or the stored summary "
        "where none are kept",
    )
    parser.add_argument(
        "--change-n",
        type=int,
        nargs="+",
        default=[50, 100, 200],
        help="change: changed records drawn per replicate (one cell each)",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="every experiment at toy size, all files in a temporary folder (seconds)",
    )
    return parser


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.smoke:
        return smoke()
    if args.experiment is None:
        parser.error("an experiment is required (or --smoke)")
    return run(args, DATA, OUT)


def smoke() -> int:
    """Each experiment end to end at toy size (2 replicates, small cells, a 3,000-record
    Zipf truth for every truth); every file goes to a temporary folder."""
    with tempfile.TemporaryDirectory() as tmp:
        for argv in (
            ["zipf", "--cell", "0.05", "50"],
            ["zipf", "--report"],
            ["change", "--change-n", "20"],
            ["planner"],
            ["waves", "--truth", "rldata10000"],
            ["waves", "--truth", "rldata10000", "--report"],
        ):
            args = _parser().parse_args([*argv, "--reps", "2", "--smoke"])
            run(args, Path(tmp) / "data", Path(tmp) / "_out")
    return 0


def run(args: argparse.Namespace, data: Path, out: Path) -> int:
    """One experiment: replicate rows under ``out``, summaries under ``data``."""
    # the estimates' and plans' diagnostics are measured here (coverage), not shown
    for category in (UndefinedMetricWarning, UnreliableEstimateWarning, PlanWarning):
        warnings.simplefilter("ignore", category)
    t0 = time.perf_counter()
    print(
        f"# {platform.processor() or platform.machine()}, python {platform.python_version()}, "
        f"numpy {np.__version__}, pandas {pd.__version__}; {args.reps} replicates per cell"
    )
    data.mkdir(exist_ok=True)
    out.mkdir(exist_ok=True)
    # zipf always on the Zipf truth, change always on PatentsView
    name = {"zipf": "zipf", "change": "patentsview"}.get(args.experiment, args.truth)
    truth = None if args.report else load_truth(name, args.seed, args.smoke)
    if args.experiment == "zipf":
        stored = data / "bench_stratified_zipf.csv"
        if args.report:  # the stored summary of every cell run so far: no replicates needed
            if not stored.exists():
                sys.exit(f"--report reads {stored}: run `zipf --cell RATE N` first")
            s = pd.read_csv(stored, index_col=ZIPF_KEYS)
        else:
            if args.cell:  # one (rate, n) cell per process, its summary merged into the stored one
                rate, n = float(args.cell[0]), int(args.cell[1])
                path = out / f"bench_stratified_zipf_{rate:g}_{n}.csv"
                df = run_zipf(truth, args.reps, args.seed, (rate,), (n,), out=path)
                df.to_csv(path, index=False)
                print(f"# cell rate={rate:g} n={n} written")
            else:
                df = run_zipf(truth, args.reps, args.seed)
                df.to_csv(out / "bench_stratified_zipf.csv", index=False)
            s = _merge_cells(stored, summarize(df, ZIPF_KEYS))
            s.to_csv(stored)
        print(s.to_string(float_format=lambda v: f"{v:.4f}"))
        p = s.xs(P, level="metric").reset_index()
        for (rate, n), g in p.groupby(["rate", "n"]):
            u = g[g["design"] == "uniform"].iloc[0]
            for _, st in g[g["design"] != "uniform"].iterrows():
                print(
                    f"rate {rate} n {n} {st['design']}: precision RMSE ratio to uniform "
                    f"{st['rmse'] / u['rmse']:.3f}; cost ratio {st['mean_cost'] / u['mean_cost']:.3f}; "
                    f"coverage {st['coverage']:.3f}"
                )
        print(zipf_markdown(s))
    elif args.experiment == "change":
        stored = data / f"bench_stratified_change_{args.extra_rate:g}.csv"
        if args.report:  # the published summary, whatever replicates benchmarks/_out holds
            s = _stored(stored, ["design", "n"])
        else:
            path = out / f"bench_stratified_change_{args.extra_rate:g}.csv"
            df = run_change(
                truth, args.reps, args.seed, args.extra_rate, tuple(args.change_n), out=path
            )
            df.to_csv(path, index=False)
            s = summarize(df, ["design", "n"])
            s.to_csv(stored)
        print(s.to_string(float_format=lambda v: f"{v:.5f}"))
        u = s.loc["uniform"]
        c = s.loc["change-focused"]
        # cost at which the change design reaches each uniform SD (log-log interpolation)
        for n, row in u.iterrows():
            if not c["sd"].min() <= row["sd"] <= c["sd"].max():
                print(
                    f"uniform n={n}: SD {row['sd']:.5f} is outside the change design's measured range"
                )
                continue
            need = np.exp(
                np.interp(np.log(row["sd"]), np.log(c["sd"][::-1]), np.log(c["mean_cost"][::-1]))
            )
            print(
                f"uniform n={n}: SD {row['sd']:.5f} with {row['mean_cost']:,.0f} reviewed records; "
                f"change-focused reaches it with ~{need:,.0f} ({need / row['mean_cost']:.2f} of them)"
            )
        print(change_markdown(s, args.extra_rate))
    elif args.experiment == "waves":
        stored = data / f"bench_stratified_waves_{args.truth}.csv"
        if args.report:  # the published summary, whatever replicates benchmarks/_out holds
            s = _stored(stored, ["rate", "metric", "design"])
        else:
            path = out / f"bench_stratified_waves_{args.truth}.csv"
            df = run_waves(truth, args.reps, args.seed, args.truth, out=path)
            df.to_csv(path, index=False)
            s = summarize(df, ["rate", "metric", "design"])
            s["bias_mc_se"] = s["sd"] / np.sqrt(s["reps"])
            s.to_csv(stored)
        print(s.to_string(float_format=lambda v: f"{v:.4f}"))
    else:
        stored = data / f"bench_stratified_planner_{args.truth}.csv"
        if args.report:  # the planner keeps no replicates to resume from: its stored summary
            s = _stored(stored, ["rate", "target", "source"])
        else:
            s = _planner_summary(run_planner(truth, args.reps, args.seed, args.truth), out, args)
            s.to_csv(stored)
        print(s.to_string(float_format=lambda v: f"{v:.4f}"))
        print(
            f"mean achieved/target {s['achieved/target'].mean():.3f}; "
            f"mean reported/target {s['reported/target'].mean():.3f}"
        )
    print(f"# total {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
