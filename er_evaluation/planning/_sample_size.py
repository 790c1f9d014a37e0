"""The planner: the smallest stratified design whose interval of a metric reaches a
target half-width (:func:`plan_sample_size`; the variance it minimises is in
:mod:`er_evaluation.planning`)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

import numpy as np
import pandas as pd

from er_evaluation._parameters import (
    check_choice,
    check_count,
    check_labels,
    check_level,
    check_names,
    check_proportion,
    z_value,
)
from er_evaluation.clustering import validate_membership
from er_evaluation.designs import ALLOCATIONS, allocate
from er_evaluation.errors import warn
from er_evaluation.planning._frames import DesignFrame, predicted_cluster_frame, record_frame
from er_evaluation.planning._models import cluster_sizes
from er_evaluation.planning._plan import Plan, PlanWarning, planned_variance
from er_evaluation.planning._sources import F1, PLAN_METRICS, P, strata_of
from er_evaluation.sampling import Sample
from er_evaluation.vocabulary import check_estimable

__all__ = ["MIN_PLANNED_DRAWS", "PLAN_DESIGNS", "default_design", "plan_sample_size"]

PLAN_DESIGNS = ("predicted_clusters", "records")

MIN_PLANNED_DRAWS = 30
"""Fewest draws the planner plans in the strata it samples (not reviewed whole, units that
can err): the default interval needs about 10 effective units carrying both parts of a
ratio, which a handful of draws cannot give even when the variance model says they would
suffice. Strata the Neyman allocation reviews whole do not count toward it: on a Zipf(1.5)
truth (200,000 records, clusters capped at 20,000) at 5% misattribution, counting them gave
a precision plan of 31 draws of which 18 were the largest predicted clusters taken whole and
13 were spread two or three to a band; the bands that carry the variance (15 clusters of
500-1,999 records, 49 of 100-499) then rest on one degree of freedom each, the sample misses
their worst clusters and the interval covered 0.665 ± 0.024 (400 replicates), all but 3 of
its misses above the truth."""


def default_design(metric: str, *, paired: bool = False) -> str:
    """The design planned by default: predicted clusters for precision (well behaved on
    heavy tails), records for recall and F1 (a sample of predicted clusters cannot
    estimate them) and for a paired difference (``paired``: one sample of predicted
    clusters belongs to one prediction)."""
    return "predicted_clusters" if metric == P and not paired else "records"


def _sampled_draws(draws: pd.Series, F: pd.Series, varies: np.ndarray) -> int:
    """Draws in the strata a plan samples: not reviewed whole, units that can err."""
    return int(draws[varies & (draws < F).to_numpy()].sum())


def _smallest_allocation(
    frame: DesignFrame,
    target: float,
    population: int,
    *,
    method: str,
    take_all: list,
    minimum: int,
    min_draws: int,
    varies: np.ndarray,
) -> pd.Series:
    """Draws per stratum of the smallest total n whose allocation has planned variance
    at most ``target``: bisection on n, with the allocation and rounding of
    :func:`~er_evaluation.designs.allocate` (V decreases with n and V(census) = 0); then n
    grows until the strata left sampled hold ``min_draws`` draws or are all reviewed whole
    (``varies``: strata whose units can err; a stratum the allocation reviews whole because
    its Neyman share exceeds its size is not sampled, see :data:`MIN_PLANNED_DRAWS`)."""
    F, sd = frame.sizes, frame.sd

    def allocation(n: int) -> pd.Series:
        return allocate(F, n, method=method, sd=sd, take_all=take_all, minimum=minimum)

    def meets(n: int) -> bool:
        return planned_variance(F, sd, allocation(n), population) <= target

    fixed = int(F[take_all].sum())
    rest = int(F.sum()) - fixed
    sampled = [f for h, f in F.items() if h not in set(take_all)]
    lo = fixed + max(sum(min(minimum, int(f)) for f in sampled), min(min_draws, rest))
    hi = int(F.sum())
    if meets(lo):
        n = lo
    else:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if meets(mid) else (mid, hi)
        n = hi
    draws = allocation(n)
    total = int(F.sum())
    # each step adds the missing draws, so n grows strictly until the floor or a census
    while (short := min_draws - _sampled_draws(draws, F, varies)) > 0 and n < total:
        if (draws[varies] == F[varies]).all():
            break
        n = min(total, n + short)
        draws = allocation(n)
    return draws


def _plan_table(frame: DesignFrame, draws: pd.Series, design: str) -> pd.DataFrame:
    F, unit_records = frame.sizes, frame.unit_records
    return pd.DataFrame(
        {
            "stratum": F.index,
            "frame_size": F.to_numpy(),
            "sd": frame.sd.to_numpy(),
            "draws": draws.to_numpy(),
            "take_all": (draws == F).to_numpy(),
            # a take-all stratum is read once; a sampled one costs about its draws times
            # the mean predicted cluster size (records design: duplicates not removed)
            "expected_records": np.where(
                draws == F,
                F * (unit_records if design == "predicted_clusters" else 1),
                draws * unit_records,
            ),
        }
    )


def _check_plan(
    metric: str,
    design: str,
    half_width,
    level,
    pilot: Sample | None,
    error_rate,
    baseline: pd.Series | None,
    method,
    minimum,
    min_draws,
) -> dict:
    """The planner's arguments checked at its door, each error naming its parameter;
    returns the checked values."""
    if metric not in PLAN_METRICS:
        raise ValueError(f"unknown metric {metric!r}; the planner supports {PLAN_METRICS}")
    if isinstance(half_width, bool) or not isinstance(half_width, numbers.Real):
        raise ValueError(f"half_width must be a number in (0, 1), got {half_width!r}")
    if not 0 < half_width < 1:
        raise ValueError(f"half_width must be in (0, 1), got {half_width!r}")
    checked = {
        "half_width": float(half_width),
        "level": check_level(level),
        "method": check_choice(method, "method", ALLOCATIONS),
        "minimum": check_count(minimum, "minimum"),
        "min_draws": check_count(min_draws, "min_draws", minimum=0),
    }
    if (pilot is None) == (error_rate is None):
        raise ValueError("give exactly one of pilot= (a reviewed sample) or error_rate=")
    if pilot is not None and not isinstance(pilot, Sample):
        raise ValueError(
            f"pilot must be a reviewed Sample (e.g. benchmark_sample(...)), got "
            f"{type(pilot).__name__}"
        )
    if isinstance(error_rate, pd.Series):
        for stratum, rate in error_rate.items():
            check_proportion(rate, f"error_rate[{stratum!r}]")
    elif error_rate is not None:
        error_rate = check_proportion(error_rate, "error_rate")
    checked["error_rate"] = error_rate
    if design not in PLAN_DESIGNS:
        raise ValueError(f"design must be one of {PLAN_DESIGNS}, got {design!r}")
    if design == "predicted_clusters":
        check_estimable(
            metric, "predicted", remedy="plan it on the records design (design='records')"
        )
        if baseline is not None:
            raise ValueError(
                "a paired difference is planned on the record design (design='records'): "
                "one sample of predicted clusters belongs to one prediction"
            )
    return checked


def _check_has_pairs(prediction: pd.Series, metric: str) -> None:
    """A pairwise metric needs record pairs, and precision (and F1) predicted links."""
    if len(prediction) < 2:
        raise ValueError(
            f"the prediction has {len(prediction)} record: it has no record pair, so "
            f"{metric} is undefined and there is nothing to plan"
        )
    if metric in (P, F1):
        sizes = cluster_sizes(prediction)
        if int(sizes.max()) < 2:
            raise ValueError(
                f"the prediction has no predicted link (its {len(sizes):,} predicted "
                f"clusters are all singletons): {metric} is undefined, there is nothing to plan"
            )


def _check_variance(frame: DesignFrame, take_all: list, design: str, pilot, error_rate) -> None:
    """Refuse a variance model that says every sample is exact: a half-width of 0 would
    be promised for a design that is not a census. (Strata of singleton predicted
    clusters are exact on the predicted-cluster design: they hold no predicted link.)"""
    sampled = ~frame.sizes.index.isin(take_all)
    if design == "predicted_clusters":
        sampled &= (frame.unit_records > 1).to_numpy()
    if not sampled.any() or (frame.sd.to_numpy()[sampled] > 0).any():
        return
    if pilot is not None:
        raise ValueError(
            f"the pilot shows no variation in any sampled stratum ({pilot.n_units:,} reviewed "
            "units, all alike): it cannot say how much a sample varies, so no half-width can "
            "be promised; review a larger pilot, or plan from an assumed error rate "
            "(error_rate=...)"
        )
    raise ValueError(
        f"error_rate={error_rate} gives every sampled stratum a standard deviation of 0 (a "
        "prediction without errors, or without links to err on), so no half-width can be "
        "promised; assume a positive error rate (e.g. 0.01)"
    )


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
    half-width at most ``half_width`` (see :mod:`er_evaluation.planning`).

    ``design``: "predicted_clusters" or "records" (None: :func:`default_design`; records
    for a paired difference). ``strata``: stratum of every record of ``prediction`` (e.g.
    :func:`~er_evaluation.designs.size_strata`; constant within predicted clusters for the
    predicted-cluster design; None: one stratum, the uniform design). S_h comes from
    ``pilot`` (a reviewed pilot sample or existing benchmark) or ``error_rate`` (assumed
    misattribution rate). ``method``: "neyman" or "proportional" allocation; ``take_all``:
    strata reviewed entirely; ``minimum``: draws per sampled stratum; ``min_draws``: draws
    in the strata not reviewed whole (given or by the allocation), at least (below about 30 the estimator's interval rests on too
    few effective units, see :mod:`er_evaluation.estimators.diagnostics`, whatever the
    variance model says). Returns a :class:`Plan`; a :class:`PlanWarning` (also in
    ``Plan.warnings``) when the record design is asked for precision or F1 on a
    heavy-tailed prediction, whose variance it under-estimates.

    Refused, with the reason: a stratum label missing or of mixed types, a ``take_all``
    stratum that ``strata`` does not hold, a prediction without record pairs (or, for
    precision and F1, without predicted links), a pilot without two reviewed units in any
    stratum, and a variance model that gives every sampled stratum a standard deviation
    of 0 (the half-width it would promise is 0 for any sample).
    """
    prediction = validate_membership(prediction, name="prediction")
    if design is None:
        design = default_design(metric, paired=baseline is not None)
    checked = _check_plan(
        metric, design, half_width, level, pilot, error_rate, baseline, method, minimum, min_draws
    )
    half_width, level, error_rate = checked["half_width"], checked["level"], checked["error_rate"]
    method, minimum, min_draws = checked["method"], checked["minimum"], checked["min_draws"]
    _check_has_pairs(prediction, metric)
    if strata is None:
        strata = pd.Series("all", index=prediction.index, name="stratum")
    strata = strata_of(check_labels(strata, "strata"), prediction)
    take_all = check_names(take_all, "take_all", pd.unique(strata.to_numpy()))
    if baseline is not None:
        baseline = validate_membership(baseline, name="baseline")
    if isinstance(error_rate, pd.Series):
        check_names(error_rate.index, "error_rate", pd.unique(strata.to_numpy()))
    if design == "predicted_clusters":
        frame = predicted_cluster_frame(prediction, strata, pilot, error_rate)
    else:
        frame = record_frame(prediction, strata, metric, pilot, error_rate, baseline)
    _check_variance(frame, take_all, design, pilot, error_rate)
    varies = np.ones(len(frame.sizes), dtype=bool)
    if design == "predicted_clusters":  # a stratum of singletons holds no predicted link
        varies = (frame.unit_records > 1).to_numpy()
    z = z_value(level)
    N = len(prediction)
    draws = _smallest_allocation(
        frame,
        (half_width / z) ** 2,
        N,
        method=method,
        take_all=take_all,
        minimum=minimum,
        min_draws=min_draws,
        varies=varies,
    )
    F = frame.sizes
    what = f"{metric}" + (" difference (prediction - baseline)" if baseline is not None else "")
    units = "predicted clusters" if design == "predicted_clusters" else "records"
    assumptions = {
        "design": f"{units} drawn without replacement within strata ({len(F)} strata; "
        f"{N:,} records, {int(F.sum()):,} {units} in the frame)",
        "metric": f"{what} with the {frame.estimator}",
        "variance source": f"stratum standard deviations {frame.source}",
        "allocation": f"{method}, at least {minimum} draws per sampled stratum and "
        f"{min_draws} in the strata not reviewed whole"
        + (f", take-all strata {take_all}" if take_all else "")
        + "; strata whose Neyman share exceeds their size are taken entirely (no variance)",
        "interval": f"normal approximation, z = {z:.3f}, first-order (delta-method) variance "
        "with finite-population correction",
    }
    for note in frame.notes:
        warn(note, PlanWarning)
    return Plan(
        metric=metric,
        design=design,
        target_half_width=float(half_width),
        level=level,
        half_width=z * math.sqrt(planned_variance(F, frame.sd, draws, N)),
        draws=draws,
        table=_plan_table(frame, draws, design),
        assumptions=assumptions,
        warnings=frame.notes,
    )
