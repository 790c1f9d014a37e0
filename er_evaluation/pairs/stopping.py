"""The live stopping signal of a labelling session: each metric's interval width after the
labels so far, and whether a target width is reached.

The intervals hold their level at a budget fixed before labelling. Stopping as soon as
every width is at most a target lets the labels choose the budget; the level does not
account for that choice, so treat such a stop as a reading of the precision reached, and
fix the budget in advance when the interval itself must hold its level. The target
counts as reached only while every estimate is also reliable (its diagnostics): early
in a run an interval can be narrow because the labels have not yet met what would
widen it (a missed match drawn with a large weight).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from er_evaluation.pairs.estimates import PairEstimates

__all__ = ["IntervalWidths", "check_target_width", "interval_widths"]


@dataclass(frozen=True)
class IntervalWidths:
    """Width ci_high - ci_low of each metric's interval (``widths``, metric name -> width;
    NaN while a metric is undefined) after ``n_labels`` labels, whether each estimate is
    reliable (``reliable``, metric name -> bool), and the ``target`` width asked for
    (None: none)."""

    widths: dict[str, float]
    n_labels: int
    target: float | None = None
    reliable: dict[str, bool] | None = None

    @property
    def unreliable(self) -> list[str]:
        """The metrics whose estimate is not reliable (all of them before any label)."""
        if self.reliable is None:
            return list(self.widths)
        return [name for name, ok in self.reliable.items() if not ok]

    @property
    def reached(self) -> bool:
        """True when a target was given, every metric's interval is at most that wide and
        every estimate is reliable."""
        return (
            self.target is not None
            and not self.unreliable
            and all(math.isfinite(w) and w <= self.target for w in self.widths.values())
        )

    def describe(self) -> str:
        """One line: the widths per metric and, with a target, whether it is reached."""
        shown = ", ".join(
            f"{name.removeprefix('pairwise_')} {width:.3f}" for name, width in self.widths.items()
        )
        line = f"interval widths after {self.n_labels} labels: {shown}"
        if self.target is None:
            return line
        if self.reached:
            return f"{line}; target width {self.target:g} reached"
        wide = all(math.isfinite(w) and w <= self.target for w in self.widths.values())
        if wide and self.unreliable:
            names = ", ".join(n.removeprefix("pairwise_") for n in self.unreliable)
            return f"{line}; target width {self.target:g} not reached: {names} not reliable yet"
        return f"{line}; target width {self.target:g} not reached"


def interval_widths(estimates: PairEstimates, target_width: float | None = None) -> IntervalWidths:
    """The :class:`IntervalWidths` of ``estimates`` (precision, recall and each F_beta of
    :func:`~er_evaluation.pairs.estimate_from_labels`); ``target_width`` in (0, 1] or None.
    The intervals are valid at a budget fixed in advance (module docstring)."""
    rows = [estimates.precision, estimates.recall, *estimates.f]
    return IntervalWidths(
        {e.metric: e.ci_high - e.ci_low for e in rows},
        estimates.precision.n_units,
        check_target_width(target_width),
        {e.metric: e.reliable for e in rows},
    )


def check_target_width(target_width) -> float | None:
    """``target_width`` as a float in (0, 1], or None; else a ValueError naming it."""
    if target_width is None:
        return None
    valid = isinstance(target_width, (int, float)) and not isinstance(target_width, bool)
    if not valid or not 0 < target_width <= 1:
        raise ValueError(f"target_width must be a number in (0, 1], got {target_width!r}")
    return float(target_width)
