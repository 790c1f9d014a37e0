"""``er-eval review``: a review project folder (made by the review app) from the command line.

    er-eval review status    PROJECT_DIR
    er-eval review agreement PROJECT_DIR [--per-record]
    er-eval review export    PROJECT_DIR -o benchmark.csv [--reviewer NAME]
    er-eval review estimate  PROJECT_DIR [--versions V...] [--metrics M...] [--reviewer NAME]

The folder holds ``project.json`` (data and sample settings), ``queue.parquet`` (the
records to review) and ``reviews.sqlite`` (every saved decision). ``estimate`` builds the
reviewed sample exactly as the app's Estimates page does
(:meth:`er_evaluation.review.Project.sample`: finished units only, adjudicated decisions
first) and estimates with :func:`er_evaluation.estimators.estimate_table`;
``--reviewer`` uses that reviewer's own decisions where they made one (double review:
the spread between reviewers measures reviewer uncertainty).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd

from er_evaluation.cli._common import add_output_options, emit, plain
from er_evaluation.errors import CoverageWarning
from er_evaluation.review import DESIGNS, Project, ReviewError, agreement
from er_evaluation.review.project import change_differences
from er_evaluation.sampling import Sample
from er_evaluation.vocabulary import estimable_metrics


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "review",
        help="status, agreement, export and estimates of a review project folder",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    status = actions.add_parser("status", help="what is reviewed, by whom, and conflicts")
    status.add_argument("project", metavar="PROJECT_DIR")
    add_output_options(status)
    status.set_defaults(func=run_status)

    agree = actions.add_parser("agreement", help="agreement of double-reviewed records")
    agree.add_argument("project", metavar="PROJECT_DIR")
    agree.add_argument(
        "--per-record", action="store_true", help="one row per double-reviewed record"
    )
    add_output_options(agree)
    agree.set_defaults(func=run_agreement)

    export = actions.add_parser("export", help="write the reviewed true clusters")
    export.add_argument("project", metavar="PROJECT_DIR")
    export.add_argument("-o", "--output", required=True, help="CSV or Parquet file to write")
    export.add_argument("--reviewer", help="under this reviewer's own decisions")
    export.set_defaults(func=run_export)

    estimate = actions.add_parser("estimate", help="estimates from the reviewed sample")
    estimate.add_argument("project", metavar="PROJECT_DIR")
    estimate.add_argument(
        "--versions", nargs="+", help="versions to evaluate (default: all the app would show)"
    )
    estimate.add_argument(
        "--metrics", nargs="+", help=f"metrics (default: {', '.join(DEFAULT_METRICS)})"
    )
    estimate.add_argument("--reviewer", help="under this reviewer's own decisions")
    add_output_options(estimate)
    estimate.set_defaults(func=run_estimate)


DEFAULT_METRICS = ("pairwise_precision", "pairwise_recall", "pairwise_f1")


def run_status(args: argparse.Namespace) -> int:
    project = Project.open(args.project)
    store, queue, settings = project.store, project.queue, project.settings
    decisions = store.decisions()
    conflicts = store.conflicts()
    rows = {
        "folder": str(project.folder),
        "data": project.data.source,
        "events": len(store.events()),
        "decisions": len(decisions),
        "conflicts": len(conflicts),
    }
    if queue is not None and settings is not None:
        sample, finished = project.sample()
        rows.update(
            {
                "design": DESIGNS[settings["design"]],
                "version": settings["version"],
                "queue_records": len(queue),
                "double_reviewed_records": int(queue["second_reviewer"].notna().sum()),
                "finished_units": finished,
                "reviewed_records": 0 if sample is None else sample.n_records,
            }
        )
    table = pd.DataFrame({"value": pd.Series(rows, dtype=object)})
    table.index.name = "item"
    if len(decisions):
        by = decisions.groupby("reviewer").size()
        for name, count in by.items():
            table.loc[f"decisions by {name}"] = count
    emit(table, args)
    return 0


def run_agreement(args: argparse.Namespace) -> int:
    project = Project.open(args.project)
    result = agreement(project.store.event_list())
    if result.n_units == 0:
        raise ReviewError(f"{project.folder}: no record has been decided by two reviewers yet")
    if args.per_record:
        emit(result.per_record.set_index("sampled_record"), args)
        return 0
    # counts stay integers beside the shares in every format
    table = pd.DataFrame(
        {
            "value": np.array(
                [
                    int(result.n_units),
                    float(result.identical_share),
                    int(result.n_links),
                    float(result.link_agreement),
                    float(result.kappa),
                ],
                dtype=object,
            )
        },
        index=pd.Index(
            ["double_reviewed", "identical_share", "link_decisions", "link_agreement", "kappa"],
            name="statistic",
        ),
    )
    emit(table, args)
    return 0


def run_export(args: argparse.Namespace) -> int:
    project = Project.open(args.project)
    path = project.store.export(args.output, reviewer=args.reviewer)
    print(f"wrote {path}", file=sys.stderr)
    return 0


def project_estimates(
    project: Project,
    *,
    versions: list[str] | None = None,
    metrics: list[str] | None = None,
    reviewer: str | None = None,
) -> pd.DataFrame:
    """The table the app's Estimates page shows for the project's reviews."""
    import warnings

    from er_evaluation.estimators import estimate_table

    sample, _ = project.sample(reviewer=reviewer)
    if sample is None:
        raise ReviewError(f"{project.folder}: no finished review yet: nothing to estimate")
    data, settings = project.data, project.settings
    if settings["design"] == "change":
        return _change_table(project, sample, versions, metrics)
    if sample.sample_of == "predicted":
        allowed = [settings["version"]]
        # precision only (vocabulary.estimable_metrics), of the version it was drawn from
        metrics = list(metrics or estimable_metrics("predicted", DEFAULT_METRICS))
    else:
        allowed = data.versions
        metrics = list(metrics or DEFAULT_METRICS)
    versions = versions or allowed
    unknown = [v for v in versions if v not in allowed]
    if unknown:
        raise ReviewError(
            f"version(s) {unknown} cannot be estimated from this sample; use {allowed}"
        )
    with warnings.catch_warnings():
        # each version has its own population: the table's dropped_records counts the rest
        warnings.simplefilter("ignore", CoverageWarning)
        return estimate_table(
            {v: data.predictions[v] for v in versions}, sample, metrics, on_missing="restrict"
        )


def _change_table(
    project: Project, sample: Sample, versions: list[str] | None, metrics: list[str] | None
) -> pd.DataFrame:
    """A change sample estimates the paired difference of its two versions only."""
    from er_evaluation.estimators.results import estimates_frame

    settings = project.settings
    pair = [settings["version"], settings["other_version"]]
    if versions and sorted(versions) != sorted(pair):
        raise ReviewError(
            f"a sample of changed records estimates only the difference "
            f"{pair[1]} − {pair[0]}; use --versions {' '.join(pair)} or leave it out"
        )
    differences, refused = change_differences(
        project.data, settings, sample, list(metrics or DEFAULT_METRICS)
    )
    for metric, reason in refused.items():
        print(f"er-eval review estimate: {metric}: {reason}", file=sys.stderr)
    if not differences:
        raise ReviewError("no metric can be estimated from this change sample (see above)")
    return estimates_frame(differences.values())


def run_estimate(args: argparse.Namespace) -> int:
    project = Project.open(args.project)
    table = project_estimates(
        project, versions=args.versions, metrics=args.metrics, reviewer=args.reviewer
    )
    columns = ["value", "std_error", "ci_low", "ci_high", "estimator", "n_units", "n_records"]
    emit(table.set_index(["prediction", "metric"])[columns], args)
    return 0
