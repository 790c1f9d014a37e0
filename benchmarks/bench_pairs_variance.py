"""Coverage of OASIS's 95% CIs at a label budget under the two variance estimators,
with the bias, spread and mean standard error of the estimates.

``martingale`` (default of :func:`er_evaluation.pairs.estimate_from_labels`): each draw's own proposal
in the second moment; ``final``: the latest proposal q_N, as written in Marchant & Rubinstein 2021 §3.3.2.

    nice -n 10 python benchmarks/bench_pairs_variance.py abt-buy --reps 60 --budget 2000
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from bench_pairs import pools  # noqa: E402

from er_evaluation.pairs import (  # noqa: E402
    LabelOracle,
    make_sampler,
    metric_names,
    sample_labels,
    stratify,
)
from er_evaluation.pairs.estimates import _history_arrays  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("pool")
    parser.add_argument("--method", default="oasis", choices=["oasis", "importance"])
    parser.add_argument("--reps", type=int, default=60)
    parser.add_argument("--budget", type=int, default=2000)
    args = parser.parse_args()
    _, pool = next(pools([args.pool]))
    truth = pool.truth()
    tv = np.array([truth[m] for m in metric_names([0.5])])
    strata = stratify(pool.scores, pool.predicted, 30)
    covered = {"martingale": [], "final": []}
    values, errors = [], []
    for rep in range(args.reps):
        params = {"strata": strata} if args.method == "oasis" else {}
        sampler = make_sampler(args.method, pool, rep, **params)
        run = sample_labels(
            pool, sampler, LabelOracle(pool.labels), args.budget, final_weights=True
        )
        for variance, hits in covered.items():
            value, se = _history_arrays(run, pool.predicted, [0.5], variance)
            hits.append(np.abs(value[-1] - tv) <= 1.959964 * se[-1] + 1e-12)
            if variance == "martingale":
                values.append(value[-1])
                errors.append(se[-1])
    for variance, hits in covered.items():
        p, r, f = np.mean(hits, axis=0)
        print(
            f"{args.pool} {args.method} @{args.budget}, {variance}: coverage P {p:.1%} R {r:.1%} F1 {f:.1%}"
        )
    values, errors = np.array(values), np.array(errors)
    # logit-scale interval expit(logit(v) +- z se / (v (1 - v))), normal where v is 0 or 1
    with np.errstate(divide="ignore", invalid="ignore"):
        half = 1.959964 * errors / (values * (1 - values))
        logit = np.log(values / (1 - values))
        low = np.where(
            (values > 0) & (values < 1),
            1 / (1 + np.exp(-(logit - half))),
            values - 1.959964 * errors,
        )
        high = np.where(
            (values > 0) & (values < 1),
            1 / (1 + np.exp(-(logit + half))),
            values + 1.959964 * errors,
        )
    p, r, f = np.mean((low <= tv + 1e-12) & (tv <= high + 1e-12), axis=0)
    print(
        f"{args.pool} {args.method} @{args.budget}, martingale, logit-scale CI: coverage P {p:.1%} R {r:.1%} F1 {f:.1%}"
    )
    print(
        "P / R / F1: bias",
        np.round(values.mean(0) - tv, 5),
        "spread (SD)",
        np.round(values.std(0), 5),
        "mean SE",
        np.round(errors.mean(0), 5),
    )


if __name__ == "__main__":
    main()
