"""Shared plumbing of the review app's pages: the project folder, cached data, the reviewer.

The pages are thin: every rule of the workflow is a method of
:class:`er_evaluation.review.Project`, which the pages call directly. What lives here is
only how the app finds its project folder (kept in the URL so a reload keeps it), caches
the tables once per process, lets the reviewer choose their name from the project's
list, and shows library errors in plain words.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import streamlit as st

from er_evaluation.app.launch import PROJECT_ENV
from er_evaluation.errors import ClusteringError, CoverageError
from er_evaluation.review import Project, ProjectData, ReviewError, load_demo
from er_evaluation.review._data import load_files

DEFAULT_PROJECT = Path("~/.er_evaluation/projects/demo").expanduser()
PROJECT_PARAM = "project"  # URL query parameter holding the chosen project folder
REVIEWER_PARAM = "reviewer"  # URL query parameter holding the chosen reviewer
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
    for key in ("queue_position", "flash", "reviewer"):
        st.session_state.pop(key, None)
    st.query_params.pop(REVIEWER_PARAM, None)


@contextmanager
def plain_errors(what: str) -> Iterator[None]:
    """Show a library error as one plain sentence (a list of sentences for a message of
    several lines) instead of a traceback, and stop the page."""
    try:
        yield
    except USER_ERRORS as exc:
        show_error(what, exc)
        st.stop()


def show_error(what: str, exc: BaseException) -> None:
    """A library error as ``what: message`` (see :func:`error_markdown`)."""
    message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
    st.error(error_markdown(what, str(message)))


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
    return load_demo()


@st.cache_resource(show_spinner="Loading project files…", max_entries=4)
def _file_data(source_json: str) -> ProjectData:
    return load_files(json.loads(source_json))


def cached_data(source: dict) -> ProjectData:
    """A project's data, loaded once per process (pages and sessions share one copy;
    treat it as read-only)."""
    if source.get("source", "demo") == "demo":
        return _demo_data()
    return _file_data(json.dumps(source, sort_keys=True))


def warm_data() -> None:
    """Open the folder the app was started with as its first page will (see
    :func:`open_project`), so that its data is in the cache before a page asks for it: the
    server does this in the background while it starts."""
    try:
        Project.open(launch_dir(), create=True, load=cached_data)
    except USER_ERRORS:
        pass  # the first page opens it again and shows the error in plain words


def open_project() -> Project:
    """The session's project (the folder the app was started with is created if needed;
    a folder chosen in the UI that does not exist stops the page with a pointer to the
    Project page, which asks before creating it)."""
    folder = project_dir()
    if not folder.is_dir() and folder != launch_dir():
        st.warning(f"`{folder}` does not exist yet: create it on the Project page first.")
        st.page_link("views/project.py", label="Project / data")
        st.stop()
    with plain_errors("Could not open the project"):
        return Project.open(folder, create=True, load=cached_data)


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


def load_project() -> ProjectData:
    """The session's project data (for pages that need the data only)."""
    return open_project().data


def record_index(data: ProjectData):
    return _record_index(data, data_key(data))


def min_dwell_seconds() -> float:
    """Seconds an item that came up after a save of another item must have been on screen
    before a save of it counts; a quicker press is the second half of a double press
    (1 s; ``ER_EVAL_MIN_DWELL_S`` overrides it, the in-process AppTests set 0)."""
    return float(os.environ.get("ER_EVAL_MIN_DWELL_S", "1.0"))


def reviewer_name() -> str:
    """The reviewer chosen in the sidebar (one of the project's), or "" when none is."""
    return st.session_state.get("reviewer") or ""


def sidebar() -> None:
    """Project folder and reviewer, shown on every page; both survive a reload (URL). The
    reviewer is chosen from the project's list (names ignore case), never typed: a name
    in the URL that is not on the list is ignored with a warning."""
    folder = project_dir()
    if st.session_state.get("project_dir_chosen") and PROJECT_PARAM not in st.query_params:
        st.query_params[PROJECT_PARAM] = str(folder)  # a page switch may clear the URL
    names: tuple[str, ...] = ()
    if folder.is_dir():
        try:
            names = Project.open(folder, create=True, load=_no_data).reviewers
        except USER_ERRORS:
            names = ()
    # the name in the URL (a reload, a bookmark) is matched ignoring case; any other name
    # is not taken: reviewers are chosen from the project's list, not typed
    current = st.session_state.get("reviewer")
    if current is not None and current not in names:
        del st.session_state["reviewer"]
        current = None
    wanted = st.query_params.get(REVIEWER_PARAM)
    unknown = None
    index = None
    if current is not None:
        index = names.index(current)
    elif wanted:
        match = [i for i, n in enumerate(names) if n.casefold() == wanted.strip().casefold()]
        if match:
            index = match[0]
            st.query_params[REVIEWER_PARAM] = names[index]  # the project's spelling
        else:
            unknown = wanted

    def remember() -> None:
        name = st.session_state.get("reviewer")
        if name:
            st.query_params[REVIEWER_PARAM] = name
        else:
            st.query_params.pop(REVIEWER_PARAM, None)

    with st.sidebar:
        st.caption(f"Project folder: `{folder}`")
        st.selectbox(
            "Reviewer",
            names,
            index=index,
            key="reviewer",
            placeholder="choose your name" if names else "no reviewers yet",
            on_change=remember,
            help="Decisions are saved under this name. The project's reviewers are listed "
            "on the Project page.",
        )
        if unknown:
            st.warning(f"{unknown!r} is not one of this project's reviewers.")
        if not names:
            st.page_link("views/project.py", label="Add reviewers on the Project page")
        st.toggle(
            "Blind mode",
            key="blind",
            help="Hide which disambiguation version proposed each cluster.",
        )


def _no_data(source: dict) -> ProjectData | None:
    # the sidebar needs the reviewers only: the data is not loaded for it
    return None
