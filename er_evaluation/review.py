"""Hand review of sampled clusters: an append-only store of decisions, inline checks, and
the true clusters derived from them.

The workflow is PatentsView's hand disambiguation (Binette et al., "Estimating the
Performance of Entity Resolution Algorithms: Lessons Learned Through PatentsView.org",
§2.2): sample records, show each one's predicted cluster, let a reviewer remove the records
that do not belong and search for the missing ones to add. The true cluster of a sampled
record is then

    true cluster = predicted cluster shown - removed + added.

Every save is an event appended to a SQLite database in WAL mode with
``synchronous=FULL`` and one transaction per event, so a save that returned survives a
browser refresh, a killed process, or a second reviewer writing at the same moment
(SQLite serialises writers; ``busy_timeout`` makes the second one wait instead of fail).
Triggers forbid UPDATE and DELETE on the events table: undo is itself an event that
points at the review it cancels, so the full history is always there. The current
decision per sampled record, the true clusters and the exported benchmark are derived
from the events, never stored separately.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from er_evaluation.clustering import from_pairs
from er_evaluation.errors import examples, plain_id
from er_evaluation.io import write_membership

__all__ = [
    "ReviewError",
    "ReviewEvent",
    "ReviewIssue",
    "ReviewStore",
    "STATUSES",
    "assign_reviewers",
    "check_review",
    "names_beside",
]

#: Decision statuses: corrections made, predicted cluster confirmed, item skipped, and the
#: status of an undo event.
STATUSES = ("reviewed", "correct", "skipped", "undo")

_SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    event_id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('reviewed', 'correct', 'skipped', 'undo')),
    sampled_record TEXT NOT NULL,
    predicted_cluster TEXT,
    version TEXT,
    shown_records TEXT NOT NULL,
    added TEXT NOT NULL,
    removed TEXT NOT NULL,
    notes TEXT NOT NULL,
    undoes INTEGER REFERENCES events (event_id)
);
CREATE INDEX IF NOT EXISTS events_by_record ON events (sampled_record, event_id);
CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'review events are append-only: UPDATE is not allowed'); END;
CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'review events are append-only: DELETE is not allowed'); END;
"""
_COLUMNS = (
    "event_id",
    "created_at",
    "reviewer",
    "status",
    "sampled_record",
    "predicted_cluster",
    "version",
    "shown_records",
    "added",
    "removed",
    "notes",
    "undoes",
)


class ReviewError(ValueError):
    """Invalid review input (ids not in the cluster or the population, a sheet with bad
    columns, nothing to undo); the message names the offending ids, rows or columns."""


@dataclass(frozen=True)
class ReviewEvent:
    """One saved event. ``status`` is ``"reviewed"`` (records added or removed),
    ``"correct"`` (predicted cluster confirmed as is), ``"skipped"`` or ``"undo"``
    (``undoes`` then holds the id of the review event it cancels)."""

    event_id: int
    created_at: str
    reviewer: str
    status: str
    sampled_record: Any
    predicted_cluster: Any
    version: str | None
    shown_records: tuple
    added: tuple
    removed: tuple
    notes: str
    undoes: int | None = None

    @property
    def true_cluster(self) -> tuple:
        """Shown predicted cluster minus removed plus added records (shown order first)."""
        removed = set(self.removed)
        kept = [r for r in self.shown_records if r not in removed]
        seen = set(kept)
        return tuple(kept + [r for r in self.added if r not in seen])


@dataclass(frozen=True)
class ReviewIssue:
    """A soft problem found by :func:`check_review`; the save may go ahead."""

    kind: str
    records: tuple
    message: str


# -- store ---------------------------------------------------------------------------------


class ReviewStore:
    """Append-only store of review events in a SQLite file (created if absent).

    Each call opens its own short-lived connection, so one store object may be used from
    several threads (Streamlit sessions) and several processes may open the same file.
    ``timeout`` (seconds) is SQLite's busy timeout: how long a writer waits for another.
    """

    def __init__(self, path: str | os.PathLike, *, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.timeout = float(timeout)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, _SCHEMA_VERSION):
                raise ReviewError(
                    f"{self.path}: review store schema version {version} is newer than this "
                    f"library understands ({_SCHEMA_VERSION})"
                )
            if version == _SCHEMA_VERSION:
                return
            # executescript commits any open transaction, so the script carries its own.
            conn.executescript(
                f"BEGIN IMMEDIATE;{_SCHEMA}PRAGMA user_version = {_SCHEMA_VERSION};COMMIT;"
            )

    def __repr__(self) -> str:
        return f"ReviewStore({str(self.path)!r})"

    def _connect(self) -> _Connection:
        return _Connection(self.path, self.timeout)

    # writing

    def record_review(
        self,
        *,
        reviewer: str,
        sampled_record: Any,
        predicted_cluster: Any,
        shown_records: Iterable,
        removed: Iterable = (),
        added: Iterable = (),
        notes: str = "",
        version: str | None = None,
        status: str | None = None,
    ) -> ReviewEvent:
        """Append one review decision and return it once it is durably committed.

        ``shown_records`` is the predicted cluster as shown (it must contain the sampled
        record); ``removed`` must be among them and must not include the sampled record;
        ``added`` must not overlap ``removed``. ``status`` defaults to ``"correct"`` when
        nothing is added or removed, else ``"reviewed"``; ``"skipped"`` records that the
        item was looked at without a decision (then nothing may be added or removed).
        Population checks (do added ids exist?) need the prediction: see
        :func:`check_review`.
        """
        fields = _review_fields(
            reviewer=reviewer,
            sampled_record=sampled_record,
            predicted_cluster=predicted_cluster,
            shown_records=shown_records,
            removed=removed,
            added=added,
            notes=notes,
            version=version,
            status=status,
        )
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            event = _insert(conn, fields)
            conn.execute("COMMIT")
        return event

    def undo(self, *, reviewer: str, sampled_record: Any) -> ReviewEvent:
        """Append an undo event cancelling the latest still-effective review of
        ``sampled_record`` (the decision then falls back to the one before, if any).
        Raises :class:`ReviewError` when there is nothing to undo."""
        reviewer = _check_reviewer(reviewer)
        key = _encode(plain_id(sampled_record))
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")  # read and append under one write lock
            rows = conn.execute(
                "SELECT event_id, status, undoes FROM events WHERE sampled_record = ? "
                "ORDER BY event_id",
                (key,),
            ).fetchall()
            stack = _effective_stack(rows)
            if not stack:
                conn.execute("ROLLBACK")
                raise ReviewError(
                    f"nothing to undo: sampled record {plain_id(sampled_record)!r} has no saved review"
                )
            fields = {
                "reviewer": reviewer,
                "status": "undo",
                "sampled_record": key,
                "predicted_cluster": None,
                "version": None,
                "shown_records": "[]",
                "added": "[]",
                "removed": "[]",
                "notes": "",
                "undoes": stack[-1],
            }
            event = _insert(conn, fields)
            conn.execute("COMMIT")
        return event

    def import_sheet(
        self,
        frame: pd.DataFrame,
        *,
        prediction: pd.Series,
        sampled_col: str = "sampled_record",
        cluster_col: str | None = "predicted_cluster",
        remove_col: str = "remove",
        add_col: str = "add",
        reviewer_col: str | None = "reviewer",
        notes_col: str | None = "notes",
        reviewer: str | None = None,
        version: str | None = None,
    ) -> list[ReviewEvent]:
        """Import an existing add/remove review sheet (PatentsView's spreadsheet practice).

        Expected columns (names configurable): ``sampled_col`` the sampled record id;
        ``cluster_col`` the predicted cluster id it was reviewed in (optional; when given
        it must equal ``prediction[sampled]``); ``remove_col`` and ``add_col`` record ids
        separated by commas, semicolons or whitespace (empty = none); optional
        ``reviewer_col`` (else ``reviewer=`` is used for every row) and ``notes_col``.
        The shown records are the sampled record's cluster in ``prediction``. Every row is
        checked with :func:`check_review`; all problems are reported together naming rows
        and ids, and nothing is written unless every row is valid. The rows are then
        appended in one transaction (all or nothing).
        """
        if not isinstance(frame, pd.DataFrame):
            raise ReviewError(f"review sheet must be a DataFrame, got {type(frame).__name__}")
        _check_prediction(prediction)
        required = [sampled_col, remove_col, add_col]
        missing = [c for c in required if c not in frame.columns]
        if missing:
            raise ReviewError(
                f"review sheet: missing column(s) {missing}; columns are {list(frame.columns)} "
                "(set sampled_col=, remove_col=, add_col= to map yours)"
            )
        if cluster_col is not None and cluster_col not in frame.columns:
            cluster_col = None
        if reviewer_col is not None and reviewer_col not in frame.columns:
            reviewer_col = None
        if notes_col is not None and notes_col not in frame.columns:
            notes_col = None
        if reviewer_col is None and not reviewer:
            raise ReviewError(
                "review sheet has no reviewer column; pass reviewer= to attribute the rows"
            )
        if len(frame) == 0:
            raise ReviewError("review sheet is empty")

        parse = _id_parser(prediction.index)
        errors: list[str] = []
        rows: list[dict] = []
        seen: dict[Any, Any] = {}
        for label, row in frame.iterrows():
            where = f"row {label!r}"
            try:
                if _isna(row[sampled_col]):
                    raise ReviewError(f"no sampled record id in column {sampled_col!r}")
                sampled = parse(row[sampled_col], sampled_col)
                where = f"row {label!r} (sampled {sampled!r})"
                if sampled in seen:
                    raise ReviewError(f"sampled record repeated (first at row {seen[sampled]!r})")
                seen[sampled] = label
                removed = _split_ids(row[remove_col], parse, remove_col)
                added = _split_ids(row[add_col], parse, add_col)
                check_review(prediction, sampled, removed, added)
                cluster = prediction.loc[sampled]
                if cluster_col is not None and not _isna(row[cluster_col]):
                    if str(plain_id(row[cluster_col])) != str(plain_id(cluster)):
                        raise ReviewError(
                            f"{cluster_col!r} is {plain_id(row[cluster_col])!r} but the prediction "
                            f"puts the record in cluster {plain_id(cluster)!r}"
                        )
                who = reviewer
                if reviewer_col is not None and not _isna(row[reviewer_col]):
                    who = str(row[reviewer_col])
                if not who:
                    raise ReviewError(f"no reviewer in column {reviewer_col!r} and no reviewer=")
                note = "" if notes_col is None or _isna(row[notes_col]) else str(row[notes_col])
                shown = prediction.index[prediction.to_numpy() == cluster].tolist()
                rows.append(
                    _review_fields(
                        reviewer=who,
                        sampled_record=sampled,
                        predicted_cluster=cluster,
                        shown_records=shown,
                        removed=removed,
                        added=added,
                        notes=note,
                        version=version,
                        status=None,
                    )
                )
            except ReviewError as err:
                errors.append(f"{where}: {err}")
        if errors:
            shown_errors = "\n  ".join(errors[:20])
            more = f"\n  (and {len(errors) - 20} more)" if len(errors) > 20 else ""
            raise ReviewError(
                f"review sheet: {len(errors)} invalid row(s), nothing imported:\n  {shown_errors}{more}"
            )
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            events = [_insert(conn, fields) for fields in rows]
            conn.execute("COMMIT")
        return events

    # reading

    def _rows(self, where: str = "", params: tuple = ()) -> list[tuple]:
        with self._connect() as conn:
            return conn.execute(
                f"SELECT {', '.join(_COLUMNS)} FROM events {where} ORDER BY event_id", params
            ).fetchall()

    def events(self) -> pd.DataFrame:
        """The full history, one row per event in save order (undo events included), with
        columns ``event_id, created_at`` (UTC), ``reviewer, status, sampled_record,
        predicted_cluster, version, shown_records, added, removed`` (tuples), ``notes,
        undoes``."""
        return _events_frame([_decode_row(r) for r in self._rows()])

    def event_list(self) -> list[ReviewEvent]:
        """The full history as :class:`ReviewEvent` objects, in save order."""
        return [_decode_row(r) for r in self._rows()]

    def decisions(self) -> pd.DataFrame:
        """Current decision per sampled record after undos: the latest review event not
        cancelled by an undo, one row per sampled record (records whose every review was
        undone are absent), ordered by when that decision was saved. Same columns as
        :meth:`events` plus ``true_cluster``."""
        current = _current(self.event_list())
        frame = _events_frame(current)
        frame["true_cluster"] = pd.Series([e.true_cluster for e in current], dtype=object)
        return frame

    def decision(self, sampled_record: Any) -> ReviewEvent | None:
        """Current decision for one sampled record, or None if it has none."""
        rows = self._rows("WHERE sampled_record = ?", (_encode(plain_id(sampled_record)),))
        current = _current([_decode_row(r) for r in rows])
        return current[0] if current else None

    def reviewed_records(self, *, include_skipped: bool = False) -> set:
        """Sampled records with a current decision (skipped ones only if asked)."""
        return {
            e.sampled_record
            for e in _current(self.event_list())
            if include_skipped or e.status != "skipped"
        }

    def true_clusters(self) -> pd.Series:
        """Membership vector of the reviewed benchmark derived from current decisions.

        Each non-skipped decision gives a true cluster (shown - removed + added). Clusters
        that share a record are the same entity and are merged (connected components of
        the sampled record linked to each member, via
        :func:`~er_evaluation.clustering.from_pairs`). A merged cluster is labelled with
        the sampled record of its earliest decision. See :meth:`conflicts` for decisions
        that the merge contradicts. Raises :class:`ReviewError` when there is no decision.
        """
        return _derive(_current(self.event_list()))[0]

    def conflicts(self) -> pd.DataFrame:
        """Records that a decision removed from its sampled record's entity but that end up
        in that entity anyway because another decision's true cluster contains them (e.g.
        removed by one reviewer, added by another to an overlapping cluster). Columns:
        ``record, sampled_record, reviewer, event_id`` (the removing decision),
        ``cluster`` (merged cluster id), ``included_by`` (sampled records whose true cluster
        contains the record). Empty when consistent."""
        current = [e for e in _current(self.event_list()) if e.status != "skipped"]
        if not current:
            return _empty_conflicts()
        return _derive(current)[1]

    def export(self, path: str | os.PathLike) -> Path:
        """Write :meth:`true_clusters` as a membership file (CSV or Parquet by suffix,
        atomically) with columns ``record_id, cluster_id``, readable by
        :func:`er_evaluation.io.read_membership`. CSV stores ids as text; use Parquet to
        keep integer ids integers."""
        return write_membership(self.true_clusters(), path)


class _Connection:
    """A fresh connection per operation with the durability pragmas set."""

    def __init__(self, path: Path, timeout: float) -> None:
        try:
            self.conn = sqlite3.connect(path, timeout=timeout, isolation_level=None)
        except sqlite3.Error as err:
            raise ReviewError(f"{path}: cannot open the review store: {err}") from err
        try:
            self.conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            mode = self.conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise ReviewError(f"could not switch the review store to WAL mode ({mode})")
            self.conn.execute("PRAGMA synchronous = FULL")
        except (sqlite3.Error, ReviewError) as err:
            self.conn.close()
            raise ReviewError(
                f"{path}: cannot open the review store (is it a review store file?): {err}"
            ) from err

    def __enter__(self) -> sqlite3.Connection:
        return self.conn

    def __exit__(self, *exc) -> None:
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")
        self.conn.close()


def _insert(conn: sqlite3.Connection, fields: dict) -> ReviewEvent:
    created = datetime.now(timezone.utc).isoformat(timespec="microseconds")
    row = (created, *(fields[c] for c in _COLUMNS[2:]))
    cursor = conn.execute(
        f"INSERT INTO events ({', '.join(_COLUMNS[1:])}) VALUES ({', '.join('?' * len(row))})",
        row,
    )
    return _decode_row((cursor.lastrowid, *row))


def _review_fields(
    *,
    reviewer,
    sampled_record,
    predicted_cluster,
    shown_records,
    removed,
    added,
    notes,
    version,
    status,
) -> dict:
    reviewer = _check_reviewer(reviewer)
    sampled = plain_id(sampled_record)
    shown = _unique_list(shown_records, "shown_records")
    removed = _unique_list(removed, "removed")
    added = _unique_list(added, "added")
    if sampled not in set(shown):
        raise ReviewError(
            f"sampled record {sampled!r} is not among the shown records of cluster "
            f"{plain_id(predicted_cluster)!r}"
        )
    stray = [r for r in removed if r not in set(shown)]
    if stray:
        raise ReviewError(
            f"removed id(s) not in the shown cluster {plain_id(predicted_cluster)!r}: {examples(stray)}"
        )
    if sampled in set(removed):
        raise ReviewError(f"the sampled record {sampled!r} itself cannot be removed")
    both = sorted(set(removed) & set(added), key=str)
    if both:
        raise ReviewError(f"id(s) both removed and added: {examples(both)}")
    if status is None:
        status = "reviewed" if removed or added else "correct"
    if status not in STATUSES[:3]:
        raise ReviewError(f"status must be one of {STATUSES[:3]}, got {status!r}")
    if status == "correct" and (removed or added):
        raise ReviewError("status 'correct' but records were added or removed")
    if status == "skipped" and (removed or added):
        raise ReviewError("status 'skipped' but records were added or removed")
    if not isinstance(notes, str):
        raise ReviewError(f"notes must be text, got {type(notes).__name__}")
    return {
        "reviewer": reviewer,
        "status": status,
        "sampled_record": _encode(sampled),
        "predicted_cluster": _encode(plain_id(predicted_cluster)),
        "version": None if version is None else str(version),
        "shown_records": _encode(shown),
        "added": _encode(added),
        "removed": _encode(removed),
        "notes": notes,
        "undoes": None,
    }


def _check_reviewer(reviewer: Any) -> str:
    if not isinstance(reviewer, str) or not reviewer.strip():
        raise ReviewError(f"reviewer must be a non-empty name, got {reviewer!r}")
    return reviewer.strip()


def _unique_list(values: Iterable, what: str) -> list:
    if isinstance(values, (str, bytes)):
        raise ReviewError(f"{what} must be a collection of record ids, not the string {values!r}")
    out: list = []
    seen: set = set()
    for value in values:
        value = plain_id(value)
        if value is None or (isinstance(value, float) and np.isnan(value)):
            raise ReviewError(f"{what} contains a missing id (None/NaN)")
        if value not in seen:
            seen.add(value)
            out.append(value)
    return out


def _encode(value: Any) -> str:
    # JSON keeps 7 and "7" distinct, which plain TEXT columns would not.
    try:
        return json.dumps(value, ensure_ascii=False)
    except TypeError as err:
        raise ReviewError(
            f"record and cluster ids must be str or int, got {type(value).__name__}"
        ) from err


def _decode_row(row: tuple) -> ReviewEvent:
    (event_id, created, reviewer, status, sampled, cluster, version, shown, added, removed) = row[
        :10
    ]
    notes, undoes = row[10], row[11]
    return ReviewEvent(
        event_id=int(event_id),
        created_at=created,
        reviewer=reviewer,
        status=status,
        sampled_record=json.loads(sampled),
        predicted_cluster=None if cluster is None else json.loads(cluster),
        version=version,
        shown_records=tuple(json.loads(shown)),
        added=tuple(json.loads(added)),
        removed=tuple(json.loads(removed)),
        notes=notes,
        undoes=None if undoes is None else int(undoes),
    )


def _events_frame(events: Sequence[ReviewEvent]) -> pd.DataFrame:
    frame = pd.DataFrame(
        {c: pd.Series([getattr(e, c) for e in events], dtype=object) for c in _COLUMNS}
    )
    frame["event_id"] = frame["event_id"].astype("int64")
    frame["created_at"] = pd.to_datetime(frame["created_at"], utc=True, format="ISO8601")
    frame["undoes"] = frame["undoes"].astype("Int64")
    for col in ("reviewer", "status", "notes", "version"):
        frame[col] = frame[col].astype(object)
    return frame


def _effective_stack(rows: Iterable[tuple]) -> list[int]:
    """Replay (event_id, status, undoes) of one sampled record: reviews push, undos pop."""
    stack: list[int] = []
    for event_id, status, undoes in rows:
        if status == "undo":
            if stack and stack[-1] == undoes:
                stack.pop()
        else:
            stack.append(event_id)
    return stack


def _current(events: Sequence[ReviewEvent]) -> list[ReviewEvent]:
    by_record: dict[str, list[ReviewEvent]] = {}
    for event in events:
        by_record.setdefault(_encode(event.sampled_record), []).append(event)
    by_id = {e.event_id: e for e in events}
    current = []
    for group in by_record.values():
        stack = _effective_stack((e.event_id, e.status, e.undoes) for e in group)
        if stack:
            current.append(by_id[stack[-1]])
    return sorted(current, key=lambda e: e.event_id)


def _derive(current: Sequence[ReviewEvent]) -> tuple[pd.Series, pd.DataFrame]:
    decided = [e for e in current if e.status != "skipped"]
    if not decided:
        raise ReviewError("no review decisions yet: nothing to derive true clusters from")
    lefts = [e.sampled_record for e in decided for _ in e.true_cluster]
    rights = [r for e in decided for r in e.true_cluster]
    members = pd.Index(pd.unique(pd.Series(rights, dtype=object))).infer_objects()
    pairs = pd.DataFrame({"left": lefts, "right": rights}, dtype=object)
    components = from_pairs(pairs, records=members, name="reviewed clusters")
    # Label each entity by the sampled record of its earliest decision (stable, readable).
    sampled = pd.Index([e.sampled_record for e in decided]).infer_objects()
    comp_of_sampled = components.loc[sampled].to_numpy()
    first = pd.Series(sampled.to_numpy(), dtype=object).groupby(comp_of_sampled).first()
    labels = pd.Series(
        first.reindex(components.to_numpy()).to_numpy(), index=components.index
    ).infer_objects()
    labels.index.name = "record_id"
    labels.name = "cluster_id"

    included_by: dict[Any, list] = {}
    for e in decided:
        for r in e.true_cluster:
            included_by.setdefault(r, []).append(e.sampled_record)
    conflicts = []
    for e in decided:
        home = components.loc[e.sampled_record]
        for r in e.removed:
            if r in included_by and components.loc[r] == home:
                conflicts.append(
                    {
                        "record": r,
                        "sampled_record": e.sampled_record,
                        "reviewer": e.reviewer,
                        "event_id": e.event_id,
                        "cluster": plain_id(labels.loc[r]),
                        "included_by": tuple(included_by[r]),
                    }
                )
    frame = pd.DataFrame(conflicts) if conflicts else _empty_conflicts()
    return labels, frame


def _empty_conflicts() -> pd.DataFrame:
    return pd.DataFrame(
        {
            c: pd.Series([], dtype="int64" if c == "event_id" else object)
            for c in ("record", "sampled_record", "reviewer", "event_id", "cluster", "included_by")
        }
    )


# -- sheet parsing -------------------------------------------------------------------------

_SPLIT = re.compile(r"[,;\s]+")


def _isna(value: Any) -> bool:
    return value is None or (np.isscalar(value) and bool(pd.isna(value)))


def _id_parser(index: pd.Index):
    integer = index.dtype.kind in "iu"

    def parse(value: Any, column: str) -> Any:
        value = plain_id(value)
        if integer:
            if isinstance(value, float) and value.is_integer():
                return int(value)
            try:
                return int(str(value).strip())
            except ValueError:
                raise ReviewError(
                    f"column {column!r}: {value!r} is not an integer id like the prediction's"
                ) from None
        return str(value).strip() if isinstance(value, str) else value

    return parse


def _split_ids(cell: Any, parse, column: str) -> list:
    if _isna(cell):
        return []
    if isinstance(cell, (list, tuple, np.ndarray)):
        return [parse(v, column) for v in cell]
    return [parse(token, column) for token in _SPLIT.split(str(cell)) if token]


# -- inline checks -------------------------------------------------------------------------


def _check_prediction(prediction: pd.Series) -> None:
    if not isinstance(prediction, pd.Series):
        raise ReviewError(
            f"prediction must be a membership Series (record id -> cluster id), got {type(prediction).__name__}"
        )


def check_review(
    prediction: pd.Series,
    sampled_record: Any,
    removed: Iterable = (),
    added: Iterable = (),
    records: pd.DataFrame | None = None,
    *,
    id_col: str | None = None,
    name_cols: Sequence[str] | None = None,
) -> list[ReviewIssue]:
    """Check a review before saving it, as PatentsView's review script does.

    Errors (raise :class:`ReviewError` naming the ids): the sampled record is not in the
    prediction; a removed id is not in the sampled record's predicted cluster; the
    sampled record itself is removed; an added id is not in the population (the
    prediction's records); an id is both removed and added.
    Soft issues (returned): ``"already_in_cluster"`` for added ids already in the
    predicted cluster; with ``records`` (indexed by record id, or with ``id_col``),
    ``"name"`` for each added record whose name differs from the sampled record's, the
    two names side by side (see :func:`names_beside`).
    """
    _check_prediction(prediction)
    sampled = plain_id(sampled_record)
    removed = _unique_list(removed, "removed")
    added = _unique_list(added, "added")
    index = prediction.index
    pos = index.get_indexer([sampled])
    if pos[0] < 0:
        raise ReviewError(f"sampled record {sampled!r} is not in the prediction")
    cluster = prediction.iloc[pos[0]]
    in_cluster = prediction.to_numpy() == cluster
    if removed:
        rpos = index.get_indexer(removed)
        bad = [r for r, p in zip(removed, rpos, strict=True) if p < 0 or not in_cluster[p]]
        if bad:
            raise ReviewError(
                f"removed id(s) not in the predicted cluster {plain_id(cluster)!r} of {sampled!r}: "
                f"{examples(bad)}"
            )
        if sampled in set(removed):
            raise ReviewError(f"the sampled record {sampled!r} itself cannot be removed")
    issues: list[ReviewIssue] = []
    if added:
        apos = index.get_indexer(added)
        unknown = [a for a, p in zip(added, apos, strict=True) if p < 0]
        if unknown:
            raise ReviewError(f"added id(s) not in the population: {examples(unknown)}")
        both = [a for a in added if a in set(removed)]
        if both:
            raise ReviewError(f"id(s) both removed and added: {examples(both)}")
        already = tuple(a for a, p in zip(added, apos, strict=True) if in_cluster[p])
        if already:
            issues.append(
                ReviewIssue(
                    "already_in_cluster",
                    already,
                    f"added id(s) already in the predicted cluster {plain_id(cluster)!r}: "
                    f"{examples(already)}",
                )
            )
    if records is not None and added:
        table = names_beside(records, sampled, added, id_col=id_col, name_cols=name_cols)
        for row in table.itertuples(index=False):
            if not row.same_name:
                issues.append(
                    ReviewIssue(
                        "name",
                        (row.record_id,),
                        f"added {row.record_id!r} is named {row.name!r}; the sampled record "
                        f"{sampled!r} is {row.sampled_name!r}",
                    )
                )
    return issues


def names_beside(
    records: pd.DataFrame,
    sampled_record: Any,
    ids: Iterable,
    *,
    id_col: str | None = None,
    name_cols: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Names of ``ids`` beside the sampled record's name, for the reviewer to compare.

    ``records`` is indexed by record id, or has the ids in ``id_col``. ``name_cols``
    defaults to ``name_first, name_last`` (PatentsView) or ``name`` if present. Returns
    columns ``record_id, name, sampled_name, same_name`` (names compared case- and
    accent-insensitively, spaces collapsed).
    """
    table = records.set_index(id_col) if id_col is not None else records
    if name_cols is None:
        if {"name_first", "name_last"} <= set(table.columns):
            name_cols = ["name_first", "name_last"]
        elif "name" in table.columns:
            name_cols = ["name"]
        else:
            raise ReviewError(
                f"records: no name columns found among {list(table.columns)}; pass name_cols="
            )
    missing = [c for c in name_cols if c not in table.columns]
    if missing:
        raise ReviewError(f"records: name column(s) {missing} not found in {list(table.columns)}")
    ids = [plain_id(i) for i in ids]
    wanted = [plain_id(sampled_record), *ids]
    pos = table.index.get_indexer(wanted)
    unknown = [w for w, p in zip(wanted, pos, strict=True) if p < 0]
    if unknown:
        raise ReviewError(f"record id(s) not in the records table: {examples(unknown)}")
    parts = table.iloc[pos][list(name_cols)].astype(object).where(lambda f: f.notna(), "")
    names = [" ".join(str(v) for v in row if str(v)).strip() for row in parts.to_numpy()]
    folded = [_fold(n) for n in names]
    return pd.DataFrame(
        {
            "record_id": pd.Series(ids, dtype=object),
            "name": names[1:],
            "sampled_name": [names[0]] * len(ids),
            "same_name": [f == folded[0] for f in folded[1:]],
        }
    )


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(stripped.lower().split())


# -- reviewer assignment -------------------------------------------------------------------


def assign_reviewers(
    sampled_records: Iterable, reviewers: Sequence[str], *, seed: int
) -> pd.Series:
    """Split a sample among reviewers: a seeded random permutation dealt round-robin, so
    each reviewer gets ``n // k`` or ``n // k + 1`` records and the split is the same for
    the same seed. Returns a Series sampled record -> reviewer in the sample's order."""
    records = pd.Index([plain_id(r) for r in sampled_records])
    if len(records) == 0:
        raise ReviewError("no sampled records to assign")
    if records.has_duplicates:
        raise ReviewError(
            f"sampled records repeat: {examples(records[records.duplicated()].unique())}"
        )
    reviewers = list(reviewers)
    if not reviewers:
        raise ReviewError("no reviewers given")
    for name in reviewers:
        _check_reviewer(name)
    if len(set(reviewers)) != len(reviewers):
        raise ReviewError(f"reviewer names repeat: {reviewers}")
    order = np.random.default_rng(seed).permutation(len(records))
    who = np.empty(len(records), dtype=object)
    who[order] = np.array(reviewers, dtype=object)[np.arange(len(records)) % len(reviewers)]
    return pd.Series(who, index=records, name="reviewer")
