"""Review store: append-only events, undo, true clusters, export, sheet import, checks."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from _helpers import PRED, in_threads, members, review
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from er_evaluation.io import read_membership
from er_evaluation.review import (
    ReviewError,
    ReviewStore,
    assign_reviewers,
    check_review,
    names_beside,
    validate_review,
)


def partition(series: pd.Series) -> set[frozenset]:
    return {frozenset(g.index) for _, g in series.groupby(series.to_numpy())}


# -- events --------------------------------------------------------------------------------


def test_event_fields_and_status_derivation(store):
    e1 = review(store, "a1", removed=["a4"], added=["c1"], notes="a4 is another", version="v2")
    assert e1.event_id == 1
    assert e1.status == "reviewed"
    assert e1.reviewer == "ann"
    assert e1.sampled_record == "a1" and e1.predicted_cluster == "A" and e1.version == "v2"
    assert e1.shown_records == ("a1", "a2", "a3", "a4")
    assert e1.removed == ("a4",) and e1.added == ("c1",) and e1.notes == "a4 is another"
    assert e1.true_cluster == ("a1", "a2", "a3", "c1")
    assert e1.created_at.endswith("+00:00")
    e2 = review(store, "b1")
    assert e2.status == "correct" and e2.true_cluster == ("b1", "b2")
    e3 = review(store, "d1", status="skipped")
    assert e3.status == "skipped"
    events = store.events()
    assert events["event_id"].tolist() == [1, 2, 3]
    assert events["status"].tolist() == ["reviewed", "correct", "skipped"]
    assert str(events["created_at"].dt.tz) == "UTC"
    assert events.loc[0, "added"] == ("c1",)
    assert store.reviewed_records() == {"a1", "b1"}
    assert store.reviewed_records(include_skipped=True) == {"a1", "b1", "d1"}


def test_many_writes_survive_reopen(tmp_path):
    path = tmp_path / "r.sqlite"
    store = ReviewStore(path)
    for i in range(150):
        review(store, ["a1", "b1", "c1", "d1"][i % 4], notes=f"save {i}", reviewer=f"r{i % 3}")
    reopened = ReviewStore(path)
    events = reopened.events()
    assert len(events) == 150
    assert events["event_id"].tolist() == list(range(1, 151))
    assert events["notes"].tolist() == [f"save {i}" for i in range(150)]
    # Only the latest save per sampled record is the current decision.
    decisions = reopened.decisions()
    assert sorted(decisions["notes"]) == ["save 146", "save 147", "save 148", "save 149"]


def test_events_cannot_be_updated_or_deleted(store):
    review(store, "a1")
    conn = sqlite3.connect(store.path)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("UPDATE events SET notes = 'x'")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("DELETE FROM events")
    conn.close()
    assert len(store.events()) == 1


def test_store_is_wal_with_full_sync(store):
    conn = sqlite3.connect(store.path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    with store._connect() as c:
        assert c.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


def test_int_and_str_ids_stay_distinct(tmp_path):
    pred = pd.Series([1, 1, 2], index=pd.Index([7, 8, 9]))
    store = ReviewStore(tmp_path / "r.sqlite")
    event = review(store, np.int64(7), prediction=pred, removed=[np.int64(8)])
    assert event.sampled_record == 7 and isinstance(event.sampled_record, int)
    assert store.decision(7) is not None
    assert store.decision("7") is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"removed": ["b1"]}, "removed id\\(s\\) not in the shown cluster 'A' of 'a1': 'b1'"),
        ({"removed": ["a1"]}, "sampled record 'a1' itself cannot be removed"),
        ({"removed": ["a2"], "added": ["a2"]}, "both removed and added: 'a2'"),
        ({"reviewer": " "}, "reviewer must be a non-empty name"),
        ({"status": "maybe"}, "status must be one of"),
        ({"status": "skipped", "added": ["c1"]}, "'skipped' but records were added"),
        ({"status": "correct", "removed": ["a2"]}, "'correct' but records were added"),
        ({"removed": "a2"}, "not the string 'a2'"),
    ],
)
def test_record_review_rejects_inconsistent_input(store, kwargs, message):
    kwargs = {"reviewer": "ann", **kwargs}
    with pytest.raises(ReviewError, match=message):
        store.record_review(
            sampled_record="a1", predicted_cluster="A", shown_records=members(PRED, "A"), **kwargs
        )
    assert len(store.events()) == 0


def test_sampled_record_must_be_shown(store):
    with pytest.raises(ReviewError, match="'c1' is not among the shown records"):
        store.record_review(
            reviewer="ann", sampled_record="c1", predicted_cluster="A", shown_records=["a1"]
        )


# -- undo ----------------------------------------------------------------------------------


def test_undo_pops_your_own_latest_effective_review(store):
    first = review(store, "a1", removed=["a4"])
    second = review(store, "a1", added=["c1"])
    review(store, "b1")
    assert store.decision("a1") == second
    undo1 = store.undo(reviewer="ann", sampled_record="a1")
    assert undo1.status == "undo" and undo1.undoes == second.event_id
    assert store.decision("a1") == first
    undo2 = store.undo(reviewer="ann", sampled_record="a1")
    assert undo2.undoes == first.event_id
    assert store.decision("a1") is None
    assert store.reviewed_records() == {"b1"}
    with pytest.raises(ReviewError, match="nothing to undo: sampled record 'a1' has no saved"):
        store.undo(reviewer="ann", sampled_record="a1")
    with pytest.raises(ReviewError, match="nothing to undo: sampled record 'zz'"):
        store.undo(reviewer="ann", sampled_record="zz")
    # History keeps everything: 3 reviews + 2 undos, nothing deleted.
    events = store.events()
    assert events["status"].tolist() == ["reviewed", "reviewed", "correct", "undo", "undo"]
    assert events["undoes"].tolist()[3:] == [second.event_id, first.event_id]
    # A new review after undos becomes the decision again.
    third = review(store, "a1", removed=["a2"])
    assert store.decision("a1") == third
    assert store.decisions()["sampled_record"].tolist() == ["b1", "a1"]


def test_undo_of_someone_elses_save_needs_confirmation(store):
    ann = review(store, "a1", removed=["a4"])
    bob = review(store, "a1", added=["c1"], reviewer="bob")
    # ann's plain undo takes back her own save, never bob's newer one.
    undo = store.undo(reviewer="ann", sampled_record="a1")
    assert undo.undoes == ann.event_id
    assert store.decision("a1") == bob
    with pytest.raises(ReviewError, match="no saved review by ann; its decision is by bob"):
        store.undo(reviewer="ann", sampled_record="a1")
    with pytest.raises(ReviewError, match="saved by bob, not ann: confirm"):
        store.undo(reviewer="ann", sampled_record="a1", event_id=bob.event_id)
    assert store.decision("a1") == bob
    undo = store.undo(
        reviewer="ann", sampled_record="a1", event_id=bob.event_id, confirm_other=True
    )
    assert undo.undoes == bob.event_id and undo.reviewer == "ann"
    assert store.decision("a1") is None
    with pytest.raises(ReviewError, match="event 2 is not an effective decision"):
        store.undo(reviewer="bob", sampled_record="a1", event_id=bob.event_id)


def test_undo_of_a_skip_restores_the_previous_decision(store):
    review(store, "a1", removed=["a4"])
    review(store, "a1", status="skipped")
    assert store.reviewed_records() == set()
    store.undo(reviewer="ann", sampled_record="a1")
    assert store.reviewed_records() == {"a1"}
    assert partition(store.true_clusters()) == {frozenset({"a1", "a2", "a3"})}


# -- true clusters -------------------------------------------------------------------------


def test_true_clusters_hand_case_with_overlap_merge(store):
    # a1: drop a4, add c1 -> {a1, a2, a3, c1}
    review(store, "a1", removed=["a4"], added=["c1"])
    # b1: correct -> {b1, b2}
    review(store, "b1")
    # d1: add c1 -> {d1, c1} overlaps a1's cluster: same entity, merged.
    review(store, "d1", added=["c1"], reviewer="bob")
    truth = store.true_clusters()
    assert partition(truth) == {
        frozenset({"a1", "a2", "a3", "c1", "d1"}),
        frozenset({"b1", "b2"}),
    }
    # Labels: the sampled record of each entity's earliest decision.
    assert truth["d1"] == "a1" and truth["b2"] == "b1"
    assert truth.index.name == "record_id" and truth.name == "cluster_id"
    assert store.conflicts().empty


def test_conflict_reported_when_removed_record_is_merged_back(store):
    # ann removes a4 from a1's entity; bob samples c1 and adds a4 and a2 to it, which
    # merges c1's cluster with a1's, so a4 is back in the entity ann removed it from.
    ann = review(store, "a1", removed=["a4"])
    review(store, "c1", added=["a4", "a2"], reviewer="bob")
    truth = store.true_clusters()
    assert partition(truth) == {frozenset({"a1", "a2", "a3", "a4", "c1"})}
    conflicts = store.conflicts()
    assert len(conflicts) == 1
    row = conflicts.iloc[0]
    assert row["record"] == "a4" and row["sampled_record"] == "a1"
    assert row["reviewer"] == "ann" and row["event_id"] == ann.event_id
    assert row["cluster"] == "a1" and row["included_by"] == ("c1",)


def test_removed_elsewhere_without_merge_is_not_a_conflict(store):
    review(store, "a1", removed=["a4"])
    review(store, "d1", added=["a4"], reviewer="bob")  # a4 belongs with d1: consistent
    assert partition(store.true_clusters()) == {
        frozenset({"a1", "a2", "a3"}),
        frozenset({"d1", "a4"}),
    }
    assert store.conflicts().empty


def test_true_clusters_need_a_decision(store):
    with pytest.raises(ReviewError, match="no review decisions yet"):
        store.true_clusters()
    review(store, "a1", status="skipped")
    with pytest.raises(ReviewError, match="no review decisions yet"):
        store.true_clusters()
    assert store.conflicts().empty


@st.composite
def review_sessions(draw):
    n_records = draw(st.integers(2, 14))
    ids = [f"r{i}" for i in range(n_records)]
    clusters = draw(st.lists(st.integers(0, 4), min_size=n_records, max_size=n_records))
    prediction = pd.Series([f"c{c}" for c in clusters], index=pd.Index(ids))
    actions = []
    for _ in range(draw(st.integers(1, 8))):
        sampled = draw(st.sampled_from(ids))
        if draw(st.integers(0, 5)) == 0:
            actions.append(("undo", sampled, (), ()))
            continue
        cluster = members(prediction, prediction[sampled])
        removable = [r for r in cluster if r != sampled]
        removed = draw(st.lists(st.sampled_from(removable), unique=True)) if removable else []
        outside = [r for r in ids if r not in cluster]
        added = draw(st.lists(st.sampled_from(outside), unique=True)) if outside else []
        actions.append(("review", sampled, removed, added))
    return prediction, actions


@given(session=review_sessions())
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_true_clusters_match_graph_union_of_decisions(tmp_path_factory, session):
    """Independent computation: replay the actions with a plain dict stack and take the
    connected components (networkx) of the union of the decided true clusters."""
    prediction, actions = session
    store = ReviewStore(tmp_path_factory.mktemp("s") / "r.sqlite")
    stacks: dict[str, list[set]] = {}
    for kind, sampled, removed, added in actions:
        if kind == "undo":
            if stacks.get(sampled):
                store.undo(reviewer="ann", sampled_record=sampled)
                stacks[sampled].pop()
            continue
        review(store, sampled, prediction=prediction, removed=removed, added=added)
        cluster = set(members(prediction, prediction[sampled]))
        stacks.setdefault(sampled, []).append((cluster - set(removed)) | set(added))
    decided = {s: st_[-1] for s, st_ in stacks.items() if st_}
    assert store.reviewed_records() == set(decided)
    if not decided:
        with pytest.raises(ReviewError):
            store.true_clusters()
        return
    graph = nx.Graph()
    for sampled, cluster in decided.items():
        graph.add_node(sampled)
        graph.add_edges_from((sampled, r) for r in cluster)
    expected = {frozenset(c) for c in nx.connected_components(graph)}
    assert partition(store.true_clusters()) == expected


# -- export --------------------------------------------------------------------------------


def test_export_round_trip_csv_and_parquet(store, tmp_path):
    review(store, "a1", removed=["a4"], added=["c1"])
    review(store, "b1")
    truth = store.true_clusters()
    for name in ("bench.csv", "bench.parquet"):
        back = read_membership(store.export(tmp_path / name))
        assert back.sort_index().to_dict() == truth.sort_index().to_dict()


def test_export_keeps_integer_ids_in_parquet(tmp_path):
    pred = pd.Series([1, 1, 2, 2], index=pd.Index([10, 11, 12, 13]))
    store = ReviewStore(tmp_path / "r.sqlite")
    review(store, 10, prediction=pred, removed=[11], added=[12])
    back = read_membership(store.export(tmp_path / "b.parquet"))
    assert back.index.dtype.kind == "i"
    assert back.to_dict() == {10: 10, 12: 10}


def test_exported_benchmark_feeds_the_estimators(tmp_path):
    from er_evaluation.estimators import estimate
    from er_evaluation.sampling import benchmark_sample

    store = ReviewStore(tmp_path / "r.sqlite")
    review(store, "a1", removed=["a4"])
    review(store, "b1", added=["d1"])
    review(store, "c1")
    reference = read_membership(store.export(tmp_path / "bench.csv"))
    result = estimate(PRED, benchmark_sample(reference), "pairwise_precision", ci_method="normal")
    assert 0.0 <= result.value <= 1.0
    assert result.n_records == len(reference) == 7


# -- concurrency ---------------------------------------------------------------------------


def test_two_threads_writing_at_once_lose_nothing(store):
    def write(name):
        for i in range(60):
            review(store, ["a1", "b1", "c1"][i % 3], reviewer=name, notes=f"{name}-{i}")

    assert in_threads(write, ("ann", "bob", "cyd")) == []
    events = store.events()
    assert len(events) == 180
    assert sorted(events["notes"]) == sorted(
        f"{n}-{i}" for n in ("ann", "bob", "cyd") for i in range(60)
    )
    assert events["event_id"].is_unique


@pytest.mark.slow
def test_two_processes_writing_at_once_lose_nothing(store):
    script = textwrap.dedent(
        f"""
        import sys
        from er_evaluation.review import ReviewStore
        store = ReviewStore({str(store.path)!r})
        name = sys.argv[1]
        for i in range(50):
            store.record_review(reviewer=name, sampled_record="a1", predicted_cluster="A",
                                shown_records=["a1", "a2"], removed=["a2"] if i % 2 else [],
                                notes=f"{{name}}-{{i}}")
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, name], stderr=subprocess.PIPE)
        for name in ("p1", "p2")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    events = store.events()
    assert len(events) == 100
    assert sorted(events["notes"]) == sorted(f"p{k}-{i}" for k in (1, 2) for i in range(50))
    assert events["event_id"].tolist() == list(range(1, 101))


# -- sheet import --------------------------------------------------------------------------


def test_import_sheet_hand_case(store):
    sheet = pd.DataFrame(
        {
            "mention_id": ["a1", "b1", "d1"],
            "inventor_id": ["A", "B", "D"],
            "remove": ["a4; a3", "", None],
            "add": ["c1", None, "b2,  a4"],
            "reviewer": ["ann", "bob", None],
            "notes": ["two people", None, ""],
        }
    )
    events = store.import_sheet(
        sheet,
        prediction=PRED,
        sampled_col="mention_id",
        cluster_col="inventor_id",
        reviewer="sheet",
        version="v1",
    )
    assert [e.sampled_record for e in events] == ["a1", "b1", "d1"]
    assert [e.reviewer for e in events] == ["ann", "bob", "sheet"]
    assert events[0].removed == ("a4", "a3") and events[0].added == ("c1",)
    assert events[0].shown_records == ("a1", "a2", "a3", "a4")
    assert events[1].status == "correct" and events[2].added == ("b2", "a4")
    assert {e.version for e in events} == {"v1"}
    assert events[0].notes == "two people" and events[1].notes == ""
    assert partition(store.true_clusters()) == {
        frozenset({"a1", "a2", "c1"}),
        frozenset({"b1", "b2", "d1", "a4"}),
    }


def test_import_sheet_names_every_bad_row_and_writes_nothing(store):
    sheet = pd.DataFrame(
        {
            "sampled_record": ["a1", "zz", "b1", "a1", "c1", "d1"],
            "predicted_cluster": ["A", "Z", "B", "A", "X", "D"],
            "remove": ["b2", "", "b1", "", "", ""],
            "add": ["", "", "", "", "", "nope"],
        }
    )
    with pytest.raises(ReviewError) as info:
        store.import_sheet(sheet, prediction=PRED, reviewer="ann")
    message = str(info.value)
    assert "review sheet: 6 invalid row(s), nothing imported" in message
    assert (
        "row 0 (sampled_record 'a1'): removed id(s) in column 'remove' not in the predicted "
        "cluster 'A'" in message
    )
    assert "row 1 (sampled_record 'zz'): sampled record 'zz' is not in the prediction" in message
    assert (
        "row 2 (sampled_record 'b1'): the sampled record 'b1' itself cannot be removed in "
        "column 'remove'" in message
    )
    assert (
        "row 3 (sampled_record 'a1'): column 'sampled_record': the record has a row already "
        "(row 0)" in message
    )
    assert (
        "row 4 (sampled_record 'c1'): 'predicted_cluster' is 'X' but the prediction puts" in message
    )
    assert (
        "row 5 (sampled_record 'd1'): added id(s) in column 'add' not in the population: 'nope'"
        in message
    )
    assert len(store.events()) == 0


def test_import_sheet_column_errors(store):
    with pytest.raises(ReviewError, match=r"missing column\(s\) \['remove'\]"):
        store.import_sheet(
            pd.DataFrame({"sampled_record": ["a1"], "add": [""]}), prediction=PRED, reviewer="a"
        )
    with pytest.raises(ReviewError, match="no reviewer column; pass reviewer="):
        store.import_sheet(
            pd.DataFrame({"sampled_record": ["a1"], "add": [""], "remove": [""]}), prediction=PRED
        )
    with pytest.raises(ReviewError, match="review sheet is empty"):
        store.import_sheet(
            pd.DataFrame({"sampled_record": [], "add": [], "remove": []}),
            prediction=PRED,
            reviewer="a",
        )


def test_import_sheet_parses_integer_ids(tmp_path):
    pred = pd.Series([1, 1, 1, 2], index=pd.Index([10, 11, 12, 13]))
    store = ReviewStore(tmp_path / "r.sqlite")
    sheet = pd.DataFrame({"sampled_record": ["10"], "remove": ["11;12"], "add": ["13"]})
    (event,) = store.import_sheet(sheet, prediction=pred, reviewer="a")
    assert event.removed == (11, 12) and event.added == (13,)
    bad = pd.DataFrame({"sampled_record": ["10"], "remove": ["11x"], "add": [""]})
    with pytest.raises(ReviewError, match="'11x' is not an integer id"):
        store.import_sheet(bad, prediction=pred, reviewer="a")


# -- inline checks -------------------------------------------------------------------------

RECORDS = pd.DataFrame(
    {
        "mention_id": ["a1", "a2", "a3", "a4", "b1", "b2", "c1", "d1"],
        "name_first": ["José", "Jose", "J.", "Maria", "Bob", "Bob", "JOSE ", "Ann"],
        "name_last": ["Núñez", "Nunez", "Nunez", "Nunez", "Lee", "Lee", "nuñez", None],
    }
)


def test_check_review_errors_name_ids():
    with pytest.raises(ReviewError, match="sampled record 'zz' is not in the prediction"):
        check_review(PRED, "zz")
    with pytest.raises(ReviewError, match="not in the predicted cluster 'A' of 'a1': 'b1', 'c1'"):
        check_review(PRED, "a1", removed=["a2", "b1", "c1"])
    with pytest.raises(ReviewError, match="removed id\\(s\\) not in the predicted .*'ghost'"):
        check_review(PRED, "a1", removed=["ghost"])
    with pytest.raises(ReviewError, match="sampled record 'a1' itself cannot be removed"):
        check_review(PRED, "a1", removed=["a1"])
    with pytest.raises(ReviewError, match="not in the population: 'x9', 'x8'"):
        check_review(PRED, "a1", added=["c1", "x9", "x8"])
    # adding a record the cluster already holds would record a change nobody made
    with pytest.raises(ReviewError, match="added id\\(s\\) already in the predicted .*'a2'"):
        check_review(PRED, "a1", added=["a2", "b1"])
    with pytest.raises(ReviewError, match="already in the shown cluster None of 'a1': 'a1'"):
        validate_review(sampled_record="a1", added=["a1"], shown_records=["a1", "a2"])


def test_check_review_soft_issues():
    assert check_review(PRED, "a1", removed=["a4"], added=["c1"]) == []
    issues = check_review(
        PRED, "a1", removed=["a4"], added=["c1", "b1", "d1"], records=RECORDS, id_col="mention_id"
    )
    assert [(i.kind, i.records) for i in issues] == [("name", ("b1",)), ("name", ("d1",))]
    assert "'b1' is named 'Bob Lee'; the sampled record 'a1' is 'José Núñez'" in issues[0].message


def test_names_beside():
    table = names_beside(RECORDS.set_index("mention_id"), "a1", ["a2", "a3", "c1", "d1"])
    assert table["record_id"].tolist() == ["a2", "a3", "c1", "d1"]
    assert table["name"].tolist() == ["Jose Nunez", "J. Nunez", "JOSE  nuñez", "Ann"]
    assert table["sampled_name"].unique().tolist() == ["José Núñez"]
    assert table["same_name"].tolist() == [True, False, True, False]
    with pytest.raises(ReviewError, match="not in the records table: 'zz'"):
        names_beside(RECORDS, "a1", ["zz"], id_col="mention_id")
    with pytest.raises(ReviewError, match=r"name column\(s\) \['nm'\] not found"):
        names_beside(RECORDS, "a1", ["a2"], id_col="mention_id", name_cols=["nm"])


# -- reviewer assignment -------------------------------------------------------------------


def test_assign_reviewers_is_balanced_and_deterministic():
    sample = [f"m{i}" for i in range(11)]
    split = assign_reviewers(sample, ["ann", "bob", "cyd"], seed=3)
    assert split.index.tolist() == sample
    assert sorted(split.value_counts().tolist()) == [3, 4, 4]
    assert split.equals(assign_reviewers(sample, ["ann", "bob", "cyd"], seed=3))
    others = [assign_reviewers(sample, ["ann", "bob", "cyd"], seed=s) for s in range(4, 10)]
    assert any(not split.equals(o) for o in others)


def test_assign_reviewers_errors():
    with pytest.raises(ReviewError, match="sampled records repeat: 'x'"):
        assign_reviewers(["x", "y", "x"], ["ann"], seed=0)
    with pytest.raises(ReviewError, match="reviewer names repeat"):
        assign_reviewers(["x"], ["ann", "ann"], seed=0)
    with pytest.raises(ReviewError, match="no reviewers"):
        assign_reviewers(["x"], [], seed=0)
    with pytest.raises(ReviewError, match="no sampled records"):
        assign_reviewers([], ["ann"], seed=0)


def test_stores_created_at_once_on_a_new_file(tmp_path):
    path = tmp_path / "new.sqlite"

    def open_and_write(name):
        store = ReviewStore(path)
        for i in range(10):
            review(store, "a1", reviewer=name, notes=str(i))

    assert in_threads(open_and_write, [f"t{k}" for k in range(4)]) == []
    assert len(ReviewStore(path).events()) == 40


def test_opening_something_that_is_not_a_store_names_the_file(tmp_path):
    bogus = tmp_path / "sheet.csv"
    bogus.write_text("sampled_record,remove,add\n" * 200)
    with pytest.raises(ReviewError, match=r"sheet.csv: cannot open the review store"):
        ReviewStore(bogus)
    assert bogus.read_text().startswith("sampled_record,remove,add")  # left untouched
