"""Oracles: where true pair labels come from.

An oracle is called with a pool row index and returns 1 (match), 0 (non-match) or None
(unsure: no label). Built from a reference clustering (simulations, tests), from known
labels, or from any Python callable on the two record ids. A *person* answers through
:class:`er_evaluation.pairs.session.LabellingSession` instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from er_evaluation.pairs.pool import PairPool, PoolError, predicted_from_clustering

__all__ = [
    "LabelOracle",
    "CallableOracle",
    "CountingOracle",
    "oracle_from_reference",
    "oracle_label",
    "parse_answer",
]


class LabelOracle:
    """Answers from a vector of known 0/1 labels, one per pool pair."""

    def __init__(self, labels: np.ndarray) -> None:
        values = np.asarray(labels)
        if values.ndim != 1:
            raise ValueError(
                "labels must be a 1-D vector of 0/1 labels, one per pool pair; got "
                f"{type(labels).__name__} of shape {values.shape} (for a PairPool pass "
                "pool.pairs['label'], or use oracle_from_reference)"
            )
        bad = np.flatnonzero(~np.isin(values, [0, 1]))
        if len(bad):
            raise ValueError(
                f"labels must be 0/1; pairs {bad[:5].tolist()} have "
                f"{[values[i].item() for i in bad[:5]]}"
            )
        self.labels = values.astype(np.int8)

    def __call__(self, index: int) -> int:
        return int(self.labels[index])


def oracle_from_reference(pool: PairPool, reference: pd.Series) -> LabelOracle:
    """A pair is a true match iff both records share a cluster of ``reference`` (a
    clustering: record id -> cluster id covering every record of the pool; unknown ids are
    an error naming them)."""
    try:
        labels = predicted_from_clustering(
            pool.pairs["id_left"].to_numpy(), pool.pairs["id_right"].to_numpy(), reference
        )
    except PoolError as error:
        raise PoolError(
            str(error).replace("predicted clustering", "reference clustering")
        ) from None
    return LabelOracle(labels)


class CallableOracle:
    """Wraps ``func(id_left, id_right) -> bool | 0 | 1 | None`` (None = unsure); any other
    answer (a word such as "yes", 2, NaN) is an error naming the pair
    (:func:`oracle_label`)."""

    def __init__(self, pool: PairPool, func: Callable[[Any, Any], Any]) -> None:
        self._left = pool.pairs["id_left"].to_numpy()
        self._right = pool.pairs["id_right"].to_numpy()
        self.func = func

    def __call__(self, index: int) -> int | None:
        return oracle_label(self.func(self._left[index], self._right[index]), index)


class CountingOracle:
    """Wraps an oracle and records every pool index it was asked about (for tests and
    for counting the labels a run really consumed)."""

    def __init__(self, oracle: Callable[[int], int | None]) -> None:
        self.oracle = oracle
        self.asked: list[int] = []

    def __call__(self, index: int) -> int | None:
        self.asked.append(int(index))
        return self.oracle(index)


_ANSWERS = {
    "match": 1,
    "m": 1,
    "yes": 1,
    "y": 1,
    "1": 1,
    "true": 1,
    "non-match": 0,
    "nonmatch": 0,
    "no-match": 0,
    "n": 0,
    "no": 0,
    "0": 0,
    "false": 0,
    "unsure": None,
    "u": None,
    "?": None,
    "skip": None,
}


def parse_answer(answer: Any) -> int | None:
    """Normalise an answer to 1 / 0 / None (unsure). Accepts bools, 0/1, None and the
    words match / non-match / unsure (and y/n/u). Anything else is an error."""
    if answer is None:
        return None
    if isinstance(answer, (bool, np.bool_)):
        return int(answer)
    if isinstance(answer, (int, np.integer)) and int(answer) in (0, 1):
        return int(answer)
    if isinstance(answer, str) and answer.strip().lower() in _ANSWERS:
        return _ANSWERS[answer.strip().lower()]
    raise ValueError(f"answer {answer!r} is not match / non-match / unsure (1 / 0 / None)")


def oracle_label(answer, index: int) -> int | None:
    """An oracle's answer as 1 / 0 / None (unsure): True/False, 0/1 (any integer or float
    type) or None; anything else (a word such as "yes", 2, NaN) is an error naming the pair.
    Words are parsed only for people: :func:`parse_answer`."""
    if answer is None:
        return None
    if isinstance(answer, (bool, np.bool_)):
        return int(answer)
    if isinstance(answer, (int, float, np.integer, np.floating)) and answer in (0, 1):
        return int(answer)
    raise ValueError(
        f"the oracle answered {answer!r} for pool pair {index}; an oracle must return "
        "1 / True (match), 0 / False (non-match) or None (unsure)"
    )
