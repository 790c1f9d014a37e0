"""The unsearched-non-match diagnostic of pair-label estimates: the
Clopper-Pearson bound on matches hidden in strata where no match was drawn, hand-computed
and against scipy; it fires when the missed matches sit in strata the labels never
searched, and not at census. The search design of ``continue_sampling``: unbiased by
exact expectation over every draw sequence, and its recorded proposals."""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from _helpers import synthetic_pool
from scipy.stats import beta

from er_evaluation.pairs import (
    LabelOracle,
    LabelRun,
    PairPool,
    continue_sampling,
    make_sampler,
    reuse_estimate,
    stratify,
)
from er_evaluation.pairs._search import hidden_matches, searched_draws
from er_evaluation.pairs.reuse import TracedRun, sample_traced, sampler_for_b
from er_evaluation.pairs.samplers import DEFAULT_MAX_SHARE


def test_hidden_matches_hand_computed_and_against_the_beta_quantile():
    """Cells of 100, 50 and 10 pairs, 10, 5 and 0 labelled (all non-matches): the third
    cell was never searched (all 10 may be matches); the first two are worth
    n_eff = 150^2 / (100^2/10 + 50^2/5) = 15 uniform draws, whose Clopper-Pearson upper
    limit for 0 matches at 95% is the 0.975 quantile of Beta(1, 15)."""
    n_pairs, n_eff, hidden = hidden_matches([100, 50, 10], [10, 5, 0], level=0.95)
    assert n_pairs == 160 and n_eff == pytest.approx(15.0)
    upper = 1 - 0.025 ** (1 / 15)
    assert upper == pytest.approx(beta.ppf(0.975, 1, 15))
    assert hidden == pytest.approx(10 + (90 + 45) * upper)  # unlabelled pairs only
    # proportional search: n_eff is the number of labelled pairs
    assert hidden_matches([100, 50], [10, 5], level=0.9)[1] == pytest.approx(15.0)
    # nothing searched: every pair may be a match
    assert hidden_matches([30, 20], [0, 0], level=0.95) == (50.0, 0.0, 50.0)
    with pytest.raises(ValueError, match="0 <= d_c <= N_c"):
        hidden_matches([10], [11], level=0.95)
    with pytest.raises(ValueError, match="level must be in"):
        hidden_matches([10], [1], level=1.0)


def test_searched_draws_hand_computed_and_shared_by_both_zero_success_bounds():
    """One definition of the effective draws that searched a set of pairs: Kish's size
    of the draws' weights, over 1 - the labelled share. Two draws of weights 1 and 3:
    (1 + 3)^2 / (1 + 9) = 1.6; draws outside the set (weight 0) do not count; half the
    set labelled doubles it; a fully labelled set is searched without end."""
    assert searched_draws([1.0, 3.0]) == pytest.approx(1.6)
    assert searched_draws([1.0, 0.0, 3.0, 0.0]) == pytest.approx(1.6)
    assert searched_draws([1.0, 3.0], labelled_share=0.5) == pytest.approx(3.2)
    assert searched_draws([2.0, 2.0], labelled_share=1.0) > 1e12
    assert searched_draws([0.0, 0.0]) == 0.0
    # the diagnostic's cells (100 and 50 pairs, 10 and 5 labelled): every labelled pair
    # stands for N_c / d_c = 10 pairs, so 15 equal draws, the same with or without counts
    per_pair = np.repeat([100 / 10, 50 / 5], [10, 5])
    assert searched_draws(per_pair) == pytest.approx(15.0)
    assert searched_draws([10.0, 10.0], counts=[10, 5]) == pytest.approx(15.0)
    assert hidden_matches([100, 50], [10, 5], level=0.95)[1] == pytest.approx(15.0)
    # unequal search: 100 pairs with 2 labelled, 50 with 5 (weights 50 and 10)
    expected = searched_draws(np.repeat([50.0, 10.0], [2, 5]))
    assert expected == pytest.approx(150**2 / (100**2 / 2 + 50**2 / 5))
    assert hidden_matches([100, 50], [2, 5], level=0.95)[1] == pytest.approx(expected)


def _pool():
    """100 pairs with scores 0.00..0.99; B predicts score >= 0.5 (50 pairs, 40 of them
    matches); the 3 lowest-score pairs are B's only false negatives."""
    scores = np.arange(100) / 100
    predicted = (scores >= 0.5).astype(np.int8)
    labels = np.zeros(100, dtype=np.int8)
    labels[60:] = 1  # 40 true positives
    labels[:3] = 1  # missed matches at the lowest scores
    return scores, predicted, labels


def _run(index, labels, strata, weight=None) -> LabelRun:
    n = len(index)
    return LabelRun(
        "importance",
        100,
        np.asarray(index),
        labels[index],
        np.ones(n) if weight is None else weight,
        np.full(n, -1),
        np.ones(n, dtype=bool),
        method="oasis",
        strata=strata,
        adaptive=True,
    )


def test_diagnostic_fires_when_the_missed_matches_sit_in_unsearched_strata():
    """45 of the 50 predicted matches labelled plus 5 predicted non-matches just below
    the threshold, all non-matches: recall is estimated as 1 (its interval's lower end
    from those 5 searched pairs), but the lower strata, holding the 3 misses, were never
    searched, so up to all
    their pairs could be matches and recall could be far lower. The estimate says so and
    is marked not reliable; precision is not affected."""
    scores, predicted, labels = _pool()
    strata = stratify(scores, predicted, 5)
    index = np.concatenate([np.arange(55, 100), np.arange(45, 50)])
    est = reuse_estimate(_run(index, labels, strata), predicted)
    recall = est.recall
    # the interval's lower end comes from the 5 searched predicted non-matches
    # (pairs/_variance.searched_bound), no longer from the 45 labelled positives
    assert recall.value == 1.0 and 0 < recall.ci_low < 0.9
    assert not recall.reliable and not est.f[0].reliable
    assert est.precision.reliable
    reason = recall.diagnostics.reason
    assert "no match was drawn among the predicted non-matches" in reason
    # the bound in the reason: TP / (AP + K) with K from hidden_matches on the open cells
    cells = 2 * strata.codes.astype(np.int64) + predicted
    sizes = np.bincount(cells, minlength=2 * strata.n_strata)
    d = np.bincount(cells[index], minlength=2 * strata.n_strata)
    region = (np.arange(2 * strata.n_strata) % 2 == 0) & (d < sizes)
    n_pairs, _, hidden = hidden_matches(sizes[region], d[region], level=0.95)
    assert n_pairs == 50 and hidden > 40
    tp = est.precision.value * 50  # no miss drawn: AP = TP
    assert f"as low as {tp / (tp + hidden):.3g}" in reason
    assert f"{n_pairs:,.0f} of them (50.0% of the pool)" in reason


def test_diagnostic_quiet_at_census_and_once_a_miss_is_drawn():
    """At census (every pair labelled) nothing can hide: reliable, zero width, whether
    or not B missed matches. Once a missed match is drawn the interval spans the
    estimated misses and the boundary check does not apply."""
    scores, predicted, labels = _pool()
    strata = stratify(scores, predicted, 5)
    census = reuse_estimate(_run(np.arange(100), labels, strata), predicted)
    assert census.recall.value == pytest.approx(40 / 43)
    assert census.recall.ci_low == census.recall.ci_high
    assert census.recall.reliable and census.f[0].reliable
    no_miss = labels.copy()
    no_miss[:3] = 0
    census_one = reuse_estimate(_run(np.arange(100), no_miss, strata), predicted)
    assert census_one.recall.value == 1.0 and census_one.recall.reliable
    index = np.concatenate([np.arange(50, 100), [0, 45, 46]])
    drawn = reuse_estimate(_run(index, labels, strata), predicted)
    assert drawn.recall.value < 1 and drawn.recall.reliable


def test_diagnostic_without_strata_uses_the_kish_size_of_the_draws():
    """A run without strata: the predicted non-matches are one cell searched by the Kish
    size of their draws' weights (two draws of weights 1 and 3: (1 + 3)^2 / 10 = 1.6
    effective draws), so the bound in the reason follows hidden_matches([50], [1.6]) over
    the 48 unlabelled pairs."""
    scores, predicted, labels = _pool()
    index = np.concatenate([np.arange(55, 100), [45, 46]])
    weight = np.concatenate([np.ones(45), [1.0, 3.0]])
    est = reuse_estimate(_run(index, labels, None, weight), predicted)
    _, n_eff, hidden = hidden_matches([50], [1.6], level=0.95, labelled=[2])
    assert n_eff == pytest.approx(1.6)
    assert not est.recall.reliable
    assert "1.6 effective draws" in est.recall.diagnostics.reason
    assert math.isclose(hidden, 48 * (1 - 0.025 ** (1 / 1.6)))  # the 48 unlabelled


# --- the search design of continue_sampling ----------------------------------------------


def _tiny():
    """6 pairs; A predicts score >= 0.7, B score >= 0.5; B misses the match at 0.3."""
    scores = np.array([0.9, 0.8, 0.6, 0.3, 0.1, 0.05])
    labels = np.array([1, 1, 0, 1, 0, 0], dtype=np.int8)
    frame = pd.DataFrame(
        {
            "id_left": [f"l{i}" for i in range(6)],
            "id_right": [f"r{i}" for i in range(6)],
            "score": scores,
            "predicted": (scores >= 0.7).astype(np.int8),
            "label": labels,
        }
    )
    pool = PairPool.from_frame(frame, label_col="label")
    pool_b = pool.with_prediction((scores >= 0.5).astype(np.int8))
    return pool, pool_b, labels


@pytest.mark.slow
@pytest.mark.parametrize("search", [0.2, 0.6])
def test_search_design_is_unbiased_by_exact_expectation(search):
    """A: 2 draws of static IS (fixed q_A); B: 2 draws of OASIS warm-started with A's
    labels, with a share ``search`` of each proposal on B's unsearched predicted
    non-matches (which depend on A's labels). Over every draw sequence (6^4), weighted
    by its probability, (N / T) sum_t w_t g(x_t) with each draw's own weight p/q_t equals
    the pool total of g exactly, for B's true positives, false negatives and the pair
    count: the design is unbiased although B's proposals depend on A's labels."""
    pool, pool_b, labels = _tiny()
    n, h = pool.n_pairs, pool_b.predicted.astype(np.float64)
    gs = np.vstack([labels * h, labels * (1 - h), np.ones(n)])
    q_a = make_sampler("importance", pool, 0).q
    strata = stratify(pool_b.scores, pool_b.predicted, 3)
    expected = np.zeros(3)

    def b_stage(sampler, prob, total, left):
        nonlocal expected
        if left == 0:
            expected += prob * n * total / 4
            return
        w = sampler.current_weights(np.arange(n))
        q = 1.0 / (n * w)
        assert q.sum() == pytest.approx(1.0)
        for x in np.flatnonzero(q > 0):
            child = copy.deepcopy(sampler)
            child.observe(int(x), int(labels[x]))
            b_stage(child, prob * q[x], total + w[x] * gs[:, x], left - 1)

    for seq in itertools.product(range(n), repeat=2):
        index = np.array(seq)
        w_a = 1.0 / (n * q_a[index])
        run_a = LabelRun(
            "importance",
            n,
            index,
            labels[index],
            w_a,
            np.full(2, -1),
            np.ones(2, dtype=bool),
            static_proposal=True,
        )
        sampler = sampler_for_b(pool_b, run_a, seed=0, search=search, strata=strata)
        b_stage(sampler, float(np.prod(q_a[index])), (gs[:, index] * w_a).sum(axis=1), 2)
    assert expected == pytest.approx(gs.sum(axis=1), abs=1e-12)


def test_search_share_of_the_recorded_proposals():
    """With search = 0.3, every recorded proposal of B's stage puts 0.3 (plus OASIS's own
    share) on the unsearched predicted non-match strata, is a distribution over the pool,
    and the draws keep their own weights (an adaptive stage)."""
    pool = synthetic_pool(400, rate=0.15, seed=4)
    predicted_b = (pool.scores > 0.3).astype(np.int8)
    pool_b = pool.with_prediction(predicted_b)
    oracle = LabelOracle(pool.labels)
    first = sample_traced(pool, make_sampler("oasis", pool, 0, n_strata=5), oracle, 40)
    pooled = continue_sampling(pool_b, first, oracle, 30, seed=1, search=0.3, n_strata=5)
    assert isinstance(pooled, TracedRun) and np.array_equal(pooled.weight, pooled.own_weight)
    props = pooled.proposals[-1]
    assert props.adaptive
    # B's sampler's strata (the default cap cuts the oversized ones)
    strata = stratify(pool_b.scores, predicted_b, 5, max_share=DEFAULT_MAX_SHARE)
    known = np.full(pool.n_pairs, -1)
    known[first.index] = first.label
    d = np.bincount(strata.codes[known >= 0], minlength=strata.n_strata)
    m = np.bincount(strata.codes[known == 1], minlength=strata.n_strata)
    region = (strata.predicted == 0) & (m == 0) & (d < strata.sizes)
    assert region.any()
    assert props.prob @ strata.sizes == pytest.approx(np.ones(len(props.draws)))
    on_region = props.prob[:, region] @ strata.sizes[region]
    assert np.all(on_region >= 0.3 - 1e-12)
    with pytest.raises(ValueError, match=r"search must be a share in \[0, 1\)"):
        continue_sampling(pool_b, first, oracle, 5, search=1.0)
    with pytest.raises(ValueError, match="use method='oasis'"):
        continue_sampling(pool_b, first, oracle, 5, search=0.2, method="importance")
