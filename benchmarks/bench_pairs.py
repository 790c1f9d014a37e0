"""Label efficiency and speed of the pair samplers (issue 4).

Label efficiency: on each pool with full truth, every method runs ``--reps`` times to
5000 labels (one run gives every budget from its history: the estimate at budget b is
the one after the last draw that needed at most b labels). Per pool, method and budget:
mean squared error of precision, recall and F1, the share of runs whose 95% single-run
CI covers the truth, the share of runs where the estimate is still undefined (NaN,
excluded from the MSE), and time per draw.

Speed: stratifying a synthetic pool of 10 million pairs, and sampler overhead per draw
(draw + observe, oracle excluded) at that pool size. Times are CPU seconds of this
process (``time.process_time``): the benchmark machine is shared, so wall-clock times
would mostly measure the other jobs; wall-clock is reported alongside.

    nice -n 10 python benchmarks/bench_pairs.py --reps 200 --out benchmarks/data/bench_pairs_results.csv
    nice -n 10 python benchmarks/bench_pairs.py --speed
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))

from bench_pairs_pools import cached, febrl_pool, patentsview_pool  # noqa: E402

from er_evaluation.datasets import load_pool  # noqa: E402
from er_evaluation.pairs import (  # noqa: E402
    LabelOracle,
    history,
    make_sampler,
    metric_names,
    sample_labels,
    stratify,
)

NAMES = tuple(metric_names([0.5]))

BUDGETS = (500, 1000, 2000)
METHODS = ("passive", "stratified", "importance", "oasis")
# column suffixes of the stored results (benchmarks/data/bench_pairs_results*.csv)
METRICS = ("precision", "recall", "F1")
Z95 = 1.959963984540054


def pools(names):
    for name in names:
        if name in ("abt-buy", "dblp-acm", "restaurant"):
            yield name, load_pool(name)
        elif name == "febrl":
            yield name, cached("febrl", febrl_pool)
        elif name == "patentsview":
            yield name, cached("patentsview", patentsview_pool)
        else:
            raise ValueError(name)


def parse_variant(spec: str) -> tuple[str, dict, bool]:
    """``method[:key=value,...][:ais|:poststrat]`` -> (method, sampler parameters, estimator
    override: the weighted ratio of paper 000 everywhere, or post-stratification within
    the strata of an adaptive run)."""
    method, *rest = spec.split(":")
    params, ais = {}, ""
    for part in rest:
        if part in ("ais", "poststrat"):
            ais = part
            continue
        for item in part.split(","):
            key, value = item.split("=")
            params[key] = (value.lower() in ("1", "true")) if key == "decay" else float(value)
    return method, params, ais


def one_pool(name, pool, reps: int, methods, n_strata: int, seed0: int) -> pd.DataFrame:
    """Every method spec on ``pool``: specs that differ only in the estimator override share
    their sampling runs (same seeds), so estimators are compared on identical samples."""
    truth = pool.truth()
    truth_vec = np.array([truth[m] for m in NAMES])
    oracle = LabelOracle(pool.labels)
    strata = stratify(pool.scores, pool.predicted, n_strata)
    groups: dict[str, list[str]] = {}
    for spec in methods:
        groups.setdefault(spec.replace(":ais", "").replace(":poststrat", ""), []).append(spec)
    rows = []
    for sampler_spec, specs in groups.items():
        method, extra, _ = parse_variant(sampler_spec)
        params = {"strata": strata} if method in ("stratified", "oasis") else {}
        params |= {k: (2 * strata.n_strata if v == -1 else v) for k, v in extra.items()}
        if method == "importance":
            template = make_sampler("importance", pool, 0, **params)
        shape = (len(specs), reps, len(BUDGETS), 3)
        err = np.full(shape, np.nan)
        cover, cover_normal, width = np.zeros(shape, bool), np.zeros(shape, bool), np.zeros(shape)
        draw_time, n_draws = 0.0, 0
        est_time = np.zeros(len(specs))
        for rep in range(reps):
            seed = seed0 + 1000 * rep
            if method == "importance":
                sampler = template
                sampler.rng = np.random.Generator(np.random.PCG64(seed))
            else:
                sampler = make_sampler(method, pool, seed, **params)
            start = time.perf_counter()
            sampled = sample_labels(pool, sampler, oracle, max(BUDGETS))
            draw_time += time.perf_counter() - start
            n_draws += sampled.n_draws
            for i, spec in enumerate(specs):
                override = parse_variant(spec)[2]
                run = sampled
                if override == "ais":
                    run = replace(run, strata=None, static_proposal=False, adaptive=False)
                elif override == "poststrat":
                    run = replace(run, adaptive=False)
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    hist = history(run, pool.predicted, at=BUDGETS)
                est_time[i] += time.perf_counter() - start
                for _, row in hist.iterrows():
                    if int(row["n_labels"]) not in BUDGETS:
                        continue
                    b = BUDGETS.index(int(row["n_labels"]))
                    v = row[list(NAMES)].to_numpy(float)
                    se = row[[f"{m}_se" for m in NAMES]].to_numpy(float)
                    low = row[[f"{m}_low" for m in NAMES]].to_numpy(float)
                    high = row[[f"{m}_high" for m in NAMES]].to_numpy(float)
                    err[i, rep, b] = v - truth_vec
                    cover[i, rep, b] = (low <= truth_vec + 1e-12) & (truth_vec <= high + 1e-12)
                    nlow, nhigh = np.clip(v - Z95 * se, 0, 1), np.clip(v + Z95 * se, 0, 1)
                    cover_normal[i, rep, b] = (nlow <= truth_vec + 1e-12) & (
                        truth_vec <= nhigh + 1e-12
                    )
                    width[i, rep, b] = high - low
        for i, spec in enumerate(specs):
            for b, budget in enumerate(BUDGETS):
                row = {"pool": name, "method": spec, "budget": budget, "reps": reps}
                for m, metric in enumerate(METRICS):
                    e = err[i, :, b, m]
                    sq = np.where(np.isnan(e), 1.0, e**2)  # undefined counts as squared error 1
                    row[f"mse_{metric}"] = float(np.mean(sq))
                    row[f"mse_{metric}_mcse"] = float(np.std(sq) / np.sqrt(reps))
                    row[f"bias_{metric}"] = float(np.nanmean(e)) if (~np.isnan(e)).any() else np.nan
                    row[f"cover_{metric}"] = float(np.mean(cover[i, :, b, m]))
                    row[f"cover_normal_{metric}"] = float(np.mean(cover_normal[i, :, b, m]))
                    row[f"width_{metric}"] = float(np.nanmean(width[i, :, b, m]))
                    row[f"undef_{metric}"] = float(np.mean(np.isnan(e)))
                row["us_per_draw"] = 1e6 * draw_time / max(n_draws, 1)
                row["ms_per_estimate"] = 1e3 * est_time[i] / (reps * len(BUDGETS))
                row["draws_per_label"] = n_draws / (reps * max(BUDGETS))
                rows.append(row)
        print(f"  {name} {sampler_spec}: {draw_time:.1f}s sampling", flush=True)
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
    strata, cpu, wall = timed(lambda: stratify(pool.scores, pool.predicted, 30))
    rows.append(
        {
            "step": f"stratify (CSF, {strata.n_strata} strata)",
            "n_pairs": n,
            "cpu_s": cpu,
            "wall_s": wall,
        }
    )
    labels = (rng.random(n) < scores).astype(np.int8)
    for method in METHODS:
        params = {"strata": strata} if method in ("stratified", "oasis") else {}
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


def report(paths) -> str:
    """Markdown tables from result CSVs: F1 MSE per budget, then P/R/F1 MSE and CI coverage
    at 1,000 and 2,000 labels, with the OASIS / passive and OASIS / IS MSE ratios."""
    table = pd.concat([pd.read_csv(p) for p in paths])
    order = {m: i for i, m in enumerate(METHODS)}
    table = table.sort_values(
        ["pool", "method", "budget"], key=lambda c: c.map(order) if c.name == "method" else c
    )
    lines = [
        "F1 mean squared error by label budget (in brackets: share of runs where F1 is still undefined, excluded from the MSE):",
        "",
    ]
    lines.append(
        "| pool | method | " + " | ".join(str(b) for b in BUDGETS) + " | µs/draw | draws/label |"
    )
    lines.append("|---" * (len(BUDGETS) + 4) + "|")
    for (pool, method), g in table.groupby(["pool", "method"], sort=False):
        cells = [
            f"{v:.2e}" + ("" if u == 0 else f" ({u:.0%} undef.)")
            for v, u in zip(g.mse_F1, g.undef_F1, strict=True)
        ]
        lines.append(
            f"| {pool} | {method} | "
            + " | ".join(cells)
            + f" | {g.us_per_draw.iloc[0]:.0f} | {g.draws_per_label.iloc[0]:.2f} |"
        )
    lines += [
        "",
        "At 1,000 and 2,000 labels: MSE of precision / recall / F1, and coverage of the 95% single-run CI:",
        "",
    ]
    lines.append(
        "| pool | method | labels | MSE P | MSE R | MSE F1 | cover P | cover R | cover F1 |"
    )
    lines.append("|---" * 9 + "|")
    for budget in (1000, 2000):
        for (pool, method), g in table[table.budget == budget].groupby(
            ["pool", "method"], sort=False
        ):
            r = g.iloc[0]
            lines.append(
                f"| {pool} | {method} | {budget} | {r.mse_precision:.2e} | {r.mse_recall:.2e} | {r.mse_F1:.2e} "
                f"| {r.cover_precision:.1%} | {r.cover_recall:.1%} | {r.cover_F1:.1%} |"
            )
    lines += ["", "F1 MSE ratios (with Monte-Carlo standard errors of the MSEs):", ""]
    lines.append(
        "| pool | OASIS/passive @1000 | OASIS/IS @2000 | OASIS MSE @2000 ± MCSE | IS MSE @2000 ± MCSE |"
    )
    lines.append("|---|---|---|---|---|")
    for pool, g in table.groupby("pool", sort=False):

        def cell(method, budget, col="mse_F1", g=g):
            row = g[(g.method == method) & (g.budget == budget)]
            return float(row[col].iloc[0]) if len(row) else np.nan

        lines.append(
            f"| {pool} | {cell('oasis', 1000) / cell('passive', 1000):.3f} | {cell('oasis', 2000) / cell('importance', 2000):.2f} "
            f"| {cell('oasis', 2000):.2e} ± {cell('oasis', 2000, 'mse_F1_mcse'):.1e} "
            f"| {cell('importance', 2000):.2e} ± {cell('importance', 2000, 'mse_F1_mcse'):.1e} |"
        )
    return "\n".join(lines)


def main() -> None:
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
    parser.add_argument("--out", default="benchmarks/data/bench_pairs_results.csv")
    parser.add_argument(
        "--speed", action="store_true", help="run the 10M-pair speed benchmark instead"
    )
    parser.add_argument(
        "--report", nargs="+", metavar="CSV", help="markdown tables from result CSVs"
    )
    args = parser.parse_args()
    if args.report:
        print(report(args.report))
        return
    if args.speed:
        table = speed()
        print(table.to_string(index=False))
        return
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    frames = []
    for name, pool in pools(args.pools):
        start = time.perf_counter()
        frames.append(one_pool(name, pool, args.reps, args.methods, args.strata, args.seed))
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


if __name__ == "__main__":
    main()
