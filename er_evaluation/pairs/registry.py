"""The pair samplers by name: :data:`METHODS` and :func:`make_sampler`.

A module of its own above :mod:`~er_evaluation.pairs.samplers` and
:mod:`~er_evaluation.pairs.ais` (the AIS sampler builds on the samplers' base), so that
building a sampler by name needs no import back into either of them.
"""

from __future__ import annotations

import inspect

from er_evaluation.pairs.ais import AISSampler
from er_evaluation.pairs.pool import PairPool
from er_evaluation.pairs.samplers import (
    ImportanceSampler,
    OASISSampler,
    PassiveSampler,
    StratifiedSampler,
)

__all__ = ["METHODS", "SAMPLERS", "make_sampler"]

SAMPLERS = {
    "passive": PassiveSampler,
    "stratified": StratifiedSampler,
    "importance": ImportanceSampler,
    "oasis": OASISSampler,
    "ais": AISSampler,
}
"""Sampler class of every method name."""

METHODS = tuple(SAMPLERS)
"""The method names :func:`make_sampler` accepts."""


def make_sampler(method: str, pool: PairPool, seed: int | None = None, **params):
    """Build the sampler named ``method`` (one of :data:`METHODS`) on ``pool``: passive,
    stratified, static importance sampling, OASIS (Marchant & Rubinstein 2017) or the
    adaptive importance sampler of Marchant & Rubinstein 2021 (``"ais"``). ``params`` are
    the sampler's keyword parameters; one it does not have is an error naming its
    parameters."""
    if method not in METHODS:
        raise ValueError(f"unknown sampling method {method!r}; choose one of {', '.join(METHODS)}")
    cls = SAMPLERS[method]
    accepted = [
        name for name, p in inspect.signature(cls).parameters.items() if p.kind is p.KEYWORD_ONLY
    ]
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(
            f"sampling method {method!r} has no parameter {', '.join(unknown)}; "
            f"its parameters: {', '.join(accepted) or 'none'}"
        )
    return cls(pool, seed, **params)
