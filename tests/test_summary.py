"""Summary statistics of one clustering: hand cases and a brute-force property."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from er_evaluation.errors import ClusteringError
from er_evaluation.summary import (
    cluster_size_distribution,
    join_names,
    summary_statistics,
    summary_table,
)

# Clusters {1,4}, {2,3}, {5}, {6,7,8}: sizes 2, 2, 1, 3.
PRED = pd.Series([10, 20, 20, 10, 30, 40, 40, 40], index=range(1, 9))
# Names by record: cluster 10 = {"a b", "d"}, 20 = {"a b", "a c"}, 30 = {"d"},
# 40 = {"a b", "x", "y"}. "a b" is in clusters 10, 20, 40 and "d" in 10, 30, so all
# four clusters share a name with another (homonymy 4/4); 10, 20, 40 hold more than
# one distinct name (name variation 3/4).
NAMES = pd.Series(["a b", "a b", "a c", "d", "d", "a b", "x", "y"], index=range(1, 9))


def test_hand_example():
    stats = summary_statistics(PRED)
    assert stats["n_records"] == 8
    assert stats["n_clusters"] == 4
    assert stats["average_cluster_size"] == 2.0
    assert stats["median_cluster_size"] == 2.0
    assert stats["max_cluster_size"] == 3
    assert stats["singleton_cluster_share"] == pytest.approx(1 / 4)
    assert stats["singleton_record_share"] == pytest.approx(1 / 8)
    assert stats["matching_rate"] == pytest.approx(7 / 8)
    assert "homonymy_rate" not in stats.index


def test_name_statistics_hand_example():
    stats = summary_statistics(PRED, NAMES)
    assert stats["homonymy_rate"] == 1.0
    assert stats["name_variation_rate"] == pytest.approx(3 / 4)
    assert stats["records_without_name"] == 0


def test_name_statistics_without_homonyms():
    # Clusters {1,2} "ann"/"ann", {3} "bob", {4,5} "cy"/"cyrus": no name in two clusters,
    # one cluster of three with two distinct names.
    clustering = pd.Series(["A", "A", "B", "C", "C"], index=list("abcde"))
    names = pd.Series(["ann", "ann", "bob", "cy", "cyrus"], index=list("edcba")[::-1])
    stats = summary_statistics(clustering, names)
    assert stats["homonymy_rate"] == 0.0
    assert stats["name_variation_rate"] == pytest.approx(1 / 3)


def test_missing_names_are_counted_not_dropped_silently():
    names = NAMES.copy()
    names[5] = None  # record 5 is cluster 30's only record: it has no name left
    stats = summary_statistics(PRED, names)
    assert stats["records_without_name"] == 1
    # Over the 3 clusters with a name: "a b" is in 10, 20, 40 -> all homonymous.
    assert stats["homonymy_rate"] == 1.0
    assert stats["name_variation_rate"] == pytest.approx(3 / 3)


def test_names_must_cover_every_record():
    with pytest.raises(
        ClusteringError, match=r"2 record\(s\) of clustering have no entry in names: 7, 8"
    ):
        summary_statistics(PRED, NAMES.iloc[:6])


def test_names_with_repeated_ids_rejected():
    names = pd.concat([NAMES, pd.Series(["z"], index=[1])])
    with pytest.raises(ClusteringError, match="appear more than once: 1"):
        summary_statistics(PRED, names)


def test_names_must_be_a_series():
    with pytest.raises(TypeError, match="names must be a Series"):
        summary_statistics(PRED, list(NAMES))


def test_invalid_clustering_rejected():
    with pytest.raises(ClusteringError, match="more than once"):
        summary_statistics(pd.Series([1, 2], index=[5, 5]))


def test_size_distribution():
    dist = cluster_size_distribution(PRED)
    assert dist.to_dict() == {1: 1, 2: 2, 3: 1}
    assert dist.index.name == "size" and dist.name == "n_clusters"


def test_summary_table_keeps_counts_integer():
    table = summary_table({"pred": PRED, "other": pd.Series(1, index=range(1, 9))}, NAMES)
    assert list(table.index) == ["pred", "other"]
    assert table.index.name == "clustering"
    assert table["n_clusters"].dtype == np.int64
    assert table.loc["other", "n_clusters"] == 1
    assert table.loc["other", "matching_rate"] == 1.0
    assert table.loc["other", "homonymy_rate"] == 0.0  # one cluster cannot share with another
    assert table.loc["pred", "name_variation_rate"] == pytest.approx(3 / 4)


def test_summary_table_errors():
    with pytest.raises(ValueError, match="empty"):
        summary_table({})
    with pytest.raises(TypeError, match="mapping name -> Series"):
        summary_table([PRED])
    with pytest.raises(ClusteringError, match="bad: 1 record id.*more than once: 5"):
        summary_table({"bad": pd.Series([1, 2], index=[5, 5])})


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.sampled_from(["al", "bo", "cy", None])),
        min_size=1,
        max_size=25,
    )
)
def test_against_brute_force(rows):
    clustering = pd.Series([c for c, _ in rows], index=[f"r{i}" for i in range(len(rows))])
    names = pd.Series([n for _, n in rows], index=clustering.index, dtype=object)
    members: dict = {}
    for c, name in rows:
        members.setdefault(c, []).append(name)
    sizes = sorted(len(v) for v in members.values())
    n, k = len(rows), len(sizes)
    stats = summary_statistics(clustering, names)
    assert stats["n_records"] == n and stats["n_clusters"] == k
    assert stats["median_cluster_size"] == pytest.approx(float(np.median(sizes)))
    assert stats["max_cluster_size"] == sizes[-1]
    assert stats["singleton_cluster_share"] == pytest.approx(sizes.count(1) / k)
    assert stats["matching_rate"] == pytest.approx(sum(s for s in sizes if s > 1) / n)
    named = {c: {x for x in v if x is not None} for c, v in members.items()}
    named = {c: v for c, v in named.items() if v}
    if not named:
        assert math.isnan(stats["homonymy_rate"])
    else:
        homonymous = [c for c, v in named.items() if any(v & w for d, w in named.items() if d != c)]
        assert stats["homonymy_rate"] == pytest.approx(len(homonymous) / len(named))
        varied = [c for c, v in named.items() if len(v) > 1]
        assert stats["name_variation_rate"] == pytest.approx(len(varied) / len(named))
    assert stats["records_without_name"] == sum(name is None for _, name in rows)
    dist = cluster_size_distribution(clustering)
    assert int((dist.index * dist).sum()) == n and int(dist.sum()) == k


def test_patentsview_name_statistics_against_groupby():
    # Independent computation with pandas groupby/nunique on the real bundled data.
    from er_evaluation.datasets import load_patentsview_mentions, load_patentsview_predictions

    clustering = load_patentsview_predictions(["2022-06-30"])["2022-06-30"]
    mentions = load_patentsview_mentions()
    names = mentions["name_first"].fillna("") + " " + mentions["name_last"].fillna("")
    stats = summary_statistics(clustering, names)
    frame = pd.DataFrame({"cluster": clustering, "name": names.loc[clustering.index]})
    clusters_per_name = frame.drop_duplicates().groupby("name")["cluster"].nunique()
    shared_names = clusters_per_name.index[clusters_per_name >= 2]
    homonymous = frame.loc[frame["name"].isin(shared_names), "cluster"].nunique()
    n_clusters = frame["cluster"].nunique()
    assert stats["homonymy_rate"] == pytest.approx(homonymous / n_clusters)
    varied = (frame.groupby("cluster")["name"].nunique() > 1).sum()
    assert stats["name_variation_rate"] == pytest.approx(varied / n_clusters)
    sizes = clustering.value_counts()
    assert stats["matching_rate"] == pytest.approx(sizes[sizes > 1].sum() / len(clustering))
    assert stats["max_cluster_size"] == sizes.max()


def test_join_names_hand_case_and_missing_parts():
    # One name routine for the CLI (--names, --demo) and the app's Compare page: parts
    # joined with one space; a missing part leaves the record without a name (counted in
    # records_without_name), never half a name or an empty one.
    table = pd.DataFrame(
        {
            "name_first": ["Ann", None, "Bo", None],
            "name_last": ["Lee", "Kim", None, None],
            "city": ["x", "y", "z", "w"],
        },
        index=["r1", "r2", "r3", "r4"],
    )
    names = join_names(table, ["name_first", "name_last"])
    assert names.name == "name" and names.index.tolist() == ["r1", "r2", "r3", "r4"]
    assert names["r1"] == "Ann Lee" and names[["r2", "r3", "r4"]].isna().all()
    assert join_names(table, ["city"]).tolist() == ["x", "y", "z", "w"]
    stats = summary_statistics(pd.Series(["a", "a", "b", "c"], index=table.index), names)
    assert stats["records_without_name"] == 3
    with pytest.raises(ValueError, match=r"name column\(s\) \['nom'\] not found"):
        join_names(table, ["name_first", "nom"])
    with pytest.raises(ValueError, match="not found"):
        join_names(table, [])
