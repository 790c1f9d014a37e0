"""``er-eval report``: one self-contained HTML report of an evaluation.

    er-eval report PROJECT_DIR [-o report.html]            # a review project folder
    er-eval report PREDICTION... --reference REF [--weights cluster_size|uniform]
                   [--on-missing error|restrict|restrict_sample] [-o report.html]
    er-eval report --demo [-o report.html]   # the 15 PatentsView versions, Binette 2022 benchmark

The report holds the estimates of every version with their confidence intervals (a
figure and a table), each estimate's reliability in words, the reviewed sample's design
and size, per-stratum contributions when the sample is stratified, the paired
differences between consecutive versions, the agreement of double review, statistics of
the true clustering and the largest over-merged and split clusters with their records
(:mod:`er_evaluation.report`). Plotly's JavaScript is embedded: the file opens offline
and can be mailed or published as it is. The inputs are those of ``er-eval estimate``; a
reference with the recommended design beside it (``er-eval plan --write-sample``, or
``er-eval review export``) gives the design's figures for the prediction it was drawn
from, and every other prediction's from its records drawn for recall.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from er_evaluation.cli._common import (
    add_clustering_options,
    add_command,
)
from er_evaluation.cli.estimate import add_input_options, load_inputs


def register(subparsers) -> None:
    parser = add_command(
        subparsers,
        "report",
        __doc__,
        "a self-contained HTML report: estimates, reliability, sample, differences, errors",
    )
    add_input_options(parser)
    parser.add_argument(
        "--title", help="the report's title (default: from the data or the project folder)"
    )
    parser.add_argument(
        "-o",
        "--output",
        default="report.html",
        help="the HTML file to write (default report.html)",
    )
    add_clustering_options(parser, engine=False)
    parser.set_defaults(func=run)


def _is_project(args: argparse.Namespace) -> bool:
    return (
        len(args.predictions) == 1
        and Path(args.predictions[0]).is_dir()
        and not args.reference
        and not args.demo
    )


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    try:
        from er_evaluation import report
    except ModuleNotFoundError as error:
        if error.name != "plotly":
            raise
        raise ValueError(
            "the report draws its figures with plotly, which is not installed: "
            'pip install "er_evaluation_toolkit[app]"'
        ) from None

    if not args.output.lower().endswith((".html", ".htm")):
        raise ValueError(f"-o {args.output}: the report is an HTML file; name it *.html")
    if args.demo and not args.predictions and not args.reference:
        built = report.demo_report()
    elif _is_project(args):
        built = report.project_report(args.predictions[0])
    else:
        predictions, sample, source = load_inputs(args)
        built = report.build_report(
            predictions, sample, source=f"{source}.", on_missing=args.on_missing
        )
    if args.title:
        built = replace(built, title=args.title)
    path = report.write_report(built, args.output)
    unreliable = int((~built.estimates["reliable"].astype(bool)).sum())
    print(
        f"er-eval report: wrote {path}; {unreliable} of {len(built.estimates)} estimates are "
        f"not reliable (the report says why)",
        file=sys.stderr,
    )
    return 0
