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

from ..callgraph import ChainSite, Slot
from ..flow import ClassInfo, lookup
from .calls import CYCLE, Frame, join, real
from .domain import PRESERVE_MODULES, Layout

SWAP_HOW = "axis swap before the module call"
_REACH_DEPTH = 4


class ProgramLayout:
    """Mixed into ``LayoutEvaluator``: ``eval``, ``at``, ``callee``,
    ``sequential_slots``, ``method_of``, ``flow``, ``resolver`` come from it."""

    _swap_marks: Optional[Set[int]] = None
    _reaches: Dict[int, bool]

    # ------------------------------------------------------------ swaps
    def swap_layout(self, node: cst.Call, rank: int = 3) -> Optional[Layout]:
        """The conforming layout of a swap of unknown data, when the swap is fed
        to a module call; None otherwise."""
        if id(node) not in self._marks():
            return None
        return Layout((None,) * rank, node, SWAP_HOW, conforms=True)

    def _marks(self) -> Set[int]:
        if self._swap_marks is None:
            self._swap_marks = set()
            self._reaches = {}
            self._calls_in: Dict[int, list] = {}
            for site in self.flow.calls:
                self._calls_in.setdefault(id(site.function), []).append(site)
            for site in self.flow.calls:
                if self._is_module_call(site.node, site.env, site.scope):
                    for arg in site.node.args:
                        if not arg.star:
                            self._mark(arg.value, site.env, site.scope)
        return self._swap_marks

    def _mark(self, expr, env, scope) -> None:
        if isinstance(expr, cst.Call):
            self._swap_marks.add(id(expr))
        elif isinstance(expr, cst.Name):
            defs = lookup(expr.value, env, scope)
            if len(defs) == 1 and defs[0].kind == "assign" and isinstance(defs[0].node, cst.Call):
                self._swap_marks.add(id(defs[0].node))  # one local assignment

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
        return self._call_reaches(call, env, scope, 0)

    def _call_reaches(self, call: cst.Call, env, scope, depth: int) -> bool:
        if depth > _REACH_DEPTH:
            return False
        found = self.callee(call, env, scope)
        funcs: List[cst.FunctionDef] = []
        if found is not None:
            if found[1] != 1:
                return False  # a plain function or static method: not a module
            funcs.append(found[0])
        else:
            for slot in self.sequential_slots(call, env, scope) or ():
                for member in slot.members:
                    forward = (
                        self.method_of(member, "forward") if isinstance(member, ClassInfo) else None
                    )
                    if forward is not None:
                        funcs.append(forward)
        return any(self._function_reaches(f, depth) for f in funcs)

    def _function_reaches(self, func: cst.FunctionDef, depth: int) -> bool:
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
        start = self._chain_start(chained.site, depth)
        if start is None:
            return None
        fed: List[Optional[Layout]] = []
        self._walk(chained.slots, start, depth, func, fed)
        return join(fed) if fed else None

    def chain_output(self, call: cst.Call, env, scope, frame, depth) -> Optional[Layout]:
        """What a call of an ``nn.Sequential`` of known members gives back."""
        slots = self.sequential_slots(call, env, scope)
        if slots is None:
            return None
        start = real(self.eval(call.args[0].value, env, scope, frame, depth))
        if start is None:
            return None
        return self._walk(slots, start, depth, None, [])

    def _chain_start(self, site, depth) -> Optional[Layout]:
        return self.at(site.node.args[0].value, site)

    def _walk(self, slots: List[Slot], layout, depth, func, fed) -> Optional[Layout]:
        """Run the members on ``layout`` in order; collect in ``fed`` what
        ``func`` is given where the member before it feeds it."""
        first = True
        for slot in slots:
            if layout is None:
                if func is not None and (not first or slot.repeat):
                    if any(self._forward(m) is func for m in slot.members):
                        fed.append(None)
                return None
            if func is not None and (not first or slot.repeat):
                if any(self._forward(m) is func for m in slot.members):
                    fed.append(layout)
            outs = [self.member_output(m, layout, depth) for m in slot.members]
            out = join(outs)
            if slot.repeat:
                # any number of times: only a member that keeps the layout keeps it known
                layout = layout if out is not None and out.roles == layout.roles else None
                if out is CYCLE:
                    layout = None
            else:
                layout = real(out)
            first = False
        return layout

    def _forward(self, member) -> Optional[cst.FunctionDef]:
        return self.method_of(member, "forward") if isinstance(member, ClassInfo) else None

    def member_output(self, member, layout: Layout, depth) -> Optional[Layout]:
        """What one member of a container gives back when fed ``layout``."""
        if isinstance(member, str):
            return layout if member in PRESERVE_MODULES else None
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
            return join([self.eval(e, env, fscope, inner, depth) for e, env in fscope.returns])
        finally:
            self._active.discard(guard)
