"""The F-measures of ``estimate_measure`` are the estimates of
``estimate_from_labels`` (one computation: same value, SE, interval, method), exact for a
prediction group whose pairs are all labelled, for every sampler."""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest
from _helpers import pool_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from er_evaluation.errors import UndefinedMetricWarning
from er_evaluation.pairs import (
    METHODS,
    AISSampler,
    LabelOracle,
    LabelRun,
    estimate_from_labels,
    estimate_measure,
    f_measures,
    make_sampler,
    sample_labels,
)


def quietly(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return function(*args, **kwargs)


def both_paths(run, predicted):
    """estimate_from_labels (precision, recall, F1, F2) and estimate_measure of the same
    metrics, in the same order."""
    ours = quietly(estimate_from_labels, run, predicted, beta=[1, 2])
    theirs = quietly(estimate_measure, run, f_measures(predicted, [1.0, 2.0]))
    return [ours.precision, ours.recall, *ours.f], theirs


def assert_same(a, b):
    """Bit-for-bit the same estimate (NaN equal to NaN)."""
    assert a.metric == b.metric
    np.testing.assert_equal(
        [a.value, a.std_error, a.ci_low, a.ci_high], [b.value, b.std_error, b.ci_low, b.ci_high]
    )
    assert (a.ci_method, a.n_units, a.n_draws, a.level) == (
        b.ci_method,
        b.n_units,
        b.n_draws,
        b.level,
    )
    assert a.diagnostics == b.diagnostics


def test_hand_computed_adaptive_run_with_every_predicted_match_labelled():
    """Ten pairs; predicted matches 0-2 (labels 1, 1, 0), all drawn, so precision is 2/3
    exactly (estimate_measure gave the weighted ratio (0.5 + 1) / 3 = 0.5 with an
    interval). Recall: TP = 2 known; FN = PP x (weighted matches among open predicted
    non-match draws) / (weighted predicted-match draws) = 3 x 2 / 3 = 2; recall 2 / 4,
    F1 = 2 / (3/2 + 4/2) = 4/7."""
    labels = np.array([1, 1, 0, 1, 0, 0, 0, 0, 0, 0])
    predicted = np.array([1, 1, 1, 0, 0, 0, 0, 0, 0, 0])
    index = np.array([0, 1, 2, 3, 5])
    run = LabelRun(
        design="importance",
        pool_size=10,
        index=index,
        label=labels[index].astype(np.int8),
        weight=np.array([0.5, 1.0, 1.5, 2.0, 1.0]),
        stratum=np.full(5, -1),
        new_label=np.ones(5, dtype=bool),
        adaptive=True,
    )
    precision, recall, f1 = estimate_measure(run, f_measures(predicted))
    assert precision.value == pytest.approx(2 / 3, abs=1e-15)
    assert precision.std_error == 0.0 and precision.ci_method == "census"
    assert precision.ci_low == precision.ci_high == precision.value
    assert recall.value == pytest.approx(0.5, abs=1e-15)
    assert f1.value == pytest.approx(4 / 7, abs=1e-15)
    assert recall.ci_low < recall.value < recall.ci_high  # 6 pairs unlabelled
    for a, b in zip(*both_paths(run, predicted), strict=True):
        assert_same(a, b)


def test_edge_case_precision_zero_same_interval_on_both_paths():
    """200 pairs, 50 predicted matches none of them a match, 10 matches, 40
    labels; the two paths gave different intervals (OASIS precision [0, 0.0139] vs
    [0, 0.0657]; static IS [0, 0.087] vs [0, 0.133])."""
    n = 200
    predicted = (np.arange(n) >= 150).astype(int)
    labels = np.zeros(n, int)
    labels[:10] = 1
    pool = pool_of(labels, predicted)
    for method in METHODS:
        run = sample_labels(pool, make_sampler(method, pool, 0), LabelOracle(pool.labels), 40)
        ours, theirs = both_paths(run, pool.predicted)
        assert ours[0].value == 0.0
        for a, b in zip(ours, theirs, strict=True):
            assert_same(a, b)


@pytest.mark.slow
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    n=st.integers(4, 40),
    data_seed=st.integers(0, 2**31),
    method=st.sampled_from(METHODS),
    seed=st.integers(0, 1000),
    share=st.floats(0.05, 1.0),
)
def test_both_paths_agree_exactly_on_small_pools(n, data_seed, method, seed, share):
    rng = np.random.default_rng(data_seed)
    labels = (rng.random(n) < rng.uniform(0.1, 0.6)).astype(int)
    scores = np.round(np.clip(0.6 * labels + rng.normal(0.2, 0.25, n), 0, 1), 3)
    predicted = (scores > rng.uniform(0.2, 0.7)).astype(int)
    pool = pool_of(labels, predicted, scores)
    budget = max(1, int(round(share * n)))
    run = sample_labels(pool, make_sampler(method, pool, seed), LabelOracle(pool.labels), budget)
    if run.n_draws == 0:
        return
    for a, b in zip(*both_paths(run, pool.predicted), strict=True):
        assert_same(a, b)


def few_predicted_matches(n: int = 120, seed: int = 4):
    """A pool whose 6 predicted matches (4 true) have the top scores, 15 matches in all."""
    rng = np.random.default_rng(seed)
    scores = np.sort(rng.random(n))
    labels = np.zeros(n, int)
    labels[rng.choice(n - 6, 11, replace=False)] = 1
    labels[-6:] = [0, 1, 0, 1, 1, 1]
    predicted = np.zeros(n, int)
    predicted[-6:] = 1
    return pool_of(labels, predicted, scores)


def no_predicted_match(pool) -> LabelRun:
    """A passive run of five labels, none on a predicted match: precision is undefined."""
    index = np.flatnonzero(pool.predicted == 0)[:5]
    return LabelRun(
        design="passive",
        pool_size=pool.n_pairs,
        index=index,
        label=pool.labels[index].astype(np.int8),
        weight=np.ones(5),
        stratum=np.full(5, -1),
        new_label=np.ones(5, dtype=bool),
    )


@pytest.mark.parametrize("method", METHODS)
def test_census_and_prediction_group_census_for_every_sampler(method):
    """At the first draw after which every predicted match is labelled, precision
    is exact (4/6) with SE 0 and a point interval on both paths while recall (pairs still
    unlabelled) keeps a proper interval; at full census every metric is exact."""
    pool = few_predicted_matches()
    truth = pool.truth()
    rows = np.flatnonzero(pool.predicted)
    checked = 0
    for seed in range(3):
        run = sample_labels(
            pool, make_sampler(method, pool, seed), LabelOracle(pool.labels), pool.n_pairs
        )
        assert run.n_labels == pool.n_pairs
        seen = np.zeros(pool.n_pairs, dtype=bool)
        complete_at = None
        for t, i in enumerate(run.index):
            seen[i] = True
            if seen[rows].all():
                complete_at = t + 1
                break
        part = run.prefix(complete_at)
        if part.n_labels < pool.n_pairs:
            checked += 1
            ours, theirs = both_paths(part, pool.predicted)
            for a, b in zip(ours, theirs, strict=True):
                assert_same(a, b)
            precision, recall = theirs[0], theirs[1]
            assert precision.value == pytest.approx(4 / 6, abs=1e-12)
            assert precision.std_error == 0.0 and precision.ci_method == "census"
            assert precision.ci_low == precision.ci_high == precision.value
            if not math.isnan(recall.value):
                assert recall.ci_low < recall.ci_high
        ours, theirs = both_paths(run, pool.predicted)
        for a, b in zip(ours, theirs, strict=True):
            assert_same(a, b)
            expected = truth.get(a.metric, 5 * 4 / (6 + 4 * 15))  # F2 = 5 TP / (PP + 4 P)
            assert b.value == pytest.approx(expected, abs=1e-12)
            assert b.ci_low == b.ci_high == b.value and b.ci_method == "census"
    assert checked >= 2


def test_ais_restaurant_like_group_census_is_exact():
    """On a bundled pool: AIS on restaurant, 300 labels, labels all 40 predicted
    matches; precision is 0.925 exactly on both paths (estimate_measure gave 0.918 /
    0.926 / 0.928 with SE 0.009)."""
    from er_evaluation.datasets import load_pool

    pool = load_pool("restaurant")
    run = sample_labels(pool, make_sampler("ais", pool, 0), LabelOracle(pool.labels), 300)
    assert np.isin(np.flatnonzero(pool.predicted), run.index).all()
    precision = estimate_measure(run, f_measures(pool.predicted))[0]
    assert precision.value == pytest.approx(pool.truth()["pairwise_precision"], abs=1e-12)
    assert precision.ci_method == "census" and precision.std_error == 0.0


def test_ais_precision_never_above_one_or_its_interval():
    """With no false positive drawn, AIS precision came out 1.0000000000000002,
    above its interval's upper end 1.0."""
    import importlib

    paths_pool = importlib.import_module("test_pairs_estimate_paths").paths_pool
    pool = paths_pool(2000, seed=2, false_positives=8, noise=0.5)
    at_one = 0
    for seed in (0, 1):
        run = sample_labels(pool, make_sampler("ais", pool, seed), LabelOracle(pool.labels), 40)
        ours, theirs = both_paths(run, pool.predicted)
        at_one += ours[0].value == 1.0
        for a, b in zip(ours, theirs, strict=True):
            assert_same(a, b)
            if not math.isnan(a.value):
                assert 0.0 <= a.ci_low <= a.value <= a.ci_high <= 1.0
    assert at_one >= 1  # the premise: some run drew no false positive


def test_selected_components_and_the_ais_target_measure():
    """A selection of F-measure components (the AIS sampler's target) is estimated like the
    full set; an undefined component warns at the caller's line."""
    pool = few_predicted_matches()
    sampler = AISSampler(pool, 0, target="precision")
    run = sample_labels(pool, sampler, LabelOracle(pool.labels), 30)
    (precision,) = estimate_measure(run, sampler.measure)
    assert_same(precision, quietly(estimate_from_labels, run, pool.predicted).precision)
    # a run that drew no predicted match: precision undefined
    empty = no_predicted_match(pool)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        estimate_measure(empty, f_measures(pool.predicted))
    assert any("pairwise_precision is undefined" in str(w.message) for w in got)
    assert {w.category for w in got} == {UndefinedMetricWarning}
    assert {w.filename for w in got} == {__file__}


def test_pr_curve_point_whose_pairs_are_all_labelled_is_exact():
    """For the other ratio measures too: a PR curve's precision at a threshold above
    which every pair is labelled is the labels' ratio, 4/6 here, with a point interval
    (the weighted ratio gave (2 + 1 + 1 + 1) / (2 + 1 + 1 + 1 + 0.5 + 1) = 5/6.5);
    recall at that threshold, and precision at a lower one, still have pairs unlabelled."""
    from er_evaluation.pairs import pr_curve

    labels = np.array([0, 1, 0, 0, 1, 0, 1, 0, 1, 1, 0, 1])
    scores = np.linspace(0.0, 1.0, 12)  # pairs 6-11 score above 0.5
    pool = pool_of(labels, (scores > 0.5).astype(int), scores)
    index = np.array([11, 10, 9, 8, 7, 6, 1, 3])
    weight = np.array([2.0, 0.5, 1.0, 1.0, 1.0, 1.0, 3.0, 3.0])
    run = LabelRun(
        design="importance",
        pool_size=12,
        index=index,
        label=labels[index].astype(np.int8),
        weight=weight,
        stratum=np.full(8, -1),
        new_label=np.ones(8, dtype=bool),
        adaptive=True,
    )
    curve = pr_curve(pool.scores, [0.2, 0.5])
    est = {e.metric: e for e in quietly(estimate_measure, run, curve)}
    top = est["pairwise_precision@0.5"]
    assert top.value == pytest.approx(4 / 6, abs=1e-15)
    assert top.ci_method == "census" and top.std_error == 0.0
    assert top.ci_low == top.ci_high == top.value
    for name in ("pairwise_precision@0.2", "pairwise_recall@0.5"):
        assert est[name].ci_method == "score" and est[name].ci_low < est[name].ci_high


def test_generic_ratio_route_uses_the_same_effective_size_rule():
    """The generic route (PR curves, custom ratio measures) fell back on
    Kish's size without the labelled-share correction where estimate_from_labels uses
    searched_draws with it, so at precision 0 the same run gave [0, 0.133] against
    [0, 0.087] (static IS). The F-measures computed by the generic route (f_alphas
    removed) now get estimate_from_labels' interval there."""
    from dataclasses import replace

    n = 200
    predicted = (np.arange(n) >= 150).astype(int)
    labels = np.zeros(n, int)
    labels[:10] = 1
    pool = pool_of(labels, predicted)
    generic = replace(f_measures(pool.predicted), f_alphas=None)
    for method in ("importance", "oasis", "ais"):
        run = sample_labels(pool, make_sampler(method, pool, 0), LabelOracle(pool.labels), 40)
        ours = quietly(estimate_from_labels, run, pool.predicted).precision
        theirs = quietly(estimate_measure, run, generic)[0]
        assert ours.value == theirs.value == 0.0
        assert theirs.ci_low == 0.0
        assert theirs.ci_high == pytest.approx(ours.ci_high, rel=1e-12)


def test_labels_known_outside_the_run():
    """Labels from outside the run that complete a census give the exact values; labels
    that do not leave the F-measures to estimate_from_labels' computation of the run."""
    pool = few_predicted_matches()
    run = sample_labels(pool, make_sampler("oasis", pool, 1), LabelOracle(pool.labels), 30)
    truth = pool.truth()
    known = pool.labels.copy()
    for e in estimate_measure(run, f_measures(pool.predicted), labels_known=known):
        assert e.value == pytest.approx(truth[e.metric], abs=1e-12)
        assert e.ci_low == e.ci_high == e.value and e.ci_method == "census"
    partial = np.where(np.arange(pool.n_pairs) % 2 == 0, pool.labels, -1)
    ours = quietly(estimate_from_labels, run, pool.predicted)
    theirs = quietly(estimate_measure, run, f_measures(pool.predicted), labels_known=partial)
    for a, b in zip((ours.precision, ours.recall, *ours.f), theirs, strict=True):
        assert_same(a, b)


def test_final_variance_follows_estimate_from_labels():
    """variance='final' (p/q under the last proposal) is for weighted-ratio runs built by
    hand: refused for a sampler's run on both paths with the same message, and the same
    estimate on both paths for a hand-built run that carries final weights."""
    pool = few_predicted_matches()
    run = sample_labels(
        pool, make_sampler("ais", pool, 0), LabelOracle(pool.labels), 30, final_weights=True
    )
    with pytest.raises(ValueError, match="built by hand") as theirs:
        estimate_measure(run, f_measures(pool.predicted), variance="final")
    with pytest.raises(ValueError, match="built by hand") as ours:
        estimate_from_labels(run, pool.predicted, variance="final")
    assert str(theirs.value) == str(ours.value)
    by_hand = LabelRun(
        design="importance",
        pool_size=run.pool_size,
        index=run.index,
        label=run.label,
        weight=run.weight,
        stratum=run.stratum,
        new_label=run.new_label,
        final_weight=run.final_weight,
    )
    found = quietly(estimate_from_labels, by_hand, pool.predicted, variance="final")
    got = quietly(estimate_measure, by_hand, f_measures(pool.predicted), variance="final")
    for a, b in zip((found.precision, found.recall, *found.f), got, strict=True):
        assert_same(a, b)


def test_generic_route_estimates_carry_diagnostics():
    """PR-curve and custom-measure estimates
    carry diagnostics like every other estimate (they had none, so each printed NOT
    RELIABLE, a census included): a census is reliable; 8 draws are too few effective
    draws for an interval."""
    from er_evaluation.pairs import custom_measure, pr_curve

    pool = few_predicted_matches(40, seed=2)
    run = sample_labels(pool, make_sampler("ais", pool, 0), LabelOracle(pool.labels), 40)
    curve = pr_curve(pool.scores, 4)
    for e in estimate_measure(run, curve):
        assert e.ci_method == "census" and e.diagnostics.reliable, e
        assert "NOT RELIABLE" not in repr(e)
    few = quietly(estimate_measure, run.prefix(8), curve)
    assert all(e.diagnostics is not None for e in few)
    sampled = [e for e in few if e.ci_method != "census"]
    assert sampled
    for e in sampled:
        assert not e.diagnostics.reliable and "effective" in e.diagnostics.reason
    accuracy = custom_measure(
        pool.predicted.astype(int),
        np.array([[[1.0], [0.0]], [[0.0], [1.0]]]),
        lambda r: r,
        ["accuracy"],
        bounded=True,
    )
    (acc,) = estimate_measure(run, accuracy)
    assert acc.diagnostics.reliable and acc.value == pytest.approx(
        float(np.mean(pool.labels == pool.predicted))
    )


def test_every_path_warns_about_an_undefined_metric_once_at_the_callers_line():
    """One warning text (estimates.warn_undefined) for both public paths and the generic
    route: a run that drew no predicted match leaves precision undefined."""
    pool = few_predicted_matches()
    empty = no_predicted_match(pool)
    # the generic route: the same ratios without the F-measure mark
    generic = dataclasses.replace(f_measures(pool.predicted), f_alphas=None)
    calls = [
        lambda: estimate_from_labels(empty, pool.predicted),
        lambda: estimate_measure(empty, f_measures(pool.predicted)),
        lambda: estimate_measure(empty, generic),
    ]
    for call in calls:
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            call()
        undefined = [w for w in got if issubclass(w.category, UndefinedMetricWarning)]
        messages = [str(w.message) for w in undefined]
        assert (
            "pairwise_precision is undefined: no sampled pair in its denominator; NaN returned"
        ) in messages
        assert len(set(messages)) == len(messages)  # each metric warned once
        assert all(
            m.endswith(": no sampled pair in its denominator; NaN returned") for m in messages
        )
        assert {w.filename for w in undefined} == {__file__}
