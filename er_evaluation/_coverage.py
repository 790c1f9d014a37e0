"""The one missing-records policy of the toolkit: records of one clustering absent from
the other raise a :class:`~er_evaluation.errors.CoverageError` naming them, or are dropped
with a :class:`~er_evaluation.errors.CoverageWarning` saying how many."""

from __future__ import annotations

import warnings
from typing import Literal

import pandas as pd

from er_evaluation.errors import CoverageError, CoverageWarning, examples, smallest

__all__ = ["OnMissing", "check_on_missing", "drop_missing"]

OnMissing = Literal["error", "restrict"]


def check_on_missing(on_missing: str) -> None:
    """Reject an ``on_missing`` policy other than "error" and "restrict"."""
    if on_missing not in ("error", "restrict"):
        raise ValueError(f"on_missing must be 'error' or 'restrict', got {on_missing!r}")


def drop_missing(
    ids: pd.Index, *, side: str, other: str, on_missing: OnMissing, total: int
) -> pd.Index:
    """The one missing-records policy of the toolkit (metrics, estimators, paired comparisons).

    ``ids`` are the ``side`` records (of ``total``) absent from ``other``. With
    ``on_missing="error"`` a non-empty ``ids`` raises :class:`CoverageError` naming them;
    with ``"restrict"`` they are dropped and a :class:`CoverageWarning` says how many,
    always. Returns the dropped ids (empty when nothing is missing), so every result can
    report the count.
    """
    check_on_missing(on_missing)
    if len(ids) == 0:
        return ids
    if on_missing == "error":
        raise CoverageError(
            f"{len(ids)} of {total} {side} record(s) are absent from the {other}: "
            f"{examples(smallest(ids))}. "
            f"Pass on_missing='restrict' to evaluate on the shared records only."
        )
    warnings.warn(
        f"dropped {len(ids)} of {total} {side} record(s) absent from the {other} "
        f"(e.g. {examples(smallest(ids), 3)}); evaluating on shared records only",
        CoverageWarning,
        stacklevel=3,
    )
    return ids
