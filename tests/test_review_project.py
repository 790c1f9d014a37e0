"""The review workflow object, :class:`er_evaluation.review.Project`: reviewers as a fixed
list, typed sample settings, decisions that count for the current sample only, conflicts
kept for adjudication, drafts, the one benchmark the estimates use and the export
writes, counts that match, and a read-only project that can still be read."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from er_evaluation._sample_file import design_path, read_sample
from er_evaluation.estimators import estimate_table
from er_evaluation.io import read_membership
from er_evaluation.review import (
    Draft,
    Project,
    RedrawError,
    ReviewError,
    SampleSettings,
    StaleReviewError,
    field_variants,
    merged,
    next_to_review,
    workload,
)

# Two blocks of six records; true clusters lie inside blocks.
TRUTH = pd.Series(
    ["a", "a", "a", "b", "b", "c", "d", "d", "d", "e", "e", "f"],
    index=[f"r{i:02d}" for i in range(1, 13)],
)
V1 = pd.Series(["p", "p", "q", "q", "q", "s", "t", "t", "t", "t", "u", "w"], index=TRUTH.index)
V2 = pd.Series(["p", "p", "p", "q", "q", "q", "t", "t", "t", "u", "u", "w"], index=TRUTH.index)
CITIES = [
    "Oslo",
    "oslo",
    "Bergen",
    "Oslo",
    "Oslo ",
    "Rome",
    "Rome",
    "ROME",
    "Rome",
    "Nice",
    "Nice",
    "Bonn",
]


def files(folder: Path) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(
        {
            "rid": TRUTH.index,
            "name": [f"name {c}" for c in TRUTH],
            "city": CITIES,
            "blk": ["x"] * 6 + ["y"] * 6,
        }
    ).to_csv(folder / "records.csv", index=False)
    pd.DataFrame({"rid": TRUTH.index, "v1": V1.to_numpy(), "v2": V2.to_numpy()}).to_csv(
        folder / "wide.csv", index=False
    )
    return {
        "source": "files",
        "records": {
            "path": str(folder / "records.csv"),
            "id_col": "rid",
            "block_col": "blk",
            "fields": ["name", "city"],
        },
        "predictions": {
            "layout": "wide",
            "path": str(folder / "wide.csv"),
            "id_col": "rid",
            "version_cols": ["v1", "v2"],
        },
    }


@pytest.fixture
def made(tmp_path) -> Project:
    return Project.init(tmp_path / "p", source=files(tmp_path / "in"), reviewers=["Ann", "bob"])


def members(prediction: pd.Series, record: str) -> list:
    return [record, *prediction.index[(prediction == prediction[record]).to_numpy()].drop(record)]


def decide_truly(project: Project, reviewer: str, record: str, **kw):
    """``reviewer``'s decision on ``record`` that gives its true cluster."""
    shown = set(members(V1, record))
    true = set(TRUTH.index[TRUTH == TRUTH[record]])
    return project.save(
        reviewer,
        record,
        removed=sorted(shown - true),
        added=sorted(true - shown),
        based_on=kw.pop("based_on", None),
        **kw,
    )


def draw(project: Project, size=4, *, design="records", earlier=None, **kw) -> pd.DataFrame:
    settings = SampleSettings(design=design, size=size, seed=3, version="v1", **kw)
    return project.draw(settings, earlier=earlier)


# ------------------------------------------------------------------ reviewers


def test_reviewers_are_a_fixed_list_and_names_ignore_case(made):
    assert made.reviewers == ("Ann", "bob")
    assert made.reviewer("ann") == "Ann" and made.reviewer(" BOB ") == "bob"
    with pytest.raises(
        ReviewError, match=r"unknown reviewer 'nobody': the project's reviewers are 'Ann', 'bob'"
    ):
        made.reviewer("nobody")
    assert made.add_reviewers(["ANN", "cy"]) == ["Ann", "cy"]  # Ann is Ann; cy is new
    assert Project.open(made.folder).reviewers == ("Ann", "bob", "cy")
    with pytest.raises(ReviewError, match="name one reviewer"):
        made.add_reviewers(["dee", "Dee"])
    draw(made)
    with pytest.raises(ReviewError, match="unknown reviewer 'Annie'"):
        made.save("Annie", made.queue["record_id"].iloc[0], based_on=None)
    with pytest.raises(ReviewError, match="unknown reviewer"):
        made.export(made.folder / "b.csv", reviewer="nobody")


def test_a_decision_is_saved_under_the_project_spelling(made):
    draw(made)
    record = made.queue["record_id"].iloc[0]
    event = made.save("ANN", record, based_on=None)
    assert event.reviewer == "Ann"


def test_settings_are_typed_and_checked():
    s = SampleSettings(design="stratified", size=5, seed=0, version="v1")
    assert s.take_all_size == 50 and s.reviewers == () and s.after_event == 0
    assert SampleSettings.from_dict(s.to_dict()) == s
    with pytest.raises(ReviewError, match="size must be a whole number >= 1, got 2.5"):
        SampleSettings(design="records", size=2.5, seed=0, version="v1")
    with pytest.raises(ReviewError, match="design must be one of"):
        SampleSettings(design="everything", size=2, seed=0, version="v1")
    with pytest.raises(ReviewError, match="double review needs at least two reviewers"):
        SampleSettings(design="records", size=2, seed=0, version="v1", double_share=0.5)
    with pytest.raises(ReviewError, match="the change design needs the version to compare"):
        SampleSettings(design="change", size=2, seed=0, version="v1")
    with pytest.raises(ReviewError, match="unknown sample setting"):
        SampleSettings.from_dict({**s.to_dict(), "colour": "red"})
    with pytest.raises(ReviewError, match="'ann' and 'Ann' name one reviewer"):
        SampleSettings(design="records", size=2, seed=0, version="v1", reviewers=("ann", "Ann"))


# ------------------------------------------------------------------ one benchmark


def test_a_redraw_asks_and_earlier_decisions_stay_out_of_the_new_sample(made):
    queue = draw(made)
    for record in queue["record_id"]:
        decide_truly(made, "Ann", record)
    assert made.status()["finished_units"] == 4
    with pytest.raises(
        RedrawError, match="4 decision\\(s\\) are saved for the current sample \\(4 by Ann\\)"
    ) as asked:
        draw(made, size=6)
    assert asked.value.decisions == 4
    assert len(made.queue) == 4  # nothing changed
    new = draw(made, size=6, earlier="exclude")
    assert made.settings.after_event == 4
    sample, finished = made.sample()
    assert sample is None and finished == 0  # nothing decided for the new sample yet
    assert (made.overview()["state"] == "to review").all()
    status = made.status()
    assert status["decisions"] == 0 and status["decisions_before_this_sample"] == 4
    # the earlier decisions are still in each record's history
    assert all(len(made.history(r)) == 1 for r in queue["record_id"])
    # the export refuses an empty sample instead of writing the old queue's clusters
    with pytest.raises(ReviewError, match="no finished unit yet"):
        made.export(made.folder / "b.csv")
    record = new["record_id"].iloc[0]
    decide_truly(made, "bob", record)
    path, design = made.export(made.folder / "b.csv")
    exported = read_membership(path, "record_id", "cluster_id")
    assert set(exported.index) == set(TRUTH.index[TRUTH == TRUTH[record]])


def test_earlier_decisions_may_count_but_never_for_a_blind_double_review(made):
    queue = draw(made)
    decide_truly(made, "Ann", queue["record_id"].iloc[0])
    with pytest.raises(ReviewError, match="blind double review counts only decisions made blind"):
        draw(made, reviewers=("Ann", "bob"), double_share=0.5, earlier="include")
    draw(made, size=6, earlier="include")
    assert made.status()["decisions"] == 1  # it counts for the new sample


@pytest.mark.parametrize(
    ("design", "size", "extra"),
    [
        ("records", 5, {}),
        ("clusters", 3, {}),
        ("blocks", 1, {}),
        ("stratified", 5, {"take_all_size": 4}),
    ],
)
def test_the_export_is_the_estimated_sample(made, tmp_path, design, size, extra):
    """er-eval estimate --reference on the export gives the project's estimates, to the
    last digit, for every design: same units, same draws, same population."""
    queue = draw(made, size=size, design=design, **extra)
    for record in queue["record_id"]:
        if record not in made.true_clusters().index:
            decide_truly(made, "Ann", record)
    expected = made.estimates()
    for suffix in ("csv", "parquet"):
        path, design_file = made.export(tmp_path / f"bench.{suffix}")
        assert design_file == design_path(path)
        reference = read_membership(path, "record_id", "cluster_id")
        sample = read_sample(path, reference)
        wide = pd.read_csv(tmp_path / "in" / "wide.csv", dtype=str).set_index("rid")
        wide.index.name = None
        predictions = {v: wide[v] for v in expected["prediction"].unique()}
        metrics = list(expected["metric"].unique())
        got = estimate_table(predictions, sample, metrics, on_missing="restrict")
        pd.testing.assert_frame_equal(
            got[["metric", "value", "std_error", "ci_low", "ci_high", "n_units", "n_draws"]],
            expected[["metric", "value", "std_error", "ci_low", "ci_high", "n_units", "n_draws"]],
        )


def test_a_design_file_that_does_not_belong_is_refused(made, tmp_path):
    queue = draw(made)
    for record in queue["record_id"]:
        decide_truly(made, "Ann", record)
    path, _ = made.export(tmp_path / "bench.csv")
    frame = pd.read_csv(path, dtype=str)
    frame.iloc[:-1].to_csv(path, index=False)  # one record dropped by hand
    with pytest.raises(
        ValueError, match="does not hold the reviewed clusters bench.sample.json describes"
    ):
        read_sample(path, read_membership(path, "record_id", "cluster_id"))


# ------------------------------------------------------------------ conflicts


def test_keep_both_keeps_each_decision_as_made(made):
    queue = draw(made, size=6)
    record = next(r for r in queue["record_id"] if len(members(V1, r)) > 2)
    shown = members(V1, record)
    first = made.save("Ann", record, removed=[shown[1]], based_on=None)
    with pytest.raises(StaleReviewError) as stale:
        made.save("bob", record, based_on=None)  # bob's page showed no decision
    assert stale.value.current.event_id == first.event_id
    kept = made.keep_both("bob", record, Draft())
    assert kept.status == "correct" and kept.removed == () and kept.based_on is None
    assert made.decision(record).reviewer == "bob"  # the later one, until adjudicated
    open_items = made.disagreements()
    assert list(open_items.table["sampled_record"]) == [record]
    assert (
        "not adjudicated yet: these figures use the later decision on each (bob's on 1)"
        in open_items.note
    )
    agreement = made.agreement()
    assert agreement.n_units == 1 and agreement.identical_share == 0.0
    final = made.adjudicate("Ann", record, keep="Ann")
    assert final.role == "adjudication" and final.removed == (shown[1],)
    assert not len(made.disagreements())
    with pytest.raises(ReviewError, match="no disagreement between reviewers"):
        made.adjudicate("Ann", record, keep="bob")


def test_a_merge_is_a_draft_of_both_never_a_saved_decision(made):
    queue = draw(made, size=6)
    record = next(r for r in queue["record_id"] if len(members(V1, r)) > 2)
    shown = members(V1, record)
    theirs = made.save("Ann", record, removed=[shown[1]], notes="moved", based_on=None)
    start = merged(Draft(removed=(shown[2],), notes="other city"), theirs)
    assert start == Draft((shown[1], shown[2]), (), "moved / other city", theirs.event_id)
    assert [e.reviewer for e in made.history(record)] == ["Ann"]  # nothing saved for bob
    saved = made.save(
        "bob", record, removed=start.removed, notes=start.notes, based_on=start.based_on
    )
    assert saved.based_on == theirs.event_id  # a new decision made after seeing Ann's
    assert not len(made.disagreements())


# ------------------------------------------------------------------ drafts


def test_drafts_survive_reopening_and_go_when_saved(made):
    queue = draw(made)
    record = queue["record_id"].iloc[0]
    assert made.keep_draft("Ann", record, Draft()) is None  # nothing to keep
    kept = made.keep_draft("Ann", record, Draft(notes="check city", based_on=None))
    assert kept.updated_at
    again = Project.open(made.folder)
    assert again.draft("ann", record) == Draft(notes="check city")
    assert again.overview("Ann")["draft"].tolist() == [True, False, False, False]
    again.save("Ann", record, notes="check city", based_on=None)
    assert again.draft("Ann", record) is None
    again.keep_draft("bob", queue["record_id"].iloc[1], Draft(notes="x"))
    draw(again, size=5, earlier="exclude")
    assert again.draft("bob", queue["record_id"].iloc[1]) is None  # a new queue, no old drafts


def test_a_decision_stored_by_any_route_supersedes_its_reviewers_draft(made):
    """A sheet import or an adjudication left the reviewer's unsaved ticks in place, to be
    shown again on top of the decision just stored."""
    queue = draw(made, size=6)
    record = next(r for r in queue["record_id"] if len(members(V1, r)) > 2)
    shown = members(V1, record)
    made.keep_draft("Ann", record, Draft(removed=(shown[1],), notes="stale tick"))
    made.keep_draft("bob", record, Draft(notes="bob's own edit"))
    sheet = pd.DataFrame(
        {"sampled_record": [record], "status": ["correct"], "remove": [""], "add": [""]}
    )
    (imported,) = made.import_sheet(sheet, reviewer="ann")
    assert made.draft("Ann", record) is None
    assert made.draft("bob", record) == Draft(notes="bob's own edit")  # not his decision
    assert not made.overview("Ann").set_index("record").loc[record, "draft"]
    # the same sheet again writes nothing, yet the decision it repeats is Ann's in force:
    # her draft made since goes as well
    made.keep_draft("Ann", record, Draft(removed=(shown[1],), notes="after the import"))
    assert made.import_sheet(sheet, reviewer="ann") == []
    assert made.draft("Ann", record) is None
    assert made.draft("bob", record) == Draft(notes="bob's own edit")
    # a conflict kept beside Ann's, then adjudicated by Ann with a draft of her own
    kept = made.keep_both("bob", record, Draft(removed=(shown[2],)))
    assert made.draft("bob", record) is None
    made.keep_draft("Ann", record, Draft(notes="adjudicating"))
    final = made.adjudicate("Ann", record, keep="bob")
    assert made.draft("Ann", record) is None
    # every decision is still in the record's history
    assert [e.event_id for e in made.history(record)] == [
        imported.event_id,
        kept.event_id,
        final.event_id,
    ]


# ------------------------------------------------------------------ counts


def test_workload_counts_second_reviews(made):
    queue = draw(made, size=10, reviewers=("Ann", "bob"), double_share=0.5)
    load = made.workload()
    for name in ("Ann", "bob"):
        assigned = (queue["reviewer"] == name) | (queue["second_reviewer"] == name)
        assert load.loc[name, "all_records"] == int(assigned.sum())
        assert load.loc[name, "all_units"] == queue.loc[assigned, "unit"].nunique()
    assert load["second_units"].sum() == 5
    assert workload(queue).equals(load)


def test_agreement_and_status_count_the_current_sample_only(made):
    queue = draw(made, size=4, reviewers=("Ann", "bob"), double_share=1.0)
    for record in queue["record_id"]:
        decide_truly(made, "Ann", record)
        decide_truly(made, "bob", record)
    assert made.agreement().n_units == 4
    assert made.status()["double_reviewed_units"] == 4
    draw(made, size=3, reviewers=("Ann", "bob"), double_share=1.0, earlier="exclude")
    assert made.agreement().n_units == 0  # earlier double reviews are another sample's


def test_overview_position_and_all_done(made):
    queue = draw(made, size=3, reviewers=("Ann", "bob"))
    mine = made.overview("Ann", mine_only=True)
    assert list(mine["item"]) == list(range(1, len(mine) + 1))
    for record in mine["record"]:
        decide_truly(made, "Ann", record)
    done = (made.overview("Ann", mine_only=True)["state"] != "to review").to_numpy()
    assert done.all()
    assert next_to_review(done, -1) == 0  # never "item 0" (position -1) when all are done
    assert next_to_review(done, 5) == len(done) - 1
    assert next_to_review(np.array([True, False, True]), 1) == 1
    assert len(made.overview()) == len(queue)


def test_status_counts_are_integers(made):
    queue = draw(made)
    decide_truly(made, "Ann", queue["record_id"].iloc[0])
    status = made.status()
    counts = {
        k: v
        for k, v in status.items()
        if k not in ("folder", "data", "reviewers", "design", "version")
    }
    assert all(type(v) is int for v in counts.values()), counts


# ------------------------------------------------------------------ bad input


def test_sheet_import_checks_like_the_app(made):
    queue = draw(made)
    first = queue["record_id"].iloc[0]
    outside = next(r for r in TRUTH.index if r not in set(queue["record_id"]))
    sheet = pd.DataFrame(
        {
            "sampled_record": [first, outside],
            "remove": ["", ""],
            "add": ["", ""],
            "reviewer": ["Nobody", "ann"],
        }
    )
    with pytest.raises(ReviewError) as refused:
        made.import_sheet(sheet)
    lines = str(refused.value).splitlines()
    assert lines[0] == "review sheet: 2 invalid row(s), nothing imported:"
    assert "unknown reviewer 'Nobody'" in lines[1]
    assert f"(sampled_record {outside!r}): not an item of the review queue" in lines[2]
    sheet["reviewer"] = ["ANN", "bob"]
    sheet = sheet.iloc[:1]
    (event,) = made.import_sheet(sheet)
    assert event.reviewer == "Ann"


def test_save_review_unchanged_is_the_same_decision_as_correct(made):
    queue = draw(made)
    a, b = queue["record_id"].iloc[:2]
    assert made.save("Ann", a, based_on=None).status == "correct"  # "Save review", nothing ticked
    assert (
        made.save("Ann", b, removed=[], added=[], notes="fine", based_on=None).status == "correct"
    )


def _read_only(paths: list[Path]) -> list[str]:
    """Make ``paths`` read-only for this process: permission bits for an ordinary user; for
    root, who ignores them, the immutable attribute (chattr +i). Returns the command that
    undoes it."""
    if os.geteuid() != 0:
        for path in paths:
            path.chmod(0o555 if path.is_dir() else 0o444)
        return ["chmod", "u+w"]
    done = subprocess.run(["chattr", "+i", *map(str, paths)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot make files immutable here: {done.stderr.strip()}")
    return ["chattr", "-i"]


def test_a_read_only_project_can_be_read(made, tmp_path):
    queue = draw(made)
    decide_truly(made, "Ann", queue["record_id"].iloc[0])
    made.keep_draft("bob", queue["record_id"].iloc[1], Draft(notes="x"))
    expected = made.status()
    folder = made.folder
    paths = [*folder.iterdir(), folder]
    undo = _read_only(paths)
    try:
        opened = Project.open(folder)
        assert opened.store.read_only
        assert opened.status() == expected
        assert opened.draft("bob", queue["record_id"].iloc[1]) == Draft(notes="x")
        assert len(opened.estimates()) == 6
        with pytest.raises(ReviewError, match="read-only here .*nothing was saved"):
            opened.save("Ann", queue["record_id"].iloc[1], based_on=None)
    finally:
        subprocess.run([*undo, *map(str, paths)], check=True)


def test_variants_summarise_a_cluster_ignoring_case_and_spaces(tmp_path):
    records = pd.DataFrame({"city": CITIES, "name": list(TRUTH)}, index=TRUTH.index)
    table = field_variants(records, list(TRUTH.index[:6]), ["city"])
    assert table[["value", "records"]].values.tolist() == [["Oslo", 4], ["Bergen", 1], ["Rome", 1]]
    assert table["ids"][0] == ("r01", "r02", "r04", "r05")
