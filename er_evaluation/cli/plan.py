"""er-eval plan: what to review, with its cost in records to read.

    er-eval plan PREDICTION --records 3000 [--benchmark REF] [--write-sample FILE] [--seed 0]
    er-eval plan --demo --records 3000      # PatentsView 2022-06-30: a second wave to the
                                            # Binette 2022 benchmark

The recommended design (er_evaluation.recommend.recommend_design), for a budget of
--records records to read: the largest predicted clusters reviewed whole (they carry most
predicted links and reveal over-merging directly: exact, no sampling error), more
predicted clusters drawn within bands of predicted size and reviewed whole (precision),
and records drawn uniformly at random, the true cluster of each reviewed (recall); F1
from the two. It holds its intervals where a few giant predicted clusters carry most
links. With --benchmark (an existing uniform record benchmark: true clusters of records
drawn uniformly, e.g. PatentsView's) recall comes from the benchmark and the whole budget
goes to the predicted clusters: a second wave that completes it. --write-sample draws the
design (--seed) and writes the records to review, one row per record: an empty
true_cluster column to fill in, part "precision" (review the predicted cluster whole:
split its records by true entity), "recall" (find the drawn record's true cluster, adding
a row for each of its records not listed) or "both" (or "benchmark": already reviewed),
its predicted cluster, stratum and recall draws; and beside it the design
(FILE.sample.json, the format of er-eval review export), so that once filled in

    er-eval estimate PREDICTION --reference FILE:record_id:true_cluster

gives the recommended design's estimates (a reference that does not give the true
cluster of every record the design drew, or holds records of no drawn true cluster, is
refused).

    er-eval plan PREDICTION --half-width 0.02 (--pilot REF | --error-rate 0.05)
                 [--metric pairwise_precision] [--design auto|predicted-clusters|records]
                 [--level 0.95] [--bands 2 5 20 100 500] [--take-all-size N]
                 [--allocation neyman|proportional] [--strata FILE --strata-col COL]
                 [--baseline OTHER_PREDICTION]
    er-eval plan --demo --half-width 0.02   # PatentsView 2022-06-30, Binette 2022 benchmark as pilot

With --half-width instead of --records: how many predicted clusters or records to review,
per stratum, for a target interval half-width of one metric (the sample-size planner).
Designs (--design auto picks the first for precision, the second for recall and F1):
predicted-clusters = whole predicted clusters drawn within bands of predicted size, the
largest reviewed entirely (precision by duality; right on heavy-tailed cluster sizes);
records = records drawn uniformly (or within --bands / --strata strata), their true
clusters reviewed (recall, F1, paired differences with --baseline; for precision on a
heavy-tailed prediction the plan is flagged as optimistic).

Strata are bands of predicted cluster size (--bands, lower bounds above 1; predicted
clusters of at least --take-all-size records reviewed entirely), or a record-level column
of a table (--strata FILE --strata-col COL, record id in the first column). The standard
deviation of each stratum comes from a reviewed pilot sample or existing benchmark
(--pilot: true clusters of records drawn uniformly, --pilot-weights cluster_size; of
clusters drawn uniformly, uniform; or, --pilot-of predicted, whole predicted clusters
drawn uniformly with their records' true clusters) or from an assumed misattribution rate
(--error-rate). The answer (er_evaluation.planning.plan_sample_size) is printed with every
assumption it used: design, variance source, allocation and interval.
"""

from __future__ import annotations

import argparse
import sys

from er_evaluation._sample_file import write_drawn
from er_evaluation.cli._common import (
    add_clustering_options,
    add_command,
    common_ids,
    emit,
    given_flags,
    read_clustering,
    split_spec,
)
from er_evaluation.designs import SIZE_BANDS
from er_evaluation.io import read_table, write_table_atomic
from er_evaluation.planning import PLAN_METRICS, plan_review
from er_evaluation.recommend import RECALL_SHARE, recommend_design
from er_evaluation.sampling import benchmark_sample


def register(subparsers) -> None:
    parser = add_command(
        subparsers,
        "plan",
        __doc__,
        "what to review: the recommended design for a budget of records to read, or the "
        "sample size for a target interval half-width",
    )
    parser.add_argument(
        "prediction", nargs="?", metavar="PREDICTION", help="clustering file of the prediction"
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="PatentsView 2022-06-30 with the Binette 2022 benchmark as pilot",
    )
    parser.add_argument(
        "--records",
        type=int,
        help="budget of records to read: the recommended design (precision from predicted "
        "clusters reviewed whole, recall from records drawn uniformly)",
    )
    parser.add_argument(
        "--benchmark",
        help="with --records: an existing uniform record benchmark (true clusters of records "
        "drawn uniformly) that gives recall; the budget goes to the predicted clusters",
    )
    parser.add_argument(
        "--recall-share",
        type=float,
        default=RECALL_SHARE,
        help=f"with --records: share of the budget for the recall part ({RECALL_SHARE})",
    )
    parser.add_argument(
        "--write-sample",
        metavar="FILE",
        help="with --records: draw the design and write the records to review (CSV, Parquet)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of --write-sample's draw (0)")
    parser.add_argument(
        "--half-width",
        type=float,
        help="instead of --records: the sample size for this target interval half-width",
    )
    parser.add_argument("--metric", choices=PLAN_METRICS, default="pairwise_precision")
    parser.add_argument(
        "--design",
        choices=["auto", "predicted-clusters", "records"],
        default="auto",
        help="auto (default): predicted-clusters for precision, records for recall and F1",
    )
    parser.add_argument(
        "--baseline",
        help="clustering file of a second prediction: plan the paired difference "
        "metric(PREDICTION) - metric(BASELINE) (records design, needs --pilot)",
    )
    parser.add_argument("--level", type=float, default=0.95, help="confidence level (0.95)")
    parser.add_argument(
        "--pilot", help="reviewed true clusters of a pilot sample or existing benchmark"
    )
    parser.add_argument(
        "--pilot-of",
        choices=["true", "predicted"],
        default="true",
        help="what the pilot's clusters are: true clusters (default) or whole predicted "
        "clusters of PREDICTION drawn uniformly, each record labelled with its true cluster",
    )
    parser.add_argument(
        "--pilot-weights",
        choices=["cluster_size", "uniform"],
        default="cluster_size",
        help="how the pilot's clusters were selected (selection probabilities): cluster_size = "
        "records drawn uniformly (default), uniform = clusters drawn uniformly",
    )
    parser.add_argument(
        "--error-rate", type=float, help="assumed misattribution rate instead of a pilot"
    )
    parser.add_argument(
        "--bands",
        type=int,
        nargs="+",
        help="lower bounds of the predicted-size bands above 1 (default: "
        f"{' '.join(map(str, SIZE_BANDS))} for predicted clusters; one stratum, the uniform "
        "design, for records)",
    )
    parser.add_argument(
        "--take-all-size", type=int, help="review predicted clusters of at least this size entirely"
    )
    parser.add_argument("--allocation", choices=["neyman", "proportional"], default="neyman")
    parser.add_argument(
        "--strata", help="table with a stratum column for every record (instead of --bands)"
    )
    parser.add_argument("--strata-col", help="the stratum column of --strata")
    # the planner's size models run in memory: no --engine (it would fail on a table)
    add_clustering_options(parser, engine=False)
    parser.add_argument("-o", "--output", help="write the per-stratum table to this file")
    parser.add_argument("--format", choices=["table", "csv", "json"], default="table")
    parser.set_defaults(func=run)


def _inputs(args: argparse.Namespace):
    if args.demo:
        if args.prediction or args.pilot or args.baseline:
            raise ValueError(
                "--demo uses the bundled data: give no PREDICTION, --pilot or --baseline"
            )
        from er_evaluation.datasets import load_patentsview_benchmark, load_patentsview_predictions

        prediction = load_patentsview_predictions(["2022-06-30"])["2022-06-30"]
        pilot = (
            None if args.error_rate is not None else benchmark_sample(load_patentsview_benchmark())
        )
        return prediction, pilot, None
    if not args.prediction:
        raise ValueError("give a PREDICTION file (or --demo)")
    specs = {"prediction": args.prediction, "baseline": args.baseline, "pilot": args.pilot}
    given = {role: spec for role, spec in specs.items() if spec}
    read = common_ids(
        [read_clustering(spec, args, role) for role, spec in given.items()],
        [split_spec(spec)[0] for spec in given.values()],
        args.id_type,
    )
    clusterings = dict(zip(given, read, strict=True))
    prediction, baseline = clusterings["prediction"], clusterings.get("baseline")
    pilot = None
    if args.pilot:
        reviewed = clusterings["pilot"]
        if args.pilot_of == "predicted":
            unknown = reviewed.index.difference(prediction.index)
            if len(unknown):
                raise ValueError(
                    f"--pilot {args.pilot}: {len(unknown)} record(s) are not in the prediction"
                )
            # the reviewed records' predicted clusters, drawn uniformly, with their truth
            drawn = prediction.reindex(reviewed.index)
            pilot = benchmark_sample(drawn, weights="uniform").reviewed_predicted(reviewed)
        else:
            pilot = benchmark_sample(reviewed, weights=args.pilot_weights)
    return prediction, pilot, baseline


def _recommended(args: argparse.Namespace) -> int:
    """--records: the recommended design, printed, and the sample to review written."""
    misplaced = given_flags(
        {
            "--pilot": args.pilot,
            "--error-rate": args.error_rate,
            "--baseline": args.baseline,
            "--strata": args.strata,
            "--bands": args.bands,
            "--take-all-size": args.take_all_size,
        }
    )
    if misplaced:
        raise ValueError(
            f"{', '.join(misplaced)}: options of the sample-size planner (--half-width), not "
            "to the recommended design (--records)"
        )
    if args.demo:
        if args.prediction or args.benchmark:
            raise ValueError("--demo uses the bundled data: give no PREDICTION or --benchmark")
        from er_evaluation.datasets import load_patentsview_benchmark, load_patentsview_predictions

        prediction = load_patentsview_predictions(["2022-06-30"])["2022-06-30"]
        benchmark = benchmark_sample(load_patentsview_benchmark())
    else:
        if not args.prediction:
            raise ValueError("give a PREDICTION file (or --demo)")
        given = {"prediction": args.prediction, "benchmark": args.benchmark}
        given = {role: spec for role, spec in given.items() if spec}
        prediction, *reviewed = common_ids(
            [read_clustering(spec, args, role) for role, spec in given.items()],
            [split_spec(spec)[0] for spec in given.values()],
            args.id_type,
        )
        benchmark = benchmark_sample(reviewed[0]) if reviewed else None
    design = recommend_design(
        prediction, records=args.records, recall_share=args.recall_share, benchmark=benchmark
    )
    if args.write_sample:
        draw = design.draw(seed=args.seed)
        known = None if benchmark is None else benchmark.reference
        table = design.review_table(draw, benchmark=known)
        path = write_table_atomic(table.reset_index(), args.write_sample)
        _, target = write_drawn(
            design.drawn(draw, benchmark=known),
            path,
            description={"prediction": args.prediction or "demo", "seed": args.seed},
        )
        print(
            f"wrote {len(table):,} records to review to {path} and the design to "
            f"{target.name}: fill in true_cluster (adding a row for each record of a "
            f"recall record's true cluster not listed), then er-eval estimate PREDICTION "
            f"--reference {path}:record_id:true_cluster",
            file=sys.stderr,
        )
    if args.format == "table" and not args.output:
        sys.stdout.write(design.summary() + "\n")
        return 0
    emit(design.table(), args)
    print(design.summary(), file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    if (args.records is None) == (args.half_width is None):
        raise ValueError(
            "give --records N (the recommended design for a budget of N records to read) "
            "or --half-width H (the sample size for a target interval half-width)"
        )
    if args.records is not None:
        return _recommended(args)
    for flag, value in (
        ("--benchmark", args.benchmark),
        ("--write-sample", args.write_sample),
    ):
        if value is not None:
            raise ValueError(f"{flag} belongs to the recommended design (--records)")
    prediction, pilot, baseline = _inputs(args)
    if (pilot is None) == (args.error_rate is None):
        raise ValueError("give exactly one of --pilot (a reviewed sample) or --error-rate")
    strata = None
    if args.strata:
        if not args.strata_col:
            raise ValueError("--strata needs --strata-col (the stratum column)")
        table = read_table(args.strata)
        if args.strata_col not in table.columns:
            raise ValueError(f"--strata-col {args.strata_col!r} is not a column of {args.strata}")
        strata = table.set_index(table.columns[0])[args.strata_col]
    plan = plan_review(
        prediction,
        args.half_width,
        metric=args.metric,
        design=args.design.replace("-", "_"),
        level=args.level,
        pilot=pilot,
        error_rate=args.error_rate,
        baseline=baseline,
        bands=args.bands,
        take_all_size=args.take_all_size,
        strata=strata,
        allocation=args.allocation,
    )
    if args.format == "table" and not args.output:
        sys.stdout.write(plan.summary() + "\n")
        return 0
    emit(plan.table.set_index("stratum"), args)
    print(plan.summary(), file=sys.stderr)
    return 0
