"""Confidence interval methods for smooth-function estimates, selectable by ``ci_method``.

- ``"score"`` (the default; :func:`score_bounds`): for a ratio, Fieller's interval with
  Student's t, its quantiles corrected for the skewness of the draws (Hall 1992), when
  both its correct part and its errors rest on at least
  :data:`MIN_EVENTS` effective draws, otherwise the Clopper-Pearson interval on the
  Korn & Graubard (1998) effective counts (:func:`ratio_bounds`); for the plain mean of
  the record precision, Hall's (1992) skewness-corrected interval (:func:`hall_bounds`);
  a paired difference of two ratios over one denominator (recalls on the same draws) as
  the ratio it is, by the same skewness-corrected Fieller interval
  (:func:`skewed_fieller_bounds`); F-scores and other paired differences by MOVER from
  their parts' intervals (:func:`fscore_bounds`, :func:`mover_bounds`; Zou & Donner
  2008), an F-score always inside the F-measure box of its own precision and recall
  intervals;
- ``"auto"`` (the previous default): ``"fieller"`` for plain ratio estimators,
  ``"studentized"`` otherwise (F-scores, the record precision, cluster-level metrics,
  differences);
- ``"normal"``: estimate ± z·SE, the paper's normal approximation with eq. 9's variance;
- ``"logit"``: the normal interval on the logit scale (delta method, SE/(v(1-v))),
  transformed back: asymmetric near 0 and 1, where precision lives;
- ``"fieller"``: Fieller's interval for a ratio of two means (plain ratio estimators only):
  the set of R with (B̄ - R Ā)² <= z² Var(B̄ - R Ā);
- ``"fieller_t"``: Fieller's interval with the bootstrap quantiles of its studentized
  pivot (B̄ - R Ā)/SE in place of ±z (ratio estimators only);
- ``"percentile"``: bootstrap percentile interval over sampled units (draws resampled
  with replacement, multiplicities respected), shifted to the bias-corrected estimate;
- ``"studentized"``: bootstrap-t: quantiles of (phi* - phi)/SE* with SE* the delta-method
  standard error recomputed in every replicate; robust to the skewness that heavy-tailed
  cluster sizes give the ratio estimators;
- ``"jackknife"``: estimate ± z·SE with the delete-one jackknife standard error;
- ``"bca"``: bias-corrected and accelerated bootstrap percentile interval.

Bootstrap replicates are vectorised over the per-unit matrix (the n draws resampled with
replacement as one row of counts per replicate, one matrix product), with a fixed number
of replicates (cached per sample, so every metric reuses them) and a fixed
seed so results are reproducible. Intervals are clipped to the metric's range.
``DEFAULT_CI_METHOD`` is used when the caller passes ``ci_method=None``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.special import (  # scipy.stats would add ~1 s to every import
    betaincinv,
    expit,
    ndtr,
    ndtri,
    stdtrit,
)

from er_evaluation._parameters import (
    check_choice,
    check_level,
    check_n_boot,
    check_seed,
    z_value,
)
from er_evaluation.estimators.diagnostics import bounded_estimator as _bounded
from er_evaluation.estimators.ratio import (
    Column,
    FBeta,
    Linear,
    Smooth,
    SmoothFit,
    bias_corrected,
    draw_moments,
    draw_skewness,
)

__all__ = [
    "DEFAULT_CI_METHOD",
    "CI_METHODS",
    "check_interval_options",
    "confidence_interval",
    "interval",
    "N_BOOT",
]

DEFAULT_CI_METHOD = "score"
N_BOOT = 1000

Bounds = tuple[float, float]


def _clip(lo: float, hi: float, bounds: Bounds | None) -> tuple[float, float]:
    if bounds is not None:
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
    return float(lo), float(hi)


def normal_interval(
    fit: SmoothFit, level: float, bounds: Bounds | None, **_
) -> tuple[float, float]:
    """value ± z·SE (Binette et al. 2023, eq. 9 variance)."""
    z = z_value(level)
    return _clip(fit.value - z * fit.std_error, fit.value + z * fit.std_error, bounds)


def logit_interval(fit: SmoothFit, level: float, bounds: Bounds | None, **_) -> tuple[float, float]:
    """Normal interval for logit(value) with SE/(v(1-v)), mapped back to [0, 1]. Falls back
    to the clipped normal interval when the estimate is not strictly inside (0, 1)."""
    v, se = fit.value, fit.std_error
    if not 0.0 < v < 1.0:
        return normal_interval(fit, level, bounds)
    z = z_value(level)
    center, half = math.log(v / (1 - v)), z * se / (v * (1 - v))
    # expit rather than 1/(1+exp(-x)): exp overflows for estimates within ~1e-300 of 0 or 1
    lo, hi = (float(expit(center + s * half)) for s in (-1, 1))
    return _clip(lo, hi, bounds)


def _ratio_parts(fit: SmoothFit):
    if not fit.phi.is_ratio():
        raise ValueError("the Fieller interval applies to plain ratio estimators only")
    ib, ia = (fit.index[c.name] for c in fit.phi.args)
    return ia, ib


def fieller_interval(
    fit: SmoothFit, level: float, bounds: Bounds | None, **_
) -> tuple[float, float]:
    """Fieller's interval for a ratio of two column means B̄/Ā with covariance θ S / n:
    {R : (B̄ - R Ā)² <= z² Var(B̄ - R Ā)}."""
    ia, ib = _ratio_parts(fit)
    z = z_value(level)
    V = fit.theta / fit.n * fit.cov
    lo, hi = _fieller_roots(fit.mean[ia], fit.mean[ib], V[ia, ia], V[ib, ib], V[ia, ib], -z, z)
    return _clip(lo, hi, bounds)


def fieller_t_interval(
    fit: SmoothFit, level: float, bounds: Bounds | None, *, n_boot: int = N_BOOT, seed=0
) -> tuple[float, float]:
    """Studentized-bootstrap Fieller interval for a ratio: the pivot
    T(R) = (B̄ - R Ā)/SE(B̄ - R Ā) is a studentized mean, whose skewness under heavy-tailed
    units the bootstrap calibrates: its quantiles q* replace ±z in Fieller's equation."""
    ia, ib = _ratio_parts(fit)
    if fit.n < 2 or not np.isfinite(fit.std_error):
        return math.nan, math.nan
    if fit.std_error == 0:
        return _clip(fit.value, fit.value, bounds)
    r = fit.plugin
    counts = bootstrap_counts(fit.multiplicity, n_boot, seed)
    lin = fit.Y[:, ib] - r * fit.Y[:, ia]  # B - R A per unit; its mean is 0 at R = r
    lin = lin - fit.multiplicity @ lin / fit.n
    d = counts @ lin / fit.n
    var = (counts @ lin**2 / fit.n - d**2) * (fit.n / (fit.n - 1)) / fit.n
    sd = np.sqrt(np.clip(var, 0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sd > 0, d / sd, np.where(d == 0, 0.0, np.sign(d) * 1e6))
    alpha = 1 - level
    q_lo, q_hi = np.quantile(t, [alpha / 2, 1 - alpha / 2])
    V = fit.theta / fit.n * fit.cov
    lo, hi = _fieller_roots(
        fit.mean[ia], fit.mean[ib], V[ia, ia], V[ib, ib], V[ia, ib], float(q_lo), float(q_hi)
    )
    return _clip(lo, hi, bounds)


_COUNTS_CACHE: dict = {}


def bootstrap_counts(multiplicity: np.ndarray, n_boot: int, seed) -> np.ndarray:
    """``(n_boot, units)`` matrix of bootstrap draw counts: each replicate resamples the
    ``n`` draws with replacement (so a unit drawn k times is resampled from k copies).
    Cached per (multiplicities, n_boot, seed): every metric and prediction evaluated on one
    sample reuses the same replicates (consistent, and cheap)."""
    m = np.asarray(multiplicity, dtype=np.int64)
    key = (m.tobytes(), int(n_boot), repr(seed))
    counts = _COUNTS_CACHE.get(key)
    if counts is None:
        rng = np.random.default_rng(seed)
        n = int(m.sum())
        unit_of_draw = np.repeat(np.arange(len(m)), m)
        picks = unit_of_draw[rng.integers(0, n, size=(n_boot, n))]
        offsets = (np.arange(n_boot) * len(m))[:, None]
        counts = np.bincount((picks + offsets).ravel(), minlength=n_boot * len(m))
        counts = counts.reshape(n_boot, len(m)).astype(float)
        if len(_COUNTS_CACHE) > 32:
            _COUNTS_CACHE.clear()
        _COUNTS_CACHE[key] = counts
    return counts


def _fieller_roots(a, b, vaa, vbb, vab, q_lower: float, q_upper: float):
    """Endpoints {R : q_lower <= (b - R a)/sqrt(vbb - 2R vab + R² vaa) <= q_upper}: the
    lower endpoint solves the equation with q_upper (where b - R a > 0), the upper one
    with q_lower (b - R a < 0). Infinite when the quadratic has no such root."""

    def root(q: float, side: int) -> float:
        q2 = q * q
        qa, qb, qc = a * a - q2 * vaa, a * b - q2 * vab, b * b - q2 * vbb
        disc = qb * qb - qa * qc
        if qa <= 0 or disc < 0 or not np.isfinite(disc):
            return side * math.inf
        return (qb + side * math.sqrt(disc)) / qa

    lo = root(q_upper, -1) if q_upper > 0 else -math.inf
    hi = root(q_lower, +1) if q_lower < 0 else math.inf
    return lo, hi


def _replicates(fit: SmoothFit, n_boot: int, seed, studentized: bool):
    counts = bootstrap_counts(fit.multiplicity, n_boot, seed)
    dev = fit.Y - fit.mean  # centred: no cancellation in the replicate covariances
    D = counts @ dev / fit.n
    M = fit.mean + D
    if not studentized:
        return fit.phi.value(M, fit.index), None
    v, g, _ = fit.phi.evaluate(M, fit.index)
    second = counts @ np.einsum("ui,uj->uij", dev, dev).reshape(len(dev), -1) / fit.n
    k = dev.shape[1]
    cov = (second.reshape(-1, k, k) - D[:, :, None] * D[:, None, :]) * (fit.n / (fit.n - 1))
    var = np.einsum("bi,bij,bj->b", g, cov, g) / fit.n
    return v, np.sqrt(np.clip(var, 0, None))


def percentile_interval(
    fit: SmoothFit, level: float, bounds: Bounds | None, *, n_boot: int = N_BOOT, seed=0
) -> tuple[float, float]:
    """Bootstrap percentile interval of phi(means*), shifted by the bias correction and
    scaled by sqrt(theta) for sampling without replacement."""
    if fit.n < 2 or not np.isfinite(fit.std_error):
        return math.nan, math.nan
    v, _ = _replicates(fit, n_boot, seed, studentized=False)
    d = v[np.isfinite(v)] - fit.plugin
    if len(d) == 0:
        return normal_interval(fit, level, bounds)
    alpha = 1 - level
    qlo, qhi = np.quantile(d, [alpha / 2, 1 - alpha / 2])
    s = math.sqrt(fit.theta)
    return _clip(fit.value + s * qlo, fit.value + s * qhi, bounds)


def studentized_interval(
    fit: SmoothFit, level: float, bounds: Bounds | None, *, n_boot: int = N_BOOT, seed=0
) -> tuple[float, float]:
    """Bootstrap-t interval: [v - q_{1-a/2}(t*) SE, v - q_{a/2}(t*) SE] with
    t* = (phi* - phi)/SE*, SE* the delta-method SE of each replicate."""
    se = fit.std_error
    if fit.n < 2 or not np.isfinite(se):
        return math.nan, math.nan
    if se == 0:
        return _clip(fit.value, fit.value, bounds)
    v, se_star = _replicates(fit, n_boot, seed, studentized=True)
    d = v - fit.plugin
    with np.errstate(divide="ignore", invalid="ignore"):
        t = d / se_star
    t = np.where(se_star > 0, t, np.where(d == 0, 0.0, np.sign(d) * 1e6))
    t = t[np.isfinite(t)]
    if len(t) == 0:
        return normal_interval(fit, level, bounds)
    alpha = 1 - level
    qlo, qhi = np.quantile(t, [alpha / 2, 1 - alpha / 2])
    return _clip(fit.value - qhi * se, fit.value - qlo * se, bounds)


def _jackknife(fit: SmoothFit) -> tuple[np.ndarray, np.ndarray]:
    """phi at the leave-one-draw-out means (one value per distinct unit; a unit drawn k
    times stands for k identical deletions) and the draw weights."""
    m = fit.multiplicity
    loo = (fit.n * fit.mean - fit.Y) / (fit.n - 1)
    return fit.phi.value(loo, fit.index), m


def jackknife_interval(
    fit: SmoothFit, level: float, bounds: Bounds | None, **_
) -> tuple[float, float]:
    """value ± z·SE_jack with the delete-one jackknife variance over draws,
    theta (n-1)/n Σ (phi_(i) - mean phi_(.))², usually a little larger than the
    linearised variance for ratios when a few large units dominate."""
    if fit.n < 2:
        return math.nan, math.nan
    v, m = _jackknife(fit)
    if not np.isfinite(v).all():
        return normal_interval(fit, level, bounds)
    center = m @ v / fit.n
    var = fit.theta * (fit.n - 1) / fit.n * float(m @ (v - center) ** 2)
    z = z_value(level)
    half = z * math.sqrt(var)
    return _clip(fit.value - half, fit.value + half, bounds)


def bca_interval(
    fit: SmoothFit, level: float, bounds: Bounds | None, *, n_boot: int = N_BOOT, seed=0
) -> tuple[float, float]:
    """Bias-corrected and accelerated bootstrap interval (Efron 1987): percentiles of
    phi* at levels adjusted by the bootstrap bias z0 and the jackknife acceleration a."""
    if fit.n < 2 or not np.isfinite(fit.std_error):
        return math.nan, math.nan
    if fit.std_error == 0:
        return _clip(fit.value, fit.value, bounds)
    v, _ = _replicates(fit, n_boot, seed, studentized=False)
    v = v[np.isfinite(v)]
    jack, m = _jackknife(fit)
    if len(v) == 0 or not np.isfinite(jack).all():
        return normal_interval(fit, level, bounds)
    prop = (np.sum(v < fit.plugin) + 0.5 * np.sum(v == fit.plugin)) / len(v)
    z0 = ndtri(min(max(prop, 1 / (2 * len(v))), 1 - 1 / (2 * len(v))))
    u = m @ jack / fit.n - jack
    denom = 6.0 * float(m @ u**2) ** 1.5
    a = float(m @ u**3) / denom if denom > 0 else 0.0
    z = z_value(level)
    qs = []
    for zz in (-z, z):
        w = z0 + zz
        qs.append(ndtr(z0 + w / (1 - a * w)))
    lo, hi = np.quantile(v, qs)
    shift, s = fit.value - fit.plugin, math.sqrt(fit.theta)
    return _clip(
        fit.plugin + shift + s * (lo - fit.plugin),
        fit.plugin + shift + s * (hi - fit.plugin),
        bounds,
    )


def wilson_bounds(value, std_error, n_fallback, z):
    """Wilson's (1927) score interval for a proportion on an effective sample size,
    vectorised: ``n* = v(1-v)/SE²`` (Kish's design effect; Korn & Graubard 1998), or
    ``n_fallback`` when that is undefined (SE 0, or ``v`` at 0 or 1), with quantile ``z``:

        (v + z²/(2n*) ± z sqrt(v(1-v)/n* + z²/(4n*²))) / (1 + z²/n*)

    For an interior estimate with a positive SE this is the normal interval pulled towards
    1/2 by ``z²/(2n*)``; at 0 or 1 it is the score interval of ``n_fallback`` all-equal
    units (``[n/(n + z²), 1]`` at 1), never zero-width. ``v`` is first clipped to [0, 1]."""
    v = np.clip(np.asarray(value, dtype=float), 0.0, 1.0)
    se = np.asarray(std_error, dtype=float)
    z2 = z * z
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        pq = v * (1 - v)
        measured = (se > 0) & (pq > 0)
        from_se = pq / np.where(measured, se, 1.0) ** 2
        n_star = np.where(measured, from_se, n_fallback)
        # the formula above multiplied through by n*, so that it stays finite at both ends:
        # n* -> 0 (an SE too large to square) gives [0, 1], n* = inf (an SE too small to
        # square) the point v
        widest = measured & (from_se == 0)
        point = measured & np.isinf(from_se)
        n_star = np.where((n_star > 0) & ~point, n_star, np.nan)
        center = (n_star * v + z2 / 2) / (n_star + z2)
        half = z * np.sqrt(n_star * pq + z2 / 4) / (n_star + z2)
        # the score interval always holds v; rounding must not put v outside (at v = 1 the
        # upper end (n* + z^2) / (n* + z^2) can round to 1 - 1e-16)
        low = np.where(widest, 0.0, np.where(point, v, np.clip(center - half, 0.0, v)))
        high = np.where(widest, 1.0, np.where(point, v, np.clip(center + half, v, 1.0)))
    return low, high


def hall_bounds(value, std_error, skewness, n, q):
    """Hall's (1992) skewness-corrected interval for a mean, vectorised. The studentized
    mean ``T = (x̄ - μ)/SE`` of draws with skewness ``γ`` is skewed by ``-γ/sqrt(n)``; the
    monotone cubic ``g(T) = T + a T²/3 + a² T³/27 + a/6`` with ``a = γ̂/sqrt(n)`` is
    nearly standard normal, so

        μ ∈ [x̄ - SE g⁻¹(q), x̄ - SE g⁻¹(-q)],   g⁻¹(u) = (3/a) ((1 + a (u - a/6))^(1/3) - 1)

    (``g⁻¹(u) = u`` at ``a = 0``: the symmetric interval x̄ ± q SE). Right-skewed draws
    (``γ̂ > 0``) give a longer upper side: a sample that missed the rare large draws has
    both a low mean and a low SE. ``q``: the quantile (e.g. Student's t). The quantiles
    ``g⁻¹(±q)`` are :func:`skewness_quantiles`'s, shared with the ratio's interval."""
    v = np.asarray(value, dtype=float)
    se = np.asarray(std_error, dtype=float)
    q_lo, q_hi = skewness_quantiles(skewness, n, 1.0, q)
    return v - se * q_hi, v - se * q_lo


def _quad(c, M):
    return np.einsum("...i,...ij,...j->...", c, M, c)


def _ratio_weights(phi: Smooth, index) -> tuple[np.ndarray, np.ndarray] | None:
    """``(c_num, c_den)``, weights over the columns with ``phi = c_num'M / c_den'M`` when
    ``phi`` is a ratio of two linear combinations of column means, else None: a plain ratio
    ``B/A``, and an F-score of two ratios sharing their numerator (precision ``x/a_p`` and
    recall ``x/a_t`` of one sample: ``F_beta = (1+beta²) x / (beta² a_t + a_p)``)."""
    k = len(index)

    def unit(name: str) -> np.ndarray:
        e = np.zeros(k)
        e[index[name]] = 1.0
        return e

    if phi.is_ratio():
        num, den = phi.args
        return unit(num.name), unit(den.name)
    if isinstance(phi, FBeta) and all(a.is_ratio() for a in phi.args):
        (xp, ap), (xr, at) = (a.args for a in phi.args)
        if xp.name == xr.name:
            b2 = phi.beta**2
            return (1 + b2) * unit(xp.name), b2 * unit(at.name) + unit(ap.name)
    return None


def fieller_bounds(mean, cov, theta, n, weights, z, z_upper=None):
    """Fieller's (1954) interval for the ratio ``c_num'M / c_den'M`` of linear combinations
    of column means, vectorised: ``{R : -z_upper <= (b - R a) / SE(b - R a) <= z}`` (``z``
    and ``z_upper`` positive, ``z_upper`` defaulting to ``z``: the symmetric
    ``(b - R a)² <= z² Var(b - R a)``). The lower end solves the equation with ``z``, the
    upper end with ``z_upper``. Returns ``(lo, hi, bounded)``; where a quadratic has no
    finite solution set (denominator not significantly positive) ``bounded`` is False and
    the bounds are ±inf."""
    cn, cd = weights
    V = cov * (theta / np.asarray(n, dtype=float))[..., None, None]
    a, b = mean @ cd, mean @ cn
    vaa, vbb, vab = _quad(cd, V), _quad(cn, V), np.einsum("...i,...ij,...j->...", cd, V, cn)

    def roots(q):
        q2 = q * q
        qa, qb, qc = a * a - q2 * vaa, a * b - q2 * vab, b * b - q2 * vbb
        disc = qb * qb - qa * qc
        ok = (qa > 0) & (disc >= 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            root = np.sqrt(np.where(ok, disc, 0.0))
            den = np.where(ok, qa, 1.0)
            return (qb - root) / den, (qb + root) / den, ok

    lo, _, ok_lo = roots(z)
    _, hi, ok_hi = roots(z if z_upper is None else z_upper)
    ok = ok_lo & ok_hi
    return np.where(ok, lo, -np.inf), np.where(ok, hi, np.inf), ok


def skewed_fieller_bounds(mean, cov, theta, n, weights, t, draws=None):
    """Fieller's interval of the ratio ``b/a = c_num'M / c_den'M`` (:func:`fieller_bounds`)
    whose pivot ``(b - R a)/SE`` takes, in place of ``±t``, the quantiles of a studentized
    mean of draws with the skewness of the per-draw ``B - R̂ A`` (R̂ the plug-in ratio;
    :func:`skewness_quantiles`, Hall 1992): when a few draws carry most of the numerator,
    the interval stretches towards them. ``draws``: ``(Y, multiplicity)``, the draws'
    columns (..., units, k) and draws per unit (None: one each), or None (the symmetric
    ``±t`` from ``mean`` and ``cov``). With draws, the ratio's two sides are formed per
    draw (``Y c_num``, ``Y c_den``: a difference of two versions' columns is exactly 0
    where they agree) and their moments and skewness computed from them, centred
    (:func:`~er_evaluation.estimators.ratio.draw_moments`,
    :func:`~er_evaluation.estimators.ratio.draw_skewness`): contracting the k columns'
    moments instead cancels. Returns ``(lo, hi, bounded)`` as :func:`fieller_bounds`."""
    n_ = np.asarray(n, dtype=float)
    if draws is None:
        return fieller_bounds(mean, cov, theta, n_, weights, t, t)
    Y, multiplicity = draws
    sides = np.stack([Y @ weights[0], Y @ weights[1]], axis=-1)
    mean, cov = draw_moments(sides, multiplicity)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = mean[..., 0] / mean[..., 1]
    c = np.stack([np.ones_like(r), -r], axis=-1)
    q_lo, q_hi = skewness_quantiles(draw_skewness(sides, c, multiplicity), n_, theta, t)
    usable = (q_lo < 0) & (q_hi > 0)
    q_lo, q_hi = np.where(usable, q_lo, -t), np.where(usable, q_hi, t)
    return fieller_bounds(mean, cov, theta, n_, _SIDES, q_hi, -q_lo)


_SIDES = (np.array([1.0, 0.0]), np.array([0.0, 1.0]))


def skewness_quantiles(gamma, n, theta, q):
    """Quantiles ``(q_low, q_high)`` of a studentized mean whose draws have skewness
    ``gamma``, for the symmetric quantile ``q`` (normal or Student's t), by Hall's (1992)
    monotone transformation of the Edgeworth expansion: with ``a = γ_n/3`` and
    ``b = γ_n/6``, ``γ_n = gamma (2θ - 1)/sqrt(θ n)`` the skewness of the mean of n draws
    (θ = 1 - n/N the finite-population correction; 1 for draws with replacement),

        g(T) = T + a T² + a² T³/3 + b   is about N(0, 1),

    so ``T``'s quantiles are ``g⁻¹(∓q) = ((1 + 3a(∓q - b))^(1/3) - 1)/a`` (``∓q`` when
    ``a`` is 0; computed without cancellation for tiny ``a``). A right-skewed column (``gamma > 0``) has a left-skewed studentized mean:
    both quantiles move down. Vectorised; returns ``(-q, q)`` where ``gamma`` is not
    finite."""
    g = np.nan_to_num(np.asarray(gamma, dtype=float), nan=0.0, posinf=0.0, neginf=0.0)
    th = np.asarray(theta, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        g_n = g * (2 * th - 1) / np.sqrt(np.where(th > 0, th, 1.0) * np.asarray(n, float))
    a, b = g_n / 3, g_n / 6

    def inverse(y):
        # ((1 + u)^(1/3) - 1)/a with u = 3a(y - b), as 3(y - b)/(c² + c + 1), c = (1 + u)^(1/3):
        # no cancellation when a is tiny, and y - b = y at a = 0
        c = np.cbrt(1 + 3 * a * (y - b))
        return 3 * (y - b) / (c * c + c + 1)

    return inverse(-q), inverse(q)


MIN_EVENTS = 8.0
"""Effective number of draws carrying each side of a ratio (its correct part ``B`` and
its errors ``A - B``) from which :func:`ratio_bounds` trusts the sample variance (Fieller's
interval) rather than the counts (Clopper-Pearson on effective counts)."""


def kish_size(mean, var, n):
    """Kish's (1965) effective number of draws ``(Σ y)² / Σ y²`` of a non-negative per-draw
    column, from its mean ``ȳ``, sample variance ``s²`` (divisor n - 1) and number of draws
    ``n``: ``n² ȳ² / ((n - 1) s² + n ȳ²)`` (0 for an all-zero column). Vectorised."""
    n = np.asarray(n, dtype=float)
    mean = np.asarray(mean, dtype=float)
    second = (n - 1) * np.clip(var, 0.0, None) + n * mean * mean
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(second > 0, n * n * mean * mean / np.where(second > 0, second, 1.0), 0.0)


def clopper_pearson(errors, trials, level):
    """Clopper & Pearson's (1934) interval ``(lo, hi)`` of a proportion with ``errors``
    successes in ``trials`` (both may be fractional effective counts: the beta quantiles
    ``B(a/2; x, n - x + 1)`` and ``B(1 - a/2; x + 1, n - x)``; 0 and 1 at the ends).
    Vectorised."""
    x = np.asarray(errors, dtype=float)
    m = np.asarray(trials, dtype=float)
    a = (1.0 - level) / 2.0
    tiny = 1e-12
    with np.errstate(invalid="ignore", divide="ignore", over="ignore", under="ignore"):
        lo = np.where(
            x > tiny, betaincinv(np.maximum(x, tiny), np.maximum(m - x + 1, tiny), a), 0.0
        )
        hi = np.where(m - x > tiny, betaincinv(x + 1, np.maximum(m - x, tiny), 1 - a), 1.0)
    return lo, hi


def ratio_bounds(value, mean, cov, theta, n, weights, level, *, df=None, draws=None):
    """The score interval of a bounded ratio ``R = b/a`` (``b = c_num'M``, ``a = c_den'M``
    with ``0 <= B <= A`` on every draw: precision, recall), vectorised over leading axes.

    ``value``: the bias-corrected estimate; ``mean`` (..., k), ``cov`` (..., k, k): the
    column means and sample covariance over the ``n`` draws; ``theta``: the
    finite-population correction; ``df``: degrees of freedom (default ``n - 1``).

    - When both sides of the ratio are carried by at least :data:`MIN_EVENTS` effective
      draws (Kish sizes of ``B`` and of the errors ``A - B``), the sample variance is
      trusted: Fieller's (1954) interval with Student's t on ``df``
      (``{R : (b - R a)² <= t² Var(b - R a)}``). With ``draws`` (``(Y, multiplicity)``,
      ``SmoothFit.pooled_draws``) the pivot ``(b - R a)/SE`` takes the
      quantiles of a studentized mean of skewed draws instead of ±t
      (:func:`skewness_quantiles`, Hall 1992; the skewness of ``B - R̂ A`` per draw): when
      a few draws carry most errors (large clusters split or merged), the interval
      stretches towards more errors and draws in on the other side.
    - Otherwise (rare errors, an estimate at 0 or 1, few draws) the interval is built on
      effective counts: the Korn & Graubard (1998) effective sample size
      ``n* = v(1-v)/V · (z/t_df)²`` (V the delta-method variance), capped by the counts of
      the rare side when it rests on fewer than ``min(MIN_EVENTS, n/2)`` effective draws
      (``n* <= k_e/((1-v) theta)``: a handful of error-carrying draws cannot make the error
      share precise, however small their spread), and, when V is 0 (no error seen: ``v`` at
      0 or 1), the Kish size of the denominator ``k_a/theta``; then the Clopper-Pearson
      interval of ``n*(1-v)`` errors in ``n*`` (at 1: ``[(a/2)^(1/n*), 1]``).

    Returns ``(lo, hi)`` containing ``value`` (clipped to [0, 1])."""
    cn, cd = weights
    n_ = np.asarray(n, dtype=float)
    df = np.maximum(n_ - 1.0, 1.0) if df is None else np.maximum(np.asarray(df, float), 1.0)
    t = stdtrit(df, 0.5 + level / 2)
    z = z_value(level)
    b, a = mean @ cn, mean @ cd
    sbb, saa, sab = _quad(cn, cov), _quad(cd, cov), np.einsum("...i,...ij,...j->...", cd, cov, cn)
    # a side whose total is rounding noise of the denominator's carries no draw
    noise = 1e-12 * np.abs(a)
    k_c = np.where(b > noise, kish_size(b, sbb, n_), 0.0)
    k_a = kish_size(a, saa, n_)
    k_e = np.where(a - b > noise, kish_size(a - b, saa + sbb - 2 * sab, n_), 0.0)
    v = np.clip(np.asarray(value, dtype=float), 0.0, 1.0)
    v = np.where(k_e == 0, 1.0, np.where(k_c == 0, 0.0, v))  # no error / no correct link
    with np.errstate(invalid="ignore", divide="ignore"):
        r = b / a
        var = theta / n_ * (sbb - 2 * r * sab + r * r * saa) / (a * a)
        pq = v * (1 - v)
        adj = (z / t) ** 2
        n_star = np.where((var > 0) & (pq > 0), pq / np.where(var > 0, var, 1.0) * adj, np.nan)
        few = np.minimum(MIN_EVENTS, n_ / 2) * (1 - 1e-9)
        cap_e = (k_e < few) & (v < 1)
        cap_c = (k_c < few) & (v > 0)
        n_star = np.where(cap_e, np.fmin(n_star, k_e / np.where(v < 1, 1 - v, 1.0) / theta), n_star)
        n_star = np.where(cap_c, np.fmin(n_star, k_c / np.where(v > 0, v, 1.0) / theta), n_star)
        n_star = np.where(np.isfinite(n_star) & (n_star > 0), n_star, k_a / theta)
    e_lo, e_hi = clopper_pearson(n_star * (1 - v), n_star, level)
    lo, hi = 1 - e_hi, 1 - e_lo
    flo, fhi, ok = skewed_fieller_bounds(mean, cov, theta, n_, weights, t, draws)
    # a zero sample variance (every draw with the same error share) says nothing about
    # how the unseen units vary: the counts decide then
    many = ok & (var > 0) & (k_e >= MIN_EVENTS * (1 - 1e-9)) & (k_c >= MIN_EVENTS * (1 - 1e-9))
    lo, hi = np.where(many, flo, lo), np.where(many, fhi, hi)
    defined = np.isfinite(np.asarray(value, dtype=float)) & (a > 0)
    return _contain(value, np.where(defined, lo, np.nan), np.where(defined, hi, np.nan), (0.0, 1.0))


def mover_bounds(values, lows, highs, weights, corr=None):
    """Interval of ``Σ_h w_h θ_h`` from intervals ``[l_h, u_h]`` of its parts, by the method
    of variance estimates recovery (MOVER; Zou & Donner 2008, Newcombe 2011):

        L = Σ w θ̂ - sqrt(Σ_g Σ_h r_gh d_g d_h),   d_h = |w_h| (θ̂_h - l_h) (u_h for w_h < 0)
        U = Σ w θ̂ + sqrt(Σ_g Σ_h r_gh e_g e_h),   e_h = |w_h| (u_h - θ̂_h) (l_h for w_h < 0)

    with ``r`` the correlations of the parts' estimates (signed by the weights; identity
    when ``corr`` is None: independent parts). ``values``, ``lows``, ``highs``: shape
    (H, ...); ``weights``: (H,); ``corr``: (..., H, H) or None. Each part's own interval
    carries its asymmetry (skewness, a boundary) into the combination."""
    V, Lo, Hi = (np.asarray(x, dtype=float) for x in (values, lows, highs))
    w = np.asarray(weights, dtype=float).reshape((-1,) + (1,) * (V.ndim - 1))
    est = np.sum(w * V, axis=0)
    down = np.where(w >= 0, V - Lo, Hi - V) * np.abs(w)
    up = np.where(w >= 0, Hi - V, V - Lo) * np.abs(w)
    if corr is None:
        return est - np.sqrt(np.sum(down**2, axis=0)), est + np.sqrt(np.sum(up**2, axis=0))
    s = np.sign(np.asarray(weights, dtype=float))
    R = np.asarray(corr, dtype=float) * (s[:, None] * s[None, :])
    D, U_ = np.moveaxis(down, 0, -1), np.moveaxis(up, 0, -1)
    lo = est - np.sqrt(np.clip(np.einsum("...g,...gh,...h->...", D, R, D), 0.0, None))
    hi = est + np.sqrt(np.clip(np.einsum("...g,...gh,...h->...", U_, R, U_), 0.0, None))
    return lo, hi


def fscore_bounds(p, p_lo, p_hi, r, r_lo, r_hi, beta, rho):
    """Interval of ``F_beta(P, R)`` from the intervals of its parts, MOVER for a function
    increasing in both (Zou & Donner 2008): with ``F = F_beta(P̂, R̂)``,

        L = F - sqrt(dp² + dr² + 2 ρ dp dr),   dp = F - F(l_P, R̂),  dr = F - F(P̂, l_R)
        U = F + sqrt(ep² + er² + 2 ρ ep er),   ep = F(u_P, R̂) - F,  er = F(P̂, u_R) - F

    (``rho``: correlation of P̂ and R̂, 0 for independent samples), then kept inside the
    F-measure box ``[F(l_P, l_R), F(u_P, u_R)]`` of the parts' intervals, so an F-score's
    interval is never wider than what its own P and R intervals allow. An undefined part
    (NaN) leaves the interval undefined."""
    b2 = float(beta) ** 2

    def F(pp, rr):
        pp, rr = np.asarray(pp, dtype=float), np.asarray(rr, dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            d = b2 * pp + rr
            # F(0, 0) is 0 at the box's corner; F of an undefined part is undefined
            zero = np.where(np.isnan(d), np.nan, 0.0)
            return np.where(d > 0, (1 + b2) * pp * rr / np.where(d > 0, d, 1.0), zero)

    f = F(p, r)
    dp, dr = f - F(p_lo, r), f - F(p, r_lo)
    ep, er = F(p_hi, r) - f, F(p, r_hi) - f
    rho = np.clip(np.nan_to_num(np.asarray(rho, dtype=float)), -1.0, 1.0)
    lo = f - np.sqrt(np.clip(dp**2 + dr**2 + 2 * rho * dp * dr, 0.0, None))
    hi = f + np.sqrt(np.clip(ep**2 + er**2 + 2 * rho * ep * er, 0.0, None))
    box_lo, box_hi = F(p_lo, r_lo), F(p_hi, r_hi)
    return np.clip(lo, box_lo, box_hi), np.clip(hi, box_lo, box_hi)


def _part(phi: Smooth, mean, cov, theta, n, index):
    """Bias-corrected value, gradient and delta-method SE of one part of an estimate (a
    variance at the rounding level of its terms is 0: a correlation must not be read off
    rounding noise)."""
    v = bias_corrected(phi, mean, cov, theta, n, index)
    _, g, _ = phi.evaluate(mean, index)
    with np.errstate(invalid="ignore"):
        k = theta / np.asarray(n, dtype=float)
        var = k * _quad(g, cov)
        # the rounding noise of g'Sg is relative to the sum of its terms' magnitudes
        var = np.where(var <= 1e-10 * k * _quad(np.abs(g), np.abs(cov)), 0.0, var)
    return v, g, np.sqrt(np.clip(var, 0.0, None))


def _correlation(ga, sa, gb, sb, cov, theta, n):
    """Delta-method correlation of two estimates with gradients ``ga``, ``gb`` and SEs."""
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.einsum("...i,...ij,...j->...", ga, cov, gb) * theta / np.asarray(n, float)
        r = np.where((sa > 0) & (sb > 0), c / np.where(sa * sb > 0, sa * sb, 1.0), 0.0)
    return np.clip(np.nan_to_num(r), -1.0, 1.0)


def _min_kish(mean, cov, n):
    """The smallest Kish size over the columns with a non-zero mean (0 when none)."""
    k = kish_size(mean, np.diagonal(cov, axis1=-2, axis2=-1), np.asarray(n, float)[..., None])
    k = np.where(np.asarray(mean) != 0, k, np.inf).min(axis=-1)
    return np.where(np.isfinite(k), k, 0.0)


def score_bounds(
    phi: Smooth,
    mean: np.ndarray,
    cov: np.ndarray,
    theta: float,
    n,
    index,
    level: float,
    bounds: Bounds | None,
    *,
    bounded: bool = True,
    paired: bool = True,
    draws=None,
):
    """The ``"score"`` interval (the default), vectorised over leading axes of ``mean``
    (..., k), ``cov`` (..., k, k: sample covariance over the ``n`` draws) and ``draws``
    (``(Y, multiplicity)``: the draws' columns (..., units, k) and draws per unit, None
    for one each, as ``SmoothFit.pooled_draws``; ``draws=None``: no skewness correction)
    so the coverage benchmark evaluates all replicates at once.

    - a plain ratio ``B/A`` of columns with ``0 <= B <= A`` per draw (``bounded``:
      precision, recall): :func:`ratio_bounds` (Fieller with Student's t, corrected for the
      skewness of the draws when ``draws`` is given, when both sides of the ratio rest on
      enough draws; Clopper-Pearson on effective counts otherwise);
    - an F-score: :func:`fscore_bounds` from its precision and recall parts' own intervals
      and their correlation, inside the F-measure box of those intervals;
    - a paired difference ``phi_a - phi_b`` (bounds [-1, 1]) of two ratios over one and
      the same denominator column (recall under two predictions on the same draws: the
      true links): the difference is itself the ratio ``(b_a - b_b)/a`` of a signed
      numerator, and its interval is Fieller's with Hall's (1992) skewness-corrected
      quantiles (:func:`skewed_fieller_bounds`, the ratio's own interval), where that is
      bounded and ``draws`` is given. A few draws carry the change (the clusters one
      prediction fixed): its right skew is what the interval corrects for;
    - another paired difference, or one whose Fieller interval is unbounded:
      :func:`mover_bounds` of the parts' intervals (without the skewness correction)
      with the correlation of the two estimates (Zou & Donner 2008), or without it
      (``paired=False``: as if independent, wider) when the sample holds no draw where
      the two predictions differ although their populations do;
    - a plain mean of one column (the record precision, whose per-draw values
      ``N f(c)/(|P| |c|)`` are not confined to [0, 1] and are right-skewed): Hall's (1992)
      skewness-corrected interval (:func:`hall_bounds`) with the draws' skewness and
      Student's t on ``n - 1`` degrees of freedom; Wilson's interval below when the SE is
      0 (every draw equal);
    - another metric in [0, 1]: Wilson's (1927) interval on the Korn & Graubard (1998)
      effective sample size (:func:`wilson_bounds`);
    - anything else: value ± z·SE.

    The interval always contains the estimate (clipped to ``bounds``); a census
    (``theta == 0``) gives the zero-width interval at the exact value. Coverage across
    truths, error mechanisms, rates and sample sizes: ``benchmarks/README.md``
    (``bench_coverage.py``)."""
    z = z_value(level)
    value = bias_corrected(phi, mean, cov, theta, n, index)
    if theta == 0:
        return value, value
    if isinstance(phi, Linear) and len(phi.args) == 2 and phi.coefs == (1.0, -1.0):
        (va, ga, sa), (vb, gb, sb) = (_part(a, mean, cov, theta, n, index) for a in phi.args)
        (la, ha), (lb, hb) = (
            # the parts without the skewness correction: with the two estimates' correlation
            # near 1, MOVER turns the parts' shifted ends into a difference interval that
            # misses more often below the true improvement (bench_coverage, split entities)
            score_bounds(a, mean, cov, theta, n, index, level, (0.0, 1.0), bounded=bounded)
            for a in phi.args
        )
        r = _correlation(ga, sa, gb, sb, cov, theta, n) if paired else 0.0
        lo, hi = mover_bounds([va, vb], [la, lb], [ha, hb], [1.0, -1.0], _pair_corr(r))
        # only with the skewness correction: Fieller's symmetric pivot, like the uncorrected
        # parts, misses below when the sample holds few of the draws that carry the change
        shared = (
            _shared_denominator(phi, mean, cov, index) if paired and draws is not None else None
        )
        if shared is not None:
            weights, same = shared
            t = stdtrit(np.maximum(np.asarray(n, float) - 1.0, 1.0), 0.5 + level / 2)
            flo, fhi, ok = skewed_fieller_bounds(mean, cov, theta, n, weights, t, draws)
            lo, hi = np.where(same & ok, flo, lo), np.where(same & ok, fhi, hi)
        return _contain(value, lo, hi, bounds)
    if isinstance(phi, FBeta):
        (vp, gp, sp), (vr, gr, sr) = (_part(a, mean, cov, theta, n, index) for a in phi.args)
        (lp, hp), (lr, hr) = (
            score_bounds(a, mean, cov, theta, n, index, level, bounds, bounded=bounded, draws=draws)
            for a in phi.args
        )
        rho = _correlation(gp, sp, gr, sr, cov, theta, n)
        lo, hi = fscore_bounds(vp, lp, hp, vr, lr, hr, phi.beta, rho)
        return _contain(value, lo, hi, bounds)
    _, g, se = _part(phi, mean, cov, theta, n, index)
    if bounds is None or tuple(bounds) != (0.0, 1.0):
        return _contain(value, value - z * se, value + z * se, bounds)
    if phi.is_ratio() and bounded:
        return ratio_bounds(
            value, mean, cov, theta, n, _ratio_weights(phi, index), level, draws=draws
        )
    n_eff = _min_kish(mean, cov, n)
    t = stdtrit(np.maximum(np.asarray(n, float) - 1.0, 1.0), 0.5 + level / 2)
    lo, hi = wilson_bounds(value, se * t / z, n_eff / theta, z)
    if isinstance(phi, Column):
        # Wilson's premise, per-draw values in [0, 1] (a variance that vanishes at 0 and 1),
        # fails for these draws: an estimate at or above 1 does not mean no error was seen
        skewness = 0.0 if draws is None else draw_skewness(draws[0], g, draws[1])
        hall_lo, hall_hi = hall_bounds(value, se, skewness, n, t)
        varies = np.isfinite(se) & (se > 0)
        lo, hi = np.where(varies, hall_lo, lo), np.where(varies, hall_hi, hi)
    return _contain(value, lo, hi, bounds)


def _shared_denominator(phi: Linear, mean, cov, index):
    """For a difference ``phi_a - phi_b`` of two ratios ``b_a/a_a - b_b/a_b`` (F-scores
    sharing their numerator included, :func:`_ratio_weights`) on the same draws:
    ``((c_num_a - c_num_b, c_den_a), same)`` with ``same`` (per leading index) where the
    two denominators are one and the same column (equal means, a zero variance of their
    per-draw difference: the true links of recall under two predictions), so that the
    difference is itself the ratio ``(b_a - b_b)/a``; None when the parts are not ratios."""
    parts = [_ratio_weights(a, index) for a in phi.args]
    if any(w is None for w in parts):
        return None
    (na, da), (nb, db) = parts
    dd = da - db
    scale = np.abs(mean) @ (np.abs(da) + np.abs(db))
    spread = _quad(np.abs(da) + np.abs(db), np.abs(cov))
    same = (np.abs(mean @ dd) <= 1e-12 * scale) & (_quad(dd, cov) <= 1e-12 * spread)
    return (na - nb, da), same


def _pair_corr(r):
    """The 2 x 2 correlation matrices (..., 2, 2) of correlations ``r`` (...)."""
    r = np.asarray(r, dtype=float)
    out = np.empty(r.shape + (2, 2))
    out[..., 0, 0] = out[..., 1, 1] = 1.0
    out[..., 0, 1] = out[..., 1, 0] = r
    return out


def _contain(value, lo, hi, bounds: Bounds | None):
    """Clip to ``bounds`` and widen to contain the (clipped) estimate: never inverted; an
    undefined estimate has no interval."""
    v = np.asarray(value, dtype=float)
    if bounds is not None:
        v = np.clip(v, *bounds)
        lo, hi = np.clip(lo, *bounds), np.clip(hi, *bounds)
    finite = np.isfinite(v)
    lo = np.where(finite, np.fmin(lo, v), np.nan)
    hi = np.where(finite, np.fmax(hi, v), np.nan)
    return lo, hi


def score_interval(fit: SmoothFit, level: float, bounds: Bounds | None, **_) -> tuple[float, float]:
    """The score interval of a fit (see :func:`score_bounds`)."""
    lo, hi = score_bounds(
        fit.phi,
        fit.mean,
        fit.cov,
        fit.theta,
        fit.n,
        fit.index,
        level,
        bounds,
        bounded=_bounded(fit.phi, fit.Y, fit.index),
        draws=fit.pooled_draws,
    )
    return float(lo), float(hi)


def auto_interval(
    fit: SmoothFit, level: float, bounds: Bounds | None, *, n_boot: int = N_BOOT, seed=0
) -> tuple[float, float]:
    """Fieller's interval for plain ratio estimators (pairwise precision and recall of
    every estimator except the record precision), the studentized bootstrap otherwise.
    The best-calibrated combination in our simulations on PatentsView (heavy-tailed
    cluster sizes), where the normal interval under-covers precision."""
    if fit.phi.is_ratio():
        return fieller_interval(fit, level, bounds)
    return studentized_interval(fit, level, bounds, n_boot=n_boot, seed=seed)


CI_METHODS: dict[str, Callable[..., tuple[float, float]]] = {
    "score": score_interval,
    "auto": auto_interval,
    "normal": normal_interval,
    "logit": logit_interval,
    "fieller": fieller_interval,
    "fieller_t": fieller_t_interval,
    "percentile": percentile_interval,
    "studentized": studentized_interval,
    "jackknife": jackknife_interval,
    "bca": bca_interval,
}


def check_interval_options(level, method: str | None, n_boot) -> tuple[float, str | None, int]:
    """``level``, ``ci_method`` and ``n_boot`` as every public entry point checks them:
    a level in (0, 1), a key of :data:`CI_METHODS` (or None for :data:`DEFAULT_CI_METHOD`)
    and, for a bootstrap method, enough replicates that the interval's ends are not the
    extreme replicates. Returns the checked values."""
    level = check_level(level)
    if method is not None:
        check_choice(method, "ci_method", CI_METHODS)
    return level, method, check_n_boot(n_boot, method or DEFAULT_CI_METHOD, level)


def confidence_interval(
    fit: SmoothFit,
    level: float = 0.95,
    method: str | None = None,
    *,
    bounds: Bounds | None = (0.0, 1.0),
    n_boot: int = N_BOOT,
    seed=0,
) -> tuple[float, float]:
    """``level`` confidence interval of ``fit.value`` by ``method`` (default
    :data:`DEFAULT_CI_METHOD`), clipped to ``bounds``. NaN when no variance exists."""
    level, method, n_boot = check_interval_options(level, method, n_boot)
    return interval(fit, level, method, bounds=bounds, n_boot=n_boot, seed=check_seed(seed))


def interval(
    fit: SmoothFit,
    level: float,
    method: str | None,
    *,
    bounds: Bounds | None = (0.0, 1.0),
    n_boot: int = N_BOOT,
    seed=0,
) -> tuple[float, float]:
    """:func:`confidence_interval` of arguments already checked at a public entry point."""
    method = DEFAULT_CI_METHOD if method is None else method
    if not np.isfinite(fit.std_error) or not np.isfinite(fit.value):
        return math.nan, math.nan
    f = CI_METHODS[method]
    if method in ("auto", "percentile", "studentized", "bca", "fieller_t"):
        return f(fit, level, bounds, n_boot=n_boot, seed=seed)
    return f(fit, level, bounds)
