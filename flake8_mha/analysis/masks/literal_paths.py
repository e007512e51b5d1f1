"""Return paths a helper's call cannot take: the tests above a ``return``
that the call's literal arguments decide (probe AM's AM19:
``make_padding_mask(ids, 0, kind="ignore")`` never takes ``if kind ==
"keep": return ids != pad_id``)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from ..flow import DefKind, lookup

OPEN = object()  # not decided by the call


def not_taken(conds, frame) -> bool:
    """Whether one of ``conds`` (``(test, truth, env)`` as the flow records
    them above a statement) is decided the other way by the literal
    arguments ``frame`` binds to its function's parameters (or their
    literal defaults when the call leaves them out)."""
    for test, truth, env in conds:
        got = _truth(test, env, frame)
        if got is not None and got != truth:
            return True
    return False


def _truth(test, env, frame) -> Optional[bool]:
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _truth(test.expression, env, frame)
        return None if inner is None else not inner
    if isinstance(test, cst.Name):
        value = _param_literal(test, env, frame)
        return None if value is OPEN else bool(value)
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    op = test.comparisons[0]
    left, right = test.left, op.comparator
    a, b = _param_literal(left, env, frame), literal_of(right)
    if a is OPEN or b is OPEN:
        a, b = _param_literal(right, env, frame), literal_of(left)
    if a is OPEN or b is OPEN:
        return None
    if isinstance(op.operator, (cst.Equal, cst.Is)):
        return a == b
    if isinstance(op.operator, (cst.NotEqual, cst.IsNot)):
        return a != b
    return None


def _param_literal(node, env, frame):
    """The literal a parameter of the frame's function holds at this call,
    never rebound in the function; ``OPEN`` otherwise."""
    if not isinstance(node, cst.Name) or frame is None:
        return OPEN
    defs = lookup(node.value, env, frame.fscope)
    if len(defs) != 1 or defs[0].kind != DefKind.PARAM:
        return OPEN
    param = defs[0].node
    name = param.name.value
    if name in frame.args:
        given = frame.args[name]
        return literal_of(given) if isinstance(given, cst.BaseExpression) else OPEN
    return literal_of(param.default) if param.default is not None else OPEN


def literal_of(node):
    if isinstance(node, (cst.SimpleString, cst.Integer)):
        return node.evaluated_value
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    return OPEN
