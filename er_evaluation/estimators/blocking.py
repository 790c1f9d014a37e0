"""Recall lost to blocking: ``blocking_recall`` and ``matching_recall`` with intervals.

A large-scale disambiguation compares only records that share a block (PatentsView: a
name-based key); multi-pass blocking compares the records that share a key in at least
one pass. With T the true links, B the candidate pairs (records sharing at least one
key) and P the predicted links:

    blocking_recall = |T ∩ B| / |T|         (true links the blocking lets through)
    matching_recall = |T ∩ B ∩ P| / |T ∩ B|  (of those, the links the prediction found)

so that ``pairwise_recall = blocking_recall × matching_recall + |T ∩ P \\ B| / |T|``; the
last term (true links found although their records share no key, through the transitive
closure of the predicted clusters) is zero whenever every predicted cluster lies inside
one block, as when the matcher clusters each block on its own.

Because a reviewed true cluster is complete, both are ratios of per-true-cluster totals,
like recall (Binette et al. 2023, §2.3, Lemma 2 and Remark 1): with ``covered(c)`` the
pairs of c whose records share a key and ``found(c)`` those of them in one predicted
cluster,

    blocking_recall = Σ_c covered(c) / Σ_c C(|c|, 2),   matching_recall = Σ_c found(c) / Σ_c covered(c)

estimated by the bias-corrected ratio of design-weighted means (eq. 8-9, appendix A.2,
with ``A_s``, ``B_s`` these totals over the selection probability) for every design the
recall estimators support (records, clusters, blocks, stratified and wave designs), with
the package's intervals and diagnostics (:func:`~er_evaluation.estimators.estimate`).
A census reproduces :func:`blocking_metrics`, the exact values.

The per-cluster totals are grouped counts (no loop over records or pairs): with one key,
``covered(c) = Σ_k C(|c ∩ k|, 2)`` over the keys k; with several passes, by
inclusion-exclusion over the sets of passes on which a pair agrees (one grouped count per
non-empty set of passes), or, when that is costlier, by enumerating the pairs inside each
true cluster in chunks (:func:`blocked_link_counts`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import combinations
from typing import Literal

import numpy as np
import pandas as pd

from er_evaluation._contingency_table import comb2
from er_evaluation._parameters import check_choice, check_seed
from er_evaluation._record_ids import positions
from er_evaluation.clustering import validate_membership
from er_evaluation.engines import as_table
from er_evaluation.engines._kernel import engine_records
from er_evaluation.errors import CoverageError, examples
from er_evaluation.estimators._codes import combine_codes
from er_evaluation.estimators._metric_fit import fit, to_estimate
from er_evaluation.estimators.api import _check_population_options, _units
from er_evaluation.estimators.intervals import N_BOOT, check_interval_options
from er_evaluation.estimators.pairwise import default_estimator
from er_evaluation.estimators.ratio import Column, Ratio
from er_evaluation.estimators.results import Estimate, estimates_frame
from er_evaluation.estimators.units import UnitTable
from er_evaluation.sampling import Sample
from er_evaluation.vocabulary import BLOCKING, check_metric_names

__all__ = [
    "BLOCKING",
    "blocked_link_counts",
    "blocking_metrics",
    "blocking_table",
    "estimate_blocking",
]

MissingKeys = Literal["error", "unblocked"]
MISSING_KEYS = ("error", "unblocked")

#: record pairs per chunk when the pairs inside true clusters are enumerated
_PAIR_CHUNK = 1 << 22

_RATIOS = {
    "blocking_recall": Ratio(Column("covered"), Column("pairs")),
    "matching_recall": Ratio(Column("found"), Column("covered")),
}


def _key_frame(keys: pd.Series | pd.DataFrame) -> pd.DataFrame:
    """The block keys as a frame, one column per blocking pass, indexed by record id."""
    if isinstance(keys, pd.Series):
        keys = keys.to_frame(name=keys.name if keys.name is not None else "block")
    if not isinstance(keys, pd.DataFrame):
        raise TypeError(
            "block keys must be a pandas Series (record id -> key) or a DataFrame (one "
            f"column per blocking pass), got {type(keys).__name__}"
        )
    if keys.shape[1] == 0:
        raise ValueError("the block keys have no column: give at least one blocking pass")
    if keys.index.has_duplicates:
        dup = keys.index[keys.index.duplicated()].unique()
        raise ValueError(
            f"block keys: {len(dup)} record id(s) appear more than once: {examples(dup)}"
        )
    return keys


def _key_codes(keys: pd.DataFrame, ids: pd.Index, missing_keys: MissingKeys) -> np.ndarray:
    """``(len(ids), passes)`` integer codes of the records' keys (equal codes iff equal
    keys in that pass; -1 for a missing key). A record without a row in ``keys`` is a
    :class:`CoverageError`; a missing key is an error unless ``missing_keys="unblocked"``
    (the record then shares no block in that pass)."""
    pos = positions(keys.index, ids)
    if (pos < 0).any():
        absent = ids[pos < 0]
        raise CoverageError(
            f"{len(absent)} reviewed record(s) have no block keys: {examples(absent)}; the "
            "block keys must cover every reviewed record"
        )
    codes = np.empty((len(ids), keys.shape[1]), dtype=np.int64)
    for j, column in enumerate(keys.columns):  # a loop over the few blocking passes
        codes[:, j] = pd.factorize(keys[column].to_numpy()[pos])[0]
        missing = codes[:, j] < 0
        if missing_keys == "error" and missing.any():
            raise ValueError(
                f"{int(missing.sum())} record(s) have no {column!r} key: "
                f"{examples(ids[missing])}; give them a key, or pass "
                "missing_keys='unblocked' if the blocking compares them with no record in "
                "that pass"
            )
    return codes


def _agreeing_pairs(cluster: np.ndarray, columns: list[np.ndarray], n_clusters: int) -> np.ndarray:
    """Per cluster, the pairs of its records equal (and not missing) on every column."""
    valid = np.ones(len(cluster), dtype=bool)
    for col in columns:
        valid &= col >= 0
    key = cluster[valid]
    for col in columns:
        key = combine_codes(key, col[valid])
    counts = np.bincount(key)
    cell_cluster = np.zeros(len(counts), dtype=np.int64)
    cell_cluster[key] = cluster[valid]
    return np.bincount(cell_cluster, weights=comb2(counts), minlength=n_clusters)


def _inclusion_exclusion(cluster, predicted, keys, n_clusters):
    """|∪_k S_k| = Σ_{J ≠ ∅} (-1)^{|J|+1} |∩_{k∈J} S_k|, S_k the pairs sharing pass k's key."""
    covered = np.zeros(n_clusters)
    found = np.zeros(n_clusters)
    passes = range(keys.shape[1])
    for r in range(1, keys.shape[1] + 1):
        for subset in combinations(passes, r):  # 2^K - 1 grouped counts, K the passes
            cols = [keys[:, k] for k in subset]
            sign = 1.0 if r % 2 else -1.0
            covered += sign * _agreeing_pairs(cluster, cols, n_clusters)
            if predicted is not None:
                found += sign * _agreeing_pairs(cluster, [predicted, *cols], n_clusters)
    return covered, found


def _enumerated(cluster, predicted, keys, n_clusters):
    """The pairs inside each cluster built in chunks of :data:`_PAIR_CHUNK`, each tested
    on every pass (vectorised within a chunk)."""
    order = np.argsort(cluster, kind="stable")
    c = cluster[order]
    size = np.bincount(cluster, minlength=n_clusters)
    start = np.cumsum(size) - size
    later = size[c] - (np.arange(len(c)) - start[c]) - 1  # partners after each record
    ends = np.cumsum(later)
    covered = np.zeros(n_clusters)
    found = np.zeros(n_clusters)
    lo = 0
    while lo < len(c):
        base = ends[lo - 1] if lo else 0
        hi = max(int(np.searchsorted(ends, base + _PAIR_CHUNK, side="right")), lo + 1)
        k = later[lo:hi]
        left = np.repeat(np.arange(lo, hi), k)
        right = left + np.arange(len(left)) - np.repeat(np.cumsum(k) - k, k) + 1
        li, ri = order[left], order[right]
        agree = np.zeros(len(left), dtype=bool)
        for j in range(keys.shape[1]):
            a = keys[li, j]
            agree |= (a == keys[ri, j]) & (a >= 0)
        covered += np.bincount(c[left], weights=agree, minlength=n_clusters)
        if predicted is not None:
            same = agree & (predicted[li] == predicted[ri])
            found += np.bincount(c[left], weights=same, minlength=n_clusters)
        lo = hi
    return covered, found


def blocked_link_counts(
    cluster: np.ndarray,
    keys: np.ndarray,
    predicted: np.ndarray | None = None,
    *,
    method: Literal["auto", "inclusion_exclusion", "enumerate"] = "auto",
) -> tuple[np.ndarray, np.ndarray | None]:
    """Per true cluster, ``covered(c)``: its pairs of records sharing a key in at least one
    pass, and ``found(c)``: those of them in one predicted cluster.

    ``cluster``: the true cluster code (0..C-1) of each record; ``keys``: ``(records,
    passes)`` key codes (equal codes iff equal keys; -1 for a missing key, which matches
    nothing); ``predicted``: the predicted cluster code of each record (None: ``found`` is
    not computed). ``method``: "inclusion_exclusion" (``2^passes - 1`` grouped counts of
    the records, no pair built), "enumerate" (every pair inside a true cluster, in chunks)
    or "auto", the cheaper of the two by the number of values each touches (measured in
    benchmarks/README.md, "Blocking, subgroups and the truth's statistics").
    """
    cluster = np.asarray(cluster, dtype=np.int64)
    keys = np.asarray(keys, dtype=np.int64)
    if keys.ndim == 1:
        keys = keys[:, None]
    if keys.shape[0] != len(cluster) or (predicted is not None and len(predicted) != len(cluster)):
        raise ValueError("cluster, keys and predicted need one entry per record")
    n_clusters = int(cluster.max(initial=-1)) + 1
    passes = keys.shape[1]
    if method == "auto":
        pairs = float(comb2(np.bincount(cluster, minlength=n_clusters)).sum())
        grouped = (2.0**passes - 1) * len(cluster) * (2 if predicted is not None else 1)
        method = "enumerate" if pairs * passes < grouped else "inclusion_exclusion"
    if method == "inclusion_exclusion":
        covered, found = _inclusion_exclusion(cluster, predicted, keys, n_clusters)
    elif method == "enumerate":
        covered, found = _enumerated(cluster, predicted, keys, n_clusters)
    else:
        raise ValueError(
            f"method must be 'auto', 'inclusion_exclusion' or 'enumerate', got {method!r}"
        )
    # inclusion-exclusion sums integers exactly in float64 up to 2^53
    covered = np.round(covered)
    return covered, (None if predicted is None else np.round(found))


def blocking_metrics(
    prediction: pd.Series,
    truth: pd.Series,
    keys: pd.Series | pd.DataFrame,
    *,
    missing_keys: MissingKeys = "error",
) -> pd.Series:
    """Exact ``blocking_recall`` and ``matching_recall`` (module docstring) of
    ``prediction`` against the full ``truth`` of the same records, with block ``keys``
    (a Series record id -> key, or a DataFrame with one key column per blocking pass; a
    pair is a candidate when its records share a key in at least one pass). NaN (with no
    warning) where the denominator is zero. Returns a Series indexed by metric name."""
    truth = validate_membership(truth, name="truth")
    prediction = validate_membership(prediction, name="prediction")
    pos = prediction.index.get_indexer(truth.index)
    only_truth = truth.index[pos < 0]
    if len(only_truth) or len(prediction) != len(truth):
        only_pred = prediction.index.difference(truth.index)
        raise CoverageError(
            f"prediction and truth must hold the same records; {len(only_truth)} only in the "
            f"truth ({examples(only_truth)}), {len(only_pred)} only in the prediction "
            f"({examples(only_pred)})"
        )
    missing_keys = check_choice(missing_keys, "missing_keys", MISSING_KEYS)
    codes = _key_codes(_key_frame(keys), truth.index, missing_keys)
    cluster = pd.factorize(truth.to_numpy())[0]
    predicted = pd.factorize(prediction.to_numpy()[pos])[0]
    covered, found = blocked_link_counts(cluster, codes, predicted)
    links = float(comb2(np.bincount(cluster)).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        values = [covered.sum() / links, found.sum() / covered.sum()]
    return pd.Series(values, index=list(BLOCKING), dtype=float)


def _reviewed_codes(sample: Sample, keys, missing_keys: MissingKeys) -> np.ndarray:
    """Key codes of every reviewed record of ``sample`` (computed once for all predictions)."""
    if sample.sample_of == "predicted":
        raise ValueError(
            "blocking_recall and matching_recall are ratios of totals over complete TRUE "
            "clusters; a sample of predicted clusters does not reveal them: review whole "
            "true clusters (a sample of records, clusters or blocks)"
        )
    return _key_codes(_key_frame(keys), sample.reference.index, missing_keys)


def _blocked_units(
    prediction, sample: Sample, codes: np.ndarray, *, on_missing: str, validate: bool
) -> tuple[UnitTable, dict[str, np.ndarray]]:
    """The prediction's unit table and the per-unit ``covered`` and ``found`` totals
    (sums over the true clusters of each sampled unit), on the reviewed records present in
    the prediction (those the unit table keeps); ``codes``: :func:`_reviewed_codes`."""
    ut = _units(prediction, sample, on_missing, validate)
    s = ut.sample
    reviewed = s.reference
    table = as_table(prediction, "prediction")
    if table is not None:  # the reviewed records' predicted clusters, from the engine
        prediction = engine_records(table, reviewed, None, validate=False)
    pos = positions(prediction.index, reviewed.index)
    keep = pos >= 0
    if s is not sample:  # restricted to the prediction's records: a subset of the sample's
        codes = codes[positions(sample.reference.index, reviewed.index)]
    codes = codes[keep]
    cluster, _ = pd.factorize(reviewed.to_numpy()[keep])
    predicted, _ = pd.factorize(prediction.to_numpy()[pos[keep]])
    covered, found = blocked_link_counts(cluster, codes, predicted)
    unit_of = s.reference if s.blocks is None else s.blocks.reindex(reviewed.index)
    unit = s.units.get_indexer(unit_of.to_numpy()[keep])
    unit_of_cluster = np.zeros(len(covered), dtype=np.int64)
    unit_of_cluster[cluster] = unit
    n_units = len(s.units)
    totals = {
        "covered": np.bincount(unit_of_cluster, weights=covered, minlength=n_units),
        "found": np.bincount(unit_of_cluster, weights=found, minlength=n_units),
    }
    return ut, totals


def _interval_options(level, ci_method, n_boot, seed) -> dict:
    """The interval options, checked once at the public door."""
    level, ci_method, n_boot = check_interval_options(level, ci_method, n_boot)
    return {"level": level, "ci_method": ci_method, "n_boot": n_boot, "seed": check_seed(seed)}


def _estimate_blocked(
    ut: UnitTable, totals: dict, metric: str, *, name: str | None, **options
) -> Estimate:
    phi = _RATIOS[metric]
    columns = {"pairs": ut.weighted("pairs")}
    columns.update({k: v / ut.probability for k, v in totals.items()})
    estimator = default_estimator(ut, "pairwise_recall")
    f = fit(ut, phi, {c: columns[c] for c in phi.columns()}, naive=False)
    return to_estimate(f, ut, metric=metric, estimator=estimator, naive=False, name=name, **options)


def estimate_blocking(
    prediction: pd.Series,
    sample: Sample,
    keys: pd.Series | pd.DataFrame,
    metric: str = "blocking_recall",
    *,
    missing_keys: MissingKeys = "error",
    level: float = 0.95,
    ci_method: str | None = None,
    on_missing: str = "error",
    name: str | None = None,
    n_boot: int = N_BOOT,
    seed=0,
    validate: bool = True,
) -> Estimate:
    """Design-based estimate of ``metric`` ("blocking_recall" or "matching_recall", see the
    module docstring) from a reviewed ``sample`` of true clusters, with standard error,
    interval and diagnostics.

    ``keys``: the block key of every reviewed record (more records are fine), a Series
    record id -> key, or a DataFrame with one key column per blocking pass (the candidate
    pairs are the union of the passes' pairs). A reviewed record without keys is a
    :class:`CoverageError`; a missing key is an error unless ``missing_keys="unblocked"``
    (the record is then compared with nobody in that pass). ``prediction`` is the full
    prediction (for ``matching_recall``; ``blocking_recall`` depends only on the truth and
    the keys, but is computed on the reviewed records present in the prediction, as
    recall is). ``sample``, ``level``, ``ci_method``, ``on_missing``, ``n_boot``, ``seed``,
    ``validate``: as for :func:`~er_evaluation.estimators.estimate`; the estimator is the
    recall estimator of the design ("record", "cluster" or "block").
    """
    (metric,) = check_metric_names(metric, BLOCKING, what="blocking metric")
    options = _interval_options(level, ci_method, n_boot, seed)
    on_missing, validate = _check_population_options(on_missing, validate)
    codes = _reviewed_codes(sample, keys, check_choice(missing_keys, "missing_keys", MISSING_KEYS))
    ut, totals = _blocked_units(prediction, sample, codes, on_missing=on_missing, validate=validate)
    return _estimate_blocked(ut, totals, metric, name=name, **options)


def blocking_table(
    predictions: Mapping[str, pd.Series],
    sample: Sample,
    keys: pd.Series | pd.DataFrame,
    metrics: Iterable[str] = BLOCKING,
    *,
    missing_keys: MissingKeys = "error",
    level: float = 0.95,
    ci_method: str | None = None,
    on_missing: str = "error",
    n_boot: int = N_BOOT,
    seed=0,
    validate: bool = True,
) -> pd.DataFrame:
    """:func:`estimate_blocking` for every prediction and metric, as the tidy table of
    :func:`~er_evaluation.estimators.estimate_table` (one row per prediction and metric;
    the per-cluster totals are counted once per prediction)."""
    metrics = check_metric_names(metrics, BLOCKING, what="blocking metric")
    options = _interval_options(level, ci_method, n_boot, seed)
    on_missing, validate = _check_population_options(on_missing, validate)
    codes = _reviewed_codes(sample, keys, check_choice(missing_keys, "missing_keys", MISSING_KEYS))
    rows = []
    for label, prediction in predictions.items():
        ut, totals = _blocked_units(
            prediction, sample, codes, on_missing=on_missing, validate=validate
        )
        for metric in metrics:
            rows.append(_estimate_blocked(ut, totals, metric, name=str(label), **options))
    return estimates_frame(rows)
