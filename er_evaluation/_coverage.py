"""The one missing-records policy of the toolkit: records of one clustering absent from
the other raise a :class:`~er_evaluation.errors.CoverageError` naming them, or are dropped
with a :class:`~er_evaluation.errors.CoverageWarning` saying how many."""

from __future__ import annotations

from typing import Literal

import pandas as pd

from er_evaluation._parameters import check_choice
from er_evaluation.errors import CoverageError, CoverageWarning, examples, smallest, warn

__all__ = ["OnMissing", "check_on_missing", "drop_missing"]

OnMissing = Literal["error", "restrict"]


def check_on_missing(on_missing) -> str:
    """``on_missing`` if it is "error" or "restrict", else a ValueError naming it."""
    return check_choice(on_missing, "on_missing", ("error", "restrict"))


def drop_missing(
    ids: pd.Index, *, side: str, other: str, on_missing: OnMissing, total: int
) -> pd.Index:
    """The one missing-records policy of the toolkit (metrics, estimators, paired comparisons).

    ``ids`` are the ``side`` records (of ``total``) absent from ``other``. With
    ``on_missing="error"`` a non-empty ``ids`` raises :class:`CoverageError` naming them;
    with ``"restrict"`` they are dropped and a :class:`CoverageWarning` says how many,
    always (``on_missing`` checked by the caller's entry point). Returns the dropped ids
    (empty when nothing is missing), so every result can report the count.
    """
    if len(ids) == 0:
        return ids
    if on_missing == "error":
        raise CoverageError(
            f"{len(ids)} of {total} {side} record(s) are absent from the {other}: "
            f"{examples(smallest(ids))}. "
            f"Pass on_missing='restrict' to evaluate on the shared records only."
        )
    warn(
        f"dropped {len(ids)} of {total} {side} record(s) absent from the {other} "
        f"(e.g. {examples(smallest(ids), 3)}); evaluating on shared records only",
        CoverageWarning,
    )
    return ids
