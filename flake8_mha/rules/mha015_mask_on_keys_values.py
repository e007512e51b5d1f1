"""MHA015: a padding or keep mask applied to the keys and values instead of the
attention scores.

Where K/V meet the queries: the query-key product of hand-written attention
and the values its weights multiply (``flake8_mha/analysis/scores.py``), SDPA's
``key``/``value``, and ``nn.MultiheadAttention``'s ``key``/``value``.  From
there the walk goes back through locals, shape and dtype methods and
transposes to a multiplication by a mask (``k * keep``, ``k.mul(keep)``,
``torch.mul(k, keep)``, ``k *= keep``) or a zero fill (``k.masked_fill(~keep,
0)``), asking the mask analysis what the mask means.
"""

from __future__ import annotations

from typing import Iterator, List, Optional, Tuple

import libcst as cst

from ..analysis.events import FillCall, ModuleCall, SdpaCall
from ..analysis.flow import CallSite, DefKind, lookup
from ..analysis.masks import (
    ADDITIVE,
    BOOL,
    FLOAT01,
    IGNORE,
    INT,
    KEEP,
    At,
    Mask,
    Origin,
    analysis_for,
)
from ..analysis.scores import analysis_for as scores_for
from ..core.torch_api import MULTIHEAD_ATTENTION, SDPA_NAME
from ..analysis.values import value_of
from ..analysis.masks.calls import handed_by_project, kv_summarised
from ..analysis.program.local_names import function_key
from ..analysis.program.returns import helper_reading, may_be_helper
from ..core.positions import line_of
from ._kv_rows import (
    MASK_SHAPING,
    SAME_ROWS,
    SAME_ROWS_FUNCS,
    read_rows,
    in_place,
    made_call,
    param_root,
    says_keep,
    shaped,
    unpacked,
    zeroed_where_false,
)
from .base import Example, Report, Rule

MAX_DEPTH = 10
_NUMERIC = (BOOL, FLOAT01, INT)
_MASK_ARGS = ("attn_mask", "key_padding_mask")
# a mask so named is not a padding mask of the keys: left alone when its meaning is unknown
_NOT_PADDING = ("attn", "causal", "bias", "tri", "future", "head", "drop", "grad")


Found = Tuple[cst.CSTNode, Mask, str]  # where the mask is applied, the mask, "mul" | "fill"
# the modules and functions that project each row of their input on its own
_PROJECTIONS = ("torch.nn.Linear", "torch.nn.LazyLinear")


class MaskOnKeysValues(Rule):
    CODE = "MHA015"
    NAME = "mask-on-keys-values"
    MESSAGE = (
        "{mask} applied to the {which} instead of the attention scores: "
        "{consequence} (mask the scores with -inf{how})"
    )
    KEYS = "a zeroed key still scores 0 and takes weight exp(0), so padding is attended to"
    VALUES = "the padded keys keep their share of the weight and dilute the output with zeros"
    WHAT = """
        Flags a padding or keep mask multiplied into the keys or the values
        (`k * keep`, `v * keep[..., None]`, `k *= keep`, `k.mul(keep)`,
        `k.masked_fill(~keep, 0)`, `torch.where(keep[..., None], k, 0)`, and
        in place, a statement before the call: `v.masked_fill_(~keep, 0.)`,
        `k.mul_(keep)`) where nothing masks the attention scores.

        Where the keys and values meet the queries:

        - hand-written attention: the key of the query-key product, or the
          values the softmax's weights are multiplied with (attention
          recognised by use, see MHA012's page);
        - `F.scaled_dot_product_attention` given the masked key or value and
          no `attn_mask` and no `is_causal`;
        - `nn.MultiheadAttention` given the masked key or value and no
          `key_padding_mask`, `attn_mask` or `is_causal`.

        The mask's meaning comes from the mask analysis (a tokenizer
        `attention_mask`, `tokens != pad_id`, `arange(S) < lengths[:, None]`),
        followed through locals, shape and dtype methods, transposes and
        einops `rearrange`, and through a projection of each row on its own
        (`self.to_k(x)` of an `nn.Linear`, `F.linear(x, w)`, `x @ w_k`): rows
        zeroed before it become the bias, or zero, and are still scored
        (probe AR's AR05, in one function). A helper whose one return multiplies by, or
        zero-fills with, one of its parameters (`def zero_pad(x, keep): return
        x * keep[..., None]`), in any file of the project, is read in its own
        file and judged with the caller's argument for that parameter, as if
        the multiplication were written at the call; so is one that returns
        the pair (`return k * m, v * m`), unpacked `k, v = mask_kv(k, v,
        keep)`; also a module's `forward` (`self.mask_kv(k, v, keep)`) or a
        `functools.partial` of a helper.

        The other direction too: a function or a module's `forward` that
        multiplies one of its parameters into the keys or values of its one
        SDPA call, which masks no scores (`F.scaled_dot_product_attention(q,
        k * keep4, v * keep4)` with `keep4 = keep[:, None, :, None].to(k.dtype)`,
        or `k.masked_fill(~keep[:, None, :, None], 0)`, or `torch.where(keep4, k, 0.0)`,
        or `k, v = apply_cloud(k, v, clear)` or `k = mask_atoms(k, keep)` of any project
        file), is judged at each call with the caller's mask, in this file or another: the
        finding is at the call that hands the keep-mask in, and names the function
        (`fixtures/program_calls/kv_masks/`, `mixer_loops/`, `kv_pair_helpers_apart/`,
        `kv_single_helpers/`). So is one that computes its own attention (`scores = q @
        k.transpose(-2, -1) / scale`, softmax, `@ v`) from keys or values it multiplies
        by a parameter, its scores neither filled nor given an added term, also through a helper of its class
        that moves the axes (`self.split(k)`): the finding is at the call,
        "the call reaches the keys and values of the attention at ...", and
        not at the multiplication as well (`fixtures/program_calls/kv_handwritten/`:
        a mask made by a vision encoder in a third file, handed through a
        fusion layer). A caller's mask that its code
        makes known is needed there: an ignore-mask handed in zeroes the real
        keys (another mistake, not this rule's) and a gate is no mask. A
        parameter named a mask that another file of the project hands a
        mask is then no evidence by its name in the function's own file:
        the defect is reported once, at the call. A caller that only hands
        on, bare, a parameter of its own (`self.readout(h, node_mask)` in
        `forward(self, h, node_mask)`) makes no mask: the name stays the
        evidence, and the finding stays where the keys are multiplied
        (`fixtures/program_calls/kv_passed_on/`). Limit: a caller that hands
        in an expression whose meaning the mask analysis cannot tell
        silences the name as well, and is not reported itself.
        """
    WHY = """
        Zeroing a key does not remove it: its score is q . 0 = 0, and softmax
        gives it the weight exp(0), comparable to any real key. Zeroing a value
        as well only makes that weight contribute nothing, so the output of
        every real token is diluted by the padding's share. Nothing raises
        (torch 2.13, SDPA with 6 of 10 keys padded: 0.99 off the -inf masking,
        52% of the attention weight on the padded keys).
        """
    EXAMPLE = """
        keep = (tokens != pad_id)[:, None, :, None]      # (N, 1, S, 1)
        out = F.scaled_dot_product_attention(q, k * keep, v * keep)
        """
    USE_INSTEAD = """
        keep = (tokens != pad_id)[:, None, None, :]      # (N, 1, 1, S), True = attend
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        """
    DECISIONS = """
        - Silent when the scores are masked anyway: a -inf fill or an additive
          mask on the hand-written scores (or any term of them known as a mask,
          which MHA004/MHA012 judge, or any tensor added to them, which may be a
          bias holding -inf at the padding), an `attn_mask`, a `key_padding_mask` or
          an `is_causal` that is not known False at the call (a literal, or
          `self.causal or causal` where every construction and call in the
          project leaves both False, read as Python reads `or`). Zeroed keys
          and values then change nothing the weights can see.
        - Masking the queries (`q * keep`) or the output after attention is not
          this rule: a padded query's row is thrown away later.
        - A triangle is not a mask of the keys: only masks whose meaning is not
          causal are reported. A factor of unknown meaning counts only when
          its name says mask (`context_mask`, `mask[..., None]`, a keep:
          `keep`, `res_keep`, not `keep_prob` or `keep_ratio`, or a local
          bound once to such a name only indexed, cast or reshaped: `keep =
          frame_mask[:, None, :, None].to(k.dtype)`; not `mask.sum(-1)`), and not an
          attention, causal, head or dropout mask or a bias: multiplied into
          the keys, a 0/1 mask leaves exp(0) on what it zeroes whichever way it
          points; the witness then says it assumed a padding keep-mask. So
          does a zero fill where such a name is false (`K.masked_fill_(~mask,
          0.0)`, `mask == 0`, `keep.logical_not()`: linformer-pytorch's
          `full_attention`). A keep parameter that the function's summary
          follows is judged at each call in the project instead, and by its
          name when nothing in the project calls the function. A learned gate
          or a scale is never reported.
        - The walk follows `k, v = k * m, v * m` and the pieces of `chunk`,
          `split` and `unbind` (`k, v = (kv * m).chunk(2, dim=-1)`), and each
          tensor of a head split that keeps its rows: `q, k, v = map(lambda
          t: rearrange(t, "b n (h d) -> b h n d", h=h), (q, k, v))`, the
          generator `(rearrange(t, ...) for t in (q, k, v))` and einops-exts'
          `rearrange_many((q, k, v), ...)`, also inside a wrapper of the
          project (`fixtures/program_calls/kv_heads/`), and a helper whose one
          return moves the axes of its argument (BERT's `transpose_for_scores`,
          `self._split(t)`), in this file or another.
        - A mask applied to the input before the K/V projections (`x * keep`
          then `k = self.wk(x)`) is not followed: the projection's bias moves
          the zeroed rows anyway, and the code may mask the scores elsewhere.
        - K/V masked and handed to a wrapper of the project (a function, or a
          module whose `forward` passes them on to SDPA), in this file or
          another, is followed: the finding is at the wrapper's call. A wrapper
          given a mask or a causal flag of its own masks the scores: silent.
          So is a module whose `forward` hands a parameter to an
          `nn.MultiheadAttention`'s key and value as the context of a
          cross-attention (its query another tensor) that masks no scores
          unless the caller gives its mask parameter (`self.attn(self.norm(x),
          ctx, ctx, key_padding_mask=ctx_pad)`, `ctx_pad=None`): a caller that
          hands a context zeroed by its keep-mask and no `ctx_pad` is reported
          at its call (`fixtures/program_calls/context_modules/`). A
          self-attention (`self.attn(x, x, x)`) handed an input its caller
          zeroed is not followed across the call: zeroing the padded tokens
          before a block is also done on purpose beside a mask given later.
        - Scores recognised by use and made by a call the analysis cannot read
          that is given a mask or bias (`maybe_add_mask(attn, bias)`,
          `self.score(q, k, mask)`) may be masked inside it: silent.
        - One finding per masked key or value tensor, at the expression that
          applies the mask (hand-written attention), or at the SDPA or module
          call that receives it.
        """
    VALID = [
        "import torch.nn.functional as F\n"
        "def attend(q, k, v, tokens, pad_id):\n"
        "    keep = tokens != pad_id\n"
        "    k = k * keep[:, None, :, None]\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])\n",
        "import torch\n"
        "def attend(q, k, v, tokens, pad_id):\n"
        "    keep = tokens != pad_id\n"
        "    q = q * keep[:, None, :, None]\n"
        "    scores = q @ k.transpose(-2, -1)\n"
        "    scores = scores.masked_fill(~keep[:, None, None, :], float('-inf'))\n"
        "    return torch.softmax(scores, dim=-1) @ v\n",
    ]
    INVALID = [
        Example(
            "import torch.nn.functional as F\n"
            "def attend(q, k, v, tokens, pad_id):\n"
            "    keep = (tokens != pad_id)[:, None, :, None]\n"
            "    return F.scaled_dot_product_attention(q, k * keep, v * keep)\n",
            4,
            12,
        ),
        Example(
            "import torch\n"
            "def attend(q, k, v, tokens, pad_id):\n"
            "    keep = (tokens != pad_id).float()\n"
            "    k = k * keep[:, None, :, None]\n"
            "    scores = q @ k.transpose(-2, -1)\n"
            "    return torch.softmax(scores, dim=-1) @ v\n",
            4,
            9,
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._done: set = set()
        self._helpers: dict = {}  # id(call) -> the Helper it runs
        self._followed: Optional[set] = None  # functions whose callers' masks are judged

    # hand-written attention ----------------------------------------------------
    def on_call(self, site: CallSite) -> Iterator[Report]:
        scores = scores_for(self.ctx).at(site)
        if scores is None or scores.filled or scores.opaque_call or self._scores_masked(scores):
            return  # masked, or made by a call that may mask them (maybe_add_mask(s, bias))
        if self._judged_at_calls(site):
            return
        found: List[Tuple[str, Found]] = []
        if scores.key is not None:
            got = self.masked(*scores.key, 0)
            if got is not None:
                found.append(("keys", got))
        if scores.values is not None:
            got = self.masked(scores.values, site.env, site.scope, 0)
            if got is not None:
                found.append(("values", got))
        for which, (node, mask, op) in found:
            if id(node) in self._done:
                continue
            self._done.add(id(node))
            # one helper call that masks both (``k, v = mask_kv(k, v, keep)``): one
            # report naming both (probe AA's AA27)
            both = [w for w, got in found if got[0] is node]
            origin = "by use" if scores.by_use else "query-key product"
            yield self._report(node, both, mask, op, "handwritten", origin)

    def _judged_at_calls(self, site: CallSite) -> bool:
        """The function's parameter is multiplied into its keys, and calls of
        this file reach it with their masks (a ``FillCall`` through it,
        ``program/kv_scores.py``): each call's mask is judged at that call
        (RULES.md: where the fact enters the chain), not joined in here."""
        if self._followed is None:
            project = getattr(self.ctx, "project", None)
            own = project.own_name() if project is not None else None
            self._followed = set()
            for ev in self.ctx.events if own is not None else ():
                if not (isinstance(ev, FillCall) and ev.through.get("handwritten")):
                    continue
                chain = ev.through.get("chain") or [[ev.through["file"], ev.through["function"]]]
                mask = self._mask(ev.mask, ev.site.env, ev.site.scope)
                if chain[-1][0] == own and mask is not None and _judged(mask):
                    # judged at that call; a caller whose mask says nothing leaves
                    # the function's own evidence standing (``kv_passed_on``)
                    self._followed.add(chain[-1][1])
        return bool(self._followed) and function_key(site.scope) in self._followed

    def _scores_masked(self, scores) -> bool:
        a = analysis_for(self.ctx)
        for term in scores.terms:
            if term.op not in ("add", "sub", "mul"):
                continue
            mask = a.evaluator.eval(term.expr, At(term.env, term.scope, None, 0))
            if mask.meaning is not None or mask.kind is not None or mask.fill:
                return True
            if "mask" in a.evaluator.text(term.expr).lower():
                return True
            if term.op in ("add", "sub") and not isinstance(term.expr, (cst.Integer, cst.Float)):
                return True  # a bias of unknown kind may hold -inf at the padding
        return False

    # SDPA and the module -----------------------------------------------------------
    def on_sdpa_call(self, ev: SdpaCall) -> Iterator[Report]:
        if ev.args.star or ev.args.double_star:
            return
        if ev.through is not None and ev.through.get("own_mask"):
            return  # the wrapper masks the scores itself (its own mask or causal flag)
        if self._given(ev.args.get("attn_mask"), ev.site) or self._given(
            ev.args.get("is_causal"), ev.site
        ):
            return
        yield from self._call(ev.site, ev.args, "sdpa")

    def on_module_call(self, ev: ModuleCall) -> Iterator[Report]:
        if ev.spec is not MULTIHEAD_ATTENTION or ev.args.star or ev.args.double_star:
            return
        if any(self._given(ev.args.get(n), ev.site) for n in _MASK_ARGS + ("is_causal",)):
            return
        own = getattr(ev.args, "own", ())  # a project wrapper's own mask, or a default
        if any(n in own for n in _MASK_ARGS + ("is_causal",)):
            return
        yield from self._call(ev.site, ev.args, MULTIHEAD_ATTENTION.name)

    def on_fill_call(self, ev) -> Iterator[Report]:
        """A call of a project function that multiplies its mask parameter
        into the keys or values of an SDPA call that masks no scores (a
        ``FillCall`` of door "kv", ``program/fills.kv_reach``): the caller's
        mask, known as a keep-mask, judged at the call (RULES.md)."""
        if ev.door != "kv":
            return
        mask = self._mask(ev.mask, ev.site.env, ev.site.scope)
        if mask is None or not _judged(mask):
            return
        which = [w for w in ("keys", "values") if w in ev.text]
        sink = "handwritten" if ev.through.get("handwritten") else "sdpa"
        yield self._report(ev.site.node, which, mask, "mul", sink, None)

    def _call(self, site: CallSite, args, sink: str) -> Iterator[Report]:
        which, first = [], None
        for name, word in (("key", "keys"), ("value", "values")):
            expr = args.get(name)
            got = self.masked(expr, site.env, site.scope, 0) if expr is not None else None
            if got is not None:
                which.append(word)
                first = first or got
        if first is not None:
            yield self._report(site.node, which, first[1], first[2], sink, None, first[0])

    def _given(self, expr, site: CallSite) -> bool:
        """A mask or flag that may be set: anything but a literal None/False."""
        if expr is None:
            return False
        try:
            v = value_of(expr, site.env, site.scope)
        except RecursionError:  # pragma: no cover
            return True
        return v is not None and v is not False

    # the walk back from a key or value -------------------------------------------
    def masked(self, node, env, scope, depth: int) -> Optional[Found]:
        """Where a padding mask is applied to the tensor ``node`` holds."""
        if node is None or depth > MAX_DEPTH:
            return None
        d = depth + 1
        if isinstance(node, cst.Name):
            used = line_of(self.ctx.module, node) or 0
            for line, call in self._in_place(scope).get(node.value, ()):
                if line >= used:
                    continue
                first = call.args[0].value  # ``v.masked_fill_(~keep, 0.)``, ``k.mul_(keep)``
                got = (
                    self._mask_factor(call, first, env, scope)
                    if len(call.args) == 1
                    else self._zero_fill(call, first, call.args[1].value, env, scope)
                )
                if got is not None:
                    return got
            for df in lookup(node.value, env, scope):
                got = None
                if df.kind == "assign" and df.node is not None and not df.index:
                    got = self.masked(df.node, df.env, df.scope, d)
                elif df.kind == "unpack" and df.node is not None:
                    got = self.masked(unpacked(df.node, df.index), df.env, df.scope, d)
                elif df.kind == "augassign" and isinstance(df.node.operator, cst.MultiplyAssign):
                    got = self._mask_factor(df.node, df.node.value, df.env, df.scope)
                    if got is None and isinstance(df.node.target, cst.Name):
                        for prior in df.extra or ():
                            if prior.kind == "assign" and prior.node is not None:
                                got = self.masked(prior.node, prior.env, prior.scope, d)
                                if got:
                                    break
                if got is not None:
                    return got
            return None
        if isinstance(node, cst.Subscript):
            return self.masked(node.value, env, scope, d)
        if isinstance(node, cst.BinaryOperation):
            if isinstance(node.operator, cst.Multiply):
                for factor in (node.right, node.left):
                    got = self._mask_factor(node, factor, env, scope)
                    if got is not None:
                        return got
                return self.masked(node.left, env, scope, d) or self.masked(
                    node.right, env, scope, d
                )
            if isinstance(node.operator, cst.MatrixMultiply):
                return self.masked(node.left, env, scope, d)  # ``x @ w_k``: x's rows projected
            if isinstance(node.operator, (cst.Divide, cst.FloorDivide)):
                return self.masked(node.left, env, scope, d)
            return None
        if not isinstance(node, cst.Call):
            return None
        func = node.func
        qn = analysis_for(self.ctx).evaluator.qualname(func, env, scope)
        if may_be_helper(qn):  # the project's own helper
            got = self._helper(node, env, scope)
            if got is not None:
                return got
            # ``self._split(t)``, BERT's ``transpose_for_scores``: the rows of its argument
            rows = helper_reading(self.ctx, node, env, scope, "mha015-rows", read_rows)
            if rows is not None:
                return self.masked(rows.args.get(rows.form["params"][0]), env, scope, d)
        if qn in ("torch.mul", "torch.multiply") and len(node.args) == 2:
            a, b = node.args[0].value, node.args[1].value
            return (
                self._mask_factor(node, b, env, scope)
                or self._mask_factor(node, a, env, scope)
                or self.masked(a, env, scope, d)
            )
        if qn in SAME_ROWS_FUNCS and node.args and node.args[0].keyword is None:
            return self.masked(node.args[0].value, env, scope, d)
        if qn == "torch.where" and len(node.args) == 3:
            return self._where(node, env, scope, d)
        if qn == "torch.nn.functional.linear" and node.args and node.args[0].keyword is None:
            return self.masked(node.args[0].value, env, scope, d)  # ``F.linear(x, w, b)``
        if self._projection(func, env, scope) and node.args and node.args[0].keyword is None:
            # ``k = self.to_k(x)`` of ``x = x * keep[..., None]``: each row projected on its
            # own, a zeroed row becomes the bias (or zero), still scored (probe AR's AR05)
            return self.masked(node.args[0].value, env, scope, d)
        if qn is not None or not isinstance(func, cst.Attribute):
            return None
        name = func.attr.value
        if name in SAME_ROWS:
            return self.masked(func.value, env, scope, d)
        if name in ("mul", "mul_", "multiply") and node.args:
            got = self._mask_factor(node, node.args[0].value, env, scope)
            return got or self.masked(func.value, env, scope, d)
        if name in ("masked_fill", "masked_fill_") and len(node.args) >= 2:
            got = self._zero_fill(node, node.args[0].value, node.args[1].value, env, scope)
            return got or self.masked(func.value, env, scope, d)
        return None

    def _projection(self, func, env, scope) -> bool:
        """``self.to_k`` built as ``nn.Linear`` (on every definition): a call
        projects each row of its input on its own."""
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
            return False
        resolver = self.ctx.resolver
        cls = resolver.self_class(func, env, scope)
        defs = resolver.attr_defs(cls, func.attr.value) if cls is not None else ()
        if not defs:
            return False
        for df in defs:
            if df.kind != "assign" or not isinstance(df.node, cst.Call):
                return False
            if resolver.qualname(df.node.func, df.env, df.scope) not in _PROJECTIONS:
                return False
        return True

    def _in_place(self, scope) -> dict:
        """``_kv_rows.in_place`` of a function, read once."""
        kept = self.__dict__.setdefault("_in_places", {})
        if id(scope) not in kept:
            kept[id(scope)] = (scope, in_place(scope, self.ctx.module))
        return kept[id(scope)][1]

    def _helper(self, call: cst.Call, env, scope) -> Optional[Found]:
        """A helper of this file or of another project file whose one return
        multiplies by, or zero-fills where, one of its parameters
        (``def zero_pad(x, keep): return x * keep[..., None]``): the caller's
        argument for that parameter, judged at the call as if written there."""
        got = helper_reading(self.ctx, call, env, scope, "mha015", _read_helper)
        if got is None:
            return None
        form = got.form
        for name, invert in zip(form.get("params", ()), form.get("inverts", ())):
            arg = got.args.get(name)
            found = self._applied_by_helper(call, arg, form.get("op"), invert, env, scope)
            if found is not None:
                self._helpers[id(call)] = got
                return found
        return None

    def _applied_by_helper(self, call, arg, op: str, invert: bool, env, scope) -> Optional[Found]:
        """The caller's argument ``arg`` for a helper's mask parameter, judged
        as the helper applies it (``op``, ``invert``: see ``_read_helper``)."""
        if arg is None:
            return None
        if op == "mul" and not invert:
            return self._mask_factor(call, arg, env, scope)
        mask = self._mask(arg, env, scope)
        if mask is None:
            return None
        if op == "mul":  # ``x * ~pad``: the inverse of an ignore-mask keeps
            return (call, mask, "mul") if mask.meaning == IGNORE and mask.kind in _NUMERIC else None
        want = KEEP if invert else IGNORE  # ``x.masked_fill(~keep, 0)`` zeroes the padding
        return (call, mask, "fill") if mask.meaning == want and mask.kind in (BOOL, None) else None

    def _where(self, node: cst.Call, env, scope, depth: int) -> Optional[Found]:
        """``torch.where(keep, k, 0)`` keeps the real keys and zeroes the rest;
        ``torch.where(pad, 0, k)`` the same with an ignore-mask."""
        if any(a.keyword is not None or a.star for a in node.args):
            return None
        cond, kept, other = (a.value for a in node.args)
        for tensor, zero, meaning in ((kept, other, KEEP), (other, kept, IGNORE)):
            if _zeros(zero, env, scope):
                mask = self._mask(cond, env, scope)
                if mask is not None and mask.meaning == meaning and mask.kind in (BOOL, None):
                    return node, mask, "fill"
                return self.masked(tensor, env, scope, depth)
        return None

    def _mask_factor(self, at, factor, env, scope) -> Optional[Found]:
        mask = self._mask(factor, env, scope)
        if mask is not None and mask.meaning == KEEP and mask.kind in _NUMERIC:
            return at, mask, "mul"
        named = self._named_mask(factor, env, scope) if mask is None else None
        if named is not None:
            text = analysis_for(self.ctx).evaluator.text(named)
            return at, Mask(origin=Origin(named, text, by_name=True)), "mul"
        return None

    def _named_mask(self, factor, env, scope):
        """A factor of unknown meaning named as a padding mask (`context_mask`,
        `mask[..., None]`, or a local bound once to such a thing: `keep =
        frame_mask[:, None, :, None].to(k.dtype)`): multiplied into keys or
        values, a 0/1 mask leaves exp(0) on what it zeroes whichever way it
        points (decided by the name alone; the witness says so).  The
        expression that names it, else None."""
        ev = analysis_for(self.ctx).evaluator
        got = ev.eval(factor, At(env, scope, None, 0))
        if got.meaning is not None or got.kind is not None or got.causal or got.fill:
            return None
        for _ in range(3):
            text = ev.text(factor).lower()
            defs = lookup(factor.value, env, scope) if isinstance(factor, cst.Name) else ()
            local = len(defs) == 1 and defs[0].kind == DefKind.ASSIGN and shaped(defs[0].node)
            # a parameter named a keep (a local so named: what it is made from)
            keep = (
                not local
                and says_keep(text)
                and (param_root(factor, env, scope) or made_call(defs))
            )
            if "mask" in text or keep:
                if any(w in text for w in _NOT_PADDING) or self._handed_in(factor, env, scope):
                    return None
                if "mask" not in text and self._handed_in(factor, env, scope, kv_calls=True):
                    return None  # a keep its summary follows: judged at each call
                return factor
            if not local:
                return None
            factor, env, scope = defs[0].node, defs[0].env, defs[0].scope
        return None

    def _handed_in(self, factor, env, scope, kv_calls: bool = False) -> bool:
        """A parameter another file of the project hands a mask (each such
        call is judged with its mask, ``on_fill_call``): its name is no evidence.
        ``kv_calls``: instead, one the function's summary follows into the
        keys or values (``kv_summarised``)."""
        root = param_root(factor, env, scope)
        if root is None:
            return False
        if kv_calls:
            return kv_summarised(self.ctx, *root)
        return handed_by_project(self.ctx, *root, kv=True)

    def _zero_fill(self, at, cond, value, env, scope) -> Optional[Found]:
        if not _zero(value, env, scope):
            return None
        mask = self._mask(cond, env, scope)
        if mask is not None and mask.meaning == IGNORE and mask.kind in (BOOL, None):
            return at, mask, "fill"
        inner = zeroed_where_false(cond) if mask is None else None
        named = self._named_mask(inner, env, scope) if inner is not None else None
        if named is None:  # ``k.masked_fill(~input_mask, 0.)`` (linformer): by its name
            return None
        return (
            at,
            Mask(origin=Origin(named, analysis_for(self.ctx).evaluator.text(named), True)),
            "fill",
        )

    def _mask(self, node, env, scope) -> Optional[Mask]:
        mask = analysis_for(self.ctx).evaluator.eval(node, At(env, scope, None, 0))
        if mask.causal or mask.fill or mask.meaning in (None, ADDITIVE):
            return None
        return mask

    # the report ----------------------------------------------------------------
    def _mask_words(self, node, mask: Mask) -> str:
        a = analysis_for(self.ctx)
        if mask.meaning is None:  # a mask by its name only
            return f"{_text(self.ctx, mask.origin.node)}, a mask by its name, is"
        article = "an" if mask.meaning == IGNORE else "a"
        return f"{a.evaluator.describe(mask.origin)} is {article} {mask.meaning}-mask"

    def _report(self, node, which, mask: Mask, op, sink, origin, at=None) -> Report:
        a = analysis_for(self.ctx)
        at = node if at is None else at
        data = mask.evidence(a.evaluator.source_text)
        data["line"] = a.evaluator.line(mask.origin.node) if mask.origin is not None else None
        data["by_name"] = bool(mask.origin and mask.origin.by_name)
        data["applied"] = _text(self.ctx, at).strip("`")
        helper = self._helpers.get(id(at))
        if helper is not None:  # applied in a helper: where, and how
            data["helper"] = {
                "file": helper.where,
                "line": helper.form.get("line"),
                "applied": helper.form.get("applied"),
            }
        module = {"handwritten": "scores", "sdpa": SDPA_NAME}.get(sink, sink)
        evidence = {
            "module": module,
            "sink": sink,
            "masked": which,
            "op": op,
            "scores": origin,
            "mask": data,
        }
        how = ""
        if sink == "sdpa":  # 3-D inputs take the mask without the heads' axis (probe AB's AB10)
            how = ": attn_mask=keep[:, None, None, :] (keep[:, None, :] for 3-D inputs)"
        if sink == MULTIHEAD_ATTENTION.name:
            how = ": key_padding_mask=~keep"
        return self.report(
            node,
            evidence,
            mask=self._mask_words(at, mask),
            which=" and ".join(which),
            consequence=self.KEYS if "keys" in which else self.VALUES,
            how=how,
        )


# methods and functions that keep a mask parameter what it is, in a helper
def _judged(mask: Mask) -> bool:
    """A caller's mask MHA015 judges at its call: a keep-mask of 0/1 or bools."""
    return mask.meaning == KEEP and mask.kind in _NUMERIC


def _zero(node, env, scope) -> bool:
    """A number known to be 0 (a literal, or a constant that holds one)."""
    try:
        v = value_of(node, env, scope)
    except RecursionError:  # pragma: no cover
        return False
    return not isinstance(v, bool) and isinstance(v, (int, float)) and v == 0


def _zeros(node, env, scope) -> bool:
    """A 0, or a tensor of zeros (``torch.zeros_like(k)``, ``k.new_zeros(...)``)."""
    if isinstance(node, cst.Call):
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
        return name in ("zeros_like", "new_zeros", "zeros")
    return _zero(node, env, scope)


def _read_helper(ctx, func: cst.FunctionDef, fscope) -> Optional[dict]:
    """MHA015's reading of a helper, in the helper's own file: its one return
    multiplies by one of its parameters ``params`` (``op`` "mul"; both
    factors when both are parameters), or zero-fills where one holds (``op``
    "fill"), each possibly inverted (``inverts``)."""
    if len(fscope.returns) != 1:
        return None
    ret, renv = fscope.returns[0]
    got = _applied(ctx, ret, renv, fscope, 0)
    if got is None:
        return None
    node, candidates, op = got
    return {
        "params": [name for name, _ in candidates],
        "inverts": [invert for _, invert in candidates],
        "op": op,
        "applied": " ".join(ctx.module.code_for_node(node).split())[:80],
        "line": line_of(ctx.module, node),
    }


def _applied(ctx, node, env, scope, depth: int):
    """(where, [(parameter, inverted)], op) of the parameters ``node`` is
    multiplied by or zero-filled with, walking back as ``masked`` does."""
    if node is None or depth > MAX_DEPTH:
        return None
    d = depth + 1
    if isinstance(node, cst.Name):
        defs = lookup(node.value, env, scope)
        if len(defs) == 1 and defs[0].kind == "assign" and defs[0].node is not None:
            return _applied(ctx, defs[0].node, defs[0].env, defs[0].scope, d)
        return None
    if isinstance(node, cst.Subscript):
        return _applied(ctx, node.value, env, scope, d)
    if isinstance(node, cst.Tuple) and node.elements:  # ``return k * m, v * m``: the same to each
        each = [
            None if isinstance(e, cst.StarredElement) else _applied(ctx, e.value, env, scope, d)
            for e in node.elements
        ]
        if any(e is None for e in each) or len({e[2] for e in each}) != 1:
            return None
        common = [c for c in each[0][1] if all(c in e[1] for e in each[1:])]
        return (each[0][0], common, each[0][2]) if common else None
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, cst.Multiply):
            found = [_mask_param(f, env, scope, False, 0) for f in (node.right, node.left)]
            if any(found):
                return (node, [f for f in found if f is not None], "mul")
            return _applied(ctx, node.left, env, scope, d) or _applied(
                ctx, node.right, env, scope, d
            )
        if isinstance(node.operator, (cst.Divide, cst.FloorDivide)):
            return _applied(ctx, node.left, env, scope, d)
        return None
    if not isinstance(node, cst.Call):
        return None
    func = node.func
    qn = ctx.resolver.qualname(func, env, scope)
    if qn in ("torch.mul", "torch.multiply") and len(node.args) == 2:
        found = [_mask_param(a.value, env, scope, False, 0) for a in reversed(node.args)]
        return (node, [f for f in found if f is not None], "mul") if any(found) else None
    if qn in SAME_ROWS_FUNCS and node.args and node.args[0].keyword is None:
        return _applied(ctx, node.args[0].value, env, scope, d)
    if qn == "torch.where" and len(node.args) == 3 and all(a.keyword is None for a in node.args):
        cond, kept, other = (a.value for a in node.args)
        # ``where(keep, x, 0)`` zeroes where ``keep`` does not hold: a fill by ``~keep``
        for zero, invert in ((other, True), (kept, False)):
            if _zeros(zero, env, scope):
                got = _mask_param(cond, env, scope, invert, 0)
                return (node, [got], "fill") if got is not None else None
        return None
    if qn is not None or not isinstance(func, cst.Attribute):
        return None
    name = func.attr.value
    if name in SAME_ROWS:
        return _applied(ctx, func.value, env, scope, d)
    if name in ("mul", "mul_", "multiply") and node.args:
        got = _mask_param(node.args[0].value, env, scope, False, 0)
        return (node, [got], "mul") if got is not None else None
    if name in ("masked_fill", "masked_fill_") and len(node.args) >= 2:
        if not _zero(node.args[1].value, env, scope):
            return None
        got = _mask_param(node.args[0].value, env, scope, False, 0)
        return (node, [got], "fill") if got is not None else None
    return None


def _mask_param(node, env, scope, invert: bool, depth: int):
    """(parameter, inverted) when ``node`` is a parameter of the helper, reshaped,
    cast or inverted (``keep[..., None].float()``, ``~pad``); else None."""
    if depth > MAX_DEPTH:
        return None
    d = depth + 1
    if isinstance(node, cst.Name):
        defs = lookup(node.value, env, scope)
        if len(defs) == 1 and defs[0].kind == "param":
            return node.value, invert
        if len(defs) == 1 and defs[0].kind == "assign" and defs[0].node is not None:
            return _mask_param(defs[0].node, defs[0].env, defs[0].scope, invert, d)
        return None
    if isinstance(node, cst.Subscript):
        return _mask_param(node.value, env, scope, invert, d)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
        return _mask_param(node.expression, env, scope, not invert, d)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        name = node.func.attr.value
        if name in MASK_SHAPING:
            return _mask_param(node.func.value, env, scope, invert, d)
        if name == "logical_not" and not node.args:
            return _mask_param(node.func.value, env, scope, not invert, d)
    return None


def _text(ctx, node) -> str:
    text = " ".join(ctx.module.code_for_node(node).split())
    return f"`{text if len(text) <= 60 else text[:57] + '...'}`"


__all__: List[str] = ["MaskOnKeysValues"]
