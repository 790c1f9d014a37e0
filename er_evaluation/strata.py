"""The stratification a :class:`~er_evaluation.sampling.Sample` was drawn under.

A stratified design partitions a sampling frame (records, or clusters) into strata and
draws ``n_h`` frame units in stratum ``h`` of ``F_h`` units (Cochran 1977, §5). Every draw reveals
one sampled unit (a true cluster); a unit may be reached from several strata (a true
cluster whose records fall in several strata), so the draws are kept as *draw groups*:
one row per (sampled unit, stratum) with its number of draws. :class:`Strata` holds the
per-stratum frame sizes ``F_h``, draw counts ``n_h`` and the draw groups; the estimators
of :mod:`er_evaluation.estimators.stratified` need nothing else.

Selection probabilities: a frame unit of stratum ``h`` is drawn ``n_h / F_h`` times in
expectation (its inclusion probability under simple random sampling without
replacement); a *take-all* stratum (``n_h = F_h`` without replacement) is a census of its
units and contributes its totals exactly, with no variance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from er_evaluation.errors import examples

__all__ = ["Strata", "FRAMES", "RATIOS"]

FRAMES = ("records", "clusters")
"""What the strata partition: records (each draw reveals the record's true cluster; the
cluster's totals are shared among its records, Lavallée's weight share) or clusters (the
sampled units themselves: true clusters, predicted clusters or blocks)."""

RATIOS = ("combined", "separate")
"""How the stratified estimators treat a ratio of means (Cochran 1977, §6.10-6.11): one
ratio of the stratified totals (combined), or one ratio per stratum weighted by the
stratum's known share of the denominator (separate); see
:mod:`er_evaluation.estimators.stratified`."""


@dataclass(frozen=True, eq=False)
class Strata:
    """Strata of a sample's frame and the sample's draws in each of them.

    ``names``: stratum labels; ``frame_size[h]`` (F_h): frame units (records or clusters)
    in stratum h; ``n_draws[h]`` (n_h): draws made in stratum h; ``replace``: draws with
    replacement (else simple random sampling without replacement within each stratum);
    ``frame``: "records" or "clusters" (see :data:`FRAMES`). Draw groups, one row per
    (sampled unit, stratum) pair: ``row_unit`` (position in the sample's ``units``),
    ``row_stratum`` (position in ``names``) and ``row_count`` (draws; their sum over a
    stratum's rows is ``n_draws[h]``). ``row_factor`` (optional, records frame): per draw
    group, the factor applied to the unit's even weight share 1/|c| (a union of waves
    uses it for its pooled probabilities, :mod:`er_evaluation.waves`); ``None``: the
    estimators' default share. ``ratio``: "combined" (default) or "separate" (see
    :data:`RATIOS`). ``unit_records`` and ``unit_pairs`` (clusters frame, optional): per
    stratum, the records Σ|u| and within-unit pairs Σ C(|u|,2) of ALL its frame units,
    known from the frame; the separate ratio estimator needs them as the strata's
    denominator totals.
    """

    names: pd.Index
    frame_size: np.ndarray
    n_draws: np.ndarray
    replace: bool
    frame: str
    row_unit: np.ndarray
    row_stratum: np.ndarray
    row_count: np.ndarray
    row_factor: np.ndarray | None = None
    ratio: str = "combined"
    unit_records: np.ndarray | None = None
    unit_pairs: np.ndarray | None = None

    def __post_init__(self) -> None:
        H = len(self.names)
        if self.ratio not in RATIOS:
            raise ValueError(f"ratio must be one of {RATIOS}, got {self.ratio!r}")
        for name in ("unit_records", "unit_pairs"):
            totals = getattr(self, name)
            if totals is None:
                continue
            if self.frame != "clusters":
                raise ValueError(f"{name} describes the units of a clusters frame")
            totals = np.asarray(totals, dtype=float)
            if totals.shape != (H,) or not np.isfinite(totals).all() or (totals < 0).any():
                raise ValueError(f"{name} needs one finite, non-negative total per stratum")
            object.__setattr__(self, name, totals)
        if H == 0:
            raise ValueError("a stratified sample needs at least one stratum")
        if not self.names.is_unique:
            raise ValueError(
                f"duplicated stratum names: {examples(self.names[self.names.duplicated()])}"
            )
        if self.frame not in FRAMES:
            raise ValueError(f"frame must be one of {FRAMES}, got {self.frame!r}")
        for name in ("frame_size", "n_draws", "row_unit", "row_stratum", "row_count"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=np.int64))
        if len(self.frame_size) != H or len(self.n_draws) != H:
            raise ValueError("frame_size and n_draws need one value per stratum")
        if not len(self.row_unit) == len(self.row_stratum) == len(self.row_count):
            raise ValueError("row_unit, row_stratum and row_count must have the same length")
        if self.row_factor is not None:
            factor = np.asarray(self.row_factor, dtype=float)
            if (
                len(factor) != len(self.row_unit)
                or not np.isfinite(factor).all()
                or (factor < 0).any()
            ):
                raise ValueError("row_factor needs one finite, non-negative value per draw group")
            object.__setattr__(self, "row_factor", factor)
        if (self.row_count < 1).any():
            raise ValueError("every draw group must hold at least one draw")
        if ((self.row_stratum < 0) | (self.row_stratum >= H)).any():
            raise ValueError("row_stratum holds positions outside the strata")
        if (self.frame_size < 1).any():
            bad = self.names[self.frame_size < 1]
            raise ValueError(f"empty stratum (no frame unit): {examples(bad)}")
        counted = np.bincount(self.row_stratum, weights=self.row_count, minlength=H)
        if not np.array_equal(counted.astype(np.int64), self.n_draws):
            raise ValueError("n_draws must equal the draws of each stratum's draw groups")
        empty = self.n_draws < 1
        if empty.any():
            # a stratum without draws leaves its part of every total unestimated: refuse
            # rather than return an estimate of a smaller population
            raise ValueError(
                f"{int(empty.sum())} stratum/strata have no draw, so their part of the "
                f"population cannot be estimated: {examples(self.names[empty])}"
            )
        if not self.replace and (self.n_draws > self.frame_size).any():
            bad = self.names[self.n_draws > self.frame_size]
            raise ValueError(
                f"more draws than frame units without replacement in stratum/strata {examples(bad)}"
            )

    @property
    def selection_probability(self) -> np.ndarray:
        """Expected draws per frame unit of each stratum, ``n_h / F_h`` (the inclusion
        probability of a frame unit under sampling without replacement)."""
        return self.n_draws / self.frame_size

    @property
    def take_all(self) -> np.ndarray:
        """Strata sampled entirely (``n_h = F_h`` without replacement)."""
        return (~np.bool_(self.replace)) & (self.n_draws == self.frame_size)

    @property
    def fpc(self) -> np.ndarray:
        """Finite-population correction ``1 - n_h / F_h`` per stratum (1 with
        replacement); zero for take-all strata."""
        if self.replace:
            return np.ones(len(self.names))
        return 1.0 - self.n_draws / self.frame_size

    def table(self) -> pd.DataFrame:
        """One row per stratum: frame size, draws, selection probability, take-all."""
        return pd.DataFrame(
            {
                "stratum": self.names,
                "frame_size": self.frame_size,
                "draws": self.n_draws,
                "selection_probability": self.selection_probability,
                "take_all": self.take_all,
            }
        )
