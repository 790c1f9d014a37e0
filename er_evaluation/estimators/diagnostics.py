"""Diagnostics of an estimate: is its sample large and spread enough for its interval?

A design-based estimate is a smooth function of means of per-unit columns (sampled true
clusters or blocks; :mod:`er_evaluation.estimators.ratio`). Its interval relies on those
means being near-normal, which fails when few units carry the columns' totals: few units
reviewed, or heavy-tailed units (a handful of giant clusters, or rare units with huge
outgoing links) that dominate the sums. Two numbers measure that, computed over the
``n`` draws (a unit drawn twice counts twice) of the per-draw matrix ``Y`` (n x k,
non-negative columns):

- **effective number of units** ``n_eff = min_j (Σ_s Y_sj)² / Σ_s Y_sj²`` over the columns
  with a non-zero total: Kish's (1965) effective sample size of a weighted mean, applied to
  each column's shares (a ratio ``B̄/Ā`` is the mean of the per-unit ratios weighted by
  ``A_s``, whose Kish size is ``(ΣA)²/ΣA²``). ``n_eff = n`` when every draw carries the same
  amount, ``1`` when one draw carries everything; ``0`` when no column has a non-zero total;
- **top share**: the largest share of a column's total carried by its ``TOP_UNITS``
  largest draws.

A third number is known before any review: for precision-type metrics (whose
denominator is the prediction's |P| links), the Kish size of the predicted links over the
predicted clusters, ``(Σ_ĉ L_ĉ)²/Σ_ĉ L_ĉ²`` with ``L_ĉ = C(|ĉ|, 2)``. When a handful of giant
predicted clusters hold most links, precision is essentially theirs, and a sample of
records (true clusters) rarely reaches the few records that make their false links: the
estimate and its SE are then too often both too optimistic, and no interval computed
from the sample alone holds its level (``benchmarks/README.md``, heavy-tailed truth).

An estimate is ``reliable`` when its value lies in the metric's range, a standard error
exists, ``n_eff >= MIN_EFFECTIVE_UNITS`` and the population is not so concentrated
(``>= MIN_POPULATION_UNITS``); otherwise ``reason`` says why and what to do. The
thresholds come from the coverage benchmark (``benchmarks/bench_coverage.py``).

Pair-label estimates (:mod:`er_evaluation.pairs`) use :func:`assess` and
:func:`concentration` too, and add their own diagnostic of the predicted non-matches no
draw searched (:mod:`er_evaluation.pairs._search`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from er_evaluation.estimators.ratio import Column, FBeta, Linear, Ratio

__all__ = [
    "Diagnostics",
    "diagnose",
    "fit_concentration",
    "MIN_EFFECTIVE_UNITS",
    "MIN_POPULATION_UNITS",
    "TOP_UNITS",
    "assess",
    "bounded_estimator",
    "concentration",
]

MIN_EFFECTIVE_UNITS = 10.0
"""Effective number of sampled units below which an estimate is flagged as not reliable."""

MIN_POPULATION_UNITS = 20.0
"""Effective number of population units carrying a known denominator (the predicted links
over predicted clusters, for precision) below which an estimate is flagged."""

TOP_UNITS = 3
"""Number of largest draws whose share of a column's total :func:`concentration` reports."""

# relative size under which a value out of range is rounding noise, not a wrong population
_TOL = 1e-9


@dataclass(frozen=True)
class Diagnostics:
    """How far an estimate's sample supports its interval (see the module docstring).

    ``n_effective``: effective number of units carrying the estimate (Kish); ``top_share``:
    share of the estimate's largest column total carried by its ``TOP_UNITS`` largest
    draws; ``reliable``: whether the interval can be trusted at its nominal level;
    ``reason``: empty when reliable, else why not and what to do.
    """

    n_effective: float
    top_share: float
    reliable: bool
    reason: str = ""


def event_concentration(Y: np.ndarray, phi, names) -> np.ndarray:
    """Effective number of units carrying each side of every plain ratio ``B/A`` of ``phi``
    (the correct part ``B`` and the errors ``A - B``): the smallest Kish size over those
    columns of ``Y`` (..., n, k); ``inf`` when ``phi`` has no such ratio. A ratio whose
    errors come from a handful of units has few "events", like a binomial proportion
    with few failures."""
    Y = np.asarray(Y, dtype=float)
    pairs = event_columns(phi, names)
    if not pairs:
        return np.full(Y.shape[:-2], np.inf)
    sides = [Y[..., b] for b, _ in pairs] + [Y[..., a] - Y[..., b] for b, a in pairs]
    return _kish(np.stack(sides, axis=-1)).min(axis=-1)


def _kish(Y: np.ndarray) -> np.ndarray:
    """Per-column Kish size ``(Σ y)²/Σ y²`` of ``Y`` (..., n, k); 0 for an all-zero column."""
    Y = np.abs(np.asarray(Y, dtype=float))
    s1, s2 = Y.sum(axis=-2), (Y * Y).sum(axis=-2)
    return np.where(s2 > 0, s1 * s1 / np.where(s2 > 0, s2, 1.0), 0.0)


def concentration(Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(n_eff, top_share)`` of the per-draw matrix ``Y`` of shape ``(..., n, k)``
    (vectorised over leading axes; see the module docstring for the formulas)."""
    Y = np.abs(np.asarray(Y, dtype=float))
    kish = _kish(Y)
    n_eff = np.where(kish > 0, kish, np.inf).min(axis=-1)
    n_eff = np.where(np.isfinite(n_eff), n_eff, 0.0)
    s1 = Y.sum(axis=-2)
    k = min(TOP_UNITS, Y.shape[-2])
    top = np.sort(Y, axis=-2)[..., -k:, :].sum(axis=-2)
    share = np.where(s1 > 0, top / np.where(s1 > 0, s1, 1.0), 0.0).max(axis=-1)
    return n_eff, share


def event_columns(phi, names) -> list[tuple[int, int]]:
    """``(numerator, denominator)`` column positions of every plain ratio of two columns in
    ``phi`` (``B/A`` with ``0 <= B <= A`` per unit for precision and recall: ``B`` carries the
    correct part, ``A - B`` the errors)."""
    index = {c: i for i, c in enumerate(names)}
    found: list[tuple[int, int]] = []

    def walk(node) -> None:
        if isinstance(node, Ratio) and all(isinstance(a, Column) for a in node.args):
            found.append((index[node.args[0].name], index[node.args[1].name]))
        for a in getattr(node, "args", ()):
            walk(a)

    walk(phi)
    return found


def fit_concentration(fit) -> tuple[float, float, float]:
    """``(n_eff, n_events, top_share)`` of a :class:`~er_evaluation.estimators.ratio.SmoothFit`
    over its draws (a unit drawn k times is k draws)."""
    reps = np.asarray(np.round(fit.multiplicity), dtype=np.int64)
    Y = np.repeat(fit.Y, reps, axis=0)
    n_eff, share = concentration(Y)
    n_events = event_concentration(Y, fit.phi, fit.names)
    return float(n_eff), float(n_events), float(share)


# columns whose estimator divides by, or estimates, the prediction's |P| links
_LINK_COLUMNS = frozenset({"P_links", "Pc_tp", "Pr_z"})

NAIVE_REASON = (
    "the naive estimator is the metric on the reviewed records alone: a biased baseline "
    "without standard error or interval"
)


def bounded_estimator(phi, Y: np.ndarray, index) -> bool:
    """Whether ``phi`` stays in its range on any sample: a ratio ``B/A`` with
    ``0 <= B <= A`` on every sampled unit, an F-score of two such ratios, or the difference
    of two bounded estimates (a scaled ratio, e.g. the cluster precision, is not)."""
    if isinstance(phi, Ratio) and all(isinstance(a, Column) for a in phi.args):
        b, a = (Y[:, index[c.name]] for c in phi.args)
        return bool(np.all((b >= 0) & (b <= a * (1 + _TOL) + _TOL)))
    if isinstance(phi, FBeta):
        return all(bounded_estimator(a, Y, index) for a in phi.args)
    if isinstance(phi, Linear) and phi.coefs == (1.0, -1.0) and phi.const == 0.0:
        return all(bounded_estimator(a, Y, index) for a in phi.args)
    return False


def diagnose(fit, ut, *, value: float, std_error: float, level: float, bounds) -> Diagnostics:
    """:class:`Diagnostics` of an estimate from its fit and its
    :class:`~er_evaluation.estimators.units.UnitTable` (see :func:`assess`); the population
    concentration applies to metrics built on the prediction's links (pairwise precision,
    F-scores and their differences)."""
    n_eff, _, share = fit_concentration(fit)
    # a paired difference holds its coverage on a concentrated population (the same rare
    # units move both estimates): the population flag is for single estimates
    single = not (isinstance(fit.phi, Linear) and len(fit.phi.args) == 2)
    uses_links = single and any(c.rsplit(":", 1)[-1] in _LINK_COLUMNS for c in fit.names)
    bounded = bounded_estimator(fit.phi, fit.Y, fit.index)
    return assess(
        value,
        std_error,
        n_effective=n_eff,
        top_share=share,
        n_units=ut.sample.n_units,
        n_draws=ut.sample.n_draws,
        level=level,
        bounds=bounds,
        census=fit.theta == 0,
        unit="block" if ut.unit_kind == "block" else "cluster",
        population_units=ut.links_effective if uses_links else None,
        bounded=bounded,
    )


def _more(n_draws: int, n_eff: float) -> int:
    """Draws to add so that n_eff (which grows in proportion to n) reaches the threshold."""
    if n_eff <= 0:
        return max(int(MIN_EFFECTIVE_UNITS), 1)
    return max(1, math.ceil(n_draws * (MIN_EFFECTIVE_UNITS / n_eff - 1)))


def assess(
    value: float,
    std_error: float,
    *,
    n_effective: float,
    top_share: float,
    n_units: int,
    n_draws: int,
    level: float,
    bounds: tuple[float, float] | None = (0.0, 1.0),
    census: bool = False,
    unit: str = "unit",
    population_units: float | None = None,
    bounded: bool = True,
) -> Diagnostics:
    """:class:`Diagnostics` of one estimate: ``reliable`` unless (in this order) the
    estimate is outside ``bounds`` (the prediction's population is not the one the sample
    was drawn from), no standard error exists, the known denominator is carried by fewer
    than ``MIN_POPULATION_UNITS`` effective population units (``population_units``, None
    when not applicable), or the sample is too small or too concentrated
    (``n_effective < MIN_EFFECTIVE_UNITS``). A census is exact and always reliable.
    ``unit`` names the sampled units in the reason ("cluster", "block"); ``bounded``: the
    estimator's units satisfy ``0 <= B <= A`` (a ratio ``B/A`` of them, an F-score or a
    difference of such ratios), so its plug-in value stays within ``bounds`` and only the
    second-order bias correction can take it out, on a sample of very few draws (the
    estimate is then reported at the nearest bound); an unbounded estimator out of range
    points at the wrong population or at its own sampling noise."""
    units = f"{n_units} reviewed {unit}{'s' if n_units != 1 else ''}"
    n_eff, share = float(n_effective), float(top_share)

    def out(reliable: bool, reason: str = "") -> Diagnostics:
        return Diagnostics(n_eff, share, reliable, reason)

    if bounds is not None and math.isfinite(value):
        lo, hi = bounds
        tol = _TOL * max(1.0, abs(hi - lo))
        if value < lo - tol or value > hi + tol:
            if bounded:
                # 0 <= B <= A on every unit keeps the plug-in ratio inside: only the
                # second-order correction can take it out, and only on a tiny sample
                return out(
                    False,
                    f"with {n_draws} draws the second-order bias correction (Binette et al. "
                    f"2023, eq. 8) moves the estimate to {value:.4g}, outside [{lo:g}, "
                    f"{hi:g}]; it is reported at the nearest bound. The correction needs "
                    f"more units: review at least {_more(n_draws, n_eff)} more",
                )
            why = (
                "either the population passed is not the one the sample was drawn from "
                "(e.g. a version lacking some reviewed records, or the wrong prediction; "
                "pass that population, or restrict the sample to this one first, "
                "on_missing='restrict_sample'), or sampling noise of this estimator, which "
                "is not bounded by construction (review more units, or use a bounded "
                "estimator such as the cluster-block precision)"
            )
            return out(False, f"estimate {value:.4g} is outside [{lo:g}, {hi:g}]: {why}")
    if census:
        return out(True)
    if not math.isfinite(std_error):
        return out(
            False,
            f"{units}: no standard error can be estimated; review at least "
            f"{_more(n_draws, n_eff)} more",
        )
    if population_units is not None and population_units < MIN_POPULATION_UNITS:
        return out(
            False,
            f"the prediction's links are concentrated in a few predicted clusters "
            f"({population_units:.1f} effective): precision rests on the rare reviewed "
            f"records that reach them, and sample-based intervals under-cover; review the "
            f"largest predicted clusters completely (a take-all stratum)",
        )
    if n_eff < MIN_EFFECTIVE_UNITS:
        what = (
            "too few"
            if share < 0.5
            else f"too concentrated ({share:.0%} in the largest {TOP_UNITS})"
        )
        return out(
            False,
            f"{units} ({n_eff:.1f} effective): {what} for a {level:.0%} interval; review at "
            f"least {_more(n_draws, n_eff)} more",
        )
    return out(True)
