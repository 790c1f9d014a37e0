"""Real-browser tests (Debian chromium driven by playwright) of the Pair labelling page:
a double press, two reviewers on one block's label log, a reload that resumes, a label
log that cannot be read; and a block too large to label. One app server serves every
test; each test has its own project folder, chosen through the URL (``?project=...``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from _helpers import visit, write_files_project
from playwright.sync_api import Error as PlaywrightError

pytestmark = pytest.mark.browser  # skipped where chromium is missing (conftest.py)

# The page refuses a press on a pair that came up after an answer and was on screen for
# less than this (the app's guard against double presses, 1 s by default). The guard
# times the pair from the server's side; on a loaded test machine the browser may show
# the pair, and deliver a queued second press, seconds later, so the tests use 4 s.
DWELL_S = 4.0


APP_ENV = {"ER_EVAL_MIN_DWELL_S": str(DWELL_S)}  # for the module's server (conftest.py)


@pytest.fixture
def open_tab(people, server):
    """``open_tab(folder)``: a new browser session (its own Streamlit session, like a second
    tab or a second reviewer) on the Pair labelling page of project ``folder``."""
    return lambda folder: visit(*people(1), server, folder, page="pairs")


def settled_pair(page, number: int) -> None:
    """Wait until pair ``number`` is on the page, the run that drew it is over, and the
    app's guard against double presses (``DWELL_S`` on screen) has passed."""
    page.get_by_text(f"Pair {number}: same person?").wait_for()
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=stStatusWidget]')"
        " && !document.querySelector('[data-stale=true]')"
    )
    page.wait_for_timeout(DWELL_S * 1_000 + 300)


def answers(folder: Path) -> list[dict]:
    """The person answers of the page's one label log, in order."""
    (log,) = (folder / "pairs").glob("*.jsonl")
    events = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    assert [e["step"] for e in events] == list(range(len(events)))  # never a step twice
    return [e for e in events if e["source"] == "person"]


def test_a_double_press_answers_only_the_pair_on_screen(open_tab, tmp_path):
    """The second half of a double press landed on the next pair's button and answered a
    pair nobody had looked at (measured: a second press 0.5 s after the first)."""
    page = open_tab(tmp_path)
    settled_pair(page, 1)
    # the pair's fields marked as agreeing or differing (cells of a canvas grid: attached)
    page.get_by_text(re.compile("^(✓ agree|✗ differ)$")).first.wait_for(state="attached")
    # the very button the person saw: Streamlit keeps one element per widget key, so a
    # second press on it after the rerun reaches the next pair's button
    shown = page.get_by_role("button", name=re.compile(r"^Match\b")).element_handle()
    shown.click()
    page.wait_for_timeout(500)  # measured: a second press 0.5 s after the first
    try:
        shown.click(force=True, timeout=5_000)
    except PlaywrightError:  # the element was replaced: the press lands nowhere
        pass
    settled_pair(page, 2)
    page.wait_for_timeout(3_000)  # any late answer would have been written by now
    first = answers(tmp_path)
    assert [e["answer"] for e in first] == ["match"], "a press answered an unseen pair"
    # a deliberate press, once the pair has been on screen, counts
    page.get_by_role("button", name=re.compile(r"^Non-match\b")).click()
    settled_pair(page, 3)
    assert [e["answer"] for e in answers(tmp_path)] == ["match", "non-match"]


def test_pairs_are_answered_from_the_keyboard(open_tab, tmp_path):
    page = open_tab(tmp_path)
    settled_pair(page, 1)
    page.get_by_text("Pair 1: same person?").click()  # focus the page, not a field
    page.keyboard.press("Alt+N")
    settled_pair(page, 2)
    page.keyboard.press("Alt+M")
    settled_pair(page, 3)
    assert [e["answer"] for e in answers(tmp_path)] == ["non-match", "match"]


def test_two_reviewers_on_one_block_each_answer_recorded_once(open_tab, tmp_path):
    """Two browser sessions on one block and sampler share one label log: the second
    answer to a pair is not recorded and that reviewer is told; both go on from the shared
    log, and a reload resumes with every answer."""
    ann, bob = open_tab(tmp_path), open_tab(tmp_path)
    settled_pair(ann, 1)
    settled_pair(bob, 1)
    ann.get_by_role("button", name=re.compile(r"^Match\b")).click()
    settled_pair(ann, 2)
    bob.get_by_role("button", name=re.compile(r"^Non-match\b")).click()  # the same pair, second
    bob.get_by_text("was already answered in another session on this log").wait_for()
    first = answers(tmp_path)
    assert [e["answer"] for e in first] == ["match"]
    # Bob is now on Ann's next pair; he answers it, then Ann's press on it is refused
    settled_pair(bob, 2)
    bob.get_by_role("button", name=re.compile(r"^Non-match\b")).click()
    settled_pair(bob, 3)
    ann.get_by_role("button", name=re.compile(r"^Match\b")).click()
    ann.get_by_text("was already answered in another session on this log").wait_for()
    settled_pair(ann, 3)
    logged = answers(tmp_path)
    assert [e["answer"] for e in logged] == ["match", "non-match"]
    assert len({e["pool_index"] for e in logged}) == 2
    # a reload (a new session) resumes from the log: two labelled, the third pair next
    ann.reload()
    settled_pair(ann, 3)
    ann.get_by_text(re.compile(r"; 2 labelled, 0 unsure")).wait_for()
    assert "Traceback" not in ann.content() + bob.content()


def test_an_unreadable_label_log_is_named_with_its_line_and_why(open_tab, tmp_path):
    page = open_tab(tmp_path)
    for number in (1, 2):
        settled_pair(page, number)
        page.get_by_role("button", name=re.compile(r"^Match\b")).click()
    settled_pair(page, 3)
    (log,) = (tmp_path / "pairs").glob("*.jsonl")
    lines = log.read_text().splitlines()
    lines[2] = lines[2].replace('"label": 1', '"label": "yes"', 1)
    log.write_text("\n".join(lines) + "\n")
    fresh = open_tab(tmp_path)
    fresh.get_by_text(f"Could not open the label log: {log}, line 3: label is 'yes'").wait_for()
    assert "Traceback" not in fresh.content()
    assert log.read_text().splitlines() == lines  # nothing written to the bad log


def giant_block_project(folder: Path, giant: int = 2_001) -> None:
    """A project of own files: block 'small' (30 records) and block 'giant' of ``giant``
    records, C(2001, 2) = 2,001,000 pairs, just over the default limit of 2,000,000."""
    folder.mkdir(parents=True, exist_ok=True)
    blocks = ["small"] * 30 + ["giant"] * giant
    rids = [f"r{i}" for i in range(len(blocks))]
    records = pd.DataFrame(
        {"rid": rids, "name": [f"ann lee {i % 7}" for i in range(len(rids))], "block": blocks}
    )
    records.to_csv(folder / "records.csv", index=False)
    pd.DataFrame({"rid": rids, "v1": [i // 3 for i in range(len(rids))]}).to_csv(
        folder / "predictions.csv", index=False
    )
    write_files_project(
        folder,
        folder / "records.csv",
        folder / "predictions.csv",
        fields=["name"],
        version_cols=["v1"],
        block_col="block",
    )


def test_a_block_over_the_pair_limit_cannot_be_started(open_tab, tmp_path):
    """A block too large to build in memory (the bundled data has one of
    41M pairs) froze or killed the app. The block list shows each block's records and
    pairs and marks it; choosing it shows why it is refused and what to do, builds no
    pool and writes no log."""
    giant_block_project(tmp_path)
    page = open_tab(tmp_path)
    page.get_by_text("Pair 1: same person?").wait_for()  # the small block, labellable
    page.get_by_test_id("stSelectbox").filter(has_text="Block").click()
    option = page.get_by_role("option", name="giant (2,001 records, 2,001,000 pairs) — too large")
    option.click()
    page.get_by_text(
        "Cannot label this block: block 'giant' (2,001 records, 2,001,000 pairs) is too large "
        "for in-memory pair labelling: the limit is 2,000,000 candidate pairs"
    ).wait_for()
    page.get_by_text("Choose a field below to split it by", exact=False).wait_for()
    assert page.get_by_text("max_pairs", exact=False).count() == 0
    assert page.get_by_text("same person?").count() == 0
    assert page.get_by_role("button", name=re.compile(r"^Match\b")).count() == 0
    assert "Traceback" not in page.content()
    logs = sorted(p.name for p in (tmp_path / "pairs").glob("*.jsonl"))
    assert logs == ["v1__small__oasis.jsonl"]  # only the small block's session


def test_a_block_over_the_limit_split_by_a_field_can_be_labelled(open_tab, tmp_path):
    """What the refusal suggests, on the page: the giant block split by name gives seven
    sub-blocks of 285-286 records; one of them is labelled and logged under its own name."""
    giant_block_project(tmp_path)
    page = open_tab(tmp_path)
    page.get_by_text("Pair 1: same person?").wait_for()
    page.get_by_test_id("stSelectbox").filter(has_text="Block").click()
    page.get_by_role("option", name="giant (2,001 records, 2,001,000 pairs) — too large").click()
    page.get_by_test_id("stSelectbox").filter(has_text="Split this block by").click()
    page.get_by_role("option", name="name", exact=True).click()
    page.get_by_text("this is its sub-block of records that also share the same name").wait_for()
    settled_pair(page, 1)
    page.get_by_role("button", name=re.compile(r"^Match\b")).click()
    settled_pair(page, 2)
    assert "Traceback" not in page.content()
    log = tmp_path / "pairs" / "v1__giant _ ann lee 0 by name__oasis.jsonl"
    events = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    assert [e["answer"] for e in events if e["source"] == "person"] == ["match"]
