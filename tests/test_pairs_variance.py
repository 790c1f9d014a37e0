"""The one variance routine of the pair-label importance estimates: hand-computed cases and its labels-only special case."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from _helpers import pool_of, synthetic_pool, two_strata

from er_evaluation.estimators.intervals import wilson_bounds
from er_evaluation.pairs import (
    LabelOracle,
    LabelRun,
    OASISSampler,
    estimate_from_labels,
    estimate_measure,
    f_measures,
    labels_needed,
    make_sampler,
    pr_curve,
    sample_labels,
)
from er_evaluation.pairs._variance import (
    calibrated_prior,
    conditional_variance,
    finish,
    labelled_groups,
    labels_only_variance,
    model_groups,
    oracle_rates,
    searched_bound,
    stratum_rates,
)
from er_evaluation.pairs.samplers import Draw

Z = 1.959963984540054


def test_conditional_variance_hand_computed():
    # two cells: S = 4 and 0.5; match rates 0.25 and 0.9; influences (g1, g0) = (2, -1), (1, 3)
    var = conditional_variance([4.0, 0.5], [0.25, 0.9], [2.0, 1.0], [-1.0, 3.0])
    expected = 4 * (0.25 * 4 + 0.75 * 1) + 0.5 * (0.9 * 1 + 0.1 * 9)
    assert var == pytest.approx(expected, rel=1e-15)


def test_conditional_variance_of_several_components_and_undrawn_cells():
    # a cell without draws (S = 0) contributes nothing, even with an undefined influence
    g1 = np.array([[1.0, 2.0], [np.nan, np.nan], [0.5, -1.0]])
    g0 = np.array([[0.0, 1.0], [np.inf, 0.0], [2.0, 0.0]])
    var = conditional_variance([2.0, 0.0, 1.0], [0.5, 0.3, 0.1], g1, g0)
    expected = [
        2 * (0.5 * 1 + 0.5 * 0) + 1 * (0.1 * 0.25 + 0.9 * 4),
        2 * (0.5 * 4 + 0.5 * 1) + 1 * (0.1 * 1 + 0.9 * 0),
    ]
    np.testing.assert_allclose(var, expected, rtol=1e-15)


def test_labels_only_variance_is_the_sum_of_the_draws_squared_influences():
    rng = np.random.default_rng(0)
    cell = rng.integers(0, 4, 50)
    label = rng.integers(0, 2, 50)
    weight = rng.exponential(size=50)
    g = rng.normal(size=(4, 2))  # influence per unit weight of (cell, label)
    psi = weight * g[cell, label]
    s = labelled_groups(cell, label, weight**2, 4)
    assert labels_only_variance(s, g[:, 1], g[:, 0]) == pytest.approx(np.sum(psi**2), rel=1e-12)


def test_one_level_tree_is_the_flat_beta_model():
    """Marchant & Rubinstein 2021 §4: a one-level Dirichlet tree (no depth term) is an
    independent Beta posterior per stratum, (m_k + a_k) / (d_k + a_k + b_k)."""
    prior = np.array([[0.3, 2.0, 0.5, 4.0], [5.0, 1.0, 2.5, 0.5]])  # matches, non-matches
    stratum = np.array([0, 0, 1, 3, 3, 3, 0])
    label = np.array([1, 0, 0, 1, 1, 0, 0])
    rates = stratum_rates(stratum, label, prior, branching=None, depth_concentration=0.0)
    m = np.bincount(stratum, weights=label, minlength=4)
    d = np.bincount(stratum, minlength=4)
    np.testing.assert_allclose(rates, (m + prior[0]) / (d + prior.sum(axis=0)), rtol=1e-12)


def test_tree_shares_strength_between_neighbouring_strata():
    # eight strata with the same prior; many non-matches in strata 0-2 lower the rate of
    # the unlabelled stratum 3 (their neighbour) more than that of stratum 7 (far away)
    prior = np.vstack([np.full(8, 0.5), np.full(8, 1.5)])
    prior[0] += np.arange(8) * 1e-3  # score order 0..7
    stratum = np.repeat([0, 1, 2], 50)
    rates = stratum_rates(stratum, np.zeros(150, int), prior, branching=2)
    flat = stratum_rates(stratum, np.zeros(150, int), prior, branching=None, depth_concentration=0)
    assert rates[3] < rates[7]
    assert flat[3] == pytest.approx(prior[0, 3] / prior[:, 3].sum())


def test_model_groups_is_unbiased_over_every_draw_path():
    """Exact expectation over every draw path of a tiny OASIS run: with the match rate of
    the stratum's not yet labelled pairs at each fresh draw, sum_t w_t^2 E[g(l)^2] (fresh
    draws with that rate, repeats with their label) has the expectation of the
    martingale's sum of conditional variances sum_t E_t[w_t^2 g(x_t, l_t)^2]."""
    labels = np.array([0, 1, 0, 0, 1, 1])
    predicted = np.array([0, 0, 0, 1, 1, 1])
    pool = pool_of(labels, predicted)
    strata = two_strata([3, 3], [0, 1])
    root = OASISSampler(pool, 0, strata=strata, eta=2.0, epsilon=0.2)
    g = np.array([[0.7, -1.3], [0.4, 2.1]])  # influence per unit weight of (prediction, label)
    n_draws = 3
    total, mass = 0.0, 0.0

    def walk(sampler, prob, depth, known, acc):
        nonlocal total, mass
        if depth == n_draws:
            total += prob * acc
            mass += prob
            return
        v = sampler._v
        # the conditional expectation E_t[w^2 g^2] over every pair
        exact = sum(
            (v[k] / 3) * (sampler.omega[k] / v[k]) ** 2 * g[predicted[i], labels[i]] ** 2
            for k in range(2)
            for i in strata.members(k)
        )
        for k in range(2):
            members = strata.members(k)
            open_ = [i for i in members if i not in known]
            rate = np.mean(labels[open_]) if open_ else 0.0
            for i in members:
                nxt = copy.deepcopy(sampler)
                w = float(sampler.omega[k] / v[k])
                nxt._last = Draw(int(i), k, v[k] / 3, w)
                nxt.observe(int(i), int(labels[i]))
                h = predicted[i]
                if i in known:
                    est = w * w * g[h, labels[i]] ** 2
                else:
                    est = w * w * (rate * g[h, 1] ** 2 + (1 - rate) * g[h, 0] ** 2)
                walk(nxt, prob * v[k] / 3, depth + 1, known | {int(i)}, acc + est - exact)

    walk(root, 1.0, 0, frozenset(), 0.0)
    assert mass == pytest.approx(1.0)
    assert total == pytest.approx(0.0, abs=1e-12)


def test_model_groups_hand_computed():
    # draws: class 0 fresh (w 2, rate 0.25), class 0 repeat (w 1, label 1), class 1 fresh
    # (w 3, rate 0.5), class 1 repeat (w 0.5, label 0)
    groups = model_groups(
        np.array([0, 0, 1, 1]),
        np.array([0, 1, 1, 0]),
        np.array([4.0, 1.0, 9.0, 0.25]),
        np.array([True, False, True, False]),
        np.array([0.25, 0.9, 0.5, 0.9]),
        2,
    )
    np.testing.assert_allclose(groups, [[3.0, 1.0 + 1.0], [4.5 + 0.25, 4.5]])


def test_searched_bound_hand_computed():
    # recall estimated at 1: TP 40, no missed match drawn; 1,000 unlabelled predicted
    # non-matches searched by 200 effective draws: rho = z^2 / (200 + z^2)
    rho = Z**2 / (200 + Z**2)
    assert searched_bound(40.0, 40.0, 0.0, 1000.0, 200.0, Z) == pytest.approx(
        40 / (40 + 1000 * rho)
    )
    # precision at 1: 50 predicted matches, 10 unlabelled, 30 effective draws
    rho = Z**2 / (30 + Z**2)
    assert searched_bound(50.0, 50.0, -10.0, 0.0, 30.0, Z) == pytest.approx((50 - 10 * rho) / 50)
    assert searched_bound(5.0, 5.0, 0.0, 10.0, 0.0, Z) == 0.0  # nothing searched


def test_estimate_paths_share_one_variance_and_one_interval_rule():
    """estimate_measure of the F-measures of an OASIS or AIS run is
    estimate_from_labels' computation, so value, SE, both interval ends and the method are
    the same, at an estimate of 1 too (the lower end of searched_bound; before, each
    path passed its own totals and effective sizes and only the upper end agreed there;
    more cases in tests/test_pairs_measures.py)."""
    pool = synthetic_pool(n=3000, rate=0.15, seed=5)
    n_compared = n_at_one = 0
    for method in ("oasis", "ais"):
        for seed, n_labels in ((3, 60), (0, 20), (1, 200)):
            sampler = make_sampler(method, pool, seed)
            run = sample_labels(pool, sampler, LabelOracle(pool.labels), n_labels)
            assert run.stratum_prior is not None
            ours = estimate_from_labels(run, pool.predicted, beta=[1, 2])
            theirs = estimate_measure(run, f_measures(pool.predicted, [1.0, 2.0]))
            for a, b in zip((ours.precision, ours.recall, *ours.f), theirs, strict=True):
                assert a.metric == b.metric
                assert (a.value, a.std_error, a.ci_low, a.ci_high, a.ci_method) == (
                    b.value,
                    b.std_error,
                    b.ci_low,
                    b.ci_high,
                    b.ci_method,
                )
                assert a.ci_method == "score"
                if a.value < 1.0:
                    n_compared += 1
                else:
                    assert 0 < b.ci_low < 1
                    n_at_one += 1
    assert n_compared >= 12 and n_at_one >= 1  # both branches of the rule were exercised


def test_finish_hand_computed():
    # interior: Wilson on n* = 0.8 * 0.2 / 0.01 = 16 draws, SE = sqrt(variance)
    value, se, low, high = finish(0.8, 0.01, Z, n_fallback=5.0)
    lo, hi = wilson_bounds(0.8, 0.1, 5.0, Z)
    assert (value, se, low, high) == (0.8, pytest.approx(0.1), lo, hi)
    n = 16.0
    centre = (0.8 + Z**2 / (2 * n)) / (1 + Z**2 / n)
    half = Z * np.sqrt(0.16 / n + Z**2 / (4 * n * n)) / (1 + Z**2 / n)
    assert (low, high) == (pytest.approx(centre - half), pytest.approx(centre + half))
    # nothing the estimate depends on is unlabelled: the census point
    assert finish(0.8, 0.01, Z, n_fallback=5.0, remaining=0.0) == (0.8, 0.0, 0.8, 0.8)
    # variance 0 off census: Wilson at 1 on the fallback size [n / (n + z^2), 1], and an
    # SE that is not 0 (the half-width over z), so the SE never claims a point
    value, se, low, high = finish(1.0, 0.0, Z, n_fallback=20.0)
    assert low == pytest.approx(20 / (20 + Z**2)) and high == 1.0
    assert se == pytest.approx((1 - 20 / (20 + Z**2)) / (2 * Z))
    # no effective unit at all: nothing bounds the estimate
    assert finish(1.0, 0.0, Z, n_fallback=0.0)[2:] == (0.0, 1.0)
    # at 1 the lower end comes from the searched bound (the SE stays that of the interval
    # before it); a bound not below the value means nothing unlabelled could lower it
    value, se2, low, high = finish(1.0, 0.0, Z, n_fallback=20.0, lower_at_one=lambda: 0.4)
    assert (se2, low, high) == (pytest.approx(se), 0.4, 1.0)
    assert finish(1.0, 0.0, Z, n_fallback=20.0, lower_at_one=lambda: 1.0) == (1.0, 0.0, 1.0, 1.0)
    # below 1 the searched bound does not apply
    assert finish(0.8, 0.01, Z, n_fallback=5.0, lower_at_one=lambda: 0.0)[2] == lo


def test_finish_with_hidden_matches_keeps_the_labels_upper_end():
    # recall 0.988 with SE 0.007 (PatentsView-like), and an oracle model whose posterior
    # puts 0.02-0.04 of recall in hidden matches: every shift lowers the value, so the
    # combined draws' upper quantile falls below the estimate; zero hidden matches is as
    # consistent with the labels (none was drawn there), so the upper end stays the
    # labels' own Wilson end, computed here independently of finish
    shift = -np.linspace(0.02, 0.04, 4000)
    value, se, low, high = finish(0.988, 0.007**2, Z, n_fallback=50.0, shift=shift)
    n_star = 0.988 * 0.012 / 0.007**2
    centre = (0.988 + Z**2 / (2 * n_star)) / (1 + Z**2 / n_star)
    half = Z * np.sqrt(0.988 * 0.012 / n_star + Z**2 / (4 * n_star**2)) / (1 + Z**2 / n_star)
    assert high == pytest.approx(centre + half) and high > value
    # the lower end still carries the hidden matches: below the labels' own lower end
    assert low < centre - half
    assert se == pytest.approx(np.sqrt(0.007**2 + np.var(shift)))


def _static_run(pool, index) -> LabelRun:
    """Static importance draws of the pool rows ``index``, each of weight 1."""
    n = len(index)
    return LabelRun(
        "importance",
        pool.n_pairs,
        index,
        pool.labels[index],
        np.ones(n),
        np.full(n, -1),
        np.ones(n, bool),
        static_proposal=True,
    )


def test_measure_estimate_without_variance_off_census_keeps_a_standard_error():
    """A static IS run whose predicted-match draws are all matches: precision is 1 with a
    labels-only variance of 0, but unlabelled predicted matches remain. Both paths give
    the Wilson half-width over z as SE (estimate_measure used to give 0, so
    labels_needed said no more labels were needed while the interval was wide)."""
    pool = synthetic_pool(n=3000, rate=0.15, seed=5)
    h1 = np.flatnonzero((pool.predicted == 1) & (pool.labels == 1))[:8]
    h0 = np.flatnonzero(pool.predicted == 0)[:30]
    index = np.concatenate([h1, h0])
    run = _static_run(pool, index)
    (precision, *_) = estimate_measure(run, f_measures(pool.predicted))
    assert precision.value == 1.0 and precision.ci_method == "score"
    assert 0 < precision.ci_low < 1
    assert precision.std_error > 0
    assert labels_needed(precision, 0.01) > 0
    assert estimate_from_labels(run, pool.predicted).precision.std_error > 0


def test_recall_at_one_is_bounded_by_the_search_of_predicted_non_matches():
    """No missed match drawn: the recall interval's lower end comes from how many predicted
    non-matches were effectively searched (the diagnostic's bound), not from the labelled
    positives; no zero width before a census; flagged at its boundary."""
    pool = synthetic_pool(n=3000, rate=0.15, seed=5)
    predicted = pool.predicted
    h0 = np.flatnonzero(predicted == 0)[:40]  # searched predicted non-matches (non-matches)
    h0 = h0[pool.labels[h0] == 0]
    h1 = np.flatnonzero((predicted == 1) & (pool.labels == 1))[:10]
    index = np.concatenate([h1, h0])
    run = _static_run(pool, index)
    est = estimate_from_labels(run, predicted).recall
    assert est.value == 1.0 and est.ci_high == 1.0
    n0 = (predicted == 0).sum()
    # the predicted non-matches are one region searched by len(h0) equal-weight draws:
    # up to (n0 - len(h0)) (1 - 0.025^(1 / len(h0))) matches could hide among the
    # unlabelled ones (Clopper-Pearson at 0, _search.hidden_matches)
    hidden = (n0 - len(h0)) * (1 - 0.025 ** (1 / len(h0)))
    tp = (predicted == 1).sum() * 1.0  # every predicted-match draw is a match
    assert est.ci_low == pytest.approx(tp / (tp + hidden), rel=1e-9)
    assert 0 < est.ci_low < 1  # never a point before the census
    assert not est.reliable and "at its boundary" in est.diagnostics.reason


def test_calibrated_prior_hand_computed():
    # two groups of strata; prior means 0.1, 0.2 (group 0) and 0.5 (group 1), strength 10
    prior = 10 * np.array([[0.1, 0.2, 0.5], [0.9, 0.8, 0.5]])
    group = np.array([0, 0, 1])
    # labelled: 3 pairs of stratum 0 (no match), 2 of stratum 1 (one match), 4 of stratum 2
    stratum = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    label = np.array([0, 0, 0, 1, 0, 1, 1, 1, 1])
    out = calibrated_prior(prior, group, stratum, label)
    c0 = (1 + 1) / (0.3 + 0.4 + 1)  # matches + 1 over expected + 1
    c1 = (4 + 1) / (2.0 + 1)
    means = np.array([0.1 * c0, 0.2 * c0, min(0.5 * c1, 1 - 1e-9)])
    np.testing.assert_allclose(out[0], 10 * means)
    np.testing.assert_allclose(out.sum(axis=0), 10.0)


def test_calibrated_prior_shrinkage_pulls_the_rescaling_towards_one():
    prior = 10 * np.array([[0.1, 0.2, 0.5], [0.9, 0.8, 0.5]])
    group = np.array([0, 0, 1])
    stratum = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    label = np.array([0, 0, 0, 1, 0, 1, 1, 1, 1])
    out = calibrated_prior(prior, group, stratum, label, shrink=4.0)
    c0 = (1 + 4) / (0.3 + 0.4 + 4)  # matches + s over expected + s
    c1 = (4 + 4) / (2.0 + 4)
    np.testing.assert_allclose(out[0], 10 * np.array([0.1 * c0, 0.2 * c0, 0.5 * c1]))
    # no labelled pair in a group: c = s / s = 1 whatever s
    empty = calibrated_prior(prior, group, np.array([2]), np.array([1]), shrink=3.0)
    np.testing.assert_allclose(empty[0, :2], prior[0, :2])


def test_oracle_rates_use_the_model_only_where_the_labels_are_blind():
    """First draws in a stratum with no labelled match count at the model's rate; every
    other draw (a repeat, or any draw of a stratum holding a labelled match) with its
    label; the rates are the tree's posterior predictive of the draw's stratum."""
    strata = two_strata([4, 3, 3], [0, 0, 1])
    prior = np.array([[0.2, 0.3, 1.5], [1.8, 1.7, 0.5]])
    index = np.array([0, 4, 1, 7, 4, 5, 0])
    label = np.array([0, 1, 0, 1, 1, 0, 0])  # stratum 0 blind; strata 1, 2 hold a match
    run = LabelRun(
        "importance",
        10,
        index,
        label.astype(np.int8),
        np.ones(len(index)),
        strata.codes[index].astype(int),
        np.ones(len(index), bool),
        strata=strata,
        adaptive=True,
        stratum_prior=prior,
    )
    model, rate = oracle_rates(run)
    # first draws: positions 0 (stratum 0), 1, 2 (stratum 0), 3, 5; repeats: 4 and 6
    np.testing.assert_array_equal(model, [True, False, True, False, False, False, False])
    rows, first = np.unique(index, return_index=True)
    calibrated = calibrated_prior(prior, strata.predicted, strata.codes[rows], label[first])
    expected = stratum_rates(strata.codes[rows], label[first], calibrated)
    np.testing.assert_allclose(rate, expected[strata.codes[index]])


def test_pr_curve_at_one_is_a_point_only_when_nothing_that_could_lower_it_is_unlabelled():
    # 10 pairs, scores 0.0 .. 0.9; thresholds 0.45 and 0.75: pairs 8, 9 clear both
    scores = np.linspace(0, 0.9, 10)
    labels = np.array([0, 0, 1, 0, 0, 1, 1, 0, 1, 1])
    curve = pr_curve(scores, [0.45, 0.75])
    index = np.array([8, 9, 6, 3])  # every pair above 0.75, one more above 0.45, one below
    run = LabelRun(
        "importance",
        10,
        index,
        labels[index],
        np.full(len(index), 2.5),
        np.full(len(index), -1),
        np.ones(len(index), bool),
    )
    est = {e.metric: e for e in estimate_measure(run, curve)}
    top = est["pairwise_precision@0.75"]
    assert top.value == 1.0 and top.ci_low == 1.0 and top.ci_method == "census"
    low = est["pairwise_precision@0.45"]  # pairs 5, 7 above 0.45 are unlabelled
    assert low.value == 1.0 and 0 < low.ci_low < 1 and low.ci_method == "score"
    recall = est["pairwise_recall@0.45"]  # no missed match drawn, pairs below unlabelled
    assert recall.value == 1.0 and 0 < recall.ci_low < 1
