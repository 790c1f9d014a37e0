"""Pair-counting agreement indices: Rand, adjusted Rand, Fowlkes-Mallows.

All three are functions of the pair counts TP, FP, FN, TN over the C(N, 2)
unordered record pairs (see :func:`~er_evaluation.metrics.pairwise.pairwise_counts`),
computed with exact Python integers. Edge-case conventions are scikit-learn's
(``rand_score``, ``adjusted_rand_score``, ``fowlkes_mallows_score``), except that
empty input gives NaN with :class:`UndefinedMetricWarning` instead of 1.0.
"""

from __future__ import annotations

import math

import pandas as pd

from er_evaluation._contingency_table import Contingency
from er_evaluation.metrics._validation import OnMissing, on_records
from er_evaluation.metrics.pairwise import pairwise_counts

__all__ = ["rand_index", "adjusted_rand_index", "fowlkes_mallows"]


def rand_index(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    on_missing: OnMissing = "error",
) -> float:
    """Rand index (TP + TN) / C(N, 2): the share of record pairs both clusterings agree on.

    scikit-learn's convention: 1.0 for a single record (no pairs to disagree on).
    NaN with :class:`UndefinedMetricWarning` on empty input.
    """
    return on_records(prediction, reference, on_missing, "Rand index", _rand)


def _rand(ct: Contingency) -> float:
    k = pairwise_counts(ct)
    agree = k.true_positives + k.true_negatives
    pairs = agree + k.false_positives + k.false_negatives
    if pairs == 0 or agree == pairs:
        return 1.0
    return agree / pairs


def adjusted_rand_index(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    on_missing: OnMissing = "error",
) -> float:
    """Adjusted Rand index (Hubert & Arabie 1985): Rand index corrected for chance.

    ARI = 2(TP·TN − FN·FP) / ((TP + FN)(FN + TN) + (TP + FP)(FP + TN)), the
    pair-count form scikit-learn uses. scikit-learn's convention: 1.0 when
    FP = FN = 0 (the clusterings agree on every pair, including a single record).
    NaN with :class:`UndefinedMetricWarning` on empty input.
    """
    return on_records(prediction, reference, on_missing, "adjusted Rand index", _adjusted_rand)


def _adjusted_rand(ct: Contingency) -> float:
    k = pairwise_counts(ct)
    tp, fp, fn, tn = k.true_positives, k.false_positives, k.false_negatives, k.true_negatives
    if fn == 0 and fp == 0:
        return 1.0
    return 2.0 * (tp * tn - fn * fp) / ((tp + fn) * (fn + tn) + (tp + fp) * (fp + tn))


def fowlkes_mallows(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    on_missing: OnMissing = "error",
) -> float:
    """Fowlkes-Mallows index TP / sqrt(|P|·|T|), the geometric mean of pairwise precision and recall.

    scikit-learn's convention: 0.0 when TP = 0, including when either clustering
    has no links at all. NaN with :class:`UndefinedMetricWarning` on empty input.
    """
    return on_records(prediction, reference, on_missing, "Fowlkes-Mallows index", _fowlkes_mallows)


def _fowlkes_mallows(ct: Contingency) -> float:
    tp = ct.true_positive_links
    if tp == 0:
        return 0.0
    return math.sqrt(tp / ct.predicted_links) * math.sqrt(tp / ct.true_links)
