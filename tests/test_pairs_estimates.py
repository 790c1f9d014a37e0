"""Pair-label estimates with the labelled part known: census, boundary, hand-computed and
exhaustive checks."""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import replace

import numpy as np
import pytest
from _helpers import pool_of, synthetic_pool, two_strata

from er_evaluation.datasets import load_pool
from er_evaluation.errors import UndefinedMetricWarning
from er_evaluation.estimators import Estimate
from er_evaluation.estimators.intervals import wilson_bounds
from er_evaluation.pairs import (
    METHODS,
    LabelOracle,
    LabelRun,
    OASISSampler,
    StratifiedSampler,
    continue_sampling,
    estimate_from_labels,
    make_sampler,
    reuse_estimate,
    sample_labels,
)
from er_evaluation.pairs._variance import hidden_counts

Z = 1.959963984540054


def run_of(design, n, index, label, strata=None, weight=None, static=False) -> LabelRun:
    index = np.asarray(index)
    return LabelRun(
        design=design,
        pool_size=n,
        index=index,
        label=np.asarray(label, dtype=np.int8),
        weight=np.ones(len(index)) if weight is None else np.asarray(weight, dtype=float),
        stratum=np.full(len(index), -1) if strata is None else strata.codes[index].astype(int),
        new_label=np.ones(len(index), bool),
        stratum_sizes=None if strata is None else strata.sizes,
        strata=strata,
        static_proposal=static,
    )


@pytest.mark.parametrize("method", METHODS)
def test_census_is_exact_with_zero_width_for_every_method(method):
    """A pool labelled completely gives the truth with a zero-width interval (not an
    interval around a slightly wrong value, such as F1 0.5987 [0.580, 0.617] for 0.6111)."""
    pool = synthetic_pool(n=150, rate=0.15, seed=3)
    params = {"epsilon": 0.3} if method in ("importance", "oasis") else {}
    sampler = make_sampler(method, pool, 1, **params)
    run = sample_labels(pool, sampler, LabelOracle(pool.labels), pool.n_pairs)
    assert run.n_labels == pool.n_pairs
    result = estimate_from_labels(run, pool.predicted)
    truth = pool.truth()
    for est, exact in [
        (result.precision, truth["pairwise_precision"]),
        (result.recall, truth["pairwise_recall"]),
        (result.f[0], truth["pairwise_f1"]),
    ]:
        assert est.value == pytest.approx(exact, abs=1e-12)
        assert est.std_error == 0.0
        assert est.ci_low == est.ci_high == est.value
        # one result type with the cluster estimators
        assert isinstance(est, Estimate) and est.ci_method == "census"
        assert est.n_units == pool.n_pairs and est.estimator == method


def test_labelled_part_known_hand_computed():
    # pool of 10: pairs 0-3 predicted matches, 4-9 predicted non-matches (passive design:
    # one cell per prediction); labelled: 0 (match), 1 (non-match), 4 (match), 5, 6 (non)
    predicted = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0])
    run = run_of("passive", 10, [0, 1, 4, 5, 6], [1, 0, 1, 0, 0])
    result = estimate_from_labels(run, predicted)
    # matches: predicted cell 1 + 2 * 1/2 = 2, other cell 1 + 3 * 1/3 = 2; PP = 4 exactly
    assert result.precision.value == pytest.approx(2 / 4)
    assert result.recall.value == pytest.approx(2 / 4)
    assert result.f[0].value == pytest.approx(2 / (0.5 * 4 + 0.5 * 4))
    # textbook stratified-sampling variance of a total: N (N - d) s^2 / d
    v1 = 4 * 2 * (0.5 * 0.5 * 2 / 1) / 2
    v0 = 6 * 3 * (1 / 3 * 2 / 3 * 3 / 2) / 3
    assert result.precision.std_error == pytest.approx(math.sqrt(v1) / 4)
    r = 0.5
    var_r = ((1 - r) / 4) ** 2 * v1 + (r / 4) ** 2 * v0
    assert result.recall.std_error == pytest.approx(math.sqrt(var_r))
    n_eff = r * (1 - r) / var_r
    low, high = (float(b) for b in wilson_bounds(r, math.sqrt(var_r), n_eff, Z))
    # within what the labels allow: TP in [1, 3], FN in [1, 4], so recall in
    # [1 / (1 + 4), 3 / (3 + 1)] = [0.2, 0.75], which cuts the Wilson interval
    assert low < 0.2 and high > 0.75
    assert (result.recall.ci_low, result.recall.ci_high) == pytest.approx((0.2, 0.75))


def test_stratified_precision_exactly_unbiased_over_all_samples():
    """Exhaustive: every stratified sample (2 of 5, 2 of 4) is equally likely; the
    precision estimate is exactly unbiased and, where interior, its variance is the
    unbiased stratified-sampling variance."""
    labels = np.array([1, 0, 0, 1, 0, 1, 1, 0, 1])
    predicted = np.array([0, 0, 0, 0, 0, 1, 1, 1, 1])
    strata = two_strata([5, 4], [0, 1])
    values, variances = [], []
    for s0 in itertools.combinations(range(5), 2):
        for s1 in itertools.combinations(range(5, 9), 2):
            index = list(s0) + list(s1)
            run = run_of("stratified", 9, index, labels[index], strata)
            est = estimate_from_labels(run, predicted).precision
            values.append(est.value)
            p = labels[list(s1)].mean()
            s2 = p * (1 - p) * 2 / 1
            variance = 4 * 2 * s2 / 2 / 16
            if 0 < est.value < 1:
                assert est.std_error**2 == pytest.approx(variance)
            variances.append(variance)
    assert np.mean(values) == pytest.approx(3 / 4, abs=1e-12)
    # the textbook variance is unbiased for the spread of the estimates
    assert np.mean(variances) == pytest.approx(np.var(values), abs=1e-12)


def test_boundary_estimate_gets_a_wilson_interval_not_zero_width():
    # 6 predicted matches, 4 labelled, all true: precision 1, but 2 pairs are unlabelled
    labels = np.array([1, 1, 1, 1, 0, 1, 0, 0, 0, 0])
    predicted = np.array([1, 1, 1, 1, 1, 1, 0, 0, 0, 0])
    run = run_of("passive", 10, [0, 1, 2, 3, 6, 7], labels[[0, 1, 2, 3, 6, 7]])
    est = estimate_from_labels(run, predicted).precision
    assert est.value == 1.0 and est.ci_high == 1.0
    # no false positive drawn: the lower end is what the search cannot rule out, 4
    # effective draws of the 6 predicted matches, up to 1 - 0.025^(1/4) of the 2
    # unlabelled ones false positives (_search.hidden_matches)
    hidden = 2 * (1 - 0.025 ** (1 / 4))
    assert est.ci_low == pytest.approx((6 - hidden) / 6)
    assert 0 < est.ci_low < 1 and est.std_error > 0
    assert est.ci_method == "score" and est.n_units == 6 and est.n_draws == 6


def test_restaurant_oasis_300_labels_is_never_a_false_point_interval():
    """OASIS at 300 labels must not give precision 1.0 with CI [1, 1] (truth 0.925): a point
    interval is only possible when every pair it depends on is labelled (then exact)."""
    pool = load_pool("restaurant")
    truth = pool.truth()
    predicted_rows = set(np.flatnonzero(pool.predicted).tolist())
    for seed in range(3):
        run = sample_labels(pool, make_sampler("oasis", pool, seed), LabelOracle(pool.labels), 300)
        est = estimate_from_labels(run, pool.predicted).precision
        if est.ci_low == est.ci_high:
            assert predicted_rows <= set(run.index.tolist())
            assert est.value == pytest.approx(truth["pairwise_precision"])
        else:
            assert est.ci_low < est.value or est.value < est.ci_high


def test_unlabelled_cells_take_the_rate_of_the_nearest_labelled_cell():
    # strata 0, 1, 2 of predicted non-matches (sizes 3, 3, 3) and stratum 3 of predicted
    # matches (size 2); only strata 0, 2 and 3 have labels
    labels = np.array([0, 0, 0, 1, 1, 0, 1, 1, 1, 1, 0])
    predicted = np.array([0] * 9 + [1, 1])
    strata = two_strata([3, 3, 3, 2], [0, 0, 0, 1])
    run = run_of("stratified", 11, [0, 6, 9], labels[[0, 6, 9]], strata)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UndefinedMetricWarning)
        result = estimate_from_labels(run, predicted)
    # stratum 1 (empty) is merged with stratum 0 (lower neighbour on a tie): rate 0;
    # stratum 2: rate 1 -> 3 matches; predicted cell: rate 1 -> 2 matches
    assert result.precision.value == pytest.approx(1.0)
    assert result.recall.value == pytest.approx(2 / (2 + 3))


def test_no_labelled_predicted_match_leaves_metrics_undefined():
    predicted = np.array([0, 0, 1, 1])
    run = run_of("passive", 4, [0, 1], [0, 1])
    with pytest.warns(UndefinedMetricWarning):
        result = estimate_from_labels(run, predicted)
    assert math.isnan(result.precision.value) and math.isnan(result.f[0].value)


def test_importance_runs_hand_computed_with_a_fully_labelled_group():
    # pool of 5: pairs 0-3 predicted non-matches, pair 4 the only predicted match
    predicted = np.array([0, 0, 0, 0, 1])
    q = np.array([0.4, 0.1, 0.4, 0.5])  # proposal of each draw: pairs 0, 1, 0, 4
    run = LabelRun(
        "importance",
        5,
        np.array([0, 1, 0, 4]),
        np.array([1, 0, 1, 1], dtype=np.int8),
        1 / (5 * q),
        np.full(4, -1),
        np.array([True, True, False, True]),
        static_proposal=True,
    )
    result = estimate_from_labels(run, predicted)
    # the predicted-match group is fully labelled: TP = 1 exactly (precision census);
    # FN = PP sum_{open, h=0} w l / sum_{h=1} w = 1 * (0.5 + 0.5) / 0.4 = 2.5
    assert result.precision.value == 1.0 and result.precision.ci_method == "census"
    assert result.recall.value == pytest.approx(1 / (1 + 2.5))
    assert result.recall.ci_low < result.recall.value < result.recall.ci_high


def test_importance_estimate_is_the_papers_ratio_while_no_cell_is_fully_labelled():
    pool = synthetic_pool(n=3000, rate=0.15, seed=5)
    for method in ("oasis", "importance"):
        run = sample_labels(pool, make_sampler(method, pool, 2), LabelOracle(pool.labels), 40)
        paper = replace(run, strata=None, static_proposal=False, adaptive=False)
        ours, theirs = (
            estimate_from_labels(run, pool.predicted),
            estimate_from_labels(paper, pool.predicted),
        )
        for a, b in ((ours.precision, theirs.precision), (ours.recall, theirs.recall)):
            assert a.value == pytest.approx(b.value, rel=1e-12)


def test_stratified_sampler_seeds_every_stratum_first():
    """With unsampled strata counted as empty the baseline was undefined
    in 100% of runs; now the first K draws visit every stratum, largest first within each
    prediction group, the groups in turn (so both are labelled from the second draw on)."""
    pool = synthetic_pool(n=300, rate=0.15, seed=2)
    sampler = StratifiedSampler(pool, 0, n_strata=6)
    k = sampler.strata.n_strata
    first = [sampler.draw().stratum for _ in range(k)]
    assert sorted(first) == list(range(k))
    group = sampler.strata.predicted[first]
    for g in (0, 1):
        assert (np.diff(sampler.strata.sizes[first][group == g]) <= 0).all()
    smaller = min(np.sum(group == 0), np.sum(group == 1))
    assert list(group[: 2 * smaller : 2]) != list(group[1 : 2 * smaller : 2])  # alternating
    assert len(set(group[: 2 * smaller : 2])) == 1 and len(set(group[1 : 2 * smaller : 2])) == 1


def test_oasis_prior_decays_as_remark_4():
    """Marchant & Rubinstein 2017 Remark 4: the prior column of stratum k is scaled by 1 / n_k."""
    pool = synthetic_pool(n=200, rate=0.15, seed=1)
    # uncut strata: each stratum's prior holds eta = 4 pseudo-labels
    sampler = OASISSampler(pool, 0, n_strata=3, eta=4.0, decay=True, max_share=None)
    pi0 = sampler.prior1 / 4.0
    np.testing.assert_allclose(sampler.posterior_mean(), pi0)
    seen = {}
    for _ in range(30):
        d = sampler.draw()
        label = int(pool.labels[d.index])
        sampler.observe(d.index, label)
        seen.setdefault(d.stratum, []).append(label)
    for k, labels in seen.items():
        n, m = len(labels), sum(labels)
        expected = (m + 4.0 * pi0[k] / n) / (n + 4.0 / n)
        assert sampler.posterior_mean()[k] == pytest.approx(expected)
    fixed = OASISSampler(pool, 0, n_strata=3, eta=4.0, decay=False, max_share=None)
    fixed.n1[0], fixed.n0[0] = 2.0, 3.0
    assert fixed.posterior_mean()[0] == pytest.approx((2 + 4 * pi0[0]) / (5 + 4))
    # decay stays an option: it loses on abt-buy from 1,000 labels (benchmarks/README.md,
    # "OASIS as the authors' package"), so the default keeps the prior fixed
    assert OASISSampler(pool, 0).params()["decay"] is False


# --- label reuse ------------------------------------------------------


@pytest.mark.slow
def test_reuse_and_continued_sampling_are_unbiased_over_many_runs():
    """Many runs on a small pool: B's precision (TP_B / PP_B, PP_B known, so linear in the
    estimated TP_B) from A's OASIS labels alone, and from A's labels plus B's continued
    OASIS labels, averages to the truth within 4 Monte-Carlo standard errors. Recall and
    F1 are ratios of two estimated totals, biased by O(1/n) at this tiny budget (Jensen),
    so only within 0.05."""
    pool = synthetic_pool(n=300, rate=0.15, seed=11)
    rng = np.random.default_rng(0)
    predicted_b = np.where(rng.random(pool.n_pairs) < 0.1, 1 - pool.predicted, pool.predicted)
    pool_b = pool.with_prediction(predicted_b)
    truth = pool_b.truth()
    oracle = LabelOracle(pool.labels)
    reused, combined = [], []
    for seed in range(200):
        run = sample_labels(pool, make_sampler("oasis", pool, seed, n_strata=4), oracle, 60)
        more = continue_sampling(pool_b, run, oracle, 20, seed=seed + 1000, n_strata=4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            for out, result in (
                (reused, reuse_estimate(run, predicted_b)),
                (combined, estimate_from_labels(more, predicted_b)),
            ):
                out.append([result.precision.value, result.recall.value, result.f[0].value])
    for values in (np.array(reused), np.array(combined)):
        precision = values[:, 0]
        mcse = precision.std(ddof=1) / np.sqrt(len(precision))
        assert abs(precision.mean() - truth["pairwise_precision"]) <= 4 * mcse
        assert abs(np.nanmean(values[:, 1]) - truth["pairwise_recall"]) < 0.05
        assert abs(np.nanmean(values[:, 2]) - truth["pairwise_f1"]) < 0.05


# --- variance of OASIS runs from the stratum model -------------------


def _oasis_run(index, label, weight, strata, prior, n):
    index = np.asarray(index)
    return LabelRun(
        "importance",
        n,
        index,
        np.asarray(label, dtype=np.int8),
        np.asarray(weight, dtype=float),
        strata.codes[index].astype(int),
        np.ones(len(index), bool),
        strata=strata,
        adaptive=True,
        stratum_prior=np.asarray(prior, dtype=float),
    )


def test_oasis_interval_adds_the_matches_hidden_in_blind_strata_hand_computed():
    # stratum 0 = pairs 0-3 (predicted non-matches), stratum 1 = pairs 4-6 (predicted matches)
    strata = two_strata([4, 3], [0, 1])
    predicted = np.array([0, 0, 0, 0, 1, 1, 1])
    prior = [[0.2, 1.5], [1.8, 0.5]]  # pseudo-matches, pseudo-non-matches per stratum
    # stratum 0: pairs 0 and 1 drawn, both non-matches (its labels are blind); stratum 1:
    # pair 4 (a match, drawn twice) and pair 5 (a non-match)
    run = _oasis_run([4, 0, 5, 4, 1], [1, 0, 0, 1, 0], [0.5, 2.0, 0.5, 0.8, 4.0], strata, prior, 7)
    result = estimate_from_labels(run, predicted)
    # A = sum w l h = 0.5 + 0.8, C = sum w l (1 - h) = 0, D = sum w h = 1.8
    a, d = 1.3, 1.8
    assert result.recall.value == 1.0
    # the weighted precision A / D = 0.722 lies above what the labels allow (pair 5 is a
    # false positive: at most 2 of the 3 predicted matches are matches), so it is clipped
    assert a / d > 2 / 3 and result.precision.value == pytest.approx(2 / 3)
    assert result.precision.ci_high == pytest.approx(2 / 3)
    # precision A / D from the labels: a draw of stratum 1 with label l has influence
    # w (l - P) / D, summing to 0; the variance is T / (T - 1) times their squares' sum
    p = a / d
    var_p = (0.5**2 * (1 - p) ** 2 + 0.5**2 * p**2 + 0.8**2 * (1 - p) ** 2) / d**2
    assert result.precision.std_error == pytest.approx(math.sqrt(5 / 4 * var_p), rel=1e-12)
    # stratum 0 holds no labelled match: its 2 unlabelled pairs hide H ~ BetaBinomial(2,
    # r s, (1 - r) s) matches under the model. Prior means 0.1 and 0.75 (strength 2) are
    # rescaled per prediction group: group 0 has 0 matches where the prior expected
    # 0.1 + 0.1, so c = 1 / 1.2 and its mean is 1/12. The two strata are the two leaves of
    # a one-level tree whose prior is doubled by the depth factor 1 + 1^2:
    # r = (0 + 2 x 2/12) / (2 + 2 x 2) = 1/18; s = 2 pseudo-labels + 2 labels
    hidden = hidden_counts(run, predicted).misses
    r, s_ = 1 / 18, 4.0
    a_, b_ = r * s_, (1 - r) * s_
    mean = 2 * a_ / (a_ + b_)
    var = 2 * a_ * b_ * (a_ + b_ + 2) / ((a_ + b_) ** 2 * (a_ + b_ + 1))
    assert mean == pytest.approx(1 / 9)
    assert hidden.mean() == pytest.approx(mean, abs=4 * math.sqrt(var / len(hidden)))
    assert hidden.var() == pytest.approx(var, rel=0.15)
    # no missed match drawn: recall is at its boundary; its lower end is what the search of
    # stratum 0 (2 of its 4 pairs labelled) cannot rule out: up to 2 (1 - 0.025^(1/2))
    # matches among the 2 unlabelled ones, with TP = P PP
    tp = p * 3
    k = 2 * (1 - 0.025 ** (1 / 2))
    assert result.recall.ci_low == pytest.approx(tp / (tp + k), rel=1e-12)
    assert not result.recall.reliable and "at its boundary" in result.recall.diagnostics.reason


def test_oasis_labels_variance_matches_numerical_differentiation(monkeypatch):
    """Independent computation: the influence of each draw from finite differences of F
    as a function of the three weighted sums, then T / (T - 1) times the centred sum of
    their squares: the labels' part of the interval (the hidden matches switched off)."""
    from er_evaluation.pairs import estimates

    pool = synthetic_pool(n=4000, rate=0.15, seed=3)
    sampler = OASISSampler(pool, 7, n_strata=4)
    run = sample_labels(pool, sampler, LabelOracle(pool.labels), 60)
    monkeypatch.setattr(estimates, "hidden_counts", lambda run, predicted: None)
    result = estimate_from_labels(run, pool.predicted, beta=1)
    pred = pool.predicted.astype(float)
    pp = pred.sum()
    h_t, y, w = pred[run.index], run.label.astype(float), run.weight
    sums = np.array([np.sum(w * y * h_t), np.sum(w * y * (1 - h_t)), np.sum(w * h_t)])
    # no stratum x prediction cell is complete in 60 labels: the plain sums are the estimate's
    strata = run.strata
    cells = 2 * strata.codes.astype(np.int64) + pool.predicted
    sizes = np.bincount(cells, minlength=2 * strata.n_strata)
    labelled = np.bincount(cells[np.unique(run.index)], minlength=len(sizes))
    assert np.all((labelled < sizes) | (sizes == 0))

    def metric(s, alpha):
        tp, fn = pp * s[0] / s[2], pp * s[1] / s[2]
        return tp / (alpha * pp + (1 - alpha) * (tp + fn))

    t = run.n_draws
    for est, alpha in ((result.precision, 1.0), (result.recall, 0.0), (result.f[0], 0.5)):
        grad = np.zeros(3)
        for j in range(3):
            step = np.zeros(3)
            step[j] = 1e-6 * sums[j]
            grad[j] = (metric(sums + step, alpha) - metric(sums - step, alpha)) / (2 * step[j])
        psi = w * (y * h_t * grad[0] + y * (1 - h_t) * grad[1] + h_t * grad[2])
        var = t / (t - 1) * (np.sum(psi**2) - np.sum(psi) ** 2 / t)
        assert est.std_error == pytest.approx(math.sqrt(var), rel=1e-5)


def test_oasis_squared_weights_estimate_the_conditional_variances_without_bias():
    """Exact expectation over every draw path of a tiny OASIS run: the per-cell sum of
    squared weights S_c has the expectation of sum_t omega_c^2 / v_tc, the unknown
    factor of the martingale's conditional variances."""
    import copy

    from er_evaluation.pairs.samplers import Draw

    labels = np.array([0, 1, 0, 0, 1, 1])
    pool = pool_of(labels, [0, 0, 0, 1, 1, 1], scores=[0.1, 0.2, 0.3, 0.6, 0.7, 0.9])
    strata = two_strata([3, 3], [0, 1])
    root = OASISSampler(pool, 0, strata=strata, eta=2.0, epsilon=0.2)
    n_draws = 3
    total = np.zeros(2)  # E[S_k - sum_t omega_k^2 / v_tk] per stratum
    mass = 0.0

    def walk(sampler, prob, depth, acc):
        nonlocal mass
        if depth == n_draws:
            total[:] += prob * acc
            mass += prob
            return
        v = sampler._v
        for k in range(2):
            for i in strata.members(k):
                nxt = copy.deepcopy(sampler)
                draw = Draw(int(i), k, v[k] / 3, float(sampler.omega[k] / v[k]))
                nxt._last = draw
                nxt.observe(int(i), int(labels[i]))
                step = -(sampler.omega**2) / v
                step[k] += draw.weight**2
                walk(nxt, prob * v[k] / 3, depth + 1, acc + step)

    walk(root, 1.0, 0, np.zeros(2))
    assert mass == pytest.approx(1.0)
    np.testing.assert_allclose(total, 0.0, atol=1e-12)


def test_every_pair_estimate_carries_diagnostics():
    """estimate_from_labels built its estimates without diagnostics, so every one (a census included) printed NOT RELIABLE."""
    pool = synthetic_pool(n=300, rate=0.15, seed=2)
    oracle = LabelOracle(pool.labels)
    census = sample_labels(pool, make_sampler("passive", pool, 0), oracle, pool.n_pairs)
    for e in _every(estimate_from_labels(census, pool.predicted)):
        assert e.ci_method == "census" and e.reliable and "NOT RELIABLE" not in repr(e)
        assert e.diagnostics.n_effective > 0
    run = sample_labels(pool, make_sampler("oasis", pool, 0), oracle, 60)
    for e in _every(estimate_from_labels(run, pool.predicted)):
        assert e.diagnostics is not None and 0 < e.diagnostics.top_share <= 1


def test_recall_at_one_with_unsearched_non_matches_is_flagged():
    # no labelled predicted non-match is a match and the big score-0 stratum was barely
    # searched: recall 1 rests on matches the labels cannot rule out
    n = 2000
    labels = np.zeros(n, dtype=int)
    labels[:20] = 1  # 10 predicted matches that are matches, 10 hidden misses
    predicted = np.zeros(n, dtype=int)
    predicted[:10] = 1
    predicted[20:25] = 1
    pool = pool_of(labels, predicted, np.where(predicted == 1, 0.9, 0.01))
    # 15 labels: the predicted matches first (OASIS's proposal), hardly a non-match
    run = sample_labels(pool, make_sampler("oasis", pool, 3), LabelOracle(pool.labels), 15)
    non = pool.predicted[run.index] == 0
    assert not np.any(pool.labels[run.index][non] == 1)  # the premise: no miss drawn
    est = estimate_from_labels(run, pool.predicted)
    assert est.recall.value == 1.0 and not est.recall.reliable
    assert "no match was drawn" in est.recall.diagnostics.reason
    assert "could hide" in est.recall.diagnostics.reason
    # the 5 false positives were not drawn either: precision is at its boundary too
    assert not any(pool.labels[run.index][pool.predicted[run.index] == 1] == 0)
    assert est.precision.value == 1.0 and not est.precision.reliable
    assert "no false positive was drawn" in est.precision.diagnostics.reason
    assert "no match was drawn" not in est.precision.diagnostics.reason


def _every(est):
    return [est.precision, est.recall, *est.f]


def test_finish_keeps_a_rounded_ratio_inside_its_interval():
    # AIS precision 1.0000000000000002 above its interval's end 1.0
    from er_evaluation.pairs._variance import finish

    for value in (1.0 + 2e-16, -1e-17):
        v, se, low, high = finish(value, 0.0, 1.96, n_fallback=10.0)
        assert 0.0 <= low <= v <= high <= 1.0 and se > 0
    assert finish(1.0 + 2e-16, 0.0, 1.96, n_fallback=10.0, remaining=0) == (1.0, 0.0, 1.0, 1.0)


def test_stratified_recall_at_its_boundary_reaches_the_diagnostics_bound_on_abt_buy():
    """Stratified draws on abt-buy, 2,000 labels, seed 0: no missed match is drawn (truth
    recall 0.44), so the estimate is 1. The interval's lower end is the bound the
    diagnostic reports (what 1,941.5 effective draws of the predicted non-matches cannot
    rule out), so it covers the truth; it once stopped at 0.708 while the diagnostic said
    recall could be as low as 0.177."""
    pool = load_pool("abt-buy")
    run = sample_labels(pool, make_sampler("stratified", pool, 0), LabelOracle(pool.labels), 2000)
    truth = pool.truth()["pairwise_recall"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        result = estimate_from_labels(run, pool.predicted)
    for est in (result.recall, result.f[0]):
        reason = est.diagnostics.reason
        assert est.value > 0.95 and not est.reliable and "at its boundary" in reason
        bound = float(reason.split("could be as low as ")[1].split(";")[0])
        assert est.ci_low == pytest.approx(bound, abs=5e-4)  # the reason prints 3 digits
    assert result.recall.ci_low < truth < result.recall.ci_high
    assert result.precision.reliable  # a false positive was drawn: precision is not at 1
