"""Label efficiency, PR curves and speed of the AIS sampler of Marchant & Rubinstein 2021.

``--mode f1``: on each pool with full truth, every method runs ``--reps`` times to the
largest budget; the estimate at budget b is the one after the last draw that needed at
most b labels. Per pool, method and budget: MSE of F1, precision and recall with their
Monte-Carlo standard errors, the share of runs with F1 undefined (excluded from the
MSE), coverage of the 95% intervals of
:func:`er_evaluation.pairs.measures.estimate_measure` (Wilson on the effective sample
size), draws per label and CPU time per draw. Methods: ``ais`` (the sampler's defaults
over 2 x 64 CSF strata), ``ais1`` (the same with a one-level tree: a Beta model per
stratum), ``ais:key=value,...`` (the defaults with the given AISSampler parameters, e.g.
``ais:prior=scores,prior_strength=1.0``), ``oasis``, ``importance`` (static IS),
``passive``. Each method's rows are written to ``--out`` as soon as it finishes.

``--mode pr``: the PR curve (precision and recall at ``--thresholds`` evenly spaced score
thresholds) estimated from runs of ``ais-pr`` (AIS targeting the curve), ``ais``
(targeting F1), ``oasis`` and ``importance``: mean integrated squared error
(1/L) sum_l [(P_l_hat - P_l)^2 + (R_l_hat - R_l)^2] with undefined points counted as
squared error 1, and pointwise coverage of the 95% intervals.

``--mode blind``: AIS with its defaults, runs to 1,000 labels;
at 300, 500 and 1,000 labels the coverage (with its Monte-Carlo SE), mean width, median SE
and MSE of the library's intervals (``estimate_from_labels``, which ``estimate_measure``
returns for the F-measures), the same runs with the variance alternative that was
screened and rejected (each blind stratum's model term capped at the model's mean square
of its unlabelled matches), and the share of the library's recall variance held by the
model term of the largest stratum (the term left out).

``--mode speed``: CPU time per draw + observe on a synthetic pool of 10 million pairs
(Beta(0.3, 6) scores, labels Bernoulli(score), predicted iff score > 0.6), oracle
excluded, for AIS targeting F1 and the PR curve, and OASIS on the same strata.

    nice -n 10 python benchmarks/bench_pairs_ais.py --mode f1 --reps 200 --pools abt-buy --out benchmarks/data/bench_pairs_ais_v4_abt-buy.csv
    nice -n 10 python benchmarks/bench_pairs_ais.py --mode pr --reps 100 --pools abt-buy --out benchmarks/data/bench_pairs_ais_pr_v4_abt-buy.csv
    nice -n 10 python benchmarks/bench_pairs_ais.py --mode blind --reps 200 --pools restaurant abt-buy --out benchmarks/data/bench_pairs_ais_blind.csv
    nice -n 10 python benchmarks/bench_pairs_ais.py --mode speed
    python benchmarks/bench_pairs_ais.py --report benchmarks/data/bench_pairs_ais_v4_*.csv
    python benchmarks/bench_pairs_ais.py --smoke   # every mode on abt-buy at toy size, the
                                                   # report; files in a temporary folder
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))

from bench_pairs import pools  # noqa: E402

from er_evaluation.errors import UndefinedMetricWarning  # noqa: E402
from er_evaluation.pairs import (  # noqa: E402
    LabelOracle,
    _variance,
    estimate_from_labels,
    estimates,
    make_sampler,
    measures,
    sample_labels,
    stratify,
)
from er_evaluation.pairs.ais import AISSampler  # noqa: E402
from er_evaluation.pairs.estimates import LabelRun  # noqa: E402
from er_evaluation.pairs.measures import (  # noqa: E402
    estimate_measure,
    f_measures,
    group_sums,
    pr_curve,
)

BUDGETS = (500, 1000, 2000)
METRICS = ("pairwise_precision", "pairwise_recall", "pairwise_f1")


def _parse(spec: str) -> dict:
    """``ais:key=value,...`` -> AISSampler keyword arguments (numbers, None, or strings)."""
    out = {}
    for item in spec.split(":", 1)[1].split(","):
        key, value = item.split("=")
        if value == "None":
            out[key] = None
        else:
            try:
                out[key] = float(value) if "." in value or "e" in value else int(value)
            except ValueError:
                out[key] = value
    return out


def _sampler(method, pool, seed, strata30, strata64, template):
    if method.startswith("ais:"):
        params = _parse(method)
        strata = (
            strata64
            if "n_strata" not in params
            else stratify(pool.scores, pool.predicted, params["n_strata"])
        )
        return AISSampler(pool, seed, strata=strata, **params)
    if method == "ais":
        return AISSampler(pool, seed, strata=strata64)
    if method == "ais1":
        return AISSampler(pool, seed, strata=strata64, branching=None)
    if method == "ais-pr":
        return AISSampler(pool, seed, strata=strata64, target="pr_curve", n_thresholds=100)
    if method == "oasis":
        return make_sampler("oasis", pool, seed, strata=strata30)
    if method == "importance":
        template.rng = np.random.Generator(np.random.PCG64(seed))
        return template
    return make_sampler(method, pool, seed)


def _prefix(run: LabelRun, budget: int) -> LabelRun | None:
    """The run up to the last draw needing at most ``budget`` labels, with the run's
    sampler flags and variance model (``LabelRun.prefix``; this script's own copy used to
    drop them, so its coverage was that of the labels-only variance)."""
    n_labels = np.cumsum(run.new_label)
    last = int(np.searchsorted(n_labels, budget, side="right"))
    return None if last == 0 else run.prefix(last)


def _runs(name, pool, methods, reps, seed0, budget):
    oracle = LabelOracle(pool.labels)
    strata30 = stratify(pool.scores, pool.predicted, 30)
    strata64 = stratify(pool.scores, pool.predicted, 64)
    template = make_sampler("importance", pool, 0) if "importance" in methods else None
    for method in methods:
        cpu, draws = 0.0, 0
        for rep in range(reps):
            seed = seed0 + 1000 * rep
            sampler = _sampler(method, pool, seed, strata30, strata64, template)
            start = time.process_time()
            run = sample_labels(pool, sampler, oracle, budget)
            cpu += time.process_time() - start
            draws += run.n_draws
            yield method, rep, run, cpu, draws
        print(f"  {name} {method}: {cpu:.0f} s CPU for {reps} runs", flush=True)


def f1_mode(name, pool, methods, reps, seed0, partial=None, point_only=False) -> pd.DataFrame:
    """``partial(rows)`` is called after each method with the rows so far (progress);
    ``point_only``: point estimates only (no intervals, coverage NaN)."""
    truth = pool.truth()
    truth_vec = np.array(
        [truth["pairwise_precision"], truth["pairwise_recall"], truth["pairwise_f1"]]
    )
    measure = f_measures(pool.predicted)
    rows = []
    results: dict = {}
    for method, rep, run, cpu, draws in _runs(name, pool, methods, reps, seed0, max(BUDGETS)):
        for budget in BUDGETS:
            part = _prefix(run, budget)
            key = (method, budget)
            err, cov = results.setdefault(key, ([], []))
            if part is None:
                err.append(np.full(3, np.nan))
                cov.append(np.zeros(3, dtype=bool))
                continue
            if point_only:
                # the same point estimate g(sum_j w_j ell_j) without the intervals (for
                # quick comparisons of sampler options: coverage is left empty)
                totals = group_sums(measure, part.index, part.label, part.weight)
                with np.errstate(divide="ignore", invalid="ignore"):
                    err.append(measure.value(measure.totals(totals)) - truth_vec)
                cov.append(np.full(3, np.nan))
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UndefinedMetricWarning)
                est = estimate_measure(part, measure)
            value = np.array([e.value for e in est])
            low = np.array([e.ci_low for e in est])
            high = np.array([e.ci_high for e in est])
            err.append(value - truth_vec)
            cov.append((low <= truth_vec + 1e-12) & (truth_vec <= high + 1e-12))
        if rep == reps - 1:
            for budget in BUDGETS:
                err, cov = (np.array(a) for a in results[(method, budget)])
                row = {"pool": name, "method": method, "budget": budget, "reps": reps}
                for m, metric in enumerate(METRICS):
                    e = err[:, m]
                    ok = ~np.isnan(e)
                    row[f"mse_{metric}"] = float(np.mean(e[ok] ** 2)) if ok.any() else np.nan
                    row[f"mse_{metric}_mcse"] = (
                        float(np.std(e[ok] ** 2) / np.sqrt(ok.sum())) if ok.sum() > 1 else np.nan
                    )
                    row[f"bias_{metric}"] = float(np.mean(e[ok])) if ok.any() else np.nan
                    row[f"cover_{metric}"] = float(np.mean(cov[:, m])) if not point_only else np.nan
                    row[f"undef_{metric}"] = float(np.mean(~ok))
                row["cpu_us_per_draw"] = 1e6 * cpu / max(draws, 1)
                row["draws_per_label"] = draws / (reps * max(BUDGETS))
                rows.append(row)
            if partial is not None:
                partial(pd.DataFrame(rows))
    return pd.DataFrame(rows)


def pr_mode(name, pool, methods, reps, seed0, n_thresholds, budget) -> pd.DataFrame:
    curve = pr_curve(pool.scores, n_thresholds)
    labels = pool.labels.astype(np.float64)
    above = pool.scores[None, :] >= curve.thresholds[:, None]
    tp = above @ labels
    with np.errstate(invalid="ignore", divide="ignore"):
        truth = np.concatenate([tp / above.sum(axis=1), tp / labels.sum()])
    defined = np.isfinite(truth)
    rows = []
    ise, cover, undef = [], [], []
    for method, rep, run, cpu, draws in _runs(name, pool, methods, reps, seed0, budget):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            est = estimate_measure(run, curve)
        value = np.array([e.value for e in est])[defined]
        low = np.array([e.ci_low for e in est])[defined]
        high = np.array([e.ci_high for e in est])[defined]
        t = truth[defined]
        sq = np.where(np.isnan(value), 1.0, (value - t) ** 2)
        n = len(curve.thresholds)
        ise.append(sq.sum() / n)
        cover.append(np.mean((low <= t + 1e-12) & (t <= high + 1e-12)))
        undef.append(np.mean(np.isnan(value)))
        if rep == reps - 1:
            ise_a = np.array(ise)
            rows.append(
                {
                    "pool": name,
                    "method": method,
                    "budget": budget,
                    "reps": reps,
                    "thresholds": n,
                    "mise": float(ise_a.mean()),
                    "mise_mcse": float(ise_a.std() / np.sqrt(reps)),
                    "pointwise_cover": float(np.mean(cover)),
                    "undefined_points": float(np.mean(undef)),
                    "cpu_us_per_draw": 1e6 * cpu / max(draws, 1),
                }
            )
            ise, cover, undef = [], [], []
    return pd.DataFrame(rows)


BLIND_BUDGETS = (300, 500, 1000)


def _blind_terms(run: LabelRun):
    """Per stratum of the run's variance model: the model's fresh draws (those that
    labelled a pair in a stratum with no labelled match), their sum of squared weights
    S_k, the model rate r_k, and U_k the stratum's unlabelled pairs."""
    model, rate = _variance.oracle_rates(run)
    strata = run.model_strata
    k_t = strata.codes[run.index]
    n_strata = strata.n_strata
    s_k = np.bincount(k_t[model], weights=run.weight[model] ** 2, minlength=n_strata)
    r_k = np.zeros(n_strata)
    r_k[k_t[model]] = rate[model]
    labelled = np.bincount(strata.codes[np.unique(run.index)], minlength=n_strata)
    return model, rate, k_t, s_k, r_k, strata.sizes - labelled


def _capped_rates(run: LabelRun):
    """The alternative screened for AIS intervals at small budgets and rejected (benchmark only): each
    blind stratum's term of the variance capped at the model's mean square of the
    stratum's unlabelled matches, U r (1 - r) + (U r)^2 (conditionally on no match among
    its draws the estimate's error from the stratum is minus those matches), against its
    importance-sampling term (N / T)^2 S r; done by scaling the fresh draws' rates."""
    model, rate, k_t, s_k, r_k, unl = _blind_terms(run)
    is_term = (run.pool_size / run.n_draws) ** 2 * s_k * r_k
    mean_square = unl * r_k * (1 - r_k) + (unl * r_k) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(is_term > 0, np.minimum(1.0, mean_square / is_term), 1.0)
    return model, np.where(model, rate * factor[k_t], rate)


def _without_largest(run: LabelRun):
    """Diagnosis: the variance model's term of the largest stratum left out (its fresh
    draws count with their label, 0), to show which term makes the interval wide."""
    model, rate, k_t, *_ = _blind_terms(run)
    largest = int(np.argmax(run.model_strata.sizes))
    return model & (k_t != largest), rate


@contextmanager
def _rates(function):
    """Every estimate path with ``function`` in place of ``_variance.oracle_rates``."""
    modules = [m for m in (estimates, measures) if hasattr(m, "oracle_rates")]
    saved = [m.oracle_rates for m in modules]
    for m in modules:
        m.oracle_rates = function
    try:
        yield
    finally:
        for m, f in zip(modules, saved, strict=True):
            m.oracle_rates = f


def blind_mode(name, pool, reps, seed0, budgets=BLIND_BUDGETS) -> pd.DataFrame:
    """AIS intervals at small budgets. Per budget, on the same
    runs: the library's estimate (``estimate_from_labels``, which ``estimate_measure`` of
    the F-measures returns), the capped alternative, and the library's recall variance
    with the largest stratum's model term left out (its share of the variance)."""
    truth = pool.truth()
    names = list(METRICS)
    strata64 = stratify(pool.scores, pool.predicted, 64)
    oracle = LabelOracle(pool.labels)
    variants = (
        ("library", _variance.oracle_rates),
        ("capped", _capped_rates),
        ("no-largest", _without_largest),
    )
    records = []
    for rep in range(reps):
        seed = seed0 + 1000 * rep
        run = sample_labels(pool, AISSampler(pool, seed, strata=strata64), oracle, max(budgets))
        for budget in budgets:
            part = _prefix(run, budget)
            for variant, function in variants:
                with _rates(function), warnings.catch_warnings():
                    warnings.simplefilter("ignore", UndefinedMetricWarning)
                    found = estimate_from_labels(part, pool.predicted)
                for metric, e in zip(names, (found.precision, found.recall, *found.f), strict=True):
                    records.append(
                        {
                            "rep": rep,
                            "budget": budget,
                            "variant": variant,
                            "metric": metric,
                            "value": e.value,
                            "se": e.std_error,
                            "low": e.ci_low,
                            "high": e.ci_high,
                            "truth": truth[metric],
                        }
                    )
        if rep % 25 == 24:
            print(f"  {name}: {rep + 1} runs", flush=True)
    frame = pd.DataFrame(records)
    frame["cover"] = (frame.low <= frame.truth + 1e-12) & (frame.truth <= frame.high + 1e-12)
    frame["width"] = frame.high - frame.low
    rows = []
    for (budget, variant, metric), g in frame.groupby(["budget", "variant", "metric"]):
        p = float(g.cover.mean())
        rows.append(
            {
                "pool": name,
                "mode": "blind",
                "budget": budget,
                "variant": variant,
                "metric": metric,
                "reps": len(g),
                "cover": p,
                "cover_mcse": float(np.sqrt(p * (1 - p) / len(g))),
                "mean_width": float(g.width.mean()),
                "median_se": float(g.se.median()),
                "mse": float(np.mean((g.value - g.truth) ** 2)),
            }
        )
    out = pd.DataFrame(rows)
    # share of the library's recall variance that the largest stratum's model term holds
    rec = frame[frame.metric == "pairwise_recall"].pivot_table(
        index=["rep", "budget"], columns="variant", values="se"
    )
    share = (1 - (rec["no-largest"] / rec["library"]) ** 2).groupby("budget").median()
    out["largest_share_of_recall_var"] = out.budget.map(share)
    return out


def speed(n: int = 10_000_000, draws: int = 20_000, seed: int = 0) -> pd.DataFrame:
    from er_evaluation.pairs import PairPool

    rng = np.random.default_rng(seed)
    scores = rng.beta(0.3, 6.0, size=n)
    frame = pd.DataFrame(
        {
            "id_left": np.arange(n),
            "id_right": np.arange(n) + n,
            "score": scores,
            "predicted": (scores > 0.6).astype(np.int8),
        }
    )
    pool = PairPool.from_frame(frame)
    labels = (rng.random(n) < scores).astype(np.int8)
    strata = stratify(pool.scores, pool.predicted, 64)
    rows = []
    for label, build in (
        ("ais (F1)", lambda: AISSampler(pool, 1, strata=strata)),
        (
            "ais (PR curve, 100 thresholds)",
            lambda: AISSampler(pool, 1, strata=strata, target="pr_curve"),
        ),
        ("oasis (same strata)", lambda: make_sampler("oasis", pool, 1, strata=strata)),
    ):
        start = time.process_time()
        sampler = build()
        setup = time.process_time() - start
        start, wall = time.process_time(), time.perf_counter()
        new = 0
        seen = np.zeros(n, dtype=bool)
        for _ in range(draws):
            d = sampler.draw()
            new += not seen[d.index]
            seen[d.index] = True
            sampler.observe(d.index, int(labels[d.index]))
        rows.append(
            {
                "sampler": label,
                "n_pairs": n,
                "strata": strata.n_strata,
                "setup_cpu_s": setup,
                "cpu_us_per_draw": 1e6 * (time.process_time() - start) / draws,
                "wall_us_per_draw": 1e6 * (time.perf_counter() - wall) / draws,
                "new_labels_per_draw": new / draws,
            }
        )
    return pd.DataFrame(rows)


def report(paths) -> str:
    table = pd.concat([pd.read_csv(p) for p in paths])
    lines = []
    if "mse_pairwise_f1" in table:
        f1 = table[table["draws_per_label"].notna()]
        lines += [
            "| pool | method | MSE F1 @500 | @1,000 | @2,000 (± MCSE) | cover P / R / F1 @2,000 | draws/label | CPU µs/draw |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for (pool, method), g in f1.groupby(["pool", "method"], sort=False):
            g = g.set_index("budget")
            r = g.loc[2000]
            lines.append(
                f"| {pool} | {method} | {g.loc[500, 'mse_pairwise_f1']:.2e} | "
                f"{g.loc[1000, 'mse_pairwise_f1']:.2e} | {r.mse_pairwise_f1:.2e} ± {r.mse_pairwise_f1_mcse:.1e} | "
                f"{r.cover_pairwise_precision:.0%} / {r.cover_pairwise_recall:.0%} / {r.cover_pairwise_f1:.0%} | "
                f"{r.draws_per_label:.2f} | {r.cpu_us_per_draw:.0f} |"
            )
    if "variant" in table:
        blind = table[table["variant"].notna()]
        lines += [
            "",
            "| pool | labels | variance | cover P / R / F1 (MCSE of R) | mean width R / F1 | median SE R | largest stratum's share of var R (library) |",
            "|---|---|---|---|---|---|---|",
        ]
        for (pool, budget, variant), g in blind.groupby(["pool", "budget", "variant"], sort=False):
            g = g.set_index("metric")
            p, r, f = (g.loc[m] for m in METRICS)
            lines.append(
                f"| {pool} | {int(budget)} | {variant} | {p.cover:.0%} / {r.cover:.0%} / "
                f"{f.cover:.0%} (±{r.cover_mcse:.1%}) | {r.mean_width:.3f} / {f.mean_width:.3f} | "
                f"{r.median_se:.3f} | {r.largest_share_of_recall_var:.0%} |"
            )
    if "mise" in table:
        pr = table[table["mise"].notna()]
        lines += [
            "",
            "| pool | method | labels | thresholds | MISE ± MCSE | pointwise cover | undefined points |",
            "|---|---|---|---|---|---|---|",
        ]
        for _, r in pr.iterrows():
            lines.append(
                f"| {r.pool} | {r.method} | {int(r.budget)} | {int(r.thresholds)} | {r.mise:.2e} ± {r.mise_mcse:.1e} | "
                f"{r.pointwise_cover:.1%} | {r.undefined_points:.1%} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mode", choices=("f1", "pr", "blind", "speed"), default="f1")
    parser.add_argument(
        "--pools",
        nargs="+",
        default=["abt-buy", "dblp-acm", "restaurant", "restaurant-all", "febrl", "patentsview"],
    )
    parser.add_argument("--methods", nargs="+")
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=2021)
    parser.add_argument("--thresholds", type=int, default=100)
    parser.add_argument("--budget", type=int, default=2000, help="labels per run (--mode pr)")
    parser.add_argument("--out", default="benchmarks/data/bench_pairs_ais.csv")
    parser.add_argument("--report", nargs="+", metavar="CSV")
    parser.add_argument(
        "--point-only",
        action="store_true",
        help="--mode f1: point estimates only, no intervals (coverage left empty); quicker",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="every mode on abt-buy at toy size (2 runs; the PR curve at 10 thresholds to "
        "200 labels; blind to 100 labels; speed at 20,000 pairs) and the report; files in "
        "a temporary folder (seconds)",
    )
    args = parser.parse_args()
    if args.smoke:
        smoke()
        return
    if args.report:
        for path in args.report:
            if not Path(path).is_file():
                parser.error(f"--report {path}: no such file")
        print(report(args.report))
        return
    if args.mode == "speed":
        print(speed().to_string(index=False))
        return
    default = (
        ["ais", "ais1", "oasis", "importance", "passive"]
        if args.mode == "f1"
        else ["ais-pr", "ais", "oasis", "importance"]
    )
    methods = args.methods or default
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    frames = []
    for name, pool in pools(args.pools):
        start = time.perf_counter()
        if args.mode == "blind":
            frames.append(blind_mode(name, pool, args.reps, args.seed))
        elif args.mode == "f1":

            def partial(rows, done=tuple(frames)):
                pd.concat([*done, rows]).to_csv(out, index=False)

            frames.append(
                f1_mode(name, pool, methods, args.reps, args.seed, partial, args.point_only)
            )
        else:
            frames.append(
                pr_mode(name, pool, methods, args.reps, args.seed, args.thresholds, args.budget)
            )
        pd.concat(frames).to_csv(out, index=False)
        print(f"{name}: {time.perf_counter() - start:.0f} s", flush=True)
    print(pd.concat(frames).to_string(index=False, float_format=lambda v: f"{v:.4g}"))


def smoke() -> None:
    """Each mode end to end at toy size, then the report of their CSVs."""
    (name, pool), *_ = pools(["abt-buy"])
    with tempfile.TemporaryDirectory() as tmp:
        frames = {
            "f1": f1_mode(name, pool, ["ais", "ais1", "oasis", "importance", "passive"], 2, 0),
            "pr": pr_mode(name, pool, ["ais-pr", "ais", "oasis", "importance"], 2, 0, 10, 200),
            "blind": blind_mode(name, pool, 2, 0, budgets=(50, 100)),
        }
        paths = [Path(tmp) / f"{mode}.csv" for mode in frames]
        for path, frame in zip(paths, frames.values(), strict=True):
            frame.to_csv(path, index=False)
        print(report(paths))
    print(speed(n=20_000, draws=200).to_string(index=False))


if __name__ == "__main__":
    main()
