"""B-cubed precision, recall and F (Bagga & Baldwin 1998), two averaging schemes.

For record i with predicted cluster ĉ(i) and reference cluster c(i), the record's
precision is |ĉ(i) ∩ c(i)| / |ĉ(i)| and its recall |ĉ(i) ∩ c(i)| / |c(i)|.

``average="record"`` (default, the textbook B-cubed): the mean over the N records,

    P = (1/N) Σ_i |ĉ(i) ∩ c(i)| / |ĉ(i)| = (1/N) Σ_cells n²_{ĉc} / |ĉ|
    R = (1/N) Σ_i |ĉ(i) ∩ c(i)| / |c(i)| = (1/N) Σ_cells n²_{ĉc} / |c|

``average="reference_cluster"`` (the variant of the er-evaluation package): the
record values are first averaged within each reference cluster, then the |C|
reference clusters are averaged with equal weight,

    P = (1/|C|) Σ_c (1/|c|) Σ_{i ∈ c} |ĉ(i) ∩ c| / |ĉ(i)| = (1/|C|) Σ_cells n²_{ĉc} / (|c|·|ĉ|)
    R = (1/|C|) Σ_c (1/|c|) Σ_{i ∈ c} |ĉ(i) ∩ c| / |c|    = (1/|C|) Σ_cells n²_{ĉc} / |c|²

so small and large true clusters count alike (this is what a benchmark of
sampled true clusters estimates under uniform cluster sampling). The F-score
combines P and R as F_β = (1 + β²)PR / (β²P + R) for either scheme.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from er_evaluation._contingency_table import Contingency
from er_evaluation._parameters import check_beta
from er_evaluation.metrics._validation import OnMissing, cached, on_records

__all__ = ["bcubed_precision", "bcubed_recall", "bcubed_f1", "bcubed_fbeta"]

Average = Literal["record", "reference_cluster"]


def bcubed_precision(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    on_missing: OnMissing = "error",
    average: Average = "record",
) -> float:
    """B-cubed precision (module docstring for both ``average`` schemes).

    NaN with :class:`UndefinedMetricWarning` on empty input.
    """
    average = _check_average(average)
    return on_records(
        prediction,
        reference,
        on_missing,
        "B-cubed precision",
        lambda ct: _bcubed(ct, average, "precision"),
    )


def bcubed_recall(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    on_missing: OnMissing = "error",
    average: Average = "record",
) -> float:
    """B-cubed recall (module docstring for both ``average`` schemes).

    NaN with :class:`UndefinedMetricWarning` on empty input.
    """
    average = _check_average(average)
    return on_records(
        prediction,
        reference,
        on_missing,
        "B-cubed recall",
        lambda ct: _bcubed(ct, average, "recall"),
    )


def bcubed_f1(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    on_missing: OnMissing = "error",
    average: Average = "record",
) -> float:
    """B-cubed F1 = 2PR / (P + R) (:func:`bcubed_fbeta` with β = 1)."""
    return bcubed_fbeta(prediction, reference, beta=1.0, on_missing=on_missing, average=average)


def bcubed_fbeta(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    beta: float,
    on_missing: OnMissing = "error",
    average: Average = "record",
) -> float:
    """B-cubed F_β = (1 + β²)PR / (β²P + R) of the B-cubed precision P and recall R.

    NaN with :class:`UndefinedMetricWarning` on empty input.
    """
    b2 = check_beta(beta) ** 2
    average = _check_average(average)

    def f(ct: Contingency) -> float:
        p = _bcubed(ct, average, "precision")
        r = _bcubed(ct, average, "recall")
        # Both are > 0 whenever there is a record (each record's own cell has n >= 1).
        return (1 + b2) * p * r / (b2 * p + r)

    return on_records(prediction, reference, on_missing, "B-cubed F-score", f)


def _bcubed(ct: Contingency, average: str, which: str) -> float:
    """B-cubed precision or recall of a non-empty contingency, computed once per table."""
    return cached(ct, f"bcubed_{which}_{average}", lambda ct: _bcubed_sum(ct, average, which))


def _bcubed_sum(ct: Contingency, average: str, which: str) -> float:
    n2 = ct.count.astype(np.float64) ** 2
    other = ct.cell_pred_size if which == "precision" else ct.cell_ref_size
    if average == "record":
        return float(np.sum(n2 / other) / ct.n_shared)
    return float(np.sum(n2 / (ct.cell_ref_size * other.astype(np.float64))) / ct.n_ref_clusters)


def _check_average(average: str) -> str:
    if average not in ("record", "reference_cluster"):
        raise ValueError(f"average must be 'record' or 'reference_cluster', got {average!r}")
    return average
