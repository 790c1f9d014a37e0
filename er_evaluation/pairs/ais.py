"""Adaptive importance sampling for any target measure (Marchant & Rubinstein 2021).

Each draw comes from the asymptotically optimal proposal for the target measure G = g(R)
(Marchant & Rubinstein 2021, Proposition 1 / Proposition 2, deterministic oracle), estimated with the
current Dirichlet-tree model of the oracle (§4; :mod:`er_evaluation.pairs.dirichlet_tree`)
and mixed with the uniform distribution p(x) = 1/N for positivity (and label reuse,
§3.3.1):

    q(x) = eps / N + (1 - eps) v(x) / sum_x' v(x'),
    v(x) = sum_y pi(y | x) ||Dg(R_hat) ell(x, y)||_2,

where pi(y | x) is the posterior predictive of x's stratum for an unlabelled pair and a
point mass at its label once x is labelled (the oracle is deterministic: a pair already
labelled is drawn again at no cost), and R_hat = (1/N) sum_x sum_y pi(y | x) ell(x, y) is
the model's estimate of the totals (as in the authors' implementation; the default
``plug_in="ais"`` uses the AIS estimate of the totals instead, and the model's totals
for a loss class no draw has reached yet). The proposal is recomputed after every new
label (stage size 1, Marchant & Rubinstein 2021 §3 recommends small stages), and after
every draw with ``counts="weighted"``.

Per draw the work is on arrays of the size of the number of *cells* (stratum x loss
class: K for F-measures, about K + L for a PR curve with L thresholds), never of the
pool: all unlabelled pairs of a cell share v(x), all labelled pairs of a (class, label)
group share v(x). A pair is drawn by picking a cell or group, then a member uniformly:
unlabelled members of a cell are kept at the end of the cell's segment of a
cell-sorted index by swaps recorded in a dict (nothing of size N is copied), labelled
members in one list per group.
"""

from __future__ import annotations

import numpy as np

from er_evaluation._parameters import check_beta, check_count, check_epsilon
from er_evaluation.pairs._stratify import ScoreStrata, stratify
from er_evaluation.pairs.dirichlet_tree import DirichletTree, balanced_tree
from er_evaluation.pairs.measures import Measure, f_measures, pr_curve
from er_evaluation.pairs.pool import PairPool
from er_evaluation.pairs.samplers import (
    VARIANCE_PRIOR_STRENGTH,
    Draw,
    _Base,
    score_probabilities,
)

__all__ = ["AISSampler", "TARGETS"]

TARGETS = ("f", "precision", "recall", "pr_curve")
PROPOSALS = ("pair", "stratum")
COUNTS = ("labels", "weighted")
PRIORS = ("scores", "rates")
TREES = ("prediction", "score")


def _target_measure(pool: PairPool, target: str, beta: float, n_thresholds: int) -> Measure:
    if target == "f":
        return _select(f_measures(pool.predicted, beta), [2])
    if target in ("precision", "recall"):
        return _select(f_measures(pool.predicted), [0 if target == "precision" else 1])
    if target == "pr_curve":
        return pr_curve(pool.scores, n_thresholds)
    raise ValueError(f"unknown target {target!r}; choose one of {', '.join(TARGETS)}")


def _select(measure: Measure, components: list[int]) -> Measure:
    """The measure restricted to some of its components (same totals)."""
    func, jac = measure.func, measure.jacobian
    return Measure(
        tuple(measure.names[i] for i in components),
        measure.codes,
        measure.table,
        lambda r: np.asarray(func(r))[components],
        lambda r: np.asarray(jac(r))[components],
        measure.bounded,
        None if measure.denominators is None else measure.denominators[components],
        None if measure.numerators is None else measure.numerators[components],
        None if measure.f_alphas is None else tuple(measure.f_alphas[i] for i in components),
    )


class AISSampler(_Base):
    """Adaptive importance sampler of Marchant & Rubinstein 2021 for a target measure.

    ``target``: ``"f"`` (F_beta with ``beta``, default F1), ``"precision"``, ``"recall"``, ``"pr_curve"`` (precision
    and recall at ``n_thresholds`` evenly spaced score thresholds), or pass any
    :class:`~er_evaluation.pairs.measures.Measure` of this pool as ``measure``.
    ``epsilon``: weight of the uniform mixture (positivity; weights are at most 1/eps).
    Oracle model: CSF strata (``n_strata`` per prediction group, or ``strata``) ordered by
    mean score under a balanced tree of the given ``branching`` (None: one level, i.e. a
    Beta model per stratum as in OASIS). ``tree``: ``"prediction"`` splits the
    predicted non-matches from the predicted matches at the root, each group a balanced
    tree over its strata in score order; ``"score"`` (default) orders all strata by mean
    score under one balanced tree, which puts strata of the two groups with similar scores under one
    branch (where the prediction is not a score threshold, as on PatentsView, their match
    rates differ most). ``prior``:

    - ``"rates"`` (default): leaf pseudo-counts ``prior_strength`` times the floored
      score rate r_k = (n_k s_k + 1/2) / (n_k + 1) of each label (s_k the mean
      score-probability of stratum k, n_k its size), and every node's prior multiplied
      by 1 + ``depth_concentration`` * depth^2, so the prior predictive of every stratum
      is exactly r_k and deep branches are the hardest to move;
    - ``"scores"``: the prior of Marchant & Rubinstein 2021, §5.2: leaf pseudo-counts
      ``prior_strength`` times s_k, plus ``depth_concentration`` * depth^2 on every node.
      Its depth terms are the same for both labels, so a stratum without labels starts
      near a match rate of 1/2 whatever its size and scores: a stratum of millions of
      zero-score pairs (FEBRL) then draws most labels (benchmarks/README.md).

    ``counts``: ``"labels"`` (default; each pair's label counts once, the deterministic
    oracle) or ``"weighted"`` (every draw counts with its weight p/q, the bias-corrected
    counts of Marchant & Rubinstein 2021, Appendix H; the ``"rates"`` prior is then
    pseudo-draws from the pool). ``proposal``: ``"pair"`` (default; v(x) above) or
    ``"stratum"`` (v = sqrt(sum_y pi(y | x) ||Dg ell(x, y)||^2): the variance-minimising
    proposal among those uniform within strata, as in the authors' code).

    ``draw()`` returns a :class:`~er_evaluation.pairs.samplers.Draw` with q(x) and
    w = (1/N) / q(x); ``observe(index, label)`` feeds the label back.

    Measured: see the section "Adaptive importance sampling for any measure" of
    benchmarks/README.md (F1 mean squared error per pool beside OASIS, static IS and
    passive sampling, PR-curve error and coverage, time per draw at 10M pairs).
    """

    name = "ais"
    adaptive = True  # per-draw weights p/q_t: estimated as an adaptive importance run

    def __init__(
        self,
        pool: PairPool,
        seed: int | None = None,
        *,
        target: str = "f",
        beta: float = 1.0,
        measure: Measure | None = None,
        epsilon: float = 1e-3,
        n_strata: int = 64,
        branching: int | None = 2,
        prior_strength: float = 100.0,
        depth_concentration: float = 1.0,
        threshold: float = 0.0,
        n_thresholds: int = 100,
        plug_in: str = "ais",
        proposal: str = "pair",
        counts: str = "labels",
        prior: str = "rates",
        tree: str = "score",
        strata: ScoreStrata | None = None,
    ) -> None:
        super().__init__(pool, seed)
        if plug_in not in ("ais", "model"):
            raise ValueError(f"plug_in must be 'ais' or 'model', got {plug_in!r}")
        if proposal not in PROPOSALS:
            raise ValueError(f"proposal must be one of {', '.join(PROPOSALS)}, got {proposal!r}")
        if counts not in COUNTS:
            raise ValueError(f"counts must be one of {', '.join(COUNTS)}, got {counts!r}")
        if prior not in PRIORS:
            raise ValueError(f"prior must be one of {', '.join(PRIORS)}, got {prior!r}")
        if tree not in TREES:
            raise ValueError(f"tree must be one of {', '.join(TREES)}, got {tree!r}")
        self.tree = tree
        self.plug_in = plug_in
        self.proposal = proposal
        self.counts = counts
        self.prior = prior
        beta, epsilon = check_beta(beta), check_epsilon(epsilon)
        n_strata, n_thresholds = (
            check_count(n_strata, "n_strata"),
            check_count(n_thresholds, "n_thresholds"),
        )
        if branching is not None:
            branching = check_count(branching, "branching", minimum=2)
        for name, value in (
            ("prior_strength", prior_strength),
            ("depth_concentration", depth_concentration),
        ):
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        self.target = "custom" if measure is not None else target
        self.beta, self.epsilon, self.n_strata = beta, float(epsilon), int(n_strata)
        self.branching = None if branching is None else int(branching)
        self.prior_strength = float(prior_strength)
        self.depth_concentration = float(depth_concentration)
        self.threshold, self.n_thresholds = float(threshold), int(n_thresholds)
        self.measure = (
            measure
            if measure is not None
            else _target_measure(pool, target, self.beta, self.n_thresholds)
        )
        if self.measure.n_pairs != pool.n_pairs:
            raise ValueError(
                f"the measure covers {self.measure.n_pairs} pairs, the pool {pool.n_pairs}"
            )
        self.strata = (
            strata if strata is not None else stratify(pool.scores, pool.predicted, n_strata)
        )
        st = self.strata
        n = self.n_pairs
        # -- oracle model: leaves = strata sorted by mean score ----------------------
        prob = score_probabilities(pool.scores, threshold)
        s1 = np.bincount(st.codes, weights=prob, minlength=st.n_strata) / st.sizes
        # leaves in score order; with tree="prediction" predicted non-matches first and
        # the root's two children split the prediction groups (where the prediction is
        # not a score threshold, e.g. PatentsView, score neighbours across groups have
        # very different match rates and should not share a branch)
        if tree == "prediction":
            leaf_order = np.lexsort((st.mean_score, st.predicted))
            groups = np.bincount(st.predicted, minlength=2)
            groups = groups[groups > 0]
        else:
            leaf_order = np.argsort(st.mean_score, kind="stable")
            groups = None
        leaf_of_stratum = np.empty(st.n_strata, dtype=np.int64)
        leaf_of_stratum[leaf_order] = np.arange(st.n_strata)
        self._leaf_of_stratum = leaf_of_stratum
        leaf_prior = np.zeros((2, st.n_strata))
        if prior == "rates":
            # the expected match rate of stratum k under the scores, with half a match
            # and half a non-match added (a floor that keeps every rate positive without
            # inflating the rate of a large stratum); with weighted counts the prior is
            # pseudo-draws from the pool, so each stratum's share is its pool share
            rate = (st.sizes * s1 + 0.5) / (st.sizes + 1.0)
            scale = prior_strength * (st.sizes / n if counts == "weighted" else 1.0)
            leaf_prior[1, leaf_of_stratum] = scale * rate
            leaf_prior[0, leaf_of_stratum] = scale * (1.0 - rate)
        else:
            leaf_prior[1, leaf_of_stratum] = prior_strength * s1
            leaf_prior[0, leaf_of_stratum] = prior_strength * (1.0 - s1)
        # prior mean match rate per stratum (stratum order), for the estimator's variance
        self._prior_mean = rate if prior == "rates" else s1
        parent, leaf_node = balanced_tree(st.n_strata, self.branching, groups)
        self.model = DirichletTree(
            leaf_prior,
            parent,
            leaf_node,
            depth_concentration=depth_concentration,
            depth_prior="proportional" if prior == "rates" else "additive",
        )
        # -- cells: (stratum, loss class) ---------------------------------------------
        n_classes = self.measure.n_classes
        raw = st.codes.astype(np.int64) * n_classes + self.measure.codes
        counts = np.bincount(raw, minlength=st.n_strata * n_classes)
        kept = np.flatnonzero(counts)
        cell_of_raw = np.full(len(counts), -1, dtype=np.int64)
        cell_of_raw[kept] = np.arange(len(kept))
        self._cell = cell_of_raw[raw].astype(np.int32 if len(kept) < 2**31 else np.int64)
        self._order = np.argsort(self._cell, kind="stable")
        sizes = counts[kept]
        self._start = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self._cell_stratum = kept // n_classes
        self._cell_class = kept % n_classes
        self._cell_leaf = leaf_of_stratum[self._cell_stratum]
        self._n_labelled = np.zeros(len(kept), dtype=np.int64)
        self._n_cells = len(kept)
        # one array of entry sizes: unlabelled pairs per cell, then labelled pairs per
        # (class, label) group; the two properties below are views into it
        self._entry_size = np.concatenate([sizes, np.zeros(2 * n_classes)]).astype(np.float64)
        # per entry: the leaf whose pi(1 | leaf) it uses (labelled groups: the constants
        # 0 and 1 appended after the leaves, their known label) and the (class, label)
        # norms it mixes, so that the masses of all entries are one formula
        n_leaves = self.model.n_leaves
        self._pi = np.zeros(n_leaves + 2)
        self._pi[n_leaves + 1] = 1.0
        group_label = np.tile([0, 1], n_classes)
        self._entry_leaf = np.concatenate([self._cell_leaf, n_leaves + group_label])
        groups = np.arange(2 * n_classes)
        self._entry_norm0 = np.concatenate([2 * self._cell_class, groups])
        self._entry_norm1 = np.concatenate([2 * self._cell_class + 1, groups])
        # uniform share of every entry, kept up to date as pairs move from cell to group
        self._eps_share = self._entry_size * (self.epsilon / n)
        self._moved: dict[int, int] = {}  # position -> pool index, overriding _order
        self._where: dict[int, int] = {}  # pool index -> position, for moved pairs
        # labelled pairs: one list per (class, label) group
        self._members: list[list[int]] = [[] for _ in range(2 * n_classes)]
        self._known = np.full(n, -1, dtype=np.int8)
        self._expected = np.empty((n_classes, 2))
        self._draw_sums = np.zeros((n_classes, 2))  # sum of weights per (class, label)
        # classes of pool pairs that no draw has reached yet
        self._unseen = np.bincount(self.measure.codes, minlength=n_classes) > 0
        self._n_unseen = int(self._unseen.sum())
        self._n_draws = 0
        self._last: tuple[Draw, int, int] | None = None
        self._update_proposal()

    @property
    def stratum_prior(self) -> np.ndarray:
        """Leaf prior of the estimator's variance model, shape (2, K) in stratum order:
        VARIANCE_PRIOR_STRENGTH x [r_k, 1 - r_k] with this sampler's prior mean r_k
        (:func:`~er_evaluation.pairs._variance.oracle_rates`, as for OASIS runs)."""
        return VARIANCE_PRIOR_STRENGTH * np.vstack([self._prior_mean, 1.0 - self._prior_mean])

    # -- proposal ------------------------------------------------------------------------
    def _update_proposal(self) -> None:
        """q over entries (cells' unlabelled parts, labelled groups); see the module
        docstring. Mass of a cell = sum over its unlabelled pairs of
        sum_y pi(y | k) ||Dg ell(c, y)||, of a group = its size times ||Dg ell(c, y)||."""
        self.model.predict(out=self._pi[: self.model.n_leaves])
        pi = self._pi[self._entry_leaf]  # pi(1 | x) of every entry's pairs
        sizes = self._entry_size
        n_classes = len(self._expected)
        norms = None
        if self.plug_in == "ais" and self._n_draws:
            # (1/T) sum_j w_j ell_j is an estimate of the pool mean; T cancels in ratios
            # but not in general measures, so scale the sums to pool counts
            plug = self._draw_sums * (self.n_pairs / self._n_draws)
            if self._n_unseen:
                # a class no draw has reached yet (e.g. the few pairs above a PR curve's
                # top threshold) would drop out of the gradient and never be drawn but
                # through epsilon: its totals come from the model until it is drawn
                plug[self._unseen] = self._model_counts(pi)[self._unseen]
            norms = self.measure.proposal_norms(plug, self.n_pairs)
        if norms is None:
            norms = self.measure.proposal_norms(self._model_counts(pi), self.n_pairs)
        if norms is None:  # the measure is undefined even under the model: stay uniform
            norms = np.zeros(2 * n_classes)
        if self.proposal == "stratum":
            sq = norms * norms
            sq0 = sq[self._entry_norm0]
            mass = np.sqrt(sq0 + pi * (sq[self._entry_norm1] - sq0))
        else:
            n0 = norms[self._entry_norm0]
            mass = n0 + pi * (norms[self._entry_norm1] - n0)
        mass *= sizes
        total = mass.sum()
        if total > 0 and np.isfinite(total):
            mass *= (1.0 - self.epsilon) / total
            mass += self._eps_share
            self._entry_prob = mass
        else:
            self._entry_prob = sizes / self.n_pairs
        self._cum = self._entry_prob.cumsum()

    def _model_counts(self, pi: np.ndarray) -> np.ndarray:
        """Expected pairs per (class, label) under the model: labelled groups exactly,
        unlabelled pairs of a cell with pi(1 | x) of its leaf (``pi`` per entry)."""
        nc, n_classes = self._n_cells, len(self._expected)
        sizes = self._entry_size
        unl, a1 = sizes[:nc], sizes[:nc] * pi[:nc]
        expected = self._expected
        expected[:, 0] = np.bincount(self._cell_class, weights=unl - a1, minlength=n_classes)
        expected[:, 1] = np.bincount(self._cell_class, weights=a1, minlength=n_classes)
        expected += sizes[nc:].reshape(n_classes, 2)
        return expected

    def _pair_prob(self, entry: int) -> float:
        return float(self._entry_prob[entry] / self._entry_size[entry])

    # -- drawing -------------------------------------------------------------------------
    def draw(self) -> Draw:
        u1, u2 = self.rng.random(2)
        cum = self._cum
        entry = min(int(cum.searchsorted(u1 * cum[-1], side="right")), len(cum) - 1)
        if entry < self._n_cells:
            unl = int(self._entry_size[entry])
            pos = int(self._start[entry] + self._n_labelled[entry] + int(u2 * unl))
            index = self._moved.get(pos)
            if index is None:
                index = int(self._order[pos])
            stratum = int(self._cell_stratum[entry])
        else:
            members = self._members[entry - self._n_cells]
            index = members[int(u2 * len(members))]
            pos = -1
            stratum = int(self.strata.codes[index])
        q = self._pair_prob(entry)
        draw = Draw(index, stratum, q, 1.0 / (self.n_pairs * q))
        self._last = (draw, entry, pos)
        return draw

    def observe(self, index: int, label: int) -> None:
        """Feed back the label of the last draw; a new label updates the model and the
        proposal, a repeat of a labelled pair must agree with its known label."""
        if self._last is None or self._last[0].index != index:
            last = None if self._last is None else self._last[0]
            raise ValueError(f"observe({index}) does not answer the last draw ({last})")
        label = int(label)
        if label not in (0, 1):
            raise ValueError(f"label must be 0 or 1, got {label!r}")
        draw, entry, pos = self._last
        self._last = None
        code = int(self.measure.codes[index])
        self._draw_sums[code, label] += draw.weight
        if self._unseen[code]:
            self._unseen[code] = False
            self._n_unseen -= 1
        self._n_draws += 1
        if entry >= self._n_cells:
            if int(self._known[index]) != label:
                raise ValueError(
                    f"pair {index} was labelled {int(self._known[index])} before and now {label}: "
                    "the oracle must be deterministic"
                )
            if self.counts == "labels":
                return
            leaf = int(self._leaf_of_stratum[draw.stratum])
        else:
            leaf = int(self._cell_leaf[entry])
            self._mark_labelled(entry, pos, index, label)
        self.model.update(leaf, label, draw.weight if self.counts == "weighted" else 1.0)
        self._update_proposal()

    def _mark_labelled(self, cell: int, pos: int, index: int, label: int) -> None:
        # swap the pair to the front of the cell's unlabelled range
        front = int(self._start[cell] + self._n_labelled[cell])
        if pos != front:
            other = self._moved.get(front)
            if other is None:
                other = int(self._order[front])
            self._moved[pos] = other
            self._where[other] = pos
        self._moved[front] = index
        self._where[index] = front
        self._n_labelled[cell] += 1
        group = int(self.measure.codes[index]) * 2 + label
        self._members[group].append(index)
        sizes, share = self._entry_size, self.epsilon / self.n_pairs
        sizes[cell] -= 1
        sizes[self._n_cells + group] += 1
        self._eps_share[cell] = sizes[cell] * share
        self._eps_share[self._n_cells + group] = sizes[self._n_cells + group] * share
        self._known[index] = label

    def _position(self, index: int) -> int:
        pos = self._where.get(index)
        if pos is not None:
            return pos
        if not hasattr(self, "_inverse"):
            self._inverse = np.empty(self.n_pairs, dtype=np.int64)
            self._inverse[self._order] = np.arange(self.n_pairs)
        return int(self._inverse[index])

    def warm_start(self, index: np.ndarray, label: np.ndarray, weight=None) -> None:
        """Start from labels collected earlier (label reuse): every distinct labelled pair
        becomes known (drawn again at no cost, point-mass model) and updates the tree
        once (``counts="labels"``) or every draw updates it with its weight
        (``counts="weighted"``; weight 1 if ``weight`` is None); with ``weight`` (p/q of each earlier draw) the draws also enter the AIS
        totals behind the plug-in R_hat."""
        index = np.asarray(index, dtype=np.int64)
        label = np.asarray(label, dtype=np.int64)
        if weight is not None:
            flat = self.measure.codes[index] * 2 + label
            sums = np.bincount(
                flat, weights=np.asarray(weight, dtype=np.float64), minlength=self._draw_sums.size
            )
            self._draw_sums += sums.reshape(self._draw_sums.shape)
            self._n_draws += len(index)
            self._unseen &= self._draw_sums.sum(axis=1) <= 0
            self._n_unseen = int(self._unseen.sum())
        _, first = np.unique(index, return_index=True)
        leaves = []
        for i, y in zip(index[first], label[first], strict=True):
            i, y = int(i), int(y)
            if self._known[i] >= 0:
                continue
            cell = int(self._cell[i])
            self._mark_labelled(cell, self._position(i), i, y)
            leaves.append((int(self._cell_leaf[cell]), y))
        if self.counts == "weighted":
            # every earlier draw with its weight (Marchant & Rubinstein 2021, Appendix H,
            # bias-corrected counts); without weights each draw counts as a uniform one
            counts = np.ones(len(index)) if weight is None else np.asarray(weight, np.float64)
            leaf = self._leaf_of_stratum[self.strata.codes[index]]
            self.model.update_many(leaf, label, counts)
        elif leaves:
            arr = np.asarray(leaves)
            self.model.update_many(arr[:, 0], arr[:, 1])
        self._update_proposal()

    def posterior_mean(self) -> np.ndarray:
        """pi(1 | k): the posterior-predictive match rate of an unlabelled pair of every
        stratum k (in ``strata`` order) under the current Dirichlet-tree model (Marchant &
        Rubinstein 2021, eq. 14); the counterpart of the OASIS sampler's ``posterior_mean``."""
        return self.model.predict()[self._leaf_of_stratum]

    def current_weights(self, indices: np.ndarray) -> np.ndarray:
        """p/q under the current proposal for the given pairs (Marchant & Rubinstein 2021 §3.3.2's q_N)."""
        indices = np.asarray(indices, dtype=np.int64)
        known = self._known[indices].astype(np.int64)
        cells = self._cell[indices].astype(np.int64)
        group = self.measure.codes[indices] * 2 + np.maximum(known, 0) + self._n_cells
        entry = np.where(known >= 0, group, cells)
        q = self._entry_prob[entry] / np.maximum(self._entry_size[entry], 1.0)
        return 1.0 / (self.n_pairs * q)

    def params(self) -> dict:
        if self.target == "custom":
            raise ValueError(
                "a sampler with a custom measure cannot be written to a label log (it could "
                "not be rebuilt on resume); use target='f' or 'pr_curve'"
            )
        return {
            "target": self.target,
            "beta": self.beta,
            "epsilon": self.epsilon,
            "n_strata": self.n_strata,
            "branching": self.branching,
            "prior_strength": self.prior_strength,
            "depth_concentration": self.depth_concentration,
            "threshold": self.threshold,
            "n_thresholds": self.n_thresholds,
            "plug_in": self.plug_in,
            "proposal": self.proposal,
            "counts": self.counts,
            "prior": self.prior,
            "tree": self.tree,
        }
