"""The fast walks over LibCST trees visit what the slow, obvious ones visit.

``tree.children`` classifies a field's value by its type once instead of
asking ``isinstance`` of LibCST's abstract classes each time; the comment
index of the layout analysis walks only the nodes that hold statements.
Both are checked against the plain definitions on every fixture, on torch's
``nn`` package when it is installed, and on statements that hide lines in
unusual places (``match``, ``try``/``except*``, ``else``, ``finally``)."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import libcst as cst
import pytest

from flake8_mha.analysis import tree
from flake8_mha.analysis.layout.comments import CommentIndex, _statement_lines

ROOT = pathlib.Path(__file__).resolve().parent.parent

EDGES = """
def f(x):  # x: (B, L, E)
    try:
        y = x  # (B, L, E)
    except ValueError:
        y = None  # (L, B, E)
    else:
        z = 1
    finally:
        w = 2  # w: (B, S)
    for i in range(3):
        pass
    else:
        q = x.transpose(0, 1)  # (L, B, E)
    while False:
        break
    else:
        r = 0
    with open(x) as fh:
        s = fh  # s: (N, L, E)
    if x:
        t = 1
    elif y:
        t = 2  # t: (B, L)
    else:
        t = 3
    class Inner:
        u = 1  # u: (B, L, E)
    return lambda: [v for v in x if v]


class Cache:
    def put(self, k, v):
        self.cache[k] = v
        self.items.update(v)
        del self.gone[k]
        (self.a[0], self.b[1]) = 1, 2
        self.n[0] += 1
        self.plain = v
        B, L, E = v.shape
        return B
"""
if sys.version_info >= (3, 10):
    EDGES += """
def g(cmd):
    match cmd:
        case [x, y]:
            out = x  # (B, L, E)
        case _:
            out = None
    return out
"""
if sys.version_info >= (3, 11):
    EDGES += """
def h(x):
    try:
        a = x
    except* ValueError:
        a = None  # a: (L, B, E)
    return a
"""


def _sources():
    yield "edges", EDGES
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")
    spec = importlib.util.find_spec("torch")  # finds torch without importing it
    if spec is not None and spec.submodule_search_locations:
        nn = pathlib.Path(list(spec.submodule_search_locations)[0]) / "nn" / "modules"
        for path in sorted(nn.glob("*.py")):
            yield "torch/nn/modules/" + path.name, path.read_text(encoding="utf-8")


SOURCES = list(_sources())


def _plain_children(node):
    """``tree.children`` as first written: isinstance on every value."""
    for name in tree._fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            if not isinstance(value, tree._SKIP_TYPES):
                yield value
        elif isinstance(value, (tuple, list)):
            for item in value:
                if isinstance(item, cst.CSTNode) and not isinstance(item, tree._SKIP_TYPES):
                    yield item


@pytest.mark.parametrize("name,source", SOURCES, ids=[n for n, _ in SOURCES])
def test_children_are_the_plain_definitions(name, source):
    module = cst.parse_module(source)
    stack, seen = [module], 0
    while stack:
        node = stack.pop()
        got = list(tree.children(node))
        assert [id(n) for n in got] == [id(n) for n in _plain_children(node)], type(node)
        stack.extend(got)
        seen += 1
    assert seen > 1


@pytest.mark.parametrize("name,source", SOURCES, ids=[n for n, _ in SOURCES])
def test_every_statement_line_is_indexed(name, source):
    module = cst.parse_module(source)
    visited = []

    class Lines(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, node):
            visited.append(id(node))

    module.visit(Lines())
    assert sorted(id(n) for n in _statement_lines(module)) == sorted(visited)


def test_comments_in_unusual_places_are_read():
    index = CommentIndex(cst.parse_module(EDGES))
    index._build()
    shown = sorted({comment.value for entries in index.by_stmt.values() for comment, _ in entries})
    expected = [
        "# (B, L, E)",
        "# (L, B, E)",
        "# s: (N, L, E)",
        "# t: (B, L)",
        "# u: (B, L, E)",
        "# w: (B, S)",
    ]
    if sys.version_info >= (3, 11):
        expected.append("# a: (L, B, E)")
    assert shown == sorted(expected)


# --- the analyses' own walks, against the LibCST visitors they replaced -------------


def _visitor_unpacks(scope) -> list:
    """``layout.comments._collect_unpacks`` as first written, with a visitor."""
    from flake8_mha.analysis.layout import comments

    found: list = []
    root = scope.node

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node):
            return node is root

        def visit_ClassDef(self, node):
            return False

        def visit_Assign(self, node):
            # the rest of the checks are shared: run the new code on this one statement
            for got in comments._collect_unpacks(_OneStatement(scope, node)):
                found.append(got)

    root.visit(V())
    return found


class _OneStatement:
    """A scope whose function is just one assignment (for the reference above)."""

    def __init__(self, scope, node):
        self.node = node
        self.final_env = scope.final_env


def _visitor_mutations(class_node) -> set:
    """``reach._mutated_attrs`` as first written, with a visitor (what a target
    changes is read by the same helper: only the walk is compared)."""
    from flake8_mha.analysis.reach import _MUTATORS, _items_changed, _self_attr_name

    attrs: set = set()

    class V(cst.CSTVisitor):
        def visit_AssignTarget(self, node):
            attrs.update(_items_changed(node.target))

        def visit_AugAssign(self, node):
            attrs.update(_items_changed(node.target))

        def visit_AnnAssign(self, node):
            attrs.update(_items_changed(node.target))

        def visit_Del(self, node):
            attrs.update(_items_changed(node.target))

        def visit_Call(self, node):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in _MUTATORS:
                if _self_attr_name(func.value) is not None:
                    attrs.add(_self_attr_name(func.value))

    class_node.visit(V())
    return attrs


def _visitor_names(node) -> set:
    found: set = set()

    class V(cst.CSTVisitor):
        def visit_Name(self, n):
            found.add(n.value)

    node.visit(V())
    return found


@pytest.mark.parametrize("name,source", SOURCES, ids=[n for n, _ in SOURCES])
def test_the_analyses_walks_find_what_the_visitors_found(name, source):
    from flake8_mha.analysis.flow import FlowPass
    from flake8_mha.analysis.layout.comments import _collect_unpacks, _names_in
    from flake8_mha.analysis.reach import _mutated_attrs

    module = cst.parse_module(source)
    flow = FlowPass()
    flow.run(module)
    for scope in flow.functions.values():
        got = [(t, r, id(n)) for t, r, n, _ in _collect_unpacks(scope)]
        assert got == [(t, r, id(n)) for t, r, n, _ in _visitor_unpacks(scope)]
    for node in tree.walk(module):
        if type(node) is cst.ClassDef:
            assert _mutated_attrs(node) == _visitor_mutations(node)
        elif type(node) is cst.Assign:
            assert _names_in(node.value) == _visitor_names(node.value)


def test_the_edges_have_what_the_walks_look_for():
    from flake8_mha.analysis.flow import FlowPass
    from flake8_mha.analysis.layout.comments import _collect_unpacks
    from flake8_mha.analysis.reach import _mutated_attrs

    module = cst.parse_module(EDGES)
    flow = FlowPass()
    flow.run(module)
    (cache,) = [n for n in tree.walk(module) if type(n) is cst.ClassDef and n.name.value == "Cache"]
    assert _mutated_attrs(cache) == {"cache", "items", "gone", "a", "b", "n"}
    unpacked = [t for s in flow.functions.values() for t, *_ in _collect_unpacks(s)]
    assert unpacked == ["v"]
