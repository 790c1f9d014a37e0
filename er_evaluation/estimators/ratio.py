"""The generic bias-corrected ratio-of-means estimator (Binette et al. 2023, eq. 7-9) and its
generalisation to smooth functions of per-unit means.

A sample of ``n`` draws gives one row per draw of a per-unit matrix ``Y`` (columns are the
quantities the design needs, e.g. ``A_s`` and ``B_s``). Most population metrics are a
smooth function ``phi`` of the population means of these columns: a ratio ``B/A``
(eq. 7), an F-score of two ratios, a difference of two metrics (paired comparison). With
``Ybar`` the sample means and ``S`` the sample covariance (denominator ``n - 1``):

    estimate = phi(Ybar) - theta/(2n) * trace(H S)          (second-order bias correction)

(applied at each ratio; sums and F-scores combine the corrected ratios, see
:func:`bias_corrected`)
    variance = theta/n * grad' S grad                        (delta method)

with ``grad``, ``H`` the gradient and Hessian of ``phi`` at ``Ybar`` and
``theta = 1 - (n-1)/(T-1)`` when the population has ``T`` units and sampling is without
replacement (finite-population correction), else ``theta = 1``. For ``phi = B/A`` these are
exactly eq. 8 and eq. 9 of the paper (:func:`ratio_estimate` computes eq. 8-9 literally and
the tests check both agree). With one draw the estimate is ``phi(Ybar)`` and the variance
is NaN (no variance can be estimated from one unit).

Draws are given as distinct units with with-replacement multiplicities: a unit drawn
twice is two rows of ``Y`` (it is never dropped).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Smooth",
    "Column",
    "Linear",
    "Ratio",
    "FBeta",
    "SmoothFit",
    "bias_corrected",
    "draw_moments",
    "draw_skewness",
    "fpc",
    "smooth_estimate",
    "ratio_estimate",
]


def fpc(n: int, population_size: int | None, *, replace: bool) -> float:
    """Finite-population correction theta = 1 - (n-1)/(T-1) (Cochran 1977) when sampling
    ``n`` of ``T = population_size`` units without replacement, else 1."""
    if replace or population_size is None:
        return 1.0
    if n > population_size:
        raise ValueError(
            f"{n} draws without replacement from a population of {population_size} units"
        )
    if population_size <= 1:
        return 0.0
    return 1.0 - (n - 1) / (population_size - 1)


class Smooth:
    """A smooth function of named column means, evaluated with its gradient and Hessian.

    ``evaluate(M, index)`` takes means ``M`` of shape ``(..., k)`` (the last axis ordered
    by ``index``: column name -> position) and returns ``(value, gradient, hessian)`` of
    shapes ``(...)``, ``(..., k)``, ``(..., k, k)``: second-order forward differentiation by
    the chain rule, exact (no finite differences) and vectorised over leading axes (the
    bootstrap evaluates thousands of replicates at once).
    """

    def columns(self) -> tuple[str, ...]:
        """Names of the columns this function reads, in first-use order."""
        raise NotImplementedError

    def evaluate(self, M: np.ndarray, index: Mapping[str, int]):
        raise NotImplementedError

    def value(self, M: np.ndarray, index: Mapping[str, int]) -> np.ndarray:
        """Value only (cheaper than :meth:`evaluate`)."""
        raise NotImplementedError

    def rename(self, prefix: str) -> Smooth:
        """The same function of columns renamed ``prefix + name`` (to combine the per-unit
        matrices of several predictions in one paired comparison)."""
        raise NotImplementedError

    def is_ratio(self) -> bool:
        """True when the function is a plain ratio of two columns (Fieller's interval)."""
        return False


@dataclass(frozen=True)
class Column(Smooth):
    """The mean of one column."""

    name: str

    def columns(self):
        return (self.name,)

    def evaluate(self, M, index):
        k = M.shape[-1]
        v = M[..., index[self.name]]
        g = np.zeros(M.shape, dtype=float)
        g[..., index[self.name]] = 1.0
        return v, g, np.zeros(M.shape + (k,), dtype=float)

    def value(self, M, index):
        return M[..., index[self.name]]

    def rename(self, prefix):
        return Column(prefix + self.name)


class _Op(Smooth):
    """f(x_1, ..., x_m) of inner smooth functions; subclasses give f and its derivatives."""

    args: tuple[Smooth, ...]

    def columns(self):
        seen: dict[str, None] = {}
        for a in self.args:
            for c in a.columns():
                seen.setdefault(c, None)
        return tuple(seen)

    def _f(self, xs):  # value, list of first derivatives, matrix of second derivatives
        raise NotImplementedError

    def evaluate(self, M, index):
        parts = [a.evaluate(M, index) for a in self.args]
        xs = [p[0] for p in parts]
        f, df, d2f = self._f(xs)
        # undefined metrics (0/0) propagate NaN silently; callers warn once
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            g = sum(df[i][..., None] * parts[i][1] for i in range(len(parts)))
            H = sum(df[i][..., None, None] * parts[i][2] for i in range(len(parts)))
            for i in range(len(parts)):
                for j in range(len(parts)):
                    if d2f[i][j] is not None:
                        H = H + d2f[i][j][..., None, None] * (
                            parts[i][1][..., :, None] * parts[j][1][..., None, :]
                        )
        return f, g, H

    def value(self, M, index):
        return self._f([a.value(M, index) for a in self.args], order=0)


class Linear(_Op):
    """``const + sum_i coef_i * arg_i`` (differences of metrics, affine transforms)."""

    def __init__(self, coefs: Sequence[float], args: Sequence[Smooth], const: float = 0.0):
        self.coefs = tuple(float(c) for c in coefs)
        self.args = tuple(args)
        self.const = float(const)

    def _f(self, xs, order=2):
        v = self.const + sum(c * x for c, x in zip(self.coefs, xs, strict=True))
        if order == 0:
            return v
        v = np.asarray(v, dtype=float)
        df = [np.full(v.shape, c) for c in self.coefs]
        return v, df, [[None] * len(xs) for _ in xs]

    def rename(self, prefix):
        return Linear(self.coefs, [a.rename(prefix) for a in self.args], self.const)


class Ratio(_Op):
    """``num / den`` (eq. 7 when both are columns)."""

    def __init__(self, num: Smooth, den: Smooth):
        self.args = (num, den)

    def _f(self, xs, order=2):
        x, y = xs
        with np.errstate(divide="ignore", invalid="ignore"):
            v = x / y
            if order == 0:
                return v
            fx, fy = 1.0 / y, -x / y**2
            fxy, fyy = -1.0 / y**2, 2.0 * x / y**3
        return v, [fx, fy], [[None, fxy], [fxy, fyy]]

    def rename(self, prefix):
        return Ratio(self.args[0].rename(prefix), self.args[1].rename(prefix))

    def is_ratio(self):
        return all(isinstance(a, Column) for a in self.args)


class FBeta(_Op):
    """``F_beta(p, r) = (1 + beta^2) p r / (beta^2 p + r)`` of two smooth functions."""

    def __init__(self, p: Smooth, r: Smooth, beta: float = 1.0):
        self.args = (p, r)
        self.beta = float(beta)

    def _f(self, xs, order=2):
        p, r = xs
        b2 = self.beta**2
        c = 1.0 + b2
        with np.errstate(divide="ignore", invalid="ignore"):
            D = b2 * p + r
            v = c * p * r / D
            if order == 0:
                return v
            fp, fr = c * r**2 / D**2, c * b2 * p**2 / D**2
            fpp = -2.0 * c * b2 * r**2 / D**3
            frr = -2.0 * c * b2 * p**2 / D**3
            fpr = 2.0 * c * b2 * p * r / D**3
        return v, [fp, fr], [[fpp, fpr], [fpr, frr]]

    def rename(self, prefix):
        return FBeta(self.args[0].rename(prefix), self.args[1].rename(prefix), self.beta)


@dataclass(frozen=True, eq=False)
class SmoothFit:
    """Result of :func:`smooth_estimate`, with what the interval methods need.

    ``Y`` (units x k, columns ordered as ``names``), ``multiplicity`` (draws per unit),
    ``mean`` and ``cov`` (sample mean and covariance with denominator n-1, over draws),
    ``theta`` (finite-population correction), ``plugin = phi(mean)``, ``value`` (bias
    corrected), ``variance`` (delta method), ``influence`` (per-unit linearised values
    ``grad' (Y_u - mean)``).
    """

    phi: Smooth
    names: tuple[str, ...]
    Y: np.ndarray
    multiplicity: np.ndarray
    n: int
    theta: float
    mean: np.ndarray
    cov: np.ndarray
    plugin: float
    value: float
    variance: float
    gradient: np.ndarray
    influence: np.ndarray

    @property
    def std_error(self) -> float:
        return math.sqrt(self.variance) if self.variance >= 0 else math.nan

    @property
    def index(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.names)}

    @property
    def skewness(self) -> float:
        """Skewness of the draws' linearised values ``u = grad'(Y_u - mean)`` (a unit drawn
        k times counts k times), Hall's (1992) ``γ̂`` (:func:`draw_skewness`)."""
        return float(draw_skewness(self.Y, self.gradient, self.multiplicity))

    @property
    def pooled_draws(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(Y, multiplicity)``: the draws as one sample of one distribution, whose
        skewness (:func:`draw_skewness`) the score interval corrects for."""
        return self.Y, self.multiplicity


def _centred(Y: np.ndarray, multiplicity: np.ndarray | None):
    """Draws ``Y`` (..., units, k) minus their means, the draws' weights (..., units: the
    multiplicities, or 1 per row) and their number ``n`` (...)."""
    Y = np.asarray(Y, dtype=float)
    w = np.ones(Y.shape[:-1]) if multiplicity is None else np.asarray(multiplicity, float)
    w = np.broadcast_to(w, Y.shape[:-1])
    n = w.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.einsum("...u,...uk->...k", w, Y) / n[..., None]
    return Y - mean[..., None, :], mean, w, n


def draw_moments(
    Y: np.ndarray, multiplicity: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Means (..., k) and sample covariance (..., k, k; divisor n - 1) of draws ``Y``
    (..., units, k) in which unit u counts ``multiplicity`` (..., units; None: once)
    times, from the centred draws. Vectorised over leading axes."""
    dev, mean, w, n = _centred(Y, multiplicity)
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = np.einsum("...u,...ui,...uj->...ij", w, dev, dev) / (n - 1)[..., None, None]
    return mean, cov


def draw_skewness(
    Y: np.ndarray, c: np.ndarray, multiplicity: np.ndarray | None = None
) -> np.ndarray:
    """Skewness ``γ̂ = m3 / m2^(3/2)`` of the per-draw values ``u = c'(Y_u - Ȳ)`` of a
    linear combination ``c`` of the columns, ``m_j = Σ_u m_u u^j / n`` (divisor n, Hall's
    (1992) ``γ̂``; ``m_u`` the draws of unit u, ``n = Σ m_u``), vectorised over leading
    axes: ``Y`` (..., units, k), ``c`` (..., k), ``multiplicity`` (..., units) or None
    (one draw per row).

    Computed from the draws, each column centred before the combination and ``u``
    centred again: contracting the columns' third-moment tensor with ``c ⊗ c ⊗ c``
    instead cancels catastrophically when ``u`` is small beside the columns (a precision
    near 1) or the columns sit far from 0. 0 where ``u`` does not vary beyond the rounding
    of its terms, or is not finite."""
    dev, _, w, n = _centred(Y, multiplicity)
    c = np.asarray(c, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        u = np.einsum("...uk,...k->...u", dev, c)
        u = u - (np.einsum("...u,...u->...", w, u) / n)[..., None]
        m2 = np.einsum("...u,...u->...", w, u * u) / n
        m3 = np.einsum("...u,...u->...", w, u * u * u) / n
        # the rounding of u's terms: a spread below it is no spread
        terms = np.einsum("...uk,...k->...u", np.abs(dev), np.abs(c))
        noise = 1e-24 * np.einsum("...u,...u->...", w, terms * terms) / n
        varies = np.isfinite(m2) & np.isfinite(m3) & (m2 > noise)
        return np.where(varies, m3 / np.where(varies, m2, 1.0) ** 1.5, 0.0)


_ROUNDING = 1e-12


def bias_corrected(
    phi: Smooth, mean: np.ndarray, cov: np.ndarray, theta: float, n, index: Mapping[str, int]
) -> np.ndarray:
    """Bias-corrected value of ``phi`` at the sample means (vectorised over leading axes of
    ``mean`` (..., k) and ``cov`` (..., k, k); ``n`` a scalar or an array of the leading
    shape).

    The second-order correction ``- theta/(2n) trace(H S)`` (eq. 8 for a ratio) is applied
    where the estimator is defined, at each ratio (or other non-combining node); a linear
    combination is the same combination of its corrected parts, and an F-score is the
    F-measure of its corrected parts (:class:`FBeta`): so the F1 of a sample is exactly the
    F-measure of that sample's precision and recall estimates, and a paired difference is
    the difference of the two estimates.
    """
    if isinstance(phi, Linear):
        parts = [bias_corrected(a, mean, cov, theta, n, index) for a in phi.args]
        return phi.const + sum(c * p for c, p in zip(phi.coefs, parts, strict=True))
    if isinstance(phi, FBeta):
        p, r = (bias_corrected(a, mean, cov, theta, n, index) for a in phi.args)
        return phi._f([np.asarray(p, dtype=float), np.asarray(r, dtype=float)], order=0)
    v, _, H = phi.evaluate(mean, index)
    with np.errstate(invalid="ignore"):
        bias = theta / (2.0 * np.asarray(n, dtype=float)) * np.einsum("...ij,...ij->...", H, cov)
    return np.where(np.isfinite(bias), v - bias, v)


def smooth_estimate(
    phi: Smooth,
    columns: Mapping[str, np.ndarray],
    *,
    multiplicity: np.ndarray | None = None,
    population_size: int | None = None,
    replace: bool = True,
) -> SmoothFit:
    """Bias-corrected estimate and delta-method variance of ``phi`` of population means.

    ``columns`` maps each column name ``phi`` reads to its per-unit values (one entry per
    distinct unit); ``multiplicity`` gives each unit's number of draws (default 1 each);
    ``n = sum(multiplicity)``. ``population_size`` is the number of units ``T`` of the
    population, used with ``replace=False`` for the finite-population correction. See the
    module docstring for the formulas; for ``phi = Ratio(Column("B"), Column("A"))`` they
    are eq. 8-9 of Binette et al. 2023. One draw: the plug-in estimate and NaN variance.
    """
    names = phi.columns()
    Y = np.column_stack([np.asarray(columns[c], dtype=float) for c in names])
    m = (
        np.ones(len(Y), dtype=float)
        if multiplicity is None
        else np.asarray(multiplicity, dtype=float)
    )
    if len(Y) == 0 or m.sum() <= 0:
        raise ValueError("empty sample: no sampled units to estimate from")
    if (m < 0).any():
        raise ValueError("multiplicities must be non-negative")
    n = int(round(m.sum()))
    theta = fpc(n, population_size, replace=replace)
    index = {c: i for i, c in enumerate(names)}
    mean = m @ Y / n
    dev = Y - mean
    v, g, H = phi.evaluate(mean, index)
    plugin = float(v)
    if n > 1:
        cov = (dev * m[:, None]).T @ dev / (n - 1)
        with np.errstate(invalid="ignore"):
            variance = theta / n * float(g @ cov @ g)
        value = float(bias_corrected(phi, mean, cov, theta, n, index))
        # a variance at rounding level of the squared estimate is a zero variance: no
        # decision (zero-width or not, Fieller's discriminant) may hinge on that noise
        scale = max(float(np.max(np.abs(g))) * float(np.max(np.abs(mean))), abs(plugin))
        if np.isfinite(variance) and variance <= (_ROUNDING * scale) ** 2:
            variance = 0.0
    else:
        cov = np.full((len(names), len(names)), np.nan)
        value, variance = plugin, math.nan
    return SmoothFit(
        phi=phi,
        names=names,
        Y=Y,
        multiplicity=m,
        n=n,
        theta=theta,
        mean=mean,
        cov=cov,
        plugin=plugin,
        value=float(value),
        variance=float(variance),
        gradient=np.asarray(g, dtype=float),
        influence=dev @ np.asarray(g, dtype=float),
    )


def ratio_estimate(
    A: np.ndarray,
    B: np.ndarray,
    *,
    population_size: int | None = None,
    replace: bool = True,
) -> tuple[float, float]:
    """Eq. 8 and eq. 9 of Binette et al. 2023, literally: the bias-corrected ratio of means
    ``E = mean(B)/mean(A)`` and its estimated variance, from one row per draw.

        E^ = (B̄/Ā) [1 + θ/(n(n-1)) Σ_s (A_s/Ā)(B_s/B̄ - A_s/Ā)]
        V^ = (B̄/Ā)² θ/(n(n-1)) Σ_s (A_s/Ā - B_s/B̄)²

    θ as in :func:`fpc`. ``n = 1`` returns ``(B/A, nan)``. Returns ``(estimate, variance)``.
    """
    A = np.asarray(A, dtype=float)
    B = np.asarray(B, dtype=float)
    n = len(A)
    if n == 0:
        raise ValueError("empty sample: no sampled units to estimate from")
    a, b = A.mean(), B.mean()
    r = b / a
    if n == 1:
        return float(r), math.nan
    theta = fpc(n, population_size, replace=replace)
    k = theta / (n * (n - 1))
    est = r * (1.0 + k * np.sum((A / a) * (B / b - A / a)))
    var = r**2 * k * np.sum((A / a - B / b) ** 2)
    return float(est), float(var)
