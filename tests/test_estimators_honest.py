"""Single cases of honest outputs: F1 consistent with its parts, no impossible outputs, no
zero-width interval but for a census, no decision by rounding noise, diagnostics and the
reliability flag, the convention for predictions lacking reviewed records."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from er_evaluation import contingency
from er_evaluation.datasets import load_patentsview_benchmark, load_patentsview_predictions
from er_evaluation.errors import (
    CoverageWarning,
    UnpairedDifferenceWarning,
    UnreliableEstimateWarning,
)
from er_evaluation.estimators import (
    Diagnostics,
    compare,
    confidence_interval,
    estimate,
    estimate_table,
    restrict_sample,
    smooth_estimate,
)
from er_evaluation.estimators.diagnostics import concentration
from er_evaluation.estimators.intervals import fieller_bounds, wilson_bounds
from er_evaluation.estimators.ratio import Column, Ratio
from er_evaluation.metrics import pairwise_precision
from er_evaluation.sampling import Sample, benchmark_sample, sample_clusters, sample_records
from er_evaluation.simulation import misattribute

P, R, F1 = "pairwise_precision", "pairwise_recall", "pairwise_f1"


@pytest.fixture(scope="module")
def patentsview():
    versions = load_patentsview_predictions(["2017-08-08", "2017-10-03", "2022-06-30"])
    sample = benchmark_sample(load_patentsview_benchmark(), weights="cluster_size")
    return versions, sample


def _quiet(fn, *a, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnreliableEstimateWarning)
        warnings.simplefilter("ignore", CoverageWarning)
        return fn(*a, **kw)


def _truth(n_clusters=400, seed=0) -> pd.Series:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 8, n_clusters)
    return pd.Series(np.repeat(np.arange(n_clusters), sizes), name="truth")


# ------------------------------------------------------------- F1 and its parts


@pytest.mark.parametrize("ci_method", [None, "normal", "studentized"])
def test_f1_is_the_f_measure_of_the_same_samples_precision_and_recall(ci_method):
    truth = _truth()
    pred = misattribute(truth, 0.2, seed=1)
    sample = sample_records(truth, 60, seed=2)
    p, r, f = (_quiet(estimate, pred, sample, m, ci_method=ci_method) for m in (P, R, F1))
    assert f.value == pytest.approx(2 * p.value * r.value / (p.value + r.value), rel=1e-12)
    assert min(p.value, r.value) <= f.value <= max(p.value, r.value)


@pytest.mark.slow
def test_default_f1_interval_is_consistent_with_its_parts(patentsview):
    versions, sample = patentsview
    for name, pred in versions.items():
        p, r, f = (_quiet(estimate, pred, sample, m, on_missing="restrict") for m in (P, R, F1))

        def fm(a, b):
            return 2 * a * b / (a + b)

        assert fm(p.ci_low, r.ci_low) - 1e-12 <= f.ci_low <= f.value <= f.ci_high
        assert f.ci_high <= fm(p.ci_high, r.ci_high) + 1e-12, name


def test_naive_plus_naive_f1_is_the_naive_f1():
    truth = _truth()
    pred = misattribute(truth, 0.2, seed=3)
    sample = sample_records(truth, 80, seed=4)
    a = estimate(pred, sample, F1, estimator="naive")
    b = estimate(pred, sample, F1, estimator="naive+naive")
    assert a.value == b.value and math.isnan(b.std_error) and b.estimator == "naive"


@pytest.mark.filterwarnings("ignore::er_evaluation.errors.PopulationWarning")
def test_naive_f1_on_a_census_is_exact_without_standard_error():
    truth = _truth(50)
    pred = misattribute(truth, 0.2, seed=5)
    census = benchmark_sample(truth, weights="uniform")
    e = estimate(pred, census, F1, estimator="naive+naive")
    exact = estimate(pred, census, F1, estimator="naive")
    assert e.value == exact.value and math.isnan(e.std_error)


# ------------------------------------------------------------ impossible outputs


def test_estimate_outside_range_is_flagged_and_interval_never_inverted(patentsview):
    versions, sample = patentsview
    with pytest.warns(UnreliableEstimateWarning, match="not the one the sample was drawn"):
        e = estimate(versions["2022-06-30"], sample, "cluster_precision")
    assert e.value > 1  # the bundled subset is not the population the benchmark came from
    assert e.ci_low <= e.ci_high and not e.reliable
    assert "outside [0, 1]" in e.diagnostics.reason


@pytest.mark.parametrize("method", ["score", "normal", "logit", "fieller", "studentized"])
def test_no_method_returns_an_inverted_interval(method):
    # estimates slightly above 1 after the bias correction, and a plain ratio
    A = np.array([1.0, 2.0, 3.0, 4.0])
    fit = smooth_estimate(Ratio(Column("B"), Column("A")), {"A": A, "B": A * 1.0})
    lo, hi = confidence_interval(fit, 0.95, method)
    assert lo <= hi


# ----------------------------------------------- zero width only for a census


def _all_correct(k: int) -> tuple[pd.Series, Sample]:
    truth = pd.Series(np.repeat(np.arange(200), 3))
    sample = sample_clusters(truth, k, weights="uniform", replace=False, seed=k)
    return truth, sample


@pytest.mark.parametrize("k", [3, 5, 10, 20, 40])
def test_all_correct_clusters_give_a_score_interval_never_zero_width_or_full(k):
    truth, sample = _all_correct(k)
    e = _quiet(estimate, truth, sample, P)
    assert e.value == 1.0 and e.std_error == 0.0
    assert e.ci_high == 1.0 and 0.0 < e.ci_low < 1.0  # neither [1, 1] nor [0, 1]
    # Clopper-Pearson's bound at no error in the k/theta effective draws of k all-equal
    # units drawn without replacement from 200 (theta = 1 - (k - 1)/199): (a/2)^(theta/k)
    theta = 1 - (k - 1) / 199
    assert e.ci_low == pytest.approx(0.025 ** (theta / k), rel=1e-9)


def test_all_correct_interval_shrinks_monotonically_with_the_sample():
    lows = [_quiet(estimate, *_all_correct(k), P).ci_low for k in (3, 10, 20, 40)]
    assert lows == sorted(lows)


def test_one_reviewed_cluster_has_no_interval_and_is_flagged():
    truth, sample = _all_correct(1)
    with pytest.warns(UnreliableEstimateWarning, match="1 reviewed cluster"):
        e = estimate(truth, sample, P)
    assert math.isnan(e.std_error) and math.isnan(e.ci_low) and math.isnan(e.ci_high)


def test_five_reviewed_clusters_give_a_wide_interval_from_their_counts():
    # five units: the interval is built on the effective counts (Clopper-Pearson on the
    # Korn-Graubard size with Student's t on 4 degrees of freedom), wide and honest;
    # neither a zero-width claim nor [0, 1]
    truth = _truth()
    pred = misattribute(truth, 0.3, seed=7)
    exact = pairwise_precision(contingency(pred, truth))
    for seed in range(8, 14):
        e = _quiet(estimate, pred, sample_clusters(truth, 5, weights="uniform", seed=seed), P)
        assert 0.0 < e.ci_low < e.value < e.ci_high < 1.0
        assert e.ci_high - e.ci_low > 0.25
        assert e.ci_low <= exact <= e.ci_high


@pytest.mark.filterwarnings("ignore::er_evaluation.errors.PopulationWarning")
def test_record_census_gives_the_exact_value_with_zero_width():
    truth = _truth(100)
    pred = misattribute(truth, 0.2, seed=9)
    census = sample_records(truth, len(truth), replace=False, seed=10)
    exact = estimate(pred, benchmark_sample(truth), P, estimator="naive").value
    for metric in (P, R, F1):
        e = estimate(pred, census, metric)
        assert e.std_error == 0.0 and e.ci_low == e.ci_high == pytest.approx(e.value)
        assert e.reliable
    assert estimate(pred, census, P).value == pytest.approx(exact, rel=1e-12)


def test_rounding_noise_on_a_zero_variance_decides_nothing():
    A = np.array([0.1, 0.2, 0.3, 0.7, 1.1] * 4)
    for scale in (1.0, 1 + 1e-15, 3.0):  # B/A == 1 for every unit, up to rounding
        fit = smooth_estimate(Ratio(Column("B"), Column("A")), {"A": A, "B": A * scale / scale})
        assert fit.variance == 0.0
    lo, hi = wilson_bounds(1.0, 1e-17, 20, 1.96)
    assert (lo, hi) == wilson_bounds(1.0, 0.0, 20, 1.96)


# --------------------------------------------------------------- diagnostics


def test_every_estimate_carries_diagnostics_and_the_table_shows_them(patentsview):
    versions, sample = patentsview
    t = _quiet(estimate_table, versions, sample, (P, R, F1), on_missing="restrict")
    for col in ("n_effective", "top_share", "reliable", "reason"):
        assert col in t.columns
    recent = t[t["prediction"] == "2022-06-30"]
    assert recent["reliable"].all(), recent.loc[~recent["reliable"], "reason"].tolist()
    # a flag always says why, and a flag of the hosts' view says what to review
    flagged = t[~t["reliable"]]
    assert (flagged["reason"].str.len() > 0).all()
    hosts = flagged[flagged["reason"].str.contains("hosts' count")]
    assert hosts["reason"].str.contains("review these").all()
    assert t.loc[t["metric"] == R, "reliable"].all()
    e = _quiet(estimate, versions["2022-06-30"], sample, P)
    assert isinstance(e.diagnostics, Diagnostics) and 1 <= e.diagnostics.n_effective <= 401
    d = _quiet(compare, versions, sample, P, on_missing="restrict")
    assert "reliable" in d.columns


def test_concentration_against_hand_computed_kish_sizes():
    Y = np.array([[1.0, 0.0], [1.0, 2.0], [2.0, 2.0]])  # columns: (4²/6, 4²/8)
    n_eff, share = concentration(Y)
    assert n_eff == pytest.approx(2.0) and share == pytest.approx(1.0)
    n_eff, share = concentration(np.ones((10, 1)))
    assert n_eff == pytest.approx(10.0) and share == pytest.approx(0.3)


# ------------------------------------ predictions lacking some reviewed records


def test_restrict_sample_reproduces_published_patentsview_precision(patentsview):
    versions, sample = patentsview
    pred = versions["2017-08-08"]
    e = estimate(pred, restrict_sample(sample, pred), P)
    assert round(e.value, 4) == 0.5683  # er-evaluation's published figure
    same = _quiet(estimate, pred, sample, P, on_missing="restrict_sample")
    assert same.value == e.value
    kept = _quiet(estimate, pred, sample, P, on_missing="restrict")
    assert kept.value == pytest.approx(0.6177, abs=5e-4)  # full-size probabilities


@pytest.mark.parametrize("on_missing", ["restrict", "restrict_sample"])
def test_record_and_cluster_recall_agree_under_either_convention(patentsview, on_missing):
    versions, sample = patentsview
    for pred in versions.values():
        rec = _quiet(estimate, pred, sample, R, estimator="record", on_missing=on_missing)
        clu = _quiet(estimate, pred, sample, R, estimator="cluster", on_missing=on_missing)
        assert rec.value == pytest.approx(clu.value, rel=1e-12)
        assert rec.std_error == pytest.approx(clu.std_error, rel=1e-9)


# ------------------------------------------------ the score interval's pieces


def test_vectorised_fieller_bounds_equal_the_fieller_interval():
    rng = np.random.default_rng(11)
    A = rng.uniform(1, 5, 40)
    B = A * rng.uniform(0.5, 1.0, 40)
    fit = smooth_estimate(Ratio(Column("B"), Column("A")), {"A": A, "B": B})
    cn, cd = np.zeros(2), np.zeros(2)
    cn[fit.index["B"]], cd[fit.index["A"]] = 1.0, 1.0
    lo, hi, ok = fieller_bounds(fit.mean, fit.cov, fit.theta, fit.n, (cn, cd), 1.959963984540054)
    assert ok and (lo, hi) == pytest.approx(confidence_interval(fit, 0.95, "fieller", bounds=None))


def test_wilson_bounds_closed_form():
    # v = 0.8, SE = 0.04: n* = 0.16/0.0016 = 100, Wilson's interval for 80/100
    lo, hi = wilson_bounds(0.8, 0.04, 7, 1.96)
    z2n = 1.96**2 / 100
    center = (0.8 + z2n / 2) / (1 + z2n)
    half = 1.96 * math.sqrt(0.8 * 0.2 / 100 + z2n / 400) / (1 + z2n)
    assert (lo, hi) == pytest.approx((center - half, center + half), rel=1e-12)


@given(
    v=st.floats(0.0, 1.0),
    se=st.floats(1e-6, 10.0),
    n=st.floats(0.5, 1e6),
)
def test_wilson_bounds_is_the_textbook_formula_where_it_is_finite(v, se, n):
    z = 1.96
    pq = v * (1 - v)
    n_star = pq / se**2 if pq > 0 else n
    assume(n_star > 1e-100)  # below, the textbook form itself overflows (next test)
    z2n = z * z / n_star
    center = (v + z2n / 2) / (1 + z2n)
    half = z * math.sqrt(pq / n_star + z2n / (4 * n_star)) / (1 + z2n)
    lo, hi = wilson_bounds(v, se, n, z)
    assert float(lo) == pytest.approx(max(center - half, 0.0), abs=1e-9)
    assert float(hi) == pytest.approx(min(center + half, 1.0), abs=1e-9)


def test_wilson_bounds_stays_finite_at_extreme_standard_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning either
        # an SE far larger than the value (n* -> 0) tends to [0, 1]
        assert [float(b) for b in wilson_bounds(1e-300, 0.1, 5, 1.96)] == [0.0, 1.0]
        assert [float(b) for b in wilson_bounds(0.5, 1e300, 5, 1.96)] == [0.0, 1.0]
        # an SE too small to square is the point
        assert [float(b) for b in wilson_bounds(0.5, 1e-200, 5, 1.96)] == [0.5, 0.5]
        # the interval holds the estimate exactly at both ends (no 1 - 1e-16 upper end)
        for n in (3.0, 7.0, 10.0, 400.0, 1e6):
            assert float(wilson_bounds(1.0, 0.0, n, 1.96)[1]) == 1.0
            assert float(wilson_bounds(0.0, 0.0, n, 1.96)[0]) == 0.0
        # no effective unit at all: undefined, for the caller to say so
        assert all(math.isnan(float(b)) for b in wilson_bounds(1.0, 0.0, 0.0, 1.96))


def test_mover_difference_of_identical_predictions_is_a_narrow_interval_at_zero():
    truth = _truth()
    pred = misattribute(truth, 0.2, seed=12)
    sample = sample_records(truth, 80, seed=13)
    d = _quiet(compare, {"a": pred, "b": pred.copy()}, sample, P).iloc[0]
    # r = 1: what is left is the asymmetry of the two (equal) Fieller intervals
    assert d.value == 0.0 and d.ci_low <= 0.0 <= d.ci_high and d.ci_high - d.ci_low < 0.01


def test_restrict_sample_drops_emptied_units_and_recomputes_size_probabilities():
    truth = pd.Series([1, 1, 1, 2, 2, 3], index=list("abcdef"))
    sample = benchmark_sample(truth, weights="cluster_size")
    pred = pd.Series([0, 0, 1, 1], index=list("abcd"))  # lacks e and f: cluster 3 emptied
    r = restrict_sample(sample, pred)
    assert list(r.units) == [1, 2] and list(r.probability) == [3.0, 1.0]
    assert list(r.reference.index) == list("abcd")
    assert restrict_sample(sample, truth) is sample  # nothing missing: unchanged


def test_difference_with_no_reviewed_unit_where_the_predictions_differ_is_not_paired():
    # a and b differ only inside true clusters 3 and 4, which nobody reviewed: the sample
    # says nothing about the difference, so SE 0 must not become a zero-width interval;
    # the interval combines the two estimates' own intervals as if independent
    truth = pd.Series([0, 0, 1, 1, 2, 2, 3, 3, 3, 4, 4], index=list("abcdefghijk"))
    a = pd.Series([0, 0, 1, 1, 2, 2, 3, 3, 3, 4, 4], index=truth.index)
    b = a.copy()
    b[["h", "i", "j"]] = [9, 9, 9]
    reviewed = truth[truth.isin([0, 1, 2])]
    sample = Sample(
        reference=reviewed,
        units=pd.Index([0, 1, 2]),
        multiplicity=np.array([4, 3, 5]),
        probability=np.ones(3),
        design="clusters",
        weights="uniform",
        replace=True,
        population_size=5,
    )
    # the interval holds (the coverage benchmark's unpaired intervals hardly ever miss), so
    # it is not flagged; a warning says why it is wide and what would narrow it
    for metric in (P, R, F1):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            d = compare({"b": b, "a": a}, sample, metric).iloc[0]
        (w,) = [x for x in caught if "agree on all 3 reviewed units" in str(x.message)]
        assert w.category is UnpairedDifferenceWarning and "change_strata" in str(w.message)
        assert d.std_error == 0 and d.value == 0
        assert d.ci_low < 0 < d.ci_high
        assert d.reliable


def test_difference_on_a_census_keeps_its_exact_point_interval():
    truth = pd.Series([0, 0, 1, 1, 2], index=list("abcde"))
    a = pd.Series([0, 0, 1, 2, 2], index=truth.index)
    census = sample_records(truth, len(truth), replace=False, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnreliableEstimateWarning)
        d = compare({"a2": a.copy(), "a": a}, census, P).iloc[0]
    assert d.value == 0 and d.ci_low == d.ci_high == 0
