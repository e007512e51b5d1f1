"""What a class statement or a constructor parameter says of the module a
call runs: a parameter's class default (``attn_layer=Attention``) and a
``forward`` that only hands its arguments to the torch base's."""

from __future__ import annotations

from typing import List, Optional

import libcst as cst

from ..core.torch_api import ModuleSpec
from .flow import DefKind, Env, Scope, lookup


def delegates(func: cst.FunctionDef, spec: ModuleSpec) -> bool:
    """A ``forward`` that only hands its parameters, named as torch's
    ``forward`` names them, to ``super().forward(...)`` in the same places
    (``def forward(self, src, src_mask=None, ...): return super().forward(src,
    src_mask=src_mask, ...)``): the torch module's own ``forward``."""
    body = func.body.body if isinstance(func.body, cst.IndentedBlock) else ()
    stmts = [s for s in body if not _is_docstring(s)]
    if len(stmts) != 1 or not isinstance(stmts[0], cst.SimpleStatementLine):
        return False
    small = stmts[0].body
    if len(small) != 1 or not isinstance(small[0], cst.Return):
        return False
    call = small[0].value
    if not (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "forward"
        and isinstance(call.func.value, cst.Call)
        and isinstance(call.func.value.func, cst.Name)
        and call.func.value.func.value == "super"
    ):
        return False
    p = func.params
    if p.star_arg not in (None, cst.MaybeSentinel.DEFAULT) or p.star_kwarg or p.posonly_params:
        return False
    names = [q.name.value for q in list(p.params)[1:] + list(p.kwonly_params)]
    if names != list(spec.forward.names[: len(names)]):
        return False
    passed: List[str] = []
    for i, a in enumerate(call.args):
        if a.star or not isinstance(a.value, cst.Name):
            return False
        if a.keyword is None:
            if passed != names[:i] or a.value.value != names[i]:
                return False
        elif a.keyword.value != a.value.value:
            return False
        passed.append(a.value.value)
    return sorted(passed) == sorted(names)


def _is_docstring(stmt) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def class_default(func, env: Env, scope: Optional[Scope]):
    """``attn_layer(dim)`` inside ``def __init__(self, dim, attn_layer=Attention)``,
    the parameter not rebound: the default class (timm's and open_clip's
    ``attn_layer``, ``norm_layer``, ``block_fn``), the kind every construction
    that leaves the parameter out gets.  Anything else: ``func`` itself."""
    if not isinstance(func, cst.Name):
        return func
    defs = lookup(func.value, env, scope)
    if len(defs) != 1 or defs[0].kind != DefKind.PARAM or not isinstance(defs[0].node, cst.Param):
        return func
    default = defs[0].node.default
    return default if isinstance(default, (cst.Name, cst.Attribute)) else func
