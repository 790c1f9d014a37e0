"""Shared plumbing for the review app pages: the project folder, cached data, the store.

The pages are thin: everything that computes (sampling, estimation, checks, the review
store) is a library call. What lives here is only how the app finds its project folder,
loads the tables once per process, and shows library errors in plain words.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from er_evaluation.clustering import from_frame
from er_evaluation.errors import ClusteringError, CoverageError, examples
from er_evaluation.io import read_table
from er_evaluation.review import ReviewError, ReviewStore

PROJECT_ENV = "ER_EVAL_PROJECT_DIR"
DEFAULT_PROJECT = Path("~/.er_evaluation/projects/demo").expanduser()
CONFIG_NAME = "project.json"
STORE_NAME = "reviews.sqlite"

# Columns of the bundled PatentsView mentions shown to a reviewer, in display order.
DEMO_FIELDS = [
    "name_first",
    "name_last",
    "city",
    "state",
    "country",
    "patent_date",
    "filing_date",
    "patent_title",
    "assignees",
    "coinventors",
]
DEMO_CONFIG = {
    "source": "demo",
    "records": {"id_col": "mention_id", "block_col": "block", "fields": DEMO_FIELDS},
}
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


@dataclass(frozen=True)
class ProjectData:
    """Everything loaded for a project: records, predicted clusterings, optional benchmark."""

    records: pd.DataFrame  # indexed by record id
    predictions: dict[str, pd.Series]  # version -> membership vector
    id_col: str
    block_col: str | None
    fields: list[str]
    benchmark: pd.Series | None = None
    source: str = "demo"

    @property
    def versions(self) -> list[str]:
        return list(self.predictions)


def project_dir() -> Path:
    """The project folder: chosen in the UI this session, else $ER_EVAL_PROJECT_DIR, else the default."""
    chosen = st.session_state.get("project_dir_chosen")
    if chosen:
        return Path(chosen).expanduser()
    env = os.environ.get(PROJECT_ENV)
    return Path(env).expanduser() if env else DEFAULT_PROJECT


def store_path(folder: Path | None = None) -> Path:
    return (folder or project_dir()) / STORE_NAME


def read_config(folder: Path | None = None) -> dict:
    path = (folder or project_dir()) / CONFIG_NAME
    if not path.exists():
        return dict(DEMO_CONFIG)
    return json.loads(path.read_text())


def write_config(config: dict, folder: Path | None = None) -> Path:
    """Write the project settings atomically (temp file, fsync, rename)."""
    folder = folder or project_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / CONFIG_NAME
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{CONFIG_NAME}.", suffix=".tmp")
    with os.fdopen(fd, "w") as handle:
        json.dump(config, handle, indent=2, sort_keys=True)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return path


def save_upload(upload, folder: Path | None = None) -> Path:
    """Keep an uploaded file inside the project folder so the project reopens without it."""
    folder = (folder or project_dir()) / "inputs"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / Path(upload.name).name
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "wb") as handle:
        handle.write(upload.getvalue())
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return path


@contextmanager
def plain_errors(what: str) -> Iterator[None]:
    """Show a library error as one plain sentence instead of a traceback."""
    try:
        yield
    except USER_ERRORS as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        st.error(f"{what}: {message}")
        st.stop()


# ---------------------------------------------------------------- loading (cached per process)


@st.cache_resource(show_spinner="Loading the bundled PatentsView data…")
def _demo_data() -> ProjectData:
    from er_evaluation import datasets

    mentions = datasets.load_patentsview_mentions()
    predictions = datasets.load_patentsview_predictions()
    benchmark = datasets.load_patentsview_benchmark()
    records = mentions.reset_index().set_index("mention_id", drop=False)
    records.index.name = None
    return ProjectData(
        records=records,
        predictions=dict(predictions),
        id_col="mention_id",
        block_col="block",
        fields=DEMO_FIELDS,
        benchmark=benchmark,
        source="demo",
    )


def wide_predictions(frame: pd.DataFrame, id_col: str, version_cols: list[str]) -> dict:
    """One membership vector per version column; an empty cell means the record is outside
    that version's population (as in PatentsView, where later patents are absent from
    earlier versions)."""
    out = {}
    for col in version_cols:
        rows = frame[[id_col, col]].dropna(subset=[col])
        out[str(col)] = from_frame(rows, id_col=id_col, cluster_col=col, name=f"version {col!r}")
    return out


@st.cache_resource(show_spinner="Loading project files…", max_entries=4)
def _file_data(config_json: str) -> ProjectData:
    config = json.loads(config_json)
    rec = config["records"]
    records = read_table(rec["path"])
    id_col = rec["id_col"]
    if id_col not in records.columns:
        raise KeyError(f"records file has no column {id_col!r}")
    duplicated = records[id_col].duplicated()
    if duplicated.any():
        raise ClusteringError(
            f"records: {int(duplicated.sum())} record id(s) appear more than once: "
            f"{examples(records.loc[duplicated, id_col].unique())}"
        )
    if records[id_col].isna().any():
        raise ClusteringError(f"records: {int(records[id_col].isna().sum())} rows have no id")
    records = records.set_index(id_col, drop=False)
    records.index.name = None

    predictions: dict[str, pd.Series] = {}
    pred = config["predictions"]
    if pred["layout"] == "wide":
        frame = read_table(pred["path"])
        predictions = wide_predictions(frame, pred["id_col"], pred["version_cols"])
    else:
        for item in pred["files"]:
            frame = read_table(item["path"])
            predictions[item["version"]] = from_frame(
                frame, id_col=item["id_col"], cluster_col=item["cluster_col"], name=item["version"]
            )
    if not predictions:
        raise ClusteringError("no predicted clustering given: add at least one version")
    for version, series in predictions.items():
        unknown = records.index.get_indexer(series.index) < 0
        if unknown.any():
            raise CoverageError(
                f"version {version!r}: {int(unknown.sum())} record id(s) are not in the records "
                f"table: {examples(series.index[unknown])}"
            )
    benchmark = None
    if config.get("benchmark"):
        bench = config["benchmark"]
        benchmark = from_frame(
            read_table(bench["path"]),
            id_col=bench["id_col"],
            cluster_col=bench["cluster_col"],
            name="benchmark",
        )
        unknown = records.index.get_indexer(benchmark.index) < 0
        if unknown.any():
            raise CoverageError(
                f"benchmark: {int(unknown.sum())} record id(s) are not in the records table: "
                f"{examples(benchmark.index[unknown])}"
            )
    fields = [c for c in rec.get("fields") or [] if c in records.columns]
    return ProjectData(
        records=records,
        predictions=predictions,
        id_col=id_col,
        block_col=rec.get("block_col") or None,
        fields=fields or [c for c in records.columns if c != id_col],
        benchmark=benchmark,
        source="files",
    )


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


def open_store():
    """The project's review store (one SQLite file; every save is an appended event)."""
    folder = project_dir()
    folder.mkdir(parents=True, exist_ok=True)
    return ReviewStore(store_path(folder))


def reviewer_name() -> str:
    return (st.session_state.get("reviewer") or "").strip() or "anonymous"


def sidebar() -> None:
    """Project folder and reviewer, shown on every page."""
    with st.sidebar:
        st.caption(f"Project folder: `{project_dir()}`")
        st.text_input("Reviewer", key="reviewer", placeholder="your name")
        st.toggle(
            "Blind mode",
            key="blind",
            help="Hide which disambiguation version proposed each cluster.",
        )


# ---------------------------------------------------------------- the sample / review queue

DESIGNS = {
    "records": "records uniformly (their clusters by size)",
    "clusters": "predicted clusters uniformly",
    "blocks": "blocks uniformly",
}
QUEUE_NAME = "queue.parquet"


def draw_queue(data: ProjectData, settings: dict) -> pd.DataFrame:
    """The records to review, one row each: ``record_id``, the sampled ``unit`` it belongs to
    (itself, its predicted cluster, or its block) and its ``reviewer``.

    Records are drawn with the library's samplers: a record sample is a uniform sample of
    singleton units; cluster and block samples list every record of the drawn units.
    """
    from er_evaluation.sampling import sample_clusters

    prediction = data.predictions[settings["version"]]
    n, seed, design = settings["size"], settings["seed"], settings["design"]
    if design == "records":
        ids = prediction.index
        units = sample_clusters(
            pd.Series(ids, index=ids), n, weights="uniform", replace=False, seed=seed
        ).units
        queue = pd.DataFrame({"record_id": units, "unit": units})
    else:
        if design == "clusters":
            grouping = prediction
        else:
            grouping = data.records.loc[prediction.index, data.block_col]
        units = sample_clusters(grouping, n, weights="uniform", replace=False, seed=seed).units
        members = grouping[grouping.isin(units)]
        queue = pd.DataFrame({"record_id": members.index, "unit": members.to_numpy()})
    reviewers = settings.get("reviewers") or []
    queue["reviewer"] = assign(queue, reviewers, seed)
    return queue


def assign(queue: pd.DataFrame, reviewers: list[str], seed: int) -> pd.Series:
    """Reviewer of each queue row (whole units go to one reviewer); None for a shared queue."""
    if not reviewers:
        return pd.Series([None] * len(queue), index=queue.index, dtype=object)
    from er_evaluation.review import assign_reviewers

    by_unit = assign_reviewers(queue["unit"].unique(), reviewers, seed=seed)
    return queue["unit"].map(by_unit)


def save_queue(queue: pd.DataFrame, settings: dict, folder: Path | None = None) -> None:
    from er_evaluation.io import write_table_atomic

    folder = folder or project_dir()
    write_table_atomic(queue, folder / QUEUE_NAME)
    config = read_config(folder)
    config["sample"] = settings
    write_config(config, folder)


def read_sample_config(folder: Path | None = None) -> dict | None:
    return read_config(folder).get("sample")


def read_queue(folder: Path | None = None) -> pd.DataFrame | None:
    path = (folder or project_dir()) / QUEUE_NAME
    if not path.exists() or read_sample_config(folder) is None:
        return None
    return pd.read_parquet(path)


def default_sample(data: ProjectData) -> dict:
    """What the demo opens with: 50 records drawn uniformly from the newest version."""
    return {
        "design": "records",
        "size": 50,
        "seed": 1,
        "version": data.versions[-1],
        "reviewers": [],
    }


def true_clusters(store: ReviewStore) -> pd.Series:
    """The reviewed true clusters so far (empty before the first decision)."""
    if not store.reviewed_records():
        return pd.Series([], index=pd.Index([], dtype=object), dtype=object)
    return store.true_clusters()


def reviewed_sample(data: ProjectData, store: ReviewStore, settings: dict, queue: pd.DataFrame):
    """The design-based :class:`~er_evaluation.sampling.Sample` of what has been reviewed.

    Only finished units count: a record design uses every sampled record already in a
    reviewed true cluster (its cluster drawn with probability proportional to size, one
    draw per sampled record); cluster and block designs use the units whose every record
    is in a reviewed true cluster. Returns ``(sample, n_finished_units)`` or ``(None, 0)``.
    """
    from er_evaluation.sampling import Sample, benchmark_sample

    truth = true_clusters(store)
    done = queue["record_id"].isin(truth.index)
    design = settings["design"]
    prediction = data.predictions[settings["version"]]
    if design == "records":
        sampled = queue.loc[done, "record_id"]
        if sampled.empty:
            return None, 0
        draws = truth.loc[sampled].value_counts()
        reference = truth[truth.isin(draws.index)]
        sample = benchmark_sample(
            reference,
            weights="cluster_size",
            multiplicity=draws,
            replace=False,
            population_size=len(prediction),
            design="records",
        )
        return sample, len(sampled)
    finished = done.groupby(queue["unit"]).all()
    units = finished.index[finished.to_numpy()]
    if len(units) == 0:
        return None, 0
    rows = queue[queue["unit"].isin(units)]
    if design == "clusters":
        reference = truth.loc[rows["record_id"]]
        sample = Sample(
            reference=reference,
            units=pd.Index(units),
            multiplicity=np.ones(len(units), dtype=np.int64),
            probability=np.ones(len(units)),
            design="clusters",
            weights="uniform",
            replace=False,
            population_size=int(prediction.nunique()),
            sample_of="predicted",
        )
        return sample, len(units)
    # Blocks: the true clusters of the finished blocks, each record labelled with its block.
    reference = truth[truth.isin(truth.loc[rows["record_id"]].unique())]
    blocks = data.records.loc[reference.index, data.block_col]
    sample = benchmark_sample(
        reference,
        weights="uniform",
        blocks=blocks,
        replace=False,
        population_size=int(data.records.loc[prediction.index, data.block_col].nunique()),
        design="blocks",
    )
    return sample, len(units)
