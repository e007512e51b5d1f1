"""einx's ``where``, as the mask analysis and the scores analysis read it.

``einx.where(description, condition, x, y)`` is ``torch.where(condition, x,
y)`` after an einx description that names each argument's axes
(``"b j, b h i j, -> b h i j"``): True picks ``x``.  The linter never
imports einx; only the positional form (einx's signature) is read.
"""

from __future__ import annotations

import libcst as cst

EINX_WHERE = "einx.where"


def einx_where_args(call: cst.Call):
    """``(description, condition, x, y)`` of ``einx.where(description, cond,
    x, y)`` passed positionally (einx's signature), else None."""
    args = [a.value for a in call.args if a.keyword is None and not a.star]
    if len(args) != 4 or len(args) != len(call.args):
        return None
    return tuple(args)


def einx_aligned(description: cst.BaseExpression, filled_index: int) -> bool:
    """Whether an einx description keeps the condition's last two axes where
    the filled tensor has them (``"b i j, b h i j, -> b h i j"``): only then
    is a triangle in the condition the same triangle over the scores."""
    if not isinstance(description, cst.SimpleString):
        return False
    text = description.evaluated_value
    if not isinstance(text, str) or any(c in text for c in "()[]{}|"):
        return False
    parts = [p.split() for p in text.split("->")[0].split(",")]
    if len(parts) < 3 or filled_index >= len(parts):
        return False
    cond, filled = parts[0], parts[filled_index]
    if len(cond) < 2 or len(filled) < 2 or "..." in cond[-2:] or "..." in filled[-2:]:
        return False
    return cond[-2:] == filled[-2:]
