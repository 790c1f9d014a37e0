"""Read and write membership vectors and tables as CSV, TSV or Parquet files.

Every problem with a file (unknown type, empty, not UTF-8, malformed rows, a directory,
no permission) is an error whose message starts with the file's path, never a parser's
traceback.
"""

from __future__ import annotations

import errno
import json
import lzma
import os
import tempfile
import unicodedata
import warnings
import zipfile
import zlib
from pathlib import Path

import pandas as pd

from er_evaluation.clustering import from_frame, to_frame
from er_evaluation.errors import InputFileError

__all__ = ["read_table", "read_membership", "write_membership", "write_table_atomic"]

_COMPRESSION = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zip": "zip", ".zst": "zstd"}
_TYPES = ".csv, .tsv (optionally .gz, .bz2, .xz, .zip, .zst) or .parquet"
# tried, in this order, when a .csv/.tsv header splits into a single column
_OTHER_DELIMITERS = (";", "\t", ",", "|")


def _kind(path: Path) -> str:
    """ "parquet", "csv" or "tsv" from the file name's suffixes; InputFileError otherwise."""
    suffixes = [s.lower() for s in path.suffixes]
    if ".parquet" in suffixes or ".pq" in suffixes:
        return "parquet"
    if ".tsv" in suffixes:
        return "tsv"
    if ".csv" in suffixes:
        return "csv"
    shown = "".join(path.suffixes) or "no extension"
    raise InputFileError(f"{path}: unknown file type ({shown}); use {_TYPES}")


def _check_readable(path: Path) -> None:
    if not path.exists():
        raise FileNotFoundError(errno.ENOENT, "no such file", str(path))
    if not os.access(path, os.R_OK):
        raise PermissionError(errno.EACCES, "no permission to read this file", str(path))


def read_table(path: str | os.PathLike, *, encoding: str = "utf-8") -> pd.DataFrame:
    """Read a CSV (``.csv``, ``.tsv``, optionally compressed) or Parquet file into a DataFrame.

    CSV cells are read as strings so that ids ``007`` and ``7`` stay distinct records; an
    empty cell is missing. A ``.csv``/``.tsv`` file whose header does not split on the
    expected delimiter is read with the first of ``;``, tab, ``,``, ``|`` that does.
    Errors name the file: an empty file, text that is not in ``encoding`` (with the line),
    a data row with more fields than the header (never read as an index column), a
    directory, an unknown extension; and a header that would not read as written, naming
    the column's position: an empty name, a repeated one (also once surrounding spaces
    are stripped), a control or invisible character (a NUL byte, a line break, a second
    byte-order mark) in a name, a UTF-8 byte-order mark read as another encoding.
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file", str(path))
    kind = _kind(path)
    _check_readable(path)
    if kind == "parquet":
        try:
            frame = pd.read_parquet(path)
        except (OSError, ValueError) as error:
            raise InputFileError(f"{path}: cannot read as Parquet ({error})") from error
        _check_header(path, [str(c) for c in frame.columns], encoding)
        return frame
    sep = "\t" if kind == "tsv" else ","
    frame = _read_csv(path, sep, encoding)
    if frame.shape[1] == 1:
        header = str(frame.columns[0])
        for other in _OTHER_DELIMITERS:
            if other != sep and other in header:
                sep = other
                frame = _read_csv(path, other, encoding)
                break
    # pandas renames an empty name to 'Unnamed: N' and a repeated one to 'name.1': the
    # header as written is checked instead
    raw = _read_csv(path, sep, encoding, header=None, nrows=1)
    _check_header(path, ["" if pd.isna(c) else str(c) for c in raw.iloc[0]], encoding)
    return frame


# the UTF-8 byte-order mark decoded as a one-byte encoding (latin-1, cp1252)
_MISREAD_BOM = "\u00ef\u00bb\u00bf"


def _check_header(path: Path, names: list[str], encoding: str) -> None:
    """Refuse a header that would be read as something other than what it says, naming
    the file and the column's position (1-based): a name holding a control or invisible
    format character (a NUL byte, a line break, a second byte-order mark), an empty
    name, two names equal once surrounding spaces are stripped, or a UTF-8 byte-order
    mark read as another encoding's characters."""
    if names and names[0].startswith(_MISREAD_BOM):
        raise InputFileError(
            f"{path}: the header starts with a UTF-8 byte-order mark read as {encoding} text "
            f"({names[0]!r}); read the file as utf-8"
        )
    seen: dict[str, int] = {}
    for position, name in enumerate(names, start=1):
        hidden = [c for c in name if unicodedata.category(c) in ("Cc", "Cf")]
        if hidden:
            raise InputFileError(
                f"{path}: the name of column {position} ({name!r}) holds a control or "
                f"invisible character ({hidden[0]!r}); rename that column"
            )
        key = name.strip()
        if not key:
            raise InputFileError(
                f"{path}: column {position} has no name in the header; name every column"
            )
        if key in seen:
            raise InputFileError(
                f"{path}: columns {seen[key]} and {position} are both named {key!r}"
                + (
                    " (once surrounding spaces are stripped)"
                    if names[seen[key] - 1] != name
                    else ""
                )
                + "; give every column its own name"
            )
        seen[key] = position


def _read_csv(path: Path, sep: str, encoding: str, **options) -> pd.DataFrame:
    try:
        with warnings.catch_warnings():
            # index_col=False keeps pandas from silently taking the first column as the
            # index when every row has one field more than the header; it warns instead
            warnings.simplefilter("error", pd.errors.ParserWarning)
            return pd.read_csv(
                path,
                sep=sep,
                dtype=str,
                keep_default_na=False,
                na_values=[""],
                index_col=False,
                encoding=encoding,
                **options,
            )
    except pd.errors.EmptyDataError as error:
        raise InputFileError(f"{path}: the file is empty (no header row)") from error
    except pd.errors.ParserWarning as error:
        raise InputFileError(
            f"{path}: data rows have more fields than the header; check the delimiter "
            "and quoting, or add the missing column names"
        ) from error
    except pd.errors.ParserError as error:
        detail = str(error).strip().removeprefix("Error tokenizing data. C error: ")
        raise InputFileError(f"{path}: malformed {_name(sep)} ({detail})") from error
    except UnicodeDecodeError as error:
        raise InputFileError(
            f"{path}: not {encoding} text{_where_undecodable(path, encoding)}; save the file "
            "as UTF-8, or give its encoding (e.g. latin-1)"
        ) from error
    except (OSError, EOFError, zlib.error, lzma.LZMAError, zipfile.BadZipFile) as error:
        # a compressed file's decoder says what went wrong but never which file
        suffix = path.suffix.lower()
        if suffix not in _COMPRESSION:
            raise
        kind = _COMPRESSION[suffix]
        raise InputFileError(
            f"{path}: cannot decompress it as {kind} ({error}); a name ending in {suffix} is "
            f"read as {kind}-compressed: if the file is plain text, drop {suffix} from its name"
        ) from error
    except ImportError as error:  # pandas needs zstandard for .zst
        raise InputFileError(
            f"{path}: reading {path.suffix} files needs a package that is not installed ({error})"
        ) from error


def _name(sep: str) -> str:
    return {"\t": "TSV", ",": "CSV"}.get(sep, f"text with delimiter {sep!r}")


def _where_undecodable(path: Path, encoding: str) -> str:
    """ " (byte 0xe9 on line 3)" for the first undecodable byte of an uncompressed file
    (pandas decodes in chunks, so its own offset is not the file's)."""
    if path.suffix.lower() in _COMPRESSION:
        return ""
    data = path.read_bytes()
    try:
        data.decode(encoding)
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        return f" (byte 0x{data[error.start]:02x} on line {line})"
    return ""


def read_membership(
    path: str | os.PathLike,
    id_col: str | None = None,
    cluster_col: str | None = None,
    *,
    name: str | None = None,
    encoding: str = "utf-8",
) -> pd.Series:
    """Read a clustering file (id and cluster columns) into a validated membership vector.

    Without column names, a two-column file is read as (id, cluster); a file with more
    columns needs both names. Rows with an empty cluster id are an error naming the
    records, never silently dropped.
    """
    frame = read_table(path, encoding=encoding)
    return from_frame(frame, id_col=id_col, cluster_col=cluster_col, name=name or str(path))


def write_membership(
    clustering: pd.Series,
    path: str | os.PathLike,
    id_col: str = "record_id",
    cluster_col: str = "cluster_id",
) -> Path:
    """Write a membership vector to CSV, TSV or Parquet (by suffix), atomically."""
    return write_table_atomic(to_frame(clustering, id_col, cluster_col), path)


def chmod_like_new_file(path: str | os.PathLike) -> None:
    """Give ``path`` the permissions a newly created file gets under the user's umask:
    ``tempfile.mkstemp`` creates 0600 files, which would make every atomically written
    output private to its writer."""
    os.chmod(path, 0o666 & ~_umask())


def _umask() -> int:
    # Linux shows the umask without changing it; os.umask() must set one to read it, which
    # would briefly affect files other threads create (the app serves several sessions).
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def write_json_atomic(data: object, path: str | os.PathLike, **dump_options: object) -> Path:
    """Write ``data`` as JSON to ``path`` through a temporary file, fsync and an atomic
    rename, so a crash leaves either the old file or the new one, never half of it."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle, **dump_options)
            handle.flush()
            os.fsync(handle.fileno())
        chmod_like_new_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_table_atomic(frame: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write ``frame`` to ``path`` (CSV, TSV or Parquet by suffix) through a temporary file
    and an atomic rename, so a crash never leaves a half-written file behind.

    An unknown suffix (e.g. ``.xlsx``) is an :class:`InputFileError`, not CSV bytes under
    another name; a directory at ``path`` or a folder that cannot be written raise
    ``IsADirectoryError``/``PermissionError`` naming ``path`` or its folder.
    """
    path = Path(path)
    kind = _kind(path)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file", str(path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:
        # the temporary file's name would mislead: name the folder the user gave
        raise type(error)(
            error.errno, f"cannot write into this folder ({error.strerror})", str(path.parent)
        ) from error
    os.close(fd)
    suffixes = [s.lower() for s in path.suffixes]
    # the temporary file's name says nothing about the format: take it from the target's
    compression = next((_COMPRESSION[s] for s in reversed(suffixes) if s in _COMPRESSION), None)
    try:
        if kind == "parquet":
            frame.to_parquet(tmp, index=False)
        else:
            frame.to_csv(
                tmp, index=False, sep="\t" if kind == "tsv" else ",", compression=compression
            )
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        chmod_like_new_file(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
