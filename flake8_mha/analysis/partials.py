"""``functools.partial`` of a torch attention module class: ``SeqMHA =
partial(nn.MultiheadAttention, dropout=0.0)`` bound once (in the file, or
in another project file the summary of which lists its arguments), then
``SeqMHA(128, 4)``: the module's construction, as torch receives it."""

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
        made_args = [
            cst.Arg(cst.parse_expression(src), keyword=cst.Name(kw) if kw else None)
            for kw, src in given
        ]
        args = [a for a in (*made_args, *call.args) if a.keyword is None]
        args += [a for a in (*made_args, *call.args) if a.keyword is not None]
        return spec, call.with_changes(args=args)
    if len(defs) != 1 or defs[0].kind != DefKind.ASSIGN or not isinstance(defs[0].node, cst.Call):
        return None
    made, denv, dscope = defs[0].node, defs[0].env, defs[0].scope
    if not made.args or made.args[0].keyword is not None or made.args[0].star:
        return None
    if resolver.qualname(made.func, denv, dscope) != "functools.partial":
        return None
    spec = torch_api.module_spec(resolver.qualname(made.args[0].value, denv, dscope))
    if spec is None or any(a.star for a in (*made.args[1:], *call.args)):
        return None
    given = [*made.args[1:], *call.args]
    args = [a for a in given if a.keyword is None] + [a for a in given if a.keyword is not None]
    return spec, call.with_changes(args=args)
