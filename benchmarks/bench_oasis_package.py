"""F1 MSE of the authors' `oasis` 0.1.3 package on the benchmark pools (issue 10, item 3).

The package (Marchant & Rubinstein 2017's own implementation) is never a dependency of
this project: it needs numpy < 2 and scipy < 1.12. It runs in a separate throwaway
environment given by ``--oasis-python``; this script, run with the project's Python,
writes each pool's scores, predictions and labels to a temporary ``.npz``, runs itself
there as a worker (``--worker``, which alone imports ``oasis``) and collects the
results. If that interpreter cannot import ``oasis`` the comparison is skipped with a
message (exit status 0).

Package settings, its defaults except where the comparison needs them fixed:
``OASISSampler(alpha=0.5, epsilon=1e-3, prior_strength=None`` (= 2K in total, i.e. 2
pseudo-labels per stratum), ``decaying_prior=True`` (Remark 4), K = 30 strata by the
cumulative sqrt(F) method over all scores (predictions not separated), ``proba=True``
for the calibrated probabilities (the logistic of the score otherwise). Where the
package's automatic histogram size fails (0 bins when the scores' interquartile range
is 0, as on dblp-acm) the CSF histogram gets 10,000 bins. Each run samples
until 500, 1,000 and 2,000 distinct labels (``sample_distinct``); the package's estimate
after that draw is compared with the truth; an undefined estimate counts as squared
error 1, as in ``bench_pairs.py``. The package draws from numpy's global generator,
seeded per run.

    python3 -m venv /work/tmp_oasis/venv
    /work/tmp_oasis/venv/bin/pip install "numpy<2" "scipy<1.12" scikit-learn tables
    /work/tmp_oasis/venv/bin/pip install --no-deps oasis==0.1.3
    nice -n 10 python benchmarks/bench_oasis_package.py --oasis-python /work/tmp_oasis/venv/bin/python \\
        --reps 100 --out benchmarks/data/bench_oasis_package.csv
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BUDGETS = (500, 1000, 2000)
FALLBACK_BINS = 10_000
POOLS = ("abt-buy", "dblp-acm", "restaurant", "restaurant-all", "febrl", "patentsview")


def worker(npz: str, reps: int, seed: int, n_strata: int) -> None:
    """Run the package on one exported pool; print one CSV line per budget."""
    try:
        import oasis
    except ImportError:
        print("SKIP: this interpreter cannot import oasis", flush=True)
        return
    data = np.load(npz)
    scores, predicted, labels = data["scores"], data["predicted"], data["labels"]
    proba = bool(scores.min() >= 0.0 and scores.max() <= 1.0)
    truth_tp = float(np.sum(predicted * labels))
    truth = 2 * truth_tp / (predicted.sum() + labels.sum())
    sq = np.zeros((reps, len(BUDGETS)))
    start = time.process_time()
    n_iter = 0
    for rep in range(reps):
        np.random.seed(seed + 1000 * rep)  # noqa: NPY002 (the package draws from the global generator)
        args = (0.5, predicted, scores, lambda i: int(labels[i]))
        options = dict(proba=proba, epsilon=1e-3, max_iter=400 * max(BUDGETS))
        try:
            sampler = oasis.OASISSampler(*args, **options, stratification_n_strata=n_strata)
        except ValueError:
            # the package's automatic histogram size is 0 when the scores' interquartile
            # range is 0 (dblp-acm): give it a fixed one
            sampler = oasis.OASISSampler(
                *args,
                **options,
                stratification_n_strata=n_strata,
                stratification_n_bins=FALLBACK_BINS,
            )
        done = 0
        for b, budget in enumerate(BUDGETS):
            sampler.sample_distinct(budget - done)
            done = budget
            value = float(sampler.estimate_[-1])
            sq[rep, b] = 1.0 if not np.isfinite(value) else (value - truth) ** 2
        n_iter += sampler.t_
    cpu = time.process_time() - start
    for b, budget in enumerate(BUDGETS):
        col = sq[:, b]
        print(
            f"{budget},{reps},{truth},{col.mean()},{col.std() / np.sqrt(reps)},"
            f"{n_iter / (reps * max(BUDGETS))},{1e6 * cpu / max(n_iter, 1)}",
            flush=True,
        )


def export(name: str, path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_pairs import pools

    (_, pool) = next(iter(pools([name])))
    np.savez(path, scores=pool.scores, predicted=pool.predicted, labels=pool.labels)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--oasis-python", default="/work/tmp_oasis/venv/bin/python")
    parser.add_argument("--pools", nargs="+", default=list(POOLS))
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--strata", type=int, default=30)
    parser.add_argument("--out", default="benchmarks/data/bench_oasis_package.csv")
    parser.add_argument("--worker", metavar="NPZ", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.reps, args.seed, args.strata)
        return
    if not Path(args.oasis_python).exists():
        print(f"SKIP: {args.oasis_python} not found (see the install commands above)")
        return
    import pandas as pd

    rows = []
    out = Path(args.out)
    for name in args.pools:
        with tempfile.TemporaryDirectory() as tmp:
            npz = Path(tmp) / f"{name}.npz"
            export(name, npz)
            result = subprocess.run(
                [args.oasis_python, __file__, "--worker", str(npz), "--reps", str(args.reps)]
                + ["--seed", str(args.seed), "--strata", str(args.strata)],
                capture_output=True,
                text=True,
                check=True,
            )
        # the package prints notes such as "Automatically setting n_bins = ..."
        lines = [
            line
            for line in result.stdout.strip().splitlines()
            if line.startswith("SKIP") or line.count(",") == 6
        ]
        if lines and lines[0].startswith("SKIP"):
            print(lines[0])
            return
        for line in lines:
            budget, reps, truth, mse, mcse, draws_per_label, us = line.split(",")
            rows.append(
                {
                    "pool": name,
                    "method": "oasis-0.1.3",
                    "budget": int(budget),
                    "reps": int(reps),
                    "truth_F1": float(truth),
                    "mse_F1": float(mse),
                    "mse_F1_mcse": float(mcse),
                    "draws_per_label": float(draws_per_label),
                    "us_per_draw": float(us),
                }
            )
        pd.DataFrame(rows).to_csv(out, index=False)
        print(pd.DataFrame(rows).tail(len(BUDGETS)).to_string(index=False), flush=True)


if __name__ == "__main__":
    main()
