"""Sample-size planning: how many predicted clusters or records to review, per stratum,
for a target interval half-width (Cochran 1977, §5.5 and §5.9).

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
  gives only its precision estimate, turned into the misattribution rate at which the
  rate model below gives it (:func:`rate_for_precision`). For records, the reviewed true
  clusters' weight-share values, each record of a reviewed cluster weighted by the inverse
  of its selection probability (:func:`stratum_sd_from_sample`). A pilot's S_h is too
  small more often than not where few units carry errors (on a Zipf(2) truth, 10 predicted
  clusters per band gave half the census S_h in the small bands), so a pilot plan takes,
  per stratum, the larger of the pilot's S_h and the rate model's at the pilot's
  *pessimistic* rate: the rate at the lower end of the pilot's one-sided 80% interval of
  precision (:func:`rate_for_precision`) or recall (ε = 1 - √R, :func:`rate_for_recall`),
  the larger of the two for F1 (:data:`PILOT_CONFIDENCE`; Cochran 1977, ch. 4, plans
  from an upper confidence limit of S²). Not for a paired difference, which has no rate
  model;
- **assumed misattribution rate** ε (q = 1 - ε). Predicted clusters
  (:func:`stratum_sd_from_cluster_rates`): the forward model of misattribution (Binette et
  al. 2023, §2.4) — a true cluster of t records keeps K ~ Binomial(t, q) of them together
  and receives M ~ Poisson(ε t) foreign records — gives each predicted cluster of s = K + M
  records A = C(s, 2) and B = C(K, 2); the true sizes are deconvolved from the predicted
  ones (:func:`true_size_counts`); S_h is the spread of u over the exact (K, M)
  distribution of the clusters whose size s falls in h (a singleton that received a record
  is a false pair in the pairs' stratum). That S_h is the one expected over the
  populations the rate could make; the population at hand is one of them, and its S_h²
  over F_h predicted clusters scatters with relative standard deviation
  r_h = sqrt((μ₄ - σ⁴ (F_h - 3)/(F_h - 1)) / F_h) / σ² (μ₄: the central fourth moment of
  u under the model), wide where a stratum holds few large clusters (heavy tails). A plan
  from the model therefore takes S_h² (1 + z r_h), the upper end of a one-sided
  :data:`MODEL_CONFIDENCE` bound (z = 0.84 at 80%). Records, recall (:func:`stratum_sd_from_rates`):
  the record's true cluster of s records keeps K ~ Binomial(s, q) records together, with

      Var K(K-1) = s₍₄₎q⁴ + 4 s₍₃₎q³ + 2 s₍₂₎q² - (s₍₂₎q²)²     (s₍ⱼ₎: falling factorial),

  u = (K(K-1)/(2s) - q²(s-1)/2)/Ā with Ā = mean (s-1)/2, so S_h² = mean_h[Var K(K-1)/(4s²)]
  / Ā². Records, precision and F1: where misattributed records land (their out-links) has
  no simple closed form, so a truth is simulated, misattributed at rate ε, and S_h is the
  census standard deviation of that population. The true sizes s: on the uniform record
  design those deconvolved from the predicted ones (:func:`true_size_counts`); with
  several record strata the predicted sizes stand for them (optimistic: misattribution
  turns true singletons into predicted pairs).

:class:`Plan` carries the answer with every assumption it used (design, variance source,
interval). :func:`plan_review` is the plan the command line and the app ask for: the
design chosen for the metric, size strata with the default bands
(:data:`~er_evaluation.designs.SIZE_BANDS`) and a take-all size. Measured
(``benchmarks/bench_planner.py``, benchmarks/README.md "Planner"): the achieved over the
target half-width per truth, error rate, metric and source; the record design's precision
(and the F1 built on it) is under-estimated on heavy-tailed predictions, for which the
planner warns (:class:`PlanWarning`).
"""

from er_evaluation.planning._assembly import plan_review
from er_evaluation.planning._frames import HEAVY_TAIL_EFFECTIVE_CLUSTERS, link_effective_clusters
from er_evaluation.planning._models import (
    DECONVOLVE_MAX_SIZE,
    model_precision,
    rate_for_precision,
    rate_for_recall,
    true_size_counts,
)
from er_evaluation.planning._plan import Plan, PlanWarning, planned_variance
from er_evaluation.planning._sample_size import (
    MIN_PLANNED_DRAWS,
    PLAN_DESIGNS,
    default_design,
    plan_sample_size,
)
from er_evaluation.planning._sources import (
    MODEL_CONFIDENCE,
    PILOT_CONFIDENCE,
    PLAN_METRICS,
    stratum_sd_from_cluster_rates,
    stratum_sd_from_clusters,
    stratum_sd_from_rates,
    stratum_sd_from_sample,
)

__all__ = [
    "Plan",
    "PlanWarning",
    "MODEL_CONFIDENCE",
    "PILOT_CONFIDENCE",
    "PLAN_METRICS",
    "PLAN_DESIGNS",
    "DECONVOLVE_MAX_SIZE",
    "HEAVY_TAIL_EFFECTIVE_CLUSTERS",
    "MIN_PLANNED_DRAWS",
    "default_design",
    "link_effective_clusters",
    "plan_review",
    "plan_sample_size",
    "planned_variance",
    "stratum_sd_from_clusters",
    "stratum_sd_from_cluster_rates",
    "model_precision",
    "true_size_counts",
    "rate_for_precision",
    "rate_for_recall",
    "stratum_sd_from_rates",
    "stratum_sd_from_sample",
]
