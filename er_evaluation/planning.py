"""Sample-size planning: how many records to review, per stratum, for a target interval
half-width (design §7; Cochran 1977, §5.5 and §5.9).

The stratified estimator of a metric (:mod:`er_evaluation.estimators.stratified`) has,
to first order, the variance

    V(n_1..n_H) = (1/N²) Σ_h F_h² (1 - n_h/F_h) S_h² / n_h

where S_h is the standard deviation, over the F_h records of stratum h, of the per-draw
linearised value u(i) = grad' x(c(i)) (x: the estimator's per-record weight-share
columns, grad: the metric's gradient). The planner finds the smallest total number of
draws n whose allocation (:func:`~er_evaluation.designs.allocate`: proportional, Neyman
or with take-all strata) gives ``z sqrt(V) <= half_width``, by bisection on n with the
same allocation and rounding the design will use.

S_h comes from one of:

- a **pilot sample or existing benchmark** (:func:`stratum_sd_from_sample`): the
  reviewed clusters' linearised values, each record of a reviewed cluster weighted by the
  inverse of its cluster's selection probability, grouped by the planned strata;
- **assumed error rates** (:func:`stratum_sd_from_rates`): a record misattributed with
  probability ε loses all its links, the others keep a share 1 - ε; with the record's
  true cluster size approximated by its predicted cluster size s,
  u(i) = (N/|P|)·((s - 1)/2)·(a_i - P) with a_i ∈ {0 (prob. ε), 1 - ε}, so
  S_h² = (N/|P|)² ε (1-ε)³ E_h[(s - 1)²] / 4 (the same model for precision, recall and F1).

:class:`Plan` carries the answer with every assumption it used.

Measured (``benchmarks/bench_stratified.py planner``, README "Planner"): on a Zipf(2)
truth capped at 5,000 with 5-10% misattribution the achieved half-width of the planned
record design was 1.7-4.5 times the target: records of giant true clusters misattributed
to small predicted clusters put rare huge values in the small-size strata, which neither a
pilot of 200 draws nor the assumed-rate model sees; on PatentsView (5-10%
misattribution, target 0.02) it was 1.2-1.6 times the target. Treat a plan as a lower
bound.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy.special import ndtri

from er_evaluation.clustering import validate_membership
from er_evaluation.designs import allocate
from er_evaluation.errors import examples
from er_evaluation.sampling import Sample

__all__ = [
    "Plan",
    "PLAN_METRICS",
    "plan_sample_size",
    "planned_variance",
    "stratum_sd_from_rates",
    "stratum_sd_from_sample",
]

PLAN_METRICS = ("pairwise_precision", "pairwise_recall", "pairwise_f1")

# the estimator the stratified record design uses for each metric (weight share)
_ESTIMATOR = {
    "pairwise_precision": "cluster_block",
    "pairwise_recall": "cluster",
    "pairwise_f1": "cluster_block+cluster",
}


@dataclass(frozen=True)
class Plan:
    """A planned stratified design and the assumptions behind it.

    ``draws``: draws per stratum (Series); ``table``: per stratum ``frame_size`` (F_h),
    ``sd`` (S_h), ``draws``, ``take_all``, ``expected_records`` (the records a reviewer reads: a
    take-all stratum's records, or the draws times the mean predicted cluster size of the
    stratum's records, before duplicates); ``half_width``: the half-width the plan is expected to give;
    ``assumptions``: what the answer rests on, to print beside it."""

    metric: str
    target_half_width: float
    level: float
    half_width: float
    draws: pd.Series
    table: pd.DataFrame
    assumptions: dict[str, str] = field(default_factory=dict)

    @property
    def n_draws(self) -> int:
        return int(self.draws.sum())

    @property
    def expected_records(self) -> float:
        return float(self.table["expected_records"].sum())

    def summary(self) -> str:
        """The answer and, beside it, the assumptions used."""
        lines = [
            f"Review {self.n_draws:,} sampled records ({self.expected_records:,.0f} records to "
            f"read in their clusters, before duplicates) for a {self.level:.0%} interval of "
            f"{self.metric} of half-width {self.half_width:.4f} "
            f"(target {self.target_half_width:.4f}).",
            "",
            self.table.to_string(index=False, float_format=lambda v: f"{v:.4g}"),
            "",
            "Assumptions:",
        ]
        lines += [f"  {k}: {v}" for k, v in self.assumptions.items()]
        return "\n".join(lines)


def planned_variance(
    frame_sizes: pd.Series, sd: pd.Series, draws: pd.Series, population: int | None = None
) -> float:
    """First-order variance of the stratified estimator, (1/N²) Σ F_h² (1 - n_h/F_h)
    S_h²/n_h, for draws n_h (N = Σ F_h unless ``population`` is given)."""
    F = frame_sizes.astype(float)
    s = sd.reindex(F.index).astype(float)
    n = draws.reindex(F.index).astype(float)
    N = float(F.sum()) if population is None else float(population)
    return float((F**2 * (1 - n / F) * s**2 / n).sum()) / N**2


def _strata_of(strata: pd.Series, prediction: pd.Series) -> pd.Series:
    missing = prediction.index.difference(strata.index)
    if len(missing):
        raise ValueError(
            f"{len(missing)} record(s) of the prediction have no stratum: {examples(missing)}"
        )
    return strata.reindex(prediction.index)


def stratum_sd_from_sample(
    prediction: pd.Series,
    sample: Sample,
    strata: pd.Series,
    metric: str = "pairwise_precision",
) -> pd.Series:
    """S_h of ``metric`` for the planned ``strata`` (labels of the prediction's records),
    from a reviewed pilot ``sample`` or existing benchmark of true clusters.

    Every reviewed cluster c gives the per-record linearised value u(c) = grad' x(c) of
    the weight-share columns (x(c) = the cluster's totals / |c|, grad at the pilot's
    estimate); each of its records in stratum h counts with weight w_c = (draws of c)/p_c
    (p_c: its selection probability; for a stratified pilot, the draws' expansion weights
    F_g/n_g per record of c). S_h² is the weighted variance of u over the records in h.
    Strata without a reviewed record get the largest S_h seen (a conservative guess,
    recorded by :func:`plan_sample_size` in the assumptions)."""
    from er_evaluation.estimators._metric_fit import metric_function
    from er_evaluation.estimators.units import unit_table

    if metric not in PLAN_METRICS:
        raise ValueError(f"unknown metric {metric!r}; the planner supports {PLAN_METRICS}")
    strata = _strata_of(strata, prediction)
    ut = unit_table(prediction, sample)
    size = ut.q["size"]
    if (size < 1).any():
        raise ValueError("the pilot has sampled clusters without records in the prediction")
    share = replace(ut, probability=size.astype(float))  # per-record weight-share columns
    _, phi, cols = metric_function(share, metric, _ESTIMATOR[metric], 1.0)
    names = phi.columns()
    X = np.column_stack([np.asarray(cols[c], dtype=float) for c in names])
    if sample.strata is not None:
        st = sample.strata
        w = (
            np.bincount(
                st.row_unit,
                weights=st.row_count * (st.frame_size / st.n_draws)[st.row_stratum],
                minlength=len(sample.units),
            )
            / size
        )
    else:
        w = np.asarray(sample.multiplicity, dtype=float) / np.asarray(
            sample.probability, dtype=float
        )
    index = {c: i for i, c in enumerate(names)}
    mean = (w * size) @ X / (w @ size)
    g = np.asarray(phi.evaluate(mean, index)[1], dtype=float)
    u = X @ g
    ref = sample.reference
    ref = ref[ref.index.isin(prediction.index)]
    unit = sample.units.get_indexer(ref.to_numpy())
    frame = pd.DataFrame({"h": strata.reindex(ref.index).to_numpy(), "w": w[unit], "u": u[unit]})
    frame["wu"], frame["wuu"] = frame["w"] * frame["u"], frame["w"] * frame["u"] ** 2
    agg = frame.groupby("h")[["w", "wu", "wuu"]].sum()
    m = agg["wu"] / agg["w"]
    var = (agg["wuu"] / agg["w"] - m**2).clip(lower=0)
    sd = np.sqrt(var).reindex(pd.unique(strata.to_numpy()))
    return sd.fillna(sd.max() if sd.notna().any() else 0.0).rename("sd")


def stratum_sd_from_rates(
    prediction: pd.Series, strata: pd.Series, error_rate: float | pd.Series
) -> pd.Series:
    """S_h from an assumed misattribution rate ε (one value, or one per stratum) and the
    prediction's cluster sizes: S_h² = (N/|P|)² ε (1-ε)³ E_h[(s-1)²] / 4 (module
    docstring; s = the record's predicted cluster size)."""
    prediction = validate_membership(prediction, name="prediction")
    strata = _strata_of(strata, prediction)
    codes, _ = pd.factorize(prediction.to_numpy())
    sizes = np.bincount(codes)
    s = sizes[codes].astype(float)
    N, links = len(prediction), float((sizes * (sizes - 1) / 2).sum())
    if links == 0:
        raise ValueError("the prediction has no predicted links: precision is undefined")
    moment = pd.Series((s - 1) ** 2).groupby(strata.to_numpy()).mean()
    if isinstance(error_rate, pd.Series):
        eps = error_rate.reindex(moment.index)
        if eps.isna().any():
            raise ValueError(
                f"error_rate is missing for strata {examples(moment.index[eps.isna().to_numpy()])}"
            )
    else:
        eps = pd.Series(float(error_rate), index=moment.index)
    if ((eps < 0) | (eps > 1)).any():
        raise ValueError("error rates must be in [0, 1]")
    sd = (N / links) * np.sqrt(eps * (1 - eps) ** 3 * moment) / 2
    return sd.rename("sd")


def plan_sample_size(
    prediction: pd.Series,
    strata: pd.Series,
    half_width: float,
    *,
    metric: str = "pairwise_precision",
    level: float = 0.95,
    pilot: Sample | None = None,
    error_rate: float | pd.Series | None = None,
    method: str = "neyman",
    take_all: Iterable = (),
    minimum: int = 2,
) -> Plan:
    """Smallest stratified record design whose ``level`` interval of ``metric`` has
    half-width at most ``half_width`` (see the module docstring).

    ``strata``: stratum of every record of ``prediction`` (e.g.
    :func:`~er_evaluation.designs.size_strata`; one label for a uniform design). S_h comes
    from ``pilot`` (a reviewed pilot sample or existing benchmark) or ``error_rate``
    (assumed misattribution rate). ``method``: "neyman" or "proportional" allocation;
    ``take_all``: strata reviewed entirely. Returns a :class:`Plan`.
    """
    prediction = validate_membership(prediction, name="prediction")
    if not 0 < half_width < 1:
        raise ValueError(f"half_width must be in (0, 1), got {half_width!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    strata = _strata_of(strata, prediction)
    if (pilot is None) == (error_rate is None):
        raise ValueError("give exactly one of pilot= (a reviewed sample) or error_rate=")
    if pilot is not None:
        sd = stratum_sd_from_sample(prediction, pilot, strata, metric)
        source = (
            f"standard deviations from the reviewed pilot/benchmark ({pilot.n_units:,} clusters, "
            f"{pilot.n_draws:,} draws, design {pilot.design!r})"
        )
    else:
        if metric not in PLAN_METRICS:
            raise ValueError(f"unknown metric {metric!r}; the planner supports {PLAN_METRICS}")
        sd = stratum_sd_from_rates(prediction, strata, error_rate)
        source = (
            f"standard deviations from an assumed misattribution rate {error_rate} "
            "(a misattributed record loses all its links; true cluster size ~ predicted size)"
        )
    F = strata.value_counts(sort=False)
    sd = sd.reindex(F.index)
    z = float(ndtri(0.5 + level / 2))
    target = (half_width / z) ** 2

    def design(n: int) -> pd.Series:
        return allocate(F, n, method=method, sd=sd, take_all=take_all, minimum=minimum)

    lo = int(F[list(take_all)].sum()) + sum(
        min(minimum, int(f)) for h, f in F.items() if h not in set(take_all)
    )
    hi = int(F.sum())
    if planned_variance(F, sd, design(lo)) <= target:
        n = lo
    else:
        while hi - lo > 1:  # smallest n with V(n) <= target; V(F) = 0
            mid = (lo + hi) // 2
            if planned_variance(F, sd, design(mid)) <= target:
                hi = mid
            else:
                lo = mid
        n = hi
    draws = design(n)
    codes, _ = pd.factorize(prediction.to_numpy())
    size = pd.Series(np.bincount(codes)[codes], index=prediction.index)
    mean_size = size.groupby(strata.to_numpy()).mean().reindex(F.index)
    table = pd.DataFrame(
        {
            "stratum": F.index,
            "frame_size": F.to_numpy(),
            "sd": sd.to_numpy(),
            "draws": draws.to_numpy(),
            "take_all": (draws == F).to_numpy(),
            # a take-all stratum is read once (its records' clusters); a sampled one
            # costs about its draws times the clusters' size (duplicates not removed)
            "expected_records": np.where(draws == F, F, draws * mean_size),
        }
    )
    achieved = z * math.sqrt(planned_variance(F, sd, draws))
    assumptions = {
        "metric": f"{metric} with the {_ESTIMATOR.get(metric, '')} weight-share estimator",
        "S_h": source,
        "allocation": f"{method}"
        + (f", take-all strata {list(take_all)}" if list(take_all) else ""),
        "interval": f"normal approximation, z = {z:.3f}, first-order (delta-method) variance",
        "population": f"{len(prediction):,} records in {len(F)} strata; draws without replacement",
    }
    return Plan(
        metric=metric,
        target_half_width=float(half_width),
        level=float(level),
        half_width=float(achieved),
        draws=draws,
        table=table,
        assumptions=assumptions,
    )
