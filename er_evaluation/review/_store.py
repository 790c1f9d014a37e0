"""The append-only SQLite store of review events.

Every save is an event appended to a SQLite database in WAL mode with
``synchronous=FULL`` and one transaction per event, so a save that returned survives a
browser refresh, a killed process, or a second reviewer writing at the same moment
(SQLite serialises writers; ``busy_timeout`` makes the second one wait instead of fail).
Triggers forbid UPDATE and DELETE on the events table: undo is itself an event that
points at the decision it cancels, so the full history is always there. Decisions in
force, true clusters and exports are derived from the events (see ``_replay``).

A save can be bound to what the reviewer saw (``based_on``): it is refused with
:class:`StaleReviewError` when the decision it was based on is no longer the one in force,
checked and appended under one write lock, so two reviewers can never silently overwrite
each other.
"""

from __future__ import annotations

import os
import random
import sqlite3
import time
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from er_evaluation.errors import suggest
from er_evaluation.io import write_membership
from er_evaluation.review import _replay
from er_evaluation.review._checks import (
    ValidReview,
    check_one_id_type,
    check_reviewer,
    id_kind,
    validate_review,
)
from er_evaluation.review._model import (
    ReviewError,
    ReviewEvent,
    StaleReviewError,
    encode,
    key_of,
)
from er_evaluation.review._sheet import parse_sheet

_SCHEMA_VERSION = 2
# Each statement runs on its own inside one write transaction (DDL is transactional in
# SQLite), so two processes creating or migrating one file at once cannot interleave.
_CREATE = (
    """CREATE TABLE events (
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
    )""",
    "CREATE INDEX events_by_record ON events (sampled_record, event_id)",
    """CREATE TRIGGER events_no_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'review events are append-only: UPDATE is not allowed'); END""",
    """CREATE TRIGGER events_no_delete BEFORE DELETE ON events
    BEGIN SELECT RAISE(ABORT, 'review events are append-only: DELETE is not allowed'); END""",
)
# Version 2 adds what a save was based on and adjudications; ADD COLUMN leaves the
# version-1 events as they are (based_on NULL, role 'review').
_V2 = (
    "ALTER TABLE events ADD COLUMN based_on INTEGER REFERENCES events (event_id)",
    "ALTER TABLE events ADD COLUMN role TEXT NOT NULL DEFAULT 'review' "
    "CHECK (role IN ('review', 'adjudication'))",
)
COLUMNS = (
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
    "based_on",
    "role",
)
#: ``based_on`` value for a save not bound to a view (scripts, sheet imports): it replaces
#: whatever decision is in force without checking.
UNCHECKED = "unchecked"


class ReviewStore:
    """Append-only store of review events in a SQLite file (created if absent).

    Each call opens its own short-lived connection, so one store object may be used from
    several threads (Streamlit sessions) and several processes may open the same file.
    ``timeout`` (seconds) is SQLite's busy timeout: how long a writer waits for another.
    A file that is not a review store (another SQLite database with tables of its own, a
    corrupt file, a text file) is refused with a :class:`ReviewError` naming it, and left
    untouched.
    """

    def __init__(self, path: str | os.PathLike, *, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.timeout = float(timeout)
        if self.path.is_dir():
            raise ReviewError(f"{self.path}: is a folder, not a review store file")
        # a store in a folder (or a file) that cannot be written is opened for reading only:
        # a read-only copy of a project can still be read, and writing to it is refused
        self.read_only = self.path.exists() and not (
            os.access(self.path, os.W_OK) and os.access(self.path.parent, os.W_OK | os.X_OK)
        )
        if not self.read_only:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise ReviewError(f"{self.path}: cannot create its folder: {err}") from err
        with self._connect() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > _SCHEMA_VERSION:
                raise ReviewError(
                    f"{self.path}: review store schema version {version} is newer than this "
                    f"library understands ({_SCHEMA_VERSION})"
                )
            if version == _SCHEMA_VERSION:
                return
            if self.read_only:
                raise ReviewError(
                    f"{self.path}: is read-only and in an older format (version {version}) "
                    "that must be upgraded on open: copy the project to a folder you can write"
                )
            # Checked again under the write lock: another process may have just done it.
            conn.execute("BEGIN IMMEDIATE")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version == _SCHEMA_VERSION:
                conn.execute("COMMIT")
                return
            tables = [
                r[0]
                for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND name NOT LIKE 'sqlite_%'"
                )
            ]
            if version == 0 and tables:
                raise ReviewError(
                    f"{self.path}: is an SQLite database with tables of its own {tables} but "
                    "not a review store; choose another file (nothing was changed)"
                )
            for statement in (_CREATE if version == 0 else ()) + _V2:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
            conn.execute("COMMIT")

    def __repr__(self) -> str:
        return f"ReviewStore({str(self.path)!r})"

    def _connect(self, *, write: bool = False) -> _Connection:
        if write and self.read_only:
            raise ReviewError(
                f"{self.path}: the review store is read-only here (the file or its folder "
                "cannot be written): nothing was saved"
            )
        return _Connection(self.path, self.timeout, read_only=self.read_only)

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
        based_on: int | None | str = UNCHECKED,
        independent: bool = False,
        adjudication: bool = False,
        after: int = 0,
    ) -> ReviewEvent:
        """Append one review decision and return it once it is durably committed.

        The decision is checked by :func:`~er_evaluation.review.validate_review`
        (``shown_records`` is the predicted cluster as shown). Population checks (do
        added ids exist?) need the prediction: see :func:`check_review`.

        ``based_on`` binds the save to what the reviewer saw: the event id of the decision
        shown on their page, or ``None`` when none was shown. If the decision now in force
        is another one, nothing is written and :class:`StaleReviewError` is raised (a
        second save on purpose passes the new ``based_on``). With ``independent=True``
        (double review, blind) the comparison is with the reviewer's own latest decision
        on the record and others' decisions do not count. ``adjudication=True`` records
        the final decision that settles several reviewers' decisions. The default
        ``based_on=UNCHECKED`` replaces whatever is in force (scripts, imports). ``after``:
        only decisions saved after that event count as "in force" (a sample drawn later
        than earlier decisions, :class:`~er_evaluation.review.SampleSettings`).
        """
        valid = validate_review(
            sampled_record=sampled_record,
            removed=removed,
            added=added,
            status=status,
            shown_records=shown_records,
            predicted_cluster=predicted_cluster,
        )
        fields = _fields(
            valid,
            check_reviewer(reviewer),
            notes,
            version,
            "adjudication" if adjudication else "review",
        )
        if based_on != UNCHECKED:
            if based_on is not None and (
                isinstance(based_on, bool) or not isinstance(based_on, int)
            ):
                raise ReviewError(f"based_on must be an event id or None, got {based_on!r}")
            if independent and adjudication:
                raise ReviewError("an adjudication cannot be independent of the reviews it settles")
        with self._connect(write=True) as conn:
            conn.execute("BEGIN IMMEDIATE")  # check and append under one write lock
            _check_id_kind(conn, [valid.sampled_record])
            if based_on != UNCHECKED:
                events = _decoded(
                    conn,
                    "WHERE sampled_record = ? AND event_id > ?",
                    (fields["sampled_record"], after),
                )
                if independent:
                    mine = [
                        e for e in _replay.own_decisions(events) if e.reviewer == fields["reviewer"]
                    ]
                    shown = mine[-1] if mine else None
                else:
                    found = _replay.current(events)
                    shown = found[0] if found else None
                now = None if shown is None else shown.event_id
                if now != based_on:
                    conn.execute("ROLLBACK")
                    raise StaleReviewError(
                        _stale_message(valid.sampled_record, based_on, shown),
                        current=shown,
                        based_on=based_on,
                    )
                fields["based_on"] = based_on
            event = _insert(conn, fields)
            conn.execute("COMMIT")
        return event

    def undo(
        self,
        *,
        reviewer: str,
        sampled_record: Any,
        event_id: int | None = None,
        confirm_other: bool = False,
    ) -> ReviewEvent:
        """Append an undo event cancelling a decision on ``sampled_record``.

        Without ``event_id``: ``reviewer``'s own latest effective decision on the record
        (the decision in force then falls back to the one before). With ``event_id``: that
        decision, which must be effective; undoing another reviewer's decision needs
        ``confirm_other=True``. Raises :class:`ReviewError` when there is nothing to undo,
        naming whose decision is in force.
        """
        reviewer = check_reviewer(reviewer)
        key = key_of(sampled_record)
        with self._connect(write=True) as conn:
            conn.execute("BEGIN IMMEDIATE")  # read and append under one write lock
            events = _replay.effective(_decoded(conn, "WHERE sampled_record = ?", (key,)))
            if event_id is None:
                mine = [e for e in events if e.reviewer == reviewer]
                if not mine:
                    conn.execute("ROLLBACK")
                    others = sorted({e.reviewer for e in events})
                    detail = (
                        f"; its decision is by {', '.join(others)} (undo theirs explicitly)"
                        if others
                        else ""
                    )
                    raise ReviewError(
                        f"nothing to undo: sampled record {_plain(key)!r} has no saved "
                        f"review by {reviewer}{detail}"
                    )
                target = mine[-1]
            else:
                found = [e for e in events if e.event_id == event_id]
                if not found:
                    conn.execute("ROLLBACK")
                    raise ReviewError(
                        f"nothing to undo: event {event_id} is not an effective decision on "
                        f"sampled record {_plain(key)!r}"
                    )
                target = found[0]
                if target.reviewer != reviewer and not confirm_other:
                    conn.execute("ROLLBACK")
                    raise ReviewError(
                        f"event {event_id} on {_plain(key)!r} was saved by {target.reviewer}, "
                        f"not {reviewer}: confirm to undo someone else's decision"
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
                "undoes": target.event_id,
                "based_on": None,
                "role": target.role,
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
        status_col: str | None = "status",
        members_col: str | None = "cluster_records",
        reviewer: str | None = None,
        version: str | None = None,
        reviewers: Sequence[str] | None = None,
        items: Iterable | None = None,
        after: int = 0,
    ) -> list[ReviewEvent]:
        """Import an existing add/remove review sheet (PatentsView's spreadsheet practice).

        See :func:`~er_evaluation.review.parse_sheet` for the columns and checks (and
        ``reviewers`` and ``items``, the names and sampled records allowed); every
        problem is reported together naming rows and ids and nothing is written unless
        every row is valid. The rows are then appended in one transaction (all or
        nothing), unbound (each replaces the decision in force on its record), except a
        row that repeats its reviewer's own latest decision on the record (among the
        events after ``after``) as it is: a sheet imported twice saves nothing twice.
        Returns the events written.
        """
        rows = parse_sheet(
            frame,
            prediction=prediction,
            sampled_col=sampled_col,
            cluster_col=cluster_col,
            remove_col=remove_col,
            add_col=add_col,
            reviewer_col=reviewer_col,
            notes_col=notes_col,
            status_col=status_col,
            members_col=members_col,
            reviewer=reviewer,
            reviewers=reviewers,
            items=items,
        )
        return self.import_rows(rows, version=version, after=after)

    def import_rows(
        self,
        rows: Sequence[tuple[ValidReview, str, str]],
        *,
        version: str | None = None,
        after: int = 0,
    ) -> list[ReviewEvent]:
        """Append the ``(decision, reviewer, notes)`` rows of a parsed review sheet
        (:func:`~er_evaluation.review.parse_sheet`) as :meth:`import_sheet` does: in one
        transaction, unbound, except a row repeating its reviewer's own latest decision on
        the record (among the events after ``after``) as it is. Returns the events
        written."""
        fields = [_fields(valid, who, note, version, "review") for valid, who, note in rows]
        with self._connect(write=True) as conn:
            conn.execute("BEGIN IMMEDIATE")
            _check_id_kind(conn, [valid.sampled_record for valid, _, _ in rows])
            own = {
                (encode(e.sampled_record), e.reviewer): _same_decision(e)
                for e in _replay.own_decisions(
                    _decoded(conn, "WHERE event_id > ?", (_check_after(after),))
                )
            }
            events = [
                _insert(conn, f)
                for f in fields
                if own.get((f["sampled_record"], f["reviewer"])) != _same_decision(f)
            ]
            conn.execute("COMMIT")
        return events

    # reading

    def _events(self, where: str = "", params: tuple = (), *, after: int = 0) -> list[ReviewEvent]:
        after = _check_after(after)
        clause = f"{where} AND event_id > ?" if where else "WHERE event_id > ?"
        with self._connect() as conn:
            return _decoded(conn, clause, (*params, after))

    def last_event_id(self) -> int:
        """The id of the latest event (0 when the store is empty)."""
        with self._connect() as conn:
            return int(conn.execute("SELECT COALESCE(MAX(event_id), 0) FROM events").fetchone()[0])

    def events(self, *, after: int = 0) -> pd.DataFrame:
        """The full history, one row per event in save order (undo events included), with
        columns ``event_id, created_at`` (UTC), ``reviewer, status, sampled_record,
        predicted_cluster, version, shown_records, added, removed`` (tuples), ``notes,
        undoes, based_on, role``. ``after``: only the events saved after that event id
        (here and in every reading method)."""
        return events_frame(self._events(after=after))

    def event_list(self, *, after: int = 0) -> list[ReviewEvent]:
        """The full history as :class:`ReviewEvent` objects, in save order."""
        return self._events(after=after)

    def history(self, sampled_record: Any, *, after: int = 0) -> list[ReviewEvent]:
        """Every event on one sampled record, in save order."""
        return self._events("WHERE sampled_record = ?", (key_of(sampled_record),), after=after)

    def decisions(self, *, reviewer: str | None = None, after: int = 0) -> pd.DataFrame:
        """Decision in force per sampled record after undos (an adjudication if there is
        one, else the latest review), one row per sampled record (records whose every
        decision was undone are absent), ordered by when it was saved. With ``reviewer``,
        that reviewer's own decision replaces it where they made one. Same columns as
        :meth:`events` plus ``true_cluster``."""
        chosen = self._chosen(reviewer, after)
        frame = events_frame(chosen)
        frame["true_cluster"] = pd.Series([e.true_cluster for e in chosen], dtype=object)
        return frame

    def own_decisions(self, *, after: int = 0) -> pd.DataFrame:
        """Each reviewer's own latest effective review per sampled record (double review):
        columns of :meth:`events` plus ``true_cluster``."""
        chosen = _replay.own_decisions(self._events(after=after))
        frame = events_frame(chosen)
        frame["true_cluster"] = pd.Series([e.true_cluster for e in chosen], dtype=object)
        return frame

    def decision(
        self, sampled_record: Any, *, reviewer: str | None = None, after: int = 0
    ) -> ReviewEvent | None:
        """Decision in force for one sampled record (or ``reviewer``'s own latest review
        of it), or None."""
        events = self.history(sampled_record, after=after)
        if reviewer is not None:
            own = [e for e in _replay.own_decisions(events) if e.reviewer == reviewer]
            return own[-1] if own else None
        found = _replay.current(events)
        return found[0] if found else None

    def reviewed_records(self, *, include_skipped: bool = False, after: int = 0) -> set:
        """Sampled records with a decision in force (skipped ones only if asked)."""
        return {
            e.sampled_record
            for e in _replay.current(self._events(after=after))
            if include_skipped or e.status != "skipped"
        }

    def _chosen(self, reviewer: str | None, after: int = 0) -> list[ReviewEvent]:
        events = self._events(after=after)
        if reviewer is None:
            return _replay.current(events)
        reviewer = check_reviewer(reviewer)
        known = sorted({e.reviewer for e in _replay.own_decisions(events)})
        if reviewer not in known:
            # a mistyped name would silently give the benchmark of everyone's decisions
            raise ReviewError(
                f"{self.path}: no decision by reviewer {reviewer!r}"
                f"{suggest([reviewer], known)}; the reviewers are "
                f"{', '.join(map(repr, known)) or 'none yet'}"
            )
        return _replay.with_reviewer(events, reviewer)

    def true_clusters(self, *, reviewer: str | None = None, after: int = 0) -> pd.Series:
        """Membership vector of the reviewed benchmark derived from the decisions in force
        (with ``reviewer``: under that reviewer's own decisions where they made one).

        Each non-skipped decision gives a true cluster (shown - removed + added). Clusters
        that share a record are the same entity and are merged (connected components of
        the sampled record linked to each member, via
        :func:`~er_evaluation.clustering.from_pairs`). A merged cluster is labelled with
        the sampled record of its earliest decision. See :meth:`conflicts` for decisions
        that the merge contradicts. Raises :class:`ReviewError` when there is no decision.
        """
        return _replay.derive(self._chosen(reviewer, after))[0]

    def conflicts(self, *, after: int = 0) -> pd.DataFrame:
        """Decisions that contradict each other, one row each, column ``kind``:

        - ``"merged_back"``: a decision removed ``record`` from its sampled record's
          entity but another decision's true cluster puts it back (``cluster`` the merged
          cluster id, ``included_by`` the sampled records whose true cluster holds it);
        - ``"reviewers_disagree"``: two reviewers' own decisions on ``sampled_record``
          give different true clusters, neither was saved over the other, and no
          adjudication settles them (``reviewer, event_id`` and ``other_reviewer,
          other_event_id``).

        Empty when consistent."""
        events = self._events(after=after)
        decided = [e for e in _replay.current(events) if e.status != "skipped"]
        merged = _replay.derive(decided)[1] if decided else _replay.conflict_frame([])
        parts = [f for f in (merged, _replay.disagreements(events)) if len(f)]
        if not parts:
            return _replay.conflict_frame([])
        return pd.concat(parts, ignore_index=True)

    def export(
        self, path: str | os.PathLike, *, reviewer: str | None = None, after: int = 0
    ) -> Path:
        """Write :meth:`true_clusters` as a membership file (CSV or Parquet by suffix,
        atomically, with the permissions the user's umask gives a new file) with columns
        ``record_id, cluster_id``, readable by :func:`er_evaluation.io.read_membership`.
        CSV stores ids as text; use Parquet to keep integer ids integers. (A project's
        benchmark, the one its estimates use, is written by
        :meth:`~er_evaluation.review.Project.export`.)"""
        return write_membership(self.true_clusters(reviewer=reviewer, after=after), path)


def _check_after(after: Any) -> int:
    if isinstance(after, bool) or not isinstance(after, int) or after < 0:
        raise ReviewError(f"after must be an event id >= 0, got {after!r}")
    return after


def _plain(key: str) -> Any:
    import json

    return json.loads(key)


def _stale_message(sampled: Any, based_on: int | None, shown: ReviewEvent | None) -> str:
    seen = "no decision" if based_on is None else f"decision {based_on}"
    if shown is None:
        now = "that decision has since been undone"
    else:
        now = f"{shown.reviewer} saved decision {shown.event_id} ({shown.status}) since"
    return f"not saved: your view of {sampled!r} showed {seen}, but {now}"


class _Connection:
    """A fresh connection per operation with the durability pragmas set; any SQLite error
    becomes a :class:`ReviewError` naming the file. ``read_only``: opened for reading
    (``mode=ro``), or, when SQLite cannot make the shared-memory file a WAL database
    needs for reading in a folder it cannot write, as an immutable file, which is only
    done when no write-ahead log holds committed events the file itself lacks."""

    def __init__(self, path: Path, timeout: float, *, read_only: bool = False) -> None:
        self.path = path
        if read_only or _read_only(path):
            self.conn = _open_read_only(path, timeout)
            return
        try:
            self.conn = sqlite3.connect(path, timeout=timeout, isolation_level=None)
        except sqlite3.Error as err:
            raise ReviewError(f"{path}: cannot open the review store: {err}") from err
        try:
            self.conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            mode = self.conn.execute("PRAGMA journal_mode").fetchone()[0]
            if mode.lower() != "wal":
                mode = _switch_to_wal(self.conn, timeout)
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

    def __exit__(self, kind, error, traceback) -> None:
        try:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
        finally:
            self.conn.close()
        if isinstance(error, sqlite3.IntegrityError):
            return None  # the append-only triggers: a caller bypassing the store's API
        if isinstance(error, sqlite3.Error):
            raise ReviewError(
                f"{self.path}: the review store cannot be read or written ({error}); if the "
                "file is damaged, restore it from a copy"
            ) from error
        return None


def _read_only(path: Path) -> bool:
    """An existing store that this process may not change: the file, or its folder (where
    SQLite keeps the write-ahead log beside it), is not writable."""
    return path.exists() and not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))


def _open_read_only(path: Path, timeout: float) -> sqlite3.Connection:
    """A read-only connection to a store in a folder this process cannot write (a shared
    or archived project): with the write-ahead log and its index present, SQLite reads
    through them; without a log, everything is in the file and it is opened as immutable
    (SQLite then creates no index file beside it)."""
    log, index = Path(f"{path}-wal"), Path(f"{path}-shm")
    if log.exists() and log.stat().st_size > 0 and not index.exists():
        raise ReviewError(
            f"{path}: the store is read-only here and its write-ahead log has no index file "
            f"beside it; open it once where it can be written (its owner), then read it here"
        )
    mode = "mode=ro" if log.exists() and log.stat().st_size > 0 else "immutable=1"
    try:
        conn = sqlite3.connect(
            f"{path.resolve().as_uri()}?{mode}", uri=True, timeout=timeout, isolation_level=None
        )
        conn.execute("PRAGMA user_version").fetchone()
    except sqlite3.Error as err:
        raise ReviewError(
            f"{path}: cannot open the read-only review store (is it a review store file?): {err}"
        ) from err
    return conn


def _switch_to_wal(conn: sqlite3.Connection, timeout: float) -> str:
    """Set WAL mode, waiting up to ``timeout`` seconds for other connections: the switch
    needs an exclusive lock, and SQLite reports "database is locked" at once, without its
    busy handler, while another connection holds a shared lock (several first opens of an
    old store at the same time)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() > deadline:
                raise
            time.sleep(random.uniform(0.005, 0.05))


def _fields(valid: ValidReview, reviewer: str, notes: Any, version: Any, role: str) -> dict:
    if not isinstance(notes, str):
        raise ReviewError(f"notes must be text, got {type(notes).__name__}")
    return {
        "reviewer": reviewer,
        "status": valid.status,
        "sampled_record": encode(valid.sampled_record),
        "predicted_cluster": None
        if valid.predicted_cluster is None
        else encode(valid.predicted_cluster),
        "version": None if version is None else str(version),
        "shown_records": encode(list(valid.shown_records)),
        "added": encode(list(valid.added)),
        "removed": encode(list(valid.removed)),
        "notes": notes,
        "undoes": None,
        "based_on": None,
        "role": role,
    }


def _same_decision(event: ReviewEvent | dict) -> tuple:
    """What makes two reviews of one record by one reviewer the same decision: status,
    removed and added ids (as sets), notes and version."""
    get = event.get if isinstance(event, dict) else lambda name: getattr(event, name)
    ids = [get(name) for name in ("removed", "added")]
    ids = [_plain(v) if isinstance(v, str) else v for v in ids]
    return (
        get("status"),
        frozenset(map(encode, ids[0])),
        frozenset(map(encode, ids[1])),
        get("notes"),
        get("version"),
    )


def _check_id_kind(conn: sqlite3.Connection, sampled: list) -> None:
    """Refuse (nothing written) decisions whose record ids are not of the kind, text or
    number, of the store's first decision: a store holding both could not be exported."""
    row = conn.execute("SELECT sampled_record FROM events ORDER BY event_id LIMIT 1").fetchone()
    first = [_plain(row[0])] if row is not None else []
    try:
        check_one_id_type([*first, *sampled])
    except ReviewError as error:
        conn.execute("ROLLBACK")
        stored = (
            f"; the store's records are {id_kind(first[0])}s, e.g. {first[0]!r}" if first else ""
        )
        raise ReviewError(f"{error}{stored}") from None


def _insert(conn: sqlite3.Connection, fields: dict) -> ReviewEvent:
    created = datetime.now(timezone.utc).isoformat(timespec="microseconds")
    row = (created, *(fields[c] for c in COLUMNS[2:]))
    cursor = conn.execute(
        f"INSERT INTO events ({', '.join(COLUMNS[1:])}) VALUES ({', '.join('?' * len(row))})",
        row,
    )
    return _decode_row((cursor.lastrowid, *row))


def _decoded(conn: sqlite3.Connection, where: str = "", params: tuple = ()) -> list[ReviewEvent]:
    rows = conn.execute(
        f"SELECT {', '.join(COLUMNS)} FROM events {where} ORDER BY event_id", params
    ).fetchall()
    return [_decode_row(r) for r in rows]


def _decode_row(row: tuple) -> ReviewEvent:
    import json

    values = dict(zip(COLUMNS, row, strict=True))
    cluster = values["predicted_cluster"]
    return ReviewEvent(
        event_id=int(values["event_id"]),
        created_at=values["created_at"],
        reviewer=values["reviewer"],
        status=values["status"],
        sampled_record=json.loads(values["sampled_record"]),
        predicted_cluster=None if cluster is None else json.loads(cluster),
        version=values["version"],
        shown_records=tuple(json.loads(values["shown_records"])),
        added=tuple(json.loads(values["added"])),
        removed=tuple(json.loads(values["removed"])),
        notes=values["notes"],
        undoes=None if values["undoes"] is None else int(values["undoes"]),
        based_on=None if values["based_on"] is None else int(values["based_on"]),
        role=values["role"],
    )


def events_frame(events: Sequence[ReviewEvent]) -> pd.DataFrame:
    """Events as a DataFrame, one column per :class:`ReviewEvent` field."""
    frame = pd.DataFrame(
        {c: pd.Series([getattr(e, c) for e in events], dtype=object) for c in COLUMNS}
    )
    frame["event_id"] = frame["event_id"].astype("int64")
    frame["created_at"] = pd.to_datetime(frame["created_at"], utc=True, format="ISO8601")
    frame["undoes"] = frame["undoes"].astype("Int64")
    frame["based_on"] = frame["based_on"].astype("Int64")
    for col in ("reviewer", "status", "notes", "version", "role"):
        frame[col] = frame[col].astype(object)
    return frame
