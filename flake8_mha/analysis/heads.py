"""Head axes: what the code says about the axes of a tensor, and which one
holds the attention heads.

Read from the code only: ``view``/``reshape`` arguments named like head
counts (``n_kv_heads``, ``num_key_value_heads``, ``self.h``), then
``transpose``/``permute``/``unsqueeze``/indexing; einops ``rearrange``
patterns; ``b, n_kv, s, d = x.shape`` in the function of a parameter;
``torch.cat`` of a known layout; rotary helpers that return their inputs'
shapes.  Without such evidence a layout is unknown (None).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import libcst as cst

from .flow import Env, Scope, lookup
from .tree import is_none, walk
from .values import UNKNOWN, literal, unpacked, value_of

MAX_DEPTH = 12

# --- names ---------------------------------------------------------------------

_KV_HEADS = re.compile(
    r"(kv|key_?value|k_v).*heads?|heads?_?kv|^(n_?|num_?)?kv_?h$|^h_?kv$|^n_?kv$|^hkv$|"
    r"query_?groups|group_?num|num_?groups_?kv"
)
_HEADS = re.compile(r"heads?$|^n_?heads?|^num_?heads?|^nh$|^n_?h$|^h$|^n_?head$|^heads_?q$")
_REP = re.compile(
    r"^(n_|num_)?reps?$|^n_?rep|^num_?rep|_rep$|key_?value_?groups|kv_?groups|"
    r"per_?kv|per_?group|q_?per_?kv|group_?size$|^repeats?$|^n_?repeats?$"
)
BEAM = re.compile(r"beam|batch|bsz|^bs$|^b$|^n$|sample|return_seq|copies|^num_?return|expand_size")
SEQ = re.compile(r"len$|length|seq|^l$|^s$|^t$|tokens|steps|^n_?ctx|window|^time")
KV_TENSOR = re.compile(
    r"^(k|v|kv|xk|xv|wk|wv|key|keys|value|values|k_?cache|v_?cache|key_?states?|value_?states?|"
    r"past_?k(ey)?s?|past_?v(alue)?s?|cache_?[kv]|[kv]_\w+|\w+_[kv]|\w*key\w*|\w*value\w*)$"
)
NOT_KV = re.compile(
    r"mask|bias|pos|scale|weight|norm|idx|ids|index"
)  # key_padding_mask, key_pos, ...
KV_HELPER = re.compile(r"kv|key_?value|repeat_?heads|expand_?heads")
_SAME_SHAPE = frozenset(
    {
        "contiguous",
        "clone",
        "float",
        "half",
        "bfloat16",
        "double",
        "to",
        "type",
        "type_as",
        "detach",
        "cpu",
        "cuda",
        "requires_grad_",
    }
)
_FACTORIES = frozenset("torch." + f for f in ("randn", "rand", "zeros", "ones", "empty"))
_ROTARY = re.compile(r"rotary|rope|rot_|_rot|apply_pos")


def ident(node: Optional[cst.CSTNode]) -> str:
    """The identifier an expression is named by (``self.n_kv_heads`` -> ``n_kv_heads``)."""
    if isinstance(node, cst.Name):
        return node.value.lower()
    if isinstance(node, cst.Attribute):
        return node.attr.value.lower()
    if isinstance(node, cst.Call) and ident(node.func) == "int" and node.args:
        return ident(node.args[0].value)
    return ""


def is_one(node: cst.CSTNode) -> bool:
    return literal(node) == 1 and literal(node) is not True


def is_minus_one(node: cst.CSTNode) -> bool:
    return literal(node) == -1


# --- axes and layouts -------------------------------------------------------------


@dataclass
class Axis:
    """One axis of a tensor: the size expression that named it, if the code has one."""

    expr: Optional[cst.CSTNode] = None
    env: Optional[Env] = None
    scope: Optional[Scope] = None
    name: str = ""

    @property
    def role(self) -> str:
        """kv_heads, heads, rep, merged, or "" (not a head axis as far as the code says)."""
        name = self.name
        if isinstance(self.expr, cst.BinaryOperation) and isinstance(
            self.expr.operator, cst.Multiply
        ):
            roles = {name_role(ident(self.expr.left)), name_role(ident(self.expr.right))}
            if roles & {"kv_heads", "heads"}:
                return "heads"
            return ""
        return name_role(name)

    def value(self):
        if self.expr is None or self.env is None:
            return UNKNOWN
        v = value_of(self.expr, self.env, self.scope)
        return v if isinstance(v, int) and not isinstance(v, bool) else UNKNOWN


def name_role(name: str) -> str:
    if not name:
        return ""
    if _KV_HEADS.search(name):
        return "kv_heads"
    if _REP.search(name):
        return "rep"
    if _HEADS.search(name) and "dim" not in name and "size" not in name:
        return "heads"
    return ""


@dataclass
class Layout:
    axes: List[Axis]
    decided_by: List[cst.CSTNode] = field(default_factory=list)
    names: List[str] = field(default_factory=list)  # tensor names met on the way

    @property
    def rank(self) -> int:
        return len(self.axes)

    def head_axis(self) -> Optional[int]:
        found = [i for i, a in enumerate(self.axes) if a.role in ("kv_heads", "heads")]
        if len(found) == 1:
            return found[0]
        kv = [i for i, a in enumerate(self.axes) if a.role == "kv_heads"]
        return kv[0] if len(kv) == 1 else None

    def with_axes(self, axes: List[Axis], node: cst.CSTNode) -> "Layout":
        return Layout(axes, self.decided_by + [node], list(self.names))


def axes_from_sizes(sizes: List[cst.CSTNode], env: Env, scope: Scope) -> Optional[List[Axis]]:
    axes = []
    for s in sizes:
        if isinstance(s, cst.StarredElement):
            return None
        axes.append(Axis(s, env, scope, ident(s)))
    return axes


def call_sizes(
    call: cst.Call, env: Env, scope: Scope, depth: int = 0
) -> Optional[List[cst.CSTNode]]:
    """The size arguments of ``view``/``reshape``/``repeat``/``expand``: varargs or one tuple."""
    if any(a.keyword is not None or a.star for a in call.args):
        return None
    args = [a.value for a in call.args]
    if len(args) == 1:
        one = args[0]
        if isinstance(one, (cst.Tuple, cst.List)):
            return [
                el.value if not isinstance(el, cst.StarredElement) else el for el in one.elements
            ]
        if isinstance(one, cst.Name) and depth < 2:
            defs = lookup(one.value, env, scope)
            if (
                len(defs) == 1
                and defs[0].kind == "assign"
                and isinstance(defs[0].node, (cst.Tuple, cst.List))
            ):
                return [
                    el.value if not isinstance(el, cst.StarredElement) else el
                    for el in defs[0].node.elements
                ]
        if literal(one) is UNKNOWN and not isinstance(one, (cst.Integer,)):
            return None  # x.view(shape): unknown
    return args


def _dim(node: Optional[cst.CSTNode], rank: int) -> Optional[int]:
    if node is None:
        return None
    v = literal(node)
    if not isinstance(v, int) or isinstance(v, bool):
        return None
    if v < 0:
        v += rank
    return v if 0 <= v < rank else None


def arg_of(call: cst.Call, pos: int, kw: str) -> Optional[cst.CSTNode]:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == kw:
            return a.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[pos].value if pos < len(positional) else None


def _cut(axis: Axis, call: cst.Call, how: str, d) -> Axis:
    """One piece of ``axis`` cut by ``chunk(n)`` (the size over ``n``) or
    ``split(size)`` (that size, a plain one), named as it was (a head axis
    cut in two is two head axes); of unknown size else."""
    first = arg_of(call, 0, "chunks" if how == "chunk" else "split_size_or_sections")
    if first is None or isinstance(first, (cst.List, cst.Tuple)):
        return Axis()
    if how == "split":
        return Axis(first, d.env, d.scope, axis.name)
    if axis.expr is None or not isinstance(first, cst.Integer):
        return Axis(name=axis.name)
    half = cst.BinaryOperation(axis.expr, cst.FloorDivide(), first)
    return Axis(half, axis.env, axis.scope, axis.name)


class Layouts:
    """What the code says about the axes of a tensor expression."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self._cache: Dict[Tuple[int, int], Optional[Layout]] = {}

    def of(self, node: cst.CSTNode, env: Env, scope: Scope, depth: int = 0) -> Optional[Layout]:
        if depth > MAX_DEPTH:
            return None
        key = (id(node), id(env))
        if key in self._cache:
            return self._cache[key]
        self._cache[key] = None  # cycles
        got = self._of(node, env, scope, depth)
        self._cache[key] = got
        return got

    def _of(self, node, env, scope, depth) -> Optional[Layout]:
        if isinstance(node, cst.Name):
            return self._name(node, env, scope, depth)
        if isinstance(node, cst.Subscript):
            return self._subscript(node, env, scope, depth)
        if not isinstance(node, cst.Call):
            return None
        func = node.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in ("view", "reshape"):
                sizes = call_sizes(node, env, scope)
                if sizes is None:
                    return None
                axes = axes_from_sizes(sizes, env, scope)
                if axes is None:
                    return None
                base = self.of(func.value, env, scope, depth + 1)
                names = list(base.names) if base is not None else []
                return Layout(axes, [node], names + names_of(func.value))
            if method in ("transpose", "swapaxes", "swapdims"):
                base = self.of(func.value, env, scope, depth + 1)
                if base is None or len(node.args) != 2:
                    return None
                a, b = _dim(node.args[0].value, base.rank), _dim(node.args[1].value, base.rank)
                if a is None or b is None:
                    return None
                axes = list(base.axes)
                axes[a], axes[b] = axes[b], axes[a]
                return base.with_axes(axes, node)
            if method == "permute":
                base = self.of(func.value, env, scope, depth + 1)
                sizes = call_sizes(node, env, scope)
                if base is None or sizes is None or len(sizes) != base.rank:
                    return None
                dims = [_dim(s, base.rank) for s in sizes]
                if None in dims or sorted(dims) != list(range(base.rank)):
                    return None
                return base.with_axes([base.axes[d] for d in dims], node)
            if method == "unsqueeze":
                base = self.of(func.value, env, scope, depth + 1)
                if base is None or not node.args:
                    return None
                d = _dim(node.args[0].value, base.rank + 1)
                if d is None:
                    return None
                axes = list(base.axes)
                axes.insert(d, Axis())
                return base.with_axes(axes, node)
            if method in _SAME_SHAPE:
                return self.of(func.value, env, scope, depth + 1)
        qn = self.ctx.resolver.qualname(func, env, scope) or ""
        if qn in _FACTORIES:  # torch.randn(B, H, L, D, dtype=...): the sizes as written
            positional = [a for a in node.args if a.keyword is None]
            if any(a.star for a in positional):
                return None
            sizes = [a.value for a in positional]
            if len(sizes) == 1 and isinstance(sizes[0], (cst.Tuple, cst.List)):
                sizes = [
                    el.value for el in sizes[0].elements if not isinstance(el, cst.StarredElement)
                ]
                if len(sizes) != len(positional[0].value.elements):
                    return None
            axes = axes_from_sizes(sizes, env, scope)
            return Layout(axes, [node], []) if axes and len(axes) > 1 else None
        if qn in ("torch.cat", "torch.concat", "torch.concatenate"):
            seq = arg_of(node, 0, "tensors")
            if isinstance(seq, (cst.List, cst.Tuple)):
                for el in seq.elements:
                    got = self.of(el.value, env, scope, depth + 1)
                    if got is not None:
                        return got.with_axes(got.axes, node)
            return None
        if qn.endswith("einops.rearrange") or (not qn and ident(func) == "rearrange"):
            return self._rearrange(node, env, scope, depth)
        if _ROTARY.search(ident(func)):  # ``rotary(q)``: a rotary embedding keeps the shape
            args = [a.value for a in node.args if a.keyword is None and not a.star]
            return self.of(args[0], env, scope, depth + 1) if args else None
        if not qn.startswith("torch."):
            return self._helper(node, env, scope, depth)
        return None

    def _helper(self, call: cst.Call, env, scope, depth) -> Optional[Layout]:
        """What the one ``return`` of a helper gives, in this file or another
        of the project (``split_heads(self.q_proj(x), N_HEAD)`` of ``def
        split_heads(x, n): return x.view(b, t, n, -1).transpose(1, 2)``:
        probe AP's AP24): an axis sized by a parameter is sized by what the
        call hands it, one sized by a known number keeps it."""
        from .program.returns import helper_reading  # the helper, wherever it is

        if depth > MAX_DEPTH // 2:
            return None
        got = helper_reading(self.ctx, call, env, scope, "heads", read_layout, _SHAPING)
        if got is None:
            return None
        axes = []
        for axis in got.form["axes"]:
            arg = got.args.get(axis["p"]) if "p" in axis else None
            if arg is not None:
                axes.append(Axis(arg, env, scope, ident(arg) or axis["n"]))
            elif "v" in axis:
                axes.append(Axis(cst.Integer(str(axis["v"])), env, scope, axis["n"]))
            else:
                axes.append(Axis(name=axis["n"]))
        return Layout(axes, [call], [])

    def _name(self, node: cst.Name, env, scope, depth) -> Optional[Layout]:
        defs = lookup(node.value, env, scope)
        if not defs:
            return None
        found: Optional[Layout] = None
        for d in defs:
            got = None
            if d.kind == "assign":
                got = self.of(d.node, d.env, d.scope, depth + 1)
            elif d.kind == "unpack":
                got = self._unpack(d, depth)
            elif d.kind == "param":
                got = self._param_shape(node.value, d)
            elif d.kind == "augassign":
                return None
            if got is None and len(defs) > 1 and _if_given(d):
                continue  # ``if cache is not None: k, v = cache.update(k, v)``: the other path
            if got is None:
                return None
            if found is not None and (
                found.rank != got.rank or found.head_axis() != got.head_axis()
            ):
                return None
            found = found or got
        if found is not None:
            found = Layout(found.axes, found.decided_by, found.names + [node.value])
        return found

    def _unpack(self, d, depth) -> Optional[Layout]:
        el = unpacked(d)
        if el is not None:
            return self.of(el, d.env, d.scope, depth + 1)
        value = d.node
        if len(d.index) != 1 or not isinstance(value, cst.Call):
            return None
        i = d.index[0]
        func = value.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("unbind", "chunk", "split"):
            base = self.of(func.value, d.env, d.scope, depth + 1)
            if base is None:
                return None
            if func.attr.value == "unbind":
                dim = _dim(arg_of(value, 0, "dim") or cst.Integer("0"), base.rank)
                if dim is None:
                    return None
                return base.with_axes(base.axes[:dim] + base.axes[dim + 1 :], value)
            dim = _dim(arg_of(value, 1, "dim") or cst.Integer("0"), base.rank)
            if dim is None:
                return None
            # the axis cut into pieces is no longer the size that named it (``kv.view(b,
            # s, 2 * KV, D).transpose(1, 2).chunk(2, dim=1)``: KV heads each, not 2 * KV)
            axes = list(base.axes)
            axes[dim] = _cut(axes[dim], value, func.attr.value, d)
            return base.with_axes(axes, value)
        if _ROTARY.search(ident(func) or ""):
            args = [a.value for a in value.args if a.keyword is None and not a.star]
            if i < len(args):
                return self.of(args[i], d.env, d.scope, depth + 1)
            return None
        base = self.of(value, d.env, d.scope, depth + 1)  # iterating a tensor: axis 0 goes
        if base is None or base.rank < 2:
            return None
        return base.with_axes(base.axes[1:], value)

    def _param_shape(self, name: str, d) -> Optional[Layout]:
        """``b, n_kv, s, d = x.shape`` (or ``x.size()``) in the function of parameter ``x``."""
        func = d.extra
        if not isinstance(func, cst.FunctionDef):
            return None
        fscope = self.ctx.flow.functions.get(id(func))
        for stmt in _simple_statements(func.body):
            if not isinstance(stmt, cst.Assign) or len(stmt.targets) != 1:
                continue
            target, value = stmt.targets[0].target, stmt.value
            if not isinstance(target, (cst.Tuple, cst.List)):
                continue
            if isinstance(value, cst.Call) and not value.args:
                value = value.func
                if not (isinstance(value, cst.Attribute) and value.attr.value == "size"):
                    continue
            elif not (isinstance(value, cst.Attribute) and value.attr.value == "shape"):
                continue
            if not (isinstance(value.value, cst.Name) and value.value.value == name):
                continue
            axes = []
            for el in target.elements:
                if isinstance(el, cst.StarredElement):
                    return None
                axes.append(Axis(el.value, None, fscope, ident(el.value)))
            return Layout(axes, [stmt], [name])
        return None

    def _subscript(self, node: cst.Subscript, env, scope, depth) -> Optional[Layout]:
        base = self.of(node.value, env, scope, depth + 1)
        if base is None:
            return None
        axes, i = [], 0
        for el in node.slice:
            s = el.slice
            if (
                isinstance(s, cst.Index)
                and isinstance(s.value, cst.Name)
                and s.value.value == "None"
            ):
                axes.append(Axis())
                continue
            if isinstance(s, cst.Slice):
                if i >= base.rank:
                    return None
                axes.append(base.axes[i])
                i += 1
                continue
            if isinstance(s, cst.Index) and isinstance(literal(s.value), int):
                i += 1  # an integer index drops the axis
                continue
            return None  # Ellipsis, tensors, names: not followed
        axes.extend(base.axes[i:])
        return base.with_axes(axes, node)

    def _rearrange(self, node: cst.Call, env, scope, depth) -> Optional[Layout]:
        pattern = literal(arg_of(node, 1, "pattern") or cst.Name("None"))
        if not isinstance(pattern, str) or "->" not in pattern:
            return None
        out = einops_axes(pattern.split("->", 1)[1])
        if out is None:
            return None
        kwargs = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        axes = []
        for token in out:
            if token.startswith("("):
                axes.append(Axis())
                continue
            expr = kwargs.get(token)
            name = ident(expr) if expr is not None else ""
            role_name = name if name_role(name) else token
            axes.append(Axis(expr, env, scope, role_name))
        return Layout(axes, [node], [])


EINOPS_REARRANGE = ("einops.rearrange", "einops.einops.rearrange")
EINOPS_REPEAT = ("einops.repeat", "einops.einops.repeat")


def einops_axes(side: str, ellipsis: bool = False) -> Optional[List[str]]:
    tokens = re.findall(r"\([^)]*\)|\.\.\.|[A-Za-z_][A-Za-z_0-9]*|\d+", side)
    if "..." in tokens and not ellipsis:
        return None
    return tokens


_SHAPING = ("view", "reshape", "rearrange", "unflatten")


def read_layout(ctx, func: cst.FunctionDef, fscope) -> Optional[dict]:
    """The layout the one ``return`` of a helper has, read in its own file:
    each axis's name (its role), the parameter that sizes it or the number
    it is; None when unknown, or fewer than three axes."""
    if len(fscope.returns) != 1:
        return None
    ret, renv = fscope.returns[0]
    got = Layouts(ctx).of(ret, renv, fscope, MAX_DEPTH // 2)
    if got is None or got.rank < 3:
        return None
    p = func.params
    names = {x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)}
    axes, params = [], []
    for axis in got.axes:
        out = {"n": axis.name}
        name = axis.expr.value if isinstance(axis.expr, cst.Name) else None
        defs = lookup(name, axis.env or renv, axis.scope) if name in names else ()
        if len(defs) == 1 and defs[0].kind == "param" and defs[0].extra is func:
            out["p"] = name
            params.append(name)
        elif axis.value() is not UNKNOWN and axis.value() >= 0:  # not ``-1``: inferred
            out["v"] = axis.value()
        axes.append(out)
    return {"params": params, "axes": axes}


def names_of(node: cst.CSTNode) -> List[str]:
    while isinstance(node, (cst.Call, cst.Attribute, cst.Subscript)):
        node = node.func if isinstance(node, cst.Call) else node.value
    return [node.value] if isinstance(node, cst.Name) else []


def _simple_statements(block) -> List[cst.CSTNode]:
    out: List[cst.CSTNode] = []
    stack = list(getattr(block, "body", ()))
    while stack:
        stmt = stack.pop(0)
        if isinstance(stmt, cst.SimpleStatementLine):
            out.extend(stmt.body)
        elif isinstance(stmt, (cst.If, cst.With, cst.For, cst.While)):
            stack.extend(getattr(stmt.body, "body", ()))
    return out


def _if_given(d) -> bool:
    """Whether the definition ``d`` stands in a top-level ``if p is not
    None:`` (or ``if p:``) of its function, ``p`` a parameter that defaults
    to None: the calls that leave ``p`` out skip it (a KV cache's
    ``k, v = cache.update(k, v)``), and reach the use with the other
    definitions, which decide the head count there."""
    func = d.scope.node if d.scope is not None else None
    if not isinstance(func, cst.FunctionDef) or not isinstance(func.body, cst.IndentedBlock):
        return False
    optional = {
        p.name.value
        for p in (*func.params.params, *func.params.kwonly_params)
        if is_none(p.default)
    }
    for stmt in func.body.body:
        if not isinstance(stmt, cst.If) or stmt.orelse is not None:
            continue
        test = stmt.test
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            op = test.comparisons[0]
            if not (isinstance(op.operator, cst.IsNot) and is_none(op.comparator)):
                continue
            test = test.left
        if not (isinstance(test, cst.Name) and test.value in optional):
            continue
        if any(n is d.node for n in walk(stmt.body)):
            return True
    return False
