"""Speed of the design-based estimators, against two targets: 15 versions x ~400 sampled
clusters over 130k records in < 1 s total; one version over 10M records with 1,000
sampled clusters in < 2 s.

1. PatentsView: precision, recall and F1 of the 15 bundled versions against the Binette 2022
   benchmark (401 sampled inventors, 13,467 mentions), ``estimate_table(...,
   on_missing="restrict")``: each version has its own population (84k-134k mentions).
2. Synthetic: 10M records in heavy-tailed true clusters (1 + Zipf(2) sizes, capped at
   5,000), a prediction with 10% misattribution, 1,000 clusters sampled with probability
   proportional to size; ``estimate_table`` for precision and recall.

Each timing is the best of ``--repeats`` runs after one warm-up, per interval method.

    nice -n 10 python benchmarks/bench_estimators.py
    python benchmarks/bench_estimators.py --smoke   # 100,000 synthetic records, 1 repeat
"""

from __future__ import annotations

import argparse
import platform
import sys
import warnings

import numpy as np
import pandas as pd
from _timing import best_of

from er_evaluation.datasets import load_patentsview_benchmark, load_patentsview_predictions
from er_evaluation.errors import CoverageWarning
from er_evaluation.estimators import DEFAULT_CI_METHOD, estimate_table
from er_evaluation.sampling import benchmark_sample, sample_clusters
from er_evaluation.simulation import misattribute


def synthetic(n_records: int, seed: int = 0) -> pd.Series:
    rng = np.random.default_rng(seed)
    sizes = np.minimum(1 + rng.zipf(2.0, size=n_records), 5000)
    sizes = sizes[: np.searchsorted(np.cumsum(sizes), n_records) + 1]
    labels = np.repeat(np.arange(len(sizes)), sizes)[:n_records]
    return pd.Series(labels, index=pd.RangeIndex(n_records, name="record"), name="truth")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ci-methods", nargs="+", default=[DEFAULT_CI_METHOD, "normal"])
    parser.add_argument(
        "--smoke", action="store_true", help="100,000 synthetic records, 50 clusters, 1 repeat"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.records, args.clusters, args.repeats = 100_000, 50, 1
    methods = list(dict.fromkeys(args.ci_methods))
    print(
        f"Machine: {platform.machine()}, Python {platform.python_version()}, numpy "
        f"{np.__version__}, pandas {pd.__version__}; default ci_method: {DEFAULT_CI_METHOD}"
    )
    print(
        "Command: `" + " ".join(["python", "benchmarks/bench_estimators.py", *sys.argv[1:]]) + "`"
    )
    print()
    print("| case | ci_method | wall s | CPU s |")
    print("|---|---|---|---|")

    versions = load_patentsview_predictions()
    sample = benchmark_sample(load_patentsview_benchmark(), weights="cluster_size")
    for method in methods:

        def pv(method=method):
            with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
                warnings.simplefilter("ignore", CoverageWarning)
                return estimate_table(
                    versions,
                    sample,
                    metrics=("pairwise_precision", "pairwise_recall", "pairwise_f1"),
                    ci_method=method,
                    on_missing="restrict",
                )

        wall, cpu = best_of(pv, args.repeats)
        print(
            f"| PatentsView: 15 versions x P+R+F1, {sample.n_units} clusters, "
            f"{sample.n_records:,} reviewed of up to 133,541 records | {method} | {wall:.3f} "
            f"| {cpu:.3f} |",
            flush=True,
        )

    truth = synthetic(args.records)
    prediction = misattribute(truth, 0.1, seed=1)
    big = sample_clusters(truth, args.clusters, weights="cluster_size", seed=2)
    for method in methods:

        def one(method=method):
            return estimate_table(
                {"v": prediction},
                big,
                metrics=("pairwise_precision", "pairwise_recall"),
                ci_method=method,
            )

        wall, cpu = best_of(one, args.repeats)
        print(
            f"| synthetic: 1 version x P+R, {args.records:,} records, {big.n_draws} clusters "
            f"drawn ({big.n_records:,} reviewed records) | {method} | {wall:.3f} | {cpu:.3f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
