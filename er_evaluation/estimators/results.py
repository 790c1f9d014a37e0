"""Result objects of the estimators: one :class:`Estimate` per (prediction, metric), and a
tidy table of many of them.

Every estimate carries its value together with its standard error, confidence interval
(with the level and the interval method), the estimator and design that produced it, the
sample size and its :class:`~er_evaluation.estimators.diagnostics.Diagnostics` (effective
number of units, concentration, ``reliable`` with the reason), so a number is never
reported without its error bar, nor an error bar without whether to trust it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields

import pandas as pd

from er_evaluation.estimators.diagnostics import Diagnostics

__all__ = [
    "Diagnostics",
    "Estimate",
    "FRAME_COLUMNS",
    "SHOWN_COLUMNS",
    "estimates_frame",
    "unreliable_notes",
]


@dataclass(frozen=True)
class Estimate:
    """A design-based estimate of one metric for one prediction.

    ``value`` is the (bias-corrected) estimate, ``std_error`` its estimated standard error
    (square root of the linearised variance, Binette et al. 2023 eq. 9), ``[ci_low, ci_high]`` the
    ``level`` confidence interval computed by ``ci_method``. ``n_units`` counts the distinct
    sampled units (clusters or blocks), ``n_draws`` the draws including with-replacement
    repeats (the ``n`` of eq. 8-9), ``n_records`` the reviewed records used. ``plugin`` is the
    uncorrected smooth function of the sample means; ``value - plugin`` is the bias
    correction. ``dropped_records`` counts sampled records absent from the prediction (for a
    paired difference: from either prediction) that were dropped under
    ``on_missing="restrict"``. NaN ``std_error`` means no variance
    estimate exists (one draw, or the naive estimator). ``diagnostics`` says whether the
    interval can be trusted (:attr:`reliable`) and, if not, why and what to do.
    """

    metric: str
    estimator: str
    design: str
    value: float
    std_error: float
    ci_low: float
    ci_high: float
    level: float
    ci_method: str
    n_units: int
    n_draws: int
    n_records: int
    plugin: float = math.nan
    prediction: str | None = None
    dropped_records: int = 0
    diagnostics: Diagnostics | None = None

    @property
    def reliable(self) -> bool:
        """Whether the interval can be trusted at its nominal level (False without
        diagnostics)."""
        return self.diagnostics is not None and self.diagnostics.reliable

    def __repr__(self) -> str:
        name = f"{self.prediction}: " if self.prediction is not None else ""
        flag = "" if self.reliable else " NOT RELIABLE"
        return (
            f"<Estimate {name}{self.metric} = {_fmt(self.value)} "
            f"(SE {_fmt(self.std_error)}, {self.level:.0%} CI [{_fmt(self.ci_low)}, "
            f"{_fmt(self.ci_high)}] {self.ci_method}{flag}); estimator={self.estimator}, "
            f"design={self.design}, n={self.n_draws} draws of {self.n_units} units, "
            f"{self.n_records} records>"
        )

    def summary(self) -> str:
        """Multi-line human-readable summary."""
        lines = [
            f"{self.metric} ({self.estimator} estimator, {self.design} design)"
            + (f" for {self.prediction}" if self.prediction is not None else ""),
            f"  estimate       {_fmt(self.value)}",
            f"  std. error     {_fmt(self.std_error)}",
            f"  {self.level:.0%} CI         [{_fmt(self.ci_low)}, {_fmt(self.ci_high)}] "
            f"({self.ci_method})",
            f"  bias corr.     {_fmt(self.value - self.plugin)}",
            f"  sample         {self.n_draws} draws, {self.n_units} distinct units, "
            f"{self.n_records} records",
        ]
        if self.dropped_records:
            lines.append(
                f"  dropped        {self.dropped_records} sampled records not in the prediction"
            )
        d = self.diagnostics
        if d is not None:
            lines.append(
                f"  effective n    {d.n_effective:.1f} units "
                f"({d.top_share:.0%} carried by the largest few)"
            )
            lines.append(f"  reliable       {'yes' if d.reliable else 'NO: ' + d.reason}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """Plain dict of all fields, the diagnostics flattened into ``n_effective``,
        ``top_share``, ``reliable`` and ``reason`` (JSON-serialisable: floats, ints,
        strings, bools, None)."""
        out = asdict(self)
        diag = out.pop("diagnostics") or {}
        out.update({f: diag.get(f) for f in DIAGNOSTIC_COLUMNS})
        return out


DIAGNOSTIC_COLUMNS = tuple(f.name for f in fields(Diagnostics))


#: the columns of every table of estimates, in order (:func:`estimates_frame`)
FRAME_COLUMNS: tuple[str, ...] = (
    "prediction",
    "metric",
    *(c for c in Estimate.__dataclass_fields__ if c not in ("prediction", "metric", "diagnostics")),
    *DIAGNOSTIC_COLUMNS,
)


def estimates_frame(estimates: Iterable[Estimate]) -> pd.DataFrame:
    """The one shape of a table of estimates: one row per estimate, a default integer
    index, and the columns :data:`FRAME_COLUMNS`, in this order:

    ``prediction``, ``metric`` (what is estimated), ``estimator``, ``design``, ``value``,
    ``std_error``, ``ci_low``, ``ci_high``, ``level``, ``ci_method``, ``n_units``
    (distinct sampled units: clusters, blocks or labelled pairs), ``n_draws`` (draws,
    with-replacement repeats included), ``n_records`` (reviewed records used; labelled
    pairs for pair estimates), ``plugin`` (the estimate before bias correction),
    ``dropped_records``, and the diagnostics ``n_effective``, ``top_share``,
    ``reliable``, ``reason``.

    :func:`~er_evaluation.estimators.estimate_table` and
    :func:`~er_evaluation.estimators.compare` return it; every other family of
    estimates (pair estimates) produces the same columns."""
    rows = [e.to_dict() for e in estimates]
    return pd.DataFrame(rows, columns=list(FRAME_COLUMNS))


def _fmt(x: float) -> str:
    return "nan" if x is None or math.isnan(x) else f"{x:.4f}"


#: the columns every front end shows beside an estimate's keys (``er-eval estimate`` and
#: ``er-eval review estimate`` as a text table, the review app's Estimates page): what
#: was estimated how, the interval, the sample and whether the interval can be trusted
SHOWN_COLUMNS: tuple[str, ...] = (
    "estimator",
    "value",
    "std_error",
    "ci_low",
    "ci_high",
    "n_units",
    "n_records",
    "n_effective",
    "reliable",
    "dropped_records",
)


def unreliable_notes(table: pd.DataFrame) -> list[str]:
    """One line per estimate of ``table`` (an :func:`estimates_frame`, optionally with a
    ``group`` column) that is not reliable: ``not reliable: PREDICTION [GROUP] METRIC:
    REASON``, the one note every front end prints for it (the
    :class:`~er_evaluation.errors.UnreliableEstimateWarning` of the same estimate is then
    silenced, so that it is said once)."""
    flagged = table.loc[~table["reliable"].astype(bool)]
    groups = flagged["group"].tolist() if "group" in flagged else [None] * len(flagged)
    return [
        f"not reliable: {r.prediction}{'' if g is None else f' [{g}]'} {r.metric}: {r.reason}"
        for r, g in zip(flagged.itertuples(), groups, strict=True)
    ]
