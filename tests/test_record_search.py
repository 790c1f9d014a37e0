"""Record search: every result checked against a brute-force pandas filter."""

from __future__ import annotations

import unicodedata

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import er_evaluation.record_search as record_search
from er_evaluation.datasets import load_patentsview_mentions
from er_evaluation.record_search import RecordIndex


def fold(value) -> str:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return ""
    text = unicodedata.normalize("NFKD", str(value))
    return "".join(c for c in text if unicodedata.category(c) != "Mn").lower()


def brute_force(records, query, fields, block_col=None, block=None, limit=None, folded=None):
    """Row positions matching every token in one of ``fields``, in table order.
    ``folded`` caches the folded columns of ``records`` across queries."""
    tokens = fold(query).split()
    folded = folded if folded is not None else {}
    for f in fields:
        if f not in folded:
            folded[f] = records[f].map(fold)
    mask = np.ones(len(records), dtype=bool)
    for token in tokens:
        hit = np.zeros(len(records), dtype=bool)
        for f in fields:
            hit |= folded[f].str.contains(token, regex=False).to_numpy(dtype=bool)
        mask &= hit
    if block is not None:
        mask &= (records[block_col] == block).to_numpy(dtype=bool)
    found = np.flatnonzero(mask)
    return found if limit is None else found[:limit]


@pytest.fixture(scope="module")
def mentions():
    frame = load_patentsview_mentions().reset_index()
    return frame.sample(6000, random_state=7).reset_index(drop=True)


@pytest.fixture(scope="module")
def folded(mentions):
    return {}


@pytest.fixture(scope="module")
def index(mentions):
    return RecordIndex(mentions, "mention_id", block_col="block")


def random_query(rng, mentions, fields) -> str:
    """1-3 tokens cut from real field values (sometimes upper-cased), so most queries
    match something, plus now and then a token that matches nothing."""
    tokens = []
    for _ in range(rng.integers(1, 4)):
        value = ""
        while not value.strip():
            value = str(
                mentions[fields[rng.integers(len(fields))]].iloc[rng.integers(len(mentions))]
            )
        word = value.split()[rng.integers(len(value.split()))]
        start = rng.integers(len(word))
        token = word[start : start + rng.integers(1, 8)]
        tokens.append(token.upper() if rng.random() < 0.3 else token)
    if rng.random() < 0.1:
        tokens.append("qqzx")
    return " ".join(tokens)


@pytest.mark.slow
def test_random_queries_match_brute_force(mentions, index, folded):
    rng = np.random.default_rng(0)
    fields = list(mentions.columns)
    for _ in range(40):
        query = random_query(rng, mentions, ["name_first", "name_last", "city", "assignees"])
        expected = brute_force(mentions, query, fields, "block", folded=folded)
        got = index.matches(query)
        np.testing.assert_array_equal(got, expected, err_msg=query)
        limited = index.search(query, limit=7)
        np.testing.assert_array_equal(limited.index.to_numpy(), expected[:7], err_msg=query)


def test_field_and_block_restrictions_match_brute_force(mentions, index, folded):
    rng = np.random.default_rng(1)
    for _ in range(20):
        fields = list(rng.choice(["name_first", "name_last", "city", "patent_title"], 2, False))
        query = random_query(rng, mentions, fields)
        np.testing.assert_array_equal(
            index.matches(query, fields=fields),
            brute_force(mentions, query, fields, "block", folded=folded),
        )
        block = mentions["block"].iloc[rng.integers(len(mentions))]
        expected = brute_force(
            mentions, query, list(mentions.columns), "block", block, folded=folded
        )
        np.testing.assert_array_equal(index.matches(query, block=block), expected)
        np.testing.assert_array_equal(index.matches(query, block=block, limit=2), expected[:2])


def test_vectorised_fallback_matches_brute_force(mentions, index, folded, monkeypatch):
    """Queries whose scanned token is in a large share of the rows are finished by the
    vectorised path; force it early and in small chunks and compare."""
    monkeypatch.setattr(record_search, "_HIT_BUDGET", 3)
    monkeypatch.setattr(record_search, "_DENSE", 0.0)
    monkeypatch.setattr(record_search, "_CHUNK_ROWS", 500)
    fields = list(mentions.columns)
    for query in ["an e", "ta ka", "lee", "a", "san jose", "qqzx a"]:
        expected = brute_force(mentions, query, fields, "block", folded=folded)
        for limit in (None, 1, 5, 40, 10_000):
            got = index.matches(query, limit=limit)
            want = expected if limit is None else expected[:limit]
            np.testing.assert_array_equal(got, want, err_msg=f"{query} limit={limit}")


def test_case_and_accent_folding_both_ways():
    records = pd.DataFrame(
        {
            "id": ["r1", "r2", "r3", "r4"],
            "name": ["Müller", "MULLER", "Muñoz-Åström", "ﬁsher"],
        }
    )
    index = RecordIndex(records, "id")
    assert index.search("muller")["id"].tolist() == ["r1", "r2"]
    assert index.search("MÜLLER")["id"].tolist() == ["r1", "r2"]
    assert index.search("munoz astr")["id"].tolist() == ["r3"]
    assert index.search("fish")["id"].tolist() == ["r4"]  # NFKD splits the ligature


def test_tokens_do_not_span_fields_or_rows():
    records = pd.DataFrame(
        {"id": [1, 2], "first": ["ab", "xy"], "last": ["cd", "zz"], "n": [12, None]}
    )
    index = RecordIndex(records, "id", ["first", "last", "n"])
    assert index.search("bc").empty  # "ab" + "cd" across the field boundary
    assert index.search("dx").empty  # end of row 1 + start of row 2
    assert index.search("ab cd")["id"].tolist() == [1]
    assert index.search("12")["id"].tolist() == [1]  # non-text fields are searchable
    assert index.search("zz", fields="first").empty
    assert index.search("zz", fields=["first", "last"])["id"].tolist() == [2]


def test_block_lookup_and_empty_query(mentions, index):
    record = mentions["mention_id"].iloc[10]
    block = index.block_of(record)
    assert block == mentions["block"].iloc[10]
    rows = index.search("", block=block, limit=None)
    assert set(rows["mention_id"]) == set(mentions.loc[mentions["block"] == block, "mention_id"])
    assert len(index.search("", block=block, limit=1)) == 1


def test_ids_in_the_index_are_searchable_by_its_name(mentions):
    indexed = mentions.set_index("mention_id")
    index = RecordIndex(indexed, block_col="block")
    assert index.text_cols[0] == "mention_id"
    target = indexed.index[5]
    found = index.search(target, fields="mention_id", limit=None)
    assert target in found.index
    assert found.index.str.contains(target.lower(), case=False, regex=False).all()
    assert index.block_of(target) == indexed.loc[target, "block"]
    np.testing.assert_array_equal(
        index.matches("lee"), RecordIndex(mentions, "mention_id", block_col="block").matches("lee")
    )


def test_missing_blocks_are_searchable_as_their_own_group():
    records = pd.DataFrame({"id": ["a", "b", "c"], "block": ["x", None, "x"], "t": ["k"] * 3})
    index = RecordIndex(records, "id", ["t"], block_col="block")
    assert index.search("k")["id"].tolist() == ["a", "b", "c"]
    assert index.search("k", block="x")["id"].tolist() == ["a", "c"]


def test_errors_are_clear():
    records = pd.DataFrame({"id": ["a", "b", "a"], "t": ["x", "y", "z"]})
    with pytest.raises(ValueError, match="id\\(s\\) repeated in 'id': 'a'"):
        RecordIndex(records, "id")
    records = pd.DataFrame({"id": ["a", "b"], "t": ["x", "y"]})
    with pytest.raises(ValueError, match="column\\(s\\) \\['nope'\\] not found"):
        RecordIndex(records, "id", ["nope"])
    with pytest.raises(ValueError, match="records table is empty"):
        RecordIndex(records.iloc[:0], "id")
    index = RecordIndex(records, "id", block_col="t")
    with pytest.raises(ValueError, match="empty query"):
        index.search("  ")
    with pytest.raises(ValueError, match="block 'q' not found in column 't'"):
        index.search("x", block="q")
    with pytest.raises(ValueError, match="fields \\['nope'\\] not found"):
        index.search("x", fields=["nope"])
    with pytest.raises(ValueError, match="limit must be a positive integer"):
        index.search("x", limit=0)
    with pytest.raises(KeyError, match="'zz' is not in the records table"):
        index.block_of("zz")
    with pytest.raises(ValueError, match="no block column"):
        RecordIndex(records, "id").search("x", block="x")


LETTERS = st.sampled_from(list("abcAB éÉüñ-.ﬁ"))


@pytest.mark.slow
@given(
    values=st.lists(
        st.tuples(st.text(LETTERS, max_size=8), st.text(LETTERS, max_size=8)),
        min_size=1,
        max_size=25,
    ),
    query=st.text(LETTERS, min_size=1, max_size=6),
    limit=st.one_of(st.none(), st.integers(1, 5)),
)
@settings(max_examples=80, deadline=None)
def test_property_matches_brute_force(values, query, limit):
    records = pd.DataFrame(
        {
            "id": [f"r{i}" for i in range(len(values))],
            "f1": [v[0] for v in values],
            "f2": [v[1] for v in values],
            "block": [v[0][:1] for v in values],
        }
    )
    index = RecordIndex(records, "id", ["f1", "f2"], block_col="block")
    if not fold(query).split():
        with pytest.raises(ValueError, match="empty query"):
            index.matches(query)
        return
    expected = brute_force(records, query, ["f1", "f2"], "block", limit=limit)
    np.testing.assert_array_equal(index.matches(query, limit=limit), expected)
    block = records["block"].iloc[-1]
    in_block = brute_force(records, query, ["f1", "f2"], "block", block, limit=limit)
    np.testing.assert_array_equal(index.matches(query, block=block, limit=limit), in_block)


@pytest.mark.slow
def test_rows_equal_iloc_on_chunked_and_mixed_tables():
    full = load_patentsview_mentions()  # Arrow columns in several chunks (Parquet row groups)
    index = RecordIndex(full, text_cols=["name_last"], block_col="block")
    for query in ["takahashi", "lee", "o"]:
        positions = index.matches(query, limit=60)
        pd.testing.assert_frame_equal(index.search(query, limit=60), full.iloc[positions])
    positions = index.matches("o", limit=None)
    assert len(positions) > 1_000  # the iloc path for large results
    pd.testing.assert_frame_equal(index.rows(positions), full.iloc[positions])
    mixed = pd.DataFrame(
        {
            "id": [3, 1, 2],
            "text": ["ab", None, "abc"],
            "n": [1.5, np.nan, 2.0],
            "when": pd.to_datetime(["2020-01-01", None, "2021-05-06"]).tz_localize("UTC"),
            "odd": pd.Series([{"a": 1}, 7, "x"], dtype=object),  # Arrow cannot hold this
        }
    ).set_index("id")
    index = RecordIndex(mixed, text_cols=["text", "n"])
    pd.testing.assert_frame_equal(index.search("ab"), mixed.iloc[[0, 2]])
    pd.testing.assert_frame_equal(index.search("1.5"), mixed.iloc[[0]])


def test_concurrent_searches_on_a_shared_index(mentions):
    """The app shares one index between sessions (threads); lazily built field indexes
    must not break concurrent queries."""
    from concurrent.futures import ThreadPoolExecutor

    index = RecordIndex(mentions, "mention_id", ["name_first", "name_last"], block_col="block")
    jobs = [("lee", f) for f in ("name_first", "name_last", None)] * 4 + [("kim", None)] * 4
    with ThreadPoolExecutor(max_workers=6) as pool:
        got = list(pool.map(lambda job: index.matches(job[0], fields=job[1]), jobs))
    fresh = RecordIndex(mentions, "mention_id", ["name_first", "name_last"], block_col="block")
    for (query, field), rows in zip(jobs, got, strict=True):
        np.testing.assert_array_equal(rows, fresh.matches(query, fields=field))
