"""The README's and the documentation's promises hold: every Python example of the
README and of the pages in docs/ runs, every ``er-eval`` command of their shell examples
runs on files made here, the quick start has exactly two commands, and the numbers the
pages state are recomputed."""

from __future__ import annotations

import re
import shlex
import shutil
import warnings
from pathlib import Path

import pytest
from _helpers import filled_sheet

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TEXT = README.read_text(encoding="utf-8")
#: every page a reader sees: the README and the documentation site's pages
PAGES = {README: TEXT} | {
    path: path.read_text(encoding="utf-8") for path in sorted((ROOT / "docs").rglob("*.md"))
}
ALL = "\n".join(PAGES.values())


def page(name: str) -> str:
    """The text of ``docs/<name>``."""
    return PAGES[ROOT / "docs" / name]


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _blocks(language: str) -> list[tuple[str, str, str]]:
    """(page, section heading, code) of every fenced block in ``language``."""
    found = []
    for path, text in PAGES.items():
        heading, fence, code = "", None, []
        for line in text.splitlines():
            if fence is None and line.startswith("```"):
                fence, code = line[3:].strip(), []
            elif fence is not None and line.startswith("```"):
                if fence == language:
                    found.append((_name(path), heading, "\n".join(code) + "\n"))
                fence = None
            elif fence is not None:
                code.append(line)
            elif line.startswith("#"):
                heading = line.lstrip("#").strip()
    return found


PYTHON = _blocks("python")


def test_every_page_has_python_examples_where_expected():
    pages = {p for p, _, _ in PYTHON}
    assert "README.md" in pages
    assert {
        "docs/getting-started.md",
        "docs/guides/default-road.md",
        "docs/guides/estimating.md",
        "docs/guides/review-workflow.md",
        "docs/guides/pair-labelling.md",
        "docs/guides/larger-than-memory.md",
    } <= pages
    assert {"Worked example", "Data model"} <= {heading for _, heading, _ in PYTHON}


def test_every_fenced_block_names_its_language():
    """An unnamed block would escape the runners below."""
    for path, text in PAGES.items():
        opened = re.findall(r"^```(.*)$", text, re.M)[::2]
        assert all(opened), f"{_name(path)}: a code block without a language"


# Python examples that start Spark take seconds more than the others
SLOW_PYTHON = ("SparkSession",)


@pytest.mark.parametrize(
    "code",
    [
        pytest.param(code, marks=[pytest.mark.slow] if any(s in code for s in SLOW_PYTHON) else [])
        for _, _, code in PYTHON
    ],
    ids=[f"{i}-{p}-{h}" for i, (p, h, _) in enumerate(PYTHON)],
)
def test_python_example_runs(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    monkeypatch.setenv("MPLBACKEND", "Agg")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # examples may warn on purpose (e.g. dropped records)
        exec(compile(code, "example", "exec"), {"__name__": "__docs__"})


def _shell_examples() -> list[tuple[str, str, list[str]]]:
    """(page, heading, commands) of every shell example with an ``er-eval`` command,
    continuation lines joined. Other shell lines are what CI itself runs (the install,
    the tests, the docs build); ``er-eval app`` serves until stopped, and
    tests/test_app_package.py starts and stops it."""
    found = []
    for path, heading, code in _blocks("sh"):
        lines = [line.strip() for line in code.replace("\\\n", " ").splitlines()]
        commands = [c for c in lines if c.startswith("er-eval ") and not c.startswith(SERVING)]
        if commands:
            found.append((path, heading, commands))
    return found


SERVING = "er-eval app"
# the bundled-data demos take several seconds each, a reviewed project tens of seconds
SLOW_COMMANDS = ("--demo", "_done.csv", "filled/")
SHELL = _shell_examples()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, review_project):
    """A folder holding every file the shell examples name, made from the bundled RLdata
    10000 with text ids (truth, misattributed versions, a reviewed sample, a records
    table blocked by birth year and month) and the reviewed demo project."""
    import pandas as pd

    from er_evaluation.datasets import load_rldata10000
    from er_evaluation.io import write_membership
    from er_evaluation.sampling import sample_records
    from er_evaluation.simulation import misattribute

    folder = tmp_path_factory.mktemp("workspace")
    records, truth = load_rldata10000()
    truth.index = records.index = "r" + records.index.astype(str)
    truth.index.name = records.index.name = "record_id"
    write_membership(truth, folder / "reference.csv")
    write_membership(misattribute(truth, 0.1, seed=1), folder / "prediction.csv")
    write_membership(misattribute(truth, 0.05, seed=2), folder / "v1.csv")
    v2 = misattribute(truth, 0.15, seed=3)
    write_membership(v2, folder / "v2.csv")
    write_membership(v2, folder / "v2.parquet")
    people = pd.DataFrame({"record_id": truth.index, "person": truth.to_numpy(), "note": "x"})
    people.to_csv(folder / "people.csv", index=False)
    names = records[["fname_c1", "lname_c1"]].set_axis(["name_first", "name_last"], axis=1)
    names.reset_index().to_csv(folder / "names.csv", index=False)
    write_membership(sample_records(truth, 100, seed=4).reference, folder / "reviewed.csv")
    table = pd.DataFrame(
        {
            "block": records["by"].astype(str) + "-" + records["bm"].astype(str),
            "name": records["fname_c1"] + " " + records["lname_c1"],
            "city": records["bd"].astype(str),
        }
    )
    table.reset_index().to_csv(folder / "records.csv", index=False)
    shutil.copytree(review_project, folder / "project")
    return folder


@pytest.mark.parametrize(
    "commands",
    [
        pytest.param(
            commands,
            marks=[pytest.mark.slow]
            if any(s in c for c in commands for s in SLOW_COMMANDS)
            else [],
        )
        for _, _, commands in SHELL
    ],
    ids=[f"{i}-{p}-{h}" for i, (p, h, _) in enumerate(SHELL)],
)
def test_shell_example_runs(commands, workspace, cli, monkeypatch, tmp_path):
    """Each example runs in order (a later command may read what an earlier one wrote),
    in a fresh copy of the workspace."""
    here = shutil.copytree(workspace, tmp_path / "here")
    monkeypatch.chdir(here)
    if any("filled/" in c for c in commands):
        filled_by_hand(here, cli)
    for command in commands:
        argv = shlex.split(command, comments=True)[1:]
        sheets_filled_by_hand(here, argv)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # without --oracle the labelling asks on stdin: answer one pair, then quit
            code, out, err = cli(argv, "m\nq\n")
        assert code == 0, f"{command}: {err}"
        assert out or "-o" in argv, f"{command}: printed nothing"


def filled_by_hand(here, cli) -> None:
    """What reviewers fill in by hand, filled from the truth into ``here``: the recommended
    design's records to review (``filled/to_review.csv`` with its design)."""
    import pandas as pd

    truth = pd.read_csv(here / "reference.csv", dtype=str).set_index("record_id")["cluster_id"]
    (here / "filled").mkdir()
    sheet_file = here / "filled" / "to_review.csv"
    code, _, err = cli(
        ["plan", here / "prediction.csv", "--records", 300, "--write-sample", sheet_file]
    )
    assert code == 0, err
    sheet = pd.read_csv(sheet_file, dtype=str)
    sheet["true_cluster"] = truth.reindex(sheet["record_id"]).to_numpy()
    recall = sheet.loc[sheet["part"] != "precision", "record_id"]
    mates = truth.index[truth.isin(truth.reindex(recall))].difference(sheet["record_id"])
    extra = pd.DataFrame({"record_id": mates, "true_cluster": truth.reindex(mates).to_numpy()})
    pd.concat([sheet, extra], ignore_index=True).to_csv(sheet_file, index=False)


def sheets_filled_by_hand(here, argv) -> None:
    """A review sheet a command reads as ``NAME_done.csv`` (or, in the review guide, as
    ``NAME.csv``): the sheet ``er-eval review sheet`` wrote to ``NAME.csv``, filled in from
    the truth as a reviewer would between the two commands."""
    import pandas as pd

    if argv[:2] != ["review", "import"]:
        return
    target = here / argv[3]
    written = here / argv[3].replace("_done.csv", ".csv")
    sheet = pd.read_csv(written, dtype=str, keep_default_na=False)
    if target != written and target.exists() or (sheet["status"] != "").any():
        return
    truth = pd.read_csv(here / "reference.csv", dtype=str).set_index("record_id")["cluster_id"]
    filled_sheet(sheet, truth).to_csv(target, index=False)


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


def test_readme_is_an_overview():
    assert len(TEXT.splitlines()) <= 300


def test_commands_shown_anywhere_exist():
    from er_evaluation.cli import build_parser

    parser = build_parser()
    subcommands = set(parser._subparsers._group_actions[0].choices)
    shown = set(re.findall(r"^\s*(?:.*&& )?er-eval (\w+)", ALL, re.MULTILINE))
    shown |= set(re.findall(r"`er-eval ([a-z]+)", ALL))
    assert shown and shown <= subcommands, shown - subcommands


def test_every_page_is_in_the_site_navigation():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:", 1)[1]
    listed = set(re.findall(r"([\w/.-]+\.md)\s*$", nav, re.M))
    pages = {_name(p)[len("docs/") :] for p in PAGES if p != README}
    assert pages == listed, pages ^ listed


# --- every number the README states is recomputed here -----------------------------------


def _section(text: str, title: str) -> str:
    """The section ``## title`` of a page, up to the next section of that level."""
    return text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


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
    text = page("getting-started.md")
    assert len(records) == 10_000 and "10,000 RLdata records" in text
    rules = [["fname_c1", "lname_c1", "by"], ["fname_c1", "bd", "by"], ["lname_c1", "bd", "by"]]
    table = records.reset_index()
    pairs = pd.concat([table.merge(table, on=r)[["record_id_x", "record_id_y"]] for r in rules])
    scores = ee.evaluate({"rules": ee.from_pairs(pairs, records=records.index)}, truth).iloc[0]
    precision, recall = scores["pairwise_precision"], scores["pairwise_recall"]
    assert f"pairwise precision {precision:.2f}, recall {recall:.2f}" in text


def test_patentsview_numbers(patentsview):
    versions, benchmark = patentsview
    assert f"{len(versions)} PatentsView releases" in TEXT
    assert f"{len(versions)} versions and a hand-reviewed benchmark" in TEXT
    assert f"{benchmark.nunique()} hand-reviewed" in ALL
    newer = versions["2022-06-30"].index.difference(versions["2021-12-30"].index)
    assert f"the {len(newer):,} newer mentions are dropped" in page("getting-started.md")


def test_figure_2_example():
    import er_evaluation as ee
    from er_evaluation.metrics import pairwise_precision, pairwise_recall

    truth = ee.from_clusters([[1, 2, 3], [4, 5], [6, 7], [8]])
    pred = ee.from_clusters([[1, 4], [2, 3], [5], [6, 7, 8]])
    got = (pairwise_precision(pred, truth), pairwise_recall(pred, truth))
    assert f"# ({got[0]:g}, {got[1]:g})" in page("guides/exact-metrics.md")


def test_bundled_pool_numbers():
    from er_evaluation.datasets import load_pool

    pool = load_pool("abt-buy")
    text = page("guides/pair-labelling.md")
    assert f"# {pool.n_pairs:,} pairs, {int(pool.labels.sum())} true matches" in text


def _two_significant(x: float) -> int:
    import math

    step = 10 ** max(int(math.floor(math.log10(x))) - 1, 0)
    return int(round(x / step) * step)


def test_sample_size_table(patentsview):
    from er_evaluation.estimators import estimate_table
    from er_evaluation.sampling import benchmark_sample

    versions, benchmark = patentsview
    section = _section(page("guides/estimating.md"), "How many clusters to review")
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
    (block,) = re.findall(r"```csv\n(.*?)```", ALL, re.S)
    example = pd.read_csv(io.StringIO(block), dtype=str).set_index("record_id")["cluster_id"]
    assert (benchmark.reindex(example.index) == example).all()
    for cluster in example.unique():
        assert set(benchmark.index[benchmark == cluster]) == set(example.index[example == cluster])


def test_interval_methods_are_all_documented_with_the_bootstrap_minimum():
    from er_evaluation._parameters import min_n_boot
    from er_evaluation.estimators import CI_METHODS, DEFAULT_CI_METHOD
    from er_evaluation.estimators.intervals import N_BOOT

    section = _section(page("guides/estimating.md"), "Confidence intervals")
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


def test_default_road_numbers():
    from er_evaluation.datasets import load_rldata10000
    from er_evaluation.planning import plan_review
    from er_evaluation.simulation import misattribute

    _, truth = load_rldata10000()
    prediction = misattribute(truth, 0.1, seed=1)
    plan = plan_review(prediction, 0.05, metric="pairwise_recall", error_rate=0.1)
    assert f"# {plan.n_draws} {plan.unit}" in page("guides/default-road.md")
