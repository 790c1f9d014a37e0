"""OASIS on strata that hold both predictions (Marchant & Rubinstein 2017, §5-6: CSF strata
over the whole pool, lambda_k = the stratum's share of predicted matches)."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import pool_of

from er_evaluation.datasets import load_pool
from er_evaluation.pairs import (
    LabelOracle,
    OASISSampler,
    estimate_from_labels,
    sample_labels,
    stratify,
)
from er_evaluation.pairs._stratify import csf_edges
from er_evaluation.pairs.samplers import Draw


def test_whole_pool_strata_hand_computed():
    scores = np.array([0.0, 0.0, 0.0, 0.0, 0.1, 0.5, 0.9, 1.0])
    predicted = np.array([0, 0, 0, 0, 0, 1, 0, 1])
    edges = csf_edges(scores, 3)
    strata = stratify(scores, predicted, 3, by_prediction=False)
    # one set of cuts over all scores, whatever the predictions
    np.testing.assert_array_equal(strata.codes, np.searchsorted(edges, scores, side="right"))
    shares = np.bincount(strata.codes, weights=predicted) / strata.sizes
    np.testing.assert_allclose(strata.lam, shares)
    np.testing.assert_array_equal(strata.predicted, (shares >= 0.5).astype(np.int8))
    assert strata.mixed
    # per prediction group (the default) no stratum mixes predictions
    split = stratify(scores, predicted, 3)
    assert not split.mixed and split.prediction_share is None
    np.testing.assert_array_equal(split.lam, split.predicted)


def test_mixed_proposal_and_f_update_hand_computed():
    # stratum 0: pairs 0-3 (one predicted match), stratum 1: pairs 4-5 (both predicted)
    labels = np.array([0, 0, 1, 0, 1, 0])
    predicted = np.array([0, 0, 0, 1, 1, 1])
    scores = np.array([0.1, 0.1, 0.1, 0.1, 0.9, 0.9])
    pool = pool_of(labels, predicted, scores=scores)
    strata = stratify(scores, predicted, 2, by_prediction=False)
    np.testing.assert_array_equal(strata.sizes, [4, 2])
    np.testing.assert_allclose(strata.lam, [0.25, 1.0])
    eps, eta = 0.1, 2.0
    sampler = OASISSampler(pool, 0, strata=strata, eta=eta, epsilon=eps)
    omega = np.array([4, 2]) / 6
    lam = np.array([0.25, 1.0])
    pi0 = np.array([0.1, 0.9])
    # initial F (Algorithm 2, line 8): sum |P_k| pi lam / (a sum |P_k| lam + (1-a) sum |P_k| pi)
    tp = 4 * 0.1 * 0.25 + 2 * 0.9
    f0 = tp / (0.5 * (4 * 0.25 + 2) + 0.5 * (4 * 0.1 + 2 * 0.9))
    assert sampler.f_hat == pytest.approx(f0)

    def proposal(f, pi):
        inner = lam * (0.25 * f * f * (1 - pi) + (1 - f) ** 2 * pi) + (1 - lam) * 0.25 * f * f * pi
        opt = omega * np.sqrt(inner)
        return eps * omega + (1 - eps) * opt / opt.sum()

    np.testing.assert_allclose(sampler._v, proposal(f0, pi0), rtol=1e-12)
    # a draw of pair 3 (stratum 0, predicted match, a non-match): lhat is the pair's own
    # prediction, not the stratum's share
    v = sampler._v
    sampler._last = Draw(3, 0, v[0] / 4, float(omega[0] / v[0]))
    sampler.observe(3, 0)
    w = omega[0] / v[0]
    assert sampler._sums.tolist() == pytest.approx([0.0, w, 0.0])
    assert sampler.f_hat == 0.0
    pi = (np.array([0, 0]) + eta * pi0) / (np.array([1, 0]) + eta)
    np.testing.assert_allclose(sampler._v, proposal(0.0, pi), rtol=1e-12)


def test_split_strata_keep_the_former_proposal_bit_for_bit():
    """Strata of one prediction each give the former sum-of-square-roots proposal, so logs
    written before mixed strata existed replay the same draws."""
    pool = load_pool("abt-buy")
    a = OASISSampler(pool, 3)
    b = OASISSampler(pool, 3, by_prediction=True)
    assert not a.strata.mixed and a.params()["by_prediction"] is True
    run_a = sample_labels(pool, a, LabelOracle(pool.labels), 200)
    run_b = sample_labels(pool, b, LabelOracle(pool.labels), 200)
    np.testing.assert_array_equal(run_a.index, run_b.index)
    np.testing.assert_array_equal(run_a.weight, run_b.weight)


def test_whole_pool_strata_census_is_exact():
    labels = np.array([0, 1, 0, 1, 1, 0, 0, 1, 0, 0])
    predicted = np.array([0, 0, 1, 1, 1, 0, 1, 0, 0, 1])
    pool = pool_of(labels, predicted)
    # uncut strata: the default cap (a thirtieth of 10 pairs) would leave one pair per stratum
    sampler = OASISSampler(pool, 2, n_strata=3, epsilon=0.3, by_prediction=False, max_share=None)
    assert sampler.strata.mixed
    run = sample_labels(pool, sampler, LabelOracle(pool.labels), pool.n_pairs)
    result = estimate_from_labels(run, pool.predicted)
    truth = pool.truth()
    assert result.f[0].value == pytest.approx(truth["pairwise_f1"], abs=1e-12)
    assert result.recall.value == pytest.approx(truth["pairwise_recall"], abs=1e-12)
    assert result.f[0].ci_method == "census"


def test_by_prediction_must_be_a_bool():
    pool = pool_of([0, 1, 0], [0, 1, 1])
    with pytest.raises(ValueError, match="by_prediction"):
        OASISSampler(pool, 0, by_prediction="no")
