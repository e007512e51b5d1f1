"""MHA009: a 2-D padding mask given to SDPA without its broadcast axes."""

from __future__ import annotations

from typing import Iterator

from ..analysis.events import SdpaCall
from ..analysis.masks import ADDITIVE, IGNORE, KEEP, PADDING
from ._mask_rule import MaskRule
from .base import Example, Report


class PaddingMaskNotBroadcast(MaskRule):
    CODE = "MHA009"
    NAME = "padding-mask-not-broadcast"
    MESSAGE = (
        "{mask} is a 2-D (N, S) padding mask; scaled_dot_product_attention broadcasts it as "
        "(L, S): shape it mask[:, None, None, :] (mask[:, None, :] for 3-D queries)"
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
        - Only shapes the code or its docstrings show are used: a parameter
          named like a padding mask, or a tokenizer's `attention_mask`, has no
          known shape here. A mask parameter whose docstring entry gives it
          two axes, the batch and the keys (`attn_mask (torch.Tensor,
          optional): mask to apply to the attention matrix. B x N.`,
          `(batch, seq_len)`; monai's `SABlock`, release review 30), is an
          `(N, S)` mask whatever it means, where no other file of the project
          hands that parameter a mask (there the callers' masks decide).
        - Square masks (triangles, `generate_square_subsequent_mask`, `arange`
          against `arange`) are never reported.
        - `unsqueeze(1).unsqueeze(2)`, `[:, None, None, :]`, `view(N, 1, 1, S)`
          and `reshape` to four axes all count as shaped; any other reshaping
          makes the shape unknown and silent.
        - Reported whatever the mask's meaning or dtype: a wrongly shaped
          additive mask is as wrong as a bool one.
        - The message gives both shapes: `(N, 1, 1, S)` for the usual
          `(N, H, L, E)` queries and `(N, 1, S)` for 3-D `(N, L, E)` ones (a
          pooling head's learned probes), where the 4-D mask would make the
          output 4-D and fail to broadcast (torch 2.13: `output with shape
          [4, 4, 9] doesn't match the broadcast shape [4, 4, 4, 9]`).
        - A mask the class asks an abstract method of its own for (`mask =
          self.build_mask(lengths, t)`) is judged once per used subclass
          that overrides it, as MHA002's page says.
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
        got = self.sdpa_mask(ev)
        if got is None:
            return
        sink, mask = got
        more = ""
        if mask.shape is None and mask.meaning is None:  # each subclass's own hook
            found = self.override_value(sink, _wrong)
            mask, more = found if found is not None else (mask, "")
        if not _wrong(mask):
            return
        report = self._report(
            sink,
            mask,
            None,
            self.MESSAGE,
            mask=self.analysis().evaluator.describe(mask.shape_origin or mask.origin),
        )
        report.message += more
        yield report


def _wrong(mask) -> bool:
    """A (B, S) padding mask given to SDPA as it is, known as a mask (a
    docstring's (B, N) mask parameter: a mask whatever it means)."""
    if mask.shape != PADDING:
        return False
    told = mask.shape_origin is not None and mask.shape_origin.docstring
    return mask.meaning in (KEEP, IGNORE, ADDITIVE) or bool(told)
