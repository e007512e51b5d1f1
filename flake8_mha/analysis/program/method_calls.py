"""The methods of project classes a call runs, named on an instance (part of
``callsites.Project``): ``self.vit.forward_features(x)`` on a held module,
``model.decode(ys, memory, mask)`` on a local bound once to a
construction, or on a parameter the project's calls hand one class."""

from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from ..classes import dotted_text
from ..flow import DefKind, ScopeKind, lookup
from .handed_params import PROJECT
from .held_lists import ITEMS
from .local_names import own_definition
from .returns import imported_target as _imported
from .summaries import MODULES, REGISTRIES


class MethodCalls:
    """A mixin of ``callsites.Project``: it reads ``_defined``, ``effective``,
    ``summaries``, ``instance_call``, ``_built`` and ``path`` of the project."""

    def _held_leaf(self, resolver):
        """The leaf ``resolver.held`` ends at for a called object: what each
        construction (``_built``) or registered class runs; its
        ``made_items``, what each item of a container a project factory of
        another file returns runs (``stack(2, d, h)``, then ``for layer in
        self.layers: layer(x, mask)``)."""

        def leaf(call, env, scope):
            got = self._built(call, env, scope, resolver)
            return [got] if got is not None else self._registered(call.func)

        def made_items(call, env, scope):
            target = _imported(call.func, env, scope)
            loc = self._defined(target) if target is not None else None
            made = self.summaries(loc[0]).get(MODULES, {}).get(loc[1]) if loc else None
            if made is None or not made.endswith(ITEMS):
                return None
            return leaf(call, env, scope)  # its ``made_module``: the items' class

        leaf.made_items = made_items  # type: ignore[attr-defined]
        return leaf

    def _registered(self, func) -> Optional[list]:
        """``BLOCKS[kind](d, h)``, a dict of classes this file binds (or
        ``{"node": NodeAttention, "edge": EdgeAttention}[kind](d, h)``
        written at the call): what each class that reaches a sink runs, of
        this file or imported; None when one is no class of the project."""
        if not isinstance(func, cst.Subscript):
            return None
        table = self._own()
        if isinstance(func.value, cst.Name):
            kinds = (table.get(REGISTRIES, {}).get(func.value.value) or "").split("|")
        elif isinstance(func.value, cst.Dict):
            kinds = [dotted_text(el.value) or "" for el in func.value.elements]
        else:
            return None
        found = []
        for cls in kinds:
            if not cls:
                return None
            got = self._named(self.path, table, cls, tuple(self.package), 0, False)
            if got is None:  # a class of the project that reaches no sink runs nothing
                if not self._inert(self.path, table, cls, tuple(self.package)):
                    return None
                continue
            found.append(got)
        return found or None

    def _held_method(self, func, env, scope, resolver) -> Optional[Tuple[str, dict]]:
        """``self.vit.forward_features(...)``: the method of that name of the
        project class every construction of the held module builds, when the
        class defines it itself; None otherwise."""
        method = func.attr.value

        def leaf(call, env, scope):
            made = _imported(call.func, env, scope)
            if made is not None:
                loc = self._defined(made)
                if loc is None or "." in loc[1]:
                    return None
                filename, cls = loc
            else:
                filename = self.path
                cls = own_definition(call.func, env, scope, DefKind.CLASS)
                if cls is None:
                    return None
            got = self.effective(filename, f"{cls}.{method}")
            return [(filename, got)] if got is not None else None

        try:
            held = resolver.held(func.value, env, scope, leaf)
        except RecursionError:  # pragma: no cover - pathological nesting
            return None
        if not held or any(not isinstance(got, tuple) or got[1] is not held[0][1] for got in held):
            return None
        return held[0]

    def _handed_param(self, func, env, scope) -> Optional[Tuple[str, dict]]:
        """``model(ids, pad)`` or ``model.decode(...)`` where ``model`` is a
        parameter of a module-level function of this file that no call of
        this file hands anything, and every call of the project hands one
        project class (``handed_params``: ``evaluate(model, loader)`` in
        ``train.py``): that class's call, or its method."""
        name, method = func, None
        if isinstance(func, cst.Attribute):
            name, method = func.value, func.attr.value
        if not isinstance(name, cst.Name):
            return None
        defs = lookup(name.value, env, scope)
        if len(defs) != 1 or defs[0].kind != DefKind.PARAM:
            return None
        fdef, fscope = defs[0].extra, defs[0].scope
        if not isinstance(fdef, cst.FunctionDef) or fscope is None or fscope.cls is not None:
            return None
        if fscope.parent is None or fscope.parent.kind != ScopeKind.MODULE:
            return None
        got = self.module_handed(fdef.name.value, name.value)
        if got is None or got[0] != PROJECT:
            return None
        _, filename, cls = got
        if method is None or method == "forward":
            summary = self.instance_call(filename, cls)
        else:
            summary = self.effective(filename, f"{cls}.{method}")
        if summary is None:
            return None
        at = self.handed_where(fdef.name.value, name.value)
        return (filename, dict(summary, handed=[name.value, fdef.name.value, at, cls]))

    def _instance_method(self, func, env, scope) -> Optional[Tuple[str, dict]]:
        """``model.decode(ys, memory, mask)`` where ``model`` is bound once, to
        a construction of a project class (a script's module-level
        ``model = Seq2Seq(...)``): that class's method."""
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
            return None
        defs = lookup(func.value.value, env, scope)
        if len(defs) != 1 or defs[0].kind != DefKind.ASSIGN or defs[0].index:
            return None
        built = defs[0].node
        if not isinstance(built, cst.Call):
            return None
        name = func.attr.value
        target = _imported(built.func, defs[0].env, defs[0].scope)
        if target is not None:
            loc = self._defined(target)
            got = self.effective(loc[0], f"{loc[1]}.{name}") if loc is not None else None
            return (loc[0], got) if got is not None else None
        cls = own_definition(built.func, defs[0].env, defs[0].scope, DefKind.CLASS)
        got = self.effective(self.path, f"{cls}.{name}") if cls is not None else None
        return (self.path, got) if got is not None else None
