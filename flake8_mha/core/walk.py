"""Walks of Python's ``ast`` at a quarter of ``ast.walk``'s cost.

The summaries read every function of every project file a linted file
imports; on torch's own tree, where ``import torch`` is a project import,
that is thousands of functions, each walked by several readers.
``ast.walk`` is a generator over ``ast.iter_child_nodes`` over
``ast.iter_fields``: three Python frames a node.  These build a list in
one loop instead, in the same order (``tests/test_walk.py``).
"""

from __future__ import annotations

import ast
from typing import Dict, List

_AST = ast.AST
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


# the last modules, classes and functions walked: a project file's readers
# (constructions, heirs, stores, registries, call indexes, ...) each walk
# the same trees again, for each file that asks
_KEPT: Dict[int, tuple] = {}
_KEPT_MAX = 64
_KEEP = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def walk(node: ast.AST) -> List[ast.AST]:
    """``list(ast.walk(node))``: ``node`` and every node below it, breadth first.
    The list of a module, class or function is shared by the next callers
    that walk it: do not change it."""
    if node.__class__ not in _KEEP:
        return _breadth_first(node)
    kept = _KEPT.get(id(node))
    if kept is not None and kept[0] is node:
        return kept[1]
    nodes = _breadth_first(node)
    if len(_KEPT) >= _KEPT_MAX:
        del _KEPT[next(iter(_KEPT))]  # the oldest
    _KEPT[id(node)] = (node, nodes)
    return nodes


def _breadth_first(node: ast.AST) -> List[ast.AST]:
    out = [node]
    add = out.append
    i = 0
    while i < len(out):
        n = out[i]
        i += 1
        for field in n._fields:
            value = getattr(n, field, None)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, _AST):
                        add(item)
            elif isinstance(value, _AST):
                add(value)
    return out


def children(node: ast.AST) -> List[ast.AST]:
    """``list(ast.iter_child_nodes(node))``."""
    out: List[ast.AST] = []
    for field in node._fields:
        value = getattr(node, field, None)
        if value.__class__ is list:
            out.extend(item for item in value if isinstance(item, _AST))
        elif isinstance(value, _AST):
            out.append(value)
    return out


# the last functions own_nodes walked: several readers of one summary ask in turn
_OWN: List[tuple] = []
_OWN_KEPT = 4


def own_nodes(func: ast.AST) -> List[ast.AST]:
    """The nodes of ``func``'s body, not those inside nested functions,
    lambdas or classes (which are listed themselves), depth first from the
    last statement up.  The list is shared by the next callers that ask for
    the same function: do not change it."""
    for kept, nodes in _OWN:
        if kept is func:
            return nodes
    nodes = _from_stack(list(func.body), _SCOPES)  # type: ignore[attr-defined]
    _OWN.insert(0, (func, nodes))
    del _OWN[_OWN_KEPT:]
    return nodes


# the fields of a statement that hold statements (and ``except``/``case`` clauses)
BODIES = ("body", "orelse", "finalbody", "handlers", "cases")
# the methods that change a list in place (``DIMS.append(...)``): a list a
# program changes is not the display it was bound to
LIST_MUTATORS = frozenset(
    ("append", "extend", "insert", "pop", "remove", "clear", "reverse", "sort")
)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def own_statements(func: ast.AST) -> List[ast.AST]:
    """The statements of ``func``'s body (or a module's) at any depth (and the
    ``except`` and ``case`` clauses that hold some), not those inside nested
    functions or classes (which are listed themselves): the statements among
    ``own_nodes``, without walking the expressions, most of a function's
    nodes.  Their order is not ``own_nodes``'s."""
    out: List[ast.AST] = []
    stack = list(func.body)  # type: ignore[attr-defined]
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, _DEFS):
            continue
        for field in BODIES:
            value = getattr(node, field, None)
            if value and value.__class__ is list:
                stack.extend(value)
    return out


def depth_first(tree: ast.AST) -> List[ast.AST]:
    """Every node of ``tree``, depth first, each node's children in reverse:
    the order of a stack that pushes them in order."""
    return _from_stack([tree], ())


def _from_stack(stack: List[ast.AST], stop: tuple) -> List[ast.AST]:
    """The nodes popped from ``stack``, each one's children pushed in order
    after it, except below a node of a type in ``stop``.  (The loop over a
    node's fields is ``walk``'s too, written out in each: a helper called
    once a node would cost about a third more.)"""
    out: List[ast.AST] = []
    add = out.append
    pop, push = stack.pop, stack.append
    while stack:
        n = pop()
        add(n)
        if stop and isinstance(n, stop):
            continue
        for field in n._fields:
            value = getattr(n, field, None)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, _AST):
                        push(item)
            elif isinstance(value, _AST):
                push(value)
    return out
