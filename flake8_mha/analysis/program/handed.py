"""What a class is handed by its constructor and keeps (issue 26, item 3).

Informer's ``AttentionLayer(FullAttention(False), d_model, n_heads)`` keeps
the module it is handed (``self.inner_attention = attention``); decision
transformer's ``Block(MaskedSelfAttention, ...)`` builds its module from the
class it is handed (``self.attn = attn_cls(dim, heads)``); lucidrains'
layers build their own when they are handed none (``self.attend =
default(attend, Attend())``).  What such an attribute holds is what the
project's constructions hand the class (``composing.Composing._injected``).
"""

from __future__ import annotations

import ast
import re
from typing import Dict, Optional, Tuple

from ...core import walk as astwalk
from .chains import (
    CALLED,
    CLONES,
    FALLBACK,
    INJECTED,
    class_defaults,
    constructor,
    dotted_name,
    is_none_constant,
    self_attr,
)

_KEPT_NAME = re.compile(r"^[ \t]+self\.(\w+)[ \t]*=[ \t]*([a-z_]\w*)(?:\(|[ \t]*(?:#.*)?$)", re.M)


def holds_injected(text: str) -> bool:
    """A class that keeps an attention module it is handed and calls it
    (``self.inner_attention = attention`` ... ``self.inner_attention(q, k,
    v, mask)``, ``injected_attrs``), or builds one from a class it is
    handed (``self.attn = attn_cls(dim)``): what it reaches is what its
    constructions hand it, so no text of its own names the sink.  The
    attribute or the parameter names attention (``att``): a module kept
    under any other name (torch's own wrappers keep ``self.module =
    module`` by the hundred) is not worth a parse of its file.  Clones of a
    module handed in (``_get_clones(encoder_layer, n)``) whose items are run
    count too."""
    if "att" not in text or "self." not in text:
        return False
    for m in _KEPT_NAME.finditer(text):
        attr = m.group(1)
        if ("att" in attr.lower() or "att" in m.group(2)) and f"self.{attr}(" in text:
            return True
        if m.group(2) in CLONES and (f"in self.{attr}" in text or f"self.{attr}[" in text):
            return True  # DETR's ``self.layers = _get_clones(encoder_layer, n)``, looped
    return False


def fallback(node: ast.AST, init: ast.AST) -> Optional[Tuple[str, ast.Call]]:
    """(the parameter, the module built when it is left out) for lucidrains'
    ``default(attend, Attend())``, ``attend or Attend()`` and ``attend if
    attend is not None else Attend()``, where ``init``'s parameter
    ``attend`` defaults to None; None for anything else."""
    param = other = None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "default"
        and len(node.args) == 2
        and not node.keywords
    ):
        param, other = node.args
    elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and len(node.values) == 2:
        param, other = node.values
    elif (
        isinstance(node, ast.IfExp)
        and isinstance(node.test, ast.Compare)
        and len(node.test.ops) == 1
        and isinstance(node.test.ops[0], (ast.Is, ast.IsNot))
        and is_none_constant(node.test.comparators[0])
        and isinstance(node.test.left, ast.Name)
    ):
        param = node.test.left
        keeps = isinstance(node.test.ops[0], ast.IsNot)
        side, other = (node.body, node.orelse) if keeps else (node.orelse, node.body)
        if not (isinstance(side, ast.Name) and side.id == param.id):
            return None
    if not isinstance(param, ast.Name) or not isinstance(other, ast.Call):
        return None
    args = init.args  # type: ignore[attr-defined]
    positional = list(args.posonlyargs) + list(args.args)
    pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults))
    pairs += list(zip(args.kwonlyargs, args.kw_defaults))
    if not any(a.arg == param.id and d is not None and is_none_constant(d) for a, d in pairs):
        return None
    return param.id, other


def injected_attrs(cls: ast.ClassDef, uncalled=frozenset()) -> Dict[str, str]:
    """``self.<attr>`` -> ``"=<param>"`` for a module the class is handed by
    its constructor and keeps as it is (Informer's ``def __init__(self,
    attention, d_model, n_heads): self.inner_attention = attention``): what
    it holds is what the project's constructions pass for ``param``
    (``files.py``, ``_injected``); ``"=<param>()"`` (``CALLED``) for a module
    built from a class it is handed (``self.attn = attn_cls(dim)``): the
    class every construction names for ``param``, and ``"=<param>()?<Class>"``
    with a class default (timm's ``attn_layer=Attention``; not a dotted
    one, ``nn.LayerNorm``); ``"=<param>?<Class>"`` (``FALLBACK``) for
    ``default(param, Class(...))`` and its spellings (``fallback``):
    ``Class`` where a construction leaves ``param`` out.  A parameter ``__init__`` rebinds, or an
    attribute set anywhere else in the class (but in a setter the file never
    calls, ``uncalled``: ``chains.uncalled_setters``), is left out."""
    init = next(
        (m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"), None
    )
    if init is None:
        return {}
    a = init.args
    params = {p.arg for p in a.posonlyargs[1:] + a.args[1:] + a.kwonlyargs}
    kept: Dict[str, str] = {}
    for n in astwalk.walk(init):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            params.discard(n.id)
    defaults = class_defaults(init)  # timm's ``attn_layer=Attention``
    for n in astwalk.walk(init):
        if not isinstance(n, ast.Assign) or len(n.targets) != 1:
            continue
        attr = self_attr(n.targets[0])
        value = n.value
        if attr is not None and isinstance(value, ast.Name) and value.id in params:
            kept[attr] = INJECTED + value.id
        elif attr is not None and (copied := _cloned(value, params)) is not None:
            # DETR's ``self.layers = _get_clones(encoder_layer, num_layers)``: copies
            # of the one module handed in, each run as it is (probe AN's AN11)
            kept[attr] = INJECTED + copied
        elif (  # ``self.attn = attn_cls(dim)``: decision transformer's ``Block(MaskedAttention)``
            attr is not None
            and isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id in params
        ):
            default = defaults.get(value.func.id)
            left_out = FALLBACK + default if default is not None and "." not in default else ""
            if default is None or left_out:
                kept[attr] = INJECTED + value.func.id + CALLED + left_out
        elif attr is not None:  # ``self.attend = default(attend, Attend())``
            got = fallback(value, init)
            made = constructor(got[1]) if got is not None and got[0] in params else None
            if made is not None and made.rpartition(".")[2][:1].isupper():
                kept[attr] = INJECTED + got[0] + FALLBACK + made
    if not kept:
        return {}
    called, counts = _uses(cls, kept, uncalled)  # one walk of the class for every attribute
    return {k: v for k, v in kept.items() if k in called and counts.get(k) == 1}


def _cloned(value: ast.AST, params) -> Optional[str]:
    """The parameter ``value`` copies into a container of modules:
    ``_get_clones(layer, n)`` (``chains.CLONES``), ``nn.ModuleList([copy.deepcopy(layer)
    for _ in range(n)])``; else None."""
    if not isinstance(value, ast.Call) or not value.args:
        return None
    name = (dotted_name(value.func) or "").rpartition(".")[2]
    first = value.args[0]
    if name in CLONES:
        return first.id if isinstance(first, ast.Name) and first.id in params else None
    if name != "ModuleList" or len(value.args) != 1 or not isinstance(first, ast.ListComp):
        return None
    copied = first.elt
    if (
        isinstance(copied, ast.Call)
        and (dotted_name(copied.func) or "").rpartition(".")[2] == "deepcopy"
        and len(copied.args) == 1
        and isinstance(copied.args[0], ast.Name)
        and copied.args[0].id in params
    ):
        return copied.args[0].id
    return None


def _uses(cls: ast.ClassDef, attrs, uncalled=frozenset()) -> tuple:
    """(the attributes of ``attrs`` a method calls as ``self.<attr>(...)``,
    how many times each is stored or deleted in the class's methods)."""
    called: set = set()
    counts: Dict[str, int] = {}
    for item in cls.body:
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) or item.name in uncalled:
            continue
        for n in astwalk.walk(item):
            t = type(n)
            if t is ast.Call:
                func = n.func  # type: ignore[attr-defined]
                name = self_attr(func.value if isinstance(func, ast.Subscript) else func)
                if name in attrs:  # ``self.attn(...)``, ``self.layers[i](...)``
                    called.add(name)
            elif t is ast.For:  # ``for layer in self.layers:`` (or ``enumerate(self.layers)``)
                it = n.iter  # type: ignore[attr-defined]
                if isinstance(it, ast.Call) and dotted_name(it.func) == "enumerate" and it.args:
                    it = it.args[0]
                name = self_attr(it)
                if name in attrs:
                    called.add(name)
            elif t is ast.Attribute and isinstance(n.ctx, (ast.Store, ast.Del)):  # type: ignore[attr-defined]
                name = self_attr(n)
                if name in attrs:
                    counts[name] = counts.get(name, 0) + 1
    return called, counts


def with_handed(cls: ast.ClassDef, own: Dict[str, str], uncalled=frozenset()) -> Dict[str, str]:
    """The class's attributes (``own``: ``chains.class_attrs``) with what its
    constructor hands it (``injected_attrs``); a module built from a handed
    class, or built when none is handed, is the handed one, not the call
    ``chains`` reads (``attn_cls(dim)``, ``default(attend, Attend())``)."""
    handed = injected_attrs(cls, uncalled)
    out = {**handed, **own}
    out.update((a, c) for a, c in handed.items() if CALLED in c or FALLBACK in c)
    return out


def classes_handed(call, params) -> Optional[Dict[str, str]]:
    """``{parameter: class as written}`` for the arguments of a construction
    (a LibCST call) that name a class (``GPT(config,
    attn_cls=MaskedSelfAttention)``), ``params`` its ``__init__``'s after
    ``self``; None behind a splat."""
    out: Dict[str, str] = {}
    for i, arg in enumerate(call.args):
        if arg.star:
            return None  # what a splat hands is not known
        name, param = _class_written(arg.value), _param_of(arg, i, params)
        if name is not None and param is not None:
            out[param] = name
    return out


def _param_of(arg, i: int, params) -> Optional[str]:
    """The parameter a call's argument fills: its keyword, or its place."""
    if arg.keyword is not None:
        return arg.keyword.value
    return params[i] if i < len(params) else None


def _class_written(value) -> Optional[str]:
    """``Attend`` or ``layers.Attend`` as written (a LibCST name or dotted
    attribute whose last part is capitalised), else None."""
    import libcst as cst

    parts = []
    while isinstance(value, cst.Attribute):
        parts.append(value.attr.value)
        value = value.value
    if not isinstance(value, cst.Name):
        return None
    name = ".".join([value.value, *reversed(parts)])
    return name if name.rpartition(".")[2][:1].isupper() else None


def instances_handed(call, params) -> Optional[Dict[str, Optional[str]]]:
    """``{parameter: class as written}`` for the arguments of a construction
    (a LibCST call) that build an instance of a class right there
    (``Attention(dim, processor=AttnProcessorMath())``), None for any other
    argument given; None behind a splat."""
    import libcst as cst

    out: Dict[str, Optional[str]] = {}
    for i, arg in enumerate(call.args):
        if arg.star:
            return None
        param = _param_of(arg, i, params)
        if param is not None:
            built = arg.value.func if isinstance(arg.value, cst.Call) else None
            out[param] = _class_written(built) if built is not None else None
    return out
