"""Token ids a key padding mask is made from: ``(N, S)``.

torch reads a ``*key_padding_mask`` ``(N, S)`` whatever a module's
``batch_first``, so ids compared with a pad id into one (``ids == 0``,
``ids.ne(pad)``, ``~(ids != pad)``, a local bound once to such, or a helper
of the file or of another project file whose one return is such a
comparison of its parameter: ``token_padding(ids)``) are ``(N, S)``, and
so is their embedding (probe W's W32)."""

from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from ..flow import lookup

_COMPARISONS = (cst.Equal, cst.NotEqual)
MAX_DEPTH = 4

# ``helper(call, env, scope)``: the caller's argument a helper ``call`` runs
# compares with a pad id (``read_compared``), else None
Helper = Callable[[cst.Call, object, object], Optional[cst.CSTNode]]


def compared(expr, name: str, env, scope, helper: Optional[Helper] = None, depth: int = 0):
    """The comparison of ``name`` with a value that ``expr`` is, else None."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
        return compared(expr.expression, name, env, scope, helper, depth + 1)
    if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1:
        left, op = expr.left, expr.comparisons[0].operator
        if isinstance(op, _COMPARISONS) and isinstance(left, cst.Name) and left.value == name:
            return expr
        return None
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        owner = expr.func.value
        if expr.func.attr.value in ("eq", "ne") and isinstance(owner, cst.Name):
            return expr if owner.value == name else None
    if isinstance(expr, cst.Call) and helper is not None:
        arg = helper(expr, env, scope)
        return expr if isinstance(arg, cst.Name) and arg.value == name else None
    if isinstance(expr, cst.Name):
        defs = lookup(expr.value, env, scope)
        if len(defs) == 1 and defs[0].kind == "assign" and defs[0].node is not None:
            return compared(defs[0].node, name, defs[0].env, scope, helper, depth + 1)
    return None


def read_compared(ctx, func: cst.FunctionDef, fscope) -> Optional[dict]:
    """A helper's reading, in its own file: its one return compares its
    parameter ``p`` with a value (``return ids == PAD``)."""
    if len(fscope.returns) != 1:
        return None
    ret, renv = fscope.returns[0]
    for p in (*func.params.posonly_params, *func.params.params):
        if compared(ret, p.name.value, renv, fscope) is not None:
            return {"params": [p.name.value]}
    return None
