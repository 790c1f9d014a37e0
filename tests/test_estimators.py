"""Estimators of Binette et al. 2023 (appendix A.2): hand-computed cases, census exactness,
eq. 8-9 vs the generic smooth-function machinery, invariances, errors."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from _helpers import figure2
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import completeness_score, homogeneity_score, v_measure_score

from er_evaluation.errors import CoverageError, CoverageWarning, UndefinedMetricWarning
from er_evaluation.estimators import (
    compare,
    estimate,
    estimate_table,
    ratio_estimate,
    smooth_estimate,
)
from er_evaluation.estimators.ratio import Column, FBeta, Linear, Ratio
from er_evaluation.estimators.results import FRAME_COLUMNS
from er_evaluation.sampling import (
    Sample,
    benchmark_sample,
    sample_blocks,
    sample_clusters,
    sample_records,
)
from er_evaluation.vocabulary import ESTIMATOR_METRICS

# Binette et al. 2023, Figure 2 (_helpers.figure2), true clusters 1..4, predicted a..d.
# Per true cluster (f = predicted links inside, out = predicted links leaving):
#   c1={1,2,3}: f=1 ({2,3}), out=1 (1-4), |c|=3, C(3,2)=3
#   c2={4,5}:   f=0,         out=1 (4-1), |c|=2, C(2,2)=1
#   c3={6,7}:   f=1 ({6,7}), out=2 (6-8, 7-8), |c|=2, 1 pair
#   c4={8}:     f=0,         out=2,       |c|=1, 0 pairs
# N = 8, |P| = 1 + 1 + 3 = 5, |T| = 5, |T ∩ P| = 2: P = R = 2/5.
TRUTH, PRED = figure2((1, 2, 3, 4), ("a", "b", "c", "d"))


def _bench(clusters, **kw) -> Sample:
    return benchmark_sample(TRUTH[TRUTH.isin(clusters)], **kw)


def _est(sample, metric, estimator=None, **kw):
    return estimate(PRED, sample, metric, estimator=estimator, ci_method="normal", **kw)


# ---------------------------------------------------------------- hand-computed cases


def test_cluster_block_precision_hand_computed():
    # sample c1, c3 uniformly with replacement (theta = 1), n = 2
    # A = f + out/2 = 1.5, 2; B = f = 1, 1; Abar = 1.75, Bbar = 1; ratio 4/7
    # A/Abar = 6/7, 8/7; sum (A/Abar)(B/Bbar - A/Abar) = 6/49 - 8/49 = -2/49
    # estimate = 4/7 * (1 + 1/2 * -2/49) = 4/7 * 48/49 = 192/343
    # variance = (4/7)^2 * 1/2 * ((1/7)^2 + (1/7)^2) = 16/2401 -> SE 4/49
    e = _est(_bench([1, 3], weights="uniform"), "pairwise_precision")
    assert e.estimator == "cluster_block"
    assert e.value == pytest.approx(192 / 343)
    assert e.std_error == pytest.approx(4 / 49)
    assert e.plugin == pytest.approx(4 / 7)
    assert (e.n_units, e.n_draws, e.n_records) == (2, 2, 5)
    z = 1.959963984540054
    assert e.ci_low == pytest.approx(192 / 343 - z * 4 / 49)


def test_cluster_recall_hand_computed():
    # A = C(|c|,2) = 3, 1; B = f = 1, 1; ratio 1/2; A/Abar = 1.5, 0.5
    # sum = 1.5*(1-1.5) + 0.5*(1-0.5) = -0.5 -> factor 1 - 0.25 = 0.75 -> 3/8
    # variance = 1/4 * 1/2 * (0.25 + 0.25) = 1/16
    e = _est(_bench([1, 3], weights="uniform"), "pairwise_recall")
    assert e.estimator == "cluster"
    assert e.value == pytest.approx(3 / 8)
    assert e.std_error == pytest.approx(1 / 4)


def test_cluster_precision_estimator_hand_computed():
    # P_clust: A = |c| = 3, 2; B = N f/|P| = 1.6, 1.6; ratio 0.64; A/Abar = 1.2, 0.8
    # sum = 1.2*(-0.2) + 0.8*0.2 = -0.08 -> factor 0.96 -> 0.6144
    # variance = 0.64^2 * 1/2 * (0.04 + 0.04) = 0.016384
    e = _est(_bench([1, 3], weights="uniform"), "pairwise_precision", "cluster")
    assert e.value == pytest.approx(0.6144)
    assert e.std_error**2 == pytest.approx(0.016384)


def test_record_estimators_hand_computed():
    # records sampled uniformly: c1 reached twice, c3 once (multiplicities 2, 1)
    # P_rec: Z = N f/(|P||c|) = 8/15, 8/15, 4/5; mean 28/45;
    #   deviations -4/45, -4/45, 8/45 -> sum of squares 96/2025; var = 96/2025/6 = 16/2025
    # R_rec: A = |c|-1 = 2, 2, 1; B = 2f/|c| = 2/3, 2/3, 1; ratio 7/15
    #   A/Abar = 6/5, 6/5, 3/5; B/Bbar = 6/7, 6/7, 9/7
    #   sum (A/Abar)(B/Bbar - A/Abar) = 2*(6/5)(-12/35) + (3/5)(24/35) = -72/175
    #   estimate = 7/15 * (1 - 12/175) = 1141/2625
    #   variance = (7/15)^2 /6 * (2*(12/35)^2 + (24/35)^2) = 0.0256
    s = _bench([1, 3], weights="cluster_size", multiplicity=pd.Series({1: 2, 3: 1}))
    p = _est(s, "pairwise_precision", "record")
    assert p.value == pytest.approx(28 / 45)
    assert p.std_error == pytest.approx(4 / 45)
    r = _est(s, "pairwise_recall")
    assert r.estimator == "record"
    assert r.value == pytest.approx(1141 / 2625)
    assert r.std_error == pytest.approx(0.16)
    assert (r.n_units, r.n_draws) == (2, 3)
    # Lemma 2 with p_c ∝ |c| gives the same recall (A and B both halved)
    rc = _est(s, "pairwise_recall", "cluster")
    assert rc.value == pytest.approx(r.value)
    assert rc.std_error == pytest.approx(r.std_error)


@pytest.mark.filterwarnings("ignore::er_evaluation.errors.PopulationWarning")
def test_block_estimators_hand_computed():
    # blocks B1 = {1..5} (c1, c2), B2 = {6,7,8} (c3, c4), both sampled, theta = 1
    # B1: |T_b| = 4, |T_b∩P_b| = 1, |P_b| = 2 ({1,4},{2,3}), |P_b^-| = 0
    # B2: |T_b| = 1, |T_b∩P_b| = 1, |P_b| = 3, |P_b^-| = 0
    # precision: B = 1, 1; A = 2, 3; ratio 0.4; A/Abar = 0.8, 1.2; sum = 0.16 - 0.24
    #   -> 0.4 * 0.96 = 0.384; variance = 0.16 * 1/2 * 0.08 = 0.0064
    # recall: A = 4, 1; ratio 0.4; A/Abar = 1.6, 0.4; sum = -0.96 + 0.24 = -0.72
    #   -> 0.4 * 0.64 = 0.256; variance = 0.16 * 1/2 * 0.72 = 0.0576
    blocks = pd.Series(["B1"] * 5 + ["B2"] * 3, index=range(1, 9))
    s = benchmark_sample(TRUTH, weights="uniform", blocks=blocks)
    assert s.design == "blocks"
    p, r = _est(s, "pairwise_precision"), _est(s, "pairwise_recall")
    assert (p.estimator, r.estimator) == ("block", "block")
    assert p.value == pytest.approx(0.384)
    assert p.std_error == pytest.approx(0.08)
    assert r.value == pytest.approx(0.256)
    assert r.std_error == pytest.approx(0.24)


def test_naive_estimator_on_benchmark_records():
    # records of c1 and c3 alone: {1,2,3,6,7}; predicted links among them: {2,3}, {6,7}
    # both true -> naive precision 1; true links 3 + 1 = 4 -> naive recall 2/4
    s = _bench([1, 3], weights="uniform")
    p, r = _est(s, "pairwise_precision", "naive"), _est(s, "pairwise_recall", "naive")
    assert p.value == 1.0 and r.value == 0.5
    assert math.isnan(p.std_error) and p.ci_method == "none"


def test_fscore_combines_precision_and_recall():
    s = _bench([1, 3], weights="uniform")
    p, r = _est(s, "pairwise_precision"), _est(s, "pairwise_recall")
    f = _est(s, "pairwise_f1")
    assert f.estimator == "cluster_block+cluster"
    assert f.plugin == pytest.approx(2 * p.plugin * r.plugin / (p.plugin + r.plugin))
    f2 = _est(s, "pairwise_fbeta", beta=2.0)
    assert f2.metric == "pairwise_f2"
    assert f2.plugin == pytest.approx(5 * p.plugin * r.plugin / (4 * p.plugin + r.plugin))


# ---------------------------------------------------------------- eq. 8-9 and Taylor


def test_generic_ratio_reproduces_eq_8_and_9():
    rng = np.random.default_rng(3)
    A = rng.gamma(2.0, 3.0, size=40)
    B = A * rng.uniform(0.2, 1.0, size=40) + rng.normal(0, 0.5, 40)
    phi = Ratio(Column("B"), Column("A"))
    for T, replace in ((None, True), (500, False)):
        est, var = ratio_estimate(A, B, population_size=T, replace=replace)
        fit = smooth_estimate(phi, {"A": A, "B": B}, population_size=T, replace=replace)
        assert fit.value == pytest.approx(est, rel=1e-12)
        assert fit.variance == pytest.approx(var, rel=1e-12)


def test_multiplicities_equal_repeated_rows():
    rng = np.random.default_rng(4)
    A, B = rng.uniform(1, 5, 10), rng.uniform(0, 1, 10)
    m = rng.integers(1, 4, 10)
    est, var = ratio_estimate(np.repeat(A, m), np.repeat(B, m))
    fit = smooth_estimate(Ratio(Column("B"), Column("A")), {"A": A, "B": B}, multiplicity=m)
    assert (fit.value, fit.variance) == pytest.approx((est, var), rel=1e-12)


def _numeric_derivatives(f, x, h=1e-4):
    """Central finite differences on a relative scale (independent of the chain rule)."""
    k = len(x)
    step = h * np.maximum(np.abs(x), 1.0)
    g = np.zeros(k)
    H = np.zeros((k, k))
    for i in range(k):
        e = np.zeros(k)
        e[i] = step[i]
        g[i] = (f(x + e) - f(x - e)) / (2 * step[i])
        for j in range(k):
            d = np.zeros(k)
            d[j] = step[j]
            H[i, j] = (f(x + e + d) - f(x + e - d) - f(x - e + d) + f(x - e - d)) / (
                4 * step[i] * step[j]
            )
    return g, H


@pytest.mark.parametrize("which", ["fbeta", "homogeneity_like", "difference"])
def test_smooth_estimate_against_brute_force_taylor(which):
    rng = np.random.default_rng(5)
    n = 30
    cols = {c: rng.uniform(1, 3, n) for c in "abcd"}
    cols["b"] = cols["a"] * rng.uniform(0.3, 0.9, n)
    cols["d"] = cols["c"] * rng.uniform(0.3, 0.9, n)
    a, b, c, d = (Column(x) for x in "abcd")
    if which == "fbeta":
        phi = FBeta(Ratio(b, a), Ratio(d, c), beta=2.0)

        def f(x):
            p, r = x["b"] / x["a"], x["d"] / x["c"]
            return 5 * p * r / (4 * p + r)
    elif which == "homogeneity_like":
        cond = Linear([-1.0], [Ratio(b, a)], 3.0)
        phi = Linear([-1.0], [Ratio(cond, Linear([-1], [Ratio(d, a)], 5.0))], 1.0)

        def f(x):
            return 1 - (3 - x["b"] / x["a"]) / (5 - x["d"] / x["a"])
    else:
        phi = Linear([1.0, -1.0], [Ratio(b, a), Ratio(d, c)])

        def f(x):
            return x["b"] / x["a"] - x["d"] / x["c"]

    fit = smooth_estimate(phi, cols)
    Y = np.column_stack([cols[x] for x in fit.names])
    mean = Y.mean(axis=0)
    S = np.cov(Y, rowvar=False)
    g, H = _numeric_derivatives(lambda x: f(dict(zip(fit.names, x, strict=True))), mean)
    bias = np.sum(H * S) / (2 * n)
    var = g @ S @ g / n
    f0 = f(dict(zip(fit.names, mean, strict=True)))
    assert fit.plugin == pytest.approx(f0, rel=1e-12)
    if which == "fbeta":
        # an F-score is the F-measure of its bias-corrected parts (eq. 8 on each ratio)
        p = ratio_estimate(cols["a"], cols["b"])[0]
        r = ratio_estimate(cols["c"], cols["d"])[0]
        assert fit.value == pytest.approx(5 * p * r / (4 * p + r), rel=1e-12)
    else:
        assert fit.value == pytest.approx(f0 - bias, rel=1e-7)
    assert fit.variance == pytest.approx(var, rel=1e-5)
    assert np.allclose(fit.gradient, g, rtol=1e-6)


def test_one_draw_gives_estimate_and_nan_variance():
    est, var = ratio_estimate(np.array([2.0]), np.array([1.0]))
    assert est == 0.5 and math.isnan(var)
    e = _est(_bench([1], weights="uniform"), "pairwise_recall")
    assert e.value == pytest.approx(1 / 3)
    assert math.isnan(e.std_error) and math.isnan(e.ci_low)


# ---------------------------------------------------------------- census exactness


def _exact(truth: pd.Series, pred: pd.Series) -> dict[str, float]:
    """Brute force over pairs and records (independent of the contingency kernel)."""
    ids = list(truth.index)
    t = {(i, j) for i, j in itertools.combinations(ids, 2) if truth[i] == truth[j]}
    p = {(i, j) for i, j in itertools.combinations(ids, 2) if pred[i] == pred[j]}
    P, R = len(t & p) / len(p), len(t & p) / len(t)
    tc = {frozenset(truth.index[truth == c]) for c in truth.unique()}
    pc = {frozenset(pred.index[pred == c]) for c in pred.unique()}
    both = len(tc & pc)
    b3p = np.mean([np.mean([truth[j] == truth[i] for j in ids if pred[j] == pred[i]]) for i in ids])
    b3r = np.mean([np.mean([pred[j] == pred[i] for j in ids if truth[j] == truth[i]]) for i in ids])
    hom, comp = homogeneity_score(truth, pred), completeness_score(truth, pred)
    return {
        "pairwise_precision": P,
        "pairwise_recall": R,
        "pairwise_f1": 2 * P * R / (P + R),
        "cluster_precision": both / len(pc),
        "cluster_recall": both / len(tc),
        "cluster_f1": 2 * both / (len(pc) + len(tc)) if both else math.nan,
        "bcubed_precision": b3p,
        "bcubed_recall": b3r,
        "bcubed_f1": 2 * b3p * b3r / (b3p + b3r),
        "homogeneity": hom,
        "completeness": comp,
        "v_measure": v_measure_score(truth, pred),
    }


def _population(seed=0, n=60):
    rng = np.random.default_rng(seed)
    truth = pd.Series(rng.integers(0, 15, n), index=[f"r{i}" for i in range(n)])
    pred = truth.copy()
    flip = rng.choice(n, n // 4, replace=False)
    pred.iloc[flip] = rng.integers(0, 20, len(flip)) + 100
    return truth, pred


CENSUS_METRICS = [m for m in ESTIMATOR_METRICS if m not in ("pairwise_fbeta", "cluster_f1")]


@pytest.mark.parametrize("design", ["clusters", "records", "blocks"])
def test_census_reproduces_exact_metrics_with_zero_variance(design):
    truth, pred = _population()
    exact = _exact(truth, pred)
    if design == "clusters":
        s = sample_clusters(truth, truth.nunique(), replace=False, seed=0)
        estimators = ["cluster_block", "cluster"]
    elif design == "records":
        s = sample_records(truth, len(truth), replace=False, seed=0)
        estimators = ["cluster_block", "cluster", "record"]
    else:
        blocks = truth.map(lambda c: c % 4)
        s = sample_blocks(truth, blocks, 4, replace=False, seed=0)
        estimators = ["block"]
    for metric in CENSUS_METRICS:
        ests = (
            estimators
            if metric in ("pairwise_precision", "pairwise_recall", "pairwise_f1")
            else [None]
        )
        for est in ests:
            e = estimate(pred, s, metric, estimator=est, ci_method="normal")
            assert e.value == pytest.approx(exact[metric], abs=1e-12), (metric, est)
            assert e.std_error == pytest.approx(0.0, abs=1e-12), (metric, est)
            assert e.ci_low == pytest.approx(e.ci_high, abs=1e-12)


def test_naive_is_exact_metric_of_benchmark_records():
    truth, pred = _population(seed=2)
    s = sample_clusters(truth, 5, seed=1)
    sub = s.reference
    exact = _exact(sub, pred[sub.index])
    for metric in CENSUS_METRICS:
        e = estimate(pred, s, metric, estimator="naive")
        assert e.value == pytest.approx(exact[metric], abs=1e-12), metric


# ---------------------------------------------------------------- paired comparison


def test_paired_difference_uses_joint_linearisation():
    truth, pred = _population(seed=3, n=200)
    other = pred.copy()
    other.iloc[:20] = 999  # merge 20 records into one cluster
    s = sample_clusters(truth, 10, seed=2)
    d = compare({"a": pred, "b": other}, s, "pairwise_precision", ci_method="normal").iloc[0]
    a = estimate(pred, s, "pairwise_precision", ci_method="normal")
    b = estimate(other, s, "pairwise_precision", ci_method="normal")
    assert d.prediction == "b - a" and d.metric == "pairwise_precision difference"
    assert d.plugin == pytest.approx(b.plugin - a.plugin)
    # joint variance = Var(a) + Var(b) - 2 Cov(a, b), from per-unit linearised values
    from er_evaluation.estimators import unit_table
    from er_evaluation.estimators._metric_fit import fit as _fit
    from er_evaluation.estimators._metric_fit import metric_function as _function

    ut, ut2 = unit_table(pred, s), unit_table(other, s)
    fa = _fit(ut, *_function(ut, "pairwise_precision", None, 1)[1:], naive=False)
    fb = _fit(ut2, *_function(ut2, "pairwise_precision", None, 1)[1:], naive=False)
    m = s.multiplicity
    cov = np.sum(m * fa.influence * fb.influence) / (s.n_draws - 1) / s.n_draws
    assert d.std_error**2 == pytest.approx(fa.variance + fb.variance - 2 * cov, rel=1e-9)


def test_compare_gives_one_table_whatever_the_count():
    truth, pred = _population(seed=4)
    s = sample_clusters(truth, 6, seed=0)
    table = compare({"x": pred, "y": truth, "z": pred}, s, "pairwise_recall", baseline="x")
    assert list(table["prediction"]) == ["y - x", "z - x"]
    assert table["value"].iloc[1] == pytest.approx(0.0, abs=1e-12)
    assert table["std_error"].iloc[1] == pytest.approx(0.0, abs=1e-12)
    one = compare({"x": pred, "y": truth}, s, "pairwise_recall", baseline="x")
    assert list(one.columns) == list(FRAME_COLUMNS) and list(one.index) == [0]
    pd.testing.assert_frame_equal(one, table.iloc[:1])


# ---------------------------------------------------------------- duality


def test_sample_of_predicted_clusters_estimates_precision_by_duality():
    truth, pred = _population(seed=5)
    exact = _exact(truth, pred)
    s = sample_clusters(pred, pred.nunique(), replace=False, seed=0).reviewed_predicted(truth)
    for metric in ("pairwise_precision", "cluster_precision", "bcubed_precision"):
        e = estimate(pred, s, metric, ci_method="normal")
        assert e.metric == metric
        assert e.value == pytest.approx(exact[metric], abs=1e-12)
    with pytest.raises(ValueError, match="cannot be estimated from a sample of predicted"):
        estimate(pred, s, "pairwise_recall")
    partial = sample_clusters(pred, 3, seed=0)
    bad = Sample(
        reference=truth[partial.reference.index[:-1]],
        units=partial.units,
        multiplicity=partial.multiplicity,
        probability=partial.probability,
        design="clusters",
        weights="uniform",
        replace=True,
        sample_of="predicted",
    )
    with pytest.raises(CoverageError, match="incomplete"):
        estimate(pred, bad, "pairwise_precision")


# ---------------------------------------------------------------- results and table


def test_estimate_repr_summary_and_dict():
    e = _est(_bench([1, 3], weights="uniform"), "pairwise_precision", name="v1")
    text = repr(e)
    assert (
        "v1: pairwise_precision = 0.5598" in text
        and "SE 0.0816" in text
        and "cluster_block" in text
    )
    assert "bias corr." in e.summary()
    d = e.to_dict()
    assert d["value"] == e.value and d["level"] == 0.95 and d["prediction"] == "v1"


def test_estimate_table_is_tidy_and_matches_estimate():
    truth, pred = _population(seed=6)
    s = sample_records(truth, 20, seed=3)
    table = estimate_table(
        {"v1": pred, "v2": truth},
        s,
        ("pairwise_precision", "pairwise_recall", "pairwise_f1"),
        level=0.9,
    )
    assert list(table["prediction"]) == ["v1"] * 3 + ["v2"] * 3
    assert list(table["metric"]) == ["pairwise_precision", "pairwise_recall", "pairwise_f1"] * 2
    single = estimate(pred, s, "pairwise_recall", level=0.9)
    row = table.iloc[1]
    assert row["value"] == pytest.approx(single.value)
    assert row["ci_low"] == pytest.approx(single.ci_low)
    assert (table["level"] == 0.9).all()
    assert table.loc[table.prediction == "v2", "value"].to_numpy() == pytest.approx(1.0)


def test_level_widens_interval():
    s = _bench([1, 2, 3], weights="uniform")
    e90 = _est(s, "pairwise_recall", level=0.9)
    e99 = _est(s, "pairwise_recall", level=0.99)
    assert e99.ci_high - e99.ci_low > e90.ci_high - e90.ci_low


# ---------------------------------------------------------------- errors and coverage


def test_sampled_records_missing_from_prediction():
    s = _bench([1, 3], weights="uniform")
    short = PRED.drop([2, 6])
    with pytest.raises(CoverageError, match="absent from the prediction"):
        estimate(short, s, "pairwise_precision")
    with pytest.warns(CoverageWarning, match="dropped 2 of 5"):
        e = estimate(short, s, "pairwise_precision", on_missing="restrict")
    assert e.dropped_records == 2 and e.n_records == 3


def test_record_estimator_needs_size_proportional_sample():
    with pytest.raises(ValueError, match="records sampled uniformly"):
        _est(_bench([1, 3], weights="uniform"), "pairwise_recall", "record")


@pytest.mark.filterwarnings("ignore::er_evaluation.errors.PopulationWarning")
def test_cluster_estimators_rejected_on_block_samples():
    blocks = pd.Series(["B1"] * 5 + ["B2"] * 3, index=range(1, 9))
    s = benchmark_sample(TRUTH, weights="uniform", blocks=blocks)
    with pytest.raises(ValueError, match="units are blocks"):
        _est(s, "pairwise_precision", "cluster_block")


def test_unknown_metric_estimator_and_level():
    s = _bench([1, 3], weights="uniform")
    with pytest.raises(ValueError, match="unknown estimable metric"):
        _est(s, "accuracy")
    with pytest.raises(ValueError, match="'rand_index' not available here; choose from: pairwise"):
        _est(s, "rand_index")
    with pytest.raises(ValueError, match="unknown estimator"):
        _est(s, "pairwise_precision", "magic")
    with pytest.raises(ValueError, match="level"):
        _est(s, "pairwise_precision", level=95)
    with pytest.raises(ValueError, match="ci_method must be one of"):
        estimate(PRED, s, "pairwise_precision", ci_method="exact")


def test_undefined_metric_is_nan_with_warning():
    # a prediction of singletons has no predicted links: precision undefined
    singletons = pd.Series(range(8), index=range(1, 9))
    with pytest.warns(UndefinedMetricWarning):
        e = estimate(singletons, _bench([1, 3], weights="uniform"), "pairwise_precision")
    assert math.isnan(e.value)


# ---------------------------------------------------------------- invariances


@st.composite
def _instances(draw):
    n = draw(st.integers(8, 30))
    truth = draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    pred = draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
    perm = draw(st.permutations(range(n)))
    k = draw(st.integers(2, 4))
    return truth, pred, perm, k


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::er_evaluation.errors.PopulationWarning")
@settings(max_examples=40, deadline=None)
@given(_instances())
def test_invariant_to_relabelling_and_permuting(instance):
    truth_l, pred_l, perm, k = instance
    ids = [f"m{i}" for i in range(len(truth_l))]
    truth = pd.Series(truth_l, index=ids)
    pred = pd.Series(pred_l, index=ids)
    clusters = sorted(set(truth_l))[:k]
    mult = pd.Series({c: 1 + (c % 2) for c in clusters})
    s = benchmark_sample(truth[truth.isin(clusters)], weights="cluster_size", multiplicity=mult)
    # relabel every id and cluster id, permute record order
    new_ids = {i: f"x{j}" for j, i in enumerate(reversed(ids))}
    order = [ids[p] for p in perm]
    truth2 = pd.Series([f"T{truth[i] * 7}" for i in order], index=[new_ids[i] for i in order])
    pred2 = pd.Series([f"P{pred[i] + 11}" for i in order], index=[new_ids[i] for i in order])
    ref2 = truth2[truth2.isin([f"T{c * 7}" for c in clusters])]
    mult2 = pd.Series({f"T{c * 7}": v for c, v in mult.items()})
    s2 = benchmark_sample(ref2, weights="cluster_size", multiplicity=mult2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for metric in ("pairwise_precision", "pairwise_recall", "bcubed_precision", "homogeneity"):
            a = estimate(pred, s, metric, ci_method="normal")
            b = estimate(pred2, s2, metric, ci_method="normal")
            np.testing.assert_allclose(
                [a.value, a.std_error], [b.value, b.std_error], rtol=1e-9, atol=1e-6
            )


def test_cluster_metric_estimators_hand_computed():
    # truth {1,2},{3},{4,5,6}; prediction {1,2},{3,4},{5,6}; sample clusters A={1,2}, C={4,5,6}
    truth = pd.Series(["A", "A", "B", "C", "C", "C"], index=range(1, 7))
    pred = pd.Series([1, 1, 2, 2, 3, 3], index=range(1, 7))
    s = benchmark_sample(truth[truth.isin(["A", "C"])], weights="uniform")
    # cluster recall: exact = 1, 0 over one cluster each: ratio 1/2, A/Abar = 1 so no
    # bias correction; variance = 1/4 * 1/2 * ((1-2)^2 + (1-0)^2) = 1/4
    cr = estimate(pred, s, "cluster_recall", ci_method="normal")
    assert cr.value == pytest.approx(0.5) and cr.std_error == pytest.approx(0.5)
    # B-cubed precision: h = Σ n²/|ĉ| = 4/2 = 2 for A; 1/2 + 4/2 = 2.5 for C; sizes 2, 3
    # ratio 4.5/5 = 0.9; A/Abar = 0.8, 1.2; B/Bbar = 8/9, 10/9
    # sum = 0.8*(0.8/9) + 1.2*(-0.8/9) = -0.32/9 -> 0.9 * (1 - 0.16/9) = 0.884
    # variance = 0.81 * 1/2 * 2 * (0.8/9)^2 = 0.0064
    bp = estimate(pred, s, "bcubed_precision", ci_method="normal")
    assert bp.value == pytest.approx(0.884) and bp.std_error == pytest.approx(0.08)
    # cluster precision = (N/|Ĉ|) * E[exact]/E[|c|] = 6/3 * 0.5/2.5 = 0.4 before correction
    cp = estimate(pred, s, "cluster_precision", ci_method="normal")
    assert cp.plugin == pytest.approx(0.4)


def test_census_fscore_with_beta():
    truth, pred = _population(seed=9)
    exact = _exact(truth, pred)
    P, R = exact["pairwise_precision"], exact["pairwise_recall"]
    s = sample_records(truth, len(truth), replace=False, seed=0)
    e = estimate(pred, s, "pairwise_fbeta", beta=2.0)
    assert e.metric == "pairwise_f2"
    assert e.value == pytest.approx(5 * P * R / (4 * P + R), abs=1e-12)


def test_estimate_table_builds_one_contingency_per_prediction(monkeypatch):
    from er_evaluation import _contingency

    calls = []
    original = _contingency.contingency

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(_contingency, "contingency", counting)
    truth, pred = _population(seed=10)
    s = sample_records(truth, 15, seed=0)
    metrics = (
        "pairwise_precision",
        "pairwise_recall",
        "pairwise_f1",
        "bcubed_precision",
        "homogeneity",
        "cluster_recall",
    )
    table = estimate_table({"a": pred, "b": truth}, s, metrics)
    assert len(table) == 12 and len(calls) == 2


def test_pairwise_estimators_against_record_level_brute_force():
    """Independent computation: per-record counts by plain Python over records (no
    contingency), the per-cluster A_s, B_s of appendix A.2, then eq. 8-9 literally."""
    truth, pred = _population(seed=12, n=80)
    s = sample_clusters(truth, 12, weights="cluster_size", seed=5)
    rows_a_blk, rows_b, rows_pairs, rows_size = [], [], [], []
    for unit, mult in zip(s.units, s.multiplicity, strict=True):
        members = list(truth.index[truth == unit])
        # n_i = |c(i) ∩ ĉ(i)|, |ĉ(i)| for every record of the cluster
        n_i = [sum(pred[j] == pred[i] for j in members) for i in members]
        hat_i = [int((pred == pred[i]).sum()) for i in members]
        f = sum(n - 1 for n in n_i) / 2  # Σ_i (n_i - 1) = 2 f(c)
        links = sum(h - 1 for h in hat_i) / 2  # Σ_i (|ĉ(i)| - 1) = 2 f(c) + out(c)
        size = len(members)
        for _ in range(mult):  # with-replacement repeats are separate draws
            rows_a_blk.append(links / size)  # (f + out/2)/p with p ∝ |c|
            rows_b.append(f / size)
            rows_pairs.append(size * (size - 1) / 2 / size)
            rows_size.append(1.0)
    p_blk = estimate(pred, s, "pairwise_precision", estimator="cluster_block", ci_method="normal")
    exp = ratio_estimate(np.array(rows_a_blk), np.array(rows_b))
    assert (p_blk.value, p_blk.std_error**2) == pytest.approx(exp, rel=1e-10)
    r = estimate(pred, s, "pairwise_recall", estimator="cluster", ci_method="normal")
    exp = ratio_estimate(np.array(rows_pairs), np.array(rows_b))
    assert (r.value, r.std_error**2) == pytest.approx(exp, rel=1e-10)
    N = len(pred)
    P_links = sum(int(c) * (int(c) - 1) // 2 for c in pred.value_counts())
    p_cl = estimate(pred, s, "pairwise_precision", estimator="cluster", ci_method="normal")
    exp = ratio_estimate(np.array(rows_size), N / P_links * np.array(rows_b))
    assert (p_cl.value, p_cl.std_error**2) == pytest.approx(exp, rel=1e-10)
