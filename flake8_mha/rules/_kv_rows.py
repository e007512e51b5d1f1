"""Where the rows of a key or value tensor stay put (MHA015): the methods
and unpackings that move its axes without mixing its rows."""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from ..analysis.flow import DefKind, lookup
from ..core.positions import line_of

# functions that keep the rows of their first argument (axes moved, not mixed)
SAME_ROWS_FUNCS = {
    "einops.rearrange",
    "torch.transpose",
    "torch.permute",
    "torch.swapaxes",
    "torch.movedim",
    "torch.reshape",
    "torch.unsqueeze",
    "torch.squeeze",
    "torch.flatten",
}
MAX_DEPTH = 10
# methods that keep the rows of a key or value tensor where they were
SAME_ROWS = {
    "float",
    "half",
    "double",
    "bfloat16",
    "to",
    "type",
    "type_as",
    "contiguous",
    "clone",
    "detach",
    "view",
    "reshape",
    "transpose",
    "permute",
    "swapaxes",
    "swapdims",
    "movedim",
    "unsqueeze",
    "squeeze",
    "flatten",
    "unflatten",
    "expand",
    "expand_as",
    "view_as",
    "reshape_as",
}


def unpacked(node, index):
    """What one name of ``a, b = ...`` holds where the rows stay put: an element
    of a literal tuple (``k, v = k * m, v * m``), the tensor ``chunk``,
    ``split``, ``unbind`` or ``tensor_split`` cut (``k, v = kv.chunk(2, -1)``),
    or the call of a helper that returns them."""
    if isinstance(node, (cst.Tuple, cst.List)) and len(index) == 1:
        elements = node.elements
        i = index[0]
        if isinstance(i, int) and 0 <= i < len(elements):
            el = elements[i]
            return None if isinstance(el, cst.StarredElement) else el.value
        return None
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        if node.func.attr.value in ("chunk", "split", "unbind", "tensor_split"):
            return node.func.value
    got = _split_each(node, index)
    if got is None and isinstance(node, cst.Call) and len(index) == 1:
        # ``k, v = mask_kv(k, v, keep)``: the pair a helper returns, read as
        # the helper's one reading of its return (MHA015's ``_read_helper``)
        return node
    return got


def _split_each(node, index):
    """One element of a tuple whose every tensor is split into heads the
    same way, rows kept: ``q, k, v = map(lambda t: rearrange(t, "b n (h d)
    -> b h n d", h=h), (q, k, v))``, the generator ``(rearrange(t, ...) for
    t in (q, k, v))``, and einops-exts' ``rearrange_many((q, k, v), ...)``."""
    if len(index) != 1 or not isinstance(index[0], int):
        return None
    items = param = body = None
    if isinstance(node, cst.Call) and node.args and node.args[0].keyword is None:
        head = node.func.attr if isinstance(node.func, cst.Attribute) else node.func
        name = head.value if isinstance(head, cst.Name) else None
        if name == "rearrange_many":
            items = node.args[0].value
        elif name == "map" and len(node.args) == 2 and isinstance(node.args[0].value, cst.Lambda):
            lam = node.args[0].value
            if len(lam.params.params) == 1:
                param, body, items = lam.params.params[0].name.value, lam.body, node.args[1].value
    elif isinstance(node, cst.GeneratorExp) and node.for_in.inner_for_in is None:
        target = node.for_in.target
        if isinstance(target, cst.Name) and not node.for_in.ifs:
            param, body, items = target.value, node.elt, node.for_in.iter
    if not isinstance(items, (cst.Tuple, cst.List)):
        return None
    if param is not None and _masks_each(body, param):
        return body  # ``k, v = (t * keep[..., None] for t in (k, v))``: each one masked so
    if param is not None and not _keeps_rows(body, param):
        return None
    return unpacked(items, index)


def _masks_each(body, param: str) -> bool:
    """``t * m`` / ``m * t`` or ``t.masked_fill(c, 0)``, ``m`` and ``c`` not
    reading ``t`` (probe AM's AM16)."""
    if isinstance(body, cst.BinaryOperation) and isinstance(body.operator, cst.Multiply):
        sides = (body.left, body.right)
        mine = [s for s in sides if isinstance(s, cst.Name) and s.value == param]
        return len(mine) == 1 and not _reads(sides[1] if sides[0] is mine[0] else sides[0], param)
    if isinstance(body, cst.Call) and isinstance(body.func, cst.Attribute):
        func = body.func
        return (
            func.attr.value == "masked_fill"
            and isinstance(func.value, cst.Name)
            and func.value.value == param
            and not any(_reads(a.value, param) for a in body.args)
        )
    return False


def _reads(node, name: str) -> bool:
    if isinstance(node, cst.Name):
        return node.value == name
    return any(_reads(c, name) for c in node.children)


def _keeps_rows(body, param: str) -> bool:
    """``body`` moves the axes of the name ``param`` without mixing its rows:
    ``rearrange(t, ...)``, ``t.view(...).transpose(1, 2)``."""
    while isinstance(body, cst.Call):
        func = body.func
        if isinstance(func, cst.Attribute) and func.attr.value in SAME_ROWS:
            body = func.value
            continue
        name = func.attr if isinstance(func, cst.Attribute) else func
        if not (isinstance(name, cst.Name) and name.value == "rearrange" and body.args):
            return False
        body = body.args[0].value
    return isinstance(body, cst.Name) and body.value == param


def in_place(scope, module: cst.Module) -> dict:
    """The statements of ``scope``'s function that mask a name in place:
    ``name.masked_fill_(cond, value)`` and ``name.mul_(factor)`` (a key
    zeroed before it is handed on), ``{name: [(line, call), ...]}`` from the
    last."""
    func = getattr(scope, "node", None)
    if not isinstance(func, cst.FunctionDef):
        return {}
    found: dict = {}
    for stmt in _statements(func.body):
        call = stmt.value if isinstance(stmt, cst.Expr) else None
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)):
            continue
        owner, method = call.func.value, call.func.attr.value
        wanted = {"masked_fill_": 2, "mul_": 1}.get(method)
        if not (isinstance(owner, cst.Name) and wanted):
            continue
        if len(call.args) != wanted or any(a.keyword or a.star for a in call.args):
            continue
        line = line_of(module, call)
        if line is not None:
            found.setdefault(owner.value, []).append((line, call))
    return {k: sorted(v, key=lambda f: -f[0]) for k, v in found.items()}


def _statements(body):
    """The simple statements of a block, and of the blocks of its compound
    statements (not of nested functions or classes)."""
    for st in body.body if isinstance(body, cst.IndentedBlock) else ():
        if isinstance(st, cst.SimpleStatementLine):
            yield from st.body
        elif isinstance(st, (cst.FunctionDef, cst.ClassDef)):
            continue
        else:
            for part in (getattr(st, "body", None), getattr(st, "orelse", None)):
                inner = getattr(part, "body", part)
                if isinstance(inner, cst.IndentedBlock):
                    yield from _statements(inner)


# a name that says keep-mask: ``keep``, ``res_keep``, ``keep_pad``; not a rate or a count
_KEEP = re.compile(r"(?<![a-z0-9])(\w*_)?keep(_\w+)?(?![a-z0-9_])")
_NOT_KEEP = ("prob", "rate", "ratio", "frac", "dim", "idx", "top", "num", "count", "len")


def says_keep(text: str) -> bool:
    return any(not any(w in m.group(0) for w in _NOT_KEEP) for m in _KEEP.finditer(text))


def made_call(defs) -> bool:
    """A local bound once to a call that is no count (``torch.cat([keep, ones])``)."""
    node = defs[0].node if len(defs) == 1 and defs[0].kind == DefKind.ASSIGN else None
    func = node.func if isinstance(node, cst.Call) else None
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
    return name not in (None, "sum", "mean", "count_nonzero", "prod", "cumsum", "numel", "size")


def param_root(factor, env, scope):
    """(the parameter's definition, its name) ``factor`` shapes, else None."""
    while isinstance(factor, cst.Subscript) or (
        isinstance(factor, cst.Call) and isinstance(factor.func, cst.Attribute)
    ):
        factor = factor.value if isinstance(factor, cst.Subscript) else factor.func.value
    defs = lookup(factor.value, env, scope) if isinstance(factor, cst.Name) else ()
    return (defs[0], factor.value) if len(defs) == 1 and defs[0].kind == DefKind.PARAM else None


def zeroed_where_false(cond) -> Optional[cst.BaseExpression]:
    """``m`` of ``~m``, ``m == 0``, ``m == False`` or ``m.logical_not()``: a
    zero fill there zeroes where ``m`` is false (a keep-mask's padding)."""
    if isinstance(cond, cst.UnaryOperation) and isinstance(cond.operator, cst.BitInvert):
        return cond.expression
    if (
        isinstance(cond, cst.Comparison)
        and len(cond.comparisons) == 1
        and isinstance(cond.comparisons[0].operator, cst.Equal)
        and isinstance(cond.comparisons[0].comparator, (cst.Integer, cst.Name))
        and cond.comparisons[0].comparator.value in ("0", "False")
    ):
        return cond.left
    if (
        isinstance(cond, cst.Call)
        and isinstance(cond.func, cst.Attribute)
        and cond.func.attr.value == "logical_not"
        and not cond.args
    ):
        return cond.func.value
    return None


MASK_SHAPING = {"unsqueeze", "float", "half", "double", "to", "type", "type_as", "bool"}
MASK_SHAPING |= {"long", "int", "view", "reshape", "expand", "expand_as", "view_as"}


def shaped(node) -> bool:
    """A name (or attribute) only indexed, cast or reshaped: what a local
    bound to it still is (``frame_mask[:, None, :, None].to(k.dtype)``; not
    ``mask.sum(-1)``)."""
    for _ in range(8):
        if isinstance(node, (cst.Name, cst.Attribute)):
            return True
        if isinstance(node, cst.Subscript):
            node = node.value
        elif (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in MASK_SHAPING
        ):
            node = node.func.value
        else:
            return False
    return False


def read_rows(ctx, func: cst.FunctionDef, fscope) -> Optional[dict]:
    """A helper whose one return moves the axes of one of its parameters,
    rows kept (``def _split(self, t): return t.view(b, n, h, d).transpose(1,
    2)``): ``{"params": [that parameter]}``."""
    if len(fscope.returns) != 1:
        return None
    ret, renv = fscope.returns[0]
    name = rows_of(ctx, ret, renv, fscope, 0)
    return {"params": [name]} if name is not None else None


def rows_of(ctx, node, env, scope, depth: int) -> Optional[str]:
    """The parameter ``node`` is, its rows kept (as ``masked`` walks)."""
    if node is None or depth > MAX_DEPTH:
        return None
    d = depth + 1
    if isinstance(node, cst.Name):
        defs = lookup(node.value, env, scope)
        if len(defs) != 1:
            return None
        if defs[0].kind == "param":
            return node.value
        if defs[0].kind == "assign" and defs[0].node is not None and not defs[0].index:
            return rows_of(ctx, defs[0].node, defs[0].env, defs[0].scope, d)
        return None
    if not isinstance(node, cst.Call):
        return None
    if isinstance(node.func, cst.Attribute) and node.func.attr.value in SAME_ROWS:
        return rows_of(ctx, node.func.value, env, scope, d)
    try:
        qn = ctx.resolver.qualname(node.func, env, scope)
    except RecursionError:  # pragma: no cover - pathological nesting
        return None
    if qn in SAME_ROWS_FUNCS and node.args and node.args[0].keyword is None:
        return rows_of(ctx, node.args[0].value, env, scope, d)
    return None
