"""The unsearched-non-match diagnostic every pair-label estimate carries.

An estimate of recall or F at the boundary (no labelled predicted non-match is a match)
rests on the unsearched predicted non-matches holding no match, which the labels cannot
show; :func:`search_diagnosed` says when more matches than the interval allows could hide
there (:func:`search_diagnostics`, bounded by
:func:`hidden_matches`), and gives every estimate its
effective number of draws and their concentration. Used by
:func:`~er_evaluation.pairs.estimate_from_labels` (the run's own strata) and by label reuse
(:func:`~er_evaluation.pairs.reuse.search_check`, any strata).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from er_evaluation.estimators.diagnostics import Diagnostics, concentration
from er_evaluation.estimators.results import Estimate
from er_evaluation.pairs._stratify import ScoreStrata

if TYPE_CHECKING:
    from er_evaluation.pairs.run import LabelRun

__all__: list[str] = []  # private: used by the pair estimates, their intervals and label reuse


def searched_draws(weights, *, counts=None, labelled_share: float = 0.0) -> float:
    """Effective number of uniform draws that searched a set of pairs: Kish's (1965)
    effective sample size of the draws that fell in the set,

        n = (sum c w)^2 / sum c w^2 / (1 - f),

    ``weights`` w: how many pairs of the set each draw stands for (its importance weight
    p/q, or N_c / d_c for a pair drawn uniformly from a cell of N_c pairs with d_c
    labelled; 0 for a draw outside the set); ``counts`` c: how many draws carry each
    weight (default 1 each); ``labelled_share`` f: the share of the set's pairs already
    labelled, a finite-population correction for draws without replacement (f = 1: the
    whole set is known, infinitely searched; the default 0: no correction). 0 when no
    draw carries a positive weight. Equal weights give the number of draws; a few heavy
    draws (pairs the proposal rarely reached) count little. Used by the pair-label
    intervals' boundary rule (:func:`~er_evaluation.pairs._variance.searched_bound`) and
    by :func:`hidden_matches`."""
    w = np.asarray(weights, dtype=np.float64)
    if not np.any(w > 0):
        return 0.0
    cw = w if counts is None else np.asarray(counts, dtype=np.float64) * w
    return float(np.sum(cw) ** 2 / np.sum(cw * w)) / max(1.0 - labelled_share, 1e-12)


def hidden_matches(sizes, searched, *, level: float) -> tuple[float, float, float]:
    """``(n_pairs, n_effective, max_hidden)`` of a region of pairs where no labelled pair
    is a match, made of cells (strata) with ``sizes[c]`` = N_c pairs of which
    ``searched[c]`` = d_c distinct pairs were labelled, each drawn uniformly within its
    cell (OASIS and stratified draws).

    ``n_pairs`` = sum_c N_c. Cells with d_c = 0 were never searched: any of their pairs
    may be a match. On the searched cells (S) the labelled pairs stand for N_c / d_c
    pairs each, whose effective size (:func:`searched_draws`, without the
    finite-population correction) is the number of uniform draws of the region they are
    worth, ``n_effective`` = (sum_S N_c)^2 / sum_S N_c^2 / d_c (= d when d_c is
    proportional to N_c, smaller when large cells were barely searched). With no match
    among them, the Clopper-Pearson (1934) upper limit of the match rate is
    1 - ((1 - level) / 2)^(1 / n_effective) (the upper end of the two-sided ``level``
    interval for 0 successes), so at most

        max_hidden = sum_{d_c = 0} N_c + sum_S N_c (1 - ((1 - level) / 2)^(1 / n_effective))

    matches hide in the region at that level.

    Why this differs from the interval's zero-success bound
    (:func:`~er_evaluation.pairs._variance.searched_bound`, Wilson's score bound at 0 on
    the same effective draws): that one is the lower end of an interval meant to cover
    at its level, so it pools every pair that could lower the estimate into one rate,
    uses the score interval of every other pair-label interval and counts the labelled
    pairs as known (finite-population correction). This one is a warning that no
    unsearched stratum may fool: a stratum never searched says nothing about its rate,
    so its pairs count in full; the rate takes the exact (more conservative)
    Clopper-Pearson limit and applies to every pair of the searched cells, without
    correction (the regions it flags are strata far too large to search, where the
    labelled share is negligible)."""
    sizes = np.asarray(sizes, dtype=np.float64)
    searched = np.asarray(searched, dtype=np.float64)
    if sizes.shape != searched.shape or np.any(searched > sizes) or np.any(searched < 0):
        raise ValueError("searched must hold, per cell, 0 <= d_c <= N_c labelled pairs")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    hit = searched > 0
    never = float(np.sum(sizes[~hit]))
    n_s = float(np.sum(sizes[hit]))
    if n_s == 0:
        return never, 0.0, never
    n_eff = searched_draws(sizes[hit] / searched[hit], counts=searched[hit])
    rate = 1.0 - ((1.0 - level) / 2.0) ** (1.0 / n_eff)
    return never + n_s, n_eff, never + n_s * rate


def search_diagnostics(
    value: float,
    ci_low: float,
    *,
    metric: str,
    alpha: float,
    tp: float,
    ap: float,
    pp: float,
    region: tuple[float, float, float],
    misses_drawn: bool,
    pool_size: int,
    level: float,
    n_effective: float,
    top_share: float,
) -> Diagnostics:
    """:class:`Diagnostics` of a pair-label F_alpha estimate (alpha = 0: recall; alpha = 1,
    precision, does not depend on the predicted non-matches and is never flagged here)
    whose predicted non-matches include the unsearched ``region`` of
    :func:`hidden_matches`. With TP, AP and PP the estimated true positives, actual
    positives and the known predicted positives, K hidden matches would give

        F_K = TP / (alpha PP + (1 - alpha)(AP + K)),

    so the value could be as low as F_K at K = max_hidden. The estimate is not reliable
    when no labelled predicted non-match is a match (``misses_drawn`` False: the
    estimate sits at the boundary, no missed match seen, e.g. recall 1) and its interval
    stops above F_K: the interval then rests on the unsearched pairs holding no match,
    which the labels cannot show. Once a missed match is labelled the estimate is off the
    boundary and its interval spans the estimated misses; the bound alone lay below the
    interval in 99.2-100% of runs on abt-buy and restaurant too, where the intervals
    cover recall (their low-score strata are far too large to search), so it is not
    applied (benchmarks/README.md, "Label reuse across
    versions"). ``n_effective`` and
    ``top_share`` describe the draws behind the estimate (as in :func:`concentration`).
    """
    n_pairs, n_eff, hidden = region

    def out(reliable: bool, reason: str = "") -> Diagnostics:
        return Diagnostics(float(n_effective), float(top_share), reliable, reason)

    if not math.isfinite(value):
        return out(False, f"{metric} is undefined on this sample: label more pairs")
    if alpha >= 1.0 or misses_drawn or hidden <= 0 or not math.isfinite(tp):
        return out(True)
    low = tp / (alpha * pp + (1.0 - alpha) * (ap + hidden)) if tp > 0 else 0.0
    if not ci_low > low:
        return out(True)
    return out(
        False,
        f"no match was drawn among the predicted non-matches: {n_pairs:,.0f} of them "
        f"({n_pairs / pool_size:.1%} of the pool) lie in strata where no match was drawn "
        f"({n_eff:.1f} effective draws searched them); up to {hidden:,.0f} matches could "
        f"hide there at {level:.0%} (Clopper-Pearson), so {metric} could be as low as "
        f"{low:.3g}, below the interval's {ci_low:.3g}: label more predicted non-matches "
        f"in those strata (e.g. continue_sampling(..., search=...))",
    )


def _searched_region(
    run: LabelRun, predicted: np.ndarray, strata: ScoreStrata | None, level: float
):
    """(:func:`hidden_matches` of the predicted
    non-match cells (stratum x prediction) where no labelled pair is a match and some
    pair is unlabelled, whether any labelled predicted non-match is a match). Without
    strata the predicted non-matches are one cell whose searched size is
    :func:`searched_draws` of its draws' weights
    (uniform draws count fully, draws that rarely reach it little), at most its distinct
    labelled pairs."""
    rows, first = np.unique(run.index, return_index=True)
    label = run.label[first].astype(np.float64)
    if strata is None:
        non = predicted[run.index] == 0
        sizes = np.array([float(np.sum(predicted == 0))])
        matched = bool(np.any(run.label[non] == 1))
        w = run.weight[non].astype(np.float64)
        searched = np.array([min(searched_draws(w), float(np.sum(predicted[rows] == 0)))])
        if searched[0] >= sizes[0]:
            return (0.0, 0.0, 0.0), matched
        return (0.0, 0.0, 0.0) if matched else hidden_matches(sizes, searched, level=level), matched
    if strata.codes.shape != predicted.shape:
        raise ValueError(
            f"strata must cover the run's pool ({predicted.shape[0]} pairs), "
            f"got {strata.codes.shape[0]}"
        )
    cells = 2 * strata.codes.astype(np.int64) + predicted.astype(np.int64)
    n_cells = 2 * strata.n_strata
    sizes = np.bincount(cells, minlength=n_cells).astype(np.float64)
    d = np.bincount(cells[rows], minlength=n_cells).astype(np.float64)
    m = np.bincount(cells[rows], weights=label, minlength=n_cells)
    non = np.arange(n_cells) % 2 == 0
    matched = bool(np.any(m[non] > 0))
    region = non & (d < sizes) & (m == 0)
    if not region.any():
        return (0.0, 0.0, 0.0), matched
    return hidden_matches(sizes[region], d[region], level=level), matched


def search_diagnosed(
    estimates: list[Estimate],
    run: LabelRun,
    predicted: np.ndarray,
    alphas: list[float],
    strata: ScoreStrata | None,
) -> list[Estimate]:
    """``estimates`` (precision, recall, F_alpha... of the 0/1 ``predicted`` from ``run``,
    with ``alphas`` = [1, 0, alpha...]) with
    :func:`search_diagnostics` on each: TP = P PP,
    AP = TP / R, and the unsearched predicted non-matches are the cells of ``strata``
    x prediction where no labelled pair is a match, bounded by
    :func:`hidden_matches`. ``n_effective`` and
    ``top_share`` are those of the weighted draws in each metric's denominator
    (w_t (alpha h_t + (1 - alpha) l_t)). The region (a pass over the pool) is computed
    only when no labelled predicted non-match is a match: otherwise no estimate is at
    that boundary and the region is not used."""
    level = estimates[0].level
    h = predicted[run.index].astype(np.float64)
    y = run.label.astype(np.float64)
    w = run.weight.astype(np.float64)
    if np.any((h == 0) & (y == 1)):
        region, misses_drawn = (0.0, 0.0, 0.0), True
    else:
        region, misses_drawn = _searched_region(run, predicted, strata, level)
    pp = float(np.sum(predicted))
    tp = estimates[0].value * pp
    r = estimates[1].value
    ap = tp / r if r > 0 else math.nan
    out = []
    for e, a in zip(estimates, alphas, strict=True):
        n_eff, share = concentration((w * (a * h + (1 - a) * y))[:, None])
        diag = search_diagnostics(
            e.value,
            e.ci_low,
            metric=e.metric,
            alpha=a,
            tp=tp,
            ap=ap,
            pp=pp,
            region=region,
            misses_drawn=misses_drawn,
            pool_size=run.pool_size,
            level=level,
            n_effective=float(n_eff),
            top_share=float(share),
        )
        out.append(replace(e, diagnostics=diag))
    return out
