"""From a metric name and a per-unit table to an :class:`Estimate`: shared by the single
estimates (:mod:`er_evaluation.estimators.api`) and the paired differences
(:mod:`er_evaluation.estimators.paired`)."""

from __future__ import annotations

import math

import numpy as np

from er_evaluation.errors import UnreliableEstimateWarning, warn, warn_undefined
from er_evaluation.estimators.cluster_metrics import cluster_metric_function
from er_evaluation.estimators.diagnostics import (
    NAIVE_REASON,
    Diagnostics,
    bounded_estimator,
    diagnose,
    fit_concentration,
)
from er_evaluation.estimators.intervals import DEFAULT_CI_METHOD as _DEFAULT
from er_evaluation.estimators.intervals import N_BOOT, interval
from er_evaluation.estimators.pairwise import PAIRWISE_METRICS, default_estimator, pairwise_function
from er_evaluation.estimators.ratio import Smooth, SmoothFit, smooth_estimate
from er_evaluation.estimators.results import Estimate
from er_evaluation.estimators.stratified import StratifiedFit, stratified_fit, stratified_interval
from er_evaluation.estimators.units import UnitTable
from er_evaluation.vocabulary import ESTIMATOR_METRICS, FBETA, check_metric_names, fscore_name

__all__ = ["result_label", "metric_function", "fit", "to_estimate"]


def result_label(metric: str, beta: float) -> str:
    """Name of the estimated metric in results: ``metric``, or for :data:`FBETA` the
    vocabulary's F-score name for ``beta``."""
    return fscore_name("pairwise", beta) if metric == FBETA else metric


def metric_function(ut: UnitTable, metric: str, estimator: str | None, beta: float):
    """``(estimator, phi, columns)`` of ``metric`` on the unit table ``ut`` (``beta``
    checked by the caller's entry point)."""
    check_metric_names(metric, ESTIMATOR_METRICS, what="estimable metric")
    if metric != FBETA:
        beta = 1.0
    if metric in PAIRWISE_METRICS:
        est = estimator or default_estimator(ut, metric)
        phi, cols = pairwise_function(ut, metric, est, beta)
        if set(est.split("+")) == {"naive"}:  # "naive+naive" is the naive F-score
            est = "naive"
    else:
        est = estimator or ("block" if ut.unit_kind == "block" else "cluster")
        phi, cols = cluster_metric_function(ut, metric, est)
    return est, phi, cols


def fit(ut: UnitTable, phi: Smooth, cols: dict, *, naive: bool) -> SmoothFit:
    """The smooth-function estimate of ``phi`` under the sample's design (or, ``naive``,
    the plug-in value on the reviewed records taken as the population). Stratified
    samples use the stratified expansion estimator
    (:func:`~er_evaluation.estimators.stratified.stratified_fit`)."""
    if ut.sample.strata is not None and not naive:
        return stratified_fit(phi, cols, ut.sample, ut.n_records_population)
    if naive:  # the reviewed records taken as the population: plug-in value, no variance
        return smooth_estimate(
            phi,
            cols,
            multiplicity=np.ones(len(ut.sample.units)),
            population_size=len(ut.sample.units),
            replace=False,
        )
    return smooth_estimate(
        phi,
        cols,
        multiplicity=ut.multiplicity,
        population_size=ut.sample.population_size,
        replace=ut.sample.replace,
    )


def to_estimate(
    fit: SmoothFit,
    ut: UnitTable,
    *,
    metric: str,
    estimator: str,
    level: float,
    ci_method: str | None,
    naive: bool,
    name: str | None,
    bounds=(0.0, 1.0),
    n_boot: int = N_BOOT,
    seed=0,
    dropped_records: int | None = None,
) -> Estimate:
    """The :class:`Estimate` of a fit: value, standard error, ``level`` interval and
    :class:`~er_evaluation.estimators.diagnostics.Diagnostics` (an
    :class:`~er_evaluation.errors.UnreliableEstimateWarning` says why when the interval
    cannot be trusted). ``dropped_records`` defaults to the unit table's count."""
    method = ci_method or _DEFAULT
    if naive:
        se, lo, hi, value = math.nan, math.nan, math.nan, fit.plugin
        method = "none"
        n_eff, share = fit_concentration(fit)
        diagnostics = Diagnostics(n_eff, share, False, NAIVE_REASON)
    else:
        value, se = fit.value, fit.std_error
        bounds_of = stratified_interval if isinstance(fit, StratifiedFit) else interval
        lo, hi = bounds_of(fit, level, method, bounds=bounds, n_boot=n_boot, seed=seed)
        diagnostics = diagnose(
            fit, ut, value=value, std_error=se, level=level, bounds=bounds, interval=(lo, hi)
        )
        if (
            bounds is not None
            and np.isfinite(value)
            and bounded_estimator(fit.phi, fit.Y, fit.index)
        ):
            # the plug-in of a bounded estimator lies in bounds: only the bias correction
            # of a tiny sample leaves them, and the diagnostics say so
            value = min(max(value, bounds[0]), bounds[1])
    if not np.isfinite(value):
        warn_undefined(
            f"{metric} of {name or 'the prediction'}",
            "no predicted or no true link carries weight in this sample",
        )
    elif not naive and not diagnostics.reliable:
        warn(
            f"{metric} of {name or 'the prediction'} is not reliable: {diagnostics.reason}",
            UnreliableEstimateWarning,
        )
    return Estimate(
        metric=metric,
        estimator=estimator,
        design=ut.sample.design,
        value=float(value),
        std_error=float(se),
        ci_low=float(lo),
        ci_high=float(hi),
        level=float(level),
        ci_method=method,
        n_units=ut.sample.n_units,
        n_draws=ut.sample.n_draws,
        n_records=ut.n_records_used,
        plugin=float(fit.plugin),
        prediction=name,
        dropped_records=ut.dropped_records if dropped_records is None else dropped_records,
        diagnostics=diagnostics,
    )
