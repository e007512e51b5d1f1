"""Scores a helper masks and returns, softmaxed by its caller (probe AP's
AP13), read with ``ast`` for a summary.

``def masked_scores(q, k, valid): s = q @ k.transpose(-2, -1); return s *
valid[:, None, None, :]`` softmaxes nothing: the product it returns is
softmaxed by ``attention_probs``, which calls ``masked_scores(q, k,
valid).softmax(dim=-1)``.  The helper's summary says its ``valid`` reaches the
multiplied fill with its last step ``RETURNED``; a caller that softmaxes the
call's result makes that step ``fills.SOFTMAX`` (the fill is then judged as
the caller's own), one that returns the result keeps it ``RETURNED`` for its
own callers, and any other use drops the reach (``chains.compose``).  The linted
file's call site is read the same way (``softmaxed_result``).

Only a term added or multiplied in the function's one ``return`` counts
(``fills.added_sinks``, ``fills.multiplied_sinks``: a multiplied term must be
named a mask), and only in a function that softmaxes nothing itself.
"""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Tuple

from ...core import walk as astwalk
from .fills import RETURNED, SOFTMAX, added_sinks, is_softmaxed, multiplied_sinks

# what a caller does with a call's result (``chains.compose`` reads them)
SOFTMAXED, HANDED_BACK = SOFTMAX[0], RETURNED[0]


def returned_terms(func, stores) -> List[Tuple[str, ast.AST, int]]:
    """``(sink, term, line)`` for the term added to or multiplied into the
    scores the function's one ``return`` gives back."""
    returns = [n for n in astwalk.own_nodes(func) if isinstance(n, ast.Return)]
    if len(returns) != 1 or not isinstance(returns[0].value, ast.BinOp):
        return []
    ret = returns[0]
    found = added_sinks(func, stores) + multiplied_sinks(func, stores)
    return [t for t in found if ret.lineno <= t[2] <= (ret.end_lineno or ret.lineno)]


def result_uses(func, calls: List[ast.Call], stores) -> Dict[int, str]:
    """``id`` of each call among ``calls`` whose result the function softmaxes
    (``SOFTMAXED``: ``helper(q, k, m).softmax(-1)``, ``F.softmax(s, -1)`` of a
    local bound only to it) or returns as it is (``HANDED_BACK``)."""
    out: Dict[int, str] = {}
    for call in calls:
        f = call.func
        if (isinstance(f, ast.Attribute) and f.attr == "softmax") or is_softmaxed(call):
            inner = _softmax_input(call)
            for made in _made_by(inner, stores):
                out[id(made)] = SOFTMAXED
    for n in astwalk.own_nodes(func):
        if isinstance(n, ast.Return) and n.value is not None:
            for made in _made_by(n.value, stores):
                out.setdefault(id(made), HANDED_BACK)
    return out


def _softmax_input(call: ast.Call) -> Optional[ast.AST]:
    if isinstance(call.func, ast.Attribute) and call.func.attr == "softmax":
        if not (isinstance(call.func.value, ast.Name) and call.func.value.id in ("F", "torch")):
            return call.func.value  # ``x.softmax(-1)``
    return call.args[0] if call.args and not isinstance(call.args[0], ast.Starred) else None


def _made_by(node, stores) -> List[ast.Call]:
    """The call ``node`` is, or the one call a local it names is bound to."""
    if isinstance(node, ast.Call):
        return [node]
    if isinstance(node, ast.Name):
        defs = stores.get(node.id, ())
        if len(defs) == 1 and isinstance(defs[0], ast.Assign) and len(defs[0].targets) == 1:
            if isinstance(defs[0].targets[0], ast.Name) and isinstance(defs[0].value, ast.Call):
                return [defs[0].value]
    return []


def softmaxed_result(site) -> bool:
    """Whether the linted file's call ``site`` gives its result to a softmax
    (``masked_scores(q, k, m).softmax(dim=-1)``, or through one local bound
    only to it): the call a ``RETURNED`` fill is judged at.  (LibCST and the
    flow are imported here: the summaries read with ``ast`` import this
    module for every file, attention-free ones too.)"""
    import libcst as cst

    from ..flow import DefKind, lookup

    scope = site.scope
    func = scope.node if scope is not None else None
    if not isinstance(func, cst.FunctionDef):
        return False
    nested = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
    names = set()
    for node in _walk(func.body, nested):
        if isinstance(node, cst.Assign) and node.value is site.node and len(node.targets) == 1:
            target = node.targets[0].target
            if isinstance(target, cst.Name):
                defs = lookup(target.value, scope.final_env, scope)
                if len(defs) == 1 and defs[0].kind == DefKind.ASSIGN:
                    names.add(target.value)
    for node in _walk(func.body, nested):
        if not isinstance(node, cst.Call):
            continue
        f = node.func
        name = f.attr.value if isinstance(f, cst.Attribute) else getattr(f, "value", None)
        if name != "softmax":
            continue
        owner = f.value if isinstance(f, cst.Attribute) else None
        if isinstance(owner, cst.Name) and owner.value in ("F", "torch"):
            owner = None
        given = owner if owner is not None else (node.args[0].value if node.args else None)
        if given is site.node or (isinstance(given, cst.Name) and given.value in names):
            return True
    return False


def _walk(node, nested):
    """``node`` and what it holds, not inside the ``nested`` kinds below it."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, nested) and n is not node:
            continue
        stack.extend(n.children)
