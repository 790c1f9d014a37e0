"""Reading and writing clusterings as CSV/TSV/Parquet files."""

from __future__ import annotations

import os

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from er_evaluation.errors import ClusteringError, InputFileError
from er_evaluation.io import read_membership, read_table, write_membership, write_table_atomic

ids_strategy = st.one_of(
    st.lists(st.integers(-(10**12), 10**12), min_size=1, max_size=30, unique=True),
    st.lists(
        st.text(
            st.characters(codec="utf-8", exclude_categories=["Cs", "Cc", "Zs", "Zl", "Zp"]),
            min_size=1,
            max_size=8,
        ),
        min_size=1,
        max_size=30,
        unique=True,
    ),
)


@st.composite
def clusterings(draw):
    ids = draw(ids_strategy)
    labels = draw(st.lists(st.integers(0, 5), min_size=len(ids), max_size=len(ids)))
    if draw(st.booleans()):
        labels = [f"c{c}" for c in labels]
    return pd.Series(labels, index=pd.Index(ids))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(clusterings())
def test_parquet_round_trip_keeps_types(tmp_path, clustering):
    path = write_membership(clustering, tmp_path / "c.parquet")
    back = read_membership(path)
    assert back.index.tolist() == clustering.index.tolist()
    assert back.tolist() == clustering.tolist()


@pytest.mark.slow
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(clusterings(), st.sampled_from([".csv", ".tsv", ".csv.gz", ".tsv.gz"]))
def test_csv_round_trip_reads_ids_as_strings(tmp_path, clustering, suffix):
    path = write_membership(clustering, tmp_path / f"c{suffix}", id_col="rid", cluster_col="cid")
    back = read_membership(path, id_col="rid", cluster_col="cid")
    assert back.index.tolist() == [str(i) for i in clustering.index]
    assert back.tolist() == [str(c) for c in clustering]


def test_csv_keeps_leading_zeros_distinct(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("record,cluster\n007,a\n7,b\n")
    back = read_membership(path)
    assert back.to_dict() == {"007": "a", "7": "b"}


def test_csv_empty_cluster_id_is_named(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("record,cluster\nr1,a\nr2,\nr3,b\n")
    with pytest.raises(ClusteringError, match=r"1 record\(s\) have no cluster id: 'r2'"):
        read_membership(path)


def test_csv_duplicated_ids_are_named(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("record,cluster\nr1,a\nr1,b\nr3,b\n")
    with pytest.raises(
        ClusteringError, match=r"c\.csv: 1 record id\(s\) appear more than once: 'r1'"
    ):
        read_membership(path)


def test_csv_na_strings_are_not_missing(tmp_path):
    # "NA" is a legitimate id (e.g. a name block), not a missing value
    path = tmp_path / "c.csv"
    path.write_text("record,cluster\nNA,x\nr2,NA\n")
    assert read_membership(path).to_dict() == {"NA": "x", "r2": "NA"}


def test_column_selection_and_errors(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("cluster,record,extra\na,r1,0\na,r2,0\n")
    assert read_membership(path, id_col="record", cluster_col="cluster").to_dict() == {
        "r1": "a",
        "r2": "a",
    }
    with pytest.raises(
        ClusteringError, match=r"table has columns \['cluster', 'record', 'extra'\]"
    ):
        read_membership(path)
    with pytest.raises(ClusteringError, match=r"record id column 'id' not found"):
        read_membership(path, id_col="id", cluster_col="cluster")


def test_unknown_suffix_and_missing_file(tmp_path):
    path = tmp_path / "c.xlsx"
    path.write_text("x")
    with pytest.raises(InputFileError, match=r"c\.xlsx: unknown file type \(\.xlsx\); use \.csv"):
        read_table(path)
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_table(tmp_path / "absent.csv")


def test_atomic_write_replaces_and_leaves_no_temporary_files(tmp_path):
    path = tmp_path / "sub" / "t.csv"
    write_table_atomic(pd.DataFrame({"a": [1]}), path)
    write_table_atomic(pd.DataFrame({"a": [2, 3]}), path)
    assert read_table(path)["a"].tolist() == ["2", "3"]
    assert os.listdir(path.parent) == ["t.csv"]


def test_failed_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "t.parquet"
    write_table_atomic(pd.DataFrame({"a": [1]}), path)
    with pytest.raises(Exception):  # noqa: B017 - pyarrow's error type for an object column varies
        write_table_atomic(pd.DataFrame({"a": [object()]}), path)
    assert read_table(path)["a"].tolist() == [1]
    assert os.listdir(tmp_path) == ["t.parquet"]
