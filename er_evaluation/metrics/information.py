"""Entropy-based metrics: homogeneity, completeness, V-measure (Rosenberg & Hirschberg 2007).

Same definitions as scikit-learn's ``homogeneity_completeness_v_measure`` with
the reference as ``labels_true``. With H(C), H(Ĉ) the entropies of the
reference and predicted cluster sizes and I(C; Ĉ) the mutual information of the
contingency table (natural logarithms; the ratios do not depend on the base):

    homogeneity  h = I / H(C)   (each predicted cluster holds one true cluster)
    completeness c = I / H(Ĉ)   (each true cluster lies in one predicted cluster)
    V_β = (1 + β)·h·c / (β·h + c)

Conventions follow scikit-learn: h = 1 when H(C) = 0 (a single reference
cluster), c = 1 when H(Ĉ) = 0 (a single predicted cluster), V = 0 when
h + c = 0. Empty input gives NaN with :class:`UndefinedMetricWarning`
(scikit-learn returns 1.0 there).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from er_evaluation._contingency_table import Contingency
from er_evaluation._parameters import check_beta
from er_evaluation.metrics._validation import OnMissing, cached, on_records

__all__ = ["homogeneity", "completeness", "v_measure", "mutual_information"]


def mutual_information(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    on_missing: OnMissing = "error",
) -> float:
    """I(C; Ĉ) = Σ_cells (n/N)·log(n·N / (|ĉ|·|c|)) in nats (clipped at 0 against rounding).

    NaN with :class:`UndefinedMetricWarning` on empty input.
    """
    return on_records(
        prediction,
        reference,
        on_missing,
        "mutual information",
        lambda ct: cached(ct, "mutual_information", _mutual_information),
    )


def _mutual_information(ct: Contingency) -> float:
    n = ct.count.astype(np.float64)
    total = float(ct.n_shared)
    log_ratio = np.log(n) - np.log(ct.cell_pred_size) - np.log(ct.cell_ref_size) + np.log(total)
    return max(float(np.dot(n, log_ratio) / total), 0.0)


def homogeneity(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    on_missing: OnMissing = "error",
) -> float:
    """Homogeneity h = I(C; Ĉ) / H(C); 1 when the reference is one cluster (module docstring)."""
    return on_records(prediction, reference, on_missing, "homogeneity", _homogeneity)


def completeness(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    on_missing: OnMissing = "error",
) -> float:
    """Completeness c = I(C; Ĉ) / H(Ĉ); 1 when the prediction is one cluster (module docstring)."""
    return on_records(prediction, reference, on_missing, "completeness", _completeness)


def v_measure(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    on_missing: OnMissing = "error",
    beta: float = 1.0,
) -> float:
    """V_β = (1 + β)·h·c / (β·h + c) (scikit-learn's weighting; 0 when h + c = 0).

    NaN with :class:`UndefinedMetricWarning` on empty input.
    """
    beta = check_beta(beta)

    def v(ct: Contingency) -> float:
        h, c = _homogeneity(ct), _completeness(ct)
        return 0.0 if h + c == 0 else (1 + beta) * h * c / (beta * h + c)

    return on_records(prediction, reference, on_missing, "V-measure", v)


def _homogeneity(ct: Contingency) -> float:
    return _ratio(mutual_information(ct), _reference_entropy(ct))


def _completeness(ct: Contingency) -> float:
    return _ratio(mutual_information(ct), _prediction_entropy(ct))


def _reference_entropy(ct: Contingency) -> float:
    return cached(ct, "reference_entropy", lambda ct: _entropy(ct.ref_size))


def _prediction_entropy(ct: Contingency) -> float:
    return cached(ct, "prediction_entropy", lambda ct: _entropy(ct.pred_size))


def _entropy(sizes: np.ndarray) -> float:
    total = float(sizes.sum())
    sizes = sizes[sizes > 0].astype(np.float64)
    return float(-np.dot(sizes, np.log(sizes) - np.log(total)) / total)


def _ratio(mi: float, entropy: float) -> float:
    return mi / entropy if entropy else 1.0
