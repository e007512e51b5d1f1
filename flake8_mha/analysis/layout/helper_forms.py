"""What the layout reads of a helper of another project file, in the
helper's own file (``program/returns.py``'s ``helper_reading``): a return
that moves a parameter's axes by a chain of methods or swaps its first two
by ``rearrange`` (``read_chain``), or a return whose layout that file states, or a swap of data of unknown layout (``read_stated``).  Small
JSON forms, kept in the results cache by the helper file's bytes."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from .comments import DocLine
from .domain import is_swap, is_swap_pattern


# the tensor methods a helper's return may chain on its parameter for ``read_chain``:
# axis moves and merges, and steps that keep the axes
CHAIN_METHODS = frozenset(
    {
        "flatten",
        "permute",
        "transpose",
        "swapaxes",
        "swapdims",
        "movedim",
        "moveaxis",
        "unsqueeze",
        "squeeze",
        "contiguous",
    }
)
_MOVES = CHAIN_METHODS - {"contiguous"}


def read_chain(ctx, func: cst.FunctionDef, fscope) -> Optional[dict]:
    """The layout's reading of a helper, in its own file: its one return is a
    chain of axis moves with literal arguments on one parameter (``def
    to_tokens(fmap): return fmap.flatten(2).permute(2, 0, 1)``): the
    parameter and the steps, which the caller applies to its own argument
    as if it were written there (probe AR's AR03).  The helper's own file
    cannot read it: what it moves is what each caller hands."""
    if len(fscope.returns) != 1:
        return None
    node = fscope.returns[0][0]
    params = {x.name.value for x in (*func.params.posonly_params, *func.params.params)}
    swapped = _swap_rearranged(node)
    if swapped is not None:  # ``rearrange(p, "b n d -> n b d")``: ``p.transpose(0, 1)``
        return (
            {"params": [swapped], "steps": [["transpose", [0, 1]]]} if swapped in params else None
        )
    steps = []
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        method = node.func.attr.value
        ints = [_int(a) for a in node.args]
        if method not in CHAIN_METHODS or None in ints or any(a.keyword for a in node.args):
            return None
        steps.append([method, ints])
        node = node.func.value
    if not isinstance(node, cst.Name) or node.value not in params:
        return None
    if not any(m in _MOVES for m, _ in steps):
        return None
    return {"params": [node.value], "steps": steps[::-1]}


def _swap_rearranged(ret: cst.BaseExpression) -> Optional[str]:
    """``p`` of ``rearrange(p, "b n d -> n b d")``, a swap of the first two axes."""
    if not isinstance(ret, cst.Call) or len(ret.args) != 2:
        return None
    f = ret.func
    name = f.attr.value if isinstance(f, cst.Attribute) else getattr(f, "value", None)
    data, pattern = ret.args[0].value, ret.args[1].value
    if (
        name == "rearrange"
        and isinstance(data, cst.Name)
        and isinstance(pattern, cst.SimpleString)
        and is_swap_pattern(pattern.evaluated_value or "")
    ):
        return data.value
    return None


def _int(a: cst.Arg) -> Optional[int]:
    v = a.value
    if a.star:
        return None
    if isinstance(v, cst.UnaryOperation) and isinstance(v.operator, cst.Minus):
        return -_int(cst.Arg(v.expression)) if _int(cst.Arg(v.expression)) is not None else None
    if isinstance(v, cst.Integer):
        try:
            return int(v.value, 0)
        except ValueError:  # pragma: no cover - ``0_1`` and the like
            return None
    return None


def read_stated(ctx, func: cst.FunctionDef, fscope) -> Optional[dict]:
    """The layout's reading of a helper, in its own file: its one return's
    layout as that file states it (its parameters unknown), batch-first or
    sequence-first, or ``swap`` for an axis swap of data of unknown layout
    (read at a module's call as the conversion, as in one file); ``params``
    empty."""
    from . import analysis_for  # the package's analysis, asked lazily

    if len(fscope.returns) != 1:
        return None
    ret, renv = fscope.returns[0]
    evaluator = analysis_for(ctx).evaluator
    got = evaluator.eval(ret, renv, fscope, None, 0)
    f = ret.func if isinstance(ret, cst.Call) else None
    if got is None and isinstance(f, cst.Attribute) and is_swap(ret, f.attr.value):
        if _says_nothing(evaluator.eval(f.value, renv, fscope, None, 0)):
            return {"params": [], "swap": True}  # a swap of data of unknown layout, as in one file
    if got is None or got.batch_first is None or got.conforms or got.origin is not None:
        return None
    from ...core.positions import line_of

    return {
        "params": [],
        "roles": list(got.roles),
        "how": got.how,
        "line": line_of(ctx.module, ret),  # a comment has no line of its own: the return's
        "code": _evidence_text(ctx, got.node),
    }


def _evidence_text(ctx, node) -> str:
    if isinstance(node, (cst.Comment, DocLine)):
        return node.value.strip()[:60]
    try:
        return ctx.module.code_for_node(node).strip()[:60] if node is not None else ""
    except Exception:  # pragma: no cover - a node made by the analysis
        return ""


def _says_nothing(v) -> bool:
    """No axis's role known (``calls.said`` of it is None): unknown, a cycle,
    or a layout that names no role."""
    return v is None or (not v.conforms and not v.disagree and all(r is None for r in v.roles))
