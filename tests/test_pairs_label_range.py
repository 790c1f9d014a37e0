"""Pair-label estimates and intervals kept inside what the labelled pairs allow.

A pool of 1,010 pairs: 10 predicted matches (all matches) and 1,000 predicted non-matches
holding 5 matches (recall 10 / 15). A static importance run labels the 10 predicted
matches (weight 1 each) and 200 predicted non-matches (weight 5 each: a proposal 5 times
thinner there). In the good run one of the 200 is a match: the draws count 5 missed
matches, the truth. In the constructed miss three are matches, but the proposal had
favoured them (weight 0.05 each), so the draws count 0.15 missed matches while three
are labelled: the weighted recall is 0.985 with an interval above 10 / 13, the highest
recall the labels leave possible, a certain miss; it is clipped to 10 / 13 and the
interval rebuilt below it.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from er_evaluation.pairs import LabelRun, estimate_from_labels
from er_evaluation.pairs._search import label_range, within_label_range

N_PRED, N_NON = 10, 1000
TRUTH = 10 / 15


def _pool():
    labels = np.zeros(N_PRED + N_NON, dtype=np.int8)
    labels[:N_PRED] = 1
    labels[N_PRED : N_PRED + 5] = 1  # 5 missed matches
    predicted = np.zeros(N_PRED + N_NON, dtype=np.int8)
    predicted[:N_PRED] = 1
    return labels, predicted


def _run(misses_drawn: int, miss_weight: float) -> LabelRun:
    labels, _ = _pool()
    non = N_PRED + np.concatenate([np.arange(misses_drawn), 5 + np.arange(200 - misses_drawn)])
    index = np.concatenate([np.arange(N_PRED), non])
    weight = np.concatenate([np.ones(N_PRED), np.full(200, 5.0)])
    weight[N_PRED : N_PRED + misses_drawn] = miss_weight
    return LabelRun(
        design="importance",
        pool_size=N_PRED + N_NON,
        index=index,
        label=labels[index],
        weight=weight,
        stratum=np.full(len(index), -1),
        new_label=np.ones(len(index), dtype=bool),
        method="importance",
        static_proposal=True,
    )


def test_label_range_is_the_range_over_every_completion_of_the_unlabelled_pairs():
    # brute force: every 0/1 labelling of the unlabelled pairs of a pool of 7
    predicted = np.array([1, 1, 1, 0, 0, 0, 0])
    run = LabelRun(
        design="importance",
        pool_size=7,
        index=np.array([0, 3, 0, 4]),
        label=np.array([1, 1, 1, 0], dtype=np.int8),
        weight=np.ones(4),
        stratum=np.full(4, -1),
        new_label=np.array([True, True, False, True]),
    )
    alphas = [1.0, 0.0, 0.5, 0.2]
    free = [1, 2, 5, 6]
    values = []
    for fill in itertools.product([0, 1], repeat=len(free)):
        truth = np.zeros(7, dtype=int)
        truth[[0, 3]] = 1
        truth[free] = fill
        tp, fn = np.sum(truth & predicted), np.sum(truth & (1 - predicted))
        values.append([tp / (a * 3 + (1 - a) * (tp + fn)) for a in alphas])
    values = np.array(values)
    low, high = label_range(run, predicted, alphas)
    np.testing.assert_allclose(low, values.min(axis=0))
    np.testing.assert_allclose(high, values.max(axis=0))


def test_premise_of_the_constructed_runs():
    labels, predicted = _pool()
    for run, found in ((_run(1, 5.0), 1), (_run(3, 0.05), 3)):
        drawn = np.unique(run.index)
        assert np.sum(labels[drawn] & (1 - predicted[drawn])) == found
    low, high = label_range(_run(3, 0.05), predicted, [0.0])
    assert high[0] == pytest.approx(10 / 13) and low[0] <= TRUTH <= high[0]


def test_estimate_above_what_the_labels_allow_is_clipped_to_it():
    _, predicted = _pool()
    est = estimate_from_labels(_run(3, 0.05), predicted)
    high = 10 / 13  # 10 true positives, 3 labelled missed matches, no unlabelled one counted
    # the weighted recall is 0.985 in [0.952, 0.996]: the interval lay above 10 / 13
    assert est.recall.value == pytest.approx(high)
    assert est.recall.plugin == pytest.approx(200 / 203, abs=1e-3)  # the weighted value
    assert est.recall.ci_high == pytest.approx(high)
    # rebuilt with its own width (0.996 - 0.952) below the boundary
    assert est.recall.ci_low == pytest.approx(high - 0.04378, abs=1e-4)
    assert est.f[0].value == pytest.approx(2 * 10 / (10 + 13))  # F1 at TP 10, FN 3
    assert est.f[0].ci_high == pytest.approx(2 * 10 / (10 + 13))
    assert est.precision.ci_method == "census"


def test_within_label_range_hand_computed():
    possible = np.array([[0.5, 0.5, 0.5, 0.2, 0.7], [0.8, 0.8, 0.8, 0.6, 0.7]])
    value = np.array([0.95, 0.3, 0.82, 0.4, 0.9])
    low = np.array([0.90, 0.1, 0.70, 0.1, 0.8])
    high = np.array([0.99, 0.4, 0.90, 0.7, 0.95])
    se = np.full(5, 0.02)
    v, s, lo, hi = within_label_range(value, se, low, high, possible)
    # above: [0.8 - 0.09, 0.8]; below: [0.5, 0.5 + 0.3]; overlapping: intersected, value
    # clipped; inside: intersected only; labels pin the value (L = H): a point, SE 0
    np.testing.assert_allclose(v, [0.8, 0.5, 0.8, 0.4, 0.7])
    np.testing.assert_allclose(lo, [0.71, 0.5, 0.7, 0.2, 0.7])
    np.testing.assert_allclose(hi, [0.8, 0.8, 0.8, 0.6, 0.7])
    np.testing.assert_allclose(s, [0.02, 0.02, 0.02, 0.02, 0.0])


_unit = st.floats(0.0, 1.0, allow_nan=False)


@given(st.lists(st.tuples(_unit, _unit, _unit, _unit, _unit), min_size=1, max_size=8))
def test_within_label_range_lies_in_the_range_and_holds_the_value(cases):
    arr = np.array(cases)
    value = arr[:, 0]
    low = np.minimum(value, arr[:, 1])
    high = np.maximum(value, arr[:, 2])
    possible = np.vstack([np.minimum(arr[:, 3], arr[:, 4]), np.maximum(arr[:, 3], arr[:, 4])])
    v, _, lo, hi = within_label_range(value, np.full(len(value), 0.1), low, high, possible)
    assert np.all(possible[0] <= lo) and np.all(lo <= v) and np.all(v <= hi)
    assert np.all(hi <= possible[1])
    assert np.all(hi - lo <= high - low + 1e-12)  # never wider than before


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.booleans(), min_size=12, max_size=12),
    st.lists(st.integers(0, 11), min_size=3, max_size=10),
    st.lists(st.floats(0.05, 20.0), min_size=10, max_size=10),
)
def test_every_pair_estimate_lies_within_what_the_labels_allow(truth, drawn, weights):
    # a pool of 12 pairs, the first 5 predicted matches; a static importance run of
    # arbitrary weights over any draws
    labels = np.array(truth, dtype=np.int8)
    predicted = (np.arange(12) < 5).astype(np.int8)
    index = np.array(drawn)
    run = LabelRun(
        design="importance",
        pool_size=12,
        index=index,
        label=labels[index],
        weight=np.array(weights[: len(index)]),
        stratum=np.full(len(index), -1),
        new_label=np.isin(np.arange(len(index)), np.unique(index, return_index=True)[1]),
        method="importance",
        static_proposal=True,
    )
    possible = label_range(run, predicted, [1.0, 0.0, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = estimate_from_labels(run, predicted)
    for j, e in enumerate((est.precision, est.recall, est.f[0])):
        if np.isnan(e.value):
            continue
        assert possible[0, j] - 1e-12 <= e.ci_low <= e.value <= e.ci_high <= possible[1, j] + 1e-12


def test_interval_inside_what_the_labels_allow_is_not_flagged_and_covers():
    _, predicted = _pool()
    est = estimate_from_labels(_run(1, 5.0), predicted)
    assert est.recall.value == pytest.approx(TRUTH)
    assert est.recall.ci_low <= TRUTH <= est.recall.ci_high
    for e in (est.precision, est.recall, est.f[0]):
        assert e.reliable, e.diagnostics.reason
