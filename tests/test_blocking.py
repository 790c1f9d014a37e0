"""Recall lost to blocking: the per-cluster counts against brute force, the exact values
on a hand-computed case, every design's census against the exact values, a fixed-seed
sample of RLdata10000 against the truth, DuckDB/Spark against pandas, and bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from _helpers import census
from hypothesis import given, settings
from hypothesis import strategies as st

from er_evaluation.datasets import load_rldata10000
from er_evaluation.designs import sample_stratified, size_strata
from er_evaluation.errors import CoverageError
from er_evaluation.estimators import estimate
from er_evaluation.estimators.blocking import (
    blocked_link_counts,
    blocking_metrics,
    blocking_table,
    estimate_blocking,
)
from er_evaluation.metrics import pairwise_recall
from er_evaluation.sampling import sample_blocks, sample_clusters, sample_records
from er_evaluation.simulation import misattribute

# Binette et al. 2023, Figure 2's truth: {1,2,3}, {4,5}, {6,7}, {8}
TRUTH = pd.Series([1, 1, 1, 2, 2, 3, 3, 4], index=range(1, 9), name="truth")
# predicted {1,2,4}, {3}, {5}, {6,7,8}: links (1,2), (1,4), (2,4), (6,7), (6,8), (7,8)
PRED = pd.Series([10, 10, 11, 10, 12, 13, 13, 13], index=range(1, 9), name="prediction")
# one pass: (1,2) and (4,5) share a key; (1,3), (2,3), (6,7) do not
KEY = pd.Series(list("aabccdez"), index=range(1, 9), name="key")
# a second pass, missing for most records: adds (1,3) and (6,7)
KEY2 = pd.Series(["x", None, "x", None, None, "y", "y", None], index=range(1, 9), name="key2")


def brute_force(cluster, keys, predicted):
    """Per cluster, covered and found pairs, by looping over every pair of records."""
    n_clusters = max(cluster) + 1 if len(cluster) else 0
    covered, found = np.zeros(n_clusters), np.zeros(n_clusters)
    for i, j in itertools.combinations(range(len(cluster)), 2):
        if cluster[i] != cluster[j]:
            continue
        agree = any(keys[i][k] == keys[j][k] and keys[i][k] >= 0 for k in range(len(keys[i])))
        covered[cluster[i]] += agree
        found[cluster[i]] += agree and predicted[i] == predicted[j]
    return covered, found


def test_hand_computed_case_one_pass():
    # 5 true links; (1,2) and (4,5) inside blocks: blocking recall 2/5; of those the
    # prediction finds (1,2): matching recall 1/2. It also finds (6,7) outside any block
    # (through the transitive closure of {6,7,8}): recall 2/5 = 2/5 * 1/2 + 1/5
    exact = blocking_metrics(PRED, TRUTH, KEY)
    assert exact["blocking_recall"] == pytest.approx(2 / 5)
    assert exact["matching_recall"] == pytest.approx(1 / 2)
    recall = pairwise_recall(PRED, TRUTH)
    assert recall == pytest.approx(exact["blocking_recall"] * exact["matching_recall"] + 1 / 5)


def test_hand_computed_case_two_passes():
    # pass 2 adds (1,3) and (6,7): 4 of 5 true links covered; found among them (1,2), (6,7)
    keys = pd.concat([KEY, KEY2], axis=1)
    exact = blocking_metrics(PRED, TRUTH, keys, missing_keys="unblocked")
    assert exact["blocking_recall"] == pytest.approx(4 / 5)
    assert exact["matching_recall"] == pytest.approx(2 / 4)
    with pytest.raises(ValueError, match=r"4 record\(s\) have no 'key2' key: 2, 4, 5, 8"):
        blocking_metrics(PRED, TRUTH, keys)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 30).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 5), min_size=n, max_size=n),
            st.lists(st.integers(0, 3), min_size=n, max_size=n),
            st.integers(1, 4).flatmap(
                lambda k: st.lists(
                    st.lists(st.integers(-1, 2), min_size=k, max_size=k), min_size=n, max_size=n
                )
            ),
        )
    )
)
def test_counts_equal_brute_force(data):
    raw_cluster, predicted, keys = data
    cluster = pd.factorize(np.array(raw_cluster))[0]
    want = brute_force(cluster, keys, predicted)
    for method in ("inclusion_exclusion", "enumerate", "auto"):
        covered, found = blocked_link_counts(
            cluster, np.array(keys), np.array(predicted), method=method
        )
        np.testing.assert_array_equal(covered, want[0], err_msg=method)
        np.testing.assert_array_equal(found, want[1], err_msg=method)


def test_enumeration_in_chunks(monkeypatch):
    # chunks smaller than one cluster's pairs give the same counts
    from er_evaluation.estimators import blocking

    rng = np.random.default_rng(3)
    cluster = np.repeat(np.arange(5), [40, 1, 7, 25, 2])
    keys = rng.integers(-1, 4, size=(len(cluster), 2))
    predicted = rng.integers(0, 3, size=len(cluster))
    want = blocked_link_counts(cluster, keys, predicted, method="inclusion_exclusion")
    monkeypatch.setattr(blocking, "_PAIR_CHUNK", 17)
    got = blocked_link_counts(cluster, keys, predicted, method="enumerate")
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.fixture(scope="module")
def rldata():
    records, truth = load_rldata10000()
    prediction = misattribute(truth, 0.1, seed=1)
    return records, truth, prediction


def _assert_census(table: pd.DataFrame, exact: pd.Series):
    for row in table.itertuples():
        assert row.value == pytest.approx(exact[row.metric], abs=1e-12), row.metric
        assert row.std_error == pytest.approx(0.0, abs=1e-12)
        assert row.ci_low == pytest.approx(row.value) and row.ci_high == pytest.approx(row.value)


@pytest.mark.parametrize("passes", [["by"], ["by", "bm"], ["by", "bm", "bd"]])
def test_census_is_exact_clusters(rldata, passes):
    records, truth, prediction = rldata
    keys = records[passes]
    exact = blocking_metrics(prediction, truth, keys)
    _assert_census(blocking_table({"p": prediction}, census(truth), keys), exact)


def test_census_is_exact_blocks_and_strata(rldata):
    records, truth, prediction = rldata
    keys = records["by"]
    exact = blocking_metrics(prediction, truth, keys)
    # a sampling block holds whole true clusters: blocks of true cluster ids
    frame = pd.Series(truth.to_numpy() % 50, index=truth.index)
    blocks = sample_blocks(truth, frame, 50, replace=False, seed=0)
    _assert_census(blocking_table({"p": prediction}, blocks, keys), exact)
    strata = size_strata(prediction)
    take_all = sample_stratified(truth, strata, len(truth), take_all=list(strata.unique()))
    _assert_census(blocking_table({"p": prediction}, take_all, keys), exact)


def test_estimate_is_a_ratio_of_recall_totals(rldata):
    # on a sample of records the estimate is the bias-corrected ratio of the per-cluster
    # totals; with keys every record shares (one block), blocking recall is 1 and
    # matching recall is the recall estimate itself
    records, truth, prediction = rldata
    sample = sample_records(truth, 300, seed=2)
    one_block = pd.Series(0, index=records.index)
    b = estimate_blocking(prediction, sample, one_block)
    assert b.value == 1.0 and b.std_error == 0.0
    m = estimate_blocking(prediction, sample, one_block, "matching_recall")
    r = estimate(prediction, sample, "pairwise_recall")
    for field in ("value", "std_error", "ci_low", "ci_high", "n_units", "n_draws", "n_records"):
        assert getattr(m, field) == pytest.approx(getattr(r, field)), field
    assert m.estimator == r.estimator == "record"


def test_rldata_birth_year_interval_contains_the_truth(rldata, tmp_path, cli):
    # the CLI on files, fixed seed: the interval of blocking_recall holds the exact value
    records, truth, prediction = rldata
    exact = blocking_metrics(prediction, truth, records["by"])
    assert exact["blocking_recall"] == pytest.approx(0.842)
    sample = sample_records(truth, 400, seed=11)
    paths = {k: tmp_path / f"{k}.csv" for k in ("pred", "ref", "blocks")}
    prediction.rename("cluster").to_frame().to_csv(paths["pred"])
    sample.reference.rename("cluster").to_frame().to_csv(paths["ref"])
    records[["by"]].to_csv(paths["blocks"])
    argv = ["estimate", paths["pred"], "--reference", paths["ref"], "--format", "csv"]
    code, out, err = cli([*argv, "--blocks", f"{paths['blocks']}:record_id:by"])
    assert code == 0, err
    import io

    table = pd.read_csv(io.StringIO(out)).set_index("metric")
    assert list(table.index[-2:]) == ["blocking_recall", "matching_recall"]
    for metric in ("blocking_recall", "matching_recall"):
        row = table.loc[metric]
        assert row["ci_low"] <= exact[metric] <= row["ci_high"], metric
        assert 0 < row["ci_high"] - row["ci_low"] < 0.2


def test_engines_equal_pandas(rldata, engine, as_engine_table):
    records, truth, prediction = rldata
    sample = sample_records(truth, 200, seed=4)
    keys = records[["by", "bm"]]
    want = blocking_table({"p": prediction}, sample, keys)
    got = blocking_table({"p": as_engine_table(prediction)}, sample, keys)
    columns = ["value", "std_error", "ci_low", "ci_high", "n_units", "n_records"]
    pd.testing.assert_frame_equal(got[columns], want[columns], rtol=0, atol=1e-12)


def test_restrict_drops_the_records_absent_from_the_prediction(rldata):
    records, truth, prediction = rldata
    sample = sample_records(truth, 200, seed=4)
    gone = sample.reference.index[:3]
    smaller = prediction.drop(gone)
    with pytest.raises(CoverageError, match="absent from the prediction"):
        estimate_blocking(smaller, sample, records["by"])
    with pytest.warns(UserWarning, match="dropped 3"):
        e = estimate_blocking(smaller, sample, records["by"], on_missing="restrict")
    assert e.n_records == sample.n_records - 3 and e.dropped_records == 3


def test_bad_input_is_named(rldata):
    records, truth, prediction = rldata
    sample = sample_records(truth, 50, seed=4)
    first = sample.reference.index[0]
    with pytest.raises(CoverageError, match=rf"1 reviewed record\(s\) have no block keys: {first}"):
        estimate_blocking(prediction, sample, records["by"].drop(first))
    with pytest.raises(ValueError, match="unknown blocking metric"):
        estimate_blocking(prediction, sample, records["by"], "blocking_precision")
    with pytest.raises(ValueError, match="appear more than once"):
        estimate_blocking(prediction, sample, pd.concat([records["by"], records["by"].iloc[:1]]))
    predicted_sample = sample_clusters(prediction, 20, seed=1).reviewed_predicted(truth)
    with pytest.raises(ValueError, match="complete TRUE clusters"):
        estimate_blocking(prediction, predicted_sample, records["by"])
    with pytest.raises(TypeError, match="Series .* or a DataFrame"):
        estimate_blocking(prediction, sample, records["by"].to_dict())


def test_options_are_checked_at_every_entry_point(rldata):
    from er_evaluation.estimators import (
        compare_by_group,
        estimate_by_group,
        estimate_summary,
        group_equality_test,
    )

    records, truth, prediction = rldata
    sample = sample_records(truth, 50, seed=4)
    keys, groups = records["by"], records["by"] > 1970
    calls = {
        "level": lambda: estimate_blocking(prediction, sample, keys, level=1.5),
        "ci_method": lambda: blocking_table({"p": prediction}, sample, keys, ci_method="x"),
        "on_missing": lambda: estimate_blocking(prediction, sample, keys, on_missing="x"),
        "missing_keys": lambda: blocking_metrics(prediction, truth, keys, missing_keys="x"),
        "n_boot": lambda: estimate_by_group(
            prediction, sample, groups, ci_method="percentile", n_boot=3
        ),
        "seed": lambda: compare_by_group({"a": truth, "b": prediction}, sample, groups, seed="x"),
        "beta": lambda: group_equality_test(prediction, sample, groups, beta=-1),
        "validate": lambda: group_equality_test(prediction, sample, groups, validate="yes"),
    }
    for name, call in calls.items():
        with pytest.raises((ValueError, TypeError), match=name):
            call()
    with pytest.raises(ValueError, match="ci_method"):
        estimate_summary(sample, ci_method="x")
