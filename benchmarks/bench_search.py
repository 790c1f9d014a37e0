"""Benchmark record search (er_evaluation.record_search) on the bundled PatentsView mentions
(133,541 rows, 15 columns) and on a synthetic 10M-row table made by replicating them.

Usage:
    nice -n 10 python benchmarks/bench_search.py                 # 133k and 10M rows
    nice -n 10 python benchmarks/bench_search.py --replicas 0    # 133k only
    python benchmarks/bench_search.py --smoke                    # 5,000 rows, 2 replicas

Replication keeps the bytes per row and the text of real rows (each replica's mention ids
get a suffix so ids stay unique), so a scan over the 10M table costs what a real 10M table
of the same columns would; hit counts are 75 times the real ones. Times are the median of
``--repeat`` runs of one query, after the index is built (build time reported separately).
Peak RSS is the process maximum.
"""

from __future__ import annotations

import argparse
import platform
import resource
import statistics
import time

import numpy as np
import pandas as pd
import pyarrow as pa

from er_evaluation.datasets import load_patentsview_mentions
from er_evaluation.record_search import RecordIndex

QUERIES = [
    # (label, query, keyword arguments)
    ("common surname", "smith", {}),
    ("first + last name", "haruhiko takahashi", {}),
    ("name + city", "lee suwon", {}),
    ("assignee words", "canon kabushiki", {}),
    ("no match", "qqzx", {}),
    ("two 1-letter tokens", "a e", {}),
    ("surname, name_last only", "takahashi", {"fields": ["name_last"]}),
    ("name, name fields only", "jose nunez", {"fields": ["name_first", "name_last"]}),
    ("in one block", "canon", {"block": "fl:ha_ln:takahashi"}),
]


def replicate(mentions: pd.DataFrame, replicas: int) -> pd.DataFrame:
    """``replicas`` copies of the rows (zero-copy Arrow chunks) with unique mention ids."""
    table = pa.Table.from_pandas(mentions, preserve_index=False)
    big = pa.concat_tables([table] * replicas).to_pandas()
    suffix = np.repeat(np.arange(replicas), len(mentions)).astype(str)
    big["mention_id"] = big["mention_id"].to_numpy().astype(str) + "-r" + suffix
    return big


def timed(fn, repeat: int) -> tuple[float, float, object]:
    """Median wall time and median CPU time of this process (the machine is shared, so
    CPU time is the figure that does not depend on what else runs)."""
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), out


def run(records: pd.DataFrame, label: str, repeat: int) -> None:
    build_wall, build_cpu, index = timed(
        lambda: RecordIndex(records, "mention_id", block_col="block"), 1
    )
    # Per-field haystacks are built on first use; time that separately from queries.
    field_wall, field_cpu, _ = timed(
        lambda: (
            index.matches("x", fields=["name_last"], limit=1),
            index.matches("x", fields=["name_first", "name_last"], limit=1),
        ),
        1,
    )
    print(f"\n### {label}: {len(records):,} rows")
    print(
        f"index build {build_wall:.1f} s wall / {build_cpu:.1f} s CPU "
        f"(+ {field_wall:.1f} s wall / {field_cpu:.1f} s CPU for the two name-field indexes)"
    )
    buffer_mb = len(index._haystack(index.text_cols).data) / 1e6
    print(f"searched text {buffer_mb:,.0f} MB (all {len(index.text_cols)} columns)")
    print("\nTimes in ms, wall / CPU.\n")
    print("| query | kwargs | matches | first 50 rows (DataFrame) | all matches (positions) |")
    print("| --- | --- | ---: | ---: | ---: |")
    for name, query, kwargs in QUERIES:
        w1, c1, _ = timed(lambda q=query, k=kwargs: index.search(q, limit=50, **k), repeat)
        w2, c2, rows = timed(lambda q=query, k=kwargs: index.matches(q, limit=None, **k), repeat)
        extra = ", ".join(f"{k}={v}" for k, v in kwargs.items())
        print(
            f"| {name}: `{query}` | {extra} | {len(rows):,} "
            f"| {w1 * 1e3:.0f} / {c1 * 1e3:.0f} | {w2 * 1e3:.0f} / {c2 * 1e3:.0f} |"
        )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    print(f"\npeak RSS so far {rss:.1f} GB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=75, help="0 = skip the large table")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--smoke", action="store_true", help="the first 5,000 mentions, 2 replicas, 1 repeat"
    )
    args = parser.parse_args()
    print(
        f"machine: {platform.machine()}, {platform.processor() or '?'}, Python "
        f"{platform.python_version()}, pandas {pd.__version__}, pyarrow {pa.__version__}"
    )
    mentions = load_patentsview_mentions().reset_index()
    if args.smoke:
        mentions, args.replicas, args.repeat = mentions.head(5000), 2, 1
    run(mentions, "PatentsView mentions (bundled)", args.repeat)
    if args.replicas:
        big = replicate(mentions, args.replicas)
        run(big, f"synthetic: {args.replicas} replicas of the mentions", args.repeat)


if __name__ == "__main__":
    main()
