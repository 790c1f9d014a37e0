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
seeded per run (run r: seed + 1000 r, so runs can be split over processes with
``--first``). Every finished run is appended to the per-run CSV at once (squared errors,
draws, CPU seconds), so a stopped benchmark keeps its runs; ``--summarize`` turns per-run
CSVs into the summary (MSE, Monte-Carlo SE, median squared error, draws per label, CPU
per draw and per run).

    python3 -m venv /work/tmp_oasis/venv
    /work/tmp_oasis/venv/bin/pip install "numpy<2" "scipy<1.12" scikit-learn tables
    /work/tmp_oasis/venv/bin/pip install --no-deps oasis==0.1.3
    nice -n 10 python benchmarks/bench_oasis_package.py --oasis-python /work/tmp_oasis/venv/bin/python \\
        --pools abt-buy --reps 200 --runs-out benchmarks/data/bench_oasis_package_runs_a.csv
    python benchmarks/bench_oasis_package.py --summarize benchmarks/data/bench_oasis_package_runs_*.csv \\
        --out benchmarks/data/bench_oasis_package.csv
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


def worker(npz: str, reps: int, seed: int, n_strata: int, first: int) -> None:
    """Run the package on one exported pool; print one CSV line per run (runs ``first`` to
    ``first + reps - 1``): its squared F1 errors at the budgets, draws and CPU seconds."""
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
    for rep in range(first, first + reps):
        start = time.process_time()
        np.random.seed(seed + 1000 * rep)  # noqa: NPY002 (the package draws from the global generator)
        args = (0.5, predicted, scores, lambda i: int(labels[i]))
        options = dict(proba=proba, epsilon=1e-3, max_iter=400 * max(BUDGETS))
        try:
            sampler = oasis.OASISSampler(*args, **options, stratification_n_strata=n_strata)
        except ValueError:
            # the package's automatic histogram size is 0 when the scores' interquartile
            # range is 0 (dblp-acm, febrl): give it a fixed one
            sampler = oasis.OASISSampler(
                *args,
                **options,
                stratification_n_strata=n_strata,
                stratification_n_bins=FALLBACK_BINS,
            )
        done = 0
        sq = []
        for budget in BUDGETS:
            sampler.sample_distinct(budget - done)
            done = budget
            value = float(sampler.estimate_[-1])
            sq.append(1.0 if not np.isfinite(value) else (value - truth) ** 2)
        cpu = time.process_time() - start
        print("RUN," + ",".join(map(str, [rep, truth, *sq, sampler.t_, cpu])), flush=True)


def export(name: str, path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_pairs import pools

    (_, pool) = next(iter(pools([name])))
    np.savez(path, scores=pool.scores, predicted=pool.predicted, labels=pool.labels)


def summary(runs):
    """One row per pool and budget from the per-run rows: F1 MSE, its Monte-Carlo SE, the
    median squared error, draws per label and CPU per draw."""
    import pandas as pd

    rows = []
    for name, group in runs.groupby("pool", sort=False):
        n = len(group)
        for budget in BUDGETS:
            sq = group[f"sq_F1_{budget}"].to_numpy()
            rows.append(
                {
                    "pool": name,
                    "method": "oasis-0.1.3",
                    "budget": budget,
                    "reps": n,
                    "truth_F1": group.truth_F1.iloc[0],
                    "mse_F1": sq.mean(),
                    "mse_F1_mcse": sq.std() / np.sqrt(n),
                    "median_sq_F1": float(np.median(sq)),
                    "draws_per_label": group.draws.sum() / (n * max(BUDGETS)),
                    "us_per_draw": 1e6 * group.cpu_s.sum() / group.draws.sum(),
                    "cpu_s_per_run": group.cpu_s.mean(),
                }
            )
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--oasis-python", default="/work/tmp_oasis/venv/bin/python")
    parser.add_argument("--pools", nargs="+", default=list(POOLS))
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--first", type=int, default=0, help="index of the first run (seeds)")
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--strata", type=int, default=30)
    parser.add_argument("--out", default="benchmarks/data/bench_oasis_package.csv")
    parser.add_argument(
        "--runs-out", help="per-run CSV, appended to after every run (default: <out>_runs.csv)"
    )
    parser.add_argument(
        "--summarize",
        nargs="+",
        metavar="RUNS_CSV",
        help="only write --out from per-run CSVs (several processes' partial results)",
    )
    parser.add_argument("--worker", metavar="NPZ", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.reps, args.seed, args.strata, args.first)
        return
    import pandas as pd

    out = Path(args.out)
    if args.summarize:
        runs = pd.concat([pd.read_csv(p) for p in args.summarize])
        runs = runs.drop_duplicates(["pool", "run"], keep="last")
        table = summary(runs)
        table.to_csv(out, index=False)
        print(table.to_string(index=False))
        return
    if not Path(args.oasis_python).exists():
        print(f"SKIP: {args.oasis_python} not found (see the install commands above)")
        return
    runs_out = Path(args.runs_out or out.with_name(out.stem + "_runs.csv"))
    columns = ["pool", "run", "truth_F1", *(f"sq_F1_{b}" for b in BUDGETS), "draws", "cpu_s"]
    if not runs_out.exists():
        runs_out.write_text(",".join(columns) + "\n")
    for name in args.pools:
        with tempfile.TemporaryDirectory() as tmp:
            npz = Path(tmp) / f"{name}.npz"
            export(name, npz)
            command = [args.oasis_python, __file__, "--worker", str(npz), "--reps", str(args.reps)]
            command += ["--seed", str(args.seed), "--strata", str(args.strata)]
            command += ["--first", str(args.first)]
            # the package prints notes such as "Automatically setting n_bins = ...": only
            # the worker's RUN lines (one per finished run, kept as they come) are read
            with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as worker_process:
                for line in worker_process.stdout:
                    if line.startswith("SKIP"):
                        print(line.strip())
                        return
                    if line.startswith("RUN,"):
                        with runs_out.open("a") as handle:
                            handle.write(f"{name},{line[4:].strip()}\n")
            if worker_process.returncode:
                raise SystemExit(f"the package worker failed on {name}")
        runs = pd.read_csv(runs_out).drop_duplicates(["pool", "run"], keep="last")
        table = summary(runs)
        table.to_csv(out, index=False)
        print(table[table.pool == name].to_string(index=False), flush=True)


if __name__ == "__main__":
    main()
