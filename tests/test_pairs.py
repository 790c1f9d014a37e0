"""Pair pools, strata, samplers, estimates and label reuse (er_evaluation.pairs)."""

from __future__ import annotations

import copy
import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from _helpers import synthetic_pool
from hypothesis import given, settings
from hypothesis import strategies as st

from er_evaluation.errors import UndefinedMetricWarning
from er_evaluation.pairs import (
    METHODS,
    CallableOracle,
    LabelOracle,
    LabelRun,
    OASISSampler,
    PairPool,
    PoolError,
    continue_sampling,
    estimate_from_labels,
    estimate_history,
    field_similarity_score,
    labels_needed,
    make_sampler,
    oracle_from_reference,
    pool_from_blocks,
    reuse_estimate,
    sample_labels,
    stratify,
)
from er_evaluation.pairs.oracles import CountingOracle
from er_evaluation.pairs.reuse import as_importance_run
from er_evaluation.pairs.samplers import score_probabilities, target_weight


def tiny_pool() -> PairPool:
    frame = pd.DataFrame(
        {
            "id_left": list("abcdefgh"),
            "id_right": list("ijklmnop"),
            "score": [3.0, 2.0, 1.5, 0.2, -0.5, -1.0, -2.0, -3.0],
            "predicted": [1, 1, 1, 0, 0, 0, 0, 0],
            "label": [1, 0, 1, 1, 0, 0, 1, 0],
        }
    )
    return PairPool.from_frame(frame, label_col="label")


# --- pools ----------------------------------------------------------------------------


def test_pool_from_frame_and_truth_hand_computed():
    pool = tiny_pool()
    assert pool.n_pairs == 8
    truth = pool.truth()
    # TP = 2 (rows 0, 2), predicted = 3, true = 4
    assert truth["pairwise_precision"] == pytest.approx(2 / 3)
    assert truth["pairwise_recall"] == pytest.approx(2 / 4)
    assert truth["pairwise_f1"] == pytest.approx(2 / (0.5 * 3 + 0.5 * 4))


def test_pool_prediction_from_clustering_matches_brute_force():
    frame = pd.DataFrame(
        {
            "id_left": [1, 1, 2, 4, 5],
            "id_right": [2, 3, 3, 5, 6],
            "score": [0.9, 0.1, 0.4, 0.8, 0.3],
        }
    )
    clustering = pd.Series({1: "A", 2: "A", 3: "B", 4: "C", 5: "C", 6: "C"})
    pool = PairPool.from_frame(frame, predicted_col=None, prediction=clustering)
    expected = [
        int(clustering[a] == clustering[b])
        for a, b in zip(frame.id_left, frame.id_right, strict=False)
    ]
    assert pool.predicted.tolist() == expected


@pytest.mark.parametrize(
    ("frame", "kwargs", "message"),
    [
        (
            pd.DataFrame(
                {"id_left": [1, 2], "id_right": [2, 2], "score": [0.1, 0.2], "predicted": [0, 1]}
            ),
            {},
            "self-pairs.*rows 1",
        ),
        (
            pd.DataFrame(
                {
                    "id_left": [1, 3, 2],
                    "id_right": [2, 4, 1],
                    "score": [0.1, 0.2, 0.3],
                    "predicted": [0, 1, 0],
                }
            ),
            {},
            r"repeat a pair.*rows 0, 2.*\(1, 2\)",
        ),
        (
            pd.DataFrame(
                {"id_left": [1, 3], "id_right": [2, 4], "score": [0.1, np.nan], "predicted": [0, 1]}
            ),
            {},
            "non-finite scores.*rows 1",
        ),
        (
            pd.DataFrame(
                {"id_left": [1, 3], "id_right": [2, 4], "score": [0.1, np.inf], "predicted": [0, 1]}
            ),
            {},
            "non-finite",
        ),
        (
            pd.DataFrame(
                {"id_left": [1, 3], "id_right": [2, 4], "score": [0.1, 0.2], "predicted": [0, 2]}
            ),
            {},
            "'predicted' must be 0/1; rows 1",
        ),
        (
            pd.DataFrame(
                {"id_left": [1, 3], "id_right": [2, 9], "score": [0.1, 0.2], "predicted": [0, 1]}
            ),
            {"records": [1, 2, 3, 4]},
            "not among the records: 9",
        ),
        (
            pd.DataFrame(
                {"id_left": [1, None], "id_right": [2, 4], "score": [0.1, 0.2], "predicted": [0, 1]}
            ),
            {},
            "missing id_left: rows 1",
        ),
        (
            pd.DataFrame({"id_left": [1, 3], "id_right": [2, 4], "score": [0.1, 0.2]}),
            {},
            "column 'predicted' not found",
        ),
    ],
)
def test_pool_validation_errors_name_the_problem(frame, kwargs, message):
    with pytest.raises(PoolError, match=message):
        PairPool.from_frame(frame, **kwargs)


def test_pool_unknown_ids_in_clustering_are_named():
    frame = pd.DataFrame({"id_left": [1, 2], "id_right": [2, 7], "score": [0.1, 0.2]})
    with pytest.raises(PoolError, match="not in the predicted clustering: 7"):
        PairPool.from_frame(frame, predicted_col=None, prediction=pd.Series({1: 0, 2: 0}))


def test_pool_from_blocks_equals_brute_force():
    records = pd.DataFrame(
        {"block": ["x", "y", "x", "x", "z", "y"]},
        index=pd.Index(["r1", "r2", "r3", "r4", "r5", "r6"]),
    )
    pairs = pool_from_blocks(records, "block")
    got = {frozenset(p) for p in zip(pairs.id_left, pairs.id_right, strict=False)}
    expected = {
        frozenset((a, b))
        for a, b in itertools.combinations(records.index, 2)
        if records.block[a] == records.block[b]
    }
    assert got == expected and len(pairs) == len(expected)
    assert (pairs.block.to_numpy() == records.block.loc[pairs.id_left].to_numpy()).all()


def test_pool_from_blocks_missing_block_is_an_error():
    records = pd.DataFrame({"block": ["x", None]}, index=["r1", "r2"])
    with pytest.raises(PoolError, match="no 'block' value: 'r2'"):
        pool_from_blocks(records, "block")


def test_field_similarity_matches_python_jaccard():
    records = pd.DataFrame(
        {
            "name": ["John A Smith", "john smith", "Jane Doe", None, "doe jane jane"],
            "year": [1990, 1990, 1985, 1985, np.nan],
        },
        index=["a", "b", "c", "d", "e"],
    )
    pairs = pd.DataFrame(
        {"id_left": ["a", "a", "c", "d", "c"], "id_right": ["b", "c", "e", "c", "d"]}
    )
    got = field_similarity_score(records, pairs, ["name", "year"])

    def jac(x, y):
        if pd.isna(x) or pd.isna(y):
            return 0.0
        sx, sy = set(x.lower().split()), set(y.lower().split())
        return len(sx & sy) / len(sx | sy)

    expected = []
    for a, b in zip(pairs.id_left, pairs.id_right, strict=False):
        name = jac(records.name[a], records.name[b])
        ya, yb = records.year[a], records.year[b]
        year = float(not (pd.isna(ya) or pd.isna(yb)) and ya == yb)
        expected.append((name + year) / 2)
    np.testing.assert_allclose(got, expected)


# --- strata ---------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    scores=st.lists(st.floats(-5, 5, allow_nan=False), min_size=1, max_size=200),
    flips=st.lists(st.booleans(), min_size=200, max_size=200),
    k=st.integers(1, 12),
)
def test_strata_partition_pool_and_never_mix_predictions(scores, flips, k):
    scores = np.array(scores)
    predicted = np.array(flips[: len(scores)], dtype=np.int8)
    strata = stratify(scores, predicted, k)
    assert strata.sizes.min() > 0 and strata.sizes.sum() == len(scores)
    assert sorted(strata.order.tolist()) == list(range(len(scores)))
    for j in range(strata.n_strata):
        members = strata.members(j)
        assert (strata.codes[members] == j).all()
        assert set(predicted[members].tolist()) == {int(strata.predicted[j])}
        assert strata.mean_score[j] == pytest.approx(scores[members].mean())
    # at most k strata per prediction group; within a group, strata are score intervals
    assert strata.n_strata <= 2 * k
    for flag in (0, 1):
        groups = [strata.members(j) for j in range(strata.n_strata) if strata.predicted[j] == flag]
        for a, b in zip(groups, groups[1:], strict=False):
            assert scores[a].max() <= scores[b].min()


def test_csf_puts_many_strata_where_scores_are_dense():
    rng = np.random.default_rng(1)
    scores = np.concatenate([rng.normal(0, 1, 5000), rng.normal(6, 0.1, 20)])
    strata = stratify(scores, np.zeros(len(scores)), 10)
    assert 5 <= strata.n_strata <= 10
    assert strata.sizes[-1] < 200  # the sparse high-score tail gets its own small stratum


# --- importance weights are exact ------------------------------------------------------


def _pool_probability(sampler, n):
    """q(z) for every pair under the sampler's current proposal, from its public weights."""
    return 1.0 / (n * sampler.current_weights(np.arange(n)))


def _independent_oasis_q(pool, sampler):
    """The OASIS proposal recomputed independently from Marchant & Rubinstein 2017 (eq. 12), per pair."""
    strata = sampler.strata
    pi = sampler.posterior_mean()
    omega = strata.sizes / pool.n_pairs
    lam = strata.predicted.astype(float)
    a, f = target_weight(sampler.target, sampler.beta), sampler.f_hat
    vstar = omega * (
        (1 - a) * (1 - lam) * f * np.sqrt(pi)
        + lam * np.sqrt((a * f) ** 2 * (1 - pi) + (1 - f) ** 2 * pi)
    )
    v = sampler.epsilon * omega + (1 - sampler.epsilon) * vstar / vstar.sum()
    return v[strata.codes] / strata.sizes[strata.codes]


def test_oasis_draw_probabilities_and_weights_are_exact():
    pool = tiny_pool()
    sampler = OASISSampler(pool, seed=3, n_strata=2, epsilon=0.1)
    q = _independent_oasis_q(pool, sampler)
    assert q.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(_pool_probability(sampler, pool.n_pairs), q)
    counts = np.zeros(pool.n_pairs)
    for _ in range(20000):
        d = sampler.draw()
        assert d.prob == pytest.approx(q[d.index])
        assert d.weight == pytest.approx(1 / (pool.n_pairs * q[d.index]))
        counts[d.index] += 1
    # empirical frequencies agree with q within 5 binomial standard errors
    se = np.sqrt(q * (1 - q) / 20000)
    assert np.all(np.abs(counts / 20000 - q) <= 5 * se + 1e-12)


@pytest.mark.parametrize("method", ["oasis", "importance"])
def test_weighted_totals_exactly_unbiased_over_all_two_draw_outcomes(method):
    """Brute force: enumerate every (z1, z2) with its probability q1(z1) q2(z2 | z1) (the
    proposal adapts after z1's label) and check E[(w1 f(z1) + w2 f(z2)) / 2] = mean f. A
    stratum that z1 completes leaves OASIS's proposal (q2 = 0 there): the second draw's
    term then adds its known share, sum of f over the stratum / N."""
    pool = tiny_pool()
    n = pool.n_pairs
    labels, pred = pool.labels, pool.predicted
    params = {"n_strata": 3, "epsilon": 0.05} if method == "oasis" else {"epsilon": 0.05}
    sampler = make_sampler(method, pool, 0, **params)
    q1 = _pool_probability(sampler, n)
    targets = {"tp": labels * pred, "pp": pred, "ap": labels}
    expected = {k: np.zeros(()) for k in targets}
    for z1 in range(n):
        second = copy.deepcopy(sampler)
        if method == "oasis":
            k = int(second.strata.codes[z1])
            second._last = type(second.draw())(z1, k, q1[z1], 1 / (n * q1[z1]))
        second.observe(z1, int(labels[z1]))
        q2 = _pool_probability(second, n)
        assert q2.sum() == pytest.approx(1.0)
        completed = np.zeros(n, dtype=bool)
        if method == "oasis":
            completed = q2 == 0  # only the stratum z1 completed can leave the proposal
            assert not completed.any() or np.array_equal(completed, second.strata.codes == k)
        for name, f in targets.items():
            known = float(np.sum(f[completed])) / n
            for z2 in np.flatnonzero(~completed):
                est = (f[z1] / (n * q1[z1]) + f[z2] / (n * q2[z2]) + known) / 2
                expected[name] = expected[name] + q1[z1] * q2[z2] * est
    for name, f in targets.items():
        assert float(expected[name]) == pytest.approx(f.mean(), rel=1e-12)


def test_score_probabilities_logistic_only_when_needed():
    np.testing.assert_allclose(score_probabilities(np.array([0.0, 0.5, 1.0])), [0.0, 0.5, 1.0])
    np.testing.assert_allclose(
        score_probabilities(np.array([-1.0, 0.0, 2.0])),
        1 / (1 + np.exp(-np.array([-1.0, 0.0, 2.0]))),
    )


# --- runs, cache, consistency ----------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_label_cache_never_asks_twice(method):
    pool = synthetic_pool(n=60, rate=0.2, seed=2)
    oracle = CountingOracle(LabelOracle(pool.labels))
    run = sample_labels(
        pool,
        make_sampler(
            method, pool, 5, **({"n_strata": 4} if method in ("oasis", "stratified") else {})
        ),
        oracle,
        50,
    )
    assert len(oracle.asked) == len(set(oracle.asked)) == run.n_labels == 50
    assert set(oracle.asked) == set(run.index[run.new_label].tolist())
    # every draw carries the true label of its pair
    assert (run.label == pool.labels[run.index]).all()


@pytest.mark.parametrize("method", ["passive", "stratified"])
def test_census_without_replacement_is_exact(method):
    pool = synthetic_pool(n=300, rate=0.1, seed=4)
    run = sample_labels(pool, make_sampler(method, pool, 1), LabelOracle(pool.labels), pool.n_pairs)
    assert run.n_labels == pool.n_pairs
    result = estimate_from_labels(run, pool.predicted)
    truth = pool.truth()
    assert result.precision.value == pytest.approx(truth["pairwise_precision"])
    assert result.recall.value == pytest.approx(truth["pairwise_recall"])
    assert result.f[0].value == pytest.approx(truth["pairwise_f1"])
    assert result.f[0].std_error == pytest.approx(0.0, abs=1e-9)  # finite-population correction


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_each_sampler_converges_to_the_truth(method):
    pool = synthetic_pool(n=3000, rate=0.03, seed=7)
    truth = pool.truth()
    errors = {}
    for budget in (100, 1000):
        errs = []
        for seed in range(8):
            run = sample_labels(
                pool, make_sampler(method, pool, seed), LabelOracle(pool.labels), budget
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UndefinedMetricWarning)
                f = estimate_from_labels(run, pool.predicted).f[0].value
            errs.append((0.0 if math.isnan(f) else f) - truth["pairwise_f1"])
        errors[budget] = float(np.mean(np.square(errs)))
    assert errors[1000] < errors[100]
    assert errors[1000] < 0.004


def test_budget_stops_before_the_next_new_label_and_keeps_free_repeats():
    pool = synthetic_pool(n=50, rate=0.3, seed=1)
    run = sample_labels(
        pool, make_sampler("oasis", pool, 0, n_strata=3), LabelOracle(pool.labels), 20
    )
    assert run.n_labels == 20 and run.new_label.sum() == 20
    assert run.n_draws >= 20


# --- estimates ------------------------------------------------------------------------


def test_estimate_hand_computed_weighted_case():
    # 4 draws on a pool of 100: pairs 0..3, weights 2, 1, 0.5, 1; 40 unlabelled predicted
    # matches (10..49) so that what the labels allow does not cut the intervals
    predicted = np.zeros(100, dtype=int)
    predicted[[0, 1]] = 1
    predicted[10:50] = 1
    run = LabelRun(
        design="importance",
        pool_size=100,
        index=np.array([0, 1, 2, 3]),
        label=np.array([1, 0, 1, 0]),
        weight=np.array([2.0, 1.0, 0.5, 1.0]),
        stratum=np.full(4, -1),
        new_label=np.ones(4, dtype=bool),
    )
    result = estimate_from_labels(run, predicted, beta=[1, 2])
    # sum w a = 2, sum w lhat = 3, sum w l = 2.5
    assert result.precision.value == pytest.approx(2 / 3)
    assert result.recall.value == pytest.approx(2 / 2.5)
    assert result.f[0].value == pytest.approx(2 / (0.5 * 3 + 0.5 * 2.5))
    assert result.f[1].value == pytest.approx(2 / (0.2 * 3 + 0.8 * 2.5))
    # SE^2 = sum w^2 (a - F b)^2 / (sum w b)^2
    w = run.weight
    a = np.array([1, 0, 0, 0.0])
    lh = np.array([1, 1, 0, 0.0])
    lab = np.array([1, 0, 1, 0.0])
    for est, alpha in [(result.precision, 1.0), (result.recall, 0.0), (result.f[0], 0.5)]:
        b = alpha * lh + (1 - alpha) * lab
        var = np.sum(w**2 * (a - est.value * b) ** 2) / np.sum(w * b) ** 2
        assert est.std_error == pytest.approx(np.sqrt(var))
        # Wilson score interval on n* = F (1 - F) / Var
        n, z = est.value * (1 - est.value) / var, 1.959963984540054
        centre = (est.value + z * z / (2 * n)) / (1 + z * z / n)
        half = z / (1 + z * z / n) * np.sqrt(est.value * (1 - est.value) / n + z * z / (4 * n * n))
        assert (est.ci_low, est.ci_high) == pytest.approx((centre - half, centre + half))
    assert result.to_frame()["metric"].tolist() == [
        "pairwise_precision",
        "pairwise_recall",
        "pairwise_f1",
        "pairwise_f2",
    ]


def test_history_rows_equal_estimates_on_prefixes():
    pool = synthetic_pool(n=800, rate=0.05, seed=5)
    for method in METHODS:
        run = sample_labels(pool, make_sampler(method, pool, 3), LabelOracle(pool.labels), 200)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            hist = estimate_history(run, pool.predicted, at=[50, 120, 200])
            result = estimate_from_labels(run, pool.predicted)
            assert hist.n_labels.tolist() == [50, 120, 200]
            assert hist.n_draws.iloc[-1] == run.n_draws
            assert hist["pairwise_f1"].iloc[-1] == pytest.approx(result.f[0].value, nan_ok=True)
            assert hist["pairwise_recall_se"].iloc[-1] == pytest.approx(
                result.recall.std_error, nan_ok=True
            )
            # each row is the estimate from the draws made up to that point
            k = int(hist.n_draws.iloc[0])
            early = estimate_from_labels(run.prefix(k), pool.predicted)
            assert hist["pairwise_precision"].iloc[0] == pytest.approx(
                early.precision.value, nan_ok=True
            )
            assert hist["pairwise_precision_low"].iloc[0] == pytest.approx(
                early.precision.ci_low, nan_ok=True
            )


def test_undefined_precision_warns_and_is_nan():
    predicted = np.zeros(5, dtype=int)
    run = LabelRun(
        "passive",
        5,
        np.array([0, 1]),
        np.array([1, 0]),
        np.ones(2),
        np.full(2, -1),
        np.ones(2, bool),
    )
    with pytest.warns(UndefinedMetricWarning, match="precision is undefined"):
        result = estimate_from_labels(run, predicted)
    assert math.isnan(result.precision.value) and math.isnan(result.precision.ci_low)
    assert result.recall.value == 0.0


def test_bad_beta_and_prediction_shape_are_errors():
    pool = tiny_pool()
    run = sample_labels(pool, make_sampler("passive", pool, 0), LabelOracle(pool.labels), 4)
    for beta in (-1.0, 0.0, math.inf, [], [1, -2]):
        with pytest.raises(ValueError, match="beta must"):
            estimate_from_labels(run, pool.predicted, beta=beta)
    with pytest.raises(ValueError, match="one 0/1 value per pool pair"):
        estimate_from_labels(run, pool.predicted[:3])


def test_oracle_from_reference_and_unknown_ids():
    frame = pd.DataFrame(
        {"id_left": [1, 2], "id_right": [2, 3], "score": [0.5, 0.1], "predicted": [1, 0]}
    )
    pool = PairPool.from_frame(frame)
    oracle = oracle_from_reference(pool, pd.Series({1: "x", 2: "x", 3: "y"}))
    assert [oracle(0), oracle(1)] == [1, 0]
    with pytest.raises(PoolError, match="reference clustering: 3"):
        oracle_from_reference(pool, pd.Series({1: "x", 2: "x"}))


# --- reuse ----------------------------------------------------------------------------


@pytest.mark.slow
def test_reused_labels_estimate_another_prediction_without_bias():
    """Monte Carlo: OASIS runs tuned for prediction A; their weighted totals for prediction
    B average to B's true totals within 4 Monte-Carlo standard errors."""
    pool = synthetic_pool(n=1500, rate=0.04, seed=11)
    rng = np.random.default_rng(0)
    predicted_b = np.where(rng.random(pool.n_pairs) < 0.03, 1 - pool.predicted, pool.predicted)
    tp_b = np.sum(pool.labels * predicted_b)
    totals, f_values = [], []
    for seed in range(150):
        run = sample_labels(
            pool, make_sampler("oasis", pool, seed, n_strata=6), LabelOracle(pool.labels), 60
        )
        lh = predicted_b[run.index]
        totals.append(pool.n_pairs * np.mean(run.weight * run.label * lh))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            f_values.append(reuse_estimate(run, predicted_b).f[0].value)
    totals = np.array(totals)
    assert abs(totals.mean() - tp_b) <= 4 * totals.std(ddof=1) / np.sqrt(len(totals))
    f_true = pool.with_prediction(predicted_b).truth()["pairwise_f1"]
    assert abs(np.nanmean(f_values) - f_true) < 0.05


def test_continue_sampling_pays_only_for_new_labels():
    pool = synthetic_pool(n=2000, rate=0.05, seed=12)
    predicted_b = (pool.scores > 0.0).astype(int)
    pool_b = pool.with_prediction(predicted_b)
    first = sample_labels(pool, make_sampler("oasis", pool, 1), LabelOracle(pool.labels), 300)
    oracle = CountingOracle(LabelOracle(pool.labels))
    combined = continue_sampling(pool_b, first, oracle, 100, seed=2)
    asked = set(oracle.asked)
    assert len(oracle.asked) == len(asked) == 100
    assert not asked & set(first.index.tolist())  # nothing A labelled is asked again
    assert combined.n_labels == 400 and combined.n_draws >= first.n_draws + 100
    result = estimate_from_labels(combined, predicted_b)
    truth = pool_b.truth()
    assert abs(result.f[0].value - truth["pairwise_f1"]) <= 4 * result.f[0].std_error + 0.02


def test_as_importance_run_stratified_weights_average_to_one():
    pool = synthetic_pool(n=600, rate=0.1, seed=13)
    run = sample_labels(
        pool, make_sampler("stratified", pool, 0, n_strata=5), LabelOracle(pool.labels), 200
    )
    converted = as_importance_run(run)
    # weights p/q with sum_j w_j / n = sum_k omega_k = 1, and estimates unchanged
    assert converted.weight.mean() == pytest.approx(1.0)
    a = estimate_from_labels(run, pool.predicted).f[0].value
    b = estimate_from_labels(converted, pool.predicted).f[0].value
    assert a == pytest.approx(b)


def test_labels_needed_scales_as_one_over_n():
    pool = synthetic_pool(n=800, rate=0.1, seed=3)
    run = sample_labels(pool, make_sampler("passive", pool, 0), LabelOracle(pool.labels), 100)
    est = estimate_from_labels(run, pool.predicted).recall
    assert labels_needed(est, est.std_error * 2) == 0
    assert labels_needed(est, est.std_error / 2) == 300  # 4x the labels to halve the SE
    with pytest.raises(ValueError, match="target_std_error"):
        labels_needed(est, 0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=1, max_size=15))
def test_pool_validation_agrees_with_brute_force(pairs):
    frame = pd.DataFrame(pairs, columns=["id_left", "id_right"]).assign(score=0.5, predicted=0)
    has_self = any(a == b for a, b in pairs)
    keys = [frozenset(p) for p in pairs]
    has_dup = len(set(keys)) < len(keys)
    if has_self:
        with pytest.raises(PoolError, match="self-pairs"):
            PairPool.from_frame(frame)
    elif has_dup:
        with pytest.raises(PoolError, match="repeat a pair"):
            PairPool.from_frame(frame)
    else:
        assert PairPool.from_frame(frame).n_pairs == len(pairs)


def test_field_similarity_rejects_duplicate_and_unknown_records():
    records = pd.DataFrame({"name": ["a", "b", "c"]}, index=["x", "x", "y"])
    pairs = pd.DataFrame({"id_left": ["x"], "id_right": ["y"]})
    with pytest.raises(PoolError, match="duplicate ids: 'x'"):
        field_similarity_score(records, pairs, ["name"])
    records = pd.DataFrame({"name": ["a", "b"]}, index=["x", "y"])
    with pytest.raises(PoolError, match="absent from records: 'z'"):
        field_similarity_score(
            records, pd.DataFrame({"id_left": ["x"], "id_right": ["z"]}), ["name"]
        )


@pytest.mark.parametrize(
    ("name", "n_pairs", "n_matches", "truth"),
    [
        ("abt-buy", 53_753, 50, (0.917, 0.440, 0.595)),
        ("dblp-acm", 53_946, 20, (1.000, 0.900, 0.947)),
        ("restaurant", 134_938, 42, (0.925, 0.881, 0.902)),
    ],
)
def test_bundled_pools_match_their_provenance(name, n_pairs, n_matches, truth):
    from er_evaluation.datasets import load_pool

    pool = load_pool(name)
    assert pool.n_pairs == n_pairs and int(pool.labels.sum()) == n_matches
    got = pool.truth()
    assert (
        round(got["pairwise_precision"], 3),
        round(got["pairwise_recall"], 3),
        round(got["pairwise_f1"], 3),
    ) == truth
    assert pool.scores.min() >= 0 and pool.scores.max() <= 1  # calibrated probabilities
    assert load_pool(name, score="score").scores.min() < 0  # SVM margins
    with pytest.raises(ValueError, match="unknown pool 'nope'"):
        load_pool("nope")


def test_with_prediction_validates():
    pool = tiny_pool()
    with pytest.raises(PoolError, match="one value per pair"):
        pool.with_prediction(np.array([0, 1]))
    with pytest.raises(PoolError, match="must be 0/1"):
        pool.with_prediction(np.full(pool.n_pairs, 3))
    assert pool.with_prediction(np.ones(pool.n_pairs)).predicted.sum() == pool.n_pairs


def test_callable_oracle_and_unsure_answers_in_runs():
    pool = tiny_pool()
    truth = dict(zip(pool.pairs.id_left, pool.labels, strict=True))

    def person(left, right):
        if left == "c":
            return None  # unsure: never a label
        return bool(truth[left])  # an oracle answers True/False or 1/0, never words

    oracle = CountingOracle(CallableOracle(pool, person))
    run = sample_labels(pool, make_sampler("passive", pool, 0), oracle, 8)
    unsure_row = 2
    assert unsure_row in oracle.asked and unsure_row not in run.index.tolist()
    assert run.n_labels == 7 and (run.label == pool.labels[run.index]).all()


@pytest.mark.parametrize("pool_name", ["abt-buy", "dblp-acm", "restaurant"])
def test_stratified_baseline_is_defined_from_two_labels_on_the_bundled_pools(pool_name):
    # seeding the largest strata first left the
    # small predicted-match strata unlabelled below K labels, so every metric was NaN
    from er_evaluation.datasets import load_pool

    pool = load_pool(pool_name)
    for seed in range(3):
        run = sample_labels(
            pool, make_sampler("stratified", pool, seed), LabelOracle(pool.labels), 2
        )
        assert sorted(pool.predicted[run.index]) == [0, 1]
        est = estimate_from_labels(run, pool.predicted)
        for e in (est.precision, est.recall, *est.f):
            assert math.isfinite(e.value) and e.ci_low < e.ci_high


@pytest.mark.parametrize("method", sorted(METHODS))
@pytest.mark.parametrize("seed", [-1, 1.5, "a", True])
def test_sampler_seed_must_be_a_whole_number(method, seed):
    with pytest.raises(ValueError, match="seed must be None or a whole number >= 0"):
        make_sampler(method, tiny_pool(), seed)
