"""Many metrics for many predictions at once, one contingency per prediction.

:data:`METRICS` maps a column name to a function of a shared-scope
:class:`~er_evaluation.contingency.Contingency`. :func:`evaluate` builds the
contingency of each prediction against the reference once and applies every
requested metric to it (the trap this avoids: nine metrics redoing nine joins).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial

import pandas as pd

from er_evaluation.contingency import Contingency
from er_evaluation.metrics._validation import OnMissing, check_contingency
from er_evaluation.metrics.bcubed import bcubed_fscore, bcubed_precision, bcubed_recall
from er_evaluation.metrics.cluster import cluster_fscore, cluster_precision, cluster_recall
from er_evaluation.metrics.information import completeness, homogeneity, v_measure
from er_evaluation.metrics.merge_split import (
    generalized_merge_distance,
    merge_count,
    split_count,
)
from er_evaluation.metrics.pairwise import pairwise_fscore, pairwise_precision, pairwise_recall
from er_evaluation.metrics.rand import adjusted_rand_index, fowlkes_mallows, rand_index

__all__ = ["METRICS", "evaluate"]


def _tp(ct: Contingency) -> int:
    return ct.true_positive_links


def _fp(ct: Contingency) -> int:
    return ct.predicted_links - ct.true_positive_links


def _fn(ct: Contingency) -> int:
    return ct.true_links - ct.true_positive_links


_BY_CLUSTER = "reference_cluster"

#: Column name -> metric of a shared-scope Contingency. Order = default column order.
METRICS: dict[str, Callable[[Contingency], float]] = {
    "pairwise_precision": pairwise_precision,
    "pairwise_recall": pairwise_recall,
    "pairwise_f1": pairwise_fscore,
    "TP": _tp,
    "FP": _fp,
    "FN": _fn,
    "cluster_precision": cluster_precision,
    "cluster_recall": cluster_recall,
    "cluster_f1": cluster_fscore,
    "bcubed_precision": bcubed_precision,
    "bcubed_recall": bcubed_recall,
    "bcubed_f1": bcubed_fscore,
    "bcubed_precision_by_cluster": partial(bcubed_precision, average=_BY_CLUSTER),
    "bcubed_recall_by_cluster": partial(bcubed_recall, average=_BY_CLUSTER),
    "bcubed_f1_by_cluster": partial(bcubed_fscore, average=_BY_CLUSTER),
    "homogeneity": homogeneity,
    "completeness": completeness,
    "v_measure": v_measure,
    "rand_index": rand_index,
    "adjusted_rand_index": adjusted_rand_index,
    "fowlkes_mallows": fowlkes_mallows,
    "merges": merge_count,
    "splits": split_count,
    "merge_distance": generalized_merge_distance,
    "normalized_merge_distance": partial(generalized_merge_distance, normalize=True),
}


def evaluate(
    predictions: pd.Series | Mapping[str, pd.Series],
    reference: pd.Series,
    metrics: str | Sequence[str] | None = None,
    *,
    on_missing: OnMissing = "error",
) -> pd.DataFrame:
    """Table of metrics: one row per prediction, one column per metric.

    ``predictions`` is one membership vector (its row is named after the Series'
    name, or ``"prediction"``) or a mapping name -> membership vector.
    ``metrics`` lists names from :data:`METRICS` (default: all of them, in
    registry order). Each prediction's contingency against ``reference`` is
    computed once and shared by all metrics; ``on_missing`` is passed to the
    kernel (``"error"`` raises naming records missing on either side,
    ``"restrict"`` evaluates on shared records with a warning giving the count).
    Count columns (TP, FP, FN, merges, splits) are integers, the rest floats;
    undefined metrics are NaN (with an ``UndefinedMetricWarning`` each).
    """
    named = _named_predictions(predictions)
    chosen = _chosen_metrics(metrics)
    rows = []
    for name, prediction in named.items():
        if not isinstance(prediction, pd.Series):
            raise TypeError(
                f"prediction {name!r} must be a pandas Series (record id -> cluster id), "
                f"got {type(prediction).__name__}"
            )
        ct = check_contingency(prediction, reference, on_missing=on_missing)
        rows.append({metric: METRICS[metric](ct) for metric in chosen})
    table = pd.DataFrame(rows, index=pd.Index(list(named), name="prediction"), columns=chosen)
    return table


def _named_predictions(predictions: pd.Series | Mapping[str, pd.Series]) -> dict:
    if isinstance(predictions, pd.Series):
        name = predictions.name if predictions.name is not None else "prediction"
        return {name: predictions}
    if isinstance(predictions, Mapping):
        if len(predictions) == 0:
            raise ValueError("predictions is empty: pass at least one prediction")
        return dict(predictions)
    raise TypeError(
        "predictions must be a pandas Series or a mapping name -> Series, "
        f"got {type(predictions).__name__}"
    )


def _chosen_metrics(metrics: str | Sequence[str] | None) -> list[str]:
    if metrics is None:
        return list(METRICS)
    chosen = [metrics] if isinstance(metrics, str) else list(metrics)
    unknown = [m for m in chosen if m not in METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; available: {', '.join(METRICS)}")
    if not chosen:
        raise ValueError("metrics is empty: name at least one metric or pass None for all")
    return chosen
