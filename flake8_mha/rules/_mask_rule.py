"""What the mask rules (MHA002, MHA003, MHA004, MHA009) share.

Each rule asks ``masks.analysis_for(ctx)`` what mask reaches a sink (a torch
module's mask argument, SDPA's ``attn_mask``, ``masked_fill`` with -inf,
``torch.where`` against -inf) and fires only on a part of the mask value the
analysis knows; an unknown mask never fires.
"""

from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from ..analysis.flow import DefKind, lookup
from ..analysis.masks import BOOL, FLOAT01, IGNORE, INT, Mask, MaskAnalysis, Sink, analysis_for
from ..analysis.masks.calls import At
from ..analysis.masks.hooks import abstract, each_override
from ..core.torch_api import SDPA_NAME
from .base import Report, Rule
from .construction import construction_evidence, one_construction


def sink_text(sink: Sink) -> str:
    if sink.module == SDPA_NAME:
        return SDPA_NAME
    if sink.module in ("masked_fill", "where"):
        return sink.call_text
    return f"{sink.module}'s {sink.arg}"


def true_word(mask: Mask) -> str:
    return "1" if mask.kind in (FLOAT01, INT) else "True"


INVERTED = "inverted by the function it is given to"  # a callee's steps invert the mask


# methods that give their tensor another shape, its values untouched
_RESHAPING = {"unsqueeze", "view", "reshape", "expand", "expand_as", "contiguous", "bool"}


def reshaped_from(expr: cst.BaseExpression, depth: int = 0) -> cst.BaseExpression:
    """What ``expr`` only reshapes: ``(~m)[:, None, None, :]``, ``rearrange(~m,
    "b s -> b 1 1 s")``, ``(~m).unsqueeze(1)`` are ``~m``'s values."""
    if depth > 4:
        return expr
    if isinstance(expr, cst.Subscript):
        return reshaped_from(expr.value, depth + 1)
    if not isinstance(expr, cst.Call):
        return expr
    func = expr.func
    if isinstance(func, cst.Attribute) and func.attr.value in _RESHAPING:
        return reshaped_from(func.value, depth + 1)
    first = expr.args[0] if expr.args else None
    if (
        getattr(func, "value", None) == "rearrange"
        and first
        and not first.star
        and not first.keyword
    ):
        return reshaped_from(first.value, depth + 1)  # einops' ``rearrange``, imported by name
    return expr


def assigned(expr, env, scope):
    """``expr`` through up to three names each bound once by an assignment
    (``mask = ... | ...`` then ``masked_fill(mask, ...)``), with the env and
    scope where it is written; a name bound otherwise stays the name."""
    for _ in range(3):
        if not isinstance(expr, cst.Name):
            break
        defs = lookup(expr.value, env, scope)
        if len(defs) != 1 or defs[0].kind != DefKind.ASSIGN:
            break
        expr, env, scope = defs[0].node, defs[0].env, defs[0].scope
    return expr, env, scope


def joined_ignore(a, expr, env, scope) -> Optional[Mask]:
    """The ignore-mask side of ``x & ignore`` (through ``assigned``): True
    only on what the ignore-mask marks, whatever ``x`` is (a segment
    equality, a causal keep-triangle), so every real key is lost where True
    means attend, and filled where its inverse is filled (NaViT). Known from
    the code (no name), no triangle, the other side not an ignore-mask."""
    expr, env, scope = assigned(expr, env, scope)
    if not (isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.BitAnd)):
        return None
    sides = [a.evaluator.eval(e, At(env, scope, None, 0)) for e in (expr.left, expr.right)]
    ignore = [
        m
        for m in sides
        if m.meaning == IGNORE
        and m.kind in (BOOL, None)
        and m.origin is not None
        and not m.origin.by_name
        and not m.causal
    ]
    if len(ignore) != 1 or any(m.meaning == IGNORE for m in sides if m is not ignore[0]):
        return None
    return ignore[0]


def described(a, mask: Mask) -> str:
    """The mask as a meaning rule's message names it (MHA002, MHA003): a
    caller's argument that the callee inverts is named as written, with that
    said, instead of as the callee uses it."""
    given = a.evaluator.inverted_arg(mask.origin)
    if given is not None:
        return f"mask from this call ({given}), {INVERTED},"
    return a.evaluator.describe(mask.origin)


def fix_words(a, mask: Mask, invert: str) -> str:
    """How to fix it: ``invert``, or, when the callee is what inverts this
    call's mask, that one of the two sides is wrong (inverting at the call
    an integer tokenizer mask would mask every key)."""
    if a.evaluator.inverted_arg(mask.origin) is not None:
        return "the callee's inversion or the mask handed to it is the mistake: fix one"
    return invert


class MaskRule(Rule):
    """Shared plumbing: the file's mask analysis and the report."""

    def analysis(self) -> MaskAnalysis:
        return analysis_for(self.ctx)

    def sdpa_mask(self, ev) -> Optional[Tuple[Sink, Mask]]:
        """SDPA's ``attn_mask`` sink at this call and the mask value reaching
        it, or None when no mask is passed."""
        a = self.analysis()
        sink = a.sdpa_sink(ev)
        if sink is None:
            return None
        return sink, a.value(sink)

    def fill_mask(self, ev, door) -> Optional[Tuple[Sink, Mask, str]]:
        """The fill a ``FillCall`` amounts to (a project function that fills
        scores with the caller's mask), the caller's mask there, and how the
        message names it (the caller's own mask, and whether the function
        inverts it), when its door is ``door``; a triangle only where that
        function softmaxes the scores it fills (MHA003's decision on fills of
        scores)."""
        want = "ignore" if door == IGNORE else "keep"
        if ev.door != want:
            return None
        kind = "masked_fill" if want == "ignore" else "where"
        sink = Sink(ev.site, kind, kind, door, ev.mask, False, ev.text)
        mask = self.analysis().value(sink)
        if mask.kind not in (BOOL, None) or ((mask.causal or mask.pairwise) and not ev.softmaxed):
            return None
        a = self.analysis()
        shown = a.evaluator.describe(mask.origin)
        if ev.given is not ev.mask:
            given = a.value(Sink(ev.site, sink.module, sink.arg, door, ev.given, False))
            if given.origin is not None and a.evaluator.line(given.origin.node) is not None:
                shown = a.evaluator.describe(given.origin)
                if ev.inverted:
                    shown += f", {INVERTED},"
        return sink, mask, shown

    def override_value(self, sink: Sink, wrong) -> Optional[Tuple[Mask, str]]:
        """For a sink in a method of a class that asks an abstract method of
        its own for the mask (``mask = self.build_mask(lengths, t)``): the
        mask under the first used subclass overriding it for which it is
        ``wrong``, and what the message adds; None otherwise (probe AP's
        AP07, ``masks/hooks.py``)."""
        cls = sink.site.scope.cls if sink.site.scope is not None else None
        if cls is None or not any(abstract(m) for m in cls.methods.values()):
            return None
        project = getattr(self.ctx, "project", None)
        for told, mask in each_override(lambda: MaskAnalysis(self.ctx).value(sink), project):
            if told is not None and wrong(mask):
                return mask, told
        return None

    def instance_value(self, sink: Sink, wrong) -> Optional[Tuple[Mask, str]]:
        """For a sink in a method of a module-level class whose mask is not
        known for the class as a whole (``self.causal = Keep(n) if keep_style
        else Ignore(n)``, built both ways in the project): the mask under the
        first construction of the class for which it is known and ``wrong``,
        and what the message adds; None otherwise (probe AD's AD26)."""
        scope = sink.site.scope
        cls = scope.cls if scope is not None else None
        if cls is None or cls.scope is None or cls.scope.kind != "module":
            return None
        if not any(isinstance(d.node, cst.IfExp) for ds in cls.attrs.values() for d in ds):
            return None  # no attribute chosen by a test: each construction's mask alike

        def judge():
            mask = MaskAnalysis(self.ctx).value(sink)  # read afresh for this construction
            return mask if wrong(mask) else None

        return one_construction(scope, cls, judge, at_least=2)

    def _report(self, where: Sink, value: Mask, module_ev, message: str, **fmt) -> Report:
        evidence = self.analysis().evidence(where, value, module_ev, construction_evidence)
        return self.report(where.site.node, evidence, message, **fmt)


def fills_attention_scores(ctx, sink: Sink) -> bool:
    """Whether the tensor a ``masked_fill``/``where`` sink fills is attention
    scores (a query-key product, or scores of any origin whose softmax is
    multiplied with values: see ``flake8_mha/analysis/scores.py``) and the filled
    scores of that very product reach a softmax later in the same function.

    A triangle at such a fill is judged like one at an attention argument; at
    any other fill (pairwise span scores, reading-order heads, a product
    never softmaxed) it stays unjudged.  Decision: "reach" means a softmax
    over attention scores, called after the fill in the same scope, whose
    walk back finds the same product; the fill need not be the last one."""
    from ..analysis import scores as scores_mod

    if sink.module not in ("masked_fill", "where"):
        return False
    site = sink.site
    if _sdpa_bias(ctx, site):
        return True
    filled = _filled_tensor(ctx, site)
    if filled is None:
        return False
    sa = scores_mod.analysis_for(ctx)
    calls = ctx.flow.calls
    here = sa.position(site)
    product = sa.origin_of(filled, site) if here is not None else None
    if product is None:
        return False
    for i, other in enumerate(calls):
        if other.scope is not site.scope or other is site:
            continue
        if i < here and not _contains(other.node, site.node):
            continue  # before the fill, unless the fill is inside it
        got = sa.at(other)
        if got is not None and got.product is product:
            return True
    return False


def _sdpa_bias(ctx, site) -> bool:
    """The fill makes a bias that an SDPA call of the same function is given
    as its ``attn_mask``, inline or through the local it is assigned to
    (``bias = rel.masked_fill(keep, -inf)``, then ``attn_mask=bias``): SDPA
    adds it to the scores, so it fills them."""
    import libcst as cst

    from ..analysis.events import SdpaCall

    stmt, target = site.stmt, None
    if isinstance(stmt, cst.Assign) and stmt.value is site.node and len(stmt.targets) == 1:
        if isinstance(stmt.targets[0].target, cst.Name):
            target = stmt.targets[0].target.value
    for ev in ctx.events:
        if not isinstance(ev, SdpaCall) or ev.site.scope is not site.scope:
            continue
        given = ev.args.get("attn_mask")
        if given is site.node or (target and isinstance(given, cst.Name) and given.value == target):
            return True
    return False


def _contains(outer, inner) -> bool:
    from ..analysis.flow import children

    stack = [outer]
    while stack:
        n = stack.pop()
        if n is inner:
            return True
        stack.extend(children(n))
    return False


def _filled_tensor(ctx, site):
    import libcst as cst

    from ..analysis.masks.calls import arg
    from ..core.einx_api import EINX_WHERE, einx_aligned, einx_where_args

    call = site.node
    func = call.func
    ev = analysis_for(ctx).evaluator
    qn = ev.qualname(func, site.env, site.scope)
    if qn == "torch.masked_fill":
        return arg(call, 0, "input")
    if qn == EINX_WHERE:  # a triangle only where the description keeps its axes in place
        got = einx_where_args(call)
        if got is None:
            return None
        from ..analysis.masks import At

        desc, _, a, b = got
        here = At(site.env, site.scope, None, 0)
        index = 3 if ev.is_big_negative(a, here) else 2
        return (b if index == 3 else a) if einx_aligned(desc, index - 1) else None
    if qn == "torch.where":
        a, b = arg(call, 1, "input"), arg(call, 2, "other")
        if a is None or b is None:
            return None
        from ..analysis.masks import At

        here = At(site.env, site.scope, None, 0)
        return b if ev.is_big_negative(a, here) else a
    if qn is None and isinstance(func, cst.Attribute):
        return func.value  # x.masked_fill(m, v), x.where(m, other)
    return None
