"""``er-eval summary``: summary statistics of one or more clusterings.

    er-eval summary CLUSTERING... [--names FILE --name-col COL [COL ...]]
    er-eval summary --demo     # the 15 bundled PatentsView versions, with name statistics

Each CLUSTERING is a file (CSV/TSV/Parquet: record id, cluster id). Statistics come from
:func:`er_evaluation.summary.summary_table`: number of records and clusters, cluster
sizes, singleton shares, matching rate and, given names (a file with the record id
column and one or more name columns, joined with spaces), PatentsView's homonymy and
name-variation rates. The names file must cover every record of every clustering.
"""

from __future__ import annotations

import argparse

import pandas as pd

from er_evaluation.cli._common import (
    add_clustering_options,
    add_output_options,
    emit,
    read_clustering,
)
from er_evaluation.errors import ClusteringError
from er_evaluation.io import read_table


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "summary",
        help="summary statistics of clusterings (sizes, singletons, homonymy, name variation)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("files", nargs="*", metavar="CLUSTERING", help="clustering files")
    parser.add_argument(
        "--names", metavar="FILE", help="table of record names (record id column + name columns)"
    )
    parser.add_argument(
        "--name-col",
        nargs="+",
        metavar="COL",
        help="name column(s) of --names, joined with a space (default: its second column)",
    )
    parser.add_argument(
        "--names-id-col",
        metavar="COL",
        help="record id column of --names (default: its first column)",
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="the 15 bundled PatentsView versions, names = first + last name of each mention",
    )
    add_clustering_options(parser)
    add_output_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from er_evaluation.summary import summary_table

    if args.demo:
        if args.files or args.names:
            raise ValueError("--demo takes no input files")
        clusterings, names = _demo()
    else:
        if not args.files:
            raise ValueError("no CLUSTERING file given (or use --demo)")
        clusterings = {path: read_clustering(path, args, name=path) for path in args.files}
        names = _read_names(args) if args.names else None
        if (args.name_col or args.names_id_col) and not args.names:
            raise ValueError("--name-col and --names-id-col need --names FILE")
    emit(summary_table(clusterings, names=names), args)
    return 0


def _demo() -> tuple[dict[str, pd.Series], pd.Series]:
    from er_evaluation.datasets import load_patentsview_mentions, load_patentsview_predictions

    mentions = load_patentsview_mentions()
    names = (mentions["name_first"] + " " + mentions["name_last"]).rename("name")
    return load_patentsview_predictions(), names


def _read_names(args: argparse.Namespace) -> pd.Series:
    table = read_table(args.names)
    id_col = args.names_id_col or table.columns[0]
    name_cols = args.name_col or ([table.columns[1]] if table.shape[1] > 1 else [])
    missing = [c for c in [id_col, *name_cols] if c not in table.columns]
    if missing or not name_cols:
        raise ClusteringError(
            f"{args.names}: column(s) {missing or 'for names'} not found; columns are "
            f"{list(table.columns)}"
        )
    names = table[name_cols[0]].astype("str")
    for col in name_cols[1:]:
        names = names.str.cat(table[col].astype("str"), sep=" ")
    # a record with a missing name component has no usable name: keep it missing, not "nan"
    names = names.where(table[name_cols].notna().all(axis=1))
    return pd.Series(names.to_numpy(), index=pd.Index(table[id_col].to_numpy()), name="name")
