"""Mask conventions: MHA002, MHA003, MHA004, MHA009.

Each rule asks ``masks.analysis_for(ctx)`` what mask reaches a sink (a torch
module's mask argument, SDPA's ``attn_mask``, ``masked_fill`` with -inf,
``torch.where`` against -inf) and fires only on a part of the mask value the
analysis knows; an unknown mask never fires.
"""

from __future__ import annotations

from typing import Iterator

from ..events import ModuleCall, SdpaCall
from ..flow import CallSite
from ..masks import (
    ADDITIVE,
    BOOL,
    FLOAT01,
    IGNORE,
    INT,
    KEEP,
    PADDING,
    Mask,
    MaskAnalysis,
    Sink,
    analysis_for,
)
from .base import Example, Report, Rule

_SDPA = "scaled_dot_product_attention"


def _sink_text(sink: Sink) -> str:
    if sink.module == _SDPA:
        return "scaled_dot_product_attention"
    if sink.module in ("masked_fill", "where"):
        return sink.call_text
    return f"{sink.module}'s {sink.arg}"


def _what(mask: Mask) -> str:
    return "1" if mask.kind in (FLOAT01, INT) else "True"


class _MaskRule(Rule):
    """Shared plumbing: the file's mask analysis and the report."""

    def analysis(self) -> MaskAnalysis:
        return analysis_for(self.ctx)

    def _report(self, where: Sink, value: Mask, module_ev, message: str, **fmt) -> Report:
        evidence = self.analysis().evidence(where, value, module_ev)
        return self.report(where.site.node, evidence, message, **fmt)


class IgnoreMaskToSdpa(_MaskRule):
    CODE = "MHA002"
    NAME = "ignore-mask-to-sdpa"
    MESSAGE = "{mask} means {what} = ignore; {sink} treats True as attend (invert it: ~mask)"
    WHAT = """
        Flags a mask whose True means *ignore* (the `nn.MultiheadAttention`
        convention) that reaches `F.scaled_dot_product_attention`'s `attn_mask`,
        where True means *attend*: `tokens == pad_id`, `tokens.eq(pad)`,
        `arange(S)[None, :] >= lengths[:, None]`, `triu(ones(L, L), 1).bool()`,
        `attention_mask == 0`, a parameter named `key_padding_mask`, followed
        through locals, `self.<buffer>`, slicing, `.to(device)`, `unsqueeze`,
        helper functions of the same file and branches.
        """
    WHY = """
        The two APIs read a bool mask the opposite way round. Handed an MHA
        padding mask, SDPA attends *only* to the padding and ignores every real
        token; a sample without padding gets every key masked and SDPA returns
        zeros for it. Nothing raises (torch 2.13: 1.35 off against the module
        with the same mask; inverted with `~`: 1.8e-07).
        """
    EXAMPLE = """
        pad = tokens == self.pad_id                      # True = padding
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=pad[:, None, None, :])
        """
    USE_INSTEAD = """
        pad = tokens == self.pad_id                      # True = padding
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=~pad[:, None, None, :])
        """
    DECISIONS = """
        - The meaning must be known from the code: a pad-id comparison, an
          `arange` against lengths, a triangle of ones, an inversion of a known
          keep-mask. A parameter named `key_padding_mask`, `src_key_padding_mask`,
          `padding_mask` or `pad_mask` counts only when nothing in the file says
          more (no call of that function in the file passes a mask whose meaning
          is known).
        - `torch.where(mask, scores, -inf)` keeps the scores where the mask is
          True, the same door as SDPA: an ignore-mask there is reported too, unless
          its meaning comes from a triangle (see MHA003).
        - A float or integer 0/1 ignore-mask reports MHA004 as well.
        - Branches join: a mask that is an ignore-mask on one path and unknown or
          a keep-mask on another is not reported; `None` on a path does not count.
        """
    VALID = [
        "import torch.nn.functional as F\n"
        "def attend(q, k, v, tokens, pad_id):\n"
        "    pad = tokens == pad_id\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=~pad[:, None, None, :])\n",
        "import torch\nimport torch.nn.functional as F\n"
        "def attend(q, k, v, L):\n"
        "    causal = torch.tril(torch.ones(L, L, dtype=torch.bool))\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=causal)\n",
    ]
    INVALID = [
        Example(
            "import torch.nn.functional as F\n"
            "def attend(q, k, v, tokens, pad_id):\n"
            "    pad = tokens == pad_id\n"
            "    return F.scaled_dot_product_attention(q, k, v, attn_mask=pad[:, None, None, :])\n",
            4,
            12,
        ),
        Example(
            "import torch\nimport torch.nn.functional as F\n"
            "def attend(q, k, v, L):\n"
            "    future = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)\n"
            "    return F.scaled_dot_product_attention(q, k, v, future)\n",
            5,
            12,
        ),
    ]

    def on_sdpa_call(self, ev: SdpaCall) -> Iterator[Report]:
        a = self.analysis()
        sink = a.sdpa_sink(ev)
        if sink is None:
            return
        mask = a.value(sink)
        if mask.meaning == IGNORE and mask.kind != ADDITIVE:
            yield self._message(sink, mask)

    def on_call(self, site: CallSite) -> Iterator[Report]:
        a = self.analysis()
        sink = a.fill_sink(site)
        if sink is None or sink.door != KEEP:
            return
        mask = a.value(sink)
        if mask.meaning == IGNORE and mask.kind in (BOOL, None) and not mask.causal:
            yield self._message(sink, mask)

    def _message(self, sink: Sink, mask: Mask) -> Report:
        a = self.analysis()
        return self._report(
            sink,
            mask,
            None,
            self.MESSAGE,
            mask=a.evaluator.describe(mask.origin),
            what=_what(mask),
            sink=_sink_text(sink),
        )


class KeepMaskAsIgnoreMask(_MaskRule):
    CODE = "MHA003"
    NAME = "keep-mask-as-ignore-mask"
    MESSAGE = (
        "{mask} means {what} = keep; {sink} treats True as ignore (invert it: ~mask or mask == 0)"
    )
    WHAT = """
        Flags a mask whose True/1 means *keep* (a tokenizer `attention_mask`,
        `tokens != pad_id`, `tril(ones(L, L))`, `arange(S) < lengths[:, None]`)
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
          meaning wins.
        - A triangle (`tril`, `triu`, positions against positions) is judged only
          at attention arguments (the modules', SDPA's). At `masked_fill` and
          `torch.where` masking a triangle of pairwise scores is a legitimate
          constraint outside causal attention (span scoring, reading-order heads).
        - `masked_fill` and `torch.where` are sinks only with a fill of -inf,
          `torch.finfo(...).min`, or a constant at or below -1000 (also through a
          name or a helper); a fill of 0 says nothing about the mask.
        - A float or integer keep-mask given to a module reports MHA004 as well. A
          numeric mask given to `masked_fill` raises at once: not reported here.
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
            if mask.meaning == KEEP:
                yield self._message(sink, mask, ev)

    def on_call(self, site: CallSite) -> Iterator[Report]:
        a = self.analysis()
        sink = a.fill_sink(site)
        if sink is None or sink.door != IGNORE:
            return
        mask = a.value(sink)
        if mask.meaning == KEEP and mask.kind in (BOOL, None) and not mask.causal:
            yield self._message(sink, mask, None)

    def _message(self, sink: Sink, mask: Mask, module_ev) -> Report:
        a = self.analysis()
        return self._report(
            sink,
            mask,
            module_ev,
            self.MESSAGE,
            mask=a.evaluator.describe(mask.origin),
            what=_what(mask),
            sink=_sink_text(sink),
        )


class NumericZeroOneMask(_MaskRule):
    CODE = "MHA004"
    NAME = "numeric-01-mask"
    MESSAGE = "{mask} is {dtype} 0/1 mask; {sink} {consequence}: pass a bool mask"
    MESSAGE_FLOAT = "adds a float mask to the scores, so nothing is masked"
    MESSAGE_INT = "raises on an integer mask"
    WHAT = """
        Flags a 0/1 mask made floating point (`.float()`, `.half()`,
        `.to(dtype)`, `.type_as(x)`, or built as float ones such as
        `tril(ones(L, L))`) or integer (`.long()`, `.int()`, `.to(torch.uint8)`,
        a tokenizer's `attention_mask`) that reaches an attention mask argument
        of `nn.MultiheadAttention`, a Transformer module or
        `F.scaled_dot_product_attention`.
        """
    WHY = """
        A floating-point mask is *added* to the attention logits: 0/1 values
        shift scores by one and mask nothing (torch 2.13: 0.91 off for a float
        padding mask, 1.13 for a float causal triangle). On the
        `TransformerEncoderLayer` inference fastpath the same float mask is read
        as bool instead, so training and evaluation disagree. Integer masks raise
        (`AssertionError: only bool and floating types of key_padding_mask are
        supported`).
        """
    EXAMPLE = """
        causal = torch.triu(torch.ones(L, L), diagonal=1)    # float32 0/1
        out = self.encoder(x, mask=causal)
        """
    USE_INSTEAD = """
        causal = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)
        out = self.encoder(x, mask=causal)
        # or an additive mask: nn.Transformer.generate_square_subsequent_mask(L)
        """
    DECISIONS = """
        - Only a mask whose 0/1 meaning is known is reported: a float tensor of
          zeros, a bias, or an additive mask (`masked_fill(m, -inf)`,
          `(1 - m) * -1e4`, `generate_square_subsequent_mask`) is what a float
          mask should be and is never reported.
        - A parameter named `attention_mask` is not assumed to be integer; only
          `batch["attention_mask"]` / `inputs.attention_mask` are.
        - A numeric mask that also has the wrong meaning for its argument reports
          MHA002/MHA003 as well.
        - `masked_fill` and `torch.where` are not attention mask arguments: a
          numeric mask there raises at once.
        - Hand-written attention: a bool or 0/1 keep- or ignore-mask added to
          (or, float or integer, subtracted from) attention scores that flow
          into softmax (`scores + mask`, `logits + (ids_i == ids_j).float()`,
          `scores += mask`, `scores.add_(mask)`) is reported where it is added.
          What counts as attention scores: see MHA012's page. Not reported when
          the mask is already additive (-inf or large negative filled, `(1.0 -
          m) * -10000.0`, `torch.where(m, 0, -inf)`), of unknown kind, or when
          a -inf fill between the addition and the softmax removes the masked
          positions anyway.
        """
    VALID = [
        "import torch\nimport torch.nn.functional as F\n"
        "def attend(q, k, v, keep):\n"
        "    bias = torch.zeros(keep.shape, dtype=q.dtype)\n"
        "    bias = bias.masked_fill(~keep.bool(), float('-inf'))\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=bias)\n",
        "import torch\nimport torch.nn as nn\n"
        "layer = nn.TransformerEncoderLayer(64, 8, batch_first=True)\n"
        "def f(x, L):\n"
        "    return layer(x, src_mask=torch.triu(torch.ones(L, L, dtype=torch.bool), 1))\n",
    ]
    INVALID = [
        Example(
            "import torch\nimport torch.nn as nn\n"
            "layer = nn.TransformerEncoderLayer(64, 8, batch_first=True)\n"
            "def f(x, L):\n"
            "    return layer(x, src_mask=torch.triu(torch.ones(L, L), 1))\n",
            5,
            12,
        ),
    ]

    def on_module_call(self, ev: ModuleCall) -> Iterator[Report]:
        a = self.analysis()
        for sink in a.module_sinks(ev):
            yield from self._check(sink, ev)

    def on_sdpa_call(self, ev: SdpaCall) -> Iterator[Report]:
        sink = self.analysis().sdpa_sink(ev)
        if sink is not None:
            yield from self._check(sink, None)

    def on_call(self, site: CallSite) -> Iterator[Report]:
        from .handwritten import scores_added  # hand-written attention: scores + mask

        yield from scores_added(self, site)

    def _check(self, sink: Sink, module_ev) -> Iterator[Report]:
        a = self.analysis()
        mask = a.value(sink)
        if mask.kind not in (FLOAT01, INT) or mask.meaning not in (KEEP, IGNORE) or mask.fill:
            return
        if mask.kind == FLOAT01:
            dtype = mask.dtype or "floating-point"
            consequence = self.MESSAGE_FLOAT
        else:
            dtype = mask.dtype or "integer"
            consequence = self.MESSAGE_INT
        article = "an" if dtype.startswith("int") else "a"
        yield self._report(
            sink,
            mask,
            module_ev,
            self.MESSAGE,
            mask=a.evaluator.describe(mask.kind_origin or mask.origin),
            dtype=f"{article} {dtype}",
            sink=_sink_text(sink),
            consequence=consequence,
        )


class PaddingMaskNotBroadcast(_MaskRule):
    CODE = "MHA009"
    NAME = "padding-mask-not-broadcast"
    MESSAGE = (
        "{mask} is a 2-D (N, S) padding mask; scaled_dot_product_attention broadcasts it as "
        "(L, S): shape it mask[:, None, None, :]"
    )
    WHAT = """
        Flags a 2-D `(N, S)` padding mask that reaches
        `F.scaled_dot_product_attention`'s `attn_mask` without being shaped
        `(N, 1, 1, S)`. The shape is known from a pad-id comparison on a batch of
        token ids (`tokens == pad_id`, `input_ids.ne(pad)`) or from
        `arange(S)[None, :]` against `lengths[:, None]`, followed through
        conversions, locals and helpers.
        """
    WHY = """
        SDPA broadcasts `attn_mask` against `(N, H, L, S)` from the right: an
        `(N, S)` mask is read as `(L, S)`, one row per *query*, not per sample.
        When `L == N` it runs and mixes samples' padding silently (torch 2.13:
        2.30 off); otherwise it raises `The size of tensor a (3) must match the
        size of tensor b (2) at non-singleton dimension 2`.
        """
    EXAMPLE = """
        keep = input_ids != self.pad_id                  # (N, S)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        """
    USE_INSTEAD = """
        keep = input_ids != self.pad_id                  # (N, S)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])
        """
    DECISIONS = """
        - Only shapes the code shows are used: a parameter named like a padding
          mask, or a tokenizer's `attention_mask`, has no known shape here.
        - Square masks (triangles, `generate_square_subsequent_mask`, `arange`
          against `arange`) are never reported.
        - `unsqueeze(1).unsqueeze(2)`, `[:, None, None, :]`, `view(N, 1, 1, S)`
          and `reshape` to four axes all count as shaped; any other reshaping
          makes the shape unknown and silent.
        - Reported whatever the mask's meaning or dtype: a wrongly shaped
          additive mask is as wrong as a bool one.
        """
    VALID = [
        "import torch.nn.functional as F\n"
        "def attend(q, k, v, tokens, pad_id):\n"
        "    keep = tokens != pad_id\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])\n",
        "import torch.nn.functional as F\n"
        "def attend(q, k, v, tokens, pad_id):\n"
        "    keep = tokens != pad_id\n"
        "    keep = keep.unsqueeze(1).unsqueeze(2)\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)\n",
    ]
    INVALID = [
        Example(
            "import torch.nn.functional as F\n"
            "def attend(q, k, v, tokens, pad_id):\n"
            "    keep = tokens != pad_id\n"
            "    return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)\n",
            4,
            12,
        ),
    ]

    def on_sdpa_call(self, ev: SdpaCall) -> Iterator[Report]:
        a = self.analysis()
        sink = a.sdpa_sink(ev)
        if sink is None:
            return
        mask = a.value(sink)
        if mask.shape != PADDING or mask.meaning not in (KEEP, IGNORE, ADDITIVE):
            return
        yield self._report(
            sink,
            mask,
            None,
            self.MESSAGE,
            mask=a.evaluator.describe(mask.shape_origin or mask.origin),
        )
