"""The kernel's record-id pass (er_evaluation._record_ids): the 64-bit string hash, the
uniqueness check and the alignment of a sample, against exact pandas computations; hash
collisions forced to show the exact fallbacks give the same tables and the same errors."""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from er_evaluation import _record_ids
from er_evaluation._contingency import contingency
from er_evaluation._record_ids import check_unique, locate
from er_evaluation.clustering import duplicate_error, duplicated_ids
from er_evaluation.errors import ClusteringError

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)


def arrow_index(values, *, large=True, chunks=1) -> pd.Index:
    """An Arrow-backed string index of ``values`` in ``chunks`` chunks."""
    kind = pa.large_string() if large else pa.string()
    parts = np.array_split(np.array(values, dtype=object), chunks)
    array = pa.chunked_array([pa.array(list(p), type=kind) for p in parts], type=kind)
    dtype = pd.StringDtype("pyarrow", na_value=np.nan) if large else pd.ArrowDtype(kind)
    return pd.Index(pd.array(array, dtype=dtype))


def cells(table) -> Counter:
    counts = Counter()
    for p, r, c in zip(table.pred, table.ref, table.count, strict=True):
        counts[(table.pred_labels[p], table.ref_labels[r])] += int(c)
    return counts


def constant_hash(chunk, out):
    out[:] = 7  # every string collides: only the exact fallbacks can answer


@settings(max_examples=60, deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=40), st.integers(1, 4), st.booleans())
def test_equal_strings_hash_equal_whatever_the_chunking(values, chunks, large):
    one = _record_ids._keys(arrow_index(values))
    other = _record_ids._keys(arrow_index(values, large=large, chunks=min(chunks, len(values))))
    np.testing.assert_array_equal(one, other)
    distinct = pd.Series(values).drop_duplicates().index
    # 64-bit hashes of a few distinct strings: a collision here would be a broken hash
    assert len(set(one[distinct].tolist())) == len(distinct)


def test_hash_of_sliced_and_long_strings(monkeypatch):
    monkeypatch.setattr(_record_ids, "_BYTES", 8)  # runs of a few bytes; strings longer
    values = ["", "a", "a\x00", "\x00a", "ab" * 20, "é", "ba" * 20, "x" * 9]
    whole = _record_ids._keys(arrow_index(values))
    sliced = _record_ids._keys(arrow_index(["pad"] + values)[1:])
    np.testing.assert_array_equal(whole, sliced)
    assert len(set(whole.tolist())) == len(values)


@pytest.mark.parametrize(
    "ids",
    [
        [5, 3, 9, 3, 5, 1],  # compact integers
        [10**15, 3, -(10**12), 3, 10**15],  # sparse integers
        np.array([2**63 + 5, 1, 2**63 + 5], dtype=np.uint64),
        ["b", "a", "c", "a", "b"],
        [1.5, 2.5, 1.5],
    ],
)
def test_check_unique_raises_the_exact_error(ids):
    index = pd.Index(ids)
    expected = str(duplicate_error(duplicated_ids(index), "prediction"))
    with pytest.raises(ClusteringError) as caught:
        check_unique(index, "prediction")
    assert str(caught.value) == expected
    check_unique(index.drop_duplicates(), "prediction")


def test_check_unique_with_colliding_hashes(monkeypatch):
    monkeypatch.setattr(_record_ids, "_hash_strings", constant_hash)
    check_unique(pd.Index(["a", "b", "c"]), "prediction")  # collisions, no duplicate
    with pytest.raises(ClusteringError, match=r"prediction: 1 record id\(s\) .* 'b'"):
        check_unique(pd.Index(["a", "b", "c", "b"]), "prediction")


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_locate_matches_get_indexer(data):
    kind = data.draw(st.sampled_from(["dense", "sparse", "str"]))
    n = data.draw(st.integers(1, 40))
    if kind == "str":
        population = [f"r{i}" for i in range(n)]
        absent = ["x", "r-1", ""]
    else:
        step = 1 if kind == "dense" else 10**12
        population = [7 + step * i for i in range(n)]
        absent = [-5, 7 + step * n, 10**17]
    order = data.draw(st.permutations(population))
    picked = data.draw(st.lists(st.sampled_from(population + absent), unique=True, min_size=1))
    population_index, sample_index = pd.Index(list(order)), pd.Index(picked)
    expected = pd.Index(list(order)).get_indexer(sample_index)
    np.testing.assert_array_equal(locate(population_index, sample_index), expected)


def test_locate_declines_what_it_cannot_key(monkeypatch):
    # object and float ids, int and uint ids together, duplicated sampled ids
    assert locate(pd.Index([1.5, 2.5]), pd.Index([2.5])) is None
    assert locate(pd.Index(np.array([1, 2], dtype=np.uint64)), pd.Index([1])) is None
    assert locate(pd.Index([1, 2, 3]), pd.Index([2, 2])) is None
    monkeypatch.setattr(_record_ids, "_hash_strings", constant_hash)
    assert locate(pd.Index(["a", "b"]), pd.Index(["a", "b"])) is None


@pytest.mark.parametrize("ids", ["int", "str"])
def test_duplicated_prediction_ids_named_in_prediction_scope(ids):
    labels = [4, 8, 8, 15, 16, 16, 23] if ids == "int" else ["d", "h", "h", "o", "p", "p", "w"]
    prediction = pd.Series([1, 1, 2, 2, 3, 3, 3], index=pd.Index(labels))
    sample = pd.Series([1, 1], index=pd.Index(labels[:1] + labels[3:4]))
    expected = str(duplicate_error(duplicated_ids(prediction.index), "prediction"))
    with pytest.raises(ClusteringError) as caught:
        contingency(prediction, sample, scope="prediction")
    assert str(caught.value) == expected
    # the prediction is named first when both sides repeat ids, as before
    both = pd.concat([sample, sample])
    with pytest.raises(ClusteringError, match=r"^prediction: 2 record id\(s\)"):
        contingency(prediction, both, scope="prediction")


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_forced_collisions_give_the_same_table(data):
    n = data.draw(st.integers(2, 30))
    ids = [f"r{i}" for i in range(n)]
    prediction = pd.Series(data.draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), ids)
    keep = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    keep[0] = True
    labels = data.draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    sample = pd.Series(labels, ids).loc[np.array(keep)]
    sample = sample.sample(frac=1, random_state=data.draw(st.integers(0, 9)))
    for scope in ("prediction", "shared"):
        if scope == "shared":
            sample = prediction.map(lambda c: c % 2)
        expected = contingency(prediction, sample, scope=scope)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_record_ids, "_hash_strings", constant_hash)
            forced = contingency(prediction, sample, scope=scope)
        assert cells(forced) == cells(expected)
        assert dict(zip(forced.pred_labels, forced.pred_size.tolist(), strict=True)) == dict(
            zip(expected.pred_labels, expected.pred_size.tolist(), strict=True)
        )
        assert forced.population == expected.population


@pytest.mark.parametrize("dtype", ["category", "float", "object"])
def test_prediction_scope_on_other_cluster_id_types(dtype):
    # cluster ids counted by value_counts: a categorical's unused categories are not clusters
    values = pd.Series(["a", "a", "b", "c", "c", "c"], index=range(6))
    if dtype == "category":
        values = values.astype(pd.CategoricalDtype(["a", "b", "c", "unused"]))
    elif dtype == "float":
        values = values.map({"a": 1.0, "b": 2.0, "c": 3.5})
    else:
        values = values.astype(object)
    sample = pd.Series([0, 0, 1], index=[0, 3, 4])
    table = contingency(values, sample, scope="prediction")
    assert table.n_pred_clusters == 3
    assert table.predicted_links == 1 + 3
    assert sorted(table.pred_size.tolist()) == [2, 3]


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.data())
def test_shared_prefixes_find_every_repeated_prefix(data):
    # keys drawn from a few high halves so that 32-bit prefixes repeat often; the
    # positions returned are exactly those whose prefix another key shares, brute force
    n = data.draw(st.integers(0, 60))
    highs = data.draw(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=4))
    keys = np.array(
        [data.draw(st.sampled_from(highs)) << 32 | data.draw(st.integers(0, 3)) for _ in range(n)],
        dtype=np.uint64,
    )
    multiplier = _record_ids._MULTIPLIER
    prefixes = [(int(k) * multiplier % 2**64) >> 32 for k in keys]
    counts = Counter(prefixes)
    expected = [i for i, p in enumerate(prefixes) if counts[p] > 1]
    found = _record_ids._shared_prefixes(keys.copy())
    assert sorted(found.tolist()) == expected


@pytest.mark.parametrize("ids", ["sparse int", "str"])
def test_check_unique_at_scale_names_the_duplicates(ids):
    # 300,000 distinct ids have ~10 repeated 32-bit prefixes: the exact pass over the
    # suspects must clear them, and still find one real duplicate among them
    values = np.random.default_rng(3).permutation(300_000) * 1_000_003
    index = pd.Index(values) if ids == "sparse int" else arrow_index([f"r{v}" for v in values])
    check_unique(index, "prediction")
    repeated = index.append(index[[17]])
    with pytest.raises(ClusteringError, match=r"prediction: 1 record id\(s\) appear more"):
        check_unique(repeated, "prediction")


@settings(max_examples=80, deadline=None)
@given(
    st.integers(-50, 50),
    st.integers(0, 40),
    st.sampled_from([1, 2, 3, -1, -4]),
    st.lists(st.integers(-120, 120), max_size=30),
)
def test_range_positions_match_get_indexer(start, length, step, ids):
    population = pd.RangeIndex(start, start + length * step, step)
    sample = pd.Index(ids, dtype=np.int64)
    expected = pd.Index(np.asarray(list(population), dtype=np.int64)).get_indexer(sample)
    np.testing.assert_array_equal(_record_ids.range_positions(population, sample), expected)
    assert not population._cache  # arithmetic only: no array cached on the range


@pytest.mark.parametrize(
    "other, expected",
    [
        (pd.Index(np.arange(3, 3 + 2 * 700_000, 2)), True),
        (pd.Index(np.r_[np.arange(3, 3 + 2 * 699_999, 2), 0]), False),
        (pd.Index(np.arange(3, 3 + 2 * 10, 2)), False),
        (pd.RangeIndex(3, 3 + 2 * 700_000, 2), True),
        (pd.Index([f"r{i}" for i in range(5)]), False),
    ],
)
def test_same_ids_with_a_range(other, expected):
    population = pd.RangeIndex(3, 3 + 2 * 700_000, 2)
    assert _record_ids.same_ids(population, other) is expected
    assert _record_ids.same_ids(other, population) is expected
    assert not population._cache


@pytest.mark.parametrize("case", ["same", "shuffled", "subset", "sample"])
def test_range_index_tables_equal_materialised_ones(case):
    rng = np.random.default_rng(5)
    prediction = pd.Series(rng.integers(0, 30, 200), index=pd.RangeIndex(10, 410, 2))
    reference = prediction.map(lambda c: c // 3)
    if case == "shuffled":
        reference = reference.sample(frac=1, random_state=1)
    if case in ("subset", "sample"):
        reference = reference.iloc[::7]
    scope = "prediction" if case == "sample" else "shared"
    on_missing = "restrict" if case == "subset" else "error"
    materialised = prediction.set_axis(pd.Index(np.asarray(list(prediction.index))))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = contingency(prediction, reference, scope=scope, on_missing=on_missing)
        exact = contingency(materialised, reference, scope=scope, on_missing=on_missing)
    assert cells(fast) == cells(exact)
    assert fast.n_records == exact.n_records and fast.population == exact.population
    assert fast.dropped_prediction == exact.dropped_prediction


def test_range_against_unsigned_ids_above_two_to_the_63():
    # 2**64 - 3 as a signed integer would be -3, inside range(-5, 5): it must stay absent
    prediction = pd.Series(np.arange(10) % 3, index=pd.RangeIndex(-5, 5))
    reference = pd.Series([0, 1], index=pd.Index(np.array([2**64 - 3, 2], dtype=np.uint64)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = contingency(prediction, reference, on_missing="restrict")
    assert table.n_shared == 1 and table.dropped_reference == 1
