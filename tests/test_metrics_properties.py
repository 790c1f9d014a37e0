"""Property tests: every metric against brute force over record pairs / records / partitions,
against scikit-learn, and invariance under relabelling clusters and reordering records."""

from __future__ import annotations

import itertools
import math
import warnings
from collections import deque

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm

from er_evaluation import contingency
from er_evaluation.errors import UndefinedMetricWarning
from er_evaluation.metrics import (
    METRIC_FUNCTIONS,
    adjusted_rand_index,
    bcubed_precision,
    bcubed_recall,
    cluster_precision,
    cluster_recall,
    completeness,
    fowlkes_mallows,
    generalized_merge_distance,
    homogeneity,
    merge_count,
    mutual_information,
    pairwise_counts,
    pairwise_f1,
    pairwise_fbeta,
    pairwise_precision,
    pairwise_recall,
    rand_index,
    split_count,
    v_measure,
)

pytestmark = pytest.mark.filterwarnings("ignore::er_evaluation.errors.UndefinedMetricWarning")


@st.composite
def clustering_pairs(draw, max_records=9):
    n = draw(st.integers(1, max_records))
    labels = st.lists(st.integers(0, n - 1), min_size=n, max_size=n)
    return draw(labels), draw(labels)


def as_series(pred, ref):
    index = pd.Index([f"r{i}" for i in range(len(pred))])
    return pd.Series(pred, index=index), pd.Series(ref, index=index)


def same(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-9, abs=1e-12)


# ---- brute force ----


def brute_pairs(pred, ref):
    tp = fp = fn = tn = 0
    for i, j in itertools.combinations(range(len(pred)), 2):
        linked, true = pred[i] == pred[j], ref[i] == ref[j]
        tp += linked and true
        fp += linked and not true
        fn += true and not linked
        tn += not linked and not true
    return tp, fp, fn, tn


def ratio(a, b):
    return a / b if b else math.nan


def clusters_of(labels):
    out = {}
    for i, label in enumerate(labels):
        out.setdefault(label, set()).add(i)
    return out


def brute_bcubed(pred, ref):
    """Per-record B-cubed: record average, and average within then across true clusters."""
    p_sets, r_sets = clusters_of(pred), clusters_of(ref)
    rec_p = [len(p_sets[pred[i]] & r_sets[ref[i]]) / len(p_sets[pred[i]]) for i in range(len(pred))]
    rec_r = [len(p_sets[pred[i]] & r_sets[ref[i]]) / len(r_sets[ref[i]]) for i in range(len(pred))]
    by_cluster_p = np.mean([np.mean([rec_p[i] for i in members]) for members in r_sets.values()])
    by_cluster_r = np.mean([np.mean([rec_r[i] for i in members]) for members in r_sets.values()])
    return np.mean(rec_p), np.mean(rec_r), by_cluster_p, by_cluster_r


def brute_cluster(pred, ref):
    p_sets = {frozenset(s) for s in clusters_of(pred).values()}
    r_sets = {frozenset(s) for s in clusters_of(ref).values()}
    exact = len(p_sets & r_sets)
    return exact / len(p_sets), exact / len(r_sets)


def partition(labels):
    return frozenset(frozenset(s) for s in clusters_of(labels).values())


def merges_of(part):
    blocks = list(part)
    for a, b in itertools.combinations(range(len(blocks)), 2):
        yield part - {blocks[a], blocks[b]} | {blocks[a] | blocks[b]}


def splits_of(part):
    for block in part:  # every split of one block into two non-empty parts
        items = sorted(block)
        first, rest = items[0], items[1:]
        for k in range(len(rest)):
            for chosen in itertools.combinations(rest, k):
                left = frozenset((first, *chosen))
                yield part - {block} | {left, block - left}


def brute_merge_distance(pred, ref, splits_first=True):
    """Fewest unit-cost operations from the prediction to the reference, by BFS over
    (partition, phase) states; with ``splits_first`` no split may follow a merge."""
    start, goal = (partition(pred), 0), partition(ref)
    seen, queue = {start: 0}, deque([start])
    while queue:
        state = queue.popleft()
        part, phase = state
        if part == goal:
            return seen[state]
        moves = [(nxt, 1 if splits_first else 0) for nxt in merges_of(part)]
        if phase == 0:
            moves += [(nxt, 0) for nxt in splits_of(part)]
        for nxt in moves:
            if nxt not in seen:
                seen[nxt] = seen[state] + 1
                queue.append(nxt)
    raise AssertionError("reference unreachable")


def test_merging_first_can_be_shorter_as_documented():
    pred, ref = [0, 0, 1, 1], [0, 1, 0, 1]
    p, r = as_series(pred, ref)
    assert generalized_merge_distance(p, r) == brute_merge_distance(pred, ref) == 4
    assert brute_merge_distance(pred, ref, splits_first=False) == 2


# ---- properties ----


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(clustering_pairs())
def test_pairwise_against_all_record_pairs(labels):
    pred, ref = labels
    tp, fp, fn, tn = brute_pairs(pred, ref)
    p, r = as_series(pred, ref)
    counts = pairwise_counts(p, r)
    assert (counts.true_positives, counts.false_positives) == (tp, fp)
    assert (counts.false_negatives, counts.true_negatives) == (fn, tn)
    assert same(pairwise_precision(p, r), ratio(tp, tp + fp))
    assert same(pairwise_recall(p, r), ratio(tp, tp + fn))
    assert same(pairwise_f1(p, r), ratio(2 * tp, 2 * tp + fp + fn))
    assert same(pairwise_fbeta(p, r, beta=0.5), ratio(1.25 * tp, 1.25 * tp + 0.25 * fn + fp))
    pairs = tp + fp + fn + tn
    assert same(rand_index(p, r), 1.0 if pairs == 0 else (tp + tn) / pairs)
    assert same(fowlkes_mallows(p, r), tp / math.sqrt((tp + fp) * (tp + fn)) if tp else 0.0)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(clustering_pairs())
def test_bcubed_against_per_record_computation(labels):
    pred, ref = labels
    rec_p, rec_r, clu_p, clu_r = brute_bcubed(pred, ref)
    p, r = as_series(pred, ref)
    assert same(bcubed_precision(p, r), rec_p)
    assert same(bcubed_recall(p, r), rec_r)
    assert same(bcubed_precision(p, r, average="reference_cluster"), clu_p)
    assert same(bcubed_recall(p, r, average="reference_cluster"), clu_r)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(clustering_pairs())
def test_cluster_metrics_against_set_comparison(labels):
    pred, ref = labels
    precision, recall = brute_cluster(pred, ref)
    p, r = as_series(pred, ref)
    assert same(cluster_precision(p, r), precision)
    assert same(cluster_recall(p, r), recall)


@settings(max_examples=80, deadline=None)
@given(clustering_pairs(max_records=6))
def test_merge_distance_against_shortest_path_over_partitions(labels):
    pred, ref = labels
    p, r = as_series(pred, ref)
    distance = brute_merge_distance(pred, ref)
    assert generalized_merge_distance(p, r) == distance
    assert merge_count(p, r) + split_count(p, r) == distance
    n, k_pred, k_ref = len(pred), len(set(pred)), len(set(ref))
    worst = 2 * n - k_pred - k_ref
    assert same(generalized_merge_distance(p, r, normalize=True), ratio(distance, worst))


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(clustering_pairs(max_records=30))
def test_scikit_learn_cross_check(labels):
    pred, ref = labels
    p, r = as_series(pred, ref)
    (tn2, fp2), (fn2, tp2) = skm.cluster.pair_confusion_matrix(ref, pred)  # ordered pairs
    counts = pairwise_counts(p, r)
    assert (2 * counts.true_positives, 2 * counts.false_positives) == (tp2, fp2)
    assert (2 * counts.false_negatives, 2 * counts.true_negatives) == (fn2, tn2)
    assert rand_index(p, r) == pytest.approx(skm.rand_score(ref, pred))
    assert adjusted_rand_index(p, r) == pytest.approx(skm.adjusted_rand_score(ref, pred))
    assert fowlkes_mallows(p, r) == pytest.approx(skm.fowlkes_mallows_score(ref, pred))
    h, c, v = skm.homogeneity_completeness_v_measure(ref, pred)
    assert homogeneity(p, r) == pytest.approx(h, abs=1e-12)
    assert completeness(p, r) == pytest.approx(c, abs=1e-12)
    assert v_measure(p, r) == pytest.approx(v, abs=1e-12)
    h2, c2, v2 = skm.homogeneity_completeness_v_measure(ref, pred, beta=2.0)
    assert v_measure(p, r, beta=2.0) == pytest.approx(v2, abs=1e-12)
    assert mutual_information(p, r) == pytest.approx(skm.mutual_info_score(ref, pred), abs=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_scikit_learn_cross_check_larger(seed):
    rng = np.random.default_rng(seed)
    n = 5000
    ref = rng.integers(0, 800, n)
    pred = np.where(rng.random(n) < 0.15, rng.integers(0, 800, n), ref)
    p, r = as_series(pred, ref)
    assert adjusted_rand_index(p, r) == pytest.approx(skm.adjusted_rand_score(ref, pred))
    assert fowlkes_mallows(p, r) == pytest.approx(skm.fowlkes_mallows_score(ref, pred))
    h, c, v = skm.homogeneity_completeness_v_measure(ref, pred)
    assert (homogeneity(p, r), completeness(p, r), v_measure(p, r)) == pytest.approx((h, c, v))


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(clustering_pairs(max_records=12), st.randoms(use_true_random=False))
def test_invariant_under_relabelling_and_record_order(labels, rnd):
    pred, ref = labels
    p, r = as_series(pred, ref)
    new_pred = {label: f"P{rnd.randrange(1000)}-{label}" for label in set(pred)}  # str ids
    new_ref = {label: rnd.randrange(10**6) * 100 + label for label in set(ref)}
    order = list(range(len(pred)))
    rnd.shuffle(order)
    p2 = p.map(new_pred).iloc[order]
    r2 = r.map(new_ref).iloc[rnd.sample(order, len(order))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        before = {name: metric(contingency(p, r)) for name, metric in METRIC_FUNCTIONS.items()}
        after = {name: metric(contingency(p2, r2)) for name, metric in METRIC_FUNCTIONS.items()}
    for name in METRIC_FUNCTIONS:
        assert same(before[name], after[name]), name


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(clustering_pairs(max_records=12))
def test_integer_record_ids_give_same_numbers_as_string_ids(labels):
    pred, ref = labels
    p, r = as_series(pred, ref)
    pi = pd.Series(pred, index=np.arange(len(pred)) * 3 + 11)
    ri = pd.Series(ref, index=pi.index)
    for name, metric in METRIC_FUNCTIONS.items():
        assert same(metric(contingency(p, r)), metric(contingency(pi, ri))), name
