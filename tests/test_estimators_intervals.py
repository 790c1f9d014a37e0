"""Interval methods: closed forms, brute-force checks of the vectorised bootstrap and
jackknife, reproducibility, clipping."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from er_evaluation.estimators import CI_METHODS, DEFAULT_CI_METHOD, confidence_interval
from er_evaluation.estimators.intervals import (
    _replicates,
    bootstrap_counts,
    ratio_bounds,
    skewness_quantiles,
)
from er_evaluation.estimators.ratio import Column, FBeta, Linear, Ratio, smooth_estimate

Z95 = stats.norm.ppf(0.975)


def _fit(seed=0, n=25, replace=True, population_size=None, multiplicity=None):
    rng = np.random.default_rng(seed)
    A = rng.gamma(1.5, 4.0, n)
    B = A * rng.uniform(0.5, 1.0, n)
    phi = Ratio(Column("B"), Column("A"))
    return smooth_estimate(
        phi,
        {"A": A, "B": B},
        multiplicity=multiplicity,
        population_size=population_size,
        replace=replace,
    )


def test_default_method_is_registered():
    assert DEFAULT_CI_METHOD in CI_METHODS


def test_normal_interval_closed_form():
    fit = _fit()
    lo, hi = confidence_interval(fit, 0.95, "normal", bounds=None)
    assert lo == pytest.approx(fit.value - Z95 * fit.std_error)
    assert hi == pytest.approx(fit.value + Z95 * fit.std_error)


def test_logit_interval_is_symmetric_on_logit_scale():
    fit = _fit()
    lo, hi = confidence_interval(fit, 0.9, "logit")
    logit = lambda x: math.log(x / (1 - x))  # noqa: E731
    v = fit.value
    assert logit(v) - logit(lo) == pytest.approx(logit(hi) - logit(v))
    assert logit(hi) - logit(v) == pytest.approx(
        stats.norm.ppf(0.95) * fit.std_error / (v * (1 - v))
    )


def test_fieller_interval_against_grid_search():
    fit = _fit(seed=2, n=12)
    lo, hi = confidence_interval(fit, 0.95, "fieller", bounds=None)
    ia, ib = fit.index["A"], fit.index["B"]
    a, b = fit.mean[ia], fit.mean[ib]
    V = fit.cov / fit.n
    grid = np.linspace(0, 2, 200001)
    inside = (b - grid * a) ** 2 <= Z95**2 * (
        V[ib, ib] - 2 * grid * V[ia, ib] + grid**2 * V[ia, ia]
    )
    assert lo == pytest.approx(grid[inside].min(), abs=2e-5)
    assert hi == pytest.approx(grid[inside].max(), abs=2e-5)
    with pytest.raises(ValueError, match="plain ratio"):
        f = smooth_estimate(
            FBeta(Ratio(Column("B"), Column("A")), Ratio(Column("B"), Column("A"))),
            {"A": fit.Y[:, ia], "B": fit.Y[:, ib]},
        )
        confidence_interval(f, 0.95, "fieller")


def test_jackknife_interval_against_explicit_deletions():
    m = np.array([1, 2, 1, 3, 1, 1, 2, 1])
    fit = _fit(seed=3, n=8, multiplicity=m)
    A, B = np.repeat(fit.Y[:, fit.index["A"]], m), np.repeat(fit.Y[:, fit.index["B"]], m)
    n = len(A)
    loo = np.array([np.delete(B, i).mean() / np.delete(A, i).mean() for i in range(n)])
    var = (n - 1) / n * np.sum((loo - loo.mean()) ** 2)
    lo, hi = confidence_interval(fit, 0.95, "jackknife", bounds=None)
    assert (hi - lo) / 2 == pytest.approx(Z95 * math.sqrt(var))


def test_bootstrap_counts_resample_draws():
    m = np.array([3, 1, 1])
    counts = bootstrap_counts(m, 4000, seed=5)
    assert counts.shape == (4000, 3)
    assert (counts.sum(axis=1) == 5).all()
    assert counts.mean(axis=0) == pytest.approx([3, 1, 1], rel=0.05)
    assert bootstrap_counts(m, 4000, seed=5) is counts  # cached and reused


def test_vectorised_bootstrap_replicates_against_explicit_resamples():
    m = np.array([2, 1, 1, 3, 1, 1, 1, 2, 1, 1])
    fit = _fit(seed=4, n=10, multiplicity=m)
    v, se = _replicates(fit, 50, seed=9, studentized=True)
    counts = bootstrap_counts(m, 50, seed=9).astype(int)
    for b in (0, 17, 49):
        cols = {c: fit.Y[:, fit.index[c]] for c in ("A", "B")}
        ref = smooth_estimate(fit.phi, cols, multiplicity=counts[b])
        assert v[b] == pytest.approx(ref.plugin)
        assert se[b] == pytest.approx(ref.std_error)


@pytest.mark.parametrize("method", ["percentile", "studentized", "bca"])
def test_bootstrap_intervals_reproducible_and_sensible(method):
    fit = _fit(seed=6, n=40)
    a = confidence_interval(fit, 0.95, method, seed=1)
    b = confidence_interval(fit, 0.95, method, seed=1)
    c = confidence_interval(fit, 0.95, method, seed=2)
    assert a == b and a != c
    assert a[0] < fit.value < a[1]
    normal = confidence_interval(fit, 0.95, "normal")
    assert 0.5 < (a[1] - a[0]) / (normal[1] - normal[0]) < 2.0
    narrow = confidence_interval(fit, 0.5, method, seed=1)
    assert a[0] <= narrow[0] and narrow[1] <= a[1]


@pytest.mark.parametrize("method", sorted(CI_METHODS))
def test_census_without_replacement_gives_zero_width(method):
    fit = _fit(seed=7, n=15, replace=False, population_size=15)
    assert fit.variance == 0.0
    lo, hi = confidence_interval(fit, 0.95, method)
    assert lo == pytest.approx(fit.value) and hi == pytest.approx(fit.value)


def test_intervals_clipped_to_bounds_and_nan_without_variance():
    rng = np.random.default_rng(8)
    A = rng.uniform(1, 2, 6)
    fit = smooth_estimate(Ratio(Column("B"), Column("A")), {"A": A, "B": A * 0.999})
    for method in CI_METHODS:
        lo, hi = confidence_interval(fit, 0.99, method)
        assert 0.0 <= lo <= hi <= 1.0
    one = smooth_estimate(Ratio(Column("B"), Column("A")), {"A": [2.0], "B": [1.0]})
    assert all(math.isnan(x) for x in confidence_interval(one, 0.95, "studentized"))


def test_fieller_t_endpoints_solve_the_pivot_at_bootstrap_quantiles():
    m = np.array([1, 2, 1, 1, 3, 1, 1, 1, 2, 1, 1, 1])
    fit = _fit(seed=10, n=12, multiplicity=m)
    lo, hi = confidence_interval(fit, 0.9, "fieller_t", bounds=None, n_boot=300, seed=4)
    A, B = fit.Y[:, fit.index["A"]], fit.Y[:, fit.index["B"]]
    r = fit.plugin
    counts = bootstrap_counts(m, 300, seed=4).astype(int)
    t = []
    for c in counts:  # explicit resamples: studentized mean of B - r A
        x = np.repeat(B - r * A, c)
        t.append(x.mean() / (x.std(ddof=1) / math.sqrt(len(x))))
    q_lo, q_hi = np.quantile(t, [0.05, 0.95])

    def pivot(R):
        x = np.repeat(B - R * A, m)
        return x.mean() / (x.std(ddof=1) / math.sqrt(len(x)))

    assert pivot(lo) == pytest.approx(q_hi, rel=1e-6)
    assert pivot(hi) == pytest.approx(q_lo, rel=1e-6)
    assert lo < fit.plugin < hi


def test_auto_is_fieller_for_ratios_and_studentized_otherwise():
    fit = _fit(seed=11)
    assert confidence_interval(fit, 0.95, "auto") == confidence_interval(fit, 0.95, "fieller")
    cols = {c: fit.Y[:, fit.index[c]] for c in ("A", "B")}
    f = smooth_estimate(FBeta(Ratio(Column("B"), Column("A")), Column("B")), cols)
    assert confidence_interval(f, 0.95, "auto", bounds=None, seed=3) == confidence_interval(
        f, 0.95, "studentized", bounds=None, seed=3
    )


def test_logit_interval_survives_estimates_at_the_edge_of_zero_and_one():
    from dataclasses import replace

    fit = smooth_estimate(Column("z"), {"z": np.array([0.0, 0.5, 1.0, 0.2])})
    for value in (1e-20, 1 - 1e-16):
        lo, hi = confidence_interval(replace(fit, value=value), 0.95, "logit")
        assert 0.0 <= lo <= value <= hi <= 1.0


def test_skewness_quantiles_hand_computed():
    # gamma 3 on n = 9 draws: gamma_n = 1, a = 1/3, b = 1/6; g(T) = T + T²/3 + T³/27 + 1/6
    lo, hi = skewness_quantiles(3.0, 9, 1.0, 2.0)
    assert hi == pytest.approx(3 * ((17 / 6) ** (1 / 3) - 1))
    assert lo == pytest.approx(3 * (-((7 / 6) ** (1 / 3)) - 1))

    def g(t):
        return t + t**2 / 3 + t**3 / 27 + 1 / 6

    assert g(hi) == pytest.approx(2.0) and g(lo) == pytest.approx(-2.0)
    # no skewness: the symmetric quantile; without replacement the skewness of the mean
    # carries (2 theta - 1)/sqrt(theta): zero at half the population drawn
    assert skewness_quantiles(0.0, 9, 1.0, 2.0) == (-2.0, 2.0)
    assert skewness_quantiles(3.0, 9, 0.5, 2.0) == (-2.0, 2.0)
    assert skewness_quantiles(np.nan, 9, 1.0, 2.0) == (-2.0, 2.0)


def test_skewness_quantiles_match_the_simulated_studentized_mean():
    # exponential draws (skewness 2), n = 50: the studentized mean's 2.5% and 97.5%
    # quantiles by simulation are about -2.59 and 1.69, far from ±1.96
    rng = np.random.default_rng(0)
    n = 50
    x = rng.exponential(size=(40_000, n))
    t = math.sqrt(n) * (x.mean(axis=1) - 1) / x.std(axis=1, ddof=1)
    sim_lo, sim_hi = np.quantile(t, [0.025, 0.975])
    lo, hi = skewness_quantiles(2.0, n, 1.0, Z95)
    assert lo == pytest.approx(sim_lo, abs=0.08) and hi == pytest.approx(sim_hi, abs=0.08)
    assert abs(lo - sim_lo) < abs(-Z95 - sim_lo) / 4 and abs(hi - sim_hi) < abs(Z95 - sim_hi) / 2


def test_score_interval_of_a_ratio_solves_fieller_at_the_skewness_quantiles():
    # a right-skewed error column (A - B): the pivot (B - R A)/SE(R) at the interval's ends
    # equals the Hall (1992) quantiles of the skewness of B - R̂ A, computed here from scratch
    rng = np.random.default_rng(5)
    n = 60
    A = rng.pareto(2.5, n) + 1.0
    B = A * np.where(rng.random(n) < 0.3, rng.uniform(0.2, 0.9, n), 1.0)
    fit = smooth_estimate(Ratio(Column("B"), Column("A")), {"A": A, "B": B})
    lo, hi = confidence_interval(fit, 0.95, "score")
    r = B.mean() / A.mean()
    gamma = stats.skew(B - r * A, bias=True)
    t = stats.t.ppf(0.975, n - 1)
    q_lo, q_hi = skewness_quantiles(gamma, n, 1.0, t)
    assert q_hi - t != pytest.approx(0.0, abs=0.05)  # the correction matters here

    def pivot(R):
        x = B - R * A
        return x.mean() / (x.std(ddof=1) / math.sqrt(n))

    assert pivot(lo) == pytest.approx(q_hi, rel=1e-6)
    assert pivot(hi) == pytest.approx(q_lo, rel=1e-6)
    # without the third moments: the symmetric Student's t Fieller interval
    mean, cov = fit.mean, fit.cov
    w = (np.eye(2)[fit.index["B"]], np.eye(2)[fit.index["A"]])
    lo0, hi0 = ratio_bounds(fit.value, mean, cov, 1.0, n, w, 0.95)
    assert pivot(lo0) == pytest.approx(t, rel=1e-6) and pivot(hi0) == pytest.approx(-t, rel=1e-6)
    lo3, hi3 = ratio_bounds(fit.value, mean, cov, 1.0, n, w, 0.95, draws=fit.pooled_draws)
    assert (lo3, hi3) == pytest.approx((lo, hi))


def test_skewness_quantiles_of_a_rounding_level_skewness_are_the_symmetric_ones():
    # a skewness of 1e-14 (a symmetric sample up to rounding) must not turn into visibly
    # asymmetric quantiles through cancellation in ((1 + 3a(y - b))^(1/3) - 1)/a
    for gamma in (4e-14, -3e-16, 1e-9):
        lo, hi = skewness_quantiles(gamma, 400, 1.0, 1.966)
        assert lo == pytest.approx(-1.966, abs=1e-8) and hi == pytest.approx(1.966, abs=1e-8)


def _recall_difference(tp_a, tp_b, pairs):
    phi = Linear(
        [1.0, -1.0],
        [
            Ratio(Column("a:tp"), Column("a:pairs")),
            Ratio(Column("b:tp"), Column("b:pairs")),
        ],
    )
    cols = {"a:tp": tp_a, "a:pairs": pairs, "b:tp": tp_b, "b:pairs": pairs}
    return smooth_estimate(phi, cols)


def test_paired_recall_difference_interval_hand_computed():
    # one true link per draw; a finds the link on draws 1, 2 and 4, b on draw 1 only: the
    # difference is the ratio of d = (0, 1, 0, 1) to the constant 1; d - 0.5 = ±0.5 has no
    # skewness: 0.5 ± t_3 sqrt(s²/4), s² = 1/3, the upper end clipped to 1
    fit = _recall_difference(
        np.array([1.0, 1.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0, 0.0]), np.ones(4)
    )
    assert fit.value == pytest.approx(0.5)
    lo, hi = confidence_interval(fit, 0.95, "score", bounds=(-1.0, 1.0))
    assert lo == pytest.approx(0.5 - 3.182446305284263 * math.sqrt(1 / 12))
    assert hi == 1.0


def test_paired_recall_difference_solves_fieller_at_the_skewness_quantiles():
    # a few draws carry the change (the entities a joins back together): the difference of
    # the recalls is the ratio of the per-draw gain d = tp_a - tp_b to the true links p;
    # its interval's ends solve the pivot mean(d - R p)/SE at Hall's quantiles, found here
    # by root finding on g(T) = T + a T² + a² T³/3 + a/2 from the skewness of d - R̂ p
    from scipy.optimize import brentq

    rng = np.random.default_rng(11)
    n = 80
    pairs = rng.pareto(1.8, n) + 1.0
    tp_b = pairs * rng.uniform(0.4, 0.8, n)
    gain = np.where(rng.random(n) < 0.15, (pairs - tp_b) * rng.uniform(0.3, 1.0, n), 0.0)
    tp_a = tp_b + gain
    fit = _recall_difference(tp_a, tp_b, pairs)
    lo, hi = confidence_interval(fit, 0.95, "score", bounds=(-1.0, 1.0))
    d = tp_a - tp_b
    r = d.mean() / pairs.mean()
    gamma = stats.skew(d - r * pairs, bias=True)
    a = gamma / math.sqrt(n) / 3
    t = stats.t.ppf(0.975, n - 1)

    def g(x):
        return x + a * x * x + a * a * x**3 / 3 + a / 2

    q_lo, q_hi = (brentq(lambda x, y=y: g(x) - y, -50, 50) for y in (-t, t))

    def pivot(R):
        x = d - R * pairs
        return x.mean() / (x.std(ddof=1) / math.sqrt(n))

    assert pivot(lo) == pytest.approx(q_hi, rel=1e-6)
    assert pivot(hi) == pytest.approx(q_lo, rel=1e-6)
    # the gain is right-skewed: the interval reaches further above the estimate
    assert gamma > 1 and hi - fit.value > 1.2 * (fit.value - lo)
