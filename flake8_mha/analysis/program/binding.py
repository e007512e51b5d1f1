"""A call's arguments bound to a summary's parameters (``callsites.py``):
which caller expression fills which parameter, a factory's product with the
factory's parameters fixed to what its call passes, and the caller's
argument with the wrapper's transformations applied (docs/reach.md).
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import libcst as cst

from ..flow import DefKind, lookup
from ..tree import is_none
from ..values import UNKNOWN, literal, value_of


def bind_factory(summary: dict, call: cst.Call) -> Optional[dict]:
    """The product of a factory call (``make_attn(0.1)``): ``summary`` (the
    returned function's) with the factory's parameters it reads fixed to what
    this call passes, or to the factory's defaults, as defaults no call of
    the product can change.  A sink reached by a closure parameter whose
    value is not a literal here is left out (unknown)."""
    factory = summary["closure"]
    args = bind({**factory, "varargs": False, "varkw": False}, call)
    if args is None:
        return None
    defaults = dict(summary["defaults"])
    bound: Dict[str, Optional[cst.BaseExpression]] = {}
    for param in factory["params"]:
        if param in args or factory["defaults"].get(param) is None:
            bound[param] = args.get(param)  # None: left out, no default: unknown
        else:
            defaults[param] = factory["defaults"][param]
    defaults, reach = fixed(dict(summary, defaults=defaults), bound)
    if not reach:
        return None
    out = {k: v for k, v in summary.items() if k != "closure"}
    out.update(defaults=defaults, reach=reach)
    return out


def fixed(summary: dict, bound: Dict[str, Optional[cst.BaseExpression]]) -> Tuple[dict, dict]:
    """``summary``'s defaults and reach with each parameter of ``bound`` fixed
    to the expression given for it: a plain literal (``None``, a bool, an int,
    a float) becomes its default; anything else, or no expression, leaves
    what the parameter reaches unknown (left out)."""
    defaults = dict(summary["defaults"])
    reach = dict(summary["reach"])
    for param, expr in bound.items():
        value = literal(expr) if expr is not None else UNKNOWN
        if value is UNKNOWN and expr is not None and own_attribute(expr):
            # ``partial(F.sdpa, dropout_p=self.attn_dropout)`` stored on the
            # instance: the same attribute wherever its methods call it
            defaults[param] = cst.Module([]).code_for_node(expr)
        elif value is UNKNOWN and param == "dropout_p" and isinstance(expr, cst.Attribute):
            # ``dropout_p=cfg.attn_pdrop``: fixed when the partial is made, never
            # gated where it is called (MHA007 reads a name its caller cannot see so)
            defaults[param] = cst.Module([]).code_for_node(expr)
        elif value is UNKNOWN or not (value is None or type(value) in (bool, int, float)):
            reach = {k: v for k, v in reach.items() if v["param"] != param}
        else:
            defaults[param] = repr(value)
    return defaults, reach


def own_attribute(expr: cst.BaseExpression) -> bool:
    """``self.p``, ``self.drop.p``: an attribute of the instance itself."""
    while isinstance(expr, cst.Attribute):
        expr = expr.value
        if isinstance(expr, cst.Name):
            return expr.value == "self"
    return False


def known(expr: cst.BaseExpression, env, scope) -> cst.BaseExpression:
    """``expr``, or the literal of the number, bool or None it is known to be
    (a module constant of the file or imported from the project: ``dropout_p=P``
    with ``P = 0.1``), for ``fixed`` to take as a literal."""
    if literal(expr) is not UNKNOWN:
        return expr
    try:
        value = value_of(expr, env, scope)
    except RecursionError:  # pragma: no cover
        return expr
    if value is None or type(value) in (bool, int, float):
        return cst.parse_expression(repr(value))
    return expr


# the key of ``bind``'s answer for a call's ``**kwargs`` splat (``splat_ok``)
SPLAT = "**"


def bind(
    summary: dict, call: cst.Call, splat_ok: bool = False
) -> Optional[Dict[str, cst.BaseExpression]]:
    """The caller's argument for each parameter it passes; None behind a splat
    or when the call does not fit the signature.  ``splat_ok``: a ``**kwargs``
    splat after the named arguments is kept under ``SPLAT`` (a parameter the
    call does not name may be given by it: not left to its default)."""
    positional, kwonly = summary["positional"], summary["kwonly"]
    # keywords the wrapper's **kwargs hands on to a callee's parameter of that name
    forwarded = {h["param"] for h in summary.get("reach", {}).values() if h.get("fwd")}
    out: Dict[str, cst.BaseExpression] = {}
    i = 0
    for a in _spread(call.args):
        if a.star == "**" and splat_ok:
            out[SPLAT] = a.value
            continue
        if a.star:
            return None
        if a.keyword is None:
            if i >= len(positional):
                if summary.get("varargs"):
                    continue  # into the wrapper's *args
                return None
            out[positional[i]] = a.value
            i += 1
        else:
            name = a.keyword.value
            if name in out:
                return None
            if name not in positional and name not in kwonly and name not in forwarded:
                if summary.get("varkw"):
                    continue  # into the wrapper's **kwargs
                return None
            out[name] = a.value
    return out


def _spread(args):
    """The call's arguments, a ``**{"key_padding_mask": m}`` literal written
    out as its keywords (probe AB's AB18); any other splat as it is."""
    for a in args:
        d = a.value
        if a.star == "**" and isinstance(d, cst.Dict) and d.elements:
            keys = [
                e.key.evaluated_value
                if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
                else None
                for e in d.elements
            ]
            if all(isinstance(k, str) and k.isidentifier() for k in keys):
                for k, e in zip(keys, d.elements):
                    yield cst.Arg(value=e.value, keyword=cst.Name(k))
                continue
        yield a


def apply(expr: cst.BaseExpression, ops: list, rows: bool = False) -> Optional[cst.BaseExpression]:
    """The caller's argument with the wrapper's transformations applied
    (``None`` stays ``None``: a wrapper that transforms a mask it may be
    given as None guards it, or fails loudly).  ``rows``: the sink is a key
    or a value, for which a split into heads (the step ``rows``) keeps the
    caller's tensor as it is: only its rows are read there (MHA015)."""
    if isinstance(expr, cst.Name) and expr.value == "None":
        return expr
    for step in ops:
        kind = step[0]
        if kind == "invert":
            expr = cst.UnaryOperation(cst.BitInvert(), _paren(expr))
        elif kind == "eq0":
            # ``mask == 0`` of a caller's mask: made bool and inverted.  Written
            # ``~mask.bool()``, not ``mask == 0``: a caller's token ids
            # (``def forward(self, ids): ... attn_mask=(ids == 0)``) are no
            # mask, and must not read as a pad comparison made at the call
            # (the function builds that mask: it is judged there)
            expr = cst.Call(cst.Attribute(_paren(expr), cst.Name("bool")), [])
            expr = cst.UnaryOperation(cst.BitInvert(), expr)
        elif kind == "index":
            try:
                template = cst.parse_expression(f"_[{step[1]}]")
            except cst.ParserSyntaxError:
                return None
            expr = template.with_changes(value=_paren(expr))
        elif kind == "rows":
            if not rows:
                return None
        elif kind in ("bool", "unsqueeze"):
            args = []
            if kind == "unsqueeze":  # ``-1`` is a unary minus of an Integer, not an Integer
                args = [cst.Arg(cst.parse_expression(str(step[1])))]
            expr = cst.Call(cst.Attribute(_paren(expr), cst.Name(kind)), args)
        elif kind == "expand":  # the callee's shape: read as unknown, the meaning kept
            expr = cst.Call(
                cst.Attribute(_paren(expr), cst.Name("expand_as")), [cst.Arg(cst.Name("_"))]
            )
        elif kind == "cast":  # ``mask.float()``: what the caller's mask is as numbers
            expr = cst.Call(cst.Attribute(_paren(expr), cst.Name(step[1])), [])
        elif kind == "apart":  # where the fill runs, not what it does (``fills.APART``)
            continue
        else:
            return None
    return expr


def _paren(expr: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def left_off(params, summary: dict, args, site=None) -> bool:
    """Whether a call gives each of ``params`` nothing: None or False, or
    leaves it to a default of None or False (a wrapper's optional
    ``attn_mask=mask`` that this call does not pass).  With the call's
    ``site``: also a name that holds None on some pass (HF T5's
    ``position_bias = None`` before the loop over the blocks, each block's
    returned bias handed to the next)."""
    for p in params:
        expr = args.get(p)
        if expr is None:
            if SPLAT in args or summary["defaults"].get(p) not in ("None", "False"):
                return False
        elif literal(expr) not in (None, False) and not (site and _none_on_a_pass(expr, site)):
            return False
    return True


def _none_on_a_pass(expr, site) -> bool:
    if not isinstance(expr, cst.Name):
        return False
    defs = lookup(expr.value, site.env, site.scope)
    return len(defs) > 1 and any(d.kind == DefKind.ASSIGN and is_none(d.node) for d in defs)
