"""The plan the front ends ask for: the design chosen for the metric and the strata
built from the prediction, then :func:`~er_evaluation.planning.plan_sample_size`. The
command line (``er-eval plan``) and the app's Sample page both call
:func:`plan_review`, so they plan the same design with the same default bands."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from er_evaluation._parameters import check_choice, check_count
from er_evaluation.designs import ALLOCATIONS, SIZE_BANDS, TAKE_ALL, record_strata, size_strata
from er_evaluation.planning._plan import Plan
from er_evaluation.planning._sample_size import PLAN_DESIGNS, default_design, plan_sample_size
from er_evaluation.planning._sources import P
from er_evaluation.sampling import Sample

__all__ = ["plan_review"]


def plan_review(
    prediction: pd.Series,
    half_width: float,
    *,
    metric: str = P,
    design: str | None = None,
    level: float = 0.95,
    pilot: Sample | None = None,
    error_rate: float | None = None,
    baseline: pd.Series | None = None,
    bands: Iterable[int] | None = None,
    take_all_size: int | None = None,
    strata: pd.Series | None = None,
    allocation: str = "neyman",
) -> Plan:
    """Plan the review of ``prediction`` for a ``level`` interval of ``metric`` of
    half-width ``half_width``, as :func:`~er_evaluation.planning.plan_sample_size` with
    the design and strata a user means:

    - ``design``: "predicted_clusters", "records", or None/"auto" for
      :func:`~er_evaluation.planning.default_design` (predicted clusters for precision,
      records for recall, F1 and a paired difference with ``baseline``);
    - ``strata``: a stratum for every record (indexed by record id, e.g. a column of a
      table; :func:`~er_evaluation.designs.record_strata`), or else bands of predicted
      cluster size (:func:`~er_evaluation.designs.size_strata`): ``bands`` (lower bounds
      above 1), by default :data:`~er_evaluation.designs.SIZE_BANDS` on the
      predicted-cluster design and one stratum (the uniform design) on the record design;
    - ``take_all_size``: predicted clusters of at least this many records form the
      take-all stratum, reviewed entirely (size strata only: not with ``strata`` nor on
      the uniform record design).

    S_h comes from ``pilot`` or ``error_rate``; ``allocation`` is "neyman" or
    "proportional". Returns the :class:`~er_evaluation.planning.Plan`.
    """
    if design in (None, "auto"):
        design = default_design(metric, paired=baseline is not None)
    if design not in PLAN_DESIGNS:
        raise ValueError(f"design must be one of {PLAN_DESIGNS} or 'auto', got {design!r}")
    allocation = check_choice(allocation, "allocation", ALLOCATIONS)
    if take_all_size is not None:
        take_all_size = check_count(take_all_size, "take_all_size")
    take_all: list = []
    if strata is not None:
        if bands is not None or take_all_size is not None:
            raise ValueError(
                "give either strata=... (a stratum for every record) or size bands "
                "(bands=..., take_all_size=...), not both"
            )
        strata = record_strata(prediction, strata, level="record")
    elif bands is not None or design == "predicted_clusters":
        strata = size_strata(
            prediction, SIZE_BANDS if bands is None else bands, take_all_size=take_all_size
        )
        if take_all_size is not None and (strata == TAKE_ALL).any():
            take_all = [TAKE_ALL]
    elif take_all_size is not None:
        raise ValueError(
            "take_all_size=... needs size strata: give bands=... too (the record design is "
            "otherwise one stratum, the uniform design)"
        )
    return plan_sample_size(
        prediction,
        strata,
        half_width,
        metric=metric,
        design=design,
        level=level,
        pilot=pilot,
        error_rate=error_rate,
        baseline=baseline,
        method=allocation,
        take_all=take_all,
    )
