"""AppTest of the sample and review pages on the bundled PatentsView data: what the pages
show and what they save in the project folder (queue file, review store)."""

from __future__ import annotations

import pandas as pd
import pytest

pytest.importorskip("streamlit")
from _helpers import (  # noqa: E402
    TICK,
    add_reviewers,
    choose_reviewer,
    frame,
    run_app,
    shown_record,
    tick,
)
from streamlit.testing.v1 import AppTest  # noqa: E402

from er_evaluation.review import ReviewStore  # noqa: E402


def current_record(at: AppTest) -> tuple[int, str]:
    return at.session_state["queue_position"], shown_record(at)


def test_demo_opens_on_first_review_item(project, predictions):
    at = run_app()
    queue = pd.read_parquet(project / "queue.parquet")
    assert len(queue) == 50  # the default demo sample: 50 records of the newest version
    _, record = current_record(at)
    assert record == queue["record_id"].iloc[0]
    newest = predictions["2022-06-30"]
    table = at.data_editor[0].value
    members = newest.index[newest == newest[record]]
    assert set(table["record"]) == set(members)
    assert table["record"].iloc[0] == record  # the sampled record comes first
    assert not table[TICK].any()
    # The reviewer sees the records' own fields.
    assert {"name_first", "name_last", "city", "patent_title", "assignees", "coinventors"} <= set(
        table.columns
    )


def test_sample_page_draws_and_saves_the_queue(project, predictions):
    at = run_app()
    at.switch_page("views/sample.py").run()
    at.radio(key="sample_design").set_value("clusters")
    at.number_input(key="sample_size").set_value(7)
    at.number_input(key="sample_seed").set_value(3)
    at.selectbox(key="sample_version").set_value("2021-12-30")
    add_reviewers(project, "ann", "bob")
    at.run()
    at.multiselect(key="sample_reviewers").set_value(["ann", "bob"])
    at.button(key="draw_sample").click().run()
    assert not at.exception
    queue = pd.read_parquet(project / "queue.parquet")
    version = predictions["2021-12-30"]
    assert queue["unit"].nunique() == 7
    # Every record of each sampled predicted cluster is in the queue, nothing else.
    expected = version[version.isin(queue["unit"])]
    assert set(queue["record_id"]) == set(expected.index)
    # Whole clusters go to one reviewer; both reviewers get work.
    assert (queue.groupby("unit")["reviewer"].nunique() == 1).all()
    assert set(queue["reviewer"]) == {"ann", "bob"}
    shown = frame(at, "record", "unit").value
    assert list(shown["record"]) == list(queue["record_id"])


def test_a_one_record_cluster_is_one_record(project, predictions):
    at = run_app()
    choose_reviewer(at, project, "ann")
    queue = pd.read_parquet(project / "queue.parquet")["record_id"]
    newest = predictions["2022-06-30"]
    sizes = newest.map(newest.value_counts())
    position = next(i for i, r in enumerate(queue) if sizes[r] == 1)
    at.number_input(key="goto").set_value(position + 1).run()
    assert shown_record(at) == queue.iloc[position]
    said = [m.value for m in at.markdown if m.value.startswith("Predicted cluster of")]
    assert len(said) == 1 and said[0].endswith("): 1 record."), said


@pytest.mark.slow
def test_review_correct_remove_add_undo_are_saved(project, predictions):
    at = run_app()
    choose_reviewer(at, project, "ann")
    store = ReviewStore(project / "reviews.sqlite")
    newest = predictions["2022-06-30"]

    # 1. Correct as is.
    _, first = current_record(at)
    at.button(key=f"correct_{first}").click().run()
    assert not at.exception
    decision = store.decision(first)
    assert decision.status == "correct" and decision.reviewer == "ann"
    assert set(decision.shown_records) == set(newest.index[newest == newest[first]])
    assert decision.version == "2022-06-30"

    # 2. Remove one record: the page moves on to the next unreviewed item first.
    position, second = current_record(at)
    assert position == 1 and second != first
    wrong = at.data_editor[0].value["record"].iloc[1]
    tick(at, second, [1])
    at.text_area(key=f"notes_{second}").set_value("different employer").run()
    at.button(key=f"save_{second}").click().run()
    assert not at.exception
    decision = store.decision(second)
    assert decision.removed == (wrong,) and decision.added == ()
    assert decision.notes == "different employer"
    assert wrong not in store.true_clusters()[lambda s: s == s[second]].index

    # 3. Add a record found with the search panel.
    _, third = current_record(at)
    members = set(at.data_editor[0].value["record"])
    name = f"{at.data_editor[0].value['name_first'].iloc[0]} {at.data_editor[0].value['name_last'].iloc[0]}"
    at.text_input(key="search_query").set_value(name).run()
    at.checkbox(key="search_block").uncheck().run()
    results = [e for e in at.data_editor if e.key and e.key.startswith(f"search_{third}")]
    assert results, "search found no other record"
    hits = results[0].value
    assert not set(hits["record"]) & members  # records already shown are not offered
    extra = hits["record"].iloc[0]
    at.session_state[results[0].key] = {
        "edited_rows": {0: {"add": True}},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.run()
    at.button(key="add_ticked").click().run()
    assert at.session_state[f"added_{third}"] == [extra]
    beside = at.dataframe[-1].value
    assert list(beside["record_id"]) == [extra]
    at.button(key=f"save_{third}").click().run()
    assert not at.exception
    assert store.decision(third).added == (extra,)
    assert store.true_clusters()[extra] == store.true_clusters()[third]

    # Progress counts the covered queue records.
    assert "3 of 50 records reviewed" in at.get("progress")[0].proto.text

    # 4. Undo the addition: go back and undo.
    at.button(key="nav_prev").click().run()
    assert current_record(at)[1] == third
    at.button(key=f"undo_{third}").click().run()
    assert not at.exception
    assert store.decision(third) is None
    assert third not in store.reviewed_records()
    events = store.events()
    assert list(events["status"]) == ["correct", "reviewed", "reviewed", "undo"]


def test_inline_check_blocks_removing_the_sampled_record(project):
    at = run_app()
    _, record = current_record(at)
    tick(at, record, [0])
    assert any("cannot be removed" in e.value for e in at.error)
    assert at.button(key=f"save_{record}").disabled
    assert not at.exception
    assert (
        not (project / "reviews.sqlite").exists()
        or not ReviewStore(project / "reviews.sqlite").reviewed_records()
    )


def test_blind_mode_hides_the_version(project):
    at = run_app()
    assert any("2022-06-30" in m.value for m in at.markdown)
    at.toggle(key="blind").set_value(True).run()
    assert not any("2022-06-30" in m.value for m in at.markdown)


@pytest.mark.slow
def test_import_sheet_and_export_from_the_review_page(project, predictions):
    at = run_app()
    choose_reviewer(at, project, "bob")
    queue = pd.read_parquet(project / "queue.parquet")
    newest = predictions["2022-06-30"]
    first, second = queue["record_id"].iloc[:2]
    wrong = newest.index[(newest == newest[second]).to_numpy()].drop(second)[0]
    sheet = pd.DataFrame(
        {"sampled_record": [first, second], "remove": ["", wrong], "add": ["", ""]}
    ).to_csv(index=False)
    at.file_uploader(key="import_sheet").upload("sheet.csv", sheet.encode(), "text/csv").run()
    at.button(key="import_sheet_go").click().run()
    assert not at.exception
    assert [s.value for s in at.success] == ["Imported 2 reviews from sheet.csv."]
    store = ReviewStore(project / "reviews.sqlite")
    assert store.decision(first).status == "correct" and store.decision(first).reviewer == "bob"
    assert store.decision(second).removed == (wrong,)

    at.button(key="export_benchmark").click().run()
    assert not at.exception
    exported = pd.read_csv(project / "benchmark.csv", dtype=str)
    assert list(exported.columns) == ["record_id", "cluster_id"]
    truth = store.true_clusters()
    assert set(exported["record_id"]) == set(truth.index)
    assert wrong not in set(exported["record_id"])


@pytest.mark.slow
def test_a_bad_sheet_is_refused_in_plain_words(project):
    at = run_app()
    choose_reviewer(at, project, "bob")
    queue = pd.read_parquet(project / "queue.parquet")
    sheet = pd.DataFrame(
        {"sampled_record": [queue["record_id"].iloc[0]], "remove": ["US0000000-9"], "add": [""]}
    ).to_csv(index=False)
    at.file_uploader(key="import_sheet").upload("sheet.csv", sheet.encode(), "text/csv").run()
    at.button(key="import_sheet_go").click().run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "US0000000-9" in errors[0] and "nothing imported" in errors[0]
    assert not ReviewStore(project / "reviews.sqlite").events().shape[0]


@pytest.mark.slow
def test_each_reviewer_sees_only_their_share(project):
    at = run_app()
    add_reviewers(project, "ann", "bob")
    at.switch_page("views/sample.py").run()
    at.multiselect(key="sample_reviewers").set_value(["ann", "bob"])
    at.button(key="draw_sample").click().run()
    assert not at.exception
    queue = pd.read_parquet(project / "queue.parquet")
    bobs = list(queue.loc[queue["reviewer"] == "bob", "record_id"])
    at.selectbox(key="reviewer").select("bob")
    at.switch_page("views/review.py").run()
    assert not at.exception
    assert at.toggle(key="only_mine").value
    assert f"Item 1 of {len(bobs)}: `{bobs[0]}`" in at.subheader[0].value


def test_conflicting_decisions_are_shown(project, predictions):
    at = run_app()
    queue = pd.read_parquet(project / "queue.parquet")
    newest = predictions["2022-06-30"]
    first = queue["record_id"].iloc[0]
    members = list(newest.index[(newest == newest[first]).to_numpy()])
    other = next(m for m in members if m != first)
    store = ReviewStore(project / "reviews.sqlite")
    common = {"predicted_cluster": newest[first], "shown_records": members, "version": "2022-06-30"}
    # ann removes `other` from first's cluster; bob, reviewing `other`, keeps the cluster.
    store.record_review(reviewer="ann", sampled_record=first, removed=[other], **common)
    store.record_review(reviewer="bob", sampled_record=other, **common)
    at.run()
    assert not at.exception
    assert any(e.label.startswith("1 conflicting decision") for e in at.expander)
    shown = frame(at, "kind", "record").value
    assert list(shown["record"]) == [other] and list(shown["reviewer"]) == ["ann"]


@pytest.mark.slow
def test_navigation_previous_next_next_unreviewed_and_go_to(project):
    at = run_app()
    choose_reviewer(at, project, "ann")
    queue = pd.read_parquet(project / "queue.parquet")["record_id"]
    at.button(key="nav_next").click().run()
    assert current_record(at) == (1, queue.iloc[1])
    at.number_input(key="goto").set_value(5).run()
    assert current_record(at) == (4, queue.iloc[4])
    at.button(key="nav_prev").click().run()
    assert current_record(at) == (3, queue.iloc[3])
    # Save items 4 and 5; "next unreviewed" from item 3 then skips both to item 6.
    at.button(key=f"correct_{queue.iloc[3]}").click().run()  # saves item 4, moves to item 5
    assert current_record(at) == (4, queue.iloc[4])
    at.button(key=f"correct_{queue.iloc[4]}").click().run()
    assert current_record(at)[0] == 5
    at.number_input(key="goto").set_value(3).run()
    at.button(key="nav_next_unreviewed").click().run()
    assert current_record(at) == (5, queue.iloc[5])
    assert at.session_state["queue_position"] == 5


@pytest.mark.slow
def test_the_upload_refuses_what_the_command_line_refuses(project, predictions):
    """One rule for both front ends: an added record the cluster already holds and a row
    with no decision are refused, rows named as the spreadsheet numbers them."""
    at = run_app()
    choose_reviewer(at, project, "bob")
    queue = pd.read_parquet(project / "queue.parquet")
    newest = predictions["2022-06-30"]
    first, second = queue["record_id"].iloc[:2]
    mate = newest.index[(newest == newest[first]).to_numpy()].drop(first)[0]
    sheet = pd.DataFrame(
        {
            "sampled_record": [first, second],
            "status": ["", ""],
            "remove": ["", ""],
            "add": [mate, ""],
        }
    ).to_csv(index=False)
    at.file_uploader(key="import_sheet").upload("sheet.csv", sheet.encode(), "text/csv").run()
    at.button(key="import_sheet_go").click().run()
    assert not at.exception
    (error,) = [e.value for e in at.error]
    assert "2 invalid row(s), nothing imported" in error
    assert f"row 2 (sampled_record {first!r}): added id(s) in column 'add' already in" in error
    assert f"row 3 (sampled_record {second!r}): no decision: column 'status' is empty" in error
    assert not ReviewStore(project / "reviews.sqlite").events().shape[0]
