"""The unsearched-non-match diagnostic every pair-label estimate carries.

An estimate of recall or F at the boundary (no labelled predicted non-match is a match)
rests on the unsearched predicted non-matches holding no match, which the labels cannot
show; :func:`search_diagnosed` says when more matches than the interval allows could hide
there (:func:`~er_evaluation.estimators.diagnostics.search_diagnostics`, bounded by
:func:`~er_evaluation.estimators.diagnostics.hidden_matches`), and gives every estimate its
effective number of draws and their concentration. Used by
:func:`~er_evaluation.pairs.estimate_from_labels` (the run's own strata) and by label reuse
(:func:`~er_evaluation.pairs.reuse.search_check`, any strata).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from er_evaluation.estimators.diagnostics import (
    concentration,
    hidden_matches,
    search_diagnostics,
    searched_draws,
)
from er_evaluation.estimators.results import Estimate
from er_evaluation.pairs._stratify import Strata

if TYPE_CHECKING:
    from er_evaluation.pairs.estimates import LabelRun

__all__: list[str] = []  # private: used by pairs.estimates and pairs.reuse


def _searched_region(run: LabelRun, predicted: np.ndarray, strata: Strata | None, level: float):
    """(:func:`~er_evaluation.estimators.diagnostics.hidden_matches` of the predicted
    non-match cells (stratum x prediction) where no labelled pair is a match and some
    pair is unlabelled, whether any labelled predicted non-match is a match). Without
    strata the predicted non-matches are one cell whose searched size is
    :func:`~er_evaluation.estimators.diagnostics.searched_draws` of its draws' weights
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
    strata: Strata | None,
) -> list[Estimate]:
    """``estimates`` (precision, recall, F_alpha... of the 0/1 ``predicted`` from ``run``,
    with ``alphas`` = [1, 0, alpha...]) with
    :func:`~er_evaluation.estimators.diagnostics.search_diagnostics` on each: TP = P PP,
    AP = TP / R, and the unsearched predicted non-matches are the cells of ``strata``
    x prediction where no labelled pair is a match, bounded by
    :func:`~er_evaluation.estimators.diagnostics.hidden_matches`. ``n_effective`` and
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
