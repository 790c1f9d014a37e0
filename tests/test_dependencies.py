"""The installed dependency set is coherent: PySpark warns that it does not fully support
pandas >= 3 on its pandas conversions, so the Spark engine never takes them (Arrow in,
Arrow out), and the resolved versions meet what each extra declares."""

from __future__ import annotations

import ast
import re
import warnings
from importlib import metadata
from pathlib import Path

import pandas as pd
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "er_evaluation"


def _calls(name: str) -> list[str]:
    """``file:line`` of every call of an attribute ``name`` in the package."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == name
            ):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


@pytest.mark.slow
def test_the_spark_engine_converts_through_arrow_only():
    # pandas conversions of PySpark are the ones that warn about pandas >= 3
    assert _calls("toPandas") == []
    assert _calls("pandas_api") == []
    create = _calls("createDataFrame")
    assert len(create) == 1 and create[0].startswith("engines/_backends.py:"), create
    source = (PACKAGE / "engines" / "_backends.py").read_text(encoding="utf-8")
    assert "createDataFrame(series_to_arrow(" in source  # an Arrow table, not a DataFrame


def test_spark_on_the_resolved_versions_gives_no_pandas_warning(spark, tmp_path):
    from er_evaluation.engines import table
    from er_evaluation.io import write_membership
    from er_evaluation.metrics import evaluate
    from er_evaluation.summary import summary_statistics

    truth = pd.Series([1, 1, 2, 3, 3, 3], index=[f"r{i}" for i in range(6)])
    prediction = pd.Series([1, 1, 2, 2, 3, 3], index=truth.index)
    write_membership(truth, tmp_path / "truth.parquet")
    versions = f"pyspark {metadata.version('pyspark')}, pandas {pd.__version__}"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        people = table(str(tmp_path / "truth.parquet"), "record_id", "cluster_id", connection=spark)
        assert summary_statistics(people)["n_clusters"] == 3
        # a pandas Series beside a Spark table is registered through Arrow too
        scores = evaluate(people, prediction, ["pairwise_precision"])
    assert scores["pairwise_precision"].iloc[0] == pytest.approx(2 / 4)
    about_pandas = [str(w.message) for w in caught if "pandas" in str(w.message).lower()]
    assert about_pandas == [], f"{versions}: {about_pandas}"


def _requirements(distribution: str, extra: str | None = None) -> list[str]:
    found = []
    for text in metadata.requires(distribution) or []:
        requirement, _, marker = text.partition(";")
        if (extra is None and not marker) or (extra and f'extra == "{extra}"' in marker):
            found.append(requirement.strip())
    return found


def _satisfied(requirement: str) -> tuple[bool, str]:
    """Whether the installed version meets ``requirement`` (lower bounds and < bounds)."""
    from packaging.requirements import Requirement

    parsed = Requirement(requirement)
    try:
        installed = metadata.version(parsed.name)
    except metadata.PackageNotFoundError:
        return False, f"{parsed.name} not installed"
    return parsed.specifier.contains(installed, prereleases=True), f"{parsed.name} {installed}"


@pytest.mark.parametrize("extra", ["spark"])
def test_the_resolved_versions_meet_the_extra_and_pysparks_own_requirements(extra):
    pytest.importorskip("pyspark")
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
    declared = (
        project["project"]["dependencies"] + project["project"]["optional-dependencies"][extra]
    )
    ours = [r for r in declared if re.match(r"(pyspark|pyarrow|pandas)\b", r)]
    assert any(r.startswith("pyarrow") for r in ours), ours  # Spark's Arrow path needs it
    # PySpark's requirements for the DataFrame (sql) side, which the engine uses
    theirs = _requirements("pyspark", "sql")
    checks = {r: _satisfied(r) for r in ours + theirs}
    assert all(ok for ok, _ in checks.values()), checks
