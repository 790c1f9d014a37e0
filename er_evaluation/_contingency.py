"""The contingency kernel: sparse intersection counts |c ∩ ĉ| between two clusterings.

Every metric and every estimator in the toolkit is a function of these counts and
of the cluster sizes (design §2). The computation is a plain aggregation (group by
the two cluster ids, count) done once, in vectorised O(N): factorise the cluster
ids to integer codes, combine the two codes into one int64 key, count the keys.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from er_evaluation._record_ids import check_unique, locate, range_positions, same_ids
from er_evaluation.clustering import _dense_ints, check_structure, duplicate_error
from er_evaluation.engines import Table, as_table
from er_evaluation.errors import CoverageError, CoverageWarning, Offenders, examples, smallest

__all__ = [
    "Contingency",
    "PredictionTotals",
    "contingency",
    "comb2",
    "drop_missing",
    "check_on_missing",
    "xlogx",
]

OnMissing = Literal["error", "restrict"]
Scope = Literal["shared", "prediction"]
#: records per chunk when counting a population's compact integer cluster ids
_CHUNK = 1 << 20


def comb2(x: np.ndarray) -> np.ndarray:
    """Number of unordered pairs C(x, 2) = x(x-1)/2, as int64.

    Halving the even factor first keeps it exact up to x ~ 4.2e9 (x(x-1) itself
    overflows int64 above ~3e9).
    """
    x = np.asarray(x, dtype=np.int64)
    even = x % 2 == 0
    return np.where(even, x // 2 * (x - 1), (x - 1) // 2 * x)


@dataclass(frozen=True)
class PredictionTotals:
    """Totals of a whole prediction that an estimator needs beside the sampled cells: the
    number of predicted clusters K, the predicted links |P| = Σ_ĉ C(|ĉ|, 2),
    Σ_ĉ |ĉ| ln |ĉ| (the prediction's entropy sum) and Σ_ĉ C(|ĉ|, 2)² (for the Kish
    effective number of clusters carrying the links)."""

    n_clusters: int
    links: int
    size_entropy: float
    links_squared: float


@dataclass(frozen=True, eq=False)
class Contingency:
    """Sparse contingency table between a prediction Ĉ and a reference C.

    One row per non-empty cell (ĉ, c): ``pred[k]`` and ``ref[k]`` are integer codes
    of the predicted and reference cluster, ``count[k] = |ĉ ∩ c|`` counted on the
    records in scope. ``pred_size[i]`` is the size of predicted cluster code ``i``
    and ``ref_size[j]`` that of reference cluster code ``j``; ``pred_labels`` /
    ``ref_labels`` map codes back to cluster ids.

    ``scope == "shared"``: both clusterings restricted to their shared records
    (exact metrics); sizes are the table's margins. ``scope == "prediction"``: the
    reference is a sample inside the prediction's population (estimators); the
    predicted clusters are those the sample's records fall in, ``pred_size`` counts
    every record of each in the full prediction, and ``population`` holds the totals of
    the whole prediction (K, |P|; N is ``n_records``), so the table stays the size of
    the sample. ``dropped_reference_ids`` / ``dropped_prediction_ids``: records left
    out under ``on_missing="restrict"`` because the other side lacks them (see
    :func:`drop_missing`; an engine's shared-scope table keeps only their number and
    five smallest ids).
    """

    pred: np.ndarray
    ref: np.ndarray
    count: np.ndarray
    pred_size: np.ndarray
    ref_size: np.ndarray
    pred_labels: pd.Index
    ref_labels: pd.Index
    scope: Scope
    n_records: int
    n_shared: int
    dropped_reference_ids: pd.Index | Offenders = field(default_factory=lambda: pd.Index([]))
    dropped_prediction_ids: pd.Index | Offenders = field(default_factory=lambda: pd.Index([]))
    population: PredictionTotals | None = None

    @property
    def dropped_reference(self) -> int:
        """Number of reference records dropped (absent from the prediction)."""
        return len(self.dropped_reference_ids)

    @property
    def dropped_prediction(self) -> int:
        """Number of prediction records dropped (absent from the reference; shared scope)."""
        return len(self.dropped_prediction_ids)

    @property
    def n_pred_clusters(self) -> int:
        """Number of predicted clusters (of the whole prediction for scope "prediction")."""
        return self.population.n_clusters if self.population else len(self.pred_size)

    @property
    def n_ref_clusters(self) -> int:
        return len(self.ref_size)

    @cached_property
    def true_positive_links(self) -> int:
        """|T ∩ P| = Σ_cells C(n_cĉ, 2): pairs linked by both clusterings."""
        return int(comb2(self.count).sum())

    @cached_property
    def predicted_links(self) -> int:
        """|P| = Σ_ĉ C(|ĉ|, 2), over the predicted clusters in scope (the whole prediction
        for scope "prediction")."""
        if self.population:
            return self.population.links
        return int(comb2(self.pred_size).sum())

    @cached_property
    def true_links(self) -> int:
        """|T| = Σ_c C(|c|, 2)."""
        return int(comb2(self.ref_size).sum())

    @cached_property
    def cell_pred_size(self) -> np.ndarray:
        """|ĉ| for the predicted cluster of each cell."""
        return self.pred_size[self.pred]

    @cached_property
    def cell_ref_size(self) -> np.ndarray:
        """|c| for the reference cluster of each cell."""
        return self.ref_size[self.ref]

    def per_reference(self, values: np.ndarray) -> np.ndarray:
        """Sum a per-cell quantity over the cells of each reference cluster (grouped sum)."""
        return np.bincount(self.ref, weights=values, minlength=self.n_ref_clusters)

    def per_prediction(self, values: np.ndarray) -> np.ndarray:
        """Sum a per-cell quantity over the cells of each predicted cluster (grouped sum)."""
        return np.bincount(self.pred, weights=values, minlength=len(self.pred_size))

    def transpose(self) -> Contingency:
        """Swap the roles of prediction and reference (precision/recall duality)."""
        if self.scope != "shared":
            raise ValueError("only a 'shared'-scope contingency can be transposed")
        return Contingency(
            pred=self.ref,
            ref=self.pred,
            count=self.count,
            pred_size=self.ref_size,
            ref_size=self.pred_size,
            pred_labels=self.ref_labels,
            ref_labels=self.pred_labels,
            scope="shared",
            n_records=self.n_records,
            n_shared=self.n_shared,
            dropped_reference_ids=self.dropped_prediction_ids,
            dropped_prediction_ids=self.dropped_reference_ids,
        )

    def __repr__(self) -> str:
        return (
            f"Contingency(scope={self.scope!r}, records={self.n_records}, shared={self.n_shared}, "
            f"predicted clusters={self.n_pred_clusters}, reference clusters={self.n_ref_clusters}, "
            f"cells={len(self.count)})"
        )


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
    aggregation (design §9) and returns the same small table.
    """
    check_on_missing(on_missing)
    if scope not in ("shared", "prediction"):
        raise ValueError(f"scope must be 'shared' or 'prediction', got {scope!r}")
    tables = as_table(prediction, "prediction"), as_table(reference, "reference")
    if tables != (None, None):
        from er_evaluation.engines._kernel import engine_contingency

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
        pred = _Codes.of(pred_values if ref_pos is None else pred_values[ref_pos])
        population = None
    ref = _Codes.of(ref_values)

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


def xlogx(x: np.ndarray) -> np.ndarray:
    """x ln x (0 for x = 0), for entropy sums."""
    x = np.asarray(x, dtype=float)
    return x * np.log(np.where(x > 0, x, 1.0))


@dataclass(frozen=True)
class _Codes:
    """Cluster ids of some records as integer codes.

    ``raw[i]`` lies in ``[0, span)``; ``compact`` maps raw codes to the cluster codes
    0..k-1 that index ``sizes`` and ``labels``. For compact integer cluster ids, raw
    codes are the ids minus their minimum (direct addressing: one bincount gives the
    sizes, and only the table's cells, not every record, are relabelled); otherwise
    they come from ``pd.factorize`` and are already compact.
    """

    raw: np.ndarray
    span: int
    sizes: np.ndarray
    labels: pd.Index
    relabel: np.ndarray | None = None

    @classmethod
    def of(cls, values) -> _Codes:
        ints = _dense_ints(values, slack=2)
        encoded = _dictionary_encoded(values) if ints is None else None
        if encoded is not None:  # Arrow strings: Arrow's own codes, 4 bytes each
            codes = encoded.indices.to_numpy()
            sizes = np.bincount(codes, minlength=len(encoded.dictionary)).astype(np.int64)
            labels = pd.array(encoded.dictionary, dtype=values.dtype)
            return cls(codes, len(labels), sizes, pd.Index(labels))
        if ints is None:
            codes, labels = pd.factorize(values)
            sizes = np.bincount(codes, minlength=len(labels)).astype(np.int64)
            return cls(codes, len(labels), sizes, pd.Index(labels))
        lo = ints.min()
        raw = ints - lo if lo else ints  # ids counted from 0 need no shifted copy
        counts = np.bincount(raw)
        present = counts > 0
        labels = (np.flatnonzero(present) + lo).astype(np.asarray(values[:1]).dtype, copy=False)
        relabel = np.cumsum(present) - 1
        return cls(raw, len(counts), counts[present].astype(np.int64), pd.Index(labels), relabel)

    def compact(self, raw: np.ndarray) -> np.ndarray:
        return raw if self.relabel is None else self.relabel[raw]


def _dictionary_encoded(values) -> pa.DictionaryArray | None:
    """Arrow-backed string cluster ids dictionary-encoded by Arrow (what ``pd.factorize``
    does for them, without widening the codes to int64); None for other values, or
    missing ones (left to ``pd.factorize``)."""
    data = getattr(values, "_pa_array", None)
    if not isinstance(data, pa.ChunkedArray) or data.null_count:
        return None
    if not (pa.types.is_string(data.type) or pa.types.is_large_string(data.type)):
        return None
    return data.dictionary_encode().combine_chunks()


def _touched_clusters(values, positions: np.ndarray | None) -> tuple[_Codes, PredictionTotals]:
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
    return _Codes(codes, len(touched), touched_sizes, labels), _prediction_totals(sizes)


def _prediction_totals(sizes: np.ndarray) -> PredictionTotals:
    """K, |P|, Σ|ĉ|ln|ĉ| and Σ C(|ĉ|,2)² of the cluster ``sizes`` (zeros are no cluster),
    a chunk at a time so that the temporaries stay small."""
    links, links_squared, entropy = 0, 0.0, 0.0
    for start in range(0, len(sizes), _CHUNK):
        part = sizes[start : start + _CHUNK]
        pairs = comb2(part)
        links += int(pairs.sum())
        pairs = pairs.astype(float)
        links_squared += float(pairs @ pairs)
        entropy += float(xlogx(part).sum())
    return PredictionTotals(
        n_clusters=int(np.count_nonzero(sizes)),
        links=links,
        size_entropy=entropy,
        links_squared=links_squared,
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


def check_on_missing(on_missing: str) -> None:
    """Reject an ``on_missing`` policy other than "error" and "restrict"."""
    if on_missing not in ("error", "restrict"):
        raise ValueError(f"on_missing must be 'error' or 'restrict', got {on_missing!r}")


def drop_missing(
    ids: pd.Index, *, side: str, other: str, on_missing: OnMissing, total: int
) -> pd.Index:
    """The one missing-records policy of the toolkit (metrics, estimators, paired comparisons).

    ``ids`` are the ``side`` records (of ``total``) absent from ``other``. With
    ``on_missing="error"`` a non-empty ``ids`` raises :class:`CoverageError` naming them;
    with ``"restrict"`` they are dropped and a :class:`CoverageWarning` says how many,
    always. Returns the dropped ids (empty when nothing is missing), so every result can
    report the count.
    """
    check_on_missing(on_missing)
    if len(ids) == 0:
        return ids
    if on_missing == "error":
        raise CoverageError(
            f"{len(ids)} of {total} {side} record(s) are absent from the {other}: "
            f"{examples(smallest(ids))}. "
            f"Pass on_missing='restrict' to evaluate on the shared records only."
        )
    warnings.warn(
        f"dropped {len(ids)} of {total} {side} record(s) absent from the {other} "
        f"(e.g. {examples(smallest(ids), 3)}); evaluating on shared records only",
        CoverageWarning,
        stacklevel=3,
    )
    return ids


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
