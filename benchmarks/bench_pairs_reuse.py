"""Label reuse across system versions (issue 4, deliverable 5; issue 10, item 5).

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
through ``estimate_from_labels`` (labelled groups exact, Wilson interval on n_eff).
Reports bias with its Monte-Carlo standard error, MSE and 95% interval coverage of B's
precision, recall and F1 (an undefined estimate counts as a miss and as squared error 1).

    nice -n 10 python benchmarks/bench_pairs_reuse.py --pool abt-buy --sampler oasis --reps 400 --out runs_abt-buy_oasis.csv
    python benchmarks/bench_pairs_reuse.py --report runs_*.csv --markdown --summary-out benchmarks/data/bench_pairs_reuse.csv
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from er_evaluation.datasets import POOLS, load_pool
from er_evaluation.errors import UndefinedMetricWarning
from er_evaluation.pairs import (
    LabelOracle,
    continue_sampling,
    estimate_from_labels,
    make_sampler,
    metric_names,
    reuse_estimate,
    stratify,
)
from er_evaluation.pairs.reuse import sample_traced

sys.path.insert(0, str(Path(__file__).parent))
from bench_pairs_pools import cached, febrl_pool, patentsview_pool  # noqa: E402

BUILDERS = {"febrl": febrl_pool, "patentsview": patentsview_pool}
METRICS = ("P", "R", "F1")


def simulate(args) -> pd.DataFrame:
    """One row per repetition x estimate x weighting x metric: value, low, high, truth."""
    pool = load_pool(args.pool) if args.pool in POOLS else cached(args.pool, BUILDERS[args.pool])
    predicted_b = (pool.scores >= args.threshold).astype(np.int8)
    pool_b = pool.with_prediction(predicted_b)
    truth = pool_b.truth()
    truth_vec = [truth[m] for m in metric_names([0.5])]
    print(
        f"pool {args.pool}: B = score >= {args.threshold} (PP {int(predicted_b.sum())}), truth "
        f"of B: P {truth_vec[0]:.4f}, R {truth_vec[1]:.4f}, F1 {truth_vec[2]:.4f}",
        flush=True,
    )
    oracle = LabelOracle(pool.labels)
    strata_a = stratify(pool.scores, pool.predicted, 30)
    strata_b = stratify(pool_b.scores, pool_b.predicted, 30)

    def params(strata):
        return {"strata": strata} if args.sampler == "oasis" else {}

    def sampler(p, seed, strata):
        return make_sampler(args.sampler, p, seed, **params(strata))

    rows = []
    start = time.time()
    for rep in range(args.reps):
        seed = args.seed + rep
        run_a = sample_traced(pool, sampler(pool, seed, strata_a), oracle, args.labels_a)
        combined = continue_sampling(
            pool_b,
            run_a,
            oracle,
            args.labels_b,
            seed=10_000 + seed,
            method=args.sampler,
            **params(strata_b),
        )
        fresh = sample_traced(
            pool_b, sampler(pool_b, 20_000 + seed, strata_b), oracle, args.labels_a + args.labels_b
        )
        new_b = combined.n_labels - run_a.n_labels
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            for name, run, labels in (
                ("reuse only", run_a, 0),
                ("reuse + new", combined, new_b),
                ("fresh", fresh, fresh.n_labels),
            ):
                for weighting, r in (
                    ("mixture", run.mixture_run()),
                    ("own", run.own_weights_run()),
                ):
                    est = (
                        reuse_estimate(r, predicted_b)
                        if name == "reuse only"
                        else estimate_from_labels(r, predicted_b)
                    )
                    for metric, e, t in zip(
                        METRICS, (est.precision, est.recall, est.f[0]), truth_vec, strict=True
                    ):
                        rows.append(
                            {
                                "pool": args.pool,
                                "sampler": args.sampler,
                                "threshold": args.threshold,
                                "rep": rep,
                                "estimate": name,
                                "weighting": weighting,
                                "new_labels": labels,
                                "metric": metric,
                                "value": e.value,
                                "low": e.ci_low,
                                "high": e.ci_high,
                                "truth": t,
                            }
                        )
        if (rep + 1) % 20 == 0 or rep + 1 == args.reps:
            print(f"  {rep + 1}/{args.reps} reps, {time.time() - start:.0f} s", flush=True)
            if args.out:
                pd.DataFrame(rows).to_csv(args.out, index=False)
    return pd.DataFrame(rows)


def summarise(frame: pd.DataFrame) -> pd.DataFrame:
    """Bias +- Monte-Carlo SE, MSE and coverage per pool x estimate x weighting x metric."""
    out = []
    keys = ["pool", "sampler", "estimate", "weighting", "metric"]
    for key, g in frame.groupby(keys, sort=False):
        err = (g["value"] - g["truth"]).to_numpy()
        ok = ~np.isnan(err)
        covered = (g["low"] <= g["truth"] + 1e-12) & (g["truth"] <= g["high"] + 1e-12)
        cover = float(covered.mean())
        out.append(
            dict(
                zip(keys, key, strict=True),
                reps=len(g),
                new_labels=float(g["new_labels"].mean()),
                bias=float(np.mean(err[ok])),
                bias_mcse=float(np.std(err[ok], ddof=1) / np.sqrt(ok.sum())),
                mse=float(np.mean(np.where(ok, err, 1.0) ** 2)),
                cover=cover,
                cover_mcse=float(np.sqrt(cover * (1 - cover) / len(g))),
                undefined=float(np.mean(~ok)),
            )
        )
    return pd.DataFrame(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pool", default="abt-buy")
    parser.add_argument(
        "--sampler", default="oasis", choices=("oasis", "importance"), help="for A, B and fresh"
    )
    parser.add_argument("--threshold", type=float, default=0.3, help="B: score >= threshold")
    parser.add_argument("--labels-a", type=int, default=1000)
    parser.add_argument("--labels-b", type=int, default=300)
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="CSV of the per-repetition rows (written as it goes)")
    parser.add_argument("--report", nargs="+", help="summarise per-repetition CSVs and exit")
    parser.add_argument("--markdown", action="store_true", help="the summary as a README table")
    parser.add_argument("--summary-out", help="CSV of the summary (one row per metric)")
    args = parser.parse_args()
    frame = (
        pd.concat([pd.read_csv(p) for p in args.report], ignore_index=True)
        if args.report
        else simulate(args)
    )
    summary = summarise(frame)
    if args.summary_out:
        summary.to_csv(args.summary_out, index=False)
    if args.markdown:
        print(markdown(summary))
        return
    pd.set_option("display.width", 200)
    print(summary.to_string(index=False, float_format=lambda x: f"{x:.4g}"))


def markdown(summary: pd.DataFrame) -> str:
    """One README row per pool x sampler x estimate x weighting."""
    lines = [
        "| pool | sampler | estimate of B | weights | new labels | runs | bias P | bias R "
        "| bias F1 | MSE F1 | cover P / R / F1 |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    keys = ["pool", "sampler", "estimate", "weighting"]
    for key, g in summary.groupby(keys, sort=False):
        m = g.set_index("metric")
        bias = [f"{m.bias[x]:+.4f} ± {m.bias_mcse[x]:.4f}" for x in METRICS]
        cover = " / ".join(f"{100 * m.cover[x]:.1f}%" for x in METRICS)
        lines.append(
            f"| {' | '.join(key)} | {m.new_labels['P']:,.0f} | {int(m.reps['P'])} | "
            f"{' | '.join(bias)} | {m.mse['F1']:.2e} | {cover} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
