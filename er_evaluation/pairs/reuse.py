"""Reusing pair labels across predictions (Marchant & Rubinstein 2021 §3.3.1; Chaganty et al. 2017).

A labelled pair keeps its label whatever prediction is evaluated, so labels collected
while evaluating prediction A also estimate prediction B on the same pool.

- :func:`reuse_estimate`: B from A's labels alone, no new label. Stratified and passive
  runs are estimated within the cells A-stratum x B-prediction; importance runs (static
  IS, OASIS) by A's importance weights within B's two prediction groups; both hold for
  any B.
- :func:`continue_sampling`: an adaptive sampler tuned to B (OASIS, or the sampler of
  Marchant & Rubinstein 2021), warm-started with A's labels and label cache, adds labels;
  A's draws (weights p/q made explicit by :func:`as_importance_run`) and B's are pooled
  into one importance run, each draw keeping the weight p/q_t of the proposal it was
  drawn from, which keeps the pooled estimate consistent (Marchant & Rubinstein 2021,
  Theorem 1: a sequence of proposals is still an AIS sample). Chaganty et al. 2017 weigh
  every draw by the mixture of all proposals used (balance heuristic) instead; that needs
  every proposal at every labelled pair and is not implemented here.

Bias and coverage of both are measured in benchmarks/README.md (``bench_pairs_reuse.py``);
:func:`labels_needed` says how many more labels a target standard error needs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from er_evaluation.estimators.results import Estimate
from er_evaluation.pairs.estimates import (
    LabelRun,
    PairEstimates,
    estimate_from_labels,
)
from er_evaluation.pairs.pool import PairPool
from er_evaluation.pairs.run import sample_labels
from er_evaluation.pairs.samplers import make_sampler

__all__ = ["reuse_estimate", "as_importance_run", "continue_sampling", "labels_needed"]


def reuse_estimate(
    run: LabelRun, predicted_b, *, alpha: float | Sequence[float] = 0.5, level: float = 0.95
) -> PairEstimates:
    """Precision, recall and F_alpha of another prediction ``predicted_b`` (0/1 per pool pair)
    from the labels of ``run`` (see the module docstring for how). Costs no label."""
    return estimate_from_labels(run, predicted_b, alpha=alpha, level=level)


def as_importance_run(run: LabelRun) -> LabelRun:
    """The same draws with weights p/q for pooling with importance draws: 1 for a passive
    sample (uniform q), omega_k n / n_k for a stratified one (q = n_k / (n N_k) per pair),
    unchanged for importance samples."""
    if run.design == "importance":
        return run
    if run.design == "passive":
        weight = np.ones(run.n_draws)
    elif run.design == "stratified":
        sizes = np.asarray(run.stratum_sizes, dtype=np.float64)
        counts = np.bincount(run.stratum, minlength=len(sizes)).astype(np.float64)
        per = (sizes / sizes.sum()) * run.n_draws / np.where(counts > 0, counts, 1.0)
        weight = per[run.stratum]
    else:
        raise ValueError(f"unknown design {run.design!r}")
    return LabelRun(
        "importance",
        run.pool_size,
        run.index,
        run.label,
        weight,
        run.stratum,
        run.new_label,
        method=run.method,
        strata=run.strata,
        adaptive=run.adaptive,
    )


def continue_sampling(
    pool_b: PairPool,
    previous: LabelRun,
    oracle: Callable[[int], int | None],
    new_labels: int,
    *,
    seed: int | None = None,
    method: str = "oasis",
    **params,
) -> LabelRun:
    """Evaluate prediction B (``pool_b``: same pairs and scores, B's ``predicted``) after A.

    An adaptive sampler for B (``method``: "oasis", or "ais" for Marchant & Rubinstein 2021's sampler, with
    its ``params``) starts from A's labels: each labelled pair updates the oracle model
    of its B-stratum (OASIS's Beta posterior, or the Dirichlet tree with the pair's
    label known), the F estimate starts from the reused estimate, and the
    label cache holds A's labels so a pair A already labelled costs nothing. It then draws
    until ``new_labels`` new pairs are labelled. Returns the pooled run: A's draws followed
    by B's (``new_label`` marks the labels B paid for), with the common refinement of A's
    and B's strata as its strata when A drew uniformly within strata (see the module
    docstring), else with each draw's own importance weight.
    """
    if previous.pool_size != pool_b.n_pairs:
        raise ValueError(
            f"the previous run is on a pool of {previous.pool_size} pairs, pool_b has {pool_b.n_pairs}"
        )
    old = as_importance_run(previous)
    if method not in ("oasis", "ais"):
        raise ValueError(f"method must be 'oasis' or 'ais' (an adaptive sampler), got {method!r}")
    sampler = make_sampler(method, pool_b, seed, **params)
    sampler.warm_start(old.index, old.label, old.weight)
    known = np.full(pool_b.n_pairs, -1, dtype=np.int8)
    known[old.index] = old.label
    new = sample_labels(pool_b, sampler, oracle, new_labels, known=known)
    return LabelRun(
        "importance",
        pool_b.n_pairs,
        np.concatenate([old.index, new.index]),
        np.concatenate([old.label, new.label]),
        np.concatenate([old.weight, new.weight]),
        np.concatenate([np.full(old.n_draws, -1), new.stratum]),
        np.concatenate([old.new_label, new.new_label]),
        method=f"{method}+reuse",
        adaptive=True,
    )


def labels_needed(estimate_: Estimate, target_std_error: float) -> int:
    """Additional labels for ``estimate_`` to reach ``target_std_error``, assuming the
    variance falls as 1/n in the number of draws and the current ratio of new labels to
    draws persists: ceil(n_units ((SE / target)^2 - 1)) with n_units the distinct labels
    behind the estimate. 0 if already reached; an error
    if the standard error is not available."""
    if not target_std_error > 0:
        raise ValueError(f"target_std_error must be > 0, got {target_std_error}")
    se = estimate_.std_error
    if math.isnan(se):
        raise ValueError(f"{estimate_.metric} has no standard error yet: label more pairs first")
    if se <= target_std_error:
        return 0
    return int(math.ceil(estimate_.n_units * ((se / target_std_error) ** 2 - 1)))
