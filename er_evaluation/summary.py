"""Summary statistics of one clustering: sizes, singletons, matching rate, name statistics.

All quantities come from integer codes and grouped counts (``factorize`` +
``bincount``; unique (cluster, name) pairs for the name statistics), so they
run in O(N) at 10M records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from er_evaluation._progress import progress
from er_evaluation.clustering import validate_membership
from er_evaluation.engines import as_table
from er_evaluation.engines._kernel import engine_size_distribution, engine_statistics
from er_evaluation.errors import ClusteringError, examples

__all__ = ["summary_statistics", "cluster_size_distribution", "summary_table", "join_names"]


def join_names(table: pd.DataFrame, columns: Sequence[str]) -> pd.Series:
    """Each row's name for the name statistics: its ``columns`` (e.g. ``name_first``,
    ``name_last``) as text joined with one space, indexed like ``table``, named "name".

    A row with a missing (NaN/None) part has no usable name: its name is missing, so that
    :func:`summary_statistics` counts it in ``records_without_name`` rather than taking
    half a name, or an empty one, for a name shared with other clusters."""
    columns = list(columns)
    absent = [c for c in columns if c not in table.columns]
    if absent or not columns:
        raise ValueError(
            f"name column(s) {absent or columns} not found; columns are {list(table.columns)}"
        )
    parts = table[columns]
    names = parts[columns[0]].astype(str)
    for col in columns[1:]:  # a loop over the few name columns, not over records
        names = names.str.cat(parts[col].astype(str), sep=" ")
    return names.where(parts.notna().all(axis=1)).rename("name")


def summary_statistics(clustering: pd.Series, names: pd.Series | None = None) -> pd.Series:
    """Summary statistics of a clustering (membership vector), as a float Series.

    - ``n_records``, ``n_clusters``; ``average_cluster_size`` = N / K,
      ``median_cluster_size``, ``max_cluster_size``;
    - ``singleton_cluster_share``: share of the K clusters that have one record;
    - ``singleton_record_share``: share of the N records that are alone in their cluster;
    - ``matching_rate``: share of records in clusters of size >= 2
      (= 1 − singleton_record_share).

    ``clustering`` (and ``names``) may be tables held by DuckDB or Spark
    (:func:`er_evaluation.engines.table`; names: an id column and a name column): the
    engine computes the same statistics from grouped counts.

    Given ``names`` (a Series record id -> name string such as "first last",
    covering every record of the clustering), the PatentsView name statistics,
    computed over the clusters that contain at least one named record:

    - ``homonymy_rate``: share of clusters that share at least one name with
      another cluster (a name counts for a cluster when one of its records has it);
    - ``name_variation_rate``: share of clusters containing more than one
      distinct name;
    - ``records_without_name``: records whose name is missing (NaN/None); they
      are left out of both rates, and counted here rather than silently dropped.
    """
    name = clustering.name if isinstance(clustering, pd.Series) else None
    return pd.Series(_statistics(clustering, names), name=name, dtype=np.float64)


def cluster_size_distribution(clustering: pd.Series) -> pd.Series:
    """Number of clusters of each size: index ``size`` (increasing), values ``n_clusters``."""
    table = as_table(clustering, "clustering")
    if table is not None:
        return engine_size_distribution(table)
    validate_membership(clustering)
    sizes = _cluster_sizes(clustering)
    per_size = np.bincount(sizes)
    present = np.flatnonzero(per_size)
    return pd.Series(
        per_size[present], index=pd.Index(present, name="size"), name="n_clusters", dtype=np.int64
    )


def summary_table(
    clusterings: pd.Series | Mapping[str, pd.Series], names: pd.Series | None = None
) -> pd.DataFrame:
    """:func:`summary_statistics` of several clusterings, one row each (index ``clustering``).

    Count columns stay integers. ``names`` (record id -> name) applies to all
    clusterings and must cover the records of each.
    """
    if isinstance(clusterings, pd.Series):
        clusterings = {
            clusterings.name if clusterings.name is not None else "clustering": clusterings
        }
    if not isinstance(clusterings, Mapping):
        raise TypeError(
            f"clusterings must be a mapping name -> Series, got {type(clusterings).__name__}"
        )
    if len(clusterings) == 0:
        raise ValueError("clusterings is empty: pass at least one clustering")
    bar = progress(clusterings.items(), "summaries", total=len(clusterings), unit="clustering")
    rows = [_statistics(c, names, label=str(k)) for k, c in bar]
    return pd.DataFrame(rows, index=pd.Index(list(clusterings), name="clustering"))


def _cluster_sizes(clustering: pd.Series) -> np.ndarray:
    codes, _ = pd.factorize(clustering.array)
    return np.bincount(codes)


def _statistics(clustering: pd.Series, names: pd.Series | None, label: str = "clustering") -> dict:
    table = as_table(clustering, label)
    if table is not None or (names is not None and as_table(names, "names") is not None):
        return engine_statistics(table or clustering, as_table(names, "names") or names, label)
    validate_membership(clustering, name=label)
    codes, labels = pd.factorize(clustering.array)
    sizes = np.bincount(codes, minlength=len(labels))
    n, k = len(codes), len(sizes)
    singletons = int(np.count_nonzero(sizes == 1))
    stats = {
        "n_records": n,
        "n_clusters": k,
        "average_cluster_size": n / k,
        "median_cluster_size": float(np.median(sizes)),
        "max_cluster_size": int(sizes.max()),
        "singleton_cluster_share": singletons / k,
        "singleton_record_share": singletons / n,
        "matching_rate": (n - singletons) / n,
    }
    if names is not None:
        stats.update(_name_statistics(clustering, codes, k, names, label))
    return stats


def _name_statistics(
    clustering: pd.Series, codes: np.ndarray, k: int, names: pd.Series, label: str
) -> dict:
    aligned = _align_names(clustering, names, label)
    name_codes, name_labels = pd.factorize(aligned)  # missing names get code -1
    named = name_codes >= 0
    m = max(len(name_labels), 1)
    key = codes[named].astype(np.int64) * m + name_codes[named]
    pairs = pd.unique(key)  # distinct (cluster, name) combinations
    pair_cluster, pair_name = pairs // m, pairs % m
    clusters_per_name = np.bincount(pair_name, minlength=m)
    names_per_cluster = np.bincount(pair_cluster, minlength=k)
    shares_a_name = np.bincount(
        pair_cluster, weights=clusters_per_name[pair_name] >= 2, minlength=k
    )
    with_names = names_per_cluster > 0
    n_with = int(np.count_nonzero(with_names))
    return {
        "homonymy_rate": np.count_nonzero(shares_a_name > 0) / n_with if n_with else np.nan,
        "name_variation_rate": np.count_nonzero(names_per_cluster > 1) / n_with
        if n_with
        else np.nan,
        "records_without_name": int(np.count_nonzero(~named)),
    }


def _align_names(clustering: pd.Series, names: pd.Series, label: str) -> np.ndarray:
    if not isinstance(names, pd.Series):
        raise TypeError(f"names must be a Series record id -> name, got {type(names).__name__}")
    if names.index.equals(clustering.index):
        return names.array
    if not names.index.is_unique:
        dup = names.index[names.index.duplicated()].unique()
        raise ClusteringError(
            f"names: {len(dup)} record id(s) appear more than once: {examples(dup)}"
        )
    pos = names.index.get_indexer(clustering.index)
    absent = pos < 0
    if absent.any():
        ids = clustering.index[absent]
        raise ClusteringError(
            f"names: {len(ids)} record(s) of {label} have no entry in names: {examples(ids)}"
        )
    return names.array.take(pos)
