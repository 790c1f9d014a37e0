"""What a review is: the event record, its statuses and roles, errors, and id encoding."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from er_evaluation.errors import plain_id

#: Decision statuses: corrections made, predicted cluster confirmed, item skipped, and the
#: status of an undo event.
STATUSES = ("reviewed", "correct", "skipped", "undo")
#: Roles of a decision: a reviewer's own decision, or an adjudication that settles the
#: decisions of several reviewers on one sampled record.
ROLES = ("review", "adjudication")


class ReviewError(ValueError):
    """Invalid review input (ids not in the cluster or the population, a sheet with bad
    columns, nothing to undo, a file that is not a review store); the message names the
    offending ids, rows, columns or file."""


class StaleReviewError(ReviewError):
    """A save based on a view that is no longer current: since the reviewer's page was
    drawn, someone saved (or undid) a decision on the same sampled record. Nothing was
    written. ``current`` is the decision now in force (``None`` if it was undone) and
    ``based_on`` the event id the refused save was based on."""

    def __init__(self, message: str, *, current: ReviewEvent | None, based_on: int | None):
        super().__init__(message)
        self.current = current
        self.based_on = based_on


@dataclass(frozen=True)
class ReviewEvent:
    """One saved event. ``status`` is ``"reviewed"`` (records added or removed),
    ``"correct"`` (predicted cluster confirmed as is), ``"skipped"`` or ``"undo"``
    (``undoes`` then holds the id of the event it cancels). ``role`` is ``"review"`` or
    ``"adjudication"``. ``based_on`` is the event id of the decision the reviewer saw when
    saving (``None``: no decision was shown, or the save was not bound to a view)."""

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
    based_on: int | None = None
    role: str = "review"

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


def check_id(value: Any, what: str) -> str | int:
    """``value`` as a plain str or int id; anything else (tuples, floats, None, bool) is a
    :class:`ReviewError` naming ``what``: ids are stored as JSON and compared by value,
    so only types that round-trip exactly and hash are allowed."""
    value = plain_id(value)
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, float) and np.isnan(value) or value is None:
        raise ReviewError(f"{what} contains a missing id (None/NaN)")
    raise ReviewError(
        f"{what}: record and cluster ids must be str or int, got {type(value).__name__} {value!r}"
    )


def encode(value: Any) -> str:
    # JSON keeps 7 and "7" distinct, which plain TEXT columns would not.
    return json.dumps(value, ensure_ascii=False)


def key_of(sampled_record: Any) -> str:
    """Storage key of a sampled record id (validated)."""
    return encode(check_id(sampled_record, "sampled record"))
