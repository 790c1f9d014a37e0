"""Pair-label estimates with the labelled part known: exact at census, honest at the boundary.

Every labelled pair's label is known, so a total over the pool is the known sum over the
labelled pairs plus an estimate for the unlabelled remainder only. The pool is cut into
cells c on which the remainder is estimated: the sampler's strata (stratified design) or
the whole pool (passive); every cell is split further by the prediction, which is known
for every pair (so the predicted-positive count PP is exact). With d_c distinct labelled
pairs, m_c of them matches, out of N_c pairs, the number of matches is

    M_c = m_c + (N_c - d_c) pbar_c,      pbar_c = m_c / d_c

the mean of the labelled pairs of the cell: pairs of a cell are drawn uniformly (passive,
stratified; OASIS also draws uniformly within a stratum, but see :func:`hybrid_estimate`
for why its runs are not estimated this way). Then
TP = sum over predicted-match cells of M_c, actual positives AP = sum_c M_c, and
F_alpha = TP / (alpha PP + (1 - alpha) AP). Once every pair of a cell is labelled its
remainder is empty and M_c = m_c exactly; at census the estimate is the truth with zero
width. Importance runs (static IS, OASIS) are estimated by
:func:`hybrid_estimate`, exact at census in the same way.

Cells with no labelled pair are merged into the nearest labelled cell of the same
prediction in order of the strata's mean score (collapsed strata): they are assumed to have its match rate. If
no pair of a prediction group is labelled, the metrics that need that group are undefined.

Variance (delta method on the cell remainders, which are independent given the cell
sizes): Var(F) = sum_c g_c^2 V_c with g_c = (h_c - (1 - alpha) F) / B (h_c = the cell's
prediction, B = alpha PP + (1 - alpha) AP) and
V_c = N_c (N_c - d_c) s_c^2 / d_c, s_c^2 = pbar_c (1 - pbar_c) d_c / (d_c - 1): the error of
the estimated remainder mean plus the remainder's own sampling variation, i.e. the
unbiased stratified-sampling variance N_c^2 (1 - d_c / N_c) s_c^2 / d_c.

Interval: Wilson's score interval on an effective sample size (in the spirit of Korn &
Graubard 1998 for proportions from complex samples): n* = F (1 - F) / Var when
0 < F < 1 and Var > 0. When F is 0 or 1 (no false positive, or no missed match, among the
labelled pairs) the variance is 0 but the truth need not be: n* is then the Kish
effective number of labelled pairs in F's denominator, (sum w b)^2 / sum w^2 b^2 with
w_i = 1 + u_i (N_c - d_c) / sum_c u (the pairs pair i stands for), divided by 1 - f where
f is the labelled share of the cells F depends on. When no false positive or no missed
match was drawn, :func:`er_evaluation.pairs.estimate_from_labels` then lowers the lower end
to what the draws that searched the unlabelled pairs that could hold one cannot rule out
(:func:`er_evaluation.pairs._search.boundary_lows`, the diagnostic's bound; for recall the
predicted non-matches, not the labelled positives), for every design. The interval has zero
width only when every pair of those cells is labelled.
"""

from __future__ import annotations

import math

import numpy as np

from er_evaluation.pairs._search import searched_draws
from er_evaluation.pairs._variance import (
    Hidden,
    finish,
    labelled_groups,
    labels_only_variance,
)

__all__: list[str] = []  # private: used by er_evaluation.pairs.estimates


def cell_codes(
    predicted: np.ndarray, strata_codes: np.ndarray | None, n_strata: int = 1
) -> tuple[np.ndarray, int]:
    """Cell of every pool pair: 2 * stratum + prediction (stratum 0 without strata), and the
    number of cells."""
    pred = np.asarray(predicted).astype(np.int64)
    if strata_codes is None:
        return pred, 2
    return 2 * np.asarray(strata_codes, dtype=np.int64) + pred, 2 * n_strata


def _merge_targets(labelled: np.ndarray, order_key: np.ndarray) -> np.ndarray:
    """For every cell the labelled cell whose rate it takes: itself if labelled, else the
    nearest labelled cell of the same prediction in ``order_key`` (score) order, the lower
    one on ties; -1 if its prediction group has no labelled cell."""
    n_cells = len(labelled)
    target = np.full(n_cells, -1, dtype=np.int64)
    for h in (0, 1):
        cells = np.arange(h, n_cells, 2)
        cells = cells[np.argsort(order_key[cells], kind="stable")]
        have = np.flatnonzero(labelled[cells])  # positions in score order
        if len(have) == 0:
            continue
        pos = np.arange(len(cells))
        at = np.searchsorted(have, pos)
        lower = have[np.clip(at - 1, 0, len(have) - 1)]
        upper = have[np.clip(at, 0, len(have) - 1)]
        use_upper = (np.abs(upper - pos) < np.abs(pos - lower)) | (pos < have[0])
        target[cells] = cells[np.where(use_upper, upper, lower)]
    return target


def remainder_estimate(
    cells: np.ndarray,
    sizes: np.ndarray,
    order_key: np.ndarray,
    index: np.ndarray,
    label: np.ndarray,
    share: np.ndarray,
    alphas: list[float],
    z: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Values, standard errors and Wilson effective-size intervals of precision, recall and
    F_alpha (for each alpha) from the distinct labelled pairs ``index`` (pool rows) with
    their ``label`` and remainder shares ``share`` (u_i above); ``cells`` is the cell of
    every pool pair, ``sizes`` = N_c and ``order_key`` the cells' score order for merging
    unlabelled cells. Returns four arrays of length 2 + len(alphas);
    NaN where undefined."""
    n_cells = len(sizes)
    c = cells[index]
    y = label.astype(np.float64)
    u = share.astype(np.float64)
    d = np.bincount(c, minlength=n_cells).astype(np.float64)
    m = np.bincount(c, weights=y, minlength=n_cells)
    su = np.bincount(c, weights=u, minlength=n_cells)
    suy = np.bincount(c, weights=u * y, minlength=n_cells)
    suu = np.bincount(c, weights=u * u, minlength=n_cells)
    suuy = np.bincount(c, weights=u * u * y, minlength=n_cells)
    labelled = d > 0
    target = _merge_targets(labelled, order_key)
    known = target >= 0
    # rate of the remainder per labelled cell (u = 0 only for pairs drawn with certainty)
    with np.errstate(invalid="ignore", divide="ignore"):
        plain = m / d
        rate = np.where(su > 0, suy / su, plain)
        bessel = d / np.maximum(d - 1, 1)
        hajek = bessel * np.where(
            su > 0, (suuy * (1 - 2 * rate) + rate**2 * suu) / np.where(su > 0, su, 1) ** 2, 0.0
        )
        s2 = rate * (1 - rate) * bessel
    t = np.where(known, target, 0)
    rest = sizes - d  # unlabelled pairs per cell (merged cells: all of them)
    # merged cells borrow their target's rate; their remainder variance joins the target's
    # Hajek term as if the two cells were one collapsed stratum
    matches = m + rest * np.where(known, rate[t], np.nan)
    rest_group = np.bincount(t, weights=np.where(known, rest, 0.0), minlength=n_cells)
    var_cell = rest_group**2 * np.nan_to_num(hajek) + rest_group * np.nan_to_num(s2)
    h = (np.arange(n_cells) % 2).astype(np.float64)
    pp = float(np.sum(sizes * h))
    tp = _sum_needed(matches, h == 1, sizes)
    ap = _sum_needed(matches, np.ones(n_cells, dtype=bool), sizes)
    # per-pair representation weights for the boundary effective size
    w_pair = 1.0 + u * np.where(su[c] > 0, rest_group[c] / np.where(su[c] > 0, su[c], 1), 0.0)
    h_pair = h[c]
    coefs = [1.0, 0.0, *alphas]
    out = np.full((4, len(coefs)), math.nan)
    for j, alpha in enumerate(coefs):
        den = alpha * pp + (1 - alpha) * ap if alpha < 1 else pp
        if not den > 0:
            continue
        f = tp / den
        g = (h - (1 - alpha) * f) / den
        var = float(np.sum(g**2 * var_cell))
        relevant = (h == 1) if alpha == 1 else np.ones(n_cells, dtype=bool)
        remaining = float(np.sum(rest[relevant]))
        n_fallback = math.inf
        if remaining > 0:
            wb = w_pair * (alpha * h_pair + (1 - alpha) * y)
            share = float(np.sum(d[relevant])) / float(np.sum(sizes[relevant]))
            n_fallback = searched_draws(wb, labelled_share=share)
        out[:, j] = finish(f, var, z, n_fallback=n_fallback, remaining=remaining)
    return out[0], out[1], out[2], out[3]


def hybrid_estimate(
    cells: np.ndarray,
    sizes: np.ndarray,
    draws: np.ndarray,
    label: np.ndarray,
    weight: np.ndarray,
    alphas: list[float],
    z: float,
    hidden: Hidden | None = None,
    strata_cells: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For importance runs (static IS, OASIS, pooled runs; cells = the two prediction
    groups): fully labelled cells exactly, the other ("open") cells by the
    self-normalised importance-sampling ratio of Marchant & Rubinstein 2017
    (Algorithm 3, line 11), which stays consistent however the proposal adapted (Marchant & Rubinstein 2017
    §5; Marchant & Rubinstein 2021, Theorem 1). With draws z_t of weight w_t = p/q_t, h_t their prediction,
    E_1 / E_0 the matches of the fully labelled predicted-match / non-match cells and
    D = sum_t w_t h_t (all predicted-match draws) normalised to the known PP:

        TP = E_1 + PP sum_{z_t open, h_t = 1} w_t l_t / D
        FN = E_0 + PP sum_{z_t open, h_t = 0} w_t l_t / D

    and F_alpha = TP / (alpha PP + (1 - alpha)(TP + FN)). With no fully labelled cell this
    is exactly the paper's estimate; at census it is the truth. Variance: delta method on
    the three weighted sums A, C, D above, each draw's influence
    w_t (l_t [open, h_t = 1] dF/dA + l_t [open, h_t = 0] dF/dC + h_t dF/dD) summed as a
    martingale (T times the sample variance of the influences; Marchant & Rubinstein 2021 §3.3.2 with each
    draw's own proposal).

    With ``hidden`` (OASIS, AIS, static IS: the matches hidden in the strata where no
    match was drawn, drawn from the posterior of the sampler's oracle model,
    :func:`er_evaluation.pairs._variance.hidden_counts`), the interval of recall and F
    adds them to the labels' sampling error (:func:`er_evaluation.pairs._variance.finish`):
    a stratum whose matches were not drawn yet adds nothing to the estimate or to the
    labels' variance, though the model says matches may be there (the labels-only
    variance alone covered abt-buy recall in 88% of OASIS runs at 1,000 and 2,000 labels,
    benchmarks/README.md, "Coverage with cut strata"). Not the stratum means of OASIS runs: OASIS starves a stratum
    whose first labels are non-matches, so its labelled pairs under-represent its matches
    (post-stratified OASIS covered recall in 60% of 40 abt-buy runs, benchmarks/README.md).
    Intervals as in :func:`remainder_estimate`. ``draws`` are pool rows of every draw
    (repeats included).

    With ``strata_cells`` = (stratum x prediction cell of every draw, cell sizes;
    passed for every run that carries its sampler's strata: OASIS, reuse runs pooled onto
    an OASIS sampler) the sums A, C and D are those of :func:`_substituted_sums`: a
    draw's terms for a cell labelled completely before it are replaced by their known
    conditional expectations, so TP = PP A' / D' and FN = PP C' / D' (a prediction group
    labelled completely still enters exactly). This needs only that each draw's weight is
    p/q_t of its own proposal with q_t > 0 on the cell, not uniform draws within it. The
    variance is that of these sums: a draw into a cell completed before it adds a known
    constant, no sampling variance. Taking the cells that are complete at the end
    exactly instead (not from the draw on which they completed) was biased: a stratum
    completes sooner when its early draws found matches (abt-buy recall covered in 76%
    of 200 OASIS runs, benchmarks/README.md)."""
    n_cells = len(sizes)
    rows, first = np.unique(draws, return_index=True)
    c_rows = cells[rows]
    d = np.bincount(c_rows, minlength=n_cells).astype(np.float64)
    m = np.bincount(c_rows, weights=label[first].astype(np.float64), minlength=n_cells)
    full = (d == sizes) & (sizes > 0)
    h = (np.arange(n_cells) % 2).astype(bool)
    c_t = cells[draws]
    y = label.astype(np.float64)
    w = weight.astype(np.float64)
    h_t, open_t = h[c_t], ~full[c_t]
    in_a = (open_t & h_t).astype(np.float64)  # open predicted-match draws
    in_c = (open_t & ~h_t).astype(np.float64)  # open predicted-non-match draws
    e1, e0 = float(np.sum(m[full & h])), float(np.sum(m[full & ~h]))
    pp = float(np.sum(sizes[h]))
    a, c, dd = float(np.sum(w * y * in_a)), float(np.sum(w * y * in_c)), float(np.sum(w * h_t))
    t = len(draws)
    live = w
    if dd > 0 and strata_cells is not None:
        a_s, c_s, d_s, live_t = _substituted_sums(*strata_cells, draws, y, w, t)
        # a draw into a cell labelled completely before it adds that cell's known
        # expectation, not its own label: no sampling variance (its influence is 0)
        live = w * live_t
        # a prediction group whose pairs are all labelled stays exact (census)
        tp = e1 if full[1] else pp * a_s / d_s
        fn = e0 if full[0] else pp * c_s / d_s
        a, c, dd = a_s, c_s, d_s  # the sums the estimate is a function of
    elif dd > 0:
        tp, fn = e1 + pp * a / dd, e0 + pp * c / dd
    else:
        tp, fn = math.nan, math.nan  # no predicted match drawn: TP unknown

    sq_groups = labelled_groups(c_t, label, live * live, n_cells)
    w_groups = labelled_groups(c_t, label, live, n_cells)

    def grad_var(alpha: float, f: float, den: float) -> float:
        if t < 2:
            return 0.0
        q = pp / dd
        # F = TP / (alpha PP + (1 - alpha)(TP + FN)), TP = q A and FN = q C unless their
        # prediction group is labelled completely (then exact: no derivative)
        d_tp = (1 - (1 - alpha) * f) / den * (not full[1])
        d_fn = -(1 - alpha) * f / den * (not full[0])
        d_a, d_c = d_tp * q, d_fn * q
        d_d = -(d_tp * q * a + d_fn * q * c) / dd
        # cells = prediction groups; g1 / g0: influence per unit weight of a match /
        # non-match of each group (its A, C and D terms)
        g1 = h * d_a + (~h) * d_c + h * d_d
        g0 = h * d_d
        second = float(labels_only_variance(sq_groups, g1, g0))
        # centred and scaled as T times the sample variance of the influences
        first = float(np.sum(w_groups[:, 1] * g1 + w_groups[:, 0] * g0))
        return t / (t - 1) * max(second - first**2 / t, 0.0)

    def kish(alpha: float) -> float:
        relevant = h if alpha == 1 else np.ones(n_cells, dtype=bool)
        wb = w * open_t * (alpha * h_t + (1 - alpha) * y)
        return searched_draws(wb, labelled_share=float(d[relevant].sum() / sizes[relevant].sum()))

    coefs = [1.0, 0.0, *alphas]
    out = np.full((4, len(coefs)), math.nan)
    for j, alpha in enumerate(coefs):
        den = pp if alpha == 1 else alpha * pp + (1 - alpha) * (tp + fn)
        if math.isnan(tp) or not den > 0:
            continue
        f = tp / den
        shift = None
        if hidden is not None:
            # the value if the hidden misses were known (precision does not depend on them)
            shift = tp / (alpha * pp + (1 - alpha) * (tp + fn + hidden.misses)) - f
        out[:, j] = finish(
            f,
            grad_var(alpha, f, den),
            z,
            n_fallback=kish(alpha),
            remaining=float(np.sum((sizes - d)[h] if alpha == 1 else sizes - d)),
            shift=shift,
        )
    return out[0], out[1], out[2], out[3]


def _substituted_sums(
    cell_t: np.ndarray, sizes: np.ndarray, draws: np.ndarray, y: np.ndarray, w: np.ndarray, t: int
) -> tuple[float, float, float, np.ndarray]:
    """The weighted sums of matches among predicted matches (A) and among predicted
    non-matches (C) and of predicted matches (D), and whether each draw's cell was still
    open at the draw (or completed by it), each draw's term replaced by its known
    conditional expectation for the cells completely labelled before it: draw t adds
    w_t l_t (and w_t h_t) if its cell c_t still had unlabelled pairs, and M_c / N (and
    N_c h_c / N) for every cell c complete before t (its M_c matches known), so each
    term keeps its conditional expectation and the sums stay martingales (unbiased for
    T TP / N, T FN / N and T PP / N; tests/test_oasis_exact_strata.py checks it over
    every draw path). ``cell_t`` = stratum x prediction cell of every draw (only the
    draws' cells: no pass over the pool), ``sizes`` the cells' sizes; ``draws`` pool rows
    in draw order."""
    n_cells = len(sizes)
    rows, first = np.unique(draws, return_index=True)
    c_rows = cell_t[first]
    d = np.bincount(c_rows, minlength=n_cells)
    m = np.bincount(c_rows, weights=y[first], minlength=n_cells)
    full = (d == sizes) & (sizes > 0)
    # draw at which each cell became complete: the first draw of its last new pair
    done = np.full(n_cells, -1, dtype=np.int64)
    np.maximum.at(done, c_rows, first)
    done = np.where(full, done, t)
    c_t = cell_t
    open_t = np.arange(t) <= done[c_t]  # the cell still open at the draw (or completed by it)
    h = np.arange(n_cells) % 2 == 1
    n_pool = float(np.sum(sizes))
    later = np.where(full, t - 1 - done, 0) / n_pool  # draws after completion, over N
    terms = w * y * open_t
    h_t = h[c_t]
    a = float(np.sum(terms[h_t]) + np.sum((m * later)[h]))
    c = float(np.sum(terms[~h_t]) + np.sum((m * later)[~h]))
    d_sum = float(np.sum((w * open_t)[h_t]) + np.sum((sizes * later)[h]))
    return a, c, d_sum, open_t


def _sum_needed(matches: np.ndarray, which: np.ndarray, sizes: np.ndarray) -> float:
    """Sum of the matches of the selected non-empty cells; NaN if one of them is unknown."""
    pick = which & (sizes > 0)
    values = matches[pick]
    return math.nan if np.isnan(values).any() else float(values.sum())
