"""Layout across the files of the project: what other files feed a class of
this file, and what a class of another file gives back.

A part of ``LayoutEvaluator`` (evaluate.py), beside ``ProgramLayout``
(program.py, the calls inside one file):

- a class of another project file is reached through its import
  (``project_callers``), read by that file's own evaluator, made once per
  analysis of the linted file (``other``), and named in the evidence by its
  file and line (``export``);
- the inputs of a ``forward`` are what every file of the project feeds its
  instances, in calls, ``nn.Sequential`` chains and ``nn.TransformerEncoder``
  /``Decoder`` built from it (``fed_to``); data that a ``forward`` no file of
  the project calls was given comes from outside and leaves the decision to
  the project's own calls (``never_called``);
- a module default a constructor parameter leaves is judged by what the
  constructions pass (``default_for``, ``made_for``, ``handed_to``).
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Dict, List, Optional, Set

import libcst as cst

from ..tree import self_attribute as _self_attr

from ..program.callgraph import bind_call
from ..flow import ClassInfo, lookup
from ..bound import Bound
from ..classes import class_run
from ..reach import members_of
from ..bound import passed
from ...core.torch_api import module_spec
from . import project_callers
from .calls import MODULE_OUTPUT_ARG, real
from .domain import Layout, positional
from ..splats import expand_call
from ..masks.names import string_key
from ..values import literal
from .program import DEFAULT, LAYER_INPUTS, REACH_DEPTH, REACH_HOPS, site_spec


class ProjectLayout:
    """Mixed into ``LayoutEvaluator`` with ``ProgramLayout``: ``eval``, ``at``,
    ``output_of``, ``keeps_layout``, ``container_layers``, ``sequential_slots``,
    ``method_of``, ``flow``, ``resolver`` come from them."""

    _targets: Dict[int, Optional[project_callers.Target]]
    _foreign_layers: Optional[list] = None
    path: Optional[str]
    hops: int
    session: Dict[tuple, object]

    # ------------------------------------------------------------ other files
    def _target(self, node, env, scope) -> Optional[project_callers.Target]:
        """The class of another project file an expression names (an import)."""
        if self.path is None or self.hops <= 0:
            return None
        self._index()
        key = id(node)
        if key not in self._targets:
            try:
                self._targets[key] = project_callers.imported_class(self.path, node, env, scope)
            except RecursionError:  # pragma: no cover
                self._targets[key] = None
        return self._targets[key]

    def held_targets(self, node, env, scope) -> Optional[List[project_callers.Target]]:
        """The classes of other project files whose instance ``node`` holds."""
        if self.path is None or self.hops <= 0:
            return None

        def leaf(call: cst.Call, cenv, cscope):
            named = class_run(call.func, cenv, cscope)
            target = self._target(named, cenv, cscope)
            if target is None:  # a function of another file that builds one of its classes
                return project_callers.factory_classes(self.path, named, cenv, cscope)
            return [target]

        leaf.targets = True  # what a parameter handed a target answers (_through)
        leaf.foreign = self._foreign_members
        try:
            return self.resolver.held(node, env, scope, leaf)
        except RecursionError:  # pragma: no cover
            return None

    def _foreign_members(
        self, value, attr: str, env, scope
    ) -> Optional[List[project_callers.Target]]:
        """The classes whose instances the container ``<value>.<attr>`` holds,
        ``value`` an instance of a class of another project file (probe AN's
        AN01: ``for blk in self.transformer.resblocks`` in the tower's file,
        the blocks built in ``Transformer.__init__`` of layers.py), read by
        that file's evaluator: its own classes, and those it imports."""
        holders = self.held_targets(value, env, scope)
        if not holders:
            return None
        out: List[project_callers.Target] = []
        for path, name in holders:
            there = self._unit(path)
            info = there.classes.get(name) if there is not None else None
            if info is None:
                return None
            ev = self.other(there, self.hops - 1)
            got = ev.own_members(info, attr)
            if not got:
                return None
            out.extend(got)
        return out

    def own_members(self, info: ClassInfo, attr: str) -> Optional[List[project_callers.Target]]:
        """The classes of the project whose instances the container attribute
        ``attr`` of ``info``, a class of this file, holds: this file's
        classes and those it imports (asked by another file's
        ``_foreign_members``)."""
        res = self.resolver

        def leaf(call: cst.Call, cenv, cscope):
            named = class_run(call.func, cenv, cscope)
            own = res.local_class(named, cenv, cscope)
            if own is not None:
                return [(self.path, own.name)] if own.scope is self.flow.module_scope else None
            target = self._target(named, cenv, cscope) if self.hops > 0 else None
            return [target] if target is not None else None

        leaf.targets = True
        try:
            return members_of(res, info, attr, leaf)
        except RecursionError:  # pragma: no cover
            return None

    def other(self, there, hops: int):
        """The evaluator of another file, made once per analysis of the linted
        file (``session``): an answer never depends on what an earlier file's
        analysis asked."""
        key = (there.path, hops, self.session.get(DEFAULT))
        found = self.session.get(key)
        if found is None or found.ctx is not there.ctx:
            # (a file read again since, when more files were read than are kept:
            # its classes are new objects, the old evaluator's would not match them)
            found = self.session[key] = type(self)(there.ctx, hops=hops, session=self.session)
        return found

    def _unit(self, path: str):
        """Another project file, read once, and a dependency of the linted
        file's cached findings from now on (an edit of it re-analyses)."""
        project = self.session.get(("project",))
        if project is not None and hasattr(project, "depend"):
            project.depend(path)
        return project_callers.unit(path)

    def _foreign(self, target: project_callers.Target, hops: Optional[int] = None):
        """(the other file's evaluator, the class's ``forward``), or None."""
        there = self._unit(target[0])
        if there is None or target[1] not in there.classes:
            return None
        ev = self.other(there, self.hops - 1 if hops is None else hops)
        forward = ev.method_of(there.classes[target[1]], "forward")
        return (ev, forward) if forward is not None else None

    def foreign_output(self, target, layout: Optional[Layout], index=None) -> Optional[Layout]:
        found = self._foreign(target)
        if found is None:
            return None
        ev, forward = found
        out = ev.output_of(forward, layout, 0, index)
        if out is None or layout is None:
            return ev.export(out)
        if out.node is layout.node and out.origin == layout.origin:
            return real(out)  # the caller's own evidence, passed through: not that file's
        return ev.export(out)

    def _foreign_reaches(self, target, depth: int) -> bool:
        """Whether the class's ``forward`` reaches an attention module (looked
        for up to ``REACH_DEPTH`` calls away, whatever the hops left)."""
        if depth > REACH_DEPTH:
            return False
        found = self._foreign(target, REACH_HOPS)
        return found is not None and found[0]._function_reaches(found[1], depth)

    def handed_to(self, site, spec) -> Optional[List[Optional[Layout]]]:
        """A module built right inside the call that builds a class of another
        project file (``Layer(cross_attention=nn.MultiheadAttention(...))``):
        what that class feeds it, at each call of the attribute its
        ``__init__`` keeps the parameter in (``self.cross_attn =
        cross_attention``, or ``cross_attention or nn.MultiheadAttention(...)``).
        None when it is not so handed, or no such call is found."""
        parents = site.parents
        if len(parents) < 2 or not isinstance(parents[-1], cst.Arg):
            return None
        arg, call = parents[-1], parents[-2]
        if not isinstance(call, cst.Call) or arg.star or arg.value is not site.node:
            return None
        target = self._target(call.func, site.env, site.scope)
        if target is None:
            return None
        there = self._unit(target[0])
        if there is None or target[1] not in there.classes:
            return None
        cls = there.classes[target[1]]
        param = _param_for(cls.methods.get("__init__"), call, arg)
        if param is None:
            return None
        held = {
            name for name, defs in cls.attrs.items() if any(_keeps(d.node, param) for d in defs)
        }
        if not held:
            return None
        ev = self.other(there, self.hops - 1)
        return [ev.export(v) for v in ev.attr_calls(cls, held, spec)] or None

    def made_for(self, site, spec) -> Optional[List[Optional[Layout]]]:
        """A module a function of this file builds and returns (``def
        build_attn(d): return nn.MultiheadAttention(d, 8)``), called from
        other project files: what the calls of the attribute each caller keeps
        it in feed it (any other use: unknown).  None when not built so, or
        no caller is found."""
        scope, stmt = site.scope, site.stmt
        owner = scope.cls  # a method of a mixin or base class (probe AC's FA01), or None
        if (
            self.path is None
            or self.hops <= 0
            or not isinstance(scope.node, cst.FunctionDef)
            or (owner is None and scope.parent is not self.flow.module_scope)
            or (owner is not None and owner.scope is not self.flow.module_scope)
        ):
            return None
        if not (isinstance(stmt, cst.Return) and stmt.value is site.node) and not _returned_item(
            site
        ):
            spec = self._returned_container(site)  # the layer of an encoder returned
            if spec is None:
                return None
        name = scope.node.name.value
        out: List[Optional[Layout]] = []
        files = project_callers.factory_files(self.path, owner.name if owner else name, name)
        for other in files or ():
            there = self._unit(other)
            if there is None:
                return None
            ev = self.other(there, self.hops - 1)
            key = _dict_key(site)  # the module a ModuleDict keeps under that key
            if owner is not None:  # ``self.attn = self._make_attention(d, h)`` in a subclass
                calls = project_callers.method_calls(there, self.path, owner.name, name)
            else:
                calls = project_callers.factory_calls(there, self.path, name)
            for cls, attr in calls:
                kept = ev.attr_calls(cls, {attr}, spec, key) if cls is not None else [None]
                out.extend(ev.export(v) for v in kept)
        return out or None

    def _returned_container(self, site):
        """The spec of the ``nn.TransformerEncoder``/``Decoder`` the function
        of ``site`` returns built from the layer ``site`` builds (``layer =
        nn.TransformerDecoderLayer(...)`` then ``return
        nn.TransformerDecoder(layer, n)``, or the layer written inline): the
        container's calls feed the layer, which keeps the layout. Else None."""
        ret = None
        for stmt in site.scope.node.body.body:
            if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Return):
                ret = stmt.body[0]
        call = ret.value if ret is not None else None
        there = self.resolver.site_of.get(id(call)) if isinstance(call, cst.Call) else None
        if there is None:
            return None
        spec = module_spec(self.qualname(call.func, there.env, there.scope))
        if spec is None or spec.name not in LAYER_INPUTS:
            return None
        layer = Bound(call, spec.init).get(spec.init.names[0])
        if isinstance(layer, cst.Name):
            defs = lookup(layer.value, there.env, there.scope)
            if len(defs) == 1 and defs[0].kind == "assign":
                layer = defs[0].node
        return spec if layer is site.node else None

    def default_for(self, site, spec) -> Optional[List[Optional[Layout]]]:
        """A module built as the default of a parameter an ``__init__`` keeps
        (``self.self_attn = self_attention or nn.MultiheadAttention(...)``):
        it runs at every call of that attribute when the parameter is left
        out, so what those calls feed it.  None when not built so."""
        stmt = site.stmt
        if (
            site.or_default_of is None
            or not isinstance(stmt, cst.Assign)
            or len(stmt.targets) != 1
            or stmt.value is not site.parents[-1]
        ):
            return None
        target = stmt.targets[0].target
        cls = site.scope.cls
        if (
            cls is None
            or not isinstance(target, cst.Attribute)
            or not isinstance(target.value, cst.Name)
            or target.value.value != "self"
        ):
            return None
        with self.judging(site):
            return self.attr_calls(cls, {target.attr.value}, spec) or None

    @contextlib.contextmanager
    def judging(self, site):
        """While the module built at ``site`` is judged: when it is the default
        of an ``__init__`` parameter (``param or nn.MultiheadAttention(...)``),
        only the instances of its class built without a module for that
        parameter run it (SAM 3's layer: one construction hands it attention
        modules, one leaves them out); the calls that reach it through the
        others are left out (``_through``)."""
        default = site.init_default
        if self.path is None or default is None:
            yield
            return
        before = self.session.get(DEFAULT)
        self.session[DEFAULT] = ((self.path, site.scope.cls.name),) + default
        try:
            yield
        finally:
            self.session[DEFAULT] = before

    def attr_calls(self, cls, held: Set[str], spec, key=None) -> List[Optional[Layout]]:
        """The layout of the query (``src``, ``tgt``: the input its output
        takes the shape of) at each call ``self.<attr>(...)`` of the class
        ``cls`` of this file, for the attributes ``held``, which hold a
        module of ``spec``; with ``key`` (a ModuleDict's), not the calls of
        an item under another string key."""
        arg = MODULE_OUTPUT_ARG.get(spec.name, "query")
        by_node: Dict[int, List[Optional[Layout]]] = {}
        for other in self.flow.calls:
            if other.scope.cls is not cls or _held_attr(other) not in held:
                continue
            func = other.node.func  # ``self.mixers["spatial"](...)``: that key's member
            if key is not None and isinstance(func, cst.Subscript):
                if string_key(func) not in (None, key):
                    continue
            marks = self._marks()  # a module of ``spec`` runs there, whatever the resolver knows
            for given in other.node.args:
                if not given.star and id(given.value) not in marks:
                    self._mark(given.value, other.env, other.scope)
            query = Bound(other.node, spec.forward).get(arg)
            got = self.at(query, other) if query is not None else None
            by_node.setdefault(id(other.node), []).append(got)
        # a call in a loop is walked twice, the second time with what the loop
        # body made (``x = layer(x)``: a module this file cannot resolve, so
        # unknown); a pass that knows the layout speaks for the call
        out: List[Optional[Layout]] = []
        for got in by_node.values():
            known = [g for g in got if real(g) is not None]
            out.extend(known or got[:1])
        return out

    def export(self, layout: Optional[Layout]) -> Optional[Layout]:
        """A layout as another file sees it: its evidence keeps this file's
        name, line and code (``origin``)."""
        if layout is None or not layout.roles or layout.origin is not None or self.path is None:
            return real(layout)
        line = self.line(layout.node) if layout.node is not None else None
        origin = (self.path, line, self.text(layout.node))
        return dataclasses.replace(layout, origin=origin)

    def _forward_class(self, func: cst.FunctionDef) -> Optional[ClassInfo]:
        return next(
            (
                c
                for c in self.flow.classes.values()
                if c.scope is self.flow.module_scope and c.methods.get(func.name.value) is func
            ),
            None,
        )

    def project_inputs(self, func: cst.FunctionDef, name: str) -> List[Optional[Layout]]:
        """What the other files of the project feed ``name``, a parameter of
        the ``forward`` of a module-level class of this file (the data, or
        what is added to it: ``query_pos``), or of another public method of
        it that they call on an instance they hold (sstr's
        ``self.struct_decoder.encode(src, mask)``)."""
        method = func.name.value
        if self.path is None or self.hops <= 0 or method.startswith("_"):
            return []
        cls = self._forward_class(func)
        p = func.params
        names = [q.name.value for q in list(p.posonly_params) + list(p.params)]
        if cls is None or name not in names[1:]:
            return []
        wanted = None if names[1] == name else name
        out: List[Optional[Layout]] = []
        # the class, and its subclasses of this file that inherit this forward
        # (``class LayerA(_Layer)`` building the ``self.attn`` _Layer calls)
        owners = [cls] + [
            info
            for info in self.flow.classes.values()
            if info is not cls
            and cls in self.resolver.base_classes(info)[1:]
            and self.resolver.method_of(info, method) is func
            and info.scope is not None
            and info.scope.parent is None
        ]
        for owner in owners:
            files = project_callers.candidates(self.path, owner.name)
            if files is None:
                return []  # too many files name the class: not read, as before issue 26
            for holder in self._holders(owner):  # ``for blk in self.transformer.resblocks``
                more = project_callers.candidates(self.path, holder) or ()
                files += [f for f in more if f not in files]
            for other in list(files):  # and those that call a factory returning it
                for factory in project_callers.factories_of(other, owner.name):
                    more = project_callers.factory_files(other, factory) or ()
                    files += [f for f in more if f not in files and f != self.path]
            target = (self.path, owner.name)
            for other in files:
                there = self._unit(other)
                if there is not None:
                    ev = self.other(there, self.hops - 1)
                    out.extend(ev.export(v) for v in ev.fed_to(target, wanted, method))
        return out

    def _holders(self, owner: ClassInfo) -> List[str]:
        """The module-level classes of this file whose methods build ``owner``
        (``Transformer.__init__`` filling ``self.resblocks`` with blocks):
        a file that names one may reach into its instance's attributes and
        call the blocks there."""
        out: List[str] = []
        for site in self.resolver.constructions(owner):
            cls = site.scope.cls if site.scope is not None else None
            if cls is not None and cls is not owner and cls.scope is self.flow.module_scope:
                if cls.name not in out:
                    out.append(cls.name)
        return out

    def fed_to(
        self, target, name: Optional[str] = None, method="forward"
    ) -> List[Optional[Layout]]:
        """The layouts this file feeds the ``forward`` of ``target``, a class
        of another file: at each call of an instance of it, and in each
        ``nn.Sequential`` it is a member of.  ``name``: a parameter other than
        the first (only calls pass it; a ``Sequential`` passes the first).
        ``method``: another method, called on an instance (``held.encode(x)``)."""
        out: List[Optional[Layout]] = []
        if method == "forward":
            out.extend(self._layers_of_torch_containers(target, name))
        for site in self.flow.calls:
            func = site.node.func
            if isinstance(func, cst.Attribute) and func.attr.value == method:
                func = func.value
            elif method != "forward":
                continue
            if not isinstance(func, (cst.Name, cst.Attribute, cst.Subscript)):
                continue
            if method != "forward":
                held = self.held_targets(func, site.env, site.scope)
                if held and target in held:
                    first = self._method_input(site.node, target, name, method)
                    out.append(self.at(first, site) if first is not None else None)
                continue
            held = self.held_targets(func, site.env, site.scope)
            if held:
                if target in held:
                    # a call that may run one of several classes feeds this one what it
                    # feeds each (3DETR's ``self.encoder = self.configure_encoder()``)
                    first = self._input(site.node, target, name)
                    got = self.at(first, site) if first is not None else None
                    if got is None and self._from_outside(first, site, target):
                        continue  # data from outside the project: the project's calls decide
                    out.append(got)
                continue
            slots = self.sequential_slots(site.node, site.env, site.scope) if name is None else None
            if slots and any(self._is_member(m, target) for s in slots for m in s.members):
                start = self.at(site.node.args[0].value, site)
                self._walk(slots, start, 0, target, out, True)
                continue
            owner = self._target(site.node.func, site.env, site.scope)
            if owner is not None and owner != target:
                for arg in site.node.args:
                    if not arg.star and target in (
                        self.held_targets(arg.value, site.env, site.scope) or ()
                    ):
                        out.extend(self._through(owner, site.node, arg, target, name))
        return out

    def _from_outside(self, expr, site, target) -> bool:
        """``expr`` is the data a ``forward`` that no file of the project calls
        was given (a class built from a registry or by the package's users),
        passed on unchanged or as the output of ``target`` itself (``x =
        blk(x)`` in a loop over the blocks): its layout is the outside
        caller's, which the project cannot state either way."""
        if not isinstance(expr, cst.Name):
            return False
        defs = lookup(expr.value, site.env, site.scope)
        params = [d for d in defs if d.kind == "param"]
        if len(params) != 1 or not isinstance(params[0].extra, cst.FunctionDef):
            return False
        for d in defs:
            if d.kind in ("assign", "unpack") and isinstance(d.node, cst.Call):
                func = d.node.func
                if isinstance(func, (cst.Name, cst.Attribute, cst.Subscript)):
                    if target in (self.held_targets(func, d.env, d.scope) or ()):
                        continue
            if d is not params[0]:
                return False
        return self.never_called(params[0].extra, expr.value)

    def never_called(self, func: cst.FunctionDef, name: str) -> bool:
        """``func`` is the ``forward`` of a module-level class of this file
        that nothing in the project calls or runs (the data it is given for
        ``name`` comes from outside the project)."""
        if func.name.value != "forward" or self.path is None or self.hops <= 0:
            return False
        asked = self.__dict__.setdefault("_never_called", {})  # a loop asks it per call
        key = (id(func), name)
        if key not in asked:
            cls = self._forward_class(func)
            asked[key] = not (
                self.callers().get(id(func))
                or self.torch_layer_inputs(func, name)
                or cls is None
                or project_callers.candidates(self.path, cls.name) is None
                or self.project_inputs(func, name)
            )
        return asked[key]

    def _method_input(self, call: cst.Call, target, name: Optional[str], method: str):
        """What a call of ``method`` of an instance of ``target`` passes for its
        first parameter (``name`` None) or for ``name``; None when it cannot
        be bound."""
        there = self._unit(target[0])
        if there is None or target[1] not in there.classes:
            return None
        ev = self.other(there, 0)
        func = ev.method_of(there.classes[target[1]], method)
        if func is None:
            return None
        params = func.params.params
        wanted = name if name is not None else (params[1].name.value if len(params) > 1 else None)
        return bind_call(func, call, 1).get(wanted) if wanted is not None else None

    def _input(self, call: cst.Call, target, name: Optional[str]) -> Optional[cst.BaseExpression]:
        """What a call of an instance of ``target`` passes for a parameter of
        its ``forward``: for the first (``name`` None), the first positional
        argument or the keyword of that name (``layer(tgt=x, memory=m)``);
        otherwise the argument bound to ``name`` (None when not passed)."""
        args = positional(call)
        if name is None and args:
            return args[0]
        found = self._foreign(target, 0)
        if found is None:
            return None
        if name is not None:
            return bind_call(found[1], call, 1).get(name)
        params = found[1].params.params
        first = params[1].name.value if len(params) > 1 else None
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == first:
                return arg.value
        return None

    def _through(
        self, owner, call: cst.Call, arg: cst.Arg, target, name: Optional[str] = None
    ) -> List[Optional[Layout]]:
        """An instance of ``target`` handed to the construction of ``owner``, a
        class of another project file (``Encoder(layer=Layer(...))``, or a name
        that holds one): what ``owner`` feeds it there, where its ``__init__``
        keeps the parameter (``self.layers = _get_clones(layer, n)``) and its
        methods call what it keeps.  The other file is read with that
        parameter known to hold the instance, and only while it is read."""
        there = self._unit(owner[0])
        if there is None or owner[1] not in there.classes or self.hops <= 0:
            return []
        if _hands_the_default(self.session.get(DEFAULT), target, arg.value, self, call):
            return []  # this instance never runs the default being judged
        init = there.classes[owner[1]].methods.get("__init__")
        param = _param_for(init, call, arg)
        if param is None:
            return []
        ev = self.other(there, self.hops - 1)
        key = (id(init), param)
        if key in ev.resolver.assumed:
            return []  # already being read: a cycle of constructions

        def given(leaf):
            return [target] if getattr(leaf, "targets", False) else None

        ev.resolver.assumed[key] = given
        try:
            return [ev.export(v) for v in ev.fed_to(target, name)]
        finally:
            del ev.resolver.assumed[key]

    def _layers_of_torch_containers(self, target, name=None) -> List[Optional[Layout]]:
        """What this file's ``nn.TransformerEncoder``/``Decoder`` calls feed
        ``name`` (None: the first parameter) of ``target``, a layer class of
        another file they were built from (``nn.TransformerEncoder(Layer(...),
        n)``): the call's ``src``/``tgt`` while the layer keeps the layout, else
        unknown; a decoder's ``memory`` as given."""
        out: List[Optional[Layout]] = []
        for site, kind, targets in self._foreign_layer_sites():
            if target not in targets:
                continue
            found = self._foreign(target)
            index = 0
            if name is not None:
                params = found[1].params if found is not None else None
                names = [q.name.value for q in params.params] if params is not None else []
                index = names.index(name) - 1 if name in names[1:] else len(LAYER_INPUTS[kind])
                if index >= len(LAYER_INPUTS[kind]):
                    continue  # a parameter the container does not feed
            arg = LAYER_INPUTS[kind][index]
            call = expand_call(site.node, site.env, site.scope)
            given = Bound(call, site_spec(kind)).get(arg)
            got = self.at(given, site) if given is not None else self._spread(site, kind, arg)
            if got is not None and index == 0:
                if found is None or not found[0].keeps_layout(found[1], got):
                    got = None
            out.append(got)
        return out

    def _foreign_layer_sites(self) -> list:
        """The containers of ``container_layers`` built from classes of other
        project files, with those classes."""
        if self._foreign_layers is None:
            self._foreign_layers = []
            for site, kind, layers in self.container_layers():
                targets: Set[project_callers.Target] = set()
                for layer, env, scope in layers:
                    targets.update(self.held_targets(layer, env, scope) or ())
                if targets:
                    self._foreign_layers.append((site, kind, targets))
        return self._foreign_layers


def _hands_the_default(unless, target, value, ev, site_call) -> bool:
    """``value`` builds ``target`` handing a module for the parameter whose
    default is being judged (``unless``: (class, parameter, its index)):
    ``Layer(..., self_attention=nn.MultiheadAttention(...))``, or a name
    assigned only that."""
    if unless is None or unless[0] != target:
        return False
    if isinstance(value, cst.Name):
        site = ev.resolver.site_of.get(id(site_call))
        defs = lookup(value.value, site.env, site.scope) if site is not None else ()
        if len(defs) != 1 or defs[0].kind != "assign":
            return False
        value = defs[0].node
    if not isinstance(value, cst.Call) or any(arg.star for arg in value.args):
        return False
    given = passed(value, unless[2], unless[1])
    return isinstance(given, cst.Call) and _builds_a_class(given.func)


def _builds_a_class(func) -> bool:
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
    return isinstance(name, str) and name[:1].isupper()


def _param_for(init, call: cst.Call, arg: cst.Arg) -> Optional[str]:
    """The parameter of ``init`` (an ``__init__``, or None) that ``arg`` of the
    construction ``call`` fills, by keyword or position; None when none."""
    if not isinstance(init, cst.FunctionDef):
        return None
    params = [q.name.value for q in list(init.params.posonly_params) + list(init.params.params)]
    if arg.keyword is not None:
        names = params[1:] + [q.name.value for q in init.params.kwonly_params]
        return arg.keyword.value if arg.keyword.value in names else None
    index = [a for a in call.args if a.keyword is None].index(arg)
    return params[1 + index] if index < len(params) - 1 else None


def _keeps(node, param: str) -> bool:
    """An ``__init__`` assignment that keeps the parameter ``param``:
    ``param``, or ``param or <default module>``."""
    if isinstance(node, cst.Name):
        return node.value == param
    if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.Or):
        return isinstance(node.left, cst.Name) and node.left.value == param
    return False


def _returned_item(site) -> bool:
    """The module built at ``site`` is an item of the container its function
    returns: ``return nn.ModuleList([nn.MultiheadAttention(...) for _ in
    range(n)])``, or ``layers.append(nn.MultiheadAttention(...))`` then
    ``return layers`` (SASRec's stack, built in a helper of another file)."""
    stmt, returns = site.stmt, site.scope.returns
    if isinstance(stmt, cst.Return) and stmt.value is not None:
        return project_callers.in_container(site, stmt.value)
    parents = site.parents
    if len(parents) < 2 or not isinstance(parents[-1], cst.Arg):
        return False
    call = parents[-2]
    if not (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "append"
        and isinstance(call.func.value, cst.Name)
    ):
        return False
    kept = call.func.value.value
    return len(returns) == 1 and getattr(returns[0][0], "value", None) == kept


def _dict_key(site) -> Optional[str]:
    """The string key of the ``{key: <site>}`` entry that holds the
    construction at ``site`` (``nn.ModuleDict({"spatial": nn.MultiheadAttention(...)})``)."""
    for node in reversed(site.parents):
        if isinstance(node, cst.DictElement):
            key = literal(node.key)
            return key if isinstance(key, str) else None
    return None


def _held_attr(site) -> Optional[str]:
    """The attribute a call runs: ``self.<attr>(...)``, an item
    ``self.<attr>[i](...)``, or ``layer(...)`` in ``for layer in self.<attr>:``
    (also over ``enumerate(self.<attr>)``, and one of ``zip(self.<attr>,
    ...)``'s)."""
    func = site.node.func
    if isinstance(func, cst.Subscript):
        return _self_attr(func.value)
    if not isinstance(func, cst.Name):
        return _self_attr(func)
    defs = lookup(func.value, site.env, site.scope)
    if len(defs) != 1 or defs[0].kind != "for":
        return None
    it, index = defs[0].node, defs[0].index
    if index == (1,) and isinstance(it, cst.Call) and getattr(it.func, "value", "") == "enumerate":
        it, index = (it.args[0].value if it.args else None), ()
    elif len(index) == 1 and isinstance(it, cst.Call) and getattr(it.func, "value", "") == "zip":
        at = index[0]  # ``for attn, norm in zip(self.blocks, self.norms)``
        it, index = (it.args[at].value if at < len(it.args) else None), ()
    return _self_attr(it) if index == () else None
