"""Change-focused comparison of two versions A and B of a disambiguation: a method of this
package, derived below.

A record is *changed* when its predicted cluster differs, as a set of records, between A
and B (:func:`~er_evaluation.designs.changed_records`). A true cluster c without a changed
record has the same f(c) (predicted links inside c) under A and B, so

    ΔTP = TP_B - TP_A = Σ_c (f_B(c) - f_A(c)) = Σ_{i changed} (f_B(c(i)) - f_A(c(i))) / k(c(i))

with k(c) = |c ∩ changed| (the difference of c shared among its changed records: a
generalised weight share, Lavallée 2007). A stratified sample of changed records alone
(:func:`~er_evaluation.designs.sample_changed`) therefore estimates ΔTP without bias
(stratified expansion, :mod:`~er_evaluation.estimators.stratified`). With |P_A| and |P_B|
known from the predictions, and TP_A and |T| (true links) from an existing benchmark of
the whole population (an independent sample; its covariance adds):

    P_B - P_A = ΔTP/|P_B| + TP_A (1/|P_B| - 1/|P_A|)
    R_B - R_A = ΔTP / |T|
    F_B - F_A = (1+β²)(TP_A + ΔTP)/(β²|T| + |P_B|) - (1+β²) TP_A/(β²|T| + |P_A|)

The benchmark's totals are ratio estimates to the known number of records N:
TP_A = N Σ(f/p)/Σ(|c|/p), |T| = N Σ(C(|c|,2)/p)/Σ(|c|/p) (exact expansion estimates for a
benchmark reached by uniform record sampling, where |c|/p is constant). The difference is
a smooth function of these estimates: bias-corrected at second order, variance by the
delta method on the block-diagonal covariance, normal interval. The precision difference
is linear in unbiased totals when the benchmark was reached by uniform record sampling,
hence unbiased; recall and F differences divide by the estimated |T| (unbiased when the
benchmark is a census, otherwise to second order).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.linalg import block_diag

from er_evaluation._coverage import check_on_missing
from er_evaluation._parameters import check_beta, check_level
from er_evaluation.designs import changed_records
from er_evaluation.errors import CoverageError, examples
from er_evaluation.estimators.intervals import interval
from er_evaluation.estimators.ratio import Column, Linear, Ratio, Smooth, smooth_estimate
from er_evaluation.estimators.results import Estimate
from er_evaluation.estimators.stratified import fit_from_moments, stratified_fit
from er_evaluation.estimators.units import unit_table
from er_evaluation.sampling import Sample

__all__ = ["compare_changed", "CHANGE_METRICS"]

CHANGE_METRICS = ("pairwise_precision", "pairwise_recall", "pairwise_f1", "pairwise_fbeta")


def _label(metric: str, beta: float) -> str:
    return f"pairwise_f{beta:g}" if metric in ("pairwise_f1", "pairwise_fbeta") else metric


def _change_total(a: pd.Series, b: pd.Series, changes: Sample, changed: pd.Series, on_missing: str):
    """Per-unit ΔTP share (f_B - f_A)/k(c) of the change sample and its stratified fit."""
    st = changes.strata
    if st is None or st.frame != "records" or changes.sample_of != "reference":
        raise ValueError(
            "the change sample must be a stratified sample of changed records "
            "(er_evaluation.designs.sample_changed or stratified_sample)"
        )
    n_changed = int(changed.sum())
    if int(st.frame_size.sum()) != n_changed:
        raise ValueError(
            f"the change sample's frame holds {int(st.frame_size.sum()):,} records but A and B "
            f"differ on {n_changed:,}: its frame must be exactly the changed records"
        )
    ut_a = unit_table(a, changes, on_missing=on_missing)
    ut_b = unit_table(b, changes, on_missing=on_missing)
    ref = changes.reference
    k = (
        pd.Series(changed.reindex(ref.index).to_numpy(), index=ref.index)
        .groupby(ref.to_numpy())
        .sum()
        .reindex(changes.units)
        .to_numpy(dtype=float)
    )
    if (k < 1).any():
        bad = changes.units[k < 1]
        raise CoverageError(
            f"{len(bad)} sampled true cluster(s) hold no changed record, so they cannot have "
            f"been reached from the changed records: {examples(bad)}"
        )
    d = (ut_b.q["tp"] - ut_a.q["tp"]) / k
    return stratified_fit(Column("d_tp"), {"d_tp": d}, changes, 1.0)


def _benchmark_moments(a: pd.Series, benchmark: Sample, on_missing: str):
    """Means and covariance of the benchmark's f/p, C(|c|,2)/p and |c|/p under A."""
    if benchmark.sample_of != "reference":
        raise ValueError("the benchmark must be a sample of true clusters (sample_of='reference')")
    ut = unit_table(a, benchmark, on_missing=on_missing)
    cols = {
        "b_tp": ut.weighted("tp"),
        "b_pairs": ut.weighted("pairs"),
        "b_size": ut.weighted("size"),
    }
    phi = Linear([1.0, 1.0, 1.0], [Column(c) for c in cols])
    if benchmark.strata is not None:
        fit = stratified_fit(phi, cols, benchmark, ut.n_records_population)
    else:
        fit = smooth_estimate(
            phi,
            cols,
            multiplicity=ut.multiplicity,
            population_size=benchmark.population_size,
            replace=benchmark.replace,
        )
    V = fit.theta / fit.n * fit.cov if fit.n > 1 else np.full_like(fit.cov, np.nan)
    return fit, V, ut.n_records_population


def _difference(metric: str, beta: float, N: int, links_a: int, links_b: int) -> Smooth:
    d = Column("d_tp")
    tp_a = Linear([N], [Ratio(Column("b_tp"), Column("b_size"))])
    true = Linear([N], [Ratio(Column("b_pairs"), Column("b_size"))])
    if metric == "pairwise_precision":
        return Linear([1.0 / links_b, 1.0 / links_b - 1.0 / links_a], [d, tp_a])
    if metric == "pairwise_recall":
        return Ratio(d, true)
    c, b2 = 1.0 + beta**2, beta**2
    new = Ratio(Linear([1.0, 1.0], [tp_a, d]), Linear([b2], [true], links_b))
    old = Ratio(tp_a, Linear([b2], [true], links_a))
    return Linear([c, -c], [new, old])


def compare_changed(
    a: pd.Series,
    b: pd.Series,
    changes: Sample,
    benchmark: Sample | None,
    metric: str = "pairwise_precision",
    *,
    beta: float = 1.0,
    level: float = 0.95,
    names: tuple[str, str] = ("B", "A"),
    on_missing: str = "error",
) -> Estimate:
    """Paired difference ``metric(B) - metric(A)`` from a sample of the records that changed
    between versions ``a`` and ``b`` plus an existing ``benchmark`` (formulas in
    the module docstring).

    ``a``, ``b``: full predictions of the same population. ``changes``: a stratified
    sample whose frame is exactly the changed records
    (:func:`~er_evaluation.designs.sample_changed`). ``benchmark``: an independent sample
    of true clusters of the whole population (e.g. the Binette 2022 PatentsView benchmark
    via :func:`~er_evaluation.sampling.benchmark_sample`), which supplies TP_A and |T|;
    ``None`` is allowed for the precision difference when |P_A| = |P_B| (it is then
    ΔTP/|P|). ``metric``: pairwise_precision, pairwise_recall, pairwise_f1 or
    pairwise_fbeta (with ``beta``). ``on_missing``: reviewed records absent from the
    predictions raise a :class:`CoverageError` ("error") or are dropped with a
    :class:`CoverageWarning` ("restrict"). Returns an :class:`Estimate` with a normal
    interval.
    """
    if metric not in CHANGE_METRICS:
        raise ValueError(
            f"unknown metric {metric!r} for a change-focused comparison; choose one of {CHANGE_METRICS}"
        )
    level, beta = check_level(level), check_beta(beta)
    on_missing = check_on_missing(on_missing)
    if metric == "pairwise_f1":
        beta = 1.0
    changed = changed_records(a, b)
    fit_d = _change_total(a, b, changes, changed, on_missing)
    codes_a = pd.factorize(a.to_numpy())[0]
    codes_b = pd.factorize(b.reindex(a.index).to_numpy())[0]
    size_a, size_b = np.bincount(codes_a), np.bincount(codes_b)
    links_a, links_b = (
        int((size_a * (size_a - 1) // 2).sum()),
        int((size_b * (size_b - 1) // 2).sum()),
    )
    if links_a == 0 or links_b == 0:
        raise ValueError("a version without predicted links has no pairwise precision to compare")
    if benchmark is None:
        if metric != "pairwise_precision" or links_a != links_b:
            raise ValueError(
                f"{metric} difference needs a benchmark of the whole population for TP_A and "
                "|T| (only the precision difference with |P_A| = |P_B| does not)"
            )
        phi = Linear([1.0 / links_b], [Column("d_tp")])
        mean, V, names_, n_b, records = (
            fit_d.mean,
            fit_d.theta / fit_d.n * fit_d.cov,
            ("d_tp",),
            0,
            pd.Index([]),
        )
        units_b = 0
    else:
        fit_b, V_b, N = _benchmark_moments(a, benchmark, on_missing)
        phi = _difference(metric, beta, N, links_a, links_b)
        mean = np.concatenate([fit_d.mean, fit_b.mean])
        V = block_diag(fit_d.theta / fit_d.n * fit_d.cov, V_b)
        names_ = ("d_tp", *fit_b.names)
        n_b, records, units_b = benchmark.n_draws, benchmark.reference.index, benchmark.n_units
    n = changes.n_draws + n_b
    fit = fit_from_moments(phi, mean, V, names_, n)
    lo, hi = (
        interval(fit, level, "normal", bounds=(-1.0, 1.0))
        if math.isfinite(fit.std_error)
        else (math.nan, math.nan)
    )
    return Estimate(
        metric=f"{_label(metric, beta)} difference",
        estimator="change",
        design="change-focused",
        value=float(fit.value),
        std_error=float(fit.std_error),
        ci_low=float(lo),
        ci_high=float(hi),
        level=level,
        ci_method="normal",
        n_units=changes.n_units + units_b,
        n_draws=n,
        n_records=len(changes.reference.index.union(records)),
        plugin=float(fit.plugin),
        prediction=f"{names[0]} - {names[1]}",
    )
