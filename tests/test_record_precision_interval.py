"""The score interval of the record precision (Binette et al. 2023, eq. 10-11): a plain mean
of per-draw values N f(c)/(|P| |c|), which are not confined to [0, 1] and are right-skewed,
gets Hall's (1992) skewness-corrected interval."""

from __future__ import annotations

import itertools
import math
import statistics
import warnings
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import stdtrit

from er_evaluation.errors import UnreliableEstimateWarning
from er_evaluation.estimators import confidence_interval, estimate, smooth_estimate
from er_evaluation.estimators.intervals import hall_bounds
from er_evaluation.estimators.ratio import Column
from er_evaluation.sampling import Sample


def _cbrt(y: float) -> float:
    return math.copysign(abs(y) ** (1 / 3), y)


def test_hand_computed_record_precision_interval():
    # draws 0, 0, .075, .075, .15, .15, .225, .525: mean .15, deviations -.15, -.15, -.075,
    # -.075, 0, 0, .075, .375 with sum of squares .2025 and sum of cubes .0455625, so
    # SE = sqrt(.2025 / 7 / 8) = .45 / sqrt(56), m2 = .2025/8, m3 = .0455625/8 and the
    # skewness m3 / m2^1.5 = sqrt(2); a = sqrt(2)/sqrt(8) = 1/2; t = t_{7, .975} = 2.364624;
    # g^-1(u) = (3/a)(cbrt(1 + a (u - a/6)) - 1) = 6 (cbrt(1 + (u - 1/12)/2) - 1)
    draws = [0.0, 0.0, 0.075, 0.075, 0.15, 0.15, 0.225, 0.525]
    fit = smooth_estimate(Column("z"), {"z": np.array(draws)})
    assert fit.skewness == pytest.approx(math.sqrt(2), rel=1e-12)
    se, t = 0.45 / math.sqrt(56), 2.3646242515927849
    low = 0.15 - se * 6 * (_cbrt(1 + (t - 1 / 12) / 2) - 1)
    high = 0.15 - se * 6 * (_cbrt(1 + (-t - 1 / 12) / 2) - 1)
    assert (low, high) == pytest.approx((0.0458044, 0.7299176), abs=5e-7)
    assert confidence_interval(fit, 0.95) == pytest.approx((low, high), rel=1e-12)
    # longer above than below: right-skewed draws put the truth above a low sample mean
    assert high - 0.15 > 5 * (0.15 - low)


def test_an_estimate_above_one_is_not_read_as_no_error_seen():
    # per-draw values above 1 give a mean of 1.1125: Wilson's interval of a proportion at 1
    # ([k/(k + z^2), 1] on the Kish size k = 7.8: [.67, 1]) would exclude every precision
    # below .67, however rarely the draws reach their values above 1
    fit = smooth_estimate(Column("z"), {"z": np.array([0.5] + [1.2] * 7)})
    low, high = confidence_interval(fit, 0.95)
    expected = hall_bounds(fit.value, fit.std_error, fit.skewness, 8, stdtrit(7, 0.975))
    assert high == 1.0
    assert low == pytest.approx(float(expected[0]), rel=1e-12)
    assert low == pytest.approx(0.457376, abs=1e-6)


@given(
    st.floats(0.0, 1.0),
    st.floats(1e-4, 0.5),
    st.one_of(st.floats(-3.0, -0.01), st.just(0.0), st.floats(0.01, 3.0)),
    st.integers(2, 400),
)
def test_hall_bounds_hold_the_estimate_and_are_symmetric_without_skew(v, se, skew, n):
    q = float(stdtrit(n - 1, 0.975))
    lo, hi = (float(b) for b in hall_bounds(v, se, skew, n, q))
    assert lo < v < hi
    lo0, hi0 = (float(b) for b in hall_bounds(v, se, 0.0, n, q))
    assert (lo0, hi0) == pytest.approx((v - q * se, v + q * se), rel=1e-12, abs=1e-15)
    # the side the skewness points to is the longer one
    if skew > 0:
        assert hi - v > v - lo
    elif skew < 0:
        assert hi - v < v - lo


# Truth A = {0, 1, 2, 3}, B = {4, 5}, C = {6}, D = {7}; prediction {0, 1, 2, 3, 6}, {4, 5},
# {7}: 11 predicted links, 7 of them true (precision 7/11); per record
# z = N f(c)/(|P| |c|) = 8 * 6/(11 * 4) = 12/11 on A, 8 * 1/(11 * 2) = 4/11 on B, 0 else.
TRUTH = pd.Series(list("AAAABBCD"), name="truth")
PREDICTION = pd.Series([1, 1, 1, 1, 2, 2, 1, 3], name="prediction")


def _record_values() -> list[float]:
    """Per record, N f(c)/(|P| |c|) by counting pairs (independent of the library)."""
    pairs = list(itertools.combinations(range(len(TRUTH)), 2))
    predicted = [(i, j) for i, j in pairs if PREDICTION[i] == PREDICTION[j]]
    size = Counter(TRUTH)
    f = Counter(TRUTH[i] for i, j in predicted if TRUTH[i] == TRUTH[j])
    return [len(TRUTH) * f[c] / (len(predicted) * size[c]) for c in TRUTH]


def _sample(rows: tuple[int, ...]) -> Sample:
    """The sample of these record draws: their true clusters, as sample_records builds it."""
    counts = Counter(TRUTH[r] for r in rows)
    units = pd.Index(sorted(counts))
    return Sample(
        reference=TRUTH[TRUTH.isin(units)],
        units=units,
        multiplicity=np.array([counts[u] for u in units], dtype=np.int64),
        probability=TRUTH.value_counts().reindex(units).to_numpy(dtype=float),
        design="records",
        weights="cluster_size",
        replace=True,
        population_size=len(TRUTH),
    )


def _hall_by_hand(z: list[float], level: float = 0.95) -> tuple[float, float]:
    n = len(z)
    m = statistics.fmean(z)
    se = statistics.stdev(z) / math.sqrt(n)
    m2 = sum((x - m) ** 2 for x in z) / n
    gamma = sum((x - m) ** 3 for x in z) / n / m2**1.5
    a, t = gamma / math.sqrt(n), float(stdtrit(n - 1, 0.5 + level / 2))

    def g_inverse(u: float) -> float:
        c = _cbrt(1 + a * (u - a / 6))
        return 3 * (u - a / 6) / (c * c + c + 1)  # (3/a)(c - 1), no cancellation at small a

    low, high = m - se * g_inverse(t), m - se * g_inverse(-t)
    return max(0.0, min(low, min(m, 1.0))), min(1.0, max(high, max(m, 0.0)))


@pytest.mark.slow  # 120 estimates through the public entry point
def test_every_sample_of_a_tiny_population_by_brute_force():
    z = _record_values()
    assert z == pytest.approx([12 / 11] * 4 + [4 / 11] * 2 + [0.0] * 2)
    n, N = 3, len(TRUTH)
    expectation, checked = 0.0, 0
    for rows in itertools.combinations_with_replacement(range(N), n):
        # probability of this multiset of record draws: multinomial count / N^n
        ways = math.factorial(n) / math.prod(math.factorial(k) for k in Counter(rows).values())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnreliableEstimateWarning)
            e = estimate(PREDICTION, _sample(rows), estimator="record")
        draws = [z[r] for r in rows]
        expectation += ways / N**n * e.value
        assert e.value == pytest.approx(statistics.fmean(draws), rel=1e-12)
        if statistics.pstdev(draws) > 0:
            assert (e.ci_low, e.ci_high) == pytest.approx(_hall_by_hand(draws), abs=1e-12)
            checked += 1
    # eq. 10 is unbiased: its expectation over all samples is the precision
    assert expectation == pytest.approx(7 / 11, rel=1e-12)
    assert checked == 92  # the 120 multisets but the 28 whose three values are equal
