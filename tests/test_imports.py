"""The package's import graph has no cycle, function-local and lazy imports included.

Every ``import`` statement of every module of ``er_evaluation`` counts, wherever it sits
(module level, inside a function, in a try block); only imports under
``if TYPE_CHECKING:`` are exempt, since they never run. ``from package import name``
counts as an import of the submodule ``package.name`` when that submodule exists, else
of the package's ``__init__``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

import er_evaluation

ROOT = Path(er_evaluation.__file__).parent


def _modules() -> dict[str, Path]:
    modules = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the import nodes under ``if TYPE_CHECKING:`` (never executed)."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
            if name == "TYPE_CHECKING":
                skipped.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    return skipped


def import_graph() -> nx.DiGraph:
    modules = _modules()

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = nx.DiGraph()
    for module, path in modules.items():
        graph.add_node(module)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        skipped = _type_checking_nodes(tree)
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                submodules = [f"{base}.{alias.name}" for alias in node.names]
                targets = [name for name in submodules if name in modules]
                if len(targets) < len(submodules):
                    targets.append(base)
            else:
                continue
            for target in targets:
                resolved = owner(target)
                if resolved is not None and resolved != module:
                    graph.add_edge(module, resolved)
    return graph


@pytest.mark.slow
def test_the_graph_sees_function_local_imports():
    # a check that missed imports inside functions would pass vacuously
    graph = import_graph()
    assert len(graph) > 50
    assert graph.has_edge("er_evaluation.cli", "er_evaluation.cli._common") or any(
        target.startswith("er_evaluation.cli.") for target in graph.successors("er_evaluation.cli")
    )


@pytest.mark.slow
def test_no_import_cycle():
    cycles = sorted(nx.simple_cycles(import_graph()), key=len)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c + c[:1]) for c in cycles)
