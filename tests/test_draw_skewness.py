"""The skewness of the draws' linear combinations (``draw_skewness``), which moves the
score interval's quantiles (Hall 1992): a hand-computed case, scipy on the same values,
invariance to shifts, and accuracy where contracting the columns' third moments cancels."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from er_evaluation.estimators import confidence_interval
from er_evaluation.estimators.intervals import (
    fieller_bounds,
    score_bounds,
    skewed_fieller_bounds,
    skewness_quantiles,
)
from er_evaluation.estimators.ratio import Column, Ratio, draw_skewness, smooth_estimate

# columns B, A: A = 2, 4, 6, 8 and B = 2, 4, 6, 2
HAND = np.array([[2.0, 2.0], [4.0, 4.0], [6.0, 6.0], [2.0, 8.0]])


def _exact_skewness(Y, c, multiplicity=None) -> float:
    """m3 / m2^1.5 of u = c'(Y - Ȳ) in exact rational arithmetic on the given floats."""
    m = [1] * len(Y) if multiplicity is None else [int(k) for k in multiplicity]
    n = sum(m)
    rows = [[Fraction(float(v)) for v in row] for row in Y]
    cf = [Fraction(float(v)) for v in c]
    mean = [sum(k * row[j] for k, row in zip(m, rows, strict=True)) / n for j in range(len(cf))]
    u = [sum(ci * (row[j] - mean[j]) for j, ci in enumerate(cf)) for row in rows]
    m2 = sum(k * x**2 for k, x in zip(m, u, strict=True)) / n
    m3 = sum(k * x**3 for k, x in zip(m, u, strict=True)) / n
    return float(m3) / float(m2) ** 1.5


def _tensor_skewness(Y, c) -> float:
    """The former computation: the columns' third central moments contracted with c⊗c⊗c
    over the quadratic form of their covariance."""
    n = len(Y)
    dev = Y - Y.mean(axis=0)
    third = np.einsum("ui,uj,ul->ijl", dev, dev, dev) / n
    m2 = c @ (dev.T @ dev / n) @ c
    return float(np.einsum("i,j,l,ijl->", c, c, c, third) / m2**1.5)


def test_hand_computed_skewness_of_the_ratio_residuals():
    # R̂ = 14/20 = 0.7, so B - R̂ A = 0.6 (1, 2, 3, -6), already centred: m2 = 0.36 · 50/4,
    # m3 = 0.216 · (-180)/4 and γ = m3 / m2^1.5 = -45 / 12.5^1.5 = -0.72 sqrt(2)
    c = np.array([1.0, -0.7])
    assert draw_skewness(HAND, c) == pytest.approx(-0.72 * math.sqrt(2), rel=1e-12)
    # the Fieller interval's pivot takes the Hall quantiles of that skewness; each unit
    # drawn three times (n = 12, the same skewness) so that Fieller's interval is bounded
    m = np.full(4, 3)
    Y = np.repeat(HAND, m, axis=0)
    mean, cov = Y.mean(axis=0), np.cov(Y.T)
    w = (np.array([1.0, 0.0]), np.array([0.0, 1.0]))
    t = stats.t.ppf(0.975, 11)
    q_lo, q_hi = skewness_quantiles(-0.72 * math.sqrt(2), 12, 1.0, t)
    lo, hi, ok = skewed_fieller_bounds(mean, cov, 1.0, 12, w, t, (HAND, m))
    lo0, hi0, ok0 = fieller_bounds(mean, cov, 1.0, 12, w, q_hi, -q_lo)
    assert bool(ok) and bool(ok0)
    assert (float(lo), float(hi)) == pytest.approx((float(lo0), float(hi0)), rel=1e-12)
    assert (float(lo), float(hi)) == pytest.approx((0.3731226, 0.9800429), abs=1e-7)


def test_a_unit_drawn_twice_counts_twice():
    units = HAND[[0, 1, 3]]
    m = np.array([2, 3, 1])
    c = np.array([1.0, -0.55])
    expected = draw_skewness(np.repeat(units, m, axis=0), c)
    assert draw_skewness(units, c, m) == pytest.approx(expected, rel=1e-12)
    assert draw_skewness(units, c, m) == pytest.approx(_exact_skewness(units, c, m), rel=1e-12)


def test_skewness_equals_scipys_on_every_replicate():
    # replicates on the leading axis, each with its own combination
    rng = np.random.default_rng(11)
    Y = rng.pareto(2.5, size=(30, 40, 3)) + 1.0
    c = rng.normal(size=(30, 3))
    u = np.einsum("rnk,rk->rn", Y, c)
    expected = stats.skew(u, axis=1, bias=True)
    assert draw_skewness(Y, c) == pytest.approx(expected, rel=1e-10)
    assert expected == pytest.approx(
        stats.moment(u, 3, axis=1) / stats.moment(u, 2, axis=1) ** 1.5, rel=1e-10
    )


def test_draws_that_do_not_vary_have_no_skewness():
    Y = np.tile([[3.0, 5.0]], (6, 1))
    assert draw_skewness(Y, np.array([1.0, -0.6])) == 0.0
    # a combination the draws hold constant (B = R A on every draw) up to rounding
    A = np.array([1.0, 3.0, 7.0, 2.0, 9.0])
    assert draw_skewness(np.column_stack([0.3 * A, A]), np.array([1.0, -0.3])) == 0.0


@given(
    st.lists(
        st.tuples(st.integers(0, 50), st.integers(0, 50), st.integers(0, 50)),
        min_size=3,
        max_size=30,
    ),
    st.tuples(st.integers(-5, 5), st.integers(-5, 5), st.integers(-5, 5)),
    st.tuples(*[st.integers(-(10**6), 10**6)] * 3),
)
def test_shifting_the_draws_leaves_the_skewness_unchanged(rows, c, shift):
    # integer draws and shifts: the shifted draws are exact, any change is the computation's
    Y = np.array(rows, dtype=float)
    c = np.array(c, dtype=float)
    gamma = draw_skewness(Y, c)
    assert draw_skewness(Y + np.array(shift, dtype=float), c) == pytest.approx(
        gamma, rel=1e-9, abs=1e-9
    )
    if np.ptp(Y @ c) > 0:
        assert gamma == pytest.approx(_exact_skewness(Y, c), rel=1e-9, abs=1e-9)
    else:
        assert gamma == 0.0


def test_skewness_where_the_columns_third_moments_cancel():
    # a precision near 1 on columns near 1e6: B - R̂ A varies ~1e-4 as much as the columns,
    # so the contracted third moments sum terms ~1e12 times larger than their result
    rng = np.random.default_rng(7)
    n = 60
    A = 1e6 + rng.normal(0.0, 1e4, n)
    B = 0.999 * A - rng.exponential(1.0, n)
    Y = np.column_stack([B, A])
    c = np.array([1.0, -B.mean() / A.mean()])
    exact = _exact_skewness(Y, c)
    assert exact == pytest.approx(-2.0, abs=0.8)  # the exponential errors' skewness
    assert abs(_tensor_skewness(Y, c) - exact) > 1e-6  # the former computation's digits lost
    assert draw_skewness(Y, c) == pytest.approx(exact, rel=1e-10)


def test_per_unit_and_per_draw_intervals_agree():
    # the package's fit (distinct units with multiplicities) and the vectorised path (one
    # row per draw, replicates stacked) give the same skewness-corrected interval
    rng = np.random.default_rng(0)
    units = 80
    A = rng.pareto(1.5, units) + 1.0
    B = A * np.where(rng.random(units) < 0.5, rng.uniform(0.0, 0.9, units), 1.0)
    m = rng.integers(1, 4, units)
    phi = Ratio(Column("B"), Column("A"))
    fit = smooth_estimate(phi, {"B": B, "A": A}, multiplicity=m)
    draws = np.repeat(np.column_stack([B, A]), m, axis=0)[None]
    n = draws.shape[1]
    mean = draws.mean(axis=1)
    dev = draws - mean[:, None, :]
    cov = np.einsum("rni,rnj->rij", dev, dev) / (n - 1)
    index = {"B": 0, "A": 1}
    lo, hi = score_bounds(phi, mean, cov, 1.0, n, index, 0.95, (0.0, 1.0), draws=(draws, None))
    assert confidence_interval(fit, 0.95) == pytest.approx(
        (float(lo[0]), float(hi[0])), rel=1e-12, abs=1e-12
    )
    plain = score_bounds(phi, mean, cov, 1.0, n, index, 0.95, (0.0, 1.0))
    assert abs(float(plain[0][0]) - float(lo[0])) > 1e-3  # the skewness moved the interval
