"""Modules that only swap axes: ``Permute(1, 0, 2)`` in an ``nn.Sequential``.

Time-series and tabular code builds its pipelines as ``nn.Sequential(
Permute(1, 0, 2), nn.Linear(...), nn.TransformerEncoderLayer(...))``, with a
small module of its own whose ``forward`` is ``return x.permute(self.dims)``
(or ``x.transpose(self.dim0, self.dim1)``) by the dims its constructor keeps.
Built with the dims that swap a 3-D tensor's first two axes, it is the axis
swap of the expression form (``x.permute(1, 0, 2)`` fed to a module call):
the conversion to the layout the module after it reads (layout/program.py).
Read from the class's LibCST tree and the construction's literal arguments;
anything else is no swap.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import libcst as cst

from ..flow import ClassInfo
from ..tree import self_attribute as _self_attr

_SWAPS = {("permute", (1, 0, 2)), ("transpose", (0, 1)), ("transpose", (1, 0))}


def swaps_first_axes(cls: ClassInfo, call: cst.Call) -> bool:
    """Whether ``call``, a construction of ``cls`` (a class the flow pass
    read), builds a module whose ``forward`` swaps the first two axes of a
    3-D input and does nothing else."""
    got = _reordering(cls)
    if got is None:
        return False
    how, attrs, init = got
    given = _given(init, call)
    if given is None:
        return False
    dims: List[int] = []
    for attr, star in attrs:
        value = given.get(attr)
        if value is None:
            return False
        if star or isinstance(value, tuple):
            if not isinstance(value, tuple):
                return False
            dims.extend(value)
        elif isinstance(value, int):
            dims.append(value)
        else:
            return False
    return (how, tuple(dims)) in _SWAPS


def _statements(func: cst.FunctionDef) -> List[cst.BaseSmallStatement]:
    out: List[cst.BaseSmallStatement] = []
    body = func.body.body if isinstance(func.body, cst.IndentedBlock) else [func.body]
    for stmt in body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            return []
        out.extend(stmt.body)
    if out and isinstance(out[0], cst.Expr) and isinstance(out[0].value, cst.SimpleString):
        out = out[1:]  # the docstring
    return out


def _reordering(cls: ClassInfo):
    """("permute" | "transpose", [(the attribute that holds each dim, whether
    it holds several)], ``__init__``) for a class whose ``forward`` is one
    ``return x.permute(*self.dims)`` of its input; else None."""
    forward, init = cls.methods.get("forward"), cls.methods.get("__init__")
    if forward is None or init is None:
        return None
    params = forward.params.params
    body = _statements(forward)
    if len(params) != 2 or len(body) != 1 or not isinstance(body[0], cst.Return):
        return None
    value = body[0].value
    if not (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value in ("permute", "transpose")
        and isinstance(value.func.value, cst.Name)
        and value.func.value.value == params[1].name.value
    ):
        return None
    attrs: List[Tuple[str, bool]] = []
    for a in value.args:
        attr = _self_attr(a.value)
        if attr is None or a.keyword is not None:
            return None
        attrs.append((attr, a.star == "*"))
    how = value.func.attr.value
    if how == "permute" and len(attrs) == 1:
        attrs = [(attrs[0][0], True)]  # ``x.permute(self.dims)``: a tuple of dims
    return (how, attrs, init) if attrs else None


def _given(init: cst.FunctionDef, call: cst.Call) -> Optional[Dict[str, object]]:
    """Each attribute ``__init__`` sets from a parameter (``self.dims =
    dims``), with the literal value ``call`` gives that parameter (an int,
    or a tuple of ints for ``*dims`` and a tuple argument); None when a
    value is not a literal."""
    params = init.params
    names = [p.name.value for p in params.params][1:]
    star = params.star_arg.name.value if isinstance(params.star_arg, cst.Param) else None
    values: Dict[str, object] = {}
    rest: List[int] = []
    for i, arg in enumerate(call.args):
        got = _literal(arg.value)
        if got is None or arg.star:
            return None
        if arg.keyword is not None:
            values[arg.keyword.value] = got
        elif i < len(names):
            values[names[i]] = got
        elif star is not None and isinstance(got, int):
            rest.append(got)
        else:
            return None
    if star is not None:
        values[star] = tuple(rest)
    out: Dict[str, object] = {}
    for stmt in _statements(init):
        if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
            attr = _self_attr(stmt.targets[0].target)
            if attr is not None and isinstance(stmt.value, cst.Name):
                if stmt.value.value in values:
                    out[attr] = values[stmt.value.value]
    return out


def _literal(node) -> object:
    if isinstance(node, cst.Integer):
        return int(node.value)
    if isinstance(node, (cst.Tuple, cst.List)):
        items = [_literal(el.value) for el in node.elements]
        return tuple(items) if all(isinstance(i, int) for i in items) else None
    return None
