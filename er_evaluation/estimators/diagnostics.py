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

For the precision of a sample of true clusters reached by uniform record draws (and the
F-scores built on it) a third check compares two views of the same errors: the links of
records sitting as a minority in their predicted cluster, seen from the reviewed minority
records themselves and counted exactly by the reviewed entity that holds most of the
cluster (its host; :func:`host_view_value`). When a handful of giant predicted clusters
hold most links, a few of their foreign records carry a large part of the errors, and a
sample that drew too few of them gives an estimate too high with an interval too narrow:
the hosts' count then implies a precision outside the interval.

A design-based estimate is ``reliable`` when its value lies in the metric's range, a
standard error exists and the hosts' view agrees with its interval; otherwise ``reason``
says why and what to do (for the hosts' view: which predicted clusters to review whole,
and their cost in records). Measured: ``benchmarks/README.md``, "Interval coverage"
(``benchmarks/bench_coverage.py``).

Pair-label estimates (:mod:`er_evaluation.pairs`) use :func:`assess` and
:func:`concentration` too, and add their own diagnostic of the predicted non-matches no
draw searched (:mod:`er_evaluation.pairs._search`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from er_evaluation._take_all import take_all_advice
from er_evaluation.estimators.ratio import Column, FBeta, Linear, Ratio

__all__ = [
    "Diagnostics",
    "diagnose",
    "fit_concentration",
    "MIN_EFFECTIVE_UNITS",
    "TOP_UNITS",
    "assess",
    "bounded_estimator",
    "concentration",
    "effective_words",
    "event_columns",
]

MIN_EFFECTIVE_UNITS = 10.0
"""Effective number of sampled draws below which a pair-label estimate is flagged as not
reliable (:func:`assess` with ``min_effective``)."""

TOP_UNITS = 3
"""Number of largest draws whose share of a column's total :func:`concentration` reports."""

# relative size under which a value out of range is rounding noise, not a wrong population
_TOL = 1e-9


def effective_words(n_effective: float) -> str:
    """``n_effective`` as every front end says it (reliability reasons, the app, the
    report): with one decimal, and what it counts, so the figure in a message and the
    figure in a table's ``n_effective`` column read as one."""
    return f"worth {float(n_effective):,.1f} equally weighted units (n_effective)"


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


def fit_concentration(fit) -> tuple[float, float]:
    """``(n_eff, top_share)`` of a :class:`~er_evaluation.estimators.ratio.SmoothFit` over
    its draws (a unit drawn k times is k draws)."""
    reps = np.asarray(np.round(fit.multiplicity), dtype=np.int64)
    n_eff, share = concentration(np.repeat(fit.Y, reps, axis=0))
    return float(n_eff), float(share)


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


def diagnose(
    fit, ut, *, value: float, std_error: float, level: float, bounds, interval=None
) -> Diagnostics:
    """:class:`Diagnostics` of a design-based estimate from its fit and its
    :class:`~er_evaluation.estimators.units.UnitTable`: :func:`assess` (out of range, no
    standard error), then, for the precision of a sample of true clusters reached by
    uniform record draws (and the F-scores built on it), the hosts' view
    (:func:`host_view_value`): not reliable when the precision the hosts' count of foreign
    records implies lies outside the estimate's ``interval``."""
    n_eff, share = fit_concentration(fit)
    d = assess(
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
        bounded=bounded_estimator(fit.phi, fit.Y, fit.index),
        # no minimum of effective units here: applied to uniform record draws it fired on
        # 23.3% of n = 50 replicates (63-74% on singleton-heavy RLdata, whose intervals
        # cover 93-98%) and caught 324 more of 11,480 misses (bench_coverage, 400
        # replicates per cell): the score interval already widens for few units
        min_effective=None,
    )
    if not d.reliable or interval is None or not all(map(math.isfinite, interval)):
        return d
    alt = host_view_value(fit, ut)
    lo, hi = interval
    tol = _TOL * max(1.0, abs(value))
    if alt is None or lo - tol <= alt <= hi + tol:
        return d
    return Diagnostics(d.n_effective, d.top_share, False, host_view_reason(alt, ut))


def host_view_value(fit, ut) -> float | None:
    """The estimate with the minority links of the predicted clusters whose host was
    reviewed taken from the hosts' count instead of from the reviewed minority records;
    None when it does not apply (not a precision-type estimate of true clusters reached by
    uniform record draws, or a unit table without the host view).

    With uniform record draws the cluster-block precision ``P = B̄/Ā`` counts the links
    ``(|ĉ| - 1)/2`` of every record sitting as a minority in its predicted cluster ĉ
    (misattributed into it, or merged into a larger entity's cluster) only when such a
    record is drawn: in a heavy-tailed prediction a handful of them, in the giant
    clusters, carry a large part of the errors, and a sample that drew too few gives a
    precision too high with an interval too narrow. The entity holding more than half of
    ĉ (its host), when reviewed, counts ĉ's foreign records ``r`` exactly: their links
    total ``H = Σ_ĉ r (|ĉ| - 1)/2`` over the hosted clusters, against ``N m̄`` seen from the
    drawn minority records (``m̄`` the mean of ``minority_checked / p`` over the draws,
    ``Ā`` that of the links column, ``N Ā`` estimating |P|). The hosts' view gives

        P_host = (B̄/Ā) / (1 + H/|P| - m̄/Ā)

    (for an F-score, ``F(P_host, R̂)``). The two are estimates of one quantity; when
    ``P_host`` falls outside the interval the interval rests on too few of the rare
    records that carry the errors. Measured: ``benchmarks/README.md``, "Interval
    coverage"."""
    sample = ut.sample
    if (
        ut.unit_kind != "cluster"
        or sample.strata is not None
        or sample.weights != "cluster_size"
        or "minority_checked" not in ut.q
        or not ut.predicted_links
    ):
        return None
    phi, index = fit.phi, fit.index

    def precision(node) -> float | None:
        if not (isinstance(node, Ratio) and node.is_ratio()) or node.args[1].name != "P_links":
            return None
        b, a = fit.mean[index[node.args[0].name]], fit.mean[index["P_links"]]
        m = ut.q["minority_checked"] / ut.probability
        m_bar = float(fit.multiplicity @ m / fit.n)
        if a <= 0:
            return None
        return float(b / a / (1 + ut.host_minority / ut.predicted_links - m_bar / a))

    if isinstance(phi, FBeta):
        p = precision(phi.args[0])
        r_node = phi.args[1]
        if p is None or not (isinstance(r_node, Ratio) and r_node.is_ratio()):
            return None
        r = float(fit.mean[index[r_node.args[0].name]] / fit.mean[index[r_node.args[1].name]])
        b2 = phi.beta**2
        return (1 + b2) * p * r / (b2 * p + r) if b2 * p + r > 0 else None
    if isinstance(phi, Column):
        return None
    return precision(phi)


def host_view_reason(alt: float, ut, what: str = "the estimate") -> str:
    """The reason of a host-view flag, with the predicted clusters to review whole (the
    certainty units of :func:`~er_evaluation._take_all.take_all_advice` for a budget of
    twice the records this sample read, when the prediction's size histogram is known)."""
    advice = (
        "review the largest predicted clusters whole (er_evaluation.recommend."
        "recommend_design lists them)"
    )
    if ut.size_histogram is not None:
        # the certainty units of a precision wave reading twice the records of this sample
        budget = 2 * ut.n_records_used
        clusters, records, share = take_all_advice(*ut.size_histogram, budget)
        if clusters:
            advice = (
                f"review these {clusters:,} predicted clusters whole: {records:,} records "
                f"({share:.0%} of the predicted links; er_evaluation.recommend."
                f"recommend_design lists them)"
            )
    return (
        f"the reviewed entities that hold most of their predicted clusters count foreign "
        f"records there whose links the reviewed records under-represent: with the hosts' "
        f"count {what} would be {alt:.4g}, outside the interval, which rests on too few of "
        f"the rare records that carry the errors; {advice}"
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
    bounded: bool = True,
    min_effective: float | None = MIN_EFFECTIVE_UNITS,
) -> Diagnostics:
    """:class:`Diagnostics` of one estimate: ``reliable`` unless (in this order) the
    estimate is outside ``bounds``, no standard error exists, or (``min_effective``, the
    pair-label estimates' rule) the draws are too few or too concentrated
    (``n_effective < min_effective``). A census is exact and always reliable.
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
    if min_effective is not None and n_eff < min_effective:
        what = (
            "too few"
            if share < 0.5
            else f"too concentrated ({share:.0%} in the largest {TOP_UNITS})"
        )
        return out(
            False,
            f"{units}, {effective_words(n_eff)}: {what} for a "
            f"{level:.0%} interval; review at least {_more(n_draws, n_eff)} more",
        )
    return out(True)
