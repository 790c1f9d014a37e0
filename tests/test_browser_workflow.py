"""Real-browser tests (Debian chromium) of the review workflow as a team walks it, one
per defect found that way: a decision only ever what its reviewer decided, one
benchmark, redraw and publication guards, reviewers chosen from a fixed list, position
and counts right, drafts surviving a reload, one status per decision, and a save made
at a crash visible after the restart. Two reviewers are two browser contexts (two
sessions, as two people on two machines).

One app server serves every test; each test has its own project folder of small files
(``small_project``), chosen through the URL.
"""

from __future__ import annotations

import os
import re
import signal
import time
import warnings
from functools import cache
from pathlib import Path

import pandas as pd
import pytest
from _helpers import (
    TIMEOUT_MS,
    decide_as_truth,
    free_port,
    item_heading_of,
    ran,
    settle,
    small_project,
    start_app,
    tick_row,
    visit,
)
from playwright.sync_api import expect

from er_evaluation._sample_file import read_sample
from er_evaluation.io import read_membership
from er_evaluation.review import Project, ReviewStore, SampleSettings
from er_evaluation.review._data import load_data

pytestmark = pytest.mark.browser  # skipped where chromium is missing (conftest.py)


@cache
def _data(source: str):
    import json

    return load_data(json.loads(source))


def opened(folder: Path) -> Project:
    """The project in ``folder`` with its data loaded once per test run."""
    import json

    return Project.open(folder, load=lambda source: _data(json.dumps(source, sort_keys=True)))


def heading(tab) -> tuple[int, int, str]:
    """(item, of, record) of the item on the review page, once its run is over."""
    settle(tab)
    return item_heading_of(tab)


def draw(project: Project, **settings) -> pd.DataFrame:
    earlier = settings.pop("earlier", None)
    values = {"design": "records", "size": 6, "seed": 1, "version": "v1"} | settings
    return project.draw(SampleSettings(**values), earlier=earlier)


def first_item_of_size(project: Project, minimum: int, **settings) -> pd.DataFrame:
    """Draw until item 1's predicted cluster has ``minimum`` records or more."""
    for seed in range(1, 200):
        queue = draw(project, seed=seed, **settings)
        if len(project.members(queue["record_id"].iloc[0])[1]) >= minimum:
            return queue
    raise AssertionError("no seed gives a first item that large")


# ------------------------------------------------------------------ 1. decisions as made


def test_1_merge_is_a_new_decision_the_reviewer_sees_and_confirms(server, people, tmp_path):
    folder = small_project(tmp_path / "p", "ann", "bob")
    project = opened(folder)
    queue = first_item_of_size(project, 3)
    record = queue["record_id"].iloc[0]
    ann_ctx, bob_ctx = people(2)
    ann = visit(ann_ctx, server, folder, reviewer="ann")
    bob = visit(bob_ctx, server, folder, reviewer="bob")
    assert heading(ann)[2] == heading(bob)[2] == record

    tick_row(ann, 1)  # ann removes the second record
    ann.get_by_role("button", name="Save review").click()
    heading(ann)
    store = ReviewStore(folder / "reviews.sqlite")
    (theirs,) = store.history(record)

    bob.get_by_role("button", name="Correct as is").click()  # a stale page
    bob.get_by_text("Not saved: this record's decision changed").wait_for()
    bob.get_by_role("button", name=re.compile("^Merge both")).click()
    settle(bob)
    time.sleep(2)  # any save the press made would be in the store by now
    assert [e.reviewer for e in store.history(record)] == ["ann"], "a merge saved a decision"
    expect(bob.get_by_text(re.compile(r"^1 of \d+ records ticked"))).to_be_visible()
    bob.get_by_role("button", name="Save review").click()  # bob confirms it himself
    heading(bob)
    mine = store.history(record)[-1]
    assert mine.reviewer == "bob" and mine.removed == theirs.removed
    assert mine.based_on == theirs.event_id  # made after seeing ann's decision


def test_1_keep_both_records_each_decision_as_made(server, people, tmp_path):
    folder = small_project(tmp_path / "p", "ann", "bob")
    project = opened(folder)
    queue = first_item_of_size(project, 2)
    record = queue["record_id"].iloc[0]
    ann_ctx, bob_ctx = people(2)
    ann = visit(ann_ctx, server, folder, reviewer="ann")
    bob = visit(bob_ctx, server, folder, reviewer="bob")
    heading(ann), heading(bob)
    tick_row(ann, 1)
    ann.get_by_role("button", name="Save review").click()
    heading(ann)
    bob.get_by_role("button", name="Correct as is").click()
    bob.get_by_text("Not saved: this record's decision changed").wait_for()
    bob.get_by_role("button", name="Keep both (adjudication decides)").click()
    bob.get_by_text("Both decisions on").wait_for()
    store = ReviewStore(folder / "reviews.sqlite")
    bobs = store.decision(record, reviewer="bob")
    assert bobs.status == "correct" and bobs.removed == ()  # exactly what bob decided
    assert store.decision(record, reviewer="ann").removed != ()
    # the disagreement waits for adjudication, and agreement counts it as one
    adjudication = visit(bob_ctx, server, folder, page="adjudication", reviewer="bob")
    adjudication.get_by_text("1 record(s) decided differently by two reviewers").wait_for()
    agreement = visit(bob_ctx, server, folder, page="agreement", reviewer="bob")
    agreement.get_by_text("Double-reviewed records").wait_for()
    expect(agreement.get_by_text("0.0%").first).to_be_visible()


# ------------------------------------------------------------------ 2. one benchmark


def test_2_the_export_is_the_estimated_sample(server, people, tmp_path, cli):
    folder = small_project(tmp_path / "p", "ann")
    project = opened(folder)
    draw(project, size=4, seed=2)
    (ctx,) = people(1)
    tab = visit(ctx, server, folder, reviewer="ann")
    for item in (1, 2):
        assert heading(tab)[0] == item
        tab.get_by_role("button", name="Correct as is").click()
    heading(tab)
    # a second queue, starting fresh: the first queue's decisions stay out of it
    sample_page = visit(ctx, server, folder, page="sample", reviewer="ann")
    sample_page.get_by_label("Seed").fill("5")
    sample_page.get_by_label("Seed").press("Enter")
    ran(sample_page)
    sample_page.get_by_role("button", name="Draw and save the sample").click()
    sample_page.get_by_role("button", name="Start fresh: they do not count").click()
    sample_page.get_by_text("Saved a sample of").wait_for()
    tab = visit(ctx, server, folder, reviewer="ann")
    heading(tab)
    tab.get_by_role("button", name="Correct as is").click()
    heading(tab)
    tab.get_by_text("Export the reviewed benchmark").click()
    tab.get_by_role("button", name="Export to the project folder").click()
    tab.get_by_text(re.compile(r"Exported [\d,]+ records of (\d+) finished units")).wait_for()

    exported = read_membership(folder / "benchmark.csv", "record_id", "cluster_id")
    sample, finished = opened(folder).sample()
    assert set(exported.index) == set(sample.reference.index)
    assert exported.nunique() == sample.n_units == finished
    estimates = visit(ctx, server, folder, page="estimates", reviewer="ann")
    estimates.get_by_text(
        re.compile(rf"{finished} finished units, {sample.n_records} reviewed")
    ).wait_for()
    # er-eval estimate on the export = er-eval review estimate
    code, review_out, err = cli(["review", "estimate", folder, "--format", "csv"])
    assert code == 0, err
    code, estimate_out, err = cli(
        ["estimate", f"{folder.parent / 'in' / 'v1.csv'}", "--reference",
         folder / "benchmark.csv", "--format", "csv"]
    )  # fmt: skip
    assert code == 0, err
    from io import StringIO

    a = pd.read_csv(StringIO(review_out)).set_index("metric")
    b = pd.read_csv(StringIO(estimate_out)).set_index("metric")
    pd.testing.assert_frame_equal(
        a[["value", "std_error", "ci_low", "ci_high", "n_units"]],
        b[["value", "std_error", "ci_low", "ci_high", "n_units"]],
    )
    design_sample = read_sample(folder / "benchmark.csv", exported)
    assert design_sample.n_units == sample.n_units


# ------------------------------------------------------------------ 3. redraw asks


def test_3_redrawing_over_reviews_asks_and_keeps_them_out_of_a_blind_queue(
    server, people, tmp_path
):
    folder = small_project(tmp_path / "p", "ann", "bob")
    project = opened(folder)
    queue = draw(project, size=4, seed=3)
    (ctx,) = people(1)
    tab = visit(ctx, server, folder, reviewer="ann")
    for _ in range(2):
        heading(tab)
        tab.get_by_role("button", name="Correct as is").click()
    heading(tab)
    page = visit(ctx, server, folder, page="sample", reviewer="ann")
    page.get_by_role("combobox", name="Split among reviewers (none = one shared queue)").click()
    page.get_by_role("option", name="ann", exact=True).click()
    page.get_by_role("option", name="bob", exact=True).click()
    page.keyboard.press("Escape")
    share = page.get_by_label(re.compile("^Share of units reviewed twice"))
    share.fill("1.00")
    share.press("Enter")
    ran(page)
    page.get_by_role("button", name="Draw and save the sample").click()
    page.get_by_text(re.compile(r"The current sample has saved decisions: 2 decision")).wait_for()
    assert pd.read_parquet(folder / "queue.parquet").equals(queue)  # nothing changed yet
    expect(page.get_by_role("button", name="They count for the new sample")).to_be_disabled()
    page.get_by_role("button", name="Start fresh: they do not count").click()
    page.get_by_text("Saved a sample of").wait_for()
    redrawn = pd.read_parquet(folder / "queue.parquet")
    assert set(redrawn["record_id"]) == set(queue["record_id"])  # the same records...
    tab = visit(ctx, server, folder, reviewer="ann")
    heading(tab)
    tab.get_by_text(re.compile(r"^0 of \d+ records reviewed")).wait_for()  # ...none done


# ------------------------------------------------------------------ 4. open disagreements


def test_4_estimates_say_when_disagreements_are_open_and_whose_decision_they_use(
    server, people, tmp_path
):
    folder = small_project(tmp_path / "p", "ann", "bob")
    project = opened(folder)
    queue = first_item_of_size(project, 2, reviewers=("ann", "bob"), double_share=1.0, size=3)
    record = queue["record_id"].iloc[0]
    ann_ctx, bob_ctx = people(2)
    ann = visit(ann_ctx, server, folder, reviewer="ann")
    bob = visit(bob_ctx, server, folder, reviewer="bob")
    for tab, tick in ((ann, True), (bob, False)):
        for _ in range(len(queue)):
            _, _, shown = heading(tab)
            if tick and shown == record:
                tick_row(tab, 1)
                tab.get_by_role("button", name="Save review").click()
            else:
                tab.get_by_role("button", name="Correct as is").click()
        tab.get_by_text("All done").wait_for()
    page = visit(bob_ctx, server, folder, page="estimates", reviewer="bob")
    page.get_by_text(
        "1 record decided differently by two reviewers is not adjudicated yet: these figures "
        "use the later decision on each (bob's on 1)"
    ).wait_for()
    page.get_by_text("Under each reviewer's decisions").wait_for()


# ------------------------------------------------------------------ 5. reviewers chosen


def test_5_reviewer_names_come_from_the_list_ignoring_case(server, people, tmp_path):
    folder = small_project(tmp_path / "p", "reviewer1", "reviewer2")
    project = opened(folder)
    queue = draw(project, size=6, reviewers=("reviewer1", "reviewer2"))
    mine = int(
        ((queue["reviewer"] == "reviewer1") | (queue["second_reviewer"] == "reviewer1")).sum()
    )
    (ctx,) = people(1)
    tab = visit(ctx, server, folder, reviewer="Reviewer1")
    expect(tab.get_by_role("combobox", name="Reviewer")).to_have_value(
        "reviewer1", timeout=TIMEOUT_MS
    )
    assert heading(tab)[1] == mine  # only reviewer1's items, not the whole queue
    tab.get_by_role("button", name="Correct as is").click()
    heading(tab)
    assert ReviewStore(folder / "reviews.sqlite").event_list()[0].reviewer == "reviewer1"
    stranger = visit(ctx, server, folder, reviewer="mallory")
    stranger.get_by_text("'mallory' is not one of this project's reviewers.").wait_for()
    heading(stranger)
    expect(stranger.get_by_role("button", name="Correct as is")).to_be_disabled()


# ------------------------------------------------------------------ 6. position


def test_6_a_reviewer_who_is_done_sees_all_done_and_a_real_position(server, people, tmp_path):
    folder = small_project(tmp_path / "p", "ann", "bob")
    project = opened(folder)
    queue = draw(project, size=4, reviewers=("ann", "bob"))
    n = int((queue["reviewer"] == "ann").sum())
    (ctx,) = people(1)
    tab = visit(ctx, server, folder, reviewer="ann")
    for item in range(1, n + 1):
        assert heading(tab)[:2] == (item, n)
        tab.get_by_role("button", name="Correct as is").click()
    tab.get_by_text("All done: every item of yours in the queue is reviewed.").wait_for()
    assert heading(tab)[:2] == (n, n)
    tab.get_by_role("button", name=re.compile("Previous")).click()
    assert heading(tab)[:2] == (n - 1, n)
    assert not tab.get_by_text(re.compile(r"Item -?0 of")).count()


# ------------------------------------------------------------------ 7. workload


def test_7_the_workload_counts_second_reviews(server, people, tmp_path):
    folder = small_project(tmp_path / "p", "ann", "bob")
    project = opened(folder)
    queue = draw(project, size=10, reviewers=("ann", "bob"), double_share=0.5)
    (ctx,) = people(1)
    page = visit(ctx, server, folder, page="sample", reviewer="ann")
    table = page.locator("[data-testid=stTable]")
    table.wait_for()
    rows = {
        cells[0]: cells
        for cells in (r.locator("th, td").all_inner_texts() for r in table.locator("tr").all())
    }
    header = rows[""] if "" in rows else next(iter(rows.values()))
    column = header.index("records to review")
    for name in ("ann", "bob"):
        assigned = (queue["reviewer"] == name) | (queue["second_reviewer"] == name)
        assert rows[name][column] == str(int(assigned.sum())), (rows[name], int(assigned.sum()))


# ------------------------------------------------------------------ 8. agreement


def test_8_agreement_counts_the_current_sample_only(server, people, tmp_path):
    folder = small_project(tmp_path / "p", "ann", "bob")
    project = opened(folder)
    queue = draw(project, size=3, reviewers=("ann", "bob"), double_share=1.0)
    for record in queue["record_id"]:  # an earlier sample, double-reviewed
        for name in ("ann", "bob"):
            project.save(name, record, based_on=None)
    draw(project, size=3, seed=7, reviewers=("ann", "bob"), double_share=1.0, earlier="exclude")
    new = opened(folder).queue["record_id"].iloc[0]
    for name in ("ann", "bob"):
        opened(folder).save(name, new, based_on=None)
    (ctx,) = people(1)
    page = visit(ctx, server, folder, page="agreement", reviewer="ann")
    page.get_by_text("Double-reviewed records").wait_for()
    metric = page.locator("[data-testid=stMetric]").first
    expect(metric).to_contain_text("1")
    assert opened(folder).agreement().n_units == 1
    assert opened(folder).status()["records decided by ann"] == 1


# ------------------------------------------------------------------ 9. drafts


def test_9_a_reload_keeps_unsaved_ticks_and_notes(server, people, tmp_path):
    folder = small_project(tmp_path / "p", "ann")
    project = opened(folder)
    queue = first_item_of_size(project, 3)
    record = queue["record_id"].iloc[0]
    (ctx,) = people(1)
    tab = visit(ctx, server, folder, reviewer="ann")
    heading(tab)
    tick_row(tab, 2)
    notes = tab.get_by_role("textbox", name="Notes", exact=True)
    notes.fill("moved to Bergen in 2019")
    tab.get_by_role("heading", name="Review queue").click()  # leaving the box sends it
    settle(tab)
    deadline = time.monotonic() + 60
    while (
        opened(folder).draft("ann", record) is None or not opened(folder).draft("ann", record).notes
    ):
        assert time.monotonic() < deadline, "the draft was never kept"
        time.sleep(0.5)
    tab.reload()
    heading(tab)
    tab.get_by_text("Restored your unsaved edit of this item").wait_for()
    expect(tab.get_by_text(re.compile(r"^1 of \d+ records ticked"))).to_be_visible()
    expect(tab.get_by_role("textbox", name="Notes", exact=True)).to_have_value(
        "moved to Bergen in 2019", timeout=TIMEOUT_MS
    )
    assert ReviewStore(folder / "reviews.sqlite").events().empty  # a draft, not a decision


# ------------------------------------------------------------------ 10. one status


def test_10_save_review_unchanged_is_correct_as_is(server, people, tmp_path):
    folder = small_project(tmp_path / "p", "ann")
    project = opened(folder)
    queue = draw(project, size=3)
    (ctx,) = people(1)
    tab = visit(ctx, server, folder, reviewer="ann")
    heading(tab)
    tab.get_by_role("button", name="Save review").click()  # nothing ticked or added
    heading(tab)
    tab.get_by_role("button", name="Correct as is").click()
    heading(tab)
    store = ReviewStore(folder / "reviews.sqlite")
    first, second = (store.decision(r) for r in queue["record_id"].iloc[:2])
    assert first.status == second.status == "correct"
    states = opened(folder).overview("ann")["state"].iloc[:2]
    assert list(states) == ["reviewed", "reviewed"]


# ------------------------------------------------------------------ 11. a save at a crash


def test_11_a_save_stored_at_a_crash_is_shown_after_the_restart(people, tmp_path):
    folder = small_project(tmp_path / "p", "ann")
    project = opened(folder)
    queue = draw(project, size=3)
    record = queue["record_id"].iloc[0]
    store = ReviewStore(folder / "reviews.sqlite")
    port = free_port()
    proc = start_app(folder, port)
    url = f"http://127.0.0.1:{port}"
    try:
        (ctx,) = people(1)
        tab = visit(ctx, url, folder, reviewer="ann")
        heading(tab)
        tab.get_by_role("button", name="Correct as is").click()
        deadline = time.monotonic() + 60
        while not store.event_list():
            assert time.monotonic() < deadline, "the save never reached the store"
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)  # stored, not yet confirmed on the page
        proc.wait(30)
        proc = start_app(folder, port)
        tab = visit(ctx, url, folder, reviewer="ann")
        heading(tab)
        tab.get_by_text(
            re.compile(rf"Your latest saves: item 1 {re.escape(record)} \(correct\) at")
        ).wait_for()
        tab.get_by_label("Go to item").fill("1")
        tab.get_by_label("Go to item").press("Enter")
        assert heading(tab)[2] == record
        tab.get_by_text(re.compile(r"History of this item \(1 events\)")).click()
        tab.get_by_text(re.compile(r"event 1, .*ann.*correct")).wait_for()
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(30)


# ------------------------------------------------------------------ the recommended design


def test_the_sample_page_draws_the_recommended_design_into_the_queue(server, people, tmp_path):
    from er_evaluation.recommend import recommend_design

    folder = small_project(tmp_path / "p", "ann", "bob")
    (ctx,) = people(1)
    page = visit(ctx, server, folder, page="sample", reviewer="ann")
    budget = page.get_by_label("Records to read", exact=True)
    budget.fill("20")
    budget.press("Enter")
    ran(page)
    page.get_by_role("combobox", name="Split among reviewers (none = one shared queue)").click()
    page.get_by_role("option", name="ann", exact=True).click()
    page.get_by_role("option", name="bob", exact=True).click()
    page.keyboard.press("Escape")
    ran(page)
    page.get_by_role("button", name="Draw this design into the review queue").click()
    page.get_by_text("Saved a sample of").wait_for()
    page.get_by_text(re.compile("a budget of 20 records to read")).wait_for()

    project = opened(folder)
    settings = project.settings
    assert (settings.design, settings.size, settings.seed) == ("recommended", 20, 0)
    assert settings.reviewers == ("ann", "bob")
    design = recommend_design(project.data.predictions["v1"], records=20)
    wanted = design.review_table(design.draw(seed=0))
    queue = project.queue
    assert sorted(queue["record_id"]) == sorted(wanted.index)
    assert set(queue["reviewer"]) == {"ann", "bob"}
    assert queue.groupby("unit")["reviewer"].nunique().max() == 1


# ------------------------------------------------------------------ estimates and report


@pytest.mark.parametrize("design, size", [("records", 6), ("recommended", 20)])
def test_the_estimates_page_shows_the_command_line_table_and_its_notes(
    server, people, tmp_path, design, size
):
    """The Estimates page's table has the columns ``er-eval estimate`` prints, one "not
    reliable" note per unreliable estimate of the version in focus, and the report it
    builds downloads as one HTML file."""
    from er_evaluation.estimators.results import SHOWN_COLUMNS, unreliable_notes
    from er_evaluation.review._estimates import version_estimates

    folder = small_project(tmp_path / "p", "ann")
    project = opened(folder)
    draw(project, design=design, size=size)
    truth = pd.read_csv(folder.parent / "in" / "truth.csv", dtype=str).set_index("rid")
    decide_as_truth(project, "ann", project.queue["record_id"], truth["person"])
    sample, _ = project.sample()
    metrics = ["pairwise_precision", "pairwise_recall", "pairwise_f1"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the notes the page must show are checked below
        table = version_estimates(project.data.predictions, sample, ["v1"], metrics)

    (ctx,) = people(1)
    page = visit(ctx, server, folder, page="estimates", reviewer="ann")
    page.get_by_text("Version in focus").wait_for()
    ran(page)
    grid = page.locator("[data-testid=stDataFrame]").filter(has_text="n_effective")
    assert grid_columns(page, grid) == ["prediction", "metric", *SHOWN_COLUMNS]
    notes = [
        text
        for text in page.locator("[data-testid=stAlertContentWarning]").all_inner_texts()
        if text.startswith("not reliable")
    ]
    assert notes == unreliable_notes(table)
    assert (design == "recommended") == bool(notes)  # the recommended draw is too small here
    # an undefined estimate reads as such, never as "nan" or an interval
    undefined = table.loc[table["value"].isna(), "metric"]
    assert (design == "recommended") == (len(undefined) > 0)
    for metric in undefined:
        title = {"pairwise_recall": "Pairwise recall", "pairwise_f1": "Pairwise F1"}[metric]
        box = page.locator("[data-testid=stMetric]").filter(has_text=title)
        expect(box.locator("[data-testid=stMetricValue]")).to_have_text("undefined")
    captions = page.locator("[data-testid=stCaptionContainer]").all_inner_texts()
    assert not [c for c in captions if re.search(r"\bnan\b", c)]
    page.get_by_role("button", name="Build the report").click()
    with page.expect_download() as download:
        page.get_by_role("button", name="Download report").click()
    assert download.value.suggested_filename == "er_evaluation_report.html"
    html = Path(download.value.path()).read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "Entity resolution evaluation" in html


def grid_columns(page, grid) -> list[str]:
    """The column names of a Streamlit dataframe in the browser: its grid keeps only the
    columns in view in its accessible table, so it is read scrolled left, then right."""
    names: list[str] = []
    for left in ("0", "e.scrollWidth"):
        grid.locator(".dvn-scroller").evaluate(f"e => {{ e.scrollLeft = {left}; }}")
        page.wait_for_timeout(500)
        expect(grid.locator("table th").first).to_be_attached()
        names += [n for n in grid.locator("table th").all_text_contents() if n not in names]
    return names


def test_two_draws_of_one_cluster_are_counted_as_such_beside_the_estimates(
    server, people, tmp_path
):
    """Two sampled records in one true cluster are two finished queue units but one
    sampled cluster: the page said "6 finished units" above a table of n_units 5."""
    folder = small_project(tmp_path / "p", "ann")
    project = opened(folder)
    draw(project, size=6, seed=1)
    for record in project.queue["record_id"]:
        if record not in set(project.true_clusters().index):
            project.save("ann", record, based_on=None)
    sample, finished = project.sample()
    assert (finished, sample.n_units) == (6, 5)
    (ctx,) = people(1)
    page = visit(ctx, server, folder, page="estimates", reviewer="ann")
    page.get_by_text(
        "6 finished units (5 distinct sampled clusters, the estimates' n_units: a cluster "
        f"drawn twice counts once), {sample.n_records} reviewed records."
    ).wait_for()
