"""Fixtures shared by the test modules."""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from _helpers import CHROMIUM, VIEWPORT, decide_as_truth, launch_chromium, running_app
from hypothesis import settings as hypothesis_settings
from hypothesis.configuration import set_hypothesis_home_dir

# CI (.ci/run sets ER_EVAL_CI=1) runs every test class: a test that would skip for a missing
# browser, Java or optional package fails there instead.
IN_CI = os.environ.get("ER_EVAL_CI") == "1"

# Hypothesis writes nothing into the working directory (the repository root): no example
# database (a failing example is printed with its seed instead) and its cache of the
# code's constants in the system's temporary folder.
hypothesis_settings.register_profile("er_evaluation", database=None)
hypothesis_settings.load_profile("er_evaluation")
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "er_evaluation-hypothesis")


ROOT = Path(__file__).resolve().parents[1]
_ROOT_BEFORE = pytest.StashKey[set]()


def _root_entries() -> set[str]:
    return {p.name for p in ROOT.iterdir()} - {".pytest_cache", "__pycache__"}


def pytest_sessionstart(session) -> None:
    session.config.stash[_ROOT_BEFORE] = _root_entries()


def pytest_sessionfinish(session, exitstatus) -> None:
    """The tests write nothing into the repository root: a new entry there fails the run."""
    new = sorted(_root_entries() - session.config.stash[_ROOT_BEFORE])
    if new:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(
                f"FAILED: the tests wrote into the repository root: {new}", red=True
            )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _missing(reason: str) -> None:
    """Skip for a missing requirement; fail in CI."""
    if IN_CI:
        pytest.fail(f"{reason} (ER_EVAL_CI=1: every test must run)", pytrace=False)
    pytest.skip(reason)


def _missing_requirement(report) -> bool:
    """A skip of ``pytest.importorskip`` (an optional package not installed)."""
    return (
        report.skipped
        and isinstance(report.longrepr, tuple)
        and str(report.longrepr[2]).startswith("Skipped: could not import")
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """In CI a test module skipped by ``pytest.importorskip`` fails."""
    outcome = yield
    report = outcome.get_result()
    if IN_CI and _missing_requirement(report):
        report.outcome = "failed"
        report.longrepr = f"{report.longrepr[2]} (ER_EVAL_CI=1: every test must run)"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """In CI a test skipped by ``pytest.importorskip`` fails."""
    outcome = yield
    report = outcome.get_result()
    if IN_CI and _missing_requirement(report):
        report.outcome = "failed"
        report.longrepr = f"{report.longrepr[2]} (ER_EVAL_CI=1: every test must run)"


def pytest_collection_modifyitems(items) -> None:
    """Tests that start Spark (they use the ``spark`` fixture, or the ``engine`` fixture's
    Spark case) are marked ``spark``: the default run leaves them to CI."""
    spark = pytest.mark.spark
    for item in items:
        callspec = getattr(item, "callspec", None)
        if "spark" in item.fixturenames or (
            callspec is not None and callspec.params.get("engine") == "spark"
        ):
            item.add_marker(spark)


def pytest_runtest_setup(item) -> None:
    """Tests marked ``browser`` run in Debian's chromium: skipped where it is missing
    (failed in CI)."""
    if item.get_closest_marker("browser") and not os.path.exists(CHROMIUM):
        _missing(f"no chromium at {CHROMIUM} (install the Debian package 'chromium')")


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A fresh (not yet created) project folder for the review app: the app finds it
    through ``ER_EVAL_PROJECT_DIR``."""
    monkeypatch.setenv("ER_EVAL_PROJECT_DIR", str(tmp_path / "project"))
    monkeypatch.setenv("ER_EVAL_MIN_DWELL_S", "0")  # AppTest presses land within milliseconds
    return tmp_path / "project"


@pytest.fixture
def store(tmp_path):
    """An empty review store in the test's own folder."""
    from er_evaluation.review import ReviewStore

    return ReviewStore(tmp_path / "reviews.sqlite")


@pytest.fixture(scope="module")
def predictions() -> dict[str, pd.Series]:
    """The 15 bundled PatentsView versions (loaded once per test module)."""
    from er_evaluation import datasets

    return datasets.load_patentsview_predictions()


@pytest.fixture
def cli(capsys, monkeypatch):
    """Run ``er-eval`` in-process: ``cli(argv, stdin=None)`` returns (exit code, stdout,
    stderr); ``stdin`` is the text typed at interactive prompts."""
    from er_evaluation.cli import main

    def run(argv, stdin: str | None = None) -> tuple[int, str, str]:
        if stdin is not None:
            monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        code = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for the whole run (starting Spark costs seconds): two
    cores, four shuffle partitions, no UI."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        _missing("Spark needs Java (.ci/run installs openjdk-17-jre-headless)")
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("er_evaluation-tests")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "1g")
        # small jobs: the quick JIT tier starts faster than full optimisation pays back
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(params=["duckdb", "spark"])
def engine(request) -> str:
    """Each engine in turn (the Spark session starts on first use)."""
    if request.param == "spark":
        request.getfixturevalue("spark")
    else:
        pytest.importorskip("duckdb")
    return request.param


def _engine_table(session, folder=None):
    """Series -> engine table: an Arrow table for DuckDB; for Spark a Parquet file read by
    the session (as users hold their data; a DataFrame made from local rows ships them
    with every job)."""
    import uuid

    import pyarrow.parquet as pq

    from er_evaluation.engines import table
    from er_evaluation.engines._backends import series_to_arrow

    def convert(series: pd.Series):
        arrow = series_to_arrow(series)
        if session is None:
            return table(arrow, "id", "cluster", name=str(series.name))
        path = str(folder / f"{uuid.uuid4().hex}.parquet")
        pq.write_table(arrow, path)
        return table(session.read.parquet(path), "id", "cluster", name=str(series.name))

    return convert


@pytest.fixture(scope="session")
def spark_files(tmp_path_factory):
    return tmp_path_factory.mktemp("spark_tables")


@pytest.fixture
def as_engine_table(engine, request):
    """A function turning a membership Series into a table held by ``engine``."""
    if engine == "spark":
        return _engine_table(
            request.getfixturevalue("spark"), request.getfixturevalue("spark_files")
        )
    return _engine_table(None)


@pytest.fixture
def as_duckdb_table():
    pytest.importorskip("duckdb")
    return _engine_table(None)


@pytest.fixture
def as_spark_table(spark, spark_files):
    return _engine_table(spark, spark_files)


@pytest.fixture(scope="module")
def chromium():
    """One Debian chromium per browser test module (tests/test_browser_*.py)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        launched = launch_chromium(pw)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def server(request, tmp_path_factory):
    """The app served for a whole browser test module, launched on an empty folder: each
    test opens its own project through the URL (``?project=...``, :func:`_helpers.visit`).
    A module's ``APP_ENV`` (a dict) sets environment variables of the server's process."""
    env = getattr(request.module, "APP_ENV", {})
    with running_app(tmp_path_factory.mktemp("launch") / "project", **env) as url:
        yield url


@pytest.fixture
def people(chromium):
    """``people(n)``: n new browser contexts of the shared chromium (each its own
    Streamlit session, as two reviewers on two machines or a second tab), closed after the
    test."""
    contexts = []

    def make(n: int):
        made = [chromium.new_context(viewport=VIEWPORT) for _ in range(n)]
        contexts.extend(made)
        return made

    yield make
    for context in contexts:
        context.close()


def make_review_project(folder: Path, *, size: int = 6, seed: int = 1) -> Path:
    """A review project folder on the bundled PatentsView demo, as the app leaves it: a
    queue of ``size`` records drawn uniformly from the newest version, split between ann
    and bob with every unit reviewed by both (blind), every sampled record decided by
    both: ann accepts each predicted cluster as shown; bob removes the last shown record
    of every third cluster of two or more records, so the two disagree on some."""
    from er_evaluation.review import Project, SampleSettings

    project = Project.init(folder, reviewers=["ann", "bob"])
    settings = SampleSettings(
        design="records",
        size=size,
        seed=seed,
        version=project.data.versions[-1],
        reviewers=("ann", "bob"),
        double_share=1.0,
    )
    queue = project.draw(settings)
    for i, record in enumerate(queue["record_id"]):
        _, shown = project.members(record)
        others = [r for r in sorted(shown) if r != record]
        for reviewer in ("ann", "bob"):
            removed = others[-1:] if reviewer == "bob" and i % 3 == 0 else []
            project.save(reviewer, record, removed=removed, based_on=None)
    return folder


@pytest.fixture(scope="session")
def review_project(tmp_path_factory) -> Path:
    """A reviewed demo project folder (:func:`make_review_project`), made once per run;
    tests only read it."""
    return make_review_project(tmp_path_factory.mktemp("review") / "project")


@pytest.fixture(scope="session")
def recommended_project(tmp_path_factory) -> tuple[Path, pd.Series]:
    """A review project of two versions of a heavy-tailed truth (400 records; v1 with 10%,
    v2 with 20% misattributed records) whose recommended design (120 records to read,
    seed 3, a fifth of the units reviewed twice) was drawn from v1 and decided by ann and
    bob as the truth says; and the truth. Made once per run; tests only read it."""
    from er_evaluation.review import Project, SampleSettings
    from er_evaluation.simulation import misattribute, zipf_clustering

    folder = tmp_path_factory.mktemp("recommended")
    truth = zipf_clustering(400, 2.0, max_size=50, seed=4)
    truth.index = "r" + truth.index.astype(str)
    truth = "e" + truth.astype(str)
    versions = pd.DataFrame(
        {
            "rid": truth.index,
            "name": [f"name {c}" for c in truth],
            "v1": "p" + misattribute(truth, 0.1, seed=5).astype(str).to_numpy(),
            "v2": "q" + misattribute(truth, 0.2, seed=6).astype(str).to_numpy(),
        }
    )
    versions.to_csv(folder / "records.csv", index=False)
    source = {
        "source": "files",
        "records": {"path": str(folder / "records.csv"), "id_col": "rid", "fields": ["name"]},
        "predictions": {
            "layout": "wide",
            "path": str(folder / "records.csv"),
            "id_col": "rid",
            "version_cols": ["v1", "v2"],
        },
    }
    project = Project.init(folder / "project", source=source, reviewers=["ann", "bob"])
    queue = project.draw(
        SampleSettings(
            design="recommended",
            size=120,
            seed=3,
            version="v1",
            reviewers=("ann", "bob"),
            double_share=0.2,
        )
    )
    for name in ("ann", "bob"):
        mine = queue[(queue["reviewer"] == name) | (queue["second_reviewer"] == name)]
        decide_as_truth(project, name, mine["record_id"], truth)
    return project.folder, truth
