"""Stratified designs and estimators (Cochran 1977, §5; Lavallée 2007): a hand-computed case, exhaustive
expectation over every sample of tiny populations, census exactness, take-all strata,
the single-stratum reduction to the unstratified estimators, and input errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from _helpers import exact_estimable_metrics, figure2, random_population
from hypothesis import given, settings
from hypothesis import strategies as st

from er_evaluation import metrics
from er_evaluation.designs import (
    TAKE_ALL,
    allocate,
    change_strata,
    changed_records,
    draw_stratified,
    record_strata,
    sample_stratified,
    sample_stratified_clusters,
    size_strata,
    stratified_sample,
)
from er_evaluation.estimators import compare, estimate
from er_evaluation.estimators.stratified import StratifiedFit, stratum_table
from er_evaluation.sampling import sample_records

P, R, F1 = "pairwise_precision", "pairwise_recall", "pairwise_f1"

# Binette et al. 2023, Figure 2 (_helpers.figure2): |P| = 5 predicted links, TP = 2
# (f(c1) = 1, f(c3) = 1), P = R = 2/5.
TRUTH, PRED = figure2((1, 2, 3, 4), (1, 2, 5, 6))
HALVES = pd.Series(["A"] * 4 + ["B"] * 4, index=range(1, 9))


def _sample(drawn: dict, strata: pd.Series = HALVES, truth: pd.Series = TRUTH, replace=False):
    d = pd.Series(list(drawn.values()), index=list(drawn.keys()))
    return stratified_sample(truth, d, strata.value_counts(sort=False), replace=replace)


def test_hand_computed_record_precision_and_variance():
    # stratum A draws records 1 (c1: f/|c| = 1/3) and 4 (c2: 0): T_A = 4 * 1/6 = 2/3;
    # stratum B draws 6 (c3: 1/2) and 8 (c4: 0): T_B = 4 * 1/4 = 1; TP^ = 5/3, P^ = 1/3.
    # V(T_A) = 4² (1 - 2/4) s²/2 with s² = (1/3)²/2: 2/9; V(T_B) with s² = (1/2)²/2: 1/2.
    s = _sample({1: "A", 4: "A", 6: "B", 8: "B"})
    e = estimate(PRED, s, P, estimator="record", ci_method="normal")
    assert e.value == pytest.approx(1 / 3)
    assert e.std_error == pytest.approx(math.sqrt((2 / 9 + 1 / 2) / 25))
    assert e.design == "stratified records" and e.n_draws == 4
    # cluster-block precision: totals f/|c| = 5/3 (as above) and (f + out/2)/|c|:
    # A: (1 + 1/2)/3 and (0 + 1/2)/2 -> mean 3/8, T = 3/2; B: (1 + 1)/2 and (0 + 1)/1
    # -> mean 1, T = 4: plug-in 5/3 / (11/2) = 10/33 (before the bias correction)
    e = estimate(PRED, s, P, estimator="cluster_block", ci_method="normal")
    assert e.plugin == pytest.approx(10 / 33)


def test_strata_fields_and_probabilities():
    s = _sample({1: "A", 2: "A", 6: "B", 8: "B"})
    st_ = s.strata
    assert list(st_.names) == ["A", "B"]
    assert st_.frame_size.tolist() == [4, 4] and st_.n_draws.tolist() == [2, 2]
    assert st_.selection_probability.tolist() == [0.5, 0.5]
    # records 1 and 2 both reach c1 in stratum A: one draw group with two draws
    assert s.multiplicity[list(s.units).index(1)] == 2
    assert s.population_size == 8 and s.n_draws == 4


def _all_samples(strata: pd.Series, alloc: dict, replace=False):
    """Every sample of the design (ordered draws with replacement, subsets without)."""
    per = []
    for h, n in alloc.items():
        ids = list(strata.index[strata == h])
        it = itertools.product(ids, repeat=n) if replace else itertools.combinations(ids, n)
        per.append([[(i, h) for i in combo] for combo in it])
    for parts in itertools.product(*per):
        draws = [d for part in parts for d in part]
        yield pd.Series([h for _, h in draws], index=[i for i, _ in draws])


def _population():
    # 10 records, true clusters spanning the strata, errors of both kinds
    truth = pd.Series([0, 0, 0, 0, 1, 1, 2, 2, 2, 3], index=[f"r{i}" for i in range(10)])
    pred = pd.Series([0, 0, 5, 5, 1, 0, 2, 2, 3, 3], index=truth.index)
    other = pd.Series([0, 0, 0, 5, 1, 1, 2, 6, 6, 3], index=truth.index)
    strata = pd.Series(list("aaabbbbccc"), index=truth.index)
    return truth, pred, other, strata


def _expectation(truth, strata, alloc, fn, replace=False):
    values = [
        fn(stratified_sample(truth, d, strata.value_counts(sort=False), replace=replace))
        for d in _all_samples(strata, alloc, replace)
    ]
    return np.array(values)


@pytest.mark.slow
@pytest.mark.parametrize("replace", [False, True])
def test_exhaustive_record_precision_is_unbiased_with_unbiased_variance(replace):
    truth, pred, _, strata = _population()
    exact = metrics.pairwise_precision(pred, truth)
    alloc = {"a": 2, "b": 2, "c": 2}
    out = _expectation(
        truth,
        strata,
        alloc,
        lambda s: (lambda e: (e.value, e.std_error**2))(
            estimate(pred, s, P, estimator="record", ci_method="normal")
        ),
        replace=replace,
    )
    # every sample equally likely: plain means are the design expectations
    assert out[:, 0].mean() == pytest.approx(exact, abs=1e-12)
    assert out[:, 1].mean() == pytest.approx(out[:, 0].var(), abs=1e-12)


def test_exhaustive_paired_difference_is_unbiased():
    truth, pred, other, strata = _population()
    exact = metrics.pairwise_precision(other, truth) - metrics.pairwise_precision(pred, truth)
    out = _expectation(
        truth,
        strata,
        {"a": 2, "b": 3, "c": 1 + 1},
        lambda s: (lambda e: (e.value, e.std_error**2))(
            compare(
                {"B": other, "A": pred}, s, P, baseline="A", estimator="record", ci_method="normal"
            ).iloc[0]
        ),
    )
    assert out[:, 0].mean() == pytest.approx(exact, abs=1e-12)
    assert out[:, 1].mean() == pytest.approx(out[:, 0].var(), abs=1e-12)


def test_exhaustive_take_all_stratum_contributes_exactly():
    truth, pred, _, strata = _population()
    exact = metrics.pairwise_precision(pred, truth)
    alloc = {"a": 3, "b": 2, "c": 2}  # stratum a (3 records) taken entirely
    fits = []

    def fn(s):
        assert s.strata.take_all.tolist() == [True, False, False]
        e = estimate(pred, s, P, estimator="record", ci_method="normal")
        fits.append(e)
        return e.value, e.std_error**2

    out = _expectation(truth, strata, alloc, fn)
    assert out[:, 0].mean() == pytest.approx(exact, abs=1e-12)
    assert out[:, 1].mean() == pytest.approx(out[:, 0].var(), abs=1e-12)


def test_take_all_stratum_has_no_variance_part():
    truth, pred, _, strata = _population()
    d = pd.Series(
        ["a", "a", "a", "b", "b", "c", "c"], index=["r0", "r1", "r2", "r3", "r5", "r7", "r9"]
    )
    s = stratified_sample(truth, d, strata.value_counts(sort=False))
    from er_evaluation.estimators._metric_fit import fit as metric_fit
    from er_evaluation.estimators._metric_fit import metric_function
    from er_evaluation.estimators.units import unit_table

    ut = unit_table(pred, s)
    _, phi, cols = metric_function(ut, P, "cluster_block", 1.0)
    fit = metric_fit(ut, phi, cols, naive=False)
    assert isinstance(fit, StratifiedFit)
    assert np.all(fit.stratum_cov[0] == 0)
    table = stratum_table(fit)
    assert table["take_all"].tolist() == [True, False, False]
    assert table["variance_share"].iloc[0] == 0 and table["variance_share"].sum() == pytest.approx(
        1
    )


EXACT = exact_estimable_metrics()
ESTIMABLE = list(EXACT)


def test_census_of_every_stratum_reproduces_every_exact_metric():
    truth, pred = random_population(0)
    strata = size_strata(pred, (2, 4), take_all_size=8)
    s = stratified_sample(truth, strata, strata.value_counts(sort=False))
    assert s.strata.take_all.all()
    for metric in ESTIMABLE:
        ests = ("cluster_block", "cluster", "record") if metric in (P, R, F1) else (None,)
        for est in ests:
            e = estimate(pred, s, metric, estimator=est)
            assert e.value == pytest.approx(EXACT[metric](pred, truth), abs=1e-12), (metric, est)
            assert e.std_error == pytest.approx(0.0, abs=1e-12), (metric, est)
            assert e.ci_low == pytest.approx(e.ci_high, abs=1e-12), (metric, est)


def test_census_of_predicted_clusters_by_strata_gives_exact_precision():
    truth, pred = random_population(1)
    sizes = pred.value_counts()
    strata = pd.Series(np.where(sizes.to_numpy() >= 5, "large", "small"), index=sizes.index)
    s = sample_stratified_clusters(pred, strata, len(sizes), seed=0)
    s = s.reviewed_predicted(truth)
    for metric in (P, "cluster_precision", "bcubed_precision"):
        e = estimate(pred, s, metric)
        assert e.value == pytest.approx(EXACT[metric](pred, truth), abs=1e-12), metric
        assert e.std_error == pytest.approx(0.0, abs=1e-12)


def test_every_estimable_metric_runs_on_a_stratified_sample():
    truth, pred = random_population(2, n=2000)
    strata = size_strata(pred, (2, 5), take_all_size=12)
    s = sample_stratified(truth, strata, 400, take_all=[TAKE_ALL], seed=3)
    for metric in ESTIMABLE:
        e = estimate(pred, s, metric)
        exact = EXACT[metric](pred, truth)
        assert e.std_error > 0 and e.ci_low <= e.ci_high
        assert abs(e.value - exact) < 6 * e.std_error + 1e-9, metric


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(5, 60))
def test_one_stratum_with_replacement_equals_the_record_design(seed, n):
    truth, pred = random_population(seed % 50, n=200)
    plain = sample_records(truth, n, seed=seed)
    # the same draws as a one-stratum design: one group per (cluster, stratum)
    ref = plain.reference
    drawn_records = []
    for unit, m in zip(plain.units, plain.multiplicity, strict=True):
        drawn_records += [ref.index[ref == unit][0]] * int(m)
    one = pd.Series("all", index=truth.index)
    s = stratified_sample(
        truth, pd.Series("all", index=drawn_records), one.value_counts(), replace=True
    )
    for metric, est in ((P, "cluster_block"), (P, "record"), (R, "record"), ("bcubed_f1", None)):
        a = estimate(pred, plain, metric, estimator=est, ci_method="normal")
        b = estimate(pred, s, metric, estimator=est, ci_method="normal")
        assert b.value == pytest.approx(a.value, rel=1e-9, abs=1e-12), metric
        if n > 1:
            assert b.std_error == pytest.approx(a.std_error, rel=1e-9, abs=1e-12), metric


# ---------------------------------------------------------------- strata and allocation


def test_record_strata_from_record_and_cluster_columns():
    source = pd.Series(list("xxyyxxyy"), index=range(1, 9))
    assert record_strata(PRED, source).tolist() == list("xxyyxxyy")
    by_cluster = pd.Series({1: "p", 2: "q", 5: "q", 6: "r"})
    assert record_strata(PRED, by_cluster).tolist() == list("pqqpqrrr")
    assert record_strata(PRED, lambda p: p.map({1: 0, 2: 0, 5: 1, 6: 1})).tolist() == [
        0,
        0,
        0,
        0,
        1,
        1,
        1,
        1,
    ]
    with pytest.raises(ValueError, match=r"1 predicted cluster\(s\) have no stratum: 6"):
        record_strata(PRED, by_cluster.drop(6))


def test_size_strata_and_take_all():
    labels = size_strata(PRED, (2, 3), take_all_size=3)
    assert labels.tolist() == ["2", "2", "2", "2", "1", TAKE_ALL, TAKE_ALL, TAKE_ALL]


def test_changed_records():
    a = pd.Series([1, 1, 2, 2, 3], index=list("abcde"))
    b = pd.Series([7, 7, 8, 9, 9], index=list("abcde"))
    assert changed_records(a, b).tolist() == [False, False, True, True, True]
    assert change_strata(a, b).tolist() == ["unchanged"] * 2 + ["changed"] * 3
    with pytest.raises(ValueError, match="only in B"):
        changed_records(a, b.rename({"e": "z"}))


def test_allocation_methods():
    F = pd.Series([1000, 100, 10, 3], index=list("abcd"))
    prop = allocate(F, 50)
    assert prop.sum() == 50 and prop["a"] > prop["b"] and (prop >= 2).all()
    ney = allocate(F, 50, method="neyman", sd=pd.Series([1.0, 10, 100, 1], index=list("abcd")))
    assert ney.sum() == 50 and ney["c"] == 10  # Neyman asks for more than F_c: take-all
    fixed = allocate(F, pd.Series({"a": 5, "b": 5, "c": 2, "d": 1}), take_all=["d"])
    assert fixed.tolist() == [5, 5, 2, 3]
    with pytest.raises(ValueError, match="cannot cover the take-all"):
        allocate(F, 12, take_all=["c"])
    with pytest.raises(ValueError, match="sd"):
        allocate(F, 50, method="neyman")


def test_draws_respect_allocation_and_errors_name_the_problem():
    truth, pred = random_population(3)
    strata = size_strata(pred, (2, 4))
    alloc = allocate(strata.value_counts(), 30)
    drawn = draw_stratified(strata, alloc, seed=1)
    assert drawn.value_counts().reindex(alloc.index).tolist() == alloc.tolist()
    assert drawn.index.is_unique
    with pytest.raises(ValueError, match="have no reviewed true cluster"):
        stratified_sample(truth.drop(drawn.index[0]), drawn, strata.value_counts())
    F = strata.value_counts()
    F["empty stratum"] = 5
    with pytest.raises(ValueError, match="have no draw"):
        stratified_sample(truth, drawn, F)


def test_single_draw_stratum_has_no_variance():
    s = _sample({1: "A", 6: "B", 8: "B"})
    e = estimate(PRED, s, P, estimator="record", ci_method="normal")
    assert math.isfinite(e.value) and math.isnan(e.std_error)


def test_bootstrap_intervals_are_refused_for_stratified_samples():
    s = _sample({1: "A", 4: "A", 6: "B", 8: "B"})
    with pytest.raises(ValueError, match="without regard to strata"):
        estimate(PRED, s, P, ci_method="percentile")


def test_cluster_touching_a_take_all_stratum_is_counted_once_exactly():
    # A = {1,2,3,4} taken entirely: c1 = {1,2,3} and c2 = {4,5} are counted exactly through
    # their records in A (f(c1) = 1, f(c2) = 0); the draw of record 5 (c2) in B adds 0,
    # record 8 (c4, f = 0) adds 0: TP^ = 1, record precision 1/5, no variance from B
    s = _sample({1: "A", 2: "A", 3: "A", 4: "A", 5: "B", 8: "B"})
    assert s.strata.take_all.tolist() == [True, False]
    e = estimate(PRED, s, P, estimator="record", ci_method="normal")
    assert e.value == pytest.approx(1 / 5)
    assert e.std_error == pytest.approx(0.0, abs=1e-15)
