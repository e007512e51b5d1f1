"""Following a tensor's layout through the code of one file (one flow pass).

The evaluator mirrors the mask evaluator's reach (locals, ``self.<attr>``,
helpers with their arguments bound, the callers of a function) through the
shared ``callgraph``; what calls do to the axes is ``calls.py``.
"""

from __future__ import annotations

from typing import Dict, Optional

import libcst as cst

from ..program.callgraph import ChainSite, FileCalls, bind_call, frame_for
from ..flow import CallSite, Def, Scope, lookup, scope_appends
from ..tree import is_none, walk
from ..values import live_lookup, unpacked
from .calls import CYCLE, MODULE_OUTPUT_ARG, LayoutCalls, join, meet, real
from ..masks.names import last_name, string_key
from ..splats import item, spread_index
from .comments import CommentIndex, DocLine
from .lambdas import anchored, mapped
from .domain import (
    BATCH,
    MAX_CALLER_DEPTH,
    MAX_DEPTH,
    SEQ,
    SPATIAL,
    Layout,
)
from .across_files import ProjectLayout
from .program import DEFAULT, ProgramLayout, carries
from .project_callers import MAX_HOPS

_IN_PLACE = (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign, cst.DivideAssign)


class LayoutEvaluator(FileCalls, LayoutCalls, ProgramLayout, ProjectLayout):
    def __init__(self, ctx, hops: int = MAX_HOPS, session: Optional[dict] = None):
        self.ctx = ctx
        # the file on disk (a Project's), whose project the analysis may read
        project = getattr(ctx, "project", None)
        self.path = getattr(project, "path", None) if getattr(project, "files", True) else None
        self.hops = hops if self.path is not None else 0
        # the linted file's project: the other files read become its findings' dependencies
        self.session = {("project",): project} if session is None else session
        self.flow = ctx.flow
        self.resolver = ctx.resolver
        self.module = ctx.module
        self.comments = CommentIndex(ctx.module)
        self._cache: Dict[tuple, Optional[Layout]] = {}
        self._active: set = set()
        self._caller_depth = 0
        self._positions = None

    # ---------------------------------------------------------------- helpers
    def line(self, node: Optional[cst.CSTNode]) -> Optional[int]:
        if node is None:
            return None
        from ...core.positions import line_of

        if isinstance(node, DocLine):
            at = line_of(self.module, node.doc)
            return at + node.offset if at is not None else None
        return line_of(self.module, node)

    def text(self, node: Optional[cst.CSTNode]) -> str:
        if node is None:
            return ""
        if isinstance(node, (cst.Comment, DocLine)):
            code = node.value
        else:
            try:
                code = self.module.code_for_node(node)
            except Exception:  # pragma: no cover - defensive
                return "?"
        code = " ".join(code.split())
        return code if len(code) <= 80 else code[:77] + "..."

    def qualname(self, node, env, scope) -> Optional[str]:
        try:
            return self.resolver.qualname(node, env, scope)
        except RecursionError:  # pragma: no cover
            return None

    # ---------------------------------------------------------------- entry
    def at(self, expr: cst.BaseExpression, site: CallSite) -> Optional[Layout]:
        """The layout of ``expr`` as the call at ``site`` receives it."""
        got = real(self.eval(expr, site.env, site.scope, None, 0))
        if (got is None or got.conforms) and isinstance(expr, cst.Name):
            # ``out = attn(x, x, x)  # x: (L, N, E)``: a comment says more than a swap
            stated = self.comments.named(site.stmt, expr.value)
            defs = lookup(expr.value, site.env, site.scope)
            if stated is None and got is None and defs and all(d.kind == "param" for d in defs):
                # a comment at the top of the function speaks of the parameter as it came in
                stated = self._function_comment(site.scope, expr.value)
            got = stated or got
        return got

    def eval(self, node, env, scope, frame, depth) -> Optional[Layout]:
        if depth > MAX_DEPTH:
            return None
        try:
            return self._eval(node, env, scope, frame, depth + 1)
        except RecursionError:  # pragma: no cover
            return None

    def _eval(self, node, env, scope, frame, depth) -> Optional[Layout]:
        t = type(node)
        if t is cst.Name:
            return self._name(node, env, scope, frame, depth)
        if t is cst.Attribute:
            return self._attribute(node, env, scope, frame, depth)
        if t is cst.Call:
            return self._call(node, env, scope, frame, depth, None)
        if t is cst.BinaryOperation:
            return self._binop(node, env, scope, frame, depth)
        if t is cst.Subscript:
            return self._subscript(node, env, scope, frame, depth)
        if t is cst.IfExp:
            taken = self._none_test(node.test, env, scope, frame, depth)
            if taken is not None:
                return self.eval(node.body if taken else node.orelse, env, scope, frame, depth)
            return join(
                [
                    self.eval(node.body, env, scope, frame, depth),
                    self.eval(node.orelse, env, scope, frame, depth),
                ]
            )
        if t is cst.NamedExpr:
            return self.eval(node.value, env, scope, frame, depth)
        return None

    def _none_test(self, test, env, scope, frame, depth) -> Optional[bool]:
        """``pos is None`` / ``pos is not None`` when ``pos`` has a known layout:
        it is a tensor on every path, so the test's outcome is known
        (``tensor if pos is None else tensor + pos``, DETR's ``with_pos_embed``)."""
        if not (
            isinstance(test, cst.Comparison)
            and len(test.comparisons) == 1
            and isinstance(test.left, cst.Name)
            and isinstance(test.comparisons[0].comparator, cst.Name)
            and test.comparisons[0].comparator.value == "None"
        ):
            return None
        op = test.comparisons[0].operator
        if not isinstance(op, (cst.Is, cst.IsNot)):
            return None
        if real(self.eval(test.left, env, scope, frame, depth)) is None:
            return None
        return isinstance(op, cst.IsNot)

    # ---------------------------------------------------------------- names
    def _name(self, node: cst.Name, env, scope, frame, depth) -> Optional[Layout]:
        defs = live_lookup(node.value, env, scope)  # not what a branch never taken made
        if not defs:
            return None
        if len(defs) > 1:  # ``ret = out, None`` on one branch, ``ret = out``: read whole, ``out``
            defs = [d for d in defs if not _tuple_assign(d)] or defs
        values = []
        for d in defs:
            value = self._def(d, frame, depth)
            if value is None and len(defs) > 1:
                # ``bs = x.shape[1]`` where only this definition of x reaches: it
                # speaks of this one (SAM 3's prompts, joined later with others)
                value = self._unpacking(node.value, [d], scope)
            if value is None and len(defs) > 1 and _layer_output(node.value, d):
                # a loop's ``output = layer(output, mask)``, the layer's return
                # unknown: its output, in the layout it was fed (the other
                # bindings say; spanet's GTrXL returns a GRU block's output)
                value = CYCLE
            values.append(value)
        got = join(values)
        known = real(got)
        if known is None or (
            not known.conforms and known.batch_first is None and not known.unbatched
        ):
            # ``bsz, max_len, _ = x.size()`` after ``x = self.subsample(...)``
            # whose output says no batch axis: the names say more
            unpack = self._unpacking(node.value, defs, scope)
            if unpack is not None:
                return unpack if known is None else (meet(unpack, known) or unpack)
        return got

    def _def(self, d: Def, frame, depth) -> Optional[Layout]:
        frame = frame_for(d.scope, frame)
        key = (id(d), self._caller_depth, self.session.get(DEFAULT))
        if frame is None and key in self._cache:
            return self._cache[key]
        guard = (id(d), id(frame))
        if guard in self._active:
            return CYCLE
        self._active.add(guard)
        try:
            value = self._def_value(d, frame, depth)
        finally:
            self._active.discard(guard)
        if frame is None:
            self._cache[key] = value
        return value

    def _def_value(self, d: Def, frame, depth) -> Optional[Layout]:
        kind = d.kind
        if kind == "assign":
            got = self.eval(d.node, d.env, d.scope, frame, depth)
            if real(got) is not None and not got.conforms:
                stated = self.comments.of_value(d.node)
                if (
                    stated is not None
                    and len(stated.roles) != len(got.roles)
                    and sum(r is not None for r in got.roles) <= 1
                ):
                    # ``input = input.transpose(0, 1)  # shape: [T, N]`` after
                    # ``batch_size = input.size(0)``: the comment states the rank
                    return stated
                return got
            return self.comments.of_value(d.node) or got  # a comment says more than a swap
        if kind == "unpack":
            el = unpacked(d)
            if el is not None:
                return self.eval(el, d.env, d.scope, frame, depth)
            el = mapped(d, self.__dict__.setdefault("_mapped", {}))
            if el is not None:  # ``qt, kt, vt = map(permute, [q, k, v])``: at the ``map``
                return anchored(self.eval(el, d.env, d.scope, frame, depth), el, d.node)
            if d.index == (0,) and isinstance(d.node, cst.Call):
                got = self._call(d.node, d.env, d.scope, frame, depth, 0)
                if real(got) is not None and not got.conforms:
                    return got
                # ``x, lengths = self.subsample(...)  # T x B x C``: the first one's
                return self.comments.of_value(d.node, first=True) or got
            return None
        if kind == "param":
            return self._param(d, frame, depth)
        if kind == "augassign":
            node: cst.AugAssign = d.node
            if isinstance(node.operator, _IN_PLACE) and d.extra:
                return join([self._def(p, frame, depth) for p in d.extra])
            if isinstance(node.target, cst.Attribute) and isinstance(node.operator, _IN_PLACE):
                # ``self.oi /= torch.norm(self.oi, dim=1).unsqueeze(1)``: an operation
                # in place never changes a tensor's shape, so the attribute keeps the
                # layout its other definitions give (release review 39's swarmalator)
                return CYCLE
        return None

    def _unpacking(self, name: str, defs, scope) -> Optional[Layout]:
        """``B, L, D = x.shape`` with the same ``x`` in force: the names say x's layout."""
        for roles, node, env in self.comments.unpackings(scope, name, self.flow):
            then = lookup(name, env, scope)
            if {id(d) for d in then} == {id(d) for d in defs}:
                return Layout(roles, node, "shape unpacking")
        return None

    def _param(self, d: Def, frame, depth) -> Optional[Layout]:
        p: cst.Param = d.node
        name = p.name.value
        func = d.extra
        if frame is not None and frame.func is func:
            arg = frame.args.get(name)
            if arg is None or isinstance(arg, Layout):
                # a member of a container, a module of another file, run on a layout
                return arg if real(arg) is not None else self._stated(p, d) or arg
            got = self.eval(arg, frame.env, frame.scope, frame.parent, depth)
            # what the caller passes, else what the callee states it takes (sstr's
            # ``PositionalEncoding.forward``: ``embedding: (seq_len, batch_size, d_model)``)
            return got if real(got) is not None else self._stated(p, d) or got
        if not isinstance(func, cst.FunctionDef):
            return None
        got = self._from_callers(func, name, depth)
        if real(got) is None:
            stated = self._stated(p, d)
            if stated is not None:
                return stated
        return got

    def _stated(self, p: cst.Param, d: Def) -> Optional[Layout]:
        """The layout a parameter's annotation, comment or docstring entry states."""
        return (
            self.comments.annotation(p)
            or self.comments.param_comment(p)
            or self._function_comment(d.scope, p.name.value)
        )

    def _function_comment(self, scope: Optional[Scope], name: str) -> Optional[Layout]:
        while scope is not None and scope.kind != "function":
            scope = scope.parent
        if scope is None:
            return None
        got = self.comments.function_named(scope.node, name)
        parent = scope.parent
        if got is None and scope.node.name.value == "forward" and parent is not None:
            if parent.kind == "class" and isinstance(parent.node, cst.ClassDef):
                # the class's docstring documents what ``forward`` takes (sstr's
                # ``FragmentEmbedding``: ``peaks: (seq_len, batch_size, d_input)``)
                got = self.comments.function_named(parent.node, name)
        return got

    def _from_callers(self, func, name, depth) -> Optional[Layout]:
        callers = self.callers().get(id(func), [])
        if self._caller_depth >= MAX_CALLER_DEPTH:
            return None
        guard = ("callers", id(func), name)
        if guard in self._active:
            return CYCLE
        self._active.add(guard)
        self._caller_depth += 1
        values = []
        seen = set()
        try:
            for site, skip in callers:
                if (id(site), skip) in seen:
                    continue  # the same call reached twice (a list of one class's blocks)
                seen.add((id(site), skip))
                if isinstance(site, ChainSite):
                    first = [q.name.value for q in func.params.params[skip : skip + 1]]
                    if first != [name]:
                        continue  # the member's other parameters keep their defaults
                    values.append(self.chain_input(site, func, depth))
                    continue
                arg = bind_call(func, site.node, skip).get(name)
                if arg is None:
                    return None
                values.append(self.at(arg, site))
            values.extend(self.torch_layer_inputs(func, name))  # run by nn.TransformerEncoder
            values.extend(self.project_inputs(func, name))  # the project's other files
        finally:
            self._caller_depth -= 1
            self._active.discard(guard)
        if any(v is None for v in values):
            # a caller of unknown layout beside one known: the known one stands
            # on its own (``disagree``), so a module it contradicts is judged by it
            # and an unknown sibling does not hide it (probe O's whisperish)
            known = [
                v
                for v in values
                if v is not None and v is not CYCLE and not v.conforms and v.batch_first is not None
            ]
            if not known:
                return None
            rank = len(known[0].roles)
            return Layout((None,) * rank, None, "some callers unknown", disagree=tuple(known))
        return join(values) if values else None

    # ---------------------------------------------------------------- callers
    # ---------------------------------------------------------------- expressions
    def _attribute(self, node: cst.Attribute, env, scope, frame, depth) -> Optional[Layout]:
        cls = self.resolver.self_class(node, env, scope)
        if cls is not None:
            defs = self.resolver.attr_defs(cls, node.attr.value)
            if not defs:
                return None
            return join([self._def(d, None, depth) for d in defs])
        if node.attr.value == "data":
            return self.eval(node.value, env, scope, frame, depth)
        return None

    def _subscript(self, node: cst.Subscript, env, scope, frame, depth) -> Optional[Layout]:
        sl = node.slice
        if (
            len(sl) == 1
            and isinstance(sl[0].slice, cst.Index)
            and isinstance(sl[0].slice.value, cst.Integer)
            and sl[0].slice.value.value == "0"
            and isinstance(node.value, cst.Call)
        ):
            return self._call(node.value, env, scope, frame, depth, 0)  # attn(q, k, v)[0]
        if (
            len(sl) == 1
            and isinstance(sl[0].slice, cst.Index)
            and isinstance(sl[0].slice.value, cst.Integer)
            and isinstance(node.value, cst.Name)
        ):
            # ``layer_outputs[0]`` after ``layer_outputs = layer(...)``: an element
            # of the tuple a call returns (a tensor's own index gives unknown)
            index = int(sl[0].slice.value.value)
            return self.element(node.value, env, scope, frame, depth, index)
        key, inner = string_key(node), node.value
        if key is not None and isinstance(inner, (cst.Name, cst.Call)):
            # ``enc["encoder_out"]`` of a dict a helper or module returns
            # (fairseq's encoders; probe AI's AI21)
            return self.element(inner, env, scope, frame, depth, key)
        at = spread_index(node)
        key = string_key(inner) if isinstance(inner, cst.Subscript) else None
        if at is not None and key is not None and isinstance(inner.value, (cst.Name, cst.Call)):
            # ``enc["encoder_out"][0]`` of ``{"encoder_out": [x]}`` (fairseq's)
            return self.element(inner.value, env, scope, frame, depth, (key, at))
        if sl and all(isinstance(e.slice, cst.Slice) for e in sl):
            # ``x[:n]``, ``x[1:]``, ``x[:, :k]``: a slice keeps every axis and its role
            return self.eval(node.value, env, scope, frame, depth)
        if len(sl) >= 2 and _ellipsis(sl[0]):
            rest = sl[1:]
            if all(isinstance(e.slice, cst.Slice) for e in rest):
                # ``peaks[..., :-2]``: the features cut, every axis kept
                return self.eval(node.value, env, scope, frame, depth)
            if len(rest) == 2 and _integer(rest[0]) and _none(rest[1]):
                # ``peaks[..., -2, None]``: the last axis one wide (a feature, broadcast)
                inner = real(self.eval(node.value, env, scope, frame, depth))
                if inner is not None and inner.roles:
                    return Layout(
                        inner.roles[:-1] + (None,), inner.node, inner.how, origin=inner.origin
                    )
        return None

    def element(self, expr, env, scope, frame, depth, index: int) -> Optional[Layout]:
        """The layout of element ``index`` of the tuple ``expr`` holds: a tuple
        written out, a call of a helper or module whose every return gives
        one (``return outputs`` after ``outputs = (hidden_states,)``, and any
        ``outputs += (weights,)`` after it), or a name assigned only those.
        Unknown for anything else: indexing a tensor drops an axis."""
        if depth > MAX_DEPTH:
            return None
        if isinstance(expr, cst.Dict) or isinstance(index, (str, tuple)):
            return self._entry(expr, env, scope, frame, depth, index)
        if isinstance(expr, (cst.Tuple, cst.List)):
            items = expr.elements
            if len(items) <= index or any(
                isinstance(e, cst.StarredElement) for e in items[: index + 1]
            ):
                return None
            return self.eval(items[index].value, env, scope, frame, depth + 1)
        if isinstance(expr, cst.Call):
            return self._call(expr, env, scope, frame, depth + 1, index)
        if not isinstance(expr, cst.Name):
            return None
        values: list = []
        todo, seen = list(lookup(expr.value, env, scope)), set()
        while todo:
            d = todo.pop()
            if id(d) in seen:
                continue
            seen.add(id(d))
            if d.kind == "assign" and isinstance(d.node, cst.List) and not d.node.elements:
                # ``feats = []``, then ``feats.append(f)``: each item is one appended
                # (pyiqa's TOPIQ ``token_feat_list[0]``)
                added = scope_appends(d.scope, expr.value)
                if not added or any(a.kind != "assign" for a in added):
                    return None
                for a in added:
                    values.append(
                        self.eval(a.node, a.env, a.scope, frame_for(a.scope, frame), depth + 1)
                    )
            elif d.kind == "assign":
                inner = frame_for(d.scope, frame)
                values.append(self.element(d.node, d.env, d.scope, inner, depth + 1, index))
            elif d.kind == "augassign" and isinstance(d.node.operator, cst.AddAssign) and d.extra:
                todo.extend(d.extra)  # ``outputs += (more,)`` keeps the elements before it
            else:
                return None
        return join(values) if values else None

    def _entry(self, expr, env, scope, frame, depth, key) -> Optional[Layout]:
        """The entry ``key`` (a string) of the dict ``expr`` holds: a dict
        written out (``splats.item``), a name bound once to one, or a call of
        a helper or module whose every return is one; unknown for anything
        else.  ``(key, i)``: the element ``i`` of the list or tuple that entry is."""
        if isinstance(expr, cst.Dict):
            name, at = key if isinstance(key, tuple) else (key, None)
            found = item(expr, name, env, scope)
            if not found:
                return None
            if at is not None:
                return self.element(found[0][0], env, scope, frame, depth + 1, at)
            return self.eval(found[0][0], env, scope, frame, depth + 1)
        if isinstance(expr, cst.Call):
            return self._call(expr, env, scope, frame, depth + 1, key)
        if isinstance(expr, cst.Name):
            defs = lookup(expr.value, env, scope)
            if len(defs) == 1 and defs[0].kind == "assign":
                d = defs[0]
                return self._entry(
                    d.node, d.env, d.scope, frame_for(d.scope, frame), depth + 1, key
                )
        return None

    def _binop(self, node: cst.BinaryOperation, env, scope, frame, depth) -> Optional[Layout]:
        if not isinstance(node.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)):
            return None
        raw_left = self.eval(node.left, env, scope, frame, depth)
        raw_right = self.eval(node.right, env, scope, frame, depth)
        left, right = real(raw_left), real(raw_right)
        if left is None and right is None and CYCLE in (raw_left, raw_right):
            return CYCLE  # ``x = x + self.attention(x)`` in a loop: the other paths say
        if CYCLE in (raw_left, raw_right) and (left or right) is not None:
            return left or right  # ``self.xi = self.xi + dt * self.f()``: the cycle has no say
        if left is None or right is None:
            known = left or right  # residual / broadcast add of a known tensor
            if (
                known is not None
                and not _residual(node, left is not None)
                and not _positions(node, left is not None, env, scope)
                and (
                    None in known.roles
                    or (known.unbatched and not _scalar(node, left is not None, env, scope))
                )
                and not _scalar(node, left is not None, env, scope)
                and BATCH not in known.roles
                and not known.conforms
            ):
                # a table with no batch axis (a positional encoding's (L, 1, E)
                # buffer) added to data of unknown layout says how its author
                # thought of the data, not how it is (flood-forecast adds such a
                # table to batch-first data, then swaps for the encoder); a 2-D
                # table (a learned ``(L, E)`` position) broadcasts over any batch: unknown
                return None
            return known
        if len(left.roles) != len(right.roles):
            return left if len(left.roles) > len(right.roles) else right
        return meet(left, right)


def _layer_output(name: str, d: Def) -> bool:
    """``d`` binds ``name``, in a loop, to a call handed what ``d`` bound on
    the turn before, bare, that moves no axis (``output = layer(output,
    mask)`` in ``for layer in self.layers:``)."""
    call = d.node
    if not isinstance(call, cst.Call) or not carries(name, d):
        return False
    if not any(
        not a.star and isinstance(a.value, cst.Name) and a.value.value == name for a in call.args
    ):
        return False
    body = getattr(d.scope, "node", None)
    return body is not None and any(
        isinstance(loop, (cst.For, cst.While)) and any(n is call for n in walk(loop.body))
        for loop in walk(body)
    )


def _residual(node: cst.BinaryOperation, left_known: bool) -> bool:
    """``x + f(x)``: the operand of unknown layout is made from the known one,
    a name (UniFormer's ``x = x + self.drop_path(self.attention(self.ln_1(x)))``):
    the sum is that data, whatever names its axes."""
    known, other = (node.left, node.right) if left_known else (node.right, node.left)
    return isinstance(known, cst.Name) and any(
        isinstance(n, cst.Name) and n.value == known.value for n in walk(other)
    )


def _positions(node: cst.BinaryOperation, left_known: bool, env, scope) -> bool:
    """The operand of unknown layout is a table of positions, made from an
    ``arange`` there or in a local bound once (streamer's ``x.unsqueeze(1) +
    self.pos_enc(torch.arange(x.shape[0])).unsqueeze(1)``): the known
    operand is the data."""
    other = node.right if left_known else node.left
    for n in walk(other):
        if isinstance(n, cst.Name):
            defs = lookup(n.value, env, scope)
            if len(defs) == 1 and defs[0].kind == "assign" and _arange(defs[0].node):
                return True
        elif _arange(n):
            return True
    return False


def _arange(n) -> bool:
    return isinstance(n, cst.Call) and last_name(n.func) == "arange"


def _scalar(node: cst.BinaryOperation, left_known: bool, env=None, scope=None) -> bool:
    """The other operand is a number written out (``torch.randn(n, d) * 0.02``),
    or a parameter whose default is one (``dt=0.01``)."""
    other = node.right if left_known else node.left
    if isinstance(other, cst.UnaryOperation):
        other = other.expression
    if isinstance(other, cst.Name) and env is not None:
        defs = lookup(other.value, env, scope)
        default = defs[0].node.default if len(defs) == 1 and defs[0].kind == "param" else None
        other = default.expression if isinstance(default, cst.UnaryOperation) else default
    return isinstance(other, (cst.Integer, cst.Float))


def _tuple_assign(d) -> bool:
    """``name = a, b``: a tuple, never the tensor a whole read of the name is."""
    return d.kind == "assign" and isinstance(d.node, cst.Tuple)


__all__ = ["LayoutEvaluator", "join", "MODULE_OUTPUT_ARG", "SEQ", "SPATIAL"]


def _ellipsis(e: cst.SubscriptElement) -> bool:
    return isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Ellipsis)


def _integer(e: cst.SubscriptElement) -> bool:
    v = e.slice.value if isinstance(e.slice, cst.Index) else None
    if isinstance(v, cst.UnaryOperation) and isinstance(v.operator, cst.Minus):
        v = v.expression
    return isinstance(v, cst.Integer)


def _none(e: cst.SubscriptElement) -> bool:
    return isinstance(e.slice, cst.Index) and is_none(e.slice.value)
