"""Calls between the functions of one file, shared by the analyses that
follow a value into a helper or back to its callers (the mask analysis and
the layout analysis): which function of the file a call runs, every call
site of a function, and which argument expression reaches which parameter.

Nothing here runs the user's code: a call is matched to a ``def`` of the
same file through the flow pass's reaching definitions, ``self.method(...)``
through the class (and its bases), and ``module(...)`` to the ``forward`` of
the one class the resolver says the instance has.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple, Union

import libcst as cst

from ..flow import CallSite, ClassInfo, Def, DefKind, Scope, ScopeKind, lookup
from .swap_modules import swaps_first_axes
from ..classes import static_kind  # noqa: F401  (the package's name for it)
from ..reach import is_getattr
from ..tree import choices
from ..resolve import MAPPINGS
from .chains import CHECKPOINT_KEYWORDS

# ``checkpoint(fn, *args)`` runs ``fn(*args)`` (activation checkpointing): its
# own keywords are not ``fn``'s
CHECKPOINT = {"torch.utils.checkpoint.checkpoint"}


def checkpointed(node: cst.Call) -> Optional[cst.Call]:
    """The call ``checkpoint(fn, *args, **kwargs)`` makes: ``fn(*args,
    **kwargs)``, built from the same argument nodes; None without ``fn``."""
    if not node.args or node.args[0].keyword is not None or node.args[0].star:
        return None
    rest = [
        a
        for a in node.args[1:]
        if not (a.keyword is not None and a.keyword.value in CHECKPOINT_KEYWORDS)
    ]
    return node.with_changes(func=node.args[0].value, args=rest)


Callers = Dict[int, List[Tuple[CallSite, int]]]
SEQUENTIAL = "torch.nn.Sequential"


class Built:
    """A member of an ``nn.Sequential`` built by a call of something that is
    neither a class of this file nor torch's (a class imported from another
    file of the project, perhaps): the call, where it stands."""

    __slots__ = ("call", "env", "scope")

    def __init__(self, call: cst.Call, env, scope):
        self.call, self.env, self.scope = call, env, scope


class TorchMember(str):
    """A torch module class's name (``"LayerNorm"``) that also knows the call
    that built the member, so a layer built inside a container can be found."""

    __slots__ = ("call",)

    def __new__(cls, name: str, call: cst.Call):
        self = super().__new__(cls, name)
        self.call = call
        return self


# a member that only swaps the first two axes (``swap_modules``): a module of this file
SWAP = "<swap>"

# What one member of an ``nn.Sequential`` is: a class of this file, a torch
# module class (``TorchMember``, a name), or another call (``Built``).
Member = Union[ClassInfo, str, Built]


class Slot:
    """One place in an ``nn.Sequential``: the members it may hold (one of them
    runs there) and whether it repeats (``*[Block() for _ in range(n)]``, any
    number of times, each fed the one before)."""

    __slots__ = ("members", "repeat")

    def __init__(self, members: List[Member], repeat: bool):
        self.members = members
        self.repeat = repeat


# The one argument a member of an ``nn.Sequential`` gets when it is not the
# first: the output of the member before it.  The masks see an unknown value
# there (no definition of the name); the layout analysis reads ``ChainSite``.
_PREVIOUS_OUTPUT = cst.Call(
    func=cst.Name("sequential_member"), args=[cst.Arg(cst.Name("previous_member_output"))]
)


class ChainSite(CallSite):
    """A call of an ``nn.Sequential`` seen from a member that may run after
    another member: it is fed that member's output, not the call's argument.
    ``site`` is the real call, ``slots`` the container's members in order."""

    __slots__ = ("site", "slots")

    def __init__(self, site: CallSite, slots: List[Slot]):
        super().__init__(
            _PREVIOUS_OUTPUT, site.env, site.scope, site.conds, site.parents, site.stmt
        )
        self.site = site
        self.slots = slots


def inside(scope: Optional[Scope], outer: Scope) -> bool:
    """``scope`` is ``outer`` or nested in it."""
    while scope is not None:
        if scope is outer:
            return True
        scope = scope.parent
    return False


def frame_for(scope: Optional[Scope], frame):
    """The innermost frame (anything with ``fscope`` and ``parent``) whose
    function contains ``scope``."""
    while frame is not None and not inside(scope, frame.fscope):
        frame = frame.parent
    return frame


def params(func: cst.FunctionDef) -> List[cst.Param]:
    """The parameters a positional argument can fill, in order."""
    p = func.params
    return list(p.posonly_params) + list(p.params)


def bind_call(
    func: cst.FunctionDef, call: cst.Call, skip: int
) -> Dict[str, Optional[cst.BaseExpression]]:
    """Parameter name -> argument expression; None when a splat may carry it.
    A parameter the call does not pass is absent (its default applies).
    ``skip`` leading parameters (``self``) are not passed by the call."""
    positional = [p.name.value for p in params(func)][skip:]
    kwonly = {p.name.value for p in func.params.kwonly_params}
    out: Dict[str, Optional[cst.BaseExpression]] = {}
    i = 0
    star = double = False
    for arg in call.args:
        if arg.star == "*":
            star = True
        elif arg.star == "**":
            double = True
        elif arg.keyword is not None:
            out[arg.keyword.value] = arg.value
        else:
            if i < len(positional):
                out[positional[i]] = arg.value
            i += 1
    if star:
        for name in positional[i:]:
            out.setdefault(name, None)
    if double:
        for name in positional[i:] + sorted(kwonly):
            out.setdefault(name, None)
    return out


class FileCalls:
    """Which function of the file a call runs, and who calls a function.

    A mixin for an evaluator that has ``flow`` (the file's ``FlowPass``) and
    ``resolver`` (its ``Resolver``); the callers index is kept on the
    resolver, so the mask and layout analyses of a file share one.
    """

    def callers(self) -> Callers:
        """``id(FunctionDef)`` -> every call site of this file that runs it,
        with how many leading parameters the call does not pass."""
        if self.resolver.file_callers is None:
            index: Callers = {}
            for site in self.flow.calls:
                found = self.callee(site.node, site.env, site.scope)
                if found is not None:
                    func, skip = found
                    index.setdefault(id(func), []).append((site, skip))
                    continue
                chosen = self.chosen_methods(site.node, site.env, site.scope) or self._forwards_of(
                    site.node.func, site.env, site.scope
                )
                for func in chosen:  # each may run: a caller of each
                    index.setdefault(id(func), []).append((site, 1))
                if not chosen:
                    self._sequential_callers(site, index)
            self.resolver.file_callers = index
        return self.resolver.file_callers

    def _sequential_callers(self, site: CallSite, index: Callers) -> None:
        """A call of an ``nn.Sequential`` runs its members' ``forward``: the
        first is given the call's argument, each later one the output of the
        member before it (a ``ChainSite``)."""
        slots = self.sequential_slots(site.node, site.env, site.scope)
        if slots is None:
            return
        fed_by_arg, fed_by_member = True, False
        first: Dict[int, cst.FunctionDef] = {}
        later: Dict[int, cst.FunctionDef] = {}
        for slot in slots:
            for member in slot.members:
                forward = (
                    self.method_of(member, "forward") if isinstance(member, ClassInfo) else None
                )
                if forward is None:
                    continue
                if fed_by_arg:
                    first[id(forward)] = forward
                if fed_by_member or slot.repeat:
                    later[id(forward)] = forward
            if not slot.repeat:
                fed_by_arg = False
            fed_by_member = True
        for key in first:
            index.setdefault(key, []).append((site, 1))
        if later:
            chained = ChainSite(site, slots)
            for key in later:
                index.setdefault(key, []).append((chained, 1))

    def sequential_slots(self, call: cst.Call, env, scope) -> Optional[List[Slot]]:
        """The members, in order, of the ``nn.Sequential`` a call runs (one
        positional argument, no splat); None when it is not one or its members
        are not all known."""
        if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
            return None
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "forward":
            func = func.value
        if not isinstance(func, (cst.Name, cst.Attribute, cst.Subscript)):
            return None

        def leaf(built: cst.Call, benv, bscope):
            if self.resolver.qualname(built.func, benv, bscope) == SEQUENTIAL:
                return [(built, benv, bscope)]
            return None

        try:
            built = self.resolver.held(func, env, scope, leaf)
            if not built or len(built) != 1:
                return None
            return self._slots(*built[0])
        except RecursionError:  # pragma: no cover - pathological nesting
            return None

    def _slots(self, built: cst.Call, env, scope) -> Optional[List[Slot]]:
        out: List[Slot] = []
        for arg in built.args:
            if arg.keyword is not None:
                return None
            if arg.star == "*":
                got = self.resolver.held_elements(arg.value, env, scope, self._member_leaf)
                if not got:
                    return None
                out.append(Slot(got, True))  # a list's order is not kept: any may follow any
                continue
            if arg.star:
                return None
            ordered = self._ordered_dict(arg.value, env, scope)
            if ordered is not None:
                if len(built.args) != 1:
                    return None
                return ordered
            if self._filled_mapping(arg.value, env, scope):
                # ``layers = OrderedDict()``, ``layers[f"layer_{i}"] = Block()``
                got = self.resolver.held_elements(arg.value, env, scope, self._member_leaf)
                if not got or len(built.args) != 1:
                    return None
                return [Slot(got, True)]
            got = self.resolver.held(arg.value, env, scope, self._member_leaf)
            if not got:
                return None
            out.append(Slot(got, False))
        return out or None

    def _filled_mapping(self, node, env, scope) -> bool:
        """A local name bound only to an empty ``OrderedDict()`` (or ``dict()``,
        ``{}``), filled by ``name[key] = module`` (torchvision's ViT)."""
        if not isinstance(node, cst.Name):
            return False
        defs = lookup(node.value, env, scope)
        return bool(defs) and all(
            d.kind == DefKind.ASSIGN
            and (
                (isinstance(d.node, cst.Dict) and not d.node.elements)
                or (
                    isinstance(d.node, cst.Call)
                    and not d.node.args
                    and self.resolver.qualname(d.node.func, d.env, d.scope) in MAPPINGS
                )
            )
            for d in defs
        )

    def _ordered_dict(self, node, env, scope) -> Optional[List[Slot]]:
        """``OrderedDict([("fc", nn.Linear(...)), ...])``: its values in order."""
        if not isinstance(node, cst.Call) or len(node.args) != 1 or node.args[0].keyword:
            return None
        if self.resolver.qualname(node.func, env, scope) not in MAPPINGS:
            return None
        items = node.args[0].value
        if isinstance(items, cst.Name):  # a list of pairs filled by ``.append((name, m))``
            got = self.resolver.pair_values(items, env, scope, self._member_leaf, 0)
            return [Slot(got, True)] if got else None
        pairs: List[cst.BaseExpression] = []
        repeat = isinstance(items, (cst.ListComp, cst.GeneratorExp))
        if repeat:
            pairs = [items.elt]
        elif isinstance(items, (cst.List, cst.Tuple)):
            pairs = [el.value for el in items.elements if not isinstance(el, cst.StarredElement)]
            if len(pairs) != len(items.elements):
                return None
        else:
            return None
        out: List[Slot] = []
        for pair in pairs:
            if not isinstance(pair, cst.Tuple) or len(pair.elements) != 2:
                return None
            got = self.resolver.held(pair.elements[1].value, env, scope, self._member_leaf)
            if not got:
                return None
            out.append(Slot(got, repeat))
        return out or None

    def _member_leaf(self, built: cst.Call, env, scope) -> Optional[List[Member]]:
        info = self.resolver.local_class(built.func, env, scope)
        if info is not None:
            if swaps_first_axes(info, built):  # ``Permute(1, 0, 2)``
                return [TorchMember(SWAP, built)]
            return [info]
        qn = self.resolver.qualname(built.func, env, scope)
        if qn is not None and qn.startswith("torch.nn.") and qn.count(".") == 2:
            return [TorchMember(qn.rsplit(".", 1)[1], built)]
        if isinstance(built.func, (cst.Name, cst.Attribute)):
            return [Built(built, env, scope)]
        return None

    def callee(self, call: cst.Call, env, scope) -> Optional[Tuple[cst.FunctionDef, int]]:
        """The function of this file a call runs, and how many leading
        parameters (``self``) the call does not pass."""
        func = call.func
        if isinstance(func, cst.Name):
            defs = lookup(func.value, env, scope)
            if len(defs) == 1 and defs[0].kind == "self" and defs[0].extra is not None:
                method = self.runs(defs[0].extra)  # ``self(window)`` in ``training_step``
                return (method, 1) if method is not None else None
            if defs and all(d.kind == "def" for d in defs):
                if len({id(d.node) for d in defs}) == 1:
                    return defs[0].node, 0
                return None
            if not defs or any(d.kind in ("def", "class", "import") for d in defs):
                return None
        if isinstance(func, cst.Attribute):
            owner = func.value
            if isinstance(owner, cst.Name):
                defs = lookup(owner.value, env, scope)
                if len(defs) == 1 and defs[0].kind == "self":
                    method = self.method_of(defs[0].extra, func.attr.value)
                    if method is not None:
                        return method, 0 if static_kind(method) == "staticmethod" else 1
                    return self.forward_of(func, env, scope)  # self.block(...): a module
                if len(defs) == 1 and defs[0].kind == "class":  # ``Converter.invert(mask)``
                    info = self.resolver.local_class(owner, env, scope)
                    method = self.method_of(info, func.attr.value) if info is not None else None
                    kind = static_kind(method) if method is not None else None
                    if kind in ("staticmethod", "classmethod"):
                        return method, 0 if kind == "staticmethod" else 1
            if func.attr.value == "forward":
                return self.forward_of(owner, env, scope)
            if isinstance(owner, (cst.Name, cst.Attribute)) and func.attr.value in self._methods():
                method = self._held_method(owner, func.attr.value, env, scope)
                if method is not None:  # ``self.head.encode(src)``: that class's method
                    return method, 1
        if isinstance(func, (cst.Name, cst.Attribute, cst.Subscript)) or is_getattr(func):
            return self.forward_of(func, env, scope)  # ``getattr(self, f"layer_{i}")(h)`` too
        return None

    def _methods(self) -> set:
        """The names of the methods of the file's classes, but dunders (read
        once: a method call of any other name runs none of them)."""
        got = self.resolver.method_names
        if got is None:
            got = {
                name
                for info in self.flow.classes.values()
                for name in info.methods
                if not name.startswith("__")
            }
            self.resolver.method_names = got
        return got

    def _held_method(self, owner, name: str, env, scope) -> Optional[cst.FunctionDef]:
        """The method ``name`` of the one class of this file an instance
        ``owner`` holds (``self.head`` of ``self.head = StructureHead()``)."""
        try:
            classes = self.resolver.instance_classes(owner, env, scope)
        except RecursionError:  # pragma: no cover - pathological nesting
            return None
        methods = {id(m): m for m in (self.method_of(c, name) for c in classes or ())}
        if len(methods) != 1 or None in methods.values() or any(c is None for c in classes):
            return None
        method = next(iter(methods.values()))
        return method if static_kind(method) == "method" else None

    def chosen_methods(self, call: cst.Call, env, scope) -> List[cst.FunctionDef]:
        """``fn = self.forward_pre if self.pre_norm else self.forward_post``
        then ``fn(...)``: a local assigned once, only bound methods of the
        class (through conditional expressions); each is a callee."""
        func = call.func
        if not isinstance(func, cst.Name):
            return []
        defs = lookup(func.value, env, scope)
        if len(defs) != 1 or defs[0].kind != DefKind.ASSIGN or defs[0].index not in ((), None):
            return []
        out: List[cst.FunctionDef] = []
        for expr in choices(defs[0].node):
            if not isinstance(expr, cst.Attribute):
                return []
            cls = self.resolver.self_class(expr, defs[0].env, defs[0].scope)
            method = self.method_of(cls, expr.attr.value) if cls is not None else None
            if method is None or static_kind(method) != "method":
                return []
            out.append(method)
        return out

    def forward_of(self, node, env, scope) -> Optional[Tuple[cst.FunctionDef, int]]:
        """The one ``forward`` of this file an instance's call runs."""
        try:
            classes = self.resolver.instance_classes(node, env, scope)
        except RecursionError:  # pragma: no cover - pathological nesting
            return None
        if not classes:
            return None
        runs = [self.runs(c) for c in classes]
        if any(m is None for m in runs) or len({id(m) for m in runs}) != 1:
            return None
        return runs[0], 1

    def runs(self, cls: ClassInfo) -> Optional[cst.FunctionDef]:
        """What calling an instance of a class of this file runs: a
        ``__call__`` of the file's own (a plain class's mask maker or
        processor), else its ``forward`` (an ``nn.Module``'s ``__call__``
        runs it)."""
        return self.method_of(cls, "__call__") or self.method_of(cls, "forward")

    def _forwards_of(self, node, env, scope) -> List[cst.FunctionDef]:
        """The ``forward`` of each class of this file an instance's call may
        run when it holds one of several (3DETR's ``self.encoder =
        self.configure_encoder()``, returning ``MaskedEncoder(...)`` or
        ``Encoder()``); empty unless every one has a ``forward`` here."""
        if not isinstance(node, (cst.Name, cst.Attribute, cst.Subscript)):
            return []
        try:
            classes = self.resolver.instance_classes(node, env, scope)
        except RecursionError:  # pragma: no cover - pathological nesting
            return []
        methods = [self.method_of(c, "forward") for c in classes or ()]
        if len(methods) < 2 or any(m is None for m in methods):
            return []
        return list({id(m): m for m in methods}.values())

    def method_of(self, cls: ClassInfo, name: str) -> Optional[cst.FunctionDef]:
        """A method of a class of this file, or of one of its bases."""
        return self.resolver.method_of(cls, name)

    def stored_functions(self, call: cst.Call, env, scope) -> Optional[List[cst.FunctionDef]]:
        """The functions of this file that ``self.<attr>`` may hold at ``self.<attr>(...)``:
        every assignment of the attribute in a method of the class (or of a base) is a
        module-level function of this file, or a conditional expression choosing
        between such functions (``self.make = onnx_make if onnxable else make``).
        A function stored on an instance is not bound: the call passes every
        parameter.  None when any assignment is something else, or the class
        defines the attribute in its body (a class attribute would bind ``self``)."""
        out: List[cst.FunctionDef] = []
        for d in self.instance_assignments(call.func, env, scope) or ():
            for expr in choices(d.node):
                found = lookup(expr.value, d.env, d.scope) if isinstance(expr, cst.Name) else ()
                if (
                    len(found) != 1
                    or found[0].kind != DefKind.DEF
                    or found[0].scope is None
                    or found[0].scope.kind != ScopeKind.MODULE
                ):
                    return None
                out.append(found[0].node)
        return out or None

    def instance_assignments(self, func, env, scope) -> Optional[List[Def]]:
        """Every assignment of ``self.<attr>`` (``func``), in a method of the
        class or of a base, when the class has no method of that name: what
        the attribute may hold at ``self.<attr>(...)``.  None otherwise, or
        when one is made elsewhere (in the class body: a class attribute
        would bind ``self``)."""
        if not isinstance(func, cst.Attribute):
            return None
        owner = self.resolver.self_class(func, env, scope)
        if owner is None or self.method_of(owner, func.attr.value) is not None:
            return None
        defs = self.resolver.attr_defs(owner, func.attr.value)
        for d in defs:
            if d.kind != DefKind.ASSIGN or d.scope is None or d.scope.kind != ScopeKind.FUNCTION:
                return None
        return defs or None
