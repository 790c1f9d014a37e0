"""Label reuse across system versions (issue 4, deliverable 5; issue 10, item 5).

On a bundled pool, version A is the authors' SVM decision and version B a different
threshold on the calibrated probability. Per repetition: OASIS spends ``--labels-a``
labels evaluating A; B is then estimated (1) from A's labels alone (reweighted, no new
label), (2) from A's labels plus ``--labels-b`` new OASIS labels targeted at B
(``continue_sampling``), and (3) from scratch with OASIS and the same total number of
labels as (2). Reports bias (with its Monte-Carlo standard error), MSE and 95% CI
coverage of B's precision, recall and F1 for each.

    nice -n 10 python benchmarks/bench_pairs_reuse.py --pool abt-buy --reps 100 --out benchmarks/data/bench_pairs_reuse.csv
"""

from __future__ import annotations

import argparse
import sys
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
    sample_labels,
    stratify,
)

sys.path.insert(0, str(Path(__file__).parent))
from bench_pairs_pools import cached, febrl_pool, patentsview_pool  # noqa: E402

BUILDERS = {"febrl": febrl_pool, "patentsview": patentsview_pool}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pool", default="abt-buy")
    parser.add_argument("--threshold", type=float, default=0.3, help="B: probability >= threshold")
    parser.add_argument("--labels-a", type=int, default=1000)
    parser.add_argument("--labels-b", type=int, default=300)
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--out", help="CSV of the summary rows")
    args = parser.parse_args()
    pool = load_pool(args.pool) if args.pool in POOLS else cached(args.pool, BUILDERS[args.pool])
    predicted_b = (pool.scores >= args.threshold).astype(np.int8)
    pool_b = pool.with_prediction(predicted_b)
    truth = pool_b.truth()
    truth_vec = np.array([truth[m] for m in metric_names([0.5])])
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
            for name, result in (
                ("reuse only", reuse_estimate(run_a, predicted_b)),
                ("reuse + new", estimate_from_labels(combined, predicted_b)),
                ("fresh", estimate_from_labels(fresh, predicted_b)),
            ):
                ests = (result.precision, result.recall, result.f[0])
                results[name].append([(e.value, e.ci_low, e.ci_high) for e in ests])
    rows = []
    for name, values in results.items():
        v = np.array(values)  # reps x 3 metrics x (value, low, high)
        row = {
            "estimate of B": name,
            "new labels for B": {"reuse only": 0, "fresh": args.labels_a + args.labels_b}.get(
                name, int(np.mean(new_labels))
            ),
        }
        for m, metric in enumerate(("P", "R", "F1")):
            err = v[:, m, 0] - truth_vec[m]
            row[f"bias {metric}"] = float(np.nanmean(err))
            row[f"bias {metric} MCSE"] = float(np.nanstd(err) / np.sqrt(np.sum(~np.isnan(err))))
            row[f"MSE {metric}"] = float(np.mean(np.where(np.isnan(err), 1.0, err**2)))
            row[f"cover {metric}"] = float(
                np.mean((v[:, m, 1] <= truth_vec[m] + 1e-12) & (truth_vec[m] <= v[:, m, 2] + 1e-12))
            )
        rows.append(row)
    print(
        f"pool {args.pool}: B = score >= {args.threshold}, truth of B: P {truth_vec[0]:.4f}, "
        f"R {truth_vec[1]:.4f}, F1 {truth_vec[2]:.4f}; {args.reps} reps"
    )
    table = pd.DataFrame(rows)
    table.insert(0, "pool", args.pool)
    print(table.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    if args.out:
        table.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
