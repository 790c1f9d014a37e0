"""The one clustering data model: a membership vector.

A clustering is a :class:`pandas.Series` whose index holds unique record ids and
whose values are cluster ids. Every function in the toolkit accepts
such a Series; the constructors here build and validate one from the other
shapes people have: a table with id and cluster columns, a list or dict of
clusters, a table of matched pairs, a networkx graph. Invalid input raises
:class:`~er_evaluation.errors.ClusteringError` naming the problem and example ids.
Nothing is silently dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from er_evaluation.errors import ClusteringError, examples, plain_id, smallest

__all__ = [
    "membership",
    "validate_membership",
    "from_frame",
    "from_clusters",
    "from_pairs",
    "from_graph",
    "to_frame",
    "to_clusters",
    "to_pairs",
    "to_graph",
    "cluster_sizes",
]

_SCALAR_KINDS = {"integer", "string", "floating", "boolean", "empty", "categorical", "decimal"}


def membership(
    data: Any,
    *,
    id_col: str | None = None,
    cluster_col: str | None = None,
    name: str = "clustering",
) -> pd.Series:
    """Build a validated membership vector (record id -> cluster id) from common shapes.

    Accepts a Series (index = record ids, values = cluster ids), a DataFrame with
    ``id_col`` and ``cluster_col`` (or exactly two columns: ids then clusters), a
    dict ``{record_id: cluster_id}``, a dict ``{cluster_id: [record ids]}`` or a
    list of clusters (each an iterable of record ids). ``name`` is used in error
    messages ("prediction", "reference", ...).
    """
    if isinstance(data, pd.Series):
        return validate_membership(data, name=name)
    if isinstance(data, pd.DataFrame):
        return from_frame(data, id_col=id_col, cluster_col=cluster_col, name=name)
    if isinstance(data, Mapping):
        if len(data) == 0:
            raise ClusteringError(f"{name} is empty: a clustering needs at least one record")
        first = next(iter(data.values()))
        if _is_collection(first):
            return from_clusters(data, name=name)
        return validate_membership(pd.Series(data), name=name)
    if isinstance(data, (list, tuple)):
        return from_clusters(data, name=name)
    raise ClusteringError(
        f"{name}: cannot build a clustering from {type(data).__name__}; pass a pandas Series "
        "(record id -> cluster id), a DataFrame with id and cluster columns, a dict or a list of clusters"
    )


def validate_membership(series: pd.Series, *, name: str = "clustering") -> pd.Series:
    """Check that ``series`` is a valid membership vector and return it.

    Checks: non-empty; record ids unique, non-missing and of one type; cluster ids
    non-missing scalars of one type. Errors name the offending ids.
    """
    check_structure(series, name=name)
    duplicated = duplicated_ids(series.index)
    if len(duplicated):
        raise duplicate_error(duplicated, name)
    return series


def check_structure(series: pd.Series, *, name: str = "clustering") -> None:
    """Every check of :func:`validate_membership` except uniqueness of the record ids
    (which the contingency kernel gets for free from its own alignment of the ids)."""
    if not isinstance(series, pd.Series):
        raise ClusteringError(
            f"{name} must be a pandas Series (record id -> cluster id), got {type(series).__name__}"
        )
    if len(series) == 0:
        raise ClusteringError(f"{name} is empty: a clustering needs at least one record")
    index = series.index
    if isinstance(index, pd.MultiIndex):
        raise ClusteringError(f"{name}: record ids must be a flat index, not a MultiIndex")
    # on the array, not Index.hasnans: that caches an N-byte mask on the caller's index
    missing_ids = index.array.isna() if index.dtype.kind not in "iub" else None
    if missing_ids is not None and missing_ids.any():
        raise ClusteringError(
            f"{name}: {int(missing_ids.sum())} record id(s) are missing (NaN/None)"
        )
    _check_one_kind(index, f"{name}: record ids")
    check_exact_floats(index, f"{name}: record ids")
    missing = series.isna().to_numpy()
    if missing.any():
        bad = index[missing]
        raise ClusteringError(
            f"{name}: {len(bad)} record(s) have no cluster id: {examples(smallest(bad))}"
        )
    check_exact_floats(series, f"{name}: cluster ids")
    if series.dtype == object or isinstance(series.dtype, pd.CategoricalDtype):
        # typed columns (int, float, str, ...) hold one kind by construction
        _check_one_kind(pd.Index(series.to_numpy()), f"{name}: cluster ids", ids=index)


_EXACT_FLOAT_LIMIT = 2.0**53


def check_exact_floats(values: pd.Index | pd.Series, what: str) -> None:
    """Floating-point ids at or beyond 2**53 cannot hold every integer: 2**53 + 1 reads as
    2**53, so two records (or clusters) would silently become one."""
    if values.dtype.kind != "f":
        return
    array = values.to_numpy()
    big = np.abs(array) >= _EXACT_FLOAT_LIMIT
    if big.any():
        raise ClusteringError(
            f"{what} are floating-point numbers of magnitude 2**53 or more, where distinct "
            f"integers collide (2**53 + 1 reads as 2**53); read or store them as integers or "
            f"strings. {int(big.sum())} such id(s): {examples(array[big])}"
        )


def duplicated_ids(index: pd.Index) -> pd.Index:
    """The record ids that occur more than once in ``index`` (empty if all are unique).

    Integer ids in a compact range are counted with ``np.bincount`` (~0.1 s for 10M);
    other ids are factorised once, since ``Index.is_unique`` takes ~9 s on 10M
    Arrow-backed strings.
    """
    if isinstance(index, pd.RangeIndex):  # unique by construction; never made an array
        return index[:0]
    values = _dense_ints(index)
    if values is not None:
        lo = values.min()
        counts = np.bincount(values - lo if lo else values)
        if counts.max() <= 1:
            return index[:0]
        return pd.Index(np.flatnonzero(counts > 1) + lo)
    codes, uniques = index.factorize()
    if len(uniques) == len(index):
        return index[:0]
    counts = np.bincount(codes, minlength=len(uniques))
    return uniques[counts > 1]


def duplicate_error(duplicated: pd.Index, name: str) -> ClusteringError:
    return ClusteringError(
        f"{name}: {len(duplicated)} record id(s) appear more than once: {examples(smallest(duplicated))}"
    )


def _dense_ints(values: pd.Index | np.ndarray, slack: int = 4) -> np.ndarray | None:
    """``values`` as int64 if they are integers whose range is at most ``slack`` times
    their number (then direct addressing beats hashing), else None."""
    if isinstance(values, pd.arrays.NumpyExtensionArray):
        values = values.to_numpy()
    dtype = values.dtype
    if not isinstance(dtype, np.dtype) or dtype.kind not in "iu" or len(values) == 0:
        return None
    array = np.asarray(values)
    lo, hi = int(array.min()), int(array.max())
    if hi - lo > slack * len(array) + 1024 or hi >= 2**62 or lo <= -(2**62):
        return None
    return array.astype(np.int64, copy=False)


def _check_one_kind(values: pd.Index, what: str, ids: pd.Index | None = None) -> None:
    kind = pd.api.types.infer_dtype(values, skipna=False)
    if kind in _SCALAR_KINDS or kind.startswith("datetime") or kind == "timedelta":
        return
    locate = ids if ids is not None else values
    if kind in ("mixed-integer", "mixed-integer-float", "mixed"):
        types = pd.Series([type(v).__name__ for v in values], dtype=object)
        nonscalar = ~pd.Series([np.isscalar(v) for v in values], dtype=bool).to_numpy()
        if nonscalar.any():
            raise ClusteringError(
                f"{what} must be scalars; found {types[nonscalar].iloc[0]} at {examples(locate[nonscalar])}"
            )
        counts = types.value_counts()
        minority = types.to_numpy() == counts.index[-1]
        raise ClusteringError(
            f"{what} mix types ({', '.join(f'{t}: {c}' for t, c in counts.items())}); "
            f"convert them to one type (e.g. all str). {counts.index[-1]} at {examples(locate[minority])}"
        )
    raise ClusteringError(f"{what} have unsupported type '{kind}'")


def _is_collection(value: Any) -> bool:
    return isinstance(value, Iterable) and not isinstance(value, (str, bytes))


def from_frame(
    frame: pd.DataFrame,
    id_col: str | None = None,
    cluster_col: str | None = None,
    *,
    name: str = "clustering",
) -> pd.Series:
    """Membership vector from a table with a record-id column and a cluster-id column.

    Without column names, a two-column table is read as (id, cluster).
    """
    if id_col is None and cluster_col is None:
        if frame.shape[1] != 2:
            raise ClusteringError(
                f"{name}: table has columns {list(frame.columns)}; say which is the record id "
                "and which the cluster id (id_col=..., cluster_col=...)"
            )
        id_col, cluster_col = frame.columns[0], frame.columns[1]
    for role, col in (("record id", id_col), ("cluster id", cluster_col)):
        if col is None:
            raise ClusteringError(f"{name}: the {role} column was not given")
        if col not in frame.columns:
            raise ClusteringError(
                f"{name}: {role} column {col!r} not found; columns are {list(frame.columns)}"
            )
    series = pd.Series(
        frame[cluster_col].array, index=pd.Index(frame[id_col].array, name=id_col), name=cluster_col
    )
    return validate_membership(series, name=name)


def from_clusters(
    clusters: Mapping[Any, Iterable] | Iterable[Iterable], *, name: str = "clustering"
) -> pd.Series:
    """Membership vector from clusters: a dict ``{cluster_id: record ids}`` or a list of
    record-id collections (cluster ids are then 0, 1, 2, ... in list order)."""
    items = clusters.items() if isinstance(clusters, Mapping) else enumerate(clusters)
    ids: list = []
    labels: list = []
    for label, members in items:
        if not _is_collection(members):
            raise ClusteringError(
                f"{name}: cluster {label!r} should be a collection of record ids, got {type(members).__name__} {members!r}"
            )
        members = list(members)
        ids.extend(members)
        labels.extend([label] * len(members))
    if not ids:
        raise ClusteringError(f"{name} is empty: a clustering needs at least one record")
    return validate_membership(pd.Series(labels, index=pd.Index(ids)), name=name)


def from_pairs(
    pairs: pd.DataFrame | np.ndarray | Iterable[tuple[Any, Any]],
    records: Iterable | pd.Index | None = None,
    *,
    name: str = "clustering",
) -> pd.Series:
    """Membership vector from matched pairs: the connected components of the match graph.

    ``pairs`` is a two-column table or an (m, 2) array of record ids. ``records`` lists
    every record of the population so that unmatched records become singletons; a
    pair naming a record absent from ``records`` is an error. Cluster ids are
    integers 0..k-1. Linear time (scipy's sparse connected components), no Python
    loop over pairs.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    if not isinstance(pairs, pd.DataFrame):
        pairs = pd.DataFrame(pairs if isinstance(pairs, np.ndarray) else list(pairs))
    if len(pairs) and pairs.shape[1] != 2:
        raise ClusteringError(f"{name}: pairs must have two id columns, got {pairs.shape[1]}")
    if len(pairs):
        endpoints = pd.Index(pairs.iloc[:, 0]).append(pd.Index(pairs.iloc[:, 1]))
    else:
        endpoints = pd.Index([])
    check_exact_floats(endpoints, f"{name}: pair ids")
    if records is not None:
        check_exact_floats(pd.Index(records), f"{name}: record ids")
    if records is None:
        if len(endpoints) == 0:
            raise ClusteringError(f"{name} is empty: no pairs and no records given")
        ids, codes = _codes_from_endpoints(endpoints, name)
    else:
        ids = records if isinstance(records, pd.Index) else pd.Index(records)
        if len(ids) == 0:
            raise ClusteringError(f"{name} is empty: a clustering needs at least one record")
        codes = _codes_within_records(ids, endpoints, name)
    _check_one_kind(ids, f"{name}: record ids")
    m = len(codes) // 2
    n = len(ids)
    graph = coo_matrix((np.ones(m, dtype=np.int8), (codes[:m], codes[m:])), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    return pd.Series(labels.astype(np.int64), index=ids, name="cluster_id")


def _codes_from_endpoints(endpoints: pd.Index, name: str) -> tuple[pd.Index, np.ndarray]:
    """Record ids (the distinct endpoints) and the code of each endpoint."""
    values = _dense_ints(endpoints)
    if values is not None:
        lo = values.min()
        present = np.bincount(values - lo) > 0
        relabel = np.cumsum(present) - 1
        return pd.Index(np.flatnonzero(present) + lo), relabel[values - lo]
    codes, ids = endpoints.factorize()
    if (codes < 0).any():
        raise ClusteringError(f"{name}: pairs contain missing ids (NaN/None)")
    return ids, codes


def _codes_within_records(ids: pd.Index, endpoints: pd.Index, name: str) -> np.ndarray:
    """Position in ``ids`` of each endpoint; errors for repeated records, missing or
    unknown endpoint ids."""
    n = len(ids)
    if ids.hasnans or endpoints.hasnans:
        raise ClusteringError(f"{name}: pairs or records contain missing ids (NaN/None)")
    both = ids.append(endpoints)
    values = _dense_ints(both)
    if values is not None:
        lo = values.min()
        rec = values[:n] - lo
        seen = np.bincount(rec)
        if seen.max() > 1:
            raise ClusteringError(
                f"{name}: records list repeats ids: {examples(np.flatnonzero(seen > 1) + lo)}"
            )
        table = np.full(len(seen), -1, dtype=np.int64)
        table[rec] = np.arange(n)
        ends = values[n:] - lo
        codes = np.full(len(ends), -1, dtype=np.int64)
        inside = ends < len(table)
        codes[inside] = table[ends[inside]]
    else:
        all_codes, uniques = both.factorize()
        if all_codes[:n].max() != n - 1:  # first-appearance codes of unique records are 0..n-1
            raise ClusteringError(
                f"{name}: records list repeats ids: {examples(duplicated_ids(ids))}"
            )
        codes = np.where(all_codes[n:] < n, all_codes[n:], -1)
    unknown = codes < 0
    if unknown.any():
        bad = endpoints[unknown].unique()
        raise ClusteringError(
            f"{name}: {len(bad)} id(s) in the pairs are not among the records: {examples(bad)}"
        )
    return codes


def from_graph(graph: Any, *, name: str = "clustering") -> pd.Series:
    """Membership vector from a networkx graph: nodes are records, edges are matches,
    clusters are connected components (isolated nodes become singletons)."""
    import networkx as nx

    if not isinstance(graph, nx.Graph):
        raise ClusteringError(f"{name}: expected a networkx Graph, got {type(graph).__name__}")
    nodes = pd.Index(list(graph.nodes))
    edges = np.array(list(graph.edges()), dtype=object).reshape(-1, 2)
    left = pd.Index(list(edges[:, 0])).to_numpy() if len(edges) else nodes.to_numpy()[:0]
    right = pd.Index(list(edges[:, 1])).to_numpy() if len(edges) else nodes.to_numpy()[:0]
    return from_pairs(pd.DataFrame({"left": left, "right": right}), records=nodes, name=name)


def to_frame(
    clustering: pd.Series, id_col: str = "record_id", cluster_col: str = "cluster_id"
) -> pd.DataFrame:
    """Two-column table (record id, cluster id) of a membership vector."""
    return pd.DataFrame({id_col: clustering.index.to_numpy(), cluster_col: clustering.to_numpy()})


def to_clusters(clustering: pd.Series) -> dict[Any, list]:
    """Dict ``{cluster_id: [record ids]}``; records keep their order within each cluster."""
    codes, labels = pd.factorize(clustering.to_numpy())
    order = np.argsort(codes, kind="stable")
    bounds = np.cumsum(np.bincount(codes, minlength=len(labels)))[:-1]
    ids = clustering.index.to_numpy()[order]
    return {
        plain_id(label): part.tolist()
        for label, part in zip(labels, np.split(ids, bounds), strict=True)
    }


def to_pairs(
    clustering: pd.Series, id_cols: tuple[str, str] = ("id_left", "id_right")
) -> pd.DataFrame:
    """All within-cluster record pairs (each unordered pair once), vectorised.

    Output size is sum_c C(|c|, 2): fine for evaluation-sized data, quadratic in
    the largest cluster.
    """
    codes, _ = pd.factorize(clustering.to_numpy())
    order = np.argsort(codes, kind="stable")
    sizes = np.bincount(codes)
    starts = np.repeat(np.cumsum(sizes) - sizes, sizes)
    rank = np.arange(len(codes)) - starts
    partners = np.repeat(sizes, sizes) - 1 - rank  # later records in the same cluster
    total = int(partners.sum())
    left_pos = np.repeat(np.arange(len(codes)), partners)
    offset = np.arange(total) - np.repeat(np.cumsum(partners) - partners, partners)
    right_pos = left_pos + 1 + offset
    ids = clustering.index.to_numpy()[order]
    return pd.DataFrame({id_cols[0]: ids[left_pos], id_cols[1]: ids[right_pos]})


def to_graph(clustering: pd.Series):
    """networkx Graph with one node per record and an edge for every within-cluster pair."""
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(clustering.index.tolist())
    pairs = to_pairs(clustering)
    graph.add_edges_from(zip(pairs.iloc[:, 0].tolist(), pairs.iloc[:, 1].tolist(), strict=True))
    return graph


def cluster_sizes(clustering: pd.Series) -> pd.Series:
    """Number of records in each cluster, indexed by cluster id (largest first)."""
    return clustering.value_counts(sort=True).rename("size")
