"""Benchmark pair pools beyond the bundled OASIS pools: FEBRL 4 and PatentsView.

All are built at run time from files in the repository (no download):

- ``restaurant_research_pool()``: the bundled restaurant file exactly as the research
  experiments used it (Marchant & Rubinstein 2017, Table 2: 149,747 pairs, 45 matches):
  every listed row is its own pair, so the 14,809 pairs the file lists in both orders
  count twice. ``load_pool("restaurant")`` keeps one row per unordered pair instead
  (134,938 pairs, 42 matches).

- ``febrl_pool()``: FEBRL 4 A x B pairs blocked on state, scored by a deliberately
  imperfect field similarity (token Jaccard of given name, surname, suburb), predicted
  match iff score >= 0.75; truth: rec-<i>-org <-> rec-<i>-dup-0.
- ``patentsview_pool()``: pairs of inventor mentions within the bundled PatentsView name
  blocks (``block``) of at most ``max_block`` mentions, keeping every pair with at least
  one mention in the hand-reviewed benchmark. The benchmark's inventor clusters are
  complete (all mentions of a sampled inventor were reviewed), so such a pair is a true
  match iff both mentions are in the same benchmark cluster: the truth is exact for every
  pool pair. Pairs with no benchmark mention have unknown truth and are left out. Score:
  mean token Jaccard of first name, last name, city, assignees and coinventors;
  prediction: the PatentsView 2022-06-30 disambiguation (same inventor id).

    python benchmarks/bench_pairs_pools.py           # build the three pools, print sizes
    python benchmarks/bench_pairs_pools.py --smoke   # the same on the first 300 FEBRL
                                                     # records and name blocks of <= 30
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from er_evaluation.pairs import PairPool, field_similarity_score, pool_from_blocks

DATA = Path(__file__).parent / "data"
CACHE = DATA / "cache"  # built pools (git-ignored): rebuilt when missing


def cached(name: str, build) -> PairPool:
    """Load pool ``name`` from the cache, building and caching it on first use."""
    path = CACHE / f"{name}.parquet"
    if path.exists():
        return PairPool(pd.read_parquet(path))
    pool = build()
    CACHE.mkdir(parents=True, exist_ok=True)
    pool.pairs.to_parquet(path, index=False)
    return pool


def restaurant_research_pool() -> PairPool:
    from er_evaluation.datasets.pools import load_pool_frame

    frame = load_pool_frame("restaurant")
    rows = np.arange(len(frame)).astype(str)
    # the row, not the record pair, is the unit: ids name rows so that both orders stay
    frame["id_left"] = np.char.add("L", rows).astype(object)
    frame["id_right"] = np.char.add("R", rows).astype(object)
    return PairPool.from_frame(
        frame, score_col="probability", predicted_col="predicted", label_col="label"
    )


def febrl_pool(threshold: float = 0.5, limit: int | None = None) -> PairPool:
    """``limit``: only the first ``limit`` records of each file (a smoke run)."""
    read = dict(skipinitialspace=True, dtype=str, keep_default_na=False, na_values=[""])
    a = pd.read_csv(DATA / "febrl" / "dataset4a.csv", nrows=limit, **read).set_index("rec_id")
    b = pd.read_csv(DATA / "febrl" / "dataset4b.csv", nrows=limit, **read).set_index("rec_id")
    pairs = (
        a[["state"]]
        .reset_index()
        .merge(b[["state"]].reset_index(), on="state", suffixes=("_a", "_b"))
        .rename(columns={"rec_id_a": "id_left", "rec_id_b": "id_right"})
    )
    records = pd.concat([a, b])
    score = field_similarity_score(records, pairs, ["given_name", "surname", "suburb"])
    truth = (
        pairs["id_left"].str.replace("-org", "", regex=False).to_numpy()
        == pairs["id_right"].str.replace("-dup-0", "", regex=False).to_numpy()
    )
    frame = pd.DataFrame(
        {
            "id_left": pairs["id_left"].to_numpy(),
            "id_right": pairs["id_right"].to_numpy(),
            "score": score,
            "predicted": (score >= threshold).astype(np.int8),
            "label": truth.astype(np.int8),
        }
    )
    return PairPool.from_frame(frame, label_col="label")


def patentsview_pool(max_block: int = 1000, version: str = "2022-06-30") -> PairPool:
    from er_evaluation.datasets import (
        load_patentsview_benchmark,
        load_patentsview_mentions,
        load_patentsview_predictions,
    )

    mentions = load_patentsview_mentions()
    reference = load_patentsview_benchmark()
    prediction = load_patentsview_predictions([version])[version]
    sizes = mentions["block"].map(mentions["block"].value_counts())
    small = mentions[sizes.to_numpy() <= max_block]
    pairs = pool_from_blocks(small, "block")
    in_ref_l = pairs["id_left"].isin(reference.index).to_numpy()
    in_ref_r = pairs["id_right"].isin(reference.index).to_numpy()
    pairs = pairs[in_ref_l | in_ref_r].reset_index(drop=True)
    ref_l = reference.reindex(pairs["id_left"]).to_numpy()
    ref_r = reference.reindex(pairs["id_right"]).to_numpy()
    label = (~pd.isna(ref_l)) & (~pd.isna(ref_r)) & (ref_l == ref_r)
    fields = ["name_first", "name_last", "city", "assignees", "coinventors"]
    score = field_similarity_score(mentions[fields], pairs, fields)
    frame = pd.DataFrame(
        {
            "id_left": pairs["id_left"].to_numpy(),
            "id_right": pairs["id_right"].to_numpy(),
            "score": score,
            "label": label.astype(np.int8),
        }
    )
    return PairPool.from_frame(frame, predicted_col=None, prediction=prediction, label_col="label")


if __name__ == "__main__":
    import sys
    import time
    from functools import partial

    builds = [restaurant_research_pool, febrl_pool, patentsview_pool]
    if "--smoke" in sys.argv[1:]:
        builds[1:] = [partial(febrl_pool, limit=300), partial(patentsview_pool, max_block=30)]
    for build in builds:
        start = time.perf_counter()
        pool = build()
        labels = pool.labels
        print(
            f"{getattr(build, 'func', build).__name__}: {pool.n_pairs} pairs, {labels.sum()} true matches "
            f"(1:{(pool.n_pairs - labels.sum()) / max(labels.sum(), 1):.0f}), "
            f"truth {pool.truth()}, {time.perf_counter() - start:.1f}s"
        )
