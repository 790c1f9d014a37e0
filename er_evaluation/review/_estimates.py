"""What a project's reviewed sample estimates, and the estimates themselves: one set of
rules for the app's Estimates page and ``er-eval review estimate``."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from er_evaluation.errors import CoverageWarning
from er_evaluation.estimators import estimate_table
from er_evaluation.estimators.change import compare_changed
from er_evaluation.estimators.results import Estimate
from er_evaluation.recommend import DesignSample
from er_evaluation.review._model import ReviewError
from er_evaluation.review._settings import SampleSettings
from er_evaluation.sampling import Sample, benchmark_sample
from er_evaluation.vocabulary import estimable_metrics

DEFAULT_METRICS = ("pairwise_precision", "pairwise_recall", "pairwise_f1")


@dataclass(frozen=True)
class Estimable:
    """What a reviewed sample can estimate: ``versions`` and ``metrics``, and ``note``,
    a sentence saying why it is restricted (None when every version and metric is)."""

    versions: tuple[str, ...]
    metrics: tuple[str, ...]
    note: str | None = None


def estimable(
    settings: SampleSettings, sample: Sample | DesignSample, versions: Sequence[str]
) -> Estimable:
    """The versions and metrics ``sample`` estimates: a sample of predicted clusters, the
    precision of the version it was drawn from; a sample of changed records, the
    differences between its two versions; the recommended design, precision, recall and
    F1 of the version it was drawn from; any other, every version and metric."""
    if isinstance(sample, DesignSample):
        return Estimable(
            (settings.version,),
            DEFAULT_METRICS,
            f"The recommended design's predicted clusters were drawn from version "
            f"{settings.version}: it estimates that version only.",
        )
    if settings.design == "change":
        return Estimable(
            (settings.version, settings.other_version),
            DEFAULT_METRICS,
            f"A sample of changed records estimates the difference {settings.other_version} "
            f"− {settings.version} only.",
        )
    if sample.sample_of == "predicted":
        # whole predicted clusters reveal the precision of the version they were drawn
        # from only (by duality: vocabulary.estimable_metrics)
        return Estimable(
            (settings.version,),
            estimable_metrics("predicted", DEFAULT_METRICS),
            f"A sample of predicted clusters estimates the precision of the version it was "
            f"drawn from ({settings.version}) only.",
        )
    return Estimable(tuple(versions), DEFAULT_METRICS)


def checked_choice(
    allowed: Estimable, versions: Iterable[str] | None, metrics: Iterable[str] | None
) -> tuple[list[str], list[str]]:
    """``versions`` and ``metrics`` (default: all allowed), refused in one sentence when
    the sample cannot estimate one of them."""
    versions = list(versions) if versions else list(allowed.versions)
    metrics = list(metrics) if metrics else list(allowed.metrics)
    bad = [v for v in versions if v not in allowed.versions]
    if bad:
        raise ReviewError(
            f"version(s) {bad} cannot be estimated from this sample; use {list(allowed.versions)}"
            + (f" ({allowed.note})" if allowed.note else "")
        )
    if allowed.metrics != DEFAULT_METRICS:
        bad = [m for m in metrics if m not in allowed.metrics]
        if bad:
            raise ReviewError(f"metric(s) {bad} cannot be estimated: {allowed.note}")
    return versions, metrics


def version_estimates(
    predictions: Mapping[str, pd.Series],
    sample: Sample | DesignSample,
    versions: Sequence[str],
    metrics: Sequence[str],
) -> pd.DataFrame:
    """:func:`~er_evaluation.estimators.estimate_table` of ``versions`` on the reviewed
    sample (the library's defaults: level 0.95, the recommended estimators and
    intervals, bootstrap seed 0; the same numbers as ``er-eval estimate`` on the
    exported benchmark). Each version has its own population (PatentsView's later
    versions hold later patents): reviewed records outside it are left out for it and
    counted in ``dropped_records``. The recommended design's two samples give
    :func:`~er_evaluation.recommend.estimate_design`'s table of the one version they were
    drawn from (the same numbers as ``er-eval estimate`` on the exported benchmark)."""
    if isinstance(sample, DesignSample):
        (version,) = versions
        table = sample.estimates(predictions[version], name=version)
        return table[table["metric"].isin(metrics)].reset_index(drop=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CoverageWarning)
        return estimate_table(
            {v: predictions[v] for v in versions}, sample, list(metrics), on_missing="restrict"
        )


def compared_versions(
    predictions: Mapping[str, pd.Series], settings: SampleSettings
) -> tuple[pd.Series, pd.Series]:
    """Baseline and compared versions of a change design, on the records they share
    (versions may cover different populations; the comparison is on the shared one)."""
    a = predictions[settings.version]
    b = predictions[settings.other_version]
    shared = a.index.intersection(b.index)
    return a.loc[shared], b.loc[shared]


def change_differences(
    predictions: Mapping[str, pd.Series],
    benchmark: pd.Series | None,
    settings: SampleSettings,
    sample: Sample,
    metrics: Iterable[str],
    *,
    level: float = 0.95,
) -> tuple[dict[str, Estimate], dict[str, str]]:
    """Paired differences ``metric(other_version) - metric(version)`` of a change-design
    project, by :func:`~er_evaluation.estimators.change.compare_changed`.

    A sample of changed records estimates differences only: its reviews give the change of
    the link totals between the two versions, the project's benchmark (restricted to the
    records both versions cover) gives TP_A and |T|, the versions give |P_A| and |P_B|.
    Returns the estimates by metric and, for each metric that cannot be estimated from
    what the project holds (e.g. recall without a benchmark), the reason.
    """
    a, b = compared_versions(predictions, settings)
    bench = None
    if benchmark is not None:
        bench = benchmark_sample(benchmark[benchmark.index.isin(a.index)], weights="cluster_size")
    estimates: dict[str, Estimate] = {}
    refused: dict[str, str] = {}
    for metric in metrics:
        try:
            estimates[metric] = compare_changed(
                a,
                b,
                sample,
                bench,
                metric,
                level=level,
                names=(settings.other_version, settings.version),
                on_missing="restrict",
            )
        except ValueError as error:
            refused[metric] = str(error)
    return estimates, refused
