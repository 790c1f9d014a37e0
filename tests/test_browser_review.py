"""Real-browser tests (Debian chromium driven by playwright) of what a reviewer does that
AppTest cannot reproduce: presses arriving while the page reruns, two people on one item,
reloads, uploads and the keyboard. One app server serves every test; each test has its own
project folder, chosen through the URL (``?project=...``)."""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path

import pandas as pd
import pytest
from _helpers import (
    TIMEOUT_MS,
    item_heading,
    on_item,
    pick_reviewer,
    project_folder,
    running_app,
    tick_row,
    write_files_project,
)
from playwright.sync_api import Error as PlaywrightError

from er_evaluation.review import Project, ReviewStore

pytestmark = pytest.mark.browser  # skipped where chromium is missing (conftest.py)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("launch") / "project") as url:
        yield url


@pytest.fixture
def browser(chromium):
    """The shared browser; the pages a test opens are closed after it."""
    contexts = []

    class Opener:
        def new_context(self, **kw):
            contexts.append(chromium.new_context(**kw))
            return contexts[-1]

    yield Opener()
    for context in contexts:
        context.close()


def open_page(browser, url: str):
    page = browser.new_context(viewport={"width": 1280, "height": 1300}).new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    return page


def review_url(server: str, folder: Path, reviewer: str | None = None) -> str:
    params = {"project": str(folder)} | ({"reviewer": reviewer} if reviewer else {})
    return f"{server}/review?{urllib.parse.urlencode(params)}"


def test_a_double_press_never_saves_an_unseen_item(server, browser, tmp_path):
    folder = project_folder(tmp_path / "p", "ann")
    page = open_page(browser, review_url(server, folder, "ann"))
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


def test_two_reviewers_on_one_item_get_a_conflict_view(server, browser, tmp_path):
    folder = project_folder(tmp_path / "p", "alice", "bob")
    alice = open_page(browser, review_url(server, folder, "alice"))
    record = item_heading(alice, 1)
    bob = open_page(browser, review_url(server, folder, "bob"))
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


def test_a_reload_keeps_the_folder_and_the_reviewer(server, browser, tmp_path):
    folder = tmp_path / "chosen"
    page = open_page(browser, f"{server}/project")
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
    from playwright.sync_api import expect

    expect(page.get_by_role("combobox", name="Reviewer")).to_have_value("zoe", timeout=TIMEOUT_MS)
    page.goto(page.url.replace("/project", "/review"))
    first = item_heading(page, 1)
    page.get_by_role("button", name="Correct as is").click()
    item_heading(page, 2)
    decision = ReviewStore(folder / "reviews.sqlite").decision(first)
    assert decision.reviewer == "zoe"


def test_a_bad_upload_leaves_the_saved_project_loadable(server, browser, tmp_path):
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

    page = open_page(browser, f"{server}/project?project={urllib.parse.quote(str(folder))}")
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


@pytest.mark.xfail(
    reason="on the review page with drafts and the pinned grid, the first Alt+A pressed "
    "just after the page settles is sometimes never sent by the browser (no rerun follows); "
    "the cause is not found yet",
    strict=False,
)
def test_keyboard_review_of_three_items(server, browser, tmp_path):
    folder = project_folder(tmp_path / "p", "kim")
    page = open_page(browser, review_url(server, folder, "kim"))
    page.bring_to_front()  # keys go to the page in front; earlier tests' pages are open
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
