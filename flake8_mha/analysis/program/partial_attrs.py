"""Functions a module keeps on ``self`` as ``functools.partial`` objects.

``self.attend = partial(attend, causal=causal)`` in ``__init__``, then
``self.attend(q, k, v, mask)`` in ``forward`` (probe X's fraud model): the
call runs ``attend`` with the partial's arguments first.  ``unfold`` gives a
method's ``ast`` with each such call written out (``attend(q, k, v, mask,
causal=causal)``), so its summary has the edge a direct call would have; a
name the partial took from ``__init__`` is no parameter of the method, and
reaches nothing there.
"""

from __future__ import annotations

import ast
import copy
from typing import Dict, Optional

from .chains import dotted_name, self_attr

_PARTIAL = ("partial", "functools.partial")


def partial_attrs(cls: ast.ClassDef) -> Dict[str, ast.AST]:
    """``attr -> the partial's call`` for each ``self.<attr> = partial(f, ...)``
    of the class's ``__init__`` (``f`` a plain name), the lambda of each
    ``self.<attr> = lambda ...: ...``, or the name of each ``self.<attr> =
    attend`` of a global (probe AB's AB11), the attribute set once in the
    class."""
    init = next(
        (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None
    )
    if init is None:
        return {}
    found: Dict[str, ast.AST] = {}
    local = None  # the names ``__init__`` binds: read only when a name is kept
    for n in ast.walk(init):
        if not isinstance(n, ast.Assign) or len(n.targets) != 1:
            continue
        if isinstance(n.value, ast.Name):
            if self_attr(n.targets[0]) is None:
                continue
            local = _bound_in(init) if local is None else local
            if n.value.id in local:
                continue
        elif not (_partial_of_name(n.value) or _plain_lambda(n.value)):
            continue
        attr = self_attr(n.targets[0])
        if attr is not None:
            found[attr] = n.value
    if not found:
        return {}
    stores: Dict[str, int] = {}
    for n in ast.walk(cls):
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for t in n.targets if isinstance(n, ast.Assign) else [n.target]:
                attr = self_attr(t)
                if attr in found:
                    stores[attr] = stores.get(attr, 0) + 1
    return {a: call for a, call in found.items() if stores.get(a) == 1}


def unfold(func: ast.FunctionDef, partials: Dict[str, ast.AST]) -> ast.FunctionDef:
    """A copy of ``func`` whose calls ``self.<attr>(...)`` of a partial are
    calls of its function, the partial's arguments first; a call of a lambda
    kept so (``self.attend = lambda q, k, v, m: F.scaled_dot_product_attention(
    q, k, v, attn_mask=m)``: probe AB's AB21) is its body, the call's
    arguments in place of its parameters."""
    if not partials or not any(_held_call(n, partials) for n in ast.walk(func)):
        return func
    out = _Inlined(partials).visit(copy.deepcopy(func))
    shadowed = _bound_in(func)
    for n in ast.walk(out):
        attr = _held_call(n, partials)
        kept = partials[attr] if attr is not None else None
        if isinstance(kept, ast.Name) and kept.id not in shadowed:
            n.func = ast.copy_location(ast.Name(id=kept.id, ctx=ast.Load()), n.func)
        elif isinstance(kept, ast.Call):
            made = partials[attr]
            n.func = copy.deepcopy(made.args[0])
            n.args = [copy.deepcopy(a) for a in made.args[1:]] + n.args
            given = {k.arg for k in n.keywords}
            n.keywords = [
                copy.deepcopy(k) for k in made.keywords if k.arg not in given
            ] + n.keywords
            ast.copy_location(n.func, n)
            for sub in ast.walk(n.func):
                ast.copy_location(sub, n)
    return out


class _Inlined(ast.NodeTransformer):
    """Calls of the lambdas kept on ``self`` written out as their bodies."""

    def __init__(self, partials) -> None:
        self.lambdas = {a: f for a, f in partials.items() if isinstance(f, ast.Lambda)}

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        attr = _held_call(node, self.lambdas)
        lam = self.lambdas.get(attr) if attr is not None else None
        params = [a.arg for a in lam.args.args] if lam is not None else []
        if lam is None or node.keywords or len(node.args) != len(params):
            return node
        given = dict(zip(params, node.args))
        body = _Substituted(given).visit(copy.deepcopy(lam.body))
        for sub in ast.walk(body):
            ast.copy_location(sub, node)
        return body


class _Substituted(ast.NodeTransformer):
    def __init__(self, given) -> None:
        self.given = given

    def visit_Name(self, node: ast.Name):
        got = self.given.get(node.id)
        return copy.deepcopy(got) if got is not None and isinstance(node.ctx, ast.Load) else node


def _bound_in(func) -> set:
    """The names a function binds itself (its parameters, its stores): a
    name kept on ``self`` that is none of them is a global of the module
    (``self.expand = tile_heads``), the same object in every method that
    does not bind it either."""
    a = func.args
    out = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    out.update(x.arg for x in (a.vararg, a.kwarg) if x is not None)
    for n in ast.walk(func):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not func:
            out.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            out.update((x.asname or x.name).split(".")[0] for x in n.names)
    return out


def _plain_lambda(value) -> bool:
    """A lambda of plain positional parameters, none defaulted."""
    if not isinstance(value, ast.Lambda):
        return False
    a = value.args
    return not (a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or a.defaults)


def _held_call(n, partials) -> Optional[str]:
    if isinstance(n, ast.Call) and not any(isinstance(a, ast.Starred) for a in n.args):
        attr = self_attr(n.func)
        if attr in partials:
            return attr
    return None


def _partial_of_name(value) -> bool:
    return (
        isinstance(value, ast.Call)
        and dotted_name(value.func) in _PARTIAL
        and bool(value.args)
        and isinstance(value.args[0], ast.Name)
        and not any(isinstance(a, ast.Starred) for a in value.args)
        and all(k.arg is not None for k in value.keywords)
    )
