"""Review design (queue, double review), agreement statistics, field differences, and the
project folder helpers."""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd
import pytest
from _helpers import PRED, review
from sklearn.metrics import cohen_kappa_score

from er_evaluation.review import (
    ReviewError,
    ReviewStore,
    agreement,
    assign_reviewers,
    assign_second_reviewers,
    check_folder,
    cohen_kappa,
    differing_fields,
    draw_queue,
    reviewer_queue,
)

# -- double review ----------------------------------------------------------------------------


def test_second_reviewers_share_and_distinct():
    units = [f"u{i}" for i in range(40)]
    first = assign_reviewers(units, ["ann", "bob", "cy"], seed=5)
    second = assign_second_reviewers(first, ["ann", "bob", "cy"], 0.25, seed=5)
    doubled = second.notna()
    assert doubled.sum() == 10
    assert (second[doubled] != first[doubled]).all()
    counts = second[doubled].value_counts()
    assert counts.max() - counts.min() <= 1
    assert second.equals(assign_second_reviewers(first, ["ann", "bob", "cy"], 0.25, seed=5))
    # The first split does not change with the share.
    assert assign_second_reviewers(first, ["ann", "bob", "cy"], 0.0, seed=5).isna().all()


def test_second_reviewer_errors():
    first = assign_reviewers(["x", "y"], ["ann"], seed=0)
    with pytest.raises(ReviewError, match="at least two reviewers"):
        assign_second_reviewers(first, ["ann"], 0.5, seed=0)
    with pytest.raises(ReviewError, match="between 0 and 1"):
        assign_second_reviewers(first, ["ann", "bob"], 1.5, seed=0)
    with pytest.raises(ReviewError, match="needs named reviewers"):
        draw_queue(PRED, design="records", size=2, seed=0, double_share=0.5)


def test_queue_with_double_review_gives_whole_units_to_both():
    queue = draw_queue(
        PRED, design="clusters", size=3, seed=2, reviewers=["ann", "bob"], double_share=1.0
    )
    assert list(queue.columns) == ["record_id", "unit", "reviewer", "second_reviewer"]
    assert queue["unit"].nunique() == 3
    assert (queue.groupby("unit")["second_reviewer"].nunique() == 1).all()
    assert (queue["reviewer"] != queue["second_reviewer"]).all()
    ann = reviewer_queue(queue, "ann")
    assert len(ann) == len(queue)  # two reviewers, everything doubled: ann sees all


def test_queue_without_reviewers_is_shared():
    queue = draw_queue(PRED, design="records", size=4, seed=1)
    assert len(queue) == 4 and queue["reviewer"].isna().all()
    assert queue["second_reviewer"].isna().all()
    assert (queue["record_id"] == queue["unit"]).all()


# -- agreement ---------------------------------------------------------------------------------


def test_cohen_kappa_hand_case_and_sklearn():
    a = np.array([1, 1, 1, 0, 0, 1, 0, 1, 1, 0], dtype=bool)
    b = np.array([1, 1, 0, 0, 0, 1, 1, 1, 1, 0], dtype=bool)
    # p_o = 8/10; p1 = 0.6, q1 = 0.6: p_e = 0.36 + 0.16 = 0.52; kappa = 0.28 / 0.48
    assert cohen_kappa(a, b) == pytest.approx(0.28 / 0.48)
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))
    assert math.isnan(cohen_kappa(np.ones(3, bool), np.ones(3, bool)))


def test_agreement_hand_case(tmp_path):
    store = ReviewStore(tmp_path / "r.sqlite")
    # a1: alice removes a4, bob keeps all. Candidates a2, a3, a4: links (1,1,0) vs (1,1,1).
    review(store, "a1", reviewer="alice", removed=["a4"])
    review(store, "a1", reviewer="bob")
    # b1: both correct. Candidate b2: (1) vs (1).
    review(store, "b1", reviewer="alice")
    review(store, "b1", reviewer="bob")
    # c1: bob adds d1, alice correct. Candidate d1: (0) vs (1).
    review(store, "c1", reviewer="alice")
    review(store, "c1", reviewer="bob", added=["d1"])
    # d1: single review, not compared; an adjudication is not an opinion.
    review(store, "d1", reviewer="alice")
    review(store, "a1", reviewer="cy", removed=["a4"], adjudication=True)
    result = agreement(store.event_list())
    assert result.n_units == 3
    assert result.identical_share == pytest.approx(1 / 3)
    first = np.array([1, 1, 0, 1, 0], dtype=bool)
    second = np.array([1, 1, 1, 1, 1], dtype=bool)
    assert result.n_links == 5
    assert result.link_agreement == pytest.approx(3 / 5)
    assert result.kappa == pytest.approx(cohen_kappa_score(first, second))
    assert result.per_record["sampled_record"].tolist() == ["a1", "b1", "c1"]
    assert result.per_record["identical"].tolist() == [False, True, False]


def test_agreement_without_double_review_is_empty(tmp_path):
    store = ReviewStore(tmp_path / "r.sqlite")
    review(store, "a1", reviewer="alice")
    result = agreement(store.event_list())
    assert result.n_units == 0 and math.isnan(result.kappa) and result.per_record.empty


# -- fields side by side -----------------------------------------------------------------------


def test_differing_fields_ignores_case_accents_and_blanks():
    records = pd.DataFrame(
        {
            "name": ["José Núñez", "jose nunez", "Ann", "José Núñez"],
            "city": ["Lyon", None, "Lyon", "Paris"],
        },
        index=["s", "x", "y", "z"],
    )
    diff = differing_fields(records, "s", ["x", "y", "z"], ["name", "city"])
    assert diff.loc["x"].tolist() == [False, False]  # blank city is not a difference
    assert diff.loc["y"].tolist() == [True, False]
    assert diff.loc["z"].tolist() == [False, True]


# -- project folder ----------------------------------------------------------------------------


def test_check_folder_resolves_and_refuses_in_sentences(tmp_path):
    assert check_folder("x/../y", base=tmp_path) == tmp_path / "y"
    assert not (tmp_path / "y").exists()  # nothing created
    afile = tmp_path / "f.txt"
    afile.write_text("x")
    with pytest.raises(ReviewError, match="is a file, not a folder"):
        check_folder(afile)
    with pytest.raises(ReviewError, match="is a file, so .* cannot be created"):
        check_folder(afile / "sub")
    with pytest.raises(ReviewError, match="give a project folder"):
        check_folder("  ")
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(ReviewError, match="choose a folder you can write to"):
            check_folder(locked / "p")
