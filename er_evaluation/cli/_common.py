"""Options, input and output shared by the subcommands.

Input: a clustering file is given as ``FILE`` or ``FILE:ID_COL:CLUSTER_COL`` (either
column may be left empty). A two-column file is read as (record id, cluster id); a file
with more columns needs the two names, from the ``FILE:ID_COL:CLUSTER_COL`` form or from
``--id-col``/``--cluster-col`` (which apply to every file without its own names).

Output: one formatting rule for every table: in text tables counts are integers with
thousands separators and proportions have four decimals; CSV and JSON keep full
precision (the shortest decimal that reads back to the same double) and write counts as
integers.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from er_evaluation._progress import stage
from er_evaluation.clustering import from_frame
from er_evaluation.errors import ClusteringError, examples
from er_evaluation.io import read_table

COLUMN_RULE = (
    "A clustering file is FILE or FILE:ID_COL:CLUSTER_COL (CSV, TSV or Parquet). A "
    "two-column file is read as (record id, cluster id); with more columns, name them."
)

# columns of result tables that hold counts whatever their dtype
_COUNT_COLUMNS = {
    "n_records",
    "n_clusters",
    "max_cluster_size",
    "records_without_name",
    "n_units",
    "n_draws",
    "n_records_used",
    "dropped_records",
    "n_labels",
}
# columns of estimate tables that hold a metric's value (proportions or scores)
_VALUE_COLUMNS = {"value", "std_error", "ci_low", "ci_high", "plugin", "level"}
# columns of approximate counts, shown with one decimal (Kish's effective sample size)
_APPROXIMATE_COUNTS = {"n_effective"}


def plain(doc: str | None) -> str:
    """A docstring as help text: Sphinx roles and double backquotes removed
    (``:func:`~a.b.evaluate``` -> ``evaluate``, ````x```` -> ``x``)."""
    if not doc:
        return ""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", lambda m: m.group(1).split(".")[-1], doc)
    return text.replace("``", "")


def add_command(
    subparsers, name: str, doc: str | None, help: str, **options
) -> argparse.ArgumentParser:
    """The subcommand ``name``: ``help`` in the list of commands, and ``doc`` (its module's
    docstring) as its description, plain text laid out as written."""
    return subparsers.add_parser(
        name,
        help=help,
        description=plain(doc),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        **options,
    )


def given_flags(flags: Mapping[str, object]) -> list[str]:
    """The flags of ``flags`` (flag -> parsed value) that were given: those whose value is
    neither None nor False (the defaults of an option and of a switch), 0 included."""
    return [flag for flag, value in flags.items() if value is not None and value is not False]


def flag_terms(message: str, flags: Mapping[str, str]) -> str:
    """Library wording in command-line terms: ``on_missing='restrict'`` becomes
    ``--on-missing restrict``, ``id_col=...`` becomes ``--id-col`` and a check's subject
    such as ``half_width must be ...`` becomes ``--half-width must be ...``, for the
    library names that ``flags`` maps to a flag of the command (``n_strata`` to
    ``--strata``: see ``er_evaluation.cli.main``); other text is unchanged."""

    def replace(match: re.Match) -> str:
        flag = flags.get(match.group(1))
        if flag is None:
            return match.group(0)
        value = match.group(3)
        return flag if value in ("", "...") else f"{flag} {value}"

    def subject(match: re.Match) -> str:
        return flags.get(match.group(1), match.group(0))

    message = re.sub(r"\b([a-z][a-z0-9_]*)=(['\"]?)(\.\.\.|[\w.\-]*)\2", replace, message)
    return re.sub(r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?= must )", subject, message)


def add_output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="write the result to FILE instead of stdout"
    )
    parser.add_argument(
        "--format",
        choices=["table", "csv", "json"],
        help="output format: an aligned text table, csv or json (default: csv or json for "
        "an -o FILE ending in .csv or .json, else table)",
    )


_BINARY_SUFFIXES = {".parquet", ".pq", ".xlsx", ".xls", ".feather", ".arrow", ".sqlite"}


def resolve_output_format(args: argparse.Namespace) -> None:
    """Set ``args.format`` from ``-o``'s file name when ``--format`` was not given (.csv ->
    csv, .json -> json, else table); a name that contradicts ``--format``, or a binary
    format er-eval does not write, is an error naming the file, never text under a
    misleading name."""
    if not hasattr(args, "format"):
        return
    suffix = Path(args.output).suffix.lower() if getattr(args, "output", None) else ""
    implied = {".csv": "csv", ".json": "json"}.get(suffix)
    if suffix in _BINARY_SUFFIXES:
        raise ValueError(
            f"-o {args.output}: er-eval writes text (an aligned table, CSV or JSON); give a "
            ".txt, .csv or .json file name"
        )
    if args.format is None:
        args.format = implied or "table"
    elif implied is not None and implied != args.format:
        raise ValueError(
            f"-o {args.output} names a {implied.upper()} file but --format is {args.format}; "
            f"use --format {implied} or another file name"
        )


def add_clustering_options(parser: argparse.ArgumentParser, *, engine: bool = True) -> None:
    """--id-col, --cluster-col, --encoding and, for commands whose library calls run on
    DuckDB or Spark tables too (``engine``), --engine."""
    parser.add_argument(
        "--id-col",
        metavar="COL",
        help="record id column of every clustering file without its own FILE:ID_COL:CLUSTER_COL",
    )
    parser.add_argument(
        "--cluster-col",
        metavar="COL",
        help="cluster id column of every clustering file without its own FILE:ID_COL:CLUSTER_COL",
    )
    parser.add_argument(
        "--encoding",
        default="utf-8",
        help="text encoding of CSV/TSV inputs (default utf-8; e.g. latin-1)",
    )
    parser.add_argument(
        "--id-type",
        choices=ID_TYPES,
        default="auto",
        help="record ids as text (str) or integers (int) in every file; auto (default): "
        "text, except that where one file has integer ids (Parquet) and another plain "
        "integers as text (CSV: 7, not 007 nor +7), the text ids are read as integers",
    )
    if not engine:
        return
    parser.add_argument(
        "--engine",
        choices=["auto", "pandas", "duckdb", "spark"],
        default="auto",
        help="where the clusterings are computed: pandas (in memory), duckdb (reads the files "
        "in place, out of core) or spark (local unless SPARK_MASTER/spark-submit says "
        f"otherwise); auto: duckdb for Parquet files of {AUTO_DUCKDB_MB} MB or more when "
        "duckdb is installed, pandas otherwise",
    )


#: Parquet files from this size on are read by DuckDB under ``--engine auto`` (about 10M
#: records with integer ids: where pandas still takes seconds, before it takes gigabytes).
AUTO_DUCKDB_MB = 100


def engine_for(path: str, engine: str) -> str:
    """The engine ``--engine`` names, or for ``auto`` the one that suits the file."""
    if engine != "auto":
        return engine
    suffixes = [s.lower() for s in os.path.basename(path).split(".")[1:]]
    if ("parquet" in suffixes or "pq" in suffixes) and os.path.isfile(path):
        if os.path.getsize(path) >= AUTO_DUCKDB_MB * 2**20:
            try:
                import duckdb  # noqa: F401
            except ImportError:
                return "pandas"
            return "duckdb"
    return "pandas"


def split_spec(spec: str) -> tuple[str, str | None, str | None]:
    """``FILE[:ID_COL[:CLUSTER_COL]]`` as (path, id column or None, cluster column or None).
    A name that exists as a file is taken whole, so paths holding ``:`` still work."""
    if Path(spec).exists() or ":" not in spec:
        return spec, None, None
    path, _, cols = spec.partition(":")
    id_col, _, cluster_col = cols.partition(":")
    return path, id_col or None, cluster_col or None


def _spark_session():
    try:
        from pyspark.sql import SparkSession
    except ImportError as error:
        raise ImportError(
            "--engine spark needs pyspark: pip install 'er_evaluation_toolkit[spark]'"
        ) from error
    builder = SparkSession.builder.appName("er-eval").config(
        "spark.ui.showConsoleProgress", "false"
    )
    if os.environ.get("SPARK_MASTER"):
        builder = builder.master(os.environ["SPARK_MASTER"])
    return builder.getOrCreate()


def read_clustering(
    spec: str, args: argparse.Namespace, name: str | None = None, *, in_memory: bool = False
):
    """The clustering of ``spec`` (``FILE`` or ``FILE:ID_COL:CLUSTER_COL``), its columns
    chosen by the rule of :data:`COLUMN_RULE`; errors name the file and the options. A
    membership Series (pandas engine, or ``in_memory`` for a reviewed sample), or a table
    read in place by DuckDB or Spark (``--engine``; never loaded into pandas)."""
    path, id_col, cluster_col = split_spec(spec)
    id_col = id_col or getattr(args, "id_col", None)
    cluster_col = cluster_col or getattr(args, "cluster_col", None)
    engine = "pandas" if in_memory else engine_for(path, getattr(args, "engine", "pandas"))
    if engine != "pandas":
        from er_evaluation.engines import table

        session = _spark_session() if engine == "spark" else None
        return table(
            path, id_col, cluster_col, engine=engine, connection=session, name=name or path
        )
    with stage(f"reading {path}"):
        frame = read_table(path, encoding=getattr(args, "encoding", "utf-8"))
    columns = [str(c) for c in frame.columns]
    for role, col in (("record id", id_col), ("cluster id", cluster_col)):
        if col is not None and col not in columns:
            raise ClusteringError(
                f"{path}: no {role} column {col!r}; its columns are {', '.join(columns)}"
            )
    if id_col is None or cluster_col is None:
        rest = [c for c in columns if c not in (id_col, cluster_col)]
        if len(columns) != 2 or len(rest) != 2 - (id_col is not None) - (cluster_col is not None):
            raise ClusteringError(
                f"{path} has {len(columns)} column(s) ({', '.join(columns)}): say which holds "
                f"the record id and which the cluster id, as {path}:ID_COL:CLUSTER_COL or "
                "with --id-col and --cluster-col"
            )
        if id_col is None and cluster_col is None:
            id_col, cluster_col = rest
        elif id_col is None:
            id_col = rest[0]
        else:
            cluster_col = rest[0]
    return from_frame(frame, id_col=id_col, cluster_col=cluster_col, name=name or path)


ID_TYPES = ("auto", "str", "int")
_PLAIN_INTEGER = r"0|-?[1-9][0-9]*"


def _id_kind(ids: pd.Index) -> str:
    if pd.api.types.is_integer_dtype(ids.dtype):
        return "int"
    if pd.api.types.infer_dtype(ids, skipna=False) == "string":
        return "str"
    return "other"


def _as_integers(clustering: pd.Series, label: str) -> pd.Series:
    ids = clustering.index
    text = pd.Series(ids.astype(str), index=ids)
    bad = ~text.str.fullmatch(r"[+-]?[0-9]+")
    if bad.any():
        raise ClusteringError(
            f"{label}: --id-type int, but {int(bad.sum()):,} record id(s) are not integers: "
            f"{examples(text[bad])}"
        )
    numbers = pd.Index(text.astype(np.int64).to_numpy(), name=ids.name)
    twice = numbers.duplicated(keep=False)
    if twice.any():
        raise ClusteringError(
            f"{label}: --id-type int makes different record ids one integer: "
            f"{examples(ids[twice])}; use --id-type str"
        )
    return clustering.set_axis(numbers)


def common_ids(clusterings: list, labels: list[str], id_type: str = "auto") -> list:
    """``clusterings`` (membership Series; tables held by an engine pass unchanged) with
    record ids of one type, by ``--id-type``: ``str`` writes integer ids as text, ``int``
    reads text ids as integers (an id that is not one is an error naming the file), and
    ``auto`` reads text ids as integers when another file has integer ids and every text
    id is a plain integer (``7``; ``007``, ``+7`` or ``7.0`` keep the files apart: an error
    naming both files and the way out)."""
    series = [(i, c) for i, c in enumerate(clusterings) if isinstance(c, pd.Series)]
    kinds = {i: _id_kind(c.index) for i, c in series}
    out = list(clusterings)
    if id_type == "str":
        for i, c in series:
            if kinds[i] != "str":
                out[i] = c.set_axis(c.index.astype(str))
        return out
    if id_type == "int":
        for i, c in series:
            if kinds[i] != "int":
                out[i] = _as_integers(c, labels[i])
        return out
    if not ({"int", "str"} <= set(kinds.values())):
        return out
    integers = next(labels[i] for i in kinds if kinds[i] == "int")
    for i, c in series:
        if kinds[i] != "str":
            continue
        text = pd.Series(c.index, dtype=object)
        plain = text.str.fullmatch(_PLAIN_INTEGER)
        if not plain.all():
            raise ClusteringError(
                f"record ids have different types: {integers} has integer ids, {labels[i]} "
                f"text ids that are not all plain integers ({examples(text[~plain])}); "
                "give --id-type str to compare them as text, or --id-type int to read every "
                "id as an integer"
            )
        out[i] = _as_integers(c, labels[i])
    return out


def label_of(spec: str) -> str:
    """The file part of a ``FILE:ID_COL:CLUSTER_COL`` spec (for row and column labels)."""
    return split_spec(spec)[0]


def _kind(name, column: pd.Series) -> str:
    """ "count", "proportion" (four decimals) or "real" for a result column."""
    from er_evaluation.vocabulary import REGISTRY, parse_fscore

    metric = REGISTRY.get(str(name))
    if (metric is not None and metric.kind != "count") or parse_fscore(str(name)):
        return "proportion"
    if str(name) in _APPROXIMATE_COUNTS:
        return "approximate"
    if str(name) in _VALUE_COLUMNS:
        return "proportion"
    if metric is not None or str(name) in _COUNT_COLUMNS:
        return "count"
    if pd.api.types.is_bool_dtype(column):
        return "other"
    if pd.api.types.is_integer_dtype(column):
        return "count"
    if pd.api.types.is_float_dtype(column):
        return "real"
    return "other"


def _integral(values: np.ndarray) -> bool:
    finite = values[np.isfinite(values)]
    return bool(np.all(finite == np.round(finite)))


def _text_cell(value, kind: str, integral: bool) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "nan"
    if kind == "count" and integral:
        return f"{int(value):,}"
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return f"{int(value):,}"  # a count among other values (a table of statistics)
    if kind == "approximate" and isinstance(value, (int, float, np.number)):
        return f"{value:,.1f}"
    if kind in ("count", "real", "proportion") and isinstance(value, (int, float, np.number)):
        return f"{value:,.4f}" if abs(value) >= 1000 else f"{value:.4f}"
    return str(value)


def format_text(table: pd.DataFrame) -> pd.DataFrame:
    """Every numeric cell of ``table`` as text: counts as integers with thousands
    separators (a count column holding a fraction, e.g. a median of 2.5, keeps four
    decimals; an integer in a column of mixed values is a count too), effective sample
    sizes with one decimal, proportions and other reals with four decimals."""
    out = pd.DataFrame(index=table.index)
    for name in table.columns:
        column = table[name]
        kind = _kind(name, column)
        if kind == "other":
            out[name] = column.astype(str)
            continue
        values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)
        integral = _integral(values)
        if kind == "real" and integral and not str(name).endswith(("_rate", "_share")):
            kind = "count"  # e.g. a median cluster size of 2.0, a merge distance of 5626.0
        out[name] = [_text_cell(v, kind, integral) for v in column.to_numpy()]
    return out


def _plain_scalar(value, count: bool):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        if count and value == int(value):
            return int(value)
    return value


def machine_frame(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with count columns as integers (nullable), for CSV and JSON."""
    out = table.copy()
    for name in out.columns:
        column = out[name]
        if _kind(name, column) == "count" and pd.api.types.is_float_dtype(column):
            values = column.to_numpy(dtype=float)
            if _integral(values):
                out[name] = column.round().astype("Int64")
    return out


def json_text(table: pd.DataFrame, *, orient: str = "index") -> str:
    """JSON of ``table`` with full double precision, counts as integers and NaN as null:
    ``{row: {column: value}}`` (orient="index") or a list of rows (orient="records",
    the index becoming columns)."""
    frame = machine_frame(table)
    counts = {n for n in frame.columns if _kind(n, frame[n]) == "count"}

    def row(values: pd.Series) -> dict:
        return {str(k): _plain_scalar(v, k in counts) for k, v in values.items()}

    if orient == "records":
        flat = frame.reset_index() if any(n is not None for n in frame.index.names) else frame
        data = [row(r) for _, r in flat.astype(object).iterrows()]
    else:
        data = {str(k): row(r) for k, r in frame.astype(object).iterrows()}
    return json.dumps(data, indent=2, allow_nan=False) + "\n"


def write_output(text: str, args: argparse.Namespace) -> None:
    """``text`` to ``--output`` (errors name the file) or stdout."""
    if args.output:
        path = Path(args.output)
        if path.is_dir():
            raise IsADirectoryError(21, "is a directory; give a file name to -o", str(path))
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)


def emit(table: pd.DataFrame, args: argparse.Namespace, *, orient: str = "index") -> None:
    """Write ``table`` in the requested ``--format`` to ``--output`` or stdout."""
    if args.format == "csv":
        text = machine_frame(table).to_csv()
    elif args.format == "json":
        text = json_text(table, orient=orient)
    else:
        text = format_text(table).to_string() + "\n"
    write_output(text, args)
