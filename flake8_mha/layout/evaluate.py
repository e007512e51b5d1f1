"""Following a tensor's layout through the code of one file (one flow pass).

The evaluator mirrors the mask evaluator's reach (locals, ``self.<attr>``,
helpers with their arguments bound, the callers of a function) but keeps
its own small copy of the call-binding code: the mask analysis is being
split into a package and this module must not lean on its private names.
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import libcst as cst

from ..callgraph import FileCalls, bind_call, frame_for
from ..flow import CallSite, Def, Scope, lookup
from ..values import unpacked
from .comments import CommentIndex
from .domain import (
    BATCH,
    CHANNEL,
    EMBED,
    MAX_CALLER_DEPTH,
    MAX_DEPTH,
    SEQ,
    SPATIAL,
    CONV,
    CTORS,
    PRESERVE_FUNCS,
    PRESERVE_METHODS,
    PRESERVE_MODULES,
    Layout,
    group_role,
    positional,
    useful,
    parse_einops_side,
    roles_of_names,
    transform,
)

_CYCLE = Layout((), None, "cycle")  # met again while being computed: no say in a join
_TRANSFORMS = (
    "transpose",
    "swapaxes",
    "swapdims",
    "permute",
    "movedim",
    "moveaxis",
    "flatten",
    "unflatten",
    "unsqueeze",
    "squeeze",
)
_TORCH_TRANSFORMS = {"torch." + m: m for m in _TRANSFORMS}
_SIZED = ("view", "reshape", "expand", "new_zeros", "new_ones", "new_empty")
_NESTED = {
    "torch.nested.nested_tensor",
    "torch.nested.as_nested_tensor",
    "torch.nested.narrow",
    "torch.nested.nested_tensor_from_jagged",
}
MODULE_OUTPUT_ARG = {  # the input whose shape a module's output has
    "MultiheadAttention": "query",
    "TransformerEncoderLayer": "src",
    "TransformerEncoder": "src",
    "TransformerDecoderLayer": "tgt",
    "TransformerDecoder": "tgt",
    "Transformer": "tgt",
}


def join(values: Sequence[Optional[Layout]]) -> Optional[Layout]:
    """The layout every path gives (roles agree), else unknown; cycles have no say."""
    out: Optional[Layout] = None
    seen = False
    for v in values:
        if v is _CYCLE:
            continue
        if v is None:
            return None
        if out is None:
            out = v
        elif v.roles != out.roles:
            return None
        seen = True
    return out if seen else _CYCLE if values else None


def _real(v: Optional[Layout]) -> Optional[Layout]:
    return None if v is _CYCLE else v


class Frame:
    __slots__ = ("func", "fscope", "args", "env", "scope", "parent")

    def __init__(self, func, fscope, args, env, scope, parent):
        self.func, self.fscope, self.args = func, fscope, args
        self.env, self.scope, self.parent = env, scope, parent


class LayoutEvaluator(FileCalls):
    def __init__(self, ctx):
        self.ctx = ctx
        self.flow = ctx.flow
        self.resolver = ctx.resolver
        self.module = ctx.module
        self.comments = CommentIndex(ctx.module)
        self._cache: Dict[Tuple[int, int], Optional[Layout]] = {}
        self._active: set = set()
        self._caller_depth = 0
        self._positions = None

    # ---------------------------------------------------------------- helpers
    def line(self, node: Optional[cst.CSTNode]) -> Optional[int]:
        if node is None:
            return None
        from ..positions import line_of

        return line_of(self.module, node)

    def text(self, node: Optional[cst.CSTNode]) -> str:
        if node is None:
            return ""
        if isinstance(node, cst.Comment):
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
        got = _real(self.eval(expr, site.env, site.scope, None, 0))
        if got is None and isinstance(expr, cst.Name):
            # ``out = attn(x, x, x)  # x: (L, N, E)``
            got = self.comments.named(site.stmt, expr.value)
            defs = lookup(expr.value, site.env, site.scope)
            if got is None and defs and all(d.kind == "param" for d in defs):
                # a comment at the top of the function speaks of the parameter as it came in
                got = self._function_comment(site.scope, expr.value)
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
            return join(
                [
                    self.eval(node.body, env, scope, frame, depth),
                    self.eval(node.orelse, env, scope, frame, depth),
                ]
            )
        if t is cst.NamedExpr:
            return self.eval(node.value, env, scope, frame, depth)
        return None

    # ---------------------------------------------------------------- names
    def _name(self, node: cst.Name, env, scope, frame, depth) -> Optional[Layout]:
        defs = lookup(node.value, env, scope)
        if not defs:
            return None
        got = join([self._def(d, frame, depth) for d in defs])
        if _real(got) is None:
            unpack = self._unpacking(node.value, defs, scope)
            if unpack is not None:
                return unpack
        return got

    def _def(self, d: Def, frame, depth) -> Optional[Layout]:
        frame = frame_for(d.scope, frame)
        key = (id(d), self._caller_depth)
        if frame is None and key in self._cache:
            return self._cache[key]
        guard = (id(d), id(frame))
        if guard in self._active:
            return _CYCLE
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
            return got if _real(got) is not None else (self.comments.of_value(d.node) or got)
        if kind == "unpack":
            el = unpacked(d)
            if el is not None:
                return self.eval(el, d.env, d.scope, frame, depth)
            if d.index == (0,) and isinstance(d.node, cst.Call):
                return self._call(d.node, d.env, d.scope, frame, depth, 0)
            return None
        if kind == "param":
            return self._param(d, frame, depth)
        if kind == "augassign":
            node: cst.AugAssign = d.node
            if (
                isinstance(
                    node.operator,
                    (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign, cst.DivideAssign),
                )
                and d.extra
            ):
                return join([self._def(p, frame, depth) for p in d.extra])
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
            if arg is None:
                return None
            return self.eval(arg, frame.env, frame.scope, frame.parent, depth)
        if not isinstance(func, cst.FunctionDef):
            return None
        got = self._from_callers(func, name, depth)
        if _real(got) is None:
            stated = self.comments.annotation(p) or self._function_comment(d.scope, name)
            if stated is not None:
                return stated
        return got

    def _function_comment(self, scope: Optional[Scope], name: str) -> Optional[Layout]:
        while scope is not None and scope.kind != "function":
            scope = scope.parent
        if scope is None:
            return None
        return self.comments.function_named(scope.node, name)

    def _from_callers(self, func, name, depth) -> Optional[Layout]:
        callers = self.callers().get(id(func), [])
        if not callers or self._caller_depth >= MAX_CALLER_DEPTH:
            return None
        guard = ("callers", id(func), name)
        if guard in self._active:
            return _CYCLE
        self._active.add(guard)
        self._caller_depth += 1
        values = []
        try:
            for site, skip in callers:
                arg = bind_call(func, site.node, skip).get(name)
                if arg is None:
                    return None
                values.append(self.at(arg, site))
        finally:
            self._caller_depth -= 1
            self._active.discard(guard)
        return join(values)

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
        return None

    def _binop(self, node: cst.BinaryOperation, env, scope, frame, depth) -> Optional[Layout]:
        if not isinstance(node.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)):
            return None
        left = _real(self.eval(node.left, env, scope, frame, depth))
        right = _real(self.eval(node.right, env, scope, frame, depth))
        if left is None or right is None:
            return left or right  # residual / broadcast add of a known tensor
        if left.roles == right.roles:
            return left
        if len(left.roles) != len(right.roles):
            return left if len(left.roles) > len(right.roles) else right
        return None

    def _module_ctor(self, func, env, scope) -> Optional[Tuple[str, cst.Call, Def]]:
        """``self.proj`` / a local holding ``nn.Linear(...)``: (torch class name, its call)."""
        defs: Sequence[Def] = ()
        if isinstance(func, cst.Attribute):
            cls = self.resolver.self_class(func, env, scope)
            if cls is not None:
                defs = self.resolver.attr_defs(cls, func.attr.value)
        elif isinstance(func, cst.Name):
            defs = lookup(func.value, env, scope)
        if len(defs) != 1 or defs[0].kind != "assign" or not isinstance(defs[0].node, cst.Call):
            return None
        d = defs[0]
        qn = self.qualname(d.node.func, d.env, d.scope)
        if qn is None or not qn.startswith("torch.nn."):
            return None
        return qn.rsplit(".", 1)[1], d.node, d

    def _call(self, node: cst.Call, env, scope, frame, depth, index) -> Optional[Layout]:
        func = node.func
        # a torch attention module: its output has its query's (src's, tgt's) shape
        target = (
            func.value if isinstance(func, cst.Attribute) and func.attr.value == "forward" else func
        )
        if isinstance(target, (cst.Name, cst.Attribute, cst.Subscript)):
            try:
                instances = self.resolver.instances(target, env, scope)
            except RecursionError:  # pragma: no cover
                instances = None
            spec = self.resolver.common_spec(instances)
            if spec is not None:
                if spec.name == "MultiheadAttention" and index != 0:
                    return None  # the (output, weights) pair itself
                from ..resolve import Bound

                arg = Bound(node, spec.forward).get(MODULE_OUTPUT_ARG.get(spec.name, "query"))
                if arg is None:
                    return None
                got = _real(self.eval(arg, env, scope, frame, depth))
                return Layout(got.roles, node, "module output") if got is not None else None
        if index is not None:
            return None
        qn = None
        if not (
            isinstance(func, cst.Attribute)
            and not isinstance(func.value, (cst.Name, cst.Attribute))
        ):
            qn = self.qualname(func, env, scope)
        if qn is not None and (qn.startswith("torch.") or qn.startswith("einops.")):
            return self._torch_call(qn, node, env, scope, frame, depth)
        if isinstance(func, cst.Attribute):
            got = self._method_call(func.attr.value, func.value, node, env, scope, frame, depth)
            if got is not None:
                return got
        ctor = self._module_ctor(func, env, scope)
        if ctor is not None:
            return self._torch_module(ctor, node, env, scope, frame, depth)
        found = self.callee(node, env, scope)
        if found is not None:
            return self._helper(found, node, env, scope, frame, depth)
        return None

    def _torch_module(self, ctor, node, env, scope, frame, depth) -> Optional[Layout]:
        name, built, d = ctor
        args = positional(node)
        if not args:
            return None
        if name in PRESERVE_MODULES or (name == "Sequential" and self._all_preserving(built, d)):
            return self.eval(args[0], env, scope, frame, depth)  # the evidence stays where it was
        if name == "Embedding":
            ids = _real(self.eval(args[0], env, scope, frame, depth))
            if ids is None or EMBED in ids.roles:
                return None
            return Layout(ids.roles + (EMBED,), node, "embedding of ids")
        if name in CONV:
            k = CONV[name]
            return Layout(
                (BATCH, CHANNEL) + ((SEQ,) if k == 1 else (SPATIAL,) * k), node, "conv feature map"
            )
        return None

    def _all_preserving(self, built: cst.Call, d: Def) -> bool:
        for arg in built.args:
            if arg.star or not isinstance(arg.value, cst.Call):
                return False
            qn = self.qualname(arg.value.func, d.env, d.scope)
            if (
                qn is None
                or not qn.startswith("torch.nn.")
                or qn.rsplit(".", 1)[1] not in PRESERVE_MODULES
            ):
                return False
        return bool(built.args)

    def _helper(self, found, node, env, scope, frame, depth) -> Optional[Layout]:
        func, skip = found
        fscope = self.flow.functions.get(id(func))
        if fscope is None or not fscope.returns:
            return None
        hops, f = 0, frame
        while f is not None:
            hops += 1
            if f.func is func:
                return None
            f = f.parent
        if hops > 4:
            return None
        inner = Frame(func, fscope, bind_call(func, node, skip), env, scope, frame)
        return join([self.eval(expr, renv, fscope, inner, depth) for expr, renv in fscope.returns])

    def _method_call(self, attr, owner, node, env, scope, frame, depth) -> Optional[Layout]:
        if attr in _TRANSFORMS:
            inner = _real(self.eval(owner, env, scope, frame, depth))
            return transform(inner, attr, node, node) if inner is not None else None
        if attr in PRESERVE_METHODS:
            return self.eval(owner, env, scope, frame, depth)
        if attr in _SIZED:
            return self._sized(node, attr)
        return None

    def _sized(self, node: cst.Call, how: str) -> Optional[Layout]:
        args = [a.value for a in node.args if a.keyword is None and not a.star]
        if len(args) == 1 and isinstance(args[0], (cst.Tuple, cst.List)):
            args = [e.value for e in args[0].elements]
        names = [a.value if isinstance(a, cst.Name) else _attr_name(a) for a in args]
        roles = roles_of_names(names)
        if useful(roles):
            return Layout(roles, node, f"{how} with named sizes")
        return None

    def _torch_call(self, qn, node, env, scope, frame, depth) -> Optional[Layout]:
        args = positional(node)
        if qn in ("einops.rearrange", "einops.einops.rearrange") and len(args) >= 2:
            return self._rearrange(args[0], args[1], node, env, scope, frame, depth)
        if qn in ("torch.einsum", "torch.functional.einsum") and len(args) >= 2:
            return self._einsum(args, node, env, scope, frame, depth)
        if qn in _TORCH_TRANSFORMS and args:
            inner = _real(self.eval(args[0], env, scope, frame, depth))
            if inner is None:
                return None
            rest = node.with_changes(args=node.args[1:])
            return transform(inner, _TORCH_TRANSFORMS[qn], rest, node)
        if qn in PRESERVE_FUNCS and args:
            return self.eval(args[0], env, scope, frame, depth)
        if qn in CTORS:
            return self._sized(node, qn)
        if qn in _NESTED:
            # a nested tensor is a batch of (L_i, E) sequences: (N, *, E), batch first
            return Layout((BATCH, SEQ, EMBED), node, "nested tensor")
        return None

    def _rearrange(self, tensor, pattern, node, env, scope, frame, depth) -> Optional[Layout]:
        if not isinstance(pattern, cst.SimpleString):
            return None
        text = pattern.evaluated_value
        if not isinstance(text, str) or "->" not in text:
            return None
        left_s, right_s = text.split("->", 1)
        left, right = parse_einops_side(left_s), parse_einops_side(right_s)
        if left is None or right is None:
            return None
        inner = _real(self.eval(tensor, env, scope, frame, depth))
        if inner is not None and len(inner.roles) == len(left):
            named = {g: r for g, r in zip(left, inner.roles) if " " not in g}
        else:
            all_names = [n for g in left for n in g.split()]
            named = dict(zip(all_names, roles_of_names(all_names)))
        roles = tuple(group_role(g, named) for g in right)
        if not useful(roles):
            return None
        return Layout(roles, node, "einops pattern")

    def _einsum(self, args, node, env, scope, frame, depth) -> Optional[Layout]:
        eq = args[0]
        if not isinstance(eq, cst.SimpleString) or not isinstance(eq.evaluated_value, str):
            return None
        text = eq.evaluated_value.replace(" ", "")
        if "->" not in text or "." in text:
            return None
        ins, out = text.split("->", 1)
        operands = ins.split(",")
        letters: Dict[str, Optional[str]] = {}
        for spec, arg in zip(operands, args[1:]):
            got = _real(self.eval(arg, env, scope, frame, depth))
            if got is not None and len(got.roles) == len(spec):
                for ch, role in zip(spec, got.roles):
                    letters.setdefault(ch, role)
        guessed = dict(zip(out, roles_of_names(list(out))))
        roles = tuple(letters.get(ch) or guessed.get(ch) for ch in out)
        if not useful(roles) or roles.count(BATCH) != 1:
            return None
        return Layout(roles, node, "einsum string")


def _attr_name(node) -> Optional[str]:
    if isinstance(node, cst.Attribute):
        return node.attr.value  # self.num_heads, cfg.d_model
    return None


__all__ = ["LayoutEvaluator", "join", "MODULE_OUTPUT_ARG", "SEQ", "SPATIAL"]
