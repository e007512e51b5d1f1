"""A torch attention module a module-level function takes as a parameter,
handed by the project's calls in other files (``attend(self.attn, x, pad)``
with ``self.attn = nn.MultiheadAttention(...)`` there, then ``mha(x, x, x,
key_padding_mask=pad)`` in ``attend``): an instance of that module, built
elsewhere (``program/handed_params.py`` reads the calls)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from ..core import torch_api
from .bound import Instance
from .flow import Def, ScopeKind
from .values import project_of


def handed_torch(d: Def, torch_leaf: bool) -> Optional[list]:
    """``[Instance]`` for the parameter ``d`` of a module-level function
    every call of which in the project hands one torch attention module
    (its literal ``batch_first`` kept when a construction right at the call
    gives one); None otherwise, or for a leaf that reads no torch module."""
    func, scope = d.extra, d.scope
    if not torch_leaf or not isinstance(func, cst.FunctionDef) or scope is None:
        return None
    if scope.cls is not None or scope.parent is None or scope.parent.kind != ScopeKind.MODULE:
        return None
    project = project_of(scope)
    ask = getattr(project, "module_handed", None)
    got = ask(func.name.value, d.node.name.value) if ask is not None else None
    if got is None or got[0] != "torch":
        return None
    spec = torch_api.module_spec(got[1])
    if spec is None:
        return None
    inst = Instance(spec, None, None, False)
    inst.made_batch_first = got[2]
    at = project.handed_where(func.name.value, d.node.name.value)
    inst.handed = (d.node.name.value, func.name.value, at)  # ``annotate`` adds the module
    return [inst]
