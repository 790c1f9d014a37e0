"""``er-eval pairs``: label record pairs drawn by a sampler and estimate precision/recall/F.

    er-eval pairs sample POOL --labels LABELS.jsonl [--method oasis] [--budget N]
                              [--oracle reference:FILE | --oracle column:NAME]
    er-eval pairs estimate POOL --labels LABELS.jsonl [--alpha 0.5 ...]

POOL is a CSV or Parquet pair table (``id_left``, ``id_right``, a score column and a 0/1
prediction column, or ``--prediction FILE`` with a clustering). LABELS is the session's
append-only label log: ``sample`` resumes it when it exists. With an oracle, ``sample``
labels automatically up to the budget; without, it asks on stdin (m = match, n =
non-match, u = unsure, q = quit and keep everything for later).
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from er_evaluation.cli._common import add_output_options, emit
from er_evaluation.io import read_membership, read_table
from er_evaluation.pairs.estimates import estimate_from_labels
from er_evaluation.pairs.oracles import LabelOracle, oracle_from_reference, parse_answer
from er_evaluation.pairs.pool import PairPool, PoolError, _check_binary
from er_evaluation.pairs.samplers import METHODS
from er_evaluation.pairs.session import LabellingSession


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "pairs", help="sample record pairs to label (OASIS etc.) and estimate P/R/F"
    )
    sub = parser.add_subparsers(dest="pairs_command", metavar="ACTION")
    sample = sub.add_parser(
        "sample", help="draw pairs and label them (oracle or interactive), resumable"
    )
    _pool_options(sample)
    sample.add_argument(
        "--method", choices=METHODS, default="oasis", help="sampler (default: oasis)"
    )
    sample.add_argument(
        "--budget", type=int, default=1000, help="total distinct labels to reach (default 1000)"
    )
    sample.add_argument(
        "--seed", type=int, default=0, help="sampler seed for a new session (default 0)"
    )
    sample.add_argument(
        "--strata",
        type=int,
        help="CSF strata per prediction group (default 30; 64 for ais)",
    )
    sample.add_argument(
        "--epsilon",
        type=float,
        default=1e-3,
        help="OASIS / IS / AIS mixing with uniform (default 1e-3)",
    )
    sample.add_argument(
        "--oracle",
        help="reference:FILE (a clustering; pairs in one cluster are matches) or column:NAME "
        "(a 0/1 column of POOL); without it, answers are read from stdin",
    )
    sample.add_argument(
        "--alpha", type=float, nargs="+", default=[0.5], help="F_alpha weights to report"
    )
    add_output_options(sample)
    sample.set_defaults(func=_sample)
    est = sub.add_parser("estimate", help="precision, recall and F with SE and CI from a label log")
    _pool_options(est)
    est.add_argument(
        "--alpha",
        type=float,
        nargs="+",
        default=[0.5],
        help="F_alpha weights (0.5 = F1; several allowed)",
    )
    est.add_argument("--level", type=float, default=0.95, help="confidence level (default 0.95)")
    add_output_options(est)
    est.set_defaults(func=_estimate)
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])


def _pool_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pool", metavar="POOL", help="pair table (CSV or Parquet)")
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
    if args.score_col in frame.columns:
        frame[args.score_col] = pd.to_numeric(frame[args.score_col], errors="coerce")
    prediction = read_membership(args.prediction, name="prediction") if args.prediction else None
    pool = PairPool.from_frame(
        frame,
        score_col=args.score_col,
        predicted_col=None if prediction is not None else args.predicted_col,
        prediction=prediction,
        id_cols=tuple(args.id_cols),
    )
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
        labels = _check_binary(frame[value], value)
        return LabelOracle(labels)
    raise ValueError(f"--oracle {spec!r}: use reference:FILE or column:NAME")


def _sample(args) -> int:
    pool, frame = _read_pool(args)
    params = {}
    if args.method in ("stratified", "oasis", "ais"):
        default = 64 if args.method == "ais" else 30
        params["n_strata"] = default if args.strata is None else args.strata
    if args.method in ("importance", "oasis", "ais"):
        params["epsilon"] = args.epsilon
    oracle = _oracle(args.oracle, pool, frame) if args.oracle else None
    session = LabellingSession(
        pool, args.labels, args.method, args.seed, sync_every=100 if oracle else 1, **params
    )
    try:
        if oracle is not None:
            session.run(oracle, args.budget)
        else:
            _interactive(session, args.budget)
    finally:
        session.close()
    print(
        f"{args.labels}: {session.n_labels} labels, {session.n_draws} draws, "
        f"{session.n_unsure} unsure ({session.header['method']}, seed {session.header['seed']})",
        file=sys.stderr,
    )
    if session.n_draws:
        emit(session.estimate(alpha=args.alpha).to_frame(), args)
    return 0


def _interactive(session: LabellingSession, budget: int) -> None:
    out = sys.stderr
    while session.n_labels < budget:
        pending = session.next_pair()
        if pending is None:
            print("no more pairs to label", file=out)
            return
        print(
            f"[{session.n_labels + 1}/{budget}] {pending.id_left!s} <-> {pending.id_right!s} "
            f"(score {pending.score:.4g}, predicted {'match' if pending.predicted else 'non-match'})",
            file=out,
        )
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
            except ValueError as error:
                print(error, file=out)
                continue
            session.answer(line.strip())
            break


def _estimate(args) -> int:
    pool, _ = _read_pool(args)
    session = LabellingSession(pool, args.labels, readonly=True)
    run = session.label_run()
    if run.n_draws == 0:
        raise ValueError(f"{args.labels} holds no labels yet")
    result = estimate_from_labels(run, pool.predicted, alpha=args.alpha, level=args.level)
    print(
        f"{args.labels}: {run.n_labels} labels, {run.n_draws} draws, {session.n_unsure} unsure, "
        f"method {session.header['method']}",
        file=sys.stderr,
    )
    emit(result.to_frame(), args)
    return 0
