"""The labelled draws of a sampling run (:class:`LabelRun`) and the loop that produces them:
a sampler run against an oracle up to a label budget, with a label cache."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from er_evaluation._parameters import check_count
from er_evaluation._progress import progress
from er_evaluation.errors import examples
from er_evaluation.pairs._stratify import ScoreStrata
from er_evaluation.pairs.oracles import oracle_label
from er_evaluation.pairs.pool import PairPool, PoolError

__all__ = ["LabelRun", "run_of_sampler", "sample_labels"]


@dataclass(frozen=True)
class LabelRun:
    """The labelled draws of one sampling run, in draw order (repeats included).

    ``index``: pool row of each draw; ``label``: its true 0/1 label; ``weight``: p/q of the
    draw (importance design) or 1; ``stratum``: stratum code (stratified design) or -1;
    ``new_label``: True where the draw cost a new label (False: label cache hit);
    ``design``: "passive" | "stratified" | "importance"; ``pool_size`` = N;
    ``stratum_sizes``: N_k (stratified design); ``final_weight``: p/q_N of each draw under the
    sampler's final proposal (optional, for ``variance="final"``); ``strata``: the strata of a
    sampler that draws uniformly within each stratum (stratified, OASIS), on which the
    unlabelled remainder is estimated; ``static_proposal``: the draws come from one fixed
    proposal q = p / weight (static importance sampling), so inclusion probabilities
    are known; ``adaptive``: the proposal adapted to the labels (OASIS), so the run is
    estimated by importance weights and its strata are used only from the draw on
    which a stratum x prediction cell is completely labelled (its later terms replaced
    by their known conditional expectations, :func:`~er_evaluation.pairs._remainder.hybrid_estimate`);
    ``stratum_prior``: leaf prior of the oracle model of the variance, shape (2, K): prior
    pseudo-counts of matches and of non-matches per stratum (OASIS and AIS: the sampler's
    prior mean), from which the variance of an adaptive run is computed
    (:func:`~er_evaluation.pairs._variance.oracle_rates`); None: from the labels alone. ``model_strata``: the strata
    of that model when they are not the ones the sampler draws uniformly within (AIS;
    OASIS with cut strata: the uncut ones, ``OASISSampler.model_strata``); default
    ``strata``.
    """

    design: str
    pool_size: int
    index: np.ndarray
    label: np.ndarray
    weight: np.ndarray
    stratum: np.ndarray
    new_label: np.ndarray
    stratum_sizes: np.ndarray | None = None
    final_weight: np.ndarray | None = None
    method: str = ""
    strata: ScoreStrata | None = None
    static_proposal: bool = False
    adaptive: bool = False
    stratum_prior: np.ndarray | None = None
    model_strata: ScoreStrata | None = None

    @property
    def n_draws(self) -> int:
        """Number of draws T (repeats included)."""
        return len(self.index)

    @property
    def n_labels(self) -> int:
        """Number of distinct labels paid for."""
        return int(np.sum(self.new_label))

    def prefix(self, n_draws: int) -> LabelRun:
        """The run cut after its first ``n_draws`` draws (what was known at that point)."""
        return replace(
            self,
            index=self.index[:n_draws],
            label=self.label[:n_draws],
            weight=self.weight[:n_draws],
            stratum=self.stratum[:n_draws],
            new_label=self.new_label[:n_draws],
            final_weight=None if self.final_weight is None else self.final_weight[:n_draws],
        )


def sample_labels(
    pool: PairPool,
    sampler,
    oracle: Callable[[int], int | None],
    budget: int,
    *,
    max_draws: int | None = None,
    final_weights: bool = False,
    known: np.ndarray | None = None,
) -> LabelRun:
    """Draw from ``sampler`` and label with ``oracle`` until ``budget`` distinct pairs are
    labelled.

    A pair drawn again is answered from the label cache: it costs no new label and the
    oracle is never asked twice. The run stops right after the draw that paid for label
    number ``budget`` (the stopping rule of :meth:`LabellingSession.run
    <er_evaluation.pairs.LabellingSession.run>`, the CLI and the app, so one seed and
    budget give the same draws everywhere), when the sampler is exhausted, when every
    pair is labelled, or after ``max_draws`` draws (default 1000 x budget). An unsure
    answer (None) voids the draw: it is not counted, not cached and the model does not
    see it (the pair may be drawn and asked again). ``known`` (int8 per pair, -1 =
    unknown) pre-fills the cache with labels paid for earlier (label reuse): drawing
    such a pair costs nothing.
    """
    budget = check_count(budget, "budget", minimum=0)
    limit = 1000 * max(budget, 1) if max_draws is None else check_count(max_draws, "max_draws")
    built_on = getattr(sampler, "n_pairs", pool.n_pairs)
    if built_on != pool.n_pairs:
        raise PoolError(
            f"the sampler was built on a pool of {built_on} pairs; this pool has {pool.n_pairs}"
        )
    cache = np.full(pool.n_pairs, -1, dtype=np.int8) if known is None else _known(known, pool)
    index, label, weight, stratum, new = [], [], [], [], []
    # every pair labelled: only free repeats would follow
    target = min(budget, int(np.count_nonzero(cache < 0)))
    n_labels = 0
    draws = 0
    bar = progress(desc="labelling", total=target, unit="label")
    while n_labels < target and draws < limit:
        draw = sampler.draw()
        if draw is None:
            break
        draws += 1
        cached = int(cache[draw.index])
        is_new = cached < 0
        if is_new:
            answer = oracle_label(oracle(draw.index), draw.index)
            if answer is None:
                continue
            cached = answer
            cache[draw.index] = cached
            n_labels += 1
            bar.update()
        sampler.observe(draw.index, cached)
        index.append(draw.index)
        label.append(cached)
        weight.append(draw.weight)
        stratum.append(draw.stratum)
        new.append(is_new)
    bar.close()
    idx = np.asarray(index, dtype=np.int64)
    return run_of_sampler(
        sampler, pool.n_pairs, idx, label, weight, stratum, new, final_weights=final_weights
    )


def run_of_sampler(
    sampler, n_pairs: int, idx, label, weight, stratum, new, *, final_weights: bool = False
) -> LabelRun:
    """The :class:`LabelRun` of draws made by ``sampler`` (its design, strata and proposal
    kind decide how the estimator weighs them)."""
    idx = np.asarray(idx, dtype=np.int64)
    strata = getattr(sampler, "strata", None)
    return LabelRun(
        design=sampler.design,
        pool_size=n_pairs,
        index=idx,
        label=np.asarray(label, dtype=np.int8),
        weight=np.asarray(weight, dtype=np.float64),
        stratum=np.asarray(stratum, dtype=np.int64),
        new_label=np.asarray(new, dtype=bool),
        stratum_sizes=strata.sizes
        if strata is not None and sampler.design == "stratified"
        else None,
        final_weight=sampler.current_weights(idx)
        if final_weights and sampler.design == "importance"
        else None,
        method=sampler.name,
        strata=strata if getattr(sampler, "uniform_within_strata", False) else None,
        static_proposal=bool(getattr(sampler, "static_proposal", False)),
        adaptive=bool(getattr(sampler, "adaptive", False)),
        stratum_prior=getattr(sampler, "stratum_prior", None),
        # the variance model's strata: OASIS's uncut strata when it cut some into chunks
        model_strata=getattr(sampler, "model_strata", None) or strata,
    )


def _known(known, pool: PairPool) -> np.ndarray:
    """``known`` checked: one of -1 (unknown), 0, 1 per pool pair."""
    values = np.asarray(known)
    if values.shape != (pool.n_pairs,):
        raise PoolError(
            f"known has shape {values.shape}; expected one label per pool pair ({pool.n_pairs})"
        )
    bad = np.flatnonzero(~np.isin(values, (-1, 0, 1)))
    if len(bad):
        raise PoolError(
            f"known must be -1 (unknown), 0 or 1 per pool pair; pairs {examples(bad)} have "
            f"{examples(values[bad])}"
        )
    return values.astype(np.int8)
