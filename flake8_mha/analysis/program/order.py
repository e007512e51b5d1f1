"""Which stores of a function's names may run before a statement of it
(a sink's call), for the summaries (``summaries.py``)."""

from __future__ import annotations

import ast
from typing import Callable, Dict, List

from .steps import Rebound

_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def reaching(stores: Dict[str, List[ast.AST]], at: ast.AST, parents: Dict[int, ast.AST]):
    """``stores`` without the stores of a name that cannot run before ``at``
    (a sink's call) on a path to it: a statement after it in the same block,
    or in the other branch of an ``if`` it stands in, when no loop holds
    them both (monai's ``SABlock``: ``attn_mask`` reshaped on one branch,
    handed to SDPA on the other; release review 30).  ``parents``: each
    node's parent in the function (``parents_of``)."""
    out = None
    above = _above(at, parents)
    for name, defs in stores.items():
        # a rebinding to a step of itself after the sink: the sink reads it as it came
        kept = [d for d in defs if _may_run_before(d, above, parents)]
        if isinstance(defs, Rebound) and kept:
            continue
        if len(kept) != len(defs):
            out = dict(stores) if out is None else out
            if kept:
                out[name] = kept
            else:
                del out[name]
    return stores if out is None else out


# node types ``ast.parse`` shares across a tree (``Load()``, ``Add()``): no one parent
_SHARED = (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop)


def parents_of(func) -> Dict[int, ast.AST]:
    """Each node's parent in ``func`` (by ``id``), in one loop over the fields
    (half of ``ast.walk`` with ``ast.iter_child_nodes``'s cost)."""
    out: Dict[int, ast.AST] = {}
    stack = [func]
    pop, push = stack.pop, stack.append
    while stack:
        n = pop()
        for field in n._fields:
            value = getattr(n, field, None)
            if value.__class__ is list:
                for c in value:
                    if isinstance(c, ast.AST) and not isinstance(c, _SHARED):
                        out[id(c)] = n
                        push(c)
            elif isinstance(value, ast.AST) and not isinstance(value, _SHARED):
                out[id(value)] = n
                push(value)
    return out


def _above(at: ast.AST, parents: Dict[int, ast.AST]) -> Dict[int, ast.AST]:
    """Each ancestor of ``at`` -> the child of it on the way to ``at``."""
    above = {}
    node = at
    while id(node) in parents:
        up = parents[id(node)]
        above[id(up)] = node
        node = up
    return above


def _may_run_before(store: ast.AST, above: Dict[int, ast.AST], parents) -> bool:
    """Whether ``store`` may run before the statement whose ancestors are
    ``above`` (``_above``)."""
    if id(store) in above:  # the call is in the store's value: it runs first
        return _in_loop(store, parents)
    node = store
    while id(node) in parents and id(parents[id(node)]) not in above:
        node = parents[id(node)]
    if id(node) not in parents:
        return True
    common = parents[id(node)]  # ``node``: the store's side of the common ancestor
    mine = above[id(common)]  # the call's side
    if _in_loop(common, parents):  # a loop around both runs the store before the call again
        return True
    if isinstance(common, ast.If):
        in_body = [any(x is s for s in common.body) for x in (node, mine)]
        in_else = [any(x is s for s in common.orelse) for x in (node, mine)]
        if (in_body[0] and in_else[1]) or (in_else[0] and in_body[1]):
            return False
    for field in ("body", "orelse", "finalbody"):
        block = getattr(common, field, None)
        if (
            isinstance(block, list)
            and any(x is node for x in block)
            and any(x is mine for x in block)
        ):
            return block.index(node) <= block.index(mine)
    return True


def _in_loop(node: ast.AST, parents: Dict[int, ast.AST]) -> bool:
    """``node`` is a loop or in one."""
    while not isinstance(node, _LOOPS):
        if id(node) not in parents:
            return False
        node = parents[id(node)]
    return True


def parents_in(func, parents: Dict[int, ast.AST]) -> Dict[int, ast.AST]:
    """``parents``, filled with ``parents_of(func)`` the first time it is
    asked: one walk of the function for its edges and its sinks both."""
    if not parents:
        parents.update(parents_of(func))
    return parents


def reader(func, params, stores, read: Callable, parents: Dict[int, ast.AST]) -> Callable:
    """``read(expr, stores)`` as ``f(expr, call)``: a parameter named as a
    call's argument and stored again in the function is read with the
    stores that may run before that call (T5's block hands ``position_bias``
    on, then rebinds it to what the call returns).  ``parents``: the
    function's, filled when first needed (``parents_in``)."""

    def at(expr, call):
        if isinstance(expr, ast.Name) and expr.id in params and expr.id in stores:
            return read(expr, reaching(stores, call, parents_in(func, parents)))
        return read(expr, stores)

    return at
