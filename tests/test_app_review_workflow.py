"""AppTests of saves bound to what was shown, double review, agreement and adjudication,
and the reviewer/folder kept in the URL, on the bundled PatentsView data."""

from __future__ import annotations

import pandas as pd
import pytest

pytest.importorskip("streamlit")
from _helpers import (  # noqa: E402
    ENTRY,
    TICK,
    add_reviewers,
    frame,
    run_app,
    shown_record,
    tick,
)
from streamlit.testing.v1 import AppTest  # noqa: E402

from er_evaluation.review import Project, ReviewStore, agreement  # noqa: E402


def test_saving_needs_a_reviewer_name(project):
    at = run_app()
    record = shown_record(at)
    assert any("Choose your name" in i.value for i in at.info)
    assert at.button(key=f"correct_{record}").disabled
    assert at.button(key=f"save_{record}").disabled


@pytest.mark.slow
def test_a_stale_save_is_refused_and_a_merge_is_only_a_new_decision_to_confirm(project):
    alice, bob = run_app("alice"), run_app("bob")
    record = shown_record(alice)
    assert shown_record(bob) == record  # both pages show item 1, no decision yet
    members = list(alice.data_editor[0].value["record"])
    assert len(members) >= 3, "the first demo item needs a cluster of three or more"
    tick(alice, record, [1])
    alice.text_area(key=f"notes_{record}").set_value("other employer").run()
    alice.button(key=f"save_{record}").click().run()
    assert not alice.exception
    store = ReviewStore(project / "reviews.sqlite")
    saved = store.decision(record)
    assert saved.reviewer == "alice" and saved.removed == (members[1],)

    # Bob's page was drawn before Alice saved: his save is refused, nothing is written.
    tick(bob, record, [2])
    bob.button(key=f"save_{record}").click().run()
    assert not bob.exception
    assert any("Not saved: this record's decision changed" in e.value for e in bob.error)
    assert len(store.events()) == 1
    assert shown_record(bob) == record  # the page stays on the item
    for key in ("keep_both", "keep_theirs", "merge"):
        assert bob.button(key=f"{key}_{record}")
    # the conflict view shows both decisions record by record
    both = frame(bob, "yours", "alice").value
    assert both.set_index("record").loc[members[1], "alice"] == "✗ removed"
    assert both.set_index("record").loc[members[2], "yours"] == "✗ removed"

    # "Merge" only loads a new decision starting from both: nothing is saved for Bob.
    bob.button(key=f"merge_{record}").click().run()
    assert not bob.exception
    assert [e.reviewer for e in store.history(record)] == ["alice"]
    grid = bob.data_editor[0].value
    assert set(grid.loc[grid[TICK], "record"]) == {members[1], members[2]}
    assert bob.text_area(key=f"notes_{record}").value == "other employer"
    # Bob confirms it: his new decision, made after seeing Alice's, is recorded as such.
    bob.button(key=f"save_{record}").click().run()
    merged = store.decision(record)
    assert merged.reviewer == "bob" and merged.based_on == saved.event_id
    assert set(merged.removed) == {members[1], members[2]}
    assert [e.reviewer for e in store.history(record)] == ["alice", "bob"]
    assert store.conflicts().empty


def test_keep_both_records_each_decision_as_made_and_sends_it_to_adjudication(project):
    alice, bob = run_app("alice"), run_app("bob")
    record = shown_record(alice)
    members = list(alice.data_editor[0].value["record"])
    tick(alice, record, [1])
    alice.button(key=f"save_{record}").click().run()
    bob.button(key=f"correct_{record}").click().run()  # a stale page: refused
    bob.button(key=f"keep_both_{record}").click().run()
    assert not bob.exception
    store = ReviewStore(project / "reviews.sqlite")
    mine = store.decision(record, reviewer="bob")
    assert mine.status == "correct" and mine.removed == ()  # what Bob decided, nothing else
    assert store.decision(record, reviewer="alice").removed == (members[1],)
    open_items = Project.open(project).disagreements().table
    assert list(open_items["sampled_record"]) == [record]
    bob.switch_page("views/adjudication.py").run()
    assert bob.selectbox(key="adj_record").value == record


@pytest.mark.slow
def test_keep_theirs_writes_nothing_and_shows_their_decision(project):
    alice, bob = run_app("alice"), run_app("bob")
    record = shown_record(alice)
    alice.button(key=f"correct_{record}").click().run()
    tick(bob, record, [1])
    bob.button(key=f"save_{record}").click().run()
    bob.button(key=f"keep_theirs_{record}").click().run()
    assert not bob.exception
    store = ReviewStore(project / "reviews.sqlite")
    assert [e.reviewer for e in store.history(record)] == ["alice"]
    assert not bob.data_editor[0].value[TICK].any()  # Bob's ticks are gone, Alice's shown
    assert any("saved by alice" in c.value for c in bob.caption)


@pytest.mark.slow
def test_a_repeated_press_on_a_saved_item_saves_nothing_new(project):
    at = run_app("ann")
    record = shown_record(at)
    at.button(key=f"correct_{record}").click().run()
    store = ReviewStore(project / "reviews.sqlite")
    assert len(store.events()) == 1
    # The press arrives for the item after the page moved on: refused by the item guard.
    nxt = shown_record(at)
    assert nxt != record
    assert store.decision(nxt) is None
    at.session_state["shown_item"] = record  # as if the old page were still drawn
    at.button(key=f"correct_{nxt}").click().run()
    assert any("no longer on the page" in e.value for e in at.error)
    assert store.decision(nxt) is None and len(store.events()) == 1


@pytest.mark.slow
def test_undo_is_your_own_and_someone_elses_needs_confirmation(project):
    first = run_app("bob")
    record = shown_record(first)
    first.button(key=f"correct_{record}").click().run()
    at = run_app("ann")
    at.number_input(key="goto").set_value(1).run()
    assert shown_record(at) == record
    store = ReviewStore(project / "reviews.sqlite")
    assert at.button(key=f"undo_{record}").disabled  # ann has no save of her own here
    assert at.button(key=f"undo_other_{record}").disabled
    at.checkbox(key=f"undo_other_confirm_{record}").check().run()
    at.button(key=f"undo_other_{record}").click().run()
    assert not at.exception
    assert store.decision(record) is None
    assert store.events()["reviewer"].tolist() == ["bob", "ann"]


def test_reviewer_and_folder_come_back_from_the_url(project, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    add_reviewers(other, "Zoe")
    at = AppTest.from_file(ENTRY, default_timeout=120)
    at.query_params["reviewer"] = "zoe"  # names ignore case: this is Zoe
    at.query_params["project"] = str(other)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["reviewer"] == "Zoe"
    assert any(str(other) in c.value for c in at.sidebar.caption)
    assert (other / "queue.parquet").exists()  # the demo sample went to the URL's folder


def test_a_name_not_on_the_list_is_not_taken_from_the_url(project, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    add_reviewers(other, "zoe")
    at = AppTest.from_file(ENTRY, default_timeout=120)
    at.query_params["reviewer"] = "mallory"
    at.query_params["project"] = str(other)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["reviewer"] is None
    assert any("'mallory' is not one of this project's reviewers" in w.value for w in at.warning)
    record = shown_record(at)
    assert at.button(key=f"save_{record}").disabled


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::er_evaluation.errors.CoverageWarning")
def test_double_review_agreement_and_adjudication(project):
    at = run_app("ann")
    at.switch_page("views/sample.py").run()
    at.number_input(key="sample_size").set_value(4)
    add_reviewers(project, "bob")
    at.run()
    at.multiselect(key="sample_reviewers").set_value(["ann", "bob"])
    at.number_input(key="sample_double_share").set_value(1.0)
    at.button(key="draw_sample").click().run()
    assert not at.exception, [e.value for e in at.exception]
    queue = pd.read_parquet(project / "queue.parquet")
    assert queue["second_reviewer"].notna().all()

    ann = at
    ann.switch_page("views/review.py").run()
    bob = run_app("bob")
    store = ReviewStore(project / "reviews.sqlite")
    # Both decide every item independently: ann removes the second record where there is
    # one, bob confirms everything.
    for _ in range(4):
        record = shown_record(ann)
        if len(ann.data_editor[0].value) > 1:
            tick(ann, record, [1])
            ann.button(key=f"save_{record}").click().run()
        else:
            ann.button(key=f"correct_{record}").click().run()
        assert not ann.exception
    for _ in range(4):
        record = shown_record(bob)
        assert not any("Current decision" in c.value for c in bob.caption)  # blind
        bob.button(key=f"correct_{record}").click().run()
        assert not bob.exception and not bob.error
    assert len(store.own_decisions()) == 8

    expected = agreement(store.event_list())
    ann.switch_page("views/agreement.py").run()
    assert not ann.exception
    metrics = {m.label: m.value for m in ann.metric}
    assert metrics["Double-reviewed records"] == "4"
    assert metrics["Identical true clusters"] == f"{expected.identical_share:.1%}"
    assert metrics["Link agreement"] == f"{expected.link_agreement:.1%}"
    kappa = "undefined" if expected.kappa != expected.kappa else f"{expected.kappa:.3f}"
    assert metrics["Cohen's kappa (links)"] == kappa
    pd.testing.assert_frame_equal(
        frame(ann, "sampled_record", "identical").value.reset_index(drop=True),
        expected.per_record,
        check_dtype=False,
    )

    disputed = list(expected.per_record.loc[~expected.per_record["identical"], "sampled_record"])
    if not disputed:
        pytest.skip("every sampled cluster is a singleton: nothing to adjudicate")
    judge = run_app("cy")
    judge.switch_page("views/adjudication.py").run()
    assert not judge.exception
    assert judge.selectbox(key="adj_record").options == [str(r) for r in disputed]
    record = judge.selectbox(key="adj_record").value
    ann_event = store.decision(record, reviewer="ann")
    judge.button(key=f"adj_keep_{ann_event.event_id}").click().run()
    assert not judge.exception
    final = store.decision(record)
    assert final.role == "adjudication" and final.reviewer == "cy"
    assert final.removed == ann_event.removed
    # Estimates use the adjudicated decision.
    assert ann_event.removed[0] not in store.true_clusters().index
    # The Estimates page shows P/R under each reviewer's own decisions, as the library does.
    judge.switch_page("views/estimates.py").run()
    assert not judge.exception, [e.value for e in judge.exception]
    shown = next(d.value for d in judge.dataframe if "spread" in d.value.columns)
    opened = Project.open(project)
    expected_table = opened.reviewer_estimates(
        versions=[opened.settings.version],
        metrics=["pairwise_precision", "pairwise_recall", "pairwise_f1"],
    )
    for _, row in expected_table.iterrows():
        got = shown.loc[
            (shown["prediction"] == row["prediction"]) & (shown["metric"] == row["metric"])
        ]
        assert got[row["reviewer"]].iloc[0] == pytest.approx(row["value"], rel=1e-12)
    assert set(expected_table["reviewer"]) == {"ann", "bob"}


@pytest.mark.slow
def test_a_second_press_right_after_a_save_does_not_save_the_next_item(project, monkeypatch):
    # a double press: the second press reaches the next item's button within the guard
    monkeypatch.setenv("ER_EVAL_MIN_DWELL_S", "60")
    at = run_app("ann")
    first = shown_record(at)
    at.button(key=f"correct_{first}").click().run()
    second = shown_record(at)
    assert second != first
    at.button(key=f"correct_{second}").click().run()
    assert any("before" in e.value and "could be looked at" in e.value for e in at.error)
    store = ReviewStore(project / "reviews.sqlite")
    assert store.decision(first).status == "correct"
    assert store.decision(second) is None
    assert shown_record(at) == second  # the page stays on the unsaved item
