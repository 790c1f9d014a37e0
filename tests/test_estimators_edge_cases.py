"""Single cases where an estimate's interval broke its own promises: an F1 interval outside
the F-measure box of its precision and recall intervals, a bounded estimate outside [0, 1]
blamed on the wrong population, and a paired recall difference without an interval."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from _helpers import giants_with_foreign_records, record_sample
from hypothesis import given, settings
from hypothesis import strategies as st

from er_evaluation.datasets import load_patentsview_predictions, load_rldata10000
from er_evaluation.errors import UnpairedDifferenceWarning, UnreliableEstimateWarning
from er_evaluation.estimators import compare, estimate_table
from er_evaluation.estimators.intervals import fscore_bounds, mover_bounds, ratio_bounds
from er_evaluation.sampling import sample_records
from er_evaluation.simulation import misattribute

P, R, F1 = "pairwise_precision", "pairwise_recall", "pairwise_f1"


def _f(p, r):
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


@pytest.fixture(scope="module")
def patentsview() -> pd.Series:
    return load_patentsview_predictions(["2022-06-30"])["2022-06-30"]


def _table(prediction, sample) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return estimate_table({"A": prediction}, sample, validate=False).set_index("metric")


def test_f1_interval_inside_the_box_of_its_own_precision_and_recall_intervals(patentsview):
    # PatentsView, 5% misattributed, 50 records: the F1 upper end exceeded F(P_hi, R_hi)
    # (0.9118 > 0.9102) when the F1 interval took its parts' intervals at another level of
    # concentration than the P and R estimates themselves
    truth = patentsview
    pred = misattribute(truth, 0.05, seed=3)
    tab = _table(pred, sample_records(truth, 50, seed=388))
    p, r, f = tab.loc[P], tab.loc[R], tab.loc[F1]
    assert _f(p.ci_low, r.ci_low) - 1e-12 <= f.ci_low <= f.value <= f.ci_high
    assert f.ci_high <= _f(p.ci_high, r.ci_high) + 1e-12


@settings(max_examples=60, deadline=None)
@given(
    p=st.floats(0.01, 1),
    r=st.floats(0.01, 1),
    dp=st.tuples(st.floats(0, 0.5), st.floats(0, 0.5)),
    dr=st.tuples(st.floats(0, 0.5), st.floats(0, 0.5)),
    rho=st.floats(-1, 1),
)
def test_fscore_bounds_stay_in_the_box(p, r, dp, dr, rho):
    pl, ph = max(p - dp[0], 0.0), min(p + dp[1], 1.0)
    rl, rh = max(r - dr[0], 0.0), min(r + dr[1], 1.0)
    lo, hi = fscore_bounds(p, pl, ph, r, rl, rh, 1.0, rho)
    assert _f(pl, rl) - 1e-12 <= lo <= _f(p, r) + 1e-12
    assert _f(p, r) - 1e-12 <= hi <= _f(ph, rh) + 1e-12


def test_an_undefined_part_leaves_the_fscore_interval_undefined():
    # a recall of NaN (no true link weighed in its sample) gave F1 = NaN in [0, 0]
    for p, r in ((0.55, np.nan), (np.nan, 0.8), (np.nan, np.nan)):
        lo, hi = fscore_bounds(p, p, p, r, r, r, 1.0, 0.0)
        assert np.isnan(lo) and np.isnan(hi)
    assert tuple(map(float, fscore_bounds(0.0, 0.0, 0.1, 0.0, 0.0, 0.2, 1.0, 0.0)))[0] == 0.0


def test_two_draws_bias_correction_stays_in_range_and_says_why(patentsview):
    # two reviewed clusters: the second-order correction took precision to -0.018, and the
    # diagnostic blamed a wrong population, which cannot happen with 0 <= B <= A per unit
    truth = patentsview
    pred = misattribute(truth, 0.2, seed=1)
    sample = sample_records(truth, 2, seed=89)
    with pytest.warns(UnreliableEstimateWarning, match="bias correction"):
        tab = estimate_table({"A": pred}, sample, metrics=[P], validate=False)
    e = tab.iloc[0]
    assert 0.0 <= e.value <= 1.0 and e.ci_low <= e.value <= e.ci_high
    assert not e.reliable
    assert "2 draws" in e.reason and "population" not in e.reason


def test_paired_recall_with_no_reviewed_difference_has_a_finite_wide_interval():
    # RLdata, B fixes half of A's 10% misattributions; the 100 records drawn with seed 3
    # reach no true cluster where A and B differ: the paired recall difference was 0 with a
    # NaN interval, although the true difference is 0.097
    truth = load_rldata10000()[1]
    a = misattribute(truth, 0.1, seed=1)
    b = misattribute(truth, 0.1, seed=1, keep=0.5)
    sample = sample_records(truth, 100, seed=3)
    with pytest.warns(UnpairedDifferenceWarning, match="agree on all"):
        d = compare({"B": b, "A": a}, sample, R, baseline="A").iloc[0]
    assert d.value == 0.0 and d.std_error == 0.0
    assert math.isfinite(d.ci_low) and math.isfinite(d.ci_high)
    assert d.ci_low < 0.0 < d.ci_high and d.ci_high - d.ci_low > 0.05
    assert d.ci_low <= 0.097 <= d.ci_high  # the true difference
    assert d.reliable


def test_ratio_bounds_at_one_with_no_error_is_clopper_pearson_on_the_kish_size():
    # k equal units, all correct: (a/2)^(1/k) below 1
    for k in (3, 10, 40):
        mean = np.array([[2.0, 2.0]])
        cov = np.zeros((1, 2, 2))
        lo, hi = ratio_bounds(
            np.array([1.0]), mean, cov, 1.0, k, (np.array([1.0, 0]), np.array([0, 1.0])), 0.95
        )
        assert hi[0] == 1.0 and lo[0] == pytest.approx(0.025 ** (1 / k))


def test_mover_bounds_of_independent_parts_and_of_a_difference():
    # two independent parts: the half-widths add in quadrature
    lo, hi = mover_bounds([0.5, 0.2], [0.4, 0.1], [0.7, 0.25], [1.0, 1.0])
    assert lo == pytest.approx(0.7 - math.hypot(0.1, 0.1))
    assert hi == pytest.approx(0.7 + math.hypot(0.2, 0.05))
    # a difference with correlation r: Zou & Donner (2008), eq. for theta_1 - theta_2
    corr = np.array([[1.0, 0.5], [0.5, 1.0]])
    lo, hi = mover_bounds([0.5, 0.2], [0.4, 0.1], [0.7, 0.25], [1.0, -1.0], corr)
    assert lo == pytest.approx(0.3 - math.sqrt(0.1**2 + 0.05**2 - 2 * 0.5 * 0.1 * 0.05))
    assert hi == pytest.approx(0.3 + math.sqrt(0.2**2 + 0.1**2 - 2 * 0.5 * 0.2 * 0.1))


def test_hosts_view_flags_a_precision_whose_sample_missed_the_foreign_records():
    # every giant drawn 3 times, none of its foreign records: precision 0.953 with a
    # narrow interval, the truth 0.909; the giants' reviewers counted the foreign records,
    # which put precision at 0.911: the flag says so and which clusters to review whole
    from er_evaluation import contingency
    from er_evaluation.metrics import pairwise_precision

    truth, pred, first_single = giants_with_foreign_records()
    exact = pairwise_precision(contingency(pred, truth))
    units = list(range(20)) + list(range(first_single, first_single + 40))
    sample = record_sample(truth, units, [3] * 20 + [1] * 40)
    with pytest.warns(UnreliableEstimateWarning, match="hosts' count"):
        e = estimate_table({"A": pred}, sample, metrics=[P]).iloc[0]
    assert not (e.ci_low <= exact <= e.ci_high)  # the miss the flag is for
    assert not e.reliable
    assert "would be 0.9106" in e.reason
    assert "review these 20 predicted clusters whole: 10,490 records" in e.reason


def test_hosts_view_leaves_alone_a_sample_that_drew_the_foreign_records():
    # the same giants, and 5 of their foreign records drawn (about their share): the two
    # views agree with the interval, no flag
    truth, pred, first_single = giants_with_foreign_records()
    units = list(range(20)) + list(range(20, 25)) + list(range(first_single, first_single + 40))
    sample = record_sample(truth, units, [3] * 20 + [1] * 5 + [1] * 40)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnreliableEstimateWarning)
        e = estimate_table({"A": pred}, sample, metrics=[P, F1])
    assert e["reliable"].all()
