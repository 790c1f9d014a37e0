"""Pairwise precision, recall and F-score estimators of Binette et al. 2023 (appendix A.2).

Each estimator is a smooth function ``phi`` of design-weighted means of per-unit columns
(see :mod:`er_evaluation.estimators.units` for the quantities, and
:func:`er_evaluation.estimators.ratio.smooth_estimate` for the bias correction and
variance). ``p`` below is the unit's per-draw selection probability up to a constant
(never an inverse weight), N the number of records of the population and |P| its number
of predicted links, both from the full prediction.

=================  ======================================  ==================================
estimator          precision                               recall
=================  ======================================  ==================================
``record``         mean of N f(c)/(|P| |c|)  (eq. 10-11)   ratio (2 f(c)/|c|) / (|c|-1) (eq. 12)
``cluster``        ratio (N f(c)/|P| / p) / (|c|/p) (13)   ratio (f(c)/p) / (C(|c|,2)/p) (14)
``cluster_block``  ratio (f/p) / ((f + out/2)/p) (15)      same as ``cluster``
``block``          ratio (|T_b∩P_b|/p) / ((|P_b| +          ratio (|T_b∩P_b|/p) / (|T_b|/p)
                   |P_b^-|/2)/p)  (15)                     (16)
``naive``          precision of the reviewed records alone (biased baseline, no variance)
=================  ======================================  ==================================

``record`` estimators assume records were sampled uniformly (``weights="cluster_size"``
samples: each sampled cluster's probability is proportional to its size; the unit's
multiplicity counts its sampled records), so p_i = 1/N exactly; the record recall is then
computed as the cluster recall with the sample's probabilities (the same ratio when no
reviewed record is missing; consistent with the cluster recall when some are, see
:mod:`er_evaluation.estimators.restrict`). The ``record`` precision is a plain mean of
per-record values N f(c)/(|P| |c|) that are not confined to [0, 1] and are right-skewed (a
few records of large true clusters carry large values), so the estimate itself can exceed 1;
its ``score`` interval is Hall's (1992) skewness-corrected interval
(:func:`~er_evaluation.estimators.intervals.hall_bounds`), which covered 92.0-96.2% on
PatentsView and 94.0-98.0% on RLdata10000 at nominal 95% (misattribution 5-20%, 100-400
records, 500 replicates per cell; ``benchmarks/README.md``, "Simulation study").

Precision and recall share their numerator column ``f/p``, so an F-score of one sample is
itself a ratio of means. ``cluster_block`` takes each sampled true cluster as its own block
(|T_b∩P_b| = |P_b| = f(c), |P_b^-| = out(c), |T_b| = C(|c|,2)): the paper's recommended
precision estimator. ``block`` requires a block sample (blocks containing whole true
clusters). F_beta combines the estimated precision and recall on the joint per-unit matrix
(delta method).
"""

from __future__ import annotations

import numpy as np

from er_evaluation.estimators.ratio import Column, FBeta, Ratio, Smooth
from er_evaluation.estimators.units import UnitTable

__all__ = ["PAIRWISE_METRICS", "pairwise_function", "default_estimator"]

PAIRWISE_METRICS = ("pairwise_precision", "pairwise_recall", "pairwise_f1", "pairwise_fbeta")
ESTIMATORS = ("record", "cluster", "cluster_block", "block", "naive")


def default_estimator(ut: UnitTable, metric: str) -> str:
    """The recommended estimator: ``cluster_block`` precision and ``record`` recall for
    samples of clusters reached by uniform record sampling (``cluster`` recall for other
    cluster probabilities; identical to ``record`` under size-proportional sampling);
    ``block`` for block samples."""
    if ut.unit_kind == "block":
        return "block"
    if metric == "pairwise_precision":
        return "cluster_block"
    if metric == "pairwise_recall":
        return "record" if ut.sample.weights == "cluster_size" else "cluster"
    p, r = default_estimator(ut, "pairwise_precision"), default_estimator(ut, "pairwise_recall")
    return f"{p}+{r}"


def _check(ut: UnitTable, estimator: str) -> None:
    if estimator not in ESTIMATORS:
        raise ValueError(f"unknown estimator {estimator!r}; choose one of {ESTIMATORS}")
    if ut.unit_kind == "block" and estimator not in ("block", "naive"):
        raise ValueError(
            f"estimator {estimator!r} needs sampled true clusters, but the sample's units are "
            f"blocks; use 'block' (or 'naive')"
        )
    if estimator == "record" and ut.sample.weights != "cluster_size":
        raise ValueError(
            "the record estimators need records sampled uniformly (cluster probabilities "
            f"proportional to size, weights='cluster_size'); this sample has weights="
            f"{ut.sample.weights!r}: use 'cluster' or 'cluster_block'"
        )


def pairwise_function(
    ut: UnitTable, metric: str, estimator: str, beta: float = 1.0
) -> tuple[Smooth, dict]:
    """``(phi, columns)`` of a pairwise metric under ``estimator`` for the sample ``ut``.

    ``columns`` maps column names to per-unit values (already divided by the selection
    probability where the estimator needs it). For the naive estimator the columns are the
    census columns of the reviewed records taken as a population (probability 1).
    """
    if metric in ("pairwise_f1", "pairwise_fbeta"):
        if "+" in estimator:
            p_est, r_est = estimator.split("+", 1)
        else:
            p_est = r_est = estimator
        phi_p, cols_p = pairwise_function(ut, "pairwise_precision", p_est)
        phi_r, cols_r = pairwise_function(ut, "pairwise_recall", r_est)
        return FBeta(phi_p, phi_r, beta), {**cols_p, **cols_r}
    if metric not in ("pairwise_precision", "pairwise_recall"):
        raise ValueError(f"unknown pairwise metric {metric!r}")
    _check(ut, estimator)
    if estimator == "naive":
        if ut.naive is None:
            raise ValueError("the naive estimator needs a unit table built by unit_table()")
        census = "cluster_block" if ut.unit_kind == "cluster" else "block"
        phi, cols = pairwise_function(ut.naive, metric, census)
        # own column names: a naive part never shares columns with a design-based one
        return phi.rename("naive:"), {"naive:" + k: v for k, v in cols.items()}
    q, w = ut.q, ut.weighted
    N, P = ut.n_records_population, ut.predicted_links
    if metric == "pairwise_precision":
        if estimator in ("cluster_block", "block"):
            cols = {"tp": w("tp"), "P_links": (q["plinks"] + q["pout"] / 2) / ut.probability}
            return Ratio(Column("tp"), Column("P_links")), cols
        if estimator == "cluster":
            cols = {"Pc_tp": w("tp") * (N / P if P else float("nan")), "Pc_size": w("size")}
            return Ratio(Column("Pc_tp"), Column("Pc_size")), cols
        # record: eq. 10, plain mean of Z = g(c)/(|c| p_i) with p_i = 1/N
        size = q["size"]
        # units emptied by on_missing="restrict" contribute 0, not 0/0
        safe = np.maximum(size, 1)
        z = N * q["tp"] / (P * safe) if P else q["tp"] * float("nan")
        z[size == 0] = 0.0
        return Column("Pr_z"), {"Pr_z": z}
    # record (eq. 12: B = 2f/|c|, A = |c| - 1 with p_i uniform, i.e. p_c ∝ |c|) and cluster
    # (eq. 14) recall are one ratio f/p over C(|c|,2)/p with the sample's probabilities: so
    # they agree whatever the convention for records missing from the prediction
    cols = {"tp": w("tp"), "pairs": w("pairs")}
    return Ratio(Column("tp"), Column("pairs")), cols
