"""Agreement between two reviewers who decided the same sampled records independently."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from er_evaluation.review._model import ReviewEvent, encode
from er_evaluation.review._replay import own_decisions


@dataclass(frozen=True)
class Agreement:
    """Agreement of double review.

    ``n_units``: sampled records decided (not skipped) by two reviewers.
    ``identical_share``: share of those with identical true clusters.
    ``n_links``: link decisions compared, one per (sampled record, candidate) where a
    candidate is any record either reviewer saw or added; the decision is "linked" when
    the candidate is in that reviewer's true cluster. ``link_agreement``: share of equal
    link decisions (observed agreement p_o). ``kappa``: Cohen's kappa on the link
    decisions, (p_o - p_e) / (1 - p_e) with p_e = p1 q1 + (1 - p1)(1 - q1) from each
    rater's share of "linked" (Cohen 1960); NaN when p_e = 1 (both raters give one
    answer only). Raters are roles: the first and the second reviewer to decide each
    record. ``per_record``: one row per compared record.
    """

    n_units: int
    identical_share: float
    n_links: int
    link_agreement: float
    kappa: float
    per_record: pd.DataFrame


def cohen_kappa(first: np.ndarray, second: np.ndarray) -> float:
    """Cohen's kappa of two raters' binary decisions (arrays of bools)."""
    first = np.asarray(first, dtype=bool)
    second = np.asarray(second, dtype=bool)
    if len(first) == 0:
        return math.nan
    observed = float(np.mean(first == second))
    p1, q1 = float(np.mean(first)), float(np.mean(second))
    expected = p1 * q1 + (1 - p1) * (1 - q1)
    if expected == 1.0:
        return math.nan
    return (observed - expected) / (1 - expected)


def agreement(events: list[ReviewEvent]) -> Agreement:
    """Agreement statistics of the records decided by two reviewers (see :class:`Agreement`).

    ``events`` is the store's history (:meth:`ReviewStore.event_list`); each reviewer's
    own latest effective decision is used, adjudications are ignored (they are not an
    independent opinion). Records decided by more than two reviewers use the first two.
    """
    groups: dict[str, list[ReviewEvent]] = {}
    for event in own_decisions(events):
        if event.status != "skipped":
            groups.setdefault(encode(event.sampled_record), []).append(event)
    rows = []
    firsts: list[np.ndarray] = []
    seconds: list[np.ndarray] = []
    for group in groups.values():
        if len(group) < 2:
            continue
        a, b = group[0], group[1]
        ta, tb = set(a.true_cluster), set(b.true_cluster)
        candidates = [
            r
            for r in dict.fromkeys((*a.shown_records, *b.shown_records, *a.added, *b.added))
            if r != a.sampled_record
        ]
        la = np.array([r in ta for r in candidates], dtype=bool)
        lb = np.array([r in tb for r in candidates], dtype=bool)
        firsts.append(la)
        seconds.append(lb)
        rows.append(
            {
                "sampled_record": a.sampled_record,
                "first_reviewer": a.reviewer,
                "second_reviewer": b.reviewer,
                "identical": ta == tb,
                "n_links": len(candidates),
                "links_agreeing": int(np.sum(la == lb)),
                "first_event_id": a.event_id,
                "second_event_id": b.event_id,
            }
        )
    per_record = pd.DataFrame(
        rows,
        columns=[
            "sampled_record",
            "first_reviewer",
            "second_reviewer",
            "identical",
            "n_links",
            "links_agreeing",
            "first_event_id",
            "second_event_id",
        ],
    )
    first = np.concatenate(firsts) if firsts else np.zeros(0, dtype=bool)
    second = np.concatenate(seconds) if seconds else np.zeros(0, dtype=bool)
    n = len(per_record)
    return Agreement(
        n_units=n,
        identical_share=float(per_record["identical"].mean()) if n else math.nan,
        n_links=len(first),
        link_agreement=float(np.mean(first == second)) if len(first) else math.nan,
        kappa=cohen_kappa(first, second),
        per_record=per_record,
    )
