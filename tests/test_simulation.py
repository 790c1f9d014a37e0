from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from er_evaluation.estimators import estimate, estimate_from_units, unit_table
from er_evaluation.metrics import pairwise_precision, pairwise_recall
from er_evaluation.sampling import sample_records
from er_evaluation.simulation import (
    DEFAULT_ESTIMATORS,
    ERROR_MECHANISMS,
    _census,
    _naive,
    _units_of,
    merge_entities,
    misattribute,
    run_study,
    split_entities,
    zipf_clustering,
)


def synthetic_truth(n_clusters: int = 600, seed: int = 0) -> pd.Series:
    """Heavy-ish tailed cluster sizes (1 + geometric), string ids like real data."""
    rng = np.random.default_rng(seed)
    sizes = 1 + rng.geometric(0.25, size=n_clusters)
    labels = np.repeat([f"c{i}" for i in range(n_clusters)], sizes)
    ids = [f"r{i}" for i in range(len(labels))]
    return pd.Series(labels, index=pd.Index(ids, name="record"))


def test_misattribute_changes_about_rate_and_keeps_ids():
    truth = synthetic_truth()
    pred = misattribute(truth, 0.2, seed=1)
    assert pred.index.equals(truth.index)
    assert set(pred.unique()) <= set(truth.unique())
    changed = int((pred != truth).sum())
    k = round(0.2 * len(truth))
    # a donor in the record's own cluster leaves it unchanged: rare with 600 clusters
    assert 0.95 * k <= changed <= k


def test_misattribute_rate_zero_is_identity_and_seed_reproducible():
    truth = synthetic_truth(50)
    pd.testing.assert_series_equal(misattribute(truth, 0.0, seed=3), truth)
    pd.testing.assert_series_equal(
        misattribute(truth, 0.3, seed=3), misattribute(truth, 0.3, seed=3)
    )
    assert not misattribute(truth, 0.3, seed=3).equals(misattribute(truth, 0.3, seed=4))


def test_misattribute_donors_are_drawn_per_record():
    # one cluster holds 90% of the records: moved records land there about 90% of the time
    truth = pd.Series(["big"] * 9000 + [f"s{i}" for i in range(1000)])
    pred = misattribute(truth, 0.5, seed=0)
    moved_singletons = (truth != "big") & (pred != truth)
    share_big = (pred[moved_singletons] == "big").mean()
    assert abs(share_big - 0.9) < 0.05


@pytest.mark.parametrize("rate", [-0.1, 1.5])
def test_misattribute_rejects_bad_rate(rate):
    with pytest.raises(ValueError, match="rate"):
        misattribute(synthetic_truth(10), rate, seed=0)


@settings(max_examples=40, deadline=None)
@given(
    labels=st.lists(st.integers(0, 6), min_size=2, max_size=40),
    rate=st.floats(0, 1),
    seed=st.integers(0, 2**16),
)
def test_misattribute_properties(labels, rate, seed):
    truth = pd.Series(labels, index=[f"id{i}" for i in range(len(labels))])
    pred = misattribute(truth, rate, seed=seed)
    assert pred.index.equals(truth.index)
    assert set(pred) <= set(truth)
    assert int((pred != truth).sum()) <= round(rate * len(truth))


def test_census_indexing_equals_unit_table_of_the_sample():
    truth = synthetic_truth(300, seed=2)
    pred = misattribute(truth, 0.15, seed=5)
    census = _census(pred, truth)
    sample = sample_records(truth, 80, seed=7)
    fast = _units_of(census, sample)
    direct = unit_table(pred, sample)
    for name in ("size", "pairs", "tp", "plinks", "pout"):
        np.testing.assert_allclose(fast.q[name], direct.q[name], err_msg=name)
    np.testing.assert_allclose(fast.probability, direct.probability)
    assert fast.predicted_links == direct.predicted_links
    assert fast.n_records_population == direct.n_records_population
    for metric, estimator in DEFAULT_ESTIMATORS:
        if estimator == "naive":
            naive = estimate(pred, sample, metric, estimator="naive").value
            assert _naive(pred, sample)[metric] == pytest.approx(naive)
            continue
        for method in ("normal", "studentized"):
            e = estimate(pred, sample, metric, estimator=estimator, ci_method=method)
            f = estimate_from_units(fast, metric, estimator=estimator, ci_method=method)
            assert (f.value, f.std_error, f.ci_low, f.ci_high) == pytest.approx(
                (e.value, e.std_error, e.ci_low, e.ci_high)
            )


@pytest.fixture(scope="module")
def study():
    truth = synthetic_truth(800, seed=11)
    return truth, run_study(
        truth,
        rates=(0.1, 0.3),
        sample_sizes=(60, 120),
        repetitions=150,
        ci_methods=("normal", "fieller"),
        seed=123,
        progress=False,
    )


@pytest.mark.slow
def test_study_shapes(study):
    _, res = study
    R, cells = 150, 2 * 2
    assert len(res.truth) == 2
    assert len(res.replicates) == cells * R * len(DEFAULT_ESTIMATORS)
    # intervals: 3 non-naive estimators x 2 methods, minus Fieller for the record precision (a mean)
    assert len(res.intervals) == cells * R * 5
    assert len(res.summary) == cells * len(DEFAULT_ESTIMATORS)
    assert set(res.coverage["ci_method"]) == {"normal", "fieller"}
    assert res.summary["replicates"].eq(R).all()
    table = res.table("bias", "pairwise_precision")
    assert table.shape == (3, 4)
    assert list(table.index) == ["cluster_block", "naive", "record"]


@pytest.mark.slow
def test_study_truth_is_the_exact_metric(study):
    truth, res = study
    for row in res.truth.itertuples():
        pred = res.predictions[row.rate]
        assert pred.index.equals(truth.index)
        assert row.pairwise_precision == pytest.approx(pairwise_precision(pred, truth))
        assert row.pairwise_recall == pytest.approx(pairwise_recall(pred, truth))
        assert row.changed == int((pred != truth).sum())
        assert abs(row.changed - row.rate * len(truth)) < 0.05 * row.rate * len(truth)


@pytest.mark.slow
def test_study_cluster_block_unbiased_naive_biased(study):
    _, res = study
    s = res.summary.set_index(["rate", "sample_size", "metric", "estimator"])
    for (rate, n, metric, est), row in s.iterrows():
        mc = row["sd"] / math.sqrt(row["replicates"])
        if est in ("cluster_block", "record"):
            # bias-corrected estimators: unbiased within Monte-Carlo error (+ O(1/n^2) remainder)
            assert abs(row["bias"]) < 4 * mc + 0.002, (rate, n, metric, est, row["bias"], mc)
        elif metric == "pairwise_precision":
            assert row["bias"] > 0.05, (rate, n, row["bias"])  # the naive precision is optimistic
    assert s["mean_se"].xs("naive", level="estimator").isna().all()


@pytest.mark.slow
def test_study_coverage_and_summary_consistent(study):
    _, res = study
    iv = res.intervals
    assert iv["covered"].eq((iv["ci_low"] <= iv["truth"]) & (iv["truth"] <= iv["ci_high"])).all()
    c = res.coverage
    assert ((c["coverage"] >= 0) & (c["coverage"] <= 1)).all()
    np.testing.assert_allclose(c["mc_se"], np.sqrt(c["coverage"] * (1 - c["coverage"]) / 150))
    # every finite interval covers, lies wholly below or wholly above the truth
    finite = iv[np.isfinite(iv["ci_low"]) & np.isfinite(iv["ci_high"])]
    assert len(finite) == len(iv)
    np.testing.assert_allclose(c["coverage"] + c["below"] + c["above"], 1.0)
    # normal intervals of the cluster-block precision cover in a sane range on this easy truth
    cb = c[(c["estimator"] == "cluster_block") & (c["ci_method"] == "normal")]
    assert (cb["coverage"] > 0.8).all()
    rep = res.replicates
    one = rep[(rep["estimator"] == "record") & (rep["metric"] == "pairwise_recall")]
    g = one.groupby(["rate", "sample_size"])
    got = res.summary.set_index(["rate", "sample_size", "metric", "estimator"]).xs(
        ("pairwise_recall", "record"), level=("metric", "estimator")
    )
    np.testing.assert_allclose(
        got["rmse"], np.sqrt(g.apply(lambda d: ((d["value"] - d["truth"]) ** 2).mean()))
    )


def test_run_study_rejects_bad_arguments():
    truth = synthetic_truth(20)
    with pytest.raises(ValueError, match="ci_methods"):
        run_study(truth, ci_methods=("nope",), repetitions=1, progress=False)
    with pytest.raises(ValueError, match="repetitions"):
        run_study(truth, repetitions=0, progress=False)
    with pytest.raises(ValueError, match="sample sizes"):
        run_study(truth, sample_sizes=(1,), repetitions=1, progress=False)
    with pytest.raises(ValueError, match="metric"):
        run_study(truth, estimators=[("pairwise_f1", "record")], repetitions=1, progress=False)


def test_run_study_point_estimates_only():
    res = run_study(
        synthetic_truth(100),
        rates=(0.1,),
        sample_sizes=(20,),
        repetitions=3,
        ci_methods=(),
        seed=0,
        progress=False,
    )
    assert len(res.replicates) == 3 * len(DEFAULT_ESTIMATORS)
    assert res.intervals.empty and res.coverage.empty
    assert res.summary["mean_se"].notna().sum() == 3  # the three design-based estimators


def _refines(fine: pd.Series, coarse: pd.Series) -> bool:
    """Every cluster of ``fine`` lies inside one cluster of ``coarse``."""
    return bool((coarse.groupby(fine.to_numpy()).nunique() == 1).all())


def test_misattribute_keep_fixes_a_subset_of_the_errors():
    truth = synthetic_truth(300, seed=4)
    a = misattribute(truth, 0.3, seed=9)
    b = misattribute(truth, 0.3, seed=9, keep=0.5)
    wrong_a, wrong_b = a != truth, b != truth
    assert not (wrong_b & ~wrong_a).any()  # B's errors are errors of A
    assert (b[wrong_b] == a[wrong_b]).all()  # ...made the same way
    assert abs(wrong_b.sum() - wrong_a.sum() / 2) <= 0.1 * wrong_a.sum()
    pd.testing.assert_series_equal(misattribute(truth, 0.3, seed=9, keep=0.0), truth)


@pytest.mark.parametrize("rate", [0.05, 0.3])
def test_merge_entities_merges_whole_entities_up_to_the_rate(rate):
    truth = synthetic_truth(500, seed=1)
    pred = merge_entities(truth, rate, seed=3)
    assert pred.index.equals(truth.index)
    assert _refines(truth, pred)  # no entity is cut
    absorbed = int((pred != truth).sum())
    target = round(rate * len(truth))
    groups = truth.groupby(pred.to_numpy()).nunique()
    assert groups.max() <= 4
    # the last group may pass the target by at most the size of three entities
    largest = truth.value_counts().max()
    assert target <= absorbed <= target + 3 * largest
    # every absorbed entity joined the cluster of its group's first entity, which kept its id
    assert set(pred.unique()) <= set(truth.unique())


def test_merge_entities_keep_undoes_half_of_the_merges():
    truth = synthetic_truth(500, seed=2)
    a = merge_entities(truth, 0.2, seed=5)
    b = merge_entities(truth, 0.2, seed=5, keep=0.5)
    assert _refines(truth, b) and _refines(b, a)
    merged_a = (truth.groupby(a.to_numpy()).nunique() > 1).sum()
    merged_b = (truth.groupby(b.to_numpy()).nunique() > 1).sum()
    assert merged_b == round(merged_a / 2)


@pytest.mark.parametrize("rate", [0.05, 0.3])
def test_split_entities_cuts_within_entities_up_to_the_rate(rate):
    truth = synthetic_truth(500, seed=1)
    pred = split_entities(truth, rate, seed=3)
    assert pred.index.equals(truth.index)
    assert _refines(pred, truth)  # precision stays 1
    moved = pred != truth
    sizes = truth.value_counts()
    target = round(rate * sizes[sizes >= 2].sum())
    assert target <= moved.sum() <= target + sizes.max() // 2
    # an entity keeps at least half of its records
    kept = truth[~moved].value_counts().reindex(sizes.index, fill_value=0)
    assert (kept >= np.ceil(sizes / 2)).all()


def test_split_entities_integer_labels_and_keep():
    truth = pd.Series(np.repeat(np.arange(50), 6))
    a = split_entities(truth, 0.4, seed=1)
    b = split_entities(truth, 0.4, seed=1, keep=0.5)
    assert a.dtype.kind == "i" and a[a != truth].min() > truth.max()
    assert _refines(a, b) and _refines(b, truth)
    n_a = (truth.groupby(a.to_numpy()).size() < 6).sum() // 2
    n_b = (truth.groupby(b.to_numpy()).size() < 6).sum() // 2
    assert n_b == round(n_a / 2)
    # every entity can be split at most once: a rate beyond that splits them all
    assert split_entities(truth, 1.0, seed=0).nunique() == 100


def test_error_mechanisms_rate_zero_and_bad_arguments():
    truth = synthetic_truth(40)
    for mechanism in ERROR_MECHANISMS.values():
        pd.testing.assert_series_equal(mechanism(truth, 0.0, seed=1), truth)
        with pytest.raises(ValueError, match="rate"):
            mechanism(truth, 1.5, seed=1)
        with pytest.raises(ValueError, match="keep"):
            mechanism(truth, 0.1, keep=2.0, seed=1)
    with pytest.raises(ValueError, match="group_size"):
        merge_entities(truth, 0.1, group_size=(1, 3))


def test_zipf_clustering_sizes():
    z = zipf_clustering(20_000, 1.5, max_size=500, seed=0)
    assert len(z) == 20_000 and z.index.equals(pd.RangeIndex(20_000))
    sizes = z.value_counts()
    assert sizes.max() <= 500 and (sizes == 500).sum() > 3  # the cap is reached
    assert (sizes == 1).mean() > 0.3
    lighter = zipf_clustering(20_000, 2.5, max_size=500, seed=0).value_counts()
    assert (lighter == 500).sum() < (sizes == 500).sum() and (lighter == 1).mean() > 0.6
    with pytest.raises(ValueError, match="exponent"):
        zipf_clustering(10, 1.0, max_size=5)
