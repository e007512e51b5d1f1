"""A call's arguments bound to a torch signature, and the torch module
object an expression holds: the two values the resolver (``resolve.py``) and
its helpers for containers and torch's own parts (``reach.py``) both make."""

from __future__ import annotations

from typing import Dict, List, Optional

import libcst as cst

from ..core.torch_api import Argument, ModuleSpec, Signature
from .flow import CallSite, ClassInfo


class Bound:
    """A call's arguments bound to a torch signature (``Signature.bind``)."""

    __slots__ = ("args", "star", "double_star", "positional_count", "splat_keys")

    def __init__(self, call: cst.Call, sig: Signature, skip: int = 0, splat_keys=None):
        binding = sig.bind(call_arguments(call), skip)
        self.args: Dict[str, cst.BaseExpression] = {
            name: call.args[index].value for name, index in binding.slots.items()
        }
        self.star = binding.star
        self.double_star = binding.double_star
        self.positional_count = binding.positional_count
        # the keywords a ``**`` splat may carry, when known (``**asdict(cfg)``
        # of a dataclass: its fields); None: any
        self.splat_keys: Optional[frozenset] = splat_keys

    def get(self, name: str) -> Optional[cst.BaseExpression]:
        return self.args.get(name)

    def given(self, name: str) -> bool:
        return name in self.args

    def maybe_given(self, name: str) -> bool:
        """Given, or a ``*args``/``**kwargs`` splat could be carrying it."""
        carried = self.splat_keys is None or name in self.splat_keys
        return name in self.args or self.star or (self.double_star and carried)


def call_arguments(call: cst.Call) -> List[Argument]:
    """A LibCST call's arguments as the binder reads them: (keyword, star)."""
    return [(arg.keyword.value if arg.keyword is not None else None, arg.star) for arg in call.args]


class Instance:
    """A torch module object an expression is known to hold."""

    __slots__ = (
        "spec",
        "ctor",
        "subclass",
        "overrides_forward",
        "given",
        "made_batch_first",
        "made_by",
        "handed",
    )

    def __init__(
        self,
        spec: ModuleSpec,
        ctor: Optional[CallSite],
        subclass: Optional[ClassInfo],
        overrides_forward: bool,
        given: Optional[cst.Call] = None,
    ):
        self.spec = spec
        self.ctor = ctor  # the construction call whose arguments follow torch's signature
        self.subclass = subclass
        self.overrides_forward = overrides_forward
        # the arguments torch receives, when not the ctor's own (a ``partial``'s first)
        self.given = given
        # the literal ``batch_first`` a factory of another file built it with
        self.made_batch_first: Optional[bool] = None
        # (the call, its env and scope, the function) of a factory of this file
        # that returned it: that call's arguments bind the factory's parameters
        self.made_by: Optional[tuple] = None
        # (the parameter, the function, where the project's calls hand it): a
        # module a function of this file is handed from another file
        self.handed: Optional[tuple] = None

    def made_at(self, made_by: tuple) -> "Instance":
        """This instance as the factory call ``made_by`` returns it."""
        out = Instance(self.spec, self.ctor, self.subclass, self.overrides_forward, self.given)
        out.made_batch_first, out.made_by = self.made_batch_first, made_by
        out.handed = self.handed
        return out

    def init_args(self) -> Optional[Bound]:
        if self.ctor is None:
            return None
        return Bound(self.given or self.ctor.node, self.spec.init)


def passed(call: cst.Call, index: int, name: str) -> Optional[cst.BaseExpression]:
    """What ``call`` passes for the parameter ``name``, the ``index``-th
    positional one (splats aside: the caller rules them out)."""
    given = None
    for i, arg in enumerate(call.args):
        if (arg.keyword is None and i == index and not arg.star) or (
            arg.keyword is not None and arg.keyword.value == name
        ):
            given = arg.value
    return given


def bound_flag(flag, call) -> Optional[bool]:
    """The ``batch_first`` a factory's call gives the module it returns:
    ``flag`` as ``factories.returned_batch_first`` reads it, a literal or the
    factory's parameter, bound with the call's literal arguments; None when
    unknown."""
    if flag is None or type(flag) is bool:
        return flag
    name, at, default = flag
    if any(arg.star for arg in call.args):
        return None
    given = passed(call, at, name)
    if given is None:
        return default
    if isinstance(given, cst.Name) and given.value in ("True", "False"):
        return given.value == "True"
    return None


def distinct_held(held: list) -> set:
    """The different things a list of what a value holds names (classes, or
    torch modules by their spec and construction)."""
    return {(id(getattr(h, "spec", h)), id(getattr(h, "ctor", None))) for h in held}
