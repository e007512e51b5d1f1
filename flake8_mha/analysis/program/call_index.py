"""One project file's calls, as ``callers.py`` reads them to find every call
of a function or of a class's instances: calls by the name called and by
the attribute called, the items of module containers (``self.blocks =
nn.ModuleList([...])``) called by index or in loops, and the names and
attributes read otherwise than called (then the callers cannot be told).
Read with ``ast``; nothing is imported.
"""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set, Tuple

from ...core import walk as astwalk
from .chains import CLONES, attr_template, dotted_name, self_attr
from .files import module_constants
from .signatures import constant_reader, literal


# the containers whose items a call of them (or of their items) runs
MODULE_CONTAINERS = ("ModuleList", "Sequential")


def _container(target: ast.AST, value: ast.AST) -> Optional[str]:
    """The attribute or name a container of modules is kept in
    (``self.blocks = nn.ModuleList(...)``, ``layers = nn.Sequential(...)``)."""
    if not isinstance(value, ast.Call):
        return None
    func = value.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name not in MODULE_CONTAINERS and name not in CLONES:
        return None
    return _container_read(target)


def _is_sequential(value: ast.Call) -> bool:
    """A ``Sequential``: called as a whole, it runs its items in turn."""
    func = value.func
    return (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)) == (
        "Sequential"
    )


def _container_read(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


def _items(value: ast.Call) -> List[ast.Call]:
    """The constructions a container is built from: its arguments, the
    elements of a list or tuple argument, a comprehension's element, each
    also splatted (``nn.Sequential(*[Block() for _ in range(n)])``)."""
    out: List[ast.Call] = []
    for a in value.args:
        a = a.value if isinstance(a, ast.Starred) else a
        if isinstance(a, (ast.List, ast.Tuple)):
            out.extend(e for e in a.elts if isinstance(e, ast.Call))
        elif isinstance(a, (ast.ListComp, ast.GeneratorExp)) and isinstance(a.elt, ast.Call):
            out.append(a.elt)
        elif isinstance(a, ast.Call):
            out.append(a)
    return out


_RUNS = ("forward", "__call__")  # an attribute that runs the module it is read on


def _loops_over(target: ast.AST, iterated: ast.AST) -> List[Tuple[str, str, ast.AST]]:
    """``_loop_over`` of each container a loop walks together: ``for stack,
    embed in zip(self.stacks, self.embeds)`` (probe AN's AN20) walks both."""
    if (
        isinstance(iterated, ast.Call)
        and isinstance(iterated.func, ast.Name)
        and iterated.func.id == "zip"
        and not iterated.keywords
        and isinstance(target, ast.Tuple)
        and len(target.elts) == len(iterated.args)
        and not any(isinstance(a, ast.Starred) for a in iterated.args)
    ):
        out = []
        for t, a in zip(target.elts, iterated.args):
            got = _loop_over(t, a)
            if got is not None:
                out.append(got)
        return out
    got = _loop_over(target, iterated)
    return [got] if got is not None else []


def _loop_over(target: ast.AST, iterated: ast.AST) -> Optional[Tuple[str, str, ast.AST]]:
    """(the container, the loop's name for its item, the container's node
    read) for ``for blk in self.blocks`` and ``for i, blk in
    enumerate(self.blocks)``."""
    if (
        isinstance(iterated, ast.Call)
        and isinstance(iterated.func, ast.Name)
        and iterated.func.id == "enumerate"
        and len(iterated.args) == 1
        and isinstance(target, ast.Tuple)
        and len(target.elts) == 2
    ):
        iterated, target = iterated.args[0], target.elts[1]
    held = _container_read(iterated)
    if held is None or not isinstance(target, ast.Name):
        return None
    return held, target.id, iterated


class Call:
    """One call in a file, as ``calls`` reads it: its positional arguments and
    keywords as literals (``UNKNOWN`` otherwise), whether it splats, and where
    its result goes when it builds something (``("attr", name)`` for
    ``x.name = C(...)``, ``("name", name)`` for ``name = C(...)``,
    ``("return", f)`` for ``return C(...)`` in the module-level function
    ``f``, else None),
    its line, and what is kept of the result when it is a pair (``use``):
    ``FIRST`` for ``call(...)[0]``, the second name of ``out, w = call(...)``
    (unread when the file never reads that name), ``(RETURNED, key)`` for
    ``return call(...)`` in the module-level function or method ``key``,
    else None."""

    __slots__ = ("args", "keywords", "splat", "into", "definer", "within", "line", "use", "owner")

    def __init__(
        self, node: ast.Call, into, definer=None, within=None, use=None, read=literal
    ) -> None:
        self.splat = any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        )
        self.args = [read(a) for a in node.args]
        self.keywords = {k.arg: read(k.value) for k in node.keywords if k.arg is not None}
        self.into = into
        # ``self.NAME(...)`` in a class that defines a method NAME itself: that class's
        self.definer = definer
        # an item of ``self.<container>`` called in a class's method: the class
        # (``self.blocks[i](x)``), or {(class, container)} for a loop's item name
        self.within = within
        self.line = node.lineno
        self.use = use
        self.owner: Optional[str] = None  # ``self.attn(...)``: the class whose method calls it


FIRST = 0  # ``call(...)[0]``: only the first of the results is kept
RETURNED = "returned"  # (RETURNED, key): the result is what the function ``key`` returns


def _pair_use(node: ast.AST, uses: Dict[int, object]) -> None:
    """Where ``node`` keeps only part of a call's pair of results, note it
    for that call (``Call.use``)."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Call):
        index = node.slice
        if isinstance(index, ast.Constant) and index.value == 0 and type(index.value) is int:
            uses[id(node.value)] = FIRST
    elif (
        isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and len(node.targets) == 1
        and isinstance(node.targets[0], (ast.Tuple, ast.List))
        and len(node.targets[0].elts) == 2
        and isinstance(node.targets[0].elts[1], ast.Name)
    ):
        uses[id(node.value)] = node.targets[0].elts[1].id


def _returned_calls(func: ast.AST) -> List[ast.Call]:
    """The calls a function returns whole (``return f(...)``), not those of
    nested functions."""
    return [
        n.value
        for n in astwalk.own_nodes(func)
        if isinstance(n, ast.Return) and isinstance(n.value, ast.Call)
    ]


def _of_self(call: ast.Call, name: str, count: int) -> bool:
    return (
        isinstance(call.func, ast.Name)
        and call.func.id == name
        and len(call.args) == count
        and not call.keywords
        and isinstance(call.args[0], ast.Name)
        and call.args[0].id == "self"
    )


def _set_by_name(call: ast.Call) -> Optional[str]:
    """``setattr(self, f"layer{i}", Block(...))``: the attribute, as
    ``chains.attr_template`` names it (``layer*``), when a construction is
    stored there."""
    if not _of_self(call, "setattr", 3) or not isinstance(call.args[2], ast.Call):
        return None
    return attr_template(call.args[1])


def _got_by_name(call: ast.Call) -> Optional[str]:
    """``getattr(self, f"layer{i}")``: the attribute it reads."""
    return attr_template(call.args[1]) if _of_self(call, "getattr", 2) else None


def _returned_names(func: ast.AST) -> List[ast.Call]:
    """The calls a function binds to a name it then only returns (``block =
    Block(...)``, ``return block``): returned whole, as ``return Block(...)``."""
    stores: Dict[str, List[ast.AST]] = {}
    loads: Dict[str, List[ast.Name]] = {}
    returned: Set[int] = set()
    for n in astwalk.own_nodes(func):
        if isinstance(n, ast.Return) and isinstance(n.value, ast.Name):
            returned.add(id(n.value))
        elif isinstance(n, ast.Name):
            (stores if isinstance(n.ctx, ast.Store) else loads).setdefault(n.id, []).append(n)
    out = []
    for n in astwalk.own_nodes(func):
        if not (
            isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name)
            and isinstance(n.value, ast.Call)
        ):
            continue
        name = n.targets[0].id
        read = loads.get(name, ())
        if len(stores.get(name, ())) == 1 and read and all(id(r) in returned for r in read):
            out.append(n.value)
    return out


def _may_run_base_forward(cls: ast.ClassDef) -> bool:
    """Whether a subclass's instances may run its base's ``forward``: unless
    the subclass has a ``forward`` of its own whose body names neither
    ``forward`` nor ``super`` (``MaskedAggregator(Aggregator)`` that builds
    its own mask and calls the encoder itself, probe AD's AD14)."""
    own = [
        n
        for n in cls.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "forward"
    ]
    if len(own) != 1 or any(isinstance(n, (ast.Assign, ast.AnnAssign)) for n in cls.body):
        return True
    for n in astwalk.walk(own[0]):
        if isinstance(n, ast.Attribute) and n.attr in ("forward", "__call__"):
            return True
        if isinstance(n, ast.Name) and n.id == "super":
            return True
    return False


class Index:
    """What ``calls`` needs of one file, read once: its calls by the name
    called (``f(...)``) and by the attribute called (``x.f(...)``), the names
    and attributes read otherwise (passed around: the callers cannot be
    told), the names used as class bases, and ``from ... import f as g``."""

    __slots__ = (
        "by_name",
        "by_attr",
        "by_item",
        "loop_names",
        "holds",
        "attr_holds",
        "loaded_names",
        "loaded_attrs",
        "held_names",
        "bases",
        "forward_bases",
        "called_now",
        "aliases",
        "methods_called",
        "read_plain",
        "classes",
    )

    def __init__(self, tree: ast.Module, path: Optional[str] = None):
        # what an argument is read as: a literal, or a module constant (``signatures``)
        read = constant_reader(tree, path, module_constants(tree))
        self.by_name: Dict[str, List[Call]] = {}
        self.by_attr: Dict[str, List[Call]] = {}
        # a container of modules (``self.blocks = nn.ModuleList([...])``) by its
        # attribute or name: the calls of its items (``self.blocks[i](x)``), and
        # the names its items are bound to by a loop (``for blk in self.blocks``)
        self.by_item: Dict[str, List[Call]] = {}
        self.loop_names: Dict[str, Set[str]] = {}
        # (class, container attribute) -> the classes its items are built from,
        # for ``self.blocks = nn.ModuleList([Block(...) ...])`` in that class
        self.holds: Dict[Tuple[str, str], Set[str]] = {}
        # (class, attribute) -> the classes its ``self.<attribute> = C(...)`` build
        # ("" for anything else assigned to it)
        self.attr_holds: Dict[Tuple[str, str], Set[str]] = {}
        self.loaded_names: Set[str] = set()
        self.loaded_attrs: Set[str] = set()
        # the containers kept in a plain name (``layers = nn.ModuleList(...)``),
        # not on ``self``: only a read of such a name reads the container
        self.held_names: Set[str] = set()
        self.bases: Set[str] = set()
        # the bases whose ``forward`` a subclass may still run: all but those of a
        # subclass with a ``forward`` of its own that names no ``forward`` or ``super``
        self.forward_bases: Set[str] = set()
        # ``Block(32, 4)(x)``: the calls of a construction made right there, by
        # the name of the class it builds
        self.called_now: Dict[str, List[Call]] = {}
        self.aliases: Dict[str, Set[str]] = {}
        # ``self.decoder.token_embedding(x)``: an attribute read only to call
        # something on it (``decoder`` -> {"token_embedding"}), and the attributes
        # read otherwise; the file's classes -> (their methods, their bases)
        self.methods_called: Dict[str, Set[str]] = {}
        self.read_plain: Set[str] = set()
        self.classes: Dict[str, Tuple[Set[str], Set[str]]] = {}
        receivers: Dict[int, str] = {}  # id of ``x.held`` in ``x.held.m(...)`` -> "m"
        into: Dict[int, tuple] = {}
        funcs: Set[int] = set()
        called: Set[int] = set()  # the function of each call
        loops: Dict[str, Set[Tuple[str, str]]] = {}  # a loop's item name -> (class, container)
        definers: Dict[
            int, str
        ] = {}  # id of a self.NAME(...) call -> its class, which defines NAME
        enclosing: Dict[int, str] = {}  # id of a node in a class's body -> that class
        uses: Dict[int, object] = {}  # id of a call -> what is kept of its pair of results
        in_loop: Dict[int, Tuple[str, str]] = {}  # id of a call of a loop's item -> its loop's
        for node in astwalk.walk(tree):  # breadth first: an inner class overwrites its outer one
            if isinstance(node, ast.ClassDef):
                for inner in astwalk.walk(node):
                    enclosing[id(inner)] = node.name
                own = {
                    n.name
                    for n in node.body
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                }
                self.classes[node.name] = (own, {dotted_name(b) for b in node.bases})
                for inner in astwalk.walk(node):
                    if (
                        isinstance(inner, ast.Call)
                        and isinstance(inner.func, ast.Attribute)
                        and isinstance(inner.func.value, ast.Name)
                        and inner.func.value.id == "self"
                        and inner.func.attr in own
                    ):
                        definers[id(inner)] = node.name
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for returned in _returned_calls(node):  # a factory: ``return Block(...)``
                    into[id(returned)] = ("return", node.name)
                    uses[id(returned)] = (RETURNED, node.name)
                for returned in _returned_names(node):  # ``block = Block(...)``, ``return block``
                    into[id(returned)] = ("return", node.name)
            elif isinstance(node, ast.ClassDef):  # ``return self.attn(x)`` in a method
                for method in node.body:
                    if isinstance(method, ast.FunctionDef) and not method.name.startswith("__"):
                        for returned in _returned_calls(method):
                            uses[id(returned)] = (RETURNED, f"{node.name}.{method.name}")
        for node in astwalk.walk(tree):  # breadth first: a call's parent before it
            _pair_use(node, uses)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Call):
                into[id(node.func)] = ("called", "")  # ``Block(32, 4)(x)``: built and run
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Attribute):
                    into[id(node.value)] = ("attr", target.attr)
                elif (
                    isinstance(target, ast.Name) and into.get(id(node.value), ("",))[0] != "return"
                ):
                    into[id(node.value)] = ("name", target.id)
                owner = enclosing.get(id(node))
                if owner is not None and self_attr(target) is not None:
                    # what a class keeps on ``self.<attr>``: a construction's class, or ""
                    value = node.value
                    made = _container_read(value.func) if isinstance(value, ast.Call) else None
                    self.attr_holds.setdefault((owner, target.attr), set()).add(made or "")
                held = _container(target, node.value)
                if held is not None and isinstance(target, ast.Name):
                    self.held_names.add(held)
                whole = "seq" if held is not None and _is_sequential(node.value) else "items"
                for built in _items(node.value) if held is not None else ():
                    into[id(built)] = (whole, held)
                    owner = enclosing.get(id(node))
                    if owner is not None and self_attr(target) is not None:
                        name = _container_read(built.func)
                        self.holds.setdefault((owner, held), set()).add(name or "")
            elif isinstance(node, ast.Call):
                funcs.add(id(node.func))
                called.add(id(node.func))
                func = node.func
                named = _set_by_name(node)
                if named is not None:  # ``setattr(self, f"layer{i}", Block(...))``
                    into[id(node.args[2])] = ("attr", named)
                    owner = enclosing.get(id(node))
                    if owner is not None:
                        made = _container_read(node.args[2].func)
                        self.attr_holds.setdefault((owner, named), set()).add(made or "")
                if isinstance(func, ast.Subscript) and _container_read(func.value) is not None:
                    funcs.add(id(func.value))  # ``self.blocks[i](x)``: an item called
                    held = _container_read(func.value)
                    call = Call(node, None, None, enclosing.get(id(node)), uses.get(id(node)), read)
                    self.by_item.setdefault(held, []).append(call)
            elif isinstance(node, (ast.For, ast.comprehension)):
                for got in _loops_over(node.target, node.iter):
                    # ``for blk in self.blocks``: its items bound to ``blk``
                    funcs.add(id(got[2]))
                    self.loop_names.setdefault(got[0], set()).add(got[1])
                    owner = enclosing.get(id(node))
                    if owner is not None and self_attr(got[2]) is not None:
                        loops[got[1]] = loops.get(got[1], set()) | {(owner, got[0])}
                        if isinstance(node, ast.For):  # its body's calls of the item: this loop's
                            for stmt in node.body:
                                for inner in astwalk.walk(stmt):
                                    if (
                                        isinstance(inner, ast.Call)
                                        and isinstance(inner.func, ast.Name)
                                        and inner.func.id == got[1]
                                    ):
                                        in_loop[id(inner)] = (owner, got[0])
            elif isinstance(node, ast.ClassDef):
                named = {
                    b.id if isinstance(b, ast.Name) else b.attr
                    for b in node.bases
                    if isinstance(b, (ast.Name, ast.Attribute))
                }
                self.bases |= named
                funcs.update(id(b) for b in node.bases)  # named as a base: not a value read
                if _may_run_base_forward(node):
                    self.forward_bases |= named
            elif isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if a.asname:
                        self.aliases.setdefault(a.name, set()).add(a.asname)
        for node in astwalk.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Name):
                    owner = enclosing.get(id(node))
                    if id(node) in in_loop:  # inside ``for blk in self.blocks``: that container's
                        of = {in_loop[id(node)]}
                    else:  # a name bound by loops elsewhere: any of their containers
                        of = {(c, h) for c, h in loops.get(func.id, ()) if c == owner}
                    call = Call(
                        node, into.get(id(node)), None, of or None, uses.get(id(node)), read
                    )
                    self.by_name.setdefault(func.id, []).append(call)
                elif isinstance(func, ast.Attribute):
                    call = Call(
                        node,
                        into.get(id(node)),
                        definers.get(id(node)),
                        None,
                        uses.get(id(node)),
                        read,
                    )
                    if self_attr(func) is not None:
                        call.owner = enclosing.get(id(node))
                    self.by_attr.setdefault(func.attr, []).append(call)
                elif isinstance(func, ast.Call) and _got_by_name(func) is not None:
                    # ``getattr(self, f"layer{i}")(x)``: a call of what ``setattr`` put there
                    call = Call(node, None, None, None, uses.get(id(node)), read)
                    call.owner = enclosing.get(id(node))
                    self.by_attr.setdefault(attr_template(func.args[1]), []).append(call)
                elif isinstance(func, ast.Call) and isinstance(func.func, ast.Name):
                    call = Call(node, None, None, None, uses.get(id(node)), read)
                    self.called_now.setdefault(func.func.id, []).append(call)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                if id(node) not in funcs:
                    self.loaded_names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                if isinstance(node.value, ast.Attribute) and node.attr not in _RUNS:
                    if id(node) not in called:
                        # ``self.decoder.blocks.layers[0]``: a submodule read, not the
                        # decoder handed away to be called elsewhere (probe AN's AN10)
                        funcs.add(id(node.value))
                    else:  # a method called on it (``self.block.init_weights()``) may run it
                        receivers[id(node.value)] = node.attr
                if id(node) not in funcs:
                    self.loaded_attrs.add(node.attr)
                    if id(node) in receivers:
                        self.methods_called.setdefault(node.attr, set()).add(receivers[id(node)])
                    else:
                        self.read_plain.add(node.attr)
