"""The one registry of metric names.

Exact metrics (:data:`er_evaluation.metrics.METRIC_FUNCTIONS`), design-based estimators
(:func:`er_evaluation.estimators.estimate`), pair-sample estimates
(:func:`er_evaluation.pairs.estimate_from_labels`), the CLI, the app and every result
table name a metric the same way, so exact and estimated values of one metric can sit
side by side without translation. A name is ``<family>_<quantity>``, e.g.
``pairwise_precision``, ``bcubed_f1``; an F-score with another beta is named
:func:`fscore_name` (``pairwise_f2``, ``pairwise_f0.5``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from er_evaluation._parameters import check_beta
from er_evaluation.errors import suggest

__all__ = [
    "BLOCKING",
    "ESTIMABLE",
    "ESTIMATOR_METRICS",
    "FBETA",
    "PREDICTED_SAMPLE_DUALS",
    "FAMILIES",
    "KINDS",
    "METRIC_NAMES",
    "PAIR_ESTIMABLE",
    "REGISTRY",
    "STATISTICS",
    "TRUTH_STATISTICS",
    "Metric",
    "check_estimable",
    "check_metric_names",
    "estimable_metrics",
    "fscore_name",
    "pair_metric_names",
    "parse_fscore",
]

Family = Literal[
    "pairwise",
    "counts",
    "cluster",
    "bcubed",
    "information",
    "rand",
    "merge_split",
    "blocking",
    "truth",
]
Kind = Literal["proportion", "count", "score"]

FAMILIES: tuple[str, ...] = (
    "pairwise",
    "counts",
    "cluster",
    "bcubed",
    "information",
    "rand",
    "merge_split",
    "blocking",
    "truth",
)
#: "proportion": a value in [0, 1]; "count": a number of links or operations (an integer
#: when defined); "score": a real value with no fixed range (the adjusted Rand index can
#: be negative).
KINDS: tuple[str, ...] = ("proportion", "count", "score")


@dataclass(frozen=True)
class Metric:
    """One registered metric: its ``name``, a short human ``title``, its ``family`` and
    ``kind``, and whether it can be estimated from a reviewed sample of true clusters
    (``estimable``) and from labelled record pairs (``pair_estimable``)."""

    name: str
    title: str
    family: Family
    kind: Kind
    estimable: bool = False
    pair_estimable: bool = False


_METRICS = (
    Metric("pairwise_precision", "Pairwise precision", "pairwise", "proportion", True, True),
    Metric("pairwise_recall", "Pairwise recall", "pairwise", "proportion", True, True),
    Metric("pairwise_f1", "Pairwise F1", "pairwise", "proportion", True, True),
    Metric("true_positive_links", "True positive links", "counts", "count"),
    Metric("false_positive_links", "False positive links", "counts", "count"),
    Metric("false_negative_links", "False negative links", "counts", "count"),
    Metric("cluster_precision", "Cluster precision", "cluster", "proportion", True),
    Metric("cluster_recall", "Cluster recall", "cluster", "proportion", True),
    Metric("cluster_f1", "Cluster F1", "cluster", "proportion", True),
    Metric("bcubed_precision", "B-cubed precision", "bcubed", "proportion", True),
    Metric("bcubed_recall", "B-cubed recall", "bcubed", "proportion", True),
    Metric("bcubed_f1", "B-cubed F1", "bcubed", "proportion", True),
    Metric("bcubed_precision_by_cluster", "B-cubed precision (by cluster)", "bcubed", "proportion"),
    Metric("bcubed_recall_by_cluster", "B-cubed recall (by cluster)", "bcubed", "proportion"),
    Metric("bcubed_f1_by_cluster", "B-cubed F1 (by cluster)", "bcubed", "proportion"),
    Metric("homogeneity", "Homogeneity", "information", "proportion", True),
    Metric("completeness", "Completeness", "information", "proportion", True),
    Metric("v_measure", "V-measure", "information", "proportion", True),
    Metric("rand_index", "Rand index", "rand", "proportion"),
    Metric("adjusted_rand_index", "Adjusted Rand index", "rand", "score"),
    Metric("fowlkes_mallows", "Fowlkes-Mallows index", "rand", "proportion"),
    Metric("merge_count", "Merges", "merge_split", "count"),
    Metric("split_count", "Splits", "merge_split", "count"),
    Metric("generalized_merge_distance", "Generalized merge distance", "merge_split", "count"),
    Metric("normalized_merge_distance", "Normalized merge distance", "merge_split", "proportion"),
)

#: name -> :class:`Metric`, in the default column order of metric tables.
REGISTRY: dict[str, Metric] = {m.name: m for m in _METRICS}
#: every registered name, in registry order.
METRIC_NAMES: tuple[str, ...] = tuple(REGISTRY)
#: names estimable from a reviewed sample of true clusters (:mod:`er_evaluation.estimators`).
ESTIMABLE: tuple[str, ...] = tuple(m.name for m in _METRICS if m.estimable)
#: the F-score name the estimators take with a ``beta`` argument; its results are labelled
#: ``fscore_name("pairwise", beta)`` (pairwise_f2, pairwise_f0.5, ...)
FBETA = "pairwise_fbeta"
#: names the design-based estimators accept: :data:`ESTIMABLE` and :data:`FBETA`.
ESTIMATOR_METRICS: tuple[str, ...] = (*ESTIMABLE, FBETA)
#: what a reviewed sample of whole predicted clusters estimates: the precision-type
#: metrics, each computed as its dual with the roles of prediction and truth swapped
#: (Binette et al. 2023, Remark 2). Recall-type metrics need population totals of the
#: true clustering (e.g. |T|) that such a sample does not reveal.
PREDICTED_SAMPLE_DUALS: dict[str, str] = {
    "pairwise_precision": "pairwise_recall",
    "cluster_precision": "cluster_recall",
    "bcubed_precision": "bcubed_recall",
}
#: names estimable from labelled record pairs (:mod:`er_evaluation.pairs`); F-scores with
#: another beta are named by :func:`fscore_name`.
PAIR_ESTIMABLE: tuple[str, ...] = tuple(m.name for m in _METRICS if m.pair_estimable)

_STATISTICS = (
    Metric("blocking_recall", "Blocking recall", "blocking", "proportion"),
    Metric("matching_recall", "Matching recall", "blocking", "proportion"),
    Metric("average_cluster_size", "Average cluster size", "truth", "score"),
    Metric("singleton_cluster_share", "Singleton cluster share", "truth", "proportion"),
    Metric("matching_rate", "Matching rate", "truth", "proportion"),
    Metric("homonymy_rate", "Homonymy rate", "truth", "proportion"),
    Metric("name_variation_rate", "Name variation rate", "truth", "proportion"),
)

#: name -> :class:`Metric` of the quantities estimated from a reviewed sample that are not
#: metrics of a prediction against a truth (so not columns of the exact metric tables of
#: :data:`REGISTRY`): the blocking decomposition of recall
#: (:mod:`er_evaluation.estimators.blocking`) and statistics of the true clustering
#: (:mod:`er_evaluation.estimators.truth`; named as :func:`er_evaluation.summary_statistics`
#: names them for a full clustering).
STATISTICS: dict[str, Metric] = {m.name: m for m in _STATISTICS}
#: the two factors of recall lost to blocking: ``blocking_recall`` (true links whose
#: records share a block) and ``matching_recall`` (of those, the links found).
BLOCKING: tuple[str, ...] = tuple(m.name for m in _STATISTICS if m.family == "blocking")
#: statistics of the true clustering estimable from a reviewed sample of true clusters.
TRUTH_STATISTICS: tuple[str, ...] = tuple(m.name for m in _STATISTICS if m.family == "truth")

_FSCORE_FAMILIES = ("pairwise", "cluster", "bcubed")
_FSCORE_NAME = re.compile(r"(pairwise|cluster|bcubed)_f([0-9]*\.?[0-9]+)")


def parse_fscore(name: str) -> tuple[str, float] | None:
    """(family, beta) of an F-score named as :func:`fscore_name` names it
    (``"pairwise_f2"`` -> ``("pairwise", 2.0)``, ``"bcubed_f0.5"`` -> ``("bcubed", 0.5)``),
    None for any other name."""
    match = _FSCORE_NAME.fullmatch(name) if isinstance(name, str) else None
    if match is None or float(match.group(2)) <= 0:
        return None
    return match.group(1), float(match.group(2))


def fscore_name(family: str, beta: float) -> str:
    """Name of the F_beta score of ``family`` ("pairwise", "cluster" or "bcubed"):
    ``<family>_f1`` for beta = 1, else ``<family>_f{beta:g}`` (``pairwise_f2``,
    ``pairwise_f0.5``). ``beta`` must be positive and finite
    (:func:`~er_evaluation._parameters.check_beta`)."""
    if family not in _FSCORE_FAMILIES:
        raise ValueError(f"family must be one of {', '.join(_FSCORE_FAMILIES)}, got {family!r}")
    return f"{family}_f{check_beta(beta):g}"


def pair_metric_names(betas: float | Iterable[float] = 1.0) -> list[str]:
    """Names of the estimates from labelled record pairs
    (:func:`er_evaluation.pairs.estimate_from_labels`): ``pairwise_precision``,
    ``pairwise_recall``, then :func:`fscore_name` of the pairwise F_beta for each
    ``beta`` (``pairwise_f1`` for beta = 1)."""
    values = [betas] if isinstance(betas, (int, float)) else list(betas)
    return ["pairwise_precision", "pairwise_recall"] + [fscore_name("pairwise", b) for b in values]


def estimable_metrics(
    sample_of: str = "reference", among: Iterable[str] = ESTIMATOR_METRICS
) -> tuple[str, ...]:
    """The names of ``among`` that a reviewed sample estimates, in ``among``'s order: every
    estimator metric for a sample of true clusters or blocks (``sample_of="reference"``),
    the precision-type metrics of :data:`PREDICTED_SAMPLE_DUALS` for a sample of whole
    predicted clusters (``sample_of="predicted"``; e.g. ``("pairwise_precision",)`` among
    precision, recall and F1)."""
    if sample_of not in ("reference", "predicted"):
        raise ValueError(f"sample_of must be 'reference' or 'predicted', got {sample_of!r}")
    allowed = ESTIMATOR_METRICS if sample_of == "reference" else tuple(PREDICTED_SAMPLE_DUALS)
    return tuple(m for m in among if m in allowed)


def check_estimable(
    metric: str,
    sample_of: str = "reference",
    *,
    remedy: str = "review true clusters (records drawn from the population) for the others",
) -> str:
    """``metric`` if a reviewed sample of ``sample_of`` clusters estimates it (see
    :func:`estimable_metrics`), else a ValueError saying why, what such a sample
    estimates, and ``remedy``."""
    check_metric_names(metric, ESTIMATOR_METRICS, what="estimable metric")
    if not estimable_metrics(sample_of, (metric,)):
        raise ValueError(
            f"{metric!r} cannot be estimated from a sample of predicted clusters: it needs "
            f"population totals of the true clustering (e.g. |T|) that such a sample does "
            f"not reveal; a sample of predicted clusters estimates precision only "
            f"({', '.join(PREDICTED_SAMPLE_DUALS)}, by duality): {remedy}"
        )
    return metric


def check_metric_names(
    names: str | Iterable[str],
    allowed: Iterable[str],
    *,
    what: str = "metric",
    fscores: Iterable[str] = (),
) -> list[str]:
    """``names`` (one name or several) as a list, after checking each is in ``allowed``
    or is the F-score of one of the families ``fscores`` with some beta (``pairwise_f2``:
    :func:`parse_fscore`).

    Raises ValueError naming the unknown names (with the closest valid name for a typo)
    and listing the valid choices (a registered metric that is not allowed here is said to
    be unavailable, not unknown), or when no name is given.
    """
    allowed = tuple(allowed)
    fscores = tuple(fscores)
    shown = (*allowed, *(f"{family}_f<beta>" for family in fscores))
    chosen = [names] if isinstance(names, str) else list(names)
    if not chosen:
        raise ValueError(f"no {what} given: name at least one of {', '.join(shown)}")

    def known(name) -> bool:
        parts = parse_fscore(name)
        return name in allowed or (parts is not None and parts[0] in fscores)

    bad = [n for n in chosen if not known(n)]
    if bad:
        unknown = [n for n in bad if n not in REGISTRY]
        problem = (
            f"unknown {what}(s) {', '.join(map(repr, unknown))}{suggest(unknown, allowed)}"
            if unknown
            else f"{what}(s) {', '.join(map(repr, bad))} not available here"
        )
        if unknown and len(unknown) < len(bad):
            unavailable = [n for n in bad if n in REGISTRY]
            problem += f"; {', '.join(map(repr, unavailable))} not available here"
        raise ValueError(f"{problem}; choose from: {', '.join(shown)}")
    return chosen
