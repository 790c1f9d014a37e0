"""Cost of in-memory pair labelling of one block (the Pair labelling page's pool).

For blocks of n records taken from the largest name block of the bundled PatentsView data
(``fl:se_ln:lee``, 9,055 mentions in the 2022-06-30 version; a seeded random subset of
it for n < 9,055), one child process per n builds what the page builds before the first
pair is shown:

1. ``pool_from_blocks``: all C(n, 2) within-block pairs;
2. ``field_similarity_score``: the mean token Jaccard over the demo's fields;
3. ``PairPool.from_frame`` with the 2022-06-30 prediction (validation, prediction lookup);
4. the OASIS sampler the page starts (``make_sampler("oasis", pool, seed=0)``).

Each child runs under ``/usr/bin/time -v`` (peak resident memory, user + system CPU
seconds of the whole process) at ``nice -n 10`` and with an address-space cap
(``--cap-gb``), so that a size that does not fit stops with MemoryError instead of
taking the shared machine down; per-stage CPU seconds come from the child itself. Rows
are appended to the CSV as each size finishes.

    PYTHONPATH=$PWD python benchmarks/bench_pairs_block_size.py --sizes 1000 2000 4000 9055
    PYTHONPATH=$PWD python benchmarks/bench_pairs_block_size.py --smoke   # a 200-record
                                                # block; the CSV in a temporary folder
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import resource
import sys
import tempfile
import time
from pathlib import Path

from _timing import machine, run_child

HERE = Path(__file__).resolve().parent
OUT = HERE / "data" / "bench_pairs_block_size.csv"
VERSION = "2022-06-30"
FIELDS = ("pairs", "records", "cpu_pairs_s", "cpu_scores_s", "cpu_pool_s", "cpu_sampler_s")


def one(n: int, seed: int) -> dict:
    """Build the page's pool for a block of ``n`` records in this process; CPU seconds
    per stage (``time.process_time``)."""
    import numpy as np

    from er_evaluation.pairs import (
        PairPool,
        field_similarity_score,
        make_sampler,
        pool_from_blocks,
    )
    from er_evaluation.review import load_demo

    data = load_demo()
    prediction = data.predictions[VERSION]
    records = data.records.loc[prediction.index]
    sizes = records[data.block_col].value_counts()
    largest = sizes.index[0]
    members = records[records[data.block_col] == largest]
    if n < len(members):
        rows = np.sort(np.random.default_rng(seed).choice(len(members), n, replace=False))
        members = members.iloc[rows]
    out = {"records": len(members)}
    stage("pairs")
    clock = time.process_time()
    pairs = pool_from_blocks(members, data.block_col)
    out["cpu_pairs_s"], clock = time.process_time() - clock, time.process_time()
    stage("scores")
    pairs["score"] = field_similarity_score(members, pairs, data.fields)
    out["cpu_scores_s"], clock = time.process_time() - clock, time.process_time()
    stage("pool")
    pool = PairPool.from_frame(pairs, prediction=prediction)
    del pairs
    out["cpu_pool_s"], clock = time.process_time() - clock, time.process_time()
    stage("sampler")
    make_sampler("oasis", pool, seed=0)
    out["cpu_sampler_s"] = time.process_time() - clock
    out["pairs"] = pool.n_pairs
    return out


def stage(name: str) -> None:
    """Say on standard error which stage starts, so a size that fails names its stage."""
    print(f"stage: {name}", file=sys.stderr, flush=True)


def _time_v(err: str, label: str) -> float:
    found = re.search(rf"{re.escape(label)}: ([0-9.]+)", err)
    return float(found.group(1)) if found else float("nan")


def measure(n: int, seed: int, cap_gb: float) -> dict:
    """One child per size under ``nice -n 10 /usr/bin/time -v`` with an address-space cap."""
    cap = int(cap_gb * 1024**3)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    command = ["nice", "-n", "10", "/usr/bin/time", "-v", sys.executable, __file__]
    run = run_child([*command, "--one", str(n), "--seed", str(seed)], preexec_fn=limit)
    row = {"n": n, "seed": seed, "cap_gb": cap_gb}
    row["peak_mb"] = _time_v(run.err, "Maximum resident set size (kbytes)") / 1024
    row["cpu_total_s"] = _time_v(run.err, "User time (seconds)") + _time_v(
        run.err, "System time (seconds)"
    )
    row["wall_s"] = _wall(run.err)
    if run.returncode == 0 and run.out.strip():
        row.update(json.loads(run.out.strip().splitlines()[-1]))
        row["status"] = "ok"
    else:
        errors = [line for line in run.err.splitlines() if "Error" in line]
        stages = re.findall(r"^stage: (\w+)$", run.err, flags=re.M)
        failed = (errors[-1] if errors else run.last_error()).strip()[:100]
        row["status"] = f"failed in {stages[-1] if stages else 'loading'}: {failed}"
    return row


def _wall(err: str) -> float:
    found = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([0-9:.]+)", err)
    if not found:
        return float("nan")
    seconds = 0.0
    for part in found.group(1).split(":"):
        seconds = seconds * 60 + float(part)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000, 9055])
    parser.add_argument("--seed", type=int, default=0, help="seed of the record subsets")
    parser.add_argument("--cap-gb", type=float, default=12.0, help="address-space cap per child")
    parser.add_argument("--out", type=Path, default=OUT, help="CSV the rows are appended to")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="one 200-record block, the CSV in a temporary folder; exit 1 unless it succeeds",
    )
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # the child's mode
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(one(args.one, args.seed)))
        return
    if args.smoke:
        with tempfile.TemporaryDirectory() as tmp:
            rows = run([200], args.seed, args.cap_gb, Path(tmp) / "block_size.csv")
        sys.exit(0 if all(row["status"] == "ok" for row in rows) else f"failed: {rows}")
    run(args.sizes, args.seed, args.cap_gb, args.out)


def run(sizes: list[int], seed: int, cap_gb: float, out: Path) -> list[dict]:
    """Measure each block size in its own child; each row appended to ``out`` at once."""
    print(machine(), flush=True)
    columns = ["n", "seed", "cap_gb", "status", "peak_mb", "cpu_total_s", "wall_s", *FIELDS]
    rows = []
    new = not out.exists()
    with out.open("a", newline="") as handle:
        writer = csv.DictWriter(handle, columns, extrasaction="ignore")
        if new:
            writer.writeheader()
        for n in sizes:
            row = measure(n, seed, cap_gb)
            writer.writerow(row)
            handle.flush()
            rows.append(row)
            print({k: row.get(k) for k in columns}, flush=True)
    return rows


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
