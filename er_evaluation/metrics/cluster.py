"""Cluster metrics: the share of clusters reproduced exactly (listed by Binette et al. 2023, §1.1.2).

A predicted cluster ĉ is *exact* when it equals some reference cluster c as a
set of records, i.e. its contingency cell satisfies n_{ĉc} = |ĉ| = |c|. With E
the number of exact clusters: cluster precision = E / |Ĉ|, cluster recall =
E / |C|, cluster F_β = (1 + β²)E / (β²|C| + |Ĉ|) (the F_β of the two; F1 for β = 1).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from er_evaluation._contingency_table import Contingency
from er_evaluation._parameters import check_beta
from er_evaluation.metrics._validation import OnMissing, cached, check_contingency, on_records

__all__ = [
    "exact_cluster_count",
    "cluster_precision",
    "cluster_recall",
    "cluster_f1",
    "cluster_fbeta",
]


def exact_cluster_count(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    on_missing: OnMissing = "error",
) -> int:
    """Number of predicted clusters equal (as record sets) to a reference cluster."""
    ct = check_contingency(prediction, reference, on_missing=on_missing)
    return cached(ct, "exact_clusters", _exact_clusters)


def _exact_clusters(ct: Contingency) -> int:
    exact = (ct.count == ct.cell_pred_size) & (ct.count == ct.cell_ref_size)
    return int(np.count_nonzero(exact))


def cluster_precision(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    on_missing: OnMissing = "error",
) -> float:
    """Fraction of predicted clusters that are exactly a reference cluster: E / |Ĉ|.

    NaN with :class:`UndefinedMetricWarning` on empty input.
    """
    return on_records(
        prediction,
        reference,
        on_missing,
        "cluster precision",
        lambda ct: exact_cluster_count(ct) / ct.n_pred_clusters,
    )


def cluster_recall(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    on_missing: OnMissing = "error",
) -> float:
    """Fraction of reference clusters reproduced exactly by the prediction: E / |C|.

    NaN with :class:`UndefinedMetricWarning` on empty input.
    """
    return on_records(
        prediction,
        reference,
        on_missing,
        "cluster recall",
        lambda ct: exact_cluster_count(ct) / ct.n_ref_clusters,
    )


def cluster_f1(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    on_missing: OnMissing = "error",
) -> float:
    """Cluster F1 = 2·E / (|C| + |Ĉ|) (:func:`cluster_fbeta` with β = 1)."""
    return cluster_fbeta(prediction, reference, beta=1.0, on_missing=on_missing)


def cluster_fbeta(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    beta: float,
    on_missing: OnMissing = "error",
) -> float:
    """Cluster F_β = (1 + β²)·E / (β²·|C| + |Ĉ|), the F_β of cluster precision and recall.

    NaN with :class:`UndefinedMetricWarning` on empty input.
    """
    b2 = check_beta(beta) ** 2
    return on_records(
        prediction,
        reference,
        on_missing,
        "cluster F-score",
        lambda ct: (
            (1 + b2) * exact_cluster_count(ct) / (b2 * ct.n_ref_clusters + ct.n_pred_clusters)
        ),
    )
