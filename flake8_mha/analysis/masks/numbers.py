"""Numbers: constants, and the big negative fills that mask a score out.

``_number`` reads a numeric constant (following a helper's parameter to the
caller's argument); ``_neg`` tells a big negative (``-inf``,
``torch.finfo(t).min``, ``-1e9``) from a big positive, through names,
helpers, ``torch.tensor(...)``, ``float("-inf")``, division by a small
constant (``-torch.finfo(t).max // 2``) and imported constants named like an
infinity (``-constant.INFINITY_NUMBER``, ``NEG_INF``; see ``constant_sign``).
"""

from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from ...core.fills import SMALL_DIVISOR, constant_sign, helper_sign, sign
from ..flow import lookup
from ..values import UNKNOWN, value_of
from .calls import At, Frame, arg, bind_call, frame_for

MAX_DEPTH = 40
_FOLLOW_HOPS = 8

# torch (and friends) that wrap a number into a tensor: the sign of their first argument
_WRAPS = ("torch.tensor", "torch.as_tensor", "torch.scalar_tensor", "numpy.array", "builtins.float")
# methods that keep a tensor's value (a dtype or device change, a copy)
_KEEPS_VALUE = ("to", "type_as", "item", "float", "half", "to_dense", "detach", "clone")
_INF = ("math.inf", "torch.inf", "numpy.inf", "numpy.Inf", "numpy.infty")
_OPPOSITE = {"pos": "neg", "neg": "pos"}


def holds(a: float, op: str, b: float) -> bool:
    """``a <op> b`` for a comparison operator's text."""
    return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def float_literal(call: cst.Call):
    """``float("-inf")``, ``float(1)``: the number, or None."""
    if isinstance(call.func, cst.Name) and call.func.value == "float" and len(call.args) == 1:
        arg = call.args[0].value
        if isinstance(arg, cst.SimpleString):
            try:
                text = arg.evaluated_value
                return float(text)
            except Exception:
                return None
        if isinstance(arg, (cst.Integer, cst.Float)):
            return float(arg.evaluated_value)
    return None


class Numbers:
    """The part of ``MaskEvaluator`` that reads numbers."""

    def _number(self, node, at: At):
        """A numeric constant (int/float/bool), following frame-bound parameters."""
        through = self._through_frame(node, at)
        if through is None:
            return None
        expr, where = through
        if isinstance(expr, cst.Call):
            return float_literal(expr)
        v = value_of(expr, where.env, where.scope)
        if v is UNKNOWN or not isinstance(v, (int, float)):
            return None
        return v

    def _through_frame(self, node, at: At) -> Optional[Tuple[cst.CSTNode, At]]:
        """Follow a helper's parameter to the caller's argument expression; the
        place returned has no frame.  None when a splat may carry it."""
        env, scope, frame = at.env, at.scope, at.frame
        hops = 0
        while isinstance(node, cst.Name) and frame is not None and hops < _FOLLOW_HOPS:
            defs = lookup(node.value, env, scope)
            if len(defs) != 1 or defs[0].kind != "param":
                break
            d = defs[0]
            fr = frame_for(d.scope, frame)
            if fr is None or fr.func is not d.extra:
                break
            name = d.node.name.value
            if name in fr.args:
                value = fr.args[name]
                if value is None or not isinstance(value, cst.CSTNode):
                    return None  # unknown, or a value evaluated in another file
                node, env, scope, frame = value, fr.env, fr.scope, fr.parent
            elif d.node.default is not None:
                node, env, scope, frame = d.node.default, {}, d.scope.parent, None
            else:
                return None
            hops += 1
        return node, At(env, scope, None, at.depth)

    def is_big_negative(self, node, at: At) -> bool:
        """-inf, ``torch.finfo(t).min``, ``-1e9``, ``-10000.0``, a name or
        helper that is one of those: a fill that removes a score."""
        return self._neg(node, at) == "neg"

    def _neg(self, node, at: At) -> Optional[str]:
        """ "neg" for a big negative, "pos" for a big positive (inf, finfo.max)."""
        if at.depth > MAX_DEPTH:
            return None
        at = at.deeper()
        env, scope = at.env, at.scope
        t = type(node)
        if t is cst.UnaryOperation and isinstance(node.operator, cst.Minus):
            return _OPPOSITE.get(self._neg(node.expression, at) or "")
        if t is cst.UnaryOperation and isinstance(node.operator, cst.Plus):
            return self._neg(node.expression, at)
        if t in (cst.Integer, cst.Float):
            return sign(node.evaluated_value)
        if t is cst.Call:
            return self._neg_call(node, at)
        if t is cst.Attribute:
            attr = node.attr.value
            if attr in ("inf", "infty", "Inf"):
                return "pos" if self.qualname(node, env, scope) in _INF else None
            if attr in ("min", "max") and isinstance(node.value, cst.Call):
                qn = self.qualname(node.value.func, env, scope)
                if qn in ("torch.finfo", "numpy.finfo", "torch.iinfo"):
                    return "neg" if attr == "min" else "pos"
                return None
            cls = self._self_class(node, env, scope)
            if cls is not None:
                return self._neg_defs(self.resolver.attr_defs(cls, attr), at)
            v = value_of(node, env, scope)
            if isinstance(v, (int, float)) and v is not UNKNOWN:
                return sign(v)
            return self._imported_constant(node, at)
        if t is cst.Name:
            if at.frame is not None:
                through = self._through_frame(node, at)
                if through is None:
                    return None
                expr, where = through
                if expr is not node:
                    return self._neg(expr, where)
            defs = lookup(node.value, env, scope)
            if any(d.kind == "import" for d in defs):
                return self._imported_constant(node, at)
            return self._neg_defs(defs, at)
        if t is cst.BinaryOperation and isinstance(node.operator, cst.Multiply):
            a = self._neg(node.left, at)
            b = self._neg(node.right, at)
            va = self._number(node.left, at)
            vb = self._number(node.right, at)
            if a and isinstance(vb, (int, float)) and vb != 0 and abs(vb) >= 1:
                return a if vb > 0 else _OPPOSITE[a]
            if b and isinstance(va, (int, float)) and va != 0 and abs(va) >= 1:
                return b if va > 0 else _OPPOSITE[b]
        if t is cst.BinaryOperation and isinstance(node.operator, (cst.Divide, cst.FloorDivide)):
            # a big negative divided by a small positive constant stays a big negative
            a = self._neg(node.left, at)
            c = self._number(node.right, at)
            if (
                a
                and isinstance(c, (int, float))
                and not isinstance(c, bool)
                and 0 < abs(c) <= SMALL_DIVISOR
            ):
                return a if c > 0 else _OPPOSITE[a]
        v = value_of(node, env, scope)
        return sign(v) if isinstance(v, (int, float)) and v is not UNKNOWN else None

    def _imported_constant(self, node, at: At, rule=constant_sign) -> Optional[str]:
        """An imported constant the file cannot read, by its name only
        (``constant.INFINITY_NUMBER``, ``NEG_INF`` from a module; see
        ``constant_sign``), or with ``rule=helper_sign`` an imported helper
        called (``max_neg_value(sim)`` from ``.utils``).  The name (or the
        root of the attribute chain) must be bound by an import and by
        nothing else."""
        root = node
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name):
            return None
        defs = lookup(root.value, at.env, at.scope)
        if not defs or any(d.kind != "import" for d in defs):
            return None
        last = node.attr.value if isinstance(node, cst.Attribute) else node.value
        return rule(last)

    def _neg_call(self, node: cst.Call, at: At) -> Optional[str]:
        f = float_literal(node)
        if f is not None:
            return sign(f)
        qn = self.qualname(node.func, at.env, at.scope)
        if qn in _WRAPS and node.args:
            return self._neg(node.args[0].value, at)
        if qn in ("torch.full", "torch.full_like"):
            value = arg(node, 1, "fill_value")
            return self._neg(value, at) if value is not None else None
        if isinstance(node.func, cst.Attribute):
            attr = node.func.attr.value
            if attr in ("new_tensor",) and node.args:
                return self._neg(node.args[0].value, at)
            if attr == "new_full":
                value = arg(node, 1, "fill_value")
                return self._neg(value, at) if value is not None else None
            if attr in _KEEPS_VALUE:
                return self._neg(node.func.value, at)
        if isinstance(node.func, cst.Name) and node.func.value == "float" and node.args:
            return self._neg(node.args[0].value, at)
        found = self.callee(node, at.env, at.scope)
        if found is not None:
            func, skip = found
            fscope = self.flow.functions.get(id(func))
            if fscope is None or not fscope.returns:
                return None
            inner = Frame(func, fscope, bind_call(func, node, skip), at.env, at.scope, at.frame)
            results = {
                self._neg(expr, at.but(renv, fscope, inner)) for expr, renv in fscope.returns
            }
            return results.pop() if len(results) == 1 else None
        return self._imported_constant(node.func, at, helper_sign)  # ``max_neg_value(sim)``

    def _neg_defs(self, defs, at: At) -> Optional[str]:
        if not defs:
            return None
        results = set()
        for d in defs:
            if d.kind != "assign":
                return None
            results.add(self._neg(d.node, at.of(d, None)))
        return results.pop() if len(results) == 1 else None
