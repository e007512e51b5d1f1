"""Sinks: the arguments that read a mask, and the mask value reaching each.

``analysis_for(ctx)`` gives the one ``MaskAnalysis`` of a file; it lives in
the engine's per-file ``Context`` (``ctx.analyses``), so it is made and
dropped with the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

import libcst as cst

from ...core.einx_api import EINX_WHERE, einx_where_args
from ..flow import CallSite
from ..tree import is_none
from .calls import At, arg
from .domain import IGNORE, KEEP, Mask, Meaning, join_all
from .evaluator import MaskEvaluator

_SDPA = "scaled_dot_product_attention"


@dataclass
class Sink:
    """An argument that reads a mask, and what True means there."""

    site: CallSite
    module: str  # torch class name, "scaled_dot_product_attention", "masked_fill" or "where"
    arg: str  # the argument name, or "masked_fill" / "where"
    door: Meaning  # KEEP (True = attend) or IGNORE (True = masked out)
    expr: cst.BaseExpression
    attention: bool  # a module/SDPA attention mask argument (MHA004/MHA009 apply)
    call_text: str = ""


def analysis_for(ctx) -> "MaskAnalysis":
    """The one mask analysis of a file, shared by the mask rules; kept in the
    context's per-file store of analyses."""
    store = ctx.analyses
    got = store.get("masks")
    if got is None:
        got = MaskAnalysis(ctx)
        store["masks"] = got
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
        """The module call's mask arguments, but those each caller's call
        judges (``facts.decided_by_callers``)."""
        out = []
        callers = getattr(self.ctx, "callers_args", None) or {}
        left = callers.get(id(ev), ())
        for name in ev.spec.mask_args:
            if name in left:
                continue
            expr = ev.args.get(name)
            if expr is not None and not is_none(expr):
                out.append(Sink(ev.site, ev.spec.name, name, IGNORE, expr, True))
        return out

    def sdpa_sink(self, ev) -> Optional[Sink]:
        expr = ev.args.get("attn_mask")
        if expr is None or is_none(expr):
            return None
        return Sink(ev.site, _SDPA, "attn_mask", KEEP, expr, True)

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
        here = At(site.env, site.scope, None, 0)
        name = (
            func.attr.value
            if isinstance(func, cst.Attribute)
            else (func.value if isinstance(func, cst.Name) else None)
        )
        if name not in ("masked_fill", "masked_fill_", "where"):
            return None
        qn = ev.qualname(func, site.env, site.scope)
        if name == "where" and qn == EINX_WHERE:
            return self._einx_where(site, here)
        if name == "where":
            if qn == "torch.where":
                cond, a, b = arg(call, 0, "condition"), arg(call, 1, "input"), arg(call, 2, "other")
            elif qn is None and isinstance(func, cst.Attribute):
                cond, a, b = arg(call, 0, "condition"), func.value, arg(call, 1, "other")
            else:
                return None
            if cond is None or a is None or b is None:
                return None
            a_neg = ev.is_big_negative(a, here)
            b_neg = ev.is_big_negative(b, here)
            if a_neg == b_neg:
                return None
            door = IGNORE if a_neg else KEEP
            text = "torch.where(mask, -inf, x)" if a_neg else "torch.where(mask, x, -inf)"
            return Sink(site, "where", "where", door, cond, False, text)
        if qn == "torch.masked_fill":
            m, v = arg(call, 1, "mask"), arg(call, 2, "value")
        elif qn is None and isinstance(func, cst.Attribute):
            m, v = arg(call, 0, "mask"), arg(call, 1, "value")
        else:
            return None
        if m is None or v is None or not ev.is_big_negative(v, here):
            return None
        return Sink(site, "masked_fill", "masked_fill", IGNORE, m, False, f"{name}(mask, -inf)")

    def _einx_where(self, site: CallSite, here: At) -> Optional[Sink]:
        """``einx.where("b j, b h i j,", mask, sim, -inf)``: torch.where's
        convention after an einx description (True picks the first value)."""
        got = einx_where_args(site.node)
        if got is None:
            return None
        _, cond, a, b = got
        ev = self.evaluator
        a_neg, b_neg = ev.is_big_negative(a, here), ev.is_big_negative(b, here)
        if a_neg == b_neg:
            return None
        door = IGNORE if a_neg else KEEP
        text = "einx.where(..., mask, -inf, x)" if a_neg else "einx.where(..., mask, x, -inf)"
        return Sink(site, "where", "where", door, cond, False, text)

    # evidence ----------------------------------------------------------------
    def evidence(
        self,
        sink: Sink,
        mask: Mask,
        module_ev=None,
        construction: Optional[Callable[[object, object], Dict[str, object]]] = None,
    ) -> Dict[str, object]:
        """The finding's evidence: the module's construction (through
        ``construction(ctx, ctor)``, which the rule layer supplies), the sink
        and the mask value with the lines that decided it."""
        out: Dict[str, object] = {}
        if module_ev is not None and construction is not None:
            ctor = module_ev.single_ctor()
            if ctor is not None:
                out.update(construction(self.ctx, ctor))
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
