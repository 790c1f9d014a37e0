"""Target measures of pair evaluation as smooth functions of importance-weighted totals.

Marchant & Rubinstein (2021, §2.2, Definition 1) write a performance measure
as G = g(R) with R = E[ell(x, y)] the pool mean of a vector loss ell and g smooth. Here
ell depends on a pair only through a small integer *class* c(x) (e.g. the prediction
0/1, or how many score thresholds the pair clears) and its true label y in {0, 1}, so
every measure is a table ell(c, y) plus the function g:

- :func:`f_measures`: precision, recall and F_beta for several beta at once, totals
  R = [TP, PP, P] / N (true positives, predicted positives, positives), g_m a ratio
  (Marchant & Rubinstein 2021, Table 1);
- :func:`pr_curve`: precision and recall of the score at thresholds tau_1 < ... < tau_L
  (Marchant & Rubinstein 2021, Example 1), totals [PP_1..PP_L, TP_1..TP_L, P] / N;
- :func:`custom_measure`: any table ell(c, y) and function g given by the user, with its
  Jacobian or a numerical one.

From the labelled draws (x_j, y_j, w_j = p/q_{j-1}) of an importance-sampling run,
:func:`estimate_measure` computes R_hat = (1/T) sum_j w_j ell(x_j, y_j) and G_hat =
g(R_hat) (Marchant & Rubinstein 2021, eq. 1), and the CLT variance of §3.3.2:

    Var(G_hat_m) ~= (1/T) [ (1/T) sum_j w_j u_j (Dg(R_hat) ell_j)_m^2 - (Dg(R_hat) R_hat)_m^2 ]

with u_j = w_j (each draw's own proposal; the martingale form) or u_j = p/q_T (the
latest proposal, Marchant & Rubinstein 2021's form). Because ell only depends on (class, label), every
sum over draws is a sum over at most 2C groups.

The F-measures of :func:`f_measures` are not estimated by this generic route:
:func:`estimate_measure` returns :func:`~er_evaluation.pairs.estimate_from_labels`'s
estimates of them (one computation for both public paths, exact for a completely
labelled prediction group or cell).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import pandas as pd

from er_evaluation._parameters import check_choice, check_level, z_value
from er_evaluation.errors import UndefinedMetricWarning, warn, warn_undefined
from er_evaluation.estimators.diagnostics import assess, concentration
from er_evaluation.estimators.results import Estimate
from er_evaluation.pairs._search import searched_draws
from er_evaluation.pairs._variance import (
    finish,
    labels_only_variance,
    model_groups,
    oracle_rates,
    searched_bound,
)
from er_evaluation.pairs.estimates import _NO_PAIR, CI_METHODS, ratio_estimates
from er_evaluation.vocabulary import fscore_name

__all__ = [
    "Measure",
    "PRCurve",
    "f_measures",
    "pr_curve",
    "custom_measure",
    "estimate_measure",
    "group_sums",
    "pr_curve_table",
]


@dataclass(frozen=True)
class Measure:
    """A measure G = g(R) with R the pool mean of a table loss ell(c(x), y).

    ``codes``: class c(x) of every pool pair (int, 0 <= c < n_classes); ``table``:
    ell(c, y) with shape (n_classes, 2, d); ``func(R)`` -> G (shape (m,)); ``jacobian(R)``
    -> Dg(R) (shape (m, d)); ``names``: one name per component of G; ``bounded``: True if
    every component lies in [0, 1] (ratios such as precision), which selects the
    interval (see :func:`estimate_measure`). ``numerators`` and ``denominators`` (m, d),
    for ratio measures g_m = (num_m . R) / (den_m . R): the denominators give the
    effective sample size, both together a closed-form gradient. ``f_alphas``: set by
    :func:`f_measures` (codes = a 0/1 prediction), the alpha of every component's
    F_alpha = TP / (alpha PP + (1 - alpha) P) (1: precision, 0: recall); such a measure
    is estimated by :func:`~er_evaluation.pairs.estimate_from_labels` itself.
    """

    names: tuple[str, ...]
    codes: np.ndarray = field(repr=False)
    table: np.ndarray = field(repr=False)
    func: Callable[[np.ndarray], np.ndarray] = field(repr=False)
    jacobian: Callable[[np.ndarray], np.ndarray] = field(repr=False)
    bounded: bool = True
    denominators: np.ndarray | None = field(default=None, repr=False)
    numerators: np.ndarray | None = field(default=None, repr=False)
    f_alphas: tuple[float, ...] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # ratio measures: num_m . ell(c, y) and den_m . ell(c, y) for every (c, y), so the
        # squared gradient norms after each label are a few small array operations
        if self.numerators is not None and self.denominators is not None:
            flat = self.table.reshape(-1, self.table.shape[2])
            object.__setattr__(self, "_num_table", flat @ self.numerators.T)
            object.__setattr__(self, "_den_table", flat @ self.denominators.T)
        small = (
            self.numerators is not None
            and self.denominators is not None
            and self.table.size * len(self.names) <= 256
        )
        object.__setattr__(
            self,
            "_small",
            (self._num_table.tolist(), self._den_table.tolist(), range(len(self.names)))
            if small
            else None,
        )

    @property
    def n_classes(self) -> int:
        return self.table.shape[0]

    @property
    def n_pairs(self) -> int:
        return len(self.codes)

    def value(self, totals: np.ndarray) -> np.ndarray:
        """g(R): NaN where a ratio's denominator is 0."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(self.func(np.asarray(totals, dtype=np.float64)), dtype=np.float64)

    def totals(self, group_weight: np.ndarray) -> np.ndarray:
        """sum_{c,y} W[c, y] ell(c, y) for group weights W of shape (n_classes, 2)."""
        return group_weight.reshape(-1) @ self.table.reshape(-1, self.table.shape[2])

    def gradient_terms(self, totals: np.ndarray, classes: np.ndarray) -> np.ndarray:
        """Dg(R) ell(c, y) for the given classes and both labels: shape (len, 2, m)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            jac = np.asarray(self.jacobian(np.asarray(totals, dtype=np.float64)))
        return self.table[classes] @ jac.T

    def gradient_of_totals(self, totals: np.ndarray) -> np.ndarray:
        """Dg(R) R (shape (m,)): 0 for ratios, which are homogeneous of degree 0."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(self.jacobian(totals)) @ totals

    def squared_norms(self, totals: np.ndarray) -> np.ndarray:
        """||Dg(R) ell(c, y)||_2^2 for every class and label: shape (n_classes, 2). Terms of
        undefined components (zero denominator) count as 0. One (2C x d)(d x m) product:
        this runs after every label, so it avoids per-call helpers. Ratio measures use
        (num_m . ell - g_m den_m . ell) / (den_m . R) directly."""
        if self.numerators is not None and self.denominators is not None:
            b = self.denominators @ totals
            if np.all(b > 0):
                g = (self.numerators @ totals) / b
                terms = (self._num_table - self._den_table * g) / b
                return np.einsum("ij,ij->i", terms, terms).reshape(self.n_classes, 2)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            jac = np.asarray(self.jacobian(totals))
            terms = self.table.reshape(-1, self.table.shape[2]) @ jac.T
            sq = np.einsum("ij,ij->i", terms, terms)
        if not np.isfinite(sq).all():
            terms = self.gradient_terms(totals, np.arange(self.n_classes)).reshape(len(sq), -1)
            sq = np.sum(np.where(np.isfinite(terms), terms, 0.0) ** 2, axis=1)
        return sq.reshape(self.n_classes, 2)

    def proposal_norms(self, weights: np.ndarray, n_pairs: int) -> np.ndarray | None:
        """The norms ||Dg(R) ell(c, y)|| (flattened (2C,), 0 where ell = 0) at the totals
        R = sum_{c,y} weights[c, y] ell(c, y) / n_pairs, as the AIS proposal needs them
        after every label; None if some component of g(R) is undefined there. Small ratio
        measures (the F-measures) are computed on Python floats: for a 2 x 2 x 3 table that
        is ~20x cheaper than numpy calls."""
        if self._small is None:
            totals = self.totals(weights) / n_pairs
            with np.errstate(divide="ignore", invalid="ignore"):
                if not np.all(np.isfinite(self.value(totals))):
                    return None
            return np.sqrt(self.squared_norms(totals)).reshape(-1) * self.nonzero().reshape(-1)
        num_table, den_table, rows = self._small
        flat = weights.ravel().tolist()
        num = [sum(f * t[m] for f, t in zip(flat, num_table, strict=True)) for m in rows]
        den = [sum(f * t[m] for f, t in zip(flat, den_table, strict=True)) for m in rows]
        if min(den) <= 0:
            return None
        g = [a / b for a, b in zip(num, den, strict=True)]
        out = []
        for nt, dt in zip(num_table, den_table, strict=True):
            sq = 0.0
            for m in rows:
                term = (nt[m] - g[m] * dt[m]) * n_pairs / den[m]
                sq += term * term
            out.append(math.sqrt(sq))
        return np.asarray(out)

    def nonzero(self) -> np.ndarray:
        """True where ell(c, y) is not the zero vector: shape (n_classes, 2)."""
        return np.any(self.table != 0, axis=2)


def _ratio_jacobian(num: np.ndarray, den: np.ndarray, d: int):
    """g_m = (num_m . R) / (den_m . R) and its Jacobian (num_m - g_m den_m) / (den_m . R)."""

    def func(r):
        return (num @ r) / (den @ r)

    def jac(r):
        b = den @ r
        g = (num @ r) / b
        return (num - g[:, None] * den) / b[:, None]

    return func, jac


def f_measures(predicted: np.ndarray, betas: float | Sequence[float] = 1.0) -> Measure:
    """Pairwise precision, recall and F_beta (every beta given) of a 0/1 prediction.

    Totals R = [TP, PP, P] / N with ell(c, y) = [c y, c, y] for prediction c and label y;
    precision = R_1 / R_2, recall = R_1 / R_3, F_beta = R_1 / (a R_2 + (1 - a) R_3) with
    a = 1 / (1 + beta^2) (Marchant & Rubinstein 2021, Table 1; Marchant & Rubinstein 2017 eq. 1).
    """
    predicted = np.asarray(predicted)
    if predicted.ndim != 1 or not np.isin(predicted, (0, 1)).all():
        raise ValueError("predicted must be a 1-d array of 0/1, one value per pool pair")
    betas = [float(betas)] if np.isscalar(betas) else [float(b) for b in betas]
    for b in betas:
        if not b > 0 or math.isinf(b):
            raise ValueError(f"beta must be a positive finite number, got {b}")
    table = np.array([[[0, 0, 0], [0, 0, 1]], [[0, 1, 0], [1, 1, 1]]], dtype=np.float64)
    alphas = [1.0 / (1.0 + b * b) for b in betas]
    num = np.tile([1.0, 0.0, 0.0], (2 + len(alphas), 1))
    den = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]] + [[0.0, a, 1.0 - a] for a in alphas])
    func, jac = _ratio_jacobian(num, den, 3)
    names = ("pairwise_precision", "pairwise_recall", *(fscore_name("pairwise", b) for b in betas))
    f_alphas = (1.0, 0.0, *alphas)
    return Measure(names, predicted.astype(np.int64), table, func, jac, True, den, num, f_alphas)


@dataclass(frozen=True)
class PRCurve(Measure):
    """Precision and recall of ``score >= tau_l`` for thresholds tau_1 < ... < tau_L.

    Class c(x) = number of thresholds <= score(x), so a pair of class c is predicted a
    match at thresholds 1..c. Totals R = [PP_1..PP_L, TP_1..TP_L, P] / N; components
    precision_l = TP_l / PP_l (first L) and recall_l = TP_l / P (last L) (Marchant & Rubinstein 2021,
    Example 1). Gradients use the closed form
    d precision_l . ell(c, y) = 1{c >= l} (y - precision_l) / PP_l and
    d recall_l . ell(c, y) = y (1{c >= l} - recall_l) / P, so the squared norms of all
    classes cost O(L) (prefix sums) instead of a (2L+1)-dimensional matrix product.
    """

    thresholds: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)

    def _parts(self, totals):
        n = len(self.thresholds)
        pp, tp, pos = totals[:n], totals[n : 2 * n], totals[2 * n]
        return n, pp, tp, pos

    def totals(self, group_weight: np.ndarray) -> np.ndarray:
        # class c contributes to thresholds 1..c: suffix sums over classes
        n = len(self.thresholds)
        per_class_all = group_weight.sum(axis=1)
        per_class_pos = group_weight[:, 1]
        pp = np.cumsum(per_class_all[::-1])[::-1][1 : n + 1]
        # P as the same suffix sum that gives TP, so recall is exactly 1 where it should be
        positives = np.cumsum(per_class_pos[::-1])[::-1]
        return np.concatenate([pp, positives[1 : n + 1], positives[:1]])

    def gradient_terms(self, totals: np.ndarray, classes: np.ndarray) -> np.ndarray:
        n, pp, tp, pos = self._parts(totals)
        with np.errstate(divide="ignore", invalid="ignore"):
            prec, rec = tp / pp, tp / pos
            above = np.arange(1, n + 1)[None, :] <= np.asarray(classes)[:, None]  # (len, L)
            out = np.empty((len(classes), 2, 2 * n))
            for y in (0, 1):
                out[:, y, :n] = above * (y - prec) / pp
                out[:, y, n:] = y * (above - rec) / pos
        return out

    def gradient_of_totals(self, totals: np.ndarray) -> np.ndarray:
        return np.zeros(2 * len(self.thresholds))

    def squared_norms(self, totals: np.ndarray) -> np.ndarray:
        n, pp, tp, pos = self._parts(totals)
        with np.errstate(divide="ignore", invalid="ignore"):
            prec, rec = tp / pp, tp / pos
            out = np.zeros((n + 1, 2))
            for y in (0, 1):
                term = np.where(pp > 0, (y - prec) ** 2 / pp**2, 0.0)
                out[1:, y] = np.cumsum(term)
            if pos > 0:
                ones = np.concatenate([[0.0], np.cumsum((1 - rec) ** 2)])
                zeros = np.concatenate([np.cumsum((rec**2)[::-1])[::-1], [0.0]])
                out[:, 1] += (ones + zeros) / pos**2
        return out

    def proposal_norms(self, weights: np.ndarray, n_pairs: int) -> np.ndarray | None:
        """As :meth:`Measure.proposal_norms`; thresholds no pair clears (PP_l = 0) only
        drop out of the norms, so the curve needs nothing but one positive.

        This runs after every label of a run targeting the curve, so it is
        :meth:`squared_norms` in a dozen array operations on O(L) arrays: one suffix sum
        gives PP_l and TP_l, and one cumulative sum over thresholds gives all three sums
        of the closed form (precision terms for y = 0 and y = 1, recall terms with
        sum_{l > c} rec_l^2 = sum_l rec_l^2 - sum_{l <= c} rec_l^2)."""
        # suffix sums of the group weights over classes: n_pairs times PP_l, TP_l and P
        suffix = weights[::-1].cumsum(axis=0)[::-1]
        positives = float(suffix[0, 1])
        if positives <= 0:
            return None
        tp = suffix[1:, 1]
        pp = suffix[1:, 0] + tp
        n = len(pp)
        inv = np.divide(float(n_pairs), pp, out=np.zeros(n), where=pp > 0)  # 1 / PP_l
        prec = tp * inv
        prec /= n_pairs
        # rows of the cumulative sum over thresholds l <= c (column 0: class 0, empty):
        # (prec_l / PP_l)^2, ((1 - prec_l) / PP_l)^2 and ((1 - rec_l)^2 - rec_l^2) / P^2
        terms = np.zeros((3, n + 1))
        np.multiply(prec, inv, out=terms[0, 1:])
        np.subtract(inv, terms[0, 1:], out=terms[1, 1:])
        np.square(terms[:2], out=terms[:2])
        scale = (n_pairs / positives) ** 2  # 1 / P^2
        np.multiply(tp, -2.0 * scale / positives, out=terms[2, 1:])
        terms[2, 1:] += scale
        sums = terms.cumsum(axis=1)
        rec = tp / positives
        out = np.empty((n + 1, 2))
        out[:, 0] = sums[0]
        np.add(sums[1], sums[2], out=out[:, 1])
        out[:, 1] += float(rec @ rec) * scale  # sum over all l of rec_l^2 / P^2
        np.abs(out, out=out)  # rounding can leave -0 where the exact value is 0
        return np.sqrt(out, out=out).reshape(-1)

    def nonzero(self) -> np.ndarray:
        out = np.ones((len(self.thresholds) + 1, 2), dtype=bool)
        out[0, 0] = False  # below every threshold and a non-match: ell = 0
        return out


def pr_curve(
    scores: np.ndarray, thresholds: int | Sequence[float] = 100, *, prefix: str = "pairwise"
) -> PRCurve:
    """The precision-recall curve of ``scores`` as a measure (Marchant & Rubinstein 2021, Example 1).

    ``thresholds``: ascending score thresholds, or a number L of thresholds spaced evenly
    from the lowest to the highest score (the paper's uniform grid). Component names are
    ``{prefix}_precision@tau`` and ``{prefix}_recall@tau``.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 1 or len(scores) == 0 or not np.isfinite(scores).all():
        raise ValueError("scores must be a non-empty 1-d array of finite numbers")
    if np.isscalar(thresholds):
        count = int(thresholds)
        if count < 1:
            raise ValueError(f"thresholds must be >= 1, got {thresholds}")
        taus = np.linspace(scores.min(), scores.max(), count)
        taus = np.unique(taus)
    else:
        taus = np.asarray(thresholds, dtype=np.float64)
        if taus.ndim != 1 or len(taus) == 0 or np.any(np.diff(taus) <= 0):
            raise ValueError("thresholds must be a non-empty strictly increasing sequence")
    codes = np.searchsorted(taus, scores, side="right").astype(np.int64)
    names = tuple(f"{prefix}_precision@{t:.6g}" for t in taus) + tuple(
        f"{prefix}_recall@{t:.6g}" for t in taus
    )
    n = len(taus)
    # the table is only materialised for tiny curves (tests); the class overrides
    # every method that would read it
    table = np.zeros((n + 1, 2, 2 * n + 1)) if n <= 64 else np.zeros((n + 1, 2, 0))
    if n <= 64:
        for c in range(n + 1):
            table[c, :, :c] = 1.0
            table[c, 1, n : n + c] = 1.0
            table[c, 1, 2 * n] = 1.0

    def func(r):
        pp, tp, pos = r[:n], r[n : 2 * n], r[2 * n]
        return np.concatenate([tp / pp, tp / pos])

    def jac(r):  # only used by tests on tiny curves; gradient_terms is the closed form
        pp, tp, pos = r[:n], r[n : 2 * n], r[2 * n]
        out = np.zeros((2 * n, 2 * n + 1))
        idx = np.arange(n)
        out[idx, idx] = -tp / pp**2
        out[idx, n + idx] = 1 / pp
        out[n + idx, n + idx] = 1 / pos
        out[n + idx, 2 * n] = -tp / pos**2
        return out

    return PRCurve(names, codes, table, func, jac, True, thresholds=taus)


def custom_measure(
    codes: np.ndarray,
    table: np.ndarray,
    func: Callable[[np.ndarray], np.ndarray],
    names: Sequence[str],
    *,
    jacobian: Callable[[np.ndarray], np.ndarray] | None = None,
    bounded: bool = False,
) -> Measure:
    """A user-defined measure G = func(R) with R the pool mean of ``table[codes[x], y]``.

    ``codes``: int class per pool pair; ``table``: shape (n_classes, 2, d), the loss vector
    for class c and label y (Marchant & Rubinstein 2021, Definition 1); ``func``: R (d,) -> G (m,);
    ``jacobian``: R -> Dg (m, d), or None for central differences with step
    1e-6 max(|R_i|, 1e-8). ``bounded``: every component is in [0, 1] (then the interval
    of :func:`estimate_measure` is a Wilson interval on the effective sample size).
    """
    codes = np.asarray(codes)
    table = np.asarray(table, dtype=np.float64)
    if table.ndim != 3 or table.shape[1] != 2:
        raise ValueError(f"table must have shape (n_classes, 2, d), got {table.shape}")
    if codes.ndim != 1 or not np.issubdtype(codes.dtype, np.integer):
        raise ValueError("codes must be a 1-d integer array (one class per pool pair)")
    if len(codes) and (codes.min() < 0 or codes.max() >= table.shape[0]):
        raise ValueError(
            f"codes must lie in [0, {table.shape[0]}): found {codes.min()}..{codes.max()}"
        )
    names = tuple(str(n) for n in names)
    probe = np.asarray(func(table.mean(axis=(0, 1)) + 0.5), dtype=np.float64)
    if probe.shape != (len(names),):
        raise ValueError(f"func returns shape {probe.shape}; names has {len(names)} entries")
    if jacobian is None:

        def jacobian(r):
            r = np.asarray(r, dtype=np.float64)
            step = 1e-6 * np.maximum(np.abs(r), 1e-8)
            cols = []
            for i in range(len(r)):
                up, down = r.copy(), r.copy()
                up[i] += step[i]
                down[i] -= step[i]
                cols.append((np.asarray(func(up)) - np.asarray(func(down))) / (2 * step[i]))
            return np.stack(cols, axis=1)

    return Measure(names, codes.astype(np.int64), table, func, jacobian, bounded)


def group_sums(
    measure: Measure, index: np.ndarray, label: np.ndarray, values: np.ndarray
) -> np.ndarray:
    """sum of ``values`` per (class, label) group of the draws: shape (n_classes, 2)."""
    flat = measure.codes[np.asarray(index)] * 2 + np.asarray(label, dtype=np.int64)
    sums = np.bincount(flat, weights=values, minlength=2 * measure.n_classes)
    return sums.reshape(measure.n_classes, 2)


def estimate_measure(
    run,
    measure: Measure,
    *,
    level: float = 0.95,
    ci_method: str = "score",
    variance: str = "martingale",
    labels_known: np.ndarray | None = None,
) -> list[Estimate]:
    """Every component of ``measure`` from the importance-weighted draws of ``run``.

    F-measures (``measure`` from :func:`f_measures`, or a selection of its components;
    ``measure.f_alphas`` set): the estimates of
    :func:`~er_evaluation.pairs.estimate_from_labels` of the prediction ``measure.codes``,
    renamed to ``measure.names``: one computation, so value, SE, interval, method and
    diagnostics are those of that function (a prediction group or stratum x prediction
    cell whose pairs are all labelled enters exactly, a passive or stratified run is
    estimated from its cells, and the interval rule and effective sizes are that
    function's), unless ``labels_known`` completes a census (below; labels outside the
    run that do not are not used, as for the other measures). ``variance`` as below;
    ``variance="final"`` is refused for a sampler's run as there. Other measures (PR curves, :func:`custom_measure`):

    ``run`` is a :class:`~er_evaluation.pairs.estimates.LabelRun` with design
    "importance" (or passive, weight 1). Value G_hat = g(R_hat), R_hat = (1/T) sum_j w_j
    ell_j (Marchant & Rubinstein 2021, eq. 1); variance as in the module docstring (Marchant & Rubinstein 2021, §3.3.2;
    ``variance="martingale"`` uses each draw's own weight, ``"final"`` the run's
    ``final_weight``).

    Variance: the one routine of :mod:`er_evaluation.pairs._variance` (also behind
    :func:`~er_evaluation.pairs.estimate_from_labels`): with ``variance="martingale"``
    and a run whose sampler has an oracle model (OASIS, AIS: ``run.stratum_prior``), a
    draw that labelled its pair in a stratum with no labelled match counts with the match
    rate of its stratum under the Dirichlet-tree model
    (:func:`~er_evaluation.pairs._variance.oracle_rates`), every other draw with its
    label; without a model every draw with its own label.

    Intervals (``ci_method``: :data:`~er_evaluation.pairs.estimates.CI_METHODS`): for
    ``bounded`` measures the interval rule of
    :func:`~er_evaluation.pairs.estimate_from_labels`
    (:func:`~er_evaluation.pairs._variance.finish`): a Wilson score interval at the
    effective sample size n_eff = G(1 - G) / Var(G). At G = 1 for a ratio measure
    (F-measures, PR curves; no false positive or no missed match drawn) the lower end is
    :func:`~er_evaluation.pairs._variance.searched_bound`: from the effective number of
    draws among the classes whose unlabelled pairs could lower it; it is a point
    (``"census"``) only when no such pair is unlabelled. Otherwise, when the variance is 0
    or G is 0, n_eff falls back to the effective size of estimate_from_labels,
    :func:`~er_evaluation.pairs._search.searched_draws`: Kish's (sum w)^2 /
    sum w^2 of the draws in the component's denominator over 1 - f, f the labelled share
    of the pairs of the classes the denominator involves, so the interval is never a point unless every pair the
    component depends on is labelled (below), and the SE is then the Wilson half-width over z, never 0 off census.
    Unbounded measures: value +- z SE. Coverage: benchmarks/README.md ("OASIS intervals"
    and the AIS section).

    Census: when every pool pair is labelled in the run (or ``labels_known`` gives every
    label) the totals are computed from the labels exactly: SE 0 and a point interval.
    So is a component of a ratio measure whose numerator and denominator involve only
    classes every pair of which is labelled (a PR curve's precision at a threshold above
    which all pairs are labelled): its value is the labelled pairs'
    ratio, with SE 0 and ``ci_method="census"``.
    """
    level = check_level(level)
    check_choice(ci_method, "ci_method", CI_METHODS)
    if variance not in ("martingale", "final"):
        raise ValueError(f"variance must be 'martingale' or 'final', got {variance!r}")
    if run.pool_size != measure.n_pairs:
        raise ValueError(
            f"the run is on a pool of {run.pool_size} pairs; the measure has {measure.n_pairs}"
        )
    if run.n_draws == 0:
        raise ValueError("the run has no labelled draws: nothing to estimate")
    known = None if labels_known is None else _census_labels(run, labels_known)
    if measure.f_alphas is not None and known is None:
        return _f_measure_estimates(run, measure, level, variance)
    z = z_value(level)
    n_labels, n_draws = run.n_labels, run.n_draws
    if labels_known is None:
        known = _census_labels(run, None)
    weight = run.weight.astype(np.float64) if run.design == "importance" else np.ones(n_draws)
    klass = measure.codes[run.index]
    n_searched, n_eff, top_share = _denominator_draws(measure, run, klass, weight)
    if known is not None:
        counts = group_sums(measure, np.arange(run.pool_size), known, np.ones(run.pool_size))
        totals = measure.totals(counts) / run.pool_size
        value = measure.value(totals)
        census = [
            _estimate(name, v, 0.0, v, v, level, "census", n_labels, n_draws)
            for name, v in zip(measure.names, value, strict=True)
        ]
        return _diagnosed(census, n_eff, top_share, measure.bounded)
    if variance == "final":
        if run.final_weight is None:
            raise ValueError("variance='final' needs run.final_weight (p/q_T per draw)")
        u = np.asarray(run.final_weight, dtype=np.float64)
    else:
        u = weight
    w_sum = group_sums(measure, run.index, run.label, weight)
    model = oracle_rates(run) if variance == "martingale" else None
    if model is None:  # each draw with its own label
        wu_sum = group_sums(measure, run.index, run.label, weight * u)
    else:  # fresh draws with the oracle model's rate (pairs/_variance.py)
        wu_sum = model_groups(klass, run.label, weight * u, *model, measure.n_classes)
    totals = measure.totals(w_sum) / n_draws
    value = measure.value(totals)
    present = np.flatnonzero(w_sum.sum(axis=1) > 0)
    terms = np.nan_to_num(measure.gradient_terms(totals, present), nan=0.0)  # (G, 2, m)
    # the martingale's sum of conditional variances (one routine for every estimate)
    second = labels_only_variance(wu_sum[present], terms[:, 1, :], terms[:, 0, :]) / n_draws
    first = np.nan_to_num(measure.gradient_of_totals(totals), nan=0.0)
    var = np.maximum(second - first**2, 0.0) / n_draws
    boundary = _searched_bounds(measure, run, klass, weight, z)
    complete, exact = _complete_components(measure, run)
    value = np.where(complete, exact, value)
    out = []
    for m, name in enumerate(measure.names):
        v, s = float(value[m]), math.sqrt(float(var[m]))
        if not math.isfinite(v):
            warn_undefined(name, _NO_PAIR)
            out.append(
                _estimate(
                    name, math.nan, math.nan, math.nan, math.nan, level, "", n_labels, n_draws
                )
            )
            continue
        if complete[m]:  # every pair it depends on is labelled: the labels' ratio
            out.append(_estimate(name, v, 0.0, v, v, level, "census", n_labels, n_draws))
            continue
        if measure.bounded:
            v, s, low, high = finish(
                v,
                float(var[m]),
                z,
                n_fallback=n_searched[m],
                lower_at_one=None if boundary is None else partial(boundary, m, totals),
            )
            method = "census" if low == high == v else "score"
        else:
            low, high, method = v - z * s, v + z * s, "normal"
        out.append(_estimate(name, v, s, low, high, level, method, n_labels, n_draws))
    return _diagnosed(out, n_eff, top_share, measure.bounded)


def _diagnosed(
    estimates: list[Estimate], n_eff: np.ndarray, top_share: np.ndarray, bounded: bool
) -> list[Estimate]:
    """Every estimate with :func:`~er_evaluation.estimators.diagnostics.assess` of the
    draws in its denominator (their Kish effective number and the share of the largest
    three), as the cluster estimators and :func:`~er_evaluation.pairs.estimate_from_labels`
    carry them: not reliable when undefined, outside [0, 1] (bounded measures), or
    resting on fewer than 10 effective draws; a census is reliable."""
    return [
        replace(
            e,
            diagnostics=assess(
                e.value,
                e.std_error,
                n_effective=float(n),
                top_share=float(t),
                n_units=e.n_units,
                n_draws=e.n_draws,
                level=e.level,
                bounds=(0.0, 1.0) if bounded else None,
                census=e.ci_method == "census",
                unit="pair",
            ),
        )
        for e, n, t in zip(estimates, n_eff, top_share, strict=True)
    ]


def _f_measure_estimates(run, measure: Measure, level: float, variance: str) -> list[Estimate]:
    """The components of an F-measure (``measure.f_alphas``) as
    :func:`~er_evaluation.pairs.estimate_from_labels` of the prediction ``measure.codes``
    estimates them (:func:`~er_evaluation.pairs.estimates.ratio_estimates`), under the
    measure's names. Undefined-metric warnings only for the components the measure
    holds, at the caller of :func:`estimate_measure`."""
    named = dict(zip(measure.f_alphas, measure.names, strict=True))
    alphas = [a for a in named if 0.0 < a < 1.0]
    names = [named.get(1.0, "pairwise_precision"), named.get(0.0, "pairwise_recall")]
    names += [named[a] for a in alphas]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = ratio_estimates(run, measure.codes, alphas, names, level, variance)
    by_alpha = dict(zip([1.0, 0.0, *alphas], found, strict=True))
    out = [by_alpha[a] for a in measure.f_alphas]
    for w in caught:
        if not issubclass(w.category, UndefinedMetricWarning):
            warn(w.message, w.category)
    for e in out:
        if math.isnan(e.value):
            warn_undefined(e.metric, _NO_PAIR)
    return out


def pr_curve_table(curve: PRCurve, estimates: Sequence[Estimate]) -> pd.DataFrame:
    """One row per threshold of ``curve``: ``threshold`` and, for precision and recall, the
    value, ``_se``, ``_low`` and ``_high`` (from :func:`estimate_measure` of ``curve``)."""
    n = len(curve.thresholds)
    if len(estimates) != 2 * n:
        raise ValueError(f"expected {2 * n} estimates (precision and recall per threshold)")
    data = {"threshold": curve.thresholds}
    for part, rows in (("precision", estimates[:n]), ("recall", estimates[n:])):
        data[part] = [e.value for e in rows]
        data[f"{part}_se"] = [e.std_error for e in rows]
        data[f"{part}_low"] = [e.ci_low for e in rows]
        data[f"{part}_high"] = [e.ci_high for e in rows]
    return pd.DataFrame(data)


def _ratio_tables(measure: Measure) -> tuple[np.ndarray, np.ndarray] | None:
    """Numerator and denominator of every component for a pair of each class and label,
    shape (C, 2, m) each, for ratio measures (F-measures, PR curves); None otherwise."""
    if isinstance(measure, PRCurve):
        n = len(measure.thresholds)
        above = (np.arange(1, n + 1)[None, :] <= np.arange(n + 1)[:, None]).astype(np.float64)
        y = np.array([0.0, 1.0])[None, :, None]
        num = np.concatenate([above[:, None, :] * y, above[:, None, :] * y], axis=2)
        den = np.concatenate(
            [np.repeat(above[:, None, :], 2, axis=1), np.broadcast_to(y, (n + 1, 2, n))], axis=2
        )
        return num, den
    if measure.numerators is None or measure.denominators is None:
        return None
    return measure.table @ measure.numerators.T, measure.table @ measure.denominators.T


def _complete_components(measure: Measure, run) -> tuple[np.ndarray, np.ndarray]:
    """(complete, value) per component of a ratio measure: complete where every pool pair
    of every class its numerator or denominator involves is labelled in the run (a PR
    curve's precision at a threshold above which all pairs are labelled), value there the
    ratio of the labelled pairs' totals, which are the pool's (NaN if the denominator is
    0). Measures without ratio tables: complete nowhere (their census is the pool's)."""
    n_components = len(measure.names)
    tables = _ratio_tables(measure)
    if tables is None:
        return np.zeros(n_components, dtype=bool), np.full(n_components, np.nan)
    num, den = tables  # (C, 2, m)
    involved = np.any((num != 0) | (den != 0), axis=1)  # (C, m)
    rows, first = np.unique(run.index, return_index=True)
    sizes = np.bincount(measure.codes, minlength=measure.n_classes)
    labelled = np.bincount(measure.codes[rows], minlength=measure.n_classes)
    complete = np.all((labelled == sizes)[:, None] | ~involved, axis=0)
    counts = group_sums(measure, rows, run.label[first], np.ones(len(rows)))  # (C, 2)
    top, bottom = np.einsum("cy,cym->m", counts, num), np.einsum("cy,cym->m", counts, den)
    with np.errstate(divide="ignore", invalid="ignore"):
        return complete, np.where(bottom > 0, top / bottom, np.nan)


def _searched_bounds(measure: Measure, run, klass: np.ndarray, weight: np.ndarray, z: float):
    """For ratio measures, a function (component m, totals R) -> the lower bound of
    :func:`~er_evaluation.pairs._variance.searched_bound` for a component estimated at 1:
    the deficit label of a class is the one whose denominator exceeds its numerator (a
    false positive, a missed match), its other label the one with numerator =
    denominator; the pairs that could hold a deficit are the unlabelled pairs of the
    deficit classes, searched by the run's draws in those classes (Kish effective size,
    over 1 - the labelled share of those classes). None for other measures."""
    tables = _ratio_tables(measure)
    if tables is None:
        return None
    num, den = tables
    deficit = den > num + 1e-12  # (C, 2, m)
    consistent = np.abs(den - num) <= 1e-12
    # a deficit class: one label is a deficit, the other consistent with the ratio at 1
    d_class = (deficit[:, 0] & consistent[:, 1]) | (deficit[:, 1] & consistent[:, 0])
    bad = np.where(deficit[:, 0], 0, 1)  # index of the deficit label per (C, m)
    pick = np.take_along_axis
    d_num = pick(num, bad[:, None, :], 1)[:, 0] - pick(num, 1 - bad[:, None, :], 1)[:, 0]
    d_den = pick(den, bad[:, None, :], 1)[:, 0] - pick(den, 1 - bad[:, None, :], 1)[:, 0]
    sizes = np.bincount(measure.codes, minlength=measure.n_classes).astype(np.float64)
    rows = np.unique(run.index)
    labelled = np.bincount(measure.codes[rows], minlength=measure.n_classes).astype(np.float64)
    unlabelled = sizes - labelled
    n_pairs = run.pool_size

    def bound(m: int, totals: np.ndarray) -> float:
        classes = d_class[:, m]
        if not classes.any():
            return 1.0
        wb = weight * classes[klass]
        share = float(labelled[classes].sum() / max(sizes[classes].sum(), 1.0))
        n_searched = searched_draws(wb, labelled_share=share)
        tot_num = float(measure.numerators[m] @ totals) if measure.numerators is not None else 0
        tot_den = float(measure.denominators[m] @ totals) if measure.denominators is not None else 0
        if isinstance(measure, PRCurve):
            n = len(measure.thresholds)
            tot_num = float(totals[n + m % n])  # TP_l for precision_l and recall_l
            tot_den = float(totals[m] if m < n else totals[2 * n])
        return searched_bound(
            tot_num * n_pairs,
            tot_den * n_pairs,
            float(np.sum(unlabelled[classes] * d_num[classes, m])),
            float(np.sum(unlabelled[classes] * d_den[classes, m])),
            n_searched,
            z,
        )

    return bound


def _denominator_draws(
    measure: Measure, run, klass: np.ndarray, weight: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per component, from the weights of the draws whose (class, label) group enters its
    denominator: the interval's fallback size (:func:`~er_evaluation.pairs._variance.finish`)
    by the rule of :func:`~er_evaluation.pairs.estimate_from_labels`,
    :func:`~er_evaluation.pairs._search.searched_draws` with the labelled share of
    the pool pairs of the classes the denominator involves as finite-population
    correction; and the diagnostics' effective number and top share
    (:func:`~er_evaluation.estimators.diagnostics.concentration`)."""
    n_classes = measure.n_classes
    mask = _denominator_mask(measure)  # (C, 2, m)
    involved = mask.any(axis=1)  # (C, m)
    sizes = np.bincount(measure.codes, minlength=n_classes).astype(np.float64)
    labelled = np.bincount(measure.codes[np.unique(run.index)], minlength=n_classes)
    label = np.asarray(run.label, dtype=np.int64)
    n_components = len(measure.names)
    searched, n_eff, top = np.zeros(n_components), np.zeros(n_components), np.zeros(n_components)
    for m in range(n_components):
        share = labelled[involved[:, m]].sum() / max(sizes[involved[:, m]].sum(), 1.0)
        w = weight * mask[klass, label, m]
        searched[m] = searched_draws(w, labelled_share=float(share))
        n_eff[m], top[m] = concentration(w[:, None])
    return searched, n_eff, top


def _denominator_mask(measure: Measure) -> np.ndarray:
    """1 where a (class, label) group enters component m's denominator: shape (C, 2, m).
    Measures without declared denominators count every group with a non-zero loss."""
    present = np.arange(measure.n_classes)
    if isinstance(measure, PRCurve):
        n = len(measure.thresholds)
        mask = np.zeros((len(present), 2, 2 * n))
        above = np.arange(1, n + 1)[None, :] <= present[:, None]
        mask[:, :, :n] = above[:, None, :]
        mask[:, 1, n:] = 1.0
        return mask
    table = measure.table[present]  # (G, 2, d)
    if measure.denominators is None:
        nonzero = np.any(table != 0, axis=2).astype(np.float64)
        return np.repeat(nonzero[:, :, None], len(measure.names), axis=2)
    return (table @ measure.denominators.T != 0).astype(np.float64)


def _estimate(name, value, se, low, high, level, method, n_labels, n_draws) -> Estimate:
    return Estimate(
        metric=name,
        estimator="ais",
        design="importance",
        value=value,
        std_error=se,
        ci_low=low,
        ci_high=high,
        level=level,
        ci_method=method,
        n_units=n_labels,
        n_draws=n_draws,
        n_records=n_labels,
        plugin=value,
    )


def _census_labels(run, labels_known) -> np.ndarray | None:
    """Every pool pair's label if the run (plus ``labels_known``) labelled all of them."""
    labels = (
        np.full(run.pool_size, -1, dtype=np.int8)
        if labels_known is None
        else np.asarray(labels_known, dtype=np.int8).copy()
    )
    labels[run.index] = run.label
    if np.any(labels < 0):
        return None
    return labels.astype(np.int64)
