"""The unsearched-non-match diagnostic every pair-label estimate carries.

An estimate of recall or F at the boundary (no labelled predicted non-match is a match)
rests on the unsearched predicted non-matches holding no match, which the labels cannot
show; :func:`search_diagnosed` says when more matches than the interval allows could hide
there (:func:`search_diagnostics`, bounded by
:func:`hidden_matches`), flags an interior recall or F well above what the oracle model
expects (:func:`model_gap_diagnostics`), and gives every estimate its
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


def hidden_matches(sizes, searched, *, level: float, labelled=None) -> tuple[float, float, float]:
    """``(n_pairs, n_effective, max_hidden)`` of a region of pairs where no labelled pair
    is a match, made of cells (strata) with ``sizes[c]`` = N_c pairs of which
    ``searched[c]`` = d_c distinct pairs were labelled, each drawn uniformly within its
    cell (OASIS and stratified draws); ``labelled[c]`` (default d_c) the pairs of the
    cell already labelled, when the effective search d_c is smaller (draws of unequal
    weight).

    ``n_pairs`` = sum_c N_c. Cells with d_c = 0 were never searched: any of their pairs
    may be a match. On the searched cells (S) the labelled pairs stand for N_c / d_c
    pairs each, whose effective size (:func:`searched_draws`, without the
    finite-population correction) is the number of uniform draws of the region they are
    worth, ``n_effective`` = (sum_S N_c)^2 / sum_S N_c^2 / d_c (= d when d_c is
    proportional to N_c, smaller when large cells were barely searched). With no match
    among them, the Clopper-Pearson (1934) upper limit of the match rate is
    1 - ((1 - level) / 2)^(1 / n_effective) (the upper end of the two-sided ``level``
    interval for 0 successes), so at most

        max_hidden = sum_{d_c = 0} N_c + sum_S (N_c - labelled_c) (1 - ((1 - level) / 2)^(1 / n_effective))

    matches hide among the region's unlabelled pairs at that level. This is the one
    bound of what a run cannot rule out: the lower end of a pair-label interval
    (:func:`boundary_lows`) and the diagnostic (:func:`search_diagnostics`) both use it.
    A stratum never searched says nothing about its rate, so its pairs count in full."""
    sizes = np.asarray(sizes, dtype=np.float64)
    searched = np.asarray(searched, dtype=np.float64)
    if sizes.shape != searched.shape or np.any(searched > sizes) or np.any(searched < 0):
        raise ValueError("searched must hold, per cell, 0 <= d_c <= N_c labelled pairs")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    known = searched if labelled is None else np.asarray(labelled, dtype=np.float64)
    hit = searched > 0
    never = float(np.sum(sizes[~hit]))
    n_s = float(np.sum(sizes[hit]))
    if n_s == 0:
        return never, 0.0, never
    n_eff = searched_draws(sizes[hit] / searched[hit], counts=searched[hit])
    rate = 1.0 - ((1.0 - level) / 2.0) ** (1.0 / n_eff)
    return never + n_s, n_eff, never + float(np.sum(sizes[hit] - known[hit])) * rate


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
    fp_region: tuple[float, float, float] = (0.0, 0.0, 0.0),
    fp_drawn: bool = True,
) -> Diagnostics:
    """:class:`Diagnostics` of a pair-label estimate F = TP / (alpha PP + (1 - alpha) AP)
    (alpha = 1: precision, 0: recall) with TP, AP and PP the estimated true positives and
    actual positives and the known predicted positives.

    Not reliable when undefined, or at its boundary: recall and F (alpha < 1) when no
    labelled predicted non-match is a match (``misses_drawn`` False) while the
    unsearched ``region`` of :func:`hidden_matches` could hide max_hidden = K_m of them;
    precision and F (alpha > 0) when no labelled predicted match is a non-match
    (``fp_drawn`` False) while ``fp_region`` could hide K_f false positives. The
    estimate then rests on no deficit having been drawn, which the labels cannot show,
    and its interval reaches down to

        F_K = (TP - K_f) / (alpha PP + (1 - alpha)(AP - K_f + K_m))

    (:func:`boundary_lows`), what the search cannot rule out, not to what the labels
    measured. ``n_effective`` and ``top_share`` describe the draws behind the estimate
    (as in :func:`concentration`)."""

    def out(reliable: bool, reason: str = "") -> Diagnostics:
        return Diagnostics(float(n_effective), float(top_share), reliable, reason)

    if not math.isfinite(value):
        return out(False, f"{metric} is undefined on this sample: label more pairs")
    k_m = region[2] if alpha < 1 and not misses_drawn else 0.0
    k_f = fp_region[2] if alpha > 0 and not fp_drawn else 0.0
    if (k_m <= 0 and k_f <= 0) or not math.isfinite(tp):
        return out(True)
    den = alpha * pp + (1.0 - alpha) * (ap - k_f + k_m)
    low = max(tp - k_f, 0.0) / den if tp > 0 and den > 0 else 0.0
    parts = []
    for k, (n_pairs, n_eff, _), what, many, where in (
        (k_m, region, "match", "matches", "predicted non-matches"),
        (k_f, fp_region, "false positive", "false positives", "predicted matches"),
    ):
        if k > 0:
            parts.append(
                f"no {what} was drawn among the {where}: up to {k:,.0f} {many} could hide "
                f"among {n_pairs:,.0f} of them ({n_pairs / pool_size:.1%} of the pool) in "
                f"strata where none was drawn ({n_eff:.1f} effective draws searched them) "
                f"at {level:.0%} (Clopper-Pearson)"
            )
    search = " and ".join(
        f"predicted {r}" for k, r in ((k_m, "non-matches"), (k_f, "matches")) if k > 0
    )
    return out(
        False,
        f"{metric} is at its boundary: {'; '.join(parts)}, so {metric} could be as low as "
        f"{low:.3g}; the interval reaches down to it, what the search rules out rather "
        f"than what the labels measured: label more {search} in those strata (e.g. "
        "continue_sampling(..., search=...))",
    )


def _searched_region(
    run: LabelRun,
    predicted: np.ndarray,
    strata: ScoreStrata | None,
    level: float,
    deficit: str = "miss",
):
    """(:func:`hidden_matches` of the region where a deficit could hide unseen, whether a
    deficit was drawn). ``deficit="miss"``: the predicted non-match cells (stratum x
    prediction) where no labelled pair is a match and some pair is unlabelled;
    ``"false_positive"``: the predicted-match cells where no labelled pair is a
    non-match. Without strata the prediction group is one cell whose searched size is
    :func:`searched_draws` of its draws' weights (uniform draws count fully, draws that
    rarely reach it little), at most its distinct labelled pairs. This is the one
    definition of the effective draws that searched a region, for the diagnostic and for
    the interval's lower end (:func:`boundary_lows`)."""
    prediction, bad = (0, 1) if deficit == "miss" else (1, 0)
    inside = predicted[run.index] == prediction
    if np.any(run.label[inside] == bad):  # a deficit drawn: no region (no pool pass)
        return (0.0, 0.0, 0.0), True
    drawn = False
    rows, first = np.unique(run.index, return_index=True)
    if strata is None:
        sizes = np.array([float(np.sum(predicted == prediction))])
        w = run.weight[inside].astype(np.float64)
        labelled = np.array([float(np.sum(predicted[rows] == prediction))])
        searched = np.minimum([searched_draws(w)], labelled)
        if labelled[0] >= sizes[0]:
            return (0.0, 0.0, 0.0), drawn
        return hidden_matches(sizes, searched, level=level, labelled=labelled), drawn
    if strata.codes.shape != predicted.shape:
        raise ValueError(
            f"strata must cover the run's pool ({predicted.shape[0]} pairs), "
            f"got {strata.codes.shape[0]}"
        )
    cells = 2 * strata.codes.astype(np.int64) + predicted.astype(np.int64)
    n_cells = 2 * strata.n_strata
    sizes = np.bincount(cells, minlength=n_cells).astype(np.float64)
    d = np.bincount(cells[rows], minlength=n_cells).astype(np.float64)
    group = np.arange(n_cells) % 2 == prediction
    region = group & (d < sizes)
    if not region.any():
        return (0.0, 0.0, 0.0), drawn
    return hidden_matches(sizes[region], d[region], level=level), drawn


def boundary_lows(
    run: LabelRun,
    predicted: np.ndarray,
    alphas: list[float],
    values: np.ndarray,
    lows: np.ndarray,
    level: float,
    strata: ScoreStrata | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Lower ends that never exclude what the run cannot rule out, and which estimates are
    exact: for F = TP / (alpha PP + (1 - alpha) AP) (``alphas`` = [1, 0, alpha...] with
    ``values`` precision, recall, F...), when no missed match was drawn the matches that
    could hide in the unsearched predicted non-matches, K_m = max_hidden of
    :func:`hidden_matches` over the region of :func:`_searched_region`, and when no
    false positive was drawn the false positives K_f that could hide among the
    unsearched predicted matches, give

        F_K = (TP - K_f) / (alpha PP + (1 - alpha)(AP - K_f + K_m))

    (TP = precision x PP, AP = TP / recall), and the lower end is at most F_K (F_K itself
    at an estimate of 1): the bound the diagnostic reports (:func:`search_diagnostics`),
    not a Wilson bound on draws that never reached those pairs. Returns (lows, exact): an estimate of 1 with
    no unlabelled pair that could lower it is exact (a census of what it depends on)."""
    lows = np.array(lows, dtype=np.float64)
    exact = np.zeros(len(values), dtype=bool)
    (_, _, k_miss), misses_drawn = _searched_region(run, predicted, strata, level, "miss")
    (_, _, k_fp), fp_drawn = _searched_region(run, predicted, strata, level, "false_positive")
    pp = float(np.sum(predicted))
    precision, recall = float(values[0]), float(values[1])
    if not math.isfinite(precision):
        return lows, exact
    tp = precision * pp
    ap = tp / recall if recall > 0 else math.nan
    for j, alpha in enumerate(alphas):
        if not math.isfinite(values[j]):
            continue
        km = k_miss if alpha < 1 and not misses_drawn else 0.0
        kf = k_fp if alpha > 0 and not fp_drawn else 0.0
        if km == 0 and kf == 0:
            exact[j] = values[j] >= 1.0 - 1e-12 and (alpha < 1 or not fp_drawn)
            continue
        den = alpha * pp + (1 - alpha) * (ap - kf + km)
        bound = max(tp - kf, 0.0) / den if tp > 0 and den > 0 else 0.0
        # at 1 the variance is 0 and the Wilson fallback counts the labelled pairs of the
        # denominator, which say nothing about the deficit: the bound alone
        lows[j] = bound if values[j] >= 1.0 - 1e-12 else min(lows[j], bound)
    return lows, exact


MODEL_GAP = 0.35
"""Standard errors by which a recall or F estimate may exceed the oracle model's before it
is flagged (:func:`model_gap_diagnostics`). Chosen on the abt-buy and restaurant runs of
``benchmarks/bench_pairs_intervals.py`` (the smallest gap flagging at most 15% of the
runs of the cells whose coverage is in [93%, 98%]) and checked on dblp-acm,
restaurant-all and FEBRL (benchmarks/README.md, "Pair-label intervals")."""


def model_gap_diagnostics(
    estimate: Estimate,
    diagnostics: Diagnostics,
    *,
    alpha: float,
    tp: float,
    pp: float,
    fn: float,
    model_fn: float | None,
) -> Diagnostics:
    """``diagnostics`` of a recall or F estimate (``alpha`` < 1) with the flag of an
    estimate above what the oracle model expects. An importance-weighted count of the
    missed matches FN rests on the few draws that reach the rarely drawn low-score
    strata; a run that drew fewer of their matches than the proposal expects has both a
    higher recall and a smaller variance, so its interval misses from above. The
    oracle model (``model_fn``: :func:`~er_evaluation.pairs._variance.model_misses`, the
    Dirichlet tree of Marchant & Rubinstein 2021, §4, over the strata's labels) pools
    each stratum's labels with its neighbours' and its prior; with
    F_model = TP / (alpha PP + (1 - alpha)(TP + FN_model)), the estimate is flagged when

        (F - F_model) / SE >= MODEL_GAP.

    Measured on 5 pools x OASIS, AIS and static IS x 500 / 1,000 / 2,000 labels (28-200
    runs per cell; benchmarks/README.md, "Pair-label intervals"), with the estimates kept
    within what the labels allow (:func:`within_label_range`) and the gap judged on the
    weighted value before that: with the boundary flags it catches 164 of the 499 misses
    (32.9%, MC SE 2.1%; 42.6% on abt-buy and restaurant, where the gap was chosen, 21.4%
    on dblp-acm, restaurant-all and FEBRL) and flags 16.7% of the runs of the cells whose
    coverage is in [93%, 98%] (14.0% and 19.4%): short of catching half the misses. A
    smaller gap does not get there within 20% of false alarms (0.25: 35.9% at 19.6%;
    0.2: 38.1% at 21.6%). It misses nearly all of FEBRL's (the model, fitted to the same
    labels, agrees with the draws) and
    every precision miss (the model concerns missed matches only)."""
    if (
        not diagnostics.reliable
        or alpha >= 1
        or model_fn is None
        or not (math.isfinite(model_fn) and math.isfinite(tp) and tp > 0)
        or not estimate.std_error > 0
    ):
        return diagnostics
    den = alpha * pp + (1.0 - alpha) * (tp + model_fn)
    model_value = tp / den if den > 0 else math.nan
    gap = (estimate.value - model_value) / estimate.std_error
    if not gap >= MODEL_GAP:
        return diagnostics
    return replace(
        diagnostics,
        reliable=False,
        reason=(
            f"{estimate.metric} is {gap:.2f} standard errors above what the oracle model of "
            f"the strata expects ({model_value:.3g}): the draws count {fn:,.1f} missed "
            f"matches, the model {model_fn:,.1f}, so matches in rarely drawn low-score "
            "strata may be under-counted and the interval too narrow: label more predicted "
            "non-matches (e.g. continue_sampling(..., search=...))"
        ),
    )


def label_range(run: LabelRun, predicted: np.ndarray, alphas: list[float]) -> np.ndarray:
    """(lowest, highest) value of F = TP / (alpha PP + (1 - alpha)(TP + FN)) for each of
    ``alphas`` (1: precision, 0: recall) that the labelled pairs of ``run`` leave possible,
    shape (2, len(alphas)): whatever the unlabelled pairs hold, the true positives are
    t <= TP <= t + u_1 and the missed matches m <= FN <= m + u_0, with t and m the
    labelled predicted matches and predicted non-matches that are matches and u_1, u_0
    the unlabelled predicted matches and predicted non-matches. F rises with TP and falls
    with FN, so its lowest value is F(t, m + u_0) and its highest F(t + u_1, m); an
    undefined end (a zero denominator) is 0 or 1. The truth always lies in this range:
    every estimate and interval is kept inside it (:func:`within_label_range`)."""
    rows, first = np.unique(run.index, return_index=True)
    on_pred = predicted[rows].astype(bool)
    match = run.label[first].astype(bool)
    pp = float(np.sum(predicted))
    t, m = float(np.sum(match & on_pred)), float(np.sum(match & ~on_pred))
    u1 = pp - float(np.sum(on_pred))
    u0 = float(len(predicted)) - pp - float(np.sum(~on_pred))
    a = np.asarray(alphas, dtype=np.float64)

    def f(tp: float, fn: float, default: float) -> np.ndarray:
        den = a * pp + (1.0 - a) * (tp + fn)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(den > 0, tp / np.where(den > 0, den, 1.0), default)

    return np.vstack([f(t, m + u0, 0.0), f(t + u1, m, 1.0)])


def within_label_range(
    value: np.ndarray,
    se: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    possible: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(value, SE, low, high) of pair-label estimates moved into what the labelled pairs
    allow, [L, H] = ``possible`` (:func:`label_range`, shape (2, M)): the truth always
    lies there, so the point estimate is clipped into it and the interval intersected
    with it. An interval entirely above H (below L) is an importance-weighted estimate
    whose few heavy draws overshot what the labels already show; its error is then known
    to lie on one side, so the interval is rebuilt at the boundary with its own width
    w turned inward: [max(L, H - w), H] ([L, min(H, L + w)]). The interval always holds
    the clipped value and lies in [L, H]; the SE is kept, 0 where the labels pin the value
    (L = H); the value before clipping stays the estimate's ``plugin``.

    Chosen on the stored draws of ``benchmarks/bench_pairs_intervals.py`` (5 pools x
    OASIS, AIS, static IS x 500 / 1,000 / 2,000 labels, 28-200 runs per cell;
    benchmarks/README.md, "Pair-label intervals against their error") over rebuilding
    at the boundary with zero width, a Wilson interval at the clipped value, or the
    interval translated with the value: the width turned inward covers 71 of the 73
    intervals that lay outside the range (the others 69), so the misses fell from 570 to
    499 with none new; the MSE fell in the 83 cells where the clipping acts (the error
    only shrinks, the truth being in [L, H]), and 10 cells went above 98% coverage at
    width ratios 0.68-1.01."""
    lo_end, hi_end = possible
    width = high - low
    above, below = low > hi_end, high < lo_end
    new_low = np.where(above, np.maximum(lo_end, hi_end - width), np.maximum(low, lo_end))
    new_high = np.where(below, np.minimum(hi_end, lo_end + width), np.minimum(high, hi_end))
    new_low = np.where(below, lo_end, new_low)
    new_high = np.where(above, hi_end, new_high)
    clipped = np.minimum(np.maximum(value, lo_end), hi_end)
    new_low, new_high = np.minimum(new_low, clipped), np.maximum(new_high, clipped)
    se = np.where(lo_end >= hi_end, 0.0, se)
    return clipped, se, new_low, new_high


def search_diagnosed(
    estimates: list[Estimate],
    run: LabelRun,
    predicted: np.ndarray,
    alphas: list[float],
    strata: ScoreStrata | None,
    model_fn: float | None = None,
) -> list[Estimate]:
    """``estimates`` (precision, recall, F_alpha... of the 0/1 ``predicted`` from ``run``,
    with ``alphas`` = [1, 0, alpha...]) with
    :func:`search_diagnostics` on each: TP = P PP,
    AP = TP / R, and the unsearched predicted non-matches are the cells of ``strata``
    x prediction where no labelled pair is a match, bounded by
    :func:`hidden_matches`; recall and F are also flagged when they sit above the oracle
    model's count of missed matches ``model_fn`` (:func:`model_gap_diagnostics`), judged
    on the importance-weighted values (each estimate's ``plugin``, its value before it was
    kept inside what the labels allow, :func:`within_label_range`): a count of
    the missed matches below the model's is the warning sign even when the clipped value
    lies near the model's (measured: on the clipped values the flag caught 93 of 499
    misses, on the weighted ones 164).
    ``n_effective`` and
    ``top_share`` are those of the weighted draws in each metric's denominator
    (w_t (alpha h_t + (1 - alpha) l_t)). The region (a pass over the pool) is computed
    only when no labelled predicted non-match is a match: otherwise no estimate is at
    that boundary and the region is not used."""
    level = estimates[0].level
    h = predicted[run.index].astype(np.float64)
    y = run.label.astype(np.float64)
    w = run.weight.astype(np.float64)
    region, misses_drawn = _searched_region(run, predicted, strata, level)
    fp_region, fp_drawn = _searched_region(run, predicted, strata, level, "false_positive")
    pp = float(np.sum(predicted))
    tp = estimates[0].value * pp
    r = estimates[1].value
    ap = tp / r if r > 0 else math.nan
    weighted = [e.plugin if math.isfinite(e.plugin) else e.value for e in estimates]
    tp_w = float(weighted[0]) * pp
    ap_w = tp_w / float(weighted[1]) if weighted[1] > 0 else math.nan
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
            fp_region=fp_region,
            fp_drawn=fp_drawn,
            pool_size=run.pool_size,
            level=level,
            n_effective=float(n_eff),
            top_share=float(share),
        )
        diag = model_gap_diagnostics(
            replace(e, value=float(weighted[len(out)])),
            diag,
            alpha=a,
            tp=tp_w,
            pp=pp,
            fn=ap_w - tp_w,
            model_fn=model_fn,
        )
        out.append(replace(e, diagnostics=diag))
    return out
