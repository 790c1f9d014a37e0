"""A review project folder: its settings, input files, review queue and review store.

Layout of a project folder::

    project.json      settings: data source, columns, the sample design
    inputs/           copies of uploaded input files (never overwritten: each upload gets
                      a new name, so a saved project's files stay as they were)
    queue.parquet     the records to review (see ``_design``)
    reviews.sqlite    the review store (see ``_store``)

The app and the ``er-eval review`` command both read a project through this module, so
they build the same reviewed sample and estimate the same numbers.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from er_evaluation.clustering import from_frame
from er_evaluation.errors import ClusteringError, CoverageError, examples
from er_evaluation.io import chmod_like_new_file, read_table, write_table_atomic
from er_evaluation.review._design import draw_queue, reviewed_sample
from er_evaluation.review._model import ReviewError
from er_evaluation.review._store import ReviewStore
from er_evaluation.sampling import Sample, benchmark_sample

if TYPE_CHECKING:
    from er_evaluation.estimators.results import Estimate

CONFIG_NAME = "project.json"
STORE_NAME = "reviews.sqlite"
QUEUE_NAME = "queue.parquet"
INPUTS = "inputs"

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


@dataclass(frozen=True)
class ProjectData:
    """Everything loaded for a project: records, predicted clusterings, optional benchmark."""

    records: pd.DataFrame  # indexed by record id
    predictions: dict[str, pd.Series]  # version -> membership vector
    id_col: str
    block_col: str | None
    fields: list[str] = field(default_factory=list)
    benchmark: pd.Series | None = None
    source: str = "demo"

    @property
    def versions(self) -> list[str]:
        return list(self.predictions)

    @property
    def blocks(self) -> pd.Series | None:
        """Block id of every record (None without a block column)."""
        return None if self.block_col is None else self.records[self.block_col]


# -------------------------------------------------------------------- the folder


def check_folder(text: str | os.PathLike, *, base: Path | None = None) -> Path:
    """The absolute project folder named by ``text`` (``~`` expanded, relative paths taken
    from ``base``, default the current directory), or a :class:`ReviewError` in one
    sentence when it is a file, or cannot be created or written to. Nothing is created."""
    raw = str(text).strip()
    if not raw:
        raise ReviewError("give a project folder")
    path = Path(raw).expanduser()
    if not path.is_absolute():
        path = (base or Path.cwd()) / path
    path = Path(os.path.abspath(path))
    if path.exists() and not path.is_dir():
        raise ReviewError(f"{path} is a file, not a folder: choose a folder for the project")
    existing = path
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise ReviewError(f"{existing} is a file, so {path} cannot be created")
    if not os.access(existing, os.W_OK | os.X_OK):
        what = "is not writable" if existing == path else f"cannot be created in {existing}"
        raise ReviewError(f"{path} {what}: choose a folder you can write to")
    return path


def is_project(folder: Path) -> bool:
    """Does ``folder`` hold a project (settings, queue or review store)?"""
    return any((folder / name).exists() for name in (CONFIG_NAME, QUEUE_NAME, STORE_NAME))


def read_config(folder: Path) -> dict:
    """The project's settings (the demo's when the folder has none)."""
    path = folder / CONFIG_NAME
    if not path.exists():
        return json.loads(json.dumps(DEMO_CONFIG))
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ReviewError(f"{path}: cannot read the project settings: {err}") from err


def write_config(config: dict, folder: Path) -> Path:
    """Write the project settings atomically (temp file, fsync, rename)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / CONFIG_NAME
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{CONFIG_NAME}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(config, handle, indent=2, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        chmod_like_new_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def keep_input(data: bytes, name: str, folder: Path) -> Path:
    """Write an uploaded file's bytes under ``folder/inputs`` with a name no other file
    has (``name``, else ``stem-2.ext``, …), so saving never replaces an input a saved
    project still reads. Returns the absolute path."""
    inputs = folder / INPUTS
    inputs.mkdir(parents=True, exist_ok=True)
    name = Path(name).name or "upload"
    stem, suffix = name.split(".", 1)[0], name[len(name.split(".", 1)[0]) :]
    candidate = inputs / name
    k = 1
    while candidate.exists():
        k += 1
        candidate = inputs / f"{stem}-{k}{suffix}"
    fd, tmp = tempfile.mkstemp(dir=inputs, prefix=f".{candidate.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        chmod_like_new_file(tmp)
        os.link(tmp, candidate)  # fails instead of replacing if the name was taken meanwhile
    finally:
        Path(tmp).unlink(missing_ok=True)
    return candidate.resolve()


def stage_input(data: bytes, name: str, staging: Path) -> Path:
    """Write an upload to a staging folder (outside the saved inputs) for validation."""
    staging.mkdir(parents=True, exist_ok=True)
    path = staging / Path(name).name
    path.write_bytes(data)
    return path


def commit_inputs(config: dict, folder: Path, staging: Path) -> dict:
    """``config`` with every path under ``staging`` copied into ``folder/inputs`` under a
    fresh name (:func:`keep_input`) and replaced by that copy's path."""
    staging = staging.resolve()

    def keep(path: str) -> str:
        source = Path(path).resolve()
        if staging in source.parents:
            return str(keep_input(source.read_bytes(), source.name, folder))
        return path

    config = json.loads(json.dumps(config))
    for part in ("records", "benchmark"):
        if config.get(part) and config[part].get("path"):
            config[part]["path"] = keep(config[part]["path"])
    pred = config.get("predictions") or {}
    if pred.get("path"):
        pred["path"] = keep(pred["path"])
    for item in pred.get("files", []):
        item["path"] = keep(item["path"])
    return config


def clear_staging(staging: Path) -> None:
    shutil.rmtree(staging, ignore_errors=True)


# -------------------------------------------------------------------- the data


def load_demo() -> ProjectData:
    """The bundled PatentsView mentions, 15 versions and the Binette et al. (2022) benchmark."""
    from er_evaluation import datasets

    mentions = datasets.load_patentsview_mentions()
    records = mentions.reset_index().set_index("mention_id", drop=False)
    records.index.name = None
    return ProjectData(
        records=records,
        predictions=dict(datasets.load_patentsview_predictions()),
        id_col="mention_id",
        block_col="block",
        fields=list(DEMO_FIELDS),
        benchmark=datasets.load_patentsview_benchmark(),
        source="demo",
    )


def wide_predictions(frame: pd.DataFrame, id_col: str, version_cols: list[str]) -> dict:
    """One membership vector per version column; an empty cell means the record is outside
    that version's population (as in PatentsView, where later patents are absent from
    earlier versions)."""
    if id_col not in frame.columns:
        raise ClusteringError(f"predictions table has no column {id_col!r}")
    out = {}
    for col in version_cols:
        if col not in frame.columns:
            raise ClusteringError(f"predictions table has no version column {col!r}")
        rows = frame[[id_col, col]].dropna(subset=[col])
        out[str(col)] = from_frame(rows, id_col=id_col, cluster_col=col, name=f"version {col!r}")
    return out


def load_files(config: dict) -> ProjectData:
    """Read and validate the project's own files as ``config`` describes them; errors name
    the file, column or ids (duplicate or missing record ids, unknown ids in a version or
    the benchmark, repeated version names)."""
    rec = config["records"]
    records = read_table(rec["path"])
    id_col = rec["id_col"]
    if id_col not in records.columns:
        raise ClusteringError(f"records file {rec['path']} has no column {id_col!r}")
    if records[id_col].isna().any():
        raise ClusteringError(f"records: {int(records[id_col].isna().sum())} rows have no id")
    duplicated = records[id_col].duplicated()
    if duplicated.any():
        raise ClusteringError(
            f"records: {int(duplicated.sum())} record id(s) appear more than once: "
            f"{examples(records.loc[duplicated, id_col].unique())}"
        )
    records = records.set_index(id_col, drop=False)
    records.index.name = None

    pred = config["predictions"]
    if pred["layout"] == "wide":
        predictions = wide_predictions(
            read_table(pred["path"]), pred["id_col"], pred["version_cols"]
        )
    else:
        predictions = {}
        for item in pred["files"]:
            version = str(item["version"]).strip()
            if not version:
                raise ClusteringError(f"{item['path']}: give the version a name")
            if version in predictions:
                raise ClusteringError(f"version name {version!r} is given to two files")
            predictions[version] = from_frame(
                read_table(item["path"]),
                id_col=item["id_col"],
                cluster_col=item["cluster_col"],
                name=f"version {version!r} ({Path(item['path']).name})",
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
    block_col = rec.get("block_col") or None
    if block_col is not None and block_col not in records.columns:
        raise ClusteringError(f"records file has no block column {block_col!r}")
    fields = [c for c in rec.get("fields") or [] if c in records.columns]
    return ProjectData(
        records=records,
        predictions=predictions,
        id_col=id_col,
        block_col=block_col,
        fields=fields or [c for c in records.columns if c != id_col],
        benchmark=benchmark,
        source="files",
    )


def load_data(config: dict) -> ProjectData:
    """The project's data: the bundled demo or its own files."""
    if config.get("source", "demo") == "demo":
        return load_demo()
    return load_files(config)


# -------------------------------------------------------------------- the queue


def default_sample(data: ProjectData) -> dict:
    """What the demo opens with: 50 records drawn uniformly from the newest version."""
    return {
        "design": "records",
        "size": 50,
        "seed": 1,
        "version": data.versions[-1],
        "reviewers": [],
        "double_share": 0.0,
    }


def draw_project_queue(data: ProjectData, settings: dict) -> pd.DataFrame:
    """:func:`draw_queue` with a project's data and sample settings."""
    return draw_queue(
        data.predictions[settings["version"]],
        design=settings["design"],
        size=int(settings["size"]),
        seed=int(settings["seed"]),
        blocks=data.blocks,
        reviewers=settings.get("reviewers") or [],
        double_share=float(settings.get("double_share") or 0.0),
        **_strata_settings(data, settings),
    )


def _strata_settings(data: ProjectData, settings: dict) -> dict:
    """The stratified and change designs' extra settings, as :func:`draw_queue` takes them."""
    other = settings.get("other_version")
    return {
        "take_all_size": settings.get("take_all_size"),
        "other": data.predictions[other] if other is not None else None,
    }


def save_queue(queue: pd.DataFrame, settings: dict, folder: Path) -> None:
    """Write the queue, then record its settings in ``project.json``."""
    write_table_atomic(queue, folder / QUEUE_NAME)
    config = read_config(folder)
    config["sample"] = settings
    write_config(config, folder)


def read_sample_config(folder: Path) -> dict | None:
    return read_config(folder).get("sample")


def read_queue(folder: Path) -> pd.DataFrame | None:
    """The saved queue (None before a sample is drawn); older queues get an empty
    ``second_reviewer`` column."""
    path = folder / QUEUE_NAME
    if not path.exists() or read_sample_config(folder) is None:
        return None
    queue = pd.read_parquet(path)
    if "second_reviewer" not in queue:
        queue["second_reviewer"] = pd.Series([None] * len(queue), index=queue.index, dtype=object)
    return queue


def queue_fits(data: ProjectData, settings: dict, queue: pd.DataFrame) -> str | None:
    """Why the saved sample no longer fits the project data, or None when it does."""
    if settings["version"] not in data.predictions:
        return f"version {settings['version']!r} is not in the current data"
    # get_indexer uses the index's cached hash table (Series.isin rehashes 133k ids: 1.5 s)
    stale = data.records.index.get_indexer(queue["record_id"]) < 0
    if stale.any():
        return f"{int(stale.sum())} sampled records are not in the current records"
    return None


def open_store(folder: Path) -> ReviewStore:
    """The project's review store."""
    return ReviewStore(folder / STORE_NAME)


def true_clusters(store: ReviewStore, *, reviewer: str | None = None) -> pd.Series:
    """The reviewed true clusters so far (empty before the first decision)."""
    if not store.reviewed_records():
        return pd.Series([], index=pd.Index([], dtype=object), dtype=object)
    return store.true_clusters(reviewer=reviewer)


def project_sample(
    data: ProjectData,
    store: ReviewStore,
    settings: dict,
    queue: pd.DataFrame,
    *,
    reviewer: str | None = None,
) -> tuple[Sample | None, int]:
    """The reviewed sample of a project: :func:`reviewed_sample` over the true clusters of
    the decisions in force (adjudications first), or under ``reviewer``'s own decisions."""
    return reviewed_sample(
        queue,
        true_clusters(store, reviewer=reviewer),
        design=settings["design"],
        prediction=data.predictions[settings["version"]],
        blocks=data.blocks,
        **_strata_settings(data, settings),
    )


def compared_versions(data: ProjectData, settings: dict) -> tuple[pd.Series, pd.Series]:
    """Baseline and compared versions of a change design, on the records they share
    (versions may cover different populations; the comparison is on the shared one)."""
    a = data.predictions[settings["version"]]
    b = data.predictions[settings["other_version"]]
    shared = a.index.intersection(b.index)
    return a.loc[shared], b.loc[shared]


def change_differences(
    data: ProjectData,
    settings: dict,
    sample: Sample,
    metrics: Iterable[str],
    *,
    level: float = 0.95,
) -> tuple[dict[str, Estimate], dict[str, str]]:
    """Paired differences ``metric(other_version) - metric(version)`` of a change-design
    project, by :func:`~er_evaluation.estimators.change.compare_changed`.

    A sample of changed records estimates differences only: its reviews give the change of
    the link totals between the two versions, the project's benchmark (restricted to the
    records both versions cover) gives TP_A and |T|, the versions give |P_A| and |P_B|.
    Returns the estimates by metric and, for each metric that cannot be estimated from what the
    project holds (e.g. recall without a benchmark), the reason.
    """
    from er_evaluation.estimators.change import compare_changed

    base, other = settings["version"], settings["other_version"]
    a, b = compared_versions(data, settings)
    bench = None
    if data.benchmark is not None:
        bench = benchmark_sample(
            data.benchmark[data.benchmark.index.isin(a.index)], weights="cluster_size"
        )
    estimates: dict[str, Estimate] = {}
    refused: dict[str, str] = {}
    for metric in metrics:
        try:
            estimates[metric] = compare_changed(
                a, b, sample, bench, metric, level=level, names=(other, base), on_missing="restrict"
            )
        except ValueError as error:
            refused[metric] = str(error)
    return estimates, refused


@dataclass(frozen=True)
class Project:
    """A project folder opened for reading: settings, data, queue and store."""

    folder: Path
    config: dict
    data: ProjectData
    settings: dict | None
    queue: pd.DataFrame | None
    store: ReviewStore

    @classmethod
    def open(cls, folder: str | os.PathLike) -> Project:
        """Open an existing project folder (a :class:`ReviewError` names what is missing)."""
        path = Path(folder).expanduser().resolve()
        if not path.is_dir():
            raise ReviewError(f"{path}: no such project folder")
        if not is_project(path):
            raise ReviewError(
                f"{path}: not a review project (no {CONFIG_NAME}, {QUEUE_NAME} or {STORE_NAME})"
            )
        config = read_config(path)
        store_file = path / STORE_NAME
        if not store_file.exists():
            raise ReviewError(f"{path}: no review store ({STORE_NAME}): nothing reviewed yet")
        return cls(
            folder=path,
            config=config,
            data=load_data(config),
            settings=config.get("sample"),
            queue=read_queue(path),
            store=ReviewStore(store_file),
        )

    def sample(self, *, reviewer: str | None = None) -> tuple[Sample | None, int]:
        if self.queue is None or self.settings is None:
            raise ReviewError(f"{self.folder}: no sample drawn yet ({QUEUE_NAME} is missing)")
        reason = queue_fits(self.data, self.settings, self.queue)
        if reason:
            raise ReviewError(f"{self.folder}: the saved sample no longer fits the data ({reason})")
        return project_sample(self.data, self.store, self.settings, self.queue, reviewer=reviewer)


def reviewer_estimates(
    data: ProjectData,
    store: ReviewStore,
    settings: dict,
    queue: pd.DataFrame,
    *,
    versions: list[str],
    metrics: list[str],
) -> pd.DataFrame:
    """Estimates under each reviewer's own decisions, one row per reviewer x version x
    metric (columns of :func:`~er_evaluation.estimators.estimate_table` plus
    ``reviewer``); empty unless at least two reviewers decided some record of the sample
    themselves. Where a reviewer made no decision, the decision in force is used, so the
    spread between reviewers comes from the records they decided differently: a direct
    measure of reviewer uncertainty, beside the sampling uncertainty of each estimate."""
    import warnings

    from er_evaluation.errors import CoverageWarning
    from er_evaluation.estimators import estimate_table

    own = store.own_decisions()
    own = own[own["status"] != "skipped"]
    doubled = own.groupby(own["sampled_record"].map(repr))["reviewer"].transform("nunique") > 1
    reviewers = sorted(own.loc[doubled, "reviewer"].unique())
    if len(reviewers) < 2:
        return pd.DataFrame()
    parts = []
    for reviewer in reviewers:  # one estimate per reviewer, not per record
        sample, _ = project_sample(data, store, settings, queue, reviewer=reviewer)
        if sample is None:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CoverageWarning)
            table = estimate_table(
                {v: data.predictions[v] for v in versions}, sample, metrics, on_missing="restrict"
            )
        parts.append(table.assign(reviewer=reviewer))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
