"""Every sampler through every public estimate path (estimate_from_labels,
estimate_measure with F-scores and a PR curve, estimate_history, reuse_estimate for
another prediction): at census every path is exact with a zero-width interval; before
census no path gives a zero-width interval for a metric whose pairs are not all
labelled, also when no false positive was drawn."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _helpers import pool_of

from er_evaluation.errors import UndefinedMetricWarning
from er_evaluation.pairs import (
    METHODS,
    LabelOracle,
    PairPool,
    estimate_from_labels,
    estimate_history,
    estimate_measure,
    f_measures,
    make_sampler,
    pr_curve,
    reuse_estimate,
    sample_labels,
)


def paths_pool(n: int, seed: int, false_positives: int = 2, noise: float = 0.5) -> PairPool:
    """n pairs, about 20% matches; the predicted matches are the high scores, with
    ``false_positives`` of them made non-matches at the lowest predicted scores."""
    rng = np.random.default_rng(seed)
    label = (rng.random(n) < 0.2).astype(int)
    score = label * 2.0 + rng.normal(0, noise, n)
    predicted = (score > 1.0).astype(int)
    low_predicted = np.flatnonzero(predicted == 1)[np.argsort(score[predicted == 1])]
    label[low_predicted[:false_positives]] = 0
    return pool_of(label, predicted, score)


def exact(pool: PairPool, predicted: np.ndarray, beta: float) -> float:
    tp = float(np.sum(pool.labels * predicted))
    return (1 + beta**2) * tp / (predicted.sum() + beta**2 * pool.labels.sum())


def quietly(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return function(*args, **kwargs)


@pytest.mark.parametrize("method", METHODS)
def test_census_is_exact_through_every_estimate_path(method):
    pool = paths_pool(60, seed=1)
    run = sample_labels(pool, make_sampler(method, pool, 3), LabelOracle(pool.labels), pool.n_pairs)
    assert run.n_labels == pool.n_pairs
    other = (pool.scores > 0.0).astype(int)  # another system's prediction (label reuse)
    truth = pool.truth()
    reused = reuse_estimate(run, other)
    paths = [
        (estimate_from_labels(run, pool.predicted), pool.predicted),
        (reused, other),
    ]
    for result, predicted in paths:
        t = pool.with_prediction(predicted).truth()
        for e in (result.precision, result.recall, *result.f):
            assert e.value == pytest.approx(t[e.metric], abs=1e-12)
            assert e.ci_low == e.ci_high == e.value and e.std_error == 0.0
    for e in estimate_measure(run, f_measures(pool.predicted, [1.0, 2.0])):
        beta = 2.0 if e.metric == "pairwise_f2" else 1.0
        expected = truth.get(e.metric, exact(pool, pool.predicted, beta))
        assert e.value == pytest.approx(expected, abs=1e-12)
        assert e.ci_low == e.ci_high == e.value and e.ci_method == "census"
    curve = pr_curve(pool.scores, 4)
    for k, e in enumerate(estimate_measure(run, curve)):
        above = pool.scores >= curve.thresholds[k % len(curve.thresholds)]
        denominator = above.sum() if k < len(curve.thresholds) else pool.labels.sum()
        assert e.value == pytest.approx(np.sum(pool.labels * above) / denominator, abs=1e-12)
        assert e.ci_low == e.ci_high
    last = estimate_history(run, pool.predicted).iloc[-1]
    for name, value in truth.items():
        assert last[name] == pytest.approx(value, abs=1e-12)
        assert last[f"{name}_low"] == last[f"{name}_high"]


@pytest.mark.parametrize("method", METHODS)
def test_no_zero_width_interval_before_census_even_without_a_false_positive_drawn(method):
    """With no false positive drawn, precision must not be 1 with SE 0 and CI [1, 1]. The
    false positives here sit at the lowest predicted scores, so few runs draw one."""
    pool = paths_pool(2000, seed=2, noise=0.3)  # the planted false positives only
    predicted_rows = np.flatnonzero(pool.predicted)
    without_false_positive = 0
    for seed in range(4):
        run = sample_labels(pool, make_sampler(method, pool, seed), LabelOracle(pool.labels), 40)
        drawn_fp = np.any((pool.predicted[run.index] == 1) & (run.label == 0))
        without_false_positive += not drawn_fp
        complete = np.isin(predicted_rows, run.index).all()
        results = [
            quietly(estimate_from_labels, run, pool.predicted),
            quietly(reuse_estimate, run, pool.predicted),
        ]
        estimates = [e for r in results for e in (r.precision, r.recall, *r.f)]
        estimates += quietly(estimate_measure, run, f_measures(pool.predicted))
        # undefined ones (nothing drawn in their denominator) are no point; precision is
        # known exactly when every predicted match is labelled
        points = [
            e
            for e in estimates
            if not np.isnan(e.value) and not (e.metric == "pairwise_precision" and complete)
        ]
        assert points, (method, seed)
        for e in points:
            assert e.ci_low < e.ci_high, (method, seed, e)
            assert e.ci_low <= e.value <= e.ci_high
    if method in ("importance", "oasis", "ais"):
        # the samplers that favour high scores: at least one run saw no false positive
        assert without_false_positive >= 1
