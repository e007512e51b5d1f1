"""Attention scores in hand-written attention, and the masks applied to them
with arithmetic (MHA004's additive case, MHA012).

A tensor counts as *attention scores* when both hold:

- it comes from a pairwise product of two projections: ``q @ k.transpose(-2,
  -1)`` (also ``.mT``, ``.permute(...)``, ``.T``, a key transposed earlier in a
  local), ``torch.matmul``/``torch.bmm`` of the same, or a two-operand
  ``torch.einsum`` (or einops' ``einsum(q, k, "... i d, ... j d -> ... i j")``)
  that contracts an axis and keeps one axis of each operand
  (``'bhqd,bhkd->bhqk'``); scaling (``* scale``, ``/ math.sqrt(d)``), dtype
  and shape methods, slicing, biases and ``masked_fill`` on the way keep it
  scores;
- it flows into a softmax over the last axis: ``F.softmax(x, dim=-1)``,
  ``torch.softmax(x, -1)``, ``x.softmax(-1)`` (``dim`` left out counts too),
  BERT's ``nn.Softmax(dim=-1)(x)`` or such a module held on ``self``.

The walk starts at each softmax and goes backwards through the expression,
locals (every reaching definition), ``scores = scores + ...`` rebindings,
augmented assignments (``scores += mask``) and in-place methods on the same
local before the softmax (``scores.add_(mask)``, ``scores.mul_(mask)``).
Whatever is added, subtracted or multiplied on the way is a *term*; the
rules decide which terms are masks.  Whether the softmax's result is then
multiplied with values is not required: a softmax over the key axis of a
query-key product is attention already.

Attention is also recognised *by use*, however the scores were made
(``rotation_term * w1 - distance_term * w2``, a learned projection, a
distance): a softmax over the last axis whose result is multiplied with
values (``w @ v``, ``torch.matmul(w, v)``, ``w.bmm(v)``, a two-operand einsum
that sums the weights' last axis), also through dropout, casts,
``masked_fill`` and locals of the same function,
reads attention scores.  The walk then takes any tensor of unknown origin for
the scores; where two meet, the one the mask analysis knows as a mask is the
term.  A softmax whose result feeds anything else (a loss, ``argmax``
routing, sampling, a ``return``) stays unjudged.

A fill on the way (``masked_fill(m, -inf)``, ``torch.where(m, x, -inf)``,
also in place) *covers* every term before it: the masked positions are
removed whatever the arithmetic did, so those terms are not reported.  A
``masked_fill`` whose value cannot be read (an imported constant) covers
too; only a fill known to be small (``0``) does not.

Never imports torch.  One analysis per file, kept on the engine's Context.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import libcst as cst

from ..core.einx_api import EINX_WHERE, einx_where_args
from .flow import CallSite, DefKind, Env, Scope, lookup
from .score_parts import Uses, assigned_name, einsum_spec, root_name

MAX_DEPTH = 24
_SOFTMAX = {"torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax"}
_SOFTMAX_MODULE = "torch.nn.Softmax"
_PRODUCT = {"torch.matmul", "torch.bmm", "torch.einsum", "einops.einsum"}
_EINSUM = ("torch.einsum", "einops.einsum")
_TRANSPOSE = {"transpose", "permute", "swapaxes", "swapdims", "movedim", "t"}
_TRANSPOSE_ATTRS = {"mT", "T", "mH", "H"}
# methods that keep a tensor the same scores (dtype, device, shape, copies)
_KEEP_METHODS = {
    "float",
    "half",
    "double",
    "bfloat16",
    "to",
    "type",
    "type_as",
    "contiguous",
    "clone",
    "view",
    "reshape",
    "view_as",
    "reshape_as",
    "squeeze",
    "unsqueeze",
    "flatten",
    "unflatten",
    "clamp",
    "clip",
    "clamp_min",
    "clamp_max",
    "detach",
    "expand",
    "expand_as",
    "float32",
    "masked_scatter",
}
_ARITH = {
    "add": "add",
    "add_": "add",
    "sub": "sub",
    "sub_": "sub",
    "subtract": "sub",
    "mul": "mul",
    "mul_": "mul",
    "multiply": "mul",
    "div": "div",
    "div_": "div",
    "true_divide": "div",
}
_INPLACE = {"add_", "sub_", "mul_", "masked_fill_", "div_"}


@dataclass
class Term:
    """Something added to, subtracted from or multiplied with attention scores."""

    expr: cst.BaseExpression  # the operand that is not the scores
    op: str  # "add" | "sub" | "mul"
    at: cst.CSTNode  # where the operation is written (reported there)
    env: Env
    scope: Optional[Scope]
    # the -inf fills between this operation and the softmax: (their mask, env,
    # scope) each, the mask None where it cannot be read; () for none
    covered: tuple
    text: str = ""
    # the helper that does the operation (``add_bias(s, mask)``), for the message
    through: Optional[dict] = None


@dataclass
class Scores:
    """One softmax over attention scores, and the terms on the way to it.

    ``product`` is the query-key product the scores come from; for scores
    recognised by use (``by_use``) it is the first tensor of unknown origin
    the walk reached instead (a ``Def`` for a parameter), which serves only
    to tell two walks to the same scores apart from walks to others."""

    softmax: CallSite
    product: object
    terms: List[Term] = field(default_factory=list)
    by_use: bool = False
    filled: bool = False  # a -inf fill (masked_fill, where) on the way
    values: Optional[cst.BaseExpression] = None  # the values the weights multiply
    key: Optional[Tuple[cst.BaseExpression, Env, Optional[Scope]]] = None  # of the product
    opaque_call: bool = False  # by use: a call given a mask or bias made the scores


class _Walk:
    def __init__(self, analysis: "ScoresAnalysis", limit: int):
        self.a = analysis
        self.limit = limit  # index of the softmax in flow.calls: in-place ops before it
        self.product: Optional[cst.CSTNode] = None
        self.terms: List[Term] = []
        self.seen: set = set()
        self.by_use = False  # a tensor of unknown origin counts as the scores
        self.filled = False
        self.opaque_call = False
        self.key: Optional[Tuple[cst.BaseExpression, Env, Optional[Scope]]] = None


class ScoresAnalysis:
    """Per file: which softmax calls read attention scores, and their terms."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.resolver = ctx.resolver
        self._index: Dict[int, int] = {}
        self._inplace: Dict[Tuple[int, str], List[Tuple[int, CallSite]]] = {}
        for i, site in enumerate(ctx.flow.calls):
            self._index.setdefault(id(site.node), i)
            func = site.node.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value in _INPLACE
                and isinstance(func.value, cst.Name)
                and isinstance(site.stmt, cst.Expr)
                and site.stmt.value is site.node
            ):
                key = (id(site.scope), func.value.value)
                self._inplace.setdefault(key, []).append((i, site))
        self._cache: Dict[int, Optional[Scores]] = {}
        self._big_negative = None

    # ------------------------------------------------------------------ entry
    def at(self, site: CallSite) -> Optional[Scores]:
        """The scores a softmax call at ``site`` reads, or None when the call is
        not a softmax over attention scores."""
        key = id(site)
        if key not in self._cache:
            self._cache[key] = self._scores(site)
        return self._cache[key]

    def position(self, site: CallSite) -> Optional[int]:
        """Where a call stands among the file's calls (None: not a call of the pass)."""
        return self._index.get(id(site.node))

    def product_of(self, node: cst.BaseExpression, site: CallSite) -> Optional[cst.CSTNode]:
        """The query-key product a tensor at ``site`` walks back to (through
        scaling, locals and the in-place operations before ``site``), or None."""
        here = self.position(site)
        if here is None:
            return None
        walk = _Walk(self, here)
        try:
            if not self._walk(node, site.env, site.scope, walk, (), 0):
                return None
        except RecursionError:  # pragma: no cover - pathological nesting
            return None
        return walk.product

    def origin_of(self, node: cst.BaseExpression, site: CallSite) -> object:
        """What a tensor at ``site`` walks back to: the query-key product, or
        else the first tensor of unknown origin (scores recognised by use are
        matched by it), or None."""
        got = self.product_of(node, site)
        if got is not None:
            return got
        here = self.position(site)
        if here is None:
            return None
        walk = _Walk(self, here)
        walk.by_use = True
        try:
            if not self._walk(node, site.env, site.scope, walk, (), 0):
                return None
        except RecursionError:  # pragma: no cover - pathological nesting
            return None
        return walk.product

    def _scores(self, site: CallSite) -> Optional[Scores]:
        arg = self.softmax_input(site)
        limit = self._index.get(id(site.node), len(self.ctx.flow.calls))
        if arg is None:
            return self._softmaxing_helper(site, limit)
        walk = _Walk(self, limit)
        if self._walk(arg, site.env, site.scope, walk, (), 0) and walk.product is not None:
            values = self.values_product(site)
            return Scores(site, walk.product, walk.terms, False, walk.filled, values, walk.key)
        # attention by use: the weights are multiplied with values
        values = self.values_product(site)
        if values is None:
            return None
        walk = _Walk(self, limit)
        walk.by_use = True
        if not self._walk(arg, site.env, site.scope, walk, (), 0) or walk.product is None:
            return None
        got = Scores(site, walk.product, walk.terms, True, walk.filled, values)
        got.opaque_call = walk.opaque_call
        return got

    def _softmaxing_helper(self, site: CallSite, limit: int) -> Optional[Scores]:
        """A call of a project helper that softmaxes the arithmetic of two of
        its parameters (``w = gated_softmax(scores, valid)``), whose result is
        multiplied with values: the scores and the term are the caller's
        arguments."""
        if len(site.node.args) < 2:
            return None
        got = self.helper_call(site.node, site.env, site.scope)
        if got is None or not got["softmax"]:
            return None
        values = self.values_product(site)  # dear: asked last
        if values is None:
            return None
        left, right, op = got["left"], got["right"], got["op"]
        for by_use in (False, True):  # scores of ``q @ k``, else recognised by use (an einsum)
            walk = _Walk(self, limit)
            walk.by_use = by_use
            if not self._binary(site.node, left, right, op, site.env, site.scope, walk, (), 1):
                continue
            if walk.product is not None:
                break
        else:
            return None
        for term in walk.terms:
            if term.at is site.node:
                term.through = got["through"]
        return Scores(site, walk.product, walk.terms, False, walk.filled, values, walk.key)

    def helper_call(self, call: cst.Call, env, scope) -> Optional[dict]:
        """``Project.score_call`` of a call (a helper of score arithmetic of
        this file or the project), None without a project."""
        project = getattr(self.ctx, "project", None)
        if project is None or not isinstance(call.func, (cst.Name, cst.Attribute)):
            return None
        try:
            return project.score_call(call, env, scope)
        except RecursionError:  # pragma: no cover
            return None

    def softmax_input(self, site: CallSite) -> Optional[cst.BaseExpression]:
        call = site.node
        func = call.func
        qn = self.qualname(func, site.env, site.scope)
        if qn in _SOFTMAX:
            x, dim = _arg(call, 0, "input"), _arg(call, 1, "dim")
        elif self._softmax_module(func, site):  # ``nn.Softmax(dim=-1)(scores)``, a held one
            x, dim = _arg(call, 0, "input"), None
        elif qn is None and isinstance(func, cst.Attribute) and func.attr.value == "softmax":
            x, dim = func.value, _arg(call, 0, "dim")
        elif self._softmax_helper(call, site, qn):  # OpenFold's ``softmax_no_cast(a)``
            x, dim = _arg(call, 0, "t"), None
        else:
            return None
        if x is None or (dim is not None and not _is_minus_one(dim)):
            return None
        return x

    def _softmax_helper(self, call: cst.Call, site: CallSite, qn: Optional[str]) -> bool:
        """A function whose one statement returns the softmax of its first
        parameter over the last axis (``def softmax_no_cast(t, dim=-1):
        return F.softmax(t, dim=dim)``, ``return t.softmax(dim=-1)``), of this
        file or imported from another project file (probe AC's AC11), called
        with that parameter alone (the default axis)."""
        if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
            return False
        if isinstance(call.func, cst.Attribute) and self.resolver.self_class(
            call.func, site.env, site.scope
        ):
            return False  # a method: not read as a softmax
        from .program.returns import helper_reading, may_be_helper  # asked lazily

        if not may_be_helper(qn):
            return False  # torch's, einops': no helper of the project

        try:
            got = helper_reading(
                self.ctx, call, site.env, site.scope, "softmax", softmax_of_first, ("softmax",)
            )
        except RecursionError:  # pragma: no cover
            return False
        return got is not None

    def _softmax_module(self, func, site: CallSite) -> bool:
        """``nn.Softmax(dim=-1)`` built right there, or held on ``self`` (one
        assignment), over the last axis."""
        built = func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            cls = self.resolver.self_class(func, site.env, site.scope)
            defs = self.resolver.attr_defs(cls, func.attr.value) if cls is not None else []
            if len(defs) != 1 or defs[0].kind != DefKind.ASSIGN:
                return False
            built, env, scope = defs[0].node, defs[0].env, defs[0].scope
        else:
            env, scope = site.env, site.scope
        if (
            not isinstance(built, cst.Call)
            or self.qualname(built.func, env, scope) != _SOFTMAX_MODULE
        ):
            return False
        dim = _arg(built, 0, "dim")
        return dim is not None and _is_minus_one(dim)

    def qualname(self, node, env, scope) -> Optional[str]:
        try:
            return self.resolver.qualname(node, env, scope)
        except RecursionError:  # pragma: no cover
            return None

    def removes(self, node, env, scope) -> bool:
        """Whether a fill value may remove what it fills: a large negative, or a
        value the analysis cannot read (``-constant.INFINITY_NUMBER``): unsure
        counts as removing, so that nothing before it is reported."""
        if self.big_negative(node, env, scope):
            return True
        from .values import UNKNOWN, value_of

        try:
            v = value_of(node, env, scope)
        except RecursionError:  # pragma: no cover
            return True
        return v is UNKNOWN or not isinstance(v, (int, float)) or v <= -1e3

    def big_negative(self, node, env, scope) -> bool:
        from .masks import At, analysis_for

        if self._big_negative is None:
            self._big_negative = analysis_for(self.ctx).evaluator.is_big_negative
        try:
            return bool(self._big_negative(node, At(env, scope, None, 0)))
        except RecursionError:  # pragma: no cover
            return False

    # ------------------------------------------------------------------ the walk
    def _walk(self, node, env: Env, scope, w: _Walk, covered: tuple, depth: int) -> bool:
        """Whether ``node`` holds attention scores; records terms on the way."""
        if depth > MAX_DEPTH:
            return False
        if covered:
            w.filled = True
        t = type(node)
        d = depth + 1
        if t is cst.BinaryOperation:
            op = node.operator
            if isinstance(op, cst.MatrixMultiply):
                return self._product(node, node.left, node.right, env, scope, w)
            if isinstance(op, (cst.Add, cst.Subtract, cst.Multiply)):
                kind = (
                    "add"
                    if isinstance(op, cst.Add)
                    else ("sub" if isinstance(op, cst.Subtract) else "mul")
                )
                return self._binary(node, node.left, node.right, kind, env, scope, w, covered, d)
            if isinstance(op, (cst.Divide, cst.FloorDivide)):
                return self._walk(node.left, env, scope, w, covered, d)
            return False
        if t is cst.UnaryOperation and isinstance(node.operator, cst.Minus):
            return self._walk(node.expression, env, scope, w, covered, d)
        if t is cst.Subscript:
            return self._walk(node.value, env, scope, w, covered, d)
        if t is cst.IfExp:
            a = self._walk(node.body, env, scope, w, covered, d)
            b = self._walk(node.orelse, env, scope, w, covered, d)
            return a or b
        if t is cst.Name:
            return self._name(node, env, scope, w, covered, d)
        if t is cst.Call:
            return self._call(node, env, scope, w, covered, d)
        if t is cst.Attribute:
            return self._opaque(node, w)
        return False

    def _opaque(self, origin: object, w: _Walk) -> bool:
        """In a walk by use, a tensor of unknown origin stands for the scores."""
        if not w.by_use:
            return False
        w.product = w.product or origin
        if isinstance(origin, cst.Call) and any(self._names_a_mask(a.value) for a in origin.args):
            w.opaque_call = True  # it may mask the scores itself (maybe_add_mask(attn, bias))
        return True

    def _names_a_mask(self, node) -> bool:
        text = self.ctx.module.code_for_node(node).lower()
        return "mask" in text or "bias" in text

    def _maskish(self, node, env, scope) -> bool:
        """Whether the mask analysis knows ``node`` as a mask (keep, ignore or
        additive): in a walk by use it is a term, not the scores."""
        from .masks import At, analysis_for

        try:
            mask = analysis_for(self.ctx).evaluator.eval(node, At(env, scope, None, 0))
        except RecursionError:  # pragma: no cover
            return False
        return mask.meaning is not None or mask.kind is not None or bool(mask.fill)

    def _name(self, node: cst.Name, env, scope, w: _Walk, covered: tuple, d: int) -> bool:
        defs = lookup(node.value, env, scope)
        found = False
        # in-place arithmetic on this very binding before the softmax: the
        # latest first, each covering what came before it
        ops = [
            site
            for i, site in self._inplace.get((id(scope), node.value), ())
            if i < w.limit and site.env.get(node.value) is defs and defs
        ]
        for site in reversed(ops):
            call = site.node
            name = call.func.attr.value
            if name == "masked_fill_":
                v = _arg(call, 1, "value")
                if v is None or self.removes(v, site.env, site.scope):
                    covered = covered + ((_arg(call, 0, "mask"), site.env, site.scope),)
                continue
            arg = _arg(call, 0, "other")
            if arg is not None and _ARITH[name] != "div":
                w.terms.append(Term(arg, _ARITH[name], call, site.env, site.scope, covered))
        for df in defs:
            key = (id(df), tuple(id(f[0]) for f in covered))
            if key in w.seen:
                continue
            w.seen.add(key)
            if df.kind == "assign" and df.node is not None and not df.index:
                found = self._walk(df.node, df.env, df.scope, w, covered, d) or found
            elif df.kind == "augassign":
                aug: cst.AugAssign = df.node
                op = aug.operator
                kind = (
                    "add"
                    if isinstance(op, cst.AddAssign)
                    else "sub"
                    if isinstance(op, cst.SubtractAssign)
                    else "mul"
                    if isinstance(op, cst.MultiplyAssign)
                    else "div"
                    if isinstance(op, cst.DivideAssign)
                    else None
                )
                if kind is None or not isinstance(aug.target, cst.Name):
                    continue
                if self._walk(aug.target, df.env, df.scope, w, covered, d):
                    found = True
                    if kind != "div":
                        w.terms.append(Term(aug.value, kind, aug, df.env, df.scope, covered))
        if (
            not found
            and w.by_use
            and not any(
                df.kind in ("assign", "augassign") and df.node is not None and not df.index
                for df in defs
            )
        ):
            return self._opaque(defs[0] if defs else node, w)  # a parameter, an unpacked name
        return found

    def _binary(self, at, left, right, kind, env, scope, w: _Walk, covered, d) -> bool:
        lhs = self._walk(left, env, scope, w, covered, d)
        rhs = self._walk(right, env, scope, w, covered, d) if kind != "sub" or not lhs else False
        if w.by_use and lhs and (rhs or kind == "sub"):
            # two tensors of unknown origin: the one known as a mask is the term
            if self._maskish(right, env, scope):
                w.terms.append(Term(right, kind, at, env, scope, covered))
            elif kind != "sub" and self._maskish(left, env, scope):
                w.terms.append(Term(left, kind, at, env, scope, covered))
            else:  # neither: the right one is kept as a term of unknown kind
                w.terms.append(Term(right, kind, at, env, scope, covered))
            return True
        if lhs and not rhs:
            w.terms.append(Term(right, kind, at, env, scope, covered))
        elif rhs and not lhs and kind != "sub":
            w.terms.append(Term(left, kind, at, env, scope, covered))
        return lhs or rhs

    def _call(self, node: cst.Call, env, scope, w: _Walk, covered: tuple, d: int) -> bool:
        func = node.func
        qn = self.qualname(func, env, scope)
        if qn in _PRODUCT:
            if qn in _EINSUM:
                return self._einsum(node, qn, env, scope, w) or self._opaque(node, w)
            second = "other" if qn == "torch.matmul" else "mat2"
            a, b = _arg(node, 0, "input"), _arg(node, 1, second)
            return a is not None and b is not None and self._product(node, a, b, env, scope, w)
        if qn in ("torch.add", "torch.sub", "torch.subtract", "torch.mul", "torch.multiply"):
            a, b = _arg(node, 0, "input"), _arg(node, 1, "other")
            if a is None or b is None:
                return False
            return self._binary(node, a, b, _ARITH[qn.rsplit(".", 1)[1]], env, scope, w, covered, d)
        if qn in ("torch.where", EINX_WHERE):
            if qn == EINX_WHERE:
                got = einx_where_args(node)
                _, c, a, b = got if got is not None else (None, None, None, None)
            else:
                c, a, b = _arg(node, 0, "condition"), _arg(node, 1, "input"), _arg(node, 2, "other")
            if c is None or a is None or b is None:
                return False
            if self.big_negative(b, env, scope):
                return self._walk(a, env, scope, w, covered + ((c, env, scope),), d)
            if self.big_negative(a, env, scope):
                return self._walk(b, env, scope, w, covered + ((c, env, scope),), d)
            return False
        if qn == "torch.masked_fill":
            x, v = _arg(node, 0, "input"), _arg(node, 2, "value")
            if x is None or v is None:
                return False
            fill = ((_arg(node, 1, "mask"), env, scope),) if self.removes(v, env, scope) else ()
            return self._walk(x, env, scope, w, covered + fill, d)
        if len(node.args) >= 2 and not (qn or "").startswith("torch."):
            got = self.helper_call(node, env, scope)
            if got is not None and not got["softmax"]:  # ``add_bias(scores, mask)``
                n = len(w.terms)
                found = self._binary(
                    node, got["left"], got["right"], got["op"], env, scope, w, covered, d
                )
                for term in w.terms[n:]:
                    if term.at is node:
                        term.through = got["through"]
                return found
        if qn is not None or not isinstance(func, cst.Attribute):
            return self._opaque(node, w)
        name = func.attr.value
        if name in _KEEP_METHODS:
            return self._walk(func.value, env, scope, w, covered, d)
        if name in ("masked_fill", "masked_fill_"):
            v = _arg(node, 1, "value")
            fill = v is None or self.removes(v, env, scope)
            fill = ((_arg(node, 0, "mask"), env, scope),) if fill else ()
            return self._walk(func.value, env, scope, w, covered + fill, d)
        if name in ("where",):  # x.where(cond, other)
            other = _arg(node, 1, "other")
            fill = other is None or self.removes(other, env, scope)
            fill = ((_arg(node, 0, "condition"), env, scope),) if fill else ()
            return self._walk(func.value, env, scope, w, covered + fill, d)
        if name in _ARITH:
            other = _arg(node, 0, "other")
            if not self._walk(func.value, env, scope, w, covered, d):
                return False
            if other is not None and _ARITH[name] != "div":
                w.terms.append(Term(other, _ARITH[name], node, env, scope, covered))
            return True
        if name in ("matmul", "bmm") and node.args:
            return self._product(node, func.value, node.args[0].value, env, scope, w)
        return self._opaque(node, w)

    # ------------------------------------------------------------------ the use
    def values_product(self, site: CallSite) -> Optional[cst.BaseExpression]:
        """The values the softmax's result at ``site`` is multiplied with (``w @
        v``, ``torch.matmul(w, v)``, ``w.bmm(v)``, a two-operand einsum), read
        through dropout, casts and shape methods, ``masked_fill`` and locals of
        the same function; None when the result feeds anything else (a loss,
        a routing decision, sampling, a return)."""
        func = site.function
        if func is None:
            return None
        body = Uses(func)
        return self._product_up(site.node, tuple(site.parents), site.stmt, body, site, 0, ())

    def _product_up(self, node, parents, stmt, body: "Uses", site, depth: int, names):
        if depth > 4:
            return None
        child = node
        for parent in reversed(parents):
            if isinstance(parent, (cst.Arg, cst.Attribute)):
                continue
            got = self._step(parent, child, site)
            if got is True:
                child = parent
                continue
            if got is not None and root_name(got) in names:
                return None  # the weights times themselves (s @ s.T): not values
            return got
        target = assigned_name(stmt, child)
        if target is None:
            return None
        for use, chain, use_stmt in body.uses(target, stmt):
            got = self._product_up(use, chain, use_stmt, body, site, depth + 1, names + (target,))
            if got is not None:
                return got
        return None

    def _step(self, parent, child, site):
        """The product node when ``parent`` multiplies ``child`` (weights) with
        values; True when ``parent`` passes ``child`` on; None otherwise."""
        if isinstance(parent, cst.BinaryOperation):
            if isinstance(parent.operator, cst.MatrixMultiply) and parent.left is child:
                return parent.right
            return None
        if not isinstance(parent, cst.Call):
            return None
        func = parent.func
        if isinstance(func, cst.Attribute) and func.value is child:
            name = func.attr.value
            if name in ("matmul", "bmm") and parent.args:
                return parent.args[0].value
            if name in _KEEP_METHODS or name in _PASS_METHODS:
                return True
            return None
        if not any(a.value is child for a in parent.args):
            return None
        qn = self.qualname(func, site.env, site.scope)
        if qn in ("torch.matmul", "torch.bmm"):
            if _arg(parent, 0, "input") is not child:
                return None
            return _arg(parent, 1, "other" if qn == "torch.matmul" else "mat2")
        if qn in _EINSUM:
            got = einsum_spec(parent, qn)
            if got is None or not any(x is child for x in got[2]):
                return None
            (a, b), out, (x, y) = got
            ours, other = (a, b) if x is child else (b, a)
            if not ours or ours[-1] == "..." or ours[-1] in out or ours[-1] not in other:
                return None  # weights sum their last axis against the values
            return y if x is child else x
        if qn in _PASS_FUNCS:
            return True if _arg(parent, 0, "input") is child else None
        if qn is None:  # self.dropout(w), self.attn_drop(w), dropout(w)
            name = func.attr.value if isinstance(func, cst.Attribute) else ""
            name = func.value if isinstance(func, cst.Name) else name
            if "drop" in name.lower() and parent.args[0].value is child:
                return True
        return None

    # ------------------------------------------------------------------ products
    def _product(self, node, a, b, env, scope, w: _Walk) -> bool:
        """``a @ b`` is a query-key product when ``b`` is transposed (here or
        in the local it comes from) and ``a`` is not a constant."""
        if isinstance(a, (cst.Integer, cst.Float)) or not self._transposed(b, env, scope, 0):
            return self._opaque(node, w)
        if w.product is None:
            w.product, w.key = node, (b, env, scope)
        return True

    def _transposed(self, node, env, scope, depth: int) -> bool:
        if depth > 6:
            return False
        if isinstance(node, cst.Attribute):
            return node.attr.value in _TRANSPOSE_ATTRS
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            name = node.func.attr.value
            if name in _TRANSPOSE:
                return name == "t" or len(node.args) >= 2
            if name in _KEEP_METHODS:
                return self._transposed(node.func.value, env, scope, depth + 1)
            return False
        if isinstance(node, cst.Call):
            qn = self.qualname(node.func, env, scope)
            if qn in ("torch.transpose", "torch.permute", "torch.swapaxes", "torch.movedim"):
                return True
            return False
        if isinstance(node, cst.Name):
            defs = lookup(node.value, env, scope)
            return bool(defs) and all(
                df.kind == "assign"
                and not df.index
                and df.node is not None
                and self._transposed(df.node, df.env, df.scope, depth + 1)
                for df in defs
            )
        return False

    def _einsum(self, node: cst.Call, qn: str, env, scope, w: _Walk) -> bool:
        got = einsum_spec(node, qn)
        if got is None:
            return False
        (pa, pb), out, (_, key) = got
        if qn == "torch.einsum" and "..." in pa + pb:
            return False
        a, b = set(pa) - {"..."}, set(pb) - {"..."}
        o = set(out)
        contracted = (a & b) - o
        if contracted and (a - b) & o and (b - a) & o:
            if w.product is None:
                w.product, w.key = node, (key, env, scope)
            return True
        return False


_PASS_METHODS = {"masked_fill", "masked_fill_", "nan_to_num", "type_as", "to"}
_PASS_FUNCS = {
    "torch.nn.functional.dropout",
    "torch.dropout",
    "torch.nan_to_num",
    "torch.nn.functional.dropout1d",
}


def analysis_for(ctx) -> ScoresAnalysis:
    """The file's scores analysis, kept on the Context (dies with it)."""
    got = getattr(ctx, "_scores_analysis", None)
    if got is None:
        got = ScoresAnalysis(ctx)
        ctx._scores_analysis = got
    return got


def _arg(call: cst.Call, i: int, name: str) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    positional = [arg for arg in call.args if arg.keyword is None]
    if any(arg.star for arg in positional[: i + 1]):
        return None
    return positional[i].value if i < len(positional) else None


def _is_minus_one(node: cst.CSTNode) -> bool:
    return (
        isinstance(node, cst.UnaryOperation)
        and isinstance(node.operator, cst.Minus)
        and isinstance(node.expression, cst.Integer)
        and node.expression.value == "1"
    )


def softmax_of_first(ctx, func: cst.FunctionDef, fscope) -> Optional[dict]:
    """A helper's reading (``helper_reading``): its one return is the
    softmax of its first parameter over the last axis; ``{"params": [that
    parameter]}``, else None."""
    if len(fscope.returns) != 1:
        return None
    ret, renv = fscope.returns[0]
    params = [p.name.value for p in func.params.params]
    if not params or not isinstance(ret, cst.Call):
        return None
    if ctx.resolver.qualname(ret.func, renv, fscope) in _SOFTMAX:
        x, dim = _arg(ret, 0, "input"), _arg(ret, 1, "dim")
    elif isinstance(ret.func, cst.Attribute) and ret.func.attr.value == "softmax":
        x, dim = ret.func.value, _arg(ret, 0, "dim")  # ``return t.softmax(dim=-1)`` (probe AC)
    else:
        return None
    if not (isinstance(x, cst.Name) and x.value == params[0]):
        return None
    if isinstance(dim, cst.Name) and dim.value in params:  # ``dim=dim``: its default
        default = next(p.default for p in func.params.params if p.name.value == dim.value)
        dim = default
    return {"params": [params[0]]} if dim is not None and _is_minus_one(dim) else None
