"""The README's promises hold: its Python examples run, its quick start has exactly two
commands, and the commands it shows exist."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
TEXT = README.read_text(encoding="utf-8")


def _blocks(language: str) -> list[tuple[str, str]]:
    """(section heading, code) of every fenced block in ``language``."""
    found = []
    heading = ""
    for part in re.split(r"(^## .*$)", TEXT, flags=re.MULTILINE):
        if part.startswith("## "):
            heading = part[3:].strip()
            continue
        found += [(heading, code) for code in re.findall(rf"```{language}\n(.*?)```", part, re.S)]
    return found


PYTHON = _blocks("python")


def test_readme_has_python_examples():
    assert len(PYTHON) >= 2
    assert {"Worked example", "Data model"} <= {heading for heading, _ in PYTHON}


@pytest.mark.parametrize(
    "code", [code for _, code in PYTHON], ids=[f"{i}-{h}" for i, (h, _) in enumerate(PYTHON)]
)
def test_readme_python_block_runs(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    monkeypatch.setenv("MPLBACKEND", "Agg")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # examples may warn on purpose (e.g. dropped records)
        exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})


def test_quick_start_is_exactly_two_commands():
    section = TEXT.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.*?)```", section, re.S)
    assert len(commands) == 2
    install, tests = (c.strip() for c in commands)
    assert "\n" not in install and "\n" not in tests  # one copy-paste line each
    assert install.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install -e")
    assert re.search(r"&& er-eval \w+ --demo$", install)
    assert tests == "bash .ci/run"
    assert (README.parent / ".ci" / "run").exists()


def test_commands_shown_in_the_readme_exist():
    from er_evaluation.cli import build_parser

    parser = build_parser()
    subcommands = set(parser._subparsers._group_actions[0].choices)
    shown = set(re.findall(r"^\s*(?:.*&& )?er-eval (\w+)", TEXT, re.MULTILINE))
    assert shown and shown <= subcommands, shown - subcommands


# --- every number the README states is recomputed here -----------------------------------


def _section(title: str) -> str:
    return TEXT.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


@pytest.fixture(scope="module")
def patentsview():
    from er_evaluation.datasets import load_patentsview_benchmark, load_patentsview_predictions

    return load_patentsview_predictions(), load_patentsview_benchmark()


def test_worked_example_numbers():
    import pandas as pd

    import er_evaluation as ee
    from er_evaluation.datasets import load_rldata10000

    records, truth = load_rldata10000()
    assert len(records) == 10_000 and "10,000 RLdata records" in TEXT
    rules = [["fname_c1", "lname_c1", "by"], ["fname_c1", "bd", "by"], ["lname_c1", "bd", "by"]]
    table = records.reset_index()
    pairs = pd.concat([table.merge(table, on=r)[["record_id_x", "record_id_y"]] for r in rules])
    scores = ee.evaluate({"rules": ee.from_pairs(pairs, records=records.index)}, truth).iloc[0]
    precision, recall = scores["pairwise_precision"], scores["pairwise_recall"]
    assert f"pairwise precision {precision:.2f}, recall {recall:.2f}" in TEXT


def test_patentsview_numbers(patentsview):
    versions, benchmark = patentsview
    assert f"{len(versions)} PatentsView releases" in TEXT
    assert f"{benchmark.nunique()} hand-reviewed" in TEXT
    newer = versions["2022-06-30"].index.difference(versions["2021-12-30"].index)
    assert f"the {len(newer):,} newer mentions are dropped" in TEXT


def test_figure_2_example():
    import er_evaluation as ee
    from er_evaluation.metrics import pairwise_precision, pairwise_recall

    truth = ee.from_clusters([[1, 2, 3], [4, 5], [6, 7], [8]])
    pred = ee.from_clusters([[1, 4], [2, 3], [5], [6, 7, 8]])
    got = (pairwise_precision(pred, truth), pairwise_recall(pred, truth))
    assert f"# ({got[0]:g}, {got[1]:g})" in TEXT


def test_bundled_pool_numbers():
    from er_evaluation.datasets import load_pool

    pool = load_pool("abt-buy")
    assert f"# {pool.n_pairs:,} pairs, {int(pool.labels.sum())} true matches" in TEXT


def _two_significant(x: float) -> int:
    import math

    step = 10 ** max(int(math.floor(math.log10(x))) - 1, 0)
    return int(round(x / step) * step)


def test_sample_size_table(patentsview):
    from er_evaluation.estimators import estimate_table
    from er_evaluation.sampling import benchmark_sample

    versions, benchmark = patentsview
    section = _section("Estimating precision and recall from a reviewed sample")
    sample = benchmark_sample(benchmark, weights="cluster_size")
    assert f"n₀ = {sample.n_draws} inventors" in section
    table = _quiet(
        estimate_table,
        {k: versions[k] for k in ("2017-08-08", "2021-12-30", "2022-06-30")},
        sample,
        ("pairwise_precision", "pairwise_recall"),
        on_missing="restrict",
    ).set_index(["prediction", "metric"])
    halves = [float(h) for h in re.findall(r"\| ±(0\.\d+)", section)]
    assert halves == [0.05, 0.03, 0.02, 0.01]
    rows = re.findall(r"^\| (\d{4}-\d\d-\d\d), (\w+) \| ([\d.]+) \|(.*)\|$", section, re.M)
    assert len(rows) == 4
    for version, metric, se, cells in rows:
        fit = table.loc[(version, metric)]
        assert se == f"{fit['std_error']:.4f}"
        need = [
            _two_significant(sample.n_draws * (1.96 * fit["std_error"] / h) ** 2) for h in halves
        ]
        assert [int(c.replace(",", "")) for c in cells.split("|")] == need
    worst = table.loc[("2017-08-08", "pairwise_precision")]
    assert f"precision {worst['value']:.2f}, has SE₀ = {worst['std_error']:.2f}" in section


def test_reviewed_file_example_is_complete_clusters_of_the_benchmark(patentsview):
    import io

    import pandas as pd

    _, benchmark = patentsview
    (block,) = re.findall(r"```csv\n(.*?)```", TEXT, re.S)
    example = pd.read_csv(io.StringIO(block), dtype=str).set_index("record_id")["cluster_id"]
    assert (benchmark.reindex(example.index) == example).all()
    for cluster in example.unique():
        assert set(benchmark.index[benchmark == cluster]) == set(example.index[example == cluster])


def test_interval_methods_are_all_documented_with_the_bootstrap_minimum():
    from er_evaluation._parameters import min_n_boot
    from er_evaluation.estimators import CI_METHODS, DEFAULT_CI_METHOD
    from er_evaluation.estimators.intervals import N_BOOT

    section = TEXT.split("### Confidence intervals", 1)[1].split("\n## ", 1)[0]
    documented = re.findall(r"^\| `(\w+)` \|", section, re.M)
    assert documented == list(CI_METHODS)
    assert f"`{DEFAULT_CI_METHOD}`, the default" in section
    assert f"default {N_BOOT:,}, at least\n{min_n_boot(0.95)} at level 0.95" in section


def test_no_internal_paper_numbers_anywhere():
    """Papers are cited by authors and year (see References), never by the project's
    internal file numbers (the word paper and three digits), in the README, the docs and every docstring."""
    root = README.parent
    files = [README, root / "benchmarks" / "README.md", root / "CITATION.cff"]
    for folder in ("er_evaluation", "benchmarks", "docs", "tests"):
        files += sorted((root / folder).rglob("*.py")) + sorted((root / folder).rglob("*.md"))
    pattern = re.compile(r"\b[Pp]apers? ?0\d\d\b")
    found = [
        f"{path.relative_to(root)}:{number}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert not found, found
