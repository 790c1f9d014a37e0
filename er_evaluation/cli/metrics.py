"""``er-eval metrics``: exact metrics of a prediction against a full reference clustering.

    er-eval metrics PREDICTION REFERENCE [--metrics M ...] [--on-missing error|restrict]
    er-eval metrics pred.csv ref.csv:record_id:person   # columns named per file
    er-eval metrics --demo     # PatentsView 2021-12-30 vs 2022-06-30 on their shared mentions

PREDICTION and REFERENCE are clustering files covering the same records. A clustering
file is FILE or FILE:ID_COL:CLUSTER_COL (CSV, TSV or Parquet): a two-column file is read
as (record id, cluster id); with more columns, name the two. CSV ids are read as text,
so 007 and 7 are different records, except that plain integer ids (7) match a Parquet
file's integer ids (``--id-type`` forces one type). Records present on one side only stop the command
with an error naming them, unless ``--on-missing restrict`` evaluates on the shared
records and says how many were dropped. Metrics come from
:func:`er_evaluation.metrics.evaluate` (one contingency table shared by all metrics).
"""

from __future__ import annotations

import argparse
import sys
import warnings

import pandas as pd

from er_evaluation.cli._common import (
    add_clustering_options,
    add_command,
    add_output_options,
    common_ids,
    emit,
    flag_terms,
    format_text,
    label_of,
    read_clustering,
    write_output,
)
from er_evaluation.errors import CoverageWarning

DEMO_PREDICTION = "2021-12-30"
DEMO_REFERENCE = "2022-06-30"


def register(subparsers) -> None:
    from er_evaluation.metrics import METRIC_FUNCTIONS

    parser = add_command(
        subparsers,
        "metrics",
        __doc__,
        "exact metrics of a prediction against a reference clustering",
    )
    parser.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="PREDICTION then REFERENCE clustering files (FILE or FILE:ID_COL:CLUSTER_COL)",
    )
    parser.add_argument(
        "--metrics",
        nargs="+",
        metavar="METRIC",
        help=f"metrics to compute (default: all): {', '.join(METRIC_FUNCTIONS)}; also "
        "F-scores of another beta by name (pairwise_f2, cluster_f0.5, bcubed_f2)",
    )
    parser.add_argument(
        "--on-missing",
        choices=["error", "restrict"],
        default="error",
        help="records on one side only: stop with an error naming them (default) or evaluate "
        "on the shared records and say how many were dropped (--demo always restricts)",
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help=f"bundled PatentsView data: version {DEMO_PREDICTION} against {DEMO_REFERENCE} "
        "on their shared mentions",
    )
    add_clustering_options(parser)
    add_output_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from er_evaluation.metrics import evaluate
    from er_evaluation.metrics.table import check_metrics

    if args.metrics is not None:
        check_metrics(args.metrics)  # a mistyped name stops the command before any reading

    if args.demo:
        if args.files:
            raise ValueError("--demo takes no input files")
        prediction, reference, notes = _demo()
        on_missing = "restrict"
    else:
        if len(args.files) != 2:
            raise ValueError(
                f"expected two files, PREDICTION and REFERENCE, got {len(args.files)} "
                "(or use --demo)"
            )
        labels = [label_of(spec) for spec in args.files]
        read = [
            read_clustering(spec, args, name=label)
            for spec, label in zip(args.files, labels, strict=True)
        ]
        first, reference = common_ids(read, labels, args.id_type)
        prediction = {labels[0]: first}
        notes = []
        on_missing = args.on_missing
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = evaluate(prediction, reference, args.metrics, on_missing=on_missing)
    for warning in caught:
        if args.demo and issubclass(warning.category, CoverageWarning):
            continue  # the demo's own note already says what was dropped
        message = flag_terms(str(warning.message), {"on_missing": "--on-missing"})
        notes.append(f"{warning.category.__name__}: {message}")
    _note(notes, args)
    if args.format == "table":
        # text tables read down: one row per metric, one column per prediction
        text = format_text(table).T.rename_axis("metric").rename_axis(None, axis=1)
        write_output(text.to_string() + "\n", args)
    else:
        emit(table, args)  # evaluate's layout: one row per prediction
    return 0


def _demo() -> tuple[pd.Series, pd.Series, list[str]]:
    from er_evaluation._contingency import contingency
    from er_evaluation.datasets import load_patentsview_predictions

    versions = load_patentsview_predictions([DEMO_PREDICTION, DEMO_REFERENCE])
    prediction, reference = versions[DEMO_PREDICTION], versions[DEMO_REFERENCE]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CoverageWarning)
        table = contingency(prediction, reference, on_missing="restrict")
    dropped = table.dropped_prediction + table.dropped_reference
    notes = [
        f"PatentsView inventor disambiguation {DEMO_PREDICTION} (prediction, {len(prediction):,} "
        f"mentions) against {DEMO_REFERENCE} (reference, {len(reference):,} mentions).",
        f"Each version has its own population: evaluated on the {table.n_shared:,} shared "
        f"mentions; {dropped:,} mentions dropped ({table.dropped_reference:,} of "
        f"{DEMO_REFERENCE} absent from {DEMO_PREDICTION}, {table.dropped_prediction:,} the "
        "other way).",
    ]
    return prediction, reference, notes


def _note(lines: list[str], args: argparse.Namespace) -> None:
    """Notes go with the text table on stdout; next to machine-readable output, to stderr."""
    if not lines:
        return
    stream = sys.stdout if args.format == "table" and not args.output else sys.stderr
    stream.write("".join(line + "\n" for line in lines) + ("\n" if stream is sys.stdout else ""))
