"""OASIS estimates use the labels of completely labelled strata:
from the draw on which a stratum x prediction cell has every pair labelled, its matches
are known, and each later draw's term for it is replaced by that known value."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from _helpers import pool_of, synthetic_pool, two_strata

from er_evaluation.pairs import (
    LabelOracle,
    LabelRun,
    OASISSampler,
    estimate_from_labels,
    sample_labels,
    samplers,
)
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
    a, c, d, _ = _substituted_sums(
        cells[draws], sizes, draws, labels[draws].astype(float), w, len(draws)
    )
    # stratum 0 is complete at draw 0: its draw-0 term 0.5 * 1 counts, its repeat at draw 2
    # is replaced, and draws 1-5 each add M / N = 1 / 5. Stratum 1 completes at draw 5
    # (its own term 3.0 * 0 counts, no later draw). Stratum 2 completes at draw 4.
    assert c == pytest.approx(0.5 + 2.0 * 1 + 0.0 + 5 * (1 / 5))
    assert a == pytest.approx(1.0 * 1 + 1.5 * 0 + 1 * (1 / 5))
    # predicted matches: draws 1 and 4 (weights 1.0, 1.5), then N_c / N = 2 / 5 at draw 5
    assert d == pytest.approx(1.0 + 1.5 + 1 * (2 / 5))


@pytest.mark.slow
@pytest.mark.parametrize("leave", [False, True])
@pytest.mark.parametrize("decay", [False, True])
def test_substituted_sums_are_unbiased_over_every_draw_path(decay, leave, monkeypatch):
    """Exact expectation over all draw paths (up to 8^4) of an OASIS run whose strata hold
    both predictions and complete at different times, with completed strata kept in the
    proposal or (``leave``) left out of it: E[A] = T TP / N, E[C] = T FN / N and
    E[D] = T PP / N."""
    monkeypatch.setattr(samplers, "MIN_OPEN_SHARE", 2.0 if leave else 0.0)
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

    closed = []

    def walk(sampler, prob, drawn, weights):
        nonlocal mass
        if np.any(sampler._v == 0):
            closed.append(len(drawn))
        if len(drawn) == n_draws:
            idx = np.array(drawn)
            sums = _substituted_sums(
                cells[idx], sizes, idx, labels[idx].astype(float), np.array(weights), n_draws
            )
            expected[:] += prob * np.array(sums[:3])
            mass += prob
            return
        v = sampler._v
        for k in range(strata.n_strata):
            if v[k] == 0:  # a completed stratum is no longer drawn
                continue
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
    assert bool(closed) == leave  # paths that left a completed stratum before their last draw
    tp, fn = np.sum(labels * predicted), np.sum(labels * (1 - predicted))
    n = len(labels)
    pp = np.sum(predicted)
    np.testing.assert_allclose(
        expected, [n_draws * tp / n, n_draws * fn / n, n_draws * pp / n], rtol=1e-12
    )


def test_oasis_estimate_is_the_weighted_ratio_until_a_stratum_completes():
    # no stratum complete: nothing to substitute, so the estimate is Marchant & Rubinstein
    # 2017's weighted ratio, computed here from the draws by hand
    pool = synthetic_pool(n=3000, rate=0.15, seed=5)
    sampler = OASISSampler(pool, 2, n_strata=5)
    run = sample_labels(pool, sampler, LabelOracle(pool.labels), 20)
    rows = np.unique(run.index)
    drawn = np.bincount(sampler.strata.codes[rows], minlength=sampler.strata.n_strata)
    assert np.all(drawn < sampler.strata.sizes)  # no stratum complete yet
    h = pool.predicted[run.index]
    a = np.sum(run.weight * run.label * h)  # weighted true positives
    c = np.sum(run.weight * run.label * (1 - h))  # weighted missed matches
    d = np.sum(run.weight * h)  # weighted predicted matches
    result = estimate_from_labels(run, pool.predicted)
    assert result.precision.value == pytest.approx(a / d, rel=1e-12)
    assert result.recall.value == pytest.approx(a / (a + c), rel=1e-12)


def test_oasis_estimate_substitutes_a_stratum_from_the_draw_it_completes_hand_computed():
    # strata: {0} predicted non-match, {1, 2} predicted non-matches, {3, 4, 5} predicted
    # matches; stratum {0} is complete at draw 0, no prediction group is ever complete
    labels = np.array([1, 0, 1, 1, 0, 1])
    predicted = np.array([0, 0, 0, 1, 1, 1])
    draws = np.array([0, 3, 0, 2, 4, 0])
    w = np.array([0.5, 1.0, 0.25, 0.5, 1.5, 0.4])
    run = LabelRun(
        "importance",
        6,
        draws,
        labels[draws],
        w,
        np.array([0, 2, 0, 1, 2, 0]),
        np.array([True, True, False, True, True, False]),
        method="oasis",
        strata=two_strata([1, 2, 3], [0, 0, 1]),
        adaptive=True,
    )
    result = estimate_from_labels(run, predicted)
    # A = 1.0 (draw 1), D = 1.0 + 1.5; C = 0.5 (draw 0, which completes stratum {0}) + 0.5
    # (draw 3) + 5 later draws x M / N = 1 / 6 in place of their own terms 0.25 and 0.4
    pp, a, d, c = 3, 1.0, 2.5, 0.5 + 0.5 + 5 / 6
    tp, fn = pp * a / d, pp * c / d  # 1.2 and 2.2
    assert result.precision.value == pytest.approx(tp / pp, rel=1e-12)
    assert result.recall.value == pytest.approx(tp / (tp + fn), rel=1e-12)
    assert result.f[0].value == pytest.approx(tp / (0.5 * pp + 0.5 * (tp + fn)), rel=1e-12)
    # the weighted ratio without substitution would give FN = 3 x 1.65 / 2.5 = 1.98
    assert result.recall.value != pytest.approx(1.2 / (1.2 + 1.98), rel=1e-6)


def test_oasis_estimate_is_exact_at_census():
    labels = np.array([0, 1, 0, 1, 1, 0, 0, 1, 0, 0, 1, 0])
    predicted = np.array([0, 0, 1, 1, 1, 0, 1, 0, 0, 1, 1, 0])
    pool = pool_of(labels, predicted)
    sampler = OASISSampler(pool, 1, n_strata=3, epsilon=0.3)
    run = sample_labels(pool, sampler, LabelOracle(pool.labels), pool.n_pairs)
    result = estimate_from_labels(run, pool.predicted)
    truth = pool.truth()
    for got, name in (
        (result.precision, "pairwise_precision"),
        (result.recall, "pairwise_recall"),
        (result.f[0], "pairwise_f1"),
    ):
        assert got.value == pytest.approx(truth[name], abs=1e-12)
        assert got.ci_method == "census"


@pytest.mark.parametrize("by_prediction", [True, False])
def test_cells_of_the_draws_match_the_cells_of_the_pool(by_prediction):
    # estimate_from_labels codes only the draws' cells and counts each cell's pairs along
    # the strata's row order; history codes every pool pair once: both must agree, also
    # for another prediction than the strata's (label reuse)
    from _helpers import synthetic_pool

    from er_evaluation.pairs.estimates import _cells, _draw_cells

    pool = synthetic_pool(n=2000, rate=0.1, seed=3)
    sampler = OASISSampler(pool, 4, n_strata=6, by_prediction=by_prediction)
    run = sample_labels(pool, sampler, LabelOracle(pool.labels), 150)
    for predicted in (pool.predicted, (pool.scores > 0.8).astype(np.int8)):
        predicted = np.asarray(predicted, dtype=np.int8)
        cell_t, sizes = _draw_cells(run, predicted)
        codes, pool_sizes, _ = _cells(run, predicted)
        np.testing.assert_array_equal(cell_t, codes[run.index])
        np.testing.assert_array_equal(sizes, pool_sizes)
        assert sizes.sum() == pool.n_pairs


def _tied_pool(n: int = 1545, predicted_matches: int = 100, matches: int = 90):
    """Scores tied at the prediction (0 or 1): two strata, the predicted matches a small one."""
    labels = np.zeros(n, dtype=int)
    labels[:matches] = 1
    predicted = np.zeros(n, dtype=int)
    predicted[:predicted_matches] = 1
    return pool_of(labels, predicted, scores=predicted.astype(float))


def test_a_completed_stratum_leaves_the_proposal_so_a_budget_bounds_the_draws():
    """A 1,545-pair pool with tied scores: OASIS's two strata, the 100 predicted matches
    holding nearly all of the proposal. Once they are all labelled they are no longer
    drawn once the open strata hold less than MIN_OPEN_SHARE of the proposal; before, 500
    labels took over 400,000 draws (most of them repeats there)."""
    pool = _tied_pool()
    sampler = OASISSampler(pool, 0)
    run = sample_labels(pool, sampler, LabelOracle(pool.labels), 500)
    assert int(run.new_label.sum()) == 500
    top = sampler.strata.codes[0]  # the predicted matches' stratum
    assert sampler._v[top] == 0  # completed, out of the proposal
    # coupon collector on the 100 (about 100 H_100 = 519 draws), then draws among the
    # 1,445 others, most of them new
    assert run.n_draws < 2000
    # after the stratum completed, no draw went there
    first = {int(i): t for t, i in reversed(list(enumerate(run.index)))}
    completed_at = max(first[i] for i in range(100))
    assert not np.any(pool.predicted[run.index[completed_at + 1 :]] == 1)
    result = estimate_from_labels(run, pool.predicted)
    assert result.precision.value == pytest.approx(0.9)  # the census of the predicted matches
    assert result.precision.std_error == 0


def test_oasis_stops_when_every_stratum_is_complete():
    pool = _tied_pool(n=60, predicted_matches=10, matches=9)
    sampler = OASISSampler(pool, 1)
    run = sample_labels(pool, sampler, LabelOracle(pool.labels), 60)
    assert int(run.new_label.sum()) == 60 and sampler.draw() is None
    result = estimate_from_labels(run, pool.predicted)
    assert result.recall.value == pytest.approx(1.0) and result.recall.std_error == 0
