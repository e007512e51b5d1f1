"""Grouped-query attention: how a file expands its K/V heads to the query heads.

Two orders exist (TORCH_FACTS item 18).  *Grouping* pairs query head ``i``
with KV head ``i // n_rep``: SDPA's ``enable_gqa=True``,
``repeat_interleave(n_rep, dim=head_axis)``, and a new axis inserted *after*
the head axis then merged (``x[:, :, None].expand(...).reshape(...)``, the
Llama ``repeat_kv``).  *Tiling* pairs it with KV head ``i % n_kv``:
``.repeat(1, n_rep, 1, 1)`` and a new axis inserted *before* the head axis
then merged (``x[:, None].expand(...).reshape(...)``).

Which axis holds the heads is read from the code only: ``view``/``reshape``
arguments named like head counts, then ``transpose``/``permute``; einops
patterns; ``b, n_kv, s, d = x.shape``; a repeat factor named like ``n_rep``
or computed as ``num_heads // num_kv_heads``.  A factor named like a beam or
batch count, the query head count (multi-query: one KV head, where tiling and
grouping agree), a sequence length, or a tensor that is not a key or value,
makes the expansion unknown, and unknown never fires.

The analysis is computed once per file and kept on the rule context.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import libcst as cst

from .flow import CallSite, Env, Scope, lookup
from .heads import (
    BEAM,
    KV_HELPER,
    KV_TENSOR,
    NOT_KV,
    SEQ,
    Axis,
    Layout,
    Layouts,
    arg_of,
    axes_from_sizes,
    call_sizes,
    einops_axes,
    ident,
    is_minus_one,
    is_one,
    name_role,
    names_of,
)
from .bound import passed
from .values import UNKNOWN, literal, value_of

TILE = "tile"
GROUP = "group"


# --- expansions -----------------------------------------------------------------


@dataclass
class Expansion:
    """One place where K/V heads are expanded to the query heads."""

    kind: str  # TILE or GROUP
    via: str  # repeat, expand, repeat_interleave, einops, enable_gqa
    site: CallSite
    head_axis: Optional[int] = None
    rank: Optional[int] = None
    factor: Optional[cst.CSTNode] = None
    layout: Optional[Layout] = None
    tensor: str = ""
    decided: str = ""  # what placed the head axis: layout, shape, factor
    deciding: List[cst.CSTNode] = field(default_factory=list)  # nodes whose lines decided it

    @property
    def node(self) -> cst.Call:
        return self.site.node

    def n_rep(self):
        if self.factor is None:
            return UNKNOWN
        v = value_of(self.factor, self.site.env, self.site.scope)
        return v if isinstance(v, int) and not isinstance(v, bool) else UNKNOWN

    def n_kv(self):
        if self.layout is None or self.head_axis is None or self.head_axis >= self.layout.rank:
            return UNKNOWN
        return self.layout.axes[self.head_axis].value()


_BAD_FACTORS = ("beam", "seq", "heads", "kv_heads", "one")
_EXPANDERS = frozenset({"repeat", "tile", "expand", "repeat_interleave", "cat", "concat"})


class GqaAnalysis:
    """Every K/V head expansion in one file, computed once."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.layouts = Layouts(ctx)
        self._found: Optional[List[Expansion]] = None
        # read for a caller that imports torch (a helper of another file):
        # the helper's own file need not import it
        self.torch_assumed = False
        self._tilings: Optional[Dict[int, Expansion]] = None

    @classmethod
    def of(cls, ctx) -> "GqaAnalysis":
        got = getattr(ctx, "_gqa_analysis", None)
        if got is None:
            got = cls(ctx)
            ctx._gqa_analysis = got  # dies with the file's context
        return got

    # the file's expansions ------------------------------------------------------------
    def expansions(self) -> List[Expansion]:
        if self._found is None:
            self._found = []
            if self.imports_torch():
                for site in self.ctx.flow.calls:
                    exp = self._classify(site)
                    if exp is not None:
                        self._found.append(exp)
        return self._found

    def tiling_at(self, site: CallSite) -> Optional[Expansion]:
        if self._tilings is None:
            self._tilings = {id(e.site): e for e in self.expansions() if e.kind == TILE}
        return self._tilings.get(id(site))

    def groupings(self) -> List[Expansion]:
        return [e for e in self.expansions() if e.kind == GROUP]

    def imports_torch(self) -> bool:
        if self.torch_assumed:
            return True
        scope = self.ctx.flow.module_scope
        for _, defs in scope.final_env.items():
            for d in defs:
                if (
                    d.kind == "import"
                    and isinstance(d.extra, str)
                    and d.extra.split(".")[0] == "torch"
                ):
                    return True
        return False

    def _classify(self, site: CallSite) -> Optional[Expansion]:
        call = site.node
        func = call.func
        name = (
            func.attr.value
            if isinstance(func, cst.Attribute)
            else (func.value if isinstance(func, cst.Name) else "")
        )
        if name not in _EXPANDERS and not any(
            a.keyword is not None and a.keyword.value == "enable_gqa" for a in call.args
        ):
            return None
        env, scope = site.env, site.scope
        qn = self.ctx.resolver.qualname(func, env, scope) or ""
        if qn.startswith("einops.") and qn.endswith(".repeat"):
            return self._einops(site)
        if qn == "functools.partial" and call.args and call.args[0].keyword is None:
            # ``partial(F.scaled_dot_product_attention, enable_gqa=True)``: SDPA's
            # grouping, wherever the partial is called
            inner = self.ctx.resolver.qualname(call.args[0].value, env, scope)
            if inner != "torch.nn.functional.scaled_dot_product_attention":
                return None
            gqa = next(  # by keyword: the partial's first positional is SDPA itself
                (a.value for a in call.args if a.keyword and a.keyword.value == "enable_gqa"), None
            )
            if gqa is not None and value_of(gqa, env, scope) is not False:
                return Expansion(GROUP, "enable_gqa", site, deciding=[call])
            return None
        if qn == "torch.nn.functional.scaled_dot_product_attention":
            gqa = arg_of(call, 7, "enable_gqa")
            if gqa is not None and value_of(gqa, env, scope) is not False:
                return Expansion(GROUP, "enable_gqa", site, deciding=[call])
            return None
        if qn == "torch.repeat_interleave":
            return self._interleave(
                site, arg_of(call, 0, "input"), arg_of(call, 1, "repeats"), arg_of(call, 2, "dim")
            )
        if qn in ("torch.cat", "torch.concat"):
            return self._cat(site)
        if qn == "torch.tile":
            dims = arg_of(call, 1, "dims")
            if isinstance(dims, (cst.Tuple, cst.List)):
                sizes = [el.value for el in dims.elements if not isinstance(el, cst.StarredElement)]
                if len(sizes) == len(dims.elements):
                    return self._repeat(site, arg_of(call, 0, "input"), sizes, "tile")
            return None
        if qn.startswith("torch.") or not isinstance(func, cst.Attribute):
            return None
        recv = func.value
        if name in ("repeat", "tile"):
            sizes = call_sizes(call, env, scope)
            return self._repeat(site, recv, sizes, name) if sizes else None
        if name == "repeat_interleave":
            return self._interleave(site, recv, arg_of(call, 0, "repeats"), arg_of(call, 1, "dim"))
        if name == "expand":
            return self._expand(site, recv)
        return None

    def factor_kind(
        self, node: Optional[cst.CSTNode], env: Env, scope: Scope, depth: int = 0
    ) -> str:
        """rep, heads, kv_heads, beam, seq, one, literal or other."""
        if node is None or depth > 4:
            return "other"
        v = literal(node)
        if isinstance(v, int) and not isinstance(v, bool):
            return "one" if v <= 1 else "literal"
        if isinstance(node, cst.BinaryOperation) and isinstance(
            node.operator, (cst.FloorDivide, cst.Divide)
        ):
            left, right = name_role(ident(node.left)), name_role(ident(node.right))
            if left == "heads" and right == "kv_heads":
                return "rep"
            return "other"
        name = ident(node)
        if name:
            if BEAM.search(name):
                return "beam"
            role = name_role(name)
            if role:
                return role
            if SEQ.search(name):
                return "seq"
        if isinstance(node, cst.Name):
            defs = lookup(node.value, env, scope)
            if len(defs) == 1 and defs[0].kind == "assign":
                return self.factor_kind(defs[0].node, defs[0].env, defs[0].scope, depth + 1)
        return "other"

    def _decide(
        self,
        kind: str,
        via: str,
        site: CallSite,
        recv: Optional[cst.CSTNode],
        rank: Optional[int],
        p: int,
        factor: Optional[cst.CSTNode],
        layout: Optional[Layout] = None,
        decided: str = "",
        deciding: Optional[List[cst.CSTNode]] = None,
    ) -> Optional[Expansion]:
        """An expansion of axis ``p`` by ``factor``, if the code shows it is the
        K/V head axis of a key or value tensor."""
        if recv is None or (p == 0 and decided != "layout"):
            return None  # axis 0 is the batch (beams), unless a stated layout puts heads there
        parents = site.parents
        if parents and isinstance(parents[-1], cst.Subscript) and parents[-1].value is site.node:
            return None  # expanded then cut (x.repeat(...)[:, :n]): not a plain head expansion
        env, scope = site.env, site.scope
        fk = self.factor_kind(factor, env, scope)
        if fk in _BAD_FACTORS:
            return None
        if layout is None:
            layout = self.layouts.of(recv, env, scope)
        deciding = list(deciding or [])
        if not decided and layout is not None:
            if rank is not None and layout.rank != rank:
                return None
            h = layout.head_axis()
            if h is not None:
                if h != p:
                    return None
                decided = "layout"
                deciding = layout.decided_by + deciding
        if not decided:
            if fk != "rep":
                return None
            if rank is not None and p == rank - 1:
                return None  # the last axis is the head width
            decided = "factor"
        if rank is None and layout is not None:
            rank = layout.rank
        exp = Expansion(
            kind,
            via,
            site,
            p,
            rank,
            factor,
            layout,
            _tensor_name(recv),
            decided,
            deciding + [site.node],
        )
        if exp.n_kv() == 1 or self._one_head_handed(recv, site, p):
            return None  # one KV head (multi-query): tiling and grouping agree
        if not self._is_kv(recv, site, layout):
            return None
        return exp

    def _one_head_handed(self, recv, site: CallSite, axis: int) -> bool:
        """``recv`` is a parameter of the function around ``site``, and every
        call of that function in the file hands it a tensor of one head on
        ``axis`` (probe AD's ``tile_kv(k, n)`` of a multi-query key)."""
        func = site.function
        if not isinstance(recv, cst.Name) or func is None:
            return False
        params = [p.name.value for p in func.params.params]
        defs = lookup(recv.value, site.env, site.scope)
        if recv.value not in params or len(defs) != 1 or defs[0].kind != "param":
            return False
        index = params.index(recv.value)
        resolver = self.ctx.resolver
        seen = 0
        for call in self.ctx.flow.calls:
            if resolver.own_function(call.node, call.env, call.scope) is not func:
                continue
            skip = 1 if isinstance(call.node.func, cst.Attribute) and params[:1] == ["self"] else 0
            arg = passed(call.node, index - skip, recv.value)
            layout = self.layouts.of(arg, call.env, call.scope) if arg is not None else None
            if layout is None or axis >= layout.rank or layout.axes[axis].value() != 1:
                return False
            seen += 1
        return seen > 0

    def _is_kv(self, recv: cst.CSTNode, site: CallSite, layout: Optional[Layout]) -> bool:
        names = names_of(recv) + (layout.names if layout is not None else [])
        if any(KV_TENSOR.match(n.lower()) and not NOT_KV.search(n.lower()) for n in names):
            return True
        root = names_of(recv)
        defs = lookup(root[0], site.env, site.scope) if root else ()
        # ``for t in (k, v)``: every element a key or value
        if defs and all(
            d.kind == "for" and isinstance(d.node, (cst.Tuple, cst.List)) and not d.index
            for d in defs
        ):
            elements = [el.value for d in defs for el in d.node.elements]
            return bool(elements) and all(
                isinstance(el, cst.Name)
                and KV_TENSOR.match(el.value.lower())
                and not NOT_KV.search(el.value.lower())
                for el in elements
            )
        func = site.function
        if func is not None and root and KV_HELPER.search(func.name.value.lower()):
            return bool(defs) and all(d.kind in ("param", "assign") for d in defs)
        return False

    def _repeat(self, site, recv, sizes, via) -> Optional[Expansion]:
        if recv is None or sizes is None or len(sizes) < 3:
            return None
        moved = [i for i, s in enumerate(sizes) if not is_one(s)]
        if len(moved) != 1:
            return None
        p = moved[0]
        base, j, _, _ = self._new_axis_of(recv, site)
        if base is not None and j == p:
            # a repeat of a fresh singleton axis is an expand: which side of the heads it is on decides
            return self._expand(site, recv, sizes, counts=True)
        return self._decide(TILE, via, site, recv, len(sizes), p, sizes[p])

    def _new_axis_of(self, recv: cst.CSTNode, site: CallSite):
        """``x[:, None]`` / ``x.unsqueeze(1)``, directly or through one local name:
        (x, the new axis, env, scope) or Nones."""
        base, j = _new_axis(recv)
        if base is not None:
            return base, j, site.env, site.scope
        if isinstance(recv, cst.Name):
            defs = lookup(recv.value, site.env, site.scope)
            if len(defs) == 1 and defs[0].kind == "assign":
                base, j = _new_axis(defs[0].node)
                if base is not None:
                    return base, j, defs[0].env, defs[0].scope
        return None, None, None, None

    def _cat(self, site: CallSite) -> Optional[Expansion]:
        """``torch.cat([k] * n_rep, dim=1)`` / ``torch.cat([k for _ in range(n_rep)], dim=1)``:
        copies one after another, a tiling."""
        call = site.node
        seq, dim = arg_of(call, 0, "tensors"), arg_of(call, 1, "dim")
        d = literal(dim) if dim is not None else UNKNOWN
        if not isinstance(d, int) or isinstance(d, bool) or d < 0:
            return None
        tensor = factor = None
        if (
            isinstance(seq, cst.BinaryOperation)
            and isinstance(seq.operator, cst.Multiply)
            and isinstance(seq.left, (cst.List, cst.Tuple))
            and len(seq.left.elements) == 1
        ):
            tensor, factor = seq.left.elements[0].value, seq.right
        elif (
            isinstance(seq, (cst.ListComp, cst.GeneratorExp))
            and seq.for_in.inner_for_in is None
            and not seq.for_in.ifs
            and isinstance(seq.for_in.iter, cst.Call)
            and ident(seq.for_in.iter.func) == "range"
            and len(seq.for_in.iter.args) == 1
        ):
            tensor, factor = seq.elt, seq.for_in.iter.args[0].value
        if not isinstance(tensor, (cst.Name, cst.Attribute)) or factor is None:
            return None
        return self._decide(TILE, "cat", site, tensor, None, d, factor)

    def _interleave(self, site, recv, repeats, dim) -> Optional[Expansion]:
        if recv is None or repeats is None or dim is None:
            return None
        d = literal(dim)
        if not isinstance(d, int) or isinstance(d, bool):
            return None
        layout = self.layouts.of(recv, site.env, site.scope)
        if d < 0:
            if layout is None:
                return None
            d += layout.rank
        return self._decide(GROUP, "repeat_interleave", site, recv, None, d, repeats, layout)

    def _expand(
        self, site: CallSite, recv: cst.CSTNode, sizes=None, counts: bool = False
    ) -> Optional[Expansion]:
        """``x[:, None].expand(...)`` (tiling) / ``x[:, :, None].expand(...)`` (grouping),
        merged by a following reshape/view/flatten; with ``counts``, the same
        with ``.repeat`` of the new axis (its arguments are counts, not sizes)."""
        base, j, benv, bscope = self._new_axis_of(recv, site)
        if base is None:
            return None
        if sizes is None:
            sizes = call_sizes(site.node, site.env, site.scope)
        if not sizes or j is None or not 0 < j < len(sizes) or len(sizes) < 4:
            return None
        factor = sizes[j]
        if is_one(factor) or is_minus_one(factor) or not self._merged(site):
            return None
        rank = len(sizes) - 1
        layout = self.layouts.of(base, benv, bscope)
        h: Optional[int] = None
        decided = ""
        if layout is not None and layout.rank == rank:
            h = layout.head_axis()
            decided = "layout" if h is not None else ""
        if h is None and counts:
            return None
        if h is None:
            named = [
                i
                for i, s in enumerate(sizes)
                if i != j and name_role(ident(s)) in ("kv_heads", "heads")
            ]
            if len(named) != 1:
                return None
            h = named[0] if named[0] < j else named[0] - 1
            decided = "shape"
            layout = Layout(
                axes_from_sizes(sizes[:j] + sizes[j + 1 :], site.env, site.scope) or [],
                [site.node],
                names_of(base),
            )
        if j == h:
            kind = TILE
        elif j == h + 1:
            kind = GROUP
        else:
            return None
        deciding = list(layout.decided_by) if decided == "layout" else []
        return self._decide(
            kind,
            "repeat" if counts else "expand",
            site,
            base,
            rank,
            h,
            factor,
            layout,
            decided,
            deciding,
        )

    def _merged(self, site: CallSite) -> bool:
        merge = ("reshape", "view", "flatten")
        parents = site.parents
        if parents and isinstance(parents[-1], cst.Attribute) and parents[-1].attr.value in merge:
            return True
        stmt = site.stmt
        if not (
            isinstance(stmt, cst.Assign)
            and stmt.value is site.node
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0].target, cst.Name)
        ):
            return False
        target = stmt.targets[0].target.value
        for other in self.ctx.flow.calls:
            func = other.node.func
            if (
                other.scope is site.scope
                and isinstance(func, cst.Attribute)
                and func.attr.value in merge
                and isinstance(func.value, cst.Name)
                and func.value.value == target
                and any(d.node is site.node for d in lookup(target, other.env, other.scope))
            ):
                return True
        return False

    def _einops(self, site: CallSite) -> Optional[Expansion]:
        """``einops.repeat(k, 'b h n d -> b (h r) n d', r=n_rep)``: (h r) groups, (r h) tiles."""
        call = site.node
        pattern = literal(arg_of(call, 1, "pattern") or cst.Name("None"))
        if not isinstance(pattern, str) or "->" not in pattern:
            return None
        left, right = pattern.split("->", 1)
        ins, outs = einops_axes(left, True), einops_axes(right, True)
        if ins is None or outs is None or any(t.startswith("(") for t in ins):
            return None
        known = ins[: ins.index("...")] if "..." in ins else ins  # axes counted from the left
        kwargs = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        for group in outs:
            if not group.startswith("("):
                continue
            parts = group.strip("()").split()
            if len(parts) != 2:
                continue
            old = [t for t in parts if t in ins]
            new = [t for t in parts if t not in ins]
            if len(old) != 1 or len(new) != 1 or new[0] not in kwargs:
                continue
            head = old[0]
            if head not in known and head not in ins[ins.index("...") + 1 :]:
                continue  # ``'... h d -> ... (g h) d'``: one counted from the right (ring attention)
            p = ins.index(head)
            head_expr = kwargs.get(head)
            if name_role(ident(head_expr) if head_expr is not None else head) not in (
                "kv_heads",
                "heads",
            ):
                continue
            kind = GROUP if parts[0] == head else TILE
            axes = [Axis(kwargs.get(t), site.env, site.scope, t) for t in ins]
            layout = Layout(axes, [call], names_of(arg_of(call, 0, "tensor") or call))
            exp = self._decide(
                kind,
                "einops",
                site,
                arg_of(call, 0, "tensor"),
                len(ins) if known is ins else None,
                p,
                kwargs[new[0]],
                layout,
                "layout",
                [call],
            )
            if exp is not None and known is not ins:
                exp.rank = None  # '...' stands for any number of axes
            return exp
        return None


def _new_axis(recv: cst.CSTNode) -> Tuple[Optional[cst.CSTNode], Optional[int]]:
    """``x[:, :, None]`` or ``x.unsqueeze(2)`` -> (x, 2)."""
    if isinstance(recv, cst.Subscript):
        j = None
        for i, el in enumerate(recv.slice):
            s = el.slice
            if (
                isinstance(s, cst.Index)
                and isinstance(s.value, cst.Name)
                and s.value.value == "None"
            ):
                if j is not None:
                    return None, None
                j = i
            elif not (
                isinstance(s, cst.Slice) and s.lower is None and s.upper is None and s.step is None
            ):
                return None, None
        return (recv.value, j) if j is not None else (None, None)
    if (
        isinstance(recv, cst.Call)
        and isinstance(recv.func, cst.Attribute)
        and recv.func.attr.value == "unsqueeze"
        and len(recv.args) == 1
    ):
        d = literal(recv.args[0].value)
        if isinstance(d, int) and not isinstance(d, bool) and d >= 0:
            return recv.func.value, d
    return None, None


def _tensor_name(node: Optional[cst.CSTNode]) -> str:
    names = names_of(node) if node is not None else []
    return names[0] if names else ""


def sdpa_gqa_flag(expr: Optional[cst.CSTNode], env: Env, scope: Scope) -> bool:
    """Whether SDPA's ``enable_gqa`` is statically True (``True``, a constant,
    or ``h_kv != h`` on known counts)."""
    if expr is None:
        return False
    v = value_of(expr, env, scope)
    if v is True:
        return True
    if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1:
        op = expr.comparisons[0].operator
        left = value_of(expr.left, env, scope)
        right = value_of(expr.comparisons[0].comparator, env, scope)
        if isinstance(left, int) and isinstance(right, int):
            if isinstance(op, cst.NotEqual):
                return left != right
            if isinstance(op, cst.Equal):
                return left == right
    return False


def line_of(ctx, nodes: List[cst.CSTNode]) -> Dict[int, int]:
    """``id(node) -> line`` for the few nodes an evidence dict names.  Resolved
    once per file, and only for a file with a GQA finding (rare)."""
    from ..core.positions import all_starts

    starts = all_starts(ctx.module)
    return {id(n): starts[id(n)][0] for n in nodes}


def as_int(v) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def code_text(ctx, node: cst.CSTNode) -> str:
    """One line of source for an evidence dict."""
    text = " ".join(ctx.module.code_for_node(node).split())
    return text if len(text) <= 100 else text[:97] + "..."


def axes_text(layout: Optional[Layout]) -> Optional[List[str]]:
    """Each axis as the code sizes it (``self.n_kv_heads``, ``-1``) or its name."""
    if layout is None:
        return None
    empty = cst.Module(body=[])
    return [
        empty.code_for_node(a.expr) if a.expr is not None else (a.name or "?") for a in layout.axes
    ]
