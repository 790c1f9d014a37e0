"""``er-eval pairs``: label record pairs drawn by a sampler and estimate precision/recall/F.

    er-eval pairs sample POOL --labels LABELS.jsonl [--method oasis] [--budget N]
                              [--target-width W]
                              [--oracle reference:FILE | --oracle column:NAME]
                              [--records FILE[:ID_COL]]
    er-eval pairs estimate POOL --labels LABELS.jsonl [--beta 1 ...]
    er-eval pairs pool RECORDS[:ID_COL] --block-col COL --fields F [F ...]
                       --prediction FILE -o POOL.csv [--blocks B ...] [--max-pairs N]
                       [--split-by FIELD]

POOL is a CSV, TSV or Parquet table with one row per candidate record pair:

    id_left,id_right,score,predicted
    r17,r42,0.93,1
    r17,r55,0.41,0

id_left and id_right are record ids (--id-cols to name other columns), score is the
matcher's similarity (any real number, higher = more alike; --score-col) and predicted
is the system's 0/1 decision (--predicted-col), or --prediction FILE gives a clustering
instead (a pair is predicted a match iff both records share a cluster). Each unordered
pair appears once. LABELS is the session's append-only label log: sample resumes it
when it exists. With an oracle, sample labels automatically up to the budget; without,
it asks on stdin (m = match, n = non-match, u = unsure, q = quit and keep everything for
later), showing both records' fields side by side when --records names the records
table.

pool builds POOL from a records table instead: every pair of records sharing a --block-col
value (in --blocks, default all), scored by the mean token Jaccard of --fields, predicted
from the --prediction clustering. Blocks whose pairs exceed --max-pairs (default 2,000,000,
measured in benchmarks/README.md) are refused before any pair is built; --split-by FIELD
pairs only records that also agree on FIELD (block keys become "BLOCK / value").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from er_evaluation.cli._common import (
    add_command,
    add_output_options,
    emit,
    write_output,
)
from er_evaluation.errors import examples
from er_evaluation.io import read_membership, read_table
from er_evaluation.pairs.estimates import PairEstimates, estimate_from_labels
from er_evaluation.pairs.oracles import LabelOracle, oracle_from_reference, parse_answer
from er_evaluation.pairs.pool import (
    DEFAULT_MAX_PAIRS,
    PairPool,
    PoolError,
    _check_binary,
    labelling_pool,
    split_blocks,
)
from er_evaluation.pairs.registry import METHODS
from er_evaluation.pairs.session import LabellingSession
from er_evaluation.pairs.stopping import check_target_width
from er_evaluation.vocabulary import pair_metric_names

_BETA_HELP = (
    "F_beta weights (positive; several allowed; default 1): the F-scores reported beside "
    "precision and recall, named pairwise_f<beta> (1 = pairwise_f1, 2 = pairwise_f2)"
)


def register(subparsers) -> None:
    parser = add_command(
        subparsers, "pairs", __doc__, "sample record pairs to label (OASIS etc.) and estimate P/R/F"
    )
    sub = parser.add_subparsers(dest="pairs_command", metavar="ACTION")
    sample = add_command(
        sub, "sample", __doc__, "draw pairs and label them (oracle or interactive), resumable"
    )
    _pool_options(sample)
    sample.add_argument(
        "--method",
        choices=METHODS,
        help="sampler of a new log (default: oasis); a log being resumed keeps its own",
    )
    sample.add_argument(
        "--budget", type=int, default=1000, help="total distinct labels to reach (default 1000)"
    )
    sample.add_argument(
        "--seed",
        type=int,
        help="sampler seed of a new log (default 0); a resumed log keeps its own",
    )
    sample.add_argument(
        "--strata",
        dest="n_strata",  # the samplers' name: errors about n_strata are shown as --strata
        type=int,
        help="stratified, oasis, ais: CSF strata per prediction group (default 30; 64 for ais)",
    )
    sample.add_argument(
        "--epsilon",
        type=float,
        help="importance, oasis, ais: mixing with the uniform proposal (default 1e-3)",
    )
    sample.add_argument(
        "--oracle",
        help="reference:FILE (a clustering; pairs in one cluster are matches) or column:NAME "
        "(a 0/1 column of POOL); without it, answers are read from stdin",
    )
    sample.add_argument("--beta", type=float, nargs="+", default=[1.0], help=_BETA_HELP)
    sample.add_argument(
        "--target-width",
        type=float,
        metavar="W",
        help="stop before the budget once every interval (precision, recall, each F) is at "
        "most W wide and every estimate reliable; the widths are shown after each answer. "
        "The intervals hold their level at a budget fixed in advance, not at a stop chosen "
        "by the widths",
    )
    sample.add_argument(
        "--records",
        metavar="FILE[:ID_COL]",
        help="records table (CSV, TSV or Parquet; id column: ID_COL or the first) whose "
        "fields are shown side by side for each pair when labelling interactively",
    )
    add_output_options(sample)
    sample.set_defaults(func=_sample)
    est = add_command(
        sub, "estimate", __doc__, "precision, recall and F with SE and CI from a label log"
    )
    _pool_options(est)
    est.add_argument("--beta", type=float, nargs="+", default=[1.0], help=_BETA_HELP)
    est.add_argument("--level", type=float, default=0.95, help="confidence level (default 0.95)")
    add_output_options(est)
    est.set_defaults(func=_estimate)
    build = add_command(
        sub, "pool", __doc__, "build POOL from a records table's blocks (with a size limit)"
    )
    build.add_argument(
        "records",
        metavar="RECORDS[:ID_COL]",
        help="records table (CSV, TSV or Parquet; id column: ID_COL or the first)",
    )
    build.add_argument("--block-col", required=True, help="the records' blocking key column")
    build.add_argument(
        "--fields", nargs="+", required=True, help="columns compared by the Jaccard score"
    )
    build.add_argument(
        "--prediction", required=True, help="clustering file giving each pair's prediction"
    )
    build.add_argument("--blocks", nargs="+", help="block keys to pair (default: every block)")
    build.add_argument(
        "--split-by",
        metavar="FIELD",
        help="refine the blocks by this column: keys 'BLOCK / value', pairs agree on it",
    )
    build.add_argument(
        "--max-pairs",
        type=int,
        default=DEFAULT_MAX_PAIRS,
        help=f"refuse blocks with more candidate pairs than this (default {DEFAULT_MAX_PAIRS:,})",
    )
    build.add_argument(
        "-o", "--output", required=True, metavar="POOL.csv", help="pool table to write (CSV)"
    )
    build.set_defaults(func=_build_pool)
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])


def _pool_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "pool", metavar="POOL", help="pair table (CSV, TSV or Parquet; format above)"
    )
    parser.add_argument(
        "--labels", required=True, help="label log (JSON lines), created or resumed"
    )
    parser.add_argument("--score-col", default="score", help="score column (default: score)")
    parser.add_argument(
        "--predicted-col", default="predicted", help="0/1 prediction column (default: predicted)"
    )
    parser.add_argument(
        "--prediction", help="clustering file giving the prediction instead of --predicted-col"
    )
    parser.add_argument(
        "--id-cols",
        nargs=2,
        default=["id_left", "id_right"],
        metavar=("LEFT", "RIGHT"),
        help="pair id columns",
    )


def _read_pool(args) -> tuple[PairPool, pd.DataFrame]:
    frame = read_table(args.pool)
    prediction = read_membership(args.prediction, name="prediction") if args.prediction else None
    try:
        pool = PairPool.from_frame(
            frame,
            score_col=args.score_col,
            predicted_col=None if prediction is not None else args.predicted_col,
            prediction=prediction,
            id_cols=tuple(args.id_cols),
        )
    except PoolError as error:
        # the message names rows and columns; say which file (or --prediction) they are in
        where = (
            f"{args.pool} with --prediction {args.prediction}"
            if prediction is not None
            else args.pool
        )
        raise PoolError(f"{where}: {error}") from None
    return pool, frame


def _oracle(spec: str, pool: PairPool, frame: pd.DataFrame):
    kind, _, value = spec.partition(":")
    if kind == "reference" and value:
        return oracle_from_reference(pool, read_membership(value, name="reference"))
    if kind == "column" and value:
        if value not in frame.columns:
            raise PoolError(
                f"--oracle column:{value}: no such column; POOL has {list(frame.columns)}"
            )
        try:
            labels = _check_binary(frame[value], value)
        except PoolError as error:
            raise PoolError(f"--oracle column:{value}: {error}") from None
        return LabelOracle(labels)
    raise ValueError(f"--oracle {spec!r}: use reference:FILE or column:NAME")


def _sample(args) -> int:
    # a bad --beta or --target-width is an error before any labelling, not after
    pair_metric_names(args.beta)
    check_target_width(args.target_width)
    pool, frame = _read_pool(args)
    # Only the flags given: a new log takes the sampler's defaults (recorded in its header),
    # a resumed log its own values; a flag the method has no parameter for is an error
    # (make_sampler for a new log, the session for a resumed one), never ignored.
    given = {"n_strata": args.n_strata, "epsilon": args.epsilon}
    params = {name: value for name, value in given.items() if value is not None}
    oracle = _oracle(args.oracle, pool, frame) if args.oracle else None
    session = LabellingSession(
        pool, args.labels, args.method, args.seed, sync_every=100 if oracle else 1, **params
    )
    try:
        if oracle is not None:
            session.run(oracle, args.budget, target_width=args.target_width, beta=args.beta)
        else:
            records = _read_records(args.records) if args.records else None
            _interactive(session, args.budget, records, args.target_width, args.beta)
    finally:
        session.close()
    if session.n_draws:
        print(session.widths(args.target_width, beta=args.beta).describe(), file=sys.stderr)
    print(
        f"{args.labels}: {session.n_labels} labels, {session.n_draws} draws, "
        f"{session.n_unsure} unsure ({session.header['method']}, seed {session.header['seed']})",
        file=sys.stderr,
    )
    if session.n_draws:
        _emit_estimates(session.estimate(beta=args.beta), args)
    return 0


def _read_records(spec: str) -> pd.DataFrame:
    """The records table of ``--records FILE[:ID_COL]``, indexed by record id (as text,
    so ids from a CSV pool and a Parquet records table meet)."""
    path, _, id_col = spec.partition(":") if not Path(spec).exists() else (spec, "", "")
    table = read_table(path)
    id_col = id_col or str(table.columns[0])
    if id_col not in table.columns:
        raise PoolError(f"{path}: no id column {id_col!r}; its columns are {list(table.columns)}")
    ids = table[id_col].astype(str)
    if ids.duplicated().any():
        raise PoolError(
            f"{path}: record id(s) repeated in column {id_col!r}: {examples(ids[ids.duplicated()])}"
        )
    return table.drop(columns=[id_col]).set_axis(pd.Index(ids, name=id_col))


def _side_by_side(records: pd.DataFrame, left, right) -> str:
    """Both records' fields in two columns; '=' marks fields that agree."""
    rows = []
    for rid in (left, right):
        key = str(rid)
        rows.append(records.loc[key] if key in records.index else None)
    missing = [str(r) for r, row in zip((left, right), rows, strict=True) if row is None]
    if missing:
        return f"  (not in --records: {', '.join(missing)})"
    a, b = (row.astype(str).where(row.notna(), "") for row in rows)
    width = max(len(str(c)) for c in records.columns)
    left_width = min(max(a.str.len().max(), len(str(left))), 40)
    lines = [f"  {'':<{width}}   {str(left):<{left_width}}   {right}"]
    for col in records.columns:
        mark = "=" if a[col] == b[col] and a[col] != "" else " "
        lines.append(f"  {str(col):<{width}} {mark} {a[col][:40]:<{left_width}}   {b[col][:40]}")
    return "\n".join(lines)


def _interactive(
    session: LabellingSession,
    budget: int,
    records: pd.DataFrame | None = None,
    target_width: float | None = None,
    beta=1.0,
) -> None:
    out = sys.stderr
    while session.n_labels < budget:
        if session.n_draws:  # the live stopping signal, after each answer
            widths = session.widths(target_width, beta=beta)
            if widths.reached:  # said once more when the command ends
                return
            print(widths.describe(), file=out)
        pending = session.next_pair(budget=budget)
        if session.n_labels >= budget:  # others on the log reached the budget meanwhile
            break
        if pending is None:
            print("no more pairs to label", file=out)
            return
        print(
            f"[{session.n_labels + 1}/{budget}] {pending.id_left!s} <-> {pending.id_right!s} "
            f"(score {pending.score:.4g}, predicted {'match' if pending.predicted else 'non-match'})",
            file=out,
        )
        if records is not None:
            print(_side_by_side(records, pending.id_left, pending.id_right), file=out)
        while True:
            print(
                "match [m] / non-match [n] / unsure [u] / quit [q]: ", end="", file=out, flush=True
            )
            line = sys.stdin.readline()
            if line == "" or line.strip().lower() in ("q", "quit"):
                print("\nsaved; run the same command again to continue", file=out)
                return
            try:
                parse_answer(line.strip())
            except ValueError:
                print(
                    f"{line.strip()!r} is not an answer: type m (match), n (non-match), "
                    "u (unsure) or q (quit)",
                    file=out,
                )
                continue
            if not session.answer(line.strip(), index=pending.index):
                print(
                    f"{pending.id_left} <-> {pending.id_right} was answered meanwhile by another "
                    "session on this log; that first answer is kept, yours is not recorded",
                    file=out,
                )
            break


def _build_pool(args) -> int:
    records = _read_records(args.records)
    if args.block_col not in records.columns:
        raise PoolError(
            f"{args.records}: no block column {args.block_col!r}; its columns are "
            f"{list(records.columns)}"
        )
    # keys as text, like the ids: --blocks 7 names block 7 of a CSV read as integers
    records[args.block_col] = records[args.block_col].astype("string")
    if args.split_by:
        records[args.block_col] = split_blocks(records, args.block_col, args.split_by)
    prediction = read_membership(args.prediction, name="prediction")
    prediction = prediction.set_axis(prediction.index.astype(str))
    blocks = args.blocks if args.blocks else records[args.block_col].dropna().unique()
    pool = labelling_pool(
        records,
        args.block_col,
        list(blocks),
        fields=args.fields,
        prediction=prediction,
        max_pairs=args.max_pairs,
        remedy="Rerun with --split-by FIELD (pairs of its records that also agree on that "
        "field) or choose smaller blocks with --blocks; --max-pairs N raises the limit where "
        "the memory allows.",
    )
    write_output(pool.pairs.to_csv(index=False), args)
    print(f"{args.output}: {pool.n_pairs:,} candidate pairs", file=sys.stderr)
    return 0


def _estimate(args) -> int:
    pool, _ = _read_pool(args)
    session = LabellingSession(pool, args.labels, readonly=True)
    run = session.label_run()
    if run.n_draws == 0:
        raise ValueError(f"{args.labels} holds no labels yet")
    result = estimate_from_labels(run, pool.predicted, beta=args.beta, level=args.level)
    print(
        f"{args.labels}: {run.n_labels} labels, {run.n_draws} draws, {session.n_unsure} unsure, "
        f"method {session.header['method']}",
        file=sys.stderr,
    )
    _emit_estimates(result, args)
    return 0


# the text table's columns; csv and json carry every column of the estimate table
_TEXT_COLUMNS = ["value", "std_error", "ci_low", "ci_high", "n_units", "n_draws", "reliable"]


def _emit_estimates(result: PairEstimates, args) -> None:
    """The estimate table (one row per metric) in the requested format; why an estimate
    is not reliable on stderr."""
    table = result.to_frame().set_index("metric")
    emit(table if args.format != "table" else table[_TEXT_COLUMNS], args)
    for metric, row in table[~table["reliable"].astype(bool)].iterrows():
        print(f"not reliable: {metric}: {row['reason']}", file=sys.stderr)
