"""Where a class is built, read from one file of the project: each
construction's arguments per ``__init__`` parameter (``built_in``), a
parameter of the building class's own ``__init__`` passed on unchanged
(``Forwarded``), a subclass's ``super().__init__(...)`` as a construction of
its base, and what a file's ``if __name__ == "__main__":`` demo builds (not a
use).  ``callers.constructions`` asks this of every file that may build it."""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set

from ...core import walk as astwalk
from .chains import super_method
from .files import module_constants
from .signatures import class_methods, constant_reader, literal

MISSING = "<missing>"  # a parameter the construction does not pass (its default applies)


class Forwarded:
    """An argument that is a parameter of the ``__init__`` of a top-level
    class of the file it stands in, passed on unchanged (TTS's
    ``Attention(causal=False)`` builds ``Attend(causal=causal)``): it has the
    value every construction of that class passes for it (``forwarded``)."""

    __slots__ = ("path", "cls", "param", "splat")

    def __init__(self, path: str, cls: str, param: str, splat: bool = False):
        self.path, self.cls, self.param = path, cls, param
        self.splat = splat  # passed in the building class's ``**kwargs``, or not at all


def heirs(tree: ast.Module, names: Set[str]) -> Set[str]:
    """The classes of the file that inherit the ``__init__`` of a class
    ``names`` names: a subclass without an ``__init__`` or a decorator of its
    own (probe AD's ``Tagged(GroupedAttention)`` that adds one method).  Its
    constructions are constructions of the base, with the same parameters."""
    return {
        node.name
        for node in astwalk.walk(tree)
        if isinstance(node, ast.ClassDef)
        and not node.decorator_list
        and any(names_class(b, names) for b in node.bases)
        and not any(
            isinstance(i, (ast.FunctionDef, ast.AsyncFunctionDef)) and i.name == "__init__"
            for i in node.body
        )
    }


def classmethods(tree: Optional[ast.Module], cls: str) -> Set[str]:
    """The ``@classmethod``s of the module-level class ``cls`` of ``tree``
    (its own file): a call of one builds the class only through its
    ``cls(...)`` calls, which are read where the class is defined."""
    for node in tree.body if tree is not None else ():
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return {item.name for item, _ in class_methods(node)}
    return set()


def built_in(
    tree: ast.Module,
    cls: str,
    params: List[str],
    reader,
    path: str,
    demo=False,
    also=(),
    builders=frozenset(),
):
    """The constructions of ``cls`` in one file, or None when one of them, or
    another use of the class, leaves the project's constructions unsettled.
    ``demo``: the file defines ``cls``; what its ``if __name__ == "__main__":``
    block builds is a demonstration of the class, not a use of it (a demo
    that builds ``Attention()`` with its default dropout does not vouch for
    every user's).  ``also``: the subclasses in the project that inherit the
    class's ``__init__`` (``heirs``): their constructions are its own.
    ``builders``: the class's own class methods (``classmethods``): a call
    ``Cls.from_config()`` is no use of the class as a value."""
    skipped = demo_nodes(tree) if demo else set()
    names = {cls, *also}
    for node in astwalk.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.name == cls and a.asname:
                    names.add(a.asname)
    calls: List[ast.Call] = []
    called = set()
    registries = _registries(tree, names)  # ``ENCODERS = {"set": CardSetAttention}``
    partials = partial_builders(tree, names)  # ``make_draft = partial(Transformer, 96, 6)``
    origin: Dict[int, ast.Call] = {}  # a partial's call, read as the construction it makes
    for made in partials.values():
        called.add(id(made.args[0]))
    runs = (
        {
            id(n.func)
            for n in astwalk.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in partials
        }
        if partials
        else set()
    )
    for node in astwalk.walk(tree):
        if isinstance(node, ast.Name) and node.id in partials and isinstance(node.ctx, ast.Load):
            if id(node) not in runs:
                return None  # the partial handed around as a value: built elsewhere
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            made = partials.get(node.func.id)
            if made is not None:
                merged = ast.Call(
                    func=made.args[0],
                    args=[*made.args[1:], *node.args],
                    keywords=[*made.keywords, *node.keywords],
                )
                origin[id(merged)] = node
                if id(node) not in skipped:
                    calls.append(merged)
                continue
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Subscript)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in registries
        ):  # ``ENCODERS[name](52, N_HEADS)``: it builds the class when the key picks it
            called.update(registries[node.func.value.id])
            if id(node) not in skipped:
                calls.append(node)
            continue
        if isinstance(node, ast.ClassDef):
            if node.name in names:  # ``cls(200, 6)`` in a ``@classmethod`` of it
                calls.extend(c for c in _classmethod_builds(node) if id(c) not in skipped)
            if any(names_class(b, names) for b in node.bases):
                init = _super_init(node)
                if init is None and node.name not in names:
                    return None  # a subclass built with the base's own parameters
                if init is not None:
                    calls.append(init)  # ``super().__init__(embed_dims=[...], ...)``
                called.update(id(b) for b in node.bases)  # named as a base, not passed around
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "super"
            and node.args
        ):
            called.add(id(node.args[0]))  # ``super(SwinTransformer, self).train(mode)``
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("isinstance", "issubclass")
            and len(node.args) == 2
        ):  # ``assert isinstance(layer, EncoderLayer)``: a type test, no use as a value
            kinds = node.args[1]
            called.update(id(k) for k in (kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]))
        elif isinstance(node, ast.Call) and names_class(node.func, names):
            called.add(id(node.func))
            if id(node) not in skipped:
                calls.append(node)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in builders
            and names_class(node.func.value, names)
        ):  # ``TileAttention.from_config()``: its ``cls(...)`` calls are its constructions
            called.add(id(node.func.value))
    fallbacks = _fallbacks(tree) if calls else set()
    if any(id(c) in fallbacks for c in calls):
        return None  # built only when none is handed in: others come from elsewhere
    for node in astwalk.walk(tree):
        if isinstance(node, (ast.Name, ast.Attribute)) and names_class(node, names):
            if id(node) in skipped:
                continue
            if id(node) not in called and isinstance(node.ctx, ast.Load):
                return None  # passed around as a value: built elsewhere, with anything
    out = []
    owners = _init_owners(tree) if reader is literal or getattr(reader, "forwards", False) else {}
    made_calls = [origin.get(id(c), c) for c in calls]
    bound = _bound_once(tree, made_calls) if getattr(reader, "locals", False) else {}
    if reader is literal:  # a module constant, of this file or imported, is as good
        reader = constant_reader(tree, path, module_constants(tree))
    for call in calls:
        got: Dict[str, object] = {p: MISSING for p in params}
        owner = owners.get(id(origin.get(id(call), call)))
        local = bound.get(id(origin.get(id(call), call)), {})
        for i, a in enumerate(call.args):
            if isinstance(a, ast.Starred) or i >= len(params):
                return None
            got[params[i]] = _read(reader, local.get(_name(a), a), owner, path)
        splat = False
        for k in call.keywords:
            if k.arg is None:
                if not _forwards_kwargs(k.value, owner) or splat:
                    return None
                splat = True  # DiT's ``Attention(hidden, **block_kwargs)``
                continue
            got[k.arg] = _read(reader, local.get(_name(k.value), k.value), owner, path)
        if splat:
            for p, value in got.items():
                if value == MISSING:  # what the building class's constructions pass by name
                    got[p] = Forwarded(path, owner[0], p, splat=True)
        out.append(got)
    return out


def partial_builders(tree: ast.Module, names: Set[str]) -> Dict[str, ast.Call]:
    """The module-level names bound once to ``functools.partial`` of a class
    ``names`` names (probe AN's AN06: ``make_draft =
    functools.partial(Transformer, DRAFT_DIM, DRAFT_HEADS)``), with no
    splat: a call of one is a construction of the class with the partial's
    arguments first."""
    out: Dict[str, ast.Call] = {}
    for stmt in tree.body:
        value = stmt.value if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
        if (
            isinstance(value, ast.Call)
            and isinstance(stmt.targets[0], ast.Name)
            and (
                (isinstance(value.func, ast.Name) and value.func.id == "partial")
                or (isinstance(value.func, ast.Attribute) and value.func.attr == "partial")
            )
            and value.args
            and names_class(value.args[0], names)
            and not any(isinstance(a, ast.Starred) for a in value.args)
            and all(k.arg is not None for k in value.keywords)
        ):
            out[stmt.targets[0].id] = value
    if out:  # bound once: a name stored again may be anything there
        stores: Dict[str, int] = {}
        for node in astwalk.walk(tree):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                stores[node.id] = stores.get(node.id, 0) + 1
        out = {name: made for name, made in out.items() if stores.get(name) == 1}
    return out


def _name(node: ast.AST) -> Optional[str]:
    return node.id if isinstance(node, ast.Name) else None


def _bound_once(tree: ast.Module, calls: List[ast.Call]) -> Dict[int, Dict[str, ast.AST]]:
    """Per construction of ``calls`` made in a function: the names that
    function binds once, by a plain ``name = <call>`` before it in its own
    top-level statements, and never otherwise (DETR's ``encoder_layer =
    TransformerEncoderLayer(...)`` handed to ``TransformerEncoder(encoder_layer,
    n)``: probe AN's AN11): a reader of constructions reads that call."""
    wanted = {id(c) for c in calls}
    out: Dict[int, Dict[str, ast.AST]] = {}
    for func in astwalk.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        inner: List[ast.AST] = []
        stores: Dict[str, int] = {}
        for n in astwalk.own_nodes(func):
            if id(n) in wanted:
                inner.append(n)
            elif isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                stores[n.id] = stores.get(n.id, 0) + 1
        if not inner:
            continue
        a = func.args
        params = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
        made: Dict[str, ast.AST] = {}
        line: Dict[str, int] = {}
        for stmt in func.body:
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Call)
                and stores.get(stmt.targets[0].id) == 1
                and stmt.targets[0].id not in params
            ):
                made[stmt.targets[0].id] = stmt.value
                line[stmt.targets[0].id] = stmt.lineno
        for call in inner:
            seen = {k: v for k, v in made.items() if line[k] < call.lineno}
            if seen:
                out[id(call)] = seen
    return out


def _forwards_kwargs(value: ast.AST, owner) -> bool:
    """``**kwargs`` of the building ``__init__``, passed on untouched."""
    return owner is not None and isinstance(value, ast.Name) and value.id == owner[2]


def _classmethod_builds(cls: ast.ClassDef) -> List[ast.Call]:
    """The calls ``cls(...)`` of the class's ``@classmethod``s, their first
    parameter called: constructions of the class (or of a subclass it is
    called through, built with the same parameters)."""
    return [
        n
        for item, first in class_methods(cls)
        for n in astwalk.own_nodes(item)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == first
    ]


def _fallbacks(tree: ast.Module) -> Set[int]:
    """``id`` of the nodes of the file that run only when something handed
    in is missing: the later operands of an ``or`` (``nn.ModuleList(heads) or
    nn.ModuleList([Head()])``, review 33's transformer-builder) and the
    other branch of ``a if a is not None else ...``: a class built there is also
    built by whoever hands one in, outside what the project shows."""
    out: Set[int] = set()
    for node in astwalk.walk(tree):
        sides: List[ast.AST] = []
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            sides = node.values[1:]
        elif (
            isinstance(node, ast.IfExp)
            and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name)
            and len(node.test.comparators) == 1
            and isinstance(node.test.comparators[0], ast.Constant)
            and node.test.comparators[0].value is None
        ):
            handed = node.test.left.id
            sides = [
                other
                for given, other in ((node.body, node.orelse), (node.orelse, node.body))
                if isinstance(given, ast.Name) and given.id == handed
            ]
        for side in sides:
            out.update(id(n) for n in astwalk.walk(side))
    return out


def _super_init(cls: ast.ClassDef) -> Optional[ast.Call]:
    """The one ``super().__init__(...)`` (or ``super(Cls, self).__init__``)
    call of a subclass's own ``__init__``: a construction of the base with
    those arguments (briarmbg2's ``pvt_v2_b0``); None when the subclass has
    no ``__init__`` of its own or calls it otherwise."""
    init = next(
        (i for i in cls.body if isinstance(i, ast.FunctionDef) and i.name == "__init__"), None
    )
    if init is None:
        return None
    found = [
        n
        for n in astwalk.walk(init)
        if isinstance(n, ast.Call) and super_method(n.func) == "__init__"
    ]
    return found[0] if len(found) == 1 else None


def demo_nodes(tree: ast.Module) -> Set[int]:
    """``id`` of every node inside the file's top-level ``if __name__ ==
    "__main__":`` blocks."""
    out: Set[int] = set()
    for node in tree.body:
        test = node.test if isinstance(node, ast.If) else None
        if (
            isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name)
            and test.left.id == "__name__"
            and len(test.comparators) == 1
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__"
        ):
            for stmt in node.body:
                out.update(id(n) for n in ast.walk(stmt))
    return out


def _read(reader, node: ast.AST, owner, path: str) -> object:
    if owner is not None and isinstance(node, ast.Name) and node.id in owner[1]:
        return Forwarded(path, owner[0], node.id)
    return reader(node, path) if getattr(reader, "with_path", False) else reader(node)


def _init_owners(tree: ast.Module) -> Dict[int, tuple]:
    """Per call inside the ``__init__`` of a top-level class: (the class, the
    parameters of that ``__init__`` it never assigns, its ``**kwargs`` when
    the body uses it only to pass it on whole, else None)."""
    out: Dict[int, tuple] = {}
    for top in tree.body:
        if not isinstance(top, ast.ClassDef):
            continue
        for item in top.body:
            if not isinstance(item, ast.FunctionDef) or item.name != "__init__":
                continue
            a = item.args
            params = {p.arg for p in a.posonlyargs + a.args[1:] + a.kwonlyargs}
            nodes = list(astwalk.walk(item))
            for n in nodes:
                if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                    params.discard(n.id)  # rebound: not what the callers passed
            varkw = a.kwarg.arg if a.kwarg is not None else None
            splats = {
                id(k.value)
                for n in nodes
                if isinstance(n, ast.Call)
                for k in n.keywords
                if k.arg is None
            }
            if any(
                isinstance(n, ast.Name) and n.id == varkw and id(n) not in splats for n in nodes
            ):
                varkw = None  # read, changed or popped: not what the callers passed
            for n in nodes:
                if isinstance(n, ast.Call):
                    out[id(n)] = (top.name, params, varkw)
    return out


def _registries(tree: ast.Module, names: Set[str]) -> Dict[str, Set[int]]:
    """The dicts of classes the module binds once at its top level, each
    read only as ``REG[key](...)`` (probe AB's AB09), that hold the class
    (``names``): name -> ``id`` of the values that name it."""
    bound: Dict[str, List[ast.AST]] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                bound.setdefault(target.id, []).append(stmt.value)
    out: Dict[str, Set[int]] = {}
    for name, values in bound.items():
        value = values[0]
        if len(values) != 1 or not isinstance(value, ast.Dict) or None in value.keys:
            continue
        mine = {id(v) for v in value.values if names_class(v, names)}
        if mine and all(isinstance(v, (ast.Name, ast.Attribute)) for v in value.values):
            out[name] = mine
    if not out:
        return out
    parents = {id(c): n for n in astwalk.walk(tree) for c in ast.iter_child_nodes(n)}
    for node in astwalk.walk(tree):
        if isinstance(node, ast.Name) and node.id in out and isinstance(node.ctx, ast.Load):
            sub = parents.get(id(node))
            call = parents.get(id(sub)) if isinstance(sub, ast.Subscript) else None
            if not (isinstance(call, ast.Call) and call.func is sub):
                out.pop(node.id, None)  # passed around: built elsewhere, with anything
    return out


def names_class(node: ast.AST, names: Set[str]) -> bool:
    """``Cls`` or ``module.Cls`` with ``Cls`` among ``names`` (matched as text)."""
    if isinstance(node, ast.Name):
        return node.id in names
    return isinstance(node, ast.Attribute) and node.attr in names
