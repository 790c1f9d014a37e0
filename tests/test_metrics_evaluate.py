"""evaluate(): one contingency per prediction, same numbers as the single metrics."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from er_evaluation import _contingency
from er_evaluation.errors import CoverageError, CoverageWarning, UndefinedMetricWarning
from er_evaluation.metrics import (
    METRIC_FUNCTIONS,
    adjusted_rand_index,
    bcubed_f1,
    bcubed_precision,
    evaluate,
    generalized_merge_distance,
    pairwise_counts,
    pairwise_precision,
    v_measure,
)

TRUTH = pd.Series(["t1", "t1", "t1", "t2", "t2", "t3", "t3", "t4"], index=range(1, 9))
PRED = pd.Series([10, 20, 20, 10, 30, 40, 40, 40], index=range(1, 9))


def random_prediction(seed: int, n: int = 300) -> tuple[pd.Series, pd.Series]:
    rng = np.random.default_rng(seed)
    ref = rng.integers(0, 60, n)
    pred = np.where(rng.random(n) < 0.2, rng.integers(0, 60, n), ref)
    index = pd.Index(rng.permutation(n) + 1000)
    return pd.Series(pred, index=index), pd.Series(ref, index=index)


@pytest.fixture
def kernel_calls(monkeypatch):
    calls = []
    original = _contingency.contingency

    def counting(*args, **kwargs):
        calls.append(kwargs.get("scope"))
        return original(*args, **kwargs)

    monkeypatch.setattr(_contingency, "contingency", counting)
    return calls


def test_one_contingency_per_prediction(kernel_calls):
    preds = {f"v{s}": random_prediction(s)[0] for s in range(3)}
    _, reference = random_prediction(0)
    table = evaluate(preds, reference)
    assert kernel_calls == ["shared"] * 3
    assert table.shape == (3, len(METRIC_FUNCTIONS))


def test_single_metric_calls_use_the_kernel(kernel_calls):
    pairwise_precision(PRED, TRUTH)
    assert kernel_calls == ["shared"]


def test_same_numbers_as_single_functions():
    preds = {"a": PRED, "truth": TRUTH, "shuffled": PRED.sample(frac=1, random_state=1)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        table = evaluate(preds, TRUTH)
    assert list(table.index) == ["a", "truth", "shuffled"]
    assert table.index.name == "prediction"
    assert list(table.columns) == list(METRIC_FUNCTIONS)
    singles = {
        "pairwise_precision": pairwise_precision,
        "bcubed_precision": bcubed_precision,
        "bcubed_f1_by_cluster": lambda p, r: bcubed_f1(p, r, average="reference_cluster"),
        "v_measure": v_measure,
        "adjusted_rand_index": adjusted_rand_index,
        "normalized_merge_distance": lambda p, r: generalized_merge_distance(p, r, normalize=True),
        "true_positive_links": lambda p, r: pairwise_counts(p, r).true_positives,
        "false_positive_links": lambda p, r: pairwise_counts(p, r).false_positives,
        "false_negative_links": lambda p, r: pairwise_counts(p, r).false_negatives,
    }
    for name, prediction in preds.items():
        for column, single in singles.items():
            assert table.loc[name, column] == pytest.approx(single(prediction, TRUTH)), column
    assert table.loc["a", "pairwise_precision"] == pytest.approx(2 / 5)
    assert table.loc["truth", "cluster_f1"] == 1.0


def test_count_columns_are_integers():
    table = evaluate(PRED, TRUTH)
    for column in (
        "true_positive_links",
        "false_positive_links",
        "false_negative_links",
        "merge_count",
        "split_count",
    ):
        assert table[column].dtype == np.int64, column
    assert table["pairwise_recall"].dtype == np.float64


def test_series_row_named_after_series():
    assert list(evaluate(PRED.rename("v2022"), TRUTH).index) == ["v2022"]
    assert list(evaluate(PRED, TRUTH).index) == ["prediction"]


def test_chosen_metrics_in_given_order():
    table = evaluate({"a": PRED}, TRUTH, metrics=["pairwise_recall", "true_positive_links"])
    assert list(table.columns) == ["pairwise_recall", "true_positive_links"]
    assert table.loc["a", "true_positive_links"] == 2
    assert list(evaluate(PRED, TRUTH, metrics="rand_index").columns) == ["rand_index"]


def test_unknown_metric_lists_available():
    # the old name of pairwise precision is unknown: one vocabulary, no aliases
    with pytest.raises(
        ValueError, match=r"unknown metric\(s\) 'precision'; choose from: pairwise_precision"
    ):
        evaluate(PRED, TRUTH, metrics=["precision"])


def test_empty_metric_list_and_predictions_rejected():
    with pytest.raises(ValueError, match="no metric given"):
        evaluate(PRED, TRUTH, metrics=[])
    with pytest.raises(ValueError, match="predictions is empty"):
        evaluate({}, TRUTH)


def test_non_series_prediction_named_in_error():
    with pytest.raises(TypeError, match="prediction 'bad' must be a pandas Series"):
        evaluate({"bad": [1, 2, 3]}, TRUTH)
    with pytest.raises(TypeError, match="mapping name -> Series"):
        evaluate([PRED], TRUTH)


def test_undefined_metrics_are_nan_in_the_table():
    singletons = pd.Series(range(8), index=range(1, 9))
    with pytest.warns(UndefinedMetricWarning):
        table = evaluate({"none": singletons}, TRUTH)
    assert math.isnan(table.loc["none", "pairwise_precision"])
    assert table.loc["none", "pairwise_recall"] == 0.0


def test_on_missing_passed_to_the_kernel():
    partial = PRED.iloc[:6]
    with pytest.raises(CoverageError, match="7, 8"):
        evaluate({"p": partial}, TRUTH)
    with pytest.warns(CoverageWarning, match="dropped 2 of 8"):
        table = evaluate({"p": partial}, TRUTH, on_missing="restrict")
    # Shared records 1..6: truth {1,2,3},{4,5},{6}; prediction {1,4},{2,3},{5},{6}:
    # |P| = 2, TP = 1 ({2,3}).
    assert table.loc["p", "pairwise_precision"] == pytest.approx(1 / 2)


def test_patentsview_versions_against_scikit_learn():
    # Real data, string ids, different populations: the 2021-12-30 disambiguation
    # against the 2022-06-30 one on their shared mentions.
    from sklearn import metrics as skm

    from er_evaluation.datasets import load_patentsview_predictions

    versions = load_patentsview_predictions(["2021-12-30", "2022-06-30"])
    old, new = versions["2021-12-30"], versions["2022-06-30"]
    with pytest.warns(CoverageWarning, match=r"dropped 3444 of 133541 reference record\(s\)"):
        table = evaluate(versions["2021-12-30"], new, on_missing="restrict")
    row = table.loc["2021-12-30"]
    shared = old.index.intersection(new.index)
    # Integer codes: scikit-learn sorts string labels, which is slow and changes nothing.
    ref = pd.factorize(new.loc[shared])[0]
    pred = pd.factorize(old.loc[shared])[0]
    (tn2, fp2), (fn2, tp2) = skm.cluster.pair_confusion_matrix(ref, pred)
    assert (
        2 * row["true_positive_links"],
        2 * row["false_positive_links"],
        2 * row["false_negative_links"],
    ) == (tp2, fp2, fn2)
    assert row["pairwise_precision"] == pytest.approx(tp2 / (tp2 + fp2))
    assert row["adjusted_rand_index"] == pytest.approx(skm.adjusted_rand_score(ref, pred))
    assert row["fowlkes_mallows"] == pytest.approx(skm.fowlkes_mallows_score(ref, pred))
    h, c, v = skm.homogeneity_completeness_v_measure(ref, pred)
    assert (row["homogeneity"], row["completeness"], row["v_measure"]) == pytest.approx((h, c, v))
