"""The contingency kernel and the summary statistics on an engine (DuckDB or Spark).

Validation runs in the engine with the in-memory kernel's order and messages (structure of
the prediction, then of the reference, id types, duplicates, one-side records); the small
results (cells, cluster sizes, counts) come back as Arrow tables and become the same
:class:`~er_evaluation._contingency_table.Contingency` the metrics and estimators use.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from er_evaluation._contingency_table import ClusterCodes, Contingency, PredictionTotals, Scope
from er_evaluation._coverage import OnMissing, drop_missing
from er_evaluation.clustering import _dense_ints, check_structure
from er_evaluation.engines import _sql
from er_evaluation.engines._backends import View, backend_for
from er_evaluation.engines._table import Table
from er_evaluation.errors import ClusteringError, CoverageError, examples

__all__ = [
    "engine_contingency",
    "engine_statistics",
    "engine_size_distribution",
    "engine_records",
]

_UNSUPPORTED = ("list", "struct", "map", "array", "union")


@contextmanager
def _session(items: dict[str, Table | pd.Series]):
    """Register every input as a view of one engine; drop the views afterwards.
    In-memory clusterings (e.g. a reviewed sample) are validated by pandas first, so they
    get the in-memory messages, then sent to the engine (names may lack values)."""
    for role, item in items.items():
        if isinstance(item, pd.Series) and role != "names":
            check_structure(item, name=role)
    backend = backend_for(list(items.values()))
    try:
        yield backend, {role: backend.register(item, role) for role, item in items.items()}
    finally:
        backend.close()


def _check_side(backend, view: View, counts: _sql.SideCounts, name: str) -> None:
    """:func:`er_evaluation.clustering.check_structure`, on an engine."""
    if counts.n_records == 0:
        raise ClusteringError(f"{name} is empty: a clustering needs at least one record")
    if counts.missing_ids:
        raise ClusteringError(f"{name}: {counts.missing_ids} record id(s) are missing (NaN/None)")
    for what, kind in (("record ids", view.id_kind), ("cluster ids", view.cluster_kind)):
        if kind in _UNSUPPORTED:
            raise ClusteringError(f"{name}: {what} have unsupported type '{kind}'")
    if counts.missing_clusters:
        bad = _sql.first_ids(backend, _sql.missing_cluster_ids(view), counts.missing_clusters)
        raise ClusteringError(f"{name}: {len(bad)} record(s) have no cluster id: {examples(bad)}")


def _check_duplicates(backend, view: View, counts: _sql.SideCounts, name: str) -> None:
    if counts.duplicated_ids:
        bad = _sql.first_ids(backend, _sql.duplicated_ids(view), counts.duplicated_ids)
        raise ClusteringError(
            f"{name}: {len(bad)} record id(s) appear more than once: {examples(bad)}"
        )


def _check_id_types(backend, pred: View, ref: View) -> None:
    if pred.id_kind != ref.id_kind:
        first = {
            side: _sql.first_ids(backend, _sql.all_ids(view), 2, k=2).first
            for side, view in (("prediction", pred), ("reference", ref))
        }
        raise CoverageError(
            f"record ids have different types: prediction ids are {pred.id_kind} "
            f"(e.g. {examples(first['prediction'])}), reference ids are {ref.id_kind} "
            f"(e.g. {examples(first['reference'])}); convert both to one type"
        )


def _shown(item: Table | pd.Series, role: str) -> str:
    """How errors name an input: its file or table name when it has one (as the pandas
    path names the file it read), else its role."""
    if isinstance(item, Table) and (item.paths or item.table_name):
        return item.name
    return role


def _validate(
    backend, pred: View, ref: View, validate: bool, names: tuple[str, str]
) -> tuple[int, int]:
    """Every check of the in-memory kernel, in its order; returns the record counts (None
    when not validating: the cells then give them). ``names``: how errors name the two."""
    if not validate:
        _check_id_types(backend, pred, ref)
        return None, None
    pc_, rc_ = _sql.side_counts(backend, pred, ref)
    _check_side(backend, pred, pc_, names[0])
    _check_side(backend, ref, rc_, names[1])
    _check_id_types(backend, pred, ref)
    _check_duplicates(backend, pred, pc_, names[0])
    _check_duplicates(backend, ref, rc_, names[1])
    return pc_.n_records, rc_.n_records


def _column_sum(table: pa.Table, column: str, mask=None) -> int:
    values = table.column(column)
    if mask is not None:
        values = values.filter(mask)
    total = pc.sum(values).as_py()
    return 0 if total is None else int(total)


def _no_shared(backend, pred: View, ref: View, n_pred: int, n_ref: int) -> CoverageError:
    ref_ids = _sql.first_ids(backend, _sql.all_ids(ref), n_ref)
    pred_ids = _sql.first_ids(backend, _sql.all_ids(pred), n_pred)
    return CoverageError(
        f"prediction and reference share no record ids (reference ids such as "
        f"{examples(ref_ids)}; prediction ids such as {examples(pred_ids)})"
    )


def _codes(labels: pa.ChunkedArray) -> tuple[np.ndarray, pd.Index]:
    """Integer codes and the distinct values of cluster ids: compact integer ids by the
    in-memory kernel's direct addressing (0.08 s against 0.37 s for Arrow's hash encoding,
    for the two columns of the 2.4M cells of the 10M-record benchmark), others
    dictionary-encoded by Arrow (in order of appearance)."""
    array = labels.combine_chunks()
    if pa.types.is_integer(array.type) and array.null_count == 0:
        ints = array.to_numpy()
        if _dense_ints(ints, slack=2) is not None:
            codes = ClusterCodes.of(ints)
            return codes.compact(codes.raw).astype(np.int64, copy=False), codes.labels
    encoded = array.dictionary_encode()
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return codes, _labels(encoded.dictionary)


def _labels(labels: pa.ChunkedArray | pa.Array) -> pd.Index:
    """Ids fetched from an engine as a pandas Index (numbers as numpy, others via pandas)."""
    array = labels.combine_chunks() if isinstance(labels, pa.ChunkedArray) else labels
    if pa.types.is_integer(array.type) or pa.types.is_floating(array.type):
        return pd.Index(array.to_numpy(zero_copy_only=False))
    return pd.Index(array.to_pandas())


def _sizes(codes: np.ndarray, count: np.ndarray, n_clusters: int) -> np.ndarray:
    """Records per cluster code: the cells' counts summed by code."""
    return np.bincount(codes, weights=count, minlength=n_clusters).astype(np.int64)


def engine_contingency(
    prediction: Table | pd.Series,
    reference: Table | pd.Series,
    *,
    scope: Scope,
    on_missing: OnMissing,
    validate: bool,
) -> Contingency:
    """:func:`er_evaluation.contingency` computed by the clusterings' engine."""
    with _session({"prediction": prediction, "reference": reference}) as (backend, views):
        pred, ref = views["prediction"], views["reference"]
        names = _shown(prediction, "prediction"), _shown(reference, "reference")
        n_pred, n_ref = _validate(backend, pred, ref, validate, names)
        if scope == "shared":
            return _shared(backend, pred, ref, on_missing, n_pred, n_ref)
        return _sampled(backend, pred, ref, on_missing, n_ref)


def _shared(backend, pred: View, ref: View, on_missing, n_pred, n_ref) -> Contingency:
    cells = _sql.shared_cells(backend, pred, ref)
    inp, inr = cells.column("inp"), cells.column("inr")
    both = pc.and_(inp, inr)
    n_shared = _column_sum(cells, "n", both)
    ref_only = _column_sum(cells, "n", pc.and_(pc.invert(inp), inr))
    pred_only = _column_sum(cells, "n", pc.and_(inp, pc.invert(inr)))
    n_pred = n_shared + pred_only if n_pred is None else n_pred
    n_ref = n_shared + ref_only if n_ref is None else n_ref
    dropped_ref = dropped_pred = pd.Index([])
    if ref_only:
        if n_shared == 0:
            raise _no_shared(backend, pred, ref, n_pred, n_ref)
        ids = _sql.first_ids(backend, _sql.absent_ids(ref, pred), ref_only)
        dropped_ref = drop_missing(
            ids, side="reference", other="prediction", on_missing=on_missing, total=n_ref
        )
    if pred_only:
        ids = _sql.first_ids(backend, _sql.absent_ids(pred, ref), pred_only)
        dropped_pred = drop_missing(
            ids, side="prediction", other="reference", on_missing=on_missing, total=n_pred
        )
    if ref_only or pred_only:  # else every row is a cell: no copy of the table
        cells = cells.filter(both)
    count = cells.column("n").to_numpy().astype(np.int64, copy=False)
    pred_codes, pred_labels = _codes(cells.column("pc"))
    ref_codes, ref_labels = _codes(cells.column("rc"))
    return Contingency(
        pred=pred_codes,
        ref=ref_codes,
        count=count,
        pred_size=_sizes(pred_codes, count, len(pred_labels)),
        ref_size=_sizes(ref_codes, count, len(ref_labels)),
        pred_labels=pred_labels,
        ref_labels=ref_labels,
        scope="shared",
        n_records=n_shared,
        n_shared=n_shared,
        dropped_reference_ids=dropped_ref,
        dropped_prediction_ids=dropped_pred,
    )


def _sampled(backend, pred: View, ref: View, on_missing, n_ref) -> Contingency:
    cells = _sql.sample_cells(backend, pred, ref)
    inp = cells.column("inp")
    n_shared = _column_sum(cells, "n", inp)
    absent = _column_sum(cells, "n", pc.invert(inp))
    n_ref = n_shared + absent if n_ref is None else n_ref
    sizes = _sql.touched_sizes(backend, pred, ref)
    n_records = _column_sum(sizes, "n")
    dropped_ref = pd.Index([])
    if absent:
        if n_shared == 0:
            raise _no_shared(backend, pred, ref, n_records, n_ref)
        # the reference is a sample: its absent ids are few enough to keep (paired
        # comparisons drop the union of two predictions' absent records)
        ids = _labels(backend.arrow(_sql.absent_ids(ref, pred)).column("id"))
        dropped_ref = drop_missing(
            ids, side="reference", other="prediction", on_missing=on_missing, total=n_ref
        )
    cells = cells.filter(inp)
    count = cells.column("n").to_numpy().astype(np.int64)
    ref_codes, ref_labels = _codes(cells.column("rc"))
    touched = sizes.filter(pc.is_valid(sizes.column("pc")))  # one row per predicted cluster
    pred_labels = _labels(touched.column("pc"))
    cell_pred = pred_labels.get_indexer(_labels(cells.column("pc")))
    pred_size = touched.column("n").to_numpy().astype(np.int64)
    return Contingency(
        pred=cell_pred,
        ref=ref_codes,
        count=count,
        pred_size=pred_size,
        ref_size=_sizes(ref_codes, count, len(ref_labels)),
        pred_labels=pred_labels,
        ref_labels=ref_labels,
        scope="prediction",
        n_records=n_records,
        n_shared=n_shared,
        dropped_reference_ids=dropped_ref,
        population=PredictionTotals(
            n_clusters=_column_sum(sizes, "k"),
            links=_column_sum(sizes, "links2") // 2,
            size_entropy=float(pc.sum(sizes.column("entropy")).as_py() or 0.0),
            links_squared=float(pc.sum(sizes.column("links2_squared")).as_py() or 0.0) / 4,
        ),
    )


def engine_records(
    prediction: Table, reviewed: pd.Series, units: pd.Index | None, *, validate: bool
) -> pd.Series:
    """The records of ``prediction`` that a sample of predicted clusters needs (the
    reviewed records and every record of the sampled predicted clusters ``units``; the
    reviewed records alone when ``units`` is None), as a membership Series, after
    validating the whole prediction on its engine (``validate``)."""
    items = {"prediction": prediction, "reviewed": reviewed}
    if units is not None:
        items["units"] = pd.Series(units, index=units)
    with _session(items) as (backend, views):
        pred = views["prediction"]
        if validate:
            (counts,) = _sql.side_counts(backend, pred)
            _check_side(backend, pred, counts, _shown(prediction, "prediction"))
            _check_duplicates(backend, pred, counts, _shown(prediction, "prediction"))
        rows = _sql.records_of(backend, pred, views["reviewed"], views.get("units"))
    return pd.Series(
        _labels(rows.column("cluster")), index=_labels(rows.column("id")), name="prediction"
    ).rename(None)


def engine_size_distribution(clustering: Table, name: str = "clustering") -> pd.Series:
    """Number of clusters of each size, validated as the in-memory path does."""
    with _session({name: clustering}) as (backend, views):
        view = views[name]
        (counts,) = _sql.side_counts(backend, view)
        _check_side(backend, view, counts, name)
        _check_duplicates(backend, view, counts, name)
        table = _sql.size_distribution(backend, view)
    return pd.Series(
        table.column("k").to_numpy().astype(np.int64),
        index=pd.Index(table.column("size").to_numpy().astype(np.int64), name="size"),
        name="n_clusters",
    )


def engine_statistics(
    clustering: Table, names: Table | pd.Series | None, label: str = "clustering"
) -> dict:
    """The statistics of :func:`er_evaluation.summary.summary_statistics` on an engine:
    everything comes from the size distribution (one group-by on the cluster id, then on
    the size) and, with names, one join and three small group-bys."""
    items: dict = {label: clustering}
    if names is not None:
        items["names"] = names
    with _session(items) as (backend, views):
        view = views[label]
        counts, *named = _sql.side_counts(backend, view, *([views["names"]] if names else []))
        _check_side(backend, view, counts, label)
        _check_duplicates(backend, view, counts, label)
        table = _sql.size_distribution(backend, view)
        sizes = table.column("size").to_numpy().astype(np.int64)
        per_size = table.column("k").to_numpy().astype(np.int64)
        n, k = int(sizes @ per_size), int(per_size.sum())
        singletons = int(per_size[sizes == 1].sum())
        stats = {
            "n_records": n,
            "n_clusters": k,
            "average_cluster_size": n / k,
            "median_cluster_size": _median(sizes, per_size),
            "max_cluster_size": int(sizes.max()),
            "singleton_cluster_share": singletons / k,
            "singleton_record_share": singletons / n,
            "matching_rate": (n - singletons) / n,
        }
        if names is not None:
            stats.update(_names(backend, view, views["names"], named[0], label))
    return stats


def _names(backend, view: View, names: View, counts: _sql.SideCounts, label: str) -> dict:
    if counts.duplicated_ids:
        bad = _sql.first_ids(backend, _sql.duplicated_ids(names), counts.duplicated_ids)
        raise ClusteringError(
            f"names: {len(bad)} record id(s) appear more than once: {examples(bad)}"
        )
    total = _sql.count(backend, _sql.absent_ids(view, names))
    if total:
        absent = _sql.first_ids(backend, _sql.absent_ids(view, names), total)
        raise ClusteringError(
            f"names: {total} record(s) of {label} have no entry in names: {examples(absent)}"
        )
    row = _sql.name_statistics(backend, view, names)
    with_names = row["with_names"]
    return {
        "homonymy_rate": row["homonyms"] / with_names if with_names else np.nan,
        "name_variation_rate": row["varied"] / with_names if with_names else np.nan,
        "records_without_name": row["unnamed"],
    }


def _median(sizes: np.ndarray, per_size: np.ndarray) -> float:
    """``np.median`` of the sizes of all clusters, from their distribution (sorted sizes
    with their counts): the middle value, or the mean of the two middle values."""
    k = int(per_size.sum())
    upper = np.cumsum(per_size)
    lo = sizes[np.searchsorted(upper, (k - 1) // 2, side="right")]
    hi = sizes[np.searchsorted(upper, k // 2, side="right")]
    return (float(lo) + float(hi)) / 2
