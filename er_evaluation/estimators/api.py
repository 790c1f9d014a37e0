"""The entry points: :func:`estimate`, :func:`estimate_table` and :func:`compare`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

import pandas as pd

from er_evaluation._coverage import drop_missing
from er_evaluation._parameters import check_beta, check_choice, check_flag, check_seed
from er_evaluation._progress import progress
from er_evaluation.engines import as_table
from er_evaluation.engines._kernel import engine_records
from er_evaluation.errors import CoverageError, examples
from er_evaluation.estimators._metric_fit import (
    fit,
    metric_function,
    result_label,
    to_estimate,
)
from er_evaluation.estimators.intervals import N_BOOT, check_interval_options
from er_evaluation.estimators.paired import paired_difference
from er_evaluation.estimators.restrict import restrict_sample
from er_evaluation.estimators.results import Estimate, estimates_frame
from er_evaluation.estimators.stratified import stratum_table
from er_evaluation.estimators.units import UnitTable, unit_table
from er_evaluation.sampling import Sample
from er_evaluation.vocabulary import (
    ESTIMATOR_METRICS,
    FBETA,
    PREDICTED_SAMPLE_DUALS,
    REGISTRY,
    check_estimable,
    check_metric_names,
    parse_fscore,
)

__all__ = [
    "ON_MISSING",
    "estimate",
    "estimate_table",
    "compare",
    "estimate_from_units",
    "stratum_contributions",
]


#: what an estimate does with reviewed records absent from the prediction (see
#: :func:`estimate`)
ON_MISSING = ("error", "restrict", "restrict_sample")


def _check_options(*, level, ci_method, beta, n_boot, seed) -> dict:
    """The interval and F-measure options of every estimate entry point, checked once at
    its door (each error names its parameter); the checked values travel down."""
    level, ci_method, n_boot = check_interval_options(level, ci_method, n_boot)
    return {
        "level": level,
        "ci_method": ci_method,
        "beta": check_beta(beta),
        "n_boot": n_boot,
        "seed": check_seed(seed),
    }


def _check_population_options(on_missing, validate) -> tuple[str, bool]:
    return check_choice(on_missing, "on_missing", ON_MISSING), check_flag(validate, "validate")


def _check_baseline(names: list[str], baseline, caller: str) -> str:
    """The baseline of a paired comparison of the predictions ``names``: the first one
    unless named; at least two predictions are needed."""
    if len(names) < 2:
        raise ValueError(f"{caller} needs at least two predictions")
    baseline = names[0] if baseline is None else str(baseline)
    if baseline not in names:
        raise ValueError(f"baseline {baseline!r} is not one of the predictions {names}")
    return baseline


def estimate_from_units(
    ut: UnitTable,
    metric: str = "pairwise_precision",
    *,
    estimator: str | None = None,
    level: float = 0.95,
    ci_method: str | None = None,
    beta: float = 1.0,
    name: str | None = None,
    n_boot: int = N_BOOT,
    seed=0,
) -> Estimate:
    """:func:`estimate` on precomputed per-unit quantities (one :func:`unit_table` per
    prediction serves every metric)."""
    options = _check_options(level=level, ci_method=ci_method, beta=beta, n_boot=n_boot, seed=seed)
    return _from_units(ut, metric, estimator=estimator, name=name, **options)


def _from_units(
    ut: UnitTable,
    metric: str,
    *,
    estimator: str | None,
    level: float,
    ci_method: str | None,
    beta: float,
    name: str | None,
    n_boot: int,
    seed,
) -> Estimate:
    """:func:`estimate_from_units` of checked options."""
    est, phi, cols = metric_function(ut, metric, estimator, beta)
    naive = est == "naive"
    return to_estimate(
        fit(ut, phi, cols, naive=naive),
        ut,
        metric=result_label(metric, beta),
        estimator=est,
        level=level,
        ci_method=ci_method,
        naive=naive,
        name=name,
        n_boot=n_boot,
        seed=seed,
    )


def _dual_units(
    prediction: pd.Series, sample: Sample, on_missing: str, validate: bool
) -> UnitTable:
    """Samples of predicted clusters: swap roles (the reviewed true labels play the
    prediction, the sampled predicted clusters the reference)."""
    ref = sample.reference
    pos = prediction.index.get_indexer(ref.index)
    absent = pos < 0
    dropped = drop_missing(
        ref.index[absent],
        side="reviewed",
        other="prediction",
        on_missing=on_missing,
        total=len(ref),
    )
    if len(dropped):
        ref, pos = ref[~absent], pos[~absent]
    pred_of = pd.Series(prediction.to_numpy()[pos], index=ref.index)
    sampled = prediction[prediction.isin(sample.units)]
    full = sampled.value_counts(sort=False)
    seen = pred_of.value_counts(sort=False).reindex(full.index, fill_value=0)
    incomplete = full.index[(seen != full).to_numpy()]
    if len(incomplete):
        raise CoverageError(
            f"a sample of predicted clusters must review every record of each sampled cluster; "
            f"{len(incomplete)} cluster(s) are incomplete: {examples(incomplete)}"
        )
    swapped = Sample(
        reference=pred_of,
        units=sample.units,
        multiplicity=sample.multiplicity,
        probability=sample.probability,
        design=sample.design,
        weights=sample.weights,
        replace=sample.replace,
        population_size=sample.population_size,
        strata=sample.strata,
    )
    ut = unit_table(ref, swapped, on_missing="error", validate=validate, check_population=False)
    return replace(ut, dropped_ids=dropped, naive=replace(ut.naive, dropped_ids=dropped))


def _units(prediction, sample, on_missing, validate) -> UnitTable:
    if on_missing == "restrict_sample":
        if sample.sample_of == "predicted":
            raise ValueError(
                "on_missing='restrict_sample' applies to samples of true clusters or blocks; "
                "use on_missing='restrict' for samples of predicted clusters"
            )
        # every reviewed record is now in the prediction: "restrict" drops nothing and
        # accepts that the prediction is another population than the sample's frame
        sample, on_missing = restrict_sample(sample, prediction), "restrict"
    if sample.sample_of == "predicted":
        table = as_table(prediction, "prediction")
        if table is not None:  # the duality needs only the sampled and reviewed records
            prediction = engine_records(table, sample.reference, sample.units, validate=validate)
        return _dual_units(prediction, sample, on_missing, validate)
    return unit_table(prediction, sample, on_missing=on_missing, validate=validate)


def _fscore_of(metric: str, options: dict) -> tuple[str, dict]:
    """An F-score named by its result name (``pairwise_f2``) as :data:`FBETA` with its beta
    in ``options``; any other metric unchanged. A ``beta`` that contradicts the name is an
    error."""
    parts = parse_fscore(metric)
    if parts is None or metric in REGISTRY or parts[0] != "pairwise":
        return metric, options
    if options["beta"] not in (1.0, parts[1]):
        raise ValueError(
            f"metric {metric!r} is the F-score with beta={parts[1]:g}, but beta="
            f"{options['beta']:g} was given; give one of them"
        )
    return FBETA, {**options, "beta": parts[1]}


def _metric_for(sample: Sample, metric: str) -> str:
    """The metric to compute on ``sample``'s unit table: ``metric``, or for a sample of
    predicted clusters its dual (:data:`~er_evaluation.vocabulary.PREDICTED_SAMPLE_DUALS`)."""
    check_estimable(metric, sample.sample_of)
    return PREDICTED_SAMPLE_DUALS[metric] if sample.sample_of == "predicted" else metric


def estimate(
    prediction: pd.Series,
    sample: Sample,
    metric: str = "pairwise_precision",
    *,
    estimator: str | None = None,
    level: float = 0.95,
    ci_method: str | None = None,
    on_missing: str = "error",
    beta: float = 1.0,
    name: str | None = None,
    n_boot: int = N_BOOT,
    seed=0,
    validate: bool = True,
) -> Estimate:
    """Design-based estimate of ``metric`` for the full ``prediction`` from a reviewed
    ``sample`` (Binette et al. 2023 §2.3, appendix A.2), with standard error and CI.

    ``prediction``: membership Series of the WHOLE population (N, |P| and the number of
    predicted clusters are taken from it; never from the sample). Every sampled record must
    be in it: ``on_missing="error"`` raises :class:`CoverageError` naming the missing ids,
    ``on_missing="restrict"`` drops them with a :class:`CoverageWarning` saying how many
    (each sampled unit keeps its selection probability as drawn), ``on_missing=
    "restrict_sample"`` first restricts the sample to the prediction's records, with
    size-proportional probabilities from the restricted sizes (the convention of
    er-evaluation and of the published PatentsView figures; see
    :mod:`er_evaluation.estimators.restrict`).

    ``sample``: a :class:`~er_evaluation.sampling.Sample` (its per-unit selection
    probabilities, multiplicities and design are used; no other design argument).

    ``metric``: a name of :data:`er_evaluation.vocabulary.ESTIMABLE` ("pairwise_precision",
    "pairwise_recall", "pairwise_f1", "cluster_precision", "cluster_recall", "cluster_f1",
    "bcubed_precision", "bcubed_recall", "bcubed_f1", "homogeneity", "completeness",
    "v_measure") or "pairwise_fbeta" (with ``beta``; the result is labelled
    :func:`~er_evaluation.vocabulary.fscore_name`, e.g. "pairwise_f2", a name also
    accepted here for ``"pairwise_fbeta"`` with its beta).

    ``estimator``: None for the recommended one ("cluster_block" precision and "record"
    recall for cluster samples reached by uniform record sampling, "cluster" recall for
    other cluster probabilities, "block" for block samples; "cluster" for cluster-level
    metrics), or "record", "cluster", "cluster_block", "block", "naive" (the metric on the
    reviewed records alone: biased, no variance). F-scores accept "P_EST+R_EST".

    ``level`` and ``ci_method`` (a key of
    :data:`~er_evaluation.estimators.intervals.CI_METHODS`: "auto", "normal", "logit",
    "fieller", "fieller_t", "percentile", "studentized", "bca", "jackknife"; None =
    :data:`~er_evaluation.estimators.intervals.DEFAULT_CI_METHOD`, "auto": Fieller for
    ratio estimators, studentized bootstrap otherwise) choose the interval; bootstrap
    intervals use ``n_boot`` replicates and ``seed``. ``validate=False`` skips the
    membership validation (for repeated calls on already validated data). Samples of
    predicted clusters (``sample.sample_of == "predicted"``) estimate precision-type
    metrics by duality. Returns an :class:`Estimate`.
    """
    options = _check_options(level=level, ci_method=ci_method, beta=beta, n_boot=n_boot, seed=seed)
    on_missing, validate = _check_population_options(on_missing, validate)
    metric, options = _fscore_of(metric, options)
    ut = _units(prediction, sample, on_missing, validate)
    return _estimate_units(ut, sample, metric, estimator=estimator, name=name, **options)


def estimate_table(
    predictions: Mapping[str, pd.Series],
    sample: Sample,
    metrics: Iterable[str] = ("pairwise_precision", "pairwise_recall", "pairwise_f1"),
    *,
    level: float = 0.95,
    ci_method: str | None = None,
    on_missing: str = "error",
    estimator: str | None = None,
    beta: float = 1.0,
    n_boot: int = N_BOOT,
    seed=0,
    validate: bool = True,
) -> pd.DataFrame:
    """Tidy DataFrame of estimates, one row per (prediction, metric), columns as the
    :class:`Estimate` fields. One contingency per prediction serves all metrics. Each
    prediction must be a full population (see :func:`estimate`); with PatentsView
    versions, whose populations differ, use ``on_missing="restrict"``."""
    names = check_metric_names(
        metrics, ESTIMATOR_METRICS, what="estimable metric", fscores=("pairwise",)
    )
    options = _check_options(level=level, ci_method=ci_method, beta=beta, n_boot=n_boot, seed=seed)
    metrics = [_fscore_of(metric, options) for metric in names]
    on_missing, validate = _check_population_options(on_missing, validate)
    rows = []
    bar = progress(predictions.items(), "estimates", total=len(predictions), unit="prediction")
    for name, prediction in bar:
        ut = _units(prediction, sample, on_missing, validate)
        for metric, chosen in metrics:
            rows.append(
                _estimate_units(ut, sample, metric, estimator=estimator, name=str(name), **chosen)
            )
    return estimates_frame(rows)


def _estimate_units(ut: UnitTable, sample: Sample, metric: str, **options) -> Estimate:
    """:func:`estimate_from_units` of ``metric`` on one prediction's unit table; a sample
    of predicted clusters estimates the dual metric, reported under the asked name."""
    e = _from_units(ut, _metric_for(sample, metric), **options)
    if sample.sample_of == "predicted":
        return replace(e, metric=result_label(metric, options["beta"]))
    return e


def compare(
    predictions: Mapping[str, pd.Series],
    sample: Sample,
    metric: str = "pairwise_precision",
    *,
    baseline: str | None = None,
    estimator: str | None = None,
    level: float = 0.95,
    ci_method: str | None = None,
    on_missing: str = "error",
    beta: float = 1.0,
    n_boot: int = N_BOOT,
    seed=0,
    validate: bool = True,
) -> pd.DataFrame:
    """Paired comparison of predictions on the same sample: ``metric(other) -
    metric(baseline)`` for every other prediction, with its own standard error and CI
    from the per-unit linearised differences (joint delta method on the stacked per-unit
    matrices), not by combining two error bars.

    ``baseline`` defaults to the first prediction. Returns the table of estimates
    (:func:`~er_evaluation.estimators.results.estimates_frame`) with one row per
    difference, whatever their number: metric ``"<metric> difference"``, prediction
    ``"<other> - <baseline>"`` (one difference: ``compare(...).iloc[0]``).
    """
    names = [str(k) for k in predictions]
    baseline = _check_baseline(names, baseline, "compare")
    options = _check_options(level=level, ci_method=ci_method, beta=beta, n_boot=n_boot, seed=seed)
    metric, options = _fscore_of(metric, options)
    on_missing, validate = _check_population_options(on_missing, validate)
    m = _metric_for(sample, metric)
    uts = {str(k): _units(p, sample, on_missing, validate) for k, p in predictions.items()}
    out = []
    for name in names:
        if name == baseline:
            continue
        e = paired_difference(
            uts[name], uts[baseline], m, estimator=estimator, names=(name, baseline), **options
        )
        out.append(replace(e, metric=f"{result_label(metric, options['beta'])} difference"))
    return estimates_frame(out)


def stratum_contributions(
    prediction: pd.Series,
    sample: Sample,
    metric: str = "pairwise_precision",
    *,
    estimator: str | None = None,
    on_missing: str = "error",
) -> pd.DataFrame:
    """Per-stratum parts of the estimate of ``metric`` for ``prediction`` from a
    stratified ``sample`` (:func:`~er_evaluation.estimators.stratified.stratum_table`):
    frame size, draws, selection probability, take-all flag, the metric on the stratum
    alone and its share of the variance."""
    if sample.strata is None:
        raise ValueError("per-stratum contributions need a stratified sample")
    on_missing, _ = _check_population_options(on_missing, True)
    ut = _units(prediction, sample, on_missing, True)
    _, phi, cols = metric_function(ut, _metric_for(sample, metric), estimator, 1.0)
    return stratum_table(fit(ut, phi, cols, naive=False))
