"""The one set of rules a review decision must satisfy, shared by saves, sheet imports and
the app's inline checks (PatentsView's review script checks the same things: Binette et
al. 2023, §2.2)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from er_evaluation.errors import examples, plain_id, suggest
from er_evaluation.review._model import STATUSES, ReviewError, ReviewIssue, check_id
from er_evaluation.review._names import names_beside


@dataclass(frozen=True)
class ValidReview:
    """A decision that passed :func:`validate_review`: plain ids, duplicates removed."""

    sampled_record: str | int
    predicted_cluster: str | int | None
    shown_records: tuple
    removed: tuple
    added: tuple
    status: str


def check_reviewer(reviewer: Any) -> str:
    """The reviewer's name stripped; empty or non-text names are a :class:`ReviewError`."""
    if not isinstance(reviewer, str) or not reviewer.strip():
        raise ReviewError(f"reviewer must be a non-empty name, got {reviewer!r}")
    return reviewer.strip()


def find_reviewer(name: Any, known: Iterable[str]) -> str:
    """The project's spelling of reviewer ``name`` (case ignored), or a :class:`ReviewError`
    naming the project's reviewers: decisions are only ever recorded under a known name."""
    text = check_reviewer(name)
    known = tuple(known)
    for candidate in known:
        if candidate.casefold() == text.casefold():
            return candidate
    listed = ", ".join(map(repr, known)) if known else "none yet"
    raise ReviewError(
        f"unknown reviewer {text!r}{suggest([text], known)}: the project's reviewers are {listed}"
    )


def unique_ids(values: Iterable, what: str) -> tuple:
    """Validated ids of ``values`` in first-seen order, duplicates dropped."""
    if isinstance(values, (str, bytes)):
        raise ReviewError(f"{what} must be a collection of record ids, not the string {values!r}")
    return tuple(dict.fromkeys(check_id(v, what) for v in values))


def id_kind(record_id: Any) -> str:
    """ "text" or "number": record ids of one benchmark are all one or all the other."""
    return "text" if isinstance(record_id, str) else "number"


def check_one_id_type(ids: Sequence) -> None:
    """A :class:`ReviewError` when ``ids`` mix text and numbers: ``1`` and ``"1"`` would be
    two records, and a benchmark holding both could not be exported or estimated from."""
    ids = list(dict.fromkeys(ids))
    kinds = [id_kind(i) for i in ids]
    if len(set(kinds)) > 1:
        text = [i for i, k in zip(ids, kinds, strict=True) if k == "text"]
        numbers = [i for i, k in zip(ids, kinds, strict=True) if k == "number"]
        raise ReviewError(
            f"record ids mix text ({examples(text)}) and numbers ({examples(numbers)}): 1 "
            "and '1' would be two records; give every id as the prediction holds it"
        )


def check_prediction(prediction: Any) -> pd.Series:
    """``prediction`` if it is a membership Series whose record ids are unique, else a
    :class:`ReviewError` naming the ids given twice (a record's cluster would be
    ambiguous)."""
    if not isinstance(prediction, pd.Series):
        raise ReviewError(
            "prediction must be a membership Series (record id -> cluster id), "
            f"got {type(prediction).__name__}"
        )
    twice = prediction.index.duplicated()
    if twice.any():
        raise ReviewError(
            f"the prediction gives {int(twice.sum()):,} record id(s) more than once: "
            f"{examples(pd.unique(prediction.index[twice]))}; each record has one cluster"
        )
    return prediction


def validate_review(
    *,
    sampled_record: Any,
    removed: Iterable = (),
    added: Iterable = (),
    status: str | None = None,
    shown_records: Iterable | None = None,
    predicted_cluster: Any = None,
    prediction: pd.Series | None = None,
    columns: tuple[str, str] | None = None,
) -> ValidReview:
    """Check one decision and return it normalised; raise :class:`ReviewError` naming the ids.

    The decision is "the sampled record's predicted cluster as shown, minus ``removed``,
    plus ``added``". Rules: the sampled record is among the shown records; removed ids are
    shown records other than the sampled record; no id is both removed and added; added ids
    are not shown records (adding one would record a change the decision does not make);
    ``status`` (default ``"correct"`` when nothing changes, else ``"reviewed"``) is one of
    ``reviewed, correct, skipped`` and agrees with the changes. With ``prediction``
    (membership Series of the population) also: the sampled record is in it, the shown
    records default to its predicted cluster, and added ids are in the population.
    ``columns``: the names of the columns the removed and added ids were read from (a
    review sheet's), named in the messages.
    """
    sampled = check_id(sampled_record, "sampled record")
    removed = unique_ids(removed, "removed")
    added = unique_ids(added, "added")
    where = "shown"
    if prediction is not None:
        check_prediction(prediction)
        pos = prediction.index.get_indexer([sampled])[0]
        if pos < 0:
            raise ReviewError(f"sampled record {sampled!r} is not in the prediction")
        predicted_cluster = plain_id(prediction.iloc[pos])
        if shown_records is None:
            where = "predicted"
            in_cluster = prediction.to_numpy() == prediction.iloc[pos]
            shown_records = prediction.index[in_cluster]
    if shown_records is None:
        raise ReviewError("give the shown records (the predicted cluster) or the prediction")
    shown = unique_ids(shown_records, "shown_records")
    check_one_id_type([sampled, *shown, *removed, *added])
    cluster = None if predicted_cluster is None else check_id(predicted_cluster, "cluster id")
    shown_set = set(shown)
    if sampled not in shown_set:
        raise ReviewError(
            f"sampled record {sampled!r} is not among the shown records of cluster {cluster!r}"
        )
    out, into = ("", "") if columns is None else (f" in column {c!r}" for c in columns)
    stray = [r for r in removed if r not in shown_set]
    if stray:
        raise ReviewError(
            f"removed id(s){out} not in the {where} cluster {cluster!r} of {sampled!r}: "
            f"{examples(stray)}"
        )
    if sampled in set(removed):
        raise ReviewError(f"the sampled record {sampled!r} itself cannot be removed{out}")
    if prediction is not None and added:
        unknown = [
            a for a, p in zip(added, prediction.index.get_indexer(added), strict=True) if p < 0
        ]
        if unknown:
            raise ReviewError(f"added id(s){into} not in the population: {examples(unknown)}")
    both = [a for a in added if a in set(removed)]
    if both:
        where_both = "" if columns is None else f" (columns {columns[0]!r} and {columns[1]!r})"
        raise ReviewError(f"id(s) both removed and added{where_both}: {examples(both)}")
    already = [a for a in added if a in shown_set]
    if already:
        raise ReviewError(
            f"added id(s){into} already in the {where} cluster {cluster!r} of {sampled!r}: "
            f"{examples(already)}; only records missing from it are added"
        )
    if status is None:
        status = "reviewed" if removed or added else "correct"
    if status not in STATUSES[:3]:
        raise ReviewError(f"status must be one of {STATUSES[:3]}, got {status!r}")
    if status in ("correct", "skipped") and (removed or added):
        raise ReviewError(f"status {status!r} but records were added or removed")
    return ValidReview(sampled, cluster, shown, removed, added, status)


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

    Errors (raise :class:`ReviewError` naming the ids) are those of
    :func:`validate_review` with the shown records taken from ``prediction``. Soft issues
    (returned), with ``records`` (indexed by record id, or with ``id_col``): ``"name"`` for
    each added record whose name differs from the sampled record's (see
    :func:`names_beside`).
    """
    valid = validate_review(
        sampled_record=sampled_record, removed=removed, added=added, prediction=prediction
    )
    issues: list[ReviewIssue] = []
    if records is not None and valid.added:
        table = names_beside(
            records, valid.sampled_record, valid.added, id_col=id_col, name_cols=name_cols
        )
        for row in table.itertuples(index=False):
            if not row.same_name:
                issues.append(
                    ReviewIssue(
                        "name",
                        (row.record_id,),
                        f"added {row.record_id!r} is named {row.name!r}; the sampled record "
                        f"{valid.sampled_record!r} is {row.sampled_name!r}",
                    )
                )
    return issues
