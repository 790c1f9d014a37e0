"""Pairwise metrics: compare the sets of linked record pairs (Binette et al. 2023, §2.3.1, eq. 1).

With T the set of true matching pairs (both records in one reference cluster)
and P the set of predicted links (both records in one predicted cluster):
precision = |T ∩ P| / |P|, recall = |T ∩ P| / |T|. From the contingency counts
n_{ĉc} = |ĉ ∩ c|: |T ∩ P| = Σ C(n_{ĉc}, 2), |P| = Σ_ĉ C(|ĉ|, 2), |T| = Σ_c C(|c|, 2).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from er_evaluation._contingency_table import Contingency
from er_evaluation._parameters import check_beta
from er_evaluation.errors import warn_undefined
from er_evaluation.metrics._validation import OnMissing, check_contingency

__all__ = [
    "PairCounts",
    "pairwise_counts",
    "pairwise_precision",
    "pairwise_recall",
    "pairwise_f1",
    "pairwise_fbeta",
]


@dataclass(frozen=True)
class PairCounts:
    """Confusion counts over unordered record pairs (each pair counted once).

    ``true_positives`` = |T ∩ P|, ``false_positives`` = |P \\ T|,
    ``false_negatives`` = |T \\ P|, ``true_negatives`` = pairs linked by neither,
    so the four sum to C(N, 2).
    """

    true_positives: int
    false_positives: int
    false_negatives: int
    true_negatives: int


def pairwise_counts(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    on_missing: OnMissing = "error",
) -> PairCounts:
    """TP/FP/FN/TN link counts over the record pairs of the shared records.

    TP = Σ_cells C(n_{ĉc}, 2), FP = |P| − TP, FN = |T| − TP,
    TN = C(N, 2) − TP − FP − FN. Exact Python integers (no overflow at 10M records).
    """
    ct = check_contingency(prediction, reference, on_missing=on_missing)
    tp = ct.true_positive_links
    fp = ct.predicted_links - tp
    fn = ct.true_links - tp
    n = ct.n_shared
    return PairCounts(tp, fp, fn, n * (n - 1) // 2 - tp - fp - fn)


def pairwise_precision(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    on_missing: OnMissing = "error",
) -> float:
    """Pairwise precision |T ∩ P| / |P|: the share of predicted links that are true.

    NaN with :class:`UndefinedMetricWarning` when there are no predicted links
    (every predicted cluster a singleton) or no records.
    """
    ct = check_contingency(prediction, reference, on_missing=on_missing)
    if ct.predicted_links == 0:
        return warn_undefined("pairwise precision", "the prediction has no links (all singletons)")
    return ct.true_positive_links / ct.predicted_links


def pairwise_recall(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    on_missing: OnMissing = "error",
) -> float:
    """Pairwise recall |T ∩ P| / |T|: the share of true matching pairs that are linked.

    NaN with :class:`UndefinedMetricWarning` when the reference has no matching
    pairs (every reference cluster a singleton) or there are no records.
    """
    ct = check_contingency(prediction, reference, on_missing=on_missing)
    if ct.true_links == 0:
        return warn_undefined("pairwise recall", "the reference has no links (all singletons)")
    return ct.true_positive_links / ct.true_links


def pairwise_f1(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    on_missing: OnMissing = "error",
) -> float:
    """Pairwise F1 = 2·TP / (2·TP + FN + FP), the harmonic mean of pairwise precision and
    recall (:func:`pairwise_fbeta` with β = 1, which states the edge cases)."""
    return pairwise_fbeta(prediction, reference, beta=1.0, on_missing=on_missing)


def pairwise_fbeta(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    beta: float,
    on_missing: OnMissing = "error",
) -> float:
    """Pairwise F_β = (1 + β²)·TP / ((1 + β²)·TP + β²·FN + FP).

    This equals (1 + β²)PR / (β²P + R) whenever precision P and recall R are both
    defined. Written on counts it is also defined when only one side has links
    (then TP = 0 and F = 0: none of the links were right). NaN with
    :class:`UndefinedMetricWarning` when neither clustering has a link.
    """
    b2 = check_beta(beta) ** 2
    k = pairwise_counts(prediction, reference, on_missing=on_missing)
    tp, fp, fn = k.true_positives, k.false_positives, k.false_negatives
    denominator = (1 + b2) * tp + b2 * fn + fp
    if denominator == 0:
        return warn_undefined(
            "pairwise F-score", "neither clustering has any link (all singletons)"
        )
    return (1 + b2) * tp / denominator
