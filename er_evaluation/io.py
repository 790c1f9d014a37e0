"""Read and write membership vectors as CSV or Parquet files."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pandas as pd

from er_evaluation.clustering import from_frame, to_frame
from er_evaluation.errors import ClusteringError

__all__ = ["read_table", "read_membership", "write_membership", "write_table_atomic"]

_COMPRESSION = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zip": "zip", ".zst": "zstd"}


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """Read a CSV (``.csv``, ``.tsv``, optionally compressed) or Parquet file into a DataFrame.

    Ids are read as strings from CSV so that ``007`` and ``7`` stay distinct records.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    suffixes = [s.lower() for s in path.suffixes]
    if ".parquet" in suffixes or ".pq" in suffixes:
        return pd.read_parquet(path)
    if ".tsv" in suffixes:
        return pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False, na_values=[""])
    if ".csv" in suffixes:
        return pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    raise ClusteringError(f"{path}: unknown file type; use .csv, .tsv or .parquet")


def read_membership(
    path: str | os.PathLike,
    id_col: str | None = None,
    cluster_col: str | None = None,
    *,
    name: str | None = None,
) -> pd.Series:
    """Read a clustering file (id and cluster columns) into a validated membership vector.

    Without column names, a two-column file is read as (id, cluster). Rows with an
    empty cluster id are an error naming the records, never silently dropped.
    """
    frame = read_table(path)
    return from_frame(frame, id_col=id_col, cluster_col=cluster_col, name=name or str(path))


def write_membership(
    clustering: pd.Series,
    path: str | os.PathLike,
    id_col: str = "record_id",
    cluster_col: str = "cluster_id",
) -> Path:
    """Write a membership vector to CSV or Parquet (by suffix), atomically."""
    return write_table_atomic(to_frame(clustering, id_col, cluster_col), path)


def write_table_atomic(frame: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write ``frame`` to ``path`` (CSV or Parquet by suffix) through a temporary file and
    an atomic rename, so a crash never leaves a half-written file behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    suffixes = [s.lower() for s in path.suffixes]
    # the temporary file's name says nothing about the format: take it from the target's
    compression = next((_COMPRESSION[s] for s in reversed(suffixes) if s in _COMPRESSION), None)
    try:
        if ".parquet" in suffixes or ".pq" in suffixes:
            frame.to_parquet(tmp, index=False)
        else:
            sep = "\t" if ".tsv" in suffixes else ","
            frame.to_csv(tmp, index=False, sep=sep, compression=compression)
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
