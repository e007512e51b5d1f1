"""``functools.partial`` of a torch attention module class (``SeqMHA =
partial(nn.MultiheadAttention, dropout=0.0)`` bound once, in the file or in
another project file the summary of which lists its arguments, then
``SeqMHA(128, 4)``: the module's construction, as torch receives it) and of
a held module (``attend = partial(self.attn, key_padding_mask=pad)``, then
``attend(x, x, x)``: a call of that module)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from ..core import torch_api
from .flow import DefKind, Env, lookup


def partial_torch(resolver, call: cst.Call, env: Env, scope) -> Optional[tuple]:
    """``SeqMHA(128, 4)`` where ``SeqMHA = functools.partial(nn.MultiheadAttention,
    dropout=0.0)`` is bound once: (the module's spec, the construction as
    torch receives it: the partial's arguments first, then the call's)."""
    if not isinstance(call.func, cst.Name):
        return None
    defs = lookup(call.func.value, env, scope)
    if len(defs) == 1 and defs[0].kind == DefKind.IMPORT and resolver.imported_module is not None:
        qn = resolver.imported_module(call.func, env, scope)  # a partial of another file
        spec = torch_api.module_spec(qn) if qn is not None else None
        given = getattr(qn, "given", None)
        if spec is None or given is None or any(a.star for a in call.args):
            return None
        first = [
            cst.Arg(cst.parse_expression(src), keyword=cst.Name(kw) if kw else None)
            for kw, src in given
        ]
        return spec, _merged(call, first)
    made = _bound_partial(defs, resolver)
    if made is None:
        return None
    spec = torch_api.module_spec(resolver.qualname(made.args[0].value, defs[0].env, defs[0].scope))
    if spec is None or any(a.star for a in (*made.args[1:], *call.args)):
        return None
    return spec, _merged(call, made.args[1:])


def partial_of_module(site, name, resolver):
    """``attend = functools.partial(self.attn, key_padding_mask=pad)`` bound once
    in the same function, then ``attend(x, x, x)``; or ``self._decode =
    partial(self.decoder, tgt_is_causal=True)`` set once in the class, then
    ``self._decode(tgt, memory)``: the instances of the held module and the
    call as they receive it (the partial's arguments first, then the call's)."""
    if isinstance(name, cst.Attribute):
        cls = site.cls
        own = isinstance(name.value, cst.Name) and name.value.value == "self"
        defs = cls.attrs.get(name.attr.value, []) if cls is not None and own else []
        made = _bound_partial(defs, resolver)
        if made is None:
            return None
    else:
        defs = lookup(name.value, site.env, site.scope)
        made = _bound_partial(defs, resolver)
        if made is None or defs[0].scope is not site.scope:
            return None
    if any(a.star for a in (*made.args, *site.node.args)):
        return None
    held = made.args[0].value
    if not isinstance(held, (cst.Name, cst.Attribute, cst.Subscript)):
        return None
    instances = resolver.instances(held, defs[0].env, defs[0].scope)
    if not instances:
        return None
    return instances, _merged(site.node, made.args[1:], func=held)


def partial_of_name(call: cst.Call, env: Env, scope, resolver) -> Optional[tuple]:
    """``make_block(72)`` where ``make_block = functools.partial(Block,
    n_heads=16)`` is bound once (or ``self.expand(m)`` of ``self.expand =
    partial(...)``): (what the partial wraps, the env and scope
    of its binding, the call as the wrapped function receives it), for a
    function or class of the project (a torch class is ``partial_torch``'s)."""
    if isinstance(call.func, cst.Name):
        defs = lookup(call.func.value, env, scope)
    elif isinstance(call.func, cst.Attribute):  # ``self.expand = partial(tile, heads=h)``
        defs = resolver.self_attr_defs(call.func, env, scope) or ()
    else:
        return None
    made = _bound_partial(defs, resolver)
    if made is None or any(a.star for a in (*made.args, *call.args)):
        return None
    held = made.args[0].value
    if not isinstance(held, (cst.Name, cst.Attribute)):
        return None
    return held, defs[0].env, defs[0].scope, _merged(call, made.args[1:], func=held)


def _bound_partial(defs, resolver) -> Optional[cst.Call]:
    """The ``functools.partial(f, ...)`` call a name's one definition binds it
    to (``f`` given by position, not splat), else None."""
    if len(defs) != 1 or defs[0].kind != DefKind.ASSIGN or not isinstance(defs[0].node, cst.Call):
        return None
    made = defs[0].node
    if not made.args or made.args[0].keyword is not None or made.args[0].star:
        return None
    if resolver.qualname(made.func, defs[0].env, defs[0].scope) != "functools.partial":
        return None
    return made


def _merged(call: cst.Call, first, func=None) -> cst.Call:
    """``call`` with the partial's arguments ``first`` before its own: the
    positional ones in that order, then the keywords."""
    given = [*first, *call.args]
    args = [a for a in given if a.keyword is None] + [a for a in given if a.keyword is not None]
    return call.with_changes(args=args) if func is None else call.with_changes(func=func, args=args)
