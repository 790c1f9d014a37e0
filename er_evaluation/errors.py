"""Exceptions and warnings raised by er_evaluation, and helpers to name offending ids."""

from __future__ import annotations

import difflib
import sys
import warnings
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd


class ClusteringError(ValueError):
    """Invalid clustering input: duplicated ids, missing cluster ids, wrong types, empty input."""


class InputFileError(ValueError):
    """A file cannot be read or written as asked: unknown type, empty, not UTF-8, rows
    with more fields than the header, a directory where a file is expected. The message
    starts with the file's path."""


class CoverageError(ValueError):
    """Two clusterings do not cover the records they need to (e.g. reference records
    absent from the prediction)."""


class CoverageWarning(UserWarning):
    """Records were dropped because the caller chose to restrict to shared records."""


class UnpairedDifferenceWarning(UserWarning):
    """A paired difference whose two predictions agree on every reviewed unit: the sample
    holds no unit where they differ, so its interval combines the two estimates' own
    intervals without their pairing (wide); the message names the metric and the pair."""


class PopulationWarning(UserWarning):
    """The prediction given to an estimator holds no record beyond the reviewed sample, so
    it may not be the whole population the estimate is meant for."""


class UndefinedMetricWarning(UserWarning):
    """A metric is undefined on its input (e.g. precision with no predicted links); NaN returned."""


class UnreliableEstimateWarning(UserWarning):
    """An estimate's interval cannot be trusted at its nominal level (too few or too
    concentrated units, or a population that is not the sampled one); the message says
    why and what to do."""


_PACKAGE = __name__.split(".")[0]


def warn(message: str | Warning, category: type[Warning] = UserWarning) -> None:
    """The package's one way to warn: :func:`warnings.warn` attributed to the line that
    called into the package (the frame just outside its outermost frame on the stack),
    however deep inside the warning arose, so that a user sees their own line and
    ``-W error`` or a filter by module works on their code."""
    depth, outermost = 0, 0
    frame = sys._getframe(0)
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).split(".")[0] == _PACKAGE:
            outermost = depth
        frame = frame.f_back
        depth += 1
    warnings.warn(message, category, stacklevel=outermost + 2)


def warn_undefined(metric: str, reason: str) -> float:
    """The one warning for a metric or estimate that is undefined on its input: an
    :class:`UndefinedMetricWarning` reading "``metric`` is undefined: ``reason``; NaN
    returned" at the caller's line (:func:`warn`), and the NaN to return."""
    warn(f"{metric} is undefined: {reason}; NaN returned", UndefinedMetricWarning)
    return float("nan")


@dataclass(frozen=True)
class Offenders:
    """The smallest offending ids (sorted) and how many offenders there are in all: what
    an error message shows, computed the same way by every engine (an engine's records
    have no order, so "the first five" means the five smallest)."""

    first: list
    total: int

    def __len__(self) -> int:
        return self.total

    def __getitem__(self, index: slice) -> list:
        return self.first[index]


def smallest(ids, k: int = 5) -> Offenders:
    """The ``k`` smallest of ``ids``, sorted, and their number (ids of mixed, unorderable
    types: the first ``k``). ``np.partition`` picks them in O(n); only those are sorted."""
    if isinstance(ids, Offenders):
        return ids
    values = np.asarray(ids.to_numpy() if hasattr(ids, "to_numpy") else ids)
    try:
        if len(values) > k:
            values = np.partition(values, k - 1)[:k]
        first = sorted(values.tolist())
    except TypeError:
        first = values[:k].tolist()
    return Offenders(first, len(ids))


def suggest(given: Iterable, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the first of ``given`` that is close to one of
    ``choices`` (a typo), else ""."""
    choices = [str(c) for c in choices]
    for name in given:
        close = difflib.get_close_matches(str(name), choices, n=1, cutoff=0.75)
        if close:
            return f" (did you mean {close[0]!r}?)"
    return ""


def examples(ids: Iterable, k: int = 5) -> str:
    """Format up to ``k`` example ids for an error message, e.g. ``'a', 'b' (and 3 more)``.

    Only the first ``k`` ids are converted, so naming examples from 10M ids is cheap.
    """
    if isinstance(ids, pd.Series):
        ids = ids.to_numpy()
    if not isinstance(
        ids, (list, tuple, np.ndarray, pd.Index, pd.api.extensions.ExtensionArray, Offenders)
    ):
        ids = list(ids)
    shown = ", ".join(repr(plain_id(i)) for i in ids[:k])
    rest = len(ids) - k
    return shown + (f" (and {rest} more)" if rest > 0 else "")


def plain_id(value):
    """A numpy scalar as the Python scalar it holds (other values unchanged): under numpy 2
    ``repr(np.int64(3))`` is ``np.int64(3)`` where users typed ``3``, and JSON/SQLite need
    Python scalars."""
    return value.item() if isinstance(value, np.generic) else value
