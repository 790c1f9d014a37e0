"""Record ids in one lean pass: the uniqueness check and the alignment of a sample to the
population it was drawn from.

Done the obvious way, both are costly at 10M records: ``Index.is_unique`` and
``Index.get_indexer`` leave a hash table of every id on the caller's index (pandas caches
it there), and factorising all ids allocates several population-sized arrays and, for
string ids, a hash pass over the strings as costly as the whole contingency count. Here:

- compact integer ids are marked in a byte array (one byte per possible id);
- a RangeIndex is unique by construction and its positions are arithmetic: it is never
  turned into an array (pandas would cache that population-sized array on it);
- other integer ids and Arrow-backed string ids become 64-bit keys (the integers
  themselves; for strings a polynomial hash of each string's bytes, computed with numpy
  on the Arrow buffers). Equal ids have equal keys, hence equal 32-bit prefixes of the
  mixed keys; only the prefixes are sorted (4 bytes a record, written over the keys'
  own buffer; a quarter less CPU than sorting the 64-bit keys, on 1M and 10M string
  ids: benchmarks/README.md), and only the few records whose prefix another record
  shares are compared as ids, exactly (which also names the duplicated ids);
- a sample is found in the population by looking up the population's keys, one chunk at
  a time, in a hash table of the sample's keys: the population is read once and every
  array beyond the population's keys is sample-sized. String matches are compared as
  strings, so a hash collision cannot pair two different ids.

Ids of other types (floats, objects, categoricals, datetimes) return ``None`` from
:func:`locate` and the caller falls back to its exact factorisation.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from er_evaluation.clustering import _dense_ints, duplicate_error, duplicated_ids

__all__ = ["check_unique", "locate", "positions", "range_positions", "same_ids"]

#: records per chunk of a pass over the population (bounds its transient arrays)
_CHUNK = 1 << 18
#: string bytes hashed per step (bounds the hash's transient arrays: 8 bytes per byte)
_BYTES = 1 << 18
_MULTIPLIER = 0x9E3779B97F4A7C15  # odd, so invertible modulo 2**64
_INVERSE = pow(_MULTIPLIER, -1, 2**64)
_LENGTH_MIX = np.uint64(0xC2B2AE3D27D4EB4F)


def check_unique(index: pd.Index, name: str, keys: np.ndarray | None = None) -> None:
    """Raise the data model's duplicate-id error (:func:`~er_evaluation.clustering.
    duplicate_error`, naming the five smallest duplicated ids) if an id of ``index``
    occurs more than once. ``keys``: the index's 64-bit keys, our own array, if already
    computed (they are overwritten)."""
    if isinstance(index, pd.RangeIndex):
        return  # a range holds each id once
    if keys is None:
        if (dense := _dense_ints(index)) is not None:
            if _dense_unique(dense):
                return
            raise duplicate_error(duplicated_ids(index), name)
        keys = _keys(index)
        if keys is None:  # no keys: the exact check is the check
            if len(duplicated := duplicated_ids(index)):
                raise duplicate_error(duplicated, name)
            return
        if _arrow_strings(index) is None:  # integer keys: the index's own array
            keys = keys.copy()
    suspects = _shared_prefixes(keys)
    if len(suspects):
        duplicated = duplicated_ids(index.take(suspects))  # exact, among the few suspects
        if len(duplicated):
            raise duplicate_error(duplicated, name)


def locate(population: pd.Index, sample: pd.Index, *, validate: bool = True) -> np.ndarray | None:
    """Position in ``population`` of each id of ``sample`` (-1 if absent), checking that
    the population's ids are unique when ``validate`` (named "prediction" in the error).

    Returns None when the ids have no 64-bit keys (see the module docstring), when two
    sampled ids share a key (duplicated sampled ids, or two strings with one hash), or
    when a population string shares a hash with a different sampled string: the caller
    then aligns the ids exactly (and names any duplicated ids).
    """
    if population.dtype.kind != sample.dtype.kind:  # e.g. uint64 and int64: -1 is not 2**64-1
        return None
    if isinstance(population, pd.RangeIndex):
        return range_positions(population, sample)
    strings = _arrow_strings(population) is not None
    if strings != (_arrow_strings(sample) is not None):
        return None
    sample_keys = _keys(sample)
    if sample_keys is None:
        return None
    table = pd.Index(sample_keys.view(np.int64))  # our own index: its hash table is ours
    if not table.is_unique:
        return None
    dense = None if strings else _dense_ints(population)
    if dense is not None:
        return _locate_dense(dense, population, table, validate)
    if validate and not strings:
        check_unique(population, "prediction")
    population_keys = _keys(population)
    positions = np.full(len(sample), -1, dtype=np.int64)
    lookup = population_keys.view(np.int64)
    for start in range(0, len(lookup), _CHUNK):
        found = table.get_indexer(lookup[start : start + _CHUNK])
        hits = np.flatnonzero(found >= 0)
        positions[found[hits]] = hits + start
    if strings:
        matched = np.flatnonzero(positions >= 0)
        same = population.array.take(positions[matched]) == sample.array.take(matched)
        if not _all_true(same):  # a hash collision: align exactly
            return None
        if validate:
            check_unique(population, "prediction", population_keys)
    return positions


def _locate_dense(
    ints: np.ndarray, population: pd.Index, table: pd.Index, validate: bool
) -> np.ndarray:
    """:func:`locate` for compact integer population ids, by direct addressing: one pass
    marks each population id (the uniqueness check) and picks the sampled ones, using two
    byte arrays over the id range; only the picked ids are looked up in ``table``."""
    lo, hi = int(ints.min()), int(ints.max())
    sample = table.to_numpy()
    inside = sample[(sample >= lo) & (sample <= hi)]
    sampled = np.zeros(hi - lo + 1, dtype=bool)
    sampled[inside - lo] = True
    seen = np.zeros(hi - lo + 1, dtype=bool) if validate else None
    positions = np.full(len(table), -1, dtype=np.int64)
    for start in range(0, len(ints), _CHUNK):
        chunk = ints[start : start + _CHUNK]
        shifted = chunk - lo if lo else chunk
        hits = np.flatnonzero(sampled[shifted])
        positions[table.get_indexer(chunk[hits])] = hits + start
        if seen is not None:
            seen[shifted] = True
    if seen is not None and int(np.count_nonzero(seen)) != len(ints):
        check_unique(population, "prediction")  # names the duplicated ids
    return positions


def positions(population: pd.Index, ids: pd.Index) -> np.ndarray:
    """Position in ``population`` (unique ids) of each of ``ids``, -1 if absent: the
    identity when the two are the same ids, else :func:`locate`'s hashed lookup, else
    pandas' ``get_indexer``."""
    if same_ids(population, ids):
        return np.arange(len(ids))
    found = locate(population, ids, validate=False)
    return population.get_indexer(ids) if found is None else found


def range_positions(population: pd.RangeIndex, ids: pd.Index) -> np.ndarray:
    """Position in the range ``population`` of each signed integer id of ``ids`` (-1 if
    absent), by arithmetic: (id - start) / step when that is a whole number inside the
    range. (Unsigned ids above 2**63 would wrap: callers pass signed ids only.)"""
    values = np.arange(ids.start, ids.stop, ids.step) if isinstance(ids, pd.RangeIndex) else ids
    offset = np.asarray(values, dtype=np.int64) - population.start
    positions, remainder = np.divmod(offset, population.step)
    inside = (remainder == 0) & (positions >= 0) & (positions < len(population))
    return np.where(inside, positions, -1)


def same_ids(left: pd.Index, right: pd.Index) -> bool:
    """``left.equals(right)``, without turning a RangeIndex into an array (pandas would
    cache it on the caller's index): a range is compared with other ids a chunk at a time."""
    ranges = [index for index in (left, right) if isinstance(index, pd.RangeIndex)]
    if len(ranges) != 1:
        return left is right or left.equals(right)
    span = ranges[0]
    other = right if span is left else left
    if len(other) != len(span) or other.dtype.kind != "i":
        return False  # ids of another type: aligned by the general path, which checks them
    values, start, step = np.asarray(other), span.start, span.step
    for first in range(0, len(values), _CHUNK):
        chunk = values[first : first + _CHUNK]
        expected = np.arange(start + first * step, start + (first + len(chunk)) * step, step)
        if not np.array_equal(chunk, expected):
            return False
    return True


def _all_true(values) -> bool:
    if hasattr(values, "to_numpy"):  # a nullable boolean array (missing ids, unvalidated)
        values = values.to_numpy(dtype=bool, na_value=False)
    return bool(np.asarray(values, dtype=bool).all())


def _dense_unique(ints: np.ndarray) -> bool:
    """Whether compact integer ids are unique: mark each in a byte array, count the marks."""
    lo, hi = int(ints.min()), int(ints.max())
    seen = np.zeros(hi - lo + 1, dtype=bool)
    for start in range(0, len(ints), _CHUNK):
        chunk = ints[start : start + _CHUNK]
        seen[chunk - lo if lo else chunk] = True
    return int(np.count_nonzero(seen)) == len(ints)


def _shared_prefixes(keys: np.ndarray) -> np.ndarray:
    """Positions of the keys whose 32-bit prefix another key shares; every key equal to
    another is among them. ``keys`` (our own 64-bit array) is overwritten.

    The prefix is the top half of key × M (M odd: a bijection of 64-bit integers, which
    spreads integer ids that differ only in their low bits). The prefixes are written in
    place into the first half of the keys' buffer, a sorted copy into the second half:
    no memory beyond the keys. Among n distinct keys about n²/2³³ prefixes repeat (116
    at 1M, 11,600 at 10M); their records are found by byte marks on the prefixes' top
    bits, then exactly.
    """
    n = len(keys)
    keys = keys.view(np.uint64)
    words = keys.view(np.uint32)
    prefixes, ordered = words[:n], words[n:]
    multiplier = np.uint64(_MULTIPLIER)
    for start in range(0, n, _CHUNK):
        # writes words [start, stop), i.e. keys [start/2, stop/2): keys already read
        chunk = keys[start : start + _CHUNK] * multiplier
        prefixes[start : start + len(chunk)] = chunk >> np.uint64(32)
    ordered[:] = prefixes
    ordered.sort()
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    if len(repeated) == 0:
        return np.zeros(0, dtype=np.int64)
    # byte marks over the prefixes' top bits, about 256 marks per repeated prefix
    bits = min(max(int(len(repeated)).bit_length() + 8, 12), 32)
    shift = np.uint32(32 - bits)
    marks = np.zeros(1 << bits, dtype=bool)
    marks[repeated >> shift] = True
    suspects = np.concatenate(
        [
            np.flatnonzero(marks[prefixes[start : start + _CHUNK] >> shift]) + start
            for start in range(0, n, _CHUNK)
        ]
    )
    return suspects[np.isin(prefixes[suspects], repeated)]


def _keys(index: pd.Index) -> np.ndarray | None:
    """64-bit keys, equal for equal ids: integer ids themselves (the index's own array,
    not a copy), hashes of Arrow-backed strings; None for other id types."""
    dtype = index.dtype
    if isinstance(dtype, np.dtype) and dtype.kind in "iu":
        return np.asarray(index).astype(np.int64, copy=False)
    strings = _arrow_strings(index)
    if strings is None:
        return None
    out = np.empty(len(strings), dtype=np.uint64)
    start = 0
    for chunk in strings.chunks:
        _hash_strings(chunk, out[start : start + len(chunk)])
        start += len(chunk)
    return out


def _arrow_strings(index: pd.Index) -> pa.ChunkedArray | None:
    data = getattr(index.array, "_pa_array", None)
    if isinstance(data, pa.ChunkedArray) and (
        pa.types.is_string(data.type) or pa.types.is_large_string(data.type)
    ):
        return data
    return None


def _hash_strings(chunk: pa.Array, out: np.ndarray) -> None:
    """``out[i]`` = a 64-bit hash of the bytes of string ``i`` of ``chunk``.

    Polynomial hash h = Σ_j b_j M^j (mod 2**64) of bytes b_0..b_{L-1}, mixed with the
    length and finalised with MurmurHash3's fmix64: computed for a run of strings at once
    as differences of one cumulative sum of b·M^(position in the run), each multiplied
    by M^-(its start), M being odd and so invertible modulo 2**64. Equal strings always
    get equal hashes; different strings rarely do, and callers check those cases exactly.
    """
    _, offsets_buffer, data_buffer = chunk.buffers()
    wide = pa.types.is_large_string(chunk.type)
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64 if wide else np.int32)
    offsets = offsets[chunk.offset : chunk.offset + len(chunk) + 1]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer else np.zeros(0, np.uint8)
    powers = inverse = weighted = sums = np.zeros(0, dtype=np.uint64)
    start = 0
    while start < len(chunk):
        # the run of strings whose bytes fit in _BYTES (at least one string)
        stop = int(np.searchsorted(offsets, int(offsets[start]) + _BYTES, side="right")) - 1
        stop = min(max(stop, start + 1), len(chunk))
        bounds = offsets[start : stop + 1].astype(np.int64)
        first = int(bounds[0])
        bounds -= first
        width = int(bounds[-1])
        if width >= len(powers):  # once per chunk, unless a string is longer than _BYTES
            length = max(width, _BYTES) + 1
            powers, inverse = _powers(_MULTIPLIER, length), _powers(_INVERSE, length)
            weighted, sums = np.empty(length, dtype=np.uint64), np.zeros(length, dtype=np.uint64)
        # b_j M^j for every byte of the run (the product casts the bytes as it goes), then
        # running sums: each string's sum is the difference of two of them
        np.multiply(data[first : first + width], powers[:width], out=weighted[:width])
        np.cumsum(weighted[:width], out=sums[1 : width + 1])
        h = sums[bounds[1:]] - sums[bounds[:-1]]
        h *= inverse[bounds[:-1]]
        h += np.diff(bounds).astype(np.uint64) * _LENGTH_MIX
        out[start:stop] = _fmix64(h)
        start = stop


def _powers(base: int, length: int) -> np.ndarray:
    """base**0 .. base**(length-1) modulo 2**64."""
    powers = np.full(length, base, dtype=np.uint64)
    powers[0] = 1
    return np.cumprod(powers, out=powers)


def _fmix64(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser (every output bit depends on every input bit)."""
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xC4CEB9FE1A85EC53)
    h ^= h >> np.uint64(33)
    return h
