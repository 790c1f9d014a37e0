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
