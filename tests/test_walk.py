"""The list walks of ``core/walk.py`` give what the ``ast`` walks they replace
give, in the same order: the summaries read nodes in that order (a first
match wins in several readers), so a different order could change a table."""

import ast
import pathlib

import pytest

from flake8_mha.core import walk as astwalk

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = [
    p
    for p in sorted(ROOT.glob("fixtures/**/*.py"))[:80]
    + sorted(ROOT.glob("flake8_mha/analysis/program/*.py"))
    if p.name != "__init__.py"
]


def _old_own_nodes(func):
    stack = list(func.body)
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(ast.iter_child_nodes(n))


def _old_depth_first(tree):
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, ast.AST))
            elif isinstance(value, ast.AST):
                stack.append(value)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_same_nodes_in_the_same_order(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert [id(n) for n in astwalk.walk(tree)] == [id(n) for n in ast.walk(tree)]
    assert [id(n) for n in astwalk.depth_first(tree)] == [id(n) for n in _old_depth_first(tree)]
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        assert [id(n) for n in astwalk.own_nodes(func)] == [id(n) for n in _old_own_nodes(func)]
        got = [id(n) for n in astwalk.children(func)]
        assert got == [id(n) for n in ast.iter_child_nodes(func)]
