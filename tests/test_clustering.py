"""The membership-vector data model: conversions round-trip, bad input is named."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from er_evaluation.clustering import (
    cluster_sizes,
    from_clusters,
    from_frame,
    from_graph,
    from_pairs,
    membership,
    to_clusters,
    to_frame,
    to_graph,
    to_pairs,
    validate_membership,
)
from er_evaluation.errors import ClusteringError, examples


@st.composite
def clusterings(draw):
    n = draw(st.integers(1, 40))
    if draw(st.booleans()):
        ids = [
            f"id{i}"
            for i in draw(st.lists(st.integers(0, 10**6), min_size=n, max_size=n, unique=True))
        ]
    else:
        ids = draw(st.lists(st.integers(-(10**9), 10**9), min_size=n, max_size=n, unique=True))
    labels = draw(st.lists(st.integers(0, n), min_size=n, max_size=n))
    if draw(st.booleans()):
        labels = [f"c{c}" for c in labels]
    return pd.Series(labels, index=pd.Index(ids))


def same_partition(a: pd.Series, b: pd.Series) -> bool:
    """Equal as partitions of the same record set (cluster ids may be renamed)."""
    if set(a.index) != set(b.index):
        return False
    b = b.loc[a.index]
    pairs = pd.DataFrame({"a": a.to_numpy(), "b": b.to_numpy()}).drop_duplicates()
    return pairs["a"].is_unique and pairs["b"].is_unique


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(clusterings())
def test_clusters_round_trip(clustering):
    clusters = to_clusters(clustering)
    assert sum(len(v) for v in clusters.values()) == len(clustering)
    back = from_clusters(clusters)
    pd.testing.assert_series_equal(
        back.loc[clustering.index],
        clustering,
        check_names=False,
        check_index_type=False,
        check_dtype=False,
    )
    # list form: cluster ids become 0..k-1, the partition is the same
    assert same_partition(from_clusters(list(clusters.values())), clustering)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(clusterings())
def test_pairs_round_trip(clustering):
    pairs = to_pairs(clustering)
    sizes = clustering.value_counts().to_numpy()
    assert len(pairs) == int((sizes * (sizes - 1) // 2).sum())
    # every pair once, within a cluster
    assert not pairs.duplicated().any()
    assert (
        clustering.loc[pairs["id_left"]].to_numpy() == clustering.loc[pairs["id_right"]].to_numpy()
    ).all()
    back = from_pairs(pairs, records=clustering.index)
    assert same_partition(back, clustering)
    assert back.index.equals(clustering.index)


@settings(max_examples=60, deadline=None)
@given(clusterings())
def test_graph_round_trip(clustering):
    graph = to_graph(clustering)
    assert graph.number_of_nodes() == len(clustering)
    assert same_partition(from_graph(graph), clustering)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(clusterings())
def test_frame_round_trip(clustering):
    frame = to_frame(clustering, "rid", "cid")
    assert list(frame.columns) == ["rid", "cid"]
    back = from_frame(frame, "rid", "cid")
    assert back.index.tolist() == clustering.index.tolist()
    assert back.tolist() == clustering.tolist()
    assert from_frame(frame).tolist() == clustering.tolist()  # two columns: (id, cluster)


def test_from_pairs_components_with_singletons_and_chains():
    pairs = pd.DataFrame({"l": ["a", "b", "x"], "r": ["b", "c", "y"]})
    result = from_pairs(pairs, records=["a", "b", "c", "x", "y", "z"])
    assert result.index.tolist() == ["a", "b", "c", "x", "y", "z"]
    assert result["a"] == result["b"] == result["c"]
    assert result["x"] == result["y"] != result["a"]
    assert result["z"] not in (result["a"], result["x"])
    without_records = from_pairs([("a", "b"), ("b", "c"), ("x", "y")])
    assert sorted(without_records.index) == ["a", "b", "c", "x", "y"]
    assert without_records.nunique() == 2


def test_from_pairs_integer_ids_sparse_and_dense():
    for ids in (np.arange(6), np.array([10**15, 5, -3, 7, 10**12, 8])):
        pairs = np.array([[ids[0], ids[1]], [ids[1], ids[2]], [ids[3], ids[4]]])
        result = from_pairs(pairs, records=ids)
        assert result.index.tolist() == ids.tolist()
        assert result.iloc[0] == result.iloc[1] == result.iloc[2]
        assert result.iloc[3] == result.iloc[4] != result.iloc[0]
        assert result.nunique() == 3
        assert from_pairs(pairs).nunique() == 2


def test_from_pairs_self_loops_and_repeated_edges():
    result = from_pairs([(1, 1), (1, 2), (2, 1), (1, 2)], records=[1, 2, 3])
    assert result[1] == result[2] != result[3]


def test_from_pairs_bad_input():
    with pytest.raises(
        ClusteringError, match=r"1 id\(s\) in the pairs are not among the records: 5"
    ):
        from_pairs([(1, 2), (2, 5)], records=[1, 2, 3])
    with pytest.raises(ClusteringError, match=r"not among the records: 'q'"):
        from_pairs([("a", "q")], records=["a", "b"])
    with pytest.raises(ClusteringError, match="records list repeats ids: 1"):
        from_pairs([(1, 2)], records=[1, 1, 2])
    with pytest.raises(ClusteringError, match="records list repeats ids: 'a'"):
        from_pairs([("a", "b")], records=["a", "b", "a"])
    with pytest.raises(ClusteringError, match="is empty: no pairs and no records given"):
        from_pairs([])
    with pytest.raises(ClusteringError, match="is empty: a clustering needs at least one record"):
        from_pairs([], records=[])
    with pytest.raises(ClusteringError, match="pairs must have two id columns, got 3"):
        from_pairs([(1, 2, 3)])
    with pytest.raises(ClusteringError, match=r"missing ids \(NaN/None\)"):
        from_pairs(pd.DataFrame({"l": ["a", None], "r": ["b", "c"]}))
    with pytest.raises(ClusteringError, match=r"missing ids \(NaN/None\)"):
        from_pairs(pd.DataFrame({"l": ["a", None], "r": ["b", "c"]}), records=["a", "b", "c"])
    with pytest.raises(ClusteringError, match=r"record ids mix types \(int: 1, str: 1\)"):
        from_pairs([(1, "a")])


def test_from_pairs_with_no_pairs_gives_singletons():
    result = from_pairs(pd.DataFrame({"l": [], "r": []}), records=["a", "b"])
    assert result.nunique() == 2


def test_membership_accepts_common_shapes():
    expected = pd.Series(["x", "x", "y"], index=[1, 2, 3])
    assert membership(expected).equals(expected)
    assert membership({1: "x", 2: "x", 3: "y"}).tolist() == ["x", "x", "y"]
    assert membership({"x": [1, 2], "y": [3]}).to_dict() == {1: "x", 2: "x", 3: "y"}
    assert membership([[1, 2], [3]]).to_dict() == {1: 0, 2: 0, 3: 1}
    frame = pd.DataFrame({"cluster": ["x", "x", "y"], "rid": [1, 2, 3], "other": [0, 0, 0]})
    assert membership(frame, id_col="rid", cluster_col="cluster").to_dict() == expected.to_dict()


def test_cluster_sizes():
    sizes = cluster_sizes(pd.Series(["x", "x", "y", "x"], index=range(4)))
    assert sizes.to_dict() == {"x": 3, "y": 1}
    assert sizes.iloc[0] == 3


# ---- one test per bad-input case, asserting the message -------------------------------


def test_duplicated_record_ids_are_named():
    with pytest.raises(
        ClusteringError, match=r"prediction: 2 record id\(s\) appear more than once: 'a', 'b'"
    ):
        validate_membership(
            pd.Series([1, 2, 3, 4, 5], index=["a", "a", "b", "b", "c"]), name="prediction"
        )
    with pytest.raises(ClusteringError, match=r"1 record id\(s\) appear more than once: 7"):
        validate_membership(pd.Series([1, 2, 3], index=[7, 8, 7]))
    with pytest.raises(ClusteringError, match=r"appear more than once: 10000000000"):
        validate_membership(pd.Series([1, 2], index=[10**10, 10**10]))
    with pytest.raises(ClusteringError, match=r"1 record id\(s\) appear more than once: 2"):
        from_clusters({"x": [1, 2], "y": [2]})


def test_missing_cluster_ids_are_named():
    with pytest.raises(
        ClusteringError, match=r"reference: 2 record\(s\) have no cluster id: 'b', 'd'"
    ):
        validate_membership(
            pd.Series(["x", None, "y", np.nan], index=["a", "b", "c", "d"]), name="reference"
        )
    frame = pd.DataFrame({"rid": [1, 2], "cid": [3.0, np.nan]})
    with pytest.raises(ClusteringError, match=r"1 record\(s\) have no cluster id: 2"):
        from_frame(frame, "rid", "cid")


def test_missing_record_ids():
    with pytest.raises(ClusteringError, match=r"1 record id\(s\) are missing \(NaN/None\)"):
        validate_membership(pd.Series([1, 2], index=["a", None]))


@pytest.mark.parametrize(
    "build",
    [
        lambda: validate_membership(pd.Series([], dtype=int)),
        lambda: membership({}),
        lambda: from_clusters([]),
        lambda: from_clusters({"x": []}),
        lambda: from_frame(pd.DataFrame({"a": [], "b": []})),
    ],
)
def test_empty_input(build):
    with pytest.raises(ClusteringError, match="is empty: a clustering needs at least one record"):
        build()


def test_mixed_int_and_str_record_ids():
    series = pd.Series([1, 2, 3], index=pd.Index([1, "b", 3], dtype=object))
    with pytest.raises(
        ClusteringError,
        match=r"record ids mix types \(int: 2, str: 1\); convert them to one type \(e\.g\. all str\)\. str at 'b'",
    ):
        validate_membership(series)


def test_mixed_cluster_id_types():
    with pytest.raises(
        ClusteringError, match=r"cluster ids mix types \(int: 2, str: 1\).* str at 'b'"
    ):
        validate_membership(pd.Series([1, "x", 3], index=["a", "b", "c"]))


def test_non_scalar_cluster_ids():
    with pytest.raises(
        ClusteringError, match=r"cluster ids must be scalars; found list at 'a', 'b'"
    ):
        validate_membership(pd.Series([[1], [2]], index=["a", "b"]))
    with pytest.raises(ClusteringError, match=r"cluster ids must be scalars; found tuple"):
        validate_membership(pd.Series([(1, 2), (3, 4)], index=["a", "b"]))


def test_list_of_ints_passed_as_clusters():
    with pytest.raises(
        ClusteringError, match=r"cluster 0 should be a collection of record ids, got int 1"
    ):
        from_clusters([1, 2, 3])
    with pytest.raises(ClusteringError, match=r"got int 1"):
        membership([1, 2, 3])
    with pytest.raises(ClusteringError, match=r"got str 'ab'"):
        membership(["ab", "cd"])


def test_wrong_container_types():
    with pytest.raises(ClusteringError, match=r"must be a pandas Series .* got list"):
        validate_membership([1, 2])
    with pytest.raises(ClusteringError, match=r"cannot build a clustering from int"):
        membership(5)
    with pytest.raises(ClusteringError, match=r"expected a networkx Graph, got dict"):
        from_graph({})
    with pytest.raises(ClusteringError, match="not a MultiIndex"):
        validate_membership(pd.Series([1, 2], index=pd.MultiIndex.from_tuples([(1, 2), (3, 4)])))


def test_frame_column_errors():
    frame = pd.DataFrame({"a": [1], "b": [2], "c": [3]})
    with pytest.raises(ClusteringError, match=r"table has columns \['a', 'b', 'c'\]; say which"):
        from_frame(frame)
    with pytest.raises(
        ClusteringError, match=r"cluster id column 'z' not found; columns are \['a', 'b', 'c'\]"
    ):
        from_frame(frame, "a", "z")
    with pytest.raises(ClusteringError, match=r"the record id column was not given"):
        from_frame(frame, cluster_col="b")


def test_errors_show_at_most_five_ids():
    ids = [f"r{i}" for i in range(50)]
    series = pd.Series([None] * 50, index=ids, dtype=object)
    with pytest.raises(ClusteringError) as info:
        validate_membership(series)
    # the five smallest ids (what every engine names: tables have no record order)
    assert "'r0', 'r1', 'r10', 'r11', 'r12' (and 45 more)" in str(info.value)
    assert "r2'" not in str(info.value)
    assert examples(np.array([3, 4])) == "3, 4"  # numpy scalars print as plain numbers


def test_graph_with_isolated_nodes():
    graph = nx.Graph()
    graph.add_nodes_from(["a", "b", "c"])
    graph.add_edge("a", "b")
    result = from_graph(graph)
    assert result["a"] == result["b"] != result["c"]
