"""``er-eval summary``: summary statistics of one or more clusterings.

    er-eval summary CLUSTERING... [--names FILE --name-col COL [COL ...]]
    er-eval summary --demo     # the 15 bundled PatentsView versions, with name statistics

Each CLUSTERING is FILE or FILE:ID_COL:CLUSTER_COL (CSV, TSV or Parquet; a two-column
file is read as record id, cluster id). Statistics come from
:func:`er_evaluation.summary.summary_table`. Text table columns: records, clusters;
mean, median and max cluster size; single_cl = share of clusters with one record;
single_rec = share of records alone in their cluster; matching = share of records in a
cluster of two or more; and, given names (a file with the record id column and one or
more name columns, joined with spaces), PatentsView's homonymy rate (clusters sharing a
name with another cluster), name_var (clusters with more than one name) and no_name
(records without a name). The names file must cover every record of every clustering.
CSV and JSON keep the library's column names.
"""

from __future__ import annotations

import argparse

import pandas as pd

from er_evaluation.cli._common import (
    add_clustering_options,
    add_command,
    add_output_options,
    common_ids,
    emit,
    format_text,
    label_of,
    read_clustering,
    write_output,
)
from er_evaluation.errors import ClusteringError
from er_evaluation.io import read_table


def register(subparsers) -> None:
    parser = add_command(
        subparsers,
        "summary",
        __doc__,
        "summary statistics of clusterings (sizes, singletons, homonymy, name variation)",
    )
    parser.add_argument(
        "files",
        nargs="*",
        metavar="CLUSTERING",
        help="clustering files (FILE or FILE:ID_COL:CLUSTER_COL)",
    )
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
        labels = [label_of(spec) for spec in args.files]
        read = [
            read_clustering(spec, args, name=label)
            for spec, label in zip(args.files, labels, strict=True)
        ]
        clusterings = dict(zip(labels, common_ids(read, labels, args.id_type), strict=True))
        names = _read_names(args) if args.names else None
        if (args.name_col or args.names_id_col) and not args.names:
            raise ValueError("--name-col and --names-id-col need --names FILE")
    table = summary_table(clusterings, names=names)
    if args.format == "table":
        text = format_text(table).rename(columns=_SHORT)
        write_output(text.to_string() + "\n", args)
    else:
        emit(table, args)
    return 0


# compact headers of the text table (explained in the command's help)
_SHORT = {
    "n_records": "records",
    "n_clusters": "clusters",
    "average_cluster_size": "mean_size",
    "median_cluster_size": "median",
    "max_cluster_size": "max_size",
    "singleton_cluster_share": "single_cl",
    "singleton_record_share": "single_rec",
    "matching_rate": "matching",
    "homonymy_rate": "homonymy",
    "name_variation_rate": "name_var",
    "records_without_name": "no_name",
}


def _demo() -> tuple[dict[str, pd.Series], pd.Series]:
    from er_evaluation.datasets import load_patentsview_mentions, load_patentsview_predictions
    from er_evaluation.summary import join_names

    names = join_names(load_patentsview_mentions(), ["name_first", "name_last"])
    return load_patentsview_predictions(), names


def _read_names(args: argparse.Namespace) -> pd.Series:
    table = read_table(args.names, encoding=args.encoding)
    id_col = args.names_id_col or table.columns[0]
    name_cols = args.name_col or ([table.columns[1]] if table.shape[1] > 1 else [])
    missing = [c for c in [id_col, *name_cols] if c not in table.columns]
    if missing or not name_cols:
        raise ClusteringError(
            f"{args.names}: column(s) {missing or 'for names'} not found; columns are "
            f"{list(table.columns)}"
        )
    from er_evaluation.summary import join_names

    names = join_names(table, name_cols)
    return pd.Series(names.to_numpy(), index=pd.Index(table[id_col].to_numpy()), name="name")
