"""Per-cluster error tables: hand case (Binette et al. 2023 Figure 2), brute force, sampled references."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _helpers import figure2
from hypothesis import given, settings
from hypothesis import strategies as st

from er_evaluation import contingency
from er_evaluation.error_analysis import predicted_cluster_errors, reference_cluster_errors
from er_evaluation.errors import CoverageError, CoverageWarning

TRUTH, PRED = figure2()


def test_reference_side_hand_example():
    # t1 {1,2,3}: in 10 {1,4} (1) and 20 {2,3} (2) -> main 20, extra 0, missing 1, split in 2.
    # t2 {4,5}: in 10 (1 of 2) and 30 {5} (1 of 1): tie -> smaller 30, extra 0, missing 1.
    # t3 {6,7}: inside 40 {6,7,8} -> extra 1 (record 8), missing 0.
    # t4 {8}: inside 40 -> extra 2, missing 0.
    table = reference_cluster_errors(PRED, TRUTH)
    expected = pd.DataFrame(
        {
            "size": [3, 2, 2, 1],
            "main_prediction": [20, 30, 40, 40],
            "overlap": [2, 1, 2, 1],
            "extra": [0, 0, 1, 2],
            "missing": [1, 1, 0, 0],
            "n_predicted_clusters": [2, 2, 1, 1],
        },
        index=pd.Index(["t1", "t2", "t3", "t4"], name="reference_cluster"),
    )
    pd.testing.assert_frame_equal(table.sort_index(), expected, check_dtype=False)


def test_predicted_side_hand_example():
    # 10 {1,4}: one record of t1 (size 3), one of t2 (size 2): tie -> smaller t2; merges 2.
    # 20 {2,3} ⊂ t1; 30 {5} ⊂ t2; 40 {6,7,8}: 2 from t3, 1 from t4 -> share 2/3.
    table = predicted_cluster_errors(PRED, TRUTH)
    expected = pd.DataFrame(
        {
            "size": [2, 2, 1, 3],
            "n_reference_clusters": [2, 1, 1, 2],
            "main_reference": ["t2", "t1", "t2", "t3"],
            "overlap": [1, 2, 1, 2],
            "largest_share": [0.5, 1.0, 1.0, 2 / 3],
        },
        index=pd.Index([10, 20, 30, 40], name="predicted_cluster"),
    )
    pd.testing.assert_frame_equal(table.sort_index(), expected, check_dtype=False)


def test_sampled_reference_counts_extra_records_of_the_full_prediction():
    benchmark = TRUTH[TRUTH.isin(["t1", "t3"])]  # records 1, 2, 3, 6, 7
    table = reference_cluster_errors(PRED, benchmark, scope="prediction")
    # t3 {6,7} sits in 40 = {6,7,8}: record 8 is outside the benchmark but still extra.
    assert table.loc["t3", "extra"] == 1
    assert table.loc["t1", ["main_prediction", "missing", "n_predicted_clusters"]].tolist() == [
        20,
        1,
        2,
    ]
    with pytest.warns(CoverageWarning, match="dropped 3 of 8"):
        shared = reference_cluster_errors(PRED, benchmark, on_missing="restrict")
    assert shared.loc["t3", "extra"] == 0  # restricted to shared records, 8 is gone
    with pytest.raises(CoverageError, match="4, 5, 8"):
        reference_cluster_errors(PRED, benchmark)


def test_precomputed_contingency_and_argument_errors():
    ct = contingency(PRED, TRUTH)
    pd.testing.assert_frame_equal(
        reference_cluster_errors(ct), reference_cluster_errors(PRED, TRUTH)
    )
    pd.testing.assert_frame_equal(
        predicted_cluster_errors(ct), predicted_cluster_errors(PRED, TRUTH)
    )
    with pytest.raises(TypeError, match="not a Contingency and a reference"):
        reference_cluster_errors(ct, TRUTH)
    with pytest.raises(TypeError, match="reference is missing"):
        reference_cluster_errors(PRED, scope="prediction")
    sampled = contingency(PRED, TRUTH.iloc[:5], scope="prediction")
    with pytest.raises(ValueError, match="scope='shared'"):
        predicted_cluster_errors(sampled)


def test_string_ids():
    pred = pd.Series(PRED.astype(str).to_numpy(), index=[f"m{i}" for i in PRED.index])
    truth = pd.Series(TRUTH.to_numpy(), index=pred.index)
    table = reference_cluster_errors(pred, truth)
    assert table.loc["t3", "main_prediction"] == "40"
    assert table["extra"].sum() == 3


@st.composite
def clustering_pairs(draw):
    n = draw(st.integers(1, 14))
    labels = st.lists(st.integers(0, n - 1), min_size=n, max_size=n)
    return draw(labels), draw(labels)


def clusters_of(labels):
    out: dict = {}
    for i, label in enumerate(labels):
        out.setdefault(label, set()).add(i)
    return out


def brute_side(group_labels, partner_labels):
    """Per group cluster: size, best partners (max overlap, then smallest), overlap,
    partner size, number of partners met, by set intersection."""
    groups, partners = clusters_of(group_labels), clusters_of(partner_labels)
    out = {}
    for g, members in groups.items():
        met = {p: len(members & s) for p, s in partners.items() if members & s}
        key = {p: (-k, len(partners[p])) for p, k in met.items()}
        best_key = min(key.values())
        best = {p for p, k in key.items() if k == best_key}
        out[g] = (len(members), best, -best_key[0], best_key[1], len(met))
    return out


@settings(max_examples=80, deadline=None)
@given(clustering_pairs(), st.randoms(use_true_random=False))
def test_against_brute_force_and_relabelling(labels, rnd):
    pred, ref = labels
    index = pd.Index(np.arange(len(pred)) * 5 + 3)
    order = list(range(len(pred)))
    rnd.shuffle(order)
    p = pd.Series([f"p{x}" for x in pred], index=index).iloc[order]
    r = pd.Series(ref, index=index)
    by_ref = reference_cluster_errors(p, r)
    assert len(by_ref) == len(set(ref))
    for c, (size, best, overlap, main_size, met) in brute_side(ref, pred).items():
        row = by_ref.loc[c]
        assert row["size"] == size and row["n_predicted_clusters"] == met
        assert row["main_prediction"] in {f"p{b}" for b in best}
        assert row["overlap"] == overlap
        assert row["extra"] == main_size - overlap
        assert row["missing"] == size - overlap
    by_pred = predicted_cluster_errors(p, r)
    assert len(by_pred) == len(set(pred))
    for c, (size, best, overlap, _, met) in brute_side(pred, ref).items():
        row = by_pred.loc[f"p{c}"]
        assert row["size"] == size and row["n_reference_clusters"] == met
        assert row["main_reference"] in best
        assert row["largest_share"] == pytest.approx(overlap / size)


def test_patentsview_benchmark_against_groupby():
    # The hand-reviewed benchmark samples true inventors inside the 2022-06-30
    # population: extra records are counted on the full predicted clusters.
    from er_evaluation.datasets import load_patentsview_benchmark, load_patentsview_predictions

    prediction = load_patentsview_predictions(["2022-06-30"])["2022-06-30"]
    benchmark = load_patentsview_benchmark()
    table = reference_cluster_errors(prediction, benchmark, scope="prediction")
    assert len(table) == benchmark.nunique() == 401

    full_size = prediction.value_counts()
    frame = pd.DataFrame({"ref": benchmark, "pred": prediction.loc[benchmark.index]})
    cells = frame.groupby(["ref", "pred"]).size().rename("n").reset_index()
    cells["pred_size"] = full_size.loc[cells["pred"]].to_numpy()
    best = cells.sort_values(["ref", "n", "pred_size"], ascending=[True, False, True])
    best = best.drop_duplicates("ref").set_index("ref")
    expected_extra = (best["pred_size"] - best["n"]).rename("extra")
    pd.testing.assert_series_equal(
        table["extra"].sort_index(),
        expected_extra.sort_index(),
        check_names=False,
        check_dtype=False,
        check_index_type=False,
    )
    sizes = benchmark.value_counts()
    assert (table["missing"] == sizes.loc[table.index] - best.loc[table.index, "n"]).all()
    assert (table["n_predicted_clusters"] == cells.groupby("ref").size().loc[table.index]).all()
