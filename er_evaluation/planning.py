"""Sample-size planning: how many predicted clusters or records to review, per stratum,
for a target interval half-width (design §7; Cochran 1977, §5.5 and §5.9).

Two designs are planned, each with the estimator the package uses for it:

- ``design="predicted_clusters"`` (precision): whole predicted clusters drawn without
  replacement within strata of predicted cluster size, the largest reviewed entirely
  (take-all), estimated by duality (Binette et al. 2023, Remark 2) with the stratified
  ratio estimator of :mod:`er_evaluation.estimators.stratified`. The unit of the design is
  the predicted cluster itself, so a giant *true* cluster cannot hide in a small stratum.
- ``design="records"`` (recall, F1, paired differences; precision only with a warning):
  records drawn within strata (one stratum: the uniform record design), each revealing
  its true cluster, with Lavallée's weight share.

For both, the stratified estimator of a metric has, to first order, the variance

    V(n_1..n_H) = (1/N²) Σ_h F_h² (1 - n_h/F_h) S_h² / n_h

with F_h the frame units (predicted clusters or records) of stratum h, N the records of the
prediction and S_h² the variance (divisor F_h - 1) over the frame units of h of the
linearised value u = grad' x (x: the estimator's per-unit columns, grad: the metric's
gradient at the population means). A take-all stratum (n_h = F_h) contributes zero. For a
linear statistic this is the exact design variance (checked by enumeration in the tests).
The planner finds the smallest total n whose allocation (:func:`~er_evaluation.designs.allocate`:
proportional or Neyman, take-all strata, at least ``minimum`` draws per other stratum) gives
``z sqrt(V) <= half_width``, by bisection on n with the allocation and rounding the design uses.

S_h comes from one of:

- a **pilot sample or existing benchmark**: for predicted clusters, a reviewed sample of
  predicted clusters (:meth:`~er_evaluation.sampling.Sample.reviewed_predicted`) gives
  u(ĉ) = (B(ĉ) - P A(ĉ)) / Ā of every reviewed cluster (A = C(|ĉ|, 2) predicted links,
  B = Σ_c C(|c ∩ ĉ|, 2) true ones, Ā = |P|/N), weighted by the inverse of its selection
  probability (:func:`stratum_sd_from_clusters`); a reviewed sample of *true* clusters
  gives only its precision estimate P̂, turned into the misattribution rate at which the
  rate model below gives P̂ (:func:`rate_for_precision`). For records, the reviewed true clusters' weight-share values,
  each record of a reviewed cluster weighted by the inverse of its selection probability
  (:func:`stratum_sd_from_sample`);
- **assumed misattribution rate** ε (q = 1 - ε). Predicted clusters
  (:func:`stratum_sd_from_cluster_rates`): the forward model of misattribution (Binette et
  al. 2023, §2.4) — a true cluster of t records keeps K ~ Binomial(t, q) of them together
  and receives M ~ Poisson(ε t) foreign records — gives each predicted cluster of s = K + M
  records A = C(s, 2) and B = C(K, 2); the true sizes are deconvolved from the predicted
  ones (:func:`true_size_counts`); S_h is the spread of u over the exact (K, M)
  distribution of the clusters whose size s falls in h (a singleton that received a record
  is a false pair in the pairs' stratum). The record models below take the prediction's
  cluster sizes as the true ones. Records, recall (:func:`stratum_sd_from_rates`): the record's true cluster keeps K ~ Binomial(s,
  q) records together, with

      Var K(K-1) = s₍₄₎q⁴ + 4 s₍₃₎q³ + 2 s₍₂₎q² - (s₍₂₎q²)²     (s₍ⱼ₎: falling factorial),

  u = (K(K-1)/(2s) - q²(s-1)/2)/Ā with Ā = mean (s-1)/2, so S_h² = mean_h[Var K(K-1)/(4s²)]
  / Ā². Records, precision and F1: where misattributed records land (their out-links) has
  no simple closed form, so the prediction is taken as the truth, misattributed at rate ε,
  and S_h is the census standard deviation of that simulated population.

:class:`Plan` carries the answer with every assumption it used (design, variance source,
interval). Measured (``benchmarks/bench_planner.py``, README "Planner"): see the README
for achieved/target half-widths per truth; the record design's precision (and the F1
built on it) is under-estimated on heavy-tailed predictions, for which the planner warns
(:class:`PlanWarning`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from er_evaluation._parameters import check_level, z_value
from er_evaluation.clustering import check_structure, validate_membership
from er_evaluation.designs import allocate
from er_evaluation.errors import PopulationWarning, examples
from er_evaluation.sampling import Sample, benchmark_sample

__all__ = [
    "Plan",
    "PlanWarning",
    "PLAN_METRICS",
    "PLAN_DESIGNS",
    "HEAVY_TAIL_EFFECTIVE_CLUSTERS",
    "MIN_PLANNED_DRAWS",
    "default_design",
    "link_effective_clusters",
    "plan_sample_size",
    "planned_variance",
    "stratum_sd_from_clusters",
    "stratum_sd_from_cluster_rates",
    "model_precision",
    "true_size_counts",
    "rate_for_precision",
    "stratum_sd_from_rates",
    "stratum_sd_from_sample",
]

P, R, F1 = "pairwise_precision", "pairwise_recall", "pairwise_f1"
PLAN_METRICS = (P, R, F1)
PLAN_DESIGNS = ("predicted_clusters", "records")

MIN_PLANNED_DRAWS = 30
"""Fewest draws the planner plans outside take-all strata: the default interval needs
about 10 effective units carrying both parts of a ratio, which a handful of draws cannot
give even when the variance model says they would suffice."""

HEAVY_TAIL_EFFECTIVE_CLUSTERS = 100.0
"""Below this link-weighted effective number of predicted clusters
(:func:`link_effective_clusters`) a prediction counts as heavy-tailed: the record design's
precision variance is under-estimated there. Measured values: Zipf(2) sizes capped at
5,000 (200k records) 12.5, PatentsView 2022-06-30 48-49 (record-design plans 2.6x and 1.34x
the target), RLdata10000 about 1,000."""

# the estimator the record design uses for each metric (weight share)
_ESTIMATOR = {P: "cluster_block", R: "cluster", F1: "cluster_block+cluster"}


class PlanWarning(UserWarning):
    """A plan whose variance model is known to under-estimate the design's variance."""


def default_design(metric: str) -> str:
    """The design planned by default: predicted clusters for precision (well behaved on
    heavy tails), records for recall and F1 (a sample of predicted clusters cannot
    estimate them)."""
    return "predicted_clusters" if metric == P else "records"


@dataclass(frozen=True)
class Plan:
    """A planned stratified design and the assumptions behind it.

    ``design``: "predicted_clusters" (draws are predicted clusters) or "records";
    ``draws``: draws per stratum (Series); ``table``: per stratum ``frame_size`` (F_h, in
    frame units), ``sd`` (S_h), ``draws``, ``take_all``, ``expected_records`` (the records
    a reviewer reads: a take-all stratum's records, or the draws times the mean size of the
    stratum's predicted clusters, before duplicates); ``half_width``: the half-width the plan
    is expected to give; ``assumptions``: what the answer rests on, to print beside it;
    ``warnings``: reasons the plan may be optimistic (empty when none is known)."""

    metric: str
    design: str
    target_half_width: float
    level: float
    half_width: float
    draws: pd.Series
    table: pd.DataFrame
    assumptions: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    @property
    def n_draws(self) -> int:
        return int(self.draws.sum())

    @property
    def expected_records(self) -> float:
        return float(self.table["expected_records"].sum())

    @property
    def unit(self) -> str:
        return "predicted clusters" if self.design == "predicted_clusters" else "sampled records"

    def summary(self) -> str:
        """The answer and, beside it, the assumptions used (and any warning)."""
        where = "" if self.design == "predicted_clusters" else " in their true clusters"
        lines = [
            f"Review {self.n_draws:,} {self.unit} ({self.expected_records:,.0f} records to "
            f"read{where}, before duplicates) for a {self.level:.0%} interval of "
            f"{self.metric} of half-width {self.half_width:.4f} "
            f"(target {self.target_half_width:.4f}).",
            "",
            self.table.to_string(index=False, float_format=lambda v: f"{v:.4g}"),
            "",
            "Assumptions:",
        ]
        lines += [f"  {k}: {v}" for k, v in self.assumptions.items()]
        lines += [f"WARNING: {w}" for w in self.warnings]
        return "\n".join(lines)


def planned_variance(
    frame_sizes: pd.Series, sd: pd.Series, draws: pd.Series, population: int | None = None
) -> float:
    """First-order variance of the stratified estimator, (1/N²) Σ F_h² (1 - n_h/F_h)
    S_h²/n_h, for draws n_h (N = Σ F_h unless ``population`` is given: the records of the
    prediction when the frame units are predicted clusters). Take-all strata add 0."""
    F = frame_sizes.astype(float)
    s = sd.reindex(F.index).astype(float)
    n = draws.reindex(F.index).astype(float)
    N = float(F.sum()) if population is None else float(population)
    term = np.where(n >= F, 0.0, F**2 * (1 - n / F) * s**2 / n)
    return float(term.sum()) / N**2


def link_effective_clusters(prediction: pd.Series) -> float:
    """Kish's effective number of predicted clusters weighted by their predicted links,
    (Σ L)² / Σ L² with L = C(|ĉ|, 2): small when a few clusters carry most links (heavy
    tails; see :data:`HEAVY_TAIL_EFFECTIVE_CLUSTERS`)."""
    s = _cluster_sizes(prediction).to_numpy(dtype=float)
    links = s * (s - 1) / 2
    total = float(links.sum())
    return total**2 / float((links**2).sum()) if total > 0 else math.inf


def _cluster_sizes(prediction: pd.Series) -> pd.Series:
    # the planner runs in memory: an engine table gets the in-memory kernel's clear error
    check_structure(prediction, name="prediction")
    return prediction.value_counts(sort=False)


def _strata_of(strata: pd.Series, prediction: pd.Series) -> pd.Series:
    missing = prediction.index.difference(strata.index)
    if len(missing):
        raise ValueError(
            f"{len(missing)} record(s) of the prediction have no stratum: {examples(missing)}"
        )
    return strata.reindex(prediction.index)


def _cluster_labels(strata: pd.Series, prediction: pd.Series) -> pd.Series:
    """Stratum of every predicted cluster (index: cluster id) from record-level labels
    that must be constant within each predicted cluster (e.g. size bands)."""
    strata = _strata_of(strata, prediction)
    frame = pd.DataFrame({"c": prediction.to_numpy(), "h": strata.to_numpy()})
    n_labels = frame.groupby("c", sort=False)["h"].nunique()
    mixed = n_labels.index[n_labels.to_numpy() > 1]
    if len(mixed):
        raise ValueError(
            f"a design of predicted clusters needs one stratum per predicted cluster; "
            f"{len(mixed)} cluster(s) have records in several strata: {examples(mixed)}"
        )
    return frame.groupby("c", sort=False)["h"].first().rename("stratum")


def _binomial_pair_variance(s: np.ndarray, q: float) -> np.ndarray:
    """Var K(K-1) for K ~ Binomial(s, q), from the falling-factorial moments
    E[K₍ⱼ₎] = s₍ⱼ₎ qʲ and K₍₂₎² = K₍₄₎ + 4 K₍₃₎ + 2 K₍₂₎."""
    s = np.asarray(s, dtype=float)
    s2 = s * (s - 1)
    s3 = s2 * (s - 2)
    s4 = s3 * (s - 3)
    return np.clip(s4 * q**4 + 4 * s3 * q**3 + 2 * s2 * q**2 - (s2 * q**2) ** 2, 0.0, None)


def _check_rate(error_rate: float) -> float:
    eps = float(error_rate)
    if not 0 <= eps <= 1:
        raise ValueError(f"error_rate must be in [0, 1], got {error_rate!r}")
    return eps


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


def _cluster_rate_model(t: np.ndarray, count: np.ndarray, eps: float, tail: float = 8.0):
    """The forward misattribution model on clusters of sizes ``t`` (``count`` of each):
    K ~ Binomial(t, 1 - ε) records kept, M ~ Poisson(ε t) foreign records received (a
    misattributed record joins the cluster of a uniformly drawn record). Returns the grid
    (s = K + M, K, probability x count) over K and M within ``tail`` standard deviations
    (the rest has probability below 1e-15)."""
    from scipy.stats import binom, poisson

    q = 1 - eps
    parts = []
    for size, c in zip(t, count, strict=True):  # one grid per distinct size (few)
        size = int(size)
        sd_k, lam = math.sqrt(size * q * eps), eps * size
        k = np.arange(
            max(0, math.floor(size * q - tail * sd_k) - 1),
            min(size, math.ceil(size * q + tail * sd_k) + 1) + 1,
        )
        m = np.arange(0, math.ceil(lam + tail * math.sqrt(lam)) + 2)
        w = c * np.outer(binom.pmf(k, size, q), poisson.pmf(m, lam))
        K, M = np.meshgrid(k, m, indexing="ij")
        parts.append(np.column_stack([(K + M).ravel(), K.ravel(), w.ravel()]))
    grid = np.concatenate(parts)
    return grid[:, 0], grid[:, 1], grid[:, 2]


DECONVOLVE_MAX_SIZE = 100
"""Predicted sizes up to this are turned back into true sizes (:func:`true_size_counts`);
larger clusters change size by a few percent only and are kept as they are."""


def _size_kernel(t: np.ndarray, s: np.ndarray, eps: float) -> np.ndarray:
    """P(predicted size s | true size t) under the forward model, K ~ Binomial(t, q)
    kept plus M ~ Poisson(ε t) received (rows: t, columns: s)."""
    from scipy.stats import binom, poisson

    k = np.arange(int(t.max()) + 1)
    pk = binom.pmf(k[None, :], t[:, None], 1 - eps)  # t x k
    m = s[None, :] - k[:, None]  # k x s
    pm = np.where(m >= 0, poisson.pmf(np.clip(m, 0, None)[None], (eps * t)[:, None, None]), 0)
    return np.einsum("tk,tks->ts", pk, pm)


def true_size_counts(
    prediction: pd.Series, error_rate: float, *, iterations: int = 300
) -> tuple[np.ndarray, np.ndarray]:
    """(true sizes t, number of true clusters of each size) whose forward misattribution
    at rate ε gives the prediction's cluster sizes: Richardson-Lucy deconvolution
    (Richardson 1972; Lucy 1974) n_t <- n_t Σ_s P(s|t) c_s / (f_s e_t), f_s = Σ_t' n_t'
    P(s|t'), e_t = Σ_s P(s|t), over sizes 1..:data:`DECONVOLVE_MAX_SIZE` (c_s: predicted
    clusters of size s). Taking the predicted sizes as the true ones instead over-counts true
    links (a singleton that received a record is a false pair, not a true one): on
    RLdata10000 at 5% it gives the model precision 0.68 for an actual 0.61."""
    eps = _check_rate(error_rate)
    observed = _cluster_sizes(prediction).value_counts().sort_index()
    small = observed[observed.index <= DECONVOLVE_MAX_SIZE]
    large = observed[observed.index > DECONVOLVE_MAX_SIZE]
    if eps == 0 or small.empty:
        return observed.index.to_numpy(dtype=float), observed.to_numpy(dtype=float)
    grid = np.arange(1, int(small.index.max()) + 1, dtype=float)
    c = small.reindex(grid.astype(int), fill_value=0).to_numpy(dtype=float)
    kernel = _size_kernel(grid, grid, eps)  # observed sizes 1.. only (s = 0 is not seen)
    efficiency = kernel.sum(axis=1)
    n = c.copy()
    for _ in range(iterations):
        f = n @ kernel
        n = n * (kernel @ np.divide(c, f, out=np.zeros_like(c), where=f > 0)) / efficiency
    t = np.concatenate([grid, large.index.to_numpy(dtype=float)])
    count = np.concatenate([n, large.to_numpy(dtype=float)])
    keep = count > 1e-9
    return t[keep], count[keep]


def model_precision(prediction: pd.Series, error_rate: float) -> float:
    """Pairwise precision the forward misattribution model (:func:`stratum_sd_from_cluster_rates`)
    gives at rate ε on the true sizes of :func:`true_size_counts`:
    Σ n_t C(t,2) q² / Σ n_t E C(K+M, 2), with E C(K+M, 2) = (t² + t ε (1 + q) - t)/2."""
    eps = _check_rate(error_rate)
    t, n = true_size_counts(prediction, eps)
    q = 1 - eps
    links = float(n @ (t * (t - 1) / 2))
    if links == 0:
        raise ValueError("the prediction has no predicted links: precision is undefined")
    return links * q**2 / float(n @ ((t**2 + t * eps * (1 + q) - t) / 2))


def rate_for_precision(prediction: pd.Series, precision: float) -> float:
    """The misattribution rate at which :func:`model_precision` equals ``precision``
    (bisection; the model's precision decreases with the rate)."""
    if not 0 < precision <= 1:
        raise ValueError(f"precision must be in (0, 1], got {precision!r}")
    model_precision(prediction, 0.0)  # a prediction without links is an error here
    lo, hi = 0.0, 1.0
    for _ in range(30):
        mid = (lo + hi) / 2
        try:
            above = model_precision(prediction, mid) > precision
        except ValueError:  # so high a rate leaves no true link: too high
            above = False
        lo, hi = (mid, hi) if above else (lo, mid)
    return (lo + hi) / 2


def stratum_sd_from_cluster_rates(
    prediction: pd.Series, cluster_strata: pd.Series, error_rate: float
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
    function of its size (e.g. size bands); otherwise a ValueError asks for a pilot."""
    prediction = validate_membership(prediction, name="prediction")
    eps = _check_rate(error_rate)
    sizes = _cluster_sizes(prediction)
    labels = cluster_strata.reindex(sizes.index)
    if labels.isna().any():
        raise ValueError(
            f"predicted clusters without a stratum: {examples(sizes.index[labels.isna().to_numpy()])}"
        )
    present, label_of = _size_labels(sizes, labels)
    t, count = true_size_counts(prediction, eps)
    s, K, w = _cluster_rate_model(t, count, eps)
    keep = s > 0  # a cluster that lost every record and received none is gone
    s, K, w = s[keep], K[keep], w[keep]
    A, B = s * (s - 1) / 2, K * (K - 1) / 2
    if (w * A).sum() == 0:
        raise ValueError("the prediction has no predicted links: precision is undefined")
    precision = (w @ B) / (w @ A)
    u = (B - precision * A) / ((w @ A) / len(prediction))
    # the stratum of a predicted cluster of size s: that of the largest present size <= s
    h = label_of[np.clip(np.searchsorted(present, s, side="right") - 1, 0, None)]
    frame = pd.DataFrame({"h": h, "w": w, "wu": w * u, "wuu": w * u**2})
    agg = frame.groupby("h")[["w", "wu", "wuu"]].sum()
    var = (agg["wuu"] / agg["w"] - (agg["wu"] / agg["w"]) ** 2).clip(lower=0)
    groups = pd.Index(pd.unique(labels.to_numpy()))
    return np.sqrt(var).reindex(groups).fillna(0.0).rename("sd")


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


def _weighted_sd(labels: np.ndarray, w: np.ndarray, u: np.ndarray, strata: Iterable) -> pd.Series:
    """Per stratum, the weighted standard deviation of u (weights: inverse selection
    probabilities) with the divisor of S_h² (F_h - 1 for a census: the weighted variance
    times k/(k - 1), k the reviewed values in h); strata without a reviewed unit get the
    largest one seen."""
    frame = pd.DataFrame({"h": labels, "w": w, "wu": w * u, "wuu": w * u**2, "k": 1.0})
    agg = frame.groupby("h")[["w", "wu", "wuu", "k"]].sum()
    m = agg["wu"] / agg["w"]
    k = agg["k"]
    var = (agg["wuu"] / agg["w"] - m**2).clip(lower=0) * (k / (k - 1)).where(k > 1, 1.0)
    sd = np.sqrt(var).reindex(pd.Index(list(strata)))
    return sd.fillna(sd.max() if sd.notna().any() else 0.0).rename("sd")


def stratum_sd_from_clusters(
    prediction: pd.Series, pilot: Sample, cluster_strata: pd.Series
) -> pd.Series:
    """S_h of the predicted-cluster design's precision from a reviewed pilot sample of
    predicted clusters (``pilot.sample_of == "predicted"``, e.g.
    ``sample_clusters(prediction, n).reviewed_predicted(truth)``): u(ĉ) = (B(ĉ) - P̂ A(ĉ))/Ā
    for every reviewed predicted cluster (A = C(|ĉ|,2), B = Σ_c C(|c ∩ ĉ|, 2), P̂ = Σ w B /
    Σ w A, Ā = |P|/N), weighted by w = inverse selection probability, grouped by
    ``cluster_strata`` (index: cluster id). Strata without a reviewed cluster get the
    largest S_h seen."""
    prediction = validate_membership(prediction, name="prediction")
    if pilot.sample_of != "predicted":
        raise ValueError(
            "stratum_sd_from_clusters needs a reviewed sample of predicted clusters "
            "(Sample.reviewed_predicted); a sample of true clusters gives only an error rate"
        )
    sizes = _cluster_sizes(prediction)
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
    u = (reviewed.to_numpy() - precision * A) / a_bar
    labels = cluster_strata.reindex(units).to_numpy()
    return _weighted_sd(labels, w, u, pd.unique(cluster_strata.to_numpy()))


def _record_u(prediction: pd.Series, sample: Sample, metric: str) -> pd.DataFrame:
    """Per reviewed record of the prediction: the weight-share linearised value u of
    ``metric`` (record design estimator) and the weight of its cluster."""
    from er_evaluation.estimators._metric_fit import metric_function
    from er_evaluation.estimators.units import unit_table

    if sample.sample_of == "predicted":
        raise ValueError(
            "the record design needs a pilot of reviewed true clusters, not of predicted clusters"
        )
    ut = unit_table(prediction, sample)
    size = ut.q["size"]
    if (size < 1).any():
        raise ValueError("the pilot has sampled clusters without records in the prediction")
    share = replace(ut, probability=size.astype(float))  # per-record weight-share columns
    _, phi, cols = metric_function(share, metric, _ESTIMATOR[metric], 1.0)
    names = phi.columns()
    X = np.column_stack([np.asarray(cols[c], dtype=float) for c in names])
    w = _pilot_weights(sample)
    if sample.strata is not None and sample.strata.frame == "records":
        w = w / size  # a draw's expansion weight is shared among its cluster's records
    index = {c: i for i, c in enumerate(names)}
    mean = (w * size) @ X / (w @ size)
    g = np.asarray(phi.evaluate(mean, index)[1], dtype=float)
    u = X @ g
    ref = sample.reference
    ref = ref[ref.index.isin(prediction.index)]
    unit = sample.units.get_indexer(ref.to_numpy())
    return pd.DataFrame({"w": w[unit], "u": u[unit]}, index=ref.index)


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
    u(prediction) - u(baseline): the paired difference's linearised value. Strata without a
    reviewed record get the largest S_h seen (a conservative guess)."""
    if metric not in PLAN_METRICS:
        raise ValueError(f"unknown metric {metric!r}; the planner supports {PLAN_METRICS}")
    strata = _strata_of(strata, prediction)
    frame = _record_u(prediction, sample, metric)
    if baseline is not None:
        baseline = validate_membership(baseline, name="baseline")
        if not baseline.index.sort_values().equals(prediction.index.sort_values()):
            raise ValueError("a paired difference needs two predictions of the same records")
        other = _record_u(baseline, sample, metric).reindex(frame.index)
        frame = frame.assign(u=frame["u"] - other["u"])
    labels = strata.reindex(frame.index).to_numpy()
    return _weighted_sd(
        labels, frame["w"].to_numpy(), frame["u"].to_numpy(), pd.unique(strata.to_numpy())
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
    one per stratum) and the prediction's cluster sizes s (standing for the true sizes).
    Recall: S_h² = mean_h[Var K(K-1)/(4 s²)] / Ā², K ~ Binomial(s, 1 - ε), Ā = mean
    (s - 1)/2. Precision and F1 (one rate): the census S_h of a simulated population,
    the prediction taken as truth and misattributed at rate ε
    (:func:`~er_evaluation.simulation.misattribute`, ``seed``)."""
    prediction = validate_membership(prediction, name="prediction")
    strata = _strata_of(strata, prediction)
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
    if metric == R:
        q = 1 - eps.reindex(labels).to_numpy()
        var = _binomial_pair_variance(s, q)
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
    from er_evaluation.simulation import misattribute

    pseudo = misattribute(prediction, float(eps.iloc[0]), seed=seed)
    census = benchmark_sample(
        prediction, weights="cluster_size", multiplicity=prediction.value_counts()
    )
    with warnings.catch_warnings():
        # the census covers the whole (simulated) population by construction
        warnings.simplefilter("ignore", PopulationWarning)
        return stratum_sd_from_sample(pseudo, census, strata, metric)


def _pilot_rate(prediction: pd.Series, pilot: Sample) -> tuple[float, float]:
    """(P̂, ε̂): the pilot's precision estimate and the misattribution rate at which the
    forward model gives that precision (:func:`rate_for_precision`)."""
    from er_evaluation.estimators.api import estimate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the pilot's own reliability is not the plan's
        est = estimate(prediction, pilot, P, validate=False)
    p_hat = float(np.clip(est.value, 1e-9, 1.0))
    return p_hat, rate_for_precision(prediction, p_hat)


def plan_sample_size(
    prediction: pd.Series,
    strata: pd.Series | None,
    half_width: float,
    *,
    metric: str = P,
    design: str | None = None,
    level: float = 0.95,
    pilot: Sample | None = None,
    error_rate: float | pd.Series | None = None,
    baseline: pd.Series | None = None,
    method: str = "neyman",
    take_all: Iterable = (),
    minimum: int = 2,
    min_draws: int = MIN_PLANNED_DRAWS,
) -> Plan:
    """Smallest stratified design whose ``level`` interval of ``metric`` (or, with
    ``baseline``, of the paired difference metric(prediction) - metric(baseline)) has
    half-width at most ``half_width`` (see the module docstring).

    ``design``: "predicted_clusters" or "records" (None: :func:`default_design`; records
    for a paired difference). ``strata``: stratum of every record of ``prediction`` (e.g.
    :func:`~er_evaluation.designs.size_strata`; constant within predicted clusters for the
    predicted-cluster design; None: one stratum, the uniform design). S_h comes from
    ``pilot`` (a reviewed pilot sample or existing benchmark) or ``error_rate`` (assumed
    misattribution rate). ``method``: "neyman" or "proportional" allocation; ``take_all``:
    strata reviewed entirely; ``minimum``: draws per sampled stratum; ``min_draws``: draws
    outside take-all strata, at least (below about 30 the estimator's interval rests on too
    few effective units, see :mod:`er_evaluation.estimators.diagnostics`, whatever the
    variance model says). Returns a :class:`Plan`; a :class:`PlanWarning` (also in
    ``Plan.warnings``) when the record design is asked for precision or F1 on a
    heavy-tailed prediction, whose variance it under-estimates.
    """
    prediction = validate_membership(prediction, name="prediction")
    if metric not in PLAN_METRICS:
        raise ValueError(f"unknown metric {metric!r}; the planner supports {PLAN_METRICS}")
    if not 0 < half_width < 1:
        raise ValueError(f"half_width must be in (0, 1), got {half_width!r}")
    check_level(level)
    if (pilot is None) == (error_rate is None):
        raise ValueError("give exactly one of pilot= (a reviewed sample) or error_rate=")
    if design is None:
        design = "records" if baseline is not None else default_design(metric)
    if design not in PLAN_DESIGNS:
        raise ValueError(f"design must be one of {PLAN_DESIGNS}, got {design!r}")
    if strata is None:
        strata = pd.Series("all", index=prediction.index, name="stratum")
    take_all = list(take_all)
    notes: list[str] = []
    if design == "predicted_clusters":
        if metric != P:
            raise ValueError(
                f"a sample of predicted clusters estimates precision only (by duality); "
                f"{metric} needs the true clusters: use design='records'"
            )
        if baseline is not None:
            raise ValueError(
                "a paired difference is planned on the record design (design='records'): "
                "one sample of predicted clusters belongs to one prediction"
            )
        labels = _cluster_labels(strata, prediction)
        if pilot is not None and pilot.sample_of == "predicted":
            sd = stratum_sd_from_clusters(prediction, pilot, labels)
            source = (
                f"from a reviewed pilot of {pilot.n_units:,} predicted clusters "
                f"({pilot.n_draws:,} draws, design {pilot.design!r})"
            )
        else:
            if pilot is not None:
                p_hat, rate = _pilot_rate(prediction, pilot)
                source = (
                    f"misattribution model at rate {rate:.4f}, the rate at which it gives "
                    f"the precision P̂ = {p_hat:.4f} estimated from the reviewed "
                    f"pilot/benchmark of {pilot.n_units:,} true clusters (design {pilot.design!r})"
                )
            else:
                if isinstance(error_rate, pd.Series):
                    raise ValueError("the predicted-cluster design takes one error_rate value")
                rate = float(error_rate)
                source = f"misattribution model at an assumed misattribution rate {rate}"
            sd = stratum_sd_from_cluster_rates(prediction, labels, rate)
            source += (
                " (a cluster of t records, t = a predicted size, keeps K ~ Binomial(t, 1 - rate) "
                "and receives Poisson(rate t) foreign records)"
            )
        F = labels.value_counts(sort=False)
        unit_sizes = _cluster_sizes(prediction).groupby(labels).mean().reindex(F.index)
        estimator = "precision by duality: stratified ratio of true to predicted links"
    else:
        strata = _strata_of(strata, prediction)
        if baseline is not None and pilot is None:
            raise ValueError(
                "a paired difference is planned from a pilot: an assumed rate does not say "
                "where the two predictions differ"
            )
        if pilot is not None:
            sd = stratum_sd_from_sample(prediction, pilot, strata, metric, baseline=baseline)
            source = (
                f"from the reviewed pilot/benchmark ({pilot.n_units:,} true clusters, "
                f"{pilot.n_draws:,} draws, design {pilot.design!r})"
            )
        else:
            sd = stratum_sd_from_rates(prediction, strata, error_rate, metric)
            source = f"from an assumed misattribution rate {error_rate} " + (
                "(binomial model: a true cluster of s records keeps K ~ Binomial(s, 1 - rate) "
                "together; true size ~ predicted size)"
                if metric == R
                else "(census of a simulated population: the prediction taken as truth, "
                "misattributed at that rate)"
            )
        F = strata.value_counts(sort=False)
        codes, _ = pd.factorize(prediction.to_numpy())
        size = pd.Series(np.bincount(codes)[codes], index=prediction.index)
        unit_sizes = size.groupby(strata.to_numpy()).mean().reindex(F.index)
        estimator = f"weight-share {_ESTIMATOR[metric]} estimator"
        effective = link_effective_clusters(prediction)
        if metric in (P, F1) and effective < HEAVY_TAIL_EFFECTIVE_CLUSTERS:
            notes.append(
                f"heavy-tailed prediction (link-weighted effective number of predicted "
                f"clusters {effective:.1f} < {HEAVY_TAIL_EFFECTIVE_CLUSTERS:g}): the record "
                f"design's {metric} variance is under-estimated there (misattributed records "
                f"of giant true clusters sit in small predicted clusters), so this plan is "
                f"optimistic"
                + (
                    "; plan precision on the predicted-cluster design instead"
                    if metric == P
                    else "; plan precision (on the predicted-cluster design) and recall separately"
                )
            )
    sd = sd.reindex(F.index)
    z = z_value(level)
    target = (half_width / z) ** 2
    N = len(prediction)

    def allocation(n: int) -> pd.Series:
        return allocate(F, n, method=method, sd=sd, take_all=take_all, minimum=minimum)

    fixed = int(F[take_all].sum())
    rest = int(F.sum()) - fixed
    lo = fixed + max(
        sum(min(minimum, int(f)) for h, f in F.items() if h not in set(take_all)),
        min(min_draws, rest),
    )
    hi = int(F.sum())
    if planned_variance(F, sd, allocation(lo), N) <= target:
        n = lo
    else:
        while hi - lo > 1:  # smallest n with V(n) <= target; V(F) = 0
            mid = (lo + hi) // 2
            if planned_variance(F, sd, allocation(mid), N) <= target:
                hi = mid
            else:
                lo = mid
        n = hi
    draws = allocation(n)
    table = pd.DataFrame(
        {
            "stratum": F.index,
            "frame_size": F.to_numpy(),
            "sd": sd.to_numpy(),
            "draws": draws.to_numpy(),
            "take_all": (draws == F).to_numpy(),
            # a take-all stratum is read once; a sampled one costs about its draws times
            # the mean predicted cluster size (records design: duplicates not removed)
            "expected_records": np.where(
                draws == F,
                F * (unit_sizes if design == "predicted_clusters" else 1),
                draws * unit_sizes,
            ),
        }
    )
    achieved = z * math.sqrt(planned_variance(F, sd, draws, N))
    what = f"{metric}" + (" difference (prediction - baseline)" if baseline is not None else "")
    frame = "predicted clusters" if design == "predicted_clusters" else "records"
    assumptions = {
        "design": f"{frame} drawn without replacement within strata ({len(F)} strata; "
        f"{N:,} records, {int(F.sum()):,} {frame} in the frame)",
        "metric": f"{what} with the {estimator}",
        "variance source": f"stratum standard deviations {source}",
        "allocation": f"{method}, at least {minimum} draws per sampled stratum and "
        f"{min_draws} outside take-all strata"
        + (f", take-all strata {take_all}" if take_all else "")
        + "; strata whose Neyman share exceeds their size are taken entirely (no variance)",
        "interval": f"normal approximation, z = {z:.3f}, first-order (delta-method) variance "
        "with finite-population correction",
    }
    for note in notes:
        warnings.warn(note, PlanWarning, stacklevel=2)
    return Plan(
        metric=metric,
        design=design,
        target_half_width=float(half_width),
        level=float(level),
        half_width=float(achieved),
        draws=draws,
        table=table,
        assumptions=assumptions,
        warnings=tuple(notes),
    )
