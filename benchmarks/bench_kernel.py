"""Speed and peak memory of the contingency kernel, pairwise P+R, all metrics, a
400-cluster estimate and from_pairs, side by side with scikit-learn and with a bare
factorize-and-count floor, for 1e5, 1e6 and 1e7 records (3e7 on request).

Every (task, size, id type) runs in its own child process: the child builds the data,
records its resident memory (``data MB``: interpreter + inputs), resets the kernel's
peak-RSS counter (``/proc/self/clear_refs``), times the task (best and median of
``--repeat`` runs, wall and CPU time; by default 3 runs, 1 for scikit-learn at 1e7 and
for every task above 1e7) and reports its
peak RSS over the task (``peak MB``: interpreter + inputs + everything
the task allocates). The data generator's own transients (numpy fixed-width strings)
are thereby excluded; the whole child's peak, generator included, is also kept in the
JSON output (``process_peak_mb``, from ``os.wait4``).

Before the timed runs the child runs the task once under ``tracemalloc`` (after a
warm-up on 1,000 records, so that lazy imports are not counted): ``traced peak MB`` is
the most the task allocated on top of the inputs (numpy arrays and pandas hash tables
are traced; Arrow's own buffers are not, the RSS peak covers them), ``held KB`` what it
still holds once its result is deleted (caches left on the caller's objects or in
modules), and ``new caches`` the keys it added to the caller's indexes' ``_cache``.

Data: reference cluster sizes drawn from a Zipf law (exponent 2, capped at 10,000: heavy
tailed, about half singletons by cluster count); the prediction moves 10% of the records,
chosen at random, to a random other reference cluster. Record ids are a random
permutation of 0..n-1 ("int"), or the same numbers as strings "r<k>" with cluster ids
"c<k>" ("str", pandas' Arrow-backed string dtype). Both clusterings share one index order
(one table with two cluster columns); ``kernel_shuffled`` gives the reference in another
record order, so the kernel must align ids. scikit-learn gets the label arrays already
aligned (it has no notion of record ids), i.e. strictly less work than our tasks.
``floor_pr`` is the least any pairwise P+R can cost on these inputs: ``pd.factorize`` of
both cluster-id columns, one int64 key per record, ``pd.factorize`` and ``np.bincount`` of
the keys, the three link counts; no validation and no record-id work. ``pr_vs_floor``
times pairwise P+R and the floor alternately in one process (CPU time, best and median of
each, and their ratios). ``estimate`` is
``estimate(prediction, sample, "pairwise_precision")`` for a sample of 400 reference
clusters drawn with probability proportional to size (the sample is drawn before the
measurement); its extra memory should follow the sample, not the population.

    nice -n 0 python benchmarks/bench_kernel.py                 # all sizes, ~15 min
    python benchmarks/bench_kernel.py --boost --repeat 7 --pairs 0 --ids str \
        --sizes 1000000 10000000 --tasks pr_vs_floor   # as root, see _timing.py
    python benchmarks/bench_kernel.py --sizes 100000 --ids int  # quick look
    prlimit --as=$((10*1024**3)) nice -n 10 python benchmarks/bench_kernel.py \
        --sizes 30000000 --tasks estimate pairwise_pr floor_pr --limit 1200
    python benchmarks/bench_kernel.py --smoke   # four tasks on 5,000 records (string ids),
                                                # JSON in a temporary folder; fails on an error
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time

import _timing

TASKS = [
    "kernel",
    "kernel_shuffled",
    "pairwise_pr",
    "all_metrics",
    "sk_pair_confusion",
    "sk_adjusted_rand",
    "sk_homogeneity_completeness_v",
    "floor_pr",
    "pr_vs_floor",
    "estimate",
]


def make_data(n: int, ids: str, seed: int = 0):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    sizes = np.minimum(rng.zipf(2.0, size=n), 10_000)
    sizes = sizes[: np.searchsorted(np.cumsum(sizes), n) + 1]
    ref = np.repeat(np.arange(len(sizes)), sizes)[:n]
    rng.shuffle(ref)
    pred = ref.copy()
    moved = rng.random(n) < 0.10
    pred[moved] = rng.integers(0, len(sizes), int(moved.sum()))
    record_ids = rng.permutation(n)
    if ids == "int":
        index = pd.Index(record_ids)
        return pd.Series(pred, index=index), pd.Series(ref, index=index)
    index = pd.Index(np.char.add("r", record_ids.astype(str)), dtype="str")
    labels = lambda codes: pd.array(np.char.add("c", codes.astype(str)), dtype="str")  # noqa: E731
    return pd.Series(labels(pred), index=index), pd.Series(labels(ref), index=index)


def make_pairs(n: int, seed: int = 0):
    """n records and n random matched pairs (edges), integer ids."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    records = pd.Index(rng.permutation(n))
    pairs = pd.DataFrame({"left": rng.integers(0, n, n), "right": rng.integers(0, n, n)})
    return records, pairs


def floor_pr(prediction, reference) -> tuple[float, float]:
    """Pairwise precision and recall with nothing but factorize and count (records already
    aligned, nothing validated): the floor the library's pairwise P+R is compared with."""
    import numpy as np
    import pandas as pd

    def links(counts):
        counts = counts.astype(np.int64)
        return int((counts * (counts - 1) // 2).sum())

    pred_codes, pred_labels = pd.factorize(prediction.array)
    ref_codes, ref_labels = pd.factorize(reference.array)
    key = pred_codes.astype(np.int64) * len(ref_labels) + ref_codes
    cells, _ = pd.factorize(key)
    true_positive = links(np.bincount(cells))
    return (
        true_positive / links(np.bincount(pred_codes)),
        true_positive / links(np.bincount(ref_codes)),
    )


def task_function(task: str, prediction, reference):
    """The call measured for ``task`` on (prediction, reference)."""
    if task == "floor_pr":
        return lambda: floor_pr(prediction, reference)
    if task == "estimate":
        from er_evaluation.estimators import estimate
        from er_evaluation.sampling import sample_clusters

        sample = sample_clusters(reference, 400, weights="cluster_size", seed=0)
        return lambda: estimate(prediction, sample, "pairwise_precision")
    if task.startswith("sk_"):
        import sklearn.metrics as skm
        from sklearn.metrics.cluster import pair_confusion_matrix

        labels_true, labels_pred = reference.to_numpy(), prediction.to_numpy()
        function = {
            "sk_pair_confusion": pair_confusion_matrix,
            "sk_adjusted_rand": skm.adjusted_rand_score,
            "sk_homogeneity_completeness_v": skm.homogeneity_completeness_v_measure,
        }[task]
        return lambda: function(labels_true, labels_pred)
    if task == "pr_vs_floor":  # the library's side; the floor runs beside it, see child()
        task = "pairwise_pr"
    if task in ("kernel", "kernel_shuffled"):
        from er_evaluation import contingency

        return lambda: contingency(prediction, reference)
    from er_evaluation.metrics import evaluate

    chosen = ["pairwise_precision", "pairwise_recall"] if task == "pairwise_pr" else None
    return lambda: evaluate(prediction, reference, chosen)


def child(task: str, n: int, ids: str, repeat: int, limit: int) -> dict:
    signal.alarm(limit)  # a runaway configuration kills itself
    import numpy as np

    if task == "from_pairs":
        from er_evaluation.clustering import from_pairs

        records, pairs = make_pairs(n)
        run = lambda: from_pairs(pairs, records=records)  # noqa: E731
        data_mb = _timing.rss_mb()
        memory = {}
    else:
        import warnings

        warnings.simplefilter("ignore")  # the estimate's reliability warnings
        small = make_data(1000, ids)
        task_function(task, *small)()  # warm-up: lazy imports are not the task's memory
        prediction, reference = make_data(n, ids)
        if task == "kernel_shuffled":
            reference = reference.sample(frac=1.0, random_state=1)
        run = task_function(task, prediction, reference)
        data_mb = _timing.rss_mb()
        probe = _timing.traced(run, [prediction.index, reference.index])
        memory = {
            "traced_peak_mb": probe.peak / 2**20,
            "held_kb": probe.held / 2**10,
            "new_caches": list(probe.new_caches),
        }
    # pr_vs_floor: the library's pairwise P+R and the floor alternate in one process, on
    # the same data, so that a change of load between them cannot favour either
    floor = (lambda: floor_pr(prediction, reference)) if task == "pr_vs_floor" else None
    _timing.reset_peak_rss()
    times, cpu, floor_cpu = [], [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = run()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        del result
        if floor is not None:
            start_cpu = time.process_time()
            floor()
            floor_cpu.append(time.process_time() - start_cpu)
    versus = {}
    if floor_cpu:
        versus = {
            "floor_cpu_seconds": float(np.min(floor_cpu)),
            "floor_median_cpu_seconds": float(np.median(floor_cpu)),
            "ratio_best": float(np.min(cpu) / np.min(floor_cpu)),
            "ratio_median": float(np.median(cpu) / np.median(floor_cpu)),
        }
    return {
        "seconds": float(np.min(times)),
        "cpu_seconds": float(np.min(cpu)),
        "median_seconds": float(np.median(times)),
        "median_cpu_seconds": float(np.median(cpu)),
        "repeats": repeat,
        "data_mb": data_mb,
        "peak_mb": _timing.rss_mb("VmHWM"),
        **memory,
        **versus,
    }


def run_child(task: str, n: int, ids: str, repeat: int, limit: int) -> dict:
    command = [sys.executable, __file__, "--child", task, str(n), ids, str(repeat), str(limit)]
    child_run = _timing.run_child(command)
    row = {"task": task, "n": n, "ids": ids, "process_peak_mb": child_run.peak_mb}
    if child_run.returncode == -signal.SIGALRM:
        row["timeout"] = limit
        return row
    if child_run.returncode != 0:
        row["error"] = child_run.last_error()
        return row
    row.update(json.loads(child_run.out))
    return row


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        task, n, ids, repeat, limit = sys.argv[2:7]
        print(json.dumps(child(task, int(n), ids, int(repeat), int(limit))))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[100_000, 1_000_000, 10_000_000])
    parser.add_argument("--ids", nargs="+", choices=["int", "str"], default=["int", "str"])
    parser.add_argument("--tasks", nargs="+", choices=TASKS, default=TASKS)
    parser.add_argument("--pairs", type=int, default=10_000_000, help="from_pairs size (0: skip)")
    parser.add_argument(
        "--limit", type=int, default=90, help="seconds per configuration (data building included)"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        help="timed runs per configuration (default: 3, and 1 above 1e7 and for "
        "scikit-learn at 1e7); best and median are reported",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="the kernel (shuffled), pairwise P+R beside the floor, the estimate (5,000 "
        "records, string ids) and from_pairs (5,000 pairs), each in its child once; the "
        "JSON in a temporary folder; exit 1 if a configuration fails",
    )
    _timing.add_run_options(parser, nice=-10)
    args = _timing.parse_run_options(parser)
    if args.smoke:
        with tempfile.TemporaryDirectory() as tmp:
            args.sizes, args.ids, args.pairs = [5000], ["str"], 5000
            args.tasks = ["kernel_shuffled", "pr_vs_floor", "estimate"]
            args.repeat, args.out = 1, tmp
            rows = run(args)
        failed = [row for row in rows if "seconds" not in row]
        sys.exit(f"failed: {failed}" if failed else 0)
    run(args)


def run(args: argparse.Namespace) -> list[dict]:
    """Every configuration of ``args`` in its own child; the table on stdout, the rows in
    ``args.out``/bench_kernel.json."""

    print(_timing.machine(), flush=True)
    import numpy, pandas, sklearn  # noqa: E401, I001

    print(
        f"numpy {numpy.__version__}, pandas {pandas.__version__}, scikit-learn {sklearn.__version__}"
    )
    rows = []
    nan = float("nan")
    header = (
        f"| {'task':32} | {'records':>10} | ids | {'seconds':>8} | CPU s (median) | {'peak MB':>8} | "
        f"{'data MB':>8} | traced peak MB | held KB | new caches |"
    )
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|", flush=True)
    configs = [(t, n, i) for n in args.sizes for i in args.ids for t in args.tasks]
    if args.pairs:
        configs.append(("from_pairs", args.pairs, "int"))
    for task, n, ids in configs:
        repeat = args.repeat or (
            1 if (n >= 10_000_000 and task.startswith("sk_")) or n > 10_000_000 else 3
        )
        row = run_child(task, n, ids, repeat, args.limit)
        rows.append(row)
        if "seconds" in row:
            seconds = f"{row['seconds']:8.2f}"
        else:
            seconds = f"{'> ' + str(args.limit) if 'timeout' in row else 'failed':>8}"
        peak, data = (f"{row.get(k, float('nan')):8.0f}" for k in ("peak_mb", "data_mb"))
        traced_mb = f"{row.get('traced_peak_mb', float('nan')):14.1f}"
        held = f"{row.get('held_kb', float('nan')):7.1f}"
        caches = ", ".join(row.get("new_caches", [])) or "none"
        cpu = f"{row.get('cpu_seconds', nan):5.2f} ({row.get('median_cpu_seconds', nan):5.2f})"
        print(
            f"| {task:32} | {n:>10,} | {ids:3} | {seconds} | {cpu:14} "
            f"| {peak} | {data} | {traced_mb} | "
            f"{held} | {caches} |",
            flush=True,
        )
        if "error" in row:
            print(f"    error: {row['error']}", flush=True)
        if "ratio_best" in row:
            print(
                f"    floor CPU s {row['floor_cpu_seconds']:.3f} (median "
                f"{row['floor_median_cpu_seconds']:.3f}); library / floor: "
                f"{row['ratio_best']:.2f}x best, {row['ratio_median']:.2f}x median",
                flush=True,
            )
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench_kernel.json"), "w") as handle:
        json.dump({"machine": _timing.machine(), "rows": rows}, handle, indent=1)
    return rows


if __name__ == "__main__":
    main()
