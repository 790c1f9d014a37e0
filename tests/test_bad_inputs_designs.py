"""Bad input to the designs, the waves and the planner gets a ValueError naming the
parameter, the entry and the value; nothing is rounded, coerced or dropped without a word;
a feasible Neyman budget is honoured and an infeasible one is refused with its cause."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pandas as pd
import pytest
from _helpers import random_population

from er_evaluation.designs import (
    allocate,
    draw_stratified,
    record_strata,
    sample_changed,
    sample_stratified,
    sample_stratified_clusters,
    size_strata,
)
from er_evaluation.estimators import compare_changed, estimate
from er_evaluation.planning import plan_review, plan_sample_size
from er_evaluation.sampling import benchmark_sample
from er_evaluation.waves import combine_estimates, union_sample

TRUTH, PRED = random_population(1, 300)
STRATA = size_strata(PRED)
F = pd.Series({"a": 10, "b": 20, "c": 30})


# -- allocate: counts are whole numbers, fixed draws cover known strata ---------------------


@pytest.mark.parametrize("n", [10.7, "20", True, -3, 0, np.nan, None])
def test_allocate_refuses_a_total_that_is_not_a_whole_number(n):
    with pytest.raises(ValueError, match=rf"^n must be a whole number >= 1, got {n!r}"):
        allocate(F, n)


def test_allocate_takes_integral_numbers_of_any_integer_type():
    assert allocate(F, np.int32(12)).sum() == 12
    assert allocate(F, 12.0).sum() == 12


@pytest.mark.parametrize(
    ("draws", "message"),
    [
        ({"a": -2, "b": 5, "c": 1}, r"n\['a'\] must be a whole number >= 0, got -2"),
        ({"a": 2.7, "b": 5, "c": 1}, r"n\['a'\] must be a whole number >= 0, got 2.7"),
        ({"a": 2, "b": "5", "c": 1}, r"n\['b'\] must be a whole number >= 0, got '5'"),
        ({"a": 2, "b": 5, "c": 1, "zz": 4}, r"n names strata that do not exist: 'zz'"),
        ({"a": 2, "b": 5}, r"fixed allocation n is missing strata: 'c'"),
        ({"a": 11, "b": 5, "c": 1}, r"more draws than frame units .*'a'.*n\['a'\] = 11 of 10"),
    ],
)
def test_allocate_refuses_bad_fixed_draws(draws, message):
    with pytest.raises(ValueError, match=message):
        allocate(F, pd.Series(draws))


def test_fixed_draws_are_returned_as_given_with_take_all_strata_complete():
    out = allocate(F, pd.Series({"a": 0, "b": 5, "c": 3}), take_all=["c"])
    assert out.to_dict() == {"a": 0, "b": 5, "c": 30}
    assert out.dtype == np.int64


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        ({"a": 0, "b": 4}, r"frame_sizes\['a'\] must be a whole number >= 1, got 0"),
        ({"a": 2.5, "b": 4}, r"frame_sizes\['a'\] must be a whole number >= 1, got 2.5"),
    ],
)
def test_allocate_refuses_bad_frame_sizes(sizes, message):
    with pytest.raises(ValueError, match=message):
        allocate(pd.Series(sizes), 3)


@pytest.mark.parametrize(
    ("sd", "message"),
    [
        ({"a": np.inf, "b": 1.0, "c": 1.0}, r"sd\['a'\] must be a finite number >= 0, got inf"),
        ({"a": np.nan, "b": 1.0, "c": 1.0}, r"sd\['a'\] must be a finite number >= 0, got nan"),
        ({"a": -1.0, "b": 1.0, "c": 1.0}, r"sd\['a'\] must be a finite number >= 0, got -1.0"),
        ({"a": 1.0, "b": "2", "c": 1.0}, r"sd\['b'\] must be a finite number >= 0, got '2'"),
        ({"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0}, r"sd names strata that do not exist: 'd'"),
        ({"a": 1.0, "b": 1.0}, r"sd is missing for strata 'c'"),
    ],
)
def test_neyman_refuses_an_sd_that_is_not_finite_and_non_negative(sd, message):
    with pytest.raises(ValueError, match=message):
        allocate(F, 20, method="neyman", sd=pd.Series(sd))


def test_allocate_refuses_costs_that_are_not_positive():
    with pytest.raises(ValueError, match=r"cost\['b'\] must be a finite number > 0, got 0"):
        allocate(F, 20, cost=pd.Series({"a": 1, "b": 0, "c": 1}))


@pytest.mark.parametrize(
    ("take_all", "message"),
    [
        (["zz"], r"take_all names strata that do not exist: 'zz'; the strata are 'a', 'b', 'c'"),
        ("a", r"take_all must be a list of strata names, got 'a' \(write \['a'\]\)"),
    ],
)
def test_allocate_refuses_unknown_take_all_strata(take_all, message):
    with pytest.raises(ValueError, match=message):
        allocate(F, 20, take_all=take_all)


def test_stratum_names_keep_their_type():
    """1 and '1' are different strata: naming '1' where the stratum is 1 is an error."""
    sizes = pd.Series({1: 5, 2: 5})
    with pytest.raises(ValueError, match="take_all names strata that do not exist: '1'"):
        allocate(sizes, 6, take_all=["1"])
    with pytest.raises(ValueError, match="n names strata that do not exist: '1'"):
        allocate(sizes, pd.Series({"1": 2, 1: 2, 2: 2}))
    assert allocate(sizes, 7, take_all=[np.int64(1)]).to_dict() == {1: 5, 2: 2}


# -- allocate: a feasible budget is honoured, an infeasible one refused with its cause -----


def test_neyman_honours_a_feasible_budget_with_one_high_sd_stratum():
    """n = 12 over frames 8/100/100 with the spread in the first: 8/2/2 is the allocation
    of least variance; it was refused for take-all strata the caller never set."""
    sizes = pd.Series({"a": 8, "b": 100, "c": 100})
    sd = pd.Series({"a": 100.0, "b": 0.1, "c": 0.1})
    assert allocate(sizes, 12, method="neyman", sd=sd).to_dict() == {"a": 8, "b": 2, "c": 2}


def _variance(F, S, x):
    return float(np.sum(F**2 * S**2 / x))


@pytest.mark.parametrize("seed", range(120))
def test_neyman_allocation_is_the_least_variance_allocation_within_bounds(seed):
    """Against brute force over every integer allocation of n with min(2, F_h) <= n_h <=
    F_h: the allocation's Σ F_h² S_h² / n_h is the least there is."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 5))
    sizes = rng.integers(1, 12, k)
    sd = rng.choice([0.0, 0.1, 1.0, 5.0, 50.0], k)
    lo = np.minimum(2, sizes)
    n = int(rng.integers(max(1, lo.sum()), sizes.sum() + 1))
    names = list("abcd")[:k]
    got = allocate(
        pd.Series(sizes, index=names), n, method="neyman", sd=pd.Series(sd, index=names)
    ).to_numpy()
    assert got.sum() == n
    assert (got >= lo).all() and (got <= sizes).all()
    best = min(
        _variance(sizes, sd, np.array(x))
        for x in itertools.product(*[range(a, b + 1) for a, b in zip(lo, sizes, strict=True)])
        if sum(x) == n
    )
    assert _variance(sizes, sd, got) <= best * (1 + 1e-9) + 1e-12


@pytest.mark.parametrize(
    ("n", "kwargs", "message"),
    [
        (61, {}, r"n=61 draws exceed the 60 frame units of the 3 strata"),
        (5, {}, r"n=5 draws cannot give at least 2 draws to each of the 3 strata .*n >= 6"),
        (
            12,
            {"take_all": ["a"]},
            r"n=12 draws cannot cover the take-all strata 'a' \(10 frame units, all reviewed\) "
            r"and give at least 2 draws to each of the other 2 strata .*n >= 14",
        ),
    ],
)
def test_an_infeasible_total_names_its_cause_and_the_least_feasible_total(n, kwargs, message):
    with pytest.raises(ValueError, match=message):
        allocate(F, n, **kwargs)


# -- strata and draws --------------------------------------------------------------------


@pytest.mark.parametrize("bands", [[2.5], ["3"], [1], [0], 5, "2,5"])
def test_size_strata_refuses_bands_that_are_not_sizes_of_at_least_2(bands):
    with pytest.raises(ValueError, match=r"^bands must be"):
        size_strata(PRED, bands=bands)


def test_strata_labels_of_mixed_types_are_refused_not_split():
    """1 and '1' would be two strata, as they would be two clusters."""
    labels = pd.Series([1, "1"] * 150, index=PRED.index)
    with pytest.raises(ValueError, match=r"stratum labels mix types \(int: 150, str: 150\)"):
        sample_stratified(TRUTH, labels, 20, seed=0)
    with pytest.raises(ValueError, match="stratum labels mix types"):
        record_strata(PRED, labels)
    with pytest.raises(ValueError, match="stratum labels mix types"):
        draw_stratified(labels, pd.Series({1: 2, "1": 2}))


def test_a_record_without_a_stratum_is_named():
    labels = STRATA.astype(object)
    labels.iloc[3] = np.nan
    with pytest.raises(ValueError, match=r"have no stratum.*'r3'"):
        sample_stratified(TRUTH, labels, 20, seed=0)


@pytest.mark.parametrize(
    ("allocation", "message"),
    [
        ({"a": -1, "b": 2}, r"allocation\['a'\] must be a whole number >= 0, got -1"),
        ({"a": 1.5, "b": 2}, r"allocation\['a'\] must be a whole number >= 0, got 1.5"),
        ({"a": 1, "b": 2, "z": 1}, r"allocation names strata that do not exist: 'z'"),
    ],
)
def test_draw_stratified_names_the_stratum_of_a_bad_allocation(allocation, message):
    strata = pd.Series(["a"] * 5 + ["b"] * 5, index=range(10))
    with pytest.raises(ValueError, match=message):
        draw_stratified(strata, pd.Series(allocation))


def test_sample_designs_check_fixed_draws_at_their_door():
    with pytest.raises(ValueError, match=r"n\['1'\] must be a whole number >= 0, got -1"):
        sample_stratified(TRUTH, STRATA, pd.Series({"1": -1, "2-4": 3, "5-19": 3}))
    clusters = pd.Series("all", index=pd.unique(PRED.to_numpy()))
    with pytest.raises(ValueError, match=r"^n must be a whole number >= 1, got 2.5"):
        sample_stratified_clusters(PRED, clusters, 2.5)
    b = PRED.copy()
    b.iloc[:30] = TRUTH.iloc[:30].to_numpy()
    with pytest.raises(ValueError, match=r"take_all names strata that do not exist: 'x'"):
        sample_changed(TRUTH, PRED, b, 10, take_all=["x"])


# -- waves --------------------------------------------------------------------------------


WAVE = sample_stratified(TRUTH, STRATA, 40, seed=1)


@pytest.mark.parametrize("population", [0, -10, 10000.7, "300", None])
def test_union_sample_refuses_a_population_that_is_not_a_positive_whole_number(population):
    with pytest.raises(
        ValueError, match=rf"^population must be a whole number >= 1, got {population!r}"
    ):
        union_sample([WAVE], [STRATA], population)


def _estimates():
    other = sample_stratified(TRUTH, STRATA, 40, seed=2)
    return [estimate(PRED, s, "pairwise_precision", name="A") for s in (WAVE, other)]


@pytest.mark.parametrize("level", [1.5, 0, "0.9", np.nan])
def test_combine_estimates_refuses_a_bad_level(level):
    with pytest.raises(ValueError, match=r"^level must be"):
        combine_estimates(_estimates(), level=level)


def test_combined_interval_stays_in_the_metric_range():
    e1, e2 = _estimates()
    high = [
        dataclasses.replace(e1, value=0.99, std_error=0.05),
        dataclasses.replace(e2, value=0.995, std_error=0.05),
    ]
    combined = combine_estimates(high)
    assert combined.ci_high == 1.0 and 0 < combined.ci_low < combined.value
    low = [dataclasses.replace(e, value=0.01, std_error=0.05) for e in (e1, e2)]
    assert combine_estimates(low).ci_low == 0.0
    diff = [dataclasses.replace(e, metric="pairwise_precision difference") for e in low]
    assert combine_estimates(diff).ci_low < 0


def test_combine_estimates_refuses_estimates_of_different_predictions_or_metrics():
    e1, e2 = _estimates()
    with pytest.raises(ValueError, match=r"different predictions .*\['A', 'B'\]"):
        combine_estimates([e1, dataclasses.replace(e2, prediction="B")])
    with pytest.raises(ValueError, match="different metrics"):
        combine_estimates([e1, dataclasses.replace(e2, metric="pairwise_recall")])
    with pytest.raises(ValueError, match="estimates must be Estimate results, got float"):
        combine_estimates([e1, 0.5])


def test_compare_changed_refuses_beta_0():
    b = PRED.copy()
    b.iloc[:30] = TRUTH.iloc[:30].to_numpy()
    changes = sample_changed(TRUTH, PRED, b, 20, seed=1)
    with pytest.raises(ValueError, match=r"^beta must be a positive finite number"):
        compare_changed(PRED, b, changes, None, "pairwise_fbeta", beta=0)


# -- planner --------------------------------------------------------------------------------


def _plan(**kwargs):
    options = {"metric": "pairwise_precision", "half_width": 0.05, "error_rate": 0.1}
    return plan_sample_size(PRED, kwargs.pop("strata", STRATA), **{**options, **kwargs})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"half_width": "0.05"}, r"^half_width must be a number in \(0, 1\), got '0.05'"),
        ({"half_width": 0}, r"^half_width must be in \(0, 1\), got 0"),
        ({"take_all": ["nope"]}, r"^take_all names strata that do not exist: 'nope'"),
        ({"take_all": "1"}, r"^take_all must be a list of strata names, got '1'"),
        ({"minimum": -1}, r"^minimum must be a whole number >= 1, got -1"),
        ({"minimum": 2.5}, r"^minimum must be a whole number >= 1, got 2.5"),
        ({"error_rate": 1.5}, r"^error_rate must be"),
        ({"error_rate": pd.Series({"1": 0.1, "9": 0.1})}, r"error_rate names strata .*'9'"),
        ({"pilot": "sample.csv", "error_rate": None}, r"^pilot must be a reviewed Sample"),
    ],
)
def test_planner_refuses_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        _plan(**kwargs)


def test_planner_refuses_a_record_without_a_stratum():
    """It planned on 9,999 of 10,000 records without a word."""
    strata = STRATA.astype(object)
    strata.iloc[0] = np.nan
    with pytest.raises(ValueError, match=r"1 record\(s\) have no stratum \(missing value\): 'r0'"):
        _plan(strata=strata)


def test_planner_refuses_mixed_type_stratum_labels():
    strata = pd.Series([1, "1"] * 150, index=PRED.index)
    with pytest.raises(ValueError, match="stratum labels mix types"):
        _plan(strata=strata)


def test_planner_refuses_a_prediction_without_record_pairs():
    with pytest.raises(ValueError, match="the prediction has 1 record: it has no record pair"):
        plan_sample_size(PRED.iloc[:1], None, metric="pairwise_precision", **_rate())
    singletons = pd.Series(range(10), index=range(10))
    with pytest.raises(ValueError, match="no predicted link"):
        plan_sample_size(singletons, None, metric="pairwise_precision", **_rate())


def _rate():
    return {"half_width": 0.05, "error_rate": 0.1}


def test_planner_refuses_a_pilot_without_variation_instead_of_promising_half_width_0():
    """A pilot of 3 true clusters the prediction got right: no spread in the paired
    difference of two identical predictions, so no half-width; for one prediction the plan
    rests on the error rate the pilot's pessimistic bound allows, not on the spread it
    shows."""
    clusters = TRUTH.unique()[:3]
    pilot = benchmark_sample(
        TRUTH[TRUTH.isin(clusters)], weights="cluster_size", population_size=len(TRUTH)
    )
    with pytest.raises(ValueError, match="the pilot shows no variation in any sampled stratum"):
        plan_sample_size(
            TRUTH, None, 0.05, metric="pairwise_recall", pilot=pilot, baseline=TRUTH.copy()
        )
    plan = plan_sample_size(TRUTH, None, 0.05, metric="pairwise_recall", pilot=pilot)
    assert plan.half_width > 0 and (plan.table["sd"] > 0).all()
    assert "pessimistic rate" in plan.assumptions["variance source"]


def test_planner_refuses_a_pilot_of_one_reviewed_unit_per_stratum():
    clusters = TRUTH.unique()[:1]
    pilot = benchmark_sample(
        TRUTH[TRUTH.isin(clusters)], weights="cluster_size", population_size=len(TRUTH)
    )
    with pytest.raises(ValueError, match="fewer than 2 reviewed units in every stratum"):
        plan_sample_size(PRED, None, 0.05, metric="pairwise_recall", pilot=pilot)


def test_planner_refuses_an_error_rate_of_0():
    with pytest.raises(ValueError, match="error_rate=0.0 gives every sampled stratum"):
        _plan(error_rate=0.0)


def test_planner_gives_a_small_half_width_by_reviewing_the_strata_with_spread_entirely():
    """A very small half-width was refused with a message about take-all strata the
    caller never set; every stratum with spread is now reviewed entirely instead."""
    plan = _plan(half_width=0.001)
    spread = plan.table[plan.table["sd"] > 0]
    assert (spread["draws"] == spread["frame_size"]).all()
    assert plan.half_width <= 0.001


def test_plan_review_refuses_bad_bands_and_strata():
    with pytest.raises(ValueError, match=r"^bands must be a whole number >= 2, got 2.5"):
        plan_review(PRED, 0.05, error_rate=0.1, bands=[2.5])
    with pytest.raises(ValueError, match="stratum labels mix types"):
        plan_review(PRED, 0.05, error_rate=0.1, strata=pd.Series([1, "1"] * 150, index=PRED.index))
