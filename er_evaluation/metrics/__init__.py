"""Exact metrics comparing a prediction with a reference clustering (Binette et al. 2023, §1.1.2, lists them).

Every metric has the signature ``f(prediction, reference=None, *, on_missing="error", ...)``
where ``prediction`` may instead be a precomputed shared-scope
:class:`~er_evaluation.Contingency`. :func:`evaluate` computes a table of
metrics for several predictions with one contingency each.
"""

from er_evaluation.metrics._validation import check_contingency
from er_evaluation.metrics.bcubed import bcubed_f1, bcubed_fbeta, bcubed_precision, bcubed_recall
from er_evaluation.metrics.cluster import (
    cluster_f1,
    cluster_fbeta,
    cluster_precision,
    cluster_recall,
    exact_cluster_count,
)
from er_evaluation.metrics.information import (
    completeness,
    homogeneity,
    mutual_information,
    v_measure,
)
from er_evaluation.metrics.merge_split import (
    generalized_merge_distance,
    merge_count,
    split_count,
)
from er_evaluation.metrics.pairwise import (
    PairCounts,
    pairwise_counts,
    pairwise_f1,
    pairwise_fbeta,
    pairwise_precision,
    pairwise_recall,
)
from er_evaluation.metrics.rand import adjusted_rand_index, fowlkes_mallows, rand_index
from er_evaluation.metrics.table import METRIC_FUNCTIONS, evaluate

__all__ = [
    "METRIC_FUNCTIONS",
    "evaluate",
    "check_contingency",
    "PairCounts",
    "pairwise_counts",
    "pairwise_precision",
    "pairwise_recall",
    "pairwise_f1",
    "pairwise_fbeta",
    "exact_cluster_count",
    "cluster_precision",
    "cluster_recall",
    "cluster_f1",
    "cluster_fbeta",
    "bcubed_precision",
    "bcubed_recall",
    "bcubed_f1",
    "bcubed_fbeta",
    "mutual_information",
    "homogeneity",
    "completeness",
    "v_measure",
    "rand_index",
    "adjusted_rand_index",
    "fowlkes_mallows",
    "merge_count",
    "split_count",
    "generalized_merge_distance",
]
