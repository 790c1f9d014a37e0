"""Reusing pair labels across predictions (Chaganty et al. 2017; Marchant & Rubinstein 2021 §3.3.1).

A labelled pair keeps its label whatever prediction is evaluated, so labels collected
while evaluating prediction A also estimate prediction B on the same pool.

Balance heuristic (Chaganty et al. 2017, §4, mixing weights w_ij proportional to n_j;
Veach & Guibas 1995). Draws x_1..x_T come from proposals q_1..q_T (one per draw for an
adaptive sampler such as OASIS, one for a whole static stage). Weighting every draw
against the mixture of all the proposals actually used,

    w(x) = p(x) / qbar(x),      qbar(x) = (1/T) sum_t q_t(x),      p(x) = 1/N,

instead of its own p/q_t makes sum_t w(x_t) y(x_t) / T an unbiased estimate of the pool
mean of any y when the proposals are fixed in advance (Chaganty et al. 2017, Theorem 1;
exhaustive check in tests/test_pairs_reuse.py). When they adapt to the labels (OASIS)
it is not: a match found in a stratum raises that stratum's later proposals and so
lowers the match's own mixture weight. The weighting is therefore chosen per run, by
benchmark (benchmarks/README.md, ``bench_pairs_reuse.py``):

- every stage fixed (static importance sampling, passive, stratified): the balance
  heuristic;
- a stage adaptive (OASIS, the AIS sampler): each draw's own weight p/q_t, whose
  weighted totals stay unbiased however the proposals adapted (Marchant & Rubinstein
  2021, Theorem 1).

Measured (benchmarks/README.md, "Label reuse across versions", final OASIS rows: 400 runs
on abt-buy and restaurant, 100 on FEBRL; 1,000 OASIS labels for A, 300 more for B;
library defaults: strata cut at 0.0333 N with a shared prior, the variance model on
the uncut strata, completely labelled strata substituted): on the same OASIS draws the
mixture's recall bias on abt-buy was +0.039 ± 0.002 (A's labels plus B's) against
+0.006 ± 0.003 with own weights. A's labels alone keep +0.011 ± 0.004 on abt-buy
recall: Jensen's gap of recall = TP / (TP + FN), B's estimated totals being unbiased
(FN off by +0.20 ± 0.49 on a true 18, TP exact in every run). With own weights, A's
labels plus 300 new ones gave B's F1 with 1.3, 1.2 and 1.5 times the MSE of a fresh
OASIS run of 1,300 labels on abt-buy, restaurant and FEBRL; 95% coverage of
P / R / F1 was 100 / 99.2 / 99.2% (abt-buy), 100 / 100 / 100% (restaurant) and
97 / 100 / 96% (FEBRL), above the [92%, 98%] target as for fresh OASIS runs
(100 / 100 / 100%, 100 / 100 / 99.2%, 98 / 100 / 98%): precision is exact in every
abt-buy and restaurant run (every predicted match of B labelled), and recall's
interval is the shared variance routine's, 3.5 times the spread of the estimates on
restaurant (fresh runs 3.6). The labels-only variance would cover restaurant recall in
only 87% of those reuse runs (fresh 99.8%): A's sampler starves the stratum of one of
B's two misses, and the oracle model's rate is what covers it. FEBRL's 136 misses among
5.4M predicted non-matches were drawn in 3% of runs: recall is then estimated as 1
(bias +0.028) and only the boundary rule of the interval (its lower end from the
effectively searched predicted non-matches) keeps it covering, with an interval too
wide to be useful; :func:`reuse_estimate` marked recall not reliable in 97% of those
runs and in none on abt-buy and restaurant.

Functions:

- :func:`sample_traced`: a labelling run that also records every proposal it drew from
  (:class:`Proposals`), as a :class:`TracedRun`.
- :func:`reuse_estimate`: B from A's labels alone, no new label.
- :func:`continue_sampling`: a sampler tuned to B (OASIS warm-started with A's labels,
  or static IS) adds labels; A's and B's draws are pooled.
- :func:`mixture_weights`: the balance-heuristic weights for any recorded proposals.
- :func:`search_check`: the diagnostic :func:`reuse_estimate` attaches, for any
  estimate of a run: recall and F are not reliable when no missed match was drawn and
  the predicted non-matches were searched too thinly to rule out hidden ones.

Estimates go through :func:`~er_evaluation.pairs.estimate_from_labels` (the importance
estimator of every pair run): a prediction group whose pairs are all labelled is known
exactly, the rest is the self-normalised weighted ratio normalised to the known PP, with
Wilson intervals on the effective sample size (the shared interval code). The AIS
sampler's per-pair proposals are not recorded: its runs are pooled with own weights.

:func:`labels_needed` says how many more labels a target standard error needs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace

import numpy as np

from er_evaluation._parameters import check_count
from er_evaluation.estimators.results import Estimate
from er_evaluation.pairs._search import search_diagnosed
from er_evaluation.pairs._stratify import ScoreStrata
from er_evaluation.pairs.estimates import PairEstimates, _alphas, _betas, estimate_from_labels
from er_evaluation.pairs.pool import PairPool
from er_evaluation.pairs.registry import make_sampler
from er_evaluation.pairs.run import LabelRun, sample_labels
from er_evaluation.pairs.samplers import Draw

__all__ = [
    "Proposals",
    "TracedRun",
    "as_importance_run",
    "continue_sampling",
    "labels_needed",
    "mixture_weights",
    "proposals_of",
    "reuse_estimate",
    "sample_traced",
    "sampler_for_b",
    "search_check",
]


@dataclass(frozen=True)
class Proposals:
    """Proposal distributions a run drew from, each constant on cells of the pool.

    ``codes[i]``: cell of pool pair i (e.g. an OASIS stratum; one cell per pair for a
    per-pair proposal); ``prob[r, c]``: probability q_r of drawing one given pair of cell c
    under recorded proposal r; ``draws[r]``: how many draws proposal r made (1 per draw
    for an adaptive sampler, the stage's draw count for a fixed proposal); ``adaptive``:
    the proposals were chosen from the labels of earlier draws (OASIS).
    """

    codes: np.ndarray
    prob: np.ndarray
    draws: np.ndarray
    adaptive: bool = False

    def __post_init__(self) -> None:
        if self.prob.ndim != 2 or self.prob.shape[0] != len(self.draws):
            raise ValueError(
                f"prob must have one row per recorded proposal ({len(self.draws)}), "
                f"got shape {self.prob.shape}"
            )

    @property
    def n_draws(self) -> int:
        return int(np.sum(self.draws))

    def total(self, rows: np.ndarray) -> np.ndarray:
        """sum_r draws_r q_r(x) for the pool rows x in ``rows``."""
        return self.draws.astype(np.float64) @ self.prob[:, self.codes[rows]]


@dataclass(frozen=True)
class TracedRun(LabelRun):
    """A :class:`LabelRun` with the proposals its draws came from (``proposals``, in draw
    order; their draw counts sum to ``n_draws``) and each draw's own weight p/q_t
    (``own_weight``). ``weight``, which :func:`estimate_from_labels` uses, is the balance
    heuristic's p / qbar (:func:`mixture_weights`) when every proposal was fixed in
    advance, and the own weight when one was adaptive (OASIS): the mixture of adaptive
    proposals is biased (benchmarks/README.md). :meth:`mixture_run` and
    :meth:`own_weights_run` give the same draws with either weighting. A prefix
    (:func:`~er_evaluation.pairs.prefix`) keeps the whole run's weights, so estimate a
    traced run as a whole."""

    proposals: tuple[Proposals, ...] = ()
    own_weight: np.ndarray | None = None

    def own_weights_run(self) -> LabelRun:
        """The same draws, each weighted by its own proposal's p/q_t (Marchant &
        Rubinstein 2021, Theorem 1: unbiased totals however the proposals adapted)."""
        return replace(self, weight=self.own_weight, method=_base_method(self.method))

    def mixture_run(self) -> LabelRun:
        """The same draws, each weighted against the mixture of all the proposals used
        (balance heuristic), whether or not they adapted."""
        weight = mixture_weights(self.index, self.proposals, self.pool_size)
        return replace(self, weight=weight, method=_base_method(self.method) + "+mixture")


def _base_method(method: str) -> str:
    return method.removesuffix("+mixture")


def mixture_weights(index: np.ndarray, proposals: Sequence[Proposals], n_pairs: int) -> np.ndarray:
    """Balance-heuristic weights p(x_t) / qbar(x_t) of draws ``index`` (pool rows), with
    p = 1/N and qbar = (1/T) sum of all draws' proposals (Chaganty et al. 2017, §4 and
    Theorem 1; Veach & Guibas 1995). T is the number of draws the proposals made, which
    must equal ``len(index)``."""
    index = np.asarray(index, dtype=np.int64)
    n_draws = sum(p.n_draws for p in proposals)
    if n_draws != len(index):
        raise ValueError(f"the proposals made {n_draws} draws, the run has {len(index)}")
    total = np.zeros(len(index))
    for prop in proposals:
        total += prop.total(index)
    if np.any(total <= 0):
        bad = index[total <= 0][:5].tolist()
        raise ValueError(f"pool rows {bad} were drawn but no recorded proposal can draw them")
    return n_draws / (n_pairs * total)


def _traced(run: LabelRun, proposals: tuple[Proposals, ...], method: str) -> TracedRun:
    """``run`` as a traced importance run (every other field, e.g. the strata and the
    sampler's flags the estimator reads, kept)."""
    base = as_importance_run(run)
    own = base.own_weight if isinstance(base, TracedRun) else base.weight
    fixed = not any(p.adaptive for p in proposals)
    values = {f.name: getattr(base, f.name) for f in fields(LabelRun)} | {
        "weight": mixture_weights(base.index, proposals, base.pool_size) if fixed else own,
        "method": f"{method}+mixture" if fixed else method,
        # weighted by the importance estimator (not a within-strata remainder estimate)
        "adaptive": base.adaptive or not base.static_proposal,
    }
    return TracedRun(**values, proposals=proposals, own_weight=own)


class _Recorder:
    """A sampler that records, at every counted draw, the per-stratum pair probability of
    the proposal it drew from (``sample_labels`` calls ``observe`` once per counted draw)."""

    def __init__(self, sampler) -> None:
        self._sampler = sampler
        strata = sampler.strata
        # q is constant within a stratum: one pair per stratum reads the whole proposal
        self._reps = strata.order[strata.offsets[:-1]]
        self._scale = float(sampler.n_pairs)
        self.rows: list[np.ndarray] = []
        self._pending: np.ndarray | None = None

    def __getattr__(self, name):
        return getattr(self._sampler, name)

    def draw(self):
        draw = self._sampler.draw()
        if draw is not None:
            self._pending = 1.0 / (self._scale * self._sampler.current_weights(self._reps))
        return draw

    def observe(self, index: int, label: int) -> None:
        self.rows.append(self._pending)
        self._sampler.observe(index, label)


def _records_per_stratum(sampler) -> bool:
    return bool(
        sampler.design == "importance"
        and getattr(sampler, "uniform_within_strata", False)
        and getattr(sampler, "strata", None) is not None
    )


def sample_traced(
    pool: PairPool,
    sampler,
    oracle: Callable[[int], int | None],
    budget: int,
    *,
    known: np.ndarray | None = None,
) -> TracedRun:
    """:func:`~er_evaluation.pairs.sample_labels` that also records the proposals:
    every draw's proposal for a sampler drawing uniformly within strata (OASIS), the one
    fixed proposal of static importance sampling, the uniform or per-stratum allocation of
    passive and stratified sampling. The run's weights are the balance heuristic's
    (:func:`mixture_weights`) for a fixed proposal and the draws' own p/q_t for an
    adaptive one (see the module docstring). The AIS sampler (per-pair proposals that
    change as pairs are labelled) is not supported: an error says so."""
    if _records_per_stratum(sampler):
        recorder = _Recorder(sampler)
        run = sample_labels(pool, recorder, oracle, budget, known=known)
        prob = np.array(recorder.rows).reshape(run.n_draws, sampler.strata.n_strata)
        draws = np.ones(run.n_draws, dtype=np.int64)
        adaptive = bool(getattr(sampler, "adaptive", False))
        proposals = (Proposals(sampler.strata.codes, prob, draws, adaptive),)
        return _traced(run, proposals, sampler.name)
    if getattr(sampler, "adaptive", False):
        raise ValueError(
            f"the proposals of the {sampler.name!r} sampler cannot be recorded (only samplers "
            "that draw uniformly within strata, and fixed designs); use sample_labels"
        )
    run = sample_labels(pool, sampler, oracle, budget, known=known)
    return _traced(run, (proposals_of(run, sampler),), sampler.name)


def proposals_of(run: LabelRun, sampler=None) -> Proposals:
    """The proposals of a run whose proposal is fixed: passive (q = 1/N; the draws are
    without replacement, taken as uniform draws), stratified (q = n_k / (n N_k) per pair
    of stratum k, the weights of :func:`as_importance_run`), or static importance
    sampling (its ``sampler``'s fixed q). Adaptive runs need :func:`sample_traced`."""
    n = run.pool_size
    ones = np.array([run.n_draws], dtype=np.int64)
    if run.design == "passive":
        return Proposals(np.zeros(n, dtype=np.int64), np.full((1, 1), 1.0 / n), ones)
    if run.design == "stratified":
        if run.strata is None:
            raise ValueError("a stratified run needs its strata (run.strata)")
        counts = np.bincount(run.stratum, minlength=run.strata.n_strata).astype(np.float64)
        prob = counts / (run.n_draws * run.strata.sizes)
        return Proposals(run.strata.codes, prob[None, :], ones)
    if run.static_proposal and sampler is not None:
        q = 1.0 / (n * sampler.current_weights(np.arange(n)))
        return Proposals(np.arange(n), q[None, :], ones)
    raise ValueError(
        f"the proposals of a {run.method or run.design} run are not known from the run alone: "
        "record them with sample_traced"
    )


def reuse_estimate(
    run: LabelRun,
    predicted_b,
    *,
    beta: float | Sequence[float] = 1.0,
    level: float = 0.95,
    ci_method: str = "score",
    strata: ScoreStrata | None = None,
) -> PairEstimates:
    """Precision, recall and F_beta of another prediction ``predicted_b`` (0/1 per pool
    pair) from the labels of ``run``, costing no label, by
    :func:`~er_evaluation.pairs.estimate_from_labels` with the run's weights: a
    :class:`TracedRun` of fixed proposals is weighted against their mixture (balance
    heuristic, Chaganty et al. 2017), any other run by each draw's own p/q_t.

    Each estimate carries :func:`search_check` diagnostics: recall and F are marked
    not reliable when no labelled predicted non-match of B is a match and the strata (of
    ``strata``, default ``run.strata``) where none was drawn were searched so thinly that
    more matches than the interval allows could hide there (Clopper-Pearson;
    :func:`~er_evaluation.pairs._search.search_diagnostics`). Measured (OASIS A,
    1,000 labels, 400 runs; FEBRL 100; no new label): B's recall bias +0.011 ± 0.004 on
    abt-buy (Jensen's gap of the ratio: the FN estimate is unbiased), within Monte-Carlo
    error on restaurant; 95% coverage of P / R / F1 100 / 96.8 / 97.2% (abt-buy),
    100 / 100 / 100% (restaurant), 96 / 100 / 97% (FEBRL, where recall was flagged in 97%
    of runs) (benchmarks/README.md, "Label reuse across versions")."""
    estimates = estimate_from_labels(run, predicted_b, beta=beta, level=level, ci_method=ci_method)
    if strata is None:  # estimate_from_labels checked against the run's own strata
        return estimates
    return search_check(estimates, run, predicted_b, beta=beta, strata=strata)


def search_check(
    estimates: PairEstimates,
    run: LabelRun,
    predicted,
    *,
    beta: float | Sequence[float] = 1.0,
    strata: ScoreStrata | None = None,
) -> PairEstimates:
    """``estimates`` (of ``predicted`` from ``run``, F for each ``beta``) with the
    diagnostics of :func:`~er_evaluation.pairs._search.search_diagnosed` against the
    strata ``strata`` (default ``run.strata``): what
    :func:`~er_evaluation.pairs.estimate_from_labels` attaches with the run's own strata,
    for another stratification of the predicted non-matches."""
    e = search_diagnosed(
        [estimates.precision, estimates.recall, *estimates.f],
        run,
        np.asarray(predicted).astype(np.int8),
        [1.0, 0.0, *_alphas(_betas(beta))],
        strata if strata is not None else run.strata,
    )
    return PairEstimates(e[0], e[1], tuple(e[2:]))


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


def _previous_proposals(previous: LabelRun) -> tuple[Proposals, ...] | None:
    if isinstance(previous, TracedRun):
        return previous.proposals
    if previous.design == "passive" or (
        previous.design == "stratified" and previous.strata is not None
    ):
        return (proposals_of(previous),)
    return None


def _plain(run: LabelRun) -> LabelRun:
    """The :class:`LabelRun` fields of ``run`` (a traced run without its trace)."""
    return LabelRun(**{f.name: getattr(run, f.name) for f in fields(LabelRun)})


def _own(run: LabelRun) -> np.ndarray:
    return run.own_weight if isinstance(run, TracedRun) else run.weight


class _SearchSampler:
    """B's adaptive sampler (OASIS) with a fixed share ``search`` of every draw's proposal
    spread uniformly over B's unsearched predicted non-matches: the B-strata of predicted
    non-matches where no pair labelled so far (``known``) is a match and some pair is
    unlabelled. Each draw comes from the mixture

        q_t(stratum k) = (1 - search) v_t(k) + search u(k),   u(k) = N_k / N_Z on the region,

    uniform within the stratum, so its own weight omega_k / q_t(k) (p / q_t) keeps the
    pooled totals unbiased (Marchant & Rubinstein 2021, Theorem 1) and every draw's
    proposal is recordable (:func:`sample_traced`). Uniform over the region is the
    allocation that maximises its effective searched size (the Kish size of
    :func:`~er_evaluation.pairs._search.hidden_matches`). Every label, drawn by
    either part, updates the inner sampler as its own draws do."""

    design = "importance"
    uniform_within_strata = True
    static_proposal = False
    adaptive = True

    def __init__(self, inner, known: np.ndarray, search: float, seed: int | None) -> None:
        self._inner = inner
        self.strata = st = inner.strata
        self.n_pairs = inner.n_pairs
        self.name = inner.name
        self.stratum_prior = getattr(inner, "stratum_prior", None)
        self.model_strata = getattr(inner, "model_strata", None)
        k = st.n_strata
        codes = st.codes
        d = np.bincount(codes[known >= 0], minlength=k)
        m = np.bincount(codes[known == 1], minlength=k)
        region = (st.predicted == 0) & (m == 0) & (d < st.sizes)
        mass = np.where(region, st.sizes, 0).astype(np.float64)
        # no unsearched region: nothing to search, B's sampler alone
        self._share = float(search) if mass.sum() > 0 else 0.0
        self._u = mass / mass.sum() if mass.sum() > 0 else mass
        self._cum_u = np.cumsum(self._u)
        self._omega = st.omega
        self._reps = st.order[st.offsets[:-1]]
        # the choice between the two parts has its own stream: the inner sampler's draws
        # stay those it would make alone given the same labels
        self._rng = np.random.Generator(np.random.PCG64(seed))

    def _q(self) -> np.ndarray:
        v = self._omega / self._inner.current_weights(self._reps)
        return (1.0 - self._share) * v + self._share * self._u

    def draw(self) -> Draw | None:
        q = self._q()
        if self._rng.random() < self._share:
            st = self.strata
            k = min(int(np.searchsorted(self._cum_u, self._rng.random(), side="right")), len(q) - 1)
            start = st.offsets[k]
            index = int(st.order[start + int(self._rng.random() * st.sizes[k])])
        else:
            inner = self._inner.draw()
            if inner is None:
                return None
            index, k = inner.index, inner.stratum
        return Draw(index, k, q[k] / self.strata.sizes[k], float(self._omega[k] / q[k]))

    def observe(self, index: int, label: int) -> None:
        """The label updates the inner sampler as its own draw would (its Beta posterior
        and its F estimate with its own weight omega_k / v_k)."""
        own = self._inner.current_weights(np.array([index]))
        self._inner.warm_start(np.array([index]), np.array([label]), own)

    def current_weights(self, indices: np.ndarray) -> np.ndarray:
        codes = self.strata.codes[np.asarray(indices)]
        return self._omega[codes] / self._q()[codes]


def sampler_for_b(
    pool_b: PairPool,
    previous: LabelRun,
    *,
    method: str = "oasis",
    seed: int | None = None,
    search: float = 0.0,
    **params,
):
    """The sampler :func:`continue_sampling` draws B's new labels with: ``method``'s
    sampler on ``pool_b`` (its ``params``), warm-started with ``previous``'s labels for an
    adaptive one, and with ``search`` > 0 (OASIS only) the share of every draw spread
    over B's unsearched predicted non-matches (:class:`_SearchSampler`)."""
    if method not in ("oasis", "ais", "importance"):
        raise ValueError(
            "method must be 'oasis' or 'ais' (an adaptive sampler) or 'importance' (static "
            f"importance sampling) to continue sampling, got {method!r}"
        )
    if isinstance(search, bool) or not isinstance(search, (int, float)) or not 0 <= search < 1:
        raise ValueError(f"search must be a share in [0, 1), got {search!r}")
    if search > 0 and method != "oasis":
        raise ValueError(
            f"search is a share of OASIS's proposal: use method='oasis', not {method!r}"
        )
    old = as_importance_run(previous)
    sampler = make_sampler(method, pool_b, seed, **params)
    if method != "importance":  # a static proposal does not learn from labels
        sampler.warm_start(old.index, old.label, old.weight)
    if search > 0:
        known = np.full(pool_b.n_pairs, -1, dtype=np.int8)
        known[old.index] = old.label
        search_seed = None if seed is None else seed + 1
        sampler = _SearchSampler(sampler, known, search, search_seed)
    return sampler


def continue_sampling(
    pool_b: PairPool,
    previous: LabelRun,
    oracle: Callable[[int], int | None],
    new_labels: int,
    *,
    seed: int | None = None,
    method: str = "oasis",
    search: float = 0.0,
    **params,
) -> LabelRun:
    """Evaluate prediction B (``pool_b``: same pairs and scores, B's ``predicted``) after A.

    A sampler for B (``method``, with its ``params``) adds labels until ``new_labels``
    new pairs are labelled; the label cache holds A's labels, so a pair A already labelled
    costs nothing. ``"oasis"`` (default) or ``"ais"`` (Marchant & Rubinstein 2021) start
    from A's labels: each labelled pair updates the oracle model of its B-stratum and
    the F estimate starts from the reused one. ``"importance"``: static importance
    sampling tuned to B from the scores, a proposal fixed in advance. ``search`` (OASIS
    only, default 0): the share of every B draw's proposal spread uniformly over B's
    predicted non-matches in strata where none of the labels so far is a match (where B's
    missed matches could hide unseen; :class:`_SearchSampler`, unbiased by exact
    expectation in tests/test_pairs_reuse_search.py). Measured with ``search=0.2``
    (benchmarks/README.md, "Label reuse across versions"): it did not find FEBRL's
    misses (drawn in 3% of runs with and without it); B's F1 MSE with / without it was
    2.2e-3 / 2.3e-3 on abt-buy, 4.3e-5 / 3.8e-5 on restaurant and 9.8e-5 / 9.2e-5 on
    FEBRL, so it is off by default. Returns the pooled run, A's draws followed by
    B's (``new_label`` marks the labels B paid for).

    When A's proposals are known (a :class:`TracedRun` from :func:`sample_traced` or an
    earlier :func:`continue_sampling`, or a passive or stratified run) and B's are
    recordable (OASIS, static IS), the result is a :class:`TracedRun` (it can be
    continued again): if every stage's proposal was fixed (e.g. static IS for A and for
    B), each draw is weighted against the mixture of all of them (balance heuristic,
    Chaganty et al. 2017, unbiased totals); if one adapted (OASIS), each draw keeps its
    own p/q_t (Marchant & Rubinstein 2021, Theorem 1), as for an untraced A or
    ``method="ais"``. Bias, MSE and coverage with OASIS and with static IS stages: the
    module docstring and benchmarks/README.md ("Label reuse across versions"). Estimate
    the result with :func:`reuse_estimate`, which adds the unsearched-non-match
    diagnostic.
    """
    new_labels = check_count(new_labels, "new_labels", minimum=0)
    if previous.pool_size != pool_b.n_pairs:
        raise ValueError(
            f"the previous run is on a pool of {previous.pool_size} pairs, pool_b has {pool_b.n_pairs}"
        )
    sampler = sampler_for_b(pool_b, previous, method=method, seed=seed, search=search, **params)
    old = as_importance_run(previous)
    known = np.full(pool_b.n_pairs, -1, dtype=np.int8)
    known[old.index] = old.label
    old_proposals = _previous_proposals(previous)
    traced = old_proposals is not None and (
        _records_per_stratum(sampler) or sampler.static_proposal
    )
    new = (
        sample_traced(pool_b, sampler, oracle, new_labels, known=known)
        if traced
        else sample_labels(pool_b, sampler, oracle, new_labels, known=known)
    )
    # B's run with A's draws in front: it keeps B's strata and sampler flags, which the
    # estimator reads (e.g. the stratum model of B's OASIS sampler)
    pooled = replace(
        _plain(new),
        index=np.concatenate([old.index, new.index]),
        label=np.concatenate([old.label, new.label]),
        weight=np.concatenate([_own(old), _own(new)]),
        stratum=np.concatenate([np.full(old.n_draws, -1), new.stratum]),
        new_label=np.concatenate([old.new_label, new.new_label]),
        final_weight=None,
        method=f"{method}+reuse",
        static_proposal=False,
        adaptive=True,
    )
    if not traced:
        return pooled
    return _traced(pooled, (*old_proposals, *new.proposals), f"{method}+reuse")


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
