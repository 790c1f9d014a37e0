"""Merge/split counts: the generalised merge distance with unit costs.

Menestrina, Whang & Garcia-Molina (2010), "Evaluating entity resolution
results", define the generalised merge distance (GMD) as the cost of turning
the prediction Ĉ into the reference C by cluster splits and merges, computed by
their slice algorithm: first split every predicted cluster along the reference
clusters it meets, then merge the pieces of each reference cluster. With unit
costs, in contingency terms:

    splits = Σ_ĉ (k_ĉ − 1) = (#cells) − |Ĉ|   (ĉ cut into the k_ĉ reference clusters it meets)
    merges = Σ_c (m_c − 1) = (#cells) − |C|   (the m_c pieces of c joined back)
    GMD    = splits + merges

This is the fewest operations among routes that do every split before every
merge. Routes that merge first can be shorter ({1,2},{3,4} -> {1,3},{2,4} takes
4 operations this way, 2 by merging everything and splitting once), but such
routes do not say which records were wrongly split or merged, so they are not
what an error count should report.

Normalised GMD divides by 2N − |Ĉ| − |C|, the cost of the worst route (split
the prediction into singletons, then merge them into the reference), which is
reached exactly when no two records share both a predicted and a reference
cluster; it lies in [0, 1].
"""

from __future__ import annotations

import pandas as pd

from er_evaluation._contingency_table import Contingency
from er_evaluation.errors import warn_undefined
from er_evaluation.metrics._validation import OnMissing, check_contingency, on_records

__all__ = ["merge_count", "split_count", "generalized_merge_distance"]


def split_count(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    on_missing: OnMissing = "error",
) -> int:
    """Number of splits needed: Σ over predicted clusters of (reference clusters met − 1)."""
    ct = check_contingency(prediction, reference, on_missing=on_missing)
    return len(ct.count) - ct.n_pred_clusters


def merge_count(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    on_missing: OnMissing = "error",
) -> int:
    """Number of merges needed: Σ over reference clusters of (predicted clusters met − 1)."""
    ct = check_contingency(prediction, reference, on_missing=on_missing)
    return len(ct.count) - ct.n_ref_clusters


def generalized_merge_distance(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    on_missing: OnMissing = "error",
    normalize: bool = False,
) -> float:
    """Unit-cost generalised merge distance: merges + splits from prediction to reference.

    With ``normalize=True``: GMD / (2N − |Ĉ| − |C|) (module docstring). Empty
    input, and the normalised distance between two all-singleton clusterings
    (0 / 0), give NaN with :class:`UndefinedMetricWarning`.
    """

    def gmd(ct: Contingency) -> float:
        distance = 2 * len(ct.count) - ct.n_pred_clusters - ct.n_ref_clusters
        if not normalize:
            return float(distance)
        worst = 2 * ct.n_shared - ct.n_pred_clusters - ct.n_ref_clusters
        if worst == 0:
            return warn_undefined(
                "normalized generalized merge distance", "both clusterings are all singletons (0/0)"
            )
        return distance / worst

    return on_records(prediction, reference, on_missing, "generalized merge distance", gmd)
