"""Pair samplers with one interface: passive, stratified proportional, static IS, OASIS.

Every sampler owns a seeded :class:`numpy.random.Generator` and alternates
``draw()`` (returns a :class:`Draw`: pool index, stratum, the probability q with which
this pair was drawn, and the importance weight p/q with p = 1/N) and
``observe(index, label)`` (feeds the label back; only OASIS learns from it). Given the
seed and the sequence of labels, the sequence of draws is deterministic, which is what
lets a labelling session be resumed bit-identically by replaying its log.

Designs (``sampler.design``), which decide how :mod:`er_evaluation.pairs.estimates`
weighs the labels:

- ``"passive"``: simple random sample without replacement (weights equal).
- ``"stratified"``: stratified sample without replacement, allocation proportional to
  stratum size (weights N_k / n_k per stratum).
- ``"importance"``: draws with replacement from q (static IS, or OASIS where q adapts);
  weight w = p(z)/q(z) = omega_k / v_k for OASIS (Marchant & Rubinstein 2017, Algorithm 3, line 6).

Per-draw work is a few operations on arrays of length K (strata) and one lookup into
precomputed per-stratum index arrays; no pandas, no loops over the pool.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from er_evaluation._parameters import check_beta, check_count, check_epsilon, check_seed
from er_evaluation.pairs._stratify import ScoreStrata, parent_strata, stratify
from er_evaluation.pairs.pool import PairPool

__all__ = [
    "Draw",
    "PassiveSampler",
    "StratifiedSampler",
    "ImportanceSampler",
    "OASISSampler",
    "score_probabilities",
    "target_weight",
    "TARGETS",
]

TARGETS = ("f", "precision", "recall")
"""The measures OASIS and static importance sampling can be tuned to: F_beta, precision or
recall."""

DEFAULT_ETA = 2.0
"""OASIS prior pseudo-labels per stratum (chosen by benchmark, see :class:`OASISSampler`)."""

DEFAULT_MAX_SHARE = 0.0333
"""OASIS cuts every stratum of more than floor(0.0333 N) pairs (N the pool's size; about a
thirtieth of the pool, the value written as 0.0333 in the benchmark and kept exactly) into
score chunks whose prior is shared (:class:`OASISSampler` ``max_share``, ``shared_prior``).
Chosen by benchmark (benchmarks/README.md, "Oversized strata cut into score chunks";
reporting seeds 777000 + 1000 r, 100 runs per pool, F1 MSE at 1,000 / 2,000 labels):
abt-buy 2.4e-3 / 9.4e-4 against 3.6e-3 / 2.4e-3 uncut, dblp-acm 4.4e-6 / 3.7e-7 against
2.1e-5 / 2.1e-6, restaurant-all 2.2e-5 / 2.9e-6 against 3.2e-5 / 4.4e-6, restaurant and
PatentsView within Monte-Carlo error, FEBRL's strata unchanged."""

VARIANCE_PRIOR_STRENGTH = 2.0
"""Leaf pseudo-labels per stratum of the variance model of OASIS and AIS runs
(:attr:`OASISSampler.stratum_prior`; the Dirichlet tree of
:func:`~er_evaluation.pairs._variance.oracle_rates` multiplies them by 1 + depth^2).
Chosen by benchmark across six pools (benchmarks/README.md, "OASIS intervals")."""


@dataclass(frozen=True)
class Draw:
    """One draw: pool row ``index``, its ``stratum`` (-1 if none), the probability ``prob``
    that this draw picked this pair and the importance ``weight`` p/q (1 for without-
    replacement designs, whose weights are fixed by the estimator)."""

    index: int
    stratum: int
    prob: float
    weight: float


def score_probabilities(scores: np.ndarray, threshold: float = 0.0) -> np.ndarray:
    """Scores as match probabilities: unchanged if already in [0, 1], else the logistic
    1 / (1 + exp(-(s - threshold))) (Marchant & Rubinstein 2017, Algorithm 2, line 4)."""
    scores = np.asarray(scores, dtype=np.float64)
    if len(scores) and scores.min() >= 0.0 and scores.max() <= 1.0:
        return scores
    return 1.0 / (1.0 + np.exp(-(scores - threshold)))


def target_weight(target: str, beta: float = 1.0) -> float:
    """The weight alpha of the sampler's target F = TP / (alpha PP + (1 - alpha) AP), the
    F_alpha of Marchant & Rubinstein 2017 (eq. 1): 1 for ``"precision"``, 0 for
    ``"recall"`` and 1 / (1 + beta^2) for ``"f"`` (F_beta; ``beta`` checked, used only
    there)."""
    if target == "precision":
        return 1.0
    if target == "recall":
        return 0.0
    if target == "f":
        b = check_beta(beta)
        return 1.0 / (1.0 + b * b)
    raise ValueError(f"target must be one of {', '.join(map(repr, TARGETS))}, got {target!r}")


class _SparsePermutation:
    """Uniform sampling without replacement from range(size) in O(1) per draw: a
    Fisher-Yates shuffle whose swaps are kept in a dict, so nothing of size N is built."""

    __slots__ = ("size", "taken", "swaps")

    def __init__(self, size: int) -> None:
        self.size = size
        self.taken = 0
        self.swaps: dict[int, int] = {}

    def next(self, u: float) -> int:
        j = self.taken + int(u * (self.size - self.taken))
        swaps = self.swaps
        value = swaps.get(j, j)
        swaps[j] = swaps.get(self.taken, self.taken)
        self.taken += 1
        return value

    @property
    def exhausted(self) -> bool:
        return self.taken >= self.size


class _Base:
    design = "importance"
    name = ""
    # True when every draw picks a pair uniformly within a stratum of ``self.strata``
    # (whatever the stratum choice): the estimator then treats each stratum as a simple
    # random sample of its distinct labelled pairs (pairs/_remainder.py)
    uniform_within_strata = False
    # True when every draw comes from one fixed proposal q = p / weight
    static_proposal = False
    # True when the proposal adapts to the labels seen (weights p/q_t differ per draw)
    adaptive = False

    def __init__(self, pool: PairPool, seed: int | None) -> None:
        self.n_pairs = pool.n_pairs
        self.seed = check_seed(seed)
        self.rng = np.random.Generator(np.random.PCG64(self.seed))

    def observe(self, index: int, label: int) -> None:
        """Feed back the label of the last draw (no-op for non-adaptive samplers)."""

    def current_weights(self, indices: np.ndarray) -> np.ndarray:
        """p/q under the current proposal for the given pairs (for Marchant & Rubinstein 2021's variance)."""
        raise NotImplementedError

    def params(self) -> dict:
        return {}


class PassiveSampler(_Base):
    """Uniform sampling without replacement from the whole pool."""

    design = "passive"
    name = "passive"

    def __init__(self, pool: PairPool, seed: int | None = None) -> None:
        super().__init__(pool, seed)
        self._perm = _SparsePermutation(self.n_pairs)

    def draw(self) -> Draw | None:
        """Next pair, or None once every pair has been drawn."""
        if self._perm.exhausted:
            return None
        remaining = self.n_pairs - self._perm.taken
        index = self._perm.next(self.rng.random())
        return Draw(index, -1, 1.0 / remaining, 1.0)


class StratifiedSampler(_Base):
    """Stratified sampling without replacement, allocation proportional to stratum size.

    The first K draws seed every stratum once, so that no stratum is left unsampled once
    the budget reaches K: the largest unseeded stratum of the prediction group with fewer
    seeded strata first, so that both groups are labelled from the second draw on. After
    that draw t goes to the stratum furthest below its proportional share omega_k * t
    (ties to the lowest index). Within the
    stratum the pair is drawn uniformly among its unsampled pairs. Strata are the CSF
    strata (predicted matches and non-matches apart).
    """

    design = "stratified"
    name = "stratified"
    uniform_within_strata = True

    def __init__(
        self,
        pool: PairPool,
        seed: int | None = None,
        *,
        n_strata: int = 30,
        strata: ScoreStrata | None = None,
    ) -> None:
        super().__init__(pool, seed)
        self.n_strata = check_count(n_strata, "n_strata")
        self.strata = (
            strata if strata is not None else stratify(pool.scores, pool.predicted, n_strata)
        )
        self._perms = [_SparsePermutation(int(s)) for s in self.strata.sizes]
        self._counts = np.zeros(self.strata.n_strata)
        self._open = np.ones(self.strata.n_strata, dtype=bool)
        self._t = 0

    def draw(self) -> Draw | None:
        if not self._open.any():
            return None
        unseeded = self._open & (self._counts == 0)
        if unseeded.any():
            # the prediction group with fewer seeded strata first (largest stratum first
            # within it): the predicted-match strata are the smallest, and below K labels
            # a group without a label leaves every metric undefined
            group = (self.strata.predicted >= 0.5).astype(np.int64)
            seeded = np.bincount(group[self._counts > 0], minlength=2)[group]
            key = np.where(unseeded, self.strata.omega - seeded, -np.inf)
            k = int(np.argmax(key))
        else:
            deficit = self.strata.omega * (self._t + 1) - self._counts
            deficit[~self._open] = -np.inf
            k = int(np.argmax(deficit))
        perm = self._perms[k]
        size = perm.size
        local = perm.next(self.rng.random())
        prob = 1.0 / (size - perm.taken + 1)
        if perm.exhausted:
            self._open[k] = False
        self._counts[k] += 1
        self._t += 1
        index = int(self.strata.order[self.strata.offsets[k] + local])
        return Draw(index, k, prob, 1.0)

    def params(self) -> dict:
        return {"n_strata": self.n_strata}


def _optimal_terms(alpha, f_hat, pi, lam):
    """sqrt(E[(D_g ell)^2]) per unit of the asymptotically optimal proposal for F_alpha
    (Marchant & Rubinstein 2017 eq. 12 without omega): (1-a)(1-lam) F sqrt(pi) + lam sqrt((aF)^2 (1-pi) + (1-F)^2 pi)."""
    return (1 - alpha) * (1 - lam) * f_hat * np.sqrt(pi) + lam * np.sqrt(
        (alpha * f_hat) ** 2 * (1 - pi) + (1 - f_hat) ** 2 * pi
    )


def _initial_f(alpha: float, pi: np.ndarray, lam: np.ndarray, mass: np.ndarray) -> float:
    """F_alpha^(0) from the prior guess (Marchant & Rubinstein 2017, Algorithm 2, line 8)."""
    tp = np.sum(mass * pi * lam)
    den = alpha * np.sum(mass * lam) + (1 - alpha) * np.sum(mass * pi)
    return float(tp / den) if den > 0 else 0.5


class ImportanceSampler(_Base):
    """Static importance sampling (with replacement) from the asymptotically optimal
    proposal for the ``target`` (F_beta with ``beta``, precision or recall; the F_alpha of
    Marchant & Rubinstein 2017 with alpha = :func:`target_weight`) evaluated once with
    per-pair score probabilities (the static IS baseline of Marchant & Rubinstein 2017,
    2021), mixed with the uniform distribution: q(z) = eps/N + (1-eps) q*(z). Weight
    w = (1/N) / q(z).

    The estimator's oracle model (:attr:`model_strata`, :attr:`stratum_prior`) is that
    of OASIS runs: 30 CSF strata per prediction group with the score prior, used only
    for the matches no label has shown (:func:`~er_evaluation.pairs._variance.hidden_counts`);
    the draws do not depend on it."""

    name = "importance"
    static_proposal = True

    def __init__(
        self,
        pool: PairPool,
        seed: int | None = None,
        *,
        target: str = "f",
        beta: float = 1.0,
        epsilon: float = 1e-3,
        threshold: float = 0.0,
    ) -> None:
        super().__init__(pool, seed)
        alpha, epsilon = target_weight(target, beta), check_epsilon(epsilon)
        self.target, self.beta = target, float(beta)
        self._alpha, self.epsilon, self.threshold = alpha, epsilon, threshold
        pi = score_probabilities(pool.scores, threshold)
        lam = pool.predicted.astype(np.float64)
        f0 = _initial_f(alpha, pi, lam, np.ones_like(pi))
        opt = _optimal_terms(alpha, f0, pi, lam)
        total = opt.sum()
        n = self.n_pairs
        q = np.full(n, 1.0 / n) if total <= 0 else epsilon / n + (1 - epsilon) * opt / total
        self.q = q
        self._cum = np.cumsum(q)
        self._pool, self._model_strata = pool, None

    @property
    def model_strata(self) -> ScoreStrata:
        """The strata of the estimator's oracle model: 30 CSF strata per prediction group
        (:func:`~er_evaluation.pairs.stratify`), built on first use (drawing never needs
        them)."""
        if self._model_strata is None:
            self._model_strata = stratify(self._pool.scores, self._pool.predicted, 30)
        return self._model_strata

    @property
    def stratum_prior(self) -> np.ndarray:
        """Leaf prior of the oracle model per stratum of :attr:`model_strata`, shape (2, K):
        VARIANCE_PRIOR_STRENGTH x [pi0_k, 1 - pi0_k], pi0_k the stratum's mean score
        probability (as :attr:`OASISSampler.stratum_prior`)."""
        strata = self.model_strata
        prob = score_probabilities(self._pool.scores, self.threshold)
        pi0 = np.bincount(strata.codes, weights=prob, minlength=strata.n_strata) / strata.sizes
        return VARIANCE_PRIOR_STRENGTH * np.vstack([pi0, 1 - pi0])

    def draw(self) -> Draw:
        index = int(np.searchsorted(self._cum, self.rng.random() * self._cum[-1], side="right"))
        index = min(index, self.n_pairs - 1)
        q = float(self.q[index])
        return Draw(index, -1, q, 1.0 / (self.n_pairs * q))

    def current_weights(self, indices: np.ndarray) -> np.ndarray:
        return 1.0 / (self.n_pairs * self.q[np.asarray(indices)])

    def params(self) -> dict:
        return {
            "target": self.target,
            "beta": self.beta,
            "epsilon": self.epsilon,
            "threshold": self.threshold,
        }


MIN_OPEN_SHARE = 0.01
"""OASIS leaves its completed strata (every pair labelled) out of the proposal once the
open strata hold less than this share of it, so at most about 1 / MIN_OPEN_SHARE draws go to
completed strata per draw in an open one. A draw in a completed stratum repeats known labels
and costs no label; the estimator counts that stratum exactly from the draw that completed
it (:func:`~er_evaluation.pairs._remainder.hybrid_estimate`: each later draw adds its known
share N_k / N), which needs q_t > 0 only on the open strata, so either proposal keeps it
unbiased (tests/test_oasis_exact_strata.py, every draw path). The repeats are not wasted:
the more draws after a stratum completes, the less its noisy terms from before weigh, and
leaving completed strata out from the start raised F1's MSE up to 23x on dblp-acm and
1.1-2.9x on the restaurant pools (benchmarks/README.md, "Pair-label intervals"). Without a bound, a small
pool with tied scores (1,545 pairs, 2 strata, the 100 predicted matches holding nearly all
of the proposal) took 400,000 draws for 441 labels; with it, 945 draws for 500."""


class OASISSampler(_Base):
    """OASIS (Marchant & Rubinstein 2017, Algorithms 1-3): adaptive importance sampling over CSF strata.

    ``target`` and ``beta`` choose the measure the proposal is tuned to: F_beta (default
    F1), ``"precision"`` or ``"recall"``; the paper's F_alpha with alpha =
    :func:`target_weight` (1 / (1 + beta^2) for F_beta).

    Per stratum a Beta model of pi_k = P(match) with prior eta * [pi0_k, 1 - pi0_k],
    pi0_k = mean score probability in the stratum (Algorithm 2). The paper's experiments
    (§6) write the prior strength as eta = 2K; the authors' package (`oasis` 0.1.3,
    ``_calc_BB_prior``) divides it by K, i.e. 2 pseudo-labels per stratum. Here ``eta``
    counts pseudo-labels per stratum and defaults to 2, chosen by benchmark
    (benchmarks/README.md, 100 runs, 30 strata per prediction group, F1 MSE at 1,000 /
    2,000 labels): research restaurant pool 5.5e-5 / 1.4e-5 with eta = 2 against 3.4e-4 /
    8.1e-5 with eta = 30 and 3.6e-4 / 8.2e-5 with eta = 2K = 120; abt-buy 2.8e-3 / 2.4e-3
    against 3.3e-3 / 2.0e-3 and 4.7e-3 / 2.1e-3 (a weak prior may starve a stratum that
    still holds matches: heavier-tailed errors on abt-buy at 2,000 labels).
    With ``decay`` (Marchant & Rubinstein 2017 Remark 4) the prior column of stratum k is
    multiplied by 1 / n_k once n_k labels were drawn from it: the posterior mean is
    (m_k + eta pi0_k / n_k) / (n_k + eta / n_k). A stratum whose first labels are
    non-matches then keeps little more than the epsilon share of the proposal, so most
    draws repeat the completed strata holding the matches (free), diluting their noisy
    terms from before they completed: what the authors' package gains at small budgets.
    The default is no decay: where the starved strata hold missed matches it loses. With
    the default strata (benchmarks/README.md, "OASIS as the authors' package"; same
    seeds, 100 runs, abt-buy 200; F1 MSE at 500 / 1,000 / 2,000 labels) decay gave
    dblp-acm 1.6e-5 / 1.0e-7 / 8.6e-8 against 6.9e-5 / 4.6e-6 / 3.8e-7, restaurant
    1.5e-4 / 3.4e-5 / 1.1e-5 against 4.1e-4 / 8.5e-5 / 1.4e-5, restaurant-all 4.8e-5 /
    3.0e-6 / 1.7e-7 against 2.7e-4 / 2.8e-5 / 4.1e-6; FEBRL (1.6e-3 / 1.0e-3 / 6.3e-4
    against 1.6e-3 / 1.0e-3 / 5.4e-4) and PatentsView (8.0e-5 / 3.9e-5 / 1.8e-5 against
    8.5e-5 / 4.0e-5 / 2.0e-5) within Monte-Carlo error; but abt-buy 5.2e-3 / 4.7e-3 /
    3.9e-3 against 4.5e-3 / 2.4e-3 / 1.3e-3 (at 2,000 labels a paired difference of
    2.6e-3 +- 1.1e-3; recall coverage 80% against 87%): a match drawn late in a starved
    stratum carries a weight near 1 / epsilon (on uncut strata with decay, abt-buy F1 MSE
    at 2,000 labels 1.4e-2 +- 7.9e-3, 40 runs, the paper's weighted-ratio estimate).
    With ``epsilon=0.01`` as well, abt-buy is within Monte-Carlo error of the default
    (5.5e-3 / 3.5e-3 / 2.3e-3, 200 runs) but FEBRL at 2,000 labels is not (6.9e-4, a paired
    difference of 1.5e-4 +- 6.9e-5).
    Each draw uses
    v_k = eps omega_k + (1 - eps) v*_k with v*_k proportional to omega_k times the optimal
    term sqrt(E[(D_g ell)^2]) (Marchant & Rubinstein 2017, eq. 12) at the current F_alpha estimate; weight w = omega_k / v_k
    (Algorithm 3, line 6). ``observe`` adds the label to stratum k's counts and updates
    F = sum w l lhat / (alpha sum w lhat + (1 - alpha) sum w l) (Algorithm 3, line 11).
    ``n_bins`` is the CSF histogram of the strata (:func:`~er_evaluation.pairs.csf_edges`;
    None: 40 K equal bins; ``"fd"``: Freedman-Diaconis bins as in the authors' package).
    The package's bins are an option, not a default: per prediction group they help
    abt-buy and hurt the restaurant pools (benchmarks/README.md, "OASIS as the authors'
    package"; F1 MSE at 1,000 / 2,000 labels): abt-buy 3.4e-3 / 1.4e-3 with ``n_bins="fd"``
    (200 runs) and 2.7e-3 / 1.7e-3 with decay as well, restaurant-all 1.4e-3 / 4.2e-4 and
    1.4e-3 / 3.8e-4 (100 runs) against 5.5e-5 / 1.4e-5 with these defaults (abt-buy:
    3.4e-3 / 3.5e-3 +- 1.2e-3, 200 runs, a heavy tail).
    ``by_prediction=False`` stratifies all scores together, as the paper (§6) and the
    package do: a stratum may then hold both predictions, lambda_k is its share of
    predicted matches, the proposal is omega_k sqrt(lambda_k (alpha^2 F^2 (1 - pi_k) +
    (1 - F)^2 pi_k) + (1 - lambda_k)(1 - alpha)^2 F^2 pi_k) and the F update uses each
    pair's own prediction. With eta = 2K and decay (the paper's configuration taken
    literally) it beats the research figures where the missed matches score next to the
    predicted matches (restaurant-all 7.5e-6 / 1.7e-6 at 1,000 / 2,000 labels, 10 runs;
    dblp-acm 5.3e-6 / 6.5e-7, 15 runs) and loses elsewhere (abt-buy 1.0e-2 / 8.1e-3, 41
    runs, a heavy tail; FEBRL 2.2e-3 / 1.3e-3, 13 runs; PatentsView 6.3e-5 / 2.5e-5, 100
    runs, against 5.0e-5 / 2.4e-5), so it is an option (benchmarks/README.md, "OASIS as
    the paper").
    ``max_share`` (None: off; default :data:`DEFAULT_MAX_SHARE`) cuts every stratum of
    more than that share of the pool into score chunks of at most that many pairs
    (``doubling``: chunks of that many, twice, four times as many, ... pairs from the top),
    the other strata unchanged (:func:`~er_evaluation.pairs.stratify`); with
    ``shared_prior`` (default) the chunks of a stratum share its eta pseudo-labels in
    proportion to their sizes (False: eta each). These defaults (benchmarks/README.md,
    "Oversized strata cut into score chunks"; 100 runs per pool on the reporting seeds, F1
    MSE at 1,000 / 2,000 labels against uncut strata, ``max_share=None``): abt-buy 2.4e-3 /
    9.4e-4 against 3.6e-3 / 2.4e-3, dblp-acm 4.4e-6 / 3.7e-7 against 2.1e-5 / 2.1e-6,
    restaurant-all 2.2e-5 / 2.9e-6 against 3.2e-5 / 4.4e-6, restaurant and PatentsView
    within Monte-Carlo error, FEBRL unchanged (nothing cut: its oversized stratum is one
    tied score); chunks with eta each instead lose restaurant-all by 1.3-6x (200
    screening runs). The eta and bins figures above were measured on uncut strata.
    """

    name = "oasis"
    uniform_within_strata = True
    adaptive = True

    def __init__(
        self,
        pool: PairPool,
        seed: int | None = None,
        *,
        target: str = "f",
        beta: float = 1.0,
        epsilon: float = 1e-3,
        n_strata: int = 30,
        eta: float | None = None,
        decay: bool = False,
        threshold: float = 0.0,
        n_bins: int | str | None = None,
        by_prediction: bool = True,
        max_share: float | None = DEFAULT_MAX_SHARE,
        doubling: bool = False,
        shared_prior: bool = True,
        strata: ScoreStrata | None = None,
    ) -> None:
        super().__init__(pool, seed)
        alpha, epsilon = target_weight(target, beta), check_epsilon(epsilon)
        self.target, self.beta = target, float(beta)
        n_strata = check_count(n_strata, "n_strata")
        if not isinstance(by_prediction, (bool, np.bool_)):
            raise ValueError(f"by_prediction must be True or False, got {by_prediction!r}")
        if eta is not None and (
            isinstance(eta, bool)
            or not isinstance(eta, (int, float))
            or not math.isfinite(eta)
            or eta <= 0
        ):
            raise ValueError(f"eta (prior strength) must be a finite number > 0, got {eta!r}")
        self._alpha, self.epsilon, self.n_strata, self.threshold = (
            alpha,
            epsilon,
            n_strata,
            threshold,
        )
        self.decay = bool(decay)
        self.n_bins = n_bins
        self.by_prediction = bool(by_prediction)
        self.max_share = max_share
        self.doubling = bool(doubling)
        self.shared_prior = bool(shared_prior)
        self.strata = (
            strata
            if strata is not None
            else stratify(
                pool.scores,
                pool.predicted,
                n_strata,
                n_bins=n_bins,
                by_prediction=by_prediction,
                max_share=max_share,
                doubling=doubling,
            )
        )
        st = self.strata
        prob = score_probabilities(pool.scores, threshold)
        pi0 = np.bincount(st.codes, weights=prob, minlength=st.n_strata) / st.sizes
        self.eta = float(DEFAULT_ETA if eta is None else eta)
        self.omega = st.omega
        self.lam = st.lam
        # the prediction of every pair: lhat of a draw (a stratum may hold both predictions)
        self._predicted = pool.predicted
        self._pi0 = pi0
        strength = self.eta
        if self.shared_prior and st.parent is not None:
            # chunks cut from one stratum share its eta pseudo-labels by size, so cutting
            # moves the stratum's prior proposal towards its higher scores without adding to it
            parent_size = np.bincount(st.parent, weights=st.sizes)[st.parent]
            strength = self.eta * st.sizes / parent_size
        self._model_strata: ScoreStrata | None = None
        self.prior1 = strength * pi0  # prior pseudo-counts of matches
        self.prior0 = strength * (1 - pi0)  # and of non-matches
        self.n1 = np.zeros(st.n_strata)  # labels seen per stratum: matches
        self.n0 = np.zeros(st.n_strata)  # and non-matches
        self.f_hat = _initial_f(alpha, pi0, self.lam, st.sizes.astype(np.float64))
        self._sums = np.zeros(3)  # weighted sums of l*lhat, lhat, l
        self._sizes = st.sizes.astype(np.float64)
        self._offsets = st.offsets
        self._order = st.order
        self._last: Draw | None = None
        self._w0 = self.omega * (1 - alpha) * (1 - self.lam)
        self._w1 = self.omega * self.lam
        self._mixed = st.mixed
        self._eps_omega = epsilon * self.omega
        # completed strata: every pair labelled, taken out of the proposal
        self._seen = np.zeros(pool.n_pairs, dtype=bool)
        self._distinct = [0] * st.n_strata  # distinct labelled pairs per stratum
        self._found = [[0, 0] for _ in range(st.n_strata)]  # their sums of l lhat and l
        self._open: np.ndarray | None = None  # 1.0 per open stratum once one completed
        self._closed_sums = np.zeros(3)  # what the completed strata add to each draw
        self._v = self._proposal()

    @property
    def model_strata(self) -> ScoreStrata:
        """The strata of the estimator's variance model: those the chunks of cut strata
        were cut from (:func:`~er_evaluation.pairs._stratify.parent_strata`; the
        sampler's strata when nothing was cut). Built on first use: drawing never needs
        them (on 10 million pairs a stable sort of the codes)."""
        if self._model_strata is None:
            self._model_strata = parent_strata(self.strata)
        return self._model_strata

    @property
    def stratum_prior(self) -> np.ndarray:
        """The leaf prior of the estimator's variance model per stratum of
        :attr:`model_strata`, shape (2, K'): pseudo-counts of matches and of non-matches,
        VARIANCE_PRIOR_STRENGTH * [pi0_k, 1 - pi0_k] with the sampler's prior mean pi0_k
        (pooled over the chunks of a cut stratum) whatever ``eta`` is
        (:func:`~er_evaluation.pairs._variance.oracle_rates`: a Dirichlet tree over the
        strata whose prior means are rescaled to the labels). Strength chosen by benchmark
        (benchmarks/README.md, "OASIS intervals").

        The model is on the uncut strata (``model_strata``, the parents of the chunks
        ``max_share`` cuts): each leaf's pseudo-labels weigh against the labels of its
        stratum, and a chunk holds a share of its parent's labels, so a model on the
        chunks keeps every blind chunk's rate near its prior and widened recall
        intervals about 1.7-2.3x on abt-buy and the restaurant pools (benchmarks/README.md,
        "Coverage with cut strata", 200 runs per pool: abt-buy recall coverage at 1,000 /
        2,000 labels 100 / 100% with the model on the chunks, 99 / 98% on their parents;
        on the screening seeds 99.5 / 100% against 98 / 97%; no cell below 92%)."""
        pi0 = self._pi0
        model = self.model_strata
        if model is not self.strata:
            st = self.strata
            pooled = np.bincount(st.parent, weights=st.sizes * pi0, minlength=model.n_strata)
            pi0 = pooled / model.sizes
        return VARIANCE_PRIOR_STRENGTH * np.vstack([pi0, 1 - pi0])

    def posterior_mean(self) -> np.ndarray:
        """pi-hat_k: posterior mean of each stratum's match rate (Marchant & Rubinstein 2017 eq. 11, with the
        Remark 4 decay of the prior when ``decay``)."""
        n = self.n1 + self.n0
        scale = 1.0 / np.maximum(n, 1.0) if self.decay else 1.0
        g1 = self.n1 + scale * self.prior1
        return g1 / (g1 + self.n0 + scale * self.prior0)

    def _proposal(self) -> np.ndarray:
        """v = eps omega + (1 - eps) v*; omega (1 - alpha)(1 - lambda) and omega lambda are
        precomputed so that each update is a handful of operations on length-K arrays."""
        pi = self.posterior_mean()
        af, bf = self._alpha * self.f_hat, 1.0 - self.f_hat
        if self._mixed:
            # omega_k sqrt(E_k[(D_g ell)^2]) over a stratum holding both predictions, its
            # pairs sharing the match rate pi_k (the paper's lambda_k form, §5; the package's)
            cf = (1.0 - self._alpha) * self.f_hat
            inner = self.lam * (af * af + (bf * bf - af * af) * pi) + (1 - self.lam) * cf * cf * pi
            opt = self.omega * np.sqrt(inner)
        else:
            opt = self.f_hat * self._w0 * np.sqrt(pi)
            opt += self._w1 * np.sqrt(af * af + (bf * bf - af * af) * pi)
        total = opt.sum()
        if total <= 0:
            v = self.omega.copy()
        else:
            v = self._eps_omega + ((1 - self.epsilon) / total) * opt
        if self._open is not None:
            share = float(np.dot(v, self._open))
            if share < MIN_OPEN_SHARE:
                # the proposal given that the draw falls in an open stratum
                v = v * self._open
                if share <= 0:  # every pair labelled: nothing left to draw
                    self._cum = np.zeros(len(v))
                    return v
                v = v / share
        self._cum = np.cumsum(v)
        return v

    def draw(self) -> Draw | None:
        v = self._v
        if not self._cum[-1] > 0:  # every stratum completed: every pair is labelled
            return None
        u1, u2 = self.rng.random(2)
        cum = self._cum
        k = min(int(np.searchsorted(cum, u1 * cum[-1], side="right")), len(v) - 1)
        start = self._offsets[k]
        local = int(u2 * (self._offsets[k + 1] - start))
        index = int(self._order[start + local])
        vk = float(v[k])
        draw = Draw(index, k, vk / self._sizes[k], float(self.omega[k] / vk))
        self._last = draw
        return draw

    def observe(self, index: int, label: int) -> None:
        last = self._last
        if last is None or last.index != index:
            raise ValueError(f"observe({index}) does not answer the last draw ({last})")
        k = last.stratum
        if label:
            self.n1[k] += 1.0
        else:
            self.n0[k] += 1.0
        lhat = float(self._predicted[index])
        w = last.weight
        # a completed stratum is no longer drawn: each draw adds its known share instead
        self._sums += (w * label * lhat, w * lhat, w * label)
        if self._open is not None:
            self._sums += self._closed_sums
        den = self._alpha * self._sums[1] + (1 - self._alpha) * self._sums[2]
        if den > 0:
            self.f_hat = float(self._sums[0] / den)
        self._last = None
        if not self._seen[index]:
            self._seen[index] = True
            self._distinct[k] += 1
            if label:
                self._found[k][0] += int(lhat)
                self._found[k][1] += 1
            if self._distinct[k] == self._sizes[k]:
                self._complete(k)
        self._v = self._proposal()

    def _complete(self, k: int) -> None:
        """Mark stratum k, every pair of it labelled, as complete. While the open strata
        hold less than :data:`MIN_OPEN_SHARE` of the proposal, the completed ones are left
        out of it (the proposal given an open stratum)."""
        if self._open is None:
            self._open = np.ones(self.strata.n_strata)
        self._open[k] = 0.0
        start, stop = self._offsets[k], self._offsets[k + 1]
        predicted = float(np.sum(self._predicted[self._order[start:stop]]))
        exact = np.array([self._found[k][0], predicted, self._found[k][1]], dtype=np.float64)
        self._closed_sums = self._closed_sums + exact / self.n_pairs

    def warm_start(self, index: np.ndarray, label: np.ndarray, weight: np.ndarray) -> None:
        """Start from earlier labelled draws (label reuse): every draw's label is added to
        the Beta posterior of its stratum and to the weighted sums behind F, as if this
        sampler had observed them."""
        codes = self.strata.codes[np.asarray(index)]
        label = np.asarray(label, dtype=np.float64)
        weight = np.asarray(weight, dtype=np.float64)
        k = self.strata.n_strata
        self.n1 += np.bincount(codes, weights=label, minlength=k)
        self.n0 += np.bincount(codes, weights=1.0 - label, minlength=k)
        lhat = self._predicted[np.asarray(index)].astype(np.float64)
        self._sums += (
            np.sum(weight * label * lhat),
            np.sum(weight * lhat),
            np.sum(weight * label),
        )
        den = self._alpha * self._sums[1] + (1 - self._alpha) * self._sums[2]
        if den > 0:
            self.f_hat = float(self._sums[0] / den)
        self._v = self._proposal()

    def current_weights(self, indices: np.ndarray) -> np.ndarray:
        """omega_k / v_k of the current proposal; infinite for a completed stratum (no
        longer drawn)."""
        codes = self.strata.codes[np.asarray(indices)]
        with np.errstate(divide="ignore"):
            return self.omega[codes] / self._v[codes]

    def params(self) -> dict:
        return {
            "target": self.target,
            "beta": self.beta,
            "epsilon": self.epsilon,
            "n_strata": self.n_strata,
            "eta": self.eta,
            "decay": self.decay,
            "threshold": self.threshold,
            "n_bins": self.n_bins,
            "by_prediction": self.by_prediction,
            "max_share": self.max_share,
            "doubling": self.doubling,
            "shared_prior": self.shared_prior,
        }
