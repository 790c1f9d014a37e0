"""The contingency kernel against brute-force counting, and its coverage/type errors."""

from __future__ import annotations

import itertools
import warnings
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from er_evaluation._contingency import contingency
from er_evaluation._contingency_table import comb2
from er_evaluation.errors import ClusteringError, CoverageError, CoverageWarning


@st.composite
def clustering_pairs(draw, scope="shared"):
    """Two clusterings of one population (shared) or a reference that samples the
    prediction's records (prediction), with int or str record and cluster ids and the
    reference in the same or a shuffled record order."""
    n = draw(st.integers(1, 30))
    string_ids = draw(st.booleans())
    offset = draw(st.integers(0, 1000))
    ids = [f"r{i}" for i in range(n)] if string_ids else [offset + 3 * i for i in range(n)]
    k = draw(st.integers(1, n))
    pred = draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
    ref = draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
    if draw(st.booleans()):  # string cluster ids
        pred = [f"p{c}" for c in pred]
        ref = [f"c{c}" for c in ref]
    prediction = pd.Series(pred, index=pd.Index(ids))
    reference = pd.Series(ref, index=pd.Index(ids))
    if scope == "prediction":
        keep = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        keep[draw(st.integers(0, n - 1))] = True
        reference = reference[np.array(keep)]
    order = draw(st.permutations(range(len(reference))))
    if draw(st.booleans()):
        reference = reference.iloc[list(order)]
    return prediction, reference


def brute_force(prediction: pd.Series, reference: pd.Series, scope: str):
    shared = [r for r in reference.index if r in set(prediction.index)]
    cells = Counter((prediction[r], reference[r]) for r in shared)
    population = prediction.index if scope == "prediction" else shared
    # scope "prediction": the predicted clusters the sample touches, with their full sizes
    touched = {prediction[r] for r in shared}
    pred_sizes = Counter(prediction[r] for r in population if prediction[r] in touched)
    ref_sizes = Counter(reference[r] for r in shared)
    return cells, pred_sizes, ref_sizes


def as_counters(table):
    cells = Counter()
    for p, r, c in zip(table.pred, table.ref, table.count, strict=True):
        cells[(table.pred_labels[p], table.ref_labels[r])] += int(c)
    pred_sizes = Counter(dict(zip(table.pred_labels, table.pred_size.tolist(), strict=True)))
    ref_sizes = Counter(dict(zip(table.ref_labels, table.ref_size.tolist(), strict=True)))
    return cells, pred_sizes, ref_sizes


def brute_force_links(prediction: pd.Series, reference: pd.Series):
    records = list(reference.index)
    tp = p = t = 0
    for a, b in itertools.combinations(records, 2):
        same_pred = prediction[a] == prediction[b]
        same_ref = reference[a] == reference[b]
        tp += same_pred and same_ref
        p += same_pred
        t += same_ref
    return tp, p, t


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(clustering_pairs())
def test_shared_scope_matches_brute_force(pair):
    prediction, reference = pair
    table = contingency(prediction, reference)
    assert as_counters(table) == brute_force(prediction, reference, "shared")
    assert table.n_records == table.n_shared == len(prediction)
    assert int(table.count.sum()) == len(prediction)
    assert len(set(zip(table.pred.tolist(), table.ref.tolist(), strict=True))) == len(table.count)
    assert (table.true_positive_links, table.predicted_links, table.true_links) == (
        brute_force_links(prediction, reference)
    )
    np.testing.assert_array_equal(table.cell_pred_size, table.pred_size[table.pred])
    np.testing.assert_array_equal(
        table.per_reference(table.count.astype(float)), table.ref_size.astype(float)
    )
    np.testing.assert_array_equal(
        table.per_prediction(table.count.astype(float)), table.pred_size.astype(float)
    )
    swapped = table.transpose()
    assert swapped.predicted_links == table.true_links
    assert swapped.true_positive_links == table.true_positive_links


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(clustering_pairs(scope="prediction"))
def test_prediction_scope_matches_brute_force(pair):
    prediction, reference = pair
    table = contingency(prediction, reference, scope="prediction")
    assert as_counters(table) == brute_force(prediction, reference, "prediction")
    assert table.n_records == len(prediction)
    assert table.n_shared == len(reference)
    # |P| and K are population totals: they come from the full prediction, not the sample
    assert table.predicted_links == int(comb2(prediction.value_counts().to_numpy()).sum())
    assert table.n_pred_clusters == prediction.nunique()


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(clustering_pairs(scope="prediction"))
def test_restrict_equals_explicit_restriction(pair):
    prediction, reference = pair
    # reference samples the population; evaluate the full prediction on its shared records
    restricted = prediction.loc[reference.index]
    expected = contingency(restricted, reference)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = contingency(prediction, reference, on_missing="restrict")
    dropped = len(prediction) - len(reference)
    assert table.dropped_prediction == dropped
    assert [w.category for w in caught] == ([CoverageWarning] if dropped else [])
    assert as_counters(table) == as_counters(expected)


def test_hand_computed_case():
    # Binette et al. 2023, Figure 2 style: predicted {1,2,3},{4,5}; true {1,2},{3,4,5}
    prediction = pd.Series([0, 0, 0, 1, 1], index=[1, 2, 3, 4, 5])
    reference = pd.Series(["a", "a", "b", "b", "b"], index=[1, 2, 3, 4, 5])
    table = contingency(prediction, reference)
    assert (table.true_positive_links, table.predicted_links, table.true_links) == (2, 4, 4)
    assert sorted(table.count.tolist()) == [1, 2, 2]


def test_identical_and_permuted_order_agree():
    rng = np.random.default_rng(1)
    ids = np.arange(1000) * 7
    prediction = pd.Series(rng.integers(0, 50, 1000), index=ids)
    reference = pd.Series(rng.integers(0, 80, 1000), index=ids)
    permuted = reference.sample(frac=1, random_state=2)
    assert as_counters(contingency(prediction, reference)) == as_counters(
        contingency(prediction, permuted)
    )


def test_sparse_integer_ids_take_the_hashing_path():
    # ids far apart (no dense addressing) must give the same table
    prediction = pd.Series([1, 1, 2], index=[10**15, 3, -(10**12)])
    reference = pd.Series([5, 6, 6], index=[3, -(10**12), 10**15])
    assert as_counters(contingency(prediction, reference)) == brute_force(
        prediction, reference, "shared"
    )


def test_reference_records_absent_from_prediction_error_names_them():
    prediction = pd.Series([1, 1, 2], index=["a", "b", "c"])
    reference = pd.Series([1, 1, 2, 3, 3], index=["a", "b", "c", "x", "y"])
    with pytest.raises(
        CoverageError,
        match=r"2 of 5 reference record\(s\) are absent from the prediction: 'x', 'y'\. "
        r"Pass on_missing='restrict'",
    ):
        contingency(prediction, reference, scope="prediction")


def test_restrict_warns_with_number_dropped():
    prediction = pd.Series([1, 1, 2], index=["a", "b", "c"])
    reference = pd.Series([1, 1, 2, 3, 3], index=["a", "b", "c", "x", "y"])
    with pytest.warns(CoverageWarning, match=r"dropped 2 of 5 reference record\(s\)"):
        table = contingency(prediction, reference, on_missing="restrict")
    assert table.dropped_reference == 2 and table.n_shared == 3


def test_prediction_records_absent_from_reference_in_shared_scope():
    prediction = pd.Series([1, 1, 2, 2], index=["a", "b", "c", "d"])
    reference = pd.Series([1, 1, 2], index=["a", "b", "c"])
    with pytest.raises(
        CoverageError, match=r"1 of 4 prediction record\(s\) are absent from the reference: 'd'"
    ):
        contingency(prediction, reference)
    with pytest.warns(CoverageWarning, match=r"dropped 1 of 4 prediction record\(s\)"):
        assert contingency(prediction, reference, on_missing="restrict").n_records == 3


def test_many_missing_ids_are_abbreviated():
    prediction = pd.Series(0, index=range(3))
    reference = pd.Series(0, index=range(100))
    with pytest.raises(CoverageError) as info:
        contingency(prediction, reference)
    message = str(info.value)
    assert "97 of 100 reference" in message and "3, 4, 5, 6, 7 (and 92 more)" in message
    assert len(message) < 300


@pytest.mark.parametrize("on_missing", ["error", "restrict"])
def test_disjoint_ids_are_an_error_not_a_perfect_score(on_missing):
    prediction = pd.Series([1, 1, 2], index=["a", "b", "c"])
    reference = pd.Series([1, 1, 2], index=["x", "y", "z"])
    with pytest.raises(CoverageError, match="share no record ids"):
        contingency(prediction, reference, on_missing=on_missing)


def test_int_ids_versus_str_ids():
    prediction = pd.Series([1, 1, 2], index=[1, 2, 3])
    reference = pd.Series([1, 1, 2], index=["1", "2", "3"])
    with pytest.raises(
        CoverageError,
        match=r"record ids have different types: prediction ids are numeric \(e\.g\. 1, 2\), "
        r"reference ids are string",
    ):
        contingency(prediction, reference)


def test_duplicated_ids_in_either_side_are_named():
    good = pd.Series([1, 2, 3], index=["a", "b", "c"])
    dup = pd.Series([1, 2, 3], index=["a", "b", "b"])
    with pytest.raises(
        ClusteringError, match=r"reference: 1 record id\(s\) appear more than once: 'b'"
    ):
        contingency(good, dup)
    with pytest.raises(
        ClusteringError, match=r"prediction: 1 record id\(s\) appear more than once: 'b'"
    ):
        contingency(dup, good.iloc[::-1])
    int_dup = pd.Series([1, 2, 3], index=[7, 7, 8])
    with pytest.raises(ClusteringError, match=r"appear more than once: 7"):
        contingency(int_dup, pd.Series([1, 2, 3], index=[8, 7, 9]))
    with pytest.raises(ClusteringError, match=r"appear more than once: 7"):
        contingency(int_dup, int_dup)


def test_bad_arguments():
    s = pd.Series([1], index=["a"])
    with pytest.raises(
        ValueError, match="on_missing must be one of 'error', 'restrict'; got 'drop'"
    ):
        contingency(s, s, on_missing="drop")
    with pytest.raises(ValueError, match="scope must be 'shared' or 'prediction'"):
        contingency(s, s, scope="all")
    with pytest.raises(ClusteringError, match="prediction must be a pandas Series .* got list"):
        contingency([1, 2], s)
    with pytest.raises(ClusteringError, match="reference is empty"):
        contingency(s, pd.Series([], dtype=int))
    with pytest.raises(ValueError, match="only a 'shared'-scope contingency can be transposed"):
        contingency(s, s, scope="prediction").transpose()


def test_categorical_ids_and_clusters():
    prediction = pd.Series(
        pd.Categorical(["x", "x", "y"]), index=pd.CategoricalIndex(["a", "b", "c"])
    )
    reference = pd.Series([1, 2, 2], index=["c", "b", "a"])
    assert as_counters(contingency(prediction, reference)) == brute_force(
        prediction, reference, "shared"
    )


def test_comb2():
    np.testing.assert_array_equal(comb2(np.array([0, 1, 2, 3, 10])), [0, 0, 1, 3, 45])
    assert comb2(np.array([4_000_000_000]))[0] == 4_000_000_000 * 3_999_999_999 // 2
