"""A project's typed settings: where its data comes from, the sample design of its review
queue, and its reviewers."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from er_evaluation.review._checks import check_reviewer
from er_evaluation.review._design import DESIGNS, STRATIFIED_DESIGNS
from er_evaluation.review._model import ReviewError

#: the demo's first sample: 50 records drawn uniformly from the newest version
DEFAULT_SIZE = 50
DEFAULT_TAKE_ALL = 50


@dataclass(frozen=True)
class SampleSettings:
    """How the review queue was drawn, and which decisions count for it.

    ``design`` is one of :data:`~er_evaluation.review.DESIGNS`; ``size`` the number of
    units drawn (records, predicted clusters or blocks; for the stratified and change
    designs, records besides the take-all stratum); ``seed`` the draw's seed; ``version``
    the predicted clustering the units are drawn from and shown in. ``reviewers`` split
    the queue (whole units per reviewer; empty: one shared queue) and ``double_share`` of
    the units go to a second, blind reviewer. ``take_all_size`` (stratified design): the
    predicted clusters of at least this many records are reviewed entirely.
    ``other_version`` (change design): the version compared with. ``after_event``: only
    decisions saved after this event of the review store count for this sample (0: every
    decision), so a redrawn queue never silently inherits decisions made for another one.
    """

    design: str
    size: int
    seed: int
    version: str
    reviewers: tuple[str, ...] = ()
    double_share: float = 0.0
    take_all_size: int | None = None
    other_version: str | None = None
    after_event: int = 0

    def __post_init__(self) -> None:
        if self.design not in DESIGNS:
            raise ReviewError(f"design must be one of {list(DESIGNS)}, got {self.design!r}")
        object.__setattr__(self, "size", _whole(self.size, "size", 1))
        object.__setattr__(self, "seed", _whole(self.seed, "seed", 0))
        object.__setattr__(self, "after_event", _whole(self.after_event, "after_event", 0))
        if not isinstance(self.version, str) or not self.version:
            raise ReviewError(f"version must be a version name, got {self.version!r}")
        object.__setattr__(self, "reviewers", roster(self.reviewers, what="reviewers"))
        share = self.double_share
        if isinstance(share, bool) or not isinstance(share, numbers.Real):
            raise ReviewError(f"double_share must be a number in [0, 1], got {share!r}")
        if not (math.isfinite(share) and 0.0 <= share <= 1.0):
            raise ReviewError(f"double_share must be a number in [0, 1], got {share!r}")
        object.__setattr__(self, "double_share", float(share))
        if share > 0 and len(self.reviewers) < 2:
            raise ReviewError("double review needs at least two reviewers to split the queue")
        if self.design == "stratified":
            size = DEFAULT_TAKE_ALL if self.take_all_size is None else self.take_all_size
            object.__setattr__(self, "take_all_size", _whole(size, "take_all_size", 2))
        elif self.take_all_size is not None:
            raise ReviewError("take_all_size belongs to the stratified design")
        if self.design == "change":
            if not isinstance(self.other_version, str) or not self.other_version:
                raise ReviewError("the change design needs the version to compare with")
            if self.other_version == self.version:
                raise ReviewError("the change design compares two different versions")
        elif self.other_version is not None:
            raise ReviewError("other_version belongs to the change design")

    @property
    def stratified(self) -> bool:
        return self.design in STRATIFIED_DESIGNS

    def to_dict(self) -> dict[str, Any]:
        """The settings as stored in ``project.json``."""
        out = asdict(self)
        out["reviewers"] = list(self.reviewers)
        return out

    @classmethod
    def from_dict(cls, stored: Mapping[str, Any]) -> SampleSettings:
        """Settings read back from ``project.json`` (unknown keys are an error)."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(stored) - known)
        if unknown:
            raise ReviewError(f"unknown sample setting(s) {unknown}; known: {sorted(known)}")
        values = dict(stored)
        values["reviewers"] = tuple(values.get("reviewers") or ())
        return cls(**values)


@dataclass(frozen=True)
class RecordsFile:
    """The records table reviewers read: its file, id column, optional block column and the
    fields shown to reviewers and searched."""

    path: str
    id_col: str
    block_col: str | None = None
    fields: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClusteringFile:
    """A clustering in a file of its own (one version of the predictions, or the existing
    benchmark): the file, its record id and cluster id columns, and its version name."""

    path: str
    id_col: str
    cluster_col: str
    version: str | None = None


@dataclass(frozen=True)
class PredictionsSource:
    """The predicted clusterings: ``layout`` "wide" (one file ``path`` keyed by ``id_col``,
    one column per version in ``version_cols``) or "long" (one file per version, ``files``)."""

    layout: str
    path: str | None = None
    id_col: str | None = None
    version_cols: tuple[str, ...] = ()
    files: tuple[ClusteringFile, ...] = ()


@dataclass(frozen=True)
class DataSource:
    """Where a project's data comes from: the bundled demo (``demo``), or the project's own
    files (``records``, ``predictions`` and an optional existing ``benchmark``), as
    ``project.json`` holds them. Read it through :attr:`Project.source`."""

    demo: bool = True
    records: RecordsFile | None = None
    predictions: PredictionsSource | None = None
    benchmark: ClusteringFile | None = None

    @classmethod
    def from_dict(cls, stored: Mapping[str, Any]) -> DataSource:
        """The data entries of ``project.json`` (``source``, ``records``, ``predictions``,
        ``benchmark``) as written by :meth:`Project.set_source` (checked there)."""
        if stored.get("source", "demo") == "demo":
            return cls()
        rec, pred, bench = stored["records"], stored["predictions"], stored.get("benchmark")
        return cls(
            demo=False,
            records=RecordsFile(
                path=rec["path"],
                id_col=rec["id_col"],
                block_col=rec.get("block_col"),
                fields=tuple(rec.get("fields") or ()),
            ),
            predictions=PredictionsSource(
                layout=pred["layout"],
                path=pred.get("path"),
                id_col=pred.get("id_col"),
                version_cols=tuple(pred.get("version_cols") or ()),
                files=tuple(
                    ClusteringFile(f["path"], f["id_col"], f["cluster_col"], f.get("version"))
                    for f in pred.get("files") or ()
                ),
            ),
            benchmark=None
            if not bench
            else ClusteringFile(bench["path"], bench["id_col"], bench["cluster_col"]),
        )


def _whole(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ReviewError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    if not math.isfinite(value) or value != math.floor(value) or value < minimum:
        raise ReviewError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return int(value)


def roster(names: Iterable[str], *, what: str = "reviewers") -> tuple[str, ...]:
    """Reviewer names checked (non-empty text, stripped) and unique regardless of case:
    "Ann" and "ann" are one person, so both in one list is an error."""
    if isinstance(names, str):
        raise ReviewError(f"{what} must be a list of names, not the string {names!r}")
    checked = [check_reviewer(n) for n in names]
    seen: dict[str, str] = {}
    for name in checked:
        key = name.casefold()
        if key in seen:
            raise ReviewError(
                f"{what}: {seen[key]!r} and {name!r} name one reviewer (names ignore case)"
            )
        seen[key] = name
    return tuple(checked)
