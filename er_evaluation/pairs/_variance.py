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
squared influences. A model of the oracle (the stratum posterior of OASIS, or the
Dirichlet tree of Marchant & Rubinstein 2021, §4) gives pi_c for cells whose matches were
not all drawn yet.
"""

from __future__ import annotations

import numpy as np

__all__: list[str] = []  # private: used by _remainder.hybrid_estimate and measures.estimate_measure


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
    return sums.reshape(n_cells, 2)


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
