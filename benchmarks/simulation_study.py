"""Simulation study of the precision/recall estimators (Binette et al. 2023, §2.4, Tables 1-2).

Truth: the bundled PatentsView 2022-06-30 disambiguation (133,541 mentions) and the true
identities of RLdata10000. For each misattribution rate a prediction is made by
:func:`er_evaluation.simulation.misattribute`; records are sampled uniformly (their true
clusters reviewed) ``--repetitions`` times per sample size, and every estimator and
interval method of the library is applied. Writes Markdown tables (bias and RMSE like the
paper's Tables 1-2, mean SE vs SD, coverage of every interval method) and the summaries
as CSV.

    nice -n 10 python benchmarks/simulation_study.py --repetitions 500 --out /tmp/simulation
    python benchmarks/simulation_study.py --report benchmarks/data/simulation_study.csv
                        # the reference's tables from a run's reference.csv, stored there
    python benchmarks/simulation_study.py --smoke   # RLdata, one cell, 3 samples, every
                                                    # method; files in a temporary folder
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from er_evaluation.datasets import load_patentsview_predictions, load_rldata10000
from er_evaluation.estimators import CI_METHODS, DEFAULT_CI_METHOD
from er_evaluation.simulation import run_study


def load_truth(name: str) -> pd.Series:
    if name == "patentsview":
        return load_patentsview_predictions(["2022-06-30"])["2022-06-30"]
    if name == "rldata10000":
        return load_rldata10000()[1]
    raise ValueError(f"unknown dataset {name!r}")


def fmt_table(t: pd.DataFrame, digits: int) -> str:
    cols = [f"{r * 100:g}% / n={n}" for r, n in t.columns]
    lines = ["| | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for idx, row in t.iterrows():
        label = " / ".join(map(str, idx)) if isinstance(idx, tuple) else str(idx)
        lines.append(
            f"| {label} | "
            + " | ".join(f"{v:.{digits}f}" if pd.notna(v) else "" for v in row)
            + " |"
        )
    return "\n".join(lines)


def report(name: str, res, seconds: float, truth: pd.Series) -> str:
    s = res.summary
    out = [f"### {name} ({len(truth):,} records, {truth.nunique():,} true clusters)", ""]
    exact = ", ".join(
        f"{r.rate:.0%}: P = {r.pairwise_precision:.4f}, R = {r.pairwise_recall:.4f}"
        for r in res.truth.itertuples()
    )
    out += [
        f"True precision/recall of the misattributed predictions: {exact}. "
        f"{res.repetitions} samples per cell, {seconds / 60:.1f} min.",
        "",
    ]
    for metric in ("pairwise_precision", "pairwise_recall"):
        for stat, digits in (("bias", 4), ("rmse", 4)):
            out += [
                f"**{metric} {stat}** (rate / sample size)",
                "",
                fmt_table(res.table(stat, metric), digits),
                "",
            ]
    ratio = s.assign(se_over_sd=s["mean_se"] / s["sd"]).dropna(subset=["mean_se"])
    t = ratio.pivot_table(
        index=["metric", "estimator"], columns=["rate", "sample_size"], values="se_over_sd"
    )
    out += ["**mean estimated SE / SD of the estimates**", "", fmt_table(t, 2), ""]
    out += [
        f"**coverage of nominal {res.level:.0%} intervals** (Monte-Carlo SE ≈ "
        f"{np.sqrt(0.95 * 0.05 / res.repetitions):.3f}; default method: {DEFAULT_CI_METHOD})",
        "",
        fmt_table(res.coverage_table(), 3),
        "",
    ]
    return "\n".join(out)


TRUTH_NAMES = {"patentsview": "PatentsView", "rldata10000": "RLdata10000"}
P, R = "pairwise_precision", "pairwise_recall"
# the reference's cells: quantity -> (metric, estimator, what is shown)
QUANTITIES = {
    "P, cluster-block: bias / RMSE": (P, "cluster_block", "bias"),
    "P, record: bias / RMSE": (P, "record", "bias"),
    "R, record: bias / RMSE": (R, "record", "bias"),
    "P, cluster-block: coverage `score` / normal": (P, "cluster_block", "coverage"),
    "P, record: coverage `score` / normal": (P, "record", "coverage"),
    "R, record: coverage `score` / normal": (R, "record", "coverage"),
    "P, record: mean width `score` / normal": (P, "record", "width"),
    "P, record: `score` misses wholly below / above the truth": (P, "record", "misses"),
}
SHOWN = list(QUANTITIES)[:1] + list(QUANTITIES)[3:6]  # the rows benchmarks/README.md shows


def reference_rows(name: str, summary: pd.DataFrame, coverage: pd.DataFrame) -> pd.DataFrame:
    """The reference's cells of one truth (``QUANTITIES``, formatted as published) from a
    run's summary and coverage tables: one row per quantity x rate x records drawn."""
    s = summary.set_index(["metric", "estimator", "rate", "sample_size"])
    c = coverage.set_index(["metric", "estimator", "ci_method", "rate", "sample_size"])
    cells = sorted(set(zip(summary["rate"], summary["sample_size"], strict=True)))
    rows = []
    for quantity, (metric, estimator, shown) in QUANTITIES.items():
        for rate, n in cells:
            if shown == "bias":
                r = s.loc[(metric, estimator, rate, n)]
                value = f"{r['bias']:+.4f} / {r['rmse']:.4f}"
            else:
                score = c.loc[(metric, estimator, "score", rate, n)]
                normal = c.loc[(metric, estimator, "normal", rate, n)]
                value = {
                    "coverage": f"{100 * score['coverage']:.1f} / {100 * normal['coverage']:.1f}",
                    "width": f"{score['mean_width']:.3f} / {normal['mean_width']:.3f}",
                    "misses": f"{100 * score['below']:.1f} / {100 * score['above']:.1f}",
                }[shown]
            rows.append(
                {
                    "truth": TRUTH_NAMES.get(name, name),
                    "misattribution_rate": f"{rate:.0%}",
                    "records_drawn": n,
                    "quantity": quantity,
                    "value": value,
                }
            )
    return pd.DataFrame(rows)


def reference_tables(rows: pd.DataFrame, quantities=SHOWN) -> str:
    """The reference's tables from :func:`reference_rows`: per truth, one line per quantity
    of ``quantities``, one column per misattribution rate / records drawn."""
    tables = []
    for truth, g in rows.groupby("truth", sort=False):
        cells = list(dict.fromkeys(zip(g["misattribution_rate"], g["records_drawn"], strict=True)))
        lines = [
            f"| {truth} | " + " | ".join(f"{rate} / {n}" for rate, n in cells) + " |",
            "|---|" + "---:|" * len(cells),
        ]
        for quantity in quantities:
            q = g[g["quantity"] == quantity].set_index(["misattribution_rate", "records_drawn"])
            if len(q):
                lines.append(
                    f"| {quantity} | " + " | ".join(str(q.at[c, "value"]) for c in cells) + " |"
                )
        tables.append("\n".join(lines))
    return "\n\n".join(tables)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["patentsview", "rldata10000"])
    parser.add_argument("--rates", type=float, nargs="+", default=[0.05, 0.1, 0.2])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 200, 400])
    parser.add_argument("--repetitions", type=int, default=500)
    parser.add_argument("--ci-methods", nargs="+", default=list(CI_METHODS))
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=2022)
    parser.add_argument("--out", default="simulation_results", help="output directory")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument(
        "--report",
        type=Path,
        metavar="CSV",
        help="print the reference's tables from a run's reference.csv (as "
        "benchmarks/data/simulation_study.csv) and exit",
    )
    parser.add_argument(
        "--all-rows", action="store_true", help="with --report: every quantity of the CSV"
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="RLdata, one rate and size, 3 samples, 200 bootstrap replicates (seconds); "
        "files in a temporary folder",
    )
    args = parser.parse_args(argv)
    if args.report:
        try:
            rows = pd.read_csv(args.report)
        except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
            parser.error(f"--report {args.report}: cannot read it ({error})")
        if "quantity" not in rows:
            parser.error(f"--report {args.report}: not a reference.csv (no quantity column)")
        print(reference_tables(rows, list(QUANTITIES) if args.all_rows else SHOWN))
        return 0
    if args.smoke:
        with tempfile.TemporaryDirectory() as tmp:
            argv = ["--datasets", "rldata10000", "--rates", "0.1", "--sizes", "50"]
            argv += ["--repetitions", "3", "--n-boot", "200", "--no-progress", "--out", tmp]
            code = run(parser.parse_args(argv))
            print(reference_tables(pd.read_csv(Path(tmp) / "reference.csv")))
            return code
    return run(args)


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    header = [
        f"Machine: {platform.machine()}, {platform.processor() or 'cpu'}, Python "
        f"{platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__}.",
        "Command: `" + " ".join(["python", "benchmarks/simulation_study.py", *sys.argv[1:]]) + "`",
        "",
    ]
    sections, reference = [], []
    for name in args.datasets:
        truth = load_truth(name)
        t0 = time.perf_counter()
        res = run_study(
            truth,
            rates=tuple(args.rates),
            sample_sizes=tuple(args.sizes),
            repetitions=args.repetitions,
            ci_methods=tuple(args.ci_methods),
            n_boot=args.n_boot,
            seed=args.seed,
            progress=not args.no_progress,
        )
        seconds = time.perf_counter() - t0
        res.summary.to_csv(out / f"{name}_summary.csv", index=False)
        res.coverage.to_csv(out / f"{name}_coverage.csv", index=False)
        res.replicates.to_parquet(out / f"{name}_replicates.parquet")
        res.intervals.to_parquet(out / f"{name}_intervals.parquet")
        sections.append(report(name, res, seconds, truth))
        (out / "report.md").write_text("\n".join(header + sections), encoding="utf-8")
        reference.append(reference_rows(name, res.summary, res.coverage))
        pd.concat(reference).to_csv(out / "reference.csv", index=False)
        print(sections[-1], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
