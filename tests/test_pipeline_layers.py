"""The front ends sit on one pipeline, without import cycles between them.

Every import counts, including those made inside functions.  This covers the
front-end modules (the lint pipeline, the code selection, check, confirm's
command line, notebooks, output, configuration, the flake8 adapter); the
layering of the analysis itself is tested elsewhere.
"""
from __future__ import annotations

import ast
import pathlib
from typing import Dict, Set

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "flake8_mha"
FRONT = {"flake8_mha.app.pipeline", "flake8_mha.lint.selection", "flake8_mha.frontends.check", "flake8_mha.frontends.cli",
         "flake8_mha.app.config", "flake8_mha.app.notebook", "flake8_mha.app.output", "flake8_mha.lint.noqa",
         "flake8_mha.frontends.plugin", "flake8_mha.frontends.confirm_cli", "flake8_mha.confirm.report",
         "flake8_mha.rules.runtime"}


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _graph() -> Dict[str, Set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: Dict[str, Set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        out: Set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[:len(base) - node.level + 1]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                targets = [stem] + [f"{stem}.{a.name}" for a in node.names]
            for target in targets:
                if target in modules and target != name:
                    out.add(target)
        graph[name] = out
    return graph


def _reaches(graph, start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        here = todo.pop()
        for nxt in graph.get(here, ()):
            if nxt == goal:
                return True
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


def test_the_graph_sees_imports_inside_functions():
    graph = _graph()
    assert "flake8_mha.app.pipeline" in graph["flake8_mha.frontends.check"]
    assert "flake8_mha.app.notebook" in graph["flake8_mha.app.pipeline"]  # imported in a function


def test_no_front_end_module_is_on_an_import_cycle():
    graph = _graph()
    cycles = sorted(m for m in FRONT if _reaches(graph, m, m))
    assert cycles == []


def test_configuration_and_notebooks_do_not_import_upwards():
    graph = _graph()
    assert not _reaches(graph, "flake8_mha.app.config", "flake8_mha.frontends.plugin")
    assert not _reaches(graph, "flake8_mha.app.config", "flake8_mha.app.pipeline")
    # pure translation, no linting: only the core helper that splits lines as Python does
    assert graph["flake8_mha.app.notebook"] <= {"flake8_mha.core.lines"}
    assert not _reaches(graph, "flake8_mha.lint.selection", "flake8_mha.app.config")
