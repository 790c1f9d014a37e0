"""Parameters are checked once, at the public door: every entry point of the estimators,
the planner, the designs, the waves and the samplers refuses a bad level, F-measure
weight, interval method, missing-records policy, seed, draw count or flag with one
ValueError naming the parameter, before any work (a naive estimate, which computes no
interval, refuses ``level=1.5`` all the same)."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest
from _helpers import random_population

from er_evaluation.designs import (
    allocate,
    draw_stratified,
    sample_changed,
    sample_stratified,
    sample_stratified_clusters,
    size_strata,
    stratified_sample,
    with_ratio,
)
from er_evaluation.estimators import (
    compare,
    compare_changed,
    confidence_interval,
    estimate,
    estimate_from_units,
    estimate_table,
    stratum_contributions,
    unit_table,
)
from er_evaluation.planning import plan_review, plan_sample_size
from er_evaluation.sampling import (
    benchmark_sample,
    sample_blocks,
    sample_clusters,
    sample_records,
)
from er_evaluation.simulation import misattribute
from er_evaluation.waves import combine_estimates, union_sample

TRUTH, PRED = random_population(21, n=400)
OTHER = misattribute(TRUTH, 0.2, seed=4)
SAMPLE = sample_records(TRUTH, 60, seed=1)
STRATA = size_strata(PRED, (2, 5))
STRATIFIED = sample_stratified(TRUTH, STRATA, 60, seed=2)

# (parameter, bad value, what the message says after "<parameter> must be")
ESTIMATE_OPTIONS = [
    ("level", 1.5, "level must be in"),
    ("level", "0.9", "level must be a number"),
    ("level", 0, "level must be in"),
    ("beta", -1.0, "beta must be a positive finite number"),
    ("beta", float("inf"), "beta must be a positive finite number"),
    ("ci_method", "wilson", "ci_method must be one of"),
    ("on_missing", "drop", "on_missing must be one of"),
    ("seed", -1, "seed must be None"),
    ("validate", "yes", "validate must be True or False"),
]
UNITS_OPTIONS = [o for o in ESTIMATE_OPTIONS if o[0] not in ("on_missing", "validate")]

ESTIMATE_DOORS = {
    "estimate": lambda **kw: estimate(PRED, SAMPLE, "pairwise_precision", **kw),
    "estimate_table": lambda **kw: estimate_table({"p": PRED}, SAMPLE, **kw),
    "compare": lambda **kw: compare({"a": PRED, "b": OTHER}, SAMPLE, **kw),
}


@pytest.mark.parametrize("door", list(ESTIMATE_DOORS))
@pytest.mark.parametrize(("name", "value", "message"), ESTIMATE_OPTIONS)
def test_estimate_entry_points_refuse_bad_options(door, name, value, message):
    with pytest.raises(ValueError, match=message):
        ESTIMATE_DOORS[door](**{name: value})


@pytest.mark.parametrize(("name", "value", "message"), UNITS_OPTIONS)
def test_estimate_from_units_refuses_bad_options(name, value, message):
    with pytest.raises(ValueError, match=message):
        estimate_from_units(unit_table(PRED, SAMPLE), **{name: value})


@pytest.mark.parametrize("estimator", ["naive", None])
def test_a_naive_estimate_refuses_a_bad_level_too(estimator):
    # the naive estimator computes no interval: nothing downstream would check the level
    with pytest.raises(ValueError, match="level must be in"):
        estimate(PRED, SAMPLE, estimator=estimator, level=1.5)


def test_bootstrap_replicates_are_checked_at_the_door():
    for door in ESTIMATE_DOORS.values():
        with pytest.raises(ValueError, match="needs n_boot >= 200"):
            door(ci_method="percentile", n_boot=50)
        with pytest.raises(ValueError, match="n_boot must be a whole number"):
            door(n_boot=2.5)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("level", 1.5, "level must be in"),
        ("level", "0.9", "level must be a number"),
        ("beta", -1.0, "beta must be a positive finite number"),
        ("on_missing", "drop", "on_missing must be one of"),
    ],
)
def test_compare_changed_refuses_bad_options(name, value, message):
    changes = sample_changed(TRUTH, PRED, OTHER, 40, seed=3)
    with pytest.raises(ValueError, match=message):
        compare_changed(PRED, OTHER, changes, SAMPLE, **{name: value})


def test_stratum_contributions_refuses_a_bad_policy():
    with pytest.raises(ValueError, match="on_missing must be one of"):
        stratum_contributions(PRED, STRATIFIED, on_missing="drop")


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [("level", 1.5, "level must be in"), ("method", "wilson", "ci_method must be one of")],
)
def test_confidence_interval_refuses_bad_options(name, value, message):
    fit = None  # the options are refused before the fit is read
    with pytest.raises(ValueError, match=message):
        confidence_interval(fit, **{name: value})


PLAN_OPTIONS = [
    ("level", 1.5, "level must be in"),
    ("level", "0.9", "level must be a number"),
    ("half_width", 2.0, "half_width must be in"),
    ("half_width", "0.05", "half_width must be a number"),
    ("error_rate", 1.5, "error_rate must be in"),
    ("minimum", 0, "minimum must be a whole number"),
    ("min_draws", 2.5, "min_draws must be a whole number"),
    ("method", "equal", "method must be one of"),
]


@pytest.mark.parametrize(("name", "value", "message"), PLAN_OPTIONS)
def test_plan_sample_size_refuses_bad_options(name, value, message):
    kwargs = {"half_width": 0.05, "error_rate": 0.05, name: value}
    with pytest.raises(ValueError, match=message):
        plan_sample_size(PRED, None, kwargs.pop("half_width"), **kwargs)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("level", 1.5, "level must be in"),
        ("level", "0.9", "level must be a number"),
        ("half_width", 2.0, "half_width must be in"),
        ("error_rate", -0.1, "error_rate must be in"),
        ("allocation", "equal", "allocation must be one of"),
        ("take_all_size", 0, "take_all_size must be a whole number"),
    ],
)
def test_plan_review_refuses_bad_options(name, value, message):
    kwargs = {"half_width": 0.05, "error_rate": 0.05, name: value}
    with pytest.raises(ValueError, match=message):
        plan_review(PRED, kwargs.pop("half_width"), **kwargs)


DRAW_OPTIONS = [
    ("n", 2.5, "n must be a whole number"),
    ("n", -1, "n must be a whole number"),
    ("method", "equal", "method must be one of"),
    ("seed", -1, "seed must be None"),
    ("seed", "1", "seed must be None"),
]
CLUSTER_STRATA = pd.Series(0, index=pd.unique(PRED.to_numpy()))

DESIGN_DOORS = {
    "sample_stratified": (lambda **kw: sample_stratified(TRUTH, STRATA, **kw), True),
    "sample_stratified_clusters": (
        lambda **kw: sample_stratified_clusters(PRED, CLUSTER_STRATA, **kw),
        True,
    ),
    "sample_changed": (lambda **kw: sample_changed(TRUTH, PRED, OTHER, **kw), False),
}


DESIGN_CASES = [
    (door, *option)
    for door, (_, has_replace) in DESIGN_DOORS.items()
    for option in [*DRAW_OPTIONS, *([("replace", "no", "replace must be True")] * has_replace)]
]


@pytest.mark.parametrize(("door", "name", "value", "message"), DESIGN_CASES)
def test_design_entry_points_refuse_bad_options(door, name, value, message):
    draw, _ = DESIGN_DOORS[door]
    with pytest.raises(ValueError, match=message):
        draw(**{"n": 20, name: value})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(n=2.5), "n must be a whole number"),
        (dict(method="equal"), "method must be one of"),
        (dict(minimum=0), "minimum must be a whole number"),
    ],
)
def test_allocate_refuses_bad_options(kwargs, message):
    with pytest.raises(ValueError, match=message):
        allocate(STRATA.value_counts(), **{"n": 20, **kwargs})


def test_draw_and_sample_helpers_refuse_bad_options():
    alloc = allocate(STRATA.value_counts(), 20)
    with pytest.raises(ValueError, match="replace must be True or False"):
        draw_stratified(STRATA, alloc, replace="no")
    with pytest.raises(ValueError, match="seed must be None"):
        draw_stratified(STRATA, alloc, seed=-1)
    drawn = draw_stratified(STRATA, alloc, seed=0)
    with pytest.raises(ValueError, match="frame must be one of"):
        stratified_sample(TRUTH, drawn, STRATA.value_counts(), frame="blocks")
    with pytest.raises(ValueError, match="replace must be True or False"):
        stratified_sample(TRUTH, drawn, STRATA.value_counts(), replace=1)
    with pytest.raises(ValueError, match="ratio must be one of"):
        with_ratio(STRATIFIED, "mixed")
    with pytest.raises(ValueError, match="take_all_size must be a whole number"):
        size_strata(PRED, take_all_size=0.5)


@pytest.mark.parametrize(
    "draw",
    [
        lambda **kw: sample_records(TRUTH, **kw),
        lambda **kw: sample_clusters(TRUTH, **kw),
        lambda **kw: sample_blocks(TRUTH, TRUTH, **kw),
    ],
    ids=["sample_records", "sample_clusters", "sample_blocks"],
)
@pytest.mark.parametrize(
    ("name", "value", "message"), [o for o in DRAW_OPTIONS if o[0] != "method"]
)
def test_samplers_refuse_bad_options(draw, name, value, message):
    with pytest.raises(ValueError, match=message):
        draw(**{"n": 10, name: value})
    with pytest.raises(ValueError, match="replace must be True or False"):
        draw(n=10, replace="no")


def test_benchmark_sample_refuses_a_bad_flag():
    with pytest.raises(ValueError, match="replace must be True or False"):
        benchmark_sample(TRUTH, replace="no")


def test_waves_refuse_bad_options():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = estimate(PRED, SAMPLE)
    with pytest.raises(ValueError, match="level must be in"):
        combine_estimates([e, e], level=1.5)
    with pytest.raises(ValueError, match="level must be a number"):
        combine_estimates([e, e], level="0.9")
    with pytest.raises(ValueError, match="population must be a whole number"):
        union_sample([SAMPLE], [None], population=-5)
