"""Summary statistics of the true clustering from a reviewed sample: a hand-computed case,
every design's census against :func:`summary_statistics` of the full truth, the estimate
as a ratio of design-weighted totals, and bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _helpers import census

from er_evaluation.datasets import load_rldata10000
from er_evaluation.designs import sample_stratified, size_strata
from er_evaluation.errors import CoverageError
from er_evaluation.estimators import ratio_estimate
from er_evaluation.estimators.truth import estimate_summary
from er_evaluation.sampling import benchmark_sample, sample_blocks, sample_clusters, sample_records
from er_evaluation.simulation import misattribute
from er_evaluation.summary import join_names, summary_statistics
from er_evaluation.vocabulary import TRUTH_STATISTICS

# truth {1,2,3}, {4,5}, {6,7}, {8}; names: cluster 1 has "ann" twice and "anne", cluster 2
# "bob" (also a name of cluster 4), cluster 3 "cy", cluster 4 "bob"
TRUTH = pd.Series([1, 1, 1, 2, 2, 3, 3, 4], index=range(1, 9))
NAMES = pd.Series(["ann", "ann", "anne", "bob", "bob", "cy", None, "bob"], index=range(1, 9))


def values(table: pd.DataFrame) -> pd.Series:
    return table.set_index("metric")["value"]


def test_hand_computed_case():
    # 8 records in 4 clusters: size 2; one singleton: 1/4; 7 of 8 records matched;
    # homonymous: clusters 2 and 4 (bob) of 4 named: 1/2; several names: cluster 1: 1/4
    got = values(estimate_summary(census(TRUTH), NAMES))
    want = {
        "average_cluster_size": 2.0,
        "singleton_cluster_share": 0.25,
        "matching_rate": 7 / 8,
        "homonymy_rate": 0.5,
        "name_variation_rate": 0.25,
    }
    assert list(got.index) == list(TRUTH_STATISTICS)
    for k, v in want.items():
        assert got[k] == pytest.approx(v), k
    exact = summary_statistics(TRUTH, NAMES)
    for k in TRUTH_STATISTICS:
        assert got[k] == pytest.approx(exact[k]), k


def test_one_reviewed_cluster_sees_homonyms_through_the_population():
    # cluster 2 alone: "bob" is also carried by record 8, outside the complete cluster 2
    sample = benchmark_sample(TRUTH[TRUTH == 2], weights="uniform")
    with pytest.warns(UserWarning):  # one unit: no standard error
        got = values(estimate_summary(sample, NAMES, ["homonymy_rate", "name_variation_rate"]))
    assert got["homonymy_rate"] == 1.0 and got["name_variation_rate"] == 0.0


@pytest.fixture(scope="module")
def rldata():
    records, truth = load_rldata10000()
    return truth, join_names(records, ["fname_c1", "lname_c1"])


def test_census_is_exact_every_design(rldata):
    truth, names = rldata
    exact = summary_statistics(truth, names)
    frame = pd.Series(truth.to_numpy() % 30, index=truth.index)
    strata = size_strata(misattribute(truth, 0.1, seed=0))
    designs = {
        "clusters": census(truth),
        "records": sample_records(truth, len(truth), replace=False, seed=1),
        "blocks": sample_blocks(truth, frame, 30, replace=False, seed=0),
        "strata": sample_stratified(truth, strata, len(truth), take_all=list(strata.unique())),
    }
    for name, sample in designs.items():
        table = estimate_summary(sample, names)
        for row in table.itertuples():
            assert row.value == pytest.approx(exact[row.metric], abs=1e-12), (name, row.metric)
            assert row.std_error == pytest.approx(0.0, abs=1e-12)


def test_estimate_is_the_papers_ratio_estimator(rldata):
    # clusters drawn with probability proportional to size: A_s = n_clusters/|c| and
    # B_s = size/|c|, eq. 8-9 literally
    truth, names = rldata
    sample = sample_records(truth, 300, seed=4)
    size = sample.reference.value_counts().reindex(sample.units).to_numpy(dtype=float)
    m = sample.multiplicity
    a, b = np.repeat(1 / size, m), np.repeat(np.ones_like(size), m)
    value, variance = ratio_estimate(a, b)
    row = estimate_summary(sample, names).set_index("metric").loc["average_cluster_size"]
    assert row["value"] == pytest.approx(value)
    assert row["std_error"] == pytest.approx(np.sqrt(variance))
    b = np.repeat(size * (size >= 2) / size, m)
    value, variance = ratio_estimate(np.repeat(np.ones_like(size), m), b)
    row = estimate_summary(sample, names).set_index("metric").loc["matching_rate"]
    assert row["value"] == pytest.approx(value)
    assert row["std_error"] == pytest.approx(np.sqrt(variance))
    assert row["ci_low"] < value < row["ci_high"]


def test_bad_input_is_named(rldata):
    truth, names = rldata
    sample = sample_clusters(truth, 100, seed=2)
    first = sample.reference.index[0]
    with pytest.raises(
        CoverageError, match=rf"1 reviewed record\(s\) have no entry in names: {first}"
    ):
        estimate_summary(sample, names.drop(first))
    with pytest.raises(ValueError, match=r"need the records' names \(names=\)"):
        estimate_summary(sample, None, ["homonymy_rate"])
    with pytest.raises(ValueError, match="unknown truth statistic"):
        estimate_summary(sample, names, ["median_cluster_size"])
    # the names of the reviewed records alone would make every name unique
    with pytest.raises(CoverageError, match="names holds only the 105 reviewed records"):
        estimate_summary(sample, names.reindex(sample.reference.index), ["homonymy_rate"])
    predicted = sample_clusters(misattribute(truth, 0.1, seed=0), 20, seed=1)
    with pytest.raises(ValueError, match="complete TRUE clusters"):
        estimate_summary(predicted.reviewed_predicted(truth), names)
    assert list(values(estimate_summary(sample)).index) == list(TRUTH_STATISTICS[:3])
