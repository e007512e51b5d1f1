"""Terms added to or multiplied into attention scores, by what they are
called: a mask's name, ``valid`` or ``keep``, or a name given unit axes to
meet the scores (``fills.py`` reads the functions that do it)."""

from __future__ import annotations

import ast
from typing import Dict, Optional

from . import steps

# what keeps a tensor's values, in the same shape
KEEPS_VALUE = ("to", "type_as", "item", "float", "half", "detach", "clone")
# and what moves or copies them into another shape
_SHAPES = ("expand", "expand_as", "reshape", "view", "contiguous", "unsqueeze", "flatten")


def folded_mask(term: ast.AST, stores) -> Optional[ast.AST]:
    """The one mask-named operand that the stores of the local ``term`` add
    into it (T5's bias: ``position_bias = position_bias + mask``): adding the
    local to the scores adds that mask to them.  None when there is no such
    operand, or several."""
    if not isinstance(term, ast.Name):
        return None
    found: Dict[str, ast.AST] = {}
    for d in stores.get(term.id, ()):
        if isinstance(d, ast.AugAssign) and isinstance(d.op, ast.Add):
            sides = (d.value,)  # ``bias += mask``: the target is the local itself
        elif isinstance(d, ast.Assign) and isinstance(d.value, ast.BinOp):
            sides = (d.value.left, d.value.right) if isinstance(d.value.op, ast.Add) else ()
        else:
            continue
        for side in sides:
            if names_a_mask(side):
                found.setdefault(ast.dump(side), side)
    return next(iter(found.values())) if len(found) == 1 else None


def names_a_mask(term: ast.AST) -> bool:
    """A plain name (or ``self.<attr>``, or one indexed) that says mask."""
    while isinstance(term, ast.Subscript):
        term = term.value
    name = term.id if isinstance(term, ast.Name) else getattr(term, "attr", None)
    return isinstance(name, str) and "mask" in name.lower()


_MOVES = ("permute", "transpose", "swapaxes", "movedim", "unsqueeze")


def _moved(term: ast.AST) -> bool:
    """``m.permute(0, 2, 1)``, ``m.unsqueeze(1)``: ``m``'s axes moved or added."""
    return (
        isinstance(term, ast.Call)
        and isinstance(term.func, ast.Attribute)
        and term.func.attr in _MOVES
        and bool(term.args)
        and not term.keywords
        and all(steps.small_int(a) is not None for a in term.args)
    )


def multiplied_mask(term: ast.AST) -> bool:
    """A term multiplied into the scores that may be a 0/1 mask: one that
    says mask, ``valid`` or ``keep``, or a name given unit axes to meet the
    scores (``frames[:, None, None, :]``).  The caller's value is what is
    judged: a scale or a weight it hands in is no mask there.  A cast to
    numbers around it (``mask[:, None, :].float()``) is the mask."""
    term = _uncast(term)
    if names_a_mask(term):
        return True
    shaped = False
    while isinstance(term, ast.Subscript) or steps.repeated_rows(term) or _moved(term):
        if isinstance(term, ast.Call):  # ``mask.repeat_interleave(heads, dim=0)[:, None, :]``
            term = term.func.value  # or ``mask.permute(0, 2, 1)[...]`` (probe AR's AR09)
            continue
        sl = term.slice
        items = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        shaped = shaped or any(steps.is_none_constant(i) for i in items)
        term = term.value
    if names_a_mask(term):
        return True
    if not isinstance(term, ast.Name):
        return False
    return shaped or any(w in term.id.lower() for w in ("valid", "keep"))


def mask_factor(term: ast.AST, stores) -> bool:
    """``multiplied_mask``, also for a local bound once to one in another
    shape: ``gate = keep[:, None, None, :].expand(B, H, S, S).reshape(B * H,
    S, S)`` multiplied in as ``gate.to(scores.dtype)`` (probe AJ's AJ01)."""
    if multiplied_mask(term):
        return True
    term = _uncast(term)
    defs = stores.get(term.id, ()) if isinstance(term, ast.Name) else ()
    if len(defs) != 1 or not isinstance(defs[0], ast.Assign) or len(defs[0].targets) != 1:
        return False
    value = defs[0].value
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in _SHAPES + KEEPS_VALUE
    ):
        value = value.func.value
    return multiplied_mask(value)


def _uncast(term: ast.AST) -> ast.AST:
    """``term`` without the casts around it (``mask[:, None, :].float()``)."""
    while (
        isinstance(term, ast.Call)
        and isinstance(term.func, ast.Attribute)
        and term.func.attr in KEEPS_VALUE + ("bool",)
    ):
        term = term.func.value
    return term
