"""Precision, recall and F_beta with standard errors and intervals from one labelled pair sample.

Every one of them is a ratio F = TP / (alpha PP + (1 - alpha) AP) of the true positives to
a weighted sum of the predicted positives PP and the actual positives AP, with the
internal weight alpha = 1 for precision, 0 for recall and 1 / (1 + beta^2) for F_beta
(1/2 for F1; Marchant & Rubinstein 2017, eq. 1, write F_alpha). Per draw j, a_j = l_j
lhat_j (true positive) and b_j = alpha lhat_j + (1 - alpha) l_j.

Three estimators (:mod:`er_evaluation.pairs._remainder`):

- Passive and stratified runs (draws uniform within each cell = stratum x prediction):
  the labels of the labelled pairs are used as they are and only the unlabelled remainder
  of each cell is estimated, by the cell's labelled mean (``remainder_estimate``).
- Importance runs (static importance sampling, OASIS, pooled reuse runs; each draw with
  its own weight p/q_t): the weighted ratio below normalised to the known PP
  (``hybrid_estimate``), with a prediction group whose pairs are all labelled taken
  exactly. Runs that carry the sampler's strata (OASIS, reuse runs pooled onto an OASIS
  sampler) also use completely labelled stratum x prediction cells: from the draw on
  which cell c has every pair labelled, each later draw's terms for c are replaced by
  their known conditional expectations M_c / N and N_c h_c / N, so the sums stay
  unbiased (``_remainder._substituted_sums``). Both equal the weighted ratio until a
  cell or group is complete. The variance is the martingale's (T times the sample
  variance of the draws' influences); for OASIS, AIS and static IS the interval of recall
  and F adds the matches hidden in the strata where no match was drawn, drawn from the
  posterior of a Dirichlet-tree oracle model over the sampler's strata
  (``LabelRun.stratum_prior``; :func:`~er_evaluation.pairs._variance.hidden_counts`), so
  strata whose matches were not yet drawn still count.
- Weighted ratio, for importance runs built by hand (no sampler flags):

      F = sum_j w_j a_j / sum_j w_j b_j            (Marchant & Rubinstein 2017, Algorithm 3, line 11)

  with the delta-method variance of Marchant & Rubinstein 2021 §3.3.2 (g(R) = R_1 / (alpha R_2 +
  (1 - alpha) R_3); the term D_g(R) R vanishes at the ratio estimate):

      Var(F) ~= sum_j w_j u_j (a_j - F b_j)^2 / (sum_j w_j b_j)^2,

  where u_j is p/q of draw j under the proposal Marchant & Rubinstein 2021 plugs in:
  ``variance="martingale"`` (default) each draw's own proposal, u_j = w_j (the average
  conditional variance of the martingale CLT, Marchant & Rubinstein 2021 Theorem 2);
  ``variance="final"`` the latest proposal q_N (Marchant & Rubinstein 2021 §3.3.2; needs ``run.final_weight``).

Intervals are Wilson score intervals on an effective sample size (see
:mod:`er_evaluation.pairs._remainder`), never of zero width unless every pair the metric
depends on is labelled.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from er_evaluation._parameters import check_beta, check_choice, check_level, z_value
from er_evaluation.errors import warn_undefined
from er_evaluation.estimators.results import Estimate, estimates_frame
from er_evaluation.pairs._remainder import cell_codes, hybrid_estimate, remainder_estimate
from er_evaluation.pairs._search import (
    boundary_lows,
    label_range,
    search_diagnosed,
    searched_draws,
    within_label_range,
)
from er_evaluation.pairs._variance import (
    finish,
    hidden_counts,
    labelled_groups,
    labels_only_variance,
    model_misses,
)
from er_evaluation.pairs.run import LabelRun
from er_evaluation.vocabulary import pair_metric_names

__all__ = [
    "CI_METHODS",
    "PairEstimates",
    "estimate_from_labels",
    "estimate_history",
    "ratio_estimates",
    "uses_remainder",
]


CI_METHODS = ("score",)
"""Interval methods of the pair-label estimates: ``"score"``, Wilson's score interval on
the effective sample size (a point, ``"census"``, once every pair the estimate depends on
is labelled)."""


@dataclass(frozen=True)
class PairEstimates:
    """Precision, recall and F_beta for each requested beta, all from the same run, as
    :class:`~er_evaluation.estimators.Estimate` objects (the result type of the cluster
    estimators): ``n_units`` = distinct labelled pairs, ``n_draws`` = draws with repeats,
    ``estimator`` = the sampler, ``ci_method`` = "score" (Wilson score interval on an
    effective sample size) or "census" (every pair the metric depends on is labelled)."""

    precision: Estimate
    recall: Estimate
    f: tuple[Estimate, ...]

    def to_frame(self) -> pd.DataFrame:
        """One row per metric (precision, recall, then each F_beta), the columns of every
        estimate table (:func:`~er_evaluation.estimators.estimates_frame`: the
        :class:`~er_evaluation.estimators.Estimate` fields with the diagnostics
        flattened); ``n_units`` counts the distinct labelled pairs."""
        return estimates_frame([self.precision, self.recall, *self.f])


def _betas(beta: float | Sequence[float]) -> list[float]:
    """``beta`` (one F_beta weight or several) as a list, each checked
    (:func:`~er_evaluation._parameters.check_beta`: positive and finite; precision and
    recall are always reported, they are not beta = 0 or infinity)."""
    values = [beta] if np.isscalar(beta) or isinstance(beta, str) else list(beta)
    if not values:
        raise ValueError("beta must name at least one F_beta weight, e.g. beta=1 for F1")
    return [check_beta(b) for b in values]


def _alphas(betas: Sequence[float]) -> list[float]:
    """The internal weight alpha = 1 / (1 + beta^2) of each F_beta's denominator."""
    return [1.0 / (1.0 + b * b) for b in betas]


def _distinct(run: LabelRun) -> tuple[np.ndarray, np.ndarray]:
    """Pool rows of the distinct labelled pairs and the position of each one's first draw."""
    return np.unique(run.index, return_index=True)


def uses_remainder(run: LabelRun) -> bool:
    """True when the labelled-part-known estimator applies: draws uniform within cells
    (passive, strata of a stratified or OASIS sampler) or from one static proposal."""
    return run.design == "passive" or run.strata is not None or run.static_proposal


def _cells(run: LabelRun, predicted: np.ndarray):
    """Cell of every pool pair, cell sizes N_c and the cells' score order."""
    if run.design == "stratified" and run.strata is None:
        raise ValueError("a stratified run needs its strata (run.strata) to be estimated")
    strata = run.strata
    if strata is None:
        codes, n_cells = cell_codes(predicted, None)
        key = np.zeros(n_cells)
    else:
        codes, n_cells = cell_codes(predicted, strata.codes, strata.n_strata)
        key = np.repeat(strata.mean_score, 2)
    return codes, np.bincount(codes, minlength=n_cells).astype(np.float64), key


def _draw_cells(run: LabelRun, predicted: np.ndarray, cells=None) -> tuple[np.ndarray, np.ndarray]:
    """Stratum x prediction cell (2 * stratum + prediction) of every draw of ``run`` and
    the sizes of all cells: from ``cells`` (:func:`_cells`, built once by
    :func:`estimate_history`) or, for one estimate, from the draws and the predicted matches per
    stratum summed along the strata's row order (about 12 ms on 5.4 million pairs, where
    coding every pool pair cost 28 ms)."""
    if cells is not None:
        codes, sizes, _ = cells
        return codes[run.index], sizes
    strata = run.strata
    matches = np.zeros(strata.n_strata)
    filled = strata.sizes > 0  # reduceat needs the starts of non-empty strata only
    matches[filled] = np.add.reduceat(
        predicted[strata.order], strata.offsets[:-1][filled], dtype=np.int64
    )
    sizes = np.empty(2 * strata.n_strata)
    sizes[0::2], sizes[1::2] = strata.sizes - matches, matches
    cell_t = 2 * strata.codes[run.index].astype(np.int64) + predicted[run.index]
    return cell_t, sizes


#: why a pair-label metric is NaN: its denominator holds no sampled pair
_NO_PAIR = "no sampled pair in its denominator"


def _check_predicted(run: LabelRun, predicted) -> np.ndarray:
    predicted = np.asarray(predicted)
    if predicted.shape != (run.pool_size,):
        raise ValueError(
            f"predicted must hold one 0/1 value per pool pair ({run.pool_size}), got shape {predicted.shape}"
        )
    # 0/1 of any numeric type (a float column 0.0/1.0 too, as the pool accepts); 2, 0.5,
    # NaN, words are an error naming the first offending pairs
    bad = np.flatnonzero(~np.isin(predicted, [0, 1]))[:5]
    if len(bad):
        raise ValueError(
            f"predicted must be 0/1 per pool pair; pairs {bad.tolist()} have "
            f"{predicted[bad].tolist()}"
        )
    return predicted.astype(np.int8)


def _ais_interval(run, predicted, alphas, z, variance):
    """The weighted-ratio estimate F = sum_j w_j a_j / sum_j w_j b_j of Marchant & Rubinstein
    2017 (Algorithm 3, line 11) for adaptive runs without uniform-within-strata draws, with
    the labels-only martingale variance sum_j w_j u_j g(h_j, l_j)^2, g(h, l) =
    (h l - F b) / sum_j w_j b_j (:mod:`er_evaluation.pairs._variance`); Wilson interval on
    n* = F (1 - F) / Var, or at F in {0, 1} on the Kish size (sum w b)^2 / sum (w b)^2."""
    if run.design != "importance":
        raise ValueError(f"the weighted-ratio estimate is for importance runs, not {run.design!r}")
    h = predicted[run.index].astype(np.int64)
    lab = run.label.astype(np.int64)
    w = run.weight.astype(np.float64)
    if variance == "final":
        if run.final_weight is None:
            raise ValueError("variance='final' needs run.final_weight (p/q_N per draw)")
        u = np.asarray(run.final_weight, dtype=np.float64)
    elif variance == "martingale":
        u = w
    else:
        raise ValueError(f"variance must be 'martingale' or 'final', got {variance!r}")
    w_groups = labelled_groups(h, lab, w, 2)  # (prediction, label)
    wu_groups = labelled_groups(h, lab, w * u, 2)
    n_metrics = 2 + len(alphas)
    value, se = np.full(n_metrics, np.nan), np.full(n_metrics, np.nan)
    low, high = np.full(n_metrics, np.nan), np.full(n_metrics, np.nan)
    hc = np.array([0.0, 1.0])  # prediction of each group row
    for m, alpha in enumerate([1.0, 0.0, *alphas]):
        tp = w_groups[1, 1]
        den = alpha * w_groups[1].sum() + (1 - alpha) * w_groups[:, 1].sum()
        if not den > 0:
            continue
        f = tp / den
        g1 = (hc - f * (alpha * hc + 1 - alpha)) / den
        g0 = -f * alpha * hc / den
        var = float(labels_only_variance(wu_groups, g1, g0))
        wb = w * (alpha * h + (1 - alpha) * lab)
        value[m], se[m], low[m], high[m] = finish(f, var, z, n_fallback=searched_draws(wb))
    return value, se, low, high


def _check_variance(run: LabelRun, variance: str) -> None:
    """``variance`` chooses between the two variances of the weighted ratio (runs built by
    hand); a sampler's run has the one variance of its estimator (the oracle model's or
    the remainder's), so another choice there is an error, not silently ignored."""
    if variance not in ("martingale", "final"):
        raise ValueError(f"variance must be 'martingale' or 'final', got {variance!r}")
    own = (run.design == "importance" and (run.adaptive or run.static_proposal)) or uses_remainder(
        run
    )
    if variance == "final" and own:
        raise ValueError(
            f"variance='final' is for weighted-ratio runs built by hand; a "
            f"{run.method or run.design} run is estimated with its own variance (leave "
            "variance at 'martingale')"
        )


def _interval_arrays(run, predicted, alphas, level, variance="martingale", cells=None):
    """(value, SE, low, high, weighted) of precision, recall and F for each alpha: the
    estimator of the run's design (:func:`_estimate_arrays`; ``weighted``, its value),
    with the lower ends that never exclude what the run cannot rule out and the census
    points of :func:`~er_evaluation.pairs._search.boundary_lows`, then kept inside what
    the labelled pairs allow (:func:`~er_evaluation.pairs._search.within_label_range`)."""
    value, se, low, high = _estimate_arrays(run, predicted, alphas, z_value(level), variance, cells)
    every = [1.0, 0.0, *alphas]
    low, exact = boundary_lows(run, predicted, every, value, low, level, run.strata)
    se = np.where(exact, 0.0, se)
    low = np.where(exact, value, low)
    high = np.where(exact, value, high)
    kept = within_label_range(value, se, low, high, label_range(run, predicted, every))
    return (*kept, value)


def _estimate_arrays(run, predicted, alphas, z, variance="martingale", cells=None):
    if run.design == "importance" and (run.adaptive or run.static_proposal):
        # a prediction group is taken exactly once all its pairs are labelled; with the
        # sampler's strata (OASIS, pooled reuse runs) a stratum x prediction cell's later
        # terms are substituted from the draw on which it is complete (unbiased sums;
        # taking cells complete at the end exactly was biased, benchmarks/README.md)
        codes, n_cells = cell_codes(predicted, None)
        sizes = np.bincount(codes, minlength=n_cells).astype(np.float64)
        strata_cells = None
        if run.strata is not None:
            strata_cells = _draw_cells(run, predicted, cells)
        return hybrid_estimate(
            codes,
            sizes,
            run.index,
            run.label,
            run.weight,
            alphas,
            z,
            hidden=hidden_counts(run, predicted),
            strata_cells=strata_cells,
        )
    if uses_remainder(run):
        codes, sizes, key = cells if cells is not None else _cells(run, predicted)
        rows, first = _distinct(run)
        return remainder_estimate(
            codes, sizes, key, rows, run.label[first], np.ones(len(rows)), alphas, z
        )
    return _ais_interval(run, predicted, alphas, z, variance)


def estimate_history(
    run: LabelRun,
    predicted,
    *,
    beta: float | Sequence[float] = 1.0,
    at: Sequence[int] | None = None,
    level: float = 0.95,
    ci_method: str = "score",
) -> pd.DataFrame:
    """Estimates as labels came in: one row per label count in ``at`` (default: every label
    count), taken right after the draw that paid for that many labels (where a run with
    that budget stops, :func:`~er_evaluation.pairs.sample_labels`). Columns ``n_draws``, ``n_labels`` and, per metric (:func:`~er_evaluation.vocabulary.pair_metric_names`),
    the value, ``<metric>_se``, ``<metric>_low`` and ``<metric>_high``. NaN where
    undefined. ``beta``, ``level`` and ``ci_method`` as :func:`estimate_from_labels`."""
    betas = _betas(beta)
    alphas = _alphas(betas)
    level = check_level(level)
    check_choice(ci_method, "ci_method", CI_METHODS)
    predicted = _check_predicted(run, predicted)
    n_labels = np.cumsum(run.new_label).astype(np.int64)
    counts = np.unique(n_labels) if at is None else np.asarray(at, dtype=np.int64)
    cells = _cells(run, predicted) if uses_remainder(run) else None
    names = pair_metric_names(betas)
    rows = []
    for count in counts:
        if count < 1:
            continue
        last = min(int(np.searchsorted(n_labels, count, side="left")) + 1, run.n_draws)
        value, se, low, high, _ = _interval_arrays(
            run.prefix(last), predicted, alphas, level, cells=cells
        )
        row = {"n_draws": last, "n_labels": int(n_labels[last - 1])}
        for m, name in enumerate(names):
            row |= {
                name: value[m],
                f"{name}_se": se[m],
                f"{name}_low": low[m],
                f"{name}_high": high[m],
            }
        rows.append(row)
    return pd.DataFrame(rows)


def estimate_from_labels(
    run: LabelRun,
    predicted,
    *,
    beta: float | Sequence[float] = 1.0,
    level: float = 0.95,
    ci_method: str = "score",
    variance: str = "martingale",
) -> PairEstimates:
    """Pairwise precision, recall and F_beta (for every ``beta`` given; named by
    :func:`~er_evaluation.vocabulary.pair_metric_names`) of ``predicted`` (0/1 per pool pair) from the labelled draws of
    ``run``, each with its standard error and a
    ``level`` confidence interval (``ci_method``: :data:`CI_METHODS`). ``beta``: one
    F_beta weight or several (positive; default F1). Any 0/1 prediction over the same pool can be evaluated
    (label reuse: :mod:`er_evaluation.pairs.reuse`). Undefined ratios (nothing sampled in
    a denominator) give NaN with an :class:`UndefinedMetricWarning`.

    Passive and stratified runs: labelled pairs as they are, the unlabelled remainder of
    each stratum x prediction cell from the cell's labelled mean. Importance runs (static
    IS, OASIS, pooled reuse runs): the weighted ratio of Marchant & Rubinstein 2017
    (Algorithm 3, line 11) normalised to the known PP, a prediction group whose pairs are
    all labelled taken exactly; for runs with the sampler's strata (OASIS, reuse pooled
    onto OASIS), from the draw on which a stratum x prediction cell is completely
    labelled each later draw's terms for it are replaced by their known conditional
    expectations (unbiased sums, exact when every cell is complete), with the martingale
    delta-method variance of the sums (Marchant & Rubinstein 2021 §3.3.2); for OASIS, AIS
    and static IS the interval of recall and F also carries the posterior of the matches
    hidden in the strata where no match was drawn, under the Dirichlet-tree oracle model
    (``run.stratum_prior``, :func:`~er_evaluation.pairs._variance.hidden_counts`).
    Exact at census. Intervals are Wilson score intervals on an effective sample size
    (``ci_method="score"``, as the cluster estimators name Wilson's interval). When no
    missed match (recall, F) or no false positive (precision, F) was drawn, the lower end
    reaches what the effective draws that searched the pairs that could hold one cannot
    rule out (:func:`~er_evaluation.pairs._search.boundary_lows`: a Clopper-Pearson bound
    on those draws, the same bound the diagnostic reports), for every design. The
    estimate and its interval are then kept within the lowest and highest value the
    labelled pairs leave possible, whatever the unlabelled pairs hold
    (:func:`~er_evaluation.pairs._search.within_label_range`: the estimate clipped, the
    interval intersected, one lying beyond rebuilt at the boundary with its width turned
    inward). Never of zero width unless every pair the metric depends on is labelled (then
    ``"census"``).
    Coverage, width against the error and MSE by pool and budget: benchmarks/README.md
    ("Pair-label intervals against their error").

    Every estimate carries diagnostics (:func:`~er_evaluation.pairs._search.search_diagnosed`
    with the run's strata): the effective number of draws in its denominator and their
    concentration, and ``reliable`` False with the reason when the estimate sits at its
    boundary (no missed match, or no false positive, drawn while unsearched pairs could
    hold some), when recall or F sits above what the oracle model expects
    (:func:`~er_evaluation.pairs._search.model_gap_diagnostics`), or when the metric is
    undefined. Together these flags catch 33% of the benchmark's misses, not the half
    aimed at.
    """
    betas = _betas(beta)
    level = check_level(level)
    check_choice(ci_method, "ci_method", CI_METHODS)
    out = ratio_estimates(run, predicted, _alphas(betas), pair_metric_names(betas), level, variance)
    return PairEstimates(out[0], out[1], tuple(out[2:]))


def ratio_estimates(
    run: LabelRun,
    predicted: np.ndarray,
    alphas: list[float],
    names: Sequence[str],
    level: float,
    variance: str = "martingale",
) -> list[Estimate]:
    """The estimates of :func:`estimate_from_labels`, checked arguments, by the internal
    weight of each ratio: precision, recall, then F = TP / (alpha PP + (1 - alpha) AP) for
    every ``alphas``, named ``names`` (2 + len(alphas) of them). Also the F-measures of
    :func:`~er_evaluation.pairs.estimate_measure`, whose components carry their own
    names. The run, ``predicted`` and ``variance`` are checked here; an undefined
    estimate warns once, at the caller's line."""
    if run.n_draws == 0:
        raise ValueError("the run has no labelled draws: nothing to estimate")
    predicted = _check_predicted(run, predicted)
    _check_variance(run, variance)
    value, se, low, high, weighted = _interval_arrays(run, predicted, alphas, level, variance)
    out = []
    for m, name in enumerate(names):
        v = float(value[m])
        if math.isnan(v):
            warn_undefined(name, _NO_PAIR)
        lo, hi = float(low[m]), float(high[m])
        out.append(
            Estimate(
                metric=name,
                estimator=run.method or run.design,
                design=run.design,
                value=v,
                std_error=float(se[m]),
                ci_low=lo,
                ci_high=hi,
                level=level,
                ci_method="census" if lo == hi == v else "score",
                n_units=run.n_labels,
                n_draws=run.n_draws,
                n_records=run.n_labels,
                plugin=float(weighted[m]),  # before it was kept within the labels' range
            )
        )
    return search_diagnosed(
        out,
        run,
        predicted,
        [1.0, 0.0, *alphas],
        run.strata,
        model_misses(run, predicted),
    )
