"""Estimators beyond the paper (Binette et al. 2023 Remark 1): cluster precision/recall,
B-cubed precision/recall and homogeneity/completeness, each a smooth function of
population sums over true clusters Σ_c h(c, Ĉ), estimated from design-weighted means of
per-unit sums with delta-method variance.

With per-unit sums ``H_u = Σ_{c⊂u} h(c)`` and sizes ``|u|`` (records), a population sum is
``Σ_c h(c) = N E[H_u/p_u] / E[|u|/p_u]`` (Lemma 2's argument), with N from the full
prediction. With n = |c ∩ ĉ|:

- cluster recall = Σ_c 1[c ∈ Ĉ] / |C| = E[exact/p] / E[n_clusters/p];
- cluster precision = Σ_c 1[c ∈ Ĉ] / |Ĉ| = (N/|Ĉ|) E[exact/p]/E[|u|/p] (|Ĉ| from the prediction);
- B-cubed precision = (1/N) Σ n²/|ĉ| = E[b3p/p]/E[|u|/p]; B-cubed recall likewise with n²/|c|;
- homogeneity = 1 - H(C|Ĉ)/H(C), with H(C) = log N - S_1/N, H(C|Ĉ) = K/N - S_2/N,
  S_1 = Σ_c |c| log |c|, S_2 = Σ n log n, K = Σ_ĉ |ĉ| log |ĉ| (known);
- completeness = 1 - H(Ĉ|C)/H(Ĉ), with H(Ĉ|C) = (S_1 - S_2)/N, H(Ĉ) = log N - K/N (known);
- F-type combinations (cluster_f1, bcubed_f1, v_measure) by the harmonic mean.

The ``naive`` estimator computes the metric on the reviewed records alone.
"""

from __future__ import annotations

import math

from er_evaluation.estimators.ratio import Column, FBeta, Linear, Ratio, Smooth
from er_evaluation.estimators.units import UnitTable

__all__ = ["CLUSTER_METRICS", "cluster_metric_function"]

CLUSTER_METRICS = (
    "cluster_precision",
    "cluster_recall",
    "cluster_f1",
    "bcubed_precision",
    "bcubed_recall",
    "bcubed_f1",
    "homogeneity",
    "completeness",
    "v_measure",
)


def cluster_metric_function(ut: UnitTable, metric: str, estimator: str) -> tuple[Smooth, dict]:
    """``(phi, columns)`` for a cluster-level metric. ``estimator`` is ``"cluster"`` (or
    ``"block"`` for block samples: both use per-unit sums) or ``"naive"``."""
    if estimator == "naive":
        if ut.naive is None:
            raise ValueError("the naive estimator needs a unit table built by unit_table()")
        ut = ut.naive
    elif estimator not in ("cluster", "block"):
        raise ValueError(
            f"estimator {estimator!r} is not available for {metric}; use 'cluster', 'block' or 'naive'"
        )
    w = ut.weighted
    N, K = ut.n_records_population, ut.pred_size_entropy_sum
    size = Column("size")
    cols = {"size": w("size")}
    if metric in ("cluster_precision", "cluster_recall", "cluster_f1"):
        cols.update(exact=w("exact"), n_clusters=w("n_clusters"))
        cr = Ratio(Column("exact"), Column("n_clusters"))
        cp = Linear([N / ut.n_pred_clusters], [Ratio(Column("exact"), size)])
        phi = {"cluster_precision": cp, "cluster_recall": cr}.get(metric) or FBeta(cp, cr)
        return phi, cols
    if metric in ("bcubed_precision", "bcubed_recall", "bcubed_f1"):
        cols.update(b3p=w("b3p"), b3r=w("b3r"))
        bp, br = Ratio(Column("b3p"), size), Ratio(Column("b3r"), size)
        phi = {"bcubed_precision": bp, "bcubed_recall": br}.get(metric) or FBeta(bp, br)
        return phi, cols
    if metric in ("homogeneity", "completeness", "v_measure"):
        cols.update(nlogn=w("nlogn"), slogs=w("slogs"))
        logN = math.log(N) if N > 0 else math.nan
        cond = Linear([-1.0], [Ratio(Column("nlogn"), size)], K / N)  # H(C|Ĉ)
        h_true = Linear([-1.0], [Ratio(Column("slogs"), size)], logN)  # H(C)
        hom = Linear([-1.0], [Ratio(cond, h_true)], 1.0)
        h_pred = logN - K / N  # H(Ĉ), known from the prediction
        comp = Linear(
            [-1.0 / h_pred if h_pred > 0 else math.nan],
            [Ratio(Linear([1.0, -1.0], [Column("slogs"), Column("nlogn")]), size)],
            1.0,
        )
        phi = {"homogeneity": hom, "completeness": comp}.get(metric) or FBeta(hom, comp)
        return phi, cols
    raise ValueError(f"unknown cluster metric {metric!r}; choose one of {CLUSTER_METRICS}")
