"""Calls between summarised functions: the edges of a summary (issue 26).

A model calls its block, the block calls its attention module, and that
calls SDPA.  ``summaries.py`` describes each function on its own: which
parameter reaches which SDPA argument *directly*.  Each function also
records its calls of other functions, modules and methods whose arguments
are its own parameters (an *edge*, read by ``edges.py``: the callee as
written, and which parameter, through which transformations, fills which
of the callee's parameters).  Edges name their callee symbolically (``["name", "attend"]``,
``["self", "attn"]``, ``["method", "helper"]``), so a file's summary still
depends on its own bytes alone and is cached as before; ``files.py``
resolves the callee in the project when a summary is used and composes the
callee's reach with the edge (``compose``), Pysa-style: one summary per
function, applied at each call site, computed the same way wherever the
function lives.  Read with Python's ``ast``; nothing is imported or run.
"""

from __future__ import annotations

import ast
from typing import Dict, List, Optional

from ...core import walk as astwalk
from ...core.lines import word_count
from .import_lines import EXTERNAL

# a ``self.<attr>`` built as one of these holds modules whose items are called
_CONTAINERS = ("ModuleList", "Sequential", "ModuleDict")
# DETR's, the Annotated Transformer's and torch's own helper that returns
# ``nn.ModuleList([copy.deepcopy(module) for _ in range(N)])``: its first
# argument's construction is every item
CLONES = ("_get_clones", "get_clones", "clones", "_clones")
# the keywords of ``torch.utils.checkpoint.checkpoint`` itself, not the function's it runs
CHECKPOINT_KEYWORDS = frozenset(
    (
        "use_reentrant",
        "preserve_rng_state",
        "context_fn",
        "determinism_check",
        "debug",
        "early_stop",
    )
)


def dotted_name(node: ast.AST) -> Optional[str]:
    """``"A.attn.attend"`` for ``A.attn.attend``; None for anything but a name
    and its attributes (without recursion: a chain may be very long)."""
    parts: List[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def imports(tree: ast.Module) -> Dict[str, list]:
    """``{local name: [level, dotted]}`` for the file's top-level imports (also
    inside a top-level ``if``/``try``): where a callee named in an edge lives."""
    out: Dict[str, list] = {}
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.If, ast.Try)):
            stack.extend(node.body)
            stack.extend(getattr(node, "orelse", []))
            for h in getattr(node, "handlers", []):
                stack.extend(h.body)
            continue
        if isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.name != "*":
                    dotted = f"{node.module}.{a.name}" if node.module else a.name
                    out[a.asname or a.name] = [node.level, dotted]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    out[a.asname] = [0, a.name]
                else:
                    head = a.name.split(".")[0]
                    out[head] = [0, head]
    return out


def class_attrs(
    cls: ast.ClassDef,
    wrappers: Optional[Dict[str, tuple]] = None,
    passed=frozenset(),
    kinds_of: Optional[Dict[str, str]] = None,
    uncalled=frozenset(),
) -> Dict[str, str]:
    """``self.<attr>`` -> the constructor (as written: ``"Attention"``,
    ``"layers.Block"``) of the one kind of module it holds: built directly,
    or as every item of a ``ModuleList``/``Sequential`` (also filled by
    ``.append`` after an empty one).  An attribute given two kinds, or
    anything else, is left out.  A module built inside one of the file's
    transparent ``wrappers`` (``PreNorm(dim, Attention(dim))``) is the
    module it wraps (``transparent_wrappers``).

    A constructor named by a parameter of the method that builds it, whose
    default is a class (timm's ``attn_layer=Attention``, ``block_fn=Block``),
    is that class: the kind every construction that leaves the parameter out
    gets, unless a construction in the file passes it (``passed``: the
    ``__init__`` parameters some construction gives, ``passed_params``).  A
    parameter the method rebinds is not read so; a local it binds once to a
    class is that class (``local_classes``).  A setter the file never calls
    (``uncalled``, ``uncalled_setters``) sets nothing here."""
    found: Dict[str, Optional[str]] = {}

    def note(attr: str, ctor: Optional[str]) -> None:
        if attr in found and found[attr] != ctor:
            found[attr] = None
        else:
            found[attr] = ctor

    for item in cls.body:
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) or item.name in uncalled:
            continue
        defaults = class_defaults(item)
        if item.name == "__init__" and passed:
            given = [a.arg for a in item.args.args[1:]]
            for p in list(defaults):
                if "*" in passed or p in passed or (p in given and given.index(p) in passed):
                    del defaults[p]  # HF's ``attn_cls=BertSdpaSelfAttention`` somewhere
        defaults.update(local_classes(item))
        for n in astwalk.walk(item):
            rows = None
            if isinstance(n, ast.Assign) and len(n.targets) == 1:
                attr = self_attr(n.targets[0])
                if isinstance(n.value, ast.Constant) and n.value.value is None:
                    pass  # ``self.cross_attention = None`` first: a call runs the module
                elif attr is not None and not _empty_container(n.value):
                    built = _built(n.value, wrappers, item) or _registered(n.value, kinds_of)
                    note(attr, defaults.get(built, built) if built else built)
                    rows = _rows_of(n.value, wrappers)
                    for key, ctor in _keyed(n.value, wrappers).items():  # ``self.layers["attn"]``
                        note(f"{attr}[{key}]", defaults.get(ctor, ctor))
            elif (  # ``setattr(self, f"stage_{i}", Stage(...))`` in a loop
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Name)
                and n.func.id == "setattr"
                and len(n.args) == 3
                and isinstance(n.args[0], ast.Name)
                and n.args[0].id == "self"
            ):
                attr = attr_template(n.args[1])
                if attr is not None:
                    built = constructor(n.args[2], wrappers)
                    note(attr, defaults.get(built, built) if built else built)
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
                if n.func.attr == "append" and len(n.args) == 1:
                    attr = self_attr(n.func.value)
                    if attr is not None:
                        built = constructor(n.args[0], wrappers)
                        note(attr, defaults.get(built, built) if built else built)
                        rows = _row(n.args[0], wrappers)
            for i, ctor in enumerate(rows or ()):
                if ctor:
                    note(f"{attr}#{i}", defaults.get(ctor, ctor))
    return {k: v for k, v in found.items() if v}


def uncalled_setters(tree: ast.Module, source: str) -> Dict[str, frozenset]:
    """{class: its setter methods the file names only where it defines them}:
    diffusers' ``def set_processor(self, processor): self.processor =
    processor`` that nothing in the file calls (probe AO's AO05).  A setter:
    a plain method (not a dunder, not ``forward``, undecorated) that sets a
    ``self`` attribute to one of its own parameters.  What the module is
    built with is what it runs; a call of the setter from another file is
    not read (the default is judged)."""
    out: Dict[str, frozenset] = {}
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        names = [
            item.name for item in cls.body if isinstance(item, ast.FunctionDef) and _is_setter(item)
        ]
        found = frozenset(n for n in names if word_count(n, source) == 1)
        if found:
            out[cls.name] = found
    return out


def _is_setter(func: ast.FunctionDef) -> bool:
    if func.name.startswith("__") or func.name == "forward" or func.decorator_list:
        return False
    params = {a.arg for a in func.args.args[1:] + func.args.kwonlyargs}
    return any(
        isinstance(n, ast.Assign)
        and len(n.targets) == 1
        and self_attr(n.targets[0]) is not None
        and isinstance(n.value, ast.Name)
        and n.value.id in params
        for n in astwalk.walk(func)
    )


def _registered(node: ast.AST, kinds_of: Optional[Dict[str, str]]) -> Optional[str]:
    """``ATTENTION_BACKENDS[backend](dim, heads)`` of one of the file's
    ``registries``: one of its classes (``"A|B"``)."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Subscript):
        return None
    table = node.func.value
    if not isinstance(table, ast.Name):
        return None
    # a dict of this file's, or one imported: looked up where it is defined
    return kinds_of.get(table.id) or table.id + REGISTERED


def attr_template(node: ast.AST) -> Optional[str]:
    """The attribute name ``setattr``/``getattr`` give: a literal, or an
    f-string's template with ``*`` for each value (``f"stage_{i}"`` ->
    ``"stage_*"``); None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if not isinstance(node, ast.JoinedStr):
        return None
    parts = []
    for v in node.values:
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            parts.append(v.value)
        elif isinstance(v, ast.FormattedValue) and v.format_spec is None:
            parts.append("*")
        else:
            return None
    return "".join(parts) if "*" in parts else None


def passed_params(tree: ast.Module) -> Dict[str, set]:
    """{class name: the positions (ints) and keywords each call of that name
    in the file passes; ``"*"`` for a splat}: which constructor parameters
    with a class default some construction overrides (only for the file's
    classes whose ``__init__`` has such a default)."""
    wanted = {
        c.name
        for c in tree.body
        if isinstance(c, ast.ClassDef)
        and any(
            isinstance(m, ast.FunctionDef) and m.name == "__init__" and class_defaults(m)
            for m in c.body
        )
    }
    out: Dict[str, set] = {}
    for n in astwalk.walk(tree) if wanted else ():
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in wanted:
            given = out.setdefault(n.func.id, set())
            for i, a in enumerate(n.args):
                given.add("*" if isinstance(a, ast.Starred) else i)
            given.update("*" if k.arg is None else k.arg for k in n.keywords)
    return out


def _empty_container(node: ast.AST) -> bool:
    """``nn.ModuleList()``, ``nn.ModuleList([])``: filled later by ``.append``."""
    if not isinstance(node, ast.Call) or node.keywords or len(node.args) > 1:
        return False
    if (dotted_name(node.func) or "").rsplit(".", 1)[-1] not in _CONTAINERS:
        return False
    return not node.args or (
        isinstance(node.args[0], (ast.List, ast.Tuple)) and not node.args[0].elts
    )


def transparent_wrappers(tree: ast.Module) -> Dict[str, tuple]:
    """The file's top-level classes that only wrap the module they are built
    with (lucidrains' ``PreNorm(dim, fn)``, ``Residual(fn)``): ``__init__``
    keeps one of its parameters on ``self``, and ``forward(self, x,
    **kwargs)`` calls it once, with one positional argument (``x`` or a step
    of it: ``self.norm(x)``) and ``**kwargs`` alone, and reads neither the
    attribute nor ``kwargs`` otherwise.  A call of the wrapper is then the
    wrapped module's call with the same keywords.  Name -> (the parameter's
    position after ``self``, its name)."""
    out: Dict[str, tuple] = {}
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        methods = {m.name: m for m in cls.body if isinstance(m, ast.FunctionDef)}
        init, forward = methods.get("__init__"), methods.get("forward")
        if init is None or forward is None or forward.decorator_list:
            continue
        fa = forward.args
        if fa.posonlyargs or fa.vararg or fa.kwonlyargs or fa.kwarg is None or len(fa.args) != 2:
            continue
        params = [a.arg for a in init.args.args[1:]]
        kept = {}
        for n in astwalk.walk(init):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and self_attr(n.targets[0]):
                if isinstance(n.value, ast.Name) and n.value.id in params:
                    kept[self_attr(n.targets[0])] = n.value.id
        kwargs = fa.kwarg.arg
        uses = [n for n in astwalk.walk(forward) if self_attr(n) in kept]
        if (
            len(uses) != 1
            or sum(isinstance(n, ast.Name) and n.id == kwargs for n in astwalk.walk(forward)) != 1
        ):
            continue
        attr = self_attr(uses[0])
        call = next(
            (n for n in astwalk.walk(forward) if isinstance(n, ast.Call) and n.func is uses[0]),
            None,
        )
        if call is None or len(call.args) != 1 or isinstance(call.args[0], ast.Starred):
            continue
        if len(call.keywords) != 1 or call.keywords[0].arg is not None:
            continue
        if not (
            isinstance(call.keywords[0].value, ast.Name) and call.keywords[0].value.id == kwargs
        ):
            continue
        param = kept[attr]
        if sum(isinstance(n, ast.Name) and n.id == param for n in astwalk.walk(init)) != 1:
            continue  # the parameter read or rebound otherwise
        out[cls.name] = (params.index(param), param)
    return out


def wrapped_module(node: ast.Call, wrappers: Optional[Dict[str, tuple]]) -> Optional[ast.AST]:
    """What a transparent wrapper's construction wraps (its argument)."""
    if not wrappers or not isinstance(node.func, ast.Name) or node.func.id not in wrappers:
        return None
    i, name = wrappers[node.func.id]
    if any(isinstance(a, ast.Starred) for a in node.args[: i + 1]):
        return None
    if i < len(node.args):
        return node.args[i]
    return next((k.value for k in node.keywords if k.arg == name), None)


def _keyed(node: ast.AST, wrappers=None) -> Dict[str, str]:
    """``nn.ModuleDict({"norm": nn.LayerNorm(d), "attn": Attention(d)})``:
    the constructor of each member by its literal key (a dict of several
    kinds, called ``self.layers["attn"](...)`` or ``self.layers.attn(...)``),
    or of the items of a member list (``for block in self.transformer.h``)."""
    if not (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords):
        return {}
    if (dotted_name(node.func) or "").rsplit(".", 1)[-1] != "ModuleDict":
        return {}
    items = node.args[0]
    if isinstance(items, ast.Call) and dotted_name(items.func) == "dict" and not items.args:
        # nanoGPT's ``nn.ModuleDict(dict(wte=..., h=nn.ModuleList([Block(c) ...])))``
        pairs = [(k.arg, k.value) for k in items.keywords]
    elif isinstance(items, ast.Dict) and None not in items.keys:
        pairs = [
            (k.value, v) for k, v in zip(items.keys, items.values) if isinstance(k, ast.Constant)
        ]
    else:
        return {}
    out = {}
    for k, v in pairs:
        ctor = _built(v, wrappers)  # a member, or the items of a list of one kind
        if isinstance(k, str) and ctor is not None:
            out[k] = ctor
    return out


def _row(node: ast.AST, wrappers=None) -> Optional[List[str]]:
    """``nn.ModuleList([Attention(...), FeedForward(...)])``: the constructor
    of each member, by position (a row of a layer table, vit-pytorch's
    ``for attn, ff in self.layers``)."""
    if not (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords):
        return None
    name = dotted_name(node.func) or ""
    if name.rsplit(".", 1)[-1] not in ("ModuleList", "Sequential"):
        return None
    items = node.args[0]
    if not isinstance(items, (ast.List, ast.Tuple)) or len(items.elts) < 2:
        return None
    # a member no constructor names (``nn.Sequential(norm, ff)``): "", the
    # others still known by their position
    ctors = [constructor(e, wrappers) or "" for e in items.elts]
    return ctors if any(ctors) else None


def _rows_of(node: ast.AST, wrappers=None) -> Optional[List[str]]:
    """The rows every item of a container holds: ``nn.ModuleList([nn.ModuleList([A(),
    B()]) for _ in range(depth)])``, or a literal list of equal rows."""
    if not (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords):
        return None
    name = dotted_name(node.func) or ""
    if name.rsplit(".", 1)[-1] != "ModuleList":
        return None
    items = node.args[0]
    if isinstance(items, (ast.ListComp, ast.GeneratorExp)):
        return _row(items.elt, wrappers)
    if isinstance(items, (ast.List, ast.Tuple)) and items.elts:
        rows = [_row(e, wrappers) for e in items.elts]
        return rows[0] if all(r is not None and r == rows[0] for r in rows) else None
    return None


def class_defaults(func: ast.AST) -> Dict[str, str]:
    """``{"attn_layer": "Attention"}`` for ``def __init__(self, dim,
    attn_layer=Attention)``: the parameters whose default names a class (a
    capitalised name, maybe dotted: ``nn.LayerNorm``) and that the function
    never rebinds."""
    args = func.args  # type: ignore[attr-defined]
    positional = list(args.posonlyargs) + list(args.args)
    pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    out: Dict[str, str] = {}
    for arg, default in pairs:
        name = dotted_name(default) if isinstance(default, (ast.Name, ast.Attribute)) else None
        if name is not None and name.rsplit(".", 1)[-1][:1].isupper():
            out[arg.arg] = name
    if out:
        for n in astwalk.walk(func):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.pop(n.id, None)
    return out


# ``MultiheadAttention.key_padding_mask|2``: the argument as a second module call fills it
VARIANT = "|"
INJECTED = "="  # an ATTRS value ``"=attention"``: the module the constructor is handed
CALLED = "()"  # ``"=attn_cls()"``: a module built from the class the constructor is handed
FALLBACK = "?"  # ``"=attend?Attend"``: the module handed, ``Attend`` when none is
KINDS = "|"  # an ATTRS value ``"A|B"``: one of these classes, which the program picks
BASES = "@bases"  # a summary table's classes that only inherit their forward: their bases
REGISTERED = "[]"  # an ATTRS value ``"BACKENDS[]"``: one of the classes of that dict


def local_classes(func: ast.AST) -> Dict[str, str]:
    """The locals a function binds once, to a class (latent diffusion's
    ``attn_cls = CrossAttention``, then ``self.attn2 = attn_cls(...)``), or
    to one of two classes (``attn_cls = Export if export else Torch``:
    ``"Export|Torch"``, ``KINDS``)."""
    stores: Dict[str, int] = {}
    aliases: Dict[str, str] = {}
    for n in astwalk.walk(func):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            stores[n.id] = stores.get(n.id, 0) + 1
        elif (
            isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
        ):
            got = _classes(n.value, func)
            if got is not None:
                aliases[n.targets[0].id] = got
    return {k: v for k, v in aliases.items() if stores.get(k) == 1}


def _classes(node: ast.AST, func: Optional[ast.AST] = None) -> Optional[str]:
    """A class name, ``"A|B"`` for ``A if cond else B`` of two, or
    ``"BACKENDS[]"`` for ``BACKENDS[name]`` (``REGISTERED``: one of a dict's).
    Of two, the one a parameter of ``func`` picks when left to its default
    comes first (``Gated if gated else Plain``, ``gated=False``: ``Plain``):
    a chain through either names that one."""
    if names_class(node):
        return dotted_name(node)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        return node.value.id + REGISTERED
    if isinstance(node, ast.IfExp) and names_class(node.body) and names_class(node.orelse):
        sides = (node.body, node.orelse)
        if _default_of(node.test, func) is False:
            sides = (node.orelse, node.body)
        kinds = dict.fromkeys(dotted_name(s) for s in sides)
        return KINDS.join(k for k in kinds if k)
    return None


def _default_of(test: ast.AST, func: Optional[ast.AST]) -> Optional[bool]:
    """Whether the parameter of ``func`` that ``test`` names is true by its
    default (a constant); None when that is not so plain."""
    if not isinstance(test, ast.Name) or not isinstance(
        func, (ast.FunctionDef, ast.AsyncFunctionDef)
    ):
        return None
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    for a, d in pairs:
        if a.arg == test.id and isinstance(d, ast.Constant):
            return bool(d.value)
    return None


def super_method(func: ast.AST) -> Optional[str]:
    """``attr`` of ``super().attr`` or ``super(Cls, self).attr``, else None."""
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "super"
    ):
        return func.attr
    return None


def is_none_constant(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def names_class(node: ast.AST) -> bool:
    """``Attention``, ``layers.Block``: a name whose last part is capitalised."""
    name = dotted_name(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
    return name is not None and name.rsplit(".", 1)[-1][:1].isupper()


def self_attr(node: ast.AST) -> Optional[str]:
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    ):
        return node.attr
    return None


def constructor(node: ast.AST, wrappers=None) -> Optional[str]:
    """``"Attention"`` for ``Attention(...)``, also for ``PreNorm(dim,
    Attention(...))`` when ``PreNorm`` is one of the file's transparent
    ``wrappers``; None for anything else."""
    if isinstance(node, ast.Call):
        inner = wrapped_module(node, wrappers)
        if inner is not None and constructor(inner, wrappers) is not None:
            return constructor(inner, wrappers)
        name = dotted_name(node.func)
        if name is not None and name.rsplit(".", 1)[-1] not in _CONTAINERS + CLONES + _COPIES:
            return name
    return None


# ``copy.deepcopy(layer)``: a copy of a module, not the construction of a class
_COPIES = ("deepcopy", "copy")


def _built(node: ast.AST, wrappers=None, func=None) -> Optional[str]:
    """The one constructor of what an assignment gives ``self.<attr>``: a
    module, or the items of a container of one kind of module; of
    ``Module(...) if flag else None``, the module (a call runs it); of
    ``(A if flag else B)(...)``, ``"A|B"`` (``_classes``, in the method
    ``func``)."""
    if isinstance(node, ast.IfExp):
        sides = [s for s in (node.body, node.orelse) if not is_none_constant(s)]
        if len(sides) == 2 and all(isinstance(s, ast.Call) for s in sides):
            # T5's ``DecoderSelfAttention(c) if is_decoder else T5Attention(c)`` (probe AN's AN08)
            return _classes(ast.IfExp(node.test, node.body.func, node.orelse.func), func)
        return _built(sides[0], wrappers, func) if len(sides) == 1 else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.IfExp):
        return _classes(node.func, func)  # ``(Gated if gated else Plain)()``: one of the two
    got = constructor(node, wrappers)
    if got is not None or not isinstance(node, ast.Call):
        return got
    name = dotted_name(node.func) or ""
    if name.rsplit(".", 1)[-1] in CLONES:
        return constructor(node.args[0], wrappers) if node.args else None
    if name.rsplit(".", 1)[-1] not in _CONTAINERS or node.keywords:
        return None
    items: List[ast.AST] = []
    for a in node.args:
        inner = a.value if isinstance(a, ast.Starred) else a
        if isinstance(inner, (ast.ListComp, ast.GeneratorExp)):
            items.append(inner.elt)
        elif isinstance(inner, (ast.List, ast.Tuple)):
            items.extend(inner.elts)
        elif isinstance(inner, ast.Dict) and name.endswith("ModuleDict"):
            if None in inner.keys:
                return None  # a ** splat
            items.extend(inner.values)
        elif isinstance(inner, ast.DictComp) and name.endswith("ModuleDict"):
            items.append(inner.value)
        elif isinstance(a, ast.Starred):
            return None
        else:
            items.append(inner)
    kinds = {constructor(i, wrappers) for i in items}
    return kinds.pop() if len(kinds) == 1 and None not in kinds else None


def may_reach(edge: dict, summary: dict, imported, attrs, table) -> bool:
    """Whether an edge's callee can reach a sink: a function, method or
    module of the file that does (is in ``table``), or one imported from
    somewhere that is not a known outside package."""
    kind, name = edge["callee"]
    if kind == "method":
        return f"{summary.get('cls')}.{name}" in table
    if kind == "super":
        bases = summary.get("bases", ())
        return any(may_be_project_class(b, imported, table, {}) for b in bases) or any(
            f"{b}.{name}" in table for b in bases
        )
    if kind in ("self", "held"):
        attr, _, method = name.partition(".")
        name = attrs.get(summary.get("cls") or "", {}).get(attr)
        if name is None:
            return False
        if name.startswith(INJECTED):
            return not method  # whatever the project's constructions hand it
        if name.endswith(REGISTERED):
            return not method and name[: -len(REGISTERED)] in imported
        if KINDS in name:
            cls = summary.get("cls") or ""
            return any(
                may_reach(edge, summary, imported, {**attrs, cls: {attr: k}}, table)
                for k in name.split(KINDS)
            )
        if name.split(".")[0] not in imported:
            if method:
                return f"{name}.{method}" in table
            # a class of the file that only inherits its ``forward`` (probe AN's AN04c:
            # ``class FinetuneAttention(CausalSelfAttention): attn_pdrop = 0.1``)
            bases = table.get(BASES, {}).get(name, ())
            return any(f"{name}{k}" in table for k in (".forward", ".__call__", "()")) or any(
                may_be_project_class(b, imported, table, {}) for b in bases
            )
    head = name.split(".")[0]
    if head in imported:
        level, dotted = imported[head]
        return bool(level) or dotted.split(".")[0] not in EXTERNAL
    return "." not in name and name in table


def may_be_project_class(
    name: str, imported: Dict[str, list], table: Dict[str, dict], inheriting: Dict[str, list]
) -> bool:
    """Whether a base class, as written, may be one whose ``forward`` the
    project summarises: imported from what may be project code, or a class
    of the same file that has a summarised ``forward`` (in ``table``) or
    inherits one (in ``inheriting``)."""
    head = name.split(".")[0]
    if head in imported:
        level, dotted = imported[head]
        return bool(level) or dotted.split(".")[0] not in EXTERNAL
    return "." not in name and (f"{name}.forward" in table or name in inheriting)


def compose(edge: dict, callee: dict) -> Dict[str, dict]:
    """What the caller's parameters reach through one edge: for each sink the
    callee's parameter reaches, the caller's parameter the edge passes it,
    with the edge's transformations applied first, then the callee's."""
    out: Dict[str, dict] = {}
    positional = callee["positional"]
    for sink, how in callee["reach"].items():
        param = how["param"]
        got = _passed(edge, positional, param)
        ops = composed_ops(how["ops"], edge.get("result"))  # scores it returns (AP13)
        if got is not None and ops is not None:
            out[sink] = {"param": got["param"], "ops": got["ops"] + ops}
            unless = _unless(how.get("unless", ()), edge, positional, callee)
            if unless is None:
                del out[sink]  # the edge gives the parameter that takes the mask's place
            elif unless:
                out[sink]["unless"] = unless
        elif edge.get("fwd") and _forwarded(param, positional, callee, edge["given"], how):
            out[sink] = {"param": param, "ops": how["ops"], "fwd": True}
    return out


def composed_ops(ops: list, use: Optional[str]) -> Optional[list]:
    """A callee's steps seen from its caller: scores the callee masks and
    returns (last step ``["returned"]``, ``returned_scores.py``) are softmaxed
    by a caller that softmaxes the call's result, still returned by one that
    returns it (``use``: the edge's ``"result"``); None when the reach ends."""
    if not ops or ops[-1] != ["returned"]:
        return ops
    if use == "softmax":
        return ops[:-1] + [["softmax"]]
    return ops if use == "returned" else None


def _passed(edge: dict, positional: list, param: str) -> Optional[dict]:
    """What the edge hands the callee's parameter ``param`` (a reach of the
    caller's parameters): by keyword, else by its place."""
    got = edge["kw"].get(param)
    if got is None and param in positional:
        got = edge["pos"].get(str(positional.index(param)))
    return got


def _filled(param: str, positional: list, given) -> bool:
    """Whether the call fills ``param`` itself (``given``: how many positional
    arguments and which keywords it passes), with whatever value."""
    count, keywords = given
    return param in keywords or (param in positional and positional.index(param) < count)


def _unless(params, edge: dict, positional: list, callee: dict) -> Optional[List[str]]:
    """The callee's ``"unless"`` parameters (``chains.compose``) in the
    caller's terms: each the caller's parameter the edge passes it unchanged;
    one the edge leaves out (the callee's default None) drops out; None when
    the edge gives one anything else."""
    out: List[str] = []
    given = edge.get("given") or edge.get("arity")
    for p in params:
        got = _passed(edge, positional, p)
        if got is not None and not got["ops"]:
            out.append(got["param"])
        elif got is not None or given is None or _filled(p, positional, given):
            return None
        elif callee["defaults"].get(p) != "None":
            return None
    return out


def _forwarded(param: str, positional: list, callee: dict, given: list, how: dict) -> bool:
    """Whether a keyword ``param`` put in the caller's ``**kwargs`` reaches the
    callee's parameter of that name: the call does not fill it itself (by
    position or keyword).  A parameter the callee only forwards in turn
    (``how["fwd"]``) is a keyword of its own ``**kwargs``."""
    if _filled(param, positional, given):
        return False
    return param in positional or param in callee.get("kwonly", ()) or bool(how.get("fwd"))


_BODIES = astwalk.BODIES


def named_lambda(node: ast.stmt) -> bool:
    """``name = lambda ...``: a function of that name."""
    return (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Lambda)
    )


def statements(tree: ast.AST):
    """Every statement of ``tree`` at any depth (and the ``except`` and ``case``
    clauses that hold some), without the expressions, which are most of a
    module's nodes: an import is a statement, so a walk for imports needs no
    more (``nn/functional.py``: 1,545 of ``ast.walk``'s 20,665 nodes)."""
    stack = list(getattr(tree, "body", ()))
    while stack:
        node = stack.pop()
        yield node
        for field in _BODIES:
            value = getattr(node, field, None)
            if value and isinstance(value, list):
                stack.extend(value)
