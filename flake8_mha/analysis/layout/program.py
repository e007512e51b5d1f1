"""Layout across the module calls of one file: containers, module outputs, swaps.

A part of ``LayoutEvaluator`` (evaluate.py), kept apart so each stays small:

- an ``nn.Sequential`` of the file's module classes (``callgraph.Slot``) feeds
  its argument to the first member and each member's output to the next; the
  layout a member is fed, and the layout the container gives back, are
  computed by running the members' ``forward`` on the layout itself;
- an axis swap (``x.permute(1, 0, 2)``, ``x.transpose(0, 1)``,
  ``rearrange(x, "x y z -> y x z")``) of data whose layout the file never
  states, fed straight (or through one local assignment) to a module call, is
  the conversion to the layout that module reads (docs/evidence.md): a
  ``Layout`` with ``conforms`` set, which the rules read as the module's own
  layout.  Such a swap never makes a mismatch (MHA010).
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Dict, List, Optional, Set

import libcst as cst

from ..program.callgraph import Built, ChainSite, Slot, TorchMember, bind_call
from ..flow import ClassInfo, lookup
from ..resolve import Bound, passed
from ...core.torch_api import MODULES
from . import project_callers
from .calls import CONCAT, MODULE_OUTPUT_ARG, Frame, fed_alone, join, real, same, shaped
from .domain import BATCH, CHANNEL, PRESERVE_MODULES, SEQ, Layout, positional

SWAP_HOW = "axis swap before the module call"
ROTATION_HOW = "channels-first map made sequence-first before the module call"
# what torch's containers feed the first and second parameters of their layers
_LAYER_INPUTS = {"TransformerEncoder": ("src",), "TransformerDecoder": ("tgt", "memory")}
_ONE_INPUT = {"TransformerEncoder", "TransformerEncoderLayer"}  # called with ``src`` alone
_REACH_DEPTH = 4
_REACH_HOPS = 2  # the hops a reach question is asked with: enough to name a class
_STEPS = 4  # per-token steps (``x = self.pos_enc(x)``) a swap is followed through


# the session's key for the module default being judged (``default_for``)
DEFAULT = ("default",)


def site_spec(kind: str):
    """The torch spec of a container by its class name."""
    return next(spec for spec in MODULES.values() if spec.name == kind).forward


class ProgramLayout:
    """Mixed into ``LayoutEvaluator``: ``eval``, ``at``, ``callee``,
    ``sequential_slots``, ``method_of``, ``flow``, ``resolver`` come from it."""

    _swap_marks: Optional[Set[int]] = None
    _reaches: Dict[int, bool]
    _calls_in: Optional[Dict[int, list]] = None
    _torch_layers: Optional[list] = None
    _targets: Dict[int, Optional[project_callers.Target]]
    path: Optional[str] = None  # the file, when it is one of a project on disk
    hops: int = 0  # how many more files away the analysis may look
    session: Dict[tuple, object]  # (file, hops) -> evaluator, for one linted file

    # ------------------------------------------------------------ swaps
    def swap_layout(self, node: cst.Call, rank: int = 3) -> Optional[Layout]:
        """The conforming layout of a swap of unknown data, when the swap is fed
        to a module call; None otherwise."""
        if id(node) not in self._marks():
            return None
        return Layout((None,) * rank, node, SWAP_HOW, conforms=True)

    def rotation_layout(self, node: cst.Call) -> Optional[Layout]:
        """``x.permute(2, 0, 1)`` of unknown data fed to a module call: the
        ``(N, C, L)`` map it must have been, made sequence-first ``(L, N, C)``
        (asteroid's DPTNet); None when not fed to one."""
        if id(node) not in self._marks():
            return None
        return Layout((SEQ, BATCH, CHANNEL), node, ROTATION_HOW)

    def _index(self) -> None:
        if getattr(self, "_calls_in", None) is None:
            self._torch_layers = None
            self._sequentials = None
            self._reaches = {}
            self._targets = {}
            self._calls_in = {}
            for site in self.flow.calls:
                self._calls_in.setdefault(id(site.function), []).append(site)

    def _marks(self) -> Set[int]:
        if self._swap_marks is None:
            self._index()
            self._swap_marks = set()
            for site in self.flow.calls:
                if self._is_module_call(site.node, site.env, site.scope):
                    for arg in site.node.args:
                        if not arg.star:
                            self._mark(arg.value, site.env, site.scope)
        return self._swap_marks

    def _mark(self, expr, env, scope, depth: int = 0) -> None:
        if isinstance(expr, cst.Call):
            self._swap_marks.add(id(expr))
            inner = fed_alone(expr)
            if inner is not None and depth < _STEPS:  # ``self.pos_enc(x)``: what it is fed
                self._mark(inner, env, scope, depth + 1)
            seq = expr.args[0].value if expr.args and not expr.args[0].star else None
            if (
                isinstance(seq, (cst.List, cst.Tuple))
                and self.qualname(expr.func, env, scope) in CONCAT
            ):
                for el in seq.elements:  # each operand of ``torch.cat((a.permute(...), ...))``
                    if not isinstance(el, cst.StarredElement):
                        self._mark(el.value, env, scope)
        elif isinstance(expr, cst.Name):
            defs = lookup(expr.value, env, scope)
            if len(defs) == 1 and defs[0].kind == "assign":
                value = defs[0].node  # one local assignment, or a chain of per-token steps
                if isinstance(value, cst.BinaryOperation) and depth < _STEPS:
                    value = value.left  # ``self.project(x) * math.sqrt(d)``
                if isinstance(value, cst.Call):  # (a concatenation's operands count only passed)
                    self._swap_marks.add(id(value))
                    inner = fed_alone(value)
                    if inner is not None and depth < _STEPS:
                        self._mark(inner, defs[0].env, defs[0].scope, depth + 1)

    def _is_module_call(self, call: cst.Call, env, scope) -> bool:
        """A call of an attention module, or of a module of this file (or an
        ``nn.Sequential`` of them) whose ``forward`` reaches one."""
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "forward":
            func = func.value
        if not isinstance(func, (cst.Name, cst.Attribute, cst.Subscript)):
            return False
        try:
            if self.resolver.common_spec(self.resolver.instances(func, env, scope)) is not None:
                return True
        except RecursionError:  # pragma: no cover
            return False
        if self._call_reaches(call, env, scope, 0):
            return True
        targets = self.held_targets(func, env, scope)
        return bool(targets) and all(self._foreign_reaches(t, 0) for t in targets)

    def _call_reaches(self, call: cst.Call, env, scope, depth: int) -> bool:
        if depth > _REACH_DEPTH:
            return False
        found = self.callee(call, env, scope)
        funcs: List[cst.FunctionDef] = []
        if found is not None:
            if found[1] != 1 or found[0].name.value != "forward":
                return False  # a function or another method: not a module's call
            funcs.append(found[0])
        else:
            for slot in self.sequential_slots(call, env, scope) or ():
                for member in slot.members:
                    forward = self._forward(member)
                    if forward is not None:
                        funcs.append(forward)
                    elif isinstance(member, Built):
                        target = self._target(member.call.func, member.env, member.scope)
                        if target is not None and self._foreign_reaches(target, depth + 1):
                            return True
        return any(self._function_reaches(f, depth) for f in funcs)

    def _function_reaches(self, func: cst.FunctionDef, depth: int) -> bool:
        self._index()
        key = id(func)
        if key in self._reaches:
            return self._reaches[key]
        self._reaches[key] = False  # cycle guard
        got = False
        for site in self._calls_in.get(key, ()):
            func_expr = site.node.func
            try:
                instances = (
                    self.resolver.instances(func_expr, site.env, site.scope)
                    if isinstance(func_expr, (cst.Name, cst.Attribute, cst.Subscript))
                    else None
                )
            except RecursionError:  # pragma: no cover
                instances = None
            if self.resolver.common_spec(instances) is not None or self._helper_reaches(
                site, depth
            ):
                got = True
                break
        self._reaches[key] = got
        return got

    def _helper_reaches(self, site, depth: int) -> bool:
        found = self.callee(site.node, site.env, site.scope)
        if found is not None:
            return self._function_reaches(found[0], depth + 1) if depth < _REACH_DEPTH else False
        return self._call_reaches(site.node, site.env, site.scope, depth + 1)

    # ------------------------------------------------------------ nn.Sequential
    def chain_input(self, chained: ChainSite, func: cst.FunctionDef, depth) -> Optional[Layout]:
        """The layout the member whose ``forward`` is ``func`` is fed by the
        member before it, at one call of an ``nn.Sequential``."""
        start = self.at(chained.site.node.args[0].value, chained.site)
        if start is None:
            return None
        fed: List[Optional[Layout]] = []
        self._walk(chained.slots, start, depth, func, fed, False)
        return join(fed) if fed else None

    def module_output(self, call: cst.Call, env, scope, frame, depth) -> Optional[Layout]:
        """What a call of an ``nn.Sequential`` of known members, or of a module
        of another file of the project, gives back."""
        slots = self.sequential_slots(call, env, scope)
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "forward":
            func = func.value
        targets = None
        if slots is None and isinstance(func, (cst.Name, cst.Attribute, cst.Subscript)):
            targets = self.held_targets(func, env, scope)
            if not targets or len(set(targets)) != 1:
                return None
        if slots is None and targets is None:
            return None
        if slots is not None:
            args = positional(call)
            first = args[0] if args else None
        else:
            first = self._input(call, targets[0], None)
        if first is None:
            return None
        start = real(self.eval(first, env, scope, frame, depth))
        if start is None:
            return None
        if slots is not None:
            return self._walk(slots, start, depth, None, [], False)
        return self.foreign_output(targets[0], start)

    def _walk(self, slots: List[Slot], layout, depth, func, fed, first_too) -> Optional[Layout]:
        """Run the members on ``layout`` in order; collect in ``fed`` what
        ``func`` (a ``forward`` of this file, or a class of another file) is
        given where the member before it feeds it (and at the first place
        too when ``first_too``)."""
        first = True
        for slot in slots:
            if func is not None and (first_too or not first or slot.repeat):
                if any(self._is_member(m, func) for m in slot.members):
                    fed.append(layout)
            if layout is None:
                return None
            out = join([self.member_output(m, layout, depth) for m in slot.members])
            if slot.repeat:
                # any number of times: only a member that keeps the layout keeps it known
                layout = layout if out is not None and same(out, layout) else None
            else:
                layout = real(out)
            first = False
        return layout

    def fed_in_sequential(self, site) -> Optional[List[Optional[Layout]]]:
        """A torch module built as a member of an ``nn.Sequential`` of this
        file, or as the layer of a ``TransformerEncoder`` that is one: what
        each call of the ``Sequential`` feeds it (the output of the members
        before it).  None when it is no member of one that is called."""
        built = {id(site.node)}
        parents = site.parents
        if (
            len(parents) >= 2
            and isinstance(parents[-1], cst.Arg)
            and isinstance(parents[-2], cst.Call)
        ):
            call = parents[-2]
            spec = MODULES.get(self.qualname(call.func, site.env, site.scope) or "")
            if spec is not None and spec.name in _LAYER_INPUTS:  # the layer torch repeats
                if Bound(call, spec.init).get(spec.init.names[0]) is site.node:
                    built.add(id(call))
        self._index()
        if self._sequentials is None:
            self._sequentials = self._sequential_calls()
        fed: List[Optional[Layout]] = []
        for seq, slots in self._sequentials:
            if not any(_built_at(m, built) for slot in slots for m in slot.members):
                continue
            start = self.at(seq.node.args[0].value, seq)
            got: List[Optional[Layout]] = []
            if start is not None:
                self._walk(slots, start, 0, frozenset(built), got, True)
            fed.extend(got or [None])  # the layout died before the member: unknown
        return fed or None

    def _sequential_calls(self) -> list:
        """The calls of this file that run an ``nn.Sequential`` holding a
        torch attention module, with its members."""
        found = []
        for site in self._named_calls():
            try:
                slots = self.sequential_slots(site.node, site.env, site.scope)
            except RecursionError:  # pragma: no cover
                continue
            if slots and any(
                isinstance(m, TorchMember) and m in MODULE_OUTPUT_ARG
                for slot in slots
                for m in slot.members
            ):
                found.append((site, slots))
        return found

    def _forward(self, member) -> Optional[cst.FunctionDef]:
        return self.method_of(member, "forward") if isinstance(member, ClassInfo) else None

    def _is_member(self, member, func) -> bool:
        if isinstance(func, frozenset):  # the torch modules built by these calls
            return _built_at(member, func)
        if isinstance(func, tuple):
            return (
                isinstance(member, Built)
                and self._target(member.call.func, member.env, member.scope) == func
            )
        return self._forward(member) is func

    def member_output(self, member, layout: Layout, depth) -> Optional[Layout]:
        """What one member of a container gives back when fed ``layout``."""
        if isinstance(member, str):
            # an encoder (layer) gives back its ``src``'s shape
            return layout if member in PRESERVE_MODULES or member in _ONE_INPUT else None
        if isinstance(member, Built):
            target = self._target(member.call.func, member.env, member.scope)
            return self.foreign_output(target, layout) if target is not None else None
        forward = self._forward(member)
        if forward is None:
            return None
        return self.output_of(forward, layout, depth)

    def output_of(self, func: cst.FunctionDef, layout: Layout, depth) -> Optional[Layout]:
        """What ``forward`` returns when its first argument has ``layout``
        (the other parameters keep their defaults)."""
        fscope = self.flow.functions.get(id(func))
        p = func.params
        names = [q.name.value for q in list(p.posonly_params) + list(p.params)]
        if fscope is None or not fscope.returns or len(names) < 2:
            return None
        guard = ("output", id(func))
        if guard in self._active:
            return None
        self._active.add(guard)
        try:
            inner = Frame(func, fscope, {names[1]: layout}, None, None, None)
            returns = shaped(fscope.returns, None)
            return join([self.eval(e, env, fscope, inner, depth) for e, env in returns])
        finally:
            self._active.discard(guard)

    # ------------------------------------------------------------ torch's containers
    def torch_layer_inputs(self, func: cst.FunctionDef, name: str) -> List[Optional[Layout]]:
        """What ``nn.TransformerEncoder``/``Decoder`` calls of this file feed
        ``name`` of ``func``, the ``forward`` of a class of this file they were
        built from: torch runs each layer on the one before's output, so the
        first parameter is the call's ``src``/``tgt`` (the second a decoder's
        ``memory``) while the layer keeps the layout."""
        self._index()
        if self._torch_layers is None:
            self._torch_layers = self._layer_sites()
        names = [q.name.value for q in list(func.params.posonly_params) + list(func.params.params)]
        out: List[Optional[Layout]] = []
        for site, kind, forwards in self._torch_layers:
            if id(func) not in forwards or name not in names[1:3]:
                continue
            arg = _LAYER_INPUTS[kind][names.index(name) - 1]
            given = Bound(site.node, site_spec(kind)).get(arg)
            got = self.at(given, site) if given is not None else None
            if got is not None and names.index(name) == 1:
                out_layout = self.output_of(func, got, 0)  # fed the layer before's output
                got = got if out_layout is not None and same(out_layout, got) else None
            out.append(got)
        return out

    def _named_calls(self):
        """The calls of this file of a name, attribute or item (``blk(x)``,
        ``self.blocks(x)``, ``self.levels[1](x)``): those that may run a module."""
        for site in self.flow.calls:
            if isinstance(site.node.func, (cst.Name, cst.Attribute, cst.Subscript)):
                yield site

    def _layer_sites(self) -> list:
        found = []
        for site in self._named_calls():
            func = site.node.func
            try:
                instances = self.resolver.instances(func, site.env, site.scope)
            except RecursionError:  # pragma: no cover
                continue
            spec = self.resolver.common_spec(instances)
            if spec is None or spec.name not in _LAYER_INPUTS:
                continue
            forwards: Set[int] = set()
            for inst in instances:
                args = inst.init_args()
                layer = args.get(spec.init.names[0]) if args is not None else None
                if layer is None:
                    continue
                classes = self.resolver.instance_classes(layer, inst.ctor.env, inst.ctor.scope)
                if classes is None and isinstance(layer, cst.Name):  # a class on one branch
                    defs = lookup(layer.value, inst.ctor.env, inst.ctor.scope)
                    got = [
                        self.resolver.local_class(d.node.func, d.env, d.scope)
                        for d in defs
                        if isinstance(d.node, cst.Call)
                    ]
                    classes = [c for c in got if c is not None]
                for cls in classes or ():
                    forward = self.method_of(cls, "forward")
                    if forward is not None:
                        forwards.add(id(forward))
            if forwards:
                found.append((site, spec.name, forwards))
        return found

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
            target = self._target(call.func, cenv, cscope)
            return [target] if target is not None else None

        leaf.targets = True  # what a parameter handed a target answers (_through)
        try:
            return self.resolver.held(node, env, scope, leaf)
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

    def foreign_output(self, target, layout: Layout) -> Optional[Layout]:
        found = self._foreign(target)
        if found is None:
            return None
        ev, forward = found
        return ev.export(ev.output_of(forward, layout, 0))

    def _foreign_reaches(self, target, depth: int) -> bool:
        """Whether the class's ``forward`` reaches an attention module (looked
        for up to ``_REACH_DEPTH`` calls away, whatever the hops left)."""
        if depth > _REACH_DEPTH:
            return False
        found = self._foreign(target, _REACH_HOPS)
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
        if (
            self.path is None
            or self.hops <= 0
            or scope.cls is not None
            or scope.parent is not self.flow.module_scope
            or not isinstance(scope.node, cst.FunctionDef)
            or not isinstance(stmt, cst.Return)
            or stmt.value is not site.node
        ):
            return None
        name = scope.node.name.value
        out: List[Optional[Layout]] = []
        for other in project_callers.factory_files(self.path, name) or ():
            there = self._unit(other)
            if there is None:
                return None
            ev = self.other(there, self.hops - 1)
            for cls, attr in project_callers.factory_calls(there, self.path, name):
                kept = ev.attr_calls(cls, {attr}, spec) if cls is not None else [None]
                out.extend(ev.export(v) for v in kept)
        return out or None

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

    def attr_calls(self, cls, held: Set[str], spec) -> List[Optional[Layout]]:
        """The layout of the query (``src``, ``tgt``: the input its output
        takes the shape of) at each call ``self.<attr>(...)`` of the class
        ``cls`` of this file, for the attributes ``held``, which hold a
        module of ``spec``."""
        arg = MODULE_OUTPUT_ARG.get(spec.name, "query")
        out: List[Optional[Layout]] = []
        for other in self.flow.calls:
            func = other.node.func
            if not (
                isinstance(func, cst.Attribute)
                and isinstance(func.value, cst.Name)
                and func.value.value == "self"
                and func.attr.value in held
                and other.scope.cls is cls
            ):
                continue
            marks = self._marks()  # a module of ``spec`` runs there, whatever the resolver knows
            for given in other.node.args:
                if not given.star and id(given.value) not in marks:
                    self._mark(given.value, other.env, other.scope)
            query = Bound(other.node, spec.forward).get(arg)
            out.append(self.at(query, other) if query is not None else None)
        return out

    def export(self, layout: Optional[Layout]) -> Optional[Layout]:
        """A layout as another file sees it: its evidence keeps this file's
        name, line and code (``origin``)."""
        if layout is None or not layout.roles or layout.origin is not None or self.path is None:
            return real(layout)
        line = self.line(layout.node) if layout.node is not None else None
        origin = (self.path, line, self.text(layout.node))
        return dataclasses.replace(layout, origin=origin)

    def project_inputs(self, func: cst.FunctionDef, name: str) -> List[Optional[Layout]]:
        """What the other files of the project feed ``name``, a parameter of
        the ``forward`` of a module-level class of this file (the data, or
        what is added to it: ``query_pos``)."""
        if self.path is None or self.hops <= 0 or func.name.value != "forward":
            return []
        cls = next(
            (
                c
                for c in self.flow.classes.values()
                if c.scope is self.flow.module_scope and c.methods.get("forward") is func
            ),
            None,
        )
        p = func.params
        names = [q.name.value for q in list(p.posonly_params) + list(p.params)]
        if cls is None or name not in names[1:]:
            return []
        wanted = None if names[1] == name else name
        target = (self.path, cls.name)
        out: List[Optional[Layout]] = []
        files = project_callers.candidates(self.path, cls.name)
        if files is None:
            return []  # too many files name the class: not read, as before issue 26
        for other in files:
            there = self._unit(other)
            if there is not None:
                ev = self.other(there, self.hops - 1)
                out.extend(ev.export(v) for v in ev.fed_to(target, wanted))
        return out

    def fed_to(self, target, name: Optional[str] = None) -> List[Optional[Layout]]:
        """The layouts this file feeds the ``forward`` of ``target``, a class
        of another file: at each call of an instance of it, and in each
        ``nn.Sequential`` it is a member of.  ``name``: a parameter other than
        the first (only calls pass it; a ``Sequential`` passes the first)."""
        out: List[Optional[Layout]] = []
        for site in self.flow.calls:
            func = site.node.func
            if isinstance(func, cst.Attribute) and func.attr.value == "forward":
                func = func.value
            if not isinstance(func, (cst.Name, cst.Attribute, cst.Subscript)):
                continue
            held = self.held_targets(func, site.env, site.scope)
            if held:
                if target in held:
                    first = self._input(site.node, target, name)
                    same_class = all(t == target for t in held)
                    out.append(self.at(first, site) if first is not None and same_class else None)
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


def _built_at(member, calls) -> bool:
    return isinstance(member, TorchMember) and id(member.call) in calls


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
