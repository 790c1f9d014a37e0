"""A clustering that lives where the data is: a file, a DuckDB table or relation, an Arrow
table or a Spark DataFrame, with the names of its record-id and cluster-id columns."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from er_evaluation.errors import ClusteringError

__all__ = ["Table", "table", "as_table", "FILE_SUFFIXES"]

Engine = Literal["duckdb", "spark"]
FILE_SUFFIXES = (".parquet", ".pq", ".csv", ".tsv")


@dataclass(frozen=True, eq=False)
class Table:
    """A clustering held by an engine: ``source`` has one row per record, the record id
    in column ``id_col`` and its cluster id in ``cluster_col``.

    ``source`` is one of: file path(s) (``paths``: Parquet, CSV or TSV), a table or view
    name of ``connection`` (``table_name``), a DuckDB relation, an Arrow table, a Spark
    DataFrame. ``engine`` is ``"duckdb"`` or ``"spark"``; ``connection`` the DuckDB
    connection or Spark session to run on (None: a private DuckDB connection, or the
    active Spark session). ``name`` is used in error messages.
    """

    source: Any
    id_col: str | None
    cluster_col: str | None
    engine: Engine
    connection: Any = None
    name: str = "clustering"
    paths: tuple[str, ...] = ()
    table_name: str | None = None

    def __repr__(self) -> str:
        what = (
            ", ".join(self.paths) if self.paths else self.table_name or type(self.source).__name__
        )
        return f"Table({what!r}, engine={self.engine!r}, id_col={self.id_col!r}, cluster_col={self.cluster_col!r})"


def table(
    source: Any,
    id_col: str | None = None,
    cluster_col: str | None = None,
    *,
    engine: Engine | None = None,
    connection: Any = None,
    name: str | None = None,
) -> Table:
    """A clustering read in place by DuckDB or Spark, usable wherever a membership Series is.

    ``source``: a path or list of paths to Parquet / CSV / TSV files (a glob such as
    ``"parts/*.parquet"`` works with both engines), a table name of ``connection`` (a DuckDB
    connection or a Spark session), a DuckDB relation, a ``pyarrow.Table`` or a Spark
    DataFrame. ``id_col`` / ``cluster_col`` name the record-id and cluster-id columns
    (default: a two-column source is read as (id, cluster)). ``engine`` is inferred from
    the source (files and Arrow tables: DuckDB) unless given. CSV files are read with
    every column as text, as :func:`er_evaluation.io.read_table` does, so ``007`` and ``7``
    stay distinct records.
    """
    if engine not in (None, "duckdb", "spark"):
        raise ValueError(f"engine must be 'duckdb' or 'spark', got {engine!r}")
    kind = type(source).__module__.split(".")[0]
    paths: tuple[str, ...] = ()
    table_name = None
    if kind == "pyspark":
        inferred: Engine = "spark"
        label = "Spark DataFrame"
    elif kind in ("duckdb", "_duckdb"):
        inferred = "duckdb"
        label = "DuckDB relation"
    elif kind == "pyarrow":
        inferred = "duckdb"
        label = "Arrow table"
    elif isinstance(source, (str, os.PathLike)) or _is_path_list(source):
        items = [source] if isinstance(source, (str, os.PathLike)) else list(source)
        if isinstance(source, str) and connection is not None and not _looks_like_file(source):
            table_name = source
        else:
            paths = tuple(_check_path(p) for p in items)
        label = table_name or ", ".join(paths)
        inferred = "spark" if _is_spark_session(connection) else "duckdb"
    elif isinstance(source, (pd.Series, pd.DataFrame)):
        raise TypeError(
            "in-memory pandas data needs no engine: pass the Series (record id -> cluster id) "
            "directly, or build one with er_evaluation.membership"
        )
    else:
        raise TypeError(
            f"cannot read a clustering from {type(source).__name__}; pass file path(s), a table "
            "name with connection=, a DuckDB relation, a pyarrow.Table or a Spark DataFrame"
        )
    if engine is not None and engine != inferred and not paths and table_name is None:
        raise ValueError(f"a {label} runs on {inferred}, not on engine={engine!r}")
    return Table(
        source=source,
        id_col=id_col,
        cluster_col=cluster_col,
        engine=engine or inferred,
        connection=connection,
        name=name or label,
        paths=paths,
        table_name=table_name,
    )


def as_table(value: Any, name: str) -> Table | None:
    """``value`` as a :class:`Table` if it is an engine-held clustering (a Table, a DuckDB
    relation, an Arrow or Spark table, or a path to a clustering file), else None."""
    if isinstance(value, Table):
        return value
    kind = type(value).__module__.split(".")[0]
    if kind in ("pyspark", "duckdb", "_duckdb", "pyarrow"):
        return table(value, name=name)
    if isinstance(value, os.PathLike) or (isinstance(value, str) and _looks_like_file(value)):
        return table(value, name=str(value))
    return None


def _looks_like_file(path: str | os.PathLike) -> bool:
    suffixes = [s.lower() for s in Path(path).suffixes]
    return any(s in FILE_SUFFIXES for s in suffixes) or os.path.isdir(path)


def _is_path_list(source: Any) -> bool:
    return (
        isinstance(source, Sequence)
        and not isinstance(source, str)
        and len(source) > 0
        and all(isinstance(p, (str, os.PathLike)) for p in source)
    )


def _check_path(path: str | os.PathLike) -> str:
    text = os.fspath(path)
    if "://" in text:  # s3://, hdfs://, ...: the engine resolves it
        return text
    if not any(ch in text for ch in "*?[") and not os.path.exists(text):
        raise FileNotFoundError(f"no such file: {text}")
    if not _looks_like_file(text):
        raise ClusteringError(f"{text}: unknown file type; use .csv, .tsv or .parquet")
    # absolute: Spark's JVM resolves relative paths against its own working directory
    return os.path.abspath(text)


def _is_spark_session(connection: Any) -> bool:
    return type(connection).__module__.split(".")[0] == "pyspark"
