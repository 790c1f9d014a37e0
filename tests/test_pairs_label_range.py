"""The reliability flag of a pair-label interval outside what the labelled pairs allow.

A pool of 1,010 pairs: 10 predicted matches (all matches) and 1,000 predicted non-matches
holding 5 matches (recall 10 / 15). A static importance run labels the 10 predicted
matches (weight 1 each) and 200 predicted non-matches (weight 5 each: a proposal 5 times
thinner there). In the good run one of the 200 is a match: the draws count 5 missed
matches, the truth. In the constructed miss three are matches, but the proposal had
favoured them (weight 0.05 each), so the draws count 0.15 missed matches while three
are labelled: recall comes out at 0.985 with an interval above 10 / 13, the highest
recall the labels leave possible, so it misses for certain.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from er_evaluation.pairs import LabelRun, estimate_from_labels
from er_evaluation.pairs._search import label_range

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


def test_interval_outside_what_the_labels_allow_is_flagged_and_misses():
    _, predicted = _pool()
    est = estimate_from_labels(_run(3, 0.05), predicted)
    for e in (est.recall, est.f[0]):
        assert not e.reliable
        assert "outside what the labels allow" in e.diagnostics.reason
    assert est.recall.ci_low > 10 / 13 > TRUTH  # a certain miss
    assert est.precision.reliable  # the predicted matches are a census


def test_interval_inside_what_the_labels_allow_is_not_flagged_and_covers():
    _, predicted = _pool()
    est = estimate_from_labels(_run(1, 5.0), predicted)
    assert est.recall.value == pytest.approx(TRUTH)
    assert est.recall.ci_low <= TRUTH <= est.recall.ci_high
    for e in (est.precision, est.recall, est.f[0]):
        assert e.reliable, e.diagnostics.reason
