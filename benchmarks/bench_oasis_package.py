"""F1 MSE of the authors' `oasis` 0.1.3 package on the benchmark pools.

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
``--first``). The package's precision and recall are its weighted totals TP / (TP + FP)
and TP / (TP + FN) after the same draws (its proposal targets F1). Every finished run is
appended to the per-run CSV at once (squared F1 errors, draws, CPU seconds, truths and
estimates), so a stopped benchmark keeps its runs; ``--summarize`` turns per-run CSVs
into the summary (MSE of F1, P and R with Monte-Carlo SE, median squared error, draws
per label, CPU per draw and per run) and prints it as a markdown table. ``--ours`` runs
the library's OASIS with its defaults on the same seed formula, per-run rows in the same
columns, and ``--compare`` sets both samplers' per-run F1 errors side by side (quantiles,
share of large errors, share of the MSE from the worst 5% of runs).

    python3 -m venv /work/tmp_oasis/venv
    /work/tmp_oasis/venv/bin/pip install "numpy<2" "scipy<1.12" scikit-learn tables
    /work/tmp_oasis/venv/bin/pip install --no-deps oasis==0.1.3
    nice -n 5 python benchmarks/bench_oasis_package.py --oasis-python /work/tmp_oasis/venv/bin/python \\
        --pools dblp-acm --first 0 --reps 50 --out /tmp/summary.csv \\
        --runs-out benchmarks/data/bench_oasis_package_runs_dblp-acm_a.csv
    python benchmarks/bench_oasis_package.py --summarize benchmarks/data/bench_oasis_package_runs_*.csv \\
        --out benchmarks/data/bench_oasis_package.csv
    python benchmarks/bench_oasis_package.py --ours --pools abt-buy --reps 200 \\
        --runs-out benchmarks/data/bench_oasis_package_ours_runs_abt-buy.csv
    python benchmarks/bench_oasis_package.py --compare "benchmarks/data/bench_oasis_package_runs_*.csv" \\
        "benchmarks/data/bench_oasis_package_ours_runs_*.csv" --out benchmarks/data/bench_oasis_package_compare.csv
    python benchmarks/bench_oasis_package.py --smoke

``--smoke`` runs every path of the script on abt-buy in a temporary folder: 2 library runs
(``--ours``), the export and the worker in this interpreter (which has no ``oasis``: the
worker reports SKIP, so the package itself is not run), ``--summarize`` and ``--compare``
of the library runs.
"""

from __future__ import annotations

import argparse
import glob
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BUDGETS = (500, 1000, 2000)
FALLBACK_BINS = 10_000
# per-run CSV: squared F1 errors, draws, CPU seconds, then the truths and the estimates
RUN_COLUMNS = ["pool", "run", "truth_F1", *(f"sq_F1_{b}" for b in BUDGETS), "draws", "cpu_s"]
RUN_COLUMNS += ["truth_P", "truth_R", *(f"{m}_{b}" for b in BUDGETS for m in ("F1", "P", "R"))]
POOLS = ("abt-buy", "dblp-acm", "restaurant", "restaurant-all", "febrl", "patentsview")


def _estimates(sampler) -> tuple[float, float, float]:
    """The package's F1 and, from the same weighted totals (``_TP``, ``_FP``, ``_FN``:
    its running sums of w_t over draws, Algorithm 3 of Marchant & Rubinstein 2017),
    its precision TP / (TP + FP) and recall TP / (TP + FN); NaN when undefined."""
    tp, fp, fn = (float(total[0]) for total in (sampler._TP, sampler._FP, sampler._FN))
    with np.errstate(divide="ignore", invalid="ignore"):
        precision, recall = np.float64(tp) / (tp + fp), np.float64(tp) / (tp + fn)
    return float(sampler.estimate_[-1]), float(precision), float(recall)


def worker(npz: str, reps: int, seed: int, n_strata: int, first: int) -> None:
    """Run the package on one exported pool; print one CSV line per run (runs ``first`` to
    ``first + reps - 1``): its squared F1 errors at the budgets, draws, CPU seconds and
    its F1, precision and recall estimates at the budgets.

    The strata are built once (the package's ``auto_stratify`` is deterministic and draws
    no random number) and handed to every later run's sampler (``strata=``, which the
    package resets); on a 5-million-pair pool that building was most of a run's CPU."""
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
    truth_p, truth_r = truth_tp / predicted.sum(), truth_tp / labels.sum()
    strata = None
    for rep in range(first, first + reps):
        start = time.process_time()
        np.random.seed(seed + 1000 * rep)  # noqa: NPY002 (the package draws from the global generator)
        args = (0.5, predicted, scores, lambda i: int(labels[i]))
        options = dict(proba=proba, epsilon=1e-3, max_iter=400 * max(BUDGETS))
        if strata is not None:
            sampler = oasis.OASISSampler(*args, **options, strata=strata)
        else:
            try:
                sampler = oasis.OASISSampler(*args, **options, stratification_n_strata=n_strata)
            except ValueError:
                # the package's automatic histogram size is 0 when the scores'
                # interquartile range is 0 (dblp-acm, febrl): give it a fixed one
                sampler = oasis.OASISSampler(
                    *args,
                    **options,
                    stratification_n_strata=n_strata,
                    stratification_n_bins=FALLBACK_BINS,
                )
            strata = sampler.strata
        done = 0
        sq, estimates = [], []
        for budget in BUDGETS:
            sampler.sample_distinct(budget - done)
            done = budget
            f1, precision, recall = _estimates(sampler)
            sq.append(1.0 if not np.isfinite(f1) else (f1 - truth) ** 2)
            estimates += [f1, precision, recall]
        cpu = time.process_time() - start
        values = [rep, truth, *sq, sampler.t_, cpu, truth_p, truth_r, *estimates]
        print("RUN," + ",".join(map(str, values)), flush=True)


def export(name: str, path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_pairs import pools

    (_, pool) = next(iter(pools([name])))
    np.savez(path, scores=pool.scores, predicted=pool.predicted, labels=pool.labels)


def ours(name: str, reps: int, seed: int, n_strata: int, first: int, runs_out: Path) -> None:
    """The library's OASIS with its defaults on the same pool and seeds (run r: seed +
    1000 r, as ``bench_pairs.py``), one row per run appended to ``runs_out`` at once:
    its F1, precision and recall at the budgets, in the package rows' columns, so that
    both samplers' per-run errors can be compared (``--compare``)."""
    import warnings

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_pairs import NAMES, default_bins, pools

    from er_evaluation.pairs import (
        LabelOracle,
        estimate_history,
        make_sampler,
        sample_labels,
        stratify,
    )

    (_, pool) = next(iter(pools([name])))
    truth = pool.truth()
    truths = [truth[m] for m in NAMES]  # precision, recall, F1
    bins = default_bins("oasis")
    strata = stratify(
        pool.scores, pool.predicted, n_strata, n_bins=None if bins == "default" else bins
    )
    oracle = LabelOracle(pool.labels)
    if not runs_out.exists():
        runs_out.write_text(",".join(RUN_COLUMNS) + "\n")
    for rep in range(first, first + reps):
        start = time.process_time()
        sampler = make_sampler("oasis", pool, seed + 1000 * rep, strata=strata)
        run = sample_labels(pool, sampler, oracle, max(BUDGETS))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            hist = estimate_history(run, pool.predicted, at=BUDGETS).set_index("n_labels")
        estimates, sq = [], []
        for budget in BUDGETS:
            precision, recall, f1 = (float(hist.loc[budget, m]) for m in NAMES)
            sq.append(1.0 if not np.isfinite(f1) else (f1 - truths[2]) ** 2)
            estimates += [f1, precision, recall]
        cpu = time.process_time() - start
        values = [name, rep, truths[2], *sq, run.n_draws, cpu, *truths[:2], *estimates]
        with runs_out.open("a") as handle:
            handle.write(",".join(map(str, values)) + "\n")
        print(f"{name} run {rep}: {cpu:.1f}s", flush=True)


def squared_errors(runs, metric: str, budget: int) -> np.ndarray:
    """Per-run squared errors of ``metric`` (F1, P or R) at ``budget``; an undefined
    estimate counts as 1 (rows without estimates, from the first version of this
    script, only have F1)."""
    if metric == "F1":
        return runs[f"sq_F1_{budget}"].to_numpy()
    values = runs[f"{metric}_{budget}"].to_numpy(float)
    truth = runs[f"truth_{metric}"].to_numpy(float)
    return np.where(np.isfinite(values), (values - truth) ** 2, 1.0)


def compare(package, library, budget: int = max(BUDGETS)):
    """Per pool, the two samplers' per-run F1 errors at ``budget`` on the same seeds:
    MSE, quantiles of the absolute error, the share of runs above fixed error sizes,
    the bias, and the part of the MSE from the worst 5% of runs."""
    import pandas as pd

    rows = []
    both = set(package.pool) & set(library.pool)
    for label, runs in (("oasis-0.1.3", package), ("library", library)):
        for name, group in runs[runs.pool.isin(both)].groupby("pool", sort=False):
            sq = squared_errors(group, "F1", budget)
            err = np.sqrt(sq)
            # rows of the first version of this script hold squared errors only
            estimate = group.get(f"F1_{budget}", pd.Series(np.nan, index=group.index))
            signed = estimate.to_numpy(float) - group.truth_F1.to_numpy(float)
            worst = np.sort(sq)[::-1][: max(1, int(round(0.05 * len(sq))))]
            rows.append(
                {
                    "pool": name,
                    "sampler": label,
                    "runs": len(sq),
                    "mse_F1": sq.mean(),
                    "mse_F1_mcse": sq.std() / np.sqrt(len(sq)),
                    "bias_F1": np.nanmean(signed) if np.isfinite(signed).any() else np.nan,
                    **{f"q{q}_abs_err": np.quantile(err, q / 100) for q in (50, 90, 95, 99)},
                    "max_abs_err": err.max(),
                    "share_abs_err_gt_005": np.mean(err > 0.05),
                    "share_abs_err_gt_010": np.mean(err > 0.1),
                    "mse_share_worst_5pct": worst.sum() / sq.sum(),
                }
            )
    return pd.DataFrame(rows).sort_values(["pool", "sampler"])


def summary(runs):
    """One row per pool and budget from the per-run rows: F1 MSE, its Monte-Carlo SE, the
    median squared error, draws per label and CPU per draw."""
    import pandas as pd

    rows = []
    for name, group in runs.groupby("pool", sort=False):
        n = len(group)
        for budget in BUDGETS:
            sq = squared_errors(group, "F1", budget)
            extra = {}
            # precision and recall: rows of this version only (the first kept F1 alone)
            have = group[group.truth_P.notna()] if "truth_P" in group else group[:0]
            for metric in ("P", "R"):
                pr = squared_errors(have, metric, budget) if len(have) else np.array([np.nan])
                extra |= {
                    f"reps_{metric}": len(have),
                    f"mse_{metric}": pr.mean(),
                    f"mse_{metric}_mcse": pr.std() / np.sqrt(max(len(have), 1)),
                }
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
                    **extra,
                }
            )
    return pd.DataFrame(rows)


def markdown(table) -> str:
    """The summary as a README table: per pool and metric, MSE ± Monte-Carlo SE at each
    budget with the run count, draws per label and CPU seconds per run."""
    budgets = " | ".join(f"at {b:,}" for b in BUDGETS)
    lines = [
        f"| pool | metric | runs | MSE {budgets} | draws/label | CPU s/run |",
        "|---|---|---|" + "---|" * len(BUDGETS) + "---|---|",
    ]
    for name, group in table.groupby("pool", sort=False):
        group = group.set_index("budget")
        first = group.iloc[0]
        for metric, reps in (("F1", "reps"), ("P", "reps_P"), ("R", "reps_R")):
            if not first[reps]:
                continue
            cells = " | ".join(
                f"{group.loc[b, f'mse_{metric}']:.1e} ± {group.loc[b, f'mse_{metric}_mcse']:.1e}"
                for b in BUDGETS
            )
            extra = f"{first.draws_per_label:.1f} | {first.cpu_s_per_run:.1f}"
            lines.append(f"| {name} | {metric} | {int(first[reps])} | {cells} | {extra} |")
    return "\n".join(lines)


def compare_markdown(table) -> str:
    """The ``compare`` table as a README table."""
    lines = [
        "| pool | sampler | runs | F1 MSE | median / 95% / 99% / max abs. error "
        "| runs with error > 0.05 / > 0.1 | MSE share of the worst 5% |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in table.itertuples():
        quantiles = " / ".join(
            f"{getattr(row, c):.2g}" for c in ("q50_abs_err", "q95_abs_err", "q99_abs_err")
        )
        lines.append(
            f"| {row.pool} | {row.sampler} | {row.runs} | {row.mse_F1:.1e} ± {row.mse_F1_mcse:.1e} "
            f"| {quantiles} / {row.max_abs_err:.2g} "
            f"| {row.share_abs_err_gt_005:.1%} / {row.share_abs_err_gt_010:.1%} | {row.mse_share_worst_5pct:.0%} |"
        )
    return "\n".join(lines)


def main(argv=None) -> None:
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
    parser.add_argument(
        "--ours",
        action="store_true",
        help="run the library's OASIS (defaults, same seeds) instead, per-run rows to --runs-out",
    )
    parser.add_argument(
        "--compare",
        nargs=2,
        metavar=("PACKAGE_RUNS", "LIBRARY_RUNS"),
        help="per-run F1 errors of both at 2,000 labels (glob patterns of per-run CSVs)",
    )
    parser.add_argument("--worker", metavar="NPZ", help=argparse.SUPPRESS)
    parser.add_argument(
        "--smoke", action="store_true", help="every path on abt-buy at toy size (see above)"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        with tempfile.TemporaryDirectory() as tmp:
            runs, out = f"{tmp}/ours_runs.csv", f"{tmp}/out.csv"
            main(["--ours", "--pools", "abt-buy", "--reps", "2", "--runs-out", runs])
            package = ["--oasis-python", sys.executable, "--out", f"{tmp}/package.csv"]
            main(["--pools", "abt-buy", "--reps", "1", *package])
            main(["--summarize", runs, "--out", out])
            main(["--compare", runs, runs, "--out", out])
        return
    if args.worker:
        worker(args.worker, args.reps, args.seed, args.strata, args.first)
        return
    import pandas as pd

    out = Path(args.out)
    for path in args.summarize or ():
        if not Path(path).is_file():
            parser.error(f"--summarize {path}: no such file")
    for pattern in args.compare or ():
        if not glob.glob(pattern):
            parser.error(f"--compare {pattern}: no file matches")
    if args.compare:
        package, library = (
            pd.concat([pd.read_csv(p) for p in sorted(glob.glob(pattern))]).drop_duplicates(
                ["pool", "run"], keep="last"
            )
            for pattern in args.compare
        )
        table = compare(package, library)
        table.to_csv(out, index=False)
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
        print(compare_markdown(table))
        return
    if args.ours:
        for name in args.pools:
            runs_out = Path(args.runs_out or f"bench_oasis_package_ours_runs_{name}.csv")
            ours(name, args.reps, args.seed, args.strata, args.first, runs_out)
        return
    if args.summarize:
        runs = pd.concat([pd.read_csv(p) for p in args.summarize])
        runs = runs.drop_duplicates(["pool", "run"], keep="last")
        runs = runs.sort_values("pool", key=lambda c: c.map(POOLS.index), kind="stable")
        table = summary(runs)
        table.to_csv(out, index=False)
        print(markdown(table))
        return
    if not Path(args.oasis_python).exists():
        print(f"SKIP: {args.oasis_python} not found (see the install commands above)")
        return
    runs_out = Path(args.runs_out or out.with_name(out.stem + "_runs.csv"))
    if not runs_out.exists():
        runs_out.write_text(",".join(RUN_COLUMNS) + "\n")
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
