"""Exact metrics on hand-computed cases, edge cases and argument validation."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from _helpers import figure2

from er_evaluation import contingency
from er_evaluation.errors import CoverageError, CoverageWarning, UndefinedMetricWarning
from er_evaluation.metrics import (
    METRIC_FUNCTIONS,
    adjusted_rand_index,
    bcubed_f1,
    bcubed_fbeta,
    bcubed_precision,
    bcubed_recall,
    check_contingency,
    cluster_f1,
    cluster_fbeta,
    cluster_precision,
    cluster_recall,
    completeness,
    exact_cluster_count,
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

# Binette et al. 2023, Figure 2 (its contingency cells and pair counts: _helpers.figure2).
TRUTH, PRED = figure2()


def test_figure2_pairwise():
    assert pairwise_precision(PRED, TRUTH) == pytest.approx(2 / 5)
    assert pairwise_recall(PRED, TRUTH) == pytest.approx(2 / 5)
    assert pairwise_f1(PRED, TRUTH) == pytest.approx(2 / 5)
    # F_2 = 5·TP / (5·TP + 4·FN + FP) = 10 / (10 + 12 + 3)
    assert pairwise_fbeta(PRED, TRUTH, beta=2) == pytest.approx(10 / 25)
    counts = pairwise_counts(PRED, TRUTH)
    assert (counts.true_positives, counts.false_positives) == (2, 3)
    assert (counts.false_negatives, counts.true_negatives) == (3, 20)


def test_figure2_cluster():
    # No predicted cluster equals a true cluster ({5} ⊂ {4,5}, {2,3} ⊂ {1,2,3}).
    assert exact_cluster_count(PRED, TRUTH) == 0
    assert cluster_precision(PRED, TRUTH) == 0.0
    assert cluster_recall(PRED, TRUTH) == 0.0
    assert cluster_f1(PRED, TRUTH) == 0.0


def test_cluster_metrics_with_exact_clusters():
    # Prediction {1,2,3},{4},{5},{6,7},{8}: exact = {1,2,3},{6,7},{8} -> E = 3,
    # precision 3/5, recall 3/4, F1 = 2·3/(4+5) = 2/3.
    pred = pd.Series([1, 1, 1, 2, 3, 4, 4, 5], index=range(1, 9))
    assert cluster_precision(pred, TRUTH) == pytest.approx(3 / 5)
    assert cluster_recall(pred, TRUTH) == pytest.approx(3 / 4)
    assert cluster_f1(pred, TRUTH) == pytest.approx(2 / 3)
    # F_β = (1+β²)E/(β²|C| + |Ĉ|) = 5·3/(4·4 + 5)
    assert cluster_fbeta(pred, TRUTH, beta=2) == pytest.approx(15 / 21)


def test_figure2_bcubed_record_average():
    # Record precisions |ĉ∩c|/|ĉ|: 1:1/2 2:1 3:1 4:1/2 5:1 6:2/3 7:2/3 8:1/3, sum 17/3.
    # Record recalls    |ĉ∩c|/|c|: 1:1/3 2:2/3 3:2/3 4:1/2 5:1/2 6:1 7:1 8:1, sum 17/3.
    assert bcubed_precision(PRED, TRUTH) == pytest.approx(17 / 24)
    assert bcubed_recall(PRED, TRUTH) == pytest.approx(17 / 24)
    assert bcubed_f1(PRED, TRUTH) == pytest.approx(17 / 24)


def test_figure2_bcubed_reference_cluster_average():
    # Precision averaged within true clusters: {1,2,3}: (1/2+1+1)/3 = 5/6;
    # {4,5}: (1/2+1)/2 = 3/4; {6,7}: 2/3; {8}: 1/3 -> (5/6+3/4+2/3+1/3)/4 = 31/48.
    # Recall: {1,2,3}: (1/3+2/3+2/3)/3 = 5/9; {4,5}: 1/2; {6,7}: 1; {8}: 1 -> 55/72.
    p, r = 31 / 48, 55 / 72
    kw = {"average": "reference_cluster"}
    assert bcubed_precision(PRED, TRUTH, **kw) == pytest.approx(p)
    assert bcubed_recall(PRED, TRUTH, **kw) == pytest.approx(r)
    assert bcubed_f1(PRED, TRUTH, **kw) == pytest.approx(2 * p * r / (p + r))
    assert bcubed_fbeta(PRED, TRUTH, beta=0.5, **kw) == pytest.approx(1.25 * p * r / (0.25 * p + r))


def test_bcubed_reference_cluster_matches_er_evaluation_docstring_example():
    # The er-evaluation package documents 0.6458333, 0.7638888, 0.6999179 for this pair.
    pred = pd.Series([1, 1, 2, 3, 2, 4, 4, 4], index=range(1, 9))
    ref = pd.Series(["c1", "c1", "c1", "c2", "c2", "c3", "c3", "c4"], index=range(1, 9))
    kw = {"average": "reference_cluster"}
    assert bcubed_precision(pred, ref, **kw) == pytest.approx(0.6458333333)
    assert bcubed_recall(pred, ref, **kw) == pytest.approx(0.7638888889)
    assert bcubed_f1(pred, ref, **kw) == pytest.approx(0.6999178982)


def test_figure2_information():
    # Cells (n, |ĉ|, |c|): (1,2,3) (1,2,2) (2,2,3) (1,1,2) (2,3,2) (1,3,1), N = 8.
    n_total = 8
    cells = [(1, 2, 3), (1, 2, 2), (2, 2, 3), (1, 1, 2), (2, 3, 2), (1, 3, 1)]
    mi = sum(n / n_total * math.log(n * n_total / (a * b)) for n, a, b in cells)

    def entropy(sizes):
        return -sum(s / n_total * math.log(s / n_total) for s in sizes)

    h_true, h_pred = entropy([3, 2, 2, 1]), entropy([2, 2, 1, 3])
    h, c = mi / h_true, mi / h_pred
    assert mutual_information(PRED, TRUTH) == pytest.approx(mi)
    assert homogeneity(PRED, TRUTH) == pytest.approx(h)
    assert completeness(PRED, TRUTH) == pytest.approx(c)
    assert v_measure(PRED, TRUTH) == pytest.approx(2 * h * c / (h + c))
    assert v_measure(PRED, TRUTH, beta=3) == pytest.approx(4 * h * c / (3 * h + c))


def test_figure2_rand_family():
    # Rand = (TP+TN)/C(8,2) = 22/28.
    assert rand_index(PRED, TRUTH) == pytest.approx(22 / 28)
    # ARI = 2(TP·TN − FN·FP)/((TP+FN)(FN+TN) + (TP+FP)(FP+TN)) = 2(40−9)/(5·23 + 5·23).
    assert adjusted_rand_index(PRED, TRUTH) == pytest.approx(62 / 230)
    # FM = TP/sqrt(|P||T|) = 2/5.
    assert fowlkes_mallows(PRED, TRUTH) == pytest.approx(2 / 5)


def test_figure2_merge_split():
    # Splits: {1,4} -> {1},{4}; {6,7,8} -> {6,7},{8}: 2. Merges: {1}+{2,3}; {4}+{5}: 2.
    assert split_count(PRED, TRUTH) == 2
    assert merge_count(PRED, TRUTH) == 2
    assert generalized_merge_distance(PRED, TRUTH) == 4
    # Normalised by 2N − |Ĉ| − |C| = 16 − 4 − 4.
    assert generalized_merge_distance(PRED, TRUTH, normalize=True) == pytest.approx(0.5)


def test_duality_swaps_precision_and_recall():
    assert pairwise_precision(TRUTH, PRED) == pytest.approx(pairwise_recall(PRED, TRUTH))
    assert bcubed_precision(TRUTH, PRED) == pytest.approx(bcubed_recall(PRED, TRUTH))
    assert homogeneity(TRUTH, PRED) == pytest.approx(completeness(PRED, TRUTH))
    assert split_count(TRUTH, PRED) == merge_count(PRED, TRUTH)


def test_perfect_prediction_scores_one():
    for name, metric in METRIC_FUNCTIONS.items():
        value = metric(contingency(TRUTH, TRUTH))
        expected = {
            "false_positive_links": 0,
            "false_negative_links": 0,
            "true_positive_links": 5,
            "merge_count": 0,
            "split_count": 0,
        }.get(name)
        if name in ("generalized_merge_distance", "normalized_merge_distance"):
            expected = 0.0
        assert value == pytest.approx(1.0 if expected is None else expected), name


# ---- undefined cases: NaN with UndefinedMetricWarning, never a perfect score ----

SINGLETONS = pd.Series(range(8), index=range(1, 9))


def test_no_predicted_links_precision_is_nan():
    with pytest.warns(UndefinedMetricWarning, match="pairwise precision.*no links"):
        assert math.isnan(pairwise_precision(SINGLETONS, TRUTH))
    assert pairwise_recall(SINGLETONS, TRUTH) == 0.0
    assert pairwise_f1(SINGLETONS, TRUTH) == 0.0  # TP = 0 with FN = 5 > 0


def test_no_true_links_recall_is_nan():
    with pytest.warns(UndefinedMetricWarning, match="pairwise recall.*no links"):
        assert math.isnan(pairwise_recall(PRED, SINGLETONS))
    assert pairwise_precision(PRED, SINGLETONS) == 0.0


def test_no_links_anywhere():
    with pytest.warns(UndefinedMetricWarning, match="F-score"):
        assert math.isnan(pairwise_f1(SINGLETONS, SINGLETONS))
    with pytest.warns(UndefinedMetricWarning, match="normalized"):
        assert math.isnan(generalized_merge_distance(SINGLETONS, SINGLETONS, normalize=True))
    # scikit-learn's conventions, which the docstrings state:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rand_index(SINGLETONS, SINGLETONS) == 1.0
        assert adjusted_rand_index(SINGLETONS, SINGLETONS) == 1.0
        assert fowlkes_mallows(SINGLETONS, SINGLETONS) == 0.0
        assert generalized_merge_distance(SINGLETONS, SINGLETONS) == 0.0


EMPTY = pd.Series([], index=pd.Index([], dtype=np.int64), dtype=np.int64)


@pytest.mark.parametrize("name", list(METRIC_FUNCTIONS))
def test_empty_input_is_nan_with_warning(name):
    empty = check_contingency(EMPTY, EMPTY)
    if name in (
        "true_positive_links",
        "false_positive_links",
        "false_negative_links",
        "merge_count",
        "split_count",
    ):  # counts of nothing are 0
        assert METRIC_FUNCTIONS[name](empty) == 0
        return
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(METRIC_FUNCTIONS[name](empty))


def test_empty_series_through_public_functions():
    for metric in (pairwise_precision, pairwise_recall, bcubed_precision, homogeneity, rand_index):
        with pytest.warns(UndefinedMetricWarning, match="no records|no links"):
            assert math.isnan(metric(EMPTY, EMPTY))


@pytest.mark.parametrize(
    "metric",
    [
        pairwise_precision,
        pairwise_recall,
        pairwise_fbeta,
        bcubed_precision,
        bcubed_recall,
        bcubed_fbeta,
        cluster_precision,
        cluster_recall,
        cluster_fbeta,
        mutual_information,
        homogeneity,
        completeness,
        v_measure,
        generalized_merge_distance,
        rand_index,
        adjusted_rand_index,
        fowlkes_mallows,
    ],
)
def test_undefined_warning_points_at_the_caller(metric):
    # the one empty-input rule (metrics._validation.on_records) warns at the line that
    # called the public metric, as each metric's own check did (the *_f1 wrappers add a
    # frame and warn in their module, as they did before)
    options = {"beta": 2.0} if metric.__name__.endswith("fbeta") else {}
    with pytest.warns(UndefinedMetricWarning) as caught:
        metric(EMPTY, EMPTY, **options)
    assert [w.filename for w in caught] == [__file__]
    with pytest.warns(UndefinedMetricWarning, match="normalized") as caught:
        generalized_merge_distance(SINGLETONS, SINGLETONS, normalize=True)
    assert [w.filename for w in caught] == [__file__]


def test_single_record_follows_scikit_learn():
    one = pd.Series([1], index=["a"])
    assert rand_index(one, one) == 1.0
    assert adjusted_rand_index(one, one) == 1.0
    assert homogeneity(one, one) == 1.0
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(pairwise_precision(one, one))


# ---- arguments and coverage ----


def test_precomputed_contingency_gives_same_numbers():
    ct = contingency(PRED, TRUTH)
    for name, metric in METRIC_FUNCTIONS.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            assert metric(ct) == pytest.approx(metric(contingency(PRED, TRUTH))), name
    assert pairwise_precision(ct) == pairwise_precision(PRED, TRUTH)


def test_contingency_and_reference_together_is_rejected():
    with pytest.raises(TypeError, match="not a Contingency and a reference"):
        pairwise_precision(contingency(PRED, TRUTH), TRUTH)


def test_missing_reference_is_rejected():
    with pytest.raises(TypeError, match="reference is missing"):
        pairwise_recall(PRED)


def test_prediction_scope_contingency_is_rejected():
    ct = contingency(PRED, TRUTH.iloc[:5], scope="prediction")
    with pytest.raises(ValueError, match="scope='shared'"):
        bcubed_precision(ct)


def test_missing_records_error_names_them():
    ref = pd.concat([TRUTH, pd.Series(["t9"], index=[99])])
    with pytest.raises(CoverageError, match="99"):
        pairwise_precision(PRED, ref)


def test_restrict_warns_with_count_and_uses_shared_records():
    ref = pd.concat([TRUTH, pd.Series(["t9", "t9"], index=[98, 99])])
    with pytest.warns(CoverageWarning, match="dropped 2 of 10"):
        value = pairwise_precision(PRED, ref, on_missing="restrict")
    assert value == pytest.approx(2 / 5)


def test_int_and_str_ids_are_not_silently_disjoint():
    as_str = pd.Series(TRUTH.to_numpy(), index=TRUTH.index.astype(str))
    with pytest.raises(CoverageError, match="different types"):
        pairwise_precision(PRED, as_str)


def test_string_record_and_cluster_ids():
    pred = pd.Series(PRED.astype(str).to_numpy(), index=[f"r{i}" for i in PRED.index])
    truth = pd.Series(TRUTH.to_numpy(), index=pred.index)
    assert pairwise_precision(pred, truth) == pytest.approx(2 / 5)
    assert bcubed_recall(pred, truth) == pytest.approx(17 / 24)


@pytest.mark.parametrize("beta", [0, -1, float("inf"), float("nan")])
def test_bad_beta(beta):
    for metric in (pairwise_fbeta, cluster_fbeta, bcubed_fbeta, v_measure):
        with pytest.raises(ValueError, match="beta"):
            metric(PRED, TRUTH, beta=beta)


def test_bad_average():
    with pytest.raises(ValueError, match="average must be"):
        bcubed_precision(PRED, TRUTH, average="cluster")


def test_bad_on_missing():
    with pytest.raises(ValueError, match="on_missing"):
        pairwise_precision(PRED, TRUTH, on_missing="ignore")


@pytest.mark.parametrize(
    ("pred", "ref"),
    [
        ([0, 0, 0, 0], [0, 1, 2, 3]),  # one predicted cluster: completeness 1 by convention
        ([0, 1, 2, 3], [5, 5, 5, 5]),  # one reference cluster: homogeneity 1 by convention
        ([0, 0, 1, 1], [0, 1, 0, 1]),  # independent: h = c = 0, V = 0
    ],
)
def test_information_edge_cases_follow_scikit_learn(pred, ref):
    from sklearn.metrics import homogeneity_completeness_v_measure

    p = pd.Series(pred, index=list("abcd"))
    r = pd.Series(ref, index=list("abcd"))
    expected = homogeneity_completeness_v_measure(ref, pred)
    assert (homogeneity(p, r), completeness(p, r), v_measure(p, r)) == pytest.approx(
        expected, abs=1e-12
    )
