"""What a report says, computed without plotly: the estimates across versions with each
one's reliability in words, the sample's design and size, per-stratum contributions,
paired differences between consecutive versions, agreement of double review, statistics
of the true clustering and the largest over-merged and split clusters with their records.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from er_evaluation import __version__
from er_evaluation._progress import progress
from er_evaluation.error_analysis import reference_cluster_errors
from er_evaluation.errors import (
    CoverageWarning,
    UnpairedDifferenceWarning,
    UnreliableEstimateWarning,
)
from er_evaluation.estimators import (
    blocking_table,
    compare,
    estimate_summary,
    estimate_table,
    stratum_contributions,
)
from er_evaluation.estimators.diagnostics import effective_words
from er_evaluation.recommend import DesignSample
from er_evaluation.report._design import (
    DESIGN_METRICS,
    design_description,
    design_estimates,
    design_strata,
    drawn_version,
)
from er_evaluation.review import Agreement
from er_evaluation.sampling import Sample
from er_evaluation.vocabulary import estimable_metrics

__all__ = [
    "DEFAULT_METRICS",
    "ClusterErrors",
    "Report",
    "build_report",
    "demo_report",
    "project_report",
    "reliability_words",
]

#: the metrics a report estimates unless told otherwise
DEFAULT_METRICS = ("pairwise_precision", "pairwise_recall", "pairwise_f1")
#: clusters listed in each part of the error analysis, and records shown per cluster
TOP_CLUSTERS = 5
RECORDS_PER_CLUSTER = 25

_SELECTION = {
    "cluster_size": "with probability proportional to their size (records drawn uniformly, "
    "each revealing its whole true cluster)",
    "uniform": "uniformly",
}


@dataclass(frozen=True)
class ClusterErrors:
    """The error analysis of one version against the reviewed true clusters.

    ``over_merged``: predicted clusters that hold records of a reviewed true cluster and
    records of other entities, largest number of such ``extra`` records first (one row
    per predicted cluster: ``predicted_cluster``, ``size``, ``true_cluster`` the reviewed
    cluster it holds most of, ``overlap``, ``extra``). ``split``: reviewed true clusters
    spread over several predicted clusters, most ``missing`` records (outside the
    predicted cluster holding most of them) first. ``records``: the records of the
    listed clusters (``part``, ``cluster``, ``record_id``, ``predicted_cluster``,
    ``true_cluster``; a record outside the reviewed clusters has an empty true cluster),
    at most :data:`RECORDS_PER_CLUSTER` per cluster, with the chosen record fields.
    """

    version: str
    over_merged: pd.DataFrame
    split: pd.DataFrame
    records: pd.DataFrame


@dataclass(frozen=True)
class Report:
    """Everything a report shows; :func:`~er_evaluation.report.report_html` renders it.

    ``estimates``: the tidy table of :func:`~er_evaluation.estimators.estimate_table`
    with a ``reliability`` column in words. ``differences``: paired differences between
    consecutive versions (:func:`~er_evaluation.estimators.compare`), or None with one
    version. ``sample``: the design and size of the reviewed sample (rows ``item``,
    ``value``). ``strata``: per-stratum contributions of one version's estimates
    (:func:`~er_evaluation.estimators.stratum_contributions`; column ``prediction``) when
    the sample is stratified: the last version's, or the one a recommended design was
    drawn from. ``agreement``: double review, when the sample has it. ``truth``:
    estimated statistics of the true clustering
    (:func:`~er_evaluation.estimators.estimate_summary`). ``blocking``: each version's
    blocking and matching recall (:func:`~er_evaluation.estimators.blocking_table`) when
    block keys were given. ``errors``: the error analysis of the last version (of the one
    a recommended design was drawn from). ``notes``: sentences about the data (dropped records, metrics
    the sample cannot estimate, paired differences whose sample holds no unit where the
    two versions differ).
    """

    title: str
    source: str
    estimates: pd.DataFrame
    sample: pd.DataFrame
    differences: pd.DataFrame | None = None
    strata: pd.DataFrame | None = None
    agreement: Agreement | None = None
    truth: pd.DataFrame | None = None
    blocking: pd.DataFrame | None = None
    errors: ClusterErrors | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    version: str = __version__


def reliability_words(row: Mapping) -> str:
    """An estimate's reliability in one sentence, from its diagnostics: the interval's
    half-width and the effective number of units behind it when reliable, else the
    reason it is not (:class:`~er_evaluation.estimators.Diagnostics`)."""
    if not bool(row["reliable"]):
        return f"Not reliable: {row['reason']}"
    half = (float(row["ci_high"]) - float(row["ci_low"])) / 2
    effective = float(row["n_effective"])
    units = f"a sample {effective_words(effective)}" if math.isfinite(effective) else "a census"
    return f"Reliable: {row['level']:.0%} interval ±{half:.3f}, from {units}."


def _with_words(table: pd.DataFrame) -> pd.DataFrame:
    if table.empty:
        return table.assign(reliability=pd.Series(dtype=object))
    return table.assign(reliability=[reliability_words(r) for _, r in table.iterrows()])


def sample_description(sample: Sample, extra: Iterable[tuple[str, object]] = ()) -> pd.DataFrame:
    """The design and size of ``sample`` as rows of (item, value)."""
    of = {"reference": "true clusters", "predicted": "predicted clusters"}.get(
        sample.sample_of, sample.sample_of
    )
    rows: list[tuple[str, object]] = [
        ("design", sample.design),
        ("reviewed units", f"{sample.n_units:,} {of}"),
        ("draws", f"{sample.n_draws:,} ({'with' if sample.replace else 'without'} replacement)"),
        ("reviewed records", f"{sample.n_records:,}"),
        (
            "selection",
            "drawn at random within each stratum (below)"
            if sample.strata is not None
            else f"units drawn {_SELECTION.get(sample.weights, sample.weights)}",
        ),
    ]
    if sample.population_size is not None:
        rows.append(("population", f"{sample.population_size:,} units"))
    if sample.strata is not None:
        strata = sample.strata
        rows.append(
            (
                "strata",
                f"{len(strata.names):,} strata of {strata.frame}: "
                + ", ".join(
                    f"{name} ({int(n):,} of {int(f):,})"
                    for name, n, f in zip(
                        strata.names, strata.n_draws, strata.frame_size, strict=True
                    )
                ),
            )
        )
    rows += list(extra)
    return pd.DataFrame(rows, columns=["item", "value"]).astype({"value": str})


def consecutive_differences(
    predictions: Mapping[str, pd.Series],
    sample: Sample,
    metrics: Sequence[str],
    *,
    level: float = 0.95,
    on_missing: str = "restrict",
) -> pd.DataFrame | None:
    """Paired differences ``metric(later) - metric(earlier)`` of every two consecutive
    versions of ``predictions`` (in their order), by
    :func:`~er_evaluation.estimators.compare` on the same reviewed sample."""
    names = list(predictions)
    if len(names) < 2:
        return None
    steps = [(a, b, m) for a, b in zip(names, names[1:], strict=False) for m in metrics]
    parts = [
        compare(
            {a: predictions[a], b: predictions[b]},
            sample,
            metric,
            level=level,
            on_missing=on_missing,
        )
        for a, b, metric in progress(steps, "paired differences")
    ]
    return pd.concat(parts, ignore_index=True)


def cluster_errors(
    prediction: pd.Series,
    reviewed: pd.Series,
    *,
    version: str,
    records: pd.DataFrame | None = None,
    fields: Sequence[str] = (),
    top: int = TOP_CLUSTERS,
) -> ClusterErrors:
    """The largest over-merged predicted clusters and split true clusters of
    ``prediction`` among the reviewed true clusters ``reviewed`` (see
    :class:`ClusterErrors`), from :func:`~er_evaluation.reference_cluster_errors`."""
    reviewed = reviewed[reviewed.index.isin(prediction.index)]
    per_true = reference_cluster_errors(
        prediction, reviewed, on_missing="restrict", scope="prediction"
    )
    merged = per_true[per_true["extra"] > 0].sort_values("extra", ascending=False, kind="stable")
    merged = merged.drop_duplicates("main_prediction").head(top)
    over_merged = pd.DataFrame(
        {
            "predicted_cluster": merged["main_prediction"].to_numpy(),
            "size": (merged["overlap"] + merged["extra"]).to_numpy(),
            "true_cluster": merged.index.to_numpy(),
            "overlap": merged["overlap"].to_numpy(),
            "extra": merged["extra"].to_numpy(),
        }
    )
    split_rows = per_true[per_true["n_predicted_clusters"] > 1]
    split_rows = split_rows.sort_values("missing", ascending=False, kind="stable").head(top)
    split = pd.DataFrame(
        {
            "true_cluster": split_rows.index.to_numpy(),
            "size": split_rows["size"].to_numpy(),
            "n_predicted_clusters": split_rows["n_predicted_clusters"].to_numpy(),
            "main_prediction": split_rows["main_prediction"].to_numpy(),
            "missing": split_rows["missing"].to_numpy(),
        }
    )
    parts = []
    for cluster, entity in zip(
        over_merged["predicted_cluster"], over_merged["true_cluster"], strict=True
    ):
        ids = prediction.index[(prediction == cluster).to_numpy()]
        # the records of other entities first: they are the error
        other = reviewed.reindex(ids).to_numpy() != entity
        parts.append(("over-merged", cluster, ids[np.argsort(~other, kind="stable")]))
    for cluster in split["true_cluster"]:
        parts.append(("split", cluster, reviewed.index[(reviewed == cluster).to_numpy()]))
    frames = [
        pd.DataFrame(
            {
                "part": part,
                "cluster": cluster,
                "record_id": ids[:RECORDS_PER_CLUSTER],
                "predicted_cluster": prediction.reindex(ids[:RECORDS_PER_CLUSTER]).to_numpy(),
                "true_cluster": reviewed.reindex(ids[:RECORDS_PER_CLUSTER]).to_numpy(),
            }
        )
        for part, cluster, ids in parts
    ]
    columns = ["part", "cluster", "record_id", "predicted_cluster", "true_cluster"]
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
    if records is not None and fields:
        shown = records.reindex(table["record_id"].to_numpy())[list(fields)]
        table = pd.concat([table, shown.reset_index(drop=True)], axis=1)
    return ClusterErrors(version, over_merged, split, table)


def build_report(
    predictions: Mapping[str, pd.Series],
    sample: Sample | DesignSample,
    *,
    metrics: Sequence[str] = DEFAULT_METRICS,
    title: str = "Entity resolution evaluation",
    source: str = "",
    level: float = 0.95,
    ci_method: str | None = None,
    on_missing: str = "restrict",
    review_agreement: Agreement | None = None,
    records: pd.DataFrame | None = None,
    fields: Sequence[str] = (),
    sample_items: Iterable[tuple[str, object]] = (),
    differences: bool = True,
    blocks: pd.Series | pd.DataFrame | None = None,
    drawn_from: str | None = None,
) -> Report:
    """The report of ``predictions`` (version name -> full clustering, in the order to
    show) estimated from the reviewed ``sample``.

    Estimates come from :func:`~er_evaluation.estimators.estimate_table` (``metrics``,
    ``level``, ``ci_method``, ``on_missing`` as there; the metrics a sample of predicted
    clusters cannot estimate are left out with a note), differences from
    :func:`consecutive_differences`, the truth statistics from
    :func:`~er_evaluation.estimators.estimate_summary`, the error analysis from
    :func:`cluster_errors` on the last version (``records``: the records table, indexed
    by record id, whose ``fields`` are shown beside each record). ``review_agreement``
    and ``sample_items`` (extra rows of the sample's description) come from a review
    project. ``blocks``: the records' block keys (one column, or one per blocking pass),
    for the recall lost to blocking.

    ``sample`` may be the recommended design's two samples
    (:class:`~er_evaluation.recommend.DesignSample`): the version it was drawn from
    (``drawn_from``, or the first version that can be it) is estimated by
    :func:`~er_evaluation.recommend.estimate_design` (its own estimators and intervals:
    ``ci_method`` does not apply to it) and its precision strata shown; every other
    version, the paired differences, the truth statistics and the recall lost to blocking
    come from the records drawn for recall (a uniform record sample all versions share).
    """
    if not predictions:
        raise ValueError("a report needs at least one prediction")
    notes: list[str] = []
    options = {"level": level, "on_missing": on_missing}
    if isinstance(sample, DesignSample):
        drawn = drawn_version(predictions, sample, drawn_from)
        records_sample = sample.recall
        kept = [m for m in metrics if m in DESIGN_METRICS]
        notes.append(_design_note(drawn, len(predictions)))
    else:
        drawn, records_sample = list(predictions)[-1], sample
        kept = list(estimable_metrics(sample.sample_of, metrics))
    if len(kept) < len(metrics):
        left = [m for m in metrics if m not in kept]
        what = (
            "The recommended design"
            if isinstance(sample, DesignSample)
            else f"A sample of {sample.sample_of} clusters"
        )
        notes.append(f"{what} does not estimate {', '.join(left)}.")
    stages = progress(desc="report", total=5, unit="stage")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CoverageWarning)
        warnings.simplefilter("always", UnreliableEstimateWarning)
        warnings.simplefilter("always", UnpairedDifferenceWarning)
        if isinstance(sample, DesignSample):
            estimates = design_estimates(
                predictions, sample, drawn, kept, ci_method=ci_method, **options
            )
        else:
            estimates = estimate_table(predictions, sample, kept, ci_method=ci_method, **options)
        table = _with_words(estimates)
        stages.update()
        paired = (
            consecutive_differences(predictions, records_sample, kept, **options)
            if differences
            else None
        )
        stages.update()
    # the report states these in words: the dropped records and the unpaired differences
    # in notes, each estimate's reliability beside it; a Python warning would reach only
    # the log of the app or script that built the report, never its reader
    stated = (CoverageWarning, UnreliableEstimateWarning, UnpairedDifferenceWarning)
    for w in caught:
        if issubclass(w.category, UnpairedDifferenceWarning):
            note = f"{str(w.message).rstrip('.')}."
            if note not in notes:
                notes.append(note)
        elif not issubclass(w.category, stated):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    dropped = table.groupby("prediction", sort=False)["dropped_records"].first()
    if (dropped > 0).any():
        notes.append(
            f"Reviewed records absent from a version's population were left out of its "
            f"estimates ({int(dropped.min()):,} to {int(dropped.max()):,} per version)."
        )
    strata = None
    if isinstance(sample, DesignSample):
        strata = design_strata(predictions[drawn], sample, drawn)
    elif sample.strata is not None:
        strata = pd.concat(
            [
                stratum_contributions(predictions[drawn], sample, m, on_missing=on_missing).assign(
                    metric=m, prediction=drawn
                )
                for m in kept
            ],
            ignore_index=True,
        )
    stages.update()
    truth = blocking = None
    if records_sample.sample_of != "predicted":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnreliableEstimateWarning)
            truth = _with_words(estimate_summary(records_sample, level=level))
            if blocks is not None:
                try:
                    blocking = _with_words(
                        blocking_table(predictions, records_sample, blocks, **options)
                    )
                except ValueError as error:  # e.g. reviewed records without a block key
                    notes.append(f"The recall lost to blocking is not shown: {error}")
    stages.update()
    errors = None
    if isinstance(sample, DesignSample) or sample.sample_of != "predicted":
        errors = cluster_errors(
            predictions[drawn], sample.reference, version=drawn, records=records, fields=fields
        )
    stages.update()
    stages.close()
    described = (
        design_description(sample, drawn, sample_items)
        if isinstance(sample, DesignSample)
        else sample_description(sample, sample_items)
    )
    return Report(
        title=title,
        source=source,
        estimates=table,
        sample=described,
        differences=None if paired is None else _with_words(paired),
        strata=strata,
        agreement=review_agreement,
        truth=truth,
        blocking=blocking,
        errors=errors,
        notes=tuple(notes),
    )


def _design_note(drawn: str, n_versions: int) -> str:
    """How a recommended design's report estimates each version, in words."""
    note = (
        f"{drawn}: precision from its predicted clusters reviewed whole (the take-all part "
        f"exact, the size bands by the separate ratio estimator), recall from the records "
        f"drawn uniformly, F1 from both: the figures of er-eval estimate."
    )
    if n_versions > 1:
        note += (
            " The other versions, and the paired differences, come from the records drawn "
            "for recall alone (a uniform record sample all versions share): their "
            "precision has no take-all part."
        )
    return note


def demo_report(*, metrics: Sequence[str] = DEFAULT_METRICS) -> Report:
    """The report of the 15 bundled PatentsView versions estimated from the Binette et
    al. (2022) inventor benchmark (its 401 inventors drawn through uniformly sampled
    mentions), with the mentions' names and places beside each record."""
    from er_evaluation.datasets import (
        load_patentsview_benchmark,
        load_patentsview_mentions,
        load_patentsview_predictions,
    )
    from er_evaluation.sampling import benchmark_sample

    predictions = load_patentsview_predictions()
    sample = benchmark_sample(load_patentsview_benchmark(), weights="cluster_size")
    mentions = load_patentsview_mentions()
    return build_report(
        predictions,
        sample,
        metrics=metrics,
        title="PatentsView inventor disambiguation: evaluation",
        source=(
            f"{len(predictions)} versions of PatentsView's inventor disambiguation; the "
            f"reviewed sample is the Binette et al. (2022) benchmark: {sample.n_records:,} "
            f"mentions of {sample.n_units} inventors."
        ),
        records=mentions,
        fields=("name_first", "name_last", "city", "country"),
        blocks=mentions["block"],
    )


def project_report(folder: str | Path, *, metrics: Sequence[str] = DEFAULT_METRICS) -> Report:
    """The report of a review project folder (:class:`~er_evaluation.review.Project`):
    its finished reviews as the sample (the decisions that count for it, adjudications
    first), every version the sample can estimate (a recommended design: every version,
    see :func:`build_report`), the agreement of its double review, and the project's
    record fields beside each record of the error analysis. A sample of
    changed records (the change design) estimates only the difference between its two
    versions: use ``er-eval review estimate`` for it."""
    from er_evaluation.review import DESIGNS, Project, ReviewError
    from er_evaluation.review._design import distinct_units_note

    project = Project.open(folder)
    sample, finished = project.sample()
    if sample is None:
        raise ReviewError(f"{project.folder}: no finished review yet: nothing to report")
    settings, data = project.settings, project.data
    if settings.design == "change":
        raise ReviewError(
            f"{project.folder}: a sample of changed records estimates only the difference "
            f"between its two versions; see er-eval review estimate"
        )
    recommended = isinstance(sample, DesignSample)
    # the recommended design estimates every version from its record draws, and the
    # version its predicted clusters were drawn from with both parts
    versions = list(data.versions if recommended else project.estimable(sample).versions)
    double = project.agreement()
    items = [
        ("sampling", DESIGNS.get(settings.design, settings.design)),
        ("drawn from version", settings.version),
        (
            "finished units",
            f"{finished:,} of {project.queue['unit'].nunique():,} in the queue"
            f"{distinct_units_note(finished, sample.n_units)}",
        ),
        ("reviewers", ", ".join(project.reviewers) or "none"),
    ]
    return build_report(
        {v: data.predictions[v] for v in versions},
        sample,
        metrics=metrics,
        title=f"Entity resolution evaluation: {project.folder.name}",
        source=f"Review project {project.folder} ({data.source} data, {len(versions)} versions).",
        review_agreement=double if double.n_units else None,
        records=data.records,
        fields=tuple(data.fields[:4]),
        sample_items=items,
        blocks=data.blocks,
        drawn_from=settings.version if recommended else None,
    )
