"""Label reuse across predictions with the balance heuristic (Chaganty et al. 2017):
exhaustive unbiasedness, a hand-computed reuse from A to B, census exactness,
many-run checks and the recorded proposals."""

from __future__ import annotations

import itertools
import warnings
from fractions import Fraction

import numpy as np
import pytest
from _helpers import synthetic_pool

from er_evaluation.errors import UndefinedMetricWarning
from er_evaluation.pairs import (
    LabelOracle,
    LabelRun,
    continue_sampling,
    estimate_from_labels,
    make_sampler,
    reuse_estimate,
    sample_labels,
)
from er_evaluation.pairs.oracles import CountingOracle
from er_evaluation.pairs.reuse import (
    Proposals,
    TracedRun,
    mixture_weights,
    proposals_of,
    sample_traced,
)


def fixed(codes, prob, draws) -> Proposals:
    return Proposals(np.asarray(codes), np.asarray([prob], dtype=float), np.array([draws]))


# --- unbiasedness by exhaustive expectation -------------------------------------------


def test_balance_heuristic_totals_are_unbiased_over_every_draw_sequence():
    """Two fixed proposals (2 draws from a per-pair q_1, 1 draw from a per-stratum q_2) on a
    4-pair pool: over all 4^3 draw sequences, weighted by their probability, the balance
    heuristic's N/T sum_t w_t y(x_t) equals the pool total of y exactly (Chaganty et al.
    2017, Theorem 1), for every y; weighting every draw by the first proposal alone is not."""
    n = 4
    q1 = fixed(np.arange(n), [0.4, 0.3, 0.2, 0.1], 2)
    q2 = fixed([0, 0, 1, 1], [0.1, 0.4], 1)  # per pair: 0.1, 0.1, 0.4, 0.4
    per_pair = [np.array([0.4, 0.3, 0.2, 0.1]), np.array([0.1, 0.1, 0.4, 0.4])]
    stages = [0, 0, 1]  # proposal of each draw
    ys = {"label": np.array([1, 0, 1, 1.0]), "tp": np.array([1, 0, 0, 1.0]), "one": np.ones(n)}
    expected = {name: 0.0 for name in ys}
    expected_first_only = 0.0
    total_prob = 0.0
    for seq in itertools.product(range(n), repeat=len(stages)):
        prob = float(np.prod([per_pair[s][x] for s, x in zip(stages, seq, strict=True)]))
        total_prob += prob
        w = mixture_weights(np.array(seq), (q1, q2), n)
        for name, y in ys.items():
            expected[name] += prob * n * np.mean(w * y[list(seq)])
        own_first = (1 / n) / per_pair[0][list(seq)]
        expected_first_only += prob * n * np.mean(own_first * ys["label"][list(seq)])
    assert total_prob == pytest.approx(1.0)
    for name, y in ys.items():
        assert expected[name] == pytest.approx(y.sum(), abs=1e-12)
    assert abs(expected_first_only - ys["label"].sum()) > 0.1


def test_mixture_weights_check_their_inputs():
    q = fixed(np.arange(3), [0.5, 0.5, 0.0], 2)
    with pytest.raises(ValueError, match="made 2 draws, the run has 3"):
        mixture_weights(np.array([0, 1, 1]), (q,), 3)
    with pytest.raises(ValueError, match=r"pool rows \[2\] were drawn but no recorded proposal"):
        mixture_weights(np.array([0, 2]), (q,), 3)
    with pytest.raises(ValueError, match="one row per recorded proposal"):
        Proposals(np.arange(3), np.ones((2, 3)), np.array([1]))


# --- hand-computed reuse from A to B ----------------------------------------------------


def test_reuse_from_a_to_b_on_a_toy_pool_hand_computed():
    """6 pairs, labels 1 1 0 1 0 0. Stage A: 2 draws (rows 0, 3) from a per-stratum q_A
    (strata {0,1}, {2,3}, {4,5}: 0.25, 0.15, 0.10 per pair); stage B: 1 draw (row 2) from
    a per-pair q_B = (0.3, 0.1, 0.3, 0.1, 0.1, 0.1). qbar = (2 q_A + q_B) / 3, so
    w = (1/6) / qbar: row 0: 3 / (6 * 0.8) = 5/8, row 3: 3 / (6 * 0.4) = 5/4, row 2:
    3 / (6 * 0.6) = 5/6. B predicts rows 0, 1, 2 (PP = 3): D = 5/8 + 5/6 = 35/24, matches
    among predicted draws 5/8, so P = 3/7, TP = 9/7; FN = 3 (5/4) / (35/24) = 18/7, so
    R = 1/3 and F1 = 2PR / (P + R) = 3/8."""
    labels = np.array([1, 1, 0, 1, 0, 0])
    predicted_b = np.array([1, 1, 1, 0, 0, 0])
    q_a = fixed([0, 0, 1, 1, 2, 2], [0.25, 0.15, 0.10], 2)
    q_b = fixed(np.arange(6), [0.3, 0.1, 0.3, 0.1, 0.1, 0.1], 1)
    index = np.array([0, 3, 2])
    w = mixture_weights(index, (q_a, q_b), 6)
    assert w == pytest.approx([5 / 8, 5 / 4, 5 / 6])
    run = LabelRun(
        "importance",
        6,
        index,
        labels[index].astype(np.int8),
        w,
        np.full(3, -1),
        np.ones(3, dtype=bool),
        adaptive=True,
    )
    est = reuse_estimate(run, predicted_b)
    p, r = Fraction(3, 7), Fraction(1, 3)
    assert est.precision.value == pytest.approx(float(p))
    assert est.recall.value == pytest.approx(float(r))
    assert est.f[0].value == pytest.approx(float(2 * p * r / (p + r)))
    assert est.f[0].value == pytest.approx(3 / 8)
    assert est.recall.ci_low < est.recall.value < est.recall.ci_high


def test_continued_static_stages_are_weighted_by_the_mixture_of_both_proposals():
    """A: static IS for A's prediction; B: static IS for B's (continue_sampling with
    method="importance"). The pooled run's weights equal p / ((n_A q_A + n_B q_B) / T)
    computed from the two samplers' own q arrays, and B's labels cost only new pairs."""
    pool = synthetic_pool(300, rate=0.15, seed=3)
    predicted_b = (pool.scores > 0.0).astype(int)
    pool_b = pool.with_prediction(predicted_b)
    first = sample_traced(pool, make_sampler("importance", pool, 1), LabelOracle(pool.labels), 40)
    assert isinstance(first, TracedRun) and first.method == "importance+mixture"
    oracle = CountingOracle(LabelOracle(pool.labels))
    pooled = continue_sampling(pool_b, first, oracle, 25, seed=2, method="importance")
    assert isinstance(pooled, TracedRun) and pooled.method == "importance+reuse+mixture"
    assert pooled.n_labels == 65 and len(set(oracle.asked)) == len(oracle.asked) == 25
    assert not set(oracle.asked) & set(first.index.tolist())
    q_a = make_sampler("importance", pool, 0).q
    q_b = make_sampler("importance", pool_b, 0).q
    n_a, t = first.n_draws, pooled.n_draws
    qbar = (n_a * q_a + (t - n_a) * q_b) / t
    assert pooled.weight == pytest.approx((1 / pool.n_pairs) / qbar[pooled.index])
    own = np.concatenate([1 / (pool.n_pairs * q_a), 1 / (pool.n_pairs * q_b)])
    draw_q = np.concatenate([first.index, pooled.index[n_a:] + pool.n_pairs])
    assert pooled.own_weights_run().weight == pytest.approx(own[draw_q])


# --- census ----------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["importance", "oasis"])
def test_reuse_with_every_pair_labelled_is_exact(method):
    """Once A's and B's stages together have labelled every pair, B's precision, recall
    and F1 are the truth with a zero-width interval, for the mixture (static stages) and
    the own weights (OASIS) alike."""
    pool = synthetic_pool(40, rate=0.3, seed=5)
    predicted_b = (pool.scores > -0.2).astype(int)
    pool_b = pool.with_prediction(predicted_b)
    oracle = LabelOracle(pool.labels)
    params = {"n_strata": 4} if method == "oasis" else {"epsilon": 0.2}
    first = sample_traced(pool, make_sampler(method, pool, 0, **params), oracle, 25)
    pooled = continue_sampling(pool_b, first, oracle, 15, seed=1, method=method, **params)
    assert len(np.unique(pooled.index)) == pool.n_pairs
    est = estimate_from_labels(pooled, predicted_b)
    truth = pool_b.truth()
    for e, name in ((est.precision, "pairwise_precision"), (est.recall, "pairwise_recall")):
        assert e.value == pytest.approx(truth[name])
        assert e.ci_low == e.ci_high == e.value and e.ci_method == "census"
    assert est.f[0].value == pytest.approx(truth["pairwise_f1"])


# --- many runs -------------------------------------------------------------------------


@pytest.mark.slow
def test_static_stages_reuse_is_unbiased_over_many_runs():
    """200 runs of static IS for A (40 labels) then static IS for B (20 more): B's
    totals TP_B and FN_B from the balance heuristic (N/T sum w y h) average to the truth
    within 4 Monte-Carlo standard errors, as does precision (linear in TP_B, PP known)."""
    pool = synthetic_pool(250, rate=0.15, seed=11)
    rng = np.random.default_rng(0)
    predicted_b = np.where(rng.random(pool.n_pairs) < 0.1, 1 - pool.predicted, pool.predicted)
    pool_b = pool.with_prediction(predicted_b)
    oracle = LabelOracle(pool.labels)
    tp_true = float(np.sum(pool.labels * predicted_b))
    fn_true = float(np.sum(pool.labels * (1 - predicted_b)))
    totals, precision = [], []
    for seed in range(200):
        first = sample_traced(pool, make_sampler("importance", pool, seed), oracle, 40)
        pooled = continue_sampling(pool_b, first, oracle, 20, seed=seed + 500, method="importance")
        h, y = predicted_b[pooled.index], pooled.label
        scale = pool.n_pairs / pooled.n_draws
        totals.append(
            [scale * np.sum(pooled.weight * y * h), scale * np.sum(pooled.weight * y * (1 - h))]
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            precision.append(estimate_from_labels(pooled, predicted_b).precision.value)
    totals = np.array(totals)
    for column, truth in ((0, tp_true), (1, fn_true)):
        values = totals[:, column]
        assert abs(values.mean() - truth) <= 4 * values.std(ddof=1) / np.sqrt(len(values))
    precision = np.array(precision)
    mcse = precision.std(ddof=1) / np.sqrt(len(precision))
    assert abs(precision.mean() - pool_b.truth()["pairwise_precision"]) <= 4 * mcse


# --- recorded proposals ----------------------------------------------------------------


def test_oasis_trace_records_the_proposal_of_every_draw():
    """The recorded per-stratum q_t of each counted draw gives that draw's own weight at
    the pair drawn; the traced run keeps OASIS's draws and (adaptive) its own weights, and
    its mixture_run weighs them against the mean proposal."""
    pool = synthetic_pool(400, rate=0.15, seed=7)
    oracle = LabelOracle(pool.labels)
    sampler = make_sampler("oasis", pool, 3, n_strata=5)
    k = sampler.strata.n_strata
    traced = sample_traced(pool, sampler, oracle, 60)
    plain = sample_labels(pool, make_sampler("oasis", pool, 3, n_strata=5), oracle, 60)
    assert np.array_equal(traced.index, plain.index)
    assert traced.method == "oasis" and np.array_equal(traced.weight, plain.weight)
    (props,) = traced.proposals
    assert props.adaptive and props.prob.shape == (traced.n_draws, k)
    q_drawn = props.prob[np.arange(traced.n_draws), props.codes[traced.index]]
    assert (1 / pool.n_pairs) / q_drawn == pytest.approx(traced.own_weight)
    # every recorded proposal is a distribution over the pool
    sizes = np.bincount(props.codes, minlength=k)
    assert props.prob @ sizes == pytest.approx(np.ones(traced.n_draws))
    mixed = traced.mixture_run()
    qbar = props.prob.mean(axis=0)[props.codes[traced.index]]
    assert mixed.weight == pytest.approx((1 / pool.n_pairs) / qbar)
    assert mixed.method == "oasis+mixture"


def test_proposals_of_fixed_designs_and_untraced_adaptive_runs():
    pool = synthetic_pool(200, rate=0.15, seed=9)
    oracle = LabelOracle(pool.labels)
    strat = sample_labels(pool, make_sampler("stratified", pool, 0, n_strata=4), oracle, 30)
    props = proposals_of(strat)
    counts = np.bincount(strat.stratum, minlength=strat.strata.n_strata)
    assert props.prob[0] == pytest.approx(counts / (30 * strat.strata.sizes))
    passive = sample_labels(pool, make_sampler("passive", pool, 0), oracle, 10)
    assert mixture_weights(passive.index, (proposals_of(passive),), 200) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="'ais' sampler cannot be recorded"):
        sample_traced(pool, make_sampler("ais", pool, 0, n_strata=4), oracle, 10)
    oasis = sample_labels(pool, make_sampler("oasis", pool, 0, n_strata=4), oracle, 10)
    with pytest.raises(ValueError, match="record them with sample_traced"):
        proposals_of(oasis)
    # an untraced OASIS run is continued with each draw's own weight (a plain LabelRun)
    pooled = continue_sampling(pool, oasis, oracle, 5, seed=1, n_strata=4)
    assert not isinstance(pooled, TracedRun)
    assert np.array_equal(pooled.weight[: oasis.n_draws], oasis.weight)
    # a stratified A continued by OASIS is traced, with own weights (one stage adapted)
    traced = continue_sampling(pool, strat, oracle, 5, seed=1, n_strata=4)
    assert isinstance(traced, TracedRun) and len(traced.proposals) == 2
    assert np.array_equal(traced.weight, traced.own_weight)
