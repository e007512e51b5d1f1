"""What a class statement or a constructor parameter says of the module a
call runs: a parameter's class default (``attn_layer=Attention``) and a
``forward`` that only hands its arguments to the torch base's."""

from __future__ import annotations

import ast
import textwrap
from typing import Optional

import libcst as cst

from ..core.torch_api import ModuleSpec
from .flow import DefKind, Env, Scope, lookup, walk
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
    if not isinstance(default, (cst.Name, cst.Attribute)):
        return func
    return func if _passed_in_file(defs[0].scope, func.value) else default


# the file being analysed -> {class: the parameters its constructions pass};
# one entry, so no finished file's tree is kept alive
_PASSED: dict = {}


def _passed_in_file(fscope: Optional[Scope], param: str) -> bool:
    """Whether a construction in the file of the class whose ``__init__``
    holds ``fscope`` passes ``param`` (HF's ``BertEncoder(config,
    attn_cls=BertSdpaSelfAttention)``): then the default is not every
    instance's class."""
    cls_scope = fscope.parent if fscope is not None else None
    if cls_scope is None or not isinstance(cls_scope.node, cst.ClassDef):
        return False
    if not isinstance(fscope.node, cst.FunctionDef) or fscope.node.name.value != "__init__":
        return False
    root = cls_scope
    while root.parent is not None:
        root = root.parent
    module = root.node
    kept = _PASSED.get(id(module))
    if kept is None or kept[0] is not module:
        _PASSED.clear()
        kept = _PASSED[id(module)] = (module, _passed_params(module))
    name = cls_scope.node.name.value
    params = [p.name.value for p in fscope.node.params.params][1:]
    for given in kept[1].get(name, ()):
        if (
            given == "*"
            or given == param
            or (isinstance(given, int) and given < len(params) and params[given] == param)
        ):
            return True
    return False


def _passed_params(module) -> dict:
    """{class name: the positions (ints) and keywords each of its
    constructions in ``module`` passes; ``"*"`` for a splat}."""
    out: dict = {}
    for n in walk(module):
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Name):
            given = out.setdefault(n.func.value, set())
            for i, a in enumerate(n.args):
                if a.star:
                    given.add("*")
                elif a.keyword is not None:
                    given.add(a.keyword.value)
                else:
                    given.add(i)
    return out


def static_kind(func: cst.FunctionDef) -> str:
    """``staticmethod``, ``classmethod`` or ``method``."""
    for dec in func.decorators:
        d = dec.decorator
        if isinstance(d, cst.Name) and d.value in ("staticmethod", "classmethod"):
            return d.value
    return "method"
