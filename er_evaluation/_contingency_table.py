"""The sparse contingency table between two clusterings and the integer codes of its
cluster ids.

Every metric and every estimator in the toolkit is a function of the intersection counts
|c ∩ ĉ| and of the cluster sizes (Binette et al. 2023, §2). :class:`Contingency` holds
them, whichever engine counted them: the in-memory kernel
(:func:`er_evaluation._contingency.contingency`) and the DuckDB/Spark kernel
(:mod:`er_evaluation.engines._kernel`) both build it from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

import numpy as np
import pandas as pd
import pyarrow as pa

from er_evaluation.clustering import _dense_ints
from er_evaluation.errors import Offenders

__all__ = ["Contingency", "PredictionTotals", "ClusterCodes", "Scope", "comb2", "xlogx"]

Scope = Literal["shared", "prediction"]


def comb2(x: np.ndarray) -> np.ndarray:
    """Number of unordered pairs C(x, 2) = x(x-1)/2, as int64.

    Halving the even factor first keeps it exact up to x ~ 4.2e9 (x(x-1) itself
    overflows int64 above ~3e9).
    """
    x = np.asarray(x, dtype=np.int64)
    even = x % 2 == 0
    return np.where(even, x // 2 * (x - 1), (x - 1) // 2 * x)


def xlogx(x: np.ndarray) -> np.ndarray:
    """x ln x (0 for x = 0), for entropy sums."""
    x = np.asarray(x, dtype=float)
    return x * np.log(np.where(x > 0, x, 1.0))


@dataclass(frozen=True)
class PredictionTotals:
    """Totals of a whole prediction that an estimator needs beside the sampled cells: the
    number of predicted clusters K, the predicted links |P| = Σ_ĉ C(|ĉ|, 2),
    Σ_ĉ |ĉ| ln |ĉ| (the prediction's entropy sum) and Σ_ĉ C(|ĉ|, 2)² (for the Kish
    effective number of clusters carrying the links); ``size_histogram``: the distinct
    cluster sizes and how many clusters have each (None when an engine did not return
    them), from which the reliability diagnostic names the predicted clusters to review
    whole (:func:`er_evaluation.recommend.take_all_advice`)."""

    n_clusters: int
    links: int
    size_entropy: float
    links_squared: float
    size_histogram: tuple[np.ndarray, np.ndarray] | None = field(default=None, compare=False)


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


@dataclass(frozen=True)
class ClusterCodes:
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
    def of(cls, values) -> ClusterCodes:
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
