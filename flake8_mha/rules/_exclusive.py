"""MHA006: a flag and a mask that what they are computed from keeps apart.

Release review 39 found two forms where no path gives SDPA both, though
the flow joins them:

- anthracite: ``is_causal = cache is None and t > 1``, and the mask built
  only under ``if cache is not None and t > 1:``; the flag's ``cache is
  None`` cannot hold where the mask is set;
- Meta's lingua: ``is_causal = (mask == "causal") if isinstance(mask, str)
  else False`` and ``mask = mask if isinstance(mask, torch.Tensor) else
  None``: one value is a string or a tensor, never both.

Each side is read as the conditions it needs (the flag True, the mask not
None): an ``and`` of tests, the test of a conditional expression whose other
side is False or None, the tests of the ``if`` the call sits under.  Two
conditions on the same name, never rebound between, contradict when one is
``x is None`` and the other ``x is not None``, when they are one test held
both ways, or when they are ``isinstance`` of two kinds no value is both
(a string and a tensor)."""

from __future__ import annotations

from typing import List, Optional, Tuple

import libcst as cst

from ..analysis.flow import CallSite, DefKind, lookup
from ._syntax import same

Need = Tuple[cst.BaseExpression, bool, object]  # (test, holds, env where it is read)

# kinds no value is two of at once (``isinstance(x, str)`` beside ``isinstance(x, torch.Tensor)``)
_KINDS = {"str": "str", "bytes": "bytes", "Tensor": "tensor", "dict": "dict", "list": "list"}


def kept_apart(mask, causal, site: CallSite) -> bool:
    """Whether the conditions the flag needs to be True and those the mask
    needs to be set contradict."""
    flag = _needs(causal, site.env, site.scope, True, 0)
    held = _needs(mask, site.env, site.scope, None, 0)
    if flag is None or held is None:
        return False
    held = held + [(t, p, e) for t, p, e in site.conds]
    flag = [n for t, p, e in flag for n in _parts(t, p, e)]
    held = [n for t, p, e in held for n in _parts(t, p, e)]
    return any(_contradict(a, b, site.scope) for a in flag for b in held)


def _needs(expr, env, scope, want, depth: int) -> Optional[List[Need]]:
    """The conditions under which ``expr`` is truthy (``want`` True) or not
    None (``want`` None); [] when nothing is needed, None when unknown."""
    if depth > 4:
        return []
    if isinstance(expr, cst.Name) and expr.value not in ("True", "False", "None"):
        defs = lookup(expr.value, env, scope)
        if len(defs) == 1 and defs[0].kind == DefKind.ASSIGN and not defs[0].index:
            return _needs(defs[0].node, defs[0].env, scope, want, depth + 1)
        return []
    if isinstance(expr, cst.IfExp):
        if _is_const(expr.orelse, want):
            return [(expr.test, True, env)] + (_needs(expr.body, env, scope, want, depth + 1) or [])
        if _is_const(expr.body, want):
            return [(expr.test, False, env)] + (
                _needs(expr.orelse, env, scope, want, depth + 1) or []
            )
        return []
    if (
        want is True
        and isinstance(expr, cst.BooleanOperation)
        and isinstance(expr.operator, cst.And)
    ):
        return [(expr.left, True, env), (expr.right, True, env)]
    if want is True and isinstance(expr, (cst.Comparison, cst.Call)):
        return [(expr, True, env)]
    return []


def _is_const(node, want) -> bool:
    """The side that leaves the flag False (or the mask None)."""
    names = ("False", "None") if want is True else ("None",)
    return isinstance(node, cst.Name) and node.value in names


def _parts(test, holds: bool, env) -> List[Need]:
    """``a and b`` held: each part held; ``not a``: ``a`` the other way."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _parts(test.expression, not holds, env)
    if holds and isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _parts(test.left, True, env) + _parts(test.right, True, env)
    return [(test, holds, env)]


def _contradict(a: Need, b: Need, scope) -> bool:
    (ta, pa, ea), (tb, pb, eb) = a, b
    if same(ta, tb) and pa != pb and _same_names(ta, ea, eb, scope):
        return True
    na, nb = _none_test(ta, pa), _none_test(tb, pb)
    if na and nb and na[0] == nb[0] and na[1] != nb[1]:
        return _same_names(ta, ea, eb, scope)
    ka, kb = _kind_test(ta, pa), _kind_test(tb, pb)
    if ka and kb and ka[0] == kb[0] and ka[1] != kb[1]:
        return _same_names(ta, ea, eb, scope)
    return False


def _none_test(test, holds: bool) -> Optional[Tuple[str, bool]]:
    """(name, is None) of ``name is None`` / ``name is not None`` held so."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    op = test.comparisons[0]
    if not isinstance(test.left, cst.Name) or not (
        isinstance(op.comparator, cst.Name) and op.comparator.value == "None"
    ):
        return None
    if isinstance(op.operator, cst.Is):
        return test.left.value, holds
    if isinstance(op.operator, cst.IsNot):
        return test.left.value, not holds
    return None


def _kind_test(test, holds: bool) -> Optional[Tuple[str, str]]:
    """(name, kind) of ``isinstance(name, kind)`` held true."""
    if not holds or not isinstance(test, cst.Call) or len(test.args) != 2:
        return None
    func, (obj, kind) = test.func, test.args
    if not (isinstance(func, cst.Name) and func.value == "isinstance"):
        return None
    if not isinstance(obj.value, cst.Name):
        return None
    k = kind.value
    word = k.attr.value if isinstance(k, cst.Attribute) else getattr(k, "value", None)
    return (obj.value.value, _KINDS[word]) if word in _KINDS else None


def _same_names(test, env_a, env_b, scope) -> bool:
    """Every name the test reads means the same in both places."""
    names = {n.value for n in _names(test)}
    for name in names:
        a, b = lookup(name, env_a, scope), lookup(name, env_b, scope)
        if len(a) != len(b) or any(not _same_def(x, y) for x, y in zip(a, b)):
            return False
    return True


def _same_def(x, y) -> bool:
    """One definition, or one import of one name (builtins are made anew
    at each lookup: ``isinstance``, ``str``)."""
    return x is y or (x.kind == y.kind == DefKind.IMPORT and x.extra == y.extra)


def _names(node):
    if isinstance(node, cst.Name):
        yield node
    for child in node.children:
        yield from _names(child)
