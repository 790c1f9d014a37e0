"""Stratum standard deviations S_h of the linearised metric, the input of the planned
variance: from a reviewed pilot sample or existing benchmark, or from an assumed
misattribution rate, for each of the two planned designs (predicted clusters, records).
The formulas are in :mod:`er_evaluation.planning`'s docstring and in each function's.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pandas as pd

from er_evaluation._parameters import z_value
from er_evaluation.clustering import validate_membership
from er_evaluation.errors import PopulationWarning, examples
from er_evaluation.estimators._metric_fit import metric_function
from er_evaluation.estimators.api import estimate
from er_evaluation.estimators.units import unit_table
from er_evaluation.planning._models import (
    binomial_pair_variance,
    check_rate,
    cluster_rate_model,
    cluster_sizes,
    rate_for_precision,
    rate_for_recall,
    true_clustering,
    true_size_counts,
)
from er_evaluation.sampling import Sample, benchmark_sample
from er_evaluation.simulation import misattribute

__all__ = [
    "MODEL_CONFIDENCE",
    "PILOT_CONFIDENCE",
    "PLAN_METRICS",
    "RECORD_ESTIMATOR",
    "pilot_rate",
    "strata_of",
    "stratum_sd_from_cluster_rates",
    "stratum_sd_from_clusters",
    "stratum_sd_from_rates",
    "stratum_sd_from_sample",
]

P, R, F1 = "pairwise_precision", "pairwise_recall", "pairwise_f1"
PLAN_METRICS = (P, R, F1)

MODEL_CONFIDENCE = 0.8
"""One-sided confidence of the upper bound on S_h² at which a plan from the
misattribution model of predicted clusters sets its S_h
(:func:`stratum_sd_from_cluster_rates`, ``confidence``): the model gives the S_h
expected over the populations the rate could make, but the population at hand is one of
them, and in a stratum of few predicted clusters its S_h scatters widely around the
expectation (on a Zipf(2) truth at 5%, the 33 clusters of 500-1,999 records and the 152
of 100-499 had 0.85-1.21 and 0.92-1.26 times the model's S_h over five predictions)."""

# the estimator the record design uses for each metric (weight share)
RECORD_ESTIMATOR = {P: "cluster_block", R: "cluster", F1: "cluster_block+cluster"}


def strata_of(strata: pd.Series, prediction: pd.Series) -> pd.Series:
    """``strata`` in the order of ``prediction``'s records; a ValueError names records without one."""
    missing = prediction.index.difference(strata.index)
    if len(missing):
        raise ValueError(
            f"{len(missing)} record(s) of the prediction have no stratum: {examples(missing)}"
        )
    return strata.reindex(prediction.index)


def _size_labels(sizes: pd.Series, labels: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct predicted sizes, their stratum) when the strata are a function of
    predicted cluster size; a ValueError otherwise."""
    frame = pd.DataFrame({"s": sizes.to_numpy(), "h": labels.to_numpy()})
    per_size = frame.groupby("s")["h"].agg(["nunique", "first"])
    if (per_size["nunique"] > 1).any():
        raise ValueError(
            "an assumed error rate plans strata of predicted cluster size only (clusters of "
            "one size are in several strata here): give a pilot instead"
        )
    return per_size.index.to_numpy(), per_size["first"].to_numpy()


def stratum_sd_from_cluster_rates(
    prediction: pd.Series,
    cluster_strata: pd.Series,
    error_rate: float,
    *,
    confidence: float | None = None,
) -> pd.Series:
    """S_h of the predicted-cluster design's precision from an assumed misattribution
    rate ε, on the true cluster sizes t deconvolved from the predicted ones
    (:func:`true_size_counts`).

    Forward model (the misattribution of Binette et al. 2023, §2.4): a true cluster of t
    records keeps K ~ Binomial(t, 1 - ε) of them together and receives M ~ Poisson(ε t)
    foreign records (each from a different cluster), so it is predicted as a cluster of
    s = K + M records with A = C(s, 2) predicted and B = C(K, 2) true links. Over the
    exact distribution of (K, M) for every cluster, P = Σ E[B] / Σ E[A], Ā = Σ E[A] / N,
    u = (B - P A)/Ā, and S_h² is the variance of u over the predicted clusters whose size
    s falls in stratum h (so a singleton turned into a false pair counts in the pairs'
    stratum). ``cluster_strata``: stratum of every predicted cluster (index: cluster id), a
    function of its size (e.g. size bands); otherwise a ValueError asks for a pilot.

    ``confidence`` (one-sided, in (0.5, 1); None: the model's S_h itself): S_h² is raised
    to S_h² (1 + z r_h), z the standard normal quantile at ``confidence`` and r_h the
    relative standard deviation of S_h² over populations of the stratum's F_h predicted
    clusters drawn from the model (:func:`_variance_spread`), an upper bound on the S_h of
    the population at hand; the planner uses :data:`MODEL_CONFIDENCE`."""
    prediction = validate_membership(prediction, name="prediction")
    eps = check_rate(error_rate)
    if confidence is not None and not 0.5 < confidence < 1:
        raise ValueError(f"confidence must be in (0.5, 1) (one-sided), got {confidence!r}")
    sizes = cluster_sizes(prediction)
    labels = cluster_strata.reindex(sizes.index)
    if labels.isna().any():
        raise ValueError(
            f"predicted clusters without a stratum: {examples(sizes.index[labels.isna().to_numpy()])}"
        )
    present, label_of = _size_labels(sizes, labels)
    t, count = true_size_counts(prediction, eps)
    s, K, w = cluster_rate_model(t, count, eps)
    keep = s > 0  # a cluster that lost every record and received none is gone
    s, K, w = s[keep], K[keep], w[keep]
    A, B = s * (s - 1) / 2, K * (K - 1) / 2
    if (w * A).sum() == 0:
        raise ValueError("the prediction has no predicted links: precision is undefined")
    precision = (w @ B) / (w @ A)
    u = _exact_zero(B - precision * A, B + precision * A) / ((w @ A) / len(prediction))
    # the stratum of a predicted cluster of size s: that of the largest present size <= s
    h = label_of[np.clip(np.searchsorted(present, s, side="right") - 1, 0, None)]
    frame = pd.DataFrame({"h": h, "w": w, "wu": w * u, "wuu": w * u**2})
    agg = frame.groupby("h")[["w", "wu", "wuu"]].sum()
    var = _variance(agg)
    if confidence is not None:
        F = labels.value_counts(sort=False).reindex(var.index).fillna(0.0)
        spread = _variance_spread(h, w, u, var, F)
        var = var * (1 + z_value(2 * confidence - 1) * spread)
    groups = pd.Index(pd.unique(labels.to_numpy()))
    return np.sqrt(var).reindex(groups).fillna(0.0).rename("sd")


def _variance_spread(
    h: np.ndarray, w: np.ndarray, u: np.ndarray, var: pd.Series, F: pd.Series
) -> pd.Series:
    """Per stratum, the relative standard deviation of S_h² over populations of F_h
    clusters drawn from the model: sqrt((μ₄ - σ⁴ (F-3)/(F-1)) / F) / σ², the sampling
    variance of the variance of F independent values (Cramér 1946, §27.4), with σ² and
    the central fourth moment μ₄ of u under the model (weights ``w``); 0 where σ² = 0
    or F < 2."""
    frame = pd.DataFrame({"h": h, "w": w, "wu": w * u})
    sums = frame.groupby("h")[["w", "wu"]].sum()
    mean = (sums["wu"] / sums["w"]).reindex(h).to_numpy()
    mu4 = pd.Series(w * (u - mean) ** 4).groupby(h).sum() / sums["w"]
    many = F.where(F >= 2)
    excess = np.clip(mu4 - var**2 * (many - 3) / (many - 1), 0.0, None)
    return (np.sqrt(excess / many) / var).where(var > 0).fillna(0.0)


def _exact_zero(u: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``u`` with 0 where it is 0 up to the rounding of the sums that make it (``scale``:
    the sum of their absolute values): a prediction without errors has u = 0 exactly, and
    a planner must not read a spread into rounding."""
    return np.where(np.abs(u) <= 1e-12 * scale, 0.0, u)


def _variance(agg: pd.DataFrame) -> pd.Series:
    """Per stratum, the weighted variance E[u²] - E[u]² of the sums ``w``, ``wu``, ``wuu``;
    0 where it is below the rounding error of that difference (1e-12 E[u²]): values that
    are all alike have no spread, and a planner must not read one into rounding."""
    second = agg["wuu"] / agg["w"]
    var = second - (agg["wu"] / agg["w"]) ** 2
    return var.where(var > 1e-12 * second, 0.0)


def _pilot_weights(sample: Sample) -> np.ndarray:
    """Per sampled unit, the inverse of its selection probability up to a constant (its
    draws' expansion weights F_g/n_g for a stratified pilot)."""
    st = sample.strata
    if st is not None:
        return np.bincount(
            st.row_unit,
            weights=st.row_count * (st.frame_size / st.n_draws)[st.row_stratum],
            minlength=len(sample.units),
        )
    return np.asarray(sample.multiplicity, dtype=float) / np.asarray(
        sample.probability, dtype=float
    )


def _weighted_sd(
    labels: np.ndarray,
    w: np.ndarray,
    u: np.ndarray,
    strata: pd.Series,
    units: np.ndarray,
) -> pd.Series:
    """Per stratum, the weighted standard deviation of u (weights: inverse selection
    probabilities) with the divisor of S_h² (F_h - 1 for a census: the weighted variance
    times k/(k - 1), k the reviewed values in h). A stratum needs values from at least two
    reviewed units (``units``: the unit of each value) for a spread, unless the pilot
    holds all of its frame units (``strata``: the stratum of every frame unit; a census of
    a one-unit stratum has S_h = 0): strata with fewer get the largest S_h seen; a pilot
    without two reviewed units in any stratum is an error (one value per stratum would
    claim no variance at all)."""
    frame = pd.DataFrame({"h": labels, "w": w, "wu": w * u, "wuu": w * u**2, "k": 1.0})
    agg = frame.groupby("h")[["w", "wu", "wuu", "k"]].sum()
    k = agg["k"]
    var = _variance(agg) * (k / (k - 1)).where(k > 1, 1.0)
    reviewed = pd.Series(units).groupby(labels).nunique().reindex(var.index)
    values = pd.Series(labels).value_counts().reindex(var.index)
    complete = values >= strata.value_counts().reindex(var.index)
    sd = np.sqrt(var.where((reviewed >= 2) | complete)).reindex(pd.Index(pd.unique(strata)))
    if sd.isna().all():
        counts = reviewed.reindex(sd.index).fillna(0).astype(int)
        raise ValueError(
            f"the pilot has fewer than 2 reviewed units in every stratum "
            f"({', '.join(f'{h!r}: {c}' for h, c in counts.items())}): a stratum's standard "
            "deviation needs at least 2; review a larger pilot, or plan from an assumed "
            "error rate (error_rate=...)"
        )
    return sd.fillna(sd.max()).rename("sd")


def stratum_sd_from_clusters(
    prediction: pd.Series, pilot: Sample, cluster_strata: pd.Series
) -> pd.Series:
    """S_h of the predicted-cluster design's precision from a reviewed pilot sample of
    predicted clusters (``pilot.sample_of == "predicted"``, e.g.
    ``sample_clusters(prediction, n).reviewed_predicted(truth)``): u(ĉ) = (B(ĉ) - P̂ A(ĉ))/Ā
    for every reviewed predicted cluster (A = C(|ĉ|,2), B = Σ_c C(|c ∩ ĉ|, 2), P̂ = Σ w B /
    Σ w A, Ā = |P|/N), weighted by w = inverse selection probability, grouped by
    ``cluster_strata`` (index: cluster id). Strata with fewer than two reviewed clusters
    get the largest S_h seen; a pilot with fewer than two in every stratum is an error."""
    prediction = validate_membership(prediction, name="prediction")
    if pilot.sample_of != "predicted":
        raise ValueError(
            "stratum_sd_from_clusters needs a reviewed sample of predicted clusters "
            "(Sample.reviewed_predicted); a sample of true clusters gives only an error rate"
        )
    sizes = cluster_sizes(prediction)
    units = pd.Index(pilot.units)
    unknown = units.difference(sizes.index)
    if len(unknown):
        raise ValueError(f"pilot clusters not in the prediction: {examples(unknown)}")
    ref = pilot.reference
    pred_of = prediction.reindex(ref.index)
    if pred_of.isna().any():
        raise ValueError(
            f"reviewed records not in the prediction: {examples(ref.index[pred_of.isna().to_numpy()])}"
        )
    # B(ĉ): true links inside each reviewed predicted cluster
    cell = pd.DataFrame({"c": pred_of.to_numpy(), "t": ref.to_numpy()}).value_counts(sort=False)
    k = cell.to_numpy(dtype=float)
    B = pd.Series(k * (k - 1) / 2).groupby(cell.index.get_level_values("c")).sum()
    reviewed = B.reindex(units).fillna(0.0)
    counted = pd.Series(k).groupby(cell.index.get_level_values("c")).sum().reindex(units)
    short = units[(counted.fillna(0).to_numpy() < sizes.reindex(units).to_numpy())]
    if len(short):
        raise ValueError(
            f"{len(short)} pilot cluster(s) are not reviewed entirely: {examples(short)}"
        )
    s = sizes.reindex(units).to_numpy(dtype=float)
    A = s * (s - 1) / 2
    allS = sizes.to_numpy(dtype=float)
    links = float((allS * (allS - 1) / 2).sum())
    if links == 0:
        raise ValueError("the prediction has no predicted links: precision is undefined")
    a_bar = links / len(prediction)
    w = _pilot_weights(pilot)
    if (w * A).sum() == 0:
        raise ValueError("the pilot has no predicted link: it cannot estimate precision")
    precision = float(w @ reviewed.to_numpy() / (w @ A))
    B = reviewed.to_numpy()
    u = _exact_zero(B - precision * A, B + precision * A) / a_bar
    labels = cluster_strata.reindex(units).to_numpy()
    return _weighted_sd(labels, w, u, cluster_strata, np.asarray(units))


def _record_u(prediction: pd.Series, sample: Sample, metric: str) -> pd.DataFrame:
    """Per reviewed record of the prediction: the weight-share linearised value u of
    ``metric`` (record design estimator) and the weight of its cluster."""
    if sample.sample_of == "predicted":
        raise ValueError(
            "the record design needs a pilot of reviewed true clusters, not of predicted clusters"
        )
    ut = unit_table(prediction, sample)
    size = ut.q["size"]
    if (size < 1).any():
        raise ValueError("the pilot has sampled clusters without records in the prediction")
    share = replace(ut, probability=size.astype(float))  # per-record weight-share columns
    _, phi, cols = metric_function(share, metric, RECORD_ESTIMATOR[metric], 1.0)
    names = phi.columns()
    X = np.column_stack([np.asarray(cols[c], dtype=float) for c in names])
    w = _pilot_weights(sample)
    if sample.strata is not None and sample.strata.frame == "records":
        w = w / size  # a draw's expansion weight is shared among its cluster's records
    index = {c: i for i, c in enumerate(names)}
    mean = (w * size) @ X / (w @ size)
    g = np.asarray(phi.evaluate(mean, index)[1], dtype=float)
    u = _exact_zero(X @ g, np.abs(X) @ np.abs(g))
    ref = sample.reference
    ref = ref[ref.index.isin(prediction.index)]
    unit = sample.units.get_indexer(ref.to_numpy())
    return pd.DataFrame({"w": w[unit], "u": u[unit], "unit": unit}, index=ref.index)


def stratum_sd_from_sample(
    prediction: pd.Series,
    sample: Sample,
    strata: pd.Series,
    metric: str = P,
    *,
    baseline: pd.Series | None = None,
) -> pd.Series:
    """S_h of ``metric`` under the record design for the planned ``strata`` (labels of
    the prediction's records), from a reviewed pilot ``sample`` or existing benchmark of
    true clusters.

    Every reviewed cluster c gives the per-record linearised value u(c) = grad' x(c) of
    the weight-share columns (x(c) = the cluster's totals / |c|, grad at the pilot's
    estimate); each of its records in stratum h counts with weight w_c = (draws of c)/p_c
    (p_c: its selection probability; for a stratified pilot, the draws' expansion weights
    F_g/n_g per record of c). S_h² is the weighted variance of u over the records in h.
    With ``baseline`` (another prediction of the same records) u is the difference
    u(prediction) - u(baseline): the paired difference's linearised value. Strata without
    records of two reviewed clusters get the largest S_h seen (a conservative guess); a
    pilot without two reviewed clusters in any stratum is an error."""
    if metric not in PLAN_METRICS:
        raise ValueError(f"unknown metric {metric!r}; the planner supports {PLAN_METRICS}")
    strata = strata_of(strata, prediction)
    frame = _record_u(prediction, sample, metric)
    if baseline is not None:
        baseline = validate_membership(baseline, name="baseline")
        if not baseline.index.sort_values().equals(prediction.index.sort_values()):
            raise ValueError("a paired difference needs two predictions of the same records")
        other = _record_u(baseline, sample, metric).reindex(frame.index)
        frame = frame.assign(u=frame["u"] - other["u"])
    labels = strata.reindex(frame.index).to_numpy()
    return _weighted_sd(
        labels,
        frame["w"].to_numpy(),
        frame["u"].to_numpy(),
        strata,
        frame["unit"].to_numpy(),
    )


def stratum_sd_from_rates(
    prediction: pd.Series,
    strata: pd.Series,
    error_rate: float | pd.Series,
    metric: str = P,
    *,
    seed: int = 0,
) -> pd.Series:
    """S_h of the record design from an assumed misattribution rate ε (one value, or
    one per stratum). Recall: S_h² = mean_h[Var K(K-1)/(4 s²)] / Ā², K ~ Binomial(s, 1 - ε),
    Ā = mean (s - 1)/2, the means over records. Precision and F1 (one rate): the census S_h
    of a simulated population misattributed at rate ε
    (:func:`~er_evaluation.simulation.misattribute`, ``seed``).

    The true sizes s: on the uniform design (one stratum) those deconvolved from the
    predicted sizes (:func:`~er_evaluation.planning.true_size_counts`; the simulated
    population is :func:`~er_evaluation.planning._models.true_clustering`); with several
    strata, whose labels belong to the prediction's records, the predicted sizes stand for
    the true ones (misattribution turns true singletons into predicted pairs, so this
    under-states S_h: on RLdata10000 at 10% the achieved half-width was 1.29 x the plan's)."""
    prediction = validate_membership(prediction, name="prediction")
    strata = strata_of(strata, prediction)
    codes, _ = pd.factorize(prediction.to_numpy())
    sizes = np.bincount(codes)
    s = sizes[codes].astype(float)
    links = float((sizes * (sizes - 1) / 2).sum())
    if links == 0:
        raise ValueError("the prediction has no predicted links: precision is undefined")
    labels = strata.to_numpy()
    groups = pd.Index(pd.unique(labels))
    if isinstance(error_rate, pd.Series):
        eps = error_rate.reindex(groups)
        if eps.isna().any():
            raise ValueError(
                f"error_rate is missing for strata {examples(groups[eps.isna().to_numpy()])}"
            )
    else:
        eps = pd.Series(float(error_rate), index=groups)
    if ((eps < 0) | (eps > 1)).any():
        raise ValueError("error rates must be in [0, 1]")
    one = len(groups) == 1
    if metric == R and one:
        t, count = true_size_counts(prediction, float(eps.iloc[0]))
        var = binomial_pair_variance(t, 1 - float(eps.iloc[0]))
        records = count * t
        per = float(records @ (var / (4 * t**2)) / records.sum())
        a_bar = float(records @ ((t - 1) / 2) / records.sum())
        return pd.Series(np.sqrt(per) / a_bar, index=groups, name="sd")
    if metric == R:
        q = 1 - eps.reindex(labels).to_numpy()
        var = binomial_pair_variance(s, q)
        a_bar = float(np.mean((s - 1) / 2))
        per = pd.Series(var / (4 * s**2)).groupby(labels).mean().reindex(groups)
        return (np.sqrt(per) / a_bar).rename("sd")
    if metric not in PLAN_METRICS:
        raise ValueError(f"unknown metric {metric!r}; the planner supports {PLAN_METRICS}")
    if eps.nunique() > 1:
        raise ValueError(f"{metric} is planned from one error rate, not one per stratum")
    # precision and F1 depend on where misattributed records land (their out-links), which
    # has no simple closed form: take the prediction as the truth, misattribute it at the
    # assumed rate and use the census standard deviations of that simulated population
    truth = true_clustering(prediction, float(eps.iloc[0])) if one else prediction
    pseudo = misattribute(truth, float(eps.iloc[0]), seed=seed)
    census = benchmark_sample(truth, weights="cluster_size", multiplicity=truth.value_counts())
    if one:
        strata = pd.Series(groups[0], index=truth.index)
    with warnings.catch_warnings():
        # the census covers the whole (simulated) population by construction
        warnings.simplefilter("ignore", PopulationWarning)
        return stratum_sd_from_sample(pseudo, census, strata, metric)


PILOT_CONFIDENCE = 0.8
"""One-sided confidence of the pessimistic bound on the pilot's estimate at which a pilot
plan sets its error rate (:func:`pilot_rate`): a pilot's estimate of S_h is too small more
often than not when few of its units carry errors, so the plan rests on an upper
confidence limit instead (Cochran 1977, ch. 4, on sample sizes from an estimated S²)."""


def pilot_rate(prediction: pd.Series, pilot: Sample, metric: str = P) -> tuple[str, float]:
    """(words, ε): the misattribution rate at which the forward model gives the lower end
    of the pilot's one-sided :data:`PILOT_CONFIDENCE` interval of precision
    (:func:`rate_for_precision`) or recall (:func:`rate_for_recall`); for F1 the larger
    of the two. ``words`` says which estimates and bounds gave it."""
    parts = (P, R) if metric == F1 else (metric,)
    words, rates = [], []
    for m in parts:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the pilot's own reliability is not the plan's
            est = estimate(prediction, pilot, m, level=2 * PILOT_CONFIDENCE - 1, validate=False)
        bound = est.ci_low if np.isfinite(est.ci_low) else est.value
        bound = float(np.clip(bound, 1e-9, 1.0))
        rate = rate_for_precision(prediction, bound) if m == P else rate_for_recall(bound)
        words.append(
            f"{m.replace('pairwise_', '')} {est.value:.4f}, one-sided "
            f"{PILOT_CONFIDENCE:.0%} lower bound {bound:.4f}: rate {rate:.4f}"
        )
        rates.append(rate)
    return "; ".join(words), max(rates)
