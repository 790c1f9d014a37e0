"""OASIS estimates that use the labels of completely labelled strata (issue 10, items 3 and
4): from the draw on which a stratum x prediction cell has every pair labelled, its
matches are known, and each later draw's term for it is replaced by that known value."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from _helpers import pool_of, two_strata

from er_evaluation.pairs import OASISSampler
from er_evaluation.pairs._remainder import _substituted_sums, cell_codes
from er_evaluation.pairs.samplers import Draw


def test_substituted_sums_hand_computed():
    # cells (stratum x prediction): stratum 0 = pair 0 (predicted non-match, a match),
    # stratum 1 = pairs 1-2 (predicted non-matches), stratum 2 = pairs 3-4 (matches predicted)
    predicted = np.array([0, 0, 0, 1, 1])
    labels = np.array([1, 0, 1, 1, 0])
    strata = two_strata([1, 2, 2], [0, 0, 1])
    cells, n_cells = cell_codes(predicted, strata.codes, strata.n_strata)
    sizes = np.bincount(cells, minlength=n_cells)
    draws = np.array([0, 3, 0, 2, 4, 1])
    w = np.array([0.5, 1.0, 0.25, 2.0, 1.5, 3.0])
    a, c, d = _substituted_sums(cells, sizes, draws, labels[draws].astype(float), w, len(draws))
    # stratum 0 is complete at draw 0: its draw-0 term 0.5 * 1 counts, its repeat at draw 2
    # is replaced, and draws 1-5 each add M / N = 1 / 5. Stratum 1 completes at draw 5
    # (its own term 3.0 * 0 counts, no later draw). Stratum 2 completes at draw 4.
    assert c == pytest.approx(0.5 + 2.0 * 1 + 0.0 + 5 * (1 / 5))
    assert a == pytest.approx(1.0 * 1 + 1.5 * 0 + 1 * (1 / 5))
    # predicted matches: draws 1 and 4 (weights 1.0, 1.5), then N_c / N = 2 / 5 at draw 5
    assert d == pytest.approx(1.0 + 1.5 + 1 * (2 / 5))


@pytest.mark.parametrize("decay", [False, True])
def test_substituted_sums_are_unbiased_over_every_draw_path(decay):
    """Exact expectation over all 8^4 draw paths of an OASIS run whose strata hold both
    predictions and complete at different times: E[A] = T TP / N, E[C] = T FN / N and
    E[D] = T PP / N."""
    labels = np.array([0, 1, 0, 1, 1, 1, 0, 1])
    predicted = np.array([0, 0, 1, 0, 1, 1, 0, 1])
    scores = [0.1, 0.2, 0.3, 0.35, 0.6, 0.7, 0.8, 0.9]
    pool = pool_of(labels, predicted, scores=scores)
    strata = two_strata([1, 3, 2, 2], [0, 0, 1, 1])
    strata = type(strata)(**{**strata.__dict__, "prediction_share": np.array([0, 1 / 3, 1, 0.5])})
    cells, n_cells = cell_codes(predicted, strata.codes, strata.n_strata)
    sizes = np.bincount(cells, minlength=n_cells)
    n_draws = 4
    expected = np.zeros(3)
    mass = 0.0

    def walk(sampler, prob, drawn, weights):
        nonlocal mass
        if len(drawn) == n_draws:
            idx = np.array(drawn)
            sums = _substituted_sums(
                cells, sizes, idx, labels[idx].astype(float), np.array(weights), n_draws
            )
            expected[:] += prob * np.array(sums)
            mass += prob
            return
        v = sampler._v
        for k in range(strata.n_strata):
            for i in strata.members(k):
                nxt = copy.deepcopy(sampler)
                draw = Draw(int(i), k, v[k] / strata.sizes[k], float(sampler.omega[k] / v[k]))
                nxt._last = draw
                nxt.observe(int(i), int(labels[i]))
                walk(nxt, prob * v[k] / strata.sizes[k], drawn + [int(i)], weights + [draw.weight])

    root = OASISSampler(pool, 0, strata=strata, eta=2.0, epsilon=0.2, decay=decay)
    assert root.strata.mixed
    walk(root, 1.0, [], [])
    assert mass == pytest.approx(1.0)
    tp, fn = np.sum(labels * predicted), np.sum(labels * (1 - predicted))
    n = len(labels)
    pp = np.sum(predicted)
    np.testing.assert_allclose(
        expected, [n_draws * tp / n, n_draws * fn / n, n_draws * pp / n], rtol=1e-12
    )


def test_substituted_estimate_equals_the_default_until_a_stratum_completes(monkeypatch):
    from _helpers import synthetic_pool

    from er_evaluation.pairs import LabelOracle, estimate_from_labels, estimates, sample_labels

    pool = synthetic_pool(n=3000, rate=0.15, seed=5)
    sampler = OASISSampler(pool, 2, n_strata=5)
    run = sample_labels(pool, sampler, LabelOracle(pool.labels), 20)
    rows = np.unique(run.index)
    drawn = np.bincount(sampler.strata.codes[rows], minlength=sampler.strata.n_strata)
    assert np.all(drawn < sampler.strata.sizes)  # no stratum complete yet
    plain = estimate_from_labels(run, pool.predicted)
    monkeypatch.setattr(estimates, "EXACT_CELLS", "substitute")
    subst = estimate_from_labels(run, pool.predicted)
    for a, b in ((plain.precision, subst.precision), (plain.recall, subst.recall)):
        assert a.value == pytest.approx(b.value, rel=1e-12)


def test_substituted_estimate_is_exact_at_census(monkeypatch):
    from er_evaluation.pairs import LabelOracle, estimate_from_labels, estimates, sample_labels

    labels = np.array([0, 1, 0, 1, 1, 0, 0, 1, 0, 0, 1, 0])
    predicted = np.array([0, 0, 1, 1, 1, 0, 1, 0, 0, 1, 1, 0])
    pool = pool_of(labels, predicted)
    monkeypatch.setattr(estimates, "EXACT_CELLS", "substitute")
    sampler = OASISSampler(pool, 1, n_strata=3, epsilon=0.3)
    run = sample_labels(pool, sampler, LabelOracle(pool.labels), pool.n_pairs)
    result = estimate_from_labels(run, pool.predicted)
    truth = pool.truth()
    assert result.f[0].value == pytest.approx(truth["pairwise_f1"], abs=1e-12)
    assert result.f[0].ci_method == "census"
