"""Change-focused comparison of two versions (the method of :mod:`er_evaluation.estimators.change`): a hand-computed case and the
exhaustive expectation over every change sample (and every benchmark sample) of a tiny
population."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from er_evaluation import metrics
from er_evaluation.designs import changed_records, sample_changed, stratified_sample
from er_evaluation.estimators.change import compare_changed
from er_evaluation.sampling import benchmark_sample, sample_records

P, R, F1 = "pairwise_precision", "pairwise_recall", "pairwise_f1"

# truth {1,2,3},{4,5},{6}; A = truth; B = {1,2},{3,6},{4,5}: records 1,2,3,6 changed.
# f_A: c1 = 3, c2 = 1, c3 = 0; f_B: c1 = 1, c2 = 1, c3 = 0: ΔTP = -2, shared over the
# k(c1) = 3 changed records of c1. |P_A| = 4, |P_B| = 3, |T| = 4.
TRUTH = pd.Series([1, 1, 1, 2, 2, 3], index=range(1, 7))
A = TRUTH.copy()
B = pd.Series([1, 1, 3, 2, 2, 3], index=range(1, 7))
EXACT = {
    P: metrics.pairwise_precision,
    R: metrics.pairwise_recall,
    F1: metrics.pairwise_f1,
}


def _census(truth: pd.Series):
    sizes = truth.value_counts()
    return benchmark_sample(
        truth,
        weights="cluster_size",
        multiplicity=sizes,
        replace=False,
        population_size=len(truth),
        design="records",
    )


def _changes(drawn, truth=TRUTH, a=A, b=B):
    changed = changed_records(a, b)
    F = pd.Series({"changed": int(changed.sum())})
    return stratified_sample(truth, pd.Series("changed", index=drawn), F)


def test_changed_records_of_the_hand_case():
    assert changed_records(A, B).tolist() == [True, True, True, False, False, True]


def test_hand_computed_differences():
    # draws 1 (c1: -2/3) and 6 (c3: 0) of the 4 changed records: ΔTP^ = 4 (-1/3) = -4/3;
    # ΔP^ = ΔTP^/|P_B| + TP_A (1/|P_B| - 1/|P_A|) = -4/9 + 1/3 = -1/9;
    # V(ΔTP^) = 4² (1 - 2/4) s²/2 with s² = (2/3)²/2: 8/9, V(ΔP^) = 8/81; ΔR^ = -4/3 / 4.
    s = _changes([1, 6])
    bench = _census(TRUTH)
    e = compare_changed(A, B, s, bench, P)
    assert e.value == pytest.approx(-1 / 9)
    assert e.std_error == pytest.approx(math.sqrt(8) / 9)
    assert e.metric == "pairwise_precision difference" and e.prediction == "B - A"
    assert compare_changed(A, B, s, bench, R).value == pytest.approx(-1 / 3)
    # F1 = 2 TP/(|P| + |T|): ΔF^ = 2 (4 - 4/3)/7 - 2 * 4/8
    assert compare_changed(A, B, s, bench, F1).value == pytest.approx(2 * (8 / 3) / 7 - 1)


def _population():
    truth = pd.Series([0, 0, 0, 0, 1, 1, 2, 2, 2, 3, 4], index=[f"r{i}" for i in range(11)])
    a = pd.Series([0, 0, 0, 5, 1, 1, 2, 2, 2, 3, 3], index=truth.index)
    b = pd.Series([0, 0, 0, 0, 1, 6, 2, 2, 2, 3, 3], index=truth.index)
    return truth, a, b


@pytest.mark.parametrize("metric", [P, R, F1])
def test_exhaustive_expectation_with_a_census_benchmark(metric):
    truth, a, b = _population()
    changed = changed_records(a, b)
    ids = list(changed.index[changed.to_numpy()])
    assert 3 <= len(ids) < len(truth)
    exact = EXACT[metric](b, truth) - EXACT[metric](a, truth)
    bench = _census(truth)
    out = np.array(
        [
            (lambda e: (e.value, e.std_error**2))(
                compare_changed(a, b, _changes(list(c), truth, a, b), bench, metric)
            )
            for c in itertools.combinations(ids, 2)
        ]
    )
    assert out[:, 0].mean() == pytest.approx(exact, abs=1e-12)
    assert out[:, 1].mean() == pytest.approx(out[:, 0].var(), abs=1e-12)


@pytest.mark.slow
def test_exhaustive_precision_difference_with_a_sampled_benchmark():
    truth, a, b = _population()
    changed = changed_records(a, b)
    ids = list(changed.index[changed.to_numpy()])
    exact = metrics.pairwise_precision(b, truth) - metrics.pairwise_precision(a, truth)
    values = []
    for records in itertools.product(truth.index, repeat=2):  # every ordered benchmark
        draws = truth.loc[list(records)].value_counts()
        bench = benchmark_sample(
            truth[truth.isin(draws.index)], weights="cluster_size", multiplicity=draws
        )
        for c in itertools.combinations(ids, 2):
            values.append(compare_changed(a, b, _changes(list(c), truth, a, b), bench, P).value)
    assert np.mean(values) == pytest.approx(exact, abs=1e-12)


def test_sample_changed_draws_only_changed_records_and_estimates_near_truth():
    rng = np.random.default_rng(0)
    truth = pd.Series(rng.integers(0, 400, 3000), index=[f"r{i}" for i in range(3000)])
    a = truth.copy()
    flip = rng.choice(3000, 150, replace=False)
    a.iloc[flip] = truth.iloc[rng.integers(0, 3000, 150)].to_numpy()
    b = a.copy()
    flip = rng.choice(3000, 30, replace=False)
    b.iloc[flip] = a.iloc[rng.integers(0, 3000, 30)].to_numpy()
    s = sample_changed(truth, a, b, 60, seed=1)
    assert s.strata.frame_size.sum() == changed_records(a, b).sum()
    bench = sample_records(truth, 300, seed=2)
    for metric in (P, R, F1):
        e = compare_changed(a, b, s, bench, metric)
        exact = EXACT[metric](b, truth) - EXACT[metric](a, truth)
        assert abs(e.value - exact) < 5 * e.std_error, metric


def test_errors_name_the_problem():
    s = _changes([1, 6])
    with pytest.raises(ValueError, match="needs a benchmark"):
        compare_changed(A, B, s, None, R)
    wrong = stratified_sample(TRUTH, pd.Series("all", index=[1, 4]), pd.Series({"all": 6}))
    with pytest.raises(ValueError, match="exactly the changed records"):
        compare_changed(A, B, wrong, _census(TRUTH), P)
    with pytest.raises(ValueError, match="unknown metric"):
        compare_changed(A, B, s, _census(TRUTH), "bcubed_precision")
