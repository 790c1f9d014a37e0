"""Estimators for stratified samples (design §7): weight-share totals per stratum, the
combined ratio (smooth-function) estimator with bias correction, and its variance with a
finite-population correction per stratum; take-all strata contribute exactly.

Every estimator of :mod:`er_evaluation.estimators` is a smooth function ``phi`` of means of
per-unit columns ``x(c)`` (:mod:`~er_evaluation.estimators.ratio`). For a sample of a
stratified design (:class:`~er_evaluation.strata.Strata`) the columns are per-draw values
and the population means are estimated by the stratified expansion estimator

    M̂ = (1/N) Σ_h (F_h / n_h) Σ_{d in h} x(c_d)               (F_h frame units, n_h draws)
    V̂ = (1/N²) Σ_h F_h² (1 - n_h/F_h) S_h / n_h              (S_h: covariance of x in h)

(Cochran 1977, §5.3; ``1 - n_h/F_h`` becomes 1 with replacement). Records frame: a draw of
record i reveals its true cluster c and ``x(c)`` already holds the cluster's totals
divided by |c| (its per-unit probability is |c|), so Σ_h is Lavallée's generalised
weight-share estimator of Σ_c t(c), unbiased whatever the strata (design §7). The shares
of a cluster only need to sum to 1 over its records, so a cluster with records in a
take-all stratum is given entirely to those records (share 1/|c ∩ take-all|, 0 to its
other records): it is then counted exactly, and its records scattered in sampled strata
(e.g. records of a giant true cluster misattributed to small predicted clusters) no longer
carry its huge totals into those strata's variance. Clusters frame: ``x(c)`` is the
cluster's own totals (share 1).

The estimate is ``phi(M̂)`` minus the second-order bias ``½ trace(Hess phi · V̂)`` (at each
ratio, as for unstratified samples) and its
variance ``grad' V̂ grad`` (delta method): the combined ratio estimator. A take-all stratum
(``n_h = F_h`` without replacement) has ``1 - n_h/F_h = 0``: its totals enter exactly and
add no variance; a census of every stratum reproduces the exact metric with variance 0.
A stratum sampled with a single draw (not take-all) has no variance estimate: the
variance is NaN (allocate at least two draws per stratum).

Intervals: ``score`` (the default), ``normal``, ``logit`` and ``fieller`` use only M̂, V̂
and the draws' effective number and apply unchanged; ``auto`` is Fieller's interval for
plain ratios and the logit interval otherwise. The bootstrap intervals resample draws
without regard to strata and are refused.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from er_evaluation.estimators.intervals import DEFAULT_CI_METHOD, confidence_interval
from er_evaluation.estimators.ratio import Smooth, SmoothFit, bias_corrected
from er_evaluation.sampling import Sample
from er_evaluation.strata import Strata

__all__ = [
    "StratifiedFit",
    "fit_from_moments",
    "stratified_fit",
    "stratum_table",
    "stratified_interval",
    "STRATIFIED_CI_METHODS",
]

STRATIFIED_CI_METHODS = ("score", "auto", "normal", "logit", "fieller")


@dataclass(frozen=True, eq=False)
class StratifiedFit(SmoothFit):
    """A :class:`~er_evaluation.estimators.ratio.SmoothFit` of a stratified sample
    (``theta = 1``, ``cov = n V̂`` so that ``theta/n cov`` is the stratified covariance of
    the means), with per-stratum parts: ``stratum_mean`` (H x k: each stratum's
    contribution to ``mean``, summing to it) and ``stratum_cov`` (H x k x k: each stratum's
    contribution to ``V̂``)."""

    strata: Strata
    stratum_mean: np.ndarray
    stratum_cov: np.ndarray

    @property
    def stratum_variance(self) -> np.ndarray:
        """Each stratum's contribution ``grad' V̂_h grad`` to the variance."""
        g = self.gradient
        return np.einsum("i,hij,j->h", g, self.stratum_cov, g)


def _take_all_share(sample: Sample) -> np.ndarray:
    """Per draw group, the factor turning the even share 1/|c| of a records-frame column
    into the take-all-first share: a true cluster with records in take-all strata is
    counted once, exactly, through those records (factor |c|/|c ∩ take-all| on its
    take-all draws, 0 on its draws elsewhere); other clusters keep 1/|c| (factor 1)."""
    st = sample.strata
    if st.row_factor is not None:
        return st.row_factor
    ones = np.ones(len(st.row_unit))
    if st.frame != "records" or not st.take_all.any():
        return ones
    in_ta = st.take_all[st.row_stratum]
    # every record of a take-all stratum is drawn once: its draws count |c ∩ take-all|
    k = np.bincount(st.row_unit[in_ta], weights=st.row_count[in_ta], minlength=len(sample.units))
    size = np.asarray(sample.probability, dtype=float)  # |c| for a records frame
    k_row = k[st.row_unit]
    return np.where(k_row > 0, np.where(in_ta, size[st.row_unit] / np.maximum(k_row, 1), 0.0), ones)


def fit_from_moments(
    phi: Smooth, mean: np.ndarray, V: np.ndarray, names: tuple[str, ...], n: int, **parts
) -> SmoothFit:
    """A :class:`~er_evaluation.estimators.ratio.SmoothFit` of ``phi`` at estimated means
    ``mean`` (ordered as ``names``) with their estimated covariance ``V``: value
    ``phi(mean) - ½ trace(Hess · V)`` (second-order bias correction, applied at each ratio
    as :func:`~er_evaluation.estimators.ratio.bias_corrected` does), variance
    ``grad' V grad`` (delta method). ``theta = 1`` (0 for a census of every stratum) and
    ``cov = n V`` so that the interval methods' ``theta/n cov`` is ``V``. ``parts`` go to :class:`StratifiedFit` (when given)."""
    index = {c: i for i, c in enumerate(names)}
    v, g, _ = phi.evaluate(mean, index)
    with np.errstate(invalid="ignore"):
        variance = float(g @ V @ g)
    plugin = float(v)
    # the same second-order correction as unstratified samples (at each ratio), with the
    # stratified covariance of the means in place of theta S / n
    value = float(bias_corrected(phi, mean, V, 1.0, 1, index))
    if np.isfinite(variance) and variance < 0:  # rounding on a zero variance
        variance = 0.0
    g = np.asarray(g, dtype=float)
    cls = StratifiedFit if parts else SmoothFit
    # a census of every stratum: theta = 0 tells the interval methods and the diagnostics
    census = "strata" in parts and bool(parts["strata"].take_all.all())
    influence = parts.pop("influence", np.zeros(0))
    return cls(
        phi=phi,
        names=names,
        Y=parts.pop("Y", mean[None, :]),
        multiplicity=parts.pop("multiplicity", np.ones(1)),
        n=n,
        theta=0.0 if census else 1.0,
        mean=mean,
        cov=V * n,
        plugin=plugin,
        value=value,
        variance=variance,
        gradient=g,
        influence=influence,
        **parts,
    )


def stratified_fit(
    phi: Smooth, columns: Mapping[str, np.ndarray], sample: Sample, scale: float
) -> StratifiedFit:
    """Stratified estimate of ``phi`` of population means (see the module docstring).

    ``columns`` maps each column ``phi`` reads to per-unit values (one per distinct unit of
    ``sample``, as built by :func:`~er_evaluation.estimators.pairwise.pairwise_function`);
    ``sample.strata`` gives the draw groups and stratum sizes; ``scale`` is the population
    size N the means are taken over (records of the prediction).
    """
    st = sample.strata
    if st is None:
        raise ValueError("stratified_fit needs a sample with strata")
    names = phi.columns()
    index = {c: i for i, c in enumerate(names)}
    X = np.column_stack([np.asarray(columns[c], dtype=float) for c in names])
    H, k = len(st.names), X.shape[1]
    Xr = X[st.row_unit] * _take_all_share(sample)[:, None]
    m = st.row_count.astype(float)
    h = st.row_stratum
    n_h = st.n_draws.astype(float)
    F_h = st.frame_size.astype(float)
    sums = np.zeros((H, k))
    np.add.at(sums, h, m[:, None] * Xr)
    mean_h = sums / n_h[:, None]
    stratum_mean = F_h[:, None] * mean_h / scale
    mean = stratum_mean.sum(axis=0)
    dev = Xr - mean_h[h]
    second = np.zeros((H, k, k))
    np.add.at(second, h, m[:, None, None] * dev[:, :, None] * dev[:, None, :])
    fpc = st.fpc
    with np.errstate(invalid="ignore", divide="ignore"):
        S = second / (n_h - 1.0)[:, None, None]
    S[n_h <= 1] = np.nan  # one draw: no within-stratum variance estimate...
    S[fpc == 0] = 0.0  # ...unless the stratum is a census
    stratum_cov = (F_h**2 * fpc / n_h)[:, None, None] * S / scale**2
    V = stratum_cov.sum(axis=0)
    g = phi.evaluate(mean, index)[1]
    w = (F_h / n_h)[h]
    return fit_from_moments(
        phi,
        mean,
        V,
        names,
        int(st.row_count.sum()),
        Y=Xr,
        multiplicity=m,
        influence=(w[:, None] * dev / scale) @ np.asarray(g, dtype=float),
        strata=st,
        stratum_mean=stratum_mean,
        stratum_cov=stratum_cov,
    )


def stratified_interval(
    fit: StratifiedFit, level: float, method: str | None, *, bounds=(0.0, 1.0), **_
) -> tuple[float, float]:
    """Confidence interval of a stratified fit: ``score``, ``normal``, ``logit`` or
    ``fieller`` on the stratified variance (None: the package default); ``auto`` = Fieller
    for plain ratios, logit otherwise (differences: normal). Bootstrap methods are refused
    with a ValueError."""
    method = DEFAULT_CI_METHOD if method is None else method
    if method not in STRATIFIED_CI_METHODS:
        raise ValueError(
            f"ci_method {method!r} resamples draws without regard to strata; a stratified "
            f"sample supports {STRATIFIED_CI_METHODS}"
        )
    if fit.variance == 0:  # a census: every stratum taken entirely
        lo, hi = fit.value, fit.value
        if bounds is not None:
            lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
        return float(lo), float(hi)
    if method == "auto":
        if fit.phi.is_ratio():
            method = "fieller"
        else:
            method = "logit" if bounds == (0.0, 1.0) else "normal"
    return confidence_interval(fit, level, method, bounds=bounds)


def stratum_table(fit: StratifiedFit) -> pd.DataFrame:
    """Per-stratum parts of a stratified estimate: frame size, draws, selection
    probability, take-all flag, ``value`` (the metric evaluated on the stratum's own
    estimated totals: for ratio metrics, the metric on the stratum's records) and
    ``variance_share`` (the stratum's share of the estimate's variance; 0 for take-all
    strata)."""
    index = fit.index
    table = fit.strata.table()
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = fit.strata.frame_size.sum() / fit.strata.frame_size
        table["value"] = fit.phi.value(fit.stratum_mean * scale[:, None], index)
        var = fit.stratum_variance
        table["variance_share"] = (
            var / var.sum() if math.isfinite(var.sum()) and var.sum() > 0 else 0.0
        )
    return table


def stratum_contributions(
    prediction: pd.Series,
    sample: Sample,
    metric: str = "pairwise_precision",
    *,
    estimator: str | None = None,
    on_missing: str = "error",
) -> pd.DataFrame:
    """Per-stratum parts of the estimate of ``metric`` for ``prediction`` from a
    stratified ``sample`` (:func:`stratum_table`): frame size, draws, selection
    probability, take-all flag, the metric on the stratum alone and its share of the
    variance."""
    from er_evaluation.estimators._metric_fit import fit, metric_function
    from er_evaluation.estimators.api import _metric_for, _units

    if sample.strata is None:
        raise ValueError("per-stratum contributions need a stratified sample")
    ut = _units(prediction, sample, on_missing, True)
    _, phi, cols = metric_function(ut, _metric_for(sample, metric), estimator, 1.0)
    return stratum_table(fit(ut, phi, cols, False))
