"""Many metrics for many predictions at once, one contingency per prediction.

:data:`METRIC_FUNCTIONS` maps each name of the registry
(:data:`er_evaluation.vocabulary.REGISTRY`, same order) to a function of a shared-scope
:class:`~er_evaluation.Contingency`. :func:`evaluate` builds the
contingency of each prediction against the reference once and applies every
requested metric to it (the trap this avoids: nine metrics redoing nine joins).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial

import pandas as pd

from er_evaluation._contingency_table import Contingency
from er_evaluation._progress import progress
from er_evaluation.engines import as_table
from er_evaluation.metrics._validation import OnMissing, check_contingency
from er_evaluation.metrics.bcubed import bcubed_f1, bcubed_fbeta, bcubed_precision, bcubed_recall
from er_evaluation.metrics.cluster import (
    cluster_f1,
    cluster_fbeta,
    cluster_precision,
    cluster_recall,
)
from er_evaluation.metrics.information import completeness, homogeneity, v_measure
from er_evaluation.metrics.merge_split import (
    generalized_merge_distance,
    merge_count,
    split_count,
)
from er_evaluation.metrics.pairwise import (
    pairwise_f1,
    pairwise_fbeta,
    pairwise_precision,
    pairwise_recall,
)
from er_evaluation.metrics.rand import adjusted_rand_index, fowlkes_mallows, rand_index
from er_evaluation.vocabulary import REGISTRY, check_metric_names, parse_fscore

__all__ = ["METRIC_FUNCTIONS", "evaluate"]


def _true_positive_links(ct: Contingency) -> int:
    return ct.true_positive_links


def _false_positive_links(ct: Contingency) -> int:
    return ct.predicted_links - ct.true_positive_links


def _false_negative_links(ct: Contingency) -> int:
    return ct.true_links - ct.true_positive_links


_BY_CLUSTER = "reference_cluster"

_FUNCTIONS: dict[str, Callable[[Contingency], float]] = {
    "pairwise_precision": pairwise_precision,
    "pairwise_recall": pairwise_recall,
    "pairwise_f1": pairwise_f1,
    "true_positive_links": _true_positive_links,
    "false_positive_links": _false_positive_links,
    "false_negative_links": _false_negative_links,
    "cluster_precision": cluster_precision,
    "cluster_recall": cluster_recall,
    "cluster_f1": cluster_f1,
    "bcubed_precision": bcubed_precision,
    "bcubed_recall": bcubed_recall,
    "bcubed_f1": bcubed_f1,
    "bcubed_precision_by_cluster": partial(bcubed_precision, average=_BY_CLUSTER),
    "bcubed_recall_by_cluster": partial(bcubed_recall, average=_BY_CLUSTER),
    "bcubed_f1_by_cluster": partial(bcubed_f1, average=_BY_CLUSTER),
    "homogeneity": homogeneity,
    "completeness": completeness,
    "v_measure": v_measure,
    "rand_index": rand_index,
    "adjusted_rand_index": adjusted_rand_index,
    "fowlkes_mallows": fowlkes_mallows,
    "merge_count": merge_count,
    "split_count": split_count,
    "generalized_merge_distance": generalized_merge_distance,
    "normalized_merge_distance": partial(generalized_merge_distance, normalize=True),
}
#: Registry name -> metric of a shared-scope Contingency, in registry order (the default
#: column order); every registered metric is computable exactly.
METRIC_FUNCTIONS: dict[str, Callable[[Contingency], float]] = {
    name: _FUNCTIONS[name] for name in REGISTRY
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
    name, or ``"prediction"``) or a mapping name -> membership vector; any clustering
    may be a table held by DuckDB or Spark (:func:`er_evaluation.engines.table`).
    ``metrics`` lists names from :data:`METRIC_FUNCTIONS` (default: all of them, in
    registry order) or F-scores of another beta under their result names
    (``pairwise_f2``, ``cluster_f0.5``, ``bcubed_f2``: :func:`~er_evaluation.vocabulary.fscore_name`). Each prediction's contingency against ``reference`` is
    computed once and shared by all metrics; ``on_missing`` is passed to the
    kernel (``"error"`` raises naming records missing on either side,
    ``"restrict"`` evaluates on shared records with a warning giving the count).
    Count columns (true_positive_links, false_positive_links, false_negative_links,
    merge_count, split_count) are integers, the rest floats;
    undefined metrics are NaN (with an ``UndefinedMetricWarning`` each).
    """
    named = _named_predictions(predictions)
    chosen = _chosen_metrics(metrics)
    rows = []
    for name, prediction in progress(
        named.items(), "exact metrics", total=len(named), unit="prediction"
    ):
        if not isinstance(prediction, pd.Series) and as_table(prediction, str(name)) is None:
            raise TypeError(
                f"prediction {name!r} must be a pandas Series (record id -> cluster id) or a "
                f"table (er_evaluation.engines.table), got {type(prediction).__name__}"
            )
        ct = check_contingency(prediction, reference, on_missing=on_missing)
        rows.append({metric: function(ct) for metric, function in chosen.items()})
    table = pd.DataFrame(rows, index=pd.Index(list(named), name="prediction"), columns=list(chosen))
    return table


def _named_predictions(predictions: pd.Series | Mapping[str, pd.Series]) -> dict:
    if isinstance(predictions, pd.Series):
        name = predictions.name if predictions.name is not None else "prediction"
        return {name: predictions}
    table = as_table(predictions, "prediction")
    if table is not None:
        return {table.name: predictions}
    if isinstance(predictions, Mapping):
        if len(predictions) == 0:
            raise ValueError("predictions is empty: pass at least one prediction")
        return dict(predictions)
    raise TypeError(
        "predictions must be a pandas Series or a mapping name -> Series, "
        f"got {type(predictions).__name__}"
    )


_FBETA_FUNCTIONS = {"pairwise": pairwise_fbeta, "cluster": cluster_fbeta, "bcubed": bcubed_fbeta}


def check_metrics(metrics: str | Sequence[str]) -> list[str]:
    """``metrics`` as a list if :func:`evaluate` computes each (a name of
    :data:`METRIC_FUNCTIONS` or an F-score such as ``pairwise_f2``), else a ValueError
    naming the unknown ones, with the closest name for a typo."""
    return check_metric_names(metrics, METRIC_FUNCTIONS, fscores=_FBETA_FUNCTIONS)


def _chosen_metrics(metrics: str | Sequence[str] | None) -> dict[str, Callable]:
    """Name -> function of a Contingency for every requested metric: the registry's, and
    the F-scores of any beta under their result names (``pairwise_f2``)."""
    if metrics is None:
        return dict(METRIC_FUNCTIONS)
    names = check_metrics(metrics)
    chosen = {}
    for name in names:
        if name in METRIC_FUNCTIONS:
            chosen[name] = METRIC_FUNCTIONS[name]
        else:
            family, beta = parse_fscore(name)
            chosen[name] = partial(_FBETA_FUNCTIONS[family], beta=beta)
    return chosen
