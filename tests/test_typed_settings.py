"""The app, the command line and the report read a project's settings through the typed API of
``review.Project`` (:class:`SampleSettings`, :class:`DataSource`), never by string key on a
dict of ``project.json``: a key renamed in the store then fails in one place, not silently
in a page."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from er_evaluation.review import DataSource, Project, RecordsFile

PACKAGE = Path(__file__).resolve().parents[1] / "er_evaluation"
FRONT_ENDS = sorted(p for part in ("app", "cli", "report") for p in (PACKAGE / part).rglob("*.py"))
# attributes of a Project holding its settings, and the readers of project.json's raw dict
SETTINGS_ATTRIBUTES = {"settings", "source", "_config"}
RAW_READERS = {"read_config", "write_config", "_source_of"}


def _settings_expression(node: ast.AST, bound: set[str]) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in SETTINGS_ATTRIBUTES
    if isinstance(node, ast.Name):
        return node.id in bound
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        return name in RAW_READERS
    return False


def string_key_reads(source: str) -> list[str]:
    """Where ``source`` reads settings by string key: ``x[...]`` or ``x.get("...")`` with
    ``x`` a Project's settings attribute, a raw reader's result, or a name bound to one."""
    tree = ast.parse(source)
    bound: set[str] = set()
    while True:  # names bound to settings, through chains of assignments
        more = {
            target.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign) and _settings_expression(node.value, bound)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        if more <= bound:
            break
        bound |= more
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and _settings_expression(node.value, bound)
        ):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and _settings_expression(node.func.value, bound)
        ):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom) and {a.name for a in node.names} & RAW_READERS:
            found.append(f"line {node.lineno}: imports a raw reader of project.json")
    return found


def test_the_scan_finds_string_key_reads():
    planted = """
config = project.source
old = config.get("records", {})
design = project.settings["design"]
raw = read_config(folder)["sample"]
again = config
again["benchmark"]
"""
    assert len(string_key_reads(planted)) == 4
    typed = "design = project.settings.design\nold = project.source.records\n"
    assert string_key_reads(typed) == []


@pytest.mark.parametrize("path", FRONT_ENDS, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_front_ends_read_settings_through_the_typed_api(path):
    assert FRONT_ENDS, "no app, command-line or report modules found"
    assert string_key_reads(path.read_text()) == []


def test_the_data_source_is_typed(tmp_path):
    demo = Project.open(tmp_path / "demo", create=True, load=lambda source: None)
    assert demo.source == DataSource()
    records = tmp_path / "records.csv"
    records.write_text("rid,name\nr1,a\nr2,b\n")
    (tmp_path / "v1.csv").write_text("rid,c\nr1,1\nr2,1\n")
    source = {
        "source": "files",
        "records": {"path": str(records), "id_col": "rid", "fields": ["name"]},
        "predictions": {
            "layout": "long",
            "files": [
                {
                    "path": str(tmp_path / "v1.csv"),
                    "version": "v1",
                    "id_col": "rid",
                    "cluster_col": "c",
                }
            ],
        },
    }
    own = Project.init(tmp_path / "own", source=source)
    read = Project.open(own.folder).source
    assert not read.demo and read.benchmark is None
    assert read.records == RecordsFile(path=str(records), id_col="rid", fields=("name",))
    assert read.predictions.layout == "long"
    (file,) = read.predictions.files
    assert (file.version, file.id_col, file.cluster_col) == ("v1", "rid", "c")
