"""The reliability flag of a recall or F estimate above what the oracle model expects.

A pool of 2,000 pairs: 20 predicted matches (all matches), a middle stratum of 200
predicted non-matches holding 60 matches and a low stratum of 1,780 holding 178. A run of
20 draws among the predicted matches, 60 in the middle stratum (20 matches) and 100 in
the low stratum (11 matches), weighted p/q of a proposal that gives each stratum a fixed
share of the draws (the good run). In the constructed miss the proposal favoured the
low stratum's matches (weight 0.3 each against 1.75 for its non-matches), so the draws
count 103 missed matches where the oracle model, from the labels per stratum, counts
247 (truth 238): recall comes out too high with an interval that excludes the truth.
"""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import two_strata

from er_evaluation.pairs import LabelRun, estimate_from_labels
from er_evaluation.pairs._search import MODEL_GAP
from er_evaluation.pairs._variance import model_misses

SIZES = [20, 200, 1780]


def _pool():
    labels = np.zeros(sum(SIZES), dtype=np.int8)
    labels[:20] = 1
    labels[20:80] = 1  # 60 of the middle stratum
    labels[220:398] = 1  # 178 of the low stratum
    predicted = np.zeros(sum(SIZES), dtype=np.int8)
    predicted[:20] = 1
    return labels, predicted


def _run(low_match_weight: float, low_non_match_weight: float) -> LabelRun:
    labels, predicted = _pool()
    strata = two_strata(SIZES, [1, 0, 0])
    n, t = sum(SIZES), 180
    index = np.concatenate(
        [np.arange(20), 20 + np.arange(0, 200, 200 // 60)[:60], 220 + np.arange(0, 1780, 17)[:100]]
    )
    stratum = strata.codes[index]
    per = np.array([20, 60, 100])
    weight = (np.array(SIZES) * t / (n * per))[stratum]
    low = stratum == 2
    weight[low & (labels[index] == 1)] = low_match_weight
    weight[low & (labels[index] == 0)] = low_non_match_weight
    prior = 2.0 * np.vstack([[0.9, 0.3, 0.01], [0.1, 0.7, 0.99]])
    return LabelRun(
        design="importance",
        pool_size=n,
        index=index,
        label=labels[index],
        weight=weight,
        stratum=np.full(t, -1),
        new_label=np.ones(t, dtype=bool),
        method="importance",
        static_proposal=True,
        stratum_prior=prior,
        model_strata=strata,
    )


def test_premise_of_the_constructed_runs():
    labels, predicted = _pool()
    run = _run(1.602, 1.602)
    assert np.sum(labels[run.index]) == 51
    assert np.sum(labels[run.index][80:]) == 11  # 11 of the 100 low-stratum draws
    assert model_misses(run, predicted) == pytest.approx(238, rel=0.1)


def test_recall_above_the_oracle_model_is_flagged_and_its_interval_misses():
    labels, predicted = _pool()
    truth = 20 / (20 + 238)
    run = _run(0.3, 1.75)
    est = estimate_from_labels(run, predicted)
    for e in (est.recall, est.f[0]):
        assert not e.reliable
        assert "above what the oracle model" in e.diagnostics.reason
    # the interval that the flag warns about misses the truth from above
    assert est.recall.ci_low > truth
    gap = float(est.recall.diagnostics.reason.split(" standard errors")[0].split()[-1])
    assert gap >= MODEL_GAP
    assert est.precision.reliable  # the model concerns missed matches only


def test_recall_that_agrees_with_the_oracle_model_is_not_flagged_and_covers():
    labels, predicted = _pool()
    truth = 20 / (20 + 238)
    run = _run(1.602, 1.602)
    est = estimate_from_labels(run, predicted)
    assert est.recall.ci_low <= truth <= est.recall.ci_high
    for e in (est.precision, est.recall, est.f[0]):
        assert e.reliable, e.diagnostics.reason


def test_run_without_a_model_is_judged_without_it():
    _, predicted = _pool()
    run = _run(0.3, 1.75)
    bare = LabelRun(**{**run.__dict__, "stratum_prior": None, "model_strata": None})
    assert model_misses(bare, predicted) is None
    est = estimate_from_labels(bare, predicted)
    assert est.recall.reliable
