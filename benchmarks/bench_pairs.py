"""Label efficiency, interval coverage and speed of the pair samplers.

Label efficiency: on each pool with full truth, every method runs ``--reps`` times to
the largest of ``--budgets`` (default 500, 1,000, 2,000 labels); the estimate at budget b
is the one right after the draw that paid for label b, where a run with that budget stops. Per pool, method and budget: mean squared error of
precision, recall and F1 (an undefined estimate counts as squared error 1), its
Monte-Carlo standard error, bias, the share of runs whose 95% interval covers the truth
(the library's Wilson interval, and value +- 1.96 SE for comparison), mean interval
width, the share of undefined estimates, draws per label and time per draw.

Method specs: ``oasis``, ``ais`` (Marchant & Rubinstein 2021, 2 x 64 strata),
``oasis:eta=2,decay=1`` (sampler parameters; ``eta=-1`` means 2K; ``bins=fd``,
``bins=default`` or ``bins=<count>``: the CSF histogram of the strata;
``by_prediction=0``: CSF strata over the whole pool, which may hold both predictions,
as in Marchant & Rubinstein 2017, §6; ``max_share=S``: strata of more than S N pairs cut
into score chunks (OASIS's default: S = 0.0333 with
``shared_prior=1``; ``max_share=none,shared_prior=0``: the uncut strata of earlier
rows), ``doubling=1``: chunks of S N, 2 S N, ... pairs from the top; ``shared_prior=1``: the
chunks share the cut stratum's eta prior pseudo-labels by size instead of eta each;
``open_share=S``: OASIS leaves its completed strata out of the proposal once the open ones
hold less than S of it, ``samplers.MIN_OPEN_SHARE``, 0 = never), and estimator
overrides on the same runs: ``:ais`` (the weighted ratio of Marchant & Rubinstein 2017
instead of the library's estimator), ``:poststrat`` (post-stratified within strata),
``:labels`` (the labels-only variance: no oracle model), ``:vprior=S`` (the variance
model's leaf prior rescaled to S pseudo-labels per stratum), ``:flat`` (the variance
model's tree with one level: a flat Beta model per stratum), ``:nocal`` (its prior means
not rescaled to the labels), ``:measure`` (``estimate_measure`` with the F-measures of the
prediction instead of ``estimate_from_labels``: ``estimate_measure``
hands F-measures to ``estimate_from_labels``, so these rows equal the default's, a check
of that one path; the earlier rows of the README came from its generic route).

Speed: stratifying a synthetic pool of 10 million pairs, and sampler overhead per draw
(draw + observe, oracle excluded) at that pool size. Times are CPU seconds of this
process (``time.process_time``): the benchmark machine is shared, so wall-clock times
would mostly measure the other jobs; wall-clock is reported alongside.

    nice -n 10 python benchmarks/bench_pairs.py --reps 100 --pools abt-buy dblp-acm restaurant \\
        --methods passive stratified importance oasis oasis:ais --out benchmarks/data/bench_pairs_results.csv
    nice -n 10 python benchmarks/bench_pairs.py --speed
    python benchmarks/bench_pairs.py --summarize benchmarks/data/bench_pairs_results_runs.csv \\
        --out benchmarks/data/bench_pairs_results.csv     # from the per-run rows of a stopped run
    python benchmarks/bench_pairs.py --report benchmarks/data/bench_pairs_final.csv \\
        benchmarks/data/bench_pairs_results_2.csv benchmarks/data/bench_oasis_strata_final.csv \\
        benchmarks/data/bench_oasis_package.csv   # the reference's tables (--details: all rows)
    python benchmarks/bench_pairs.py --coverage-report benchmarks/data/bench_pairs_final.csv
    python benchmarks/bench_pairs.py --smoke   # abt-buy, every method, 2 runs to 100 labels,
                                               # the reports, speed at 20,000 pairs; temp files
"""

from __future__ import annotations

import argparse
import inspect
import sys
import tempfile
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))

from bench_pairs_pools import (  # noqa: E402
    cached,
    febrl_pool,
    patentsview_pool,
    restaurant_research_pool,
)

from er_evaluation.datasets import load_pool  # noqa: E402
from er_evaluation.pairs import (  # noqa: E402
    LabelOracle,
    OASISSampler,
    _variance,
    estimate_history,
    estimate_measure,
    f_measures,
    make_sampler,
    sample_labels,
    samplers,
    stratify,
)
from er_evaluation.vocabulary import pair_metric_names  # noqa: E402

NAMES = tuple(pair_metric_names(1.0))
default_branching = _variance.MODEL_BRANCHING
default_open_share = samplers.MIN_OPEN_SHARE

BUDGETS = (500, 1000, 2000)
METHODS = ("passive", "stratified", "importance", "oasis")
# column suffixes of the stored results (benchmarks/data/bench_pairs_results*.csv)
METRICS = ("precision", "recall", "F1")
Z95 = 1.959963984540054


def pools(names):
    for name in names:
        if name in ("abt-buy", "dblp-acm", "restaurant"):
            yield name, load_pool(name)
        elif name == "restaurant-all":
            yield name, restaurant_research_pool()
        elif name == "febrl":
            yield name, cached("febrl", febrl_pool)
        elif name == "patentsview":
            yield name, cached("patentsview", patentsview_pool)
        else:
            raise ValueError(name)


OVERRIDES = ("ais", "poststrat", "labels", "flat", "nocal", "measure")


def _is_override(part: str) -> bool:
    return part in OVERRIDES or part.startswith("vprior=")


def parse_variant(spec: str) -> tuple[str, dict, bool]:
    """``method[:key=value,...][:override]`` -> (method, sampler parameters,
    estimator override: the weighted ratio of Marchant & Rubinstein 2017 everywhere,
    post-stratification within the strata of an adaptive run, or the variance model's
    prior rescaled to S pseudo-labels per stratum)."""
    method, *rest = spec.split(":")
    params, ais = {}, ""
    for part in rest:
        if _is_override(part):
            ais = part
            continue
        for item in part.split(","):
            key, value = item.split("=")
            if key in ("decay", "by_prediction", "doubling", "shared_prior"):
                params[key] = value.lower() in ("1", "true")
            elif key == "max_share" and value.lower() == "none":
                params[key] = None
            elif key == "bins":  # CSF histogram of the strata: "fd", "default" or a count
                params[key] = value if value in ("fd", "default") else int(value)
            else:
                params[key] = float(value)
    return method, params, ais


def default_bins(method: str):
    """The CSF histogram ``n_bins`` a sampler stratifies with by default ("default" = None)."""
    if method != "oasis":
        return "default"
    default = inspect.signature(OASISSampler).parameters["n_bins"].default
    return "default" if default is None else default


def default_max_share(method: str):
    """The ``max_share`` an OASIS sampler cuts its strata with by default (None: uncut)."""
    if method != "oasis":
        return None
    return inspect.signature(OASISSampler).parameters["max_share"].default


def one_pool(
    name, pool, reps: int, methods, n_strata: int, seed0: int, partial=None, runs_out=None
) -> pd.DataFrame:
    """Every method spec on ``pool``: specs that differ only in the estimator override share
    their sampling runs (same seeds), so estimators are compared on identical samples.
    Each run's rows (:func:`run_rows`) are appended to ``runs_out`` (a CSV) as soon as
    the run is done, so a stopped benchmark keeps its runs (``--summarize``)."""
    truth = pool.truth()
    truth_vec = np.array([truth[m] for m in NAMES])
    oracle = LabelOracle(pool.labels)
    strata_of_bins = {}

    def strata_for(bins, by_prediction=True, max_share=None, doubling=False):
        if (bins, by_prediction, max_share, doubling) not in strata_of_bins:
            strata_of_bins[bins, by_prediction, max_share, doubling] = stratify(
                pool.scores,
                pool.predicted,
                n_strata,
                n_bins=None if bins == "default" else bins,
                by_prediction=by_prediction,
                max_share=max_share,
                doubling=doubling,
            )
        return strata_of_bins[bins, by_prediction, max_share, doubling]

    strata64 = (
        stratify(pool.scores, pool.predicted, 64)
        if any("ais" == m.split(":")[0] for m in methods)
        else None
    )
    measure = f_measures(pool.predicted)

    groups: dict[str, list[str]] = {}
    for spec in methods:
        head, *rest = spec.split(":")
        sampler_spec = ":".join([head, *(part for part in rest if not _is_override(part))])
        groups.setdefault(sampler_spec, []).append(spec)
    all_runs = []
    for sampler_spec, specs in groups.items():
        method, extra, _ = parse_variant(sampler_spec)
        # each sampler's own default CSF histogram unless ``bins=`` overrides it
        bins = extra.pop("bins", default_bins(method))
        strata = strata_for(
            bins,
            extra.pop("by_prediction", True),
            extra.pop("max_share", default_max_share(method)),
            extra.pop("doubling", False),
        )
        params = {"strata": strata} if method in ("stratified", "oasis") else {}
        # the share of OASIS's proposal below which its completed strata are left out
        samplers.MIN_OPEN_SHARE = extra.pop("open_share", default_open_share)
        if method == "ais":
            params = {"strata": strata64}
        params |= {k: (2 * strata.n_strata if v == -1 else v) for k, v in extra.items()}
        if method == "importance":
            template = make_sampler("importance", pool, 0, **params)
        draw_total = 0.0
        for rep in range(reps):
            seed = seed0 + 1000 * rep
            if method == "importance":
                sampler = template
                sampler.rng = np.random.Generator(np.random.PCG64(seed))
            else:
                sampler = make_sampler(method, pool, seed, **params)
            start = time.perf_counter()
            sampled = sample_labels(pool, sampler, oracle, max(BUDGETS))
            draw_s = time.perf_counter() - start
            draw_total += draw_s
            rows = []
            for spec in specs:
                start = time.perf_counter()
                hist = variant_history(sampled, parse_variant(spec)[2], pool, measure)
                est_s = time.perf_counter() - start
                rows += run_rows(hist, truth_vec, name, spec, rep, seed, sampled, draw_s, est_s)
            all_runs += rows
            if runs_out is not None:
                frame = pd.DataFrame(rows)
                new_file = not Path(runs_out).exists()
                frame.to_csv(runs_out, mode="a", header=new_file, index=False)
        samplers.MIN_OPEN_SHARE = default_open_share
        print(f"  {name} {sampler_spec}: {draw_total:.1f}s sampling", flush=True)
        if partial is not None:  # progress: the rows so far of this pool
            partial(summarize(pd.DataFrame(all_runs)))
    return summarize(pd.DataFrame(all_runs))


def variant_history(sampled, override: str, pool, measure) -> pd.DataFrame:
    """The estimates at BUDGETS of one run under an estimator ``override`` (module docstring)."""
    run = sampled
    if override == "ais":
        run = replace(run, strata=None, static_proposal=False, adaptive=False)
    elif override == "poststrat":
        run = replace(run, adaptive=False)
    elif override == "labels":
        run = replace(run, stratum_prior=None)
    elif override.startswith("vprior="):
        prior = run.stratum_prior
        strength = float(override.split("=")[1])
        run = replace(run, stratum_prior=strength * prior / prior.sum(axis=0))
    # flat: the variance model's tree with one level; nocal: its prior means not rescaled
    # to the labels
    _variance.MODEL_BRANCHING = None if override == "flat" else default_branching
    _variance.CALIBRATE_PRIOR = override != "nocal"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if override == "measure":
                return measure_history(run, measure, BUDGETS)
            return estimate_history(run, pool.predicted, at=BUDGETS)
    finally:
        _variance.MODEL_BRANCHING = default_branching
        _variance.CALIBRATE_PRIOR = True


def run_rows(hist, truth_vec, pool_name, spec, rep, seed, sampled, draw_s, est_s) -> list[dict]:
    """One row per budget of one run: the error of P, R and F1 (NaN if undefined), whether
    the library's interval and value +- 1.96 SE cover the truth, the interval's width,
    the run's draws, and its sampling and estimation seconds."""
    rows = []
    for _, row in hist.iterrows():
        if int(row["n_labels"]) not in BUDGETS:
            continue
        v = row[list(NAMES)].to_numpy(float)
        se = row[[f"{m}_se" for m in NAMES]].to_numpy(float)
        low = row[[f"{m}_low" for m in NAMES]].to_numpy(float)
        high = row[[f"{m}_high" for m in NAMES]].to_numpy(float)
        nlow, nhigh = np.clip(v - Z95 * se, 0, 1), np.clip(v + Z95 * se, 0, 1)
        out = {
            "pool": pool_name,
            "method": spec,
            "rep": rep,
            "seed": seed,
            "budget": int(row["n_labels"]),
            "n_draws": sampled.n_draws,
            "draw_s": draw_s,
            "est_s": est_s,
        }
        for m, metric in enumerate(METRICS):
            out[f"err_{metric}"] = v[m] - truth_vec[m]
            out[f"cover_{metric}"] = bool(
                low[m] <= truth_vec[m] + 1e-12 and truth_vec[m] <= high[m] + 1e-12
            )
            out[f"cover_normal_{metric}"] = bool(
                nlow[m] <= truth_vec[m] + 1e-12 and truth_vec[m] <= nhigh[m] + 1e-12
            )
            out[f"width_{metric}"] = high[m] - low[m]
        rows.append(out)
    return rows


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    """Per pool, method and budget from per-run rows (:func:`run_rows`): MSE of P, R and F1
    (an undefined estimate counts as squared error 1) with its Monte-Carlo SE, median
    squared error, bias, coverage of the library's interval and of value +- 1.96 SE,
    mean width, share undefined, microseconds per draw, milliseconds per estimate and
    draws per label."""
    rows = []
    keys = ["pool", "method", "budget"]
    for (pool_name, spec, budget), g in runs.groupby(keys, sort=False):
        g = g.drop_duplicates("seed", keep="last")
        reps = len(g)
        row = {"pool": pool_name, "method": spec, "budget": int(budget), "reps": reps}
        for metric in METRICS:
            e = g[f"err_{metric}"].to_numpy(float)
            sq = np.where(np.isnan(e), 1.0, e**2)  # undefined counts as squared error 1
            row[f"mse_{metric}"] = float(np.mean(sq))
            row[f"mse_{metric}_mcse"] = (
                float(np.std(sq, ddof=1) / np.sqrt(reps)) if reps > 1 else np.nan
            )
            row[f"median_sq_{metric}"] = float(np.median(sq))
            row[f"bias_{metric}"] = float(np.nanmean(e)) if (~np.isnan(e)).any() else np.nan
            row[f"cover_{metric}"] = float(g[f"cover_{metric}"].astype(bool).mean())
            row[f"cover_normal_{metric}"] = float(g[f"cover_normal_{metric}"].astype(bool).mean())
            row[f"width_{metric}"] = float(np.nanmean(g[f"width_{metric}"]))
            row[f"undef_{metric}"] = float(np.mean(np.isnan(e)))
        n_draws = float(g["n_draws"].sum())
        row["us_per_draw"] = 1e6 * float(g["draw_s"].sum()) / max(n_draws, 1.0)
        row["ms_per_estimate"] = 1e3 * float(g["est_s"].sum()) / (reps * len(BUDGETS))
        row["draws_per_label"] = n_draws / (reps * max(BUDGETS))
        rows.append(row)
    return pd.DataFrame(rows)


def measure_history(run, measure, budgets) -> pd.DataFrame:
    """As :func:`~er_evaluation.pairs.history` at ``budgets``, from ``estimate_measure``."""
    n_labels = np.cumsum(run.new_label)
    rows = []
    for budget in budgets:
        last = int(np.searchsorted(n_labels, budget, side="right"))
        if last == 0:
            continue
        row = {"n_labels": int(n_labels[last - 1])}
        for e in estimate_measure(run.prefix(last), measure):
            row |= {
                e.metric: e.value,
                f"{e.metric}_se": e.std_error,
                f"{e.metric}_low": e.ci_low,
                f"{e.metric}_high": e.ci_high,
            }
        rows.append(row)
    return pd.DataFrame(rows)


def speed(n: int = 10_000_000, draws: int = 20_000, seed: int = 0) -> pd.DataFrame:
    from er_evaluation.pairs import PairPool

    rng = np.random.default_rng(seed)
    scores = rng.beta(0.3, 6.0, size=n)
    predicted = (scores > 0.6).astype(np.int8)
    frame = pd.DataFrame(
        {
            "id_left": np.arange(n),
            "id_right": np.arange(n) + n,
            "score": scores,
            "predicted": predicted,
        }
    )

    def timed(func):
        wall, cpu = time.perf_counter(), time.process_time()
        result = func()
        return result, time.process_time() - cpu, time.perf_counter() - wall

    pool, cpu, wall = timed(lambda: PairPool.from_frame(frame))
    rows = [
        {"step": "PairPool.from_frame (validation)", "n_pairs": n, "cpu_s": cpu, "wall_s": wall}
    ]
    strata_of = {}
    for method in ("stratified", "oasis"):
        bins = None if default_bins(method) == "default" else default_bins(method)
        share = default_max_share(method)
        strata, cpu, wall = timed(
            lambda bins=bins, share=share: stratify(
                pool.scores, pool.predicted, 30, n_bins=bins, max_share=share
            )
        )
        strata_of[method] = strata
        cut = "" if share is None else f", cut at {share} N"
        rows.append(
            {
                "step": f"stratify (CSF, {bins or 'default'} bins{cut}, {strata.n_strata} strata)",
                "n_pairs": n,
                "cpu_s": cpu,
                "wall_s": wall,
            }
        )
    labels = (rng.random(n) < scores).astype(np.int8)
    for method in METHODS:
        params = {"strata": strata_of[method]} if method in strata_of else {}
        sampler, cpu, wall = timed(
            lambda method=method, params=params: make_sampler(method, pool, 1, **params)
        )
        rows.append(
            {"step": f"{method}: setup (strata given)", "n_pairs": n, "cpu_s": cpu, "wall_s": wall}
        )

        def loop(sampler=sampler):
            for _ in range(draws):
                d = sampler.draw()
                sampler.observe(d.index, int(labels[d.index]))

        _, cpu, wall = timed(loop)
        rows.append(
            {
                "step": f"{method}: draw + observe",
                "n_pairs": n,
                "cpu_us_per_draw": 1e6 * cpu / draws,
                "wall_us_per_draw": 1e6 * wall / draws,
            }
        )
    return pd.DataFrame(rows)


# F1 MSE at 1,000 / 2,000 labels of the research implementation (100 repeats)
RESEARCH = {
    ("abt-buy", "oasis"): (3.4e-3, 1.8e-3),
    ("abt-buy", "importance"): (6.1e-3, 3.9e-3),
    ("dblp-acm", "oasis"): (2.6e-4, 1.7e-5),
    ("dblp-acm", "importance"): (4.7e-4, 2.4e-4),
    # the research restaurant pool keeps all 149,747 listed pairs ("restaurant-all")
    ("restaurant-all", "oasis"): (6.1e-5, 9.5e-6),
    ("restaurant-all", "importance"): (1.0e-3, 5.6e-4),
}


PACKAGE = "oasis-0.1.3"  # bench_oasis_package.py's method name
# Stored method names of the library's OASIS default, preferred first: the cut strata
# sharing their stratum's prior written out (bench_oasis_strata_final.csv); the completed
# cells' substituted estimate on uncut strata (bench_pairs_final.csv), the same sampler
# where no stratum can be cut (FEBRL: its oversized stratum is one tied score); a run of
# today's code.
OASIS_DEFAULT = ("oasis:max_share=0.0333,shared_prior=1", "oasis:subst", "oasis")
POOL_ORDER = ("abt-buy", "dblp-acm", "restaurant", "restaurant-all", "febrl", "patentsview")


def read_results(paths) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The summaries (:func:`summarize`) and the package's rows (``bench_oasis_package.py``'s
    CSV, recognised by its method "oasis-0.1.3") of ``paths``, each row tagged with its
    file's position. A missing file or one of neither kind raises ValueError naming it."""
    results, package = [], []
    for i, path in enumerate(paths):
        try:
            frame = pd.read_csv(path)
        except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
            raise ValueError(f"{path}: cannot read it ({error})") from None
        need = {"pool", "method", "budget", "reps", "mse_F1", "mse_F1_mcse"}
        if not need <= set(frame.columns):
            raise ValueError(
                f"{path}: not a summary of this benchmark (--summarize or --out; "
                f"missing columns {sorted(need - set(frame.columns))})"
            )
        frame = frame.assign(file=i)
        is_package = frame.method == PACKAGE
        package.append(frame[is_package])
        results.append(frame[~is_package])
    return pd.concat(results, ignore_index=True), pd.concat(package, ignore_index=True)


def _pool_rank(pools) -> dict:
    """The reference's pool order, other pools after them in order of appearance."""
    names = [*POOL_ORDER, *(p for p in dict.fromkeys(pools) if p not in POOL_ORDER)]
    return {p: i for i, p in enumerate(names)}


def _cell(table: pd.DataFrame, pool: str, methods) -> pd.DataFrame | None:
    """The rows (indexed by budget) of the first of ``methods`` that ``pool`` has, from the
    first file holding it; None if it has none."""
    for method in methods:
        rows = table[(table.pool == pool) & (table.method == method)]
        if len(rows):
            rows = rows[rows.file == rows.file.min()]
            return rows.drop_duplicates("budget", keep="last").set_index("budget")
    return None


def _mse(cell: pd.DataFrame | None, budgets, mcse: bool = False) -> str:
    """F1 MSE of ``cell`` at ``budgets`` ("-" where not run), the last with its MC SE."""
    if cell is None or not set(budgets) <= set(cell.index):
        return "-"
    text = " / ".join(f"{cell.mse_F1[b]:.1e}" for b in budgets)
    return text + (f" ± {cell.mse_F1_mcse[budgets[-1]]:.1e}" if mcse else "")


def report(paths) -> str:
    """The reference's tables from stored summaries. Label efficiency: per pool F1 MSE of
    passive (with its share of undefined estimates) and stratified sampling at 2,000
    labels, static IS at 1,000 / 2,000, OASIS's default at 500 / 1,000 / 2,000 (+- MC SE),
    its P / R MSE at 2,000 and draws per label; a method comes from the first file that
    holds it for the pool, OASIS from the first of :data:`OASIS_DEFAULT` found. With the
    package's CSV: its F1 MSE per budget and draws per label beside the library's default
    at 1,000 labels."""
    table, package = read_results(paths)
    lines = []
    if len(table):
        lines += [
            "| pool | passive @2,000 (undefined) | stratified @2,000 | static IS @1,000 / @2,000 "
            "| OASIS @500 / @1,000 / @2,000 ± MC SE | OASIS P / R MSE @2,000 | OASIS draws/label |",
            "|---|---|---|---|---|---|---:|",
        ]
        for pool in sorted(dict.fromkeys(table.pool), key=_pool_rank(table.pool).get):
            passive = _cell(table, pool, ["passive"])
            oasis = _cell(table, pool, OASIS_DEFAULT)
            has_2000 = oasis is not None and 2000 in oasis.index
            lines.append(
                f"| {pool} | "
                + (
                    f"{passive.mse_F1[2000]:.1e} ({passive.undef_F1[2000]:.0%})"
                    if passive is not None and 2000 in passive.index
                    else "-"
                )
                + f" | {_mse(_cell(table, pool, ['stratified']), [2000])}"
                f" | {_mse(_cell(table, pool, ['importance']), [1000, 2000])}"
                f" | {_mse(oasis, [500, 1000, 2000], mcse=True)} | "
                + (
                    f"{oasis.mse_precision[2000]:.1e} / {oasis.mse_recall[2000]:.1e} | "
                    f"{oasis.draws_per_label[2000]:.1f} |"
                    if has_2000
                    else "- | - |"
                )
            )
    if len(package):
        lines += [
            *([""] if lines else []),
            "| pool | package runs | package @500 | @1,000 | @2,000 | package draws/label "
            "| library @1,000 |",
            "|---|---:|---|---|---|---:|---|",
        ]
        for pool in sorted(dict.fromkeys(package.pool), key=_pool_rank(package.pool).get):
            rows = package[package.pool == pool].drop_duplicates("budget", keep="last")
            rows = rows.set_index("budget")
            cells = [
                f"{rows.mse_F1[b]:.1e} ± {rows.mse_F1_mcse[b]:.1e}" if b in rows.index else "-"
                for b in (500, 1000, 2000)
            ]
            oasis = _cell(table, pool, OASIS_DEFAULT) if len(table) else None
            library = (
                f"{oasis.mse_F1[1000]:.1e} ± {oasis.mse_F1_mcse[1000]:.1e}"
                if oasis is not None and 1000 in oasis.index
                else "not run"
            )
            lines.append(
                f"| {pool} | {int(rows.reps.max())} | {' | '.join(cells)} | "
                f"{rows.draws_per_label.max():.1f} | {library} |"
            )
    return "\n".join(lines)


def _short_e(x: float) -> str:
    """``x`` in the reference's short scientific form: 4.5e-3, not 4.5e-03."""
    return f"{x:.1e}".replace("e-0", "e-").replace("e+0", "e+")


def decay_report(paths) -> str:
    """The reference's decay table: per pool the F1 MSE +- MC SE of OASIS's default
    ("oasis") and of ``oasis:decay=1`` at 500 / 1,000 / 2,000 labels, their recall
    coverage (%), and the package's F1 MSE (``bench_oasis_package.py``'s CSV). Per-run
    CSVs (``--runs-out``) are summarised first."""
    frames = []
    for path in paths:
        try:
            frame = pd.read_csv(path)
        except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
            raise ValueError(f"{path}: cannot read it ({error})") from None
        if "rep" in frame and "err_F1" in frame:  # per-run rows
            frame = summarize(
                frame.drop_duplicates(["pool", "method", "seed", "budget"], keep="last")
            )
        frames.append(frame)
    table = pd.concat(frames, ignore_index=True)
    budgets = (500, 1000, 2000)
    lines = [
        "| pool | default | `decay=1` | recall coverage default / `decay=1` | package |",
        "|---|---|---|---|---|",
    ]
    for pool in sorted(dict.fromkeys(table.pool), key=_pool_rank(table.pool).get):
        cells = {
            method: table[(table.pool == pool) & (table.method == method)].set_index("budget")
            for method in ("oasis", "oasis:decay=1", PACKAGE)
        }
        if any(not set(budgets) <= set(c.index) for c in cells.values()):
            continue
        default, decay, package = cells.values()
        mse = [
            " / ".join(f"{_short_e(c.mse_F1[b])} ± {_short_e(c.mse_F1_mcse[b])}" for b in budgets)
            for c in (default, decay)
        ]
        cover = " / ".join(
            "/".join(f"{100 * c.cover_recall[b]:.0f}" for b in budgets) for c in (default, decay)
        )
        lines.append(
            f"| {pool} | {mse[0]} | {mse[1]} | {cover} | "
            + " / ".join(_short_e(package.mse_F1[b]) for b in budgets)
            + " |"
        )
    return "\n".join(lines)


def details(paths) -> str:
    """Markdown tables from result CSVs: MSE (undefined = squared error 1) and 95% CI
    coverage of precision, recall and F1 per pool, method and budget, then F1 MSE of
    every OASIS variant against the research figures."""
    table, _ = read_results(paths)
    if table.empty:
        return "no results of this benchmark's samplers in the files (only the package's)"
    # rows by pool (first appearance), then method (first appearance), then budget
    pool_rank = {p: i for i, p in enumerate(dict.fromkeys(table.pool))}
    method_rank = {m: i for i, m in enumerate(dict.fromkeys(table.method))}
    table = table.sort_values(
        ["pool", "method", "budget"],
        key=lambda c: (
            c.map(pool_rank)
            if c.name == "pool"
            else (c.map(method_rank) if c.name == "method" else c)
        ),
        kind="stable",
    )
    lines = [
        "| pool | method | labels | MSE P | MSE R | MSE F1 (± MCSE) | cover P | cover R | cover F1 | undefined | draws/label |",
        "|---" * 11 + "|",
    ]
    for _, r in table.iterrows():
        lines.append(
            f"| {r.pool} | {r.method} | {r.budget} | {r.mse_precision:.2e} | {r.mse_recall:.2e} "
            f"| {r.mse_F1:.2e} ± {r.mse_F1_mcse:.1e} | {r.cover_precision:.0%} "
            f"| {r.cover_recall:.0%} | {r.cover_F1:.0%} | {r.undef_F1:.0%} | {r.draws_per_label:.1f} |"
        )
    lines += [
        "",
        "| pool | method | F1 MSE @1000 (research) | F1 MSE @2000 (research) |",
        "|---|---|---|---|",
    ]
    for (pool, method), ref in RESEARCH.items():
        # the method and its variants (e.g. oasis:labels) on the same runs
        variants = [m for m in dict.fromkeys(table.method) if m.split(":")[0] == method]
        for variant in variants:
            got = table[(table.pool == pool) & (table.method == variant)]
            got = got.drop_duplicates("budget", keep="last").set_index("budget")
            if got.empty or not {1000, 2000} <= set(got.index):
                continue
            lines.append(
                f"| {pool} | {variant} | {got.mse_F1[1000]:.1e} ± {got.mse_F1_mcse[1000]:.1e} "
                f"({ref[0]:.1e}) | {got.mse_F1[2000]:.1e} ± {got.mse_F1_mcse[2000]:.1e} "
                f"({ref[1]:.1e}) |"
            )
    return "\n".join(lines)


def prior_check(names) -> pd.DataFrame:
    """Per pool and prediction group: the matches the variance model's prior means expect
    over all pool pairs (OASIS's 30 strata per group and AIS's 64) against the true
    matches: how far a score-based prior is from the pool before any label."""
    rows = []
    for name, pool in pools(names):
        labels = pool.labels.astype(np.float64)
        for method, k in (("oasis", 30), ("ais", 64)):
            strata = stratify(pool.scores, pool.predicted, k)
            prior = make_sampler(method, pool, 0, strata=strata).stratum_prior
            mean = prior[0] / prior.sum(axis=0)
            true = np.bincount(strata.codes, weights=labels, minlength=strata.n_strata)
            for h in (0, 1):
                group = strata.predicted == h
                rows.append(
                    {
                        "pool": name,
                        "sampler": method,
                        "predicted": h,
                        "pairs": int(strata.sizes[group].sum()),
                        "prior_expected_matches": float((mean * strata.sizes)[group].sum()),
                        "true_matches": int(true[group].sum()),
                    }
                )
    return pd.DataFrame(rows)


def coverage_report(paths, target=(0.92, 0.98)) -> str:
    """Markdown coverage table: per pool, method and budget the share of runs whose 95%
    interval covers the truth for P / R / F1 and the mean widths. A cell is within the
    target if its coverage is in ``target`` (strict), or within 2 Monte-Carlo standard
    errors of it (sqrt(0.95 x 0.05 / runs): 2.2 points at 100 runs)."""
    frame = pd.concat([pd.read_csv(p) for p in paths], ignore_index=True)
    lines = [
        "| pool | method | labels | runs | cover P / R / F1 | width P / R / F1 | in [92, 98] | within 2 MC SE |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for _, r in frame.iterrows():
        cover = [r[f"cover_{m}"] for m in METRICS]
        mcse = float(np.sqrt(0.95 * 0.05 / r["reps"]))
        strict = all(target[0] <= c <= target[1] for c in cover)
        loose = all(target[0] - 2 * mcse <= c <= target[1] + 2 * mcse for c in cover)
        lines.append(
            f"| {r['pool']} | {r['method']} | {int(r['budget']):,} | {int(r['reps'])} | "
            + " / ".join(f"{100 * c:.0f}%" for c in cover)
            + " | "
            + " / ".join(f"{r[f'width_{m}']:.3f}" for m in METRICS)
            + f" | {'yes' if strict else 'no'} | {'yes' if loose else '**no**'} |"
        )
    return "\n".join(lines)


def main() -> None:
    global BUDGETS
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--pools", nargs="+", default=["abt-buy", "dblp-acm", "restaurant", "febrl", "patentsview"]
    )
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--strata", type=int, default=30)
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument(
        "--budgets", nargs="+", type=int, default=list(BUDGETS), help="label budgets of each run"
    )
    parser.add_argument("--out", default="benchmarks/data/bench_pairs_results.csv")
    parser.add_argument(
        "--runs-out", help="per-run CSV, appended to after every run (default: <out>_runs.csv)"
    )
    parser.add_argument(
        "--summarize",
        nargs="+",
        metavar="RUNS_CSV",
        help="only write --out from per-run CSVs (a stopped run's, or several processes')",
    )
    parser.add_argument(
        "--speed", action="store_true", help="run the 10M-pair speed benchmark instead"
    )
    parser.add_argument(
        "--report",
        nargs="+",
        metavar="CSV",
        help="the reference's tables from summary CSVs (--summarize, --out; "
        "bench_oasis_package.py's for the package table)",
    )
    parser.add_argument(
        "--decay-report",
        nargs="+",
        metavar="CSV",
        help="the reference's decay table: per-run or summary CSVs holding oasis and "
        "oasis:decay=1, and the package's CSV",
    )
    parser.add_argument(
        "--details",
        action="store_true",
        help="with --report: every pool x method x budget, and the research comparison",
    )
    parser.add_argument(
        "--prior-check", action="store_true", help="prior-expected vs true matches per pool"
    )
    parser.add_argument(
        "--coverage-report", nargs="+", metavar="CSV", help="markdown coverage table from CSVs"
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="every method and estimator override on abt-buy, 2 runs to 100 labels, the "
        "summaries and reports, speed at 20,000 pairs; files in a temporary folder (seconds)",
    )
    args = parser.parse_args()
    BUDGETS = tuple(sorted(args.budgets))
    for flag in ("summarize", "coverage_report"):
        for path in getattr(args, flag) or ():
            if not Path(path).is_file():
                parser.error(f"--{flag.replace('_', '-')} {path}: no such file")
    if args.smoke:
        smoke()
        return
    if args.prior_check:
        print(prior_check(args.pools).to_string(index=False))
        return
    if args.coverage_report:
        print(coverage_report(args.coverage_report))
        return
    if args.decay_report:
        try:
            print(decay_report(args.decay_report))
        except ValueError as error:
            parser.error(f"--decay-report {error}")
        return
    if args.report:
        try:
            print(details(args.report) if args.details else report(args.report))
        except ValueError as error:
            parser.error(f"--report {error}")
        return
    if args.speed:
        table = speed()
        print(table.to_string(index=False))
        return
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.summarize:
        runs = pd.concat([pd.read_csv(p) for p in args.summarize], ignore_index=True)
        runs = runs.drop_duplicates(["pool", "method", "seed", "budget"], keep="last")
        summarize(runs).to_csv(out, index=False)
        print(f"{out}: {len(runs)} run rows summarized")
        return
    runs_out = Path(args.runs_out or out.with_name(out.stem + "_runs.csv"))
    frames = []
    for name, pool in pools(args.pools):
        start = time.perf_counter()
        frames.append(
            one_pool(
                name,
                pool,
                args.reps,
                args.methods,
                args.strata,
                args.seed,
                partial=lambda rows, done=tuple(frames): pd.concat([*done, rows]).to_csv(
                    out, index=False
                ),
                runs_out=runs_out,
            )
        )
        pd.concat(frames).to_csv(out, index=False)
        print(f"{name}: {time.perf_counter() - start:.0f}s", flush=True)
    table = pd.concat(frames)
    cols = [
        "pool",
        "method",
        "budget",
        "mse_F1",
        "mse_precision",
        "mse_recall",
        "cover_F1",
        "cover_precision",
        "cover_recall",
        "undef_F1",
        "us_per_draw",
    ]
    print(table[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}"))


def smoke() -> None:
    """Each entry point of the script end to end at toy size (module docstring)."""
    global BUDGETS
    BUDGETS = (100, 1000, 2000)  # the report compares at 1,000 and 2,000 labels
    methods = [*METHODS, "ais", "oasis:labels", "oasis:measure", "oasis:max_share=none"]
    methods.append("oasis:open_share=0")
    with tempfile.TemporaryDirectory() as tmp:
        out, runs_out = Path(tmp) / "results.csv", Path(tmp) / "runs.csv"
        (name, pool), *_ = pools(["abt-buy"])
        one_pool(name, pool, 1, methods, 30, 0, runs_out=runs_out).to_csv(out, index=False)
        summarize(pd.read_csv(runs_out)).to_csv(out, index=False)
        print(report([out]))
        print(details([out]))
        print(coverage_report([out]))
    print(prior_check(["abt-buy"]).to_string(index=False))
    print(speed(n=20_000, draws=200).to_string(index=False))


if __name__ == "__main__":
    main()
