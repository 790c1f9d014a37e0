"""A project's data: the records reviewers read, the predicted clusterings (versions), an
optional existing benchmark; loaded from the bundled demo or from the project's files and
validated, with errors naming the file, column or ids."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from er_evaluation.clustering import from_frame
from er_evaluation.errors import ClusteringError, CoverageError, examples
from er_evaluation.io import read_table
from er_evaluation.review._folder import keep_input
from er_evaluation.review._model import ReviewError

# Columns of the bundled PatentsView mentions shown to a reviewer, in display order.
DEMO_FIELDS = (
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
)
DEMO_SOURCE = {
    "source": "demo",
    "records": {"id_col": "mention_id", "block_col": "block", "fields": list(DEMO_FIELDS)},
}
#: the prefix of a path standing for an upload not yet kept in the project (``upload:NAME``)
UPLOAD = "upload:"


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


def load_files(source: Mapping) -> ProjectData:
    """Read and validate the project's own files as ``source`` describes them (the
    ``records``, ``predictions`` and optional ``benchmark`` entries of ``project.json``);
    errors name the file, column or ids (duplicate or missing record ids, unknown ids in
    a version or the benchmark, repeated version names)."""
    rec = source["records"]
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

    pred = source["predictions"]
    if pred["layout"] == "wide":
        predictions = wide_predictions(
            read_table(pred["path"]), pred["id_col"], pred["version_cols"]
        )
    else:
        predictions = {}
        for item in pred["files"]:
            version = str(item["version"]).strip()
            if not version:
                raise ClusteringError(f"{Path(item['path']).name}: give the version a name")
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
    if source.get("benchmark"):
        bench = source["benchmark"]
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


def load_data(source: Mapping) -> ProjectData:
    """The project's data: the bundled demo or its own files."""
    if source.get("source", "demo") == "demo":
        return load_demo()
    return load_files(source)


def upload_columns(name: str, data: bytes) -> list[str]:
    """The columns of an uploaded table (read from a temporary copy that is removed at
    once; errors name the upload, not the temporary copy)."""
    with tempfile.TemporaryDirectory(prefix="er-eval-upload-") as tmp:
        path = Path(tmp) / "0" / Path(name).name
        path.parent.mkdir()
        path.write_bytes(data)
        with _named_as_uploaded(tmp):
            return list(read_table(path).columns)


def check_files(source: Mapping, uploads: Mapping[str, bytes]) -> ProjectData:
    """Load and validate ``source`` where some paths are ``upload:NAME`` (their bytes in
    ``uploads``), from temporary copies removed before returning; errors name an upload
    by its file name, never by where the server put its copy."""
    with tempfile.TemporaryDirectory(prefix="er-eval-upload-") as tmp:
        names = {name: k for k, name in enumerate(uploads)}
        resolved = _with_paths(source, lambda name: _write(Path(tmp), names, name, uploads))
        with _named_as_uploaded(tmp):
            return load_files(resolved)


def keep_uploads(source: Mapping, uploads: Mapping[str, bytes], folder: Path) -> dict:
    """``source`` with every ``upload:NAME`` path replaced by a copy of that upload kept
    under ``folder/inputs`` (:func:`keep_input`, never replacing an existing input)."""
    return _with_paths(source, lambda name: str(keep_input(_bytes(uploads, name), name, folder)))


def _bytes(uploads: Mapping[str, bytes], name: str) -> bytes:
    if name not in uploads:
        raise ReviewError(f"the upload {name!r} is gone: upload it again")
    return uploads[name]


def _write(folder: Path, names: dict, name: str, uploads: Mapping[str, bytes]) -> str:
    # each upload in a folder of its own: two uploads may share a file name
    path = folder / str(names.get(name, len(names))) / Path(name).name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(_bytes(uploads, name))
    return str(path)


def _with_paths(source: Mapping, resolve) -> dict:
    """A copy of ``source`` with each ``upload:NAME`` path replaced by ``resolve(NAME)``."""
    import json

    source = json.loads(json.dumps(source))

    def fix(entry: dict) -> None:
        path = entry.get("path")
        if isinstance(path, str) and path.startswith(UPLOAD):
            entry["path"] = resolve(path[len(UPLOAD) :])

    for part in ("records", "benchmark", "predictions"):
        if source.get(part):
            fix(source[part])
    for item in (source.get("predictions") or {}).get("files", []):
        fix(item)
    return source


class _named_as_uploaded:
    """Errors raised inside name an upload by its own name, not its temporary copy."""

    def __init__(self, folder: str) -> None:
        self.prefix = re.compile(re.escape(str(Path(folder))) + r"/(\d+/)?")

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, error, traceback) -> bool:
        if error is None:
            return False
        if isinstance(error, OSError) and error.filename:
            error.filename = self.prefix.sub("", str(error.filename))
        elif error.args and isinstance(error.args[0], str):
            error.args = (self.prefix.sub("", error.args[0]), *error.args[1:])
        return False
