"""MHA003: a True = keep mask given where True means ignore."""

from __future__ import annotations

from dataclasses import replace
from typing import Iterator, Optional, Tuple

import libcst as cst

from ..analysis.events import ModuleCall
from ..analysis.flow import CallSite
from ..analysis.masks import BOOL, IGNORE, KEEP, Mask, Sink
from ..analysis.masks.calls import At
from ._mask_rule import MaskRule, described, fills_attention_scores, fix_words, sink_text
from ._mask_rule import INVERTED, assigned, joined_ignore, reshaped_from, true_word
from .base import Example, Report


class KeepMaskAsIgnoreMask(MaskRule):
    CODE = "MHA003"
    NAME = "keep-mask-as-ignore-mask"
    MESSAGE = "{mask} means {what} = keep; {sink} treats True as ignore ({fix})"
    WHAT = """
        Flags a mask whose True/1 means *keep* (a tokenizer `attention_mask`,
        `tokens != pad_id` (a pad id by its name: `pad`, `missing`, a label to
        `ignore`, or the `padding_idx` an `nn.Embedding` of the file takes),
        `tril(ones(L, L))`, `arange(S) < lengths[:, None]`)
        that reaches an argument where True means *ignore*: any mask argument of
        `nn.MultiheadAttention` and the Transformer modules (`key_padding_mask`,
        `attn_mask`, `src_mask`, `tgt_mask`, `memory_mask`, `mask`, the
        `*_key_padding_mask`s), `masked_fill`/`masked_fill_`/`torch.masked_fill`
        with -inf or a large negative fill, and `torch.where(mask, -inf, scores)`.
        """
    WHY = """
        The module masks out exactly the tokens that should be attended to and
        attends to the padding. Samples without padding get every key masked,
        and the module returns NaN for them (torch 2.13: 1.35 off for the padded
        sample; the unpadded sample all NaN). A causal `tril` given as an MHA
        `attn_mask` hides the past and shows the future.
        """
    EXAMPLE = """
        mask = batch["attention_mask"].bool()            # True = real token
        out, _ = self.attn(x, x, x, key_padding_mask=mask, need_weights=False)
        """
    USE_INSTEAD = """
        mask = batch["attention_mask"].bool()            # True = real token
        out, _ = self.attn(x, x, x, key_padding_mask=~mask, need_weights=False)
        """
    DECISIONS = """
        - A tokenizer's mask is recognised by `batch["attention_mask"]` and
          `inputs.attention_mask` (integer, 1 = real token), and by a parameter
          named `attention_mask` of a function that also takes the token ids
          (`input_ids`, `tokens`, `src`, ...); its dtype is then not assumed. An
          `attention_mask` parameter of an attention layer is *not* evidence:
          transformers passes additive and True = ignore masks under that name.
          Names count only where the code of this file says nothing better: when
          the function's callers in the file pass a mask of known meaning, that
          meaning wins. Nor where the project itself binds the name to a
          padding mask (shiba's tokenizer: `attention_mask = (id_tensor ==
          self.PAD)`, True on the padding): the name then says nothing sure.
        - A triangle (`tril`, `triu`, positions against positions) is judged at
          attention arguments (the modules', SDPA's), and at `masked_fill` and
          `torch.where` only where the filled tensor is attention scores (a
          query-key product, see MHA012) whose filled scores reach a softmax over
          the key axis later in the same function (or around the fill), or a
          bias that an SDPA call of the function is given as its `attn_mask`
          (`bias = rel.masked_fill(keep, -inf)`; SDPA adds it to the
          scores: `tests/test_mha003_bias_triangles.py`). Elsewhere
          masking a triangle of pairwise scores is a legitimate constraint outside
          causal attention (span scoring, reading-order heads). A pair mask of
          one tensor of ids against itself (segments, labels:
          `labels[:, None] == labels[None, :]`) is judged the same way: a
          metric-learning loss masks same-identity pairs out of a softmax over
          distances, or out of a `topk`, on purpose (boxmot, release review
          10). At attention arguments both are always judged.
        - A fill of `~name` (or `name == 0`, phynteny's `src_key_padding_mask.
          unsqueeze(1).unsqueeze(2) == 0`) where only the parameter's name says what it
          means (`masked_fill(~key_padding_mask, min)`, llm-foundry's keep-mask
          of that name) is not reported: the code's own `~` says the author
          keeps the other convention. The same holds for a module's
          `key_padding_mask=~mask` reached with a mask known only by its name
          (replay-rec's `pad_mask`, documented as 1 = real item, handed to a
          block that inverts it), for the `~name` reshaped before the fill
          (`rearrange(~key_padding_mask, "b s -> b 1 1 s")`,
          `(~key_padding_mask)[:, None, None, :]`, flash-attn's reference
          attention), and for a caller that hands its own mask of that kind
          on to such a function. A caller's mask of known meaning reaching
          it is judged at the call as usual.
        - Mask forms read (issue 17): segment masks `ids[..., :, None] ==
          ids[..., None, :]` (and `[:, :, None]`/`[:, None, :]`,
          `unsqueeze(-1)`/`unsqueeze(-2)`, and Swin's `unsqueeze(2)`/`unsqueeze(1)`,
          which needs (N, L) ids) are keep-masks of layout (N, L, S),
          `!=` ignore-masks; a vector's `batch[:, None] == batch[None, :]`
          (PyG's node-to-graph ids) is the same over (L, S); a triangle of
          `ones(i, j)` cut at `j - i + c` (the KV-cache causal mask) is an
          ignore-mask for `triu` with c >= 1 and a keep-mask for `tril` with
          c >= 0, any other symbolic diagonal stays
          unknown; `arange` against lengths in 3-D views (`view(1, 1, -1)`
          against `view(-1, 1, 1)` or `view(1, -1, 1)`, `[None, None, :]`
          against `[:, None, None]`) is a padding mask; a band, the distance
          between key and query positions (`j - i`, `i - j` or its `abs()`,
          aranges as a row and a column) against a window (a name or a
          number >= 0), is an ignore-mask with `> w` (False on the diagonal:
          Longformer's local band, Mistral's too-old keys) and a keep-mask
          with `<= w`; other operators stay unknown (with a window of 0 they
          would cut the diagonal); `torch.cat` of masks of one meaning, with
          constant pieces that agree with it (EVA's class token: `ones`
          before a keep-mask, `zeros` before an ignore-mask), keeps it; a
          keep-mask `&` another special token's inequality (ESM's
          `tokens.ne(pad_idx) & tokens.ne(eos_idx)`: a name ending in `_idx`,
          `_id`, `_index` or `_token`) is a keep-mask; einops' `repeat(mask,
          "b j -> (b h) () j", h=h)` keeps the meaning when every axis stays
          in its order (Perceiver's masks tiled over heads); item ids named
          `log_seqs`, `item_seq` (a name ending in `_seq` or `_seqs` that
          names no features: `emb`, `feat`, `hidden`, ...) are token ids.
        - A graph's adjacency made bool or compared with 0 (`adj.bool()`,
          `adj > 0`: True on an edge) is a keep-mask: handed to
          `nn.MultiheadAttention`'s `attn_mask` it hides exactly the edges
          (MHA004's page, "Scope decisions").
        - A keep-mask OR-ed with an ignore-mask (BLOOM's expanded padding `|`
          the causal triangle), both known from the code, into an argument
          where True means ignore: the union has no one meaning, but its keep
          part removes the real tokens; reported, naming that part. So is
          NaViT's `masked_fill(~(same_image & key_pad_mask), min)` (`~(a & b)`
          is `~a | ~b`): with an ignore-mask known from the code on one side
          of the `&`, whatever the other side is, every real key is filled
          (also when the `~` is in the function the mask is handed to,
          `fixtures/program_calls/packed_segments/`); reported, naming the
          ignore-mask and the `~`.
        - `masked_fill` and `torch.where` are sinks only with a fill of -inf,
          `torch.finfo(...).min`, or a constant at or below -1000 (also through a
          name or a helper, and divided by a constant of at most 10:
          `-torch.finfo(x.dtype).max // 2`); a fill of 0 says nothing about the
          mask. An imported constant the file cannot read counts by its name
          alone: a negative word (NEG, NEGATIVE, MINUS) with an infinite or large
          one (INF, INFINITY, LARGE, BIG, HUGE) is a big negative (`NEG_INF`,
          `LARGE_NEGATIVE`), INF/INFINITY without a negative word a big positive
          (so `-constant.INFINITY_NUMBER` is a big negative); `LARGE_NUMBER`,
          `FLOAT_MIN`, `MASK_VALUE` stay unknown.
        - A float or integer keep-mask given to a module reports MHA004 as well. A
          numeric mask given to `masked_fill` raises at once: not reported here.
        - `einx.where(description, cond, x, y)` is read as `torch.where(cond,
          x, y)` (True picks `x`), positional arguments only (einx's
          signature): `einx.where("b j, b h i j,", mask, sim, -inf)` keeps
          where True, `einx.where("b j, , b h i j", mask, -inf, sim)` removes
          where True. A padding or segment mask's meaning does not depend on
          the description; a triangle is judged only when the description keeps
          the condition's last two axes in the place and order of the filled
          tensor's (`"i j, b h i j, -> b h i j"`), never through `...`,
          brackets or a transposed `"j i, b h i j"`. einops has no `where`.
        - A function of the project that fills scores with its mask parameter
          (`masked_softmax(sim, mask)` doing `sim.masked_fill(~mask, -inf)`,
          in this file or another) is judged at each call, with the caller's
          mask and the function's steps (`~`, broadcasting) applied, and
          reported at the call that passes the wrong mask; the message names
          the chain down to the fill. A triangle passed so is judged only when
          that function also calls a softmax (docs/reach.md, "Fills of
          scores").
        """
    VALID = [
        "import torch.nn as nn\n"
        "attn = nn.MultiheadAttention(64, 8, batch_first=True)\n"
        "def f(x, batch):\n"
        "    pad = batch['attention_mask'] == 0\n"
        "    return attn(x, x, x, key_padding_mask=pad, need_weights=False)[0]\n",
        "import torch\n"
        "def scores_for(scores, tokens, pad_id):\n"
        "    keep = tokens != pad_id\n"
        "    return scores.masked_fill(~keep[:, None, None, :], float('-inf'))  # Transformer\n",
    ]
    INVALID = [
        Example(
            "import torch.nn as nn\n"
            "attn = nn.MultiheadAttention(64, 8, batch_first=True)\n"
            "def f(x, batch):\n"
            "    keep = batch['attention_mask'].bool()\n"
            "    return attn(x, x, x, key_padding_mask=keep, need_weights=False)[0]\n",
            5,
            12,
        ),
        Example(
            "import torch\n"
            "def scores_for(scores, tokens, pad_id):\n"
            "    keep = tokens != pad_id\n"
            "    return scores.masked_fill(keep[:, None, None, :], float('-inf'))  # Transformer\n",
            4,
            12,
        ),
    ]

    def on_module_call(self, ev: ModuleCall) -> Iterator[Report]:
        a = self.analysis()
        for sink in a.module_sinks(ev):
            mask = a.value(sink)
            shown = fix = None
            if mask.meaning is None:
                mask, shown, fix = _keep_beside_ignore(a, sink) or (mask, None, None)
            if mask.meaning == KEEP and not _inverts_a_name(a, sink):
                yield self._message(sink, mask, ev, shown, fix)

    def on_call(self, site: CallSite) -> Iterator[Report]:
        a = self.analysis()
        sink = a.fill_sink(site)
        if sink is None or sink.door != IGNORE:
            return
        mask = a.value(sink)
        shown = fix = None
        if mask.meaning is None:
            mask, shown, fix = _keep_beside_ignore(a, sink) or (mask, None, None)
        if (
            mask.meaning == KEEP
            and mask.kind in (BOOL, None)
            and (not (mask.causal or mask.pairwise) or fills_attention_scores(self.ctx, sink))
            and not _inverts_a_name(a, sink)
        ):
            yield self._message(sink, mask, None, shown, fix)

    def on_fill_call(self, ev) -> Iterator[Report]:
        got = self.fill_mask(ev, IGNORE)
        if got is not None and got[1].meaning is None and ev.inverted:
            # NaViT: ``attend(x, attn_mask=same_image & padding)``, filled with ``~attn_mask``
            beside = _keep_beside_ignore(self.analysis(), got[0])
            if beside is not None:
                yield self._message(got[0], *beside[:1], None, *beside[1:])
                return
        if got is None or got[1].meaning != KEEP:
            return
        if ev.inverted and ev.given is not ev.mask:
            given = self.analysis().value(
                Sink(ev.site, "masked_fill", "masked_fill", IGNORE, ev.given, False)
            )
            if given.origin is not None and given.origin.by_name:
                return  # a mask only its name explains, which the function's own ``~`` inverts
        yield self._message(got[0], got[1], None, shown=got[2])

    def _message(self, sink: Sink, mask: Mask, module_ev, shown=None, fix=None) -> Report:
        a = self.analysis()
        return self._report(
            sink,
            mask,
            module_ev,
            self.MESSAGE,
            mask=shown or described(a, mask),
            what=true_word(mask),
            sink=sink_text(sink),
            fix=fix or fix_words(a, mask, "invert it: ~mask or mask == 0"),
        )


def _keep_beside_ignore(a, sink: Sink) -> Optional[Tuple[Mask, Optional[str], Optional[str]]]:
    """BLOOM's ``expand_mask(keep) | causal``: a keep-mask OR-ed with an
    ignore-mask (both known from the code, not from a name) into an argument
    where True means ignore.  The union has no one meaning, but its keep
    part is the wrong way round there (it removes the real tokens): that
    part, how the message names it and its fix (None: as for any mask);
    else None.  NaViT's ``masked_fill(~(same_image & padding), min)`` is the
    same union (``~(a & b)`` is ``~a | ~b``): its keep part is the inverted
    ignore-mask, named with the ``~`` that inverts it (``joined_ignore``)."""
    expr, env, scope = sink.expr, sink.site.env, sink.site.scope
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
        got = joined_ignore(a, reshaped_from(expr.expression), env, scope)
        if got is None:
            return None
        line = a.evaluator.line(expr)  # None: the ``~`` of the function it is handed to
        how = f"inverted by the ~ at line {line}" if line is not None else INVERTED
        shown = f"{a.evaluator.describe(got.origin)}, joined by & and {how},"
        return replace(got, meaning=KEEP), shown, "make that part a keep-mask before the &"
    expr, env, scope = assigned(expr, env, scope)
    if not (isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.BitOr)):
        return None
    sides = [a.evaluator.eval(e, At(env, scope, None, 0)) for e in (expr.left, expr.right)]
    if any(m.origin is None or m.origin.by_name or m.causal and m.meaning == KEEP for m in sides):
        return None
    keep = [m for m in sides if m.meaning == KEEP and m.kind in (BOOL, None)]
    if len(keep) == 1 and any(m.meaning == IGNORE for m in sides):
        return keep[0], None, None
    return None


def _inverts_a_name(a, sink: Sink) -> bool:
    """``masked_fill(~key_padding_mask, min)`` (or ``key_padding_mask == 0``)
    where only the name says what ``key_padding_mask`` means: the code's own
    inversion says its author keeps
    the other convention (llm-foundry's keep-mask of that name), and a name
    counts only where the code says nothing better (RULES.md)."""
    expr = reshaped_from(sink.expr)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
        inner = expr.expression
    elif (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == "logical_not"
        and not expr.args
    ):
        inner = expr.func.value
    elif (  # ``src_key_padding_mask.unsqueeze(1) == 0`` (phynteny, review 25)
        isinstance(expr, cst.Comparison)
        and len(expr.comparisons) == 1
        and isinstance(expr.comparisons[0].operator, cst.Equal)
        and _zero(expr.comparisons[0].comparator)
    ):
        inner = expr.left
    elif (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == "eq"
        and len(expr.args) == 1
        and _zero(expr.args[0].value)
    ):
        inner = expr.func.value
    else:
        return False
    got = a.evaluator.eval(inner, At(sink.site.env, sink.site.scope, None, 0))
    return got.origin is not None and got.origin.by_name


def _zero(node) -> bool:
    """``0`` or ``False``."""
    return (isinstance(node, cst.Integer) and node.value == "0") or (
        isinstance(node, cst.Name) and node.value == "False"
    )
