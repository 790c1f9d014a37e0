"""Design-based estimators of entity-resolution metrics from reviewed samples
(Binette et al. 2023 §2.3 and appendix A.2).

Entry points: :func:`estimate` (one metric, one prediction), :func:`estimate_table`
(tidy table for many predictions x metrics), :func:`compare` (paired differences),
:func:`compare_changed` (paired differences from a sample of the records that changed
between two versions, :mod:`er_evaluation.estimators.change`),
:func:`stratum_contributions` (per-stratum parts of an estimate from a stratified sample,
:mod:`er_evaluation.estimators.stratified`).
Breakdowns from the same reviewed sample: :func:`blocking_table` / :func:`estimate_blocking`
(recall lost to blocking: ``blocking_recall`` and ``matching_recall``),
:func:`estimate_by_group`, :func:`compare_by_group` and :func:`group_equality_test`
(precision, recall and F1 per subgroup of records), :func:`estimate_summary` (summary
statistics of the true clustering).
Samples come from :mod:`er_evaluation.sampling`. Interval methods live in
:mod:`er_evaluation.estimators.intervals`. All "weights"/"probability" arguments are
selection probabilities (up to a constant), never inverse-probability weights.
"""

from er_evaluation.estimators import intervals
from er_evaluation.estimators.api import (
    compare,
    estimate,
    estimate_from_units,
    estimate_table,
    stratum_contributions,
)
from er_evaluation.estimators.blocking import blocking_metrics, blocking_table, estimate_blocking
from er_evaluation.estimators.change import compare_changed
from er_evaluation.estimators.diagnostics import Diagnostics
from er_evaluation.estimators.groups import (
    compare_by_group,
    estimate_by_group,
    group_equality_test,
    group_metrics,
)
from er_evaluation.estimators.intervals import CI_METHODS, DEFAULT_CI_METHOD, confidence_interval
from er_evaluation.estimators.ratio import fpc, ratio_estimate, smooth_estimate
from er_evaluation.estimators.restrict import restrict_sample
from er_evaluation.estimators.results import Estimate, estimates_frame
from er_evaluation.estimators.truth import estimate_summary
from er_evaluation.estimators.units import UnitTable, unit_table

__all__ = [
    "CI_METHODS",
    "DEFAULT_CI_METHOD",
    "Diagnostics",
    "Estimate",
    "UnitTable",
    "blocking_metrics",
    "blocking_table",
    "compare",
    "compare_by_group",
    "compare_changed",
    "confidence_interval",
    "estimate",
    "estimate_blocking",
    "estimate_by_group",
    "estimate_from_units",
    "estimate_summary",
    "estimate_table",
    "estimates_frame",
    "fpc",
    "group_equality_test",
    "group_metrics",
    "intervals",
    "ratio_estimate",
    "restrict_sample",
    "smooth_estimate",
    "stratum_contributions",
    "unit_table",
]
