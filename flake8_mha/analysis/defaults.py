"""A module an ``__init__`` builds as the default of a parameter:
``self.self_attn = self_attention or nn.MultiheadAttention(...)``, for
``Resolver.held``."""

from __future__ import annotations

from typing import Any

import libcst as cst

from ..core import torch_api
from .bound import Instance
from .flow import DefKind, Env, lookup
from .program.built import MISSING
from .values import project_of

Resolver = Any  # resolve.Resolver (which imports this module)


def or_default(res: Resolver, node: cst.BooleanOperation, env: Env, scope, leaf, depth: int):
    """``self_attention or nn.MultiheadAttention(...)`` in ``__init__``, its
    left an ``__init__`` parameter (SAM3's encoder layer, release review
    36): the module the right side builds where a construction leaves the
    parameter out, and, for torch's own modules, the one a construction
    builds right there for it, as torch's class of the same kind (its
    arguments not read here: unknown to the rules that need them).  None
    when a construction passes anything else, or the project does not say."""
    right = res.held(node.right, env, scope, leaf, depth + 1)
    left = node.left
    if not right or not isinstance(left, cst.Name):
        return None
    defs = lookup(left.value, env, scope)
    d = defs[0] if len(defs) == 1 and defs[0].kind == DefKind.PARAM else None
    info = d.scope.cls if d is not None and d.scope is not None else None
    func = d.extra if d is not None else None
    if (
        info is None
        or info.scope is None
        or info.scope.kind != "module"
        or not isinstance(func, cst.FunctionDef)
        or func.name.value != "__init__"
    ):
        return None
    project = project_of(scope)
    ask = getattr(project, "handed_torch", None)
    handed = ask(info.name, left.value) if ask is not None else None
    if handed is None:
        return None
    specs = {getattr(i, "spec", None) for i in right}
    out = list(right) if MISSING in handed else []
    for qualname in set(handed) - {MISSING}:
        spec = torch_api.module_spec(qualname)
        if leaf != res.torch_leaf or spec is None or spec not in specs:
            return None  # another class, or no torch module's leaf: not read
        out.append(Instance(spec, None, None, False))
    return out or None
