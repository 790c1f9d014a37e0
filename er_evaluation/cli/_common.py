"""Options and output shared by the subcommands."""

from __future__ import annotations

import argparse
import json
import sys

import pandas as pd

from er_evaluation.io import read_membership


def add_output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", help="write the result to this file instead of stdout")
    parser.add_argument(
        "--format",
        choices=["table", "csv", "json"],
        default="table",
        help="output format (default: an aligned text table)",
    )


def add_clustering_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--id-col", help="record id column of the input files (default: first column)"
    )
    parser.add_argument(
        "--cluster-col", help="cluster id column of the input files (default: second column)"
    )


def read_clustering(path: str, args: argparse.Namespace, name: str) -> pd.Series:
    return read_membership(path, id_col=args.id_col, cluster_col=args.cluster_col, name=name)


def emit(table: pd.DataFrame, args: argparse.Namespace, *, float_format: str = "{:.4f}") -> None:
    """Write ``table`` in the requested format to ``--output`` or stdout."""
    if args.format == "csv":
        text = table.to_csv()
    elif args.format == "json":
        text = (
            json.dumps(json.loads(table.to_json(orient="index", double_precision=15)), indent=2)
            + "\n"
        )
    else:
        formatted = table.copy()
        for col in formatted.columns:
            if pd.api.types.is_float_dtype(formatted[col]):
                formatted[col] = formatted[col].map(
                    lambda v: "nan" if pd.isna(v) else float_format.format(v)
                )
        text = formatted.to_string() + "\n"
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)
