"""Reviewers' unsaved edits (drafts), kept so that a reload or a restart loses nothing.

A draft is what a reviewer ticked, added and wrote on one item before saving: it is not
a decision and never counts as one. It lives in its own small SQLite file beside the
review store (one row per reviewer and item, replaced on every edit, removed when the
decision is saved or the draft discarded), so the store stays append-only.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from er_evaluation.review._checks import unique_ids
from er_evaluation.review._model import ReviewError, encode, key_of

_CREATE = """CREATE TABLE IF NOT EXISTS drafts (
    reviewer TEXT NOT NULL,
    sampled_record TEXT NOT NULL,
    removed TEXT NOT NULL,
    added TEXT NOT NULL,
    notes TEXT NOT NULL,
    based_on INTEGER,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (reviewer, sampled_record)
)"""


@dataclass(frozen=True)
class Draft:
    """A reviewer's unsaved edit of one item: ticks (``removed``), ``added`` records and
    ``notes``, and the decision it was started from (``based_on``: an event id, or None
    when no decision was shown). ``updated_at``: when it was last changed (UTC)."""

    removed: tuple = ()
    added: tuple = ()
    notes: str = ""
    based_on: int | None = None
    updated_at: str = field(default="", compare=False)

    @property
    def empty(self) -> bool:
        return not (self.removed or self.added or self.notes)


class Drafts:
    """The drafts file of a project (created on the first write; reading a missing or
    read-only file gives no drafts)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    def _connect(self, *, write: bool) -> sqlite3.Connection | None:
        if not write and not self.path.exists():
            return None
        try:
            if write:
                conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
                conn.execute("PRAGMA synchronous = FULL")
                conn.execute(_CREATE)
            else:
                conn = sqlite3.connect(f"{self.path.as_uri()}?mode=ro", uri=True, timeout=30)
            return conn
        except sqlite3.Error as err:
            raise ReviewError(f"{self.path}: cannot keep drafts here: {err}") from err

    def put(self, reviewer: str, sampled_record: Any, draft: Draft) -> Draft:
        """Keep ``draft`` as ``reviewer``'s edit of ``sampled_record`` (replacing theirs)."""
        key = key_of(sampled_record)
        removed = unique_ids(draft.removed, "removed")
        added = unique_ids(draft.added, "added")
        stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
        conn = self._connect(write=True)
        try:
            conn.execute(
                "INSERT OR REPLACE INTO drafts VALUES (?, ?, ?, ?, ?, ?, ?)",
                (reviewer, key, encode(list(removed)), encode(list(added)), draft.notes,
                 draft.based_on, stamp),
            )  # fmt: skip
        except sqlite3.Error as err:
            raise ReviewError(f"{self.path}: cannot keep the draft: {err}") from err
        finally:
            conn.close()
        return Draft(removed, added, draft.notes, draft.based_on, stamp)

    def get(self, reviewer: str, sampled_record: Any) -> Draft | None:
        """``reviewer``'s draft of ``sampled_record``, or None."""
        rows = self._rows(
            "WHERE reviewer = ? AND sampled_record = ?", (reviewer, key_of(sampled_record))
        )
        return rows[0][1] if rows else None

    def of(self, reviewer: str) -> dict[Any, Draft]:
        """Every draft of ``reviewer``, by sampled record."""
        return dict(self._rows("WHERE reviewer = ?", (reviewer,)))

    def discard(self, reviewer: str, sampled_record: Any) -> None:
        """Forget ``reviewer``'s draft of ``sampled_record`` (nothing to forget is fine)."""
        if not self.path.exists():
            return
        conn = self._connect(write=True)
        try:
            conn.execute(
                "DELETE FROM drafts WHERE reviewer = ? AND sampled_record = ?",
                (reviewer, key_of(sampled_record)),
            )
        except sqlite3.Error as err:
            raise ReviewError(f"{self.path}: cannot discard the draft: {err}") from err
        finally:
            conn.close()

    def clear(self) -> None:
        """Forget every draft (a new queue was drawn: they were edits of the old one)."""
        if not self.path.exists():
            return
        conn = self._connect(write=True)
        try:
            conn.execute("DELETE FROM drafts")
        except sqlite3.Error as err:
            raise ReviewError(f"{self.path}: cannot clear drafts: {err}") from err
        finally:
            conn.close()

    def _rows(self, where: str, params: tuple) -> list[tuple[Any, Draft]]:
        conn = self._connect(write=False)
        if conn is None:
            return []
        try:
            rows = conn.execute(
                "SELECT sampled_record, removed, added, notes, based_on, updated_at "
                f"FROM drafts {where}",
                params,
            ).fetchall()
        except sqlite3.OperationalError as err:
            if "no such table" in str(err):
                return []
            raise ReviewError(f"{self.path}: cannot read drafts: {err}") from err
        finally:
            conn.close()
        return [
            (json.loads(key), Draft(tuple(json.loads(r)), tuple(json.loads(a)), n, b, t))
            for key, r, a, n, b, t in rows
        ]
