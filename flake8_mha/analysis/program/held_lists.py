"""Torch attention modules kept in an ``nn.ModuleList`` or ``nn.ModuleDict``
on ``self`` and called item by item (``for layer in self.layers: x =
layer(x, src_key_padding_mask=mask)``), read with ``ast`` for a summary
(``forms.module_calls``): a parameter handed to such a call reaches that
module's argument, as through ``self.<attr>(...)``."""

from __future__ import annotations

import ast
from typing import Dict, List, Optional

from ...core import walk as astwalk
from ...core.torch_api import module_spec
from .chains import constructor, dotted_name, self_attr


# ``held``'s key for the items of ``self.<attr>``: ``layers[]``
ITEMS = "[]"
_LISTS = ("ModuleList", "ModuleDict")
_FILLS = ("append", "extend", "insert", "update", "__setitem__")


def torch_lists(cls: ast.ClassDef, torch_names: Dict[str, str]) -> Dict[str, str]:
    """``self.<attr>`` -> the torch attention module every item of the
    ``nn.ModuleList`` or ``nn.ModuleDict`` it holds is
    (``nn.ModuleList([nn.TransformerEncoderLayer(...) for _ in range(n)])``,
    or ``nn.ModuleList()`` then ``.append(nn.MultiheadAttention(...))`` in a
    loop): assigned once in the class, filled only by appends of that class."""
    made: Dict[str, List[Optional[str]]] = {}
    filled: Dict[str, set] = {}
    for n in astwalk.walk(cls):
        if isinstance(n, ast.Assign) and len(n.targets) == 1:
            attr = self_attr(n.targets[0])
            if attr is not None:
                made.setdefault(attr, []).append(items_class(n.value, torch_names))
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            attr = self_attr(n.func.value)
            if n.func.attr in _FILLS and attr is not None:
                item = n.args[0] if n.func.attr == "append" and len(n.args) == 1 else None
                ctor = constructor(item) if isinstance(item, ast.Call) else None
                qn = torch_class(ctor, torch_names) if ctor is not None else None
                filled.setdefault(attr, set()).add(module_spec(qn).name if qn else None)
    out = {}
    for attr, got in made.items():
        if len(got) != 1 or got[0] is None:
            continue
        kinds = filled.get(attr, set()) | ({got[0]} if got[0] != EMPTY else set())
        if len(kinds) == 1 and None not in kinds:
            out[attr] = kinds.pop()
    return out


EMPTY = "(empty)"  # ``nn.ModuleList()``: what its appends give it


def items_class(value: ast.AST, torch_names: Dict[str, str]) -> Optional[str]:
    """The one torch attention module class (``spec.name``) of a
    ``ModuleList``/``ModuleDict`` display's items, else None."""
    if not isinstance(value, ast.Call) or len(value.args) > 1 or value.keywords:
        return None
    name = dotted_name(value.func) or ""
    if name.rsplit(".", 1)[-1] not in _LISTS or name.split(".")[0] not in torch_names:
        return None
    if not value.args:
        return EMPTY
    arg = value.args[0]
    if isinstance(arg, (ast.List, ast.Tuple)):
        items = arg.elts
    elif isinstance(arg, (ast.ListComp, ast.GeneratorExp)):
        items = [arg.elt]
    elif isinstance(arg, ast.Dict):
        items = arg.values
    elif isinstance(arg, ast.DictComp):
        items = [arg.value]
    else:
        return None
    kinds = set()
    for item in items:
        ctor = constructor(item) if isinstance(item, ast.Call) else None
        qn = torch_class(ctor, torch_names) if ctor is not None else None
        kinds.add(module_spec(qn).name if qn is not None else None)
    return kinds.pop() if len(kinds) == 1 else None


def item_of(func, loops, self_name: str) -> Optional[str]:
    """The attribute whose items ``func`` is: ``self.layers[i]``, or the loop
    name of ``for layer in self.layers`` (also ``.values()``, ``enumerate``,
    and ``for name, layer in self.layers.items()``)."""
    if isinstance(func, ast.Subscript):
        v = func.value
        if (
            isinstance(v, ast.Attribute)
            and isinstance(v.value, ast.Name)
            and v.value.id == self_name
        ):
            return v.attr
        return None
    if not isinstance(func, ast.Name):
        return None
    for loop in loops:
        it, target = loop.iter, loop.target
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate":
            it = it.args[0] if len(it.args) == 1 else None
            target = (
                target.elts[1] if isinstance(target, ast.Tuple) and len(target.elts) == 2 else None
            )
        elif isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and not it.args:
            if it.func.attr == "items" and isinstance(target, ast.Tuple) and len(target.elts) == 2:
                it, target = it.func.value, target.elts[1]
            elif it.func.attr == "values":
                it = it.func.value
        if not (isinstance(target, ast.Name) and target.id == func.id):
            continue
        if isinstance(it, ast.Attribute) and isinstance(it.value, ast.Name):
            if it.value.id == self_name:
                return it.attr
    return None


def torch_class(ctor: str, torch_names: Dict[str, str]) -> Optional[str]:
    """The torch attention module class (qualified) a constructor as written
    names (``nn.MultiheadAttention`` with ``from torch import nn``), else None."""
    head, _, rest = ctor.partition(".")
    base = torch_names.get(head)
    qn = base + ("." + rest if rest else "") if base is not None else None
    return qn if qn is not None and module_spec(qn) is not None else None


def returned_item(func: ast.FunctionDef) -> Optional[str]:
    """The constructor (as written) of every item of the container a factory
    returns, its one ``return``: ``return nn.ModuleList([Layer(...) for _ in
    range(n)])`` (a list, a comprehension, a generator), a ``ModuleDict`` of
    one kind, or a local filled in a loop (SASRec's ``layers =
    nn.ModuleList()``, then ``layers.append(nn.MultiheadAttention(...))``,
    ``return layers``); None for anything else, or items of several kinds."""
    returns = [n for n in astwalk.own_nodes(func) if isinstance(n, ast.Return)]
    if len(returns) != 1 or returns[0].value is None:
        return None
    value = returns[0].value
    kinds = set()
    if isinstance(value, ast.Name):
        for n in astwalk.own_nodes(func):
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr == "append"
                and isinstance(n.func.value, ast.Name)
                and n.func.value.id == value.id
                and len(n.args) == 1
            ):
                kinds.add(constructor(n.args[0]))
    elif isinstance(value, ast.Call) and (dotted_name(value.func) or "").endswith(_LISTS[0]):
        items = value.args[0] if len(value.args) == 1 and not value.keywords else None
        if isinstance(items, (ast.ListComp, ast.GeneratorExp)):
            kinds.add(constructor(items.elt))
        elif isinstance(items, ast.List):
            kinds.update(constructor(e) for e in items.elts)
    elif isinstance(value, ast.Call) and (dotted_name(value.func) or "").endswith("ModuleDict"):
        # ``return nn.ModuleDict({"temporal": nn.MultiheadAttention(...)})`` (probe AA's AA18)
        if len(value.args) == 1 and isinstance(value.args[0], ast.Dict) and value.args[0].values:
            kinds.update(constructor(e) for e in value.args[0].values)
    if len(kinds) != 1 or None in kinds:
        return None
    return kinds.pop()
