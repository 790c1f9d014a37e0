"""Shared plumbing for the review app pages: the project folder, cached data, the store.

The pages are thin: everything that computes (sampling, the review design, estimation,
checks, the review store, the project folder) is a library call, mostly from
:mod:`er_evaluation.review`. What lives here is only how the app finds its project folder
(kept in the URL so a reload keeps it), caches the tables once per process, and shows
library errors in plain words.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pandas as pd
import streamlit as st

from er_evaluation.app.launch import PROJECT_ENV
from er_evaluation.errors import ClusteringError, CoverageError
from er_evaluation.review import DESIGNS, ProjectData, ReviewError, ReviewStore
from er_evaluation.review import project as project_files

__all__ = [
    "DEMO_CONFIG",
    "DESIGNS",
    "ProjectData",
    "data_key",
    "default_sample",
    "draw_queue",
    "load_project",
    "local_time",
    "open_store",
    "plain_errors",
    "project_dir",
    "read_config",
    "read_queue",
    "read_sample_config",
    "record_index",
    "reviewed_sample",
    "reviewer_name",
    "save_queue",
    "sidebar",
    "true_clusters",
    "write_config",
]

DEFAULT_PROJECT = Path("~/.er_evaluation/projects/demo").expanduser()
DEMO_CONFIG = project_files.DEMO_CONFIG
STORE_NAME = project_files.STORE_NAME
PROJECT_PARAM = "project"  # URL query parameter holding the chosen project folder
# Errors the library raises on bad user input; anything else is a bug and may surface.
USER_ERRORS = (
    ReviewError,
    ClusteringError,
    CoverageError,
    ValueError,
    KeyError,
    FileNotFoundError,
    OSError,
)


def project_dir() -> Path:
    """The project folder: chosen in the UI (kept in the URL), else $ER_EVAL_PROJECT_DIR,
    else the default. Always absolute."""
    chosen = st.session_state.get("project_dir_chosen") or st.query_params.get(PROJECT_PARAM)
    if chosen:
        return Path(chosen).expanduser().absolute()
    return launch_dir()


def launch_dir() -> Path:
    """The folder the app was started with ($ER_EVAL_PROJECT_DIR or the default); the app
    may create it without asking, unlike a folder typed in the UI."""
    env = os.environ.get(PROJECT_ENV)
    return (Path(env).expanduser() if env else DEFAULT_PROJECT).absolute()


def choose_project(folder: Path) -> None:
    """Make ``folder`` (absolute, checked) this session's project and put it in the URL."""
    st.session_state["project_dir_chosen"] = str(folder)
    st.query_params[PROJECT_PARAM] = str(folder)
    for key in ("queue_position", "flash"):
        st.session_state.pop(key, None)


def read_config(folder: Path | None = None) -> dict:
    with plain_errors("Could not read the project settings"):
        return project_files.read_config(folder or project_dir())


def write_config(config: dict, folder: Path | None = None) -> Path:
    return project_files.write_config(config, folder or project_dir())


@contextmanager
def plain_errors(what: str) -> Iterator[None]:
    """Show a library error as one plain sentence instead of a traceback."""
    try:
        yield
    except USER_ERRORS as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        st.error(error_markdown(what, str(message)))
        st.stop()


def error_markdown(what: str, message: str) -> str:
    """``what: message`` as Markdown; the lines after a message's first (one per invalid
    row of a review sheet) stay apart as a list instead of running together."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    if not lines:
        return what
    return f"{what}: {lines[0]}" + "".join(f"\n- {line}" for line in lines[1:])


def local_time(created_at: str) -> str:
    """A stored UTC timestamp in the reviewer's time zone (the browser's, else the
    server's), to the second, with the zone's name."""
    moment = datetime.fromisoformat(created_at)
    zone = None
    try:
        if st.context.timezone:
            zone = ZoneInfo(st.context.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        zone = None  # an unknown zone name: the server's local time
    return moment.astimezone(zone).strftime("%Y-%m-%d %H:%M:%S %Z")


# ---------------------------------------------------------------- loading (cached per process)


@st.cache_resource(show_spinner="Loading the bundled PatentsView data…")
def _demo_data() -> ProjectData:
    return project_files.load_demo()


@st.cache_resource(show_spinner="Loading project files…", max_entries=4)
def _file_data(config_json: str) -> ProjectData:
    return project_files.load_files(json.loads(config_json))


def load_project(config: dict | None = None) -> ProjectData:
    """The project's data, loaded once per process (pages share one copy; treat it as read-only)."""
    config = config if config is not None else read_config()
    if config.get("source", "demo") == "demo":
        return _demo_data()
    with plain_errors("Could not load the project data"):
        return _file_data(json.dumps(config, sort_keys=True))


@st.cache_resource(show_spinner="Indexing records for search…", max_entries=4)
def _record_index(_data: ProjectData, key: str):
    from er_evaluation.record_search import RecordIndex

    return RecordIndex(
        _data.records,
        id_col=_data.id_col,
        text_cols=[_data.id_col, *_data.fields],
        block_col=_data.block_col,
    )


def data_key(data: ProjectData) -> str:
    """Cache key of a loaded project (the loaded object lives as long as its cache entry)."""
    return f"{data.source}:{id(data.records)}"


def record_index(data: ProjectData):
    return _record_index(data, data_key(data))


def ensure_project_folder() -> Path:
    """The project folder, created only if it is the one the app was started with; a
    folder chosen in the UI that does not exist stops the page with a pointer to the
    Project page (which asks before creating it)."""
    folder = project_dir()
    if folder.is_dir():
        return folder
    if folder == launch_dir():
        with plain_errors("Could not create the project folder"):
            folder.mkdir(parents=True, exist_ok=True)
        return folder
    st.warning(f"`{folder}` does not exist yet: create it on the Project page first.")
    st.page_link("views/project.py", label="Project / data")
    st.stop()


def open_store() -> ReviewStore:
    """The project's review store (one SQLite file; every save is an appended event)."""
    folder = ensure_project_folder()
    with plain_errors("Could not open the review store"):
        return project_files.open_store(folder)


def min_dwell_seconds() -> float:
    """Seconds an item that came up after a save of another item must have been on screen
    before a save of it counts; a quicker press is the second half of a double press
    (1 s; ``ER_EVAL_MIN_DWELL_S`` overrides it, the in-process AppTests set 0)."""
    return float(os.environ.get("ER_EVAL_MIN_DWELL_S", "1.0"))


def reviewer_name() -> str:
    """The reviewer's name from the sidebar (kept in the URL), or "" when none is given."""
    return (st.session_state.get("reviewer") or "").strip()


def sidebar() -> None:
    """Project folder and reviewer, shown on every page; both survive a reload (URL)."""
    folder = project_dir()
    if st.session_state.get("project_dir_chosen") and PROJECT_PARAM not in st.query_params:
        st.query_params[PROJECT_PARAM] = str(folder)  # a page switch may clear the URL
    with st.sidebar:
        st.caption(f"Project folder: `{folder}`")
        st.text_input("Reviewer", key="reviewer", placeholder="your name", bind="query-params")
        st.toggle(
            "Blind mode",
            key="blind",
            help="Hide which disambiguation version proposed each cluster.",
        )


# ---------------------------------------------------------------- the sample / review queue


def draw_queue(data: ProjectData, settings: dict) -> pd.DataFrame:
    """The records to review (see :func:`er_evaluation.review.draw_queue`)."""
    return project_files.draw_project_queue(data, settings)


def save_queue(queue: pd.DataFrame, settings: dict, folder: Path | None = None) -> None:
    project_files.save_queue(queue, settings, folder or ensure_project_folder())


def read_sample_config(folder: Path | None = None) -> dict | None:
    with plain_errors("Could not read the project settings"):
        return project_files.read_sample_config(folder or project_dir())


def read_queue(folder: Path | None = None) -> pd.DataFrame | None:
    with plain_errors("Could not read the review queue"):
        return project_files.read_queue(folder or project_dir())


def default_sample(data: ProjectData) -> dict:
    return project_files.default_sample(data)


def true_clusters(store: ReviewStore, *, reviewer: str | None = None) -> pd.Series:
    """The reviewed true clusters so far (empty before the first decision)."""
    return project_files.true_clusters(store, reviewer=reviewer)


def reviewed_sample(
    data: ProjectData,
    store: ReviewStore,
    settings: dict,
    queue: pd.DataFrame,
    *,
    reviewer: str | None = None,
):
    """The design-based sample of what has been reviewed and the number of finished units
    (see :func:`er_evaluation.review.reviewed_sample`)."""
    return project_files.project_sample(data, store, settings, queue, reviewer=reviewer)


def reviewer_spread(data, store, settings, queue, versions: list[str], metrics: dict) -> None:
    """Estimates under each reviewer's own decisions (double review), and their spread."""
    from er_evaluation.review.project import reviewer_estimates

    with plain_errors("Could not estimate per reviewer"):
        table = reviewer_estimates(
            data, store, settings, queue, versions=versions, metrics=list(metrics)
        )
    if table.empty:
        return
    st.subheader("Under each reviewer's decisions")
    st.caption(
        "Each reviewer's own decisions where they made one (the decision in force elsewhere). "
        "The spread measures reviewer uncertainty, beside each estimate's sampling error."
    )
    wide = table.pivot_table(
        index=["prediction", "metric"], columns="reviewer", values="value", sort=False
    )
    wide["spread"] = wide.max(axis=1) - wide.min(axis=1)
    st.dataframe(wide.reset_index(), hide_index=True, key="est_reviewer_spread")
