"""How a conflict between two reviewers' decisions on one record is resolved.

A save refused because another decision was saved meanwhile
(:class:`~er_evaluation.review.StaleReviewError`) is resolved by the reviewer, never by
the software: they keep both decisions as made (the record then waits for adjudication),
drop their own, or start a new decision from both, which they see in full and save
themselves. No decision is ever recorded that its reviewer did not make.
"""

from __future__ import annotations

from er_evaluation.review._drafts import Draft
from er_evaluation.review._model import ReviewEvent


def merged(mine: Draft, theirs: ReviewEvent) -> Draft:
    """A draft starting from both decisions: every record either removed, every record
    either added (unless the other removed it), both notes, based on ``theirs`` (so
    saving it replaces ``theirs`` as a decision made after seeing it). A draft only: the
    reviewer checks every tick and saves it, or not."""
    removed = list(dict.fromkeys([*theirs.removed, *mine.removed]))
    gone = set(removed)
    added = [r for r in dict.fromkeys([*theirs.added, *mine.added]) if r not in gone]
    notes = " / ".join(n for n in dict.fromkeys([theirs.notes, mine.notes]) if n)
    return Draft(tuple(removed), tuple(added), notes, theirs.event_id)
