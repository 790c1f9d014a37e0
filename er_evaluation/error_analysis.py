"""Per-cluster error analysis: where a prediction splits and merges the true clusters.

Both tables are grouped reductions over the contingency cells (``bincount`` and
``ufunc.at`` on cluster codes), never a per-cluster ``groupby.apply``.

The *main* predicted cluster of a reference cluster c is the predicted cluster
holding most of c's records; ties go to the smaller predicted cluster (fewer
extra records), then to the lowest cluster code of the contingency kernel (a
deterministic order for given input). Every count column is the same whichever
tied cluster is named. The main reference cluster of a predicted cluster is
defined the same way with the roles swapped.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from er_evaluation import _contingency
from er_evaluation._contingency_table import Contingency
from er_evaluation.metrics._validation import OnMissing, check_contingency

__all__ = ["reference_cluster_errors", "predicted_cluster_errors"]


def reference_cluster_errors(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    on_missing: OnMissing = "error",
    *,
    scope: Literal["shared", "prediction"] = "shared",
) -> pd.DataFrame:
    """One row per reference cluster c (index: reference cluster ids) with columns

    - ``size``: |c|;
    - ``main_prediction``: id of the predicted cluster ĉ* holding most of c;
    - ``overlap``: |c ∩ ĉ*|;
    - ``extra``: |ĉ*| − |c ∩ ĉ*|, records in ĉ* that are not in c;
    - ``missing``: |c| − |c ∩ ĉ*|, records of c outside ĉ*;
    - ``n_predicted_clusters``: number of predicted clusters c is split across.

    c is reproduced exactly iff extra = missing = 0. ``scope="shared"`` compares
    two clusterings of one population. ``scope="prediction"`` is for a reference
    that is a sample of true clusters inside the prediction's population (a
    benchmark): |ĉ*|, hence ``extra``, then counts every record of the full
    predicted cluster. ``prediction`` may be a precomputed Contingency of either scope.
    """
    ct = _table_of(prediction, reference, on_missing, scope)
    main, overlap, main_size = _main_partner(
        ct.ref, ct.pred, ct.count, ct.cell_pred_size, ct.n_ref_clusters
    )
    return pd.DataFrame(
        {
            "size": ct.ref_size,
            "main_prediction": ct.pred_labels.take(main),
            "overlap": overlap,
            "extra": main_size - overlap,
            "missing": ct.ref_size - overlap,
            "n_predicted_clusters": np.bincount(ct.ref, minlength=ct.n_ref_clusters),
        },
        index=ct.ref_labels.rename("reference_cluster"),
    )


def predicted_cluster_errors(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    on_missing: OnMissing = "error",
) -> pd.DataFrame:
    """One row per predicted cluster ĉ (index: predicted cluster ids) with columns

    - ``size``: |ĉ|;
    - ``n_reference_clusters``: number of true clusters ĉ merges (1 = pure);
    - ``main_reference``: id of the reference cluster c* holding most of ĉ;
    - ``overlap``: |ĉ ∩ c*|;
    - ``largest_share``: |ĉ ∩ c*| / |ĉ|, the largest share of ĉ from one true cluster.

    Needs two clusterings of one population (``scope="shared"``): a sampled
    reference cannot say what unsampled predicted clusters merge.
    """
    ct = check_contingency(prediction, reference, on_missing=on_missing)
    main, overlap, _ = _main_partner(
        ct.pred, ct.ref, ct.count, ct.cell_ref_size, ct.n_pred_clusters
    )
    return pd.DataFrame(
        {
            "size": ct.pred_size,
            "n_reference_clusters": np.bincount(ct.pred, minlength=ct.n_pred_clusters),
            "main_reference": ct.ref_labels.take(main),
            "overlap": overlap,
            "largest_share": overlap / np.maximum(ct.pred_size, 1),
        },
        index=ct.pred_labels.rename("predicted_cluster"),
    )


def _table_of(prediction, reference, on_missing: str, scope: str) -> Contingency:
    if isinstance(prediction, Contingency):
        if reference is not None:
            raise TypeError(
                "pass either a precomputed Contingency alone or two clusterings "
                "(prediction, reference), not a Contingency and a reference"
            )
        return prediction
    if scope == "shared":
        return check_contingency(prediction, reference, on_missing=on_missing)
    if reference is None:
        raise TypeError("reference is missing: pass a reference clustering")
    return _contingency.contingency(prediction, reference, scope=scope, on_missing=on_missing)


def _main_partner(
    group: np.ndarray, partner: np.ndarray, count: np.ndarray, partner_size: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each group code: the partner code of its best cell, that cell's count and the
    partner's size. Best = largest count, then smallest partner, then smallest partner code."""
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    base = int(partner_size.max()) + 1
    # One int64 score orders cells by (count desc, partner size asc); < 2^63 while N < 3e9.
    score = count * base + (base - 1 - partner_size)
    best = np.full(n, -1, dtype=np.int64)
    np.maximum.at(best, group, score)
    is_best = score == best[group]
    main = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(main, group[is_best], partner[is_best])
    overlap = best // base
    return main, overlap, base - 1 - best % base
