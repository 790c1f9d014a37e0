"""Every warning names the caller's line, however deep in the package it arose
(errors.warn): an unreliable estimate, records dropped from a sample, an undefined
metric, a prediction cut down to its sample, a plan the variance model under-serves."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest
from _helpers import random_population

from er_evaluation.errors import warn
from er_evaluation.estimators import compare, estimate, estimate_table
from er_evaluation.metrics import evaluate, generalized_merge_distance, pairwise_precision
from er_evaluation.planning import plan_sample_size
from er_evaluation.sampling import benchmark_sample

TRUTH, PRED = random_population(3, 300)
ONE = benchmark_sample(TRUTH[TRUTH == TRUTH.iloc[0]], weights="cluster_size", population_size=300)
TEN = benchmark_sample(
    TRUTH[TRUTH.isin(TRUTH.unique()[:10])], weights="cluster_size", population_size=300
)
SINGLETONS = pd.Series(range(5), index=range(5))

CALLS = {
    "an unreliable estimate": lambda: estimate(PRED, ONE, "pairwise_precision"),
    "a table of estimates": lambda: estimate_table({"p": PRED}, ONE),
    "a paired difference": lambda: compare({"a": PRED, "b": TRUTH}, ONE),
    "records dropped": lambda: estimate(PRED.iloc[5:], TEN, on_missing="restrict"),
    "a prediction cut to its sample": lambda: estimate(
        TRUTH[TEN.reference.index],
        benchmark_sample(TEN.reference, weights="cluster_size"),
    ),
    "an undefined metric in a table": lambda: evaluate(SINGLETONS, SINGLETONS, ["pairwise_f1"]),
    "an undefined metric": lambda: pairwise_precision(SINGLETONS, SINGLETONS),
    "an undefined normalised distance": lambda: generalized_merge_distance(
        SINGLETONS, SINGLETONS, normalize=True
    ),
    "a plan under-served": lambda: plan_sample_size(
        PRED, None, 0.05, metric="pairwise_f1", design="records", error_rate=0.1
    ),
}


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS)
def test_a_warning_names_the_callers_line(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    assert caught, "the call warns"
    assert {w.filename for w in caught} == {__file__}


def test_warn_skips_every_frame_of_the_package():
    def inner():
        warn("deep", UserWarning)

    # this test module is not the package: its own frames are the caller's
    with pytest.warns(UserWarning, match="deep") as caught:
        inner()
    assert caught[0].filename == __file__ and caught[0].lineno == inner.__code__.co_firstlineno + 1
