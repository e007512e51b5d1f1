"""The thirty-eighth stop.  Issue 26: litgpt's soft-capped path written as
an ``if``/``else`` (the default mask made inside the soft-capped ``if``),
and what release review 39 and probe AM found."""

from __future__ import annotations

from fixture_expect import source_rows as _rows

SOFTCAPPED = """\
import math

import torch
import torch.nn.functional as F
from torch import nn


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config

    def forward(self, q, k, v, mask=None):
        return self.scaled_dot_product_attention(q, k, v, mask)

    def scaled_dot_product_attention(self, q, k, v, mask=None):
        scale = 1.0 / math.sqrt(q.size(-1))
        if self.config.attention_logit_softcapping is not None:
            scores = q @ k.mT * scale
            scores = torch.tanh(scores / 50.0) * 50.0
            if mask is None:
                mask = torch.ones(q.size(2), q.size(2), dtype=q.dtype).triu(diagonal=1)
                mask.masked_fill_(mask.bool(), torch.finfo(q.dtype).min)
            scores = scores + mask
            y = F.softmax(scores, dim=-1, dtype=torch.float).to(dtype=q.dtype) @ v
        else:
            y = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, scale=scale, is_causal=mask is None
            )
        return y.transpose(1, 2)


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attn = CausalSelfAttention(config)

    def forward(self, q, k, v):
        T = q.size(2)
        keep = torch.tril(torch.ones(T, T, dtype=torch.bool))
        return self.attn(q, k, v, keep)
"""


def test_a_default_made_inside_the_soft_capped_if_reads_the_caller_s_mask_after_it(tmp_path):
    # litgpt 0.5.13's ``scaled_dot_product_attention``: ``if softcapping is not
    # None: ... if mask is None: mask = <bias> ... scores + mask`` beside SDPA
    # in the ``else:``; a bool keep-mask from the caller is added (nothing masked)
    assert _rows(SOFTCAPPED, ["MHA002", "MHA003", "MHA004"], tmp_path) == [(41, 16, "MHA004")]
    # a float bias from the caller is right at both sinks
    additive = SOFTCAPPED.replace(
        "        return self.attn(q, k, v, keep)",
        "        bias = torch.zeros(T, T).masked_fill(~keep, float('-inf'))\n"
        "        return self.attn(q, k, v, bias)",
    )
    assert _rows(additive, ["MHA002", "MHA003", "MHA004"], tmp_path) == []
    # a second store of the mask beside the default: the caller's value is not
    # read through it (the join is unknown, never a guess)
    rebound = SOFTCAPPED.replace(
        "            scores = scores + mask\n",
        "            mask = mask[..., : k.size(2)] if k.size(2) < 8 else torch.zeros_like(scores)\n"
        "            scores = scores + mask\n",
    )
    assert _rows(rebound, ["MHA004"], tmp_path) == []
