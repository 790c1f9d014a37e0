"""Multi-wave benchmarks: the union of waves with pooled inclusion (exhaustive expectation
over every pair of wave samples of a tiny population, a hand-computed case) and the
inverse-variance combination of per-wave estimates."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from er_evaluation import metrics
from er_evaluation.designs import stratified_sample
from er_evaluation.estimators import estimate
from er_evaluation.estimators.results import Estimate
from er_evaluation.sampling import benchmark_sample
from er_evaluation.waves import combine_estimates, union_sample

P = "pairwise_precision"
TRUTH = pd.Series([1, 1, 1, 2, 2, 3, 3, 4], index=range(1, 9))
PRED = pd.Series([1, 2, 2, 1, 5, 6, 6, 6], index=range(1, 9))
HALVES = pd.Series(["A"] * 4 + ["B"] * 4, index=range(1, 9))


def _uniform_wave(records):
    draws = TRUTH.loc[list(records)].value_counts()
    return benchmark_sample(
        TRUTH[TRUTH.isin(draws.index)], weights="cluster_size", multiplicity=draws
    )


def _stratified_wave(drawn: dict):
    d = pd.Series(list(drawn.values()), index=list(drawn.keys()))
    return stratified_sample(TRUTH, d, HALVES.value_counts(sort=False))


def test_hand_computed_union():
    # wave 1: record 2 (c1) uniformly from 8; wave 2: record 4 (c2) from A, record 6 (c3)
    # from B (one of four each). λ(c) = 1 |c|/8 + Σ_{i in c} 1/4 = 3/8 + 3/4 for c1,
    # 2/8 + 2/4 for c2, 2/8 + 2/4 for c3. TP^ = f(c1)/λ(c1) + f(c3)/λ(c3) = 8/9 + 4/3.
    u = union_sample([_uniform_wave([2]), _stratified_wave({4: "A", 6: "B"})], [None, HALVES], 8)
    e = estimate(PRED, u, P, estimator="record", ci_method="normal")
    assert e.value == pytest.approx((8 / 9 + 4 / 3) / 5)
    assert u.design == "union of waves" and u.n_draws == 3
    assert list(u.strata.names) == ["wave 1", "wave 2: A", "wave 2: B"]


@pytest.mark.slow
def test_exhaustive_union_is_unbiased():
    exact = metrics.pairwise_precision(PRED, TRUTH)
    values = []
    for w1 in itertools.product(TRUTH.index, repeat=2):  # ordered draws with replacement
        for a, b in itertools.product(range(1, 5), range(5, 9)):
            u = union_sample(
                [_uniform_wave(w1), _stratified_wave({a: "A", b: "B"})], [None, HALVES], 8
            )
            values.append(estimate(PRED, u, P, estimator="record", ci_method="normal").value)
    assert np.mean(values) == pytest.approx(exact, abs=1e-12)


def test_union_errors_name_conflicts():
    other = TRUTH.copy()
    other[3] = 9
    w2 = benchmark_sample(other[other.isin([9])], weights="cluster_size")
    with pytest.raises(ValueError, match="different true clusters|other records"):
        union_sample([_uniform_wave([1]), w2], [None, None], 8)
    with pytest.raises(ValueError, match="is stratified"):
        union_sample([_stratified_wave({1: "A", 5: "B"})], [None], 8)


def _estimate(value, se):
    return Estimate(
        metric=P,
        estimator="record",
        design="records",
        value=value,
        std_error=se,
        ci_low=math.nan,
        ci_high=math.nan,
        level=0.95,
        ci_method="normal",
        n_units=10,
        n_draws=10,
        n_records=30,
    )


def test_combine_estimates_by_inverse_variance():
    c = combine_estimates([_estimate(0.8, 0.02), _estimate(0.9, 0.04)])
    # weights 1/0.0004 = 2500 and 1/0.0016 = 625: (2000 + 562.5)/3125 = 0.82
    assert c.value == pytest.approx(0.82)
    assert c.std_error == pytest.approx(1 / math.sqrt(3125))
    assert c.ci_low == pytest.approx(0.82 - 1.959963984540054 / math.sqrt(3125))
    with pytest.raises(ValueError, match="finite, positive"):
        combine_estimates([_estimate(0.8, math.nan)])
