"""The answer of the planner: :class:`Plan`, with the assumptions it rests on, and the
first-order variance of a stratified design that the planner minimises (see
:mod:`er_evaluation.planning`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["Plan", "PlanWarning", "planned_variance"]


class PlanWarning(UserWarning):
    """A plan whose variance model is known to under-estimate the design's variance."""


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
            self.table.to_string(index=False, formatters=_formatters(self.table)),
            "",
            "Assumptions:",
        ]
        lines += [f"  {k}: {v}" for k, v in self.assumptions.items()]
        lines += [f"WARNING: {w}" for w in self.warnings]
        return "\n".join(lines)


def _number(value) -> str:
    """A count, or a number of 1,000 or more, with thousands separators and no decimals (as
    in the summary's first line); a smaller number with four significant digits."""
    if isinstance(value, (bool, np.bool_)):
        return str(value)
    if isinstance(value, (int, np.integer)) or abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def _formatters(table: pd.DataFrame) -> dict:
    return {
        name: _number
        for name in table.columns
        if pd.api.types.is_numeric_dtype(table[name])
        and not pd.api.types.is_bool_dtype(table[name])
    }


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
