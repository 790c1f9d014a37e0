"""Estimates built from estimates of independent samples: an F-score of a precision and a
recall estimated from different samples (the recommended design reviews predicted
clusters for precision and records' true clusters for recall), and a difference of two
estimates, independent or with a known correlation.

Both combine the parts' own intervals by the method of variance estimates recovery
(MOVER; Zou & Donner 2008), so each part's asymmetry (a boundary, a skewed ratio) carries
into the result: :func:`~er_evaluation.estimators.intervals.fscore_bounds` (kept inside
the F-measure box of the parts' intervals) and
:func:`~er_evaluation.estimators.intervals.mover_bounds`. The standard error is the delta
method's, ``Var F = F_P² Var P̂ + F_R² Var R̂ + 2 ρ F_P F_R SE_P SE_R``.
"""

from __future__ import annotations

import math

import numpy as np

from er_evaluation._parameters import check_beta
from er_evaluation.estimators.diagnostics import Diagnostics
from er_evaluation.estimators.intervals import fscore_bounds, mover_bounds
from er_evaluation.estimators.results import Estimate
from er_evaluation.vocabulary import fscore_name

__all__ = ["fscore_estimate", "difference_estimate"]


def _diagnostics(*parts: Estimate) -> Diagnostics:
    """Reliable when every part is; the reasons of the parts that are not."""
    reasons = [
        f"{p.metric}: {p.diagnostics.reason}"
        for p in parts
        if p.diagnostics is not None and not p.diagnostics.reliable
    ]
    n_eff = min(p.diagnostics.n_effective if p.diagnostics else math.nan for p in parts)
    share = max(p.diagnostics.top_share if p.diagnostics else math.nan for p in parts)
    return Diagnostics(n_eff, share, not reasons, "; ".join(reasons))


def fscore_estimate(
    precision: Estimate, recall: Estimate, *, beta: float = 1.0, rho: float = 0.0
) -> Estimate:
    """``F_beta`` of a precision and a recall estimate with correlation ``rho`` (0: from
    independent samples): value ``F(P̂, R̂)``, delta-method standard error, and the MOVER
    interval from the parts' intervals inside the F-measure box ``[F(l_P, l_R),
    F(u_P, u_R)]`` (:func:`~er_evaluation.estimators.intervals.fscore_bounds`). Both
    estimates must be of one prediction at one level."""
    beta = check_beta(beta)
    if precision.level != recall.level:
        raise ValueError(
            f"the precision and recall intervals have different levels: {precision.level} "
            f"and {recall.level}"
        )
    if precision.prediction != recall.prediction:
        raise ValueError(
            f"the precision and the recall are of different predictions: "
            f"{precision.prediction!r} and {recall.prediction!r}"
        )
    p, r = precision.value, recall.value
    b2 = beta * beta
    d = b2 * p + r
    value = (1 + b2) * p * r / d if d > 0 else math.nan
    dp = (1 + b2) * r * r / d**2 if d > 0 else math.nan
    dr = (1 + b2) * b2 * p * p / d**2 if d > 0 else math.nan
    sp, sr = precision.std_error, recall.std_error
    var = dp**2 * sp**2 + dr**2 * sr**2 + 2 * rho * dp * dr * sp * sr
    lo, hi = fscore_bounds(
        p, precision.ci_low, precision.ci_high, r, recall.ci_low, recall.ci_high, beta, rho
    )
    return Estimate(
        metric=fscore_name("pairwise", beta),
        estimator=f"{precision.estimator}+{recall.estimator}",
        design=f"{precision.design} + {recall.design}",
        value=float(value),
        std_error=float(math.sqrt(var)) if var >= 0 else math.nan,
        ci_low=float(lo),
        ci_high=float(hi),
        level=precision.level,
        ci_method=precision.ci_method,
        n_units=precision.n_units + recall.n_units,
        n_draws=precision.n_draws + recall.n_draws,
        n_records=precision.n_records + recall.n_records,
        plugin=float(value),
        prediction=precision.prediction,
        diagnostics=_diagnostics(precision, recall),
    )


def difference_estimate(a: Estimate, b: Estimate, *, rho: float = 0.0) -> Estimate:
    """``a - b`` of two estimates of one metric with correlation ``rho`` (0: independent
    samples, e.g. each version's own sample of predicted clusters): delta-method standard
    error and the MOVER interval of the parts' intervals
    (:func:`~er_evaluation.estimators.intervals.mover_bounds`), clipped to [-1, 1]."""
    if a.metric != b.metric:
        raise ValueError(f"a difference needs one metric, got {a.metric!r} and {b.metric!r}")
    if a.level != b.level:
        raise ValueError(f"the intervals have different levels: {a.level} and {b.level}")
    corr = np.array([[1.0, rho], [rho, 1.0]])
    lo, hi = mover_bounds(
        [a.value, b.value], [a.ci_low, b.ci_low], [a.ci_high, b.ci_high], [1.0, -1.0], corr
    )
    var = a.std_error**2 + b.std_error**2 - 2 * rho * a.std_error * b.std_error
    return Estimate(
        metric=f"{a.metric} difference",
        estimator=a.estimator,
        design=a.design if a.design == b.design else f"{a.design} / {b.design}",
        value=float(a.value - b.value),
        std_error=float(math.sqrt(var)) if var >= 0 else math.nan,
        ci_low=float(max(lo, -1.0)),
        ci_high=float(min(hi, 1.0)),
        level=a.level,
        ci_method=a.ci_method,
        n_units=a.n_units + b.n_units,
        n_draws=a.n_draws + b.n_draws,
        n_records=a.n_records + b.n_records,
        plugin=float(a.plugin - b.plugin),
        prediction=f"{a.prediction} - {b.prediction}",
        diagnostics=_diagnostics(a, b),
    )
