"""Paired comparison of two predictions on the same sample (design §4, "beyond the paper").

The difference ``D = phi_a(means_a) - phi_b(means_b)`` of a metric under predictions a and
b is itself a smooth function of the means of the stacked per-unit matrix ``[Y_a, Y_b]``
(same sampled units, same probabilities and multiplicities). Its bias correction and
delta-method variance (:func:`~er_evaluation.estimators.ratio.smooth_estimate`) use the
per-unit linearised differences ``grad_a'(Y_a,u - mean_a) - grad_b'(Y_b,u - mean_b)``, so
the covariance between the two estimates (large: same reviewed clusters) is accounted for;
the interval is much tighter than combining two separate error bars.
"""

from __future__ import annotations

from er_evaluation.estimators._metric_fit import fit, metric_function, to_estimate
from er_evaluation.estimators.intervals import N_BOOT
from er_evaluation.estimators.ratio import Linear
from er_evaluation.estimators.results import Estimate
from er_evaluation.estimators.units import UnitTable

__all__ = ["paired_difference"]


def paired_difference(
    ut_a: UnitTable,
    ut_b: UnitTable,
    metric: str,
    *,
    estimator: str | None = None,
    level: float = 0.95,
    ci_method: str | None = None,
    beta: float = 1.0,
    n_boot: int = N_BOOT,
    seed=0,
    names: tuple[str, str] = ("a", "b"),
) -> Estimate:
    """Estimate of ``metric(a) - metric(b)`` from the per-unit tables of two predictions
    built on the same sample (same units in the same order). ``dropped_records`` counts
    the reviewed records absent from at least one of the two predictions."""
    if ut_a.sample is not ut_b.sample and not ut_a.sample.units.equals(ut_b.sample.units):
        raise ValueError("paired comparison needs per-unit tables of one and the same sample")
    est_a, phi_a, cols_a = metric_function(ut_a, metric, estimator, beta)
    est_b, phi_b, cols_b = metric_function(ut_b, metric, estimator, beta)
    if est_a != est_b:
        raise ValueError(f"estimators differ between predictions: {est_a!r} vs {est_b!r}")
    naive = est_a == "naive"
    phi = Linear([1.0, -1.0], [phi_a.rename("a:"), phi_b.rename("b:")])
    cols = {**{"a:" + k: v for k, v in cols_a.items()}, **{"b:" + k: v for k, v in cols_b.items()}}
    return to_estimate(
        fit(ut_a, phi, cols, naive),
        ut_a,
        metric=metric,
        estimator=est_a,
        level=level,
        ci_method=ci_method,
        naive=naive,
        name=f"{names[0]} - {names[1]}",
        bounds=(-1.0, 1.0),
        n_boot=n_boot,
        seed=seed,
        dropped_records=len(ut_a.dropped_ids.union(ut_b.dropped_ids)),
    )
