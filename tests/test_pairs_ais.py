"""The adaptive importance sampler of Marchant & Rubinstein 2021, its measures and its oracle model."""

from __future__ import annotations

import copy
import json
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from _helpers import rewrite_as_old_log

from er_evaluation.pairs import LabelOracle, OASISSampler, PairPool, sample_labels, stratify
from er_evaluation.pairs.ais import AISSampler
from er_evaluation.pairs.dirichlet_tree import DirichletTree, balanced_tree
from er_evaluation.pairs.estimates import LabelRun
from er_evaluation.pairs.measures import (
    custom_measure,
    estimate_measure,
    f_measures,
    group_sums,
    pr_curve,
)
from er_evaluation.pairs.samplers import Draw


def tiny_pool(n: int = 6, seed: int = 0) -> PairPool:
    rng = np.random.default_rng(seed)
    scores = np.round(rng.random(n), 3)
    frame = pd.DataFrame(
        {
            "id_left": np.arange(n),
            "id_right": np.arange(n) + n,
            "score": scores,
            "predicted": (scores > 0.5).astype(int),
            "label": (rng.random(n) < scores).astype(int),
        }
    )
    frame.loc[0, ["predicted", "label"]] = [1, 1]  # at least one true positive
    frame.loc[1, ["predicted", "label"]] = [0, 1]
    frame.loc[2, ["predicted", "label"]] = [1, 0]
    return PairPool.from_frame(frame, label_col="label")


def _force(sampler: AISSampler, index: int) -> Draw:
    """Make ``index`` the sampler's next draw (the draw() bookkeeping without the RNG)."""
    q = 1.0 / (sampler.n_pairs * sampler.current_weights(np.array([index]))[0])
    if sampler._known[index] >= 0:
        entry = (
            sampler._n_cells + int(sampler.measure.codes[index]) * 2 + int(sampler._known[index])
        )
        pos = -1
    else:
        entry = int(sampler._cell[index])
        pos = sampler._position(index)
    draw = Draw(index, int(sampler.strata.codes[index]), q, 1.0 / (sampler.n_pairs * q))
    sampler._last = (draw, entry, pos)
    return draw


def _expected_totals(sampler, labels, measure, steps):
    """E[(1/T) sum_j w_j ell(x_j, y_j)] over every path of ``steps`` draws, exactly."""

    def rec(s, depth):
        if depth == 0:
            return np.zeros(measure.table.shape[2])
        q = 1.0 / (s.n_pairs * s.current_weights(np.arange(s.n_pairs)))
        out = np.zeros(measure.table.shape[2])
        for x in range(s.n_pairs):
            child = copy.deepcopy(s)
            draw = _force(child, x)
            loss = measure.table[measure.codes[x], labels[x]]
            child.observe(x, int(labels[x]))
            out += q[x] * (draw.weight * loss + rec(child, depth - 1))
        return out

    return rec(sampler, steps) / steps


@pytest.mark.parametrize("plug_in", ["ais", "model"])
@pytest.mark.parametrize("branching", [None, 2])
@pytest.mark.parametrize("target", ["f", "pr_curve"])
def test_weighted_totals_unbiased_exhaustive(branching, target, plug_in):
    pool = tiny_pool(5)
    labels = pool.labels
    sampler = AISSampler(
        pool,
        0,
        target=target,
        branching=branching,
        n_strata=2,
        epsilon=0.05,
        n_thresholds=3,
        plug_in=plug_in,
    )
    measure = sampler.measure if target == "f" else pr_curve(pool.scores, 3)
    expected = _expected_totals(sampler, labels, measure, steps=3)
    truth = measure.table[measure.codes, labels].mean(axis=0)
    np.testing.assert_allclose(expected, truth, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "options",
    [
        {"proposal": "stratum"},
        {"prior": "rates"},
        {"prior": "rates", "counts": "weighted", "proposal": "stratum"},
        {"tree": "prediction"},
    ],
)
def test_weighted_totals_unbiased_exhaustive_for_every_model_option(options):
    pool = tiny_pool(5)
    sampler = AISSampler(pool, 0, n_strata=2, epsilon=0.05, **options)
    expected = _expected_totals(sampler, pool.labels, sampler.measure, steps=3)
    truth = sampler.measure.table[sampler.measure.codes, pool.labels].mean(axis=0)
    np.testing.assert_allclose(expected, truth, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("branching", [None, 2, 3])
@pytest.mark.parametrize("counts", ["labels", "weighted"])
def test_rates_prior_starts_at_the_floored_score_rate_of_every_stratum(branching, counts):
    pool = tiny_pool(200, seed=21)
    strata = stratify(pool.scores, pool.predicted, 5)
    sampler = AISSampler(pool, 0, strata=strata, prior="rates", counts=counts, branching=branching)
    mean_score = np.bincount(strata.codes, weights=pool.scores) / strata.sizes
    rate = (strata.sizes * mean_score + 0.5) / (strata.sizes + 1.0)
    np.testing.assert_allclose(sampler.posterior_mean(), rate, rtol=1e-12)


def test_one_level_tree_with_weighted_counts_is_a_weighted_beta_model():
    rng = np.random.default_rng(6)
    k = 6
    prior = rng.random((2, k)) + 0.05
    parent, leaf = balanced_tree(k, None)
    kappa = 0.7
    tree = DirichletTree(prior, parent, leaf, depth_concentration=kappa, depth_prior="proportional")
    counts = np.zeros((2, k))
    for _ in range(40):
        leaf_k, y, w = int(rng.integers(k)), int(rng.integers(2)), float(rng.random() * 5)
        tree.update(leaf_k, y, w)
        counts[y, leaf_k] += w
        post = (1 + kappa) * prior + counts
        np.testing.assert_allclose(tree.predict(), post[1] / post.sum(axis=0), rtol=1e-12)
    batch = DirichletTree(
        prior, parent, leaf, depth_concentration=kappa, depth_prior="proportional"
    )
    leaves, labels = rng.integers(k, size=25), rng.integers(2, size=25)
    weights = rng.random(25) * 3
    batch.update_many(leaves, labels, weights)
    one = DirichletTree(prior, parent, leaf, depth_concentration=kappa, depth_prior="proportional")
    for j in range(25):
        one.update(int(leaves[j]), int(labels[j]), float(weights[j]))
    np.testing.assert_allclose(batch.predict(), one.predict(), rtol=1e-10)
    with pytest.raises(ValueError, match="depth_prior"):
        DirichletTree(prior, parent, leaf, depth_prior="multiplicative")


def test_bad_model_options_are_refused_by_name():
    pool = tiny_pool(20)
    for name in ("proposal", "counts", "prior", "tree"):
        with pytest.raises(ValueError, match=name):
            AISSampler(pool, 0, **{name: "nonsense"})


@pytest.mark.parametrize(
    "options", [{}, {"counts": "weighted", "prior": "rates", "proposal": "stratum"}]
)
def test_proposal_is_a_distribution_with_positive_mass_everywhere(options):
    pool = tiny_pool(40, seed=3)
    sampler = AISSampler(pool, 1, n_strata=4, **options)
    oracle = LabelOracle(pool.labels)
    for _ in range(30):
        q = 1.0 / (pool.n_pairs * sampler.current_weights(np.arange(pool.n_pairs)))
        assert q.min() >= sampler.epsilon / pool.n_pairs * (1 - 1e-12)
        assert math.isclose(q.sum(), 1.0, rel_tol=1e-9)
        draw = sampler.draw()
        assert math.isclose(draw.prob, q[draw.index], rel_tol=1e-12)
        sampler.observe(draw.index, oracle(draw.index))


def test_one_level_tree_is_a_beta_model_per_stratum():
    rng = np.random.default_rng(5)
    k = 7
    prior = rng.random((2, k)) * 3 + 0.1
    parent, leaf = balanced_tree(k, None)
    tree = DirichletTree(prior, parent, leaf, depth_concentration=0.0)
    counts = np.zeros((2, k))
    for _ in range(50):
        leaf_k, y = int(rng.integers(k)), int(rng.integers(2))
        tree.update(leaf_k, y)
        counts[y, leaf_k] += 1
        post = prior + counts
        np.testing.assert_allclose(tree.predict(), post[1] / post.sum(axis=0), rtol=1e-12)


def test_one_level_tree_equals_oasis_model():
    pool = tiny_pool(60, seed=2)
    strata = stratify(pool.scores, pool.predicted, 4)
    eta = 5.0
    oasis = OASISSampler(pool, 0, strata=strata, eta=eta)
    ais = AISSampler(
        pool,
        0,
        strata=strata,
        branching=None,
        prior="scores",
        prior_strength=eta,
        depth_concentration=0.0,
    )
    idx = np.random.default_rng(1).choice(pool.n_pairs, 25, replace=False)
    oasis.warm_start(idx, pool.labels[idx], np.ones(len(idx)))
    ais.warm_start(idx, pool.labels[idx])
    pi_oasis = oasis.posterior_mean()
    pi_ais = ais.posterior_mean()
    np.testing.assert_allclose(pi_ais, pi_oasis, rtol=1e-12)


def test_deeper_tree_shares_strength_between_neighbours():
    parent, leaf = balanced_tree(8, 2)
    tree = DirichletTree(np.ones((2, 8)), parent, leaf)
    before = tree.predict()
    tree.update(3, 1)
    after = tree.predict()
    assert after[3] > before[3]
    assert after[2] > before[2]  # sibling borrows
    assert after[2] > after[0] > before[0]  # cousins less
    np.testing.assert_allclose(after[4:], before[4:])  # other half of the tree: no change


def test_a_zero_prior_concentration_is_refused():
    parent, leaf = balanced_tree(3, None)
    with pytest.raises(ValueError, match="zero prior concentration"):
        DirichletTree(
            np.array([[1.0, 0.0, 1.0], [1.0, 1.0, 1.0]]), parent, leaf, depth_concentration=0
        )


def test_balanced_tree_shapes():
    parent, leaf = balanced_tree(5, 2)
    assert parent[0] == -1 and len(set(leaf)) == 5
    parent, leaf = balanced_tree(5, None)
    assert (parent[leaf] == 0).all()
    with pytest.raises(ValueError, match="branching"):
        balanced_tree(5, 1)


def _group_under_root(parent: np.ndarray, node: int) -> int:
    while parent[node] != 0:
        node = int(parent[node])
    return node


@pytest.mark.parametrize("groups", [[3, 5], [1, 4], [4, 1], [2, 2, 3]])
def test_grouped_tree_splits_the_groups_at_the_root(groups):
    n = sum(groups)
    parent, leaf = balanced_tree(n, 2, groups)
    assert (parent[1:] >= 0).all() and len(set(leaf.tolist())) == n
    assert int((parent == 0).sum()) == len(groups)  # the root's children are the groups
    group_of_leaf = np.repeat(np.arange(len(groups)), groups)
    top = np.array([_group_under_root(parent, int(v)) for v in leaf])
    # leaves share a child of the root exactly when they are in the same group
    np.testing.assert_array_equal(
        top[:, None] == top[None, :], group_of_leaf[:, None] == group_of_leaf[None, :]
    )
    # below the root every group is a balanced binary tree of its own
    for g, size in enumerate(groups):
        children = np.bincount(parent[1:], minlength=len(parent))
        inner = [
            v
            for v in range(1, len(parent))
            if children[v] and _group_under_root(parent, v) == top[group_of_leaf == g][0]
        ]
        assert all(children[v] == 2 for v in inner) and len(inner) == size - 1
    with pytest.raises(ValueError, match="groups"):
        balanced_tree(n, 2, [n, 1])
    # one level ignores the groups: the flat (OASIS) model
    parent, leaf = balanced_tree(n, None, groups)
    assert (parent[leaf] == 0).all()


def test_prediction_tree_keeps_predicted_strata_under_their_own_root_child():
    pool = tiny_pool(300, seed=4)
    # a prediction that is not a score threshold, so the two groups' scores interleave
    frame = pool.pairs.copy()
    frame["predicted"] = (np.arange(len(frame)) % 3 == 0).astype(np.int8)
    pool = PairPool.from_frame(frame, label_col="label")
    strata = stratify(pool.scores, pool.predicted, 6)
    by_score = AISSampler(pool, 0, strata=strata, tree="score")
    by_group = AISSampler(pool, 0, strata=strata, tree="prediction")
    parent = by_group.model.parent
    top = np.array([_group_under_root(parent, int(v)) for v in by_group.model.leaf_node])
    group = np.empty(strata.n_strata, dtype=np.int64)
    group[by_group._leaf_of_stratum] = strata.predicted
    np.testing.assert_array_equal(top[:, None] == top[None, :], group[:, None] == group[None, :])
    # within a group the leaves stay in score order
    for flag in (0, 1):
        mine = np.flatnonzero(strata.predicted == flag)
        order = by_group._leaf_of_stratum[mine]
        assert (np.diff(strata.mean_score[mine][np.argsort(order)]) >= 0).all()
    # the score tree mixes the groups below the root here
    parent = by_score.model.parent
    top = np.array([_group_under_root(parent, int(v)) for v in by_score.model.leaf_node])
    group[by_score._leaf_of_stratum] = strata.predicted
    assert not np.array_equal(top[:, None] == top[None, :], group[:, None] == group[None, :])
    # both start every stratum at its floored score rate
    np.testing.assert_allclose(
        by_group.model.predict()[by_group._leaf_of_stratum],
        by_score.model.predict()[by_score._leaf_of_stratum],
        rtol=1e-12,
    )


def _label_run(pool, sampler, budget):
    return sample_labels(pool, sampler, LabelOracle(pool.labels), budget)


def test_census_reproduces_every_measure_exactly():
    pool = tiny_pool(30, seed=4)
    sampler = AISSampler(pool, 3, n_strata=3, epsilon=0.2)
    run = _label_run(pool, sampler, pool.n_pairs)
    assert run.n_labels == pool.n_pairs
    truth = pool.truth()
    est = {e.metric: e for e in estimate_measure(run, f_measures(pool.predicted, [1.0, 2.0]))}
    assert math.isclose(est["pairwise_precision"].value, truth["pairwise_precision"], rel_tol=1e-12)
    assert math.isclose(est["pairwise_recall"].value, truth["pairwise_recall"], rel_tol=1e-12)
    assert math.isclose(est["pairwise_f1"].value, truth["pairwise_f1"], rel_tol=1e-12)
    tp, pp, pos = (
        np.sum(pool.labels * pool.predicted),
        pool.predicted.sum(),
        pool.labels.sum(),
    )
    assert math.isclose(est["pairwise_f2"].value, 5 * tp / (pp + 4 * pos), rel_tol=1e-12)
    for e in est.values():
        assert e.std_error == 0 and e.ci_low == e.ci_high == e.value and e.ci_method == "census"
    curve = pr_curve(pool.scores, [0.2, 0.5, 0.8])
    for e in estimate_measure(run, curve):
        tau = float(e.metric.split("@")[1])
        above = pool.scores >= tau
        denom = above.sum() if "precision" in e.metric else pool.labels.sum()
        assert math.isclose(e.value, np.sum(pool.labels * above) / denom, rel_tol=1e-12)


def test_estimates_match_the_ratio_estimator_and_its_variance():
    from er_evaluation.pairs.estimates import _ais_interval

    pool = tiny_pool(200, seed=7)
    run = _label_run(pool, AISSampler(pool, 0, n_strata=4), 60)
    value, se, _, _ = _ais_interval(run, pool.predicted, [0.5], 1.96, "martingale")
    # the generic ratio path (PR curves, custom measures; f_alphas=None, since the
    # F-measures themselves go through estimate_from_labels): without the oracle model's
    # prior both use the labels-only variance
    generic = replace(f_measures(pool.predicted), f_alphas=None)
    est = estimate_measure(replace(run, stratum_prior=None), generic)
    np.testing.assert_allclose([e.value for e in est], value, rtol=1e-12)
    np.testing.assert_allclose([e.std_error for e in est], se, rtol=1e-9)


def test_interval_is_never_a_point_before_census():
    pool = tiny_pool(50, seed=1)
    n = pool.n_pairs
    # three draws, all predicted matches that are true matches: precision 1, variance 0;
    # the SE is the half-width of Wilson's interval at 1 on the Kish size of the three
    # equal weights, [3 / (3 + z^2), 1], over z (_variance.finish), never 0 off census
    index = np.flatnonzero((pool.predicted == 1) & (pool.labels == 1))[:3]
    run = LabelRun(
        "importance",
        n,
        index,
        pool.labels[index],
        np.full(len(index), 0.5),
        np.full(len(index), -1),
        np.ones(len(index), dtype=bool),
    )
    est = estimate_measure(run, f_measures(pool.predicted))[0]
    z = 1.959963984540054
    assert est.value == 1.0
    assert est.std_error == pytest.approx((1 - 3 / (3 + z * z)) / (2 * z), rel=1e-12)
    assert est.ci_high == 1.0 and est.ci_low < 0.6


def test_pr_curve_closed_forms_match_the_generic_jacobian():
    pool = tiny_pool(40, seed=9)
    curve = pr_curve(pool.scores, 6)
    weights = np.random.default_rng(0).random((7, 2)) + 0.1
    totals = curve.totals(weights)
    np.testing.assert_allclose(totals, weights.reshape(-1) @ curve.table.reshape(-1, 13))
    classes = np.arange(7)
    generic = curve.table[classes] @ curve.jacobian(totals).T
    np.testing.assert_allclose(curve.gradient_terms(totals, classes), generic, atol=1e-12)
    np.testing.assert_allclose(curve.squared_norms(totals), np.sum(generic**2, axis=2))
    assert (curve.nonzero() == np.any(curve.table != 0, axis=2)).all()


def test_pr_curve_from_an_f1_run_tracks_the_true_curve():
    pool = tiny_pool(3000, seed=11)
    curve = pr_curve(pool.scores, [0.3, 0.6, 0.9])
    run = _label_run(pool, AISSampler(pool, 2, n_strata=8), 400)
    est = estimate_measure(run, curve)
    for e in est:
        tau = float(e.metric.split("@")[1])
        above = pool.scores >= tau
        denom = above.sum() if "precision" in e.metric else pool.labels.sum()
        truth = np.sum(pool.labels * above) / denom
        assert e.ci_low - 0.1 <= truth <= e.ci_high + 0.1
        assert 0.0 <= e.ci_low <= e.value <= e.ci_high <= 1.0


def test_custom_measure_with_numerical_jacobian():
    pool = tiny_pool(100, seed=12)
    # accuracy: 1 - mean(1{y != prediction}), classes = prediction
    table = np.array([[[0.0], [1.0]], [[1.0], [0.0]]])
    acc = custom_measure(pool.predicted.astype(int), table, lambda r: 1 - r, ["accuracy"])
    np.testing.assert_allclose(acc.jacobian(np.array([0.3])), [[-1.0]], atol=1e-6)
    run = _label_run(pool, AISSampler(pool, 1, measure=acc, n_strata=3), pool.n_pairs)
    (est,) = estimate_measure(run, acc)
    assert math.isclose(est.value, float(np.mean(pool.labels == pool.predicted)))
    with pytest.raises(ValueError, match="custom measure cannot be written"):
        AISSampler(pool, 1, measure=acc).params()


def test_group_sums_and_bad_inputs():
    pool = tiny_pool(10)
    m = f_measures(pool.predicted)
    sums = group_sums(m, np.array([0, 0, 1]), np.array([1, 1, 1]), np.array([1.0, 2.0, 4.0]))
    assert sums[1, 1] == 3.0 and sums[0, 1] == 4.0
    with pytest.raises(ValueError, match="0/1"):
        f_measures(np.array([0, 2]))
    with pytest.raises(ValueError, match="beta"):
        f_measures(pool.predicted, 0.0)
    with pytest.raises(ValueError, match="strictly increasing"):
        pr_curve(pool.scores, [0.5, 0.2])
    with pytest.raises(ValueError, match="epsilon"):
        AISSampler(pool, epsilon=0.0)
    with pytest.raises(ValueError, match="unknown target"):
        AISSampler(pool, target="accuracy")
    with pytest.raises(ValueError, match="codes"):
        custom_measure(np.array([0, 3]), np.zeros((2, 2, 1)), lambda r: r, ["x"])


def test_observe_checks_the_draw_and_determinism():
    pool = tiny_pool(20)
    sampler = AISSampler(pool, 0, n_strata=2)
    draw = sampler.draw()
    with pytest.raises(ValueError, match="does not answer"):
        sampler.observe(draw.index + 1, 0)
    sampler.observe(draw.index, 1)
    _force(sampler, draw.index)
    with pytest.raises(ValueError, match="deterministic"):
        sampler.observe(draw.index, 0)


def test_incremental_predictive_equals_full_recomputation():
    rng = np.random.default_rng(8)
    parent, leaf = balanced_tree(13, 3)
    tree = DirichletTree(rng.random((2, 13)) * 2, parent, leaf, depth_concentration=0.5)
    for _ in range(40):
        tree.update(int(rng.integers(13)), int(rng.integers(2)))
        lp = tree.log_predictive()
        np.testing.assert_allclose(tree.predict(), 1 / (1 + np.exp(lp[0] - lp[1])), rtol=1e-10)
    many = DirichletTree(np.ones((2, 13)), parent, leaf)
    one = DirichletTree(np.ones((2, 13)), parent, leaf)
    leaves, labels = rng.integers(13, size=30), rng.integers(2, size=30)
    many.update_many(leaves, labels)
    for k, y in zip(leaves, labels, strict=True):
        one.update(int(k), int(y))
    np.testing.assert_allclose(many.predict(), one.predict(), rtol=1e-10)


def test_proposal_norms_fast_path_equals_the_generic_gradient():
    pool = tiny_pool(30, seed=13)
    measure = f_measures(pool.predicted, [1.0, 0.5])
    expected = np.array([[20.0, 1.5], [3.0, 5.5]])
    norms = measure.proposal_norms(expected, pool.n_pairs)
    totals = measure.totals(expected) / pool.n_pairs
    generic = measure.table.reshape(4, 3) @ measure.jacobian(totals).T
    np.testing.assert_allclose(norms, np.sqrt(np.sum(generic**2, axis=1)), rtol=1e-12)
    np.testing.assert_allclose(norms**2, measure.squared_norms(totals).reshape(-1), rtol=1e-12)
    assert measure.proposal_norms(np.array([[5.0, 0.0], [0.0, 0.0]]), pool.n_pairs) is None


def test_pr_curve_table_and_figure():
    from er_evaluation.pairs.measures import pr_curve_table

    pool = tiny_pool(500, seed=14)
    curve = pr_curve(pool.scores, 5)
    run = _label_run(pool, AISSampler(pool, 0, target="pr_curve", n_strata=4), 100)
    table = pr_curve_table(curve, estimate_measure(run, curve))
    assert list(table["threshold"]) == list(curve.thresholds)
    assert (table["precision_low"] <= table["precision"]).all()
    assert (table["recall"] <= table["recall_high"]).all()
    with pytest.raises(ValueError, match="expected 10"):
        pr_curve_table(curve, [])
    from er_evaluation.plots import plot_pr_curve

    truth = pd.DataFrame({"recall": [1.0, 0.5], "precision": [0.3, 0.9]})
    fig = plot_pr_curve(table, truth=truth)
    shown = table.dropna(subset=["precision", "recall"])
    np.testing.assert_allclose(fig.data[0].y, shown["precision"])
    np.testing.assert_allclose(fig.data[0].error_x.array, shown["recall_high"] - shown["recall"])
    assert fig.data[1].name == "truth" and fig.data[0].text[0].startswith("score ≥")
    with pytest.raises(ValueError, match="lacks column"):
        plot_pr_curve(table.drop(columns="recall_low"))
    with pytest.raises(ValueError, match="nothing to plot"):
        plot_pr_curve(table.assign(recall=np.nan))


# -- hooks: make_sampler, sessions, CLI, label reuse ------------------------------------


def test_make_sampler_ais_and_a_resumed_session_replays_bit_identically(tmp_path):
    from er_evaluation.pairs import LabellingSession, make_sampler

    pool = tiny_pool(400, seed=15)
    assert isinstance(make_sampler("ais", pool, 0, n_strata=4), AISSampler)
    with pytest.raises(ValueError, match="no parameter eta"):
        make_sampler("ais", pool, 0, eta=3.0)
    oracle = LabelOracle(pool.labels)
    path = tmp_path / "ais.jsonl"
    with LabellingSession(pool, path, "ais", seed=4, n_strata=4) as session:
        session.run(oracle, 30)
    with LabellingSession(pool, path) as resumed:
        assert resumed.n_labels == 30
        resumed.run(oracle, 60)
        run_resumed = resumed.label_run()
    with LabellingSession(pool, tmp_path / "straight.jsonl", "ais", seed=4, n_strata=4) as s:
        s.run(oracle, 60)
        run_straight = s.label_run()
    np.testing.assert_array_equal(run_resumed.index, run_straight.index)
    np.testing.assert_array_equal(run_resumed.weight, run_straight.weight)


def test_a_log_written_before_the_model_options_resumes_with_its_model(tmp_path):
    from er_evaluation.pairs import LabellingSession

    frame = tiny_pool(300, seed=18).pairs.copy()
    # a prediction that is not a score threshold: the score tree and the prediction tree
    # differ, so resuming with the wrong one would not replay
    frame["predicted"] = (np.arange(len(frame)) % 3 == 0).astype(np.int8)
    pool = PairPool.from_frame(frame, label_col="label")
    oracle = LabelOracle(pool.labels)
    old = {"n_strata": 4, "prior": "scores", "prior_strength": 1.0, "tree": "score"}
    for dropped in (("prior", "counts", "proposal", "tree"), ("tree",)):
        path = tmp_path / f"old{len(dropped)}.jsonl"
        with LabellingSession(pool, path, "ais", seed=3, **old) as session:
            session.run(oracle, 25)
            expected = session.label_run()

        def drop(header, dropped=dropped):
            for key in dropped:
                del header["params"][key]  # as the earlier versions wrote it

        rewrite_as_old_log(path, drop)
        with LabellingSession(pool, path) as resumed:
            assert resumed.sampler.prior == "scores" and resumed.sampler.prior_strength == 1.0
            assert resumed.sampler.tree == "score"
            np.testing.assert_array_equal(resumed.label_run().index, expected.index)


def test_cli_samples_with_ais_and_resumes(tmp_path, capsys):
    from er_evaluation.cli import main
    from er_evaluation.pairs import read_log

    pool = tiny_pool(300, seed=16)
    frame = pool.pairs.copy()
    frame.to_csv(tmp_path / "pool.csv", index=False)
    labels = tmp_path / "labels.jsonl"
    args = ["pairs", "sample", str(tmp_path / "pool.csv"), "--labels", str(labels)]
    args += ["--method", "ais", "--oracle", "column:label", "--format", "json"]
    assert main([*args, "--budget", "40"]) == 0
    capsys.readouterr()
    assert main([*args, "--budget", "70"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["pairwise_f1"]["n_units"] == 70
    header, events = read_log(labels)
    assert header["method"] == "ais" and header["params"]["n_strata"] == 64
    assert all(e["label"] == pool.labels[e["pool_index"]] for e in events)


def test_continue_sampling_with_ais_reuses_labels():
    from er_evaluation.pairs import continue_sampling
    from er_evaluation.pairs.oracles import CountingOracle

    pool = tiny_pool(2000, seed=17)
    pool_b = pool.with_prediction((pool.scores > 0.3).astype(int))
    first = _label_run(pool, AISSampler(pool, 0, n_strata=8), 150)
    oracle = CountingOracle(LabelOracle(pool.labels))
    pooled = continue_sampling(pool_b, first, oracle, 50, seed=1, method="ais", n_strata=8)
    assert pooled.method == "ais+reuse"
    assert pooled.n_labels == 200 and len(set(oracle.asked)) == 50
    assert not set(oracle.asked) & set(first.index.tolist())  # A's labels cost nothing
    (est,) = [e for e in estimate_measure(pooled, f_measures(pool_b.predicted)) if "f1" in e.metric]
    truth = pool_b.truth()["pairwise_f1"]
    assert est.ci_low - 0.1 <= truth <= est.ci_high + 0.1
    with pytest.raises(ValueError, match="adaptive sampler"):
        continue_sampling(pool_b, first, oracle, 5, method="passive")


@pytest.mark.parametrize("tree", ["prediction", "score"])
def test_reused_ais_labels_give_unbiased_totals_for_another_prediction_exhaustive(tree):
    """Label reuse (Marchant & Rubinstein 2021 §3.3.1): an AIS run for prediction A, then an
    AIS sampler for B warm-started with A's draws and weights (as ``continue_sampling``
    does) draws more; with every draw's own weight p/q_t the pooled weighted totals of B's
    measure are exactly unbiased, over every path of A's 2 draws and B's 2 draws."""
    pool = tiny_pool(5)
    pool_b = pool.with_prediction(np.array([1, 0, 0, 1, 1]))
    measure_b = f_measures(pool_b.predicted)
    labels = pool.labels
    options = {"n_strata": 2, "epsilon": 0.05, "tree": tree}

    def over_a(s, depth, index, weight):
        if depth == 0:
            b = AISSampler(pool_b, 1, **options)
            b.warm_start(np.array(index), labels[np.array(index)], np.array(weight))
            done = sum(
                w * measure_b.table[measure_b.codes[i], labels[i]]
                for i, w in zip(index, weight, strict=True)
            )
            return done + 2 * _expected_totals(b, labels, measure_b, 2)
        q = 1.0 / (s.n_pairs * s.current_weights(np.arange(s.n_pairs)))
        out = np.zeros(measure_b.table.shape[2])
        for x in range(s.n_pairs):
            child = copy.deepcopy(s)
            draw = _force(child, x)
            child.observe(x, int(labels[x]))
            out += q[x] * over_a(child, depth - 1, [*index, x], [*weight, draw.weight])
        return out

    expected = over_a(AISSampler(pool, 0, **options), 2, [], []) / 4
    truth = measure_b.table[measure_b.codes, labels].mean(axis=0)
    np.testing.assert_allclose(expected, truth, rtol=1e-10, atol=1e-12)
