"""What a class statement or a constructor parameter says of the module a
call runs: a parameter's class default (``attn_layer=Attention``) and a
``forward`` that only hands its arguments to the torch base's."""

from __future__ import annotations

import ast
import textwrap
from typing import Optional

import libcst as cst

from ..core.torch_api import ModuleSpec
from .flow import DefKind, Env, Scope, lookup
from .program import forms


def delegates(func: cst.FunctionDef, spec: ModuleSpec) -> bool:
    """A ``forward`` that only hands its parameters, named as torch's
    ``forward`` names them, to ``super().forward(...)`` in the same places
    (``def forward(self, src, src_mask=None, ...): return super().forward(src,
    src_mask=src_mask, ...)``): the torch module's own ``forward``.  Read
    with ``ast`` by the test the project's summaries use
    (``program/forms.delegates``), so a subclass in the linted file and one
    in another file are judged alike."""
    try:
        tree = ast.parse(textwrap.dedent(_CODE.code_for_node(func)))
    except (SyntaxError, ValueError, RecursionError):
        return False
    node = tree.body[0] if tree.body else None
    return isinstance(node, ast.FunctionDef) and forms.delegates(node, spec.forward.names)


_CODE = cst.Module(body=[])


def class_default(func, env: Env, scope: Optional[Scope]):
    """``attn_layer(dim)`` inside ``def __init__(self, dim, attn_layer=Attention)``,
    the parameter not rebound: the default class (timm's and open_clip's
    ``attn_layer``, ``norm_layer``, ``block_fn``), the kind every construction
    that leaves the parameter out gets.  Anything else: ``func`` itself."""
    if not isinstance(func, cst.Name):
        return func
    defs = lookup(func.value, env, scope)
    if len(defs) != 1 or defs[0].kind != DefKind.PARAM or not isinstance(defs[0].node, cst.Param):
        return func
    default = defs[0].node.default
    return default if isinstance(default, (cst.Name, cst.Attribute)) else func
