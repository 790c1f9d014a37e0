"""Real-browser tests (Debian chromium driven by playwright) of what a reviewer does that
AppTest cannot reproduce: presses arriving while the page reruns, two people on one item,
reloads, uploads and the keyboard, and two reviews surviving a reload into the exported
benchmark. One app server serves every test; each test has its own
project folder, chosen through the URL (``?project=...``)."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from _helpers import (
    TIMEOUT_MS,
    item_heading,
    on_item,
    pick_reviewer,
    project_folder,
    tick_row,
    visit,
    write_files_project,
)
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from er_evaluation import datasets
from er_evaluation.io import read_membership
from er_evaluation.review import Project, ReviewStore

pytestmark = pytest.mark.browser  # skipped where chromium is missing (conftest.py)


def test_a_double_press_never_saves_an_unseen_item(server, people, tmp_path):
    folder = project_folder(tmp_path / "p", "ann")
    (ctx,) = people(1)
    page = visit(ctx, server, folder, reviewer="ann")
    first = item_heading(page, 1)
    # the very button the reviewer saw: a second press on it while the page reruns must
    # not reach the next item (Streamlit keeps one element per widget key)
    shown = page.get_by_role("button", name="Correct as is").element_handle()
    shown.click()
    page.wait_for_timeout(500)
    try:
        shown.click(force=True, timeout=5_000)
    except PlaywrightError:  # the element was replaced: the press lands nowhere
        pass
    second = item_heading(page, 2)
    page.wait_for_timeout(3000)  # any late save would have happened by now
    store = ReviewStore(folder / "reviews.sqlite")
    assert store.decision(first).status == "correct"
    assert store.decision(second) is None, "a press saved an item the reviewer never saw"
    assert len(store.events()) == 1


def test_two_reviewers_on_one_item_get_a_conflict_view(server, people, tmp_path):
    folder = project_folder(tmp_path / "p", "alice", "bob")
    alice_ctx, bob_ctx = people(2)
    alice = visit(alice_ctx, server, folder, reviewer="alice")
    record = item_heading(alice, 1)
    bob = visit(bob_ctx, server, folder, reviewer="bob")
    assert item_heading(bob, 1) == record

    tick_row(alice, 1)
    alice.get_by_role("button", name="Save review").click()
    item_heading(alice, 2)
    tick_row(bob, 2)
    bob.get_by_role("button", name="Save review").click()
    bob.get_by_text("Not saved: this record's decision changed").wait_for()
    bob.get_by_text("Saved meanwhile by alice").wait_for()
    bob.get_by_role("button", name="Keep both (adjudication decides)").click()
    bob.get_by_text("Both decisions on").wait_for()

    store = ReviewStore(folder / "reviews.sqlite")
    history = store.history(record)
    assert [e.reviewer for e in history] == ["alice", "bob"]  # both decisions, as made
    assert history[1].based_on is None  # Bob never saw Alice's decision
    assert history[0].removed != history[1].removed
    assert list(Project.open(folder).disagreements().table["sampled_record"]) == [record]


def test_a_reload_keeps_the_folder_and_the_reviewer(server, people, tmp_path):
    folder = tmp_path / "chosen"
    (ctx,) = people(1)
    page = ctx.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(f"{server}/project")
    page.get_by_text("Loaded").wait_for()
    box = page.get_by_label("Project folder")
    box.fill(str(folder))
    box.press("Enter")
    page.get_by_text("Create a project there?").wait_for()
    assert not folder.exists()
    page.get_by_role("button", name="Create the project here").click()
    page.locator("[data-testid=stSidebar]").get_by_text(str(folder)).wait_for()
    names = page.get_by_label("Add reviewers (comma-separated names)")
    names.fill("zoe")
    names.press("Enter")
    page.get_by_role("button", name="Add", exact=True).click()
    page.get_by_text("Reviewers: zoe").wait_for()
    pick_reviewer(page, "zoe")

    page.reload()
    page.locator("[data-testid=stSidebar]").get_by_text(str(folder)).wait_for()
    expect(page.get_by_role("combobox", name="Reviewer")).to_have_value("zoe", timeout=TIMEOUT_MS)
    page.goto(page.url.replace("/project", "/review"))
    first = item_heading(page, 1)
    page.get_by_role("button", name="Correct as is").click()
    item_heading(page, 2)
    decision = ReviewStore(folder / "reviews.sqlite").decision(first)
    assert decision.reviewer == "zoe"


def test_a_bad_upload_leaves_the_saved_project_loadable(server, people, tmp_path):
    folder = tmp_path / "own"
    folder.mkdir()
    records = pd.DataFrame({"rid": ["r1", "r2", "r3"], "name": ["a", "b", "c"]})
    records.to_csv(tmp_path / "records.csv", index=False)
    pd.DataFrame({"rid": ["r1", "r2", "r3"], "v1": ["x", "x", "y"]}).to_csv(
        tmp_path / "wide.csv", index=False
    )
    write_files_project(
        folder,
        tmp_path / "records.csv",
        tmp_path / "wide.csv",
        fields=["name"],
        version_cols=["v1"],
    )
    saved = (folder / "project.json").read_text()
    bad = tmp_path / "upload" / "records.csv"
    bad.parent.mkdir()
    pd.concat([records, records.iloc[:1]]).to_csv(bad, index=False)

    (ctx,) = people(1)
    page = visit(ctx, server, folder, page="project")
    page.get_by_text("Loaded").wait_for()
    page.locator("[data-testid='stFileUploader'] input[type=file]").first.set_input_files(str(bad))
    page.get_by_text("records.csv").first.wait_for()
    page.wait_for_timeout(1500)
    assert (folder / "project.json").read_text() == saved  # an upload alone changes nothing
    page.get_by_role("button", name="Check and save project").click()
    page.get_by_text(re.compile("Not saved; the project is unchanged: .*more than once")).wait_for()
    assert (folder / "project.json").read_text() == saved
    assert len(Project.open(folder).data.records) == 3

    page.reload()  # and the app still opens it
    page.get_by_text("Loaded").wait_for()
    page.get_by_text("Records").first.wait_for()


def test_keyboard_review_of_three_items(server, people, tmp_path):
    folder = project_folder(tmp_path / "p", "kim")
    (ctx,) = people(1)
    page = visit(ctx, server, folder, reviewer="kim")
    # on_item waits until the item's buttons are drawn: a button's shortcut is bound only
    # then, and a key pressed earlier reaches no listener
    records = [on_item(page, 1)]
    page.get_by_role("heading", name="Review queue").click()  # focus the page, not a field
    page.keyboard.press("Alt+A")  # correct as is
    records.append(on_item(page, 2))
    page.keyboard.press("Alt+N")  # next, without saving
    records.append(on_item(page, 3))
    page.keyboard.press("Alt+P")  # previous
    on_item(page, 2)
    page.keyboard.press("Alt+A")
    on_item(page, 3)
    page.keyboard.press("Alt+A")
    on_item(page, 4)
    store = ReviewStore(folder / "reviews.sqlite")
    assert [store.decision(r).status for r in records] == ["correct"] * 3
    page.keyboard.press("Alt+P")
    on_item(page, 3)
    page.keyboard.press("Alt+U")  # undo my last save on item 3
    page.get_by_text(f"Undid a save on {records[2]}").wait_for()
    assert store.decision(records[2]) is None
    assert store.events()["reviewer"].unique().tolist() == ["kim"]


def go_to_item(page, number: int) -> None:
    box = page.get_by_label("Go to item")
    box.fill(str(number))
    box.press("Enter")
    page.get_by_text(re.compile(rf"Item {number} of 50")).wait_for(timeout=TIMEOUT_MS)


def test_two_reviews_survive_a_reload_and_export(server, people, tmp_path):
    """Review two clusters of the bundled PatentsView sample (one correct as is, one with a
    removal), reload the page: both reviews are still there, in the page, in the store
    and in the exported benchmark."""
    project = project_folder(tmp_path / "project", "ann")
    (ctx,) = people(1)
    page = visit(ctx, server, project, page="")
    first = item_heading(page, 1)

    pick_reviewer(page, "ann")

    # Review 1: correct as is.
    page.get_by_role("button", name="Correct as is").click()
    second = on_item(page, 2)  # and past the app's guard against double presses

    # Review 2: tick the second row (the first record after the sampled one).
    newest = datasets.load_patentsview_predictions(["2022-06-30"])["2022-06-30"]
    members = newest.index[(newest == newest[second]).to_numpy()].drop(second)
    wrong = members[0]
    tick_row(page, 1)
    save = page.get_by_role("button", name="Save review")
    expect(save).to_be_enabled()
    save.click()
    page.get_by_text(re.compile(r"Item 3 of 50: ")).wait_for()

    # Reload: a new browser session; the reviews come back from the store.
    page.reload()
    page.get_by_text(re.compile(r"[2-9] of 50 records reviewed")).wait_for()
    go_to_item(page, 1)
    page.get_by_text(re.compile(rf"Item 1 of 50: {first}\s*— reviewed")).wait_for()
    page.get_by_text(re.compile(r"Current decision \(correct\) saved by you")).wait_for()
    go_to_item(page, 2)
    page.get_by_text(re.compile(rf"Item 2 of 50: {second}\s*— reviewed")).wait_for()
    page.get_by_text(re.compile(rf"removed \['{re.escape(wrong)}'\]")).wait_for()

    # Export from the UI.
    page.get_by_text("Export the reviewed benchmark").click()
    page.get_by_role("button", name="Export to the project folder").click()
    page.get_by_text(re.compile(r"Exported [\d,]+ records")).wait_for()

    store = ReviewStore(project / "reviews.sqlite")
    decisions = store.decisions().set_index("sampled_record")
    assert list(decisions.index) == [first, second]
    assert list(decisions["status"]) == ["correct", "reviewed"]
    assert list(decisions["reviewer"]) == ["ann", "ann"]
    assert decisions.loc[second, "removed"] == (wrong,)

    exported = read_membership(project / "benchmark.csv", "record_id", "cluster_id")
    pd.testing.assert_series_equal(
        exported.sort_index(), store.true_clusters().astype(str).sort_index(), check_names=False
    )
    for sampled in (first, second):
        cluster = set(exported.index[exported == exported[sampled]])
        predicted = set(newest.index[newest == newest[sampled]])
        expected = predicted - {wrong} if sampled == second else predicted
        assert cluster == expected
    assert wrong not in exported.index  # removed and not added anywhere: not in the benchmark


def grid_headers(grid, scroll_to_end: bool = False) -> list[str]:
    """The column headers a canvas grid draws now (its accessible table holds the columns
    on screen only), after scrolling it to its right end if asked."""
    if scroll_to_end:
        grid.evaluate("g => { const s = g.querySelector('.dvn-scroller'); s.scrollLeft = 1e6 }")
        grid.page.wait_for_timeout(500)
    return grid.evaluate("g => [...g.querySelectorAll('th')].map(t => t.innerText.trim())")


def test_the_wide_fields_are_a_scroll_away_with_the_record_pinned(server, people, tmp_path):
    """On the PatentsView demo the last fields (assignees, coinventors) are off screen at
    first: scrolling the grid right reaches them, with the sampled record's values, while
    the row number, tick and record columns stay pinned."""
    folder = project_folder(tmp_path / "p", "kim")
    (ctx,) = people(1)
    page = visit(ctx, server, folder, reviewer="kim")
    record = on_item(page, 1)
    grids = page.locator("[data-testid=stDataFrameResizable]")
    pinned = next(g for g in grids.all() if "sampled record" in grid_headers(g))
    cluster = next(g for g in grids.all() if "does not belong" in grid_headers(g))
    mention = datasets.load_patentsview_mentions().loc[record]

    assert "coinventors" not in grid_headers(pinned)  # off screen at first
    assert {"sampled record", "assignees", "coinventors"} <= set(grid_headers(pinned, True))
    cells = pinned.evaluate("g => [...g.querySelectorAll('td')].map(t => t.innerText.trim())")
    for field in ("assignees", "coinventors"):
        assert pd.isna(mention[field]) or str(mention[field]) in cells, field

    scrolled = grid_headers(cluster, True)
    assert {"assignees", "coinventors"} <= set(scrolled)
    assert {"#", "does not belong", "record"} <= set(scrolled)  # pinned on the left
