"""``er-eval review``: a hand-review project from the command line, as in the review app.

    er-eval review init       PROJECT_DIR (--demo | --records FILE --prediction SPEC...)
                              --reviewers a,b
    er-eval review draw       PROJECT_DIR --size N [--reviewers a,b] [--double SHARE]
                              [--design D] [--version V] [--earlier exclude|include]
    er-eval review draw       PROJECT_DIR --design recommended --records N [--reviewers a,b]
                              [--double SHARE] [--version V]
    er-eval review sheet      PROJECT_DIR -o sheet.csv [--reviewer NAME]
    er-eval review import     PROJECT_DIR sheet.csv [--reviewer NAME]
    er-eval review status     PROJECT_DIR
    er-eval review agreement  PROJECT_DIR [--per-record]
    er-eval review adjudicate PROJECT_DIR [RECORD --by NAME (--keep REVIEWER | --remove IDS
                              --add IDS)]
    er-eval review export     PROJECT_DIR -o benchmark.csv [--reviewer NAME]
    er-eval review estimate   PROJECT_DIR [--versions V...] [--metrics M...] [--reviewer NAME]
    er-eval review reviewers  PROJECT_DIR [--add NAME...]

A team can review in a spreadsheet and keep every guarantee of the app: ``sheet`` writes
the queue as a review sheet (one row per item: the sampled record, its predicted cluster
and its records, and empty ``status``, ``remove``, ``add`` and ``notes`` columns; each
row is decided by ``correct`` or ``skipped`` in ``status``, or by the ids it removes or
adds), ``import`` checks a filled-in sheet as the app checks a save (known reviewers,
queue items, ids of the sample's version, a decision on every row; every problem listed,
one per line, and nothing imported unless every row is valid), a
double-reviewed record decided differently waits in ``adjudicate``, and ``export`` writes
the very benchmark ``estimate`` uses (with its design beside it, so ``er-eval estimate
--reference benchmark.csv`` gives the same numbers).

The folder holds ``project.json`` (data, reviewers, sample design), ``queue.parquet``
(the records to review), ``reviews.sqlite`` (every saved decision, append-only) and
``drafts.sqlite`` (unsaved edits in the app); see :class:`er_evaluation.review.Project`.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from er_evaluation._parameters import check_count, check_proportion
from er_evaluation.cli._common import (
    add_command,
    add_output_options,
    emit,
    flag_terms,
    split_spec,
)
from er_evaluation.cli.estimate import emit_estimates, estimate_notes
from er_evaluation.errors import UnreliableEstimateWarning
from er_evaluation.io import read_table, write_table_atomic
from er_evaluation.review import DESIGNS, Project, ReviewError, SampleSettings, read_sheet
from er_evaluation.review._design import distinct_units_note
from er_evaluation.review._estimates import DEFAULT_METRICS
from er_evaluation.review.project import EARLIER


def register(subparsers) -> None:
    parser = add_command(
        subparsers,
        "review",
        __doc__,
        "a hand-review project: init, draw, sheet, import, status, agreement, adjudicate, "
        "export, estimate",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    def action(name: str, help: str, func) -> argparse.ArgumentParser:
        sub = actions.add_parser(name, help=help, description=help)
        sub.add_argument("project", metavar="PROJECT_DIR")
        sub.set_defaults(func=func)
        return sub

    init = action("init", "make a new review project", run_init)
    data = init.add_mutually_exclusive_group(required=True)
    data.add_argument("--demo", action="store_true", help="the bundled PatentsView data")
    data.add_argument("--records", metavar="FILE", help="the records table (CSV or Parquet)")
    init.add_argument("--id-col", help="record id column of --records (default: its first)")
    init.add_argument(
        "--fields", help="comma-separated columns shown to reviewers (default: all others)"
    )
    init.add_argument("--block-col", help="block column of --records (optional)")
    init.add_argument(
        "--prediction",
        nargs="+",
        metavar="SPEC",
        help="predicted clusterings, one per version: [NAME=]FILE[:ID_COL:CLUSTER_COL] "
        "(NAME defaults to the file's name; a two-column file is record id, cluster id)",
    )
    init.add_argument(
        "--benchmark", metavar="SPEC", help="an existing benchmark: FILE[:ID_COL:CLUSTER_COL]"
    )
    init.add_argument("--reviewers", required=True, help="comma-separated reviewer names")

    draw = action("draw", "draw the review queue (and split it among reviewers)", run_draw)
    draw.add_argument("--size", type=int, help="units to draw")
    draw.add_argument(
        "--records",
        type=int,
        help="--design recommended: the budget of records to read (as er-eval plan --records)",
    )
    draw.add_argument(
        "--design",
        choices=list(DESIGNS),
        default="records",
        help="records (default), clusters, blocks, stratified, change or recommended (the "
        "largest predicted clusters reviewed whole, more drawn by size band, records drawn "
        "for recall: er-eval plan --records)",
    )
    draw.add_argument("--version", help="version to draw from (default: the last)")
    draw.add_argument("--other-version", help="the version a change design compares with")
    draw.add_argument(
        "--take-all-size", type=int, help="stratified design: review clusters this large whole"
    )
    draw.add_argument("--seed", type=int, default=1, help="seed of the draw (default 1)")
    draw.add_argument(
        "--reviewers", help="comma-separated names to split the queue among (default: shared)"
    )
    draw.add_argument(
        "--double",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="share of the units also given to a second, blind reviewer (default 0)",
    )
    draw.add_argument(
        "--earlier",
        choices=EARLIER,
        help="when decisions are saved for the current sample: exclude them from the new "
        "one (they stay in the history) or include them",
    )

    sheet = action("sheet", "write the queue as a review sheet to fill in", run_sheet)
    sheet.add_argument("-o", "--output", required=True, help="CSV or Parquet file to write")
    sheet.add_argument("--reviewer", help="only this reviewer's items, with their name")

    imp = action("import", "import a filled-in review sheet", run_import)
    imp.add_argument("sheet", metavar="SHEET", help="CSV or Parquet review sheet")
    imp.add_argument("--reviewer", help="reviewer of rows without a reviewer column/cell")
    for part, default in (("sampled", "sampled_record"), ("remove", "remove"), ("add", "add")):
        imp.add_argument(
            f"--{part}-col",
            default=default,
            metavar="COL",
            help=f"the sheet's column of the {part} ids (default {default})",
        )

    status = action("status", "what is reviewed, by whom, and what is open", run_status)
    add_output_options(status)

    agree = action("agreement", "agreement of double-reviewed records", run_agreement)
    agree.add_argument(
        "--per-record", action="store_true", help="one row per double-reviewed record"
    )
    add_output_options(agree)

    adjudicate = action(
        "adjudicate", "list disagreements, or record the final decision on one", run_adjudicate
    )
    adjudicate.add_argument("record", metavar="RECORD", nargs="?", help="the sampled record")
    adjudicate.add_argument("--by", help="the adjudicator (one of the project's reviewers)")
    adjudicate.add_argument("--keep", metavar="REVIEWER", help="keep this reviewer's decision")
    adjudicate.add_argument("--remove", help="ids to remove (comma-separated)")
    adjudicate.add_argument("--add", help="ids to add (comma-separated)")
    adjudicate.add_argument("--notes", default="", help="notes of the final decision")
    add_output_options(adjudicate)

    export = action("export", "write the benchmark the estimates use", run_export)
    export.add_argument("-o", "--output", required=True, help="CSV or Parquet file to write")
    export.add_argument("--reviewer", help="under this reviewer's own decisions")

    estimate = action("estimate", "estimates from the reviewed sample", run_estimate)
    estimate.add_argument(
        "--versions", nargs="+", help="versions to evaluate (default: all the sample allows)"
    )
    estimate.add_argument(
        "--metrics", nargs="+", help=f"metrics (default: {', '.join(DEFAULT_METRICS)})"
    )
    estimate.add_argument("--reviewer", help="under this reviewer's own decisions")
    add_output_options(estimate)

    reviewers = action("reviewers", "list (or add) the project's reviewers", run_reviewers)
    reviewers.add_argument("--add", nargs="+", metavar="NAME", help="reviewers to add")


def _names(text: str | None, flag: str = "--reviewers") -> list[str]:
    """The comma-separated names of ``text``; a flag given without a name is an error."""
    names = [n.strip() for n in (text or "").split(",") if n.strip()]
    if text is not None and not names:
        raise ValueError(f"{flag} {text!r} names no one: give comma-separated names")
    return names


def _say(message: str) -> None:
    """What an action did (its result, on stdout)."""
    print(message)


def _note(message: str) -> None:
    print(f"er-eval review: {message}", file=sys.stderr)


# ------------------------------------------------------------------ setting up


def _columns(path: str) -> list[str]:
    return [str(c) for c in read_table(path).columns]


def _prediction_entry(spec: str) -> dict:
    name, _, rest = spec.rpartition("=") if "=" in spec.split(":", 1)[0] else ("", "", spec)
    path, id_col, cluster_col = split_spec(rest)
    if id_col is None or cluster_col is None:
        columns = _columns(path)
        if len(columns) != 2:
            raise ValueError(
                f"--prediction {path} has {len(columns)} columns ({', '.join(columns)}): give "
                f"them as {path}:ID_COL:CLUSTER_COL"
            )
        id_col, cluster_col = columns
    version = name or Path(path).name.split(".", 1)[0]
    return {
        "path": str(Path(path).absolute()),
        "version": version,
        "id_col": id_col,
        "cluster_col": cluster_col,
    }


def _source(args: argparse.Namespace) -> dict | None:
    if args.demo:
        if args.prediction or args.benchmark:
            raise ValueError("--demo uses the bundled data: give no --prediction or --benchmark")
        return None
    if not args.prediction:
        raise ValueError("--records needs at least one --prediction")
    columns = _columns(args.records)
    id_col = args.id_col or columns[0]
    if id_col not in columns:
        raise ValueError(f"--id-col {id_col!r} is not a column of {args.records}: {columns}")
    fields = _names(args.fields, "--fields") or [c for c in columns if c != id_col]
    unknown = [c for c in fields if c not in columns]
    if unknown:
        raise ValueError(f"--fields {unknown} are not columns of {args.records}: {columns}")
    source = {
        "source": "files",
        "records": {
            "path": str(Path(args.records).absolute()),
            "id_col": id_col,
            "block_col": args.block_col,
            "fields": fields,
        },
        "predictions": {"layout": "long", "files": [_prediction_entry(s) for s in args.prediction]},
    }
    if args.benchmark:
        entry = _prediction_entry(args.benchmark)
        source["benchmark"] = {k: entry[k] for k in ("path", "id_col", "cluster_col")}
    return source


def run_init(args: argparse.Namespace) -> int:
    project = Project.init(args.project, source=_source(args), reviewers=_names(args.reviewers))
    data = project.data
    _say(
        f"made {project.folder}: {len(data.records):,} records, versions "
        f"{', '.join(data.versions)}; reviewers {', '.join(project.reviewers)}"
    )
    return 0


def run_reviewers(args: argparse.Namespace) -> int:
    project = Project.open(args.project)
    if args.add:
        project.add_reviewers(args.add)
    print("\n".join(project.reviewers))
    return 0


def run_draw(args: argparse.Namespace) -> int:
    if args.design == "recommended":
        if args.records is None or args.size is not None:
            raise ValueError("--design recommended takes --records N (records to read), not --size")
        size = args.records
    else:
        if args.records is not None or args.size is None:
            raise ValueError(
                f"--design {args.design} takes --size N (units to draw); --records is the "
                "recommended design's budget"
            )
        size = args.size
    check_count(size, "--records" if args.design == "recommended" else "--size")
    check_proportion(args.double, "--double")
    project = Project.open(args.project)
    reviewers = _names(args.reviewers)
    if reviewers:
        reviewers = project.add_reviewers(reviewers)
    settings = SampleSettings(
        design=args.design,
        size=size,
        seed=args.seed,
        version=args.version or project.data.versions[-1],
        reviewers=tuple(reviewers),
        double_share=args.double,
        take_all_size=args.take_all_size,
        other_version=args.other_version,
    )
    queue = project.draw(settings, earlier=args.earlier)
    _say(f"drew {queue['unit'].nunique():,} units ({len(queue):,} records) to review")
    if reviewers:
        load = project.workload()
        for name, row in load.iterrows():
            _say(
                f"  {name}: {row['all_units']:,} units ({row['all_records']:,} records), "
                f"{row['second_units']:,} of them as blind second reviewer"
            )
    return 0


# ------------------------------------------------------------------ reviewing in a sheet


def run_sheet(args: argparse.Namespace) -> int:
    project = Project.open(args.project)
    overview = project.overview(args.reviewer, mine_only=args.reviewer is not None)
    if overview.empty:
        raise ReviewError(
            f"no item of the queue is assigned to {project.reviewer(args.reviewer)}: no sheet "
            "written (draw the sample again with them among --reviewers)"
        )
    rows = []
    for item in overview.itertuples(index=False):
        cluster, members = project.members(item.record)
        rows.append(
            {
                "sampled_record": item.record,
                "predicted_cluster": cluster,
                "cluster_records": " ".join(map(str, members)),
                "reviewer": project.reviewer(args.reviewer) if args.reviewer else "",
                "status": "",
                "remove": "",
                "add": "",
                "notes": "",
            }
        )
    path = write_table_atomic(pd.DataFrame(rows), args.output)
    _say(f"wrote {len(rows):,} items to {path}")
    return 0


_SHEET_OPTIONS = ("reviewer", "sampled_col", "remove_col", "add_col")


def run_import(args: argparse.Namespace) -> int:
    project = Project.open(args.project)
    try:
        sheet = read_sheet(args.sheet)
        events = project.import_sheet(
            sheet,
            reviewer=args.reviewer,
            sampled_col=args.sampled_col,
            remove_col=args.remove_col,
            add_col=args.add_col,
        )
    except ReviewError as error:
        # every row's problem on its own line, as the sheet's rows are, in flag terms
        flags = {name: f"--{name.replace('_', '-')}" for name in _SHEET_OPTIONS}
        first, *rest = flag_terms(str(error), flags).splitlines()
        print(f"er-eval review import: error: {args.sheet}: {first}", file=sys.stderr)
        for line in rest:
            print(f"  {line.strip()}", file=sys.stderr)
        return 1
    unchanged = len(sheet) - len(events)
    _say(
        f"imported {len(events):,} decision{'' if len(events) == 1 else 's'} from {args.sheet}"
        + (
            f" ({unchanged:,} row(s) repeat their reviewer's decision as it is: not saved again)"
            if unchanged
            else ""
        )
    )
    open_items = project.disagreements()
    if len(open_items):
        _note(f"{len(open_items)} record(s) decided differently wait for adjudication")
    return 0


# ------------------------------------------------------------------ reading


def run_status(args: argparse.Namespace) -> int:
    rows = Project.open(args.project).status()
    table = pd.DataFrame({"value": pd.Series(rows, dtype=object)})
    table.index.name = "item"
    emit(table, args)
    if "distinct_sampled_clusters" in rows:
        finished = rows["finished_units"]
        _note(
            f"{finished:,} finished units"
            f"{distinct_units_note(finished, rows['distinct_sampled_clusters'])}"
        )
    return 0


def run_agreement(args: argparse.Namespace) -> int:
    project = Project.open(args.project)
    result = project.agreement()
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
    if result.kappa != result.kappa:
        why = (
            "no link decision to compare (each double-reviewed cluster is one record)"
            if result.n_links == 0
            else "the reviewers' link decisions are all one and the same (agreement "
            "expected by chance is 1), so agreement beyond chance cannot be measured"
        )
        _note(f"kappa is undefined: {why}")
    return 0


def run_adjudicate(args: argparse.Namespace) -> int:
    project = Project.open(args.project)
    if args.record is None:
        table = project.disagreements().table
        if table.empty:
            print("no disagreement waits for adjudication")
            return 0
        emit(table.set_index("sampled_record"), args)
        return 0
    if not args.by:
        raise ValueError("--by is required: the adjudicator's name")
    removed, added = _names(args.remove, "--remove"), _names(args.add, "--add")
    if args.keep and (removed or added):
        raise ValueError("give either --keep REVIEWER or --remove/--add, not both")
    if not args.keep and not (removed or added):
        raise ValueError("give --keep REVIEWER, or the final decision with --remove/--add")
    record = _item(project, args.record)
    event = project.adjudicate(
        args.by,
        record,
        keep=args.keep,
        removed=[_item_id(project, r) for r in removed],
        added=[_item_id(project, a) for a in added],
        notes=args.notes,
    )
    _say(f"recorded the final decision on {record!r} (event {event.event_id})")
    return 0


def _item_id(project: Project, text: str):
    """A record id typed on the command line, as the project's records hold it."""
    index = project.data.records.index
    if index.dtype.kind in "iu":
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"{text!r} is not an integer record id like the project's") from None
    return text


def _item(project: Project, text: str):
    record = _item_id(project, text)
    if project.queue is None or record not in set(project.queue["record_id"]):
        raise ReviewError(f"{text!r} is not an item of the review queue")
    return record


def run_export(args: argparse.Namespace) -> int:
    project = Project.open(args.project)
    benchmark, design = project.export(args.output, reviewer=args.reviewer)
    _say(f"wrote {benchmark} and its sample design {design.name}")
    reviewer = project.reviewer(args.reviewer) if args.reviewer else None
    note = project.disagreements().note_under(reviewer)
    if note:
        _note(note)
    return 0


def run_estimate(args: argparse.Namespace) -> int:
    project = Project.open(args.project)
    with warnings.catch_warnings():
        # every unreliable estimate has its one 'not reliable' line under the table
        warnings.simplefilter("ignore", UnreliableEstimateWarning)
        table = project.estimates(
            versions=args.versions, metrics=args.metrics, reviewer=args.reviewer
        )
    emit_estimates(table, ["prediction", "metric"], args)
    sample, _ = project.sample(reviewer=args.reviewer)
    allowed = project.estimable(sample)
    refused = [f"{m}: {why}" for m, why in table.attrs.get("refused", {}).items()]
    reviewer = project.reviewer(args.reviewer) if args.reviewer else None
    open_items = project.disagreements().note_under(reviewer)
    for line in (*estimate_notes(table), *refused, allowed.note, open_items):
        if line:
            print(line, file=sys.stderr)
    return 0
