"""End-to-end test in a real browser (Debian chromium driven by playwright): review two
clusters of the bundled PatentsView sample (one correct as is, one with a removal), reload
the page, and check that both reviews are still there, in the UI, in the store and in the
exported benchmark."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from _helpers import (
    TIMEOUT_MS,
    free_port,
    item_heading,
    launch_chromium,
    on_item,
    pick_reviewer,
    project_folder,
    start_app,
    tick_row,
)

from er_evaluation import datasets
from er_evaluation.io import read_membership
from er_evaluation.review import ReviewStore

pytestmark = pytest.mark.browser  # skipped where chromium is missing (conftest.py)


def go_to_item(page, number: int) -> None:
    box = page.get_by_label("Go to item")
    box.fill(str(number))
    box.press("Enter")
    page.get_by_text(re.compile(rf"Item {number} of 50")).wait_for(timeout=TIMEOUT_MS)


def test_two_reviews_survive_a_reload_and_export(tmp_path):
    from playwright.sync_api import expect, sync_playwright

    project = project_folder(tmp_path / "project", "ann")
    port = free_port()
    proc = start_app(project, port)
    try:
        with sync_playwright() as pw:
            browser = launch_chromium(pw)
            page = browser.new_page(viewport={"width": 1280, "height": 1300})
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(f"http://127.0.0.1:{port}/")
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
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)

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
