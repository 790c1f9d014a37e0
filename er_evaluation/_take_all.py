"""The certainty units of a design of predicted clusters reviewed whole, shared by
:mod:`er_evaluation.recommend` and the reliability diagnostic's advice.

A predicted cluster of ``s`` records costs ``s`` records to review and its contribution to
precision varies in proportion to its links ``L = C(s, 2)``, so Neyman's allocation with
cost (Cochran 1977, §5.5) draws it with expected frequency ``λ L/√s``, ``λ`` set so that the
expected records read fill the budget. A cluster whose frequency reaches 1 is a certainty
unit, reviewed whole; ``λ`` is then recomputed on the rest until no new one appears."""

from __future__ import annotations

import numpy as np

__all__ = ["certainty_units", "take_all_advice"]


def certainty_units(
    links: np.ndarray, sizes: np.ndarray, budget: float, counts: np.ndarray | None = None
) -> np.ndarray:
    """Which clusters (or, with ``counts``, which groups of ``counts`` interchangeable
    clusters of one size) are certainty units for a budget of ``budget`` records."""
    s = np.asarray(sizes, dtype=float)
    c = np.ones(len(s)) if counts is None else np.asarray(counts, dtype=float)
    take = np.zeros(len(s), dtype=bool)
    if np.sum(c * s) <= budget:
        return ~take
    measure = c * links * np.sqrt(s)  # expected records read per unit of λ
    while True:
        rest = ~take
        room = budget - float(np.sum((c * s)[take]))
        if room <= 0 or not rest.any():
            return take
        lam = room / measure[rest].sum()
        new = rest & (lam * links / np.sqrt(s) >= 1.0)
        if not new.any():
            return take
        take |= new


def take_all_advice(
    size_values: np.ndarray, size_counts: np.ndarray, records: float
) -> tuple[int, int, float]:
    """``(clusters, records, share of the predicted links)`` of the certainty units for a
    budget of ``records`` records, from a prediction's size histogram (distinct sizes and
    how many clusters have each; clusters of one size are interchangeable)."""
    s = np.asarray(size_values, dtype=float)
    c = np.asarray(size_counts, dtype=float)
    keep = s >= 2
    s, c = s[keep], c[keep]
    if not len(s):
        return 0, 0, 0.0
    links = s * (s - 1) / 2
    take = certainty_units(links, s, records, counts=c)
    share = float(np.sum((c * links)[take]) / np.sum(c * links))
    return int(c[take].sum()), int(np.sum((c * s)[take])), share
