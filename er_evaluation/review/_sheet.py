"""Parsing an add/remove review sheet (PatentsView's spreadsheet practice) into decisions."""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from er_evaluation.errors import examples, plain_id
from er_evaluation.io import read_table
from er_evaluation.review._checks import (
    ValidReview,
    check_prediction,
    check_reviewer,
    find_reviewer,
    validate_review,
)
from er_evaluation.review._model import ReviewError, encode

_SPLIT = re.compile(r"[,;\s]+")
_MAX_SHOWN_ERRORS = 20


def parse_sheet(
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
    reviewers: Sequence[str] | None = None,
    items: Iterable | None = None,
) -> list[tuple[ValidReview, str, str]]:
    """Validated ``(decision, reviewer, notes)`` per row of a review sheet.

    Expected columns (names configurable): ``sampled_col`` the sampled record id;
    ``cluster_col`` the predicted cluster id it was reviewed in (optional; when given it
    must equal ``prediction[sampled]``); ``remove_col`` and ``add_col`` record ids
    separated by commas, semicolons or whitespace (empty = none; an id given twice in a
    cell is refused); optional ``reviewer_col`` (else ``reviewer=`` is used for every row)
    and ``notes_col``. The shown records are the sampled record's cluster in
    ``prediction``; an optional ``members_col`` (``er-eval review sheet`` writes them
    there) must still list them, so that an edit of that column is not mistaken for a
    decision. Optional ``status_col``: ``correct`` (nothing to change), ``skipped``, or
    ``reviewed`` (records removed or added; the default when ``remove`` or ``add`` is
    filled in); a sheet with this column must say it on every row, since a row left
    blank there and in ``remove`` and ``add`` may be one nobody reviewed yet. Without it
    a blank row is a decision that the cluster is correct (PatentsView's practice).

    Every row is checked by :func:`~er_evaluation.review.validate_review` against the
    prediction; all problems are reported together in one :class:`ReviewError`, one per
    line, each naming the row (its index label: :func:`read_sheet` numbers rows as a
    spreadsheet does), the column and the ids. ``reviewers``: the names allowed (case
    ignored; the listed spelling is kept); ``items``: the sampled records a row may review
    (a project's queue).
    """
    if not isinstance(frame, pd.DataFrame):
        raise ReviewError(f"review sheet must be a DataFrame, got {type(frame).__name__}")
    prediction = check_prediction(prediction)
    allowed = None if items is None else {encode(plain_id(i)) for i in items}
    missing = [c for c in (sampled_col, remove_col, add_col) if c not in frame.columns]
    if missing:
        raise ReviewError(
            f"review sheet: missing column(s) {missing}; columns are {list(frame.columns)} "
            "(set sampled_col=, remove_col=, add_col= to map yours)"
        )
    cluster_col, reviewer_col, notes_col, status_col, members_col = (
        c if c is not None and c in frame.columns else None
        for c in (cluster_col, reviewer_col, notes_col, status_col, members_col)
    )
    if reviewer_col is None and not reviewer:
        raise ReviewError(
            "review sheet has no reviewer column; pass reviewer= to attribute the rows"
        )
    if len(frame) == 0:
        raise ReviewError("review sheet is empty")

    parse = _id_parser(prediction.index)
    errors: list[str] = []
    rows: list[tuple[ValidReview, str, str]] = []
    seen: dict[Any, Any] = {}
    for label, row in frame.iterrows():
        where = f"row {label!r}"
        try:
            if _isna(row[sampled_col]):
                raise ReviewError(f"no sampled record id in column {sampled_col!r}")
            sampled = parse(row[sampled_col], sampled_col)
            where = f"row {label!r} ({sampled_col} {sampled!r})"
            if sampled in seen:
                raise ReviewError(
                    f"column {sampled_col!r}: the record has a row already (row "
                    f"{seen[sampled]!r}); one row per sampled record"
                )
            if allowed is not None and encode(sampled) not in allowed:
                raise ReviewError("not an item of the review queue")
            seen[sampled] = label
            removed = _split_ids(row[remove_col], parse, remove_col)
            added = _split_ids(row[add_col], parse, add_col)
            status = _status(row, status_col, bool(removed or added), remove_col, add_col)
            valid = validate_review(
                sampled_record=sampled,
                removed=removed,
                added=added,
                status=status,
                prediction=prediction,
                columns=(remove_col, add_col),
            )
            if cluster_col is not None and not _isna(row[cluster_col]):
                if str(plain_id(row[cluster_col])) != str(valid.predicted_cluster):
                    raise ReviewError(
                        f"{cluster_col!r} is {plain_id(row[cluster_col])!r} but the prediction "
                        f"puts the record in cluster {valid.predicted_cluster!r}"
                    )
            if members_col is not None:
                _check_members(row[members_col], parse, valid, members_col, remove_col)
            who = reviewer
            if reviewer_col is not None and not _isna(row[reviewer_col]):
                who = str(row[reviewer_col])
            if not who:
                raise ReviewError(f"no reviewer in column {reviewer_col!r} and no reviewer=")
            note = "" if notes_col is None or _isna(row[notes_col]) else str(row[notes_col])
            who = check_reviewer(who)
            if reviewers is not None:
                who = find_reviewer(who, reviewers)
            rows.append((valid, who, note))
        except ReviewError as err:
            errors.append(f"{where}: {err}")
    if errors:
        shown = "\n  ".join(errors[:_MAX_SHOWN_ERRORS])
        more = len(errors) - _MAX_SHOWN_ERRORS
        tail = f"\n  (and {more} more)" if more > 0 else ""
        raise ReviewError(
            f"review sheet: {len(errors)} invalid row(s), nothing imported:\n  {shown}{tail}"
        )
    return rows


_SHEET_STATUSES = ("correct", "reviewed", "skipped")


def _status(row: pd.Series, column: str | None, changed: bool, remove: str, add: str):
    """The status a row states (None: the default of :func:`validate_review`)."""
    if column is None:
        return None
    if _isna(row[column]) or not str(row[column]).strip():
        if changed:
            return "reviewed"
        raise ReviewError(
            f"no decision: column {column!r} is empty and so are {remove!r} and {add!r}; "
            f"write correct (nothing to change) or skipped in {column!r}, or delete the row "
            "if it is not reviewed yet"
        )
    status = str(row[column]).strip().casefold()
    if status not in _SHEET_STATUSES:
        raise ReviewError(
            f"column {column!r}: {row[column]!r} is not one of {', '.join(_SHEET_STATUSES)}"
        )
    if status == "reviewed" and not changed:
        raise ReviewError(
            f"column {column!r} says reviewed but {remove!r} and {add!r} are empty; write "
            "correct if nothing changes"
        )
    return status


def _check_members(cell: Any, parse, valid: ValidReview, column: str, remove: str) -> None:
    """The sheet's copy of the shown records must be unchanged: removing a record there
    instead of in ``remove`` would otherwise be imported as "correct"."""
    if _isna(cell) or not str(cell).strip():
        return
    listed = _split_ids(cell, parse, column)
    shown = set(valid.shown_records)
    dropped = [r for r in valid.shown_records if r not in set(listed)]
    extra = [r for r in listed if r not in shown]
    if dropped or extra:
        parts = ([f"missing {examples(dropped)}"] if dropped else []) + (
            [f"not in the cluster: {examples(extra)}"] if extra else []
        )
        raise ReviewError(
            f"column {column!r} was edited ({'; '.join(parts)}): it lists the predicted "
            f"cluster as shown; write the records to remove in {remove!r} instead"
        )


def read_sheet(path: str | os.PathLike) -> pd.DataFrame:
    """A review sheet file (CSV, TSV or Parquet: :func:`~er_evaluation.io.read_table`) with
    its rows labelled as a spreadsheet numbers them (the header is row 1, the first data
    row row 2), so that every problem :func:`parse_sheet` reports names the row the
    reviewer sees."""
    frame = read_table(path)
    return frame.set_axis(pd.RangeIndex(2, len(frame) + 2))


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
        ids = [parse(v, column) for v in cell]
    else:
        ids = [parse(token, column) for token in _SPLIT.split(str(cell)) if token]
    twice = [i for i, n in Counter(ids).items() if n > 1]
    if twice:
        raise ReviewError(f"column {column!r} gives {examples(twice)} more than once")
    return ids
