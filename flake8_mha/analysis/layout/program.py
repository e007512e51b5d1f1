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

from typing import Dict, List, Optional, Set

import libcst as cst

from ..program.callgraph import SWAP, Built, ChainSite, Slot, TorchMember
from ..program.swap_modules import swaps_first_axes
from ..events import narrowed
from ..flow import ClassInfo, DefKind, lookup
from ..tree import walk
from ..bound import Bound
from ..splats import expand_call
from ..values import unpacked
from ...core.torch_api import MODULES
from . import project_callers
from ..masks.names import last_name
from .comments import RESHAPES
from .calls import CONCAT, MODULE_OUTPUT_ARG, Frame, fed_alone, join, real, same, shaped
from .domain import (
    BATCH,
    CHANNEL,
    EMBED,
    PRESERVE_METHODS,
    PRESERVE_MODULES,
    SEQ,
    Layout,
    positional,
)

SWAP_HOW = "axis swap before the module call"
ROTATION_HOW = "channels-first map made sequence-first before the module call"
# what torch's containers feed the first and second parameters of their layers
LAYER_INPUTS = {"TransformerEncoder": ("src",), "TransformerDecoder": ("tgt", "memory")}
_ONE_INPUT = {"TransformerEncoder", "TransformerEncoderLayer"}  # called with ``src`` alone
REACH_DEPTH = 4
REACH_HOPS = 2  # the hops a reach question is asked with: enough to name a class
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
    _containers: Optional[list] = None
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
            self._containers = None
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
                func = site.node.func
                if self._is_module_call(site.node, site.env, site.scope) or (
                    isinstance(func, cst.Name) and narrowed(site, func, self.resolver)
                ):  # ``if isinstance(layer, nn.MultiheadAttention): layer(x, x, x)``
                    for arg in site.node.args:
                        if not arg.star:
                            self._mark(arg.value, site.env, site.scope)
        return self._swap_marks

    def _mark(self, expr, env, scope, depth: int = 0) -> None:
        expr = _kept_owner(expr)  # ``x.transpose(0, 1).contiguous()``: the swap
        owner = _cast_owner(expr)
        if isinstance(owner, cst.Name):  # ``self.enc(x.float())``: what ``x`` is
            expr = owner
        if isinstance(expr, cst.Call):
            self._swap_marks.add(id(expr))
            if depth < _STEPS:  # ``x = self.basic_feature(x)``: the swap it ends with
                self._mark_returned(expr, env, scope, depth + 1)
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
        elif isinstance(expr, cst.Subscript) and depth < _STEPS:
            self._mark(expr.value, env, scope, depth + 1)  # ``self.attn(x[:1], x, x)``
        elif (
            isinstance(expr, cst.BinaryOperation)
            and isinstance(expr.operator, (cst.Add, cst.Subtract, cst.Multiply))
            and depth < _STEPS
        ):  # ``self.encoder(x + pos)``: the data is the left operand, as in a local's
            self._mark(expr.left, env, scope, depth + 1)
        elif isinstance(expr, cst.Name):
            defs = _uncarried(expr.value, lookup(expr.value, env, scope))
            if len(defs) == 1 and defs[0].kind == "unpack" and depth < _STEPS:
                el = unpacked(defs[0])  # ``q, k, v = q.permute(1, 0, 2), k.permute(...), ...``
                if el is not None:
                    self._mark(el, defs[0].env, defs[0].scope, depth + 1)
                return
            if len(defs) == 1 and defs[0].kind == "assign":
                value = defs[0].node  # one local assignment, or a chain of per-token steps
                if isinstance(value, cst.Name) and depth < _STEPS:  # ``output = x``
                    self._mark(value, defs[0].env, defs[0].scope, depth + 1)
                    return
                owner = _cast_owner(value)
                if isinstance(owner, cst.Name) and depth < _STEPS:
                    # ``window = window.float().to(device)`` after ``window = x.permute(1, 0, 2)``
                    self._mark(owner, defs[0].env, defs[0].scope, depth + 1)
                    return
                if isinstance(value, cst.BinaryOperation) and depth < _STEPS:
                    value = value.left  # ``self.project(x) * math.sqrt(d)``
                    if isinstance(value, cst.Name):  # ``x = x + pos`` after ``x = x.permute(...)``
                        self._mark(value, defs[0].env, defs[0].scope, depth + 1)
                        return
                value = _kept_owner(value)
                if isinstance(value, cst.Call):
                    self._swap_marks.add(id(value))
                    if depth < _STEPS:
                        self._mark_returned(value, defs[0].env, defs[0].scope, depth + 1)
                    inner = fed_alone(value)
                    if inner is not None and depth < _STEPS:
                        self._mark(inner, defs[0].env, defs[0].scope, depth + 1)
                    seq = value.args[0].value if value.args and not value.args[0].star else None
                    if (
                        isinstance(seq, (cst.List, cst.Tuple))
                        and depth < _STEPS
                        and _along_first(value)
                        and self.qualname(value.func, defs[0].env, defs[0].scope) in CONCAT
                    ):  # ``x = torch.cat([cls, x], dim=0)`` after ``x = x.permute(1, 0, 2)``
                        for el in seq.elements:
                            if not isinstance(el, cst.StarredElement):
                                self._mark(el.value, defs[0].env, defs[0].scope, depth + 1)

    def _mark_returned(self, call: cst.Call, env, scope, depth: int) -> None:
        """A helper of this file whose one return is the data it last swaps
        (flood-forecast's ``basic_feature``: ``x = self.pe(self.dense(x)); x =
        x.permute(1, 0, 2); return x``): that swap is fed where the call is."""
        try:
            found = self.callee(call, env, scope)
        except RecursionError:  # pragma: no cover
            return
        fscope = self.flow.functions.get(id(found[0])) if found is not None else None
        if fscope is None or len(fscope.returns) != 1:
            return
        ret, renv = fscope.returns[0]
        if isinstance(ret, cst.Name):
            defs = lookup(ret.value, renv, fscope)
            if len(defs) != 1 or defs[0].kind != "assign":
                return
            ret = defs[0].node
        ret = _kept_owner(ret)
        if isinstance(ret, cst.Call) and isinstance(ret.func, cst.Attribute):
            if ret.func.attr.value in ("permute", "transpose", "swapaxes", "swapdims"):
                self._swap_marks.add(id(ret))

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
        if self._may_hold_torch(func, env, scope):
            return True
        targets = self.held_targets(func, env, scope)
        return bool(targets) and all(self._foreign_reaches(t, 0) for t in targets)

    def _may_hold_torch(self, func, env, scope) -> bool:
        """``self.deep`` that one branch of ``__init__`` sets to a torch attention
        module and another to what the caller hands in (shiba's deep stack):
        a call of it may run the module."""
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
            return False
        owner = self.resolver.self_class(func, env, scope)
        defs = owner.attrs.get(func.attr.value, ()) if owner is not None else ()
        return len(defs) > 1 and any(
            d.kind == "assign"
            and isinstance(d.node, cst.Call)
            and self.resolver.common_spec(self.resolver.instances(d.node, d.env, d.scope))
            is not None
            for d in defs
        )

    def _call_reaches(self, call: cst.Call, env, scope, depth: int) -> bool:
        if depth > REACH_DEPTH:
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
            if (
                self.resolver.common_spec(instances) is not None
                or (instances is None and self._may_hold_module(func_expr, site))
                or self._helper_reaches(site, depth)
            ):
                got = True
                break
            if isinstance(func_expr, (cst.Name, cst.Attribute, cst.Subscript)):
                # ``for layer in self.layers: layer(x)`` over another file's class
                targets = self.held_targets(func_expr, site.env, site.scope)
                if targets and all(self._foreign_reaches(t, depth + 1) for t in targets):
                    got = True
                    break
        self._reaches[key] = got
        return got

    def _may_hold_module(self, func, site) -> bool:
        """``self.<attr>`` that one of its assignments in the class sets to an
        attention module, directly or as a branch of a conditional expression,
        beside other kinds (cn-clip's ``nn.MultiheadAttention(d, h) if not
        flash else FlashMHA(d, h)``): where it runs the module, it is fed this."""
        if not isinstance(func, cst.Attribute):
            return False
        defs = self.resolver.self_attr_defs(func, site.env, site.scope)
        for d in defs or ():
            stack = [d.node] if d.kind == DefKind.ASSIGN else []
            while stack:
                node = stack.pop()
                if isinstance(node, cst.IfExp):
                    stack.extend((node.body, node.orelse))
                elif isinstance(node, cst.Call) and self.resolver.torch_leaf(node, d.env, d.scope):
                    return True
        return False

    def _helper_reaches(self, site, depth: int) -> bool:
        found = self.callee(site.node, site.env, site.scope)
        if found is not None:
            return self._function_reaches(found[0], depth + 1) if depth < REACH_DEPTH else False
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

    def module_output(
        self, call: cst.Call, env, scope, frame, depth, index=None
    ) -> Optional[Layout]:
        """What a call of an ``nn.Sequential`` of known members, or of a module
        of another file of the project, gives back; with ``index``, the
        element ``index`` of the tuple it returns (``x, attn = layer(x)``)."""
        slots = self.sequential_slots(call, env, scope)
        if slots is not None and index is not None:
            return None
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
        if slots is not None:
            return self._walk(slots, start, depth, None, [], False) if start is not None else None
        # fed what the code does not state, the class may still state what it gives back
        return self.foreign_output(targets[0], start, index)

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
            if spec is not None and spec.name in LAYER_INPUTS:  # the layer torch repeats
                if Bound(call, spec.init).get(spec.init.names[0]) is site.node:
                    built.add(id(call))
        self._index()
        if self._sequentials is None:
            self._sequentials = self._sequential_calls()
        fed: List[Optional[Layout]] = []
        for seq, slots in self._sequentials:
            if not any(built_at(m, built) for slot in slots for m in slot.members):
                continue
            start = self.at(seq.node.args[0].value, seq) if seq.node.args else None
            got: List[Optional[Layout]] = []
            if start is None:  # ``nn.Sequential(Permute(1, 0, 2), ...)`` of unknown data
                start, slots = self._after_swap(slots)
            if start is not None:
                self._walk(slots, start, 0, frozenset(built), got, True)
            fed.extend(got or [None])  # the layout died before the member: unknown
        return fed or None

    def _after_swap(self, slots: List[Slot]):
        """(the conforming layout, the slots after it) for a ``Sequential``
        whose members start with a module that swaps the first two axes of
        its input (``swap_modules``): data of unknown layout converted to
        the layout the module after it reads; else (None, ``slots``)."""
        for i, slot in enumerate(slots[:_STEPS]):
            calls = [self._swap_call(m) for m in slot.members]
            if slot.members and not slot.repeat and all(calls):
                return Layout((None,) * 3, calls[0], SWAP_HOW, conforms=True), slots[i + 1 :]
            if any(isinstance(m, TorchMember) and m in MODULE_OUTPUT_ARG for m in slot.members):
                break  # the attention module comes first
        return None, slots

    def _swap_call(self, member) -> Optional[cst.Call]:
        """The construction of ``member`` when it is a module that only swaps
        the first two axes (of another file, or ``SWAP``: of this one), else
        None."""
        if isinstance(member, Built):
            target = self._target(member.call.func, member.env, member.scope)
            there = self._unit(target[0]) if target is not None else None
            cls = there.classes.get(target[1]) if there is not None else None
            if cls is not None and swaps_first_axes(cls, member.call):
                return member.call
            return None
        return member.call if isinstance(member, TorchMember) and member == SWAP else None

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
            return built_at(member, func)
        if isinstance(func, tuple):
            return (
                isinstance(member, Built)
                and self._target(member.call.func, member.env, member.scope) == func
            )
        return self._forward(member) is func

    def member_output(self, member, layout: Layout, depth) -> Optional[Layout]:
        """What one member of a container gives back when fed ``layout``."""
        if member == SWAP:
            roles = layout.roles
            return (
                Layout((roles[1], roles[0], roles[2]), member.call, "transpose")
                if len(roles) == 3
                else None
            )
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

    def output_of(
        self, func: cst.FunctionDef, layout: Layout, depth, index=None
    ) -> Optional[Layout]:
        """What ``forward`` returns when its first argument has ``layout``
        (the other parameters keep their defaults); with ``index``, the
        element ``index`` of every tuple it returns."""
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
            returns = shaped(fscope.returns, index)
            if index is not None:
                return join(
                    [self.element(e, env, fscope, inner, depth, index) for e, env in returns]
                )
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
            arg = LAYER_INPUTS[kind][names.index(name) - 1]
            given = Bound(expand_call(site.node, site.env, site.scope), site_spec(kind)).get(arg)
            got = self.at(given, site) if given is not None else self._spread(site, kind, arg)
            if got is not None and names.index(name) == 1 and not self.keeps_layout(func, got):
                got = None  # each layer is fed the layer before's output
            out.append(got)
        return out

    def _spread(self, site, kind: str, arg: str) -> Optional[Layout]:
        """``arg`` of a container's call given all its inputs by one splat of
        a helper's tuple (TranAD's ``self.decoder(*self.encode(src, c, tgt))``
        after ``return tgt, memory``): that element of what the helper returns."""
        args = site.node.args
        if len(args) != 1 or args[0].star != "*":
            return None
        index = site_spec(kind).names.index(arg)
        return real(self.element(args[0].value, site.env, site.scope, None, 0, index))

    def keeps_layout(self, func: cst.FunctionDef, layout: Layout) -> bool:
        """``forward`` gives back what it was fed, axis for axis: read on
        ``layout`` itself, else (for a swap, whose axes have no names, or a
        layout with unnamed axes) on named axes, so that a post-norm layer's
        ``permute(1, 2, 0)``, ``BatchNorm1d``, ``permute(2, 0, 1)`` comes back
        to the axes it left (mvts_transformer)."""
        out = self.output_of(func, layout, 0)
        if out is not None and same(out, layout):
            return True
        if len(layout.roles) != 3:
            return False
        probe = Layout((SEQ, BATCH, EMBED), None, "probe")
        out = self.output_of(func, probe, 0)
        return out is not None and out.roles == probe.roles and not out.conforms

    def _named_calls(self):
        """The calls of this file of a name, attribute or item (``blk(x)``,
        ``self.blocks(x)``, ``self.levels[1](x)``): those that may run a module."""
        for site in self.flow.calls:
            if isinstance(site.node.func, (cst.Name, cst.Attribute, cst.Subscript)):
                yield site

    def container_layers(self) -> list:
        """``(site, kind, [(layer, env, scope), ...])`` for each call of this
        file of an ``nn.TransformerEncoder``/``Decoder``: the layer expression
        each of its constructions was built from, where it is written (read
        once; ``_layer_sites`` and ``across_files`` resolve them)."""
        self._index()
        if self._containers is None:
            self._containers = []
            for site in self._named_calls():
                try:
                    instances = self.resolver.instances(site.node.func, site.env, site.scope)
                except RecursionError:  # pragma: no cover
                    continue
                spec = self.resolver.common_spec(instances)
                if spec is None or spec.name not in LAYER_INPUTS:
                    continue
                layers = []
                for inst in instances:
                    args = inst.init_args()
                    layer = args.get(spec.init.names[0]) if args is not None else None
                    if layer is not None:  # ``cast("TransformerEncoderLayer", layer)``: the layer
                        layer = self.resolver.uncast(layer, inst.ctor.env, inst.ctor.scope)
                        layers.append((layer, inst.ctor.env, inst.ctor.scope))
                self._containers.append((site, spec.name, layers))
        return self._containers

    def _layer_sites(self) -> list:
        """The containers of ``container_layers`` built from classes of this
        file, with the ids of those classes' ``forward``."""
        found = []
        for site, kind, layers in self.container_layers():
            forwards: Set[int] = set()
            for layer, env, scope in layers:
                classes = self.resolver.instance_classes(layer, env, scope)
                if classes is None and isinstance(layer, cst.Name):  # a class on one branch
                    defs = lookup(layer.value, env, scope)
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
                found.append((site, kind, forwards))
        return found


def built_at(member, calls) -> bool:
    return isinstance(member, TorchMember) and id(member.call) in calls


def _kept_owner(expr):
    """The tensor a call that keeps its shape is made on (``x.transpose(0,
    1).contiguous()``, ``.float()``, ``.to(dtype)``: the swap), else ``expr``."""
    while (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in PRESERVE_METHODS
        and isinstance(expr.func.value, cst.Call)
    ):
        expr = expr.func.value
    return expr


def _cast_owner(expr):
    """The tensor a chain of shape-keeping calls is made on (``window.float()
    .to(device)``: ``window``), or None when ``expr`` is no such call."""
    owner = expr
    while (
        isinstance(owner, cst.Call)
        and isinstance(owner.func, cst.Attribute)
        and owner.func.attr.value in PRESERVE_METHODS
    ):
        owner = owner.func.value
    return owner if owner is not expr else None


def _along_first(call: cst.Call) -> bool:
    """``torch.cat(seq, dim=0)`` (or ``0`` by position): tokens joined along the
    axis a swap to sequence-first made the sequence.  A concatenation kept in
    a local along another axis (pypots' CSAI joins round-tripped operands
    along ``dim=1``) is no conversion: its operands are not marked."""
    for i, a in enumerate(call.args):
        named = a.keyword.value if a.keyword is not None else None
        if named in ("dim", "axis") or (named is None and i == 1 and not a.star):
            return isinstance(a.value, cst.Integer) and a.value.value == "0"
    return False


def _uncarried(name: str, defs):
    """The bindings of ``name`` at a call, less those that rebind it from
    itself without moving an axis: a loop's ``output = layer(output)`` (that
    module's output, in the layout it was fed), IPT's ``x =
    self.dropout(self.linear(x)) + x`` under a flag.  What is left, when one
    binding, made the data."""
    if len(defs) < 2:
        return defs
    rest = [d for d in defs if not carries(name, d)]
    return rest if len(rest) == 1 else defs


def carries(name: str, d) -> bool:
    """``d`` rebinds ``name`` from itself without moving an axis
    (``output = layer(output)``, ``x = self.dropout(self.linear(x)) + x``)."""
    return (
        d.kind == "assign"
        and d.node is not None
        and any(isinstance(n, cst.Name) and n.value == name for n in walk(d.node))
        and not any(isinstance(n, cst.Call) and last_name(n.func) in _MOVES for n in walk(d.node))
    )


# the calls that move or merge axes: a rebinding that makes one is no carry
_MOVES = RESHAPES | {"einsum", "t", "mT", "squeeze", "unsqueeze"}
