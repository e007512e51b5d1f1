"""Which expressions are torch's: qualified names through every import
spelling, torch module classes (and the file's subclasses of them), and the
module instance an expression holds (``self.attn``, ``self.layers[i]``, a loop
variable over a ``ModuleList``, a local)."""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Tuple

import libcst as cst

from . import defaults, reach, registries
from ..core import torch_api
from .classes import builds_own_class, class_run, delegates, forwarded_attr, set_when_built
from .classes import static_kind
from .flow import CallSite, ClassInfo, Def, DefKind, Env, FlowPass, Scope, lookup
from .flow import imported_by_call, scope_appends
from .tree import is_none
from .values import branch_truth, decided_name, literal
from .bound import Instance, bound_flag, distinct_held, passed
from .partials import partial_torch
from .handed_modules import handed_torch
from ..core.torch_api import ModuleSpec

MAX_DEPTH = 16
_CONTAINERS = {torch_api.MODULE_LIST, "torch.nn.Sequential", "builtins.list", "builtins.tuple"}
MAPPINGS = {"collections.OrderedDict", "builtins.dict"}  # of names to modules
Leaf = Callable[[cst.Call, Env, Optional[Scope]], Optional[list]]


ABSENT = ""  # what a star import binds a name to when it cannot bind it


def last_star(stars, binds) -> Optional[str]:
    """Of star imports in source order, the last that binds the name decides
    (a later one overrides an earlier one); one that may bind it, unknown
    whether, leaves it unknown (None); none that does: ``ABSENT``."""
    for star in reversed(stars):
        got = binds(star)
        if got != ABSENT:
            return got
    return ABSENT


class Resolver:
    def __init__(self, flow: FlowPass):
        self.flow = flow
        self.site_of: Dict[int, CallSite] = {id(site.node): site for site in flow.calls}
        self._following: set = set()  # self attributes being followed (wrapping cycles)
        self._class_spec: Dict[int, Optional[Tuple[ModuleSpec, bool, bool]]] = {}
        self._built: Dict[tuple, List[CallSite]] = {}  # a local class's constructions
        # (id(__init__), parameter) -> what it holds, as a function of the leaf: set
        # while another file that builds the class with an argument there is read
        self.assumed: Dict[tuple, Callable[[Leaf], Optional[list]]] = {}
        # an imported function's import statement and name -> (index, name) of
        # the parameter whose copies the container it returns holds, or None
        # (``_get_clones`` of another project file; set where files are read)
        self.imported_clones: Optional[Callable[[cst.CSTNode, str], Optional[tuple]]] = None
        # ``<star import's module>.<name>`` -> the qualified name that project
        # module binds the name to by its own imports, or None (where files are read)
        self.star_names: Optional[Callable[[str], Optional[str]]] = None
        # a name an import binds, called -> the torch attention module class a
        # function of another project file builds and returns (where files are read)
        self.imported_module: Optional[Callable[[cst.CSTNode, Env, Scope], Optional[str]]] = None
        self.reach_cache: Dict[int, set] = {}  # id(ClassDef) -> attributes changed in place
        # who calls each function of the file (callgraph.FileCalls.callers): made
        # once here, for the mask and layout analyses both
        self.file_callers: Optional[Dict[int, list]] = None
        self.method_names: Optional[set] = None  # of the file's classes (callgraph._methods)

    # qualified names -----------------------------------------------------------
    def qualname(
        self, node: cst.CSTNode, env: Env, scope: Optional[Scope], depth: int = 0
    ) -> Optional[str]:
        if depth > MAX_DEPTH:
            return None
        if isinstance(node, cst.Name):
            defs = lookup(node.value, env, scope)
            found = None
            if self.star_names is not None and defs and all(d.node is None for d in defs):
                # a name only star imports may bind (``from ..imports import *``):
                # what the last project module that binds it binds it to
                defs = self._star_bound(defs)
            for d in defs:
                if d.kind == DefKind.IMPORT:
                    qn = d.extra
                elif d.kind == DefKind.ASSIGN and isinstance(d.node, (cst.Name, cst.Attribute)):
                    if is_none(d.node):
                        continue  # ``try: from torch... except ImportError: X = None``
                    qn = self.qualname(d.node, d.env, d.scope, depth + 1)
                elif d.kind == DefKind.ASSIGN and isinstance(d.node, cst.Call):
                    read = lambda e, d=d: self.qualname(e, d.env, d.scope, depth + 1)  # noqa: E731
                    qn = imported_by_call(d.node, read)  # also ``partial(torch.arange, device=d)``
                elif d.kind == DefKind.ASSIGN and isinstance(d.node, cst.IfExp):
                    side = decided_name(node, env, scope)  # ``make = Aux if aux else Plain``
                    qn = self.qualname(side, d.env, d.scope, depth + 1) if side else None
                else:
                    return None
                if qn is None or (found is not None and qn != found):
                    return None
                found = qn
            if found is None and not defs and node.value in _BUILTINS:
                return "builtins." + node.value
            return torch_api.canonical(found)
        if isinstance(node, cst.Attribute):
            base = self.qualname(node.value, env, scope, depth + 1)
            if base is None:
                return None
            return torch_api.canonical(base + "." + node.attr.value)
        if isinstance(node, cst.Subscript):  # ``ATTN_REGISTRY[kind]``: what every value names
            return registries.registry_qualname(self, node, env, scope, depth)
        return None

    def _star_bound(self, defs) -> tuple:
        got = last_star([d.extra for d in defs if d.kind == DefKind.IMPORT], self.star_names)
        if got is None:
            return defs  # unknown: the names as written (no qualified name agrees)
        if got == ABSENT:
            return ()
        return (Def(DefKind.IMPORT, extra=got),)

    def local_class(
        self, node: cst.CSTNode, env: Env, scope: Optional[Scope]
    ) -> Optional[ClassInfo]:
        if isinstance(node, cst.Name):
            defs = lookup(node.value, env, scope)
            if len(defs) == 1 and defs[0].kind == DefKind.CLASS:
                return defs[0].extra
        return None

    def class_spec(
        self, info: ClassInfo, depth: int = 0
    ) -> Optional[Tuple[ModuleSpec, bool, bool]]:
        """(torch spec, has its own __init__, overrides forward) for a subclass of a torch module."""
        key = id(info.node)
        if key in self._class_spec:
            return self._class_spec[key]
        self._class_spec[key] = None  # cycle guard
        result = None
        if depth <= MAX_DEPTH:
            for base in info.base_exprs:
                spec = torch_api.module_spec(self.qualname(base, info.env, info.scope))
                if spec is not None:
                    own_fwd = "forward" in info.methods and not delegates(
                        info.methods["forward"], spec
                    )
                    result = (spec, "__init__" in info.methods, own_fwd)
                    break
                parent = self.local_class(base, info.env, info.scope)
                if parent is not None:
                    inherited = self.class_spec(parent, depth + 1)
                    if inherited is not None:
                        spec, own_init, own_fwd = inherited
                        result = (
                            spec,
                            own_init or "__init__" in info.methods,
                            own_fwd or "forward" in info.methods,
                        )
                        break
        self._class_spec[key] = result
        return result

    def base_classes(self, info: ClassInfo, depth: int = 0) -> List[ClassInfo]:
        """The class and its base classes defined in this file."""
        out = [info]
        if depth < MAX_DEPTH:
            for base in info.base_exprs:
                parent = self.local_class(base, info.env, info.scope)
                if parent is not None and parent is not info:
                    out.extend(self.base_classes(parent, depth + 1))
        return out

    def method_of(self, cls: ClassInfo, name: str) -> Optional[cst.FunctionDef]:
        """A method of a class of this file, or of one of its bases."""
        for c in self.base_classes(cls):
            if name in c.methods:
                return c.methods[name]
        return None

    def attr_defs(self, info: ClassInfo, attr: str) -> List[Def]:
        defs: List[Def] = []
        for cls in self.base_classes(info):
            defs.extend(cls.attrs.get(attr, ()))
        return defs

    # what an expression holds -------------------------------------------------
    # ``held`` follows a value through locals, ``self.<attr>`` (with base
    # classes), loop variables over containers, ``enumerate``, tuple unpacking,
    # subscripts and ``copy.deepcopy`` down to the calls that built it; ``leaf``
    # says what such a call builds (a list of objects) or None when unknown.
    # One unknown path makes the whole answer unknown.

    def held(
        self, node: cst.CSTNode, env: Env, scope: Optional[Scope], leaf: Leaf, depth: int = 0
    ) -> Optional[list]:
        if depth > MAX_DEPTH:
            return None
        t = type(node)
        if t is cst.Call:
            inner = self._same_module(node, env, scope)
            if inner is not None:
                return self.held(inner, env, scope, leaf, depth + 1)
            if reach.is_getattr(node):
                return reach.fetched(self, node, env, scope, leaf, depth)
            if self.qualname(node.func, env, scope) in _UNCALLABLE:
                return NOT_CALLABLE
            got = leaf(node, env, scope)
            if got is None:
                got = self._made(node, env, scope, leaf, depth)
            if got is None and leaf == self._torch_leaf:
                spec, built, own = self.imported_torch(node.func, env, scope)
                ctor = self.site_of.get(id(node)) if built else None
                got = [Instance(spec, ctor, None, own)] if spec is not None else None
                if got is not None and not built:  # a factory's module: its literal flag
                    made = self.imported_module(node.func, env, scope)
                    flag = getattr(made, "batch_first", None)
                    got[0].made_batch_first = bound_flag(flag, node)
            return got
        if t is cst.IfExp:  # ``nn.MultiheadAttention(d, h) if cross else None``: the module
            sides = [b for b in (node.body, node.orelse) if not is_none(b)]
            kept = [self.held(b, env, scope, leaf, depth + 1) for b in sides]
            both = None if not kept or not all(kept) else [i for g in kept for i in g]
            if len(kept) == 2 and any(kept) and (both is None or len(distinct_held(both)) > 1):
                # ``Keep(n) if keep_style else Ignore(n)``: the side the program fixes, asked
                # only when the sides differ and one is known (the ask reads the project)
                truth = branch_truth(node.test, env, scope)
                if truth is not None:
                    return kept[0] if truth else kept[1]
            return both
        if t is cst.BooleanOperation and isinstance(node.operator, cst.Or):
            return defaults.or_default(self, node, env, scope, leaf, depth)
        if t in _DISPLAYS:
            return NOT_CALLABLE
        if t is cst.Name:
            return self.held_from_defs(lookup(node.value, env, scope), leaf, depth)
        if t is cst.Attribute:
            defs = self.self_attr_defs(node, env, scope)
            if defs is None:  # ``self.cross``: a ``@property`` returning a module, or a submodule
                got = reach.property_held(self, node, env, scope, leaf, depth)
                return got or reach.submodule(self, node, env, scope, leaf, depth)
            key = (id(self.self_class(node, env, scope)), node.attr.value)
            if key in self._following:  # self.attn = checkpoint_wrapper(self.attn)
                return _CYCLE
            self._following.add(key)
            try:  # a setter nothing calls: the module runs what it was built with
                return self.held_from_defs(tuple(set_when_built(defs)), leaf, depth)
            finally:
                self._following.discard(key)
        if t is cst.Subscript:
            at = self._element_at(node, env, scope, depth)
            if at is not None:
                return self.held(at[0], at[1], at[2], leaf, depth + 1)
            return self.held_elements(node.value, env, scope, leaf, depth + 1)
        return None

    def imported_torch(self, func, env: Env, scope) -> Tuple[Optional[ModuleSpec], bool, bool]:
        """The torch attention module that the class or factory of another
        project file ``func`` imports makes (``imported_module``), whether
        a call of it is that module's construction (a subclass built with
        torch's own arguments), and whether it runs a ``forward`` of its own
        (an encoder or decoder layer's, ``forms.torch_layer``)."""
        qn = self.imported_module(func, env, scope) if self.imported_module is not None else None
        spec = torch_api.module_spec(qn) if qn is not None else None
        if spec is None or getattr(qn, "items", False):  # a container of them: ``imported_items``
            return None, False, False
        return spec, getattr(qn, "built", False), getattr(qn, "own_forward", False)

    def _element_at(self, node: cst.Subscript, env: Env, scope, depth: int):
        """``blocks[1]`` of a container built once from a literal sequence
        (``nn.ModuleList([a, b])``, ``nn.Sequential(a, b)``, ``[a, b]``) and
        never filled afterwards: that member, with its env and scope."""
        key = _key_index(node)
        index = key if type(key) is int else None
        if index is None and not isinstance(key, str):
            return None
        value, venv, vscope = node.value, env, scope
        for _ in range(MAX_DEPTH - depth):
            if isinstance(value, cst.Call) and self._is_cast(value, venv, vscope):
                value = value.args[1].value
                continue
            if isinstance(value, cst.Name):
                defs = lookup(value.value, venv, vscope)
                if scope_appends(vscope, value.value):
                    return None
            elif isinstance(value, cst.Attribute):
                owner = self.self_class(value, venv, vscope)
                defs = self.self_attr_defs(value, venv, vscope) or []
                if owner is None or reach.mutated_in_place(self, owner, value.attr.value):
                    return None
                if any(cls.appends.get(value.attr.value) for cls in self.base_classes(owner)):
                    return None
            else:
                break
            defs = self._container_defs(defs)
            if len(defs) != 1 or defs[0].kind != DefKind.ASSIGN:
                return None
            value, venv, vscope = defs[0].node, defs[0].env, defs[0].scope
        if index is None:  # ``layers["attn"]`` of ``nn.ModuleDict({"attn": ..., ...})``
            return self._keyed_member(value, key, venv, vscope)
        members = None
        if isinstance(value, (cst.List, cst.Tuple)):
            members = value.elements
        elif isinstance(value, cst.Call) and not any(a.star or a.keyword for a in value.args):
            qn = self.qualname(value.func, venv, vscope)
            if qn == "torch.nn.Sequential":
                members = value.args
            elif qn == torch_api.MODULE_LIST and len(value.args) == 1:
                inner = value.args[0].value
                members = inner.elements if isinstance(inner, (cst.List, cst.Tuple)) else None
        if members is None or any(isinstance(m, cst.StarredElement) for m in members):
            return None
        if not -len(members) <= index < len(members):
            return None
        return members[index].value, venv, vscope

    def _keyed_member(self, value, key: str, env: Env, scope):
        """The member of a literal ``nn.ModuleDict({...})`` under ``key``."""
        if not (isinstance(value, cst.Call) and len(value.args) == 1 and not value.args[0].keyword):
            return None
        if self.qualname(value.func, env, scope) != reach.MODULE_DICT:
            return None
        items = value.args[0].value
        if not isinstance(items, cst.Dict):
            return None
        found = None
        for el in items.elements:  # the last under the key, when no ``**`` splat follows it
            if not isinstance(el, cst.DictElement):
                found = None
            elif literal(el.key) == key:
                found = (el.value, env, scope)
        return found

    def _is_cast(self, call: cst.Call, env: Env, scope) -> bool:
        """``typing.cast(T, value)``: the value itself."""
        two = len(call.args) == 2 and not any(a.star or a.keyword for a in call.args)
        return two and self.qualname(call.func, env, scope) == "typing.cast"

    def uncast(self, node, env: Env, scope):
        """``node``, or the value of ``typing.cast(T, value)``."""
        while isinstance(node, cst.Call) and self._is_cast(node, env, scope):
            node = node.args[1].value
        return node

    def _container_defs(self, defs) -> list:
        """The definitions an index or a loop can be reading: not ``None``, and
        of several, not a torch module that is no container (a module in one
        branch, the container in another); all of them when none is one."""
        real = [d for d in defs if d.kind != DefKind.ASSIGN or not is_none(d.node)]
        if len(real) > 1:
            return [d for d in real if not self._indexes_nothing(d)] or real
        return real

    def _indexes_nothing(self, d: Def) -> bool:
        """A definition holding a torch module that is no container (a
        ``TransformerEncoder``): an index or a loop cannot be reading it."""
        node = d.node
        return (
            d.kind == DefKind.ASSIGN
            and isinstance(node, cst.Call)
            and torch_api.module_spec(self.qualname(node.func, d.env, d.scope)) is not None
        )

    def _same_module(self, call: cst.Call, env: Env, scope) -> Optional[cst.BaseExpression]:
        """The module a call gives back as itself or a copy (``copy.deepcopy(m)``,
        ``m.to(device)``, ``.eval()``...), or a wrapper whose call runs it
        (``torch.compile(m)``, ``checkpoint_wrapper(m)``, ``nn.utils.*(m)``)."""
        func = call.func
        if self._is_cast(call, env, scope):
            return call.args[1].value
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in _SAME_MODULE_METHODS
            and self.qualname(func, env, scope) is None
        ):
            return func.value
        qn = self.qualname(func, env, scope)
        if qn is None or not call.args:
            return None
        if (
            qn == "copy.deepcopy"
            or qn == "torch.compile"
            or qn.startswith("torch.nn.utils.")
            or qn.rsplit(".", 1)[-1] == "checkpoint_wrapper"
        ):
            first = call.args[0]
            if first.keyword is None and not first.star:
                return first.value
            for arg in call.args:
                if arg.keyword is not None and arg.keyword.value in ("module", "model"):
                    return arg.value
        return None

    def self_attr_defs(self, node: cst.Attribute, env: Env, scope) -> Optional[List[Def]]:
        owner = self.self_class(node, env, scope)
        if owner is None:
            return None
        return self.attr_defs(owner, node.attr.value) or self._subclass_defs(owner, node.attr.value)

    def _subclass_defs(self, owner: ClassInfo, attr: str) -> Optional[List[Def]]:
        """A base class's method reading an attribute only its subclasses of
        this file assign (``self.attn`` in ``_Layer.forward``, built in
        ``LayerA.__init__``): what those subclasses assign, joined."""
        subclasses = self.__dict__.get("_subclasses")
        if subclasses is None:  # each class's subclasses of this file, found once per file
            subclasses = {}
            for info in self.flow.classes.values():
                for base in self.base_classes(info)[1:]:
                    kept = subclasses.setdefault(id(base), [])
                    if base is not info and info not in kept:
                        kept.append(info)
            self._subclasses = subclasses
        defs: List[Def] = []
        for info in subclasses.get(id(owner), ()):
            defs.extend(info.attrs.get(attr, ()))
        return defs or None

    def self_class(self, node: cst.Attribute, env: Env, scope) -> Optional[ClassInfo]:
        """The class of ``self`` in ``self.<attr>``."""
        if not isinstance(node.value, cst.Name):
            return None
        owners = lookup(node.value.value, env, scope)
        if len(owners) != 1 or owners[0].kind != DefKind.SELF:
            return None
        return owners[0].extra

    def held_from_defs(self, defs, leaf: Leaf, depth: int) -> Optional[list]:
        if not defs:
            return None
        out: list = []
        containers = False
        for d in defs:
            if d.kind == DefKind.ASSIGN and is_none(d.node):
                continue  # ``self.encode = None`` then, maybe, a module: a call runs the module
            if d.kind == DefKind.ASSIGN:
                got = self.held(d.node, d.env, d.scope, leaf, depth + 1)
                if got is _CYCLE:
                    continue  # the attribute wrapping itself: its other definitions say
                if got is NOT_CALLABLE:
                    # a ModuleList in one branch, a module in another: a call runs the module
                    containers = True
                    continue
            elif d.kind == DefKind.FOR:  # ``for a in m``, ``for i, (a, b) in enumerate(zip(...))``
                got = reach.for_element(self, d.node, d.index, d.env, d.scope, leaf, depth)
            elif d.kind == DefKind.UNPACK:
                from .values import unpacked

                el = unpacked(d)
                got = self.held(el, d.env, d.scope, leaf, depth + 1) if el is not None else None
            elif d.kind == DefKind.PARAM:
                got = self._constructed_with(d, leaf, depth)
            else:
                got = None
            if not got:
                return None
            out.extend(got)
        return out or (NOT_CALLABLE if containers else None)

    def _constructed_with(self, d: Def, leaf: Leaf, depth: int) -> Optional[list]:
        """A parameter of a class's ``__init__``: what every construction of the
        class in this file passes for it (DETR's ``TransformerEncoder(layer,
        n)``); None when none builds it, or one splats or leaves it None."""
        given = self.assumed.get((id(d.extra), d.node.name.value))
        if given is not None:  # what another file hands the parameter (layout/program.py)
            return given(leaf)
        out: list = []
        passed = reach.init_arguments(self, d)
        if passed is None:  # called from other files only: the torch module they hand it
            return handed_torch(d, leaf == self._torch_leaf)
        for expr, env, scope in passed:
            got = self.held(expr, env, scope, leaf, depth + 1)
            if not got:
                return None
            out.extend(got)
        return out or None

    def constructions(self, info: ClassInfo) -> List[CallSite]:
        """The calls of this file that build the class ``info`` by its name."""
        key = ("built", id(info.node))
        if key not in self._built:
            self._built[key] = [
                site
                for site in self.flow.calls
                if isinstance(site.node.func, cst.Name)
                and site.node.func.value == info.name
                and self.local_class(site.node.func, site.env, site.scope) is info
            ]
        return self._built[key]

    def held_elements(
        self, node: cst.CSTNode, env: Env, scope: Optional[Scope], leaf: Leaf, depth: int = 0
    ) -> Optional[list]:
        """What the container ``node`` (ModuleList, Sequential, list, ...) holds."""
        if depth > MAX_DEPTH:
            return None
        t = type(node)
        if t is cst.Call:
            if self._is_cast(node, env, scope):
                return self.held_elements(node.args[1].value, env, scope, leaf, depth + 1)
            qn = self.qualname(node.func, env, scope)
            if qn in _CONTAINERS:
                if not node.args:
                    return []  # filled by .append(): the caller adds those
                if len(node.args) == 1 and not node.args[0].star:
                    return self.held_elements(node.args[0].value, env, scope, leaf, depth + 1)
                if qn == "torch.nn.Sequential":
                    return self._sequential_members(node, env, scope, leaf, depth)
            if qn in MAPPINGS:  # ``OrderedDict(layers)`` of (name, module) pairs
                if not node.args:
                    return []  # filled by ``layers[name] = ...``: the caller adds those
                arg = node.args[0]
                if len(node.args) == 1 and arg.keyword is None and not arg.star:
                    return self.pair_values(arg.value, env, scope, leaf, depth + 1)
                return None
            cloned = self._clones(node, env, scope, leaf, depth)
            if cloned is not None:
                return cloned
            if reach._dict_view(node) is not None:  # self.heads.values(), .items()' values
                return self.held_elements(node.func.value, env, scope, leaf, depth + 1)
            if leaf == self._torch_leaf:
                spec = reach.imported_items(self, node.func, env, scope)
                if spec is not None:  # SASRec's ``build_attention_stack(n)`` of another file
                    return [Instance(spec, None, None, False)]
            return reach.module_dict_values(self, node, env, scope, leaf, depth)
        if t in (cst.List, cst.Tuple):
            out: list = []
            for el in node.elements:
                if isinstance(el, cst.StarredElement):
                    got = self.held_elements(el.value, env, scope, leaf, depth + 1)
                else:
                    got = self.held(el.value, env, scope, leaf, depth + 1)
                if not got:
                    return None
                out.extend(got)
            return out
        if t in (cst.ListComp, cst.GeneratorExp):
            return self.held(node.elt, env, scope, leaf, depth + 1)
        if t is cst.Dict:  # ``{"attn": Attention(...), ...}``: its values
            out = []
            for el in node.elements:
                got = self.held(el.value, env, scope, leaf, depth + 1)
                if not isinstance(el, cst.DictElement) or not got:
                    return None
                out.extend(got)
            return out
        if t is cst.Name:
            defs = lookup(node.value, env, scope)
            return self._elements_from_defs(defs, scope_appends(scope, node.value), leaf, depth)
        if t is cst.Attribute:
            owner = self.self_class(node, env, scope)
            defs = self.self_attr_defs(node, env, scope)
            if owner is None or defs is None:
                return reach.layers(self, node, env, scope, leaf, depth)
            if reach.mutated_in_place(self, owner, node.attr.value):
                return None  # self.attn["x"] = m, self.layers[0] = m, self.attn.update(...)
            appended: List[Def] = []
            for cls in self.base_classes(owner):
                appended.extend(cls.appends.get(node.attr.value, ()))
            return self._elements_from_defs(defs, appended, leaf, depth)
        return None

    def pair_values(self, node, env, scope, leaf: Leaf, depth: int) -> Optional[list]:
        return reach.pair_values(self, node, env, scope, leaf, depth)

    def own_function(self, call: cst.Call, env, scope) -> Optional[cst.FunctionDef]:
        """The function of this file a call names: one defined once, by its name; a
        method called on ``self``; a static or class method called on its class."""
        func = call.func
        if isinstance(func, cst.Name):
            defs = lookup(func.value, env, scope)
            return defs[0].node if len(defs) == 1 and defs[0].kind == DefKind.DEF else None
        if isinstance(func, cst.Attribute):
            owner = self.self_class(func, env, scope)
            if owner is not None:
                return self.method_of(owner, func.attr.value)
            owner = self.local_class(func.value, env, scope)  # ``Factory.create(d, h)``
            found = self.method_of(owner, func.attr.value) if owner is not None else None
            return found if found is not None and static_kind(found) != "method" else None
        return None

    def _made(self, call: cst.Call, env, scope, leaf: Leaf, depth: int) -> Optional[list]:
        """What a factory of this file gives back (``def build_attn(d): return
        nn.MultiheadAttention(d, 8)``, then ``self.attn = build_attn(64)``): a
        module-level function, or a method called on ``self``, every return of
        which is known to hold something; its arguments are not bound (the
        module built there is that one construction, whatever its sizes).  A
        lambda bound once to a local name is such a factory too (pero-ocr's
        ``layer_constructor = lambda: DecoderLayer(...)``)."""
        if isinstance(call.func, cst.Name):
            defs = lookup(call.func.value, env, scope)
            if (
                len(defs) == 1
                and defs[0].kind == DefKind.ASSIGN
                and isinstance(defs[0].node, cst.Lambda)
            ):
                body = defs[0].node.body
                return self.held(body, defs[0].env, defs[0].scope, leaf, depth + 1)
        target = self.own_function(call, env, scope)
        fscope = self.flow.functions.get(id(target)) if target is not None else None
        if fscope is None or not fscope.returns:
            return None
        key = ("made", id(target))
        if key in self._following:
            return None
        self._following.add(key)
        try:
            out: list = []
            for ret, renv in fscope.returns:
                if is_none(ret):
                    continue  # no module: a call would raise, so a call runs the others
                got = self.held(ret, renv, fscope, leaf, depth + 1)
                if not got:
                    return None
                out.extend(got)
            made_by = (call, env, scope, target)
            return [
                i.made_at(made_by) if isinstance(i, Instance) and i.made_by is None else i
                for i in out
            ] or None
        finally:
            self._following.discard(key)

    def _clones(self, call: cst.Call, env, scope, leaf: Leaf, depth: int) -> Optional[list]:
        """``_get_clones(layer, n)``: a function of this file whose one return is
        ``nn.ModuleList([copy.deepcopy(module) for i in range(n)])`` holds copies
        of the module it is given."""
        if not isinstance(call.func, cst.Name) or any(a.star for a in call.args):
            return None
        defs = lookup(call.func.value, env, scope)
        if len(defs) == 1 and defs[0].kind == DefKind.IMPORT:
            return self._imported_clones(call, defs[0], env, scope, leaf, depth)
        if len(defs) != 1 or defs[0].kind != DefKind.DEF:
            return None
        func: cst.FunctionDef = defs[0].node
        fscope = self.flow.functions.get(id(func))
        if fscope is None or not fscope.returns:
            return None
        names = [p.name.value for p in list(func.params.posonly_params) + list(func.params.params)]
        # every return: a container of copies of one parameter (or the shared one)
        found = {self._copied(ret, renv, fscope, names) for ret, renv in fscope.returns}
        if len(found) != 1 or None in found:
            return None
        name = found.pop()
        given = passed(call, names.index(name), name)
        return self.held(given, env, scope, leaf, depth + 1) if given is not None else None

    def _copied(self, ret, renv, fscope, names) -> Optional[str]:
        """The parameter ``nn.ModuleList([copy.deepcopy(p) for ...])`` copies."""
        if (
            not isinstance(ret, cst.Call)
            or len(ret.args) != 1
            or self.qualname(ret.func, renv, fscope) not in _CONTAINERS
            or not isinstance(ret.args[0].value, (cst.ListComp, cst.GeneratorExp))
        ):
            return None
        elt = ret.args[0].value.elt
        if isinstance(elt, cst.Call) and len(elt.args) == 1:
            if self.qualname(elt.func, renv, fscope) != "copy.deepcopy":
                return None
            elt = elt.args[0].value
        return elt.value if isinstance(elt, cst.Name) and elt.value in names else None

    def _imported_clones(self, call: cst.Call, d: Def, env, scope, leaf: Leaf, depth: int):
        """``_get_clones(layer, n)`` imported: torch's own, or a function of
        another project file read as above (``imported_clones``)."""
        if d.extra == "torch.nn.modules.transformer._get_clones":
            param = (0, "module")
        elif self.imported_clones is not None:
            param = self.imported_clones(d.node, call.func.value)
        else:
            param = None
        given = passed(call, *param) if param is not None else None
        return self.held(given, env, scope, leaf, depth + 1) if given is not None else None

    def _sequential_members(self, node: cst.Call, env, scope, leaf: Leaf, depth: int):
        """``nn.Sequential(a, b)``, ``nn.Sequential(*[Block() for _ in range(n)])``:
        every module given (one argument alone may be an ``OrderedDict``: above)."""
        out: list = []
        for arg in node.args:
            if arg.keyword is not None or arg.star == "**":
                return None
            if arg.star:
                got = self.held_elements(arg.value, env, scope, leaf, depth + 1)
            else:
                got = self.held(arg.value, env, scope, leaf, depth + 1)
            if not got:
                return None
            out.extend(got)
        return out

    def _elements_from_defs(self, defs, appended, leaf: Leaf, depth: int) -> Optional[list]:
        if not defs:
            return None
        out: list = []
        # ``self.encode = None`` then, maybe, a container: iterated, it is that
        for d in self._container_defs(defs):
            got = reach.def_elements(self, d, leaf, depth)
            if got is None:
                return None
            out.extend(got)
        for d in appended:
            if d.kind == DefKind.FOR:
                got = self.held_elements(d.node, d.env, d.scope, leaf, depth + 1)
            else:
                got = self.held(d.node, d.env, d.scope, leaf, depth + 1)
            if not got:
                return None
            out.extend(got)
        return out or None

    # torch module instances ----------------------------------------------------
    def _torch_leaf(
        self, call: cst.Call, env: Env, scope: Optional[Scope]
    ) -> Optional[List[Instance]]:
        site = self.site_of.get(id(call))
        spec = torch_api.module_spec(self.qualname(call.func, env, scope))
        if spec is not None:
            return [Instance(spec, site, None, False)]
        made = partial_torch(self, call, env, scope)
        side = decided_name(call.func, env, scope) if made is None else None
        if side is not None:  # ``make = AuxLayer if aux else Layer``, ``aux`` fixed
            made = partial_torch(self, call.with_changes(func=side), env, scope)
        if made is not None:  # ``SeqMHA(128, 4)``, ``SeqMHA = partial(nn.MultiheadAttention, ...)``
            return [Instance(made[0], site, None, False, made[1])]
        info = self.local_class(call.func, env, scope)
        if info is None:
            return None
        found = self.class_spec(info)
        if found is None:
            # ``def forward(self, *args, **kwargs): return self.inner(*args, **kwargs)``
            inner = forwarded_attr(info)
            if inner is None or ("fwd", id(info)) in self._following:
                return None
            self._following.add(("fwd", id(info)))
            try:
                return self.held_from_defs(tuple(self.attr_defs(info, inner)), self._torch_leaf, 1)
            finally:
                self._following.discard(("fwd", id(info)))
        spec, own_init, own_fwd = found
        return [Instance(spec, None if own_init else site, info, own_fwd)]

    torch_leaf = _torch_leaf  # the leaf of ``instances``, for reach.py

    def instances(
        self, node: cst.CSTNode, env: Env, scope: Optional[Scope]
    ) -> Optional[List[Instance]]:
        """The torch modules ``node`` may hold, or None when not known to be one."""
        return self.held(node, env, scope, self._torch_leaf)

    def _class_leaf(
        self, call: cst.Call, env: Env, scope: Optional[Scope]
    ) -> Optional[List[ClassInfo]]:
        info = self.local_class(class_run(call.func, env, scope), env, scope)
        if info is not None:
            return [info]
        func = call.func
        if isinstance(func, cst.Attribute):  # ``Encoder.from_config()``: a class method
            owner = self.local_class(func.value, env, scope)  # that builds the class
            method = owner.methods.get(func.attr.value) if owner is not None else None
            if method is not None and builds_own_class(method):
                return [owner]
        return reach.registered(self, call.func, env, scope) or reach.chosen(
            self, call.func, env, scope
        )

    def instance_classes(
        self, node: cst.CSTNode, env: Env, scope: Optional[Scope]
    ) -> Optional[List[ClassInfo]]:
        """The classes of this file whose instance ``node`` may hold."""
        return self.held(node, env, scope, self._class_leaf)

    # a single torch spec for a set of instances --------------------------------
    @staticmethod
    def common_spec(instances: Optional[List[Instance]]) -> Optional[ModuleSpec]:
        if not instances:
            return None
        spec = instances[0].spec
        if any(i.spec is not spec or i.overrides_forward for i in instances):
            return None
        return spec


_BUILTINS = {"list", "tuple", "zip", "enumerate", "dict"}
# a module's methods that return the module itself (or a converted copy)
_SAME_MODULE_METHODS = {
    *("to", "cuda", "cpu", "half", "float", "double", "bfloat16", "type", "eval", "train"),
    *("requires_grad_", "to_empty", "share_memory"),
}
_CYCLE: list = []  # an attribute met again while following it
# what a container that cannot be called holds, called: nothing (a falsy
# answer that ``held_from_defs`` tells from unknown)
NOT_CALLABLE: list = []
_UNCALLABLE = {torch_api.MODULE_LIST, reach.MODULE_DICT, "torch.nn.ParameterList", "builtins.dict"}
_UNCALLABLE |= {"torch.nn.ParameterDict", "builtins.list", "builtins.tuple"}
_DISPLAYS = (cst.List, cst.Tuple, cst.Dict, cst.ListComp, cst.DictComp, cst.GeneratorExp)


def _key_index(node: cst.Subscript):
    """The literal of ``x["attn"]`` (any literal; None for anything else)."""
    index = node.slice[0].slice if len(node.slice) == 1 else None
    return literal(index.value) if isinstance(index, cst.Index) else None
