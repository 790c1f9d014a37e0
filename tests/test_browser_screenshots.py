"""The README's screenshots, taken by the test suite's browser on the current app.

Runs the app on the bundled PatentsView data in a project with two reviewers, walks a
review (a decision, a conflict between the two, a double-reviewed record decided
differently) and shoots each page at 1280x1300. The pictures go to
``$ER_EVAL_SCREENSHOTS`` when set (``ER_EVAL_SCREENSHOTS=docs/screenshots`` refreshes the
README's), else to the test's own folder; each test checks what its picture must show.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from _helpers import item_heading_of, settle, tick_row, visit

from er_evaluation.review import Project, SampleSettings

pytestmark = pytest.mark.browser  # skipped where chromium is missing (conftest.py)


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    folder = os.environ.get("ER_EVAL_SCREENSHOTS")
    out = Path(folder) if folder else tmp_path_factory.mktemp("screenshots")
    out.mkdir(parents=True, exist_ok=True)
    return out


@pytest.fixture(scope="module")
def demo(tmp_path_factory, server):
    """A demo project with reviewers ann and bob sharing one queue of 6 records (so both
    work on the same item and can meet in a conflict), and the app serving it."""
    folder = tmp_path_factory.mktemp("demo") / "project"
    project = Project.init(folder, reviewers=["ann", "bob"])
    project.draw(
        SampleSettings(design="records", size=6, seed=1, version=project.data.versions[-1])
    )
    return server, folder


def laid_out(page, wait_ms: int = 1500) -> None:
    """Wait until the run is over and every table has been laid out (a canvas grid
    fills in late)."""
    page.wait_for_timeout(500)
    page.wait_for_function("() => !document.querySelector('[data-testid=stStatusWidget]')")
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=stDataFrameResizable]')]"
        ".every(e => e.getBoundingClientRect().width > 200)"
    )
    page.wait_for_timeout(wait_ms)


def test_grid_conflict_and_adjudication_views(demo, people, shots):
    url, folder = demo
    ann_ctx, bob_ctx = people(2)
    ann = visit(ann_ctx, url, folder, "review", "ann")
    bob = visit(bob_ctx, url, folder, "review", "bob")
    settle(ann)
    settle(bob)
    _, _, record = item_heading_of(ann)
    # the grid: the sampled record pinned and marked, differing values highlighted (a
    # canvas grid: its cells are not in the page's text, the picture shows them)
    tick_row(ann, 1)
    laid_out(ann)
    ann.screenshot(path=shots / "review_grid.png")

    # a conflict: ann saves; bob, on a page drawn before, saves another decision
    ann.get_by_role("button", name="Save review").click()
    settle(ann)
    assert item_heading_of(bob)[2] == record
    tick_row(bob, 2)
    bob.get_by_role("button", name="Save review").click()
    bob.get_by_text("Not saved: this record's decision changed").wait_for()
    laid_out(bob)
    bob.get_by_text("✗ removed").first.wait_for(state="attached")  # a canvas grid cell
    bob.screenshot(path=shots / "conflict.png")
    # both decisions are kept as made: the record waits for adjudication
    bob.get_by_role("button", name="Keep both (adjudication decides)").click()
    bob.get_by_text("Both decisions on").wait_for()
    disagreements = Project.open(folder).disagreements().table
    assert list(disagreements["sampled_record"]) == [record]
    judge = visit(ann_ctx, url, folder, "adjudication", "ann")
    judge.get_by_text(re.compile(r"record\(s\) decided differently by two reviewers")).wait_for()
    judge.get_by_role("button", name="Save the ticked cluster as the final decision").wait_for()
    laid_out(judge)
    judge.screenshot(path=shots / "adjudication.png")
    for name in ("review_grid", "conflict", "adjudication"):
        assert (shots / f"{name}.png").stat().st_size > 20_000, name


def test_every_page(demo, people, shots):
    url, folder = demo
    (context,) = people(1)
    pages = {
        "review": "Review queue",
        "project": "Loaded",
        "sample": "What will be reviewed",
        "agreement": "Agreement of double review",
    }
    for page, text in pages.items():
        tab = visit(context, url, folder, page, "ann")
        tab.get_by_text(text).first.wait_for()
        laid_out(tab)
        tab.screenshot(path=shots / f"{page}.png")
    tab = visit(context, url, folder, "estimates", "ann")
    tab.get_by_text("The project's existing benchmark").click()
    tab.get_by_text("Paired difference between two versions").wait_for()
    tab.locator(".js-plotly-plot").first.wait_for()
    laid_out(tab, 2000)
    tab.screenshot(path=shots / "estimates.png")
    tab = visit(context, url, folder, "compare", "ann")
    tab.get_by_text("Clusters split or merged between two versions").wait_for()
    tab.locator(".js-plotly-plot").nth(1).wait_for()
    laid_out(tab, 2000)
    tab.screenshot(path=shots / "compare.png")
    tab.locator(".js-plotly-plot").nth(1).scroll_into_view_if_needed()
    tab.wait_for_timeout(1000)
    tab.screenshot(path=shots / "compare_agreement.png")
    tab = visit(context, url, folder, "pairs", "ann")
    for label in ("Match", "Non-match", "Non-match"):
        tab.get_by_text(re.compile(r"Pair \d+: same person")).wait_for()
        tab.get_by_role("button", name=re.compile(rf"^{label}\b")).click()
        tab.wait_for_timeout(1500)
    tab.get_by_text("Running estimate").wait_for()
    laid_out(tab)
    tab.screenshot(path=shots / "pairs.png")
    for name in (*pages, "estimates", "compare", "compare_agreement", "pairs"):
        assert (shots / f"{name}.png").stat().st_size > 20_000, name
