"""``er-eval estimate --blocks`` and ``--by``: recall lost to blocking, and the metrics of
every subgroup of records, from the same reviewed sample (the options and their input;
the estimates are :mod:`er_evaluation.estimators.blocking` and
:mod:`er_evaluation.estimators.groups`)."""

from __future__ import annotations

import argparse

import pandas as pd

from er_evaluation.cli._common import split_spec
from er_evaluation.errors import InputFileError
from er_evaluation.estimators.blocking import blocking_table
from er_evaluation.estimators.groups import (
    compare_by_group,
    estimate_by_group,
    group_equality_test,
)
from er_evaluation.io import read_table
from er_evaluation.sampling import Sample


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--blocks",
        metavar="FILE[:ID:BLOCK]",
        help="block keys of the records (every reviewed record): adds blocking_recall (true "
        "links whose records share a block) and matching_recall (of those, the links found) "
        "for each prediction. BLOCK may name several columns, KEY1,KEY2, for multi-pass "
        "blocking (a pair is compared when its records share a key in any pass). With --demo: "
        "a column of the bundled PatentsView mentions, e.g. block",
    )
    parser.add_argument(
        "--missing-keys",
        choices=["error", "unblocked"],
        default="error",
        help="a reviewed record with an empty block key: stop with an error naming it "
        "(default), or take it as compared with no record in that pass (unblocked)",
    )
    parser.add_argument(
        "--by",
        metavar="FILE[:ID:GROUP]",
        help="group of every record of the predictions (e.g. country, era, name origin): "
        "precision, recall and F1 per group (a group's links have both records in it; links "
        "across groups get their own row), and a test of equality across groups; with "
        "--paired, the differences within each group. With --demo: a column of the bundled "
        "PatentsView mentions, e.g. country",
    )


def _read(spec: str, args: argparse.Namespace, flag: str, several: bool) -> pd.DataFrame:
    """The key columns of ``spec`` indexed by record id (``FILE`` of two columns: id and
    key; ``FILE:ID:COL`` or ``FILE:ID:COL1,COL2``)."""
    path, id_col, cols = split_spec(spec)
    frame = read_table(path, encoding=getattr(args, "encoding", "utf-8"))
    columns = [str(c) for c in frame.columns]
    frame.columns = columns
    wanted = cols.split(",") if cols else None
    if id_col is None and wanted is None and len(columns) == 2:
        id_col, wanted = columns[0], [columns[1]]
    if id_col is None or wanted is None:
        raise InputFileError(
            f"{flag} {path}: say which columns hold the record id and the "
            f"{'key(s)' if several else 'group'}, as {path}:ID_COL:"
            f"{'KEY1,KEY2' if several else 'GROUP_COL'}; its columns are {', '.join(columns)}"
        )
    if not several and len(wanted) > 1:
        raise InputFileError(f"{flag} {path}: name one group column, got {', '.join(wanted)}")
    absent = [c for c in (id_col, *wanted) if c not in columns]
    if absent:
        raise InputFileError(
            f"{flag} {path}: no column {', '.join(map(repr, absent))}; its columns are "
            f"{', '.join(columns)}"
        )
    return frame.set_index(id_col)[wanted]


def _demo_column(column: str, flag: str) -> tuple[pd.Series, int]:
    """A column of the bundled PatentsView mentions; missing values become their own
    label ``(no COLUMN)``, counted in the second value."""
    from er_evaluation.datasets import load_patentsview_mentions

    mentions = load_patentsview_mentions()
    if column not in mentions.columns:
        raise ValueError(
            f"{flag} {column}: with --demo, name a column of the PatentsView mentions: "
            f"{', '.join(mentions.columns)}"
        )
    values = mentions[column]
    missing = int(values.isna().sum())
    return values.astype(object).where(values.notna(), f"(no {column})"), missing


def read_blocks(args: argparse.Namespace) -> tuple[pd.DataFrame | pd.Series, str]:
    """The block keys of ``--blocks`` and a line saying where they come from."""
    if args.demo:
        keys, missing = _demo_column(args.blocks, "--blocks")
        return keys, f"block keys: PatentsView mentions' {args.blocks!r}" + (
            f" ({missing:,} missing keys form the block '(no {args.blocks})')" if missing else ""
        )
    keys = _read(args.blocks, args, "--blocks", several=True)
    return keys, f"block keys: {', '.join(keys.columns)} of {split_spec(args.blocks)[0]}"


def read_groups(args: argparse.Namespace) -> tuple[pd.Series, str]:
    """The groups of ``--by`` and a line saying where they come from."""
    if args.demo:
        groups, missing = _demo_column(args.by, "--by")
        return groups, f"groups: PatentsView mentions' {args.by!r}" + (
            f" ({missing:,} records without one form the group '(no {args.by})')" if missing else ""
        )
    frame = _read(args.by, args, "--by", several=False)
    return frame.iloc[:, 0], f"groups: {frame.columns[0]} of {split_spec(args.by)[0]}"


def blocking_rows(
    args: argparse.Namespace, predictions: dict, sample: Sample, options: dict
) -> tuple[pd.DataFrame, str]:
    """The ``blocking_recall`` and ``matching_recall`` rows of every prediction."""
    if args.paired:
        raise ValueError(
            "--blocks reports each prediction's blocking and matching recall; it does not "
            "combine with --paired"
        )
    keys, line = read_blocks(args)
    options = {k: v for k, v in options.items() if k != "estimator"}
    table = blocking_table(predictions, sample, keys, missing_keys=args.missing_keys, **options)
    return table, line


def group_rows(
    args: argparse.Namespace, predictions: dict, sample: Sample, options: dict
) -> tuple[pd.DataFrame, str]:
    """Per-group estimates (or, with ``--paired``, per-group differences) and the lines
    reporting where the groups come from and the tests of equality across groups."""
    if args.blocks:
        raise ValueError(
            "--by and --blocks give tables of different shapes: run them one at a time"
        )
    groups, line = read_groups(args)
    common = dict(metrics=args.metrics, estimator=args.estimator, on_missing=args.on_missing)
    if args.paired:
        if len(predictions) < 2:
            raise ValueError("--paired needs at least two predictions")
        table = compare_by_group(
            predictions, sample, groups, baseline=args.baseline, **common, **_rest(options)
        )
        baseline = args.baseline or next(iter(predictions))
        tests = group_equality_test(predictions, sample, groups, baseline=baseline, **common)
    else:
        table = estimate_by_group(predictions, sample, groups, **common, **_rest(options))
        tests = group_equality_test(predictions, sample, groups, **common)
    lines = [line, "equality across groups (Wald statistic, Hotelling's F p-value):"]
    for t in tests.itertuples():
        flag = "" if t.reliable else f"; not reliable: {t.reason}"
        lines.append(
            f"  {t.prediction} {t.metric}: W = {t.statistic:.3f}, df = {t.df}, "
            f"p = {t.p_value:.4g} ({t.groups} groups, {t.n_effective:.1f} effective units in "
            f"the smallest){flag}"
        )
    return table, "\n".join(lines)


def _rest(options: dict) -> dict:
    return {k: v for k, v in options.items() if k not in ("estimator", "on_missing")}
