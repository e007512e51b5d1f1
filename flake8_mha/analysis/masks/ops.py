"""Torch operations on masks: ONE table for the function form ``torch.f(x, ...)``
and the method form ``x.f(...)``.

Each row of ``OPS`` names the evaluator method that computes the value
(``_op_<handler>``), torch's signature of the function form (``input`` is the
tensor a method runs on: ``torch.where(condition, input, other)`` is
``input.where(condition, other)``), and the qualified names and method names
it serves.  ``OpCall.arg`` reads an argument by that signature in either form,
so a handler is written once for both.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Dict, Optional, Sequence, Tuple

import libcst as cst

from ...core import torch_api
from ..heads import einops_axes
from .calls import At, arg, kw, positional
from .domain import (
    flip_meaning,
    ADDITIVE,
    BOOL,
    FLOAT01,
    IGNORE,
    INT,
    KEEP,
    UNKNOWN_MASK,
    Kind,
    Mask,
    Origin,
    additive,
    combine,
    comparison,
    kind_of_dtype,
    tri_meaning,
)
from .dtypes import KNOWN_DTYPE_NAMES, METHOD_DTYPES
from .names import is_adjacency_name
from .shapes import RESHAPES

COMPARE_METHODS = {
    "eq": "==",
    "ne": "!=",
    "lt": "<",
    "le": "<=",
    "gt": ">",
    "ge": ">=",
    "eq_": "==",
    "ne_": "!=",
    "less": "<",
    "greater": ">",
    "less_equal": "<=",
    "greater_equal": ">=",
    "not_equal": "!=",
}
_COMBINE = {
    "logical_and": "and",
    "logical_or": "or",
    "bitwise_and": "and",
    "bitwise_or": "or",
    "logical_and_": "and",
    "logical_or_": "or",
    "__and__": "and",
    "__or__": "or",
    "mul": "mul",
    "mul_": "mul",
}
_SAME = (
    "clone",
    "contiguous",
    "detach",
    "cuda",
    "cpu",
    "pin_memory",
    "requires_grad_",
    "detach_",
    "share_memory_",
    "coalesce",
    "to_dense",
)
_GENERATE = (
    torch_api.GENERATE_SQUARE_SUBSEQUENT_MASK,
    "torch.nn.modules.transformer._generate_square_subsequent_mask",
)


def _torch(*names: str) -> Tuple[str, ...]:
    return tuple("torch." + n for n in names)


@dataclass(frozen=True)
class Op:
    handler: str  # the evaluator's ``_op_<handler>`` computes the value
    params: Tuple[str, ...] = ()  # the function form's signature; "input" = the method's tensor
    functions: Tuple[str, ...] = ()  # qualified names of the function form
    methods: Tuple[str, ...] = ()  # method names


# values that are missing (True where a feature is NaN or infinite: hidden) or
# present (``isfinite``: kept), a tabular model's mask of its missing cells
MISSING = {"isnan": IGNORE, "isinf": IGNORE, "isfinite": KEEP}
OPS: Tuple[Op, ...] = (
    Op(
        "triangle",
        ("input", "diagonal"),
        _torch("tril", "triu"),
        ("tril", "triu", "tril_", "triu_"),
    ),
    Op(
        "fresh",
        (),
        _torch("ones", "zeros", "full", "empty"),
        ("new_ones", "new_zeros", "new_full", "new_empty"),
    ),
    Op(
        "fresh_like",
        ("input", "fill_value"),
        _torch("ones_like", "zeros_like", "full_like", "empty_like"),
    ),
    Op("subsequent", (), _GENERATE, ("generate_square_subsequent_mask",)),
    Op("eye", (), _torch("eye")),
    Op("missing", ("input",), _torch(*MISSING), tuple(MISSING)),
    Op("reduce", ("input", "dim"), _torch("any", "all"), ("any", "all")),
    Op(
        "flip",
        ("input",),
        _torch("logical_not", "bitwise_not"),
        ("logical_not", "logical_not_", "bitwise_not", "bitwise_not_"),
    ),
    Op(
        "combine",
        ("input", "other"),
        _torch("logical_and", "logical_or", "bitwise_and", "bitwise_or", "mul"),
        tuple(_COMBINE),
    ),
    Op("compare", ("input", "other"), _torch(*COMPARE_METHODS), tuple(COMPARE_METHODS)),
    Op("where", ("condition", "input", "other"), _torch("where"), ("where",)),
    Op(
        "masked_fill",
        ("input", "mask", "value"),
        _torch("masked_fill"),
        ("masked_fill", "masked_fill_"),
    ),
    Op("pad", ("input",), ("torch.nn.functional.pad",)),
    # a mask resampled to a feature map (DETR's backbone: ``F.interpolate(m[None].float(),
    # size=x.shape[-2:]).to(torch.bool)[0]``)
    Op("resample", ("input",), ("torch.nn.functional.interpolate",)),
    Op("concat", ("tensors",), _torch("cat", "concat", "concatenate")),
    Op(
        "reshape",
        ("input",),
        _torch("unsqueeze", "squeeze", "reshape", "transpose", "t", "flatten"),
        RESHAPES,
    ),
    Op("dtype", (), (), tuple(METHOD_DTYPES)),
    Op("to", (), (), ("to", "type")),
    Op("type_as", (), (), ("type_as",)),
    Op("same", (), (), _SAME),
    Op("fill", (), (), ("fill_",)),
)
FUNCTIONS: Dict[str, Op] = {qn: op for op in OPS for qn in op.functions}
METHODS: Dict[str, Op] = {name: op for op in OPS for name in op.methods}
assert len(FUNCTIONS) == sum(len(op.functions) for op in OPS), "a function in two rows"
assert len(METHODS) == sum(len(op.methods) for op in OPS), "a method in two rows"


@dataclass(frozen=True)
class OpCall:
    """One call of a table operation, in either form."""

    op: Op
    name: str  # the bare name: "tril" for ``torch.tril`` and for ``x.tril``
    node: cst.Call
    receiver: Optional[cst.BaseExpression]  # the tensor before the dot (method form)

    def arg(self, name: str) -> Optional[cst.BaseExpression]:
        """The argument torch's signature calls ``name``, in either form."""
        if self.receiver is None:
            return arg(self.node, self.op.params.index(name), name)
        if name == "input":
            return self.receiver
        params = [p for p in self.op.params if p != "input"]
        return arg(self.node, params.index(name), name)

    def rest(self) -> cst.Call:
        """The call with the arguments after the tensor only."""
        if self.receiver is not None:
            return self.node
        return self.node.with_changes(args=self.node.args[1:])


class Ops:
    """The part of ``MaskEvaluator`` that knows torch's operations."""

    def _torch_call(self, qn: str, node: cst.Call, at: At) -> Mask:
        op = FUNCTIONS.get(qn)
        if op is None:
            return UNKNOWN_MASK
        call = OpCall(op, qn.rsplit(".", 1)[-1], node, None)
        return getattr(self, "_op_" + op.handler)(call, at)

    def _method_call(self, attr: str, receiver, node: cst.Call, at: At) -> Optional[Mask]:
        """A method on a tensor expression; None when the method is not one we know."""
        op = METHODS.get(attr)
        if op is None:
            return None
        return getattr(self, "_op_" + op.handler)(OpCall(op, attr, node, receiver), at)

    # ----------------------------------------------------------------- both forms
    def _op_missing(self, call: OpCall, at: At) -> Mask:
        """``torch.isnan(x)``: a bool mask of the missing cells (``isfinite``:
        of the present ones); its shape is the tensor's, unknown here."""
        if call.arg("input") is None:
            return UNKNOWN_MASK
        return comparison(MISSING[call.name], None, self.origin(call.node))

    def _op_reduce(self, call: OpCall, at: At) -> Mask:
        """``torch.isnan(obs).any(-1)``: a position is missing when any of its
        features is (``all``: when every one is); the cells' meaning, bool,
        for the positions.  Over no axis (a single bool) or of a triangle or
        a constant: unknown."""
        src, dim = call.arg("input"), call.arg("dim")
        if src is None or dim is None:
            return UNKNOWN_MASK
        inner = self.eval(src, at)
        if inner.meaning not in (KEEP, IGNORE) or inner.causal or inner.tri or inner.fill:
            return UNKNOWN_MASK
        return replace(
            inner, kind=BOOL, dtype="bool", layout=None, kind_origin=self.origin(call.node)
        )

    def _op_triangle(self, call: OpCall, at: At) -> Mask:
        src = call.arg("input")
        if src is None:
            return UNKNOWN_MASK
        base = self.eval(src, at)
        lower = call.name.startswith("tril")
        diag = call.arg("diagonal")
        if (
            diag is not None
            and base.fill == "ones"
            and base.tri is None
            and self._number(diag, at) is None
        ):
            offset = self._kv_offset(diag, src, at)
            if offset is not None:
                return self._kv_triangle(base, lower, offset, call.node)
        return self._triangle(base, lower, diag, call.node, at)

    def _kv_triangle(self, base: Mask, lower: bool, offset: int, node) -> Mask:
        """A triangle with the diagonal ``cols - rows + offset`` (see ``offsets``)."""
        meaning = tri_meaning(("lower" if lower else "upper", offset))
        if meaning is None:
            return UNKNOWN_MASK
        origin = self.origin(node)
        kind = base.kind or kind_of_dtype(base.dtype)
        return Mask(
            meaning=meaning,
            kind=kind,
            dtype=base.dtype if base.dtype in KNOWN_DTYPE_NAMES else None,
            layout=base.layout or ("L", "S"),
            causal=True,
            origin=origin,
            kind_origin=origin if kind else None,
            shape_origin=origin,
        )

    def _op_flip(self, call: OpCall, at: At) -> Mask:
        src = call.arg("input")
        if src is None:
            return UNKNOWN_MASK
        bitwise = call.name.startswith("bitwise")
        return self._flip(
            self.eval(src, at), call.node, bitwise=bitwise, kind=None if bitwise else BOOL
        )

    def _op_combine(self, call: OpCall, at: At) -> Mask:
        a, b = call.arg("input"), call.arg("other")
        if a is None or b is None:
            return UNKNOWN_MASK
        ma, mb = self.eval(a, at), self.eval(b, at)
        return combine(ma, mb, call.node, self.text(call.node), _COMBINE[call.name])

    def _op_compare(self, call: OpCall, at: At) -> Mask:
        a, b = call.arg("input"), call.arg("other")
        if a is None or b is None:
            return UNKNOWN_MASK
        return self._compare(a, COMPARE_METHODS[call.name], b, call.node, at)

    def _op_where(self, call: OpCall, at: At) -> Mask:
        cond, a, b = call.arg("condition"), call.arg("input"), call.arg("other")
        if cond is None or a is None or b is None:
            return UNKNOWN_MASK
        return self._where(cond, a, b, call.node, at)

    def _op_masked_fill(self, call: OpCall, at: At) -> Mask:
        t, m, v = call.arg("input"), call.arg("mask"), call.arg("value")
        if t is None or m is None or v is None:
            return UNKNOWN_MASK
        return self._masked_fill(t, m, v, call.node, at)

    def _op_reshape(self, call: OpCall, at: At) -> Mask:
        src = call.arg("input")
        if src is None:
            return UNKNOWN_MASK
        return self._reshape(call.name, self.eval(src, at), call.rest(), call.node, at)

    def _rearrange(self, node: cst.Call, at: At) -> Mask:
        """``einops.rearrange(mask, "b j -> b 1 1 j")``: the same meaning when
        the pattern only adds or drops axes of size one and keeps the named
        axes in their order (a moved axis may transpose a triangle: unknown)."""
        pos = positional(node)
        if not pos or len(pos) != 2 or len(node.args) != 2:
            return UNKNOWN_MASK
        pattern = pos[1]
        if not isinstance(pattern, cst.SimpleString) or "->" not in pattern.raw_value:
            return UNKNOWN_MASK
        left, right = (einops_axes(side) for side in pattern.raw_value.split("->", 1))
        if left is None or right is None:
            return UNKNOWN_MASK
        unit = ("1", "()")
        if any(a.startswith("(") and a != "()" for a in left + right):
            return UNKNOWN_MASK  # a merge or a split
        named_left = [a for a in left if a not in unit]
        if [a for a in right if a not in unit] != named_left or len(set(named_left)) != len(
            named_left
        ):
            return UNKNOWN_MASK
        inner = self.eval(pos[0], at)
        if inner.none or not inner.known and inner.fill is None:
            return UNKNOWN_MASK
        layout = inner.layout
        new_layout = None
        if layout is not None and len(layout) == len(left):
            by_name = {a: lab for a, lab in zip(left, layout) if a not in unit}
            new_layout = tuple("1" if a in unit else by_name[a] for a in right)
        return replace(
            inner, layout=new_layout, shape_origin=self._shape_origin(inner, new_layout, node)
        )

    def _einops_repeat(self, node: cst.Call, at: At) -> Mask:
        """``einops.repeat(mask, "b j -> (b h) () j", h=heads)``: each value
        copied, so the same meaning, when every axis of the input stays, in
        its order (lucidrains' masks tiled over heads); its shape is another."""
        pos = positional(node)
        if not pos or len(pos) != 2:
            return UNKNOWN_MASK
        pattern = pos[1]
        if not isinstance(pattern, cst.SimpleString) or "->" not in pattern.raw_value:
            return UNKNOWN_MASK
        left, right = pattern.raw_value.split("->", 1)
        names = einops_axes(left)
        if names is None or any(a.startswith("(") for a in names):
            return UNKNOWN_MASK
        named = [a for a in names if not a.isdigit()]
        order = [
            a for a in (einops_axes(right.replace("(", " ").replace(")", " ")) or ()) if a in named
        ]
        if order != named:
            return UNKNOWN_MASK  # an axis dropped, or moved: a triangle may turn
        inner = self.eval(pos[0], at)
        if inner.none or inner.meaning is None:
            return UNKNOWN_MASK
        return replace(inner, layout=None, shape_origin=None)

    def _op_fresh(self, call: OpCall, at: At) -> Mask:
        node = call.node
        what = call.name[len("new_") :] if call.receiver is not None else call.name
        pos = positional(node) or []
        if what == "full":
            size = (pos[:1] or None) if call.receiver is not None else _listed(arg(node, 0, "size"))
            return self._fresh(
                what, node, at, shape_args=size, fill_value=arg(node, 1, "fill_value")
            )
        out = self._fresh(what, node, at, shape_args=pos or None)
        if call.receiver is not None and kw(node, "dtype") is None:
            out = replace(out, kind=None, dtype=None, kind_origin=None)  # the receiver's dtype
        return out

    def _op_subsequent(self, call: OpCall, at: At) -> Optional[Mask]:
        """``nn.Transformer.generate_square_subsequent_mask(L)`` (on the class or
        an instance): a square float mask, 0 on and below the diagonal, -inf above."""
        if call.receiver is not None:
            insts = self.resolver.instances(call.receiver, at.env, at.scope)
            if not insts or not all(i.spec is torch_api.TRANSFORMER for i in insts):
                return None
        origin = self.origin(call.node)
        return Mask(
            meaning=ADDITIVE,
            kind=Kind.ADDITIVE,
            layout=("L", "S"),
            dtype="float32",
            origin=origin,
            kind_origin=origin,
            shape_origin=origin,
            causal=True,
        )

    # ----------------------------------------------------------------- function form only
    def _op_fresh_like(self, call: OpCall, at: At) -> Mask:
        what = call.name[: -len("_like")]
        fill_value = call.arg("fill_value") if what == "full" else None
        return self._fresh(what, call.node, at, like=call.arg("input"), fill_value=fill_value)

    def _op_pad(self, call: OpCall, at: At) -> Mask:
        src = call.arg("input")
        inner = self.eval(src, at) if src is not None else UNKNOWN_MASK
        if inner.none or inner.meaning not in (KEEP, IGNORE, ADDITIVE):
            return UNKNOWN_MASK
        return replace(inner, tri=None, fill=None)

    def _op_resample(self, call: OpCall, at: At) -> Mask:
        """``F.interpolate(mask[:, None].float(), size=feat.shape[-2:])``: the
        positions a keep- or ignore-mask marks, resampled to another grid,
        marked as before (nearest by default; an interpolated 0/1 made bool
        again marks what touches them).  The sizes change: the layout is
        unknown."""
        src = call.arg("input")
        inner = self.eval(src, at) if src is not None else UNKNOWN_MASK
        if inner.none or inner.meaning not in (KEEP, IGNORE) or inner.causal or inner.tri:
            return UNKNOWN_MASK
        return replace(inner, fill=None, layout=None, shape_origin=None)

    def _op_concat(self, call: OpCall, at: At) -> Mask:
        """``torch.cat([ones(B, 1, dtype=bool), keep], 1)`` (a class token put
        before a keep-mask): masks of one meaning, with constant pieces that
        agree with it (ones beside a keep-mask, zeros beside an ignore-mask),
        keep that meaning; anything else is unknown."""
        seq = call.arg("tensors")
        if not isinstance(seq, (cst.List, cst.Tuple)):
            return UNKNOWN_MASK
        known, fills = [], set()
        for el in seq.elements:
            if isinstance(el, cst.StarredElement):
                return UNKNOWN_MASK
            m = self.eval(el.value, at)
            if m.none:
                return UNKNOWN_MASK
            if m.meaning in (KEEP, IGNORE) and not m.fill:
                known.append(m)
            elif m.meaning is None and m.fill in ("ones", "zeros"):
                fills.add(m.fill)
            else:
                return UNKNOWN_MASK
        meanings = {m.meaning for m in known}
        if len(meanings) != 1 or not fills <= {"ones" if KEEP in meanings else "zeros"}:
            return UNKNOWN_MASK
        first = known[0]
        kinds = {m.kind for m in known}
        return replace(
            first, tri=None, fill=None, causal=False, kind=first.kind if len(kinds) == 1 else None
        )

    # ----------------------------------------------------------------- method form only
    def _op_dtype(self, call: OpCall, at: At) -> Mask:
        if call.node.args:
            return UNKNOWN_MASK
        kind, dtype = METHOD_DTYPES[call.name]
        inner = self.eval(call.receiver, at)
        unknown = not inner.none and not inner.known and inner.fill is None
        if kind == BOOL and unknown and is_adjacency_name(call.receiver):
            # ``adj.bool()``: True on an edge, the pairs a graph attention attends
            return comparison(KEEP, None, Origin(call.node, self.text(call.node), by_name=True))
        return self._convert(inner, kind, dtype, call.node)

    def _op_eye(self, call: OpCall, at: At) -> Mask:
        """``torch.eye(n)``: ones on the diagonal, a node's edge to itself."""
        dt = kw(call.node, "dtype")
        kind, dtype = self._dtype_of(dt, at) if dt is not None else (FLOAT01, "float32")
        return Mask(fill="eye", kind=kind, dtype=dtype)

    def _op_to(self, call: OpCall, at: At) -> Mask:
        node = call.node
        inner = self.eval(call.receiver, at)
        dt = kw(node, "dtype")
        candidates = [dt] if dt is not None else [a.value for a in node.args if a.keyword is None]
        for cand in candidates:
            if self._is_device(cand, at):
                continue
            kind, dtype = self._dtype_of(cand, at)
            if kind is None and dtype is None:
                return UNKNOWN_MASK  # .to(other_tensor): its dtype is not known
            return self._convert(inner, kind, dtype, node)
        return inner if not inner.none else UNKNOWN_MASK

    def _op_type_as(self, call: OpCall, at: At) -> Mask:
        return self._convert(self.eval(call.receiver, at), FLOAT01, None, call.node)

    def _op_same(self, call: OpCall, at: At) -> Mask:
        inner = self.eval(call.receiver, at)
        return UNKNOWN_MASK if inner.none else inner

    def _op_fill(self, call: OpCall, at: At) -> Mask:
        value = arg(call.node, 0, "value")
        if value is not None and self.is_big_negative(value, at):
            base = self.eval(call.receiver, at)
            return Mask(fill="neg", layout=base.layout)
        return UNKNOWN_MASK

    # ----------------------------------------------------------------- the values
    def _fresh(
        self,
        what: str,
        node: cst.Call,
        at: At,
        like=None,
        shape_args: Optional[Sequence[cst.BaseExpression]] = None,
        fill_value=None,
    ) -> Mask:
        """A constant tensor: ones/zeros/full(-inf).  Its kind follows ``dtype=``."""
        kind, dtype = None, None
        dt = kw(node, "dtype")
        if dt is not None:
            kind, dtype = self._dtype_of(dt, at)
        elif like is None:
            if what in ("ones", "zeros", "empty"):
                kind, dtype = FLOAT01, "float32"
        # a constant tensor is not a 0/1 mask yet: its kind is decided by what is made of it
        fresh_kind = kind
        fill = what
        if what == "full":
            neg = self._neg(fill_value, at) if fill_value is not None else None
            if neg == "neg":
                fill = "neg"
            else:
                v = self._number(fill_value, at) if fill_value is not None else None
                fill = (
                    "ones"
                    if v in (1, True)
                    else "zeros"
                    if v in (0, False) and v is not None
                    else None
                )
                if fresh_kind is None and isinstance(v, bool):
                    fresh_kind, dtype = BOOL, "bool"
        layout = None
        shape_origin = None
        if like is not None:
            src = self.eval(like, at)
            layout, shape_origin = src.layout, src.shape_origin
        elif shape_args is not None:
            dims = list(shape_args)
            if len(dims) == 1 and isinstance(dims[0], (cst.Tuple, cst.List)):
                dims = [
                    el.value for el in dims[0].elements if not isinstance(el, cst.StarredElement)
                ]
            if len(dims) == 2:
                layout = ("L", "S")
            elif len(dims) == 4:
                layout = tuple("1" if self._number(d, at) == 1 else "?" for d in dims[:2]) + (
                    "L",
                    "S",
                )
        if fresh_kind is not None and dtype is None:
            dtype = {FLOAT01: "float", INT: "int"}.get(fresh_kind)  # a floating dtype not named
        return Mask(
            dtype=dtype if fill != "neg" else None,
            layout=layout,
            fill=fill,
            shape_origin=shape_origin,
        )

    def _triangle(self, base: Mask, lower: bool, diag_node, node, at: At) -> Mask:
        diag = 0
        if diag_node is not None:
            d = self._number(diag_node, at)
            if not isinstance(d, int) or isinstance(d, bool):
                return self._band(base, lower, diag_node, node)
            diag = d
        if base.fill == "neg" and not lower and diag >= 1:
            return additive(self.origin(node), base.layout or ("L", "S"), self.origin(node))
        if base.fill != "ones" and base.tri is None:
            return UNKNOWN_MASK
        if base.tri is not None:
            return UNKNOWN_MASK  # a triangle of a triangle: leave it
        tri = ("lower" if lower else "upper", diag)
        meaning = tri_meaning(tri)
        origin = self.origin(node)
        layout = base.layout or ("L", "S")
        kind = base.kind or kind_of_dtype(base.dtype)
        dtype = base.dtype if base.dtype in KNOWN_DTYPE_NAMES else None
        return Mask(
            meaning=meaning,
            kind=kind,
            dtype=dtype,
            layout=layout,
            tri=tri,
            causal=True,
            origin=origin if meaning else None,
            kind_origin=origin if kind else None,
            shape_origin=origin,
        )

    def _band(self, base: Mask, lower: bool, diag_node, node) -> Mask:
        """``tril(ones, diagonal=-window)``: a triangle of ones a window size
        away from the diagonal, the size unknown (``Mask.band``)."""
        if not (
            base.fill == "ones"
            and base.tri is None
            and isinstance(diag_node, cst.UnaryOperation)
            and isinstance(diag_node.operator, cst.Minus)
            and isinstance(diag_node.expression, (cst.Name, cst.Attribute))
        ):
            return UNKNOWN_MASK
        origin = self.origin(node)
        kind = base.kind or kind_of_dtype(base.dtype)
        return Mask(
            kind=kind,
            dtype=base.dtype if base.dtype in KNOWN_DTYPE_NAMES else None,
            layout=base.layout or ("L", "S"),
            causal=True,
            kind_origin=origin if kind else None,
            shape_origin=origin,
            band="lower" if lower else "upper",
        )

    def _where(self, cond, a, b, node, at: At) -> Mask:
        """``torch.where(m, 0, -inf)`` makes an additive mask from a keep mask."""
        na = self._neg(a, at)
        nb = self._neg(b, at)
        m = self.eval(cond, at)
        if na == "neg" or nb == "neg":
            return additive(self.origin(node), m.layout, m.shape_origin)
        va, vb = self._number(a, at), self._number(b, at)
        if m.meaning in (KEEP, IGNORE) and {va, vb} == {0, 1}:
            is_float = isinstance(va, float) or isinstance(vb, float)
            kind = FLOAT01 if is_float else INT
            dtype = "float32" if is_float else "int64"
            if va == 1:
                return replace(m, kind=kind, dtype=dtype, kind_origin=self.origin(node), fill=None)
            flipped = self._flip(m, node, kind=kind)
            return replace(flipped, dtype=dtype)
        return UNKNOWN_MASK

    def _masked_fill(self, target, m, v, node, at: At) -> Mask:
        base = self.eval(target, at)
        if base.none:
            return UNKNOWN_MASK
        if self.is_big_negative(v, at):
            layout = base.layout
            shape_origin = base.shape_origin
            if layout is None and base.fill is not None:
                mask = self.eval(m, at)
                layout, shape_origin = mask.layout, mask.shape_origin
            return additive(self.origin(node), layout, shape_origin)
        value = self._number(v, at)
        if value is None:
            return UNKNOWN_MASK
        if base.fill in ("zeros", "ones") and base.dtype == "bool" and value in (0, 1):
            # ``zeros(..., dtype=bool).masked_fill(cond, True)``: ``cond`` itself
            # (probe AF's AF21); ``ones(...).masked_fill(cond, False)``: its inverse
            mask = self.eval(m, at) if (base.fill == "zeros") == (value == 1) else None
            if mask is None or mask.meaning not in (KEEP, IGNORE) or mask.kind != BOOL:
                return UNKNOWN_MASK  # a constant filled with what it holds, or unknown
            return mask if value == 1 else replace(mask, meaning=flip_meaning(mask.meaning))
        if base.meaning == ADDITIVE and value == 0:
            return base
        if base.meaning in (KEEP, IGNORE) and value in (0, 1):
            return replace(base, tri=None)
        return UNKNOWN_MASK


def _listed(size) -> Optional[list]:
    return [size] if size is not None else None
