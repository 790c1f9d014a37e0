"""The bundled datasets load offline, with the documented shapes and valid membership vectors."""

from __future__ import annotations

import pandas as pd
import pytest

from er_evaluation.clustering import validate_membership
from er_evaluation.datasets import (
    PATENTSVIEW_VERSIONS,
    load_patentsview_benchmark,
    load_patentsview_mentions,
    load_patentsview_predictions,
    load_rldata500,
    load_rldata10000,
)


def test_patentsview_mentions():
    mentions = load_patentsview_mentions()
    assert mentions.shape == (133_541, 14)
    assert mentions.index.name == "mention_id"
    assert mentions.index.is_unique
    assert {"name_first", "name_last", "block", "patent_id"} <= set(mentions.columns)


@pytest.mark.slow
def test_patentsview_predictions_each_version_on_its_own_population():
    mention_ids = set(load_patentsview_mentions().index)
    predictions = load_patentsview_predictions()
    assert list(predictions) == list(PATENTSVIEW_VERSIONS)
    sizes = [len(p) for p in predictions.values()]
    assert sizes[0] == 84_749 and sizes[-1] == 133_541
    assert sizes == sorted(sizes)  # populations only grow from one release to the next
    for version, prediction in predictions.items():
        validate_membership(prediction, name=version)
        assert prediction.notna().all()
        assert set(prediction.index) <= mention_ids
        assert prediction.name == version
    # an older version's population is contained in the newest one
    assert set(predictions["2021-12-30"].index) <= set(predictions["2022-06-30"].index)


def test_patentsview_predictions_subset_and_unknown_version():
    subset = load_patentsview_predictions(["2022-06-30", "2021-12-30"])
    assert list(subset) == ["2022-06-30", "2021-12-30"]
    assert len(subset["2021-12-30"]) == 130_097
    with pytest.raises(ValueError, match=r"unknown PatentsView version\(s\) \['2021-01-01'\]"):
        load_patentsview_predictions(["2021-01-01"])


def test_patentsview_benchmark():
    benchmark = load_patentsview_benchmark()
    validate_membership(benchmark, name="benchmark")
    assert len(benchmark) == 13_467
    sizes = benchmark.value_counts()
    assert len(sizes) == 401
    assert sizes.max() == 1_064 and sizes.median() == 11
    # every benchmark mention is in the newest version's population
    newest = load_patentsview_predictions(["2022-06-30"])["2022-06-30"]
    assert set(benchmark.index) <= set(newest.index)


@pytest.mark.parametrize(
    ("loader", "n", "entities"), [(load_rldata500, 500, 450), (load_rldata10000, 10_000, 9_000)]
)
def test_rldata(loader, n, entities):
    records, truth = loader()
    assert list(records.columns) == [
        "fname_c1",
        "fname_c2",
        "lname_c1",
        "lname_c2",
        "by",
        "bm",
        "bd",
    ]
    assert len(records) == n and records.index.equals(truth.index)
    validate_membership(truth, name="truth")
    assert truth.nunique() == entities  # 10% duplicates
    assert records["fname_c1"].notna().all()
    assert records["fname_c2"].isna().any()  # "NA" in the file is missing, not the string "NA"
    assert pd.api.types.is_integer_dtype(records["by"])
