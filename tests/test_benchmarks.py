"""Every script in benchmarks/ runs from this checkout: ``python benchmarks/<script> --smoke``
(toy sizes, seconds) exits 0 and writes nothing into the repository. Run by CI (marked
``slow``: together they take minutes); the Spark part of bench_engines.py is marked
``spark`` as well."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
SCRIPTS = sorted(p.name for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_"))
SKIPPED_DIRS = {".git", ".venv", "__pycache__", ".pytest_cache", ".ruff_cache", ".hypothesis"}

CASES = [pytest.param(script, [], id=script) for script in SCRIPTS] + [
    pytest.param(
        "bench_engines.py",
        ["--tasks", "spark_metrics", "spark_estimate"],
        id="bench_engines.py-spark",
        marks=pytest.mark.spark,
    )
]


def _files(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` (caches and virtual environments left out): size and
    modification time."""
    found = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
        for name in files:
            stat = os.stat(os.path.join(folder, name))
            found[os.path.relpath(os.path.join(folder, name), root)] = (
                stat.st_size,
                stat.st_mtime_ns,
            )
    return found


def test_every_script_is_covered():
    assert len(SCRIPTS) >= 15, SCRIPTS
    for script in SCRIPTS:
        assert "--smoke" in (BENCHMARKS / script).read_text(), f"{script} has no --smoke mode"


@pytest.mark.slow
@pytest.mark.parametrize("script, extra", CASES)
def test_smoke_run(script, extra):
    before = _files(ROOT)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--smoke", *extra],
        cwd=ROOT,  # as a developer runs it: a relative output path would land in the repository
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, f"{script} --smoke failed:\n{done.stderr[-3000:]}"
    after = _files(ROOT)
    changed = sorted(
        path for path in set(before) | set(after) if before.get(path) != after.get(path)
    )
    assert not changed, f"{script} --smoke wrote into the repository: {changed}"


def _anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces to
    hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_links_into_the_benchmark_reference_resolve():
    """Every ``#anchor`` link of benchmarks/README.md, and every link into it from the
    README and the documentation pages (which include it as benchmarks.md), names one of
    its headings."""
    reference = (BENCHMARKS / "README.md").read_text()
    anchors = {_anchor(h) for h in re.findall(r"^#+ (.+)$", reference, flags=re.M)}
    links = re.findall(r"\]\(#([^)]+)\)", reference)
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        links += re.findall(r"benchmarks(?:/README)?\.md#([\w\-]+)", page.read_text())
    assert links
    assert not [link for link in links if link not in anchors]


def _run_from_root(args: list[str], shown: object) -> str:
    """Run ``args`` from the repository root; its output. It must exit 0 and write
    nothing into the repository (``shown`` names the command in the failure)."""
    before = _files(ROOT)
    done = subprocess.run(
        args,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert _files(ROOT) == before, f"{shown} wrote into the repository"
    return done.stdout


def _report(*argv: str) -> str:
    return _run_from_root([sys.executable, *argv], argv)


def _reference_command(start: str) -> str:
    """Run the one command of benchmarks/README.md that begins with ``start`` as shown
    (bash, which expands braces), from the repository root; its output. It must exit 0
    and write nothing into the repository."""
    reference = (BENCHMARKS / "README.md").read_text()
    (command,) = re.findall(rf"^ +({re.escape(start)}.*)$", reference, re.M)
    command = command.split("  #")[0]  # a trailing comment
    python = shlex.quote(sys.executable)
    return _run_from_root(["/bin/bash", "-c", command.replace("python", python, 1)], command)


def _tables_in_reference(out: str, sizes: list[int]) -> None:
    """The Markdown tables of ``out`` (``sizes``: their line counts, header and rule
    included) each stand in benchmarks/README.md as printed, line for line."""
    rows = [line for line in out.splitlines() if line.startswith("|")]
    assert len(rows) == sum(sizes)
    lines = (BENCHMARKS / "README.md").read_text().splitlines()
    for end, size in zip(np.cumsum(sizes), sizes, strict=True):
        table = rows[end - size : end]
        start = lines.index(table[0])
        assert lines[start : start + size] == table


def test_the_zipf_table_is_rebuilt_from_its_stored_summary():
    """``bench_stratified.py zipf --report`` needs no per-replicate file: from
    benchmarks/data alone it prints the reference's table, row for row."""
    out = _report(str(BENCHMARKS / "bench_stratified.py"), "zipf", "--report")
    rows = [line for line in out.splitlines() if re.match(r"\| \d+% \| \d+ \|", line)]
    reference = (BENCHMARKS / "README.md").read_text().splitlines()
    assert len(rows) == 16
    assert all(row in reference for row in rows), [r for r in rows if r not in reference]


def test_the_label_reuse_table_is_rebuilt_from_its_stored_summary():
    """``bench_pairs_reuse.py --report <stored summary> --markdown``, the reference's
    command, prints the reference's table (three pools x three estimates of B) from
    benchmarks/data alone."""
    out = _reference_command("python benchmarks/bench_pairs_reuse.py --report benchmarks/data/")
    _tables_in_reference(out, [2 + 9])


def test_the_label_reuse_report_names_a_file_it_cannot_use():
    """A missing file, or a CSV of another benchmark, stops with a message naming it (exit
    2, no traceback)."""
    script = str(BENCHMARKS / "bench_pairs_reuse.py")
    for path in ["missing.csv", str(BENCHMARKS / "data" / "bench_pairs_intervals.csv")]:
        done = subprocess.run(
            [sys.executable, script, "--report", path, "--markdown"],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 2
        assert f"--report {path}" in done.stderr
        assert "Traceback" not in done.stderr


def test_the_label_efficiency_tables_are_rebuilt_by_the_reference_command():
    """The reference's ``bench_pairs.py --report`` command prints its label-efficiency and
    package tables from benchmarks/data alone."""
    out = _reference_command("python benchmarks/bench_pairs.py --report")
    _tables_in_reference(out, [2 + 6, 2 + 6])  # six pools each


def test_the_pair_interval_table_is_rebuilt_by_the_reference_command():
    """The reference's ``bench_pairs_intervals.py --report --from-summary`` command prints
    its table (six pools x three methods at 2,000 labels) and the flag summary its text
    cites, from the stored summary."""
    out = _reference_command("python benchmarks/bench_pairs_intervals.py --report --from-summary")
    _tables_in_reference(out, [2 + 18])
    assert "misses flagged: 212 of 701" in out


def test_the_equality_test_table_is_rebuilt_by_the_reference_command():
    """``bench_breakdown.py --report`` ends with the reference's equality-test table (three
    truths x two sizes), from the stored CSVs."""
    out = _reference_command("python benchmarks/bench_breakdown.py --report")
    table = out.split("Equality test across A/B/C at 5%, over the cells above:")[1]
    _tables_in_reference(table, [2 + 6])


def test_the_planner_table_is_rebuilt_by_the_reference_command():
    """``bench_planner.py --report ... --metrics pairwise_precision`` prints the reference's
    precision table (16 cells) from the stored summary."""
    out = _reference_command("python benchmarks/bench_planner.py --report")
    _tables_in_reference(out, [2 + 16])
    assert "- all cells: mean achieved/target 0.932 over 30 cells (range 0.77-1.11)" in out


def test_the_change_focused_rows_are_rebuilt_from_their_stored_summaries():
    """``bench_stratified.py change --report --extra-rate R`` (the reference's command, and
    likewise for 1%) prints the reference's rows of that rate from the stored summary."""
    out = _reference_command("python benchmarks/bench_stratified.py change --report")
    out += _report(
        str(BENCHMARKS / "bench_stratified.py"), "change", "--report", "--extra-rate", "0.01"
    )
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    rows = [line for line in rows if not line.startswith("| B - A |")]
    reference = (BENCHMARKS / "README.md").read_text().splitlines()
    start = reference.index(rows[0])
    assert len(rows) == 9
    assert reference[start : start + 9] == rows


def test_the_simulation_study_tables_are_rebuilt_by_the_reference_command():
    """``simulation_study.py --report benchmarks/data/simulation_study.csv`` prints the
    reference's two tables (four rows per truth) from the stored cells."""
    out = _reference_command("python benchmarks/simulation_study.py --report")
    _tables_in_reference(out, [2 + 4, 2 + 4])


def test_the_ais_table_is_rebuilt_by_the_reference_command():
    """``bench_pairs_ais.py --report benchmarks/data/bench_pairs_ais_v4_*.csv`` prints the
    reference's AIS table (six pools)."""
    out = _reference_command("python benchmarks/bench_pairs_ais.py --report")
    _tables_in_reference(out, [2 + 6])


def test_the_decay_table_is_rebuilt_by_the_reference_command():
    """``bench_pairs.py --decay-report`` prints the reference's decay table (six pools)
    from the stored per-run rows and the package's summary."""
    out = _reference_command("python benchmarks/bench_pairs.py --decay-report")
    _tables_in_reference(out, [2 + 6])


def test_the_waves_report_prints_the_stored_summaries_and_writes_nothing():
    """``bench_stratified.py waves --report`` prints the published summary (it used to
    rewrite it from whatever replicates benchmarks/_out held); the reference's union
    figures (bias within 2 MC SE in 9 of 12 cells, coverage 0.927-0.985) are those of the
    stored summaries."""
    union = []
    for truth in ("rldata10000", "patentsview"):
        out = _report(
            str(BENCHMARKS / "bench_stratified.py"), "waves", "--report", "--truth", truth
        )
        stored = pd.read_csv(BENCHMARKS / "data" / f"bench_stratified_waves_{truth}.csv")
        assert f"{stored['coverage'].iloc[0]:.4f}" in out
        union.append(stored[stored["design"] == "union of waves"])
    union = pd.concat(union)
    reference = (BENCHMARKS / "README.md").read_text()
    within = int((union["bias"].abs() <= 2 * union["bias_mc_se"]).sum())
    assert f"bias within 2 MC SE in {within} of {len(union)} truth x rate x metric" in reference
    low, high = union["coverage"].min(), union["coverage"].max()
    assert f"coverage {np.floor(low * 1000) / 1000:.3f}-{high:.3f}" in reference


def test_the_pair_interval_report_shows_no_infinite_or_undefined_figure():
    """Cells whose estimates are all exact show "exact" as width ratio (RMSE 0: there is
    no error for the width to reflect), not an infinite ratio; an undefined bootstrap SE
    shows as "n/a"."""
    code = (
        "import sys, pandas as pd; sys.path.insert(0, 'benchmarks'); "
        "import bench_pairs_intervals as b; "
        "s = pd.read_csv('benchmarks/data/bench_pairs_intervals.csv'); "
        "print(b.markdown(s)); print(b.flag_summary(s))"
    )
    out = _report("-c", code)
    stored = pd.read_csv(BENCHMARKS / "data" / "bench_pairs_intervals.csv")
    assert ((stored["rmse"] == 0) & ~stored["exact"]).any()  # the case is in the data
    assert not re.search(r"\b(inf|nan)\b", out, flags=re.I)
    restaurant = next(line for line in out.splitlines() if "| restaurant | oasis | 1,000 |" in line)
    assert restaurant.split(" | ")[5].startswith("exact / ")
