"""What a call is, in torch's terms: the events the rules subscribe to.

The engine classifies every call the flow pass met once; each rule then
receives only the events it declares (``on_construction``, ``on_module_call``,
``on_sdpa_call``, ``on_call``)."""

from __future__ import annotations

from typing import List, Literal, Optional

import libcst as cst

from ..core import torch_api
from .flow import CallSite, ClassInfo, DefKind, lookup, subclasses_in
from .reach import is_getattr
from .bound import Bound, Instance
from .classes import class_default, static_kind
from .partials import partial_of_module, partial_torch
from .resolve import Resolver
from .splats import expand_call, splat_keys
from .values import decided_name
from ..core.torch_api import ModuleSpec


# How a construction was reached: a direct call of the torch class, a call of
# a subclass without its own __init__, super().__init__ in a subclass, or a
# call of an encoder or decoder layer of another project file that keeps
# torch's __init__ and runs a forward of its own (``forms.torch_layer``).
Via = Literal["call", "subclass", "super", "layer"]


class Construction:
    """A torch module being built: ``nn.MultiheadAttention(...)``, a subclass
    without its own ``__init__``, or ``super().__init__(...)`` in a subclass."""

    __slots__ = ("site", "spec", "args", "via", "cls")

    def __init__(
        self, site: CallSite, spec: ModuleSpec, args: Bound, via: Via, cls: Optional[ClassInfo]
    ):
        self.site = site
        self.spec = spec
        self.args = args
        self.via = via
        self.cls = cls


class ModuleCall:
    """A call of a known torch module instance (its forward)."""

    __slots__ = ("site", "spec", "instances", "args")

    def __init__(self, site: CallSite, spec: ModuleSpec, instances: List[Instance], args: Bound):
        self.site = site
        self.spec = spec
        self.instances = instances
        self.args = args

    def single_ctor(self) -> Optional[Construction]:
        """The one construction every instance comes from, if there is one."""
        ctors = {id(i.ctor.node): i for i in self.instances if i.ctor is not None}
        if len(ctors) != 1 or any(i.ctor is None for i in self.instances):
            return None
        inst = next(iter(ctors.values()))
        return Construction(inst.ctor, self.spec, inst.init_args(), "call", inst.subclass)


class SdpaCall:
    """A call of ``F.scaled_dot_product_attention``, or of a project wrapper
    that forwards its parameters to one (``through``: the wrapper's name, file
    and SDPA line, see ``program/callsites.py``; ``args`` then holds the caller's
    arguments under SDPA's names)."""

    __slots__ = ("site", "args", "through", "more")

    def __init__(self, site: CallSite, args: Bound, through: Optional[dict] = None):
        self.site = site
        self.args = args
        self.through = through
        self.more: list = []  # the same call as a second instance of its wrapper reads it


class FillCall:
    """A call of a project function that fills attention scores with a big
    negative where a mask parameter says (``scores.masked_fill(mask, -inf)``
    inside ``masked_softmax(sim, mask)``), with the caller's mask in place of
    the parameter (``program/callsites.py``).  ``door``: "ignore" when True
    removes the score (masked_fill), "keep" when True keeps it
    (``torch.where(mask, x, -inf)``); ``softmaxed``: the function that fills
    softmaxes its scores (a triangle is judged only then); ``through``: the
    function's name, file and fill line, as ``SdpaCall.through``."""

    __slots__ = (
        "site",
        "mask",
        "given",
        "inverted",
        "door",
        "text",
        "softmaxed",
        "through",
        "more",
    )

    def __init__(self, site, mask, door: str, text: str, softmaxed: bool, through: dict):
        self.site = site
        self.mask = mask  # the caller's argument with the function's steps applied
        self.given = mask  # the caller's argument as written
        self.inverted = False  # the function's steps invert it
        self.door = door
        self.text = text
        self.softmaxed = softmaxed
        self.through = through
        self.more: list = []  # the same call as another sink of its function reads it


def classify(site: CallSite, resolver: Resolver):
    """The event for one call site, or None for a call no rule cares about."""
    call = site.node
    func = call.func
    env, scope = site.env, site.scope
    qn = resolver.qualname(func, env, scope)
    if qn is not None:
        spec = torch_api.module_spec(qn)
        if spec is not None:
            return Construction(site, spec, _init_bound(call, spec, env, scope), "call", None)
        if qn == torch_api.SDPA_QUALNAME:
            return SdpaCall(site, Bound(expand_call(call, env, scope), torch_api.SDPA_SIGNATURE))
        if isinstance(func, cst.Attribute) and func.attr.value == "__init__":
            spec = torch_api.module_spec(qn[: -len(".__init__")])
            cls = site.cls
            if spec is not None and cls is not None and _in_own_init(site):
                # nn.MultiheadAttention.__init__(self, ...)
                return Construction(site, spec, _bind_skip_self(call, spec), "super", cls)
        spec, built, own = (
            resolver.imported_torch(func, env, scope)
            if _may_be_project_class(qn)
            else (None, False, False)
        )
        if built:  # a subclass in another project file, built by torch's __init__
            made = partial_torch(resolver, call, env, scope)
            if made is not None:  # ``from .factory import SeqMHA``: a partial of the module
                return Construction(site, made[0], Bound(made[1], made[0].init), "call", None)
            via = "layer" if own else "subclass"
            return Construction(site, spec, Bound(call, spec.init), via, None)
        if isinstance(func, cst.Name) and not qn.startswith(_LIBRARIES):
            made = partial_torch(resolver, call, env, scope)
            if made is not None:  # ``from .factory import make_self_attn``, a partial
                return Construction(site, made[0], Bound(made[1], made[0].init), "call", None)
        if not qn.startswith("builtins."):
            return None
    elif isinstance(func, cst.Name):
        made = partial_torch(resolver, call, env, scope)
        if made is not None:  # ``SeqMHA = partial(nn.MultiheadAttention, ...)``, ``SeqMHA(d, h)``
            return Construction(site, made[0], Bound(made[1], made[0].init), "call", None)
        side = decided_name(func, env, scope)  # ``make = Aux if aux else Plain``, ``aux`` fixed
        if side is not None:
            made = partial_torch(resolver, call.with_changes(func=side), env, scope)
            if made is not None:
                return Construction(site, made[0], Bound(made[1], made[0].init), "call", None)
            spec = torch_api.module_spec(resolver.qualname(side, env, scope) or "")
            if spec is not None:
                return Construction(site, spec, Bound(call, spec.init), "call", None)
        handed = class_default(func, env, scope)
        if handed is not func:  # ``attn_cls(dim, heads)``, the class every construction names
            spec = torch_api.module_spec(resolver.qualname(handed, env, scope) or "")
            if spec is not None:
                return Construction(site, spec, Bound(call, spec.init), "call", None)
    if isinstance(func, cst.Attribute) and func.attr.value == "__init__" and _is_super(func.value):
        cls = site.cls
        if cls is not None and _in_own_init(site):
            found = resolver.class_spec(cls)
            if found is not None and _direct_torch_base(cls, resolver) is found[0]:
                bound = _init_bound(call, found[0], env, scope)
                return Construction(site, found[0], bound, "super", cls)
        return None
    info = resolver.local_class(func, env, scope) or _own_class(site, func)
    if info is not None:
        found = resolver.class_spec(info)
        if found is not None and not found[1]:
            return Construction(site, found[0], Bound(call, found[0].init), "subclass", info)
        return None
    if isinstance(func, cst.Attribute) and func.attr.value == "forward" and _is_super(func.value):
        return _super_forward(site, resolver)
    target = func
    if isinstance(func, cst.Attribute) and func.attr.value == "forward":
        target = func.value
    if not isinstance(target, (cst.Name, cst.Attribute, cst.Subscript)) and not is_getattr(target):
        return None
    instances = resolver.instances(target, env, scope)
    if not instances and isinstance(target, (cst.Name, cst.Attribute)):
        if isinstance(target, cst.Name):
            instances = narrowed(site, target, resolver)
        if not instances:
            got = partial_of_module(site, target, resolver)
            if got is not None:
                instances, call = got
    spec = Resolver.common_spec(instances)
    if spec is None:
        return None
    return ModuleCall(site, spec, instances, Bound(expand_call(call, env, scope), spec.forward))


def _own_class(site: CallSite, func) -> Optional[ClassInfo]:
    """The class a class method builds with ``cls(...)`` (its first parameter,
    in a method decorated ``@classmethod`` of that class)."""
    method = site.function
    if not isinstance(func, cst.Name) or method is None or site.cls is None:
        return None
    params = method.params.params
    if not params or params[0].name.value != func.value:
        return None
    return site.cls if static_kind(method) == "classmethod" else None


_LIBRARIES = ("torch.", "builtins.", "einops.", "numpy.", "math.", "functools.")


def _may_be_project_class(qn: str) -> bool:
    """A qualified name that may name a class of the project: capitalised,
    not torch's (a cheap test before the project is asked)."""
    return qn.rpartition(".")[2][:1].isupper() and not qn.startswith(("torch.", "builtins."))


_OTHER = object()  # a construction an ``isinstance`` test rules out


def narrowed(site: CallSite, name: cst.Name, resolver: Resolver) -> Optional[list]:
    """mambular's ``for layer in self.layers: if isinstance(layer,
    nn.MultiheadAttention): layer(x, x, x)`` over a list of several kinds:
    the items of that torch class, the others ruled out by the test."""
    spec = None
    for test, truth, env in site.conds:
        if (
            truth
            and isinstance(test, cst.Call)
            and isinstance(test.func, cst.Name)
            and test.func.value == "isinstance"
            and len(test.args) == 2
            and isinstance(test.args[0].value, cst.Name)
            and test.args[0].value.value == name.value
        ):
            spec = torch_api.module_spec(resolver.qualname(test.args[1].value, env, site.scope))
    if spec is None:
        return None

    def leaf(call, env, scope):
        got = resolver.torch_leaf(call, env, scope)
        if got and all(i.spec is spec for i in got):
            return got
        return [_OTHER] if isinstance(call, cst.Call) else None

    try:
        held = resolver.held(name, site.env, site.scope, leaf)
    except RecursionError:  # pragma: no cover
        return None
    kept = [i for i in held or () if i is not _OTHER]
    return kept if kept and all(isinstance(i, Instance) for i in kept) else None


def _super_forward(site: CallSite, resolver: Resolver) -> Optional[ModuleCall]:
    """``super().forward(x, x, x, ...)`` in a method of a direct subclass of
    a torch attention module that has its own ``__init__``: a call of the
    module its ``super().__init__(...)`` builds (that construction carries
    its ``batch_first`` and is where MHA001 reports).  Without an own
    ``__init__`` the module is built wherever the class is: not read."""
    cls = site.cls
    if cls is None or "__init__" not in cls.methods:
        return None
    spec = _direct_torch_base(cls, resolver)
    if spec is None:
        return None
    init = cls.methods["__init__"]
    ctors = [
        s
        for s in resolver.flow.calls
        if s.function is init
        and isinstance(s.node.func, cst.Attribute)
        and s.node.func.attr.value == "__init__"
        and _is_super(s.node.func.value)
    ]
    if len(ctors) != 1:
        return None
    call = site.node
    inst = Instance(spec, ctors[0], cls, True)
    return ModuleCall(
        site, spec, [inst], Bound(expand_call(call, site.env, site.scope), spec.forward)
    )


def _init_bound(call: cst.Call, spec: ModuleSpec, env, scope) -> Bound:
    """A construction's arguments; a ``**asdict(cfg)`` splat of a dataclass
    carries only its fields (probe AC's AC29)."""
    keys = splat_keys(call, env, scope) if any(a.star == "**" for a in call.args) else None
    return Bound(call, spec.init, splat_keys=keys)


def _bind_skip_self(call: cst.Call, spec: ModuleSpec) -> Bound:
    if call.args and call.args[0].keyword is None and not call.args[0].star:
        call = call.with_changes(args=call.args[1:])
    return Bound(call, spec.init)


def _is_super(node: cst.CSTNode) -> bool:
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value == "super"
    )


def _in_own_init(site: CallSite) -> bool:
    func = site.function
    return func is not None and func.name.value == "__init__"


def _direct_torch_base(cls: ClassInfo, resolver: Resolver) -> Optional[ModuleSpec]:
    """The torch class a ``super().__init__`` in ``cls`` reaches: a direct torch
    base, not a local intermediate class (whose own ``__init__`` is reported)."""
    for base in cls.base_exprs:
        spec = torch_api.module_spec(resolver.qualname(base, cls.env, cls.scope))
        if spec is not None:
            return spec
        parent = resolver.local_class(base, cls.env, cls.scope)
        if parent is not None:
            found = resolver.class_spec(parent)
            if found is not None:
                if found[1]:
                    return None  # the parent's own __init__ builds the torch module
                return _direct_torch_base(parent, resolver)
    return None


def is_module_class(
    cls: Optional[ClassInfo], resolver: Resolver, depth: int = 0, project=None
) -> bool:
    """Whether ``cls`` derives from ``torch.nn.Module`` (through this file's
    classes, and with ``project``, through the classes of its other files:
    ``Project.module_class``)."""
    if cls is None or depth > 16:
        return False
    for base in cls.base_exprs:
        qn = resolver.qualname(base, cls.env, cls.scope)
        if qn is not None and (
            qn == torch_api.MODULE
            or torch_api.module_spec(qn) is not None
            or qn.startswith("torch.nn.")
            and qn[len("torch.nn.") :][:1].isupper()
        ):
            return True
        parent = resolver.local_class(base, cls.env, cls.scope)
        if (
            parent is not None
            and parent is not cls
            and is_module_class(parent, resolver, depth + 1, project)
        ):
            return True
        if parent is None and qn is not None and hasattr(project, "module_class"):
            dotted = qn.lstrip(".")  # ``..api.modules.SetAttention``: level 2
            if project.module_class((len(qn) - len(dotted), dotted)):
                return True
    return False


def mixed_into_modules(cls: Optional[ClassInfo], resolver: Resolver, classes, project=None) -> bool:
    """Whether ``cls``, a class of no base but ``object`` (or but plain
    mixins of its file: ``class AttendMixin(HeadsMixin)``, probe AP's AP11),
    is a base only of module classes of its file, one at least (``class
    SDPAMixin:`` mixed into ``class SelfAttention(SDPAMixin, nn.Module)``,
    probe AE's AE14): its methods run on modules alone."""
    if cls is None or not _plain(cls, resolver, 0) or getattr(cls.scope, "kind", None) != "module":
        return False
    heirs = subclasses_in(cls, list(classes))
    if not all(is_module_class(c, resolver, project=project) for c in heirs):
        return False
    # and the classes of the project's other files that mix it in (probe AN's AN21)
    elsewhere = project.mixed_elsewhere(cls.name) if hasattr(project, "mixed_elsewhere") else None
    if elsewhere is False:
        return False
    return bool(heirs) or elsewhere is True


def _plain(cls: ClassInfo, resolver: Resolver, depth: int) -> bool:
    """A class of no base but ``object``, or whose bases are such classes of
    its file."""
    if depth > 4:
        return False
    for base in cls.base_exprs:
        own = resolver.local_class(base, cls.env, cls.scope)
        if own is None or not _plain(own, resolver, depth + 1):
            return False
    return True


def self_name(site: CallSite) -> Optional[str]:
    """The name of ``self`` in the method enclosing ``site``, if any."""
    func = site.function
    if func is None:
        return None
    for name in ("self",):
        defs = lookup(name, site.env, site.scope)
        if defs and all(d.kind == DefKind.SELF for d in defs):
            return name
    params = func.params.params
    if params:
        first = params[0].name.value
        defs = lookup(first, site.env, site.scope)
        if defs and all(d.kind == DefKind.SELF for d in defs):
            return first
    return None
