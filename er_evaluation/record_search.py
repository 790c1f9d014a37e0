"""Fast substring search over a records table, to find the records a reviewer must add to
a cluster.

A query is split on whitespace into tokens; a record matches when every token occurs,
case- and accent-insensitively, as a substring of one of its searched fields (a token never
spans two fields). :class:`RecordIndex` normalises the text once (Unicode NFKD, combining
marks dropped, lower-cased, with pyarrow compute kernels) and lays it out as one contiguous
UTF-8 buffer, one row per record in table order, each field followed by a ``\x1f``
separator. A query then scans that buffer:

- the longest token is located with ``bytes.find`` (a C-speed substring search over the
  whole buffer), each hit is mapped to its row by binary search on the row offsets and the
  other tokens are checked inside that row only; the scan jumps to the next row after a
  hit and stops as soon as ``limit`` rows are found, so a common query stops early and a
  rare one costs one pass over the buffer;
- if the scanned token occurs in a large share of the rows (so per-hit Python work would
  dominate), the rest of the table is finished with pyarrow's vectorised
  ``match_substring`` in chunks: Python iterates over at most ``_DENSE`` of the rows scanned;
- a block restriction uses the block's row positions (blocks factorised and grouped once
  with a stable argsort, no per-query dictionary) and matches only those rows, vectorised.

Throughput figures are in ``benchmarks/README.md`` (``benchmarks/bench_search.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from er_evaluation.errors import examples

__all__ = ["RecordIndex", "normalize_text"]

_FIELD_SEP = "\x1f"
# Every _HIT_BUDGET hits, switch to the vectorised scan if more than _DENSE of the rows
# scanned so far were hit: bounds the Python loop to a fraction of the rows.
_HIT_BUDGET = 2_000
_DENSE = 0.2
_CHUNK_ROWS = 1 << 19
# Up to this many result rows are assembled row by row from Arrow slices (see RecordIndex.rows).
_FEW_ROWS = 1_000


def normalize_text(values: pa.Array | pa.ChunkedArray | pd.Series | Sequence) -> pa.Array:
    """Lower-case and accent-fold text: NFKD decomposition, combining marks (Unicode
    category Mn) removed, lower case; missing values become empty strings. Returns a
    pyarrow ``large_string`` array."""
    arr = _as_large_string(values)
    non_ascii = pc.invert(pc.string_is_ascii(arr))
    if pc.any(non_ascii).as_py():
        # Decompose and strip marks only where needed: most rows are ASCII.
        folded = pc.replace_substring_regex(
            pc.utf8_normalize(arr.filter(non_ascii), "NFKD"), r"\p{Mn}", ""
        )
        arr = pc.replace_with_mask(arr, non_ascii, folded)
    # utf8_lower, not ascii_lower: pyarrow 26's ascii_lower corrupts arrays whose offsets
    # do not start at zero (chunks sliced out of a shared buffer, as pandas hands them over).
    return pc.utf8_lower(arr)


def _as_large_string(values: Any) -> pa.Array:
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        arr = values
    elif isinstance(values, pd.Series):
        try:
            arr = pa.Array.from_pandas(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            arr = pa.Array.from_pandas(values.astype("string"))
    else:
        arr = pa.array(list(values))
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        try:
            arr = pc.cast(arr, pa.large_string())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            arr = pa.array(pd.Series(arr.to_pandas()).astype("string"), pa.large_string())
    arr = pc.cast(arr, pa.large_string())
    if isinstance(arr, pa.ChunkedArray):
        arr = pa.concat_arrays(arr.chunks) if arr.num_chunks else pa.array([], pa.large_string())
    return pc.fill_null(arr, "")


class _Haystack:
    """Normalised text of some fields, one row per record in table order, as one bytes
    buffer with int64 row offsets and a zero-copy pyarrow view for vectorised kernels."""

    def __init__(self, columns: list[pa.Array]) -> None:
        sep = pa.scalar(_FIELD_SEP, pa.large_string())
        # The empty last element ends every row with the separator, so no token spans rows.
        empty = pa.scalar("", pa.large_string())
        joined = pc.binary_join_element_wise(*columns, empty, sep)
        columns.clear()  # the caller hands them over: free them before copying the text
        if isinstance(joined, pa.ChunkedArray):
            joined = joined.combine_chunks()
        n = len(joined)
        _, offsets_buf, data_buf = joined.buffers()
        offsets = np.frombuffer(offsets_buf, dtype=np.int64)[joined.offset : joined.offset + n + 1]
        start, stop = int(offsets[0]), int(offsets[-1])
        data = data_buf.to_pybytes()
        self.data = data if (start, stop) == (0, len(data)) else data[start:stop]
        self.offsets = offsets - start
        del joined
        self.array = pa.LargeStringArray.from_buffers(
            n, pa.py_buffer(self.offsets), pa.py_buffer(self.data)
        )

    def scan(self, tokens: list[str], limit: int | None) -> np.ndarray:
        """Rows containing every token, in row order, at most ``limit``."""
        tokens = sorted(tokens, key=len, reverse=True)
        first = tokens[0].encode("utf-8")
        rest = [t.encode("utf-8") for t in tokens[1:]]
        data, offsets = self.data, self.offsets
        found: list[int] = []
        pos, end, hits = 0, len(data), 0
        while True:
            hit = data.find(first, pos, end)
            if hit < 0:
                return np.asarray(found, dtype=np.int64)
            row = int(np.searchsorted(offsets, hit, side="right")) - 1
            row_start, row_end = int(offsets[row]), int(offsets[row + 1])
            if all(data.find(t, row_start, row_end) >= 0 for t in rest):
                found.append(row)
                if limit is not None and len(found) >= limit:
                    return np.asarray(found, dtype=np.int64)
            pos = row_end
            hits += 1
            if hits % _HIT_BUDGET == 0 and hits > _DENSE * (row + 1):
                need = None if limit is None else limit - len(found)
                more = self._vector_scan(tokens, row + 1, len(offsets) - 1, need)
                return np.concatenate([np.asarray(found, dtype=np.int64), more])

    def scan_rows(self, tokens: list[str], rows: np.ndarray, limit: int | None) -> np.ndarray:
        """The given rows (ascending) that contain every token, vectorised, at most ``limit``."""
        view = self.array.take(pa.array(rows))
        for token in sorted(tokens, key=len, reverse=True):
            if len(rows) == 0:
                break
            keep = _mask(pc.match_substring(view, token))
            rows, view = rows[keep], view.filter(pa.array(keep))
        return rows[:limit]

    def _vector_scan(self, tokens: list[str], lo: int, hi: int, limit: int | None) -> np.ndarray:
        parts = []
        total = 0
        for a in range(lo, hi, _CHUNK_ROWS):
            view = self.array.slice(a, min(_CHUNK_ROWS, hi - a))
            rows = np.flatnonzero(_mask(pc.match_substring(view, tokens[0])))
            for token in tokens[1:]:
                if len(rows) == 0:
                    break
                keep = _mask(pc.match_substring(view.take(pa.array(rows)), token))
                rows = rows[keep]
            parts.append(rows + a)
            total += len(rows)
            if limit is not None and total >= limit:
                break
        out = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
        return out if limit is None else out[:limit]


def _mask(boolean: pa.Array) -> np.ndarray:
    return boolean.to_numpy(zero_copy_only=False).astype(bool, copy=False)


class RecordIndex:
    """Search index over a records table (built once; queries are read-only).

    ``records`` holds one row per record. ``id_col`` names the unique record-id column, or
    None when the ids are the table's index (as :func:`er_evaluation.datasets` loaders
    return them; a named index is then searchable under its name). ``text_cols`` are the
    searched fields (default: the id and every column); ``block_col`` an optional blocking
    key (e.g. PatentsView's ``block``) so a search can be restricted to one block. Results
    come in table order.
    """

    def __init__(
        self,
        records: pd.DataFrame,
        id_col: str | None = None,
        text_cols: Sequence[str] | None = None,
        *,
        block_col: str | None = None,
    ) -> None:
        if not isinstance(records, pd.DataFrame):
            raise TypeError(f"records must be a DataFrame, got {type(records).__name__}")
        if len(records) == 0:
            raise ValueError("records table is empty: nothing to search")
        columns = list(records.columns)
        if id_col is None:
            ids = records.index
            name = records.index.name
            self._index_field = name if name is not None and name not in columns else None
            where = "the index"
        else:
            if id_col not in columns:
                raise ValueError(f"records: id column {id_col!r} not found; columns are {columns}")
            ids = pd.Index(records[id_col])
            self._index_field = None
            where = repr(id_col)
        self._searchable = columns + ([self._index_field] if self._index_field else [])
        named = [*(text_cols or []), *([block_col] if block_col is not None else [])]
        unknown = [c for c in named if c not in self._searchable]
        if unknown:
            raise ValueError(
                f"records: column(s) {unknown} not found; columns are {self._searchable}"
            )
        if ids.hasnans:
            raise ValueError(f"records: {int(ids.isna().sum())} missing id(s) in {where}")
        # Index.has_duplicates takes seconds on millions of Arrow strings; factorising is fast.
        if len(ids.array.factorize()[1]) != len(ids):
            raise ValueError(
                f"records: id(s) repeated in {where}: {examples(ids[ids.duplicated()].unique())}"
            )
        self.records = records
        self.id_col = id_col
        self.ids = ids
        if text_cols is None:
            text_cols = ([self._index_field] if self._index_field else []) + columns
        self.text_cols = tuple(text_cols)
        if not self.text_cols:
            raise ValueError("text_cols is empty: name at least one column to search")
        self.block_col = block_col
        if block_col is None:
            self.blocks = pd.Index([])
        else:
            codes, uniques = pd.factorize(self._column(block_col), sort=True)
            self.blocks = pd.Index(uniques)
            # Rows grouped by block, ascending within each: a block is one slice of this.
            self._block_rows = np.argsort(codes, kind="stable")
            counts = np.bincount(codes[codes >= 0], minlength=len(uniques))
            missing = int((codes < 0).sum())
            self._bounds = missing + np.concatenate([[0], np.cumsum(counts)])
        try:
            self._table = pa.Table.from_pandas(records, preserve_index=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            self._table = None  # columns Arrow cannot hold: results fall back to iloc
        self._haystacks: dict[tuple[str, ...], _Haystack] = {}
        self._haystack(self.text_cols)

    def __len__(self) -> int:
        return len(self.records)

    def _column(self, name: str) -> pd.Series:
        if name == self._index_field:
            return pd.Series(self.records.index, index=self.records.index)
        return self.records[name]

    def _haystack(self, fields: tuple[str, ...]) -> _Haystack:
        # Built lazily per field combination; the index may be shared between threads (a
        # Streamlit resource cache), and a race only builds the same haystack twice.
        hay = self._haystacks.get(fields)
        if hay is None:
            hay = _Haystack([normalize_text(self._column(c)) for c in fields])
            self._haystacks[fields] = hay
        return hay

    def tokens(self, query: str) -> list[str]:
        """The normalised, de-duplicated whitespace tokens of ``query``."""
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, got {type(query).__name__}")
        text = normalize_text(pa.array([query], pa.large_string()))[0].as_py()
        text = text.replace(_FIELD_SEP, " ")
        return list(dict.fromkeys(text.split()))

    def block_of(self, record_id: Any) -> Any:
        """Block label of one record (requires ``block_col``)."""
        if self.block_col is None:
            raise ValueError("this index has no block column (block_col=None)")
        pos = self.ids.get_indexer([record_id])[0]
        if pos < 0:
            raise KeyError(f"record {record_id!r} is not in the records table")
        return self._column(self.block_col).iloc[pos]

    def block_rows(self, block: Any) -> np.ndarray:
        """Row positions (ascending) of the records in ``block`` (requires ``block_col``)."""
        if self.block_col is None:
            raise ValueError("block= given but this index has no block column (block_col=None)")
        code = self.blocks.get_indexer([block])[0]
        if code < 0:
            raise ValueError(f"block {block!r} not found in column {self.block_col!r}")
        return self._block_rows[self._bounds[code] : self._bounds[code + 1]]

    def matches(
        self,
        query: str,
        *,
        fields: Sequence[str] | str | None = None,
        block: Any = None,
        limit: int | None = None,
    ) -> np.ndarray:
        """Row positions (into ``records``) of the records matching every token of
        ``query`` in one of ``fields`` (default: all indexed fields), inside ``block`` if
        given, in table order, at most ``limit`` (None: all). An empty query
        matches every record of the block; without a block it is an error."""
        tokens = self.tokens(query)
        if limit is not None and (not isinstance(limit, (int, np.integer)) or limit < 1):
            raise ValueError(f"limit must be a positive integer or None, got {limit!r}")
        if isinstance(fields, str):
            fields = (fields,)
        fields = self.text_cols if fields is None else tuple(fields)
        if not fields:
            raise ValueError("fields is empty: name at least one column to search")
        unknown = [f for f in fields if f not in self._searchable]
        if unknown:
            raise ValueError(f"fields {unknown} not found; columns are {self._searchable}")
        if block is not None:
            rows = self.block_rows(block)
            return self._haystack(fields).scan_rows(tokens, rows, limit) if tokens else rows[:limit]
        if not tokens:
            raise ValueError("empty query: type a name or other text, or choose a block")
        return self._haystack(fields).scan(tokens, limit)

    def search(
        self,
        query: str,
        *,
        fields: Sequence[str] | str | None = None,
        block: Any = None,
        limit: int | None = 50,
    ) -> pd.DataFrame:
        """Records matching every token of ``query`` (see :meth:`matches`), at most
        ``limit`` rows of the records table, in table order."""
        return self.rows(self.matches(query, fields=fields, block=block, limit=limit))

    def rows(self, positions: np.ndarray) -> pd.DataFrame:
        """``records.iloc[positions]``, fast for a few rows of a chunked Arrow-backed table.

        pandas' take on a multi-chunk Arrow column (a table read from Parquet row groups)
        concatenates the whole column first (~40 ms per call at 130k rows, ~0.6 s at 2.6M);
        slicing single rows (zero-copy) and combining only those is independent of the
        table size.
        """
        positions = np.asarray(positions, dtype=np.int64)
        if len(positions) == 0:
            return self.records.iloc[:0]
        if self._table is None or len(positions) > _FEW_ROWS:
            return self.records.iloc[positions]
        pieces = [self._table.slice(int(p), 1) for p in positions]
        out = pa.concat_tables(pieces).combine_chunks().to_pandas()
        out.index = self.records.index[positions]
        return out
