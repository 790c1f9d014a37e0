"""The two engines' adapters: register clusterings as views ``(id, cluster)``, run SQL,
return small results as Arrow tables. The SQL itself is shared (``_sql.py``)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow as pa

from er_evaluation.engines._table import Table
from er_evaluation.errors import ClusteringError

__all__ = ["View", "backend_for"]

_NUMERIC = (
    "TINYINT SMALLINT INTEGER BIGINT HUGEINT UTINYINT USMALLINT UINTEGER UBIGINT UHUGEINT "
    "FLOAT DOUBLE REAL INT1 INT2 INT4 INT8 BYTE SHORT INT LONG BIGINT DECIMAL"
).split()


@dataclass(frozen=True)
class View:
    """A registered clustering: view ``name`` with columns ``id`` and ``cluster``.
    ``id_kind`` / ``cluster_kind`` use pandas' ``infer_dtype`` vocabulary with every
    number as ``"numeric"`` (what the in-memory kernel compares); ``cluster_float`` says
    whether a NaN cluster id is possible (then it counts as missing, as in pandas)."""

    name: str
    id_kind: str
    cluster_kind: str
    cluster_float: bool


def _kind(type_name: str) -> str:
    t = type_name.upper()
    base = t.split("(")[0].strip()
    if base in _NUMERIC:
        return "numeric"
    if base in ("VARCHAR", "STRING", "TEXT", "CHAR", "ENUM") or t.startswith("ENUM"):
        return "string"
    if base in ("BOOLEAN", "BOOL"):
        return "boolean"
    if base == "DATE":
        return "date"
    if base.startswith("TIMESTAMP"):
        return "datetime64"
    if base in ("BLOB", "BINARY"):
        return "bytes"
    return base.lower()


def _is_float(type_name: str) -> bool:
    return type_name.upper() in ("FLOAT", "DOUBLE", "REAL")


def series_to_arrow(series: pd.Series) -> pa.Table:
    """An (already validated) membership Series as an Arrow table (id, cluster)."""

    def plain(values) -> pa.Array:
        array = pa.array(values, from_pandas=True)
        if pa.types.is_dictionary(array.type):  # categoricals: compare their values
            array = array.dictionary_decode()
        return array

    return pa.table({"id": plain(series.index), "cluster": plain(series.array)})


def _resolve_columns(columns: list[str], t: Table | None, name: str) -> tuple[str, str]:
    id_col = t.id_col if t is not None else None
    cluster_col = t.cluster_col if t is not None else None
    if id_col is None and cluster_col is None:
        if len(columns) != 2:
            raise ClusteringError(
                f"{name}: table has columns {columns}; say which is the record id "
                "and which the cluster id (id_col=..., cluster_col=...)"
            )
        return columns[0], columns[1]
    for role, col in (("record id", id_col), ("cluster id", cluster_col)):
        if col is None:
            raise ClusteringError(f"{name}: the {role} column was not given")
        if col not in columns:
            raise ClusteringError(f"{name}: {role} column {col!r} not found; columns are {columns}")
    return id_col, cluster_col  # type: ignore[return-value]


class DuckDBBackend:
    """Runs on one DuckDB connection: the one given with a table, else a private one."""

    name = "duckdb"

    def __init__(self, tables: list[Table]) -> None:
        duckdb = _import("duckdb", "duckdb")
        given = [t.connection for t in tables if t.connection is not None]
        if given:
            self.con = given[0]
        elif any(_is_relation(t.source) for t in tables):
            self.con = duckdb.default_connection()  # where duckdb.sql()/read_parquet() live
        else:
            self.con = duckdb.connect()
            self.con.execute("SET enable_progress_bar = false")
        self._views: list[str] = []
        self._registered: list[str] = []

    def register(self, item: Table | pd.Series, role: str) -> View:
        name = f"_er_eval_{role}_{uuid.uuid4().hex[:12]}"
        source = name + "_src"
        t = item if isinstance(item, Table) else None
        if t is None:
            self.con.register(source, series_to_arrow(item))
            self._registered.append(source)
            sql = _quote(source)
        elif t.paths:
            sql = _duckdb_reader(t.paths)
        elif t.table_name is not None:
            sql = t.table_name
        elif _is_relation(t.source):
            t.source.create_view(source)
            self._views.append(source)
            sql = _quote(source)
        else:  # an Arrow table
            self.con.register(source, t.source)
            self._registered.append(source)
            sql = _quote(source)
        label = t.name if t is not None else role
        try:
            described = self.con.sql(f"DESCRIBE SELECT * FROM {sql}").fetchall()
        except Exception as error:  # noqa: BLE001 - re-raised with the input named
            hint = (
                "; a relation of another DuckDB connection needs connection= in "
                "er_evaluation.engines.table"
                if t is not None and _is_relation(t.source)
                else ""
            )
            raise ClusteringError(f"{label}: DuckDB cannot read it: {error}{hint}") from error
        types = {row[0]: str(row[1]) for row in described}
        id_col, cluster_col = (
            ("id", "cluster") if t is None else _resolve_columns(list(types), t, label)
        )
        self.con.execute(
            f"CREATE TEMP VIEW {_quote(name)} AS SELECT {_quote(id_col)} AS id, "
            f"{_quote(cluster_col)} AS cluster FROM {sql}"
        )
        self._views.append(name)
        return View(
            name=_quote(name),
            id_kind=_kind(types[id_col]),
            cluster_kind=_kind(types[cluster_col]),
            cluster_float=_is_float(types[cluster_col]),
        )

    def arrow(self, sql: str) -> pa.Table:
        relation = self.con.sql(sql)
        fetch = getattr(relation, "to_arrow_table", None) or relation.fetch_arrow_table
        return fetch()

    def close(self) -> None:
        for view in reversed(self._views):
            self.con.execute(f"DROP VIEW IF EXISTS {_quote(view)}")
        for source in self._registered:
            self.con.unregister(source)


class SparkBackend:
    """Runs on the Spark session given with a table, else the active one."""

    name = "spark"

    def __init__(self, tables: list[Table]) -> None:
        _import("pyspark", "spark")
        from pyspark.sql import SparkSession

        given = [t.connection for t in tables if t.connection is not None]
        frames = [t.source for t in tables if type(t.source).__module__.startswith("pyspark")]
        if given:
            self.spark = given[0]
        elif frames:
            self.spark = frames[0].sparkSession
        else:
            self.spark = SparkSession.getActiveSession()
            if self.spark is None:
                raise ClusteringError(
                    "no active Spark session: start one or pass connection=spark to "
                    "er_evaluation.engines.table"
                )
        self._views: list[str] = []
        self._frames: list[Any] = []

    def register(self, item: Table | pd.Series, role: str) -> View:
        from pyspark.sql import functions as F

        name = f"_er_eval_{role}_{uuid.uuid4().hex[:12]}"
        t = item if isinstance(item, Table) else None
        if t is None:
            frame = self.spark.createDataFrame(series_to_arrow(item))
        elif t.paths:
            frame = _spark_reader(self.spark, t.paths)
        elif t.table_name is not None:
            frame = self.spark.table(t.table_name)
        else:
            frame = t.source
        label = t.name if t is not None else role
        types = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
        id_col, cluster_col = (
            ("id", "cluster") if t is None else _resolve_columns(list(types), t, label)
        )
        view = frame.select(
            F.col(f"`{id_col}`").alias("id"), F.col(f"`{cluster_col}`").alias("cluster")
        )
        # the kernel reads each input two or three times (validation, cells, sizes):
        # keep the two columns after the first read (memory, spilling to disk)
        view.persist()
        view.createOrReplaceTempView(name)
        self._views.append(name)
        self._frames.append(view)
        return View(
            name=name,
            id_kind=_kind(types[id_col]),
            cluster_kind=_kind(types[cluster_col]),
            cluster_float=_is_float(types[cluster_col]),
        )

    def arrow(self, sql: str) -> pa.Table:
        return self.spark.sql(sql).toArrow()

    def close(self) -> None:
        for view in self._views:
            self.spark.catalog.dropTempView(view)
        for frame in self._frames:
            frame.unpersist()


def backend_for(items: list[Any]) -> DuckDBBackend | SparkBackend:
    """The adapter for the engine of the :class:`Table` items (pandas Series among them are
    registered into that engine); all tables must share one engine."""
    tables = [i for i in items if isinstance(i, Table)]
    engines = sorted({t.engine for t in tables})
    if len(engines) != 1:
        raise ValueError(
            f"clusterings on different engines ({', '.join(engines)}) cannot be compared; "
            "read both with the same engine"
        )
    return DuckDBBackend(tables) if engines[0] == "duckdb" else SparkBackend(tables)


def _import(module: str, extra: str) -> Any:
    try:
        return __import__(module)
    except ImportError as error:
        raise ImportError(
            f"this clustering runs on {extra}, which is not installed: "
            f"pip install 'er_evaluation_toolkit[{extra}]'"
        ) from error


def _is_relation(source: Any) -> bool:
    return type(source).__name__ == "DuckDBPyRelation"


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _suffixes(path: str) -> list[str]:
    return [s.lower() for s in path.rsplit("/", 1)[-1].split(".")[1:]]


def _duckdb_reader(paths: tuple[str, ...]) -> str:
    listed = "[" + ", ".join(_literal(p) for p in paths) + "]"
    suffixes = _suffixes(paths[0])
    if "parquet" in suffixes or "pq" in suffixes or not suffixes:
        return f"read_parquet({listed})"
    delim = "\\t" if "tsv" in suffixes else ","
    # every column as text (as read_table does), empty fields missing
    return f"read_csv({listed}, all_varchar = true, header = true, delim = '{delim}')"


def _spark_reader(spark: Any, paths: tuple[str, ...]) -> Any:
    suffixes = _suffixes(paths[0])
    if "parquet" in suffixes or "pq" in suffixes or not suffixes:
        return spark.read.parquet(*paths)
    sep = "\t" if "tsv" in suffixes else ","
    return spark.read.csv(list(paths), header=True, sep=sep, inferSchema=False)
