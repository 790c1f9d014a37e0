"""Plain helpers shared by several test modules (the fixtures are in ``conftest.py``).

Test modules import them as ``from _helpers import ...``: pytest puts ``tests/`` on the
path, as it does for ``conftest.py``. Imports of optional packages (streamlit, playwright)
stay inside the functions that need them, so that importing this module never skips or
fails a test module that does not use them.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import tempfile
import threading
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[1] / "er_evaluation" / "app"
ENTRY = str(APP / "er_eval_app.py")

# -- Binette et al. 2023, Figure 2 -----------------------------------------------------------


class Example(NamedTuple):
    truth: pd.Series
    prediction: pd.Series


def figure2(
    truth_labels: tuple = ("t1", "t2", "t3", "t4"), predicted_labels: tuple = (10, 20, 30, 40)
) -> Example:
    """The example of Binette et al. 2023, Figure 2, on records 1..8: truth {1,2,3}, {4,5},
    {6,7}, {8}; prediction {1,4}, {2,3}, {5}, {6,7,8}, with the given cluster labels (the
    test modules' hand-computed expectations name clusters by their own labels).

    Contingency cells n = |ĉ ∩ c| (|ĉ|, |c|):
      {1,4}∩{1,2,3} = 1 (2,3)  {1,4}∩{4,5} = 1 (2,2)  {2,3}∩{1,2,3} = 2 (2,3)
      {5}∩{4,5} = 1 (1,2)      {6,7,8}∩{6,7} = 2 (3,2)  {6,7,8}∩{8} = 1 (3,1)
    |P| = C(2,2)+C(2,2)+C(1,2)+C(3,2) = 5 predicted links; |T| = 3+1+1+0 = 5 true links;
    TP = 2 ({2,3} and {6,7}), FP = 3, FN = 3, TN = C(8,2) - 8 = 20: P = R = 2/5."""
    truth = pd.Series([truth_labels[c] for c in (0, 0, 0, 1, 1, 2, 2, 3)], index=range(1, 9))
    prediction = pd.Series(
        [predicted_labels[c] for c in (0, 1, 1, 0, 2, 3, 3, 3)], index=range(1, 9)
    )
    return Example(truth, prediction)


def random_population(seed: int, n: int = 300) -> tuple[pd.Series, pd.Series]:
    """A random truth of ``n`` records in about n/5 clusters, and a prediction that moves
    an eighth of the records to the cluster of a random record: (truth, prediction)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    truth = pd.Series(rng.integers(0, n // 5, n), index=[f"r{i}" for i in range(n)])
    pred = truth.copy()
    flip = rng.choice(n, n // 8, replace=False)
    pred.iloc[flip] = truth.iloc[rng.integers(0, n, len(flip))].to_numpy()
    return truth, pred


def giants_with_foreign_records() -> tuple[pd.Series, pd.Series, int]:
    """20 entities of 500 records, the predicted cluster of each also holding 15..34
    foreign singletons, and 3,000 singletons predicted alone: the truth, the prediction
    and the label of the first of those singletons."""
    G, size, single = 20, 500, 3000
    foreign = 15 + np.arange(G)
    labels = np.r_[np.repeat(np.arange(G), size), G + np.arange(foreign.sum() + single)]
    truth = pd.Series(labels, index=[f"r{i}" for i in range(len(labels))])
    pred = truth.copy()
    pred.iloc[G * size + np.arange(foreign.sum())] = np.repeat(np.arange(G), foreign)
    return truth, pred, int(G + foreign.sum())


def record_sample(truth: pd.Series, units: list, draws: list):
    """The sample of uniform record draws that drew each true cluster of ``units`` the
    number of times in ``draws``."""
    from er_evaluation.sampling import benchmark_sample

    mult = pd.Series(draws, index=units)
    return benchmark_sample(
        truth[truth.isin(units)],
        weights="cluster_size",
        multiplicity=mult,
        population_size=len(truth),
        design="records",
    )


def census(truth: pd.Series):
    """Every true cluster of ``truth`` reviewed once, drawn uniformly without replacement:
    the whole population as the sample (every estimate is then the exact value)."""
    from er_evaluation.sampling import benchmark_sample

    return benchmark_sample(
        truth, weights="uniform", replace=False, population_size=truth.nunique()
    )


# -- the command line ------------------------------------------------------------------------


def all_parsers(parser):
    """``parser`` and every subcommand's parser below it (argparse keeps them in its
    subparsers action), depth first."""
    yield parser
    for action in parser._actions:
        if action.__class__.__name__ == "_SubParsersAction":
            for sub in action.choices.values():
                yield from all_parsers(sub)


def export_and_estimate(cli, folder, prediction: Path, bench: Path, *, fmt: str = "csv"):
    """Export the review project ``folder`` to ``bench`` and estimate ``prediction`` both
    ways: ``er-eval review estimate`` of the project and ``er-eval estimate`` against the
    export, in format ``fmt``. Returns (review output, review stderr, estimate output,
    estimate stderr)."""
    code, _, err = cli(["review", "export", folder, "-o", bench])
    assert code == 0, err
    code, review_out, review_err = cli(["review", "estimate", folder, "--format", fmt])
    assert code == 0, review_err
    code, estimate_out, estimate_err = cli(
        ["estimate", prediction, "--reference", bench, "--format", fmt]
    )
    assert code == 0, estimate_err
    return review_out, review_err, estimate_out, estimate_err


# -- projects of your own files -------------------------------------------------------------


def write_files_project(
    folder: Path,
    records: Path,
    predictions: Path,
    *,
    fields: list[str],
    version_cols: list[str],
    id_col: str = "rid",
    **more,
) -> None:
    """Write ``folder/project.json`` for a project of your own files, as the app's Project
    page saves it: a records table (``fields`` shown to the reviewer) and predictions in
    the wide layout (one column per version). ``more``: further keys, either of the records
    entry (``block_col``) or of the project (e.g. ``benchmark``)."""
    entry = {"path": str(records), "id_col": id_col}
    if "block_col" in more:
        entry["block_col"] = more.pop("block_col")
    config = {
        "source": "files",
        "records": {**entry, "fields": fields},
        "predictions": {
            "layout": "wide",
            "path": str(predictions),
            "id_col": id_col,
            "version_cols": version_cols,
        },
        **more,
    }
    (folder / "project.json").write_text(json.dumps(config))


# -- review store ----------------------------------------------------------------------------

# A small prediction: A = {a1..a4}, B = {b1, b2}, singletons C = {c1} and D = {d1}.
PRED = pd.Series(
    ["A", "A", "A", "A", "B", "B", "C", "D"],
    index=pd.Index(["a1", "a2", "a3", "a4", "b1", "b2", "c1", "d1"]),
)


def members(prediction: pd.Series, cluster) -> list:
    """The records of ``cluster`` in ``prediction``, in record order."""
    return prediction.index[prediction.to_numpy() == cluster].tolist()


def review(store, sampled, *, reviewer="ann", prediction=PRED, **kw):
    """Record a review of ``sampled`` showing its whole predicted cluster, as the app does;
    ``kw`` (removed, added, notes, status, based_on, ...) go to ``record_review``."""
    cluster = prediction[sampled]
    return store.record_review(
        reviewer=reviewer,
        sampled_record=sampled,
        predicted_cluster=cluster,
        shown_records=members(prediction, cluster),
        **kw,
    )


def filled_sheet(sheet: pd.DataFrame, truth: pd.Series) -> pd.DataFrame:
    """A review sheet (``er-eval review sheet``, read as text) filled in as a reviewer who
    knows ``truth`` would: each row removes the shown records outside the sampled record's
    true cluster and adds its true members that were not shown, or says ``correct``."""
    sheet = sheet.copy()
    for i, row in sheet.iterrows():
        shown = row["cluster_records"].split()
        true = truth.index[truth == truth[row["sampled_record"]]]
        sheet.loc[i, "remove"] = " ".join(m for m in shown if m not in set(true))
        sheet.loc[i, "add"] = " ".join(r for r in true if r not in set(shown))
        if not sheet.loc[i, "remove"] and not sheet.loc[i, "add"]:
            sheet.loc[i, "status"] = "correct"
    return sheet


def decide_as_truth(project, reviewer: str, records, truth: pd.Series) -> None:
    """``reviewer`` decides ``records`` of a review project as ``truth`` says (the records
    of each one's predicted cluster that do not belong removed, the missing ones added),
    once per true cluster: a decision covers every record of its true cluster."""
    covered: set = set()
    for record in records:
        if record in covered:
            continue
        _, members = project.members(record)
        true = set(truth.index[truth == truth[record]])
        project.save(
            reviewer,
            record,
            removed=[m for m in members if m not in true],
            added=sorted(true - set(members)),
            based_on=None,
        )
        covered |= true


def in_threads(work: Callable, args: Iterable) -> list[Exception]:
    """Run ``work(arg)`` for every arg, each in its own thread, all started before any is
    joined; return the exceptions they raised (a lost write must fail the caller's test,
    and an exception inside a thread would otherwise only be printed)."""
    errors: list[Exception] = []

    def run(arg) -> None:
        try:
            work(arg)
        except Exception as err:  # handed back to the test, which asserts there are none
            errors.append(err)

    threads = [threading.Thread(target=run, args=(arg,)) for arg in args]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


# -- AppTest of the review app ---------------------------------------------------------------

TICK = "does not belong"  # the tick column of the review page's cluster table


def add_reviewers(folder, *names: str) -> None:
    """Put ``names`` on the reviewer list of the project in ``folder`` (as the Project page
    does)."""
    from er_evaluation.review import Project

    Project.open(folder, create=True, load=lambda source: None).add_reviewers(names)


def run_app(reviewer: str | None = None) -> AppTest:
    """The app opened at its default page (the review queue), with no exception raised;
    with ``reviewer``, that name added to the project's reviewers and chosen in the
    sidebar."""
    import os

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(ENTRY, default_timeout=120).run()
    assert not at.exception, [e.value for e in at.exception]
    if reviewer:
        choose_reviewer(at, Path(os.environ["ER_EVAL_PROJECT_DIR"]), reviewer)
    return at


def choose_reviewer(at: AppTest, folder, reviewer: str) -> AppTest:
    """``reviewer`` added to the project's reviewers (if new) and chosen in the sidebar."""
    add_reviewers(folder, reviewer)
    at.run()
    at.selectbox(key="reviewer").select(reviewer).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def frame(at: AppTest, *columns: str):
    """The last table on the page (``st.dataframe`` or ``st.data_editor``) with all of
    ``columns`` (read-only tables carry no key in AppTest)."""
    found = [d for d in at.dataframe if set(columns) <= set(d.value.columns)]
    assert found, (
        f"no table with columns {columns}: {[list(d.value.columns) for d in at.dataframe]}"
    )
    return found[-1]


def shown_record(at: AppTest) -> str:
    """The sampled record of the item on the review page (from its heading)."""
    return at.subheader[0].value.split("`")[1]


def tick(at: AppTest, record: str, rows: list[int]) -> None:
    """Tick "does not belong" on the given rows of the cluster table (as a user would)."""
    at.session_state[f"cluster_{record}"] = {
        "edited_rows": {r: {TICK: True} for r in rows},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.run()


# -- real browser ----------------------------------------------------------------------------

CHROMIUM = os.environ.get("ER_EVAL_CHROMIUM", "/usr/bin/chromium")  # .ci/run sets it
TICK_X = 95  # the middle of the tick column of the cluster table, from its left edge
TIMEOUT_MS = 90_000  # the machine may be busy; a first load reads 130k records
VIEWPORT = {"width": 1280, "height": 1300}  # tall: Streamlit scrolls inside its own container


# Debian chromium as root in a container; without the networking flags it keeps trying
# (and failing) to reach Google's hosts.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-dev-shm-usage",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_app(project: Path, port: int, **env: str) -> subprocess.Popen:
    """The app's server on 127.0.0.1:``port`` for ``project``, started as ``er-eval app``
    starts it (:func:`er_evaluation.app.launch.start`), its log kept in a file shown if it
    fails to start (environment variables ``env`` set for its process only)."""
    from er_evaluation.app import launch

    # a file, not a pipe: nobody drains a pipe while the server runs, and a full one blocks it
    log = tempfile.TemporaryFile()
    try:
        return launch.start(project, port=port, stderr=log, env=env)
    except launch.AppStartError as error:
        log.seek(0)
        raise RuntimeError(f"{error}: {log.read().decode()[-2000:]}") from error


@contextlib.contextmanager
def running_app(folder, **env: str):
    """The app served on a free port for project ``folder`` (environment variables ``env``
    set for its process only); yields its URL and stops it afterwards."""
    port = free_port()
    proc = start_app(folder, port, **env)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def visit(context, server: str, folder: Path, page: str = "review", reviewer: str | None = None):
    """A new tab of browser ``context`` on ``page`` of the app at ``server``, for the project
    in ``folder`` (and with ``reviewer`` chosen, if given)."""
    params = {"project": str(folder)} | ({"reviewer": reviewer} if reviewer else {})
    tab = context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    tab.goto(f"{server}/{page}?{urllib.parse.urlencode(params)}")
    return tab


@contextlib.contextmanager
def opened_report(chromium, path: Path, figures: int):
    """A report file opened from disk in Chromium, once its ``figures`` plotly figures are
    drawn; on leaving, no console error or warning and no request beyond the file."""
    page = chromium.new_page(viewport={"width": 1280, "height": 1300})
    problems, requests = [], []
    page.on(
        "console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None
    )
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(path.as_uri())
    page.wait_for_function(
        f"document.querySelectorAll('.js-plotly-plot .main-svg').length >= {figures}"
    )
    assert page.locator(".js-plotly-plot").count() == figures
    yield page
    assert problems == []
    assert [r for r in requests if not r.startswith("file:")] == []
    page.close()


def launch_chromium(playwright):
    """Debian chromium, headless, with the container flags above."""
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)


def item_heading(page, number: int) -> str:
    """Wait for the heading of item ``number`` of the review queue; its sampled record."""
    heading = page.get_by_text(re.compile(rf"Item {number} of 50: "))
    heading.wait_for()
    return re.search(rf"Item {number} of 50: (\S+)", heading.inner_text()).group(1)


# The script run is over (no running indicator; elements of the previous run stay on the
# page, marked stale, until it ends) and every element is drawn: on a first load the
# browser shows a widget as a placeholder (stSkeleton) until its code has loaded, and a
# button binds its keyboard shortcut only once drawn. Measured on the review page of a
# fresh browser context: the text of the page (headings, captions) was there while all
# 19-27 widgets were still placeholders, and a shortcut pressed then went nowhere.
_PAGE_DRAWN = (
    "!document.querySelector('[data-testid=stStatusWidget]')"
    " && !document.querySelector('[data-stale=true]')"
    " && !document.querySelector('[data-testid=stSkeleton]')"
)


def settle(page) -> None:
    """Wait until the review page's run is over and the item's widgets are drawn (the
    heading of a new item shows before its buttons and their keyboard shortcuts exist).
    Then wait out the app's guard against double presses, which refuses a save of an item
    on screen for less than 1 s right after another item's save (a time rule of the app,
    so a time is the condition)."""
    page.wait_for_timeout(300)
    page.wait_for_function(
        f"() => {_PAGE_DRAWN}"
        " && [...document.querySelectorAll('p')].some(p => p.innerText.startsWith('Keys:'))"
        " && [...document.querySelectorAll('button')]"
        ".some(b => b.innerText.startsWith('Correct as is'))"
    )
    page.wait_for_timeout(1_200)


def ran(page) -> None:
    """Wait until the page's script run is over and every element on it is drawn."""
    page.wait_for_timeout(300)
    page.wait_for_function(f"() => {_PAGE_DRAWN}")


def on_item(page, number: int) -> str:
    """Wait until item ``number`` is shown, its run is over and a save of it would count;
    its sampled record."""
    record = item_heading(page, number)
    settle(page)
    return record


def tick_row(page, row: int) -> None:
    """Tick "does not belong" on row ``row`` (0-based) of the cluster table by typing its
    number in the page's "Tick rows" box, then wait until the server has the edit: the
    page's count of ticked records goes up by one only once the script has rerun with it."""
    from playwright.sync_api import expect

    count = page.get_by_text(re.compile(r"^\d+ of \d+ records ticked as not belonging"))
    ticked = int(count.inner_text().split()[0])
    box = page.get_by_role("textbox", name="Tick rows")
    box.fill(str(row + 1))
    box.press("Enter")
    expect(count).to_have_text(
        re.compile(rf"^{ticked + 1} of \d+ records ticked"), timeout=TIMEOUT_MS
    )


def click_tick(page, row: int) -> None:
    """Tick row ``row`` (0-based) of the cluster table with the mouse (a canvas grid:
    35 px header and rows; the tick column follows the narrow row-number column)."""
    from playwright.sync_api import expect

    count = page.get_by_text(re.compile(r"^\d+ of \d+ records ticked as not belonging"))
    ticked = int(count.inner_text().split()[0])
    grid = page.locator("[data-testid='stDataFrameResizable']").nth(1)  # after the pinned row
    box = grid.bounding_box()
    page.mouse.click(box["x"] + TICK_X, box["y"] + 35 + 35 * row + 17)
    expect(count).to_have_text(
        re.compile(rf"^{ticked + 1} of \d+ records ticked"), timeout=TIMEOUT_MS
    )


def project_folder(folder, *reviewers: str):
    """A new project folder (on the demo data) with ``reviewers`` on its list."""
    folder.mkdir(parents=True, exist_ok=True)
    if reviewers:
        add_reviewers(folder, *reviewers)
    return folder


# A small project of inventor-like records: v1 merges two people in P1 and in P4 (a large
# cluster of variants), splits one person over P2 and P5; truth is the ``person`` column.
_PEOPLE = [
    # person, first, last, city, assignee, predicted cluster in v1
    *[("lee", "Ann", "Lee", "Seoul", "Samsung", "P1")] * 4,
    *[("leigh", "Anne", "Leigh", "Boston", "MIT", "P1")] * 2,
    *[("kim", "Jung", "Kim", "Busan", "LG", "P2")] * 3,
    *[("kim", "Jung", "Kim", "Busan", "LG", "P5")] * 2,
    *[("ito", "Ken", "Ito", "Kyoto", "Sony", "P3")] * 2,
    *[(f"solo{i}", f"Name{i}", f"Surname{i}", "Lyon", "Renault", f"S{i}") for i in range(7)],
    *[("berg", "Ola", "Berg", "Oslo", "Equinor", "P4")] * 7,
    *[("berge", "Ola", "Berge", "Bergen", "DNV", "P4")] * 3,
]


def small_project(folder: Path, *reviewers: str) -> Path:
    """A project of 30 small inventor records (files in ``folder``'s sibling ``in/``),
    one version ``v1`` with known errors, and ``reviewers`` on its list; no sample yet."""
    from er_evaluation.review import Project

    inputs = folder.parent / "in"
    inputs.mkdir(parents=True, exist_ok=True)
    ids = [f"m{i:02d}" for i in range(1, len(_PEOPLE) + 1)]
    frame = pd.DataFrame(_PEOPLE, columns=["person", "first", "last", "city", "assignee", "v1"])
    frame.insert(0, "rid", ids)
    frame["title"] = [f"Method {i} for a widget of many parts" for i in range(len(ids))]
    frame[["rid", "first", "last", "city", "assignee", "title"]].to_csv(
        inputs / "records.csv", index=False
    )
    frame[["rid", "v1"]].to_csv(inputs / "v1.csv", index=False)
    frame[["rid", "person"]].to_csv(inputs / "truth.csv", index=False)
    source = {
        "source": "files",
        "records": {
            "path": str(inputs / "records.csv"),
            "id_col": "rid",
            "fields": ["first", "last", "city", "assignee", "title"],
        },
        "predictions": {
            "layout": "long",
            "files": [
                {
                    "path": str(inputs / "v1.csv"),
                    "version": "v1",
                    "id_col": "rid",
                    "cluster_col": "v1",
                }
            ],
        },
    }
    Project.init(folder, source=source, reviewers=reviewers)
    return folder


def item_heading_of(page) -> tuple[int, int, str]:
    """(item, of, sampled record) of the review page's heading."""
    heading = page.get_by_text(re.compile(r"^Item \d+ of \d+: ")).first
    heading.wait_for()
    found = re.search(r"Item (\d+) of (\d+): (\S+)", heading.inner_text())
    return int(found.group(1)), int(found.group(2)), found.group(3)


def pick_reviewer(page, name: str) -> None:
    """Choose ``name`` in the sidebar's Reviewer list (as a user would, with the mouse)."""
    box = page.locator("[data-testid=stSidebar] [data-testid=stSelectbox]").first
    box.click()
    page.get_by_role("option", name=name, exact=True).click()
    page.wait_for_function(
        f"() => new URLSearchParams(location.search).get('reviewer') === {name!r}"
    )


def exact_estimable_metrics() -> dict[str, Callable]:
    """The exact metric behind every name the estimators support (census checks)."""
    from er_evaluation import metrics
    from er_evaluation.vocabulary import ESTIMABLE

    return {name: getattr(metrics, name) for name in ESTIMABLE}


def synthetic_pool(n: int = 400, rate: float = 0.05, seed: int = 0, noise: float = 1.0):
    """A pool whose labels are Bernoulli(rate), scores label-shifted normals and prediction
    a noisy threshold of the score."""
    import numpy as np

    from er_evaluation.pairs import PairPool

    rng = np.random.default_rng(seed)
    label = (rng.random(n) < rate).astype(int)
    score = label * 2.0 + rng.normal(0, noise, n) - 1.0
    predicted = (score + rng.normal(0, 0.5, n) > 0.3).astype(int)
    frame = pd.DataFrame(
        {
            "id_left": np.arange(n),
            "id_right": np.arange(n) + n,
            "score": score,
            "predicted": predicted,
            "label": label,
        }
    )
    return PairPool.from_frame(frame, label_col="label")


# -- pair pools for the pair-label estimates (test_pairs_estimates, test_pairs_variance) ---


def pool_of(labels, predicted, scores=None):
    """A pair pool of the given labels and predictions (scores: evenly spaced by default)."""
    import numpy as np

    from er_evaluation.pairs import PairPool

    n = len(labels)
    frame = pd.DataFrame(
        {
            "id_left": np.arange(n),
            "id_right": np.arange(n) + n,
            "score": np.linspace(0, 1, n) if scores is None else scores,
            "predicted": predicted,
            "label": labels,
        }
    )
    return PairPool.from_frame(frame, label_col="label")


def two_strata(sizes, predicted):
    """Strata of consecutive pool rows of the given sizes, each of one prediction."""
    import numpy as np

    from er_evaluation.pairs._stratify import ScoreStrata

    codes = np.repeat(np.arange(len(sizes)), sizes).astype(np.int16)
    return ScoreStrata(
        codes=codes,
        order=np.arange(len(codes)),
        offsets=np.concatenate([[0], np.cumsum(sizes)]),
        sizes=np.asarray(sizes, dtype=np.int64),
        predicted=np.asarray(predicted, dtype=np.int8),
        mean_score=np.arange(len(sizes), dtype=float),
    )


def rewrite_as_old_log(path, edit_header=None) -> None:
    """Rewrite the label log at ``path`` as a log of version 1 (written before lines carried
    checksums), with ``edit_header(header)`` applied to its header (e.g. dropping a
    parameter that older versions did not record)."""
    import json
    from pathlib import Path

    path = Path(path)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records:
        record.pop("check", None)
    records[0]["version"] = 1
    if edit_header is not None:
        edit_header(records[0])
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
