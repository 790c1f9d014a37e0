"""The one variance routine of every pair-label importance estimate (static IS, OASIS, AIS,
general measures, PR curves, label reuse).

An importance estimate G_hat = g(R_hat), R_hat a weighted total of the draws, has the
martingale delta-method variance (Marchant & Rubinstein 2021, §3.3.2 and Theorem 2):
Var(G_hat) ~= sum_t E_t[psi_t^2] with psi_t = w_t g(x_t, y_t) the influence of draw t
(w_t = p/q_t its importance weight, g(x, y) = Dg(R) ell(x, y) the gradient term of a pair
with label y). The pool is cut into cells c on which every proposal q_t was uniform and
g depends only on the label (OASIS: stratum x prediction; AIS: stratum x loss class for
unlabelled pairs, (class, label) group for labelled ones). Then

    E_t[psi_t^2] = sum_c (omega_c^2 / v_tc) [pi_c g_c(1)^2 + (1 - pi_c) g_c(0)^2]

with pi_c the match rate of cell c, and the unknown sum_t omega_c^2 / v_tc is estimated
without bias by S_c = sum over the draws in c of w_t^2 (E_t[1{c_t = c} w_t^2] =
omega_c^2 / v_tc). So

    Var(G_hat) ~= sum_c S_c [pi_c g_c(1)^2 + (1 - pi_c) g_c(0)^2]      (:func:`conditional_variance`)

The labels-only variance is the special case whose cells are (cell, label) groups of
the draws, each with its known label as its rate (pi = 0 or 1): the sum of the draws'
squared influences. It is unbiased too (a fresh draw's label has expectation pi_c), but
blind where it matters: a stratum whose matches were not drawn yet has every label 0,
so its share of the variance is 0 although its matches exist.

The F-measures (:func:`~er_evaluation.pairs.estimate_from_labels`) take the labels-only
variance for what the labels show and add, for what they do not, the posterior of the
matches hidden in the strata where no match was drawn under a model of the oracle (the
Dirichlet tree of Marchant & Rubinstein 2021, §4, over the sampler's strata;
:func:`hidden_counts`); :func:`finish` combines both into the interval. Plugging the
model's rate into the variance instead (:func:`oracle_rates`, :func:`model_groups`,
still used for PR curves and custom measures) is unbiased for the conditional variances
but normal only when matches are drawn often: for a stratum searched so thinly that a
match there is a rare event, the variance is that of the rare draw that would find one,
and recall intervals were 2.4-2.7 times as wide as the error calls for on restaurant
with OASIS and 8.6-22 times with AIS (benchmarks/README.md, "Pair-label intervals").

Every pair-label estimate ends in :func:`finish`: its standard error, Wilson's score
interval on the effective sample size combined with the hidden matches, and the census
point.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from er_evaluation.estimators.intervals import wilson_bounds
from er_evaluation.pairs.dirichlet_tree import DirichletTree, balanced_tree

__all__: list[str] = []  # private: used by _remainder, estimates and measures

MODEL_BRANCHING: int | None = 2
"""Branching factor of the Dirichlet tree over the strata of the variance model
(:func:`oracle_rates`; None: one level, the flat Beta model per stratum). Chosen by
benchmark (benchmarks/README.md, "OASIS intervals")."""


CALIBRATE_PRIOR = True
"""Whether the variance model's prior means are rescaled per prediction group to the
labels (:func:`calibrated_prior`). Chosen by benchmark (benchmarks/README.md)."""


def conditional_variance(
    sq_weights: np.ndarray, rate: np.ndarray, g1: np.ndarray, g0: np.ndarray
) -> np.ndarray:
    """sum_c S_c [pi_c g_c(1)^2 + (1 - pi_c) g_c(0)^2] (module docstring).

    ``sq_weights``: S_c per cell, shape (C,); ``rate``: pi_c, shape (C,); ``g1`` / ``g0``:
    the influence per unit weight of a match / non-match of cell c, shape (C,) or (C, M)
    for M components at once. Returns a scalar or shape (M,). Cells without draws
    (S_c = 0) contribute nothing even where their influence is undefined."""
    s = np.asarray(sq_weights, dtype=np.float64)
    r = np.asarray(rate, dtype=np.float64)
    g1, g0 = np.asarray(g1, dtype=np.float64), np.asarray(g0, dtype=np.float64)
    if g1.ndim == 2:
        s, r = s[:, None], r[:, None]
    drawn = s > 0
    terms = np.where(drawn, s * (r * g1**2 + (1.0 - r) * g0**2), 0.0)
    return terms.sum(axis=0)


def labelled_groups(
    cell: np.ndarray, label: np.ndarray, values: np.ndarray, n_cells: int
) -> np.ndarray:
    """sum of ``values`` per (cell, label) group of the draws, shape (n_cells, 2): the
    S of the labels-only variance (``values`` = squared weights) and the weighted sums
    the centring term needs."""
    flat = np.asarray(cell, dtype=np.int64) * 2 + np.asarray(label, dtype=np.int64)
    sums = np.bincount(flat, weights=np.asarray(values, dtype=np.float64), minlength=2 * n_cells)
    return sums.astype(np.float64).reshape(n_cells, 2)  # float even with no draws


def labels_only_variance(sq_weights: np.ndarray, g1: np.ndarray, g0: np.ndarray) -> np.ndarray:
    """The labels-only case of :func:`conditional_variance`: ``sq_weights`` (C, 2) are S
    per (cell, label) group of the draws (:func:`labelled_groups`), each group's rate its
    label; the sum of the draws' squared influences."""
    s = np.asarray(sq_weights, dtype=np.float64)
    n = len(s)
    rates = np.tile([0.0, 1.0], n)
    g1, g0 = np.asarray(g1, dtype=np.float64), np.asarray(g0, dtype=np.float64)
    return conditional_variance(
        s.reshape(-1), rates, np.repeat(g1, 2, axis=0), np.repeat(g0, 2, axis=0)
    )


def model_groups(
    klass: np.ndarray,
    label: np.ndarray,
    sq_weight: np.ndarray,
    fresh: np.ndarray,
    rate: np.ndarray,
    n_classes: int,
) -> np.ndarray:
    """S per (class, label) group, shape (n_classes, 2), for :func:`labels_only_variance`
    with the oracle model's rates: a draw of a pair labelled before it (a repeat) counts
    with its label; a draw whose pair was not labelled before and that the model covers
    (``fresh``; :func:`oracle_rates`) counts with the model's match rate ``rate`` (per
    draw, used where fresh: that of the unlabelled pairs of its stratum),
    split as rate x w^2 to label 1 and (1 - rate) x w^2 to label 0. Unbiased for the
    conditional variances whenever the rate is the match rate of the stratum's pairs not
    yet labelled at the draw (module docstring)."""
    fresh = np.asarray(fresh, dtype=bool)
    klass = np.asarray(klass, dtype=np.int64)
    s = np.asarray(sq_weight, dtype=np.float64)
    groups = labelled_groups(klass[~fresh], np.asarray(label)[~fresh], s[~fresh], n_classes)
    r = np.asarray(rate, dtype=np.float64)[fresh]
    groups[:, 1] += np.bincount(klass[fresh], weights=s[fresh] * r, minlength=n_classes)
    groups[:, 0] += np.bincount(klass[fresh], weights=s[fresh] * (1 - r), minlength=n_classes)
    return groups


def stratum_rates(
    stratum: np.ndarray,
    label: np.ndarray,
    prior: np.ndarray,
    *,
    branching: int | None = 2,
    depth_concentration: float = 1.0,
) -> np.ndarray:
    """Posterior-predictive match rate of the unlabelled pairs of every stratum, shape (K,),
    from the distinct labelled pairs (``stratum`` code and 0/1 ``label`` of each) under
    the Dirichlet-tree model of Marchant & Rubinstein 2021, §4
    (:class:`~er_evaluation.pairs.dirichlet_tree.DirichletTree`): leaves = the K strata
    in the order of their prior mean rate prior[0] / (prior[0] + prior[1]) (the score
    order: both samplers' priors grow with the score), a balanced tree of ``branching``
    over them, leaf pseudo-counts ``prior`` (shape (2, K): matches, non-matches) and every
    node's prior multiplied by 1 + kappa depth^2 (kappa = ``depth_concentration``,
    ``depth_prior="proportional"``: the prior predictive of every stratum stays its prior
    mean). ``branching=None`` with kappa = 0 is the one-level tree, i.e. the flat Beta
    posterior (m_k + a_k) / (d_k + a_k + b_k) of every stratum (Marchant & Rubinstein
    2017, eq. 11)."""
    prior = np.asarray(prior, dtype=np.float64)
    k = prior.shape[1]
    mean = prior[0] / np.maximum(prior[0] + prior[1], 1e-300)
    leaf_of = np.empty(k, dtype=np.int64)
    leaf_of[np.argsort(mean, kind="stable")] = np.arange(k)
    leaf_prior = np.empty_like(prior)
    # DirichletTree rows: label 0, label 1; a prior mean of exactly 0 or 1 (a stratum of
    # zero scores) keeps a vanishing pseudo-count so that a label there still counts
    leaf_prior[:, leaf_of] = np.maximum(prior[::-1], 1e-9)
    parent, leaf_node = balanced_tree(k, branching)
    tree = DirichletTree(
        leaf_prior,
        parent,
        leaf_node,
        depth_concentration=depth_concentration,
        depth_prior="proportional",
    )
    stratum = np.asarray(stratum, dtype=np.int64)
    label = np.asarray(label, dtype=np.int64)
    if len(stratum):
        tree.update_many(leaf_of[stratum], label)
    return tree.predict()[leaf_of]


def calibrated_prior(
    prior: np.ndarray,
    group: np.ndarray,
    stratum: np.ndarray,
    label: np.ndarray,
    shrink: float = 1.0,
) -> np.ndarray:
    """The leaf prior with its mean rescaled per group of strata (the prediction group of
    each stratum, ``group``) to the labelled pairs: the prior means r_k of a group are
    multiplied by c_g = (M_g + s) / (E_g + s) (s = ``shrink`` pseudo-matches pull c_g
    towards 1), M_g the matches among the group's distinct
    labelled pairs (``stratum``, ``label``) and E_g the sum of their strata's prior means
    (the matches the prior expected among them), capped below 1; the strength
    a_k + b_k stays. A score that is not a calibrated probability (a field similarity)
    gives prior means far from the match rates: on FEBRL and PatentsView the score prior
    expected 14 and 28 times the true missed matches (benchmarks/README.md); c_g learns
    that from every label of the group at once."""
    prior = np.asarray(prior, dtype=np.float64)
    strength = prior.sum(axis=0)
    mean = prior[0] / np.maximum(strength, 1e-300)
    group = np.asarray(group, dtype=np.int64)
    stratum = np.asarray(stratum, dtype=np.int64)
    n_groups = int(group.max()) + 1 if len(group) else 0
    expected = np.bincount(group[stratum], weights=mean[stratum], minlength=n_groups)
    matches = np.bincount(group[stratum], weights=np.asarray(label, float), minlength=n_groups)
    scaled = np.minimum(mean * ((matches + shrink) / (expected + shrink))[group], 1.0 - 1e-9)
    return np.vstack([strength * scaled, strength * (1.0 - scaled)])


def _model(run):
    """(strata, calibrated leaf prior, posterior-predictive rate per stratum, labelled
    stratum codes, their labels) of the oracle model of ``run``, or None without one."""
    strata = run.model_strata if run.model_strata is not None else run.strata
    if strata is None or run.stratum_prior is None:
        return None
    prior = np.asarray(run.stratum_prior, dtype=np.float64)
    k = strata.n_strata
    if prior.shape != (2, k):
        raise ValueError(f"stratum_prior must have shape (2, {k}), got {prior.shape}")
    rows, first = np.unique(run.index, return_index=True)
    labelled, label = strata.codes[rows], run.label[first]
    if CALIBRATE_PRIOR:
        prior = calibrated_prior(prior, strata.predicted, labelled, label)
    rates = stratum_rates(
        labelled,
        label,
        prior,
        branching=MODEL_BRANCHING,
        depth_concentration=0.0 if MODEL_BRANCHING is None else 1.0,  # None: flat Beta
    )
    return strata, prior, rates, rows, labelled, label


HIDDEN_SAMPLES = 4000
"""Monte-Carlo draws of the hidden counts (:func:`hidden_counts`); drawn with a fixed
seed, so one run always gives the same interval."""


@dataclass(frozen=True)
class Hidden:
    """Posterior draws of what no label has shown: ``misses``, the matches among the
    unlabelled predicted non-matches of the strata where no labelled pair is a match,
    shape (:data:`HIDDEN_SAMPLES`,)."""

    misses: np.ndarray


def hidden_counts(run, predicted: np.ndarray) -> Hidden | None:
    """The :class:`Hidden` counts of ``run`` under its oracle model (``run.stratum_prior``
    over ``run.model_strata``; None without one: static IS and runs built by hand).

    A stratum where no labelled pair is a match adds nothing to the importance-weighted
    estimate of the missed matches, and its labels (all 0) nothing to the labels'
    variance, whatever it holds. Its unlabelled predicted non-matches U_k hold
    H_k ~ Binomial(U_k, p_k) matches, p_k ~ Beta(r_k s_k, (1 - r_k) s_k): r_k the
    posterior-predictive rate of the stratum under the Dirichlet tree
    (:func:`stratum_rates`, the prior calibrated to the labels), s_k = the leaf prior's
    pseudo-labels plus the stratum's d_k labels (all non-matches). Drawn
    :data:`HIDDEN_SAMPLES` times (seed 0).
    The draws are heavily skewed where r_k is tiny: a stratum of 134,086 pairs at rate
    3.5e-8 (restaurant's lowest scores after 1,583 labels there) gives H_k = 0 in nearly
    every draw, while the normal approximation of its share of the variance, N_k^2 r_k /
    n_k, put an SD of 0.6 matches on it (the rare draw that finds a match weighs 84
    pairs), which is why the model's variance made recall intervals there 2.4-2.7 times
    as wide as the error calls for.

    Only missed matches: they hide in the large low-score strata a sampler searches
    thinly, a rare event per stratum. The false positives hidden among the predicted
    matches would be the counterpart, but the predicted matches are few and searched
    densely, so the labels see their false positives (precision coverage without the
    counterpart: benchmarks/README.md, "Pair-label intervals")."""
    found = _model(run)
    if found is None:
        return None
    strata, prior, rates, rows, labelled, label = found
    u0, d, m, _ = _unlabelled_non_matches(strata, np.asarray(predicted), rows, labelled, label)
    blind = (m == 0) & (u0 > 0)
    if not blind.any():
        return Hidden(np.zeros(HIDDEN_SAMPLES))
    strength = (prior.sum(axis=0) + d)[blind]
    a = np.maximum(rates[blind] * strength, 1e-300)
    b = np.maximum((1.0 - rates[blind]) * strength, 1e-300)
    rng = np.random.default_rng(0)
    p = rng.beta(a, b, size=(HIDDEN_SAMPLES, int(blind.sum())))
    misses = rng.binomial(u0[blind].astype(np.int64), p).sum(axis=1)
    return Hidden(misses.astype(np.float64))


def _unlabelled_non_matches(strata, predicted, rows, labelled, label):
    """(U_k unlabelled predicted non-matches, d_k labelled pairs, m_k labelled matches per
    stratum, labelled missed matches) from the distinct labelled pairs (pool ``rows``,
    their stratum codes ``labelled`` and labels)."""
    k = strata.n_strata
    filled = strata.sizes > 0
    pred_k = np.zeros(k)
    pred_k[filled] = np.add.reduceat(
        predicted[strata.order].astype(np.int64), strata.offsets[:-1][filled]
    )
    d = np.bincount(labelled, minlength=k).astype(np.float64)
    m = np.bincount(labelled, weights=label.astype(np.float64), minlength=k)
    on_pred = predicted[rows].astype(np.float64)
    d1 = np.bincount(labelled, weights=on_pred, minlength=k)
    missed = float(np.sum(label * (1.0 - on_pred)))
    return strata.sizes - pred_k - (d - d1), d, m, missed


def model_misses(run, predicted: np.ndarray) -> float | None:
    """The matches among the predicted non-matches (false negatives) that the oracle model
    of ``run`` expects: the labelled missed matches plus sum_k U_k r_k over the model
    strata, U_k the unlabelled predicted non-matches of stratum k and r_k its
    posterior-predictive match rate under the Dirichlet tree with the prior calibrated to
    the labels (:func:`stratum_rates`, :func:`calibrated_prior`; Marchant & Rubinstein
    2021, §4). None without a model (runs built by hand). The reliability flag of
    recall and F compares the importance-weighted estimate with it
    (:func:`er_evaluation.pairs._search.search_diagnosed`)."""
    found = _model(run)
    if found is None:
        return None
    strata, _, rates, rows, labelled, label = found
    u0, _, _, missed = _unlabelled_non_matches(strata, np.asarray(predicted), rows, labelled, label)
    return missed + float(np.sum(u0 * rates))


def oracle_rates(run) -> tuple[np.ndarray, np.ndarray] | None:
    """(model_t, rate_t) per draw of ``run`` (a :class:`~er_evaluation.pairs.LabelRun`)
    for :func:`model_groups`: model_t is True on the first draw of each pair in the run
    (its label was not known to the proposal) in a stratum none of whose labelled pairs is
    a match; rate_t the posterior-predictive match rate of the unlabelled pairs of the
    draw's stratum under :func:`stratum_rates` (branching :data:`MODEL_BRANCHING`) with
    the leaf prior ``run.stratum_prior``, updated with the run's distinct labelled pairs.
    Every other draw counts with its label: where the labels hold a match they estimate
    the stratum's conditional variances without bias and without the prior; the model is
    needed only where they are blind (no match drawn, every label 0). On the same 200
    OASIS runs (uncut strata) this raised abt-buy recall / F1 coverage at 2,000 labels
    from 91 / 90% (model rate for every first draw) to 94 / 94% and moved the other cells
    at 1,000 and 2,000 labels by at most 2 points (benchmarks/README.md, "OASIS
    intervals", with the cells still outside [92%, 98%] and why). The strata are
    ``run.model_strata`` when set: OASIS's uncut strata when it cut some into chunks
    (on the chunks the recall intervals were 1.7-2.3x wider; "Coverage with cut
    strata"). None when the run has no strata or no prior (static IS, runs
    built by hand): the variance is then the labels-only one."""
    found = _model(run)
    if found is None:
        return None
    strata, _, rates, rows, labelled, label = found
    k = strata.n_strata
    first = np.unique(run.index, return_index=True)[1]
    stratum_t = strata.codes[run.index]
    blind = np.bincount(labelled, weights=label.astype(np.float64), minlength=k) == 0
    model = np.zeros(run.n_draws, dtype=bool)
    model[first] = True
    model &= blind[stratum_t]
    return model, rates[stratum_t]


def searched_bound(
    num: float, den: float, d_num: float, d_den: float, n_searched: float, z: float
) -> float:
    """Lower bound of a ratio num / den estimated at 1 because no pair with a deficit was
    drawn (no false positive for precision, no missed match for recall). The deficit's
    rate among the unlabelled pairs that could hold one is at most Wilson's upper bound at
    zero successes in ``n_searched`` effective draws among them
    (:func:`er_evaluation.pairs._search.searched_draws` of the draws in those
    pairs' classes, with the finite-population correction), rho = z^2 / (n + z^2)
    (the score interval of :func:`er_evaluation.estimators.intervals.wilson_bounds` at
    0), so the ratio is at least (num + rho d_num) / (den + rho d_den), where d_num and
    d_den are the changes of the numerator and denominator totals if every one of those
    unlabelled pairs had the deficit (precision: d_num = -(unlabelled predicted matches),
    d_den = 0; recall: d_num = 0, d_den = unlabelled predicted non-matches). 0 when
    nothing was searched; the ratio itself when no unlabelled pair could hold a deficit.
    The reuse diagnostic bounds hidden matches from the same effective draws but
    differently, as a warning rather than an interval end
    (:func:`er_evaluation.pairs._search.hidden_matches` says why)."""
    if d_num == 0 and d_den == 0:
        return float(min(num / den, 1.0))
    if not n_searched > 0:
        return 0.0
    rho = z * z / (n_searched + z * z)
    return float(min(max((num + rho * d_num) / (den + rho * d_den), 0.0), 1.0))


def finish(
    value: float,
    variance: float,
    z: float,
    *,
    n_fallback: float,
    remaining: float = math.inf,
    lower_at_one: Callable[[], float] | None = None,
    shift: np.ndarray | None = None,
) -> tuple[float, float, float, float]:
    """(value, SE, low, high) of a pair-label estimate in [0, 1]: the one interval rule of
    :func:`~er_evaluation.pairs.estimate_from_labels` and
    :func:`~er_evaluation.pairs.estimate_measure`.

    - ``remaining`` = 0 (no pair the estimate depends on is unlabelled): the census
      point, SE 0.
    - Otherwise Wilson's score interval on the effective sample size value (1 - value) /
      ``variance``, or on ``n_fallback`` where that is undefined (variance 0, or the value
      at 0 or 1) (:func:`er_evaluation.estimators.intervals.wilson_bounds`, the cluster
      estimators' interval); [0, 1] when ``n_fallback`` is 0 (nothing bounds it). The SE is
      the square root of the variance, or the Wilson half-width over z when the variance
      is 0, so an interval that is not a point never carries SE 0.
    - With ``shift`` (draws of how much the pairs no label has shown move the value,
      :class:`Hidden`), the interval is the central ``z`` range of value + e + shift,
      e drawn from the Wilson interval above (its end at level 2 Phi(|Z|) - 1 for a
      standard normal Z) independently of the shift: the labels' sampling error plus the
      oracle model's posterior of the hidden pairs, its upper end never below the Wilson
      interval's (no hidden pair is consistent with the labels too). It always holds the
      value; the SE is sqrt(variance + Var(shift)).
    - At a value of 1 with ``lower_at_one`` given, the lower end is ``lower_at_one()``
      (:func:`searched_bound`: a Wilson bound at 0 successes, where the variance says
      nothing); when that is not below the value, no unlabelled pair could lower it and
      the estimate is the census point, SE 0."""
    # a ratio of totals in [0, 1] can round to 1 + 2e-16 (AIS precision), above its own
    # interval's upper end
    value = min(max(value, 0.0), 1.0)
    if remaining == 0:
        return value, 0.0, value, value
    se = math.sqrt(variance) if variance > 0 else 0.0
    low, high = (float(b) for b in wilson_bounds(value, se, n_fallback, z))
    if math.isnan(low):  # no effective unit at all: nothing bounds the metric
        low, high = 0.0, 1.0
    elif shift is not None and np.any(shift != 0):
        labels_high = high
        low, high, se = _with_hidden(value, se, n_fallback, np.asarray(shift, float), z)
        # no hidden pair at all is as consistent with the labels as the model's posterior
        # (no match was drawn where it puts them), so the upper end never falls below the
        # labels' own: with the model's pessimistic prior on PatentsView the upper end sat
        # at the estimate and recall covered 48-57% of OASIS runs
        high = max(high, labels_high)
    if se == 0:
        se = (high - low) / (2 * z)
    if lower_at_one is not None and value >= 1.0 - 1e-12:
        low = lower_at_one()
        if low >= value:
            return value, 0.0, value, value
    return value, se, low, high


_NORMAL: np.ndarray | None = None


def _with_hidden(
    value: float, se: float, n_fallback: float, shift: np.ndarray, z: float
) -> tuple[float, float, float]:
    """(low, high, SE) of value + e + shift (:func:`finish`): e at the Wilson interval's
    ends for the quantiles of standard normal draws paired with the shift draws."""
    global _NORMAL
    if _NORMAL is None or len(_NORMAL) != len(shift):
        _NORMAL = np.random.default_rng(1).standard_normal(len(shift))
    level_z = np.abs(_NORMAL)
    lo, hi = wilson_bounds(value, se, n_fallback, level_z)
    error = np.where(_NORMAL < 0, np.asarray(lo) - value, np.asarray(hi) - value)
    draws = np.clip(value + error + shift, 0.0, 1.0)
    tail = float(ndtr(-z))
    low, high = (float(q) for q in np.quantile(draws, [tail, 1.0 - tail]))
    spread = math.sqrt(se * se + float(np.var(shift)))
    if spread == 0:
        spread = (high - low) / (2 * z)
    return min(low, value), max(high, value), spread
