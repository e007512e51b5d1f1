"""Where the rows of a key or value tensor stay put (MHA015): the methods
and unpackings that move its axes without mixing its rows."""

from __future__ import annotations

import libcst as cst

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
    if param is not None and not _keeps_rows(body, param):
        return None
    return unpacked(items, index)


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
