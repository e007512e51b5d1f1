"""The evaluator: the mask value of an expression at a point of the flow pass.

``MaskEvaluator.eval(node, at)`` computes the value of an expression where
``at`` (an ``At``: the environment of reaching definitions, the scope, the
helper frame and the depth spent) says.  It knows a fixed list of sources
(pad-id comparisons, ``arange`` against lengths, triangles of ones,
``generate_square_subsequent_mask``, tokenizer ``attention_mask``s,
parameters named like padding masks) and transfers (inversions, dtype
conversions, reshapes, slicing, ``masked_fill`` with -inf, ``&``/``|``,
helper functions of the same file, ``self.<attr>`` buffers, branches).
Anything else is unknown, and an unknown part never makes a rule fire.

This module is the core (names, definitions, operators, dispatch); the parts
live beside it: ``calls`` (helpers, callers), ``numbers``, ``compare``,
``shapes``, ``dtypes`` and ``ops`` (torch's operations, one table for both
call forms).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Dict, Optional, Tuple

import libcst as cst

from ..classes import property_return
from ..flow import CallSite, Def, Scope, children, lookup, walk
from ..heads import EINOPS_REARRANGE, EINOPS_REPEAT
from ..splats import element, item, loop_items, spread_index
from ..values import fixed_side, unpacked
from .calls import At, Calls, frame_for
from .compare import COMPARE_OPS, Comparisons
from .domain import (
    ADDITIVE,
    BOOL,
    FLOAT01,
    IGNORE,
    INT,
    KEEP,
    NONE_MASK,
    UNKNOWN_MASK,
    Kind,
    Mask,
    Origin,
    additive,
    broadcast,
    combine,
    comparison,
    flip_meaning,
    join,
    join_all,
    tri_complement,
    tri_meaning,
)
from .dtypes import Dtypes
from .hooks import hooked
from .names import (
    IGNORE_PARAM_NAMES,
    TOKENIZER_KEYS,
    last_name,
    says_mask,
    says_padding,
    string_key,
    zero_test,
)
from .numbers import MAX_DEPTH, Numbers
from .offsets import Offsets
from .ops import Ops
from .segments import Segments
from .shapes import Shapes, index_layout

_TEXT_MAX = 48
_HARMLESS_INPLACE = {"requires_grad_", "share_memory_", "retain_grad"}


class MaskEvaluator(Calls, Numbers, Comparisons, Segments, Offsets, Shapes, Dtypes, Ops):
    """Evaluates mask expressions of one file (one flow pass)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.flow = ctx.flow
        self.resolver = ctx.resolver
        self.module = ctx.module
        # values are cached per caller depth: deeper, fewer callers may be followed
        self._def_cache: Dict[Tuple[int, int], Mask] = {}
        self._param_cache: Dict[Tuple[int, int], Mask] = {}
        self._active: set = set()
        self._positions = None
        self._caller_depth = 0
        self._mutation_cache: Dict[int, Dict[str, list]] = {}
        self._argument_nodes: Dict[int, set] = {}

    # ----------------------------------------------------------------- text and lines
    def text(self, node: cst.CSTNode) -> str:
        if getattr(node, "lpar", None):
            node = node.with_changes(lpar=[], rpar=[])
        try:
            code = self.module.code_for_node(node)
        except Exception:  # pragma: no cover - defensive
            return "?"
        code = " ".join(code.split())
        if len(code) > _TEXT_MAX:
            code = code[: _TEXT_MAX - 3] + "..."
        return code

    def origin(self, node: cst.CSTNode, by_name: bool = False) -> Origin:
        return Origin(node, self.text(node), by_name)

    def line(self, node: cst.CSTNode) -> Optional[int]:
        from ...core.positions import line_of

        return line_of(self.module, node)

    def describe(self, origin: Optional[Origin]) -> str:
        if origin is None:
            return "mask"
        line = self.line(origin.node)
        if line is None:  # the callee's steps applied to this call's argument (``(~pad).float()``)
            return f"mask from this call, as the callee uses it ({origin.text})"
        return f"mask from line {line} ({origin.text})"

    def inverted_arg(self, origin: Optional[Origin]) -> Optional[str]:
        """The caller's argument as written, when the callee's steps applied
        to it (a node no line holds) invert it an odd number of times
        (``attention_mask == 0`` in the callee: ``~attention_mask.bool()``)."""
        if origin is None or self.line(origin.node) is not None:
            return None
        node, flips = origin.node, 0
        while self.line(node) is None:  # the callee's steps: new nodes; the argument has a line
            if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
                node, flips = node.expression, flips + 1
            elif isinstance(node, cst.Subscript):
                node = node.value
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
                node = node.func.value  # ``.bool()``, ``.unsqueeze(1)``, ``.float()``
            else:
                break
        return self.text(node) if flips % 2 else None

    def source_text(self, origin: Optional[Origin]) -> Optional[str]:
        if origin is None:
            return None
        line = self.line(origin.node)
        return f"line {line}: {origin.text}" if line is not None else origin.text

    def qualname(self, node, env, scope) -> Optional[str]:
        try:
            return self.resolver.qualname(node, env, scope)
        except RecursionError:  # pragma: no cover
            return None

    # ----------------------------------------------------------------- entry
    def at(self, expr: cst.BaseExpression, site: CallSite) -> Mask:
        """The value of ``expr`` as the call at ``site`` receives it."""
        return self.eval(expr, At(site.env, site.scope, None, 0))

    def eval(self, node: cst.CSTNode, at: At) -> Mask:
        if at.depth > MAX_DEPTH:
            return UNKNOWN_MASK
        try:
            return self._eval(node, at.deeper())
        except RecursionError:  # pragma: no cover - pathological nesting
            return UNKNOWN_MASK

    def _eval(self, node, at: At) -> Mask:
        t = type(node)
        if t is cst.Name:
            if node.value == "None":
                return NONE_MASK
            return self._name(node, at)
        if t is cst.Attribute:
            return self._attribute(node, at)
        if t is cst.Subscript:
            return self._subscript(node, at)
        if t is cst.Call:
            return self._call(node, at)
        if t is cst.Comparison:
            if len(node.comparisons) != 1:
                return UNKNOWN_MASK
            comp = node.comparisons[0]
            op = COMPARE_OPS.get(type(comp.operator))
            if op is None:
                return UNKNOWN_MASK
            return self._compare(node.left, op, comp.comparator, node, at)
        if t is cst.UnaryOperation:
            if isinstance(node.operator, cst.BitInvert):
                return self._flip(self.eval(node.expression, at), node, bitwise=True)
            return UNKNOWN_MASK
        if t is cst.BinaryOperation:
            return self._binop(node, at)
        if t is cst.IfExp:
            return join(self.eval(node.body, at), self.eval(node.orelse, at))
        if t is cst.NamedExpr:
            return self.eval(node.value, at)
        return UNKNOWN_MASK

    # ----------------------------------------------------------------- names and definitions
    def _name(self, node: cst.Name, at: At) -> Mask:
        defs = lookup(node.value, at.env, at.scope)
        if not defs:
            return UNKNOWN_MASK
        for d in defs:
            changes = self._mutations(d.scope).get(node.value) if d.scope is not None else None
            if changes and not self._inside_its_one_change(node, changes):
                return UNKNOWN_MASK  # changed in place: x.fill_(v), x.triu_(1), x[i] = v
        value = join_all([self._def(d, at) for d in defs])
        if value.meaning is None and value.kind in (BOOL, None) and len(defs) == 1:
            named = self._named_padding(node.value, defs[0])
            if named is not None:
                return named
        if value.fill == "zeros" and len(defs) == 1 and defs[0].scope is not None:
            ones = self._mutations(defs[0].scope).get(ONES + node.value)
            if ones:  # ``node_mask = x.new_zeros(B, N)`` then ``node_mask[batch, idx] = 1.0``
                origin = self.origin(ones[0][0])
                kind = BOOL if value.dtype == "bool" else FLOAT01
                dtype = value.dtype or "float32"
                return Mask(kind=kind, dtype=dtype, kind_origin=origin, zero_one=True)
        return value

    def _named_padding(self, name: str, d: Def) -> Optional[Mask]:
        """``pad = (images == 0).all(dim=1)``: a test for zeros whose meaning
        the code does not say, bound to a name that says padding, marks the
        padding (True = ignore), by that name (probe AQ's AQ24, DETR-style
        backbones that find padded pixels)."""
        if d.kind != "assign" or not says_padding(name) or zero_test(d.node) is None:
            return None
        text = f"{self.text(d.node)}, named {name}"
        return comparison(IGNORE, None, Origin(d.node, text, by_name=True))

    def _def(self, d: Def, at: At) -> Mask:
        frame = frame_for(d.scope, at.frame)
        cacheable = frame is None
        key = (id(d), self._caller_depth)
        if cacheable and key in self._def_cache:
            return self._def_cache[key]
        guard = (id(d), id(frame))
        if guard in self._active:
            return UNKNOWN_MASK
        self._active.add(guard)
        try:
            value = self._def_value(d, At(d.env, d.scope, frame, at.depth))
        finally:
            self._active.discard(guard)
        if cacheable:
            self._def_cache[key] = value
        return value

    def _def_value(self, d: Def, at: At) -> Mask:
        """``at`` is the definition's own place (its env and scope)."""
        kind = d.kind
        if kind == "assign":
            return self.eval(d.node, at)
        if kind == "unpack":
            el = unpacked(d)
            if el is not None:
                return self.eval(el, at)
            return self._indexed(d.node, d.index, at)
        if kind == "param":
            return self._param(d, at)
        if kind == "augassign":
            return self._augassign(d, at)
        if kind == "for":  # ``for blk, m in zip(self.blocks, (pad_keep, causal_keep))``
            got = self.yielded(d.node, d.index, at)
            if got is not None:  # ``for blk, m in self.layer_masks(T)``, a generator's
                return got
            found = loop_items(d.node, d.index, at.env, at.scope)
            if found:
                return join_all(
                    [self.eval(e, At(env, sc, at.frame, at.depth)) for e, env, sc in found]
                )
        return UNKNOWN_MASK

    def _augassign(self, d: Def, at: At) -> Mask:
        node: cst.AugAssign = d.node
        op = type(node.operator)
        prev = join_all([self._def(p, at) for p in d.extra]) if d.extra else UNKNOWN_MASK
        other = self.eval(node.value, at)
        text = self.text(node)
        if op in (cst.BitAndAssign, cst.BitOrAssign):
            return combine(prev, other, node, text, "and" if op is cst.BitAndAssign else "or")
        if op is cst.MultiplyAssign:
            return combine(prev, other, node, text, "mul")
        if op is cst.AddAssign and prev.meaning == ADDITIVE and other.meaning == ADDITIVE:
            return Mask(
                meaning=ADDITIVE,
                kind=Kind.ADDITIVE,
                origin=prev.origin,
                kind_origin=prev.kind_origin,
                layout=broadcast(prev.layout, other.layout),
            )
        return UNKNOWN_MASK

    def _mutations(self, scope: Scope) -> Dict[str, list]:
        key = id(scope)
        found = self._mutation_cache.get(key)
        if found is None:
            found = _mutated_names(scope.node)
            self._mutation_cache[key] = found
        return found

    def _inside_its_one_change(self, node: cst.Name, changes: list) -> bool:
        """``mask`` in ``mask.masked_fill_(mask.bool(), v)``: the arguments are
        read before the change, so they see the value the name had.  Only for a
        name changed once in its function, by that call, outside any loop."""
        if len(changes) != 1:
            return False
        change, in_loop = changes[0]
        if in_loop or not isinstance(change, cst.Call):
            return False
        inside = self._argument_nodes.get(id(change))
        if inside is None:
            inside = {id(n) for a in change.args for n in walk(a)}
            self._argument_nodes[id(change)] = inside
        return id(node) in inside

    # ----------------------------------------------------------------- attributes, subscripts
    def _attribute(self, node: cst.Attribute, at: At) -> Mask:
        attr = node.attr.value
        cls = self._self_class(node, at.env, at.scope)
        if cls is not None:
            defs = self.resolver.attr_defs(cls, attr)
            if not defs:  # ``self.causal_mask`` of a ``@property`` (probe AP's AP18): its return
                got = property_return(self.resolver, self.resolver.flow, cls, attr)
                if got is not None:
                    return self.eval(got[0], At(got[1], got[2], None, at.depth))
                return self._base_property(cls, node) or UNKNOWN_MASK
            return join_all([self._def(d, At(at.env, at.scope, None, at.depth)) for d in defs])
        if attr in ("T", "mT"):
            return self._transpose(self.eval(node.value, at), node, two_d=attr == "T")
        if attr == "data":
            return self.eval(node.value, at)
        if attr in TOKENIZER_KEYS:
            return self._tokenizer(node)
        held = self._held_by_instance(node, at)  # ``TriangularCausalMask(B, L).mask``
        if (held is None or not held.known) and attr in IGNORE_PARAM_NAMES:
            return self._padding(node)  # ``batch.pad_mask``: a batch holder's field
        return held if held is not None else UNKNOWN_MASK

    def _base_property(self, cls, node: cst.Attribute) -> Optional[Mask]:
        """``self.causal_mask`` of a ``@property`` of a base class of another
        project file (probe AP's AP18), read there with ``self`` unknown."""
        project = getattr(self.ctx, "project", None)
        if project is None or node.attr.value in cls.methods:
            return None
        for base in cls.base_exprs:
            got = project.property_returned(
                base, (cls.env, cls.scope), node, self.text(node), node.attr.value
            )
            if got is not None:
                return got
        return None

    def _tokenizer(self, node) -> Mask:
        origin = self.origin(node, by_name=True)
        return Mask(meaning=KEEP, kind=INT, dtype="int64", origin=origin, kind_origin=origin)

    def _padding(self, node) -> Mask:
        """A field of a batch the code does not build (``batch.pad_mask``,
        ``batch["key_padding_mask"]``) named as a padding mask: True = ignore,
        by its name, as a parameter so named (probe AH's AH04)."""
        origin = self.origin(node, by_name=True)
        return Mask(meaning=IGNORE, kind=BOOL, dtype="bool", origin=origin, kind_origin=origin)

    def _subscript(self, node: cst.Subscript, at: At) -> Mask:
        key = string_key(node)
        index = spread_index(node)
        found = (
            item(node.value, key, at.env, at.scope)
            if key is not None
            else (element(node.value, index, at.env, at.scope) if index is not None else None)
        )
        if found is not None:  # args[i] of a tuple, kw["k"] of a dict the code writes out
            return join_all(
                [
                    self.eval(e, At(env, scope, frame_for(scope, at.frame), at.depth))
                    for e, env, scope in found
                ]
            )
        if key is not None and isinstance(node.value, cst.Name):
            got = self._indexed(node.value, (key,), at)  # a helper's dict of masks
            if not got.known:  # ``batch["pad"]`` of a parameter: what its callers hand in
                got = self.keyed_param(node.value, key, at)
            if got.known:
                return got
        if key is not None:
            if key in TOKENIZER_KEYS and not self._is_kwargs(node.value, at):
                return self._tokenizer(node)
            if key in TOKENIZER_KEYS:
                return Mask(meaning=KEEP, origin=self.origin(node, by_name=True))
            if key in IGNORE_PARAM_NAMES and not self._is_kwargs(node.value, at):
                return self._padding(node)
            return UNKNOWN_MASK
        inner = self.eval(node.value, at)
        if inner.none or not inner.known:
            return UNKNOWN_MASK
        layout = index_layout(inner.layout, node.slice)
        return replace(
            inner, layout=layout, fill=None, shape_origin=self._shape_origin(inner, layout, node)
        )

    def _is_kwargs(self, node, at: At) -> bool:
        if not isinstance(node, cst.Name):
            return False
        for d in lookup(node.value, at.env, at.scope):
            if (
                d.kind == "param"
                and isinstance(d.extra, cst.FunctionDef)
                and d.node is d.extra.params.star_kwarg
            ):
                return True
        return False

    # ----------------------------------------------------------------- operators
    def _flip(self, inner: Mask, node, bitwise: bool = False, kind: Optional[Kind] = None) -> Mask:
        if inner.none:
            return UNKNOWN_MASK
        if inner.meaning not in (KEEP, IGNORE) and inner.tri is None:
            return UNKNOWN_MASK
        if bitwise and inner.kind not in (BOOL, None):
            return UNKNOWN_MASK  # ~ on an integer mask is bitwise: -1/-2, not a mask
        tri = tri_complement(inner.tri)
        meaning = tri_meaning(tri) if inner.tri is not None else flip_meaning(inner.meaning)
        new_kind = kind if kind is not None else inner.kind
        origin = Origin(node, self.text(node), by_name=bool(inner.origin and inner.origin.by_name))
        return Mask(
            meaning=meaning,
            kind=new_kind,
            layout=inner.layout,
            dtype="bool" if new_kind == BOOL else inner.dtype,
            tri=tri,
            origin=origin if meaning else None,
            kind_origin=(
                inner.kind_origin if new_kind == inner.kind else Origin(node, self.text(node))
            ),
            shape_origin=inner.shape_origin,
            causal=inner.causal or inner.tri is not None,
            pairwise=inner.pairwise,
        )

    def _binop(self, node: cst.BinaryOperation, at: At) -> Mask:
        op = type(node.operator)
        text = self.text(node)
        if op in (cst.BitAnd, cst.BitOr):
            a = self.eval(node.left, at)
            b = self.eval(node.right, at)
            if op is cst.BitAnd and KEEP in (a.meaning, b.meaning):
                # ESM's ``tokens.ne(pad) & tokens.ne(eos)``: a keep-mask narrowed by
                # another special token's inequality is a keep-mask
                if a.meaning == KEEP and b.meaning is None and _special_ne(node.right):
                    return a
                if b.meaning == KEEP and a.meaning is None and _special_ne(node.left):
                    return b
            if op is cst.BitOr:  # ``adj.bool() | eye``: a keep-mask given the self-loops
                if a.meaning == KEEP and b.fill == "eye":
                    return a
                if b.meaning == KEEP and a.fill == "eye":
                    return b
            a, b = _banded(a, b, op), _banded(b, a, op)
            # ``future | (attention_mask == 0)``, ``causal | prefix``: one meaning
            if a.causal and a.meaning in (KEEP, IGNORE) and b.meaning is None:
                if _compared(node.right, at):
                    b = replace(b, meaning=a.meaning)
            elif b.causal and b.meaning in (KEEP, IGNORE) and a.meaning is None:
                if _compared(node.left, at):
                    a = replace(a, meaning=b.meaning)
            return combine(a, b, node, text, "and" if op is cst.BitAnd else "or")
        if op is cst.Subtract:
            return self._one_minus(node, at)
        if op is cst.Multiply:
            for mask_side, other in ((node.left, node.right), (node.right, node.left)):
                if self.is_big_negative(other, at):
                    inner = self.eval(mask_side, at)
                    if inner.meaning == IGNORE:
                        return additive(self.origin(node), inner.layout, inner.shape_origin)
                    if inner.fill == "ones" and inner.meaning is None:
                        return Mask(fill="neg", layout=inner.layout)  # ones(L, L) * -inf
                    return UNKNOWN_MASK
            a = self.eval(node.left, at)
            b = self.eval(node.right, at)
            return combine(a, b, node, text, "mul")
        if op is cst.Add:
            a = self.eval(node.left, at)
            b = self.eval(node.right, at)
            if (
                ADDITIVE in (a.meaning, b.meaning)
                and (a.meaning in (ADDITIVE, None) and not a.none)
                and (b.meaning in (ADDITIVE, None) and not b.none)
                and a.kind in (ADDITIVE, None)
                and b.kind in (ADDITIVE, None)
            ):
                return additive(self.origin(node), broadcast(a.layout, b.layout), None)
            for m, other, term in ((a, b, node.right), (b, a, node.left)):
                # ``position_bias + mask01``: a float 0/1 mask added into a bias is
                # still added, not applied (T5's bias folded with a keep-mask); the
                # other term named a bias, never the scores themselves
                if (
                    "bias" in (last_name(term) or "").lower()
                    and m.kind == FLOAT01
                    and m.meaning in (KEEP, IGNORE)
                    and not other.none
                    and other.kind in (ADDITIVE, None)
                    and other.meaning in (ADDITIVE, None)
                    and not other.zero_one
                ):
                    return replace(m, layout=broadcast(m.layout, other.layout) or m.layout)
            return UNKNOWN_MASK
        return UNKNOWN_MASK

    def _one_minus(self, node: cst.BinaryOperation, at: At) -> Mask:
        """``1 - m`` / ``1.0 - m`` of a 0/1 mask flips it."""
        one = self._number(node.left, at)
        if one in (1, 1.0) and one is not True:
            inner = self.eval(node.right, at)
            if inner.kind in (FLOAT01, INT) or (
                inner.kind is None and inner.meaning in (KEEP, IGNORE) and inner.origin is not None
            ):
                is_float = isinstance(one, float) and not isinstance(one, bool)
                kind = FLOAT01 if is_float or inner.kind == FLOAT01 else inner.kind
                out = self._flip(inner, node, kind=kind)
                if is_float and inner.kind == INT:
                    out = replace(out, dtype="float32", kind_origin=self.origin(node))
                return out
            if not inner.known and not inner.none and says_mask(node.right):
                # ``1 - mask`` of a mask the code does not show (a collate function's, release
                # review 46's UCE): a bool one cannot be subtracted from, so it holds numbers,
                # and the 0/1 it is inverted as; its meaning unknown
                origin = self.origin(node)
                dtype = "float32" if isinstance(one, float) else None
                return Mask(kind=FLOAT01, dtype=dtype, kind_origin=origin, zero_one=True)
        return UNKNOWN_MASK

    # ----------------------------------------------------------------- calls
    def _call(self, node: cst.Call, at: At) -> Mask:
        func = node.func
        qn = None
        if not (
            isinstance(func, cst.Attribute)
            and not isinstance(func.value, (cst.Name, cst.Attribute))
        ):
            qn = self.qualname(func, at.env, at.scope)
        if qn is not None and qn.startswith("torch."):
            return self._torch_call(qn, node, at)
        if qn in EINOPS_REARRANGE:
            return self._rearrange(node, at)
        if qn in EINOPS_REPEAT:  # ``repeat(mask, "b j -> (b h) () j", h=h)``
            return self._einops_repeat(node, at)
        if isinstance(func, cst.Attribute) and qn is None:
            got = self._method_call(func.attr.value, func.value, node, at)
            if got is not None:
                return got
        got = hooked(self, node, at)  # a base's abstract hook, one subclass's override read
        if got is not None:
            return got
        found = self.callee(node, at.env, at.scope)
        if found is not None:
            return self._helper(found, node, at, None)
        stored = self.stored_functions(node, at.env, at.scope)
        if stored is not None:  # self.make = onnx_make if onnxable else make
            return self._agreed([self._helper((f, 0), node, at, None) for f in stored])
        made = self._closures(node, at)
        if made is not None:  # the function a factory returned (make_pad_fn(pad_id)(ids))
            return made
        project = getattr(self.ctx, "project", None)
        if project is not None:  # a mask builder in another project file (docs/reach.md)
            got = project.returned(
                node, at.env, at.scope, self.text(node.func) + "()", lambda e: self.eval(e, at)
            )
            if got is not None:
                return got
            got = self._instance_mask(project, node, at)
            if got is not None:  # ``self.causal_mask(L)``: a plain class's ``__call__``
                return got
        return UNKNOWN_MASK

    def _instance_mask(self, project, node: cst.Call, at: At, index=()) -> Optional[Mask]:
        """What a call of an instance built from a class of another project
        file returns (its ``__call__``, a module's ``forward``; with
        ``index``, that element of its tuple), else None."""
        built, method = self._built_instance(node.func, at), None
        if built is None and isinstance(node.func, cst.Attribute):  # ``self.masker.valid(n)``
            built, method = self._built_instance(node.func.value, at), node.func.attr.value
        if built is None:
            return None
        return project.instance_returned(
            built.node,
            (built.env, built.scope),
            node,
            at.env,
            at.scope,
            self.text(node.func) + "()",
            lambda e: self.eval(e, at),
            index,
            method,
        )

    def _built_instance(self, func, at: At):
        """The one assignment ``self.<attr> = Class(...)`` of the instance
        ``func`` (``self.<attr>``) holds, the class a name; else None."""
        defs = self.instance_assignments(func, at.env, at.scope)
        if not defs or len(defs) != 1:
            return None
        d = defs[0]
        side = fixed_side(d.node, d.env, d.scope, cst.Call) if d.index in ((), None) else None
        if side is not None:  # ``Keep(n) if keep_style else Ignore(n)``, the program fixing it
            d = Def(d.kind, side, d.env, d.scope, d.index)
        if d.index not in ((), None) or not isinstance(d.node, cst.Call):
            return None
        return d if isinstance(d.node.func, (cst.Name, cst.Attribute)) else None


def _banded(band: Mask, other: Mask, op) -> Mask:
    """A sliding window's far triangle (``Mask.band``) given its meaning by
    the causal triangle on the other side of the diagonal it is combined
    with: ``triu(ones, 1) | tril(ones, diagonal=-window)`` marks the future
    and the far past (True = ignore); ``tril(ones) & triu(ones,
    diagonal=-window)`` keeps the near past (True = keep).  Any other pair
    says nothing."""
    if band.band is None or other.tri is None or other.meaning is None:
        return band
    side = other.tri[0]
    if op is cst.BitOr and other.meaning == IGNORE and side == "upper" and band.band == "lower":
        return replace(band, meaning=IGNORE, origin=band.shape_origin)
    if op is cst.BitAnd and other.meaning == KEEP and side == "lower" and band.band == "upper":
        return replace(band, meaning=KEEP, origin=band.shape_origin)
    return band


def _mutated_names(root: cst.CSTNode) -> Dict[str, list]:
    """Names changed in place in a function (or module) body, not counting
    nested functions and classes: ``x.fill_(v)``, ``x.masked_fill_(m, v)``,
    ``x[i] = v``, ``x[i] += v``; for each, the changing nodes and whether
    each stands in a loop."""
    out: Dict[str, list] = {}
    start = children(root.body) if isinstance(root, cst.FunctionDef) else children(root)
    stack = [(n, False) for n in start]
    while stack:
        n, in_loop = stack.pop()
        if isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        bases = []
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute):
            attr = n.func.attr.value
            if attr.endswith("_") and not attr.endswith("__") and attr not in _HARMLESS_INPLACE:
                bases.append(_root_of(n.func.value))
        elif isinstance(n, cst.Assign) and not _zero_or_one(n.value):
            bases.extend(
                _root_of(t.target.value) for t in n.targets if isinstance(t.target, cst.Subscript)
            )
        elif isinstance(n, cst.Assign):
            # ``causal[:, :prefix] = 1.0`` writes the mask's own values: it keeps its
            # meaning; the ones written into zeros (``ONES``) make a 0/1 mask of them
            for t in n.targets:
                root = _root_of(t.target.value) if isinstance(t.target, cst.Subscript) else None
                if root is not None and _one(n.value):
                    out.setdefault(ONES + root, []).append((t.target, in_loop))
        elif isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Subscript):
            bases.append(_root_of(n.target.value))
        for base in bases:
            if base is not None:
                out.setdefault(base, []).append((n, in_loop))
        in_loop = in_loop or isinstance(n, _LOOPS)
        stack.extend((c, in_loop) for c in children(n))
    return out


# the key prefix under which ``_mutated_names`` lists a name's writes of 1 or True
ONES = "1:"


def _one(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Integer, cst.Float)):
        return node.evaluated_value == 1
    return isinstance(node, cst.Name) and node.value == "True"


def _zero_or_one(node: cst.BaseExpression) -> bool:
    """A literal 0, 1, 0.0, 1.0, True or False."""
    if isinstance(node, (cst.Integer, cst.Float)):
        return node.evaluated_value in (0, 1)
    return isinstance(node, cst.Name) and node.value in ("True", "False")


_LOOPS = (cst.For, cst.While, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def _root_of(node: cst.CSTNode) -> Optional[str]:
    """``m`` for ``m``, ``m[...]``, ``m.view(...)``-free chains of subscripts."""
    while isinstance(node, cst.Subscript):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


_SPECIAL_ENDS = ("_idx", "_id", "_index", "_token")


def _compared(node, at: At) -> bool:
    """A comparison (in parentheses, indexed or not, a local bound once to
    one, or two joined by ``&``/``|``): a bool tensor.  Joined to a causal
    triangle, it means what the triangle means: masks are joined with masks
    of their own meaning, as BLOOM's ``causal | (attention_mask == 0)`` and
    a prefix LM's ``causal | prefix``; the other meaning there would make no
    mask anyone means."""
    env, scope = at.env, at.scope
    for _ in range(3):
        while isinstance(node, cst.Subscript):
            node = node.value
        if not isinstance(node, cst.Name):
            break
        defs = lookup(node.value, env, scope)
        if len(defs) != 1 or defs[0].kind != "assign" or defs[0].node is None:
            return False
        node, env, scope = defs[0].node, defs[0].env, defs[0].scope
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.BitAnd, cst.BitOr)):
        at = At(env, scope, at.frame, at.depth)
        return _compared(node.left, at) and _compared(node.right, at)
    return isinstance(node, cst.Comparison)


def _special_ne(node) -> bool:
    """``tokens != eos_idx`` or ``tokens.ne(self.cls_idx)``: token ids against
    a special token's id, True everywhere but at that token."""
    from .names import is_token_name, last_name

    if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
        if not isinstance(node.comparisons[0].operator, cst.NotEqual):
            return False
        sides = (node.left, node.comparisons[0].comparator)
    elif (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "ne"
        and len(node.args) == 1
        and node.args[0].keyword is None
    ):
        sides = (node.func.value, node.args[0].value)
    else:
        return False
    for tokens, special in (sides, sides[::-1]):
        name = (last_name(special) or "").lower()
        if is_token_name(tokens) and name.endswith(_SPECIAL_ENDS):
            return True
    return False
