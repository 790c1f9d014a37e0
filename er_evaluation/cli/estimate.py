"""``er-eval estimate``: precision and recall of whole predictions from a reviewed sample.

    er-eval estimate PREDICTION... --reference REF [--weights cluster_size|uniform]
                     [--metrics METRIC ...] [--level 0.95] [--ci-method M]
                     [--paired [--baseline NAME]] [--on-missing error|restrict|restrict_sample]
                     [--blocks FILE[:ID:BLOCK] | --by FILE[:ID:GROUP]]
    er-eval estimate --demo        # the 15 bundled PatentsView versions vs the Binette 2022 benchmark

METRIC names are those of ``er-eval metrics`` that a reviewed sample can estimate; the
default is pairwise_precision pairwise_recall pairwise_f1.

Each PREDICTION is a full clustering of its population; REF holds the reviewed true
clusters of the sampled units, each cluster complete (every record of that entity). Both
are FILE or FILE:ID_COL:CLUSTER_COL (CSV, TSV or Parquet; a two-column file is read as
record id, cluster id). A REF exported by ``er-eval review export`` has its sample's
design beside it (``NAME.sample.json``): the estimates then use that design, and equal
``er-eval review estimate``'s. So does the filled-in records to review that ``er-eval
plan --records N --write-sample FILE`` wrote (a recommended design: precision from the
predicted clusters reviewed whole, recall from the records drawn, F1 from both; one
PREDICTION, the one it was drawn from). ``--weights`` says how the reviewed clusters were selected:
``cluster_size`` when records were drawn uniformly and their clusters reviewed
(probability proportional to size), ``uniform`` when clusters were drawn uniformly.
Estimates come from :func:`er_evaluation.estimators.estimate_table` (design-based,
bias-corrected, with standard errors and confidence intervals); ``--paired`` reports
differences against the baseline prediction with their own paired standard errors
(:func:`er_evaluation.estimators.compare`). ``--blocks`` adds each prediction's
blocking_recall and matching_recall (:mod:`er_evaluation.estimators.blocking`); ``--by``
reports the metrics of every group of records instead, with a test of equality across
groups (:mod:`er_evaluation.estimators.groups`).
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import warnings
from pathlib import Path

import pandas as pd

from er_evaluation._sample_file import describe, read_sample
from er_evaluation.cli import _breakdown
from er_evaluation.cli._common import (
    add_clustering_options,
    add_command,
    add_output_options,
    common_ids,
    emit,
    given_flags,
    label_of,
    plain,
    read_clustering,
)
from er_evaluation.errors import CoverageWarning, UnreliableEstimateWarning
from er_evaluation.estimators import CI_METHODS, DEFAULT_CI_METHOD, compare, estimate_table
from er_evaluation.estimators.pairwise import ESTIMATORS
from er_evaluation.estimators.results import SHOWN_COLUMNS, unreliable_notes
from er_evaluation.recommend import DesignSample
from er_evaluation.sampling import Sample, benchmark_sample
from er_evaluation.vocabulary import ESTIMABLE, ESTIMATOR_METRICS, check_metric_names


def register(subparsers) -> None:
    parser = add_command(
        subparsers,
        "estimate",
        __doc__,
        "estimate precision/recall of predictions from a reviewed sample, with CIs",
        epilog=_methods_epilog(),
    )
    add_input_options(parser)
    parser.add_argument(
        "--metrics",
        nargs="+",
        default=list(ESTIMABLE[:3]),
        metavar="METRIC",
        help=f"metrics to estimate (default: {' '.join(ESTIMABLE[:3])}; any of "
        f"{', '.join(ESTIMABLE)}, or pairwise_f<beta> such as pairwise_f2)",
    )
    parser.add_argument(
        "--estimator",
        type=_estimator,
        metavar="{" + ",".join(ESTIMATORS) + "}",
        help="estimator for every metric (default: the recommended one: cluster_block "
        "precision, record recall for cluster_size samples); naive gives the biased "
        "baseline; an F-score also takes PRECISION_EST+RECALL_EST, e.g. cluster_block+record",
    )
    parser.add_argument(
        "--level", type=float, default=0.95, help="confidence level in (0, 1) (default 0.95)"
    )
    parser.add_argument(
        "--ci-method",
        choices=list(CI_METHODS),
        metavar="{" + ",".join(CI_METHODS) + "}",
        help=f"confidence interval method (default {DEFAULT_CI_METHOD}; each is described below)",
    )
    parser.add_argument(
        "--paired",
        action="store_true",
        help="report each prediction's difference from the baseline, with paired SEs",
    )
    parser.add_argument("--baseline", help="baseline prediction name for --paired (default: first)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    _breakdown.add_options(parser)
    add_clustering_options(parser)
    add_output_options(parser)
    parser.set_defaults(func=run)


def add_input_options(parser: argparse.ArgumentParser) -> None:
    """The inputs of a reviewed-sample estimate (the predictions, --reference, --demo,
    --weights, --on-missing), shared with ``er-eval report``; :func:`load_inputs` reads
    them."""
    parser.add_argument(
        "predictions",
        nargs="*",
        metavar="PREDICTION",
        help="clustering files of the predictions to evaluate (each a full population; "
        "FILE or FILE:ID_COL:CLUSTER_COL)",
    )
    parser.add_argument(
        "--reference",
        metavar="REF",
        help="reviewed true clusters of the sampled units (FILE or FILE:ID_COL:CLUSTER_COL)",
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="the 15 bundled PatentsView versions against the Binette 2022 inventor benchmark",
    )
    parser.add_argument(
        "--weights",
        choices=["cluster_size", "uniform"],
        default="cluster_size",
        help="how the reviewed clusters were selected: cluster_size = records drawn uniformly "
        "(clusters with probability proportional to size; default), uniform = clusters drawn "
        "uniformly. These are selection probabilities, not inverse weights.",
    )
    parser.add_argument(
        "--on-missing",
        choices=["error", "restrict", "restrict_sample"],
        default="error",
        help="reviewed records absent from a prediction: stop with an error naming them "
        "(default), drop them and say how many keeping each unit's sampled probability "
        "(restrict), or restrict the sample to the prediction's records first, as "
        "er-evaluation and the published PatentsView figures do (restrict_sample); --demo "
        "restricts unless told otherwise: each PatentsView version has its own population",
    )


def _estimator(text: str) -> str:
    parts = text.split("+")
    if len(parts) > 2 or any(p not in ESTIMATORS for p in parts):
        raise argparse.ArgumentTypeError(
            f"{text!r}: choose one of {', '.join(ESTIMATORS)} (or P_EST+R_EST for an F-score)"
        )
    return text


# what each interval method is for, in a newcomer's words (a method added to the library
# without an entry here is described by the first sentence of its docstring)
_METHOD_HELP = {
    "auto": "Fieller for ratio estimators (pairwise precision and recall), studentized "
    "bootstrap for the others",
    "normal": "estimate +- z SE (the interval of Binette et al. 2023)",
    "logit": "normal interval on the logit scale: asymmetric, stays inside (0, 1)",
    "fieller": "exact-form interval for a ratio of two means (ratio estimators only)",
    "fieller_t": "Fieller with bootstrap quantiles in place of z (ratio estimators only)",
    "percentile": "bootstrap percentiles",
    "studentized": "bootstrap-t: quantiles of (estimate* - estimate) / SE*",
    "jackknife": "estimate +- z SE with the delete-one jackknife SE",
    "bca": "bias-corrected and accelerated bootstrap percentiles",
}


def _methods_epilog() -> str:
    """One wrapped entry per interval method of the library."""
    lines = [f"interval methods (--ci-method, default {DEFAULT_CI_METHOD}):"]
    for name, function in CI_METHODS.items():
        text = _METHOD_HELP.get(name)
        if text is None:
            text = " ".join(plain(function.__doc__ or "").split()).split(". ")[0].rstrip(".")
        lines += textwrap.wrap(
            text, width=88, initial_indent=f"  {name:<13}", subsequent_indent=" " * 15
        )
    return "\n".join(lines)


def load_inputs(
    args: argparse.Namespace,
) -> tuple[dict[str, pd.Series], Sample | DesignSample, str]:
    if args.demo:
        if args.predictions or args.reference:
            raise ValueError("--demo uses the bundled data: give no PREDICTION or --reference")
        from er_evaluation.datasets import load_patentsview_benchmark, load_patentsview_predictions

        reference = load_patentsview_benchmark()
        predictions = load_patentsview_predictions()
        if args.on_missing == "error":
            args.on_missing = "restrict"
        sample = benchmark_sample(reference, weights="cluster_size")
        source = (
            f"PatentsView inventor disambiguation, {len(predictions)} versions; benchmark: "
            f"Binette et al. (2022), {sample.n_records:,} mentions of {sample.n_units} inventors "
            f"sampled through uniformly drawn mentions (weights=cluster_size)"
        )
        return predictions, sample, source
    if not args.predictions:
        raise ValueError("give at least one PREDICTION file (or --demo)")
    if not args.reference:
        raise ValueError("--reference is required (the reviewed true clusters)")
    reference = read_clustering(
        args.reference, args, f"reference {label_of(args.reference)}", in_memory=True
    )
    predictions: dict[str, pd.Series] = {}
    paths = [label_of(spec) for spec in args.predictions]
    stems = [Path(p).stem.split(".")[0] for p in paths]
    unique = len(set(stems)) == len(stems)
    for spec, path, stem in zip(args.predictions, paths, stems, strict=True):
        name = stem if unique else path
        if name in predictions:
            raise ValueError(f"prediction {path!r} is given twice")
        predictions[name] = read_clustering(spec, args, f"prediction {path}")
    names = list(predictions)
    reference, *read = common_ids(
        [reference, *predictions.values()], [label_of(args.reference), *paths], args.id_type
    )
    predictions = dict(zip(names, read, strict=True))
    # an exported review benchmark carries its sample's design beside it
    sample = read_sample(label_of(args.reference), reference)
    if sample is not None:
        source = (
            f"reference {label_of(args.reference)}: {sample.n_records:,} records; "
            f"{describe(label_of(args.reference))} (--weights does not apply)"
        )
        return predictions, sample, source
    sample = benchmark_sample(reference, weights=args.weights)
    source = (
        f"reference {label_of(args.reference)}: {sample.n_records:,} records of {sample.n_units} "
        f"clusters (weights={args.weights})"
    )
    return predictions, sample, source


def estimates(args: argparse.Namespace) -> tuple[pd.DataFrame, str]:
    """The command's result table (tidy, one row per prediction x metric, or per
    difference with ``--paired``) and a one-line description of the data."""
    # a mistyped metric stops the command before any file is read
    check_metric_names(
        args.metrics, ESTIMATOR_METRICS, what="estimable metric", fscores=("pairwise",)
    )
    predictions, sample, source = load_inputs(args)
    if isinstance(sample, DesignSample):
        return _design_estimates(args, predictions, sample), source
    options = {
        "estimator": args.estimator,
        "level": args.level,
        "ci_method": args.ci_method,
        "on_missing": args.on_missing,
        "seed": args.seed,
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CoverageWarning)
        if args.by:
            table, lines = _breakdown.group_rows(args, predictions, sample, options)
            source = f"{source}\n{lines}"
        elif args.paired:
            if len(predictions) < 2:
                raise ValueError("--paired needs at least two predictions")
            parts = [
                compare(predictions, sample, metric, baseline=args.baseline, **options)
                for metric in args.metrics
            ]
            table = pd.concat(parts, ignore_index=True)
        else:
            table = estimate_table(predictions, sample, metrics=args.metrics, **options)
        if args.blocks:
            rows, line = _breakdown.blocking_rows(args, predictions, sample, options)
            table = pd.concat([table, rows], ignore_index=True)
            source = f"{source}\n{line}"
    # the per-prediction counts are in the table's dropped_records column, and every
    # unreliable estimate has its one 'not reliable' line in the note
    for w in caught:
        if not issubclass(w.category, (CoverageWarning, UnreliableEstimateWarning)):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return table, source


def _design_estimates(
    args: argparse.Namespace, predictions: dict[str, pd.Series], sample: DesignSample
) -> pd.DataFrame:
    """The recommended design's estimates (:func:`er_evaluation.recommend.estimate_design`)
    of the one prediction it was drawn from."""
    given = given_flags(
        {
            "--paired": args.paired,
            "--by": args.by,
            "--blocks": args.blocks,
            "--estimator": args.estimator,
            "--ci-method": args.ci_method,
        }
    )
    if given:
        raise ValueError(
            f"{', '.join(given)}: the reference is a recommended design's sample, whose "
            "estimates have their own estimators and intervals (er_evaluation.recommend)"
        )
    if len(predictions) != 1:
        raise ValueError(
            "the reference is a recommended design's sample: give the one prediction it was "
            f"drawn from, not {len(predictions)}"
        )
    metrics = [m for m in args.metrics if m not in ESTIMABLE[:3]]
    if metrics:
        raise ValueError(
            f"the recommended design estimates {', '.join(ESTIMABLE[:3])}; not {metrics}"
        )
    ((name, prediction),) = predictions.items()
    with warnings.catch_warnings():
        # every unreliable estimate has its one 'not reliable' line in the note
        warnings.simplefilter("ignore", UnreliableEstimateWarning)
        table = sample.estimates(prediction, name=name, level=args.level)
    return table[table["metric"].isin(args.metrics)].reset_index(drop=True)


def _note(table: pd.DataFrame, source: str, args: argparse.Namespace) -> str:
    lines = [source]
    dropped = table.groupby("prediction", sort=False)["dropped_records"].first()
    if (dropped > 0).any():
        lines.append(
            f"--on-missing {args.on_missing}: reviewed records absent from a prediction's "
            f"population were dropped ({int(dropped.min()):,} to {int(dropped.max()):,} per "
            f"prediction; column dropped_records)"
        )
    return "\n".join([*lines, *estimate_notes(table)])


def estimate_notes(table: pd.DataFrame) -> list[str]:
    """The lines printed under every table of estimates (``er-eval estimate`` and
    ``er-eval review estimate``): the level and interval method, what n_effective counts,
    and one line per estimate that is not reliable."""
    level = table["level"].iloc[0]
    method = table["ci_method"].iloc[0]
    return [
        f"{level:.0%} confidence intervals ({method}); n_effective: the number of equally "
        "weighted reviewed units the sample is worth (Kish)",
        *unreliable_notes(table),
    ]


def emit_estimates(table: pd.DataFrame, keys: list[str], args: argparse.Namespace) -> None:
    """A table of estimates in ``--format``: every column in CSV and JSON (one record per
    estimate), the columns every front end shows (:data:`SHOWN_COLUMNS`) as text."""
    if args.format == "json":
        emit(table.set_index(keys), args, orient="records")
    elif args.format == "csv":
        emit(table.set_index(keys), args)
    else:
        emit(table.set_index(keys)[list(SHOWN_COLUMNS)], args)


def run(args: argparse.Namespace) -> int:
    table, source = estimates(args)
    keys = ["prediction", "group", "metric"] if "group" in table else ["prediction", "metric"]
    emit_estimates(table, keys, args)
    print(_note(table, source, args), file=sys.stderr)
    return 0
