"""What a mask means: a small abstract domain and its evaluator.

A mask value (``Mask``) has four independent parts, each possibly unknown:

- meaning: ``keep`` (True/1 = attend), ``ignore`` (True/1 = masked out) or
  ``additive`` (0 / -inf, or a bias added to the scores);
- kind: ``bool``, ``float01`` (a float tensor holding 0/1), ``int`` (an integer
  tensor holding 0/1) or ``additive``; with the dtype text where known;
- layout: the axes of the tensor, as labels (``("N", "S")`` is an (N, S)
  padding mask, ``("L", "S")`` a square mask, ``("N", "1", "1", "S")``
  broadcast-ready), from which the shape class is derived;
- origin: the expression that decided the meaning (and, separately, the kind
  and the layout), so that a finding can say where its knowledge came from.

``MaskEvaluator.eval`` computes the value of an expression at a point of the
flow pass (an environment of reaching definitions).  It knows a fixed list of
sources (pad-id comparisons, ``arange`` against lengths, triangles of ones,
``generate_square_subsequent_mask``, tokenizer ``attention_mask``s, parameters
named like padding masks) and transfers (inversions, dtype conversions,
reshapes, slicing, ``masked_fill`` with -inf, ``&``/``|``, helper functions of
the same file, ``self.<attr>`` buffers, branches).  Anything else is unknown,
and an unknown part never makes a rule fire.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Sequence, Tuple

import libcst as cst

from .. import torch_api
from ..flow import CallSite, ClassInfo, Def, Env, Scope, lookup
from ..values import UNKNOWN, unpacked, value_of

KEEP = "keep"
IGNORE = "ignore"
ADDITIVE = "additive"

BOOL = "bool"
FLOAT01 = "float01"
INT = "int"

PADDING = "padding"
SQUARE = "square"
BROADCAST = "broadcast"

MAX_DEPTH = 40
MAX_CALLER_DEPTH = 3
BIG_NEGATIVE = -1e3  # a fill at or below this masks a score out after softmax
_TEXT_MAX = 48

Layout = Tuple[str, ...]


# --------------------------------------------------------------------------- the domain


@dataclass(frozen=True)
class Origin:
    """The expression a part of a mask value was decided by."""

    node: cst.CSTNode
    text: str
    by_name: bool = False  # decided by a name only (a parameter called key_padding_mask)


@dataclass(frozen=True)
class Mask:
    meaning: Optional[str] = None  # KEEP | IGNORE | ADDITIVE | None
    kind: Optional[str] = None  # BOOL | FLOAT01 | INT | ADDITIVE | None
    layout: Optional[Layout] = None
    dtype: Optional[str] = None
    tri: Optional[Tuple[str, int]] = None  # ("lower" | "upper", diagonal) for triangles
    fill: Optional[str] = None  # "ones" | "zeros" | "neg" for constant tensors
    origin: Optional[Origin] = None  # of the meaning
    kind_origin: Optional[Origin] = None
    shape_origin: Optional[Origin] = None
    none: bool = False  # the value None: no mask at all
    causal: bool = False  # the meaning comes from a triangle (positions against positions)

    @property
    def shape(self) -> Optional[str]:
        return shape_class(self.layout)

    @property
    def known(self) -> bool:
        return self.meaning is not None or self.kind is not None or self.shape is not None

    def evidence(self, text_of_origin) -> Dict[str, object]:
        """The JSON form a runtime witness reads."""
        return {
            "meaning": self.meaning,
            "kind": self.kind,
            "shape": self.shape,
            "source": text_of_origin(self.origin) if self.origin is not None else None,
            "dtype": self.dtype,
        }


UNKNOWN_MASK = Mask()
NONE_MASK = Mask(none=True)


def shape_class(layout: Optional[Layout]) -> Optional[str]:
    if layout is None:
        return None
    if layout == ("N", "S"):
        return PADDING
    if len(layout) == 4 and layout[-1] == "S" and layout[0] in ("N", "1", "?"):
        return BROADCAST
    if len(layout) >= 2 and layout[-2:] == ("L", "S") and "N" not in layout:
        return SQUARE
    return None


def flip_meaning(meaning: Optional[str]) -> Optional[str]:
    return {KEEP: IGNORE, IGNORE: KEEP}.get(meaning or "")


def tri_meaning(tri: Optional[Tuple[str, int]]) -> Optional[str]:
    """tril(ones, d >= 0) keeps the past (True = attend); triu(ones, d >= 1)
    marks the future (True = ignore); other diagonals say nothing sure."""
    if tri is None:
        return None
    side, diag = tri
    if side == "lower" and diag >= 0:
        return KEEP
    if side == "upper" and diag >= 1:
        return IGNORE
    return None


def tri_complement(tri: Optional[Tuple[str, int]]) -> Optional[Tuple[str, int]]:
    if tri is None:
        return None
    side, diag = tri
    return ("upper", diag + 1) if side == "lower" else ("lower", diag - 1)


def tri_transpose(tri: Optional[Tuple[str, int]]) -> Optional[Tuple[str, int]]:
    if tri is None:
        return None
    side, diag = tri
    return ("upper" if side == "lower" else "lower", -diag)


def join(a: Mask, b: Mask) -> Mask:
    """The value on either of two paths (branches, several definitions).
    ``None`` on one path contributes nothing: no mask there, nothing wrong."""
    if a.none:
        return b
    if b.none:
        return a
    if a == b:
        return a
    meaning = a.meaning if a.meaning == b.meaning else None
    kind = a.kind if a.kind == b.kind else None
    layout = a.layout if a.layout == b.layout else None
    return Mask(
        meaning=meaning,
        kind=kind,
        layout=layout,
        dtype=a.dtype if a.dtype == b.dtype else None,
        tri=a.tri if a.tri == b.tri else None,
        fill=a.fill if a.fill == b.fill else None,
        origin=(a.origin or b.origin) if meaning is not None else None,
        kind_origin=(a.kind_origin or b.kind_origin) if kind is not None else None,
        shape_origin=(a.shape_origin or b.shape_origin) if layout is not None else None,
        causal=(a.causal or b.causal) if meaning is not None else False,
    )


def join_all(values: Sequence[Mask]) -> Mask:
    if not values:
        return UNKNOWN_MASK
    out = values[0]
    for v in values[1:]:
        out = join(out, v)
    return out


def broadcast(a: Optional[Layout], b: Optional[Layout]) -> Optional[Layout]:
    """Layout of an elementwise combination (numpy broadcasting on labels)."""
    if a is None or b is None:
        return None
    n = max(len(a), len(b))
    a2 = ("1",) * (n - len(a)) + a
    b2 = ("1",) * (n - len(b)) + b
    out = []
    for x, y in zip(a2, b2):
        if x == y or y == "1":
            out.append(x)
        elif x == "1":
            out.append(y)
        else:
            return None
    return tuple(out)


def combine(a: Mask, b: Mask, node: cst.CSTNode, text: str, op: str) -> Mask:
    """``a & b``, ``a | b``, ``a * b`` of two 0/1 masks: the same meaning on
    both sides keeps it (the set algebra then only narrows or widens it);
    opposite meanings are mixed and unknown."""
    if a.none or b.none or a.meaning not in (KEEP, IGNORE) or a.meaning != b.meaning:
        return UNKNOWN_MASK
    if op == "mul":
        kinds = {a.kind, b.kind}
        if None in kinds:
            kind = None
        elif FLOAT01 in kinds:
            kind = FLOAT01
        elif INT in kinds:
            kind = INT
        else:
            kind = BOOL
    else:
        kind = a.kind if a.kind == b.kind else None
    layout = broadcast(a.layout, b.layout)
    origin = Origin(
        node, text, by_name=bool(a.origin and a.origin.by_name and b.origin and b.origin.by_name)
    )
    return Mask(
        meaning=a.meaning,
        kind=kind,
        layout=layout,
        dtype=a.dtype if a.dtype == b.dtype else None,
        origin=origin,
        kind_origin=(a.kind_origin or b.kind_origin) if kind else None,
        shape_origin=Origin(node, text) if layout else None,
        causal=a.causal or b.causal,
    )


# --------------------------------------------------------------------------- torch names

_DTYPES = {
    "torch.bool": (BOOL, "bool"),
    "torch.float": (FLOAT01, "float32"),
    "torch.float32": (FLOAT01, "float32"),
    "torch.half": (FLOAT01, "float16"),
    "torch.float16": (FLOAT01, "float16"),
    "torch.double": (FLOAT01, "float64"),
    "torch.float64": (FLOAT01, "float64"),
    "torch.bfloat16": (FLOAT01, "bfloat16"),
    "torch.long": (INT, "int64"),
    "torch.int64": (INT, "int64"),
    "torch.int": (INT, "int32"),
    "torch.int32": (INT, "int32"),
    "torch.short": (INT, "int16"),
    "torch.int16": (INT, "int16"),
    "torch.int8": (INT, "int8"),
    "torch.uint8": (INT, "uint8"),
    "torch.FloatTensor": (FLOAT01, "float32"),
    "torch.LongTensor": (INT, "int64"),
    "torch.BoolTensor": (BOOL, "bool"),
    "torch.ByteTensor": (INT, "uint8"),
    "torch.cuda.FloatTensor": (FLOAT01, "float32"),
    "torch.cuda.BoolTensor": (BOOL, "bool"),
}
_METHOD_DTYPES = {
    "bool": (BOOL, "bool"),
    "float": (FLOAT01, "float32"),
    "half": (FLOAT01, "float16"),
    "double": (FLOAT01, "float64"),
    "bfloat16": (FLOAT01, "bfloat16"),
    "long": (INT, "int64"),
    "int": (INT, "int32"),
    "short": (INT, "int16"),
    "byte": (INT, "uint8"),
    "char": (INT, "int8"),
}
_SAME = {
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
}
_FLIPS = {"logical_not", "logical_not_", "bitwise_not", "bitwise_not_"}
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
_COMPARE_METHODS = {
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
_COMPARE_OPS = {
    cst.Equal: "==",
    cst.NotEqual: "!=",
    cst.LessThan: "<",
    cst.LessThanEqual: "<=",
    cst.GreaterThan: ">",
    cst.GreaterThanEqual: ">=",
}
_MIRROR = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_FRESH = {
    "torch.ones": "ones",
    "torch.ones_like": "ones",
    "torch.zeros": "zeros",
    "torch.zeros_like": "zeros",
    "torch.full": "full",
    "torch.full_like": "full",
    "torch.empty": "empty",
    "torch.empty_like": "empty",
}
_FRESH_METHODS = {
    "new_ones": "ones",
    "new_zeros": "zeros",
    "new_full": "full",
    "new_empty": "empty",
}
_LIKE = {"torch.ones_like", "torch.zeros_like", "torch.full_like", "torch.empty_like"}
_GENERATE = {
    torch_api.GENERATE_SQUARE_SUBSEQUENT_MASK,
    "torch.nn.modules.transformer._generate_square_subsequent_mask",
}

# names: weaker evidence than code, used only where the code says nothing
IGNORE_PARAM_NAMES = {
    "key_padding_mask",
    "src_key_padding_mask",
    "tgt_key_padding_mask",
    "memory_key_padding_mask",
    "padding_mask",
    "pad_mask",
}
KEEP_PARAM_NAMES = {"attention_mask"}
TOKENIZER_KEYS = {"attention_mask"}
_TOKEN_WORDS = ("ids", "token", "tok")
_TOKEN_NAMES = {
    "src",
    "tgt",
    "input",
    "inputs",
    "text",
    "texts",
    "captions",
    "seq",
    "seqs",
    "source",
    "target",
    "targets",
    "sentences",
    "words",
}


def _last_name(node: cst.CSTNode) -> Optional[str]:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return None


def is_pad_name(node: cst.CSTNode) -> bool:
    """``pad_id``, ``PAD_IDX``, ``self.padding_idx``, ``tokenizer.pad_token_id``."""
    name = _last_name(node)
    if name is None:
        return False
    low = name.lower()
    return "pad" in low and "mask" not in low and "len" not in low


def is_token_name(node: cst.CSTNode) -> bool:
    """Names that hold token ids: ``input_ids``, ``tokens``, ``src``."""
    name = _last_name(node)
    if name is None:
        if isinstance(node, cst.Subscript):
            key = _string_key(node)
            return (
                key is not None and is_token_name(cst.Name(key))
                if key and key.isidentifier()
                else False
            )
        return False
    low = name.lower()
    if "mask" in low or "len" in low or "pos" in low:
        return False
    return any(w in low for w in _TOKEN_WORDS) or low in _TOKEN_NAMES


def _string_key(node: cst.Subscript) -> Optional[str]:
    if len(node.slice) != 1:
        return None
    el = node.slice[0].slice
    if isinstance(el, cst.Index) and isinstance(el.value, cst.SimpleString):
        try:
            key = el.value.evaluated_value
        except Exception:  # pragma: no cover - odd string prefixes
            return None
        return key if isinstance(key, str) else None
    return None


def _kw(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def _pos(call: cst.Call, i: int) -> Optional[cst.BaseExpression]:
    n = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is None:
            if n == i:
                return arg.value
            n += 1
    return None


def _arg(call: cst.Call, i: int, name: str) -> Optional[cst.BaseExpression]:
    found = _kw(call, name)
    return found if found is not None else _pos(call, i)


def _positional(call: cst.Call) -> Optional[List[cst.BaseExpression]]:
    out = []
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is None:
            out.append(arg.value)
    return out


def _is_none(node: Optional[cst.CSTNode]) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


# --------------------------------------------------------------------------- frames


class Frame:
    """Parameters of a helper function bound to a caller's argument expressions."""

    __slots__ = ("func", "fscope", "args", "env", "scope", "parent")

    def __init__(self, func, fscope, args, env, scope, parent):
        self.func = func  # the FunctionDef
        self.fscope = fscope
        self.args: Dict[str, Optional[cst.BaseExpression]] = args  # None: unknown (a splat)
        self.env = env  # the caller's environment
        self.scope = scope
        self.parent: Optional[Frame] = parent


def _inside(scope: Optional[Scope], outer: Scope) -> bool:
    while scope is not None:
        if scope is outer:
            return True
        scope = scope.parent
    return False


def _frame_for(scope: Optional[Scope], frame: Optional[Frame]) -> Optional[Frame]:
    while frame is not None and not _inside(scope, frame.fscope):
        frame = frame.parent
    return frame


def _params(func: cst.FunctionDef) -> List[cst.Param]:
    p = func.params
    return list(p.posonly_params) + list(p.params)


def bind_call(
    func: cst.FunctionDef, call: cst.Call, skip: int
) -> Dict[str, Optional[cst.BaseExpression]]:
    """Parameter name -> argument expression; None when a splat may carry it.
    A parameter the call does not pass is absent (its default applies)."""
    positional = [p.name.value for p in _params(func)][skip:]
    kwonly = {p.name.value for p in func.params.kwonly_params}
    out: Dict[str, Optional[cst.BaseExpression]] = {}
    i = 0
    star = double = False
    for arg in call.args:
        if arg.star == "*":
            star = True
        elif arg.star == "**":
            double = True
        elif arg.keyword is not None:
            out[arg.keyword.value] = arg.value
        else:
            if i < len(positional):
                out[positional[i]] = arg.value
            i += 1
    if star:
        for name in positional[i:]:
            out.setdefault(name, None)
    if double:
        for name in positional[i:] + sorted(kwonly):
            out.setdefault(name, None)
    return out


def _static_kind(func: cst.FunctionDef) -> str:
    for dec in func.decorators:
        d = dec.decorator
        if isinstance(d, cst.Name) and d.value in ("staticmethod", "classmethod"):
            return d.value
    return "method"


# --------------------------------------------------------------------------- the evaluator


class MaskEvaluator:
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
        self._callers: Optional[Dict[int, List[Tuple[CallSite, int]]]] = None
        self._positions = None
        self._caller_depth = 0
        self._mutation_cache: Dict[int, set] = {}

    # ----------------------------------------------------------------- helpers
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
        if self._positions is None:
            from libcst.metadata import MetadataWrapper, PositionProvider

            self._positions = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(
                PositionProvider
            )
        pos = self._positions.get(node)
        return pos.start.line if pos is not None else None

    def describe(self, origin: Optional[Origin]) -> str:
        if origin is None:
            return "mask"
        line = self.line(origin.node)
        where = f"line {line}" if line is not None else "this file"
        return f"mask from {where} ({origin.text})"

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
        return self.eval(expr, site.env, site.scope, None, 0)

    def eval(
        self,
        node: cst.CSTNode,
        env: Env,
        scope: Optional[Scope],
        frame: Optional[Frame],
        depth: int,
    ) -> Mask:
        if depth > MAX_DEPTH:
            return UNKNOWN_MASK
        try:
            return self._eval(node, env, scope, frame, depth + 1)
        except RecursionError:  # pragma: no cover - pathological nesting
            return UNKNOWN_MASK

    def _eval(self, node, env, scope, frame, depth) -> Mask:
        t = type(node)
        if t is cst.Name:
            if node.value == "None":
                return NONE_MASK
            return self._name(node, env, scope, frame, depth)
        if t is cst.Attribute:
            return self._attribute(node, env, scope, frame, depth)
        if t is cst.Subscript:
            return self._subscript(node, env, scope, frame, depth)
        if t is cst.Call:
            return self._call(node, env, scope, frame, depth)
        if t is cst.Comparison:
            if len(node.comparisons) != 1:
                return UNKNOWN_MASK
            comp = node.comparisons[0]
            op = _COMPARE_OPS.get(type(comp.operator))
            if op is None:
                return UNKNOWN_MASK
            return self._compare(node.left, op, comp.comparator, node, env, scope, frame, depth)
        if t is cst.UnaryOperation:
            if isinstance(node.operator, cst.BitInvert):
                inner = self.eval(node.expression, env, scope, frame, depth)
                return self._flip(inner, node, bitwise=True)
            return UNKNOWN_MASK
        if t is cst.BinaryOperation:
            return self._binop(node, env, scope, frame, depth)
        if t is cst.IfExp:
            return join(
                self.eval(node.body, env, scope, frame, depth),
                self.eval(node.orelse, env, scope, frame, depth),
            )
        if t is cst.NamedExpr:
            return self.eval(node.value, env, scope, frame, depth)
        return UNKNOWN_MASK

    # ----------------------------------------------------------------- names
    def _name(self, node: cst.Name, env, scope, frame, depth) -> Mask:
        defs = lookup(node.value, env, scope)
        if not defs:
            return UNKNOWN_MASK
        for d in defs:
            if d.scope is not None and node.value in self._mutations(d.scope):
                return UNKNOWN_MASK  # changed in place: x.fill_(v), x.triu_(1), x[i] = v
        return join_all([self._def(d, frame, depth) for d in defs])

    def _def(self, d: Def, frame: Optional[Frame], depth: int) -> Mask:
        frame = _frame_for(d.scope, frame)
        cacheable = frame is None
        key = (id(d), self._caller_depth)
        if cacheable and key in self._def_cache:
            return self._def_cache[key]
        guard = (id(d), id(frame))
        if guard in self._active:
            return UNKNOWN_MASK
        self._active.add(guard)
        try:
            value = self._def_value(d, frame, depth)
        finally:
            self._active.discard(guard)
        if cacheable:
            self._def_cache[key] = value
        return value

    def _def_value(self, d: Def, frame, depth) -> Mask:
        kind = d.kind
        if kind == "assign":
            return self.eval(d.node, d.env, d.scope, frame, depth)
        if kind == "unpack":
            el = unpacked(d)
            if el is not None:
                return self.eval(el, d.env, d.scope, frame, depth)
            return self._indexed(d.node, d.index, d.env, d.scope, frame, depth)
        if kind == "param":
            return self._param(d, frame, depth)
        if kind == "augassign":
            return self._augassign(d, frame, depth)
        return UNKNOWN_MASK

    def _augassign(self, d: Def, frame, depth) -> Mask:
        node: cst.AugAssign = d.node
        op = type(node.operator)
        prev = join_all([self._def(p, frame, depth) for p in d.extra]) if d.extra else UNKNOWN_MASK
        other = self.eval(node.value, d.env, d.scope, frame, depth)
        text = self.text(node)
        if op in (cst.BitAndAssign, cst.BitOrAssign):
            return combine(prev, other, node, text, "and" if op is cst.BitAndAssign else "or")
        if op is cst.MultiplyAssign:
            return combine(prev, other, node, text, "mul")
        if op is cst.AddAssign and prev.meaning == ADDITIVE and other.meaning == ADDITIVE:
            return Mask(
                meaning=ADDITIVE,
                kind=ADDITIVE,
                origin=prev.origin,
                kind_origin=prev.kind_origin,
                layout=broadcast(prev.layout, other.layout),
            )
        return UNKNOWN_MASK

    def _param(self, d: Def, frame: Optional[Frame], depth: int) -> Mask:
        p: cst.Param = d.node
        name = p.name.value
        func = d.extra
        if frame is not None and frame.func is func:
            if name in frame.args:
                arg = frame.args[name]
                if arg is None:
                    return UNKNOWN_MASK
                return self.eval(arg, frame.env, frame.scope, frame.parent, depth)
            if p.default is not None:
                return self.eval(p.default, {}, d.scope.parent if d.scope else None, None, depth)
            return UNKNOWN_MASK
        if not isinstance(func, cst.FunctionDef):
            return UNKNOWN_MASK  # a lambda's parameter
        key = (id(p), self._caller_depth)
        if key in self._param_cache:
            return self._param_cache[key]
        guard = ("param", id(p))
        if guard in self._active:
            return UNKNOWN_MASK
        self._active.add(guard)
        try:
            value = self._from_callers(func, name, p, d, depth)
        finally:
            self._active.discard(guard)
        if value.meaning is None and value.kind is None and not value.none:
            named = self._by_name(p, name, func)
            if named is not None:
                value = named
        self._param_cache[key] = value
        return value

    def _by_name(self, p: cst.Param, name: str, func) -> Optional[Mask]:
        if p is func.params.star_kwarg or p is func.params.star_arg:
            return None
        low = name.lower()
        if low in IGNORE_PARAM_NAMES:
            origin = Origin(p, f"parameter {name}", by_name=True)
            return Mask(meaning=IGNORE, kind=BOOL, dtype="bool", origin=origin, kind_origin=origin)
        if low in KEEP_PARAM_NAMES and any(
            is_token_name(cst.Name(q.name.value))
            for q in _params(func) + list(func.params.kwonly_params)
        ):
            # beside the token ids it is the tokenizer's mask (1 = real token);
            # alone (an attention layer's parameter) it is whatever the model
            # made of it: additive, or True = ignore (transformers does both)
            return Mask(meaning=KEEP, origin=Origin(p, f"parameter {name}", by_name=True))
        return None

    def _from_callers(
        self, func: cst.FunctionDef, name: str, p: cst.Param, d: Def, depth: int
    ) -> Mask:
        """The join of what every call of ``func`` in this file passes as ``name``."""
        callers = self.callers().get(id(func), [])
        if not callers or self._caller_depth >= MAX_CALLER_DEPTH:
            return UNKNOWN_MASK
        values = []
        self._caller_depth += 1
        try:
            for site, skip in callers:
                args = bind_call(func, site.node, skip)
                if name in args:
                    arg = args[name]
                    if arg is None:
                        return UNKNOWN_MASK
                    values.append(self.eval(arg, site.env, site.scope, None, depth))
                elif p.default is not None:
                    if _is_none(p.default):
                        values.append(NONE_MASK)
                    else:
                        values.append(
                            self.eval(
                                p.default, {}, d.scope.parent if d.scope else None, None, depth
                            )
                        )
                else:
                    return UNKNOWN_MASK
        finally:
            self._caller_depth -= 1
        for v in values:
            if not v.none and v.meaning is None and v.kind is None:
                return UNKNOWN_MASK
        return join_all(values)

    def _mutations(self, scope: Scope) -> set:
        key = id(scope)
        found = self._mutation_cache.get(key)
        if found is None:
            found = _mutated_names(scope.node)
            self._mutation_cache[key] = found
        return found

    # ----------------------------------------------------------------- callers
    def callers(self) -> Dict[int, List[Tuple[CallSite, int]]]:
        if self._callers is None:
            index: Dict[int, List[Tuple[CallSite, int]]] = {}
            for site in self.flow.calls:
                found = self.callee(site.node, site.env, site.scope)
                if found is not None:
                    func, skip = found
                    index.setdefault(id(func), []).append((site, skip))
            self._callers = index
        return self._callers

    def callee(self, call: cst.Call, env, scope) -> Optional[Tuple[cst.FunctionDef, int]]:
        """The function of this file a call runs, and how many leading
        parameters (``self``) the call does not pass."""
        func = call.func
        if isinstance(func, cst.Name):
            defs = lookup(func.value, env, scope)
            if defs and all(d.kind == "def" for d in defs):
                if len({id(d.node) for d in defs}) == 1:
                    return defs[0].node, 0
                return None
            if not defs or any(d.kind in ("def", "class", "import") for d in defs):
                return None
        if isinstance(func, cst.Attribute):
            owner = func.value
            if isinstance(owner, cst.Name):
                defs = lookup(owner.value, env, scope)
                if len(defs) == 1 and defs[0].kind == "self":
                    method = self._method(defs[0].extra, func.attr.value)
                    if method is not None:
                        return method, 0 if _static_kind(method) == "staticmethod" else 1
                    return self._forward_of(func, env, scope)  # self.block(...): a module
            if func.attr.value == "forward":
                return self._forward_of(owner, env, scope)
        if isinstance(func, (cst.Name, cst.Attribute, cst.Subscript)):
            return self._forward_of(func, env, scope)
        return None

    def _forward_of(self, node, env, scope) -> Optional[Tuple[cst.FunctionDef, int]]:
        classes = self.resolver.instance_classes(node, env, scope)
        if not classes:
            return None
        methods = {id(m): m for m in (self._method(c, "forward") for c in classes) if m is not None}
        if len(methods) != 1 or any(self._method(c, "forward") is None for c in classes):
            return None
        return next(iter(methods.values())), 1

    def _method(self, cls: ClassInfo, name: str) -> Optional[cst.FunctionDef]:
        for c in self.resolver.base_classes(cls):
            if name in c.methods:
                return c.methods[name]
        return None

    def _self_class(self, node: cst.Attribute, env, scope) -> Optional[ClassInfo]:
        return self.resolver.self_class(node, env, scope)

    def _self_attr_defs(self, node: cst.Attribute, env, scope) -> Optional[List[Def]]:
        cls = self._self_class(node, env, scope)
        if cls is None:
            return None
        return self.resolver.attr_defs(cls, node.attr.value)

    # ----------------------------------------------------------------- attributes
    def _attribute(self, node: cst.Attribute, env, scope, frame, depth) -> Mask:
        attr = node.attr.value
        cls = self._self_class(node, env, scope)
        if cls is not None:
            defs = self.resolver.attr_defs(cls, attr)
            if not defs:
                return UNKNOWN_MASK
            return join_all([self._def(d, None, depth) for d in defs])
        if attr in ("T", "mT"):
            inner = self.eval(node.value, env, scope, frame, depth)
            return self._transpose(inner, node, two_d=attr == "T")
        if attr == "data":
            return self.eval(node.value, env, scope, frame, depth)
        if attr in TOKENIZER_KEYS:
            return self._tokenizer(node)
        return UNKNOWN_MASK

    def _tokenizer(self, node) -> Mask:
        origin = self.origin(node, by_name=True)
        return Mask(meaning=KEEP, kind=INT, dtype="int64", origin=origin, kind_origin=origin)

    # ----------------------------------------------------------------- subscripts
    def _subscript(self, node: cst.Subscript, env, scope, frame, depth) -> Mask:
        key = _string_key(node)
        if key is not None:
            if key in TOKENIZER_KEYS and not self._is_kwargs(node.value, env, scope):
                return self._tokenizer(node)
            if key in TOKENIZER_KEYS:
                return Mask(meaning=KEEP, origin=self.origin(node, by_name=True))
            return UNKNOWN_MASK
        inner = self.eval(node.value, env, scope, frame, depth)
        if inner.none or not inner.known:
            return UNKNOWN_MASK
        layout = _index_layout(inner.layout, node.slice)
        return replace(
            inner, layout=layout, fill=None, shape_origin=self._shape_origin(inner, layout, node)
        )

    def _is_kwargs(self, node, env, scope) -> bool:
        if not isinstance(node, cst.Name):
            return False
        for d in lookup(node.value, env, scope):
            if (
                d.kind == "param"
                and isinstance(d.extra, cst.FunctionDef)
                and d.node is d.extra.params.star_kwarg
            ):
                return True
        return False

    def _shape_origin(self, inner: Mask, layout, node) -> Optional[Origin]:
        if layout is None:
            return None
        if layout == inner.layout:
            return inner.shape_origin
        return self.origin(node)

    # ----------------------------------------------------------------- operators
    def _flip(self, inner: Mask, node, bitwise: bool = False, kind: Optional[str] = None) -> Mask:
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
        )

    def _binop(self, node: cst.BinaryOperation, env, scope, frame, depth) -> Mask:
        op = type(node.operator)
        text = self.text(node)
        if op in (cst.BitAnd, cst.BitOr):
            a = self.eval(node.left, env, scope, frame, depth)
            b = self.eval(node.right, env, scope, frame, depth)
            return combine(a, b, node, text, "and" if op is cst.BitAnd else "or")
        if op is cst.Subtract:
            one = self._number(node.left, env, scope, frame)
            if one in (1, 1.0) and one is not True:
                inner = self.eval(node.right, env, scope, frame, depth)
                if inner.kind in (FLOAT01, INT) or (
                    inner.kind is None
                    and inner.meaning in (KEEP, IGNORE)
                    and inner.origin is not None
                ):
                    is_float = isinstance(one, float) and not isinstance(one, bool)
                    kind = FLOAT01 if is_float or inner.kind == FLOAT01 else inner.kind
                    out = self._flip(inner, node, kind=kind)
                    if is_float and inner.kind == INT:
                        out = replace(out, dtype="float32", kind_origin=self.origin(node))
                    return out
            return UNKNOWN_MASK
        if op is cst.Multiply:
            for mask_side, other in ((node.left, node.right), (node.right, node.left)):
                if self.is_big_negative(other, env, scope, frame, depth):
                    inner = self.eval(mask_side, env, scope, frame, depth)
                    if inner.meaning == IGNORE:
                        return self._additive(node, inner.layout, inner.shape_origin)
                    if inner.fill == "ones" and inner.meaning is None:
                        return Mask(fill="neg", layout=inner.layout)  # ones(L, L) * -inf
                    return UNKNOWN_MASK
            a = self.eval(node.left, env, scope, frame, depth)
            b = self.eval(node.right, env, scope, frame, depth)
            return combine(a, b, node, text, "mul")
        if op is cst.Add:
            a = self.eval(node.left, env, scope, frame, depth)
            b = self.eval(node.right, env, scope, frame, depth)
            if (
                ADDITIVE in (a.meaning, b.meaning)
                and (a.meaning in (ADDITIVE, None) and not a.none)
                and (b.meaning in (ADDITIVE, None) and not b.none)
                and a.kind in (ADDITIVE, None)
                and b.kind in (ADDITIVE, None)
            ):
                return self._additive(node, broadcast(a.layout, b.layout), None)
            return UNKNOWN_MASK
        return UNKNOWN_MASK

    def _additive(self, node, layout, shape_origin) -> Mask:
        origin = self.origin(node)
        return Mask(
            meaning=ADDITIVE,
            kind=ADDITIVE,
            layout=layout,
            origin=origin,
            kind_origin=origin,
            shape_origin=shape_origin if layout else None,
        )

    # ----------------------------------------------------------------- numbers
    def _number(self, node, env, scope, frame):
        """A numeric constant (int/float/bool), following frame-bound parameters."""
        node = self._through_frame(node, env, scope, frame)
        if node is None:
            return None
        expr, env, scope = node
        if isinstance(expr, cst.Call):
            f = self._float_literal(expr)
            return f
        v = value_of(expr, env, scope)
        if v is UNKNOWN or not isinstance(v, (int, float)):
            return None
        return v

    def _through_frame(self, node, env, scope, frame, hops: int = 0):
        """Follow a helper's parameter to the caller's argument expression."""
        while isinstance(node, cst.Name) and frame is not None and hops < 8:
            defs = lookup(node.value, env, scope)
            if len(defs) != 1 or defs[0].kind != "param":
                break
            d = defs[0]
            fr = _frame_for(d.scope, frame)
            if fr is None or fr.func is not d.extra:
                break
            name = d.node.name.value
            if name in fr.args:
                arg = fr.args[name]
                if arg is None:
                    return None
                node, env, scope, frame = arg, fr.env, fr.scope, fr.parent
            elif d.node.default is not None:
                node, env, scope, frame = d.node.default, {}, d.scope.parent, None
            else:
                return None
            hops += 1
        return node, env, scope

    @staticmethod
    def _float_literal(call: cst.Call):
        if isinstance(call.func, cst.Name) and call.func.value == "float" and len(call.args) == 1:
            arg = call.args[0].value
            if isinstance(arg, cst.SimpleString):
                try:
                    text = arg.evaluated_value
                    return float(text)
                except Exception:
                    return None
            if isinstance(arg, (cst.Integer, cst.Float)):
                return float(arg.evaluated_value)
        return None

    def is_big_negative(self, node, env, scope, frame, depth: int = 0) -> bool:
        """-inf, ``torch.finfo(t).min``, ``-1e9``, ``-10000.0``, a name or
        helper that is one of those: a fill that removes a score."""
        return self._neg(node, env, scope, frame, depth) == "neg"

    def _neg(self, node, env, scope, frame, depth) -> Optional[str]:
        """ "neg" for a big negative, "pos" for a big positive (inf, finfo.max)."""
        if depth > MAX_DEPTH:
            return None
        depth += 1
        t = type(node)
        if t is cst.UnaryOperation and isinstance(node.operator, cst.Minus):
            inner = self._neg(node.expression, env, scope, frame, depth)
            return {"pos": "neg", "neg": "pos"}.get(inner or "")
        if t is cst.UnaryOperation and isinstance(node.operator, cst.Plus):
            return self._neg(node.expression, env, scope, frame, depth)
        if t in (cst.Integer, cst.Float):
            return _sign(node.evaluated_value)
        if t is cst.Call:
            f = self._float_literal(node)
            if f is not None:
                return _sign(f)
            qn = self.qualname(node.func, env, scope)
            if (
                qn
                in (
                    "torch.tensor",
                    "torch.as_tensor",
                    "torch.scalar_tensor",
                    "numpy.array",
                    "builtins.float",
                )
                and node.args
            ):
                return self._neg(node.args[0].value, env, scope, frame, depth)
            if qn in ("torch.full", "torch.full_like"):
                value = _arg(node, 1, "fill_value")
                return self._neg(value, env, scope, frame, depth) if value is not None else None
            if isinstance(node.func, cst.Attribute):
                attr = node.func.attr.value
                if attr in ("new_tensor",) and node.args:
                    return self._neg(node.args[0].value, env, scope, frame, depth)
                if attr == "new_full":
                    value = _arg(node, 1, "fill_value")
                    return self._neg(value, env, scope, frame, depth) if value is not None else None
                if attr in (
                    "to",
                    "type_as",
                    "item",
                    "float",
                    "half",
                    "to_dense",
                    "detach",
                    "clone",
                ):
                    return self._neg(node.func.value, env, scope, frame, depth)
            if isinstance(node.func, cst.Name) and node.func.value == "float" and node.args:
                return self._neg(node.args[0].value, env, scope, frame, depth)
            found = self.callee(node, env, scope)
            if found is not None:
                func, skip = found
                fscope = self.flow.functions.get(id(func))
                if fscope is None or not fscope.returns:
                    return None
                inner = Frame(func, fscope, bind_call(func, node, skip), env, scope, frame)
                results = {
                    self._neg(expr, renv, fscope, inner, depth) for expr, renv in fscope.returns
                }
                return results.pop() if len(results) == 1 else None
            return None
        if t is cst.Attribute:
            attr = node.attr.value
            if attr in ("inf", "infty", "Inf"):
                qn = self.qualname(node, env, scope)
                if qn in ("math.inf", "torch.inf", "numpy.inf", "numpy.Inf", "numpy.infty"):
                    return "pos"
                return None
            if attr in ("min", "max") and isinstance(node.value, cst.Call):
                qn = self.qualname(node.value.func, env, scope)
                if qn in ("torch.finfo", "numpy.finfo", "torch.iinfo"):
                    return "neg" if attr == "min" else "pos"
                return None
            cls = self._self_class(node, env, scope)
            if cls is not None:
                defs = self.resolver.attr_defs(cls, attr)
                return self._neg_defs(defs, depth)
            v = value_of(node, env, scope)
            return _sign(v) if isinstance(v, (int, float)) and v is not UNKNOWN else None
        if t is cst.Name:
            if frame is not None:
                through = self._through_frame(node, env, scope, frame)
                if through is None:
                    return None
                expr, env2, scope2 = through
                if expr is not node:
                    return self._neg(expr, env2, scope2, None, depth)
            defs = lookup(node.value, env, scope)
            if any(d.kind == "import" for d in defs):
                return None
            return self._neg_defs(defs, depth)
        if t is cst.BinaryOperation and isinstance(node.operator, cst.Multiply):
            a = self._neg(node.left, env, scope, frame, depth)
            b = self._neg(node.right, env, scope, frame, depth)
            va = self._number(node.left, env, scope, frame)
            vb = self._number(node.right, env, scope, frame)
            if a and isinstance(vb, (int, float)) and vb != 0 and abs(vb) >= 1:
                return a if vb > 0 else {"pos": "neg", "neg": "pos"}[a]
            if b and isinstance(va, (int, float)) and va != 0 and abs(va) >= 1:
                return b if va > 0 else {"pos": "neg", "neg": "pos"}[b]
        v = value_of(node, env, scope)
        return _sign(v) if isinstance(v, (int, float)) and v is not UNKNOWN else None

    def _neg_defs(self, defs, depth) -> Optional[str]:
        if not defs:
            return None
        results = set()
        for d in defs:
            if d.kind != "assign":
                return None
            results.add(self._neg(d.node, d.env, d.scope, None, depth))
        return results.pop() if len(results) == 1 else None

    # ----------------------------------------------------------------- comparisons
    def _compare(self, left, op: str, right, node, env, scope, frame, depth) -> Mask:
        text = self.text(node)
        # arange against lengths (padding), or arange against arange (causal)
        got = self._arange_compare(left, op, right, node, text, env, scope, frame, depth)
        if got is not None:
            return got
        # a token tensor against a pad id
        for tokens, pad, o in ((left, right, op), (right, left, _MIRROR[op])):
            if (
                is_pad_name(pad)
                and not is_pad_name(tokens)
                and not _is_mask_or_length(tokens)
                and self._number(tokens, env, scope, frame) is None
                and self.eval(pad, env, scope, frame, depth).meaning is None
            ):
                return self._pad_compare(tokens, o, node, text, env, scope, frame)
        # a mask against a constant: m == 0 flips it, m != 0 keeps it
        for mask_side, const_side, o in ((left, right, op), (right, left, _MIRROR[op])):
            c = self._number(const_side, env, scope, frame)
            if c is None:
                neg = self._neg(const_side, env, scope, frame, depth)
                c = float("-inf") if neg == "neg" else None
            if c is None:
                continue
            inner = self.eval(mask_side, env, scope, frame, depth)
            if inner.meaning is not None or inner.tri is not None:
                return self._threshold(inner, o, float(c), node, text)
            if (
                isinstance(c, int)
                and not isinstance(c, bool)
                and c >= 0
                and is_token_name(mask_side)
                and self._plain_tokens(mask_side, env, scope, frame)
            ):
                return self._pad_compare(mask_side, o, node, text, env, scope, frame)
            return UNKNOWN_MASK
        return UNKNOWN_MASK

    def _threshold(self, inner: Mask, op: str, c: float, node, text) -> Mask:
        """``mask <op> c``: which of the mask's values compare True."""
        if inner.none:
            return UNKNOWN_MASK
        if inner.meaning == ADDITIVE:
            values = {0.0: KEEP, float("-inf"): IGNORE}
        elif inner.meaning in (KEEP, IGNORE) or inner.tri is not None:
            values = {1.0: "same", 0.0: "flip"}
        else:
            return UNKNOWN_MASK
        true_set = {v for v in values if _cmp(v, op, c)}
        if len(true_set) != 1:
            return UNKNOWN_MASK
        which = values[true_set.pop()]
        origin_kind = self.origin(node)
        base = dict(
            kind=BOOL,
            dtype="bool",
            layout=inner.layout,
            shape_origin=inner.shape_origin,
            kind_origin=origin_kind,
        )
        if which == "same":
            return replace(inner, **base, fill=None)
        if which == "flip":
            out = self._flip(inner, node, kind=BOOL)
            return replace(out, dtype="bool", kind_origin=origin_kind)
        origin = Origin(node, text, by_name=bool(inner.origin and inner.origin.by_name))
        return Mask(meaning=which, origin=origin, causal=inner.causal, **base)

    def _pad_compare(self, tokens, op: str, node, text, env, scope, frame) -> Mask:
        meaning = {"==": IGNORE, "!=": KEEP}.get(op)
        if meaning is None:
            return UNKNOWN_MASK
        layout = ("N", "S") if self._plain_tokens(tokens, env, scope, frame) else None
        return _comparison(meaning, layout, Origin(node, text))

    def _plain_tokens(self, node, env, scope, frame, hops: int = 0) -> bool:
        """A batch of token ids as it came (no index that drops or adds an axis)."""
        if hops > 6:
            return False
        if isinstance(node, cst.Name):
            through = self._through_frame(node, env, scope, frame)
            if through is not None and through[0] is not node:
                return self._plain_tokens(through[0], through[1], through[2], None, hops + 1)
            return True
        if isinstance(node, cst.Attribute):
            return node.attr.value not in ("T", "mT")
        if isinstance(node, cst.Subscript):
            if _string_key(node) is not None:
                return True
            for el in node.slice:
                if not isinstance(el.slice, cst.Slice):
                    return False
            return self._plain_tokens(node.value, env, scope, frame, hops + 1)
        return False

    def _arange_compare(
        self, left, op, right, node, text, env, scope, frame, depth
    ) -> Optional[Mask]:
        la = self._arange_axis(left, env, scope, frame, 0)
        ra = self._arange_axis(right, env, scope, frame, 0)
        if la is None and ra is None:
            return None
        if la is not None and ra is not None:
            # positions against positions: j (key, a row vector) against i (query, a column)
            if {la, ra} != {"row", "col"}:
                return UNKNOWN_MASK
            o = op if la == "row" else _MIRROR[op]  # now "j <o> i"
            meaning = {">": IGNORE, "<=": KEEP}.get(o)
            if meaning is None:
                return UNKNOWN_MASK
            origin = Origin(node, text)
            return Mask(
                meaning=meaning,
                kind=BOOL,
                dtype="bool",
                layout=("L", "S"),
                origin=origin,
                kind_origin=origin,
                shape_origin=origin,
                causal=True,
            )
        if la is not None:
            axis, other, o = la, right, op
        else:
            axis, other, o = ra, left, _MIRROR[op]
        # now "arange <o> other"
        lens = self._lengths_axis(other, env, scope, frame, 0)
        if lens is None:
            return UNKNOWN_MASK
        meaning = {">=": IGNORE, ">": IGNORE, "<": KEEP, "<=": KEEP}.get(o)
        if meaning is None:
            return UNKNOWN_MASK
        layout = ("N", "S") if axis in ("row", "vec") and lens == "col" else None
        return _comparison(meaning, layout, Origin(node, text))

    def _arange_axis(self, node, env, scope, frame, depth) -> Optional[str]:
        """ "vec" for ``arange(S)``, "row" for it as (1, S), "col" as (S, 1)."""
        if depth > 10:
            return None
        depth += 1
        if isinstance(node, cst.Call):
            func = node.func
            qn = (
                self.qualname(func, env, scope)
                if not isinstance(func, cst.Attribute)
                or not isinstance(func.value, (cst.Call, cst.Subscript))
                else None
            )
            if qn == "torch.arange":
                return "vec"
            if isinstance(func, cst.Attribute):
                base = self._arange_axis(func.value, env, scope, frame, depth)
                if base is None:
                    return None
                attr = func.attr.value
                if attr in (
                    "to",
                    "type_as",
                    "long",
                    "int",
                    "float",
                    "cuda",
                    "cpu",
                    "clone",
                    "detach",
                    "contiguous",
                    "type",
                ):
                    return base
                if attr == "unsqueeze" and base == "vec":
                    d = self._number(_arg(node, 0, "dim"), env, scope, frame) if node.args else None
                    return (
                        {0: "row", -2: "row", 1: "col", -1: "col"}.get(d)
                        if isinstance(d, int)
                        else None
                    )
                if attr in ("expand", "repeat", "expand_as") and base == "row":
                    return "row"
                if attr in ("view", "reshape") and base == "vec":
                    pos = _positional(node)
                    if pos and len(pos) == 2:
                        a, b = (self._number(p, env, scope, frame) for p in pos)
                        if a == 1:
                            return "row"
                        if b == 1:
                            return "col"
                return None
            return None
        if isinstance(node, cst.Subscript):
            base = self._arange_axis(node.value, env, scope, frame, depth)
            if base != "vec":
                return None
            layout = _index_layout(("S",), node.slice)
            if layout == ("1", "S"):
                return "row"
            if layout == ("S", "1"):
                return "col"
            if layout == ("S",):
                return "vec"
            return None
        if isinstance(node, cst.Name):
            through = self._through_frame(node, env, scope, frame)
            if through is not None and through[0] is not node:
                return self._arange_axis(through[0], through[1], through[2], None, depth)
            defs = lookup(node.value, env, scope)
            if not defs or any(d.kind != "assign" for d in defs):
                return None
            axes = {self._arange_axis(d.node, d.env, d.scope, None, depth) for d in defs}
            return axes.pop() if len(axes) == 1 else None
        return None

    def _lengths_axis(self, node, env, scope, frame, depth) -> Optional[str]:
        """ "col" for ``lengths[:, None]``-like, "scalar" for a plain lengths
        name, None when the other side is not visibly a length."""
        if depth > 10:
            return None
        depth += 1
        if isinstance(node, (cst.Name, cst.Attribute)):
            name = _last_name(node) or ""
            if isinstance(node, cst.Name):
                through = self._through_frame(node, env, scope, frame)
                if through is not None and through[0] is not node:
                    got = self._lengths_axis(through[0], through[1], through[2], None, depth)
                    if got is not None:
                        return got
                defs = lookup(node.value, env, scope)
                if defs and all(d.kind == "assign" for d in defs):
                    axes = {self._lengths_axis(d.node, d.env, d.scope, None, depth) for d in defs}
                    if len(axes) == 1 and None not in axes:
                        return axes.pop()
            return "scalar" if _is_length_name(name) else None
        if isinstance(node, cst.Subscript):
            base = self._lengths_axis(node.value, env, scope, frame, depth)
            if base is None:
                return None
            layout = _index_layout(("N",), node.slice)
            return "col" if layout == ("N", "1") else None
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            attr = node.func.attr.value
            if attr in ("new", "new_tensor") and len(node.args) == 1:
                # seq_range.new(lengths): the lengths are the argument
                return self._lengths_axis(node.args[0].value, env, scope, frame, depth)
            base = self._lengths_axis(node.func.value, env, scope, frame, depth)
            if base is None:
                return None
            if attr == "unsqueeze":
                d = self._number(_arg(node, 0, "dim"), env, scope, frame) if node.args else None
                return "col" if d in (1, -1) and base == "scalar" else None
            if attr in ("view", "reshape"):
                pos = _positional(node)
                if pos and len(pos) == 2 and self._number(pos[1], env, scope, frame) == 1:
                    return "col"
                return None
            if attr in (
                "to",
                "type_as",
                "long",
                "int",
                "float",
                "cuda",
                "cpu",
                "expand",
                "expand_as",
            ):
                return base
            return None
        if isinstance(node, cst.Call) and len(node.args) >= 1:
            qn = self.qualname(node.func, env, scope)
            if qn in ("torch.tensor", "torch.as_tensor", "torch.LongTensor"):
                return self._lengths_axis(node.args[0].value, env, scope, frame, depth)
        return None

    # ----------------------------------------------------------------- calls
    def _call(self, node: cst.Call, env, scope, frame, depth) -> Mask:
        func = node.func
        qn = None
        if not (
            isinstance(func, cst.Attribute)
            and not isinstance(func.value, (cst.Name, cst.Attribute))
        ):
            qn = self.qualname(func, env, scope)
        if qn is not None and qn.startswith("torch."):
            return self._torch_call(qn, node, env, scope, frame, depth)
        if isinstance(func, cst.Attribute) and qn is None:
            got = self._method_call(func.attr.value, func.value, node, env, scope, frame, depth)
            if got is not None:
                return got
        found = self.callee(node, env, scope)
        if found is not None:
            return self._helper(found, node, env, scope, frame, depth, None)
        return UNKNOWN_MASK

    def _helper(self, found, node, env, scope, frame, depth, index) -> Mask:
        func, skip = found
        fscope = self.flow.functions.get(id(func))
        if fscope is None or not fscope.returns or _is_generator(func):
            return UNKNOWN_MASK
        depth_frames = 0
        f = frame
        while f is not None:
            depth_frames += 1
            if f.func is func:
                return UNKNOWN_MASK  # recursion
            f = f.parent
        if depth_frames > 4:
            return UNKNOWN_MASK
        inner = Frame(func, fscope, bind_call(func, node, skip), env, scope, frame)
        values = []
        for expr, renv in fscope.returns:
            if index:
                values.append(self._indexed(expr, index, renv, fscope, inner, depth))
            else:
                values.append(self.eval(expr, renv, fscope, inner, depth))
        if _falls_off_end(func):
            values.append(NONE_MASK)
        return join_all(values)

    def _indexed(self, node, index, env, scope, frame, depth) -> Mask:
        """Element ``index`` of a tuple-valued expression (a helper returning several masks)."""
        if not index:
            return self.eval(node, env, scope, frame, depth)
        if isinstance(node, (cst.Tuple, cst.List)):
            i = index[0]
            if i < len(node.elements) and not isinstance(node.elements[i], cst.StarredElement):
                return self._indexed(node.elements[i].value, index[1:], env, scope, frame, depth)
            return UNKNOWN_MASK
        if isinstance(node, cst.Call):
            found = self.callee(node, env, scope)
            if found is not None:
                return self._helper(found, node, env, scope, frame, depth, index)
        if isinstance(node, cst.Name):
            defs = lookup(node.value, env, scope)
            if defs and all(d.kind == "assign" for d in defs):
                return join_all(
                    [
                        self._indexed(
                            d.node, index, d.env, d.scope, _frame_for(d.scope, frame), depth
                        )
                        for d in defs
                    ]
                )
        return UNKNOWN_MASK

    def _subsequent_mask(self, node: cst.Call) -> Mask:
        """``nn.Transformer.generate_square_subsequent_mask(L)`` (on the class or
        an instance): a square float mask, 0 on and below the diagonal, -inf above."""
        origin = self.origin(node)
        return Mask(meaning=ADDITIVE, kind=ADDITIVE, layout=("L", "S"), dtype="float32",
                    origin=origin, kind_origin=origin, shape_origin=origin, causal=True)

    def _fresh(
        self,
        what: str,
        node: cst.Call,
        env,
        scope,
        frame,
        depth,
        like=None,
        shape_args: Optional[Sequence[cst.BaseExpression]] = None,
        fill_value=None,
    ) -> Mask:
        """A constant tensor: ones/zeros/full(-inf).  Its kind follows ``dtype=``."""
        kind, dtype = None, None
        dt = _kw(node, "dtype")
        if dt is not None:
            kind, dtype = self._dtype_of(dt, env, scope, frame)
        elif like is None:
            if what in ("ones", "zeros", "empty"):
                kind, dtype = FLOAT01, "float32"
        # a constant tensor is not a 0/1 mask yet: its kind is decided by what is made of it
        fresh_kind = kind
        kind = None
        fill = what
        if what == "full":
            neg = (
                self._neg(fill_value, env, scope, frame, depth) if fill_value is not None else None
            )
            if neg == "neg":
                fill = "neg"
            else:
                v = self._number(fill_value, env, scope, frame) if fill_value is not None else None
                fill = (
                    "ones"
                    if v in (1, True)
                    else "zeros" if v in (0, False) and v is not None else None
                )
                if fresh_kind is None and isinstance(v, bool):
                    fresh_kind, dtype = BOOL, "bool"
        layout = None
        shape_origin = None
        if like is not None:
            src = self.eval(like, env, scope, frame, depth)
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
                layout = tuple(
                    "1" if self._number(d, env, scope, frame) == 1 else "?" for d in dims[:2]
                ) + ("L", "S")
        if fresh_kind is not None and dtype is None:
            dtype = {FLOAT01: "float", INT: "int"}.get(fresh_kind)  # a floating dtype not named
        return Mask(
            dtype=dtype if fill != "neg" else None,
            layout=layout,
            fill=fill,
            shape_origin=shape_origin,
        )

    def _dtype_of(self, node, env, scope, frame) -> Tuple[Optional[str], Optional[str]]:
        through = self._through_frame(node, env, scope, frame)
        if through is None:
            return FLOAT01, None
        node, env, scope = through
        qn = self.qualname(node, env, scope)
        if qn in _DTYPES:
            return _DTYPES[qn]
        if isinstance(node, cst.Attribute) and node.attr.value == "dtype":
            return FLOAT01, None  # the dtype of a tensor of scores/queries: floating point
        if isinstance(node, cst.Name) and "dtype" in node.value.lower():
            vals = set()
            for d in lookup(node.value, env, scope):
                if d.kind == "assign":
                    vals.add(self.qualname(d.node, d.env, d.scope))
                elif d.kind == "param" and d.node.default is not None:
                    vals.add(self.qualname(d.node.default, {}, d.scope.parent if d.scope else None))
                else:
                    vals.add(None)
            found = {_DTYPES[v] for v in vals if v in _DTYPES}
            if vals and all(v in _DTYPES for v in vals) and len(found) == 1:
                return found.pop()
            if any(k != FLOAT01 for k, _ in found):
                return None, None
            return FLOAT01, None  # ``.to(dtype)``: the model's floating dtype
        if isinstance(node, cst.SimpleString):
            return None, None
        return None, None

    def _is_device(self, node, env, scope) -> bool:
        if isinstance(node, cst.SimpleString):
            return True
        name = _last_name(node)
        if name is not None and (
            "device" in name.lower() or name.lower() in ("dev", "gpu", "cuda", "cpu")
        ):
            return True
        if isinstance(node, cst.Call):
            qn = self.qualname(node.func, env, scope)
            return qn == "torch.device"
        return False

    def _convert(self, inner: Mask, kind: Optional[str], dtype: Optional[str], node) -> Mask:
        """A dtype conversion of a mask."""
        if inner.none or not inner.known and inner.fill is None:
            return UNKNOWN_MASK
        if inner.meaning == ADDITIVE or inner.kind == ADDITIVE:
            if kind == FLOAT01:
                return replace(inner, dtype=dtype or inner.dtype)
            return UNKNOWN_MASK  # an additive mask made bool/int: nonzero = masked, an odd path
        if inner.fill == "neg":
            return inner if kind == FLOAT01 else UNKNOWN_MASK
        if kind is None:
            return replace(inner, kind=None, dtype=None, kind_origin=None)
        if kind == inner.kind and dtype == inner.dtype:
            return inner
        return replace(inner, kind=kind, dtype=dtype, kind_origin=self.origin(node))

    def _torch_call(self, qn: str, node: cst.Call, env, scope, frame, depth) -> Mask:
        if qn in ("torch.tril", "torch.triu"):
            src = _arg(node, 0, "input")
            diag = _arg(node, 1, "diagonal")
            if src is None:
                return UNKNOWN_MASK
            base = self.eval(src, env, scope, frame, depth)
            return self._triangle(base, qn.endswith("tril"), diag, node, env, scope, frame)
        if qn in _FRESH:
            what = _FRESH[qn]
            if qn in _LIKE:
                like = _arg(node, 0, "input")
                fill_value = _arg(node, 1, "fill_value") if what == "full" else None
                return self._fresh(
                    what, node, env, scope, frame, depth, like=like, fill_value=fill_value
                )
            pos = _positional(node) or []
            if what == "full":
                size = _arg(node, 0, "size")
                return self._fresh(
                    what,
                    node,
                    env,
                    scope,
                    frame,
                    depth,
                    shape_args=[size] if size is not None else None,
                    fill_value=_arg(node, 1, "fill_value"),
                )
            return self._fresh(what, node, env, scope, frame, depth, shape_args=pos or None)
        if qn in _GENERATE:
            return self._subsequent_mask(node)
        if qn in ("torch.logical_not", "torch.bitwise_not"):
            src = _arg(node, 0, "input")
            if src is None:
                return UNKNOWN_MASK
            inner = self.eval(src, env, scope, frame, depth)
            if qn == "torch.bitwise_not":
                return self._flip(inner, node, bitwise=True)
            return self._flip(inner, node, kind=BOOL)
        if qn in (
            "torch.logical_and",
            "torch.logical_or",
            "torch.bitwise_and",
            "torch.bitwise_or",
            "torch.mul",
        ):
            a, b = _arg(node, 0, "input"), _arg(node, 1, "other")
            if a is None or b is None:
                return UNKNOWN_MASK
            op = "mul" if qn == "torch.mul" else ("and" if qn.endswith("_and") else "or")
            return combine(
                self.eval(a, env, scope, frame, depth),
                self.eval(b, env, scope, frame, depth),
                node,
                self.text(node),
                op,
            )
        name = qn[len("torch.") :]
        if name in _COMPARE_METHODS:
            a, b = _arg(node, 0, "input"), _arg(node, 1, "other")
            if a is None or b is None:
                return UNKNOWN_MASK
            return self._compare(a, _COMPARE_METHODS[name], b, node, env, scope, frame, depth)
        if qn == "torch.where":
            cond, a, b = _arg(node, 0, "condition"), _arg(node, 1, "input"), _arg(node, 2, "other")
            if cond is None or a is None or b is None:
                return UNKNOWN_MASK
            return self._where(cond, a, b, node, env, scope, frame, depth)
        if qn == "torch.masked_fill":
            t, m, v = _arg(node, 0, "input"), _arg(node, 1, "mask"), _arg(node, 2, "value")
            if t is None or m is None or v is None:
                return UNKNOWN_MASK
            return self._masked_fill(t, m, v, node, env, scope, frame, depth)
        if qn == "torch.nn.functional.pad":
            src = _arg(node, 0, "input")
            inner = self.eval(src, env, scope, frame, depth) if src is not None else UNKNOWN_MASK
            if inner.none or inner.meaning not in (KEEP, IGNORE, ADDITIVE):
                return UNKNOWN_MASK
            return replace(inner, tri=None, fill=None)
        if qn in (
            "torch.unsqueeze",
            "torch.squeeze",
            "torch.reshape",
            "torch.transpose",
            "torch.t",
        ):
            src = _arg(node, 0, "input")
            if src is None:
                return UNKNOWN_MASK
            inner = self.eval(src, env, scope, frame, depth)
            rest = node.with_changes(args=node.args[1:])
            return self._reshape(qn[len("torch.") :], inner, rest, node, env, scope, frame)
        return UNKNOWN_MASK

    def _triangle(self, base: Mask, lower: bool, diag_node, node, env, scope, frame) -> Mask:
        diag = 0
        if diag_node is not None:
            d = self._number(diag_node, env, scope, frame)
            if not isinstance(d, int) or isinstance(d, bool):
                return UNKNOWN_MASK
            diag = d
        if base.fill == "neg" and not lower and diag >= 1:
            return self._additive(node, base.layout or ("L", "S"), self.origin(node))
        if base.fill != "ones" and base.tri is None:
            return UNKNOWN_MASK
        if base.tri is not None:
            return UNKNOWN_MASK  # a triangle of a triangle: leave it
        tri = ("lower" if lower else "upper", diag)
        meaning = tri_meaning(tri)
        origin = self.origin(node)
        layout = base.layout or ("L", "S")
        kind = base.kind or _kind_of_dtype(base.dtype)
        dtype = base.dtype if base.dtype in _KNOWN_DTYPE_NAMES else None
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

    def _where(self, cond, a, b, node, env, scope, frame, depth) -> Mask:
        """``torch.where(m, 0, -inf)`` makes an additive mask from a keep mask."""
        na = self._neg(a, env, scope, frame, depth)
        nb = self._neg(b, env, scope, frame, depth)
        m = self.eval(cond, env, scope, frame, depth)
        if na == "neg" or nb == "neg":
            return self._additive(node, m.layout, m.shape_origin)
        va, vb = self._number(a, env, scope, frame), self._number(b, env, scope, frame)
        if m.meaning in (KEEP, IGNORE) and {va, vb} == {0, 1}:
            is_float = isinstance(va, float) or isinstance(vb, float)
            kind = FLOAT01 if is_float else INT
            dtype = "float32" if is_float else "int64"
            if va == 1:
                return replace(m, kind=kind, dtype=dtype, kind_origin=self.origin(node), fill=None)
            flipped = self._flip(m, node, kind=kind)
            return replace(flipped, dtype=dtype)
        return UNKNOWN_MASK

    def _masked_fill(self, target, m, v, node, env, scope, frame, depth) -> Mask:
        base = self.eval(target, env, scope, frame, depth)
        if base.none:
            return UNKNOWN_MASK
        if self.is_big_negative(v, env, scope, frame, depth):
            layout = base.layout
            shape_origin = base.shape_origin
            if layout is None and base.fill is not None:
                mask = self.eval(m, env, scope, frame, depth)
                layout, shape_origin = mask.layout, mask.shape_origin
            return self._additive(node, layout, shape_origin)
        value = self._number(v, env, scope, frame)
        if value is None:
            return UNKNOWN_MASK
        if base.meaning == ADDITIVE and value == 0:
            return base
        if base.meaning in (KEEP, IGNORE) and value in (0, 1):
            return replace(base, tri=None)
        return UNKNOWN_MASK

    def _reshape(self, attr: str, inner: Mask, call: cst.Call, node, env, scope, frame) -> Mask:
        """unsqueeze/squeeze/view/reshape/expand/transpose/permute: the same
        meaning, another layout."""
        if inner.none or not inner.known and inner.fill is None:
            return UNKNOWN_MASK
        layout = inner.layout
        tri = inner.tri
        new_layout: Optional[Layout] = None
        pos = _positional(call)
        if attr in ("unsqueeze", "unsqueeze_"):
            d = self._number(_arg(call, 0, "dim"), env, scope, frame) if call.args else None
            if layout is not None and isinstance(d, int) and not isinstance(d, bool):
                n = len(layout) + 1
                i = d if d >= 0 else n + d
                if 0 <= i < n:
                    new_layout = layout[:i] + ("1",) + layout[i:]
        elif attr in ("squeeze", "squeeze_"):
            d = self._number(_arg(call, 0, "dim"), env, scope, frame) if call.args else None
            if layout is not None and isinstance(d, int) and not isinstance(d, bool):
                i = d if d >= 0 else len(layout) + d
                if 0 <= i < len(layout):
                    new_layout = layout[:i] + layout[i + 1 :] if layout[i] == "1" else layout
        elif attr in ("view", "reshape"):
            if pos is not None and len(pos) == 1 and isinstance(pos[0], (cst.Tuple, cst.List)):
                pos = [el.value for el in pos[0].elements if not isinstance(el, cst.StarredElement)]
            if pos and layout is not None:
                if len(pos) == 4:
                    labels = []
                    for i, p in enumerate(pos):
                        v = self._number(p, env, scope, frame)
                        if v == 1:
                            labels.append("1")
                        elif i == 0:
                            labels.append("N" if layout[0] == "N" else "?")
                        elif i == 3:
                            labels.append("S")
                        elif i == 2 and layout[-2:] == ("L", "S"):
                            labels.append("L")
                        else:
                            labels.append("?")
                    new_layout = tuple(labels)
                elif len(pos) == len(layout) and len(pos) == 2:
                    new_layout = layout
        elif attr in ("expand", "expand_as", "repeat", "broadcast_to"):
            if layout is not None and pos is not None and len(pos) == len(layout):
                new_layout = (
                    tuple("?" if lab == "1" else lab for lab in layout)
                    if shape_class(layout) == BROADCAST
                    else layout
                )
            elif layout is not None and attr == "expand_as":
                new_layout = None
        elif attr == "repeat_interleave":
            new_layout = None  # (N, L, S) -> (N*H, L, S): the meaning stays
        elif attr == "t":
            return self._transpose(inner, node, two_d=True)
        elif attr == "permute":
            if inner.shape == SQUARE or inner.tri is not None:
                return UNKNOWN_MASK  # which way round a permuted triangle reads is not tracked
            return replace(inner, layout=None, shape_origin=None)
        elif attr in ("transpose", "transpose_", "swapaxes"):
            dims = [self._number(p, env, scope, frame) for p in (pos or [])]
            if len(dims) != 2 or not all(
                isinstance(d, int) and not isinstance(d, bool) for d in dims
            ):
                return UNKNOWN_MASK
            a, b = dims
            if layout is None:
                if {a, b} in ({0, 1}, {-1, -2}) and (inner.tri is not None or inner.shape is None):
                    return self._transpose(inner, node, two_d=False)
                return UNKNOWN_MASK
            n = len(layout)
            if not (-n <= a < n and -n <= b < n):
                return UNKNOWN_MASK
            a, b = a % n, b % n
            if {a, b} == {n - 1, n - 2}:
                return self._transpose(inner, node, two_d=False)
            lab = list(layout)
            lab[a], lab[b] = lab[b], lab[a]
            return replace(inner, layout=tuple(lab), shape_origin=self.origin(node))
        return replace(
            inner,
            layout=new_layout,
            tri=tri,
            shape_origin=self._shape_origin(inner, new_layout, node),
        )

    def _transpose(self, inner: Mask, node, two_d: bool) -> Mask:
        """Swap the last two axes: a lower triangle becomes an upper one."""
        if inner.none or not inner.known and inner.fill is None:
            return UNKNOWN_MASK
        if inner.tri is not None:
            tri = tri_transpose(inner.tri)
            meaning = tri_meaning(tri)
            origin = self.origin(node)
            return replace(inner, tri=tri, meaning=meaning, origin=origin if meaning else None)
        layout = inner.layout
        if layout is not None and len(layout) >= 2:
            if layout[-2:] == ("L", "S") or inner.meaning == ADDITIVE and layout[-2:] != ("N", "S"):
                # a transposed square mask: which way round it now reads is not known
                return (
                    replace(inner, meaning=None, origin=None)
                    if inner.meaning != ADDITIVE
                    else inner
                )
            return replace(
                inner, layout=layout[:-2] + (layout[-1], layout[-2]), shape_origin=self.origin(node)
            )
        if inner.meaning in (KEEP, IGNORE):
            return replace(inner, layout=None, shape_origin=None)
        return inner

    def _method_call(
        self, attr: str, receiver, node: cst.Call, env, scope, frame, depth
    ) -> Optional[Mask]:
        """A method on a tensor expression; None when the method is not one we know."""
        if attr in _METHOD_DTYPES:
            if node.args:
                return UNKNOWN_MASK
            kind, dtype = _METHOD_DTYPES[attr]
            return self._convert(self.eval(receiver, env, scope, frame, depth), kind, dtype, node)
        if attr in ("to", "type"):
            inner = self.eval(receiver, env, scope, frame, depth)
            dt = _kw(node, "dtype")
            candidates = (
                [dt] if dt is not None else [a.value for a in node.args if a.keyword is None]
            )
            for cand in candidates:
                if self._is_device(cand, env, scope):
                    continue
                kind, dtype = self._dtype_of(cand, env, scope, frame)
                if kind is None and dtype is None:
                    return UNKNOWN_MASK  # .to(other_tensor): its dtype is not known
                return self._convert(inner, kind, dtype, node)
            return inner if not inner.none else UNKNOWN_MASK
        if attr == "type_as":
            inner = self.eval(receiver, env, scope, frame, depth)
            return self._convert(inner, FLOAT01, None, node)
        if attr in _SAME:
            inner = self.eval(receiver, env, scope, frame, depth)
            return UNKNOWN_MASK if inner.none else inner
        if attr in _FLIPS:
            inner = self.eval(receiver, env, scope, frame, depth)
            return self._flip(
                inner,
                node,
                bitwise=attr.startswith("bitwise"),
                kind=None if attr.startswith("bitwise") else BOOL,
            )
        if attr in _COMBINE:
            other = _arg(node, 0, "other")
            if other is None:
                return UNKNOWN_MASK
            a = self.eval(receiver, env, scope, frame, depth)
            b = self.eval(other, env, scope, frame, depth)
            return combine(a, b, node, self.text(node), _COMBINE[attr])
        if attr in _COMPARE_METHODS:
            other = _arg(node, 0, "other")
            if other is None:
                return UNKNOWN_MASK
            return self._compare(
                receiver, _COMPARE_METHODS[attr], other, node, env, scope, frame, depth
            )
        if attr in ("tril", "triu", "tril_", "triu_"):
            base = self.eval(receiver, env, scope, frame, depth)
            return self._triangle(
                base, attr.startswith("tril"), _arg(node, 0, "diagonal"), node, env, scope, frame
            )
        if attr in ("masked_fill", "masked_fill_"):
            m, v = _arg(node, 0, "mask"), _arg(node, 1, "value")
            if m is None or v is None:
                return UNKNOWN_MASK
            return self._masked_fill(receiver, m, v, node, env, scope, frame, depth)
        if attr == "where":
            cond, other = _arg(node, 0, "condition"), _arg(node, 1, "other")
            if cond is None or other is None:
                return UNKNOWN_MASK
            return self._where(cond, receiver, other, node, env, scope, frame, depth)
        if attr in ("fill_",):
            value = _arg(node, 0, "value")
            if value is not None and self.is_big_negative(value, env, scope, frame, depth):
                base = self.eval(receiver, env, scope, frame, depth)
                return Mask(fill="neg", layout=base.layout)
            return UNKNOWN_MASK
        if attr in _FRESH_METHODS:
            what = _FRESH_METHODS[attr]
            pos = _positional(node) or []
            if what == "full":
                return self._fresh(
                    what,
                    node,
                    env,
                    scope,
                    frame,
                    depth,
                    shape_args=pos[:1] or None,
                    fill_value=_arg(node, 1, "fill_value"),
                )
            out = self._fresh(what, node, env, scope, frame, depth, shape_args=pos or None)
            if _kw(node, "dtype") is None:
                out = replace(out, kind=None, dtype=None, kind_origin=None)  # the receiver's dtype
            return out
        if attr in (
            "unsqueeze",
            "unsqueeze_",
            "squeeze",
            "squeeze_",
            "view",
            "reshape",
            "expand",
            "expand_as",
            "repeat",
            "broadcast_to",
            "transpose",
            "transpose_",
            "swapaxes",
            "t",
            "permute",
            "repeat_interleave",
        ):
            inner = self.eval(receiver, env, scope, frame, depth)
            return self._reshape(attr, inner, node, node, env, scope, frame)
        if attr == "generate_square_subsequent_mask":
            insts = self.resolver.instances(receiver, env, scope)
            if insts and all(i.spec is torch_api.TRANSFORMER for i in insts):
                return self._subsequent_mask(node)
            return None
        return None


_KNOWN_DTYPE_NAMES = {dt for _, dt in _DTYPES.values()}


def _kind_of_dtype(dtype: Optional[str]) -> Optional[str]:
    if dtype is None:
        return None
    if dtype == "bool":
        return BOOL
    if dtype.startswith(("float", "bfloat")):
        return FLOAT01
    if dtype.startswith(("int", "uint")):
        return INT
    return None


_HARMLESS_INPLACE = {"requires_grad_", "share_memory_", "retain_grad"}


def _mutated_names(root: cst.CSTNode) -> set:
    """Names changed in place in a function (or module) body, not counting
    nested functions and classes: ``x.fill_(v)``, ``x.masked_fill_(m, v)``,
    ``x[i] = v``, ``x[i] += v``."""
    from ..flow import children

    out: set = set()
    stack = list(children(root.body)) if isinstance(root, cst.FunctionDef) else list(children(root))
    while stack:
        n = stack.pop()
        if isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute):
            attr = n.func.attr.value
            if attr.endswith("_") and not attr.endswith("__") and attr not in _HARMLESS_INPLACE:
                base = _root_of(n.func.value)
                if base is not None:
                    out.add(base)
        elif isinstance(n, cst.Assign):
            for t in n.targets:
                if isinstance(t.target, cst.Subscript):
                    base = _root_of(t.target.value)
                    if base is not None:
                        out.add(base)
        elif isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Subscript):
            base = _root_of(n.target.value)
            if base is not None:
                out.add(base)
        stack.extend(children(n))
    return out


def _root_of(node: cst.CSTNode) -> Optional[str]:
    """``m`` for ``m``, ``m[...]``, ``m.view(...)``-free chains of subscripts."""
    while isinstance(node, cst.Subscript):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _index_layout(layout: Optional[Layout], elements) -> Optional[Layout]:
    """The layout after ``m[...]``: None adds an axis, a slice keeps one, an
    integer drops one, ``...`` stands for the untouched axes."""
    if layout is None:
        return None
    out: List[str] = []
    els = list(elements)
    consumed = sum(
        1
        for el in els
        if not (
            isinstance(el.slice, cst.Index)
            and (_is_none(el.slice.value) or isinstance(el.slice.value, cst.Ellipsis))
        )
    )
    if consumed > len(layout):
        return None
    i = 0
    for el in els:
        s = el.slice
        if isinstance(s, cst.Slice):
            out.append(layout[i])
            i += 1
        elif isinstance(s, cst.Index) and _is_none(s.value):
            out.append("1")
        elif isinstance(s, cst.Index) and isinstance(s.value, cst.Ellipsis):
            rest = len(layout) - consumed
            out.extend(layout[i : i + rest])
            i += rest
        elif isinstance(s, cst.Index) and isinstance(s.value, (cst.Integer, cst.UnaryOperation)):
            i += 1
        else:
            return None
    out.extend(layout[i:])
    return tuple(out)


def _cmp(a: float, op: str, b: float) -> bool:
    return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def _sign(v) -> Optional[str]:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if v <= BIG_NEGATIVE:
        return "neg"
    if v >= -BIG_NEGATIVE:
        return "pos"
    return None


def _is_mask_or_length(node: cst.CSTNode) -> bool:
    name = _last_name(node)
    if name is None and isinstance(node, cst.Subscript):
        name = _string_key(node)
    low = (name or "").lower()
    return "mask" in low or "len" in low


def _is_length_name(name: str) -> bool:
    low = name.lower()
    return "len" in low and "max" not in low or low in ("lens", "ilens", "olens", "sizes")


def _is_generator(func: cst.FunctionDef) -> bool:
    from ..flow import children

    stack = list(children(func.body))
    while stack:
        n = stack.pop()
        if isinstance(n, (cst.Yield,)):
            return True
        if isinstance(n, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            continue
        stack.extend(children(n))
    return False


def _falls_off_end(func: cst.FunctionDef) -> bool:
    body = func.body
    if isinstance(body, cst.IndentedBlock) and body.body:
        last = body.body[-1]
        if isinstance(last, cst.SimpleStatementLine) and any(
            isinstance(s, (cst.Return, cst.Raise)) for s in last.body
        ):
            return False
        if isinstance(last, cst.If) and _all_paths_return(last):
            return False
    return True


def _all_paths_return(node) -> bool:
    if isinstance(node, cst.If):
        if node.orelse is None:
            return False
        body_ok = _block_returns(node.body)
        if isinstance(node.orelse, cst.If):
            return body_ok and _all_paths_return(node.orelse)
        return body_ok and _block_returns(node.orelse.body)
    return False


def _block_returns(block) -> bool:
    stmts = block.body if isinstance(block, cst.IndentedBlock) else block.body
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(s, (cst.Return, cst.Raise)) for s in last.body)
    if isinstance(last, cst.If):
        return _all_paths_return(last)
    return False


# --------------------------------------------------------------------------- sinks


@dataclass
class Sink:
    """An argument that reads a mask, and what True means there."""

    site: CallSite
    module: str  # torch class name, "scaled_dot_product_attention", "masked_fill" or "where"
    arg: str  # the argument name, or "masked_fill" / "where"
    door: str  # KEEP (True = attend) or IGNORE (True = masked out)
    expr: cst.BaseExpression
    attention: bool  # a module/SDPA attention mask argument (MHA004/MHA009 apply)
    call_text: str = ""

    @property
    def label(self) -> str:
        if self.module in ("masked_fill", "where"):
            return self.call_text or self.module
        return f"{self.module}'s {self.arg}"


_analyses: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def analysis_for(ctx) -> "MaskAnalysis":
    """The one mask analysis of a file, shared by the mask rules."""
    got = _analyses.get(ctx)
    if got is None:
        got = MaskAnalysis(ctx)
        _analyses[ctx] = got
    return got


class MaskAnalysis:
    """Sinks and the mask values reaching them, computed once per file."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.evaluator = MaskEvaluator(ctx)
        self._values: Dict[int, Mask] = {}
        self._fill_sinks: Dict[int, Optional[Sink]] = {}
        self._walks: Optional[Dict[int, List[CallSite]]] = None

    def value(self, sink: Sink) -> Mask:
        """The mask reaching the sink, joined over every walk of its call (the
        flow pass walks a loop body twice: the second walk sees the values the
        loop carries round)."""
        key = id(sink.expr)
        got = self._values.get(key)
        if got is None:
            if self._walks is None:
                walks: Dict[int, List[CallSite]] = {}
                for site in self.ctx.flow.calls:
                    walks.setdefault(id(site.node), []).append(site)
                self._walks = walks
            sites = self._walks.get(id(sink.site.node)) or [sink.site]
            got = join_all([self.evaluator.at(sink.expr, site) for site in sites])
            self._values[key] = got
        return got

    # sinks -----------------------------------------------------------------
    def module_sinks(self, ev) -> List[Sink]:
        out = []
        for name in ev.spec.mask_args:
            expr = ev.args.get(name)
            if expr is not None and not _is_none(expr):
                out.append(Sink(ev.site, ev.spec.name, name, IGNORE, expr, True))
        return out

    def sdpa_sink(self, ev) -> Optional[Sink]:
        expr = ev.args.get("attn_mask")
        if expr is None or _is_none(expr):
            return None
        return Sink(ev.site, "scaled_dot_product_attention", "attn_mask", KEEP, expr, True)

    def fill_sink(self, site: CallSite) -> Optional[Sink]:
        """``x.masked_fill(m, -inf)`` (m: True = ignore), ``torch.where(m, x, -inf)``
        (m: True = keep) and ``torch.where(m, -inf, x)`` (m: True = ignore)."""
        key = id(site.node)
        if key in self._fill_sinks:
            return self._fill_sinks[key]
        sink = self._fill_sink(site)
        self._fill_sinks[key] = sink
        return sink

    def _fill_sink(self, site: CallSite) -> Optional[Sink]:
        call = site.node
        func = call.func
        ev = self.evaluator
        env, scope = site.env, site.scope
        name = (
            func.attr.value
            if isinstance(func, cst.Attribute)
            else (func.value if isinstance(func, cst.Name) else None)
        )
        if name not in ("masked_fill", "masked_fill_", "where"):
            return None
        qn = ev.qualname(func, env, scope)
        if name == "where":
            if qn == "torch.where":
                cond, a, b = (
                    _arg(call, 0, "condition"),
                    _arg(call, 1, "input"),
                    _arg(call, 2, "other"),
                )
            elif qn is None and isinstance(func, cst.Attribute):
                cond, a, b = _arg(call, 0, "condition"), func.value, _arg(call, 1, "other")
            else:
                return None
            if cond is None or a is None or b is None:
                return None
            a_neg = ev.is_big_negative(a, env, scope, None)
            b_neg = ev.is_big_negative(b, env, scope, None)
            if a_neg == b_neg:
                return None
            door = IGNORE if a_neg else KEEP
            text = "torch.where(mask, -inf, x)" if a_neg else "torch.where(mask, x, -inf)"
            return Sink(site, "where", "where", door, cond, False, text)
        if qn == "torch.masked_fill":
            m, v = _arg(call, 1, "mask"), _arg(call, 2, "value")
        elif qn is None and isinstance(func, cst.Attribute):
            m, v = _arg(call, 0, "mask"), _arg(call, 1, "value")
        else:
            return None
        if m is None or v is None or not ev.is_big_negative(v, env, scope, None):
            return None
        return Sink(site, "masked_fill", "masked_fill", IGNORE, m, False, f"{name}(mask, -inf)")

    # evidence ----------------------------------------------------------------
    def evidence(self, sink: Sink, mask: Mask, module_ev=None) -> Dict[str, object]:
        out: Dict[str, object] = {}
        if module_ev is not None:
            from ..rules.construction import construction_evidence

            ctor = module_ev.single_ctor()
            if ctor is not None:
                out.update(construction_evidence(self.ctx, ctor))
        out.setdefault("embed_dim", None)
        out.setdefault("num_heads", None)
        out.setdefault("batch_first", None)
        out["module"] = sink.module
        out["sink"] = sink.arg
        if sink.module in ("masked_fill", "where"):
            out["call"] = sink.call_text
        data = mask.evidence(self.evaluator.source_text)
        data["line"] = self.evaluator.line(mask.origin.node) if mask.origin is not None else None
        data["by_name"] = bool(mask.origin and mask.origin.by_name)
        data["kind_source"] = self.evaluator.source_text(mask.kind_origin)
        data["shape_source"] = self.evaluator.source_text(mask.shape_origin)
        out["mask"] = data
        return out


def _comparison(meaning: str, layout, origin: "Origin") -> "Mask":
    """A bool mask made by a comparison (pad id, arange against lengths): its
    meaning, kind and (when known) shape all come from that one expression."""
    return Mask(meaning=meaning, kind=BOOL, dtype="bool", layout=layout, origin=origin,
                kind_origin=origin, shape_origin=origin if layout else None)
