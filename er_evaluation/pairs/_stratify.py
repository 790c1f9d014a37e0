"""Stratification of a pair pool by score: cumulative sqrt(F) (Marchant & Rubinstein 2017, Algorithm 1).

Predicted matches and predicted non-matches are stratified separately, so no stratum
mixes the two (each stratum then has lambda_k in {0, 1}, which is what makes the OASIS
instrumental distribution sharp for precision).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Strata", "csf_edges", "stratify"]


@dataclass(frozen=True)
class Strata:
    """A partition of the pool into K non-empty strata.

    ``codes[i]`` is the stratum of pair i; ``order`` lists pair indices grouped by stratum,
    stratum k occupying ``order[offsets[k]:offsets[k + 1]]``; ``sizes`` = |P_k|;
    ``predicted`` = lambda_k (0 or 1: strata never mix predictions); ``mean_score`` is the
    mean score per stratum.
    """

    codes: np.ndarray
    order: np.ndarray
    offsets: np.ndarray
    sizes: np.ndarray
    predicted: np.ndarray
    mean_score: np.ndarray

    @property
    def n_strata(self) -> int:
        return len(self.sizes)

    @property
    def omega(self) -> np.ndarray:
        """omega_k = |P_k| / N."""
        return self.sizes / self.sizes.sum()

    def members(self, k: int) -> np.ndarray:
        return self.order[self.offsets[k] : self.offsets[k + 1]]


def csf_edges(scores: np.ndarray, n_strata: int, n_bins: int | None = None) -> np.ndarray:
    """Score cut points of the cumulative sqrt(F) method (Marchant & Rubinstein 2017, Algorithm 1).

    Histogram the scores into M bins, cumulate sqrt(counts), cut that scale into
    ``n_strata`` equal widths and map the cuts back to score bin edges. Returns the
    interior edges (ascending, at most ``n_strata - 1``); empty strata are removed later.
    """
    if n_strata < 1:
        raise ValueError(f"n_strata must be >= 1, got {n_strata}")
    if len(scores) == 0 or n_strata == 1:
        return np.empty(0)
    lo, hi = float(scores.min()), float(scores.max())
    if lo == hi:
        return np.empty(0)
    bins = n_bins or int(min(max(40 * n_strata, 100), max(len(scores), 100)))
    counts, edges = np.histogram(scores, bins=bins, range=(lo, hi))
    csf = np.cumsum(np.sqrt(counts))
    width = csf[-1] / n_strata
    targets = width * np.arange(1, n_strata)
    # first bin whose cumulative sqrt(F) reaches each target; its right edge is a cut
    cut_bins = np.searchsorted(csf, targets, side="left")
    cut_bins = np.unique(np.clip(cut_bins, 0, bins - 2))
    return edges[cut_bins + 1]


def stratify(
    scores: np.ndarray,
    predicted: np.ndarray,
    n_strata: int = 30,
    *,
    n_bins: int | None = None,
) -> Strata:
    """CSF strata of the pool, built separately within predicted matches and non-matches.

    Each of the two groups is cut into at most ``n_strata`` strata; empty strata are
    dropped. Vectorised: one histogram and one ``searchsorted`` per group, and a stable
    sort of the small integer codes to build per-stratum index arrays.
    """
    scores = np.asarray(scores, dtype=np.float64)
    predicted = np.asarray(predicted).astype(bool)
    n = len(scores)
    raw = np.empty(n, dtype=np.int64)
    base = 0
    group_of_code = []
    for flag in (False, True):
        mask = predicted == flag
        if not mask.any():
            continue
        group_scores = scores[mask] if not mask.all() else scores
        edges = csf_edges(group_scores, n_strata, n_bins)
        raw[mask] = base + np.searchsorted(edges, group_scores, side="right")
        group_of_code.extend([flag] * (len(edges) + 1))
        base += len(edges) + 1
    counts = np.bincount(raw, minlength=base)
    kept = np.flatnonzero(counts)
    remap = np.full(base, -1, dtype=np.int64)
    remap[kept] = np.arange(len(kept))
    dtype = np.int16 if len(kept) < 2**15 else np.int32
    codes = remap[raw].astype(dtype)
    order = np.argsort(codes, kind="stable")
    sizes = counts[kept]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    score_sums = np.bincount(codes, weights=scores, minlength=len(kept))
    return Strata(
        codes=codes,
        order=order,
        offsets=offsets,
        sizes=sizes.astype(np.int64),
        predicted=np.asarray(group_of_code)[kept].astype(np.int8),
        mean_score=score_sums / sizes,
    )
