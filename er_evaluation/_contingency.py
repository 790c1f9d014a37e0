"""The in-memory contingency kernel: sparse intersection counts |c ∩ ĉ| between two
clusterings.

Every metric and every estimator in the toolkit is a function of these counts and of the
cluster sizes (Binette et al. 2023, §2). The computation is a plain aggregation (group by
the two cluster ids, count) done once, in vectorised O(N): factorise the cluster ids to
integer codes, combine the two codes into one int64 key, count the keys. Tables held by
DuckDB or Spark are counted by their engine (:mod:`er_evaluation.engines._kernel`); both
return the same :class:`~er_evaluation._contingency_table.Contingency`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from er_evaluation._contingency_table import (
    ClusterCodes,
    Contingency,
    PredictionTotals,
    Scope,
    comb2,
    xlogx,
)
from er_evaluation._coverage import OnMissing, check_on_missing, drop_missing
from er_evaluation._record_ids import check_unique, locate, range_positions, same_ids
from er_evaluation.clustering import _dense_ints, check_structure, duplicate_error
from er_evaluation.engines import Table, as_table
from er_evaluation.engines._kernel import engine_contingency
from er_evaluation.errors import CoverageError, examples, smallest

__all__ = ["contingency"]

#: records per chunk when counting a population's compact integer cluster ids
_CHUNK = 1 << 20


def contingency(
    prediction: pd.Series | Table,
    reference: pd.Series | Table,
    *,
    scope: Scope = "shared",
    on_missing: OnMissing = "error",
    validate: bool = True,
) -> Contingency:
    """Contingency table of ``prediction`` against ``reference`` in vectorised O(N).

    ``scope="shared"`` is for two clusterings of one population (exact metrics):
    both must cover the same records. ``scope="prediction"`` is for a reference
    that samples the prediction's population (estimators): every reference record
    must be in the prediction, and the prediction may have more.

    Records that break the requirement raise :class:`CoverageError` naming them
    (``on_missing="error"``, the default) or are dropped with a
    :class:`CoverageWarning` saying how many (``on_missing="restrict"``), by
    :func:`drop_missing`. Error messages name the five smallest offending ids.

    Either clustering may be a table held by DuckDB or Spark
    (:func:`er_evaluation.engines.table`, a DuckDB relation, an Arrow table, a Spark
    DataFrame, a Parquet path): the engine then runs the same validation and
    aggregation and returns the same small table.
    """
    check_on_missing(on_missing)
    if scope not in ("shared", "prediction"):
        raise ValueError(f"scope must be 'shared' or 'prediction', got {scope!r}")
    tables = as_table(prediction, "prediction"), as_table(reference, "reference")
    if tables != (None, None):
        return engine_contingency(
            tables[0] or prediction,
            tables[1] or reference,
            scope=scope,
            on_missing=on_missing,
            validate=validate,
        )
    if validate:
        check_structure(prediction, name="prediction")
        check_structure(reference, name="reference")
    _check_id_types(prediction.index, reference.index)

    pred_values = prediction.array
    ref_values = reference.array
    dropped_ref = dropped_pred = pd.Index([])
    if same_ids(prediction.index, reference.index):
        ref_pos = None  # same records in the same order: the common fast path
        if validate:
            check_unique(prediction.index, "prediction")
    else:
        ref_pos = None
        if scope == "prediction":  # population read once, sample-sized arrays only
            ref_pos = locate(prediction.index, reference.index, validate=validate)
        if ref_pos is None:
            ref_pos = _positions(prediction.index, reference.index, validate)
        absent = ref_pos < 0
        if absent.any():
            ids = reference.index[absent]
            if len(ids) == len(reference):
                raise CoverageError(
                    f"prediction and reference share no record ids (reference ids such as "
                    f"{examples(smallest(ids))}; prediction ids such as "
                    f"{examples(smallest(prediction.index))})"
                )
            dropped_ref = drop_missing(
                ids,
                side="reference",
                other="prediction",
                on_missing=on_missing,
                total=len(reference),
            )
            ref_values = ref_values[~absent]
            ref_pos = ref_pos[~absent]
        if scope == "shared" and len(ref_pos) < len(prediction):
            extra = np.ones(len(prediction), dtype=bool)
            extra[ref_pos] = False
            dropped_pred = drop_missing(
                prediction.index[extra],
                side="prediction",
                other="reference",
                on_missing=on_missing,
                total=len(prediction),
            )

    if scope == "prediction":
        # the predicted clusters the sample touches, with their sizes in the whole
        # prediction, and the prediction's totals: the table stays sample-sized
        pred, population = _touched_clusters(pred_values, ref_pos)
    else:
        pred = ClusterCodes.of(pred_values if ref_pos is None else pred_values[ref_pos])
        population = None
    ref = ClusterCodes.of(ref_values)

    # one int64 key per record names its cell; counting the keys is the whole table.
    # Sorted in place and counted by runs: faster than hashing them (pd.factorize) and
    # no array beyond the keys and their run starts
    key = pred.raw.astype(np.int64, copy=False) * ref.span  # a new array: sorted in place
    key += ref.raw
    key.sort()
    new_cell = np.ones(len(key), dtype=bool)
    np.not_equal(key[1:], key[:-1], out=new_cell[1:])
    starts = np.flatnonzero(new_cell)
    del new_cell
    count = np.diff(starts, append=len(key)).astype(np.int64)
    cell_keys = key[starts]
    return Contingency(
        pred=pred.compact(cell_keys // ref.span),
        ref=ref.compact(cell_keys % ref.span),
        count=count,
        pred_size=pred.sizes,
        ref_size=ref.sizes,
        pred_labels=pred.labels,
        ref_labels=ref.labels,
        scope=scope,
        n_records=len(prediction) if scope == "prediction" else len(pred.raw),
        n_shared=len(ref.raw),
        dropped_reference_ids=dropped_ref,
        dropped_prediction_ids=dropped_pred,
        population=population,
    )


def _touched_clusters(
    values, positions: np.ndarray | None
) -> tuple[ClusterCodes, PredictionTotals]:
    """The predicted clusters of the sampled records (``values[positions]``; all records
    if ``positions`` is None) as compact codes, with each cluster's size in the whole
    prediction ``values``, and the prediction's totals (K, |P|, Σ|ĉ|ln|ĉ|, Σ C(|ĉ|,2)²).

    One pass over the population's cluster ids, without a code per record: counted by
    direct addressing (compact integers, a chunk at a time) or by one hash count of the
    K clusters (``value_counts``; Arrow's for Arrow-backed strings); the sampled records'
    clusters are factorised and looked up among those K. Every other array is
    sample-sized.
    """
    ints = _dense_ints(values, slack=2)
    if ints is not None:
        lo = int(ints.min())
        if 0 <= lo <= len(ints):  # count the ids themselves: no shifted copy
            counts, lo = np.bincount(ints), 0
        else:
            counts = np.zeros(int(ints.max()) - lo + 1, dtype=np.int64)
            for start in range(0, len(ints), _CHUNK):
                counts += np.bincount(ints[start : start + _CHUNK] - lo, minlength=len(counts))
        sizes = counts  # with zeros for absent ids, which add nothing to the totals
        sampled = ints if positions is None else ints[positions]
        touched, codes = np.unique(sampled - lo if lo else sampled, return_inverse=True)
        dtype = np.asarray(values[:1]).dtype
        labels = pd.Index((touched + lo).astype(dtype, copy=False))
        touched_sizes = counts[touched].astype(np.int64)
    else:
        # count every cluster (a table of the K clusters, no per-record codes), then find
        # the sampled records' clusters among them
        sampled = values if positions is None else values.take(positions)
        codes, uniques = pd.factorize(sampled)
        arrow = getattr(values, "_pa_array", None)
        if isinstance(arrow, pa.ChunkedArray) and (
            pa.types.is_string(arrow.type) or pa.types.is_large_string(arrow.type)
        ):
            counted = pc.value_counts(arrow)
            sizes = counted.field("counts").to_numpy().astype(np.int64)
            where = pc.index_in(uniques._pa_array, value_set=counted.field("values"))
            touched_sizes = sizes[where.to_numpy()]
        else:
            counted = pd.Series(values, copy=False).value_counts(sort=False)
            counted = counted[counted.to_numpy() > 0]  # a categorical's unused categories
            sizes = counted.to_numpy(dtype=np.int64)
            touched_sizes = counted.reindex(pd.Index(uniques)).to_numpy(dtype=np.int64)
        labels = pd.Index(uniques)
        touched = labels
    codes = codes.reshape(-1).astype(np.int64, copy=False)
    return ClusterCodes(codes, len(touched), touched_sizes, labels), _prediction_totals(sizes)


def _prediction_totals(sizes: np.ndarray) -> PredictionTotals:
    """K, |P|, Σ|ĉ|ln|ĉ|, Σ C(|ĉ|,2)² and the size histogram of the cluster ``sizes``
    (zeros are no cluster), a chunk at a time so that the temporaries stay small."""
    links, links_squared, entropy = 0, 0.0, 0.0
    for start in range(0, len(sizes), _CHUNK):
        part = sizes[start : start + _CHUNK]
        pairs = comb2(part)
        links += int(pairs.sum())
        pairs = pairs.astype(float)
        links_squared += float(pairs @ pairs)
        entropy += float(xlogx(part).sum())
    if len(sizes) and sizes.max() <= 4 * len(sizes):
        histogram = np.bincount(sizes)
        present = np.flatnonzero(histogram[1:]) + 1
        size_histogram = (present, histogram[present])
    else:  # a few huge clusters: sort rather than address
        size_histogram = np.unique(sizes[sizes > 0], return_counts=True)
    return PredictionTotals(
        n_clusters=int(np.count_nonzero(sizes)),
        links=links,
        size_entropy=entropy,
        links_squared=links_squared,
        size_histogram=size_histogram,
    )


def _positions(pred_index: pd.Index, ref_index: pd.Index, validate: bool) -> np.ndarray:
    """Position in the prediction of each reference record (-1 if absent), checking on
    the way that both sides' ids are unique.

    One pass over both id sets: arithmetic for a RangeIndex prediction, direct addressing
    for compact integer ids, else one factorisation of the concatenated ids (``Index.get_indexer`` plus two uniqueness
    checks cost ~5x more on 10M string ids).
    """
    if isinstance(pred_index, pd.RangeIndex) and ref_index.dtype.kind == "i":
        if validate:
            check_unique(ref_index, "reference")
        return range_positions(pred_index, ref_index)
    # any other range: our own array of it (pandas would cache one on the caller's index)
    pred_index, ref_index = (
        pd.Index(np.arange(ids.start, ids.stop, ids.step))
        if isinstance(ids, pd.RangeIndex)
        else ids
        for ids in (pred_index, ref_index)
    )
    n_pred = len(pred_index)
    both = _dense_ints(pred_index.append(ref_index)) if pred_index.dtype.kind in "iu" else None
    if both is not None:
        lo = both.min()
        both = both - lo
        pred, ref = both[:n_pred], both[n_pred:]
        if validate:
            check_unique(pred_index, "prediction")
            check_unique(ref_index, "reference")
        table = np.full(int(both.max()) + 1, -1, dtype=np.int64)
        table[pred] = np.arange(n_pred)
        return table[ref]
    codes, uniques = pred_index.append(ref_index).factorize()
    pred, ref = codes[:n_pred], codes[n_pred:]
    if validate:
        # first-appearance codes of n unique prediction ids are exactly 0..n-1
        if pred.max() != n_pred - 1:
            raise duplicate_error(_repeated(pred, uniques), "prediction")
        if len(ref) and np.bincount(ref).max() > 1:
            raise duplicate_error(_repeated(ref, uniques), "reference")
    return np.where(ref < n_pred, ref, -1)


def _repeated(codes: np.ndarray, uniques: pd.Index) -> pd.Index:
    counts = np.bincount(codes, minlength=len(uniques))
    return uniques[counts > 1]


def _id_kind(index: pd.Index) -> str:
    if isinstance(index.dtype, pd.CategoricalDtype):
        index = index.categories
    kind = pd.api.types.infer_dtype(index, skipna=True)
    if kind in ("integer", "floating", "mixed-integer-float", "decimal"):
        return "numeric"
    return kind


def _check_id_types(pred_index: pd.Index, ref_index: pd.Index) -> None:
    """Integer ids in one file and string ids in the other would silently share no
    record; name the mismatch instead."""
    pk, rk = _id_kind(pred_index), _id_kind(ref_index)
    if pk != rk:
        raise CoverageError(
            f"record ids have different types: prediction ids are {pk} "
            f"(e.g. {examples(smallest(pred_index, 2).first)}), reference ids are {rk} "
            f"(e.g. {examples(smallest(ref_index, 2).first)}); convert both to one type"
        )
