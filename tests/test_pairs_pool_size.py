"""The size limit of in-memory pair labelling: block sizes counted
without building pairs, the limit's boundary, the message, and the labelling pool."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pandas as pd
import pytest

from er_evaluation.cli import main
from er_evaluation.pairs import (
    DEFAULT_MAX_PAIRS,
    PoolError,
    PoolSizeError,
    block_sizes,
    field_similarity_score,
    labelling_pool,
    pool_from_blocks,
    pool_size_problem,
    split_blocks,
)
from er_evaluation.pairs import pool as pool_module


def records_of(sizes: dict) -> pd.DataFrame:
    """Records r0, r1, ... in blocks of the given sizes, with a text field."""
    keys = [b for b, n in sizes.items() for _ in range(n)]
    names = [f"ann lee {i % 3}" for i in range(len(keys))]
    return pd.DataFrame({"block": keys, "name": names}, index=[f"r{i}" for i in range(len(keys))])


def sizes_table(counts: dict) -> pd.DataFrame:
    """A block_sizes-shaped table from record counts (no records built)."""
    n = pd.Series(counts, dtype=np.int64)
    pairs = n * (n - 1) // 2
    return pd.DataFrame({"records": n, "pairs": pairs, "too_large": pairs > DEFAULT_MAX_PAIRS})


def test_block_sizes_hand_computed_and_equal_to_the_built_pairs():
    # C(4,2) = 6, C(3,2) = 3, C(2,2) = 1, C(1,2) = 0
    records = records_of({"d": 4, "a": 3, "c": 2, "b": 1})
    sizes = block_sizes(records, "block")
    assert list(sizes.index) == ["a", "b", "c", "d"]
    assert sizes["records"].tolist() == [3, 1, 2, 4]
    assert sizes["pairs"].tolist() == [3, 0, 1, 6]
    assert not sizes["too_large"].any()
    built = pool_from_blocks(records, "block")["block"].value_counts()
    assert built.reindex(sizes.index, fill_value=0).tolist() == sizes["pairs"].tolist()
    assert block_sizes(records, "block", max_pairs=3)["too_large"].tolist() == [
        False,
        False,
        False,
        True,
    ]


def test_block_sizes_with_an_id_column_and_a_missing_key():
    records = records_of({1: 2, 2: 3}).reset_index(names="rid")
    sizes = block_sizes(records, "block", id_col="rid")
    assert sizes["pairs"].tolist() == [1, 3]
    records.loc[4, "block"] = None
    with pytest.raises(PoolError, match=r"1 records have no 'block' value: 'r4'"):
        block_sizes(records, "block", id_col="rid")
    with pytest.raises(PoolError, match=r"column 'blk' not found"):
        block_sizes(records, "blk")


def test_the_default_limit_boundary_is_two_thousand_records():
    # C(2000, 2) = 1,999,000 <= 2,000,000 < C(2001, 2) = 2,001,000
    sizes = sizes_table({"ok": 2000, "big": 2001})
    assert DEFAULT_MAX_PAIRS == 2_000_000
    assert sizes["too_large"].tolist() == [False, True]
    assert pool_size_problem(sizes, ["ok"]) is None
    message = pool_size_problem(sizes, ["big"])
    assert message.startswith(
        "block 'big' (2,001 records, 2,001,000 pairs) is too large for in-memory pair "
        "labelling: the limit is 2,000,000 candidate pairs, one block of at most 2,000 "
        "records."
    )
    assert "Split the block by a second field" in message


@pytest.mark.parametrize("total", [1, 3, 1_999_000, 40_991_985])
def test_a_total_equal_to_the_limit_passes_and_one_more_pair_does_not(total):
    n = next(n for n in itertools.count(2) if n * (n - 1) // 2 >= total)
    sizes = sizes_table({"x": n})
    exact = int(sizes.at["x", "pairs"])
    assert pool_size_problem(sizes, max_pairs=exact) is None
    if exact > 1:
        assert "'x'" in pool_size_problem(sizes, max_pairs=exact - 1)


@pytest.mark.parametrize("limit", [1, 2, 3, 4, 5, 6, 44, 45, 46, 1_999_000, 2_000_000, 10**12])
def test_the_largest_block_under_a_limit_is_computed_exactly(limit):
    largest = int(
        re.search(r"one block of at most ([\d,]+) records", _message(limit))[1].replace(",", "")
    )
    assert largest * (largest - 1) // 2 <= limit < (largest + 1) * largest // 2


def _message(limit: int) -> str:
    huge = 2 * 10**6 + 2  # C(huge, 2) > 10**12
    return pool_size_problem(sizes_table({"h": huge}), max_pairs=limit)


def test_blocks_under_the_limit_alone_but_over_it_together_are_named_with_the_total():
    sizes = sizes_table({"a": 3, "b": 4, "c": 2})  # 3 + 6 + 1 pairs
    assert pool_size_problem(sizes, ["a", "b"], max_pairs=9) is None
    message = pool_size_problem(sizes, ["a", "b", "c"], max_pairs=9)
    assert message.startswith(
        "blocks 'a' (3 records, 3 pairs), 'b' (4 records, 6 pairs), 'c' (2 records, 1 pair) "
        "have 10 candidate pairs together, too many for in-memory pair labelling: the limit "
        "is 9 candidate pairs"
    )
    # only the blocks over the limit on their own are named when there are any
    message = pool_size_problem(sizes, max_pairs=5)
    assert message.startswith("block 'b' (4 records, 6 pairs) is too large")
    message = pool_size_problem(sizes, max_pairs=2)
    assert message.startswith("blocks 'a' (3 records, 3 pairs), 'b' (4 records, 6 pairs) are")


def test_many_blocks_over_the_limit_are_listed_with_a_count_of_the_rest():
    sizes = sizes_table({f"b{i}": 10 for i in range(8)})
    message = pool_size_problem(sizes, max_pairs=44)
    assert message.startswith(
        "blocks 'b0' (10 records, 45 pairs), 'b1' (10 records, 45 pairs), 'b2' (10 records, "
        "45 pairs), 'b3' (10 records, 45 pairs), 'b4' (10 records, 45 pairs) and 3 more are "
        "too large"
    )


@pytest.mark.parametrize("bad", [0, -5, 1.5, True, "10", None, float("nan")])
def test_a_bad_limit_is_named(bad):
    sizes = sizes_table({"a": 3})
    with pytest.raises(PoolError, match="max_pairs must be a positive integer"):
        pool_size_problem(sizes, max_pairs=bad)
    with pytest.raises(PoolError, match="max_pairs must be a positive integer"):
        block_sizes(records_of({"a": 3}), "block", max_pairs=bad)


def test_unknown_blocks_are_named():
    with pytest.raises(PoolError, match=r"2 unknown block keys: 'x', 'y'; the blocks are 'a'$"):
        pool_size_problem(sizes_table({"a": 3}), ["a", "x", "y"])


def test_labelling_pool_is_the_scored_pool_of_the_chosen_blocks():
    records = records_of({"a": 3, "b": 4, "c": 2})
    prediction = pd.Series([0, 0, 1, 1, 1, 2, 2, 3, 3], index=records.index)
    pool = labelling_pool(records, "block", ["a", "c"], fields=["name"], prediction=prediction)
    members = records[records["block"].isin(["a", "c"])]
    pairs = pool_from_blocks(members, "block")
    assert pool.pairs[["id_left", "id_right"]].values.tolist() == [
        ["r0", "r1"],
        ["r0", "r2"],
        ["r1", "r2"],
        ["r7", "r8"],
    ]
    np.testing.assert_array_equal(pool.scores, field_similarity_score(members, pairs, ["name"]))
    # r0, r1 share cluster 0; r7, r8 share cluster 3; r2 is in cluster 1
    assert pool.predicted.tolist() == [1, 0, 0, 1]


def test_labelling_pool_over_the_limit_builds_nothing(monkeypatch):
    records = records_of({"small": 3, "giant": 2001})
    prediction = pd.Series(np.arange(len(records)), index=records.index)

    def never(*args, **kwargs):
        raise AssertionError("pairs were built for a block over the limit")

    monkeypatch.setattr(pool_module, "pool_from_blocks", never)
    with pytest.raises(PoolSizeError, match=r"^block 'giant' \(2,001 records, 2,001,000 pairs\)"):
        labelling_pool(records, "block", ["giant"], fields=["name"], prediction=prediction)
    with pytest.raises(PoolSizeError, match=r"limit is 2 candidate pairs"):
        labelling_pool(
            records, "block", ["small"], fields=["name"], prediction=prediction, max_pairs=2
        )


def test_labelling_pool_of_a_one_record_block_says_there_is_no_pair():
    records = records_of({"a": 1, "b": 2})
    prediction = pd.Series([0, 0, 1], index=records.index)
    with pytest.raises(PoolError, match=r"no candidate pair in the blocks 'a': a pair needs"):
        labelling_pool(records, "block", ["a"], fields=["name"], prediction=prediction)


def test_split_blocks_hand_computed_keys_with_missing_and_blank_values():
    records = pd.DataFrame(
        {"block": ["a", "a", "a", "a", "b"], "city": [" Seoul", "seoul ", None, "", "Busan"]},
        index=["r1", "r2", "r3", "r4", "r5"],
    )
    keys = split_blocks(records, "block", "city")
    assert keys.index.tolist() == records.index.tolist()
    assert keys.tolist() == [
        "a / seoul",
        "a / seoul",
        "a / (no city)",
        "a / (no city)",
        "b / busan",
    ]
    with pytest.raises(PoolError, match=r"column 'town' not found"):
        split_blocks(records, "block", "town")
    records.loc["r5", "block"] = None
    with pytest.raises(PoolError, match=r"1 records have no 'block' value: 'r5'"):
        split_blocks(records, "block", "city")


def test_a_split_block_pool_is_the_block_pairs_that_agree_on_the_field():
    rng = np.random.default_rng(3)
    records = records_of({"big": 40, "other": 5})
    records["city"] = rng.choice(["x", "X ", "y", None], len(records))
    keyed = records.assign(sub=split_blocks(records, "block", "city"))
    sizes = block_sizes(keyed, "sub")
    prediction = pd.Series(rng.integers(0, 6, len(records)), index=records.index)
    city = records["city"].str.strip().str.lower()
    subs = sizes.index[sizes["pairs"] > 0]
    assert len(subs) > 1
    for sub in subs:
        pool = labelling_pool(keyed, "sub", [sub], fields=["name"], prediction=prediction)
        block, value = sub.split(" / ")
        same = (records["block"] == block) & (
            city.isna() if value == "(no city)" else city == value
        )
        brute = {(a, b) for a, b in itertools.combinations(records.index[same], 2)}
        assert set(zip(pool.pairs["id_left"], pool.pairs["id_right"], strict=True)) == brute
        assert pool.n_pairs == sizes.at[sub, "pairs"]


# -- the command line: er-eval pairs pool ------------------------------------------------------


@pytest.fixture
def block_files(tmp_path):
    """records.csv (blocks 'small' of 5 records, 'giant' of 2,001, 7 of 3) and pred.csv."""
    blocks = ["small"] * 5 + ["giant"] * 2001 + [7] * 3
    rids = [f"r{i}" for i in range(len(blocks))]
    names = [f"ann lee {i % 7}" for i in range(len(rids))]
    pd.DataFrame({"rid": rids, "name": names, "block": blocks}).to_csv(
        tmp_path / "records.csv", index=False
    )
    clusters = [i // 3 for i in range(len(rids))]
    pd.DataFrame({"rid": rids, "cluster": clusters}).to_csv(tmp_path / "pred.csv", index=False)
    return tmp_path


def pool_command(folder, *more: str) -> list[str]:
    return [
        "pairs",
        "pool",
        f"{folder / 'records.csv'}:rid",
        "--block-col",
        "block",
        "--fields",
        "name",
        "--prediction",
        str(folder / "pred.csv"),
        "-o",
        str(folder / "pool.csv"),
        *more,
    ]


def test_cli_pool_of_small_blocks_is_the_library_pool_and_can_be_labelled(block_files, capsys):
    assert main(pool_command(block_files, "--blocks", "small", "7")) == 0
    written = pd.read_csv(block_files / "pool.csv")
    assert len(written) == 10 + 3  # C(5, 2) + C(3, 2)
    assert "13 candidate pairs" in capsys.readouterr().err
    records = pd.read_csv(block_files / "records.csv", index_col="rid")
    records["block"] = records["block"].astype(str)
    prediction = pd.read_csv(block_files / "pred.csv", index_col="rid")["cluster"]
    expected = labelling_pool(
        records, "block", ["small", "7"], fields=["name"], prediction=prediction
    )
    pd.testing.assert_frame_equal(written, expected.pairs, check_dtype=False)
    labels = block_files / "labels.jsonl"
    oracle = ["--oracle", f"reference:{block_files / 'pred.csv'}", "--budget", "5"]
    command = ["pairs", "sample", str(block_files / "pool.csv"), "--labels", str(labels)]
    assert main([*command, *oracle]) == 0


def test_cli_pool_split_by_a_field_pairs_one_sub_block(block_files):
    more = ["--split-by", "name", "--blocks", "giant / ann lee 3"]
    assert main(pool_command(block_files, *more)) == 0
    written = pd.read_csv(block_files / "pool.csv")
    # giant holds records r5..r2005; 'ann lee 3' is i % 7 == 3: 286 of them
    inside = [f"r{i}" for i in range(5, 2006) if i % 7 == 3]
    assert len(written) == len(inside) * (len(inside) - 1) // 2 == 286 * 285 // 2
    assert set(written["id_left"]) | set(written["id_right"]) == set(inside)


@pytest.mark.parametrize(
    ("more", "message"),
    [
        (
            [],
            "block 'giant' (2,001 records, 2,001,000 pairs) is too large for in-memory pair "
            "labelling: the limit is 2,000,000 candidate pairs",
        ),
        (
            ["--blocks", "small", "7", "--max-pairs", "12"],
            "blocks 'small' (5 records, 10 pairs), '7' (3 records, 3 pairs) have 13 candidate "
            "pairs together, too many for in-memory pair labelling: the limit is 12",
        ),
        (
            ["--blocks", "nope"],
            "1 unknown block keys: 'nope'; the blocks are '7', 'giant', 'small'",
        ),
        (["--max-pairs", "0"], "--max-pairs must be a positive integer, got 0"),
    ],
)
def test_cli_pool_refuses_with_one_clear_line(block_files, capsys, more, message):
    assert main(pool_command(block_files, *more)) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"er-eval pairs: error: {message}")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (block_files / "pool.csv").exists()


def test_cli_pool_refusal_names_the_cli_flags_not_the_library_arguments(block_files, capsys):
    assert main(pool_command(block_files)) == 1
    err = capsys.readouterr().err
    assert "Rerun with --split-by FIELD" in err and "--max-pairs N raises the limit" in err
    assert "max_pairs=" not in err and "split_blocks" not in err


def test_the_remedy_is_the_callers_words():
    sizes = sizes_table({"x": 3})
    default = pool_size_problem(sizes, max_pairs=2)
    assert default.endswith(pool_module.API_REMEDY)
    mine = pool_size_problem(sizes, max_pairs=2, remedy="Ask Ann.")
    assert mine == default.replace(pool_module.API_REMEDY, "Ask Ann.")
