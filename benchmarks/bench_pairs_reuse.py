"""Label reuse across system versions (issue 4, deliverable 5).

On a bundled pool, version A is the authors' SVM decision and version B a different
threshold on the calibrated probability. Per repetition: OASIS spends ``--labels-a``
labels evaluating A; B is then estimated (1) from A's labels alone (reweighted, no new
label), (2) from A's labels plus ``--labels-b`` new OASIS labels targeted at B
(``continue_sampling``), and (3) from scratch with OASIS and the same total number of
labels as (2). Reports the MSE of B's F1, the mean single-run standard error and the
95% CI coverage of each.

    nice -n 10 python benchmarks/bench_pairs_reuse.py --pool abt-buy --reps 100
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd

from er_evaluation.datasets import load_pool
from er_evaluation.errors import UndefinedMetricWarning
from er_evaluation.pairs import (
    LabelOracle,
    continue_sampling,
    estimate_from_labels,
    make_sampler,
    reuse_estimate,
    sample_labels,
    stratify,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pool", default="abt-buy")
    parser.add_argument("--threshold", type=float, default=0.3, help="B: probability >= threshold")
    parser.add_argument("--labels-a", type=int, default=1000)
    parser.add_argument("--labels-b", type=int, default=300)
    parser.add_argument("--reps", type=int, default=100)
    args = parser.parse_args()
    pool = load_pool(args.pool)
    predicted_b = (pool.scores >= args.threshold).astype(np.int8)
    pool_b = pool.with_prediction(predicted_b)
    truth = pool_b.truth()["pairwise_f1"]
    oracle = LabelOracle(pool.labels)
    strata_a = stratify(pool.scores, pool.predicted, 30)
    strata_b = stratify(pool_b.scores, pool_b.predicted, 30)
    results = {"reuse only": [], "reuse + new": [], "fresh": []}
    new_labels = []
    for rep in range(args.reps):
        run_a = sample_labels(
            pool, make_sampler("oasis", pool, rep, strata=strata_a), oracle, args.labels_a
        )
        combined = continue_sampling(
            pool_b, run_a, oracle, args.labels_b, seed=10_000 + rep, strata=strata_b
        )
        fresh = sample_labels(
            pool_b,
            make_sampler("oasis", pool_b, 20_000 + rep, strata=strata_b),
            oracle,
            args.labels_a + args.labels_b,
        )
        new_labels.append(combined.n_labels - run_a.n_labels)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            for name, est in (
                ("reuse only", reuse_estimate(run_a, predicted_b).f[0]),
                ("reuse + new", estimate_from_labels(combined, predicted_b).f[0]),
                ("fresh", estimate_from_labels(fresh, predicted_b).f[0]),
            ):
                results[name].append(
                    (est.value, est.std_error, est.ci_low, est.ci_high, est.n_labels)
                )
    rows = []
    for name, values in results.items():
        v = np.array(values)
        rows.append(
            {
                "estimate of B's F1": name,
                "labels for B": int(np.mean(v[:, 4]))
                if name == "fresh"
                else (0 if name == "reuse only" else int(np.mean(new_labels))),
                "total labels": int(np.mean(v[:, 4])),
                "MSE": float(np.nanmean((v[:, 0] - truth) ** 2)),
                "mean SE": float(np.nanmean(v[:, 1])),
                "CI coverage": float(np.mean((v[:, 2] <= truth) & (truth <= v[:, 3]))),
            }
        )
    print(
        f"pool {args.pool}: B = probability >= {args.threshold}, true F1 of B = {truth:.4f}, {args.reps} reps"
    )
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda x: f"{x:.4g}"))


if __name__ == "__main__":
    main()
