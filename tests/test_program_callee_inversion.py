"""Probe V's B21 (ALBEF's text encoder): the caller hands its tokenizer mask
(int64, 1 = token) to a module that inverts it (``attention_mask == 0``)
and gives the result to SDPA, where True means attend.  The message said the
mask was ``~attention_mask.bool()`` "as the callee uses it" and suggested
``~mask``: at the call, on an int64 mask, that masks every key (0.73 off
the real fix, measured).  It now names the caller's argument, says the
callee inverts it, and leaves the choice of side to the user."""

from __future__ import annotations

from flake8_mha.lint.engine import analyze_source

TEXT = """\
import torch.nn as nn
import torch.nn.functional as F


class TextSelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.h = heads
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, hidden, attention_mask):
        B, L, D = hidden.shape
        q, k, v = self.qkv(hidden).view(B, L, 3, self.h, -1).permute(2, 0, 3, 1, 4)
        ignore = attention_mask == 0
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=ignore[:, None, None, :])
        return out.transpose(1, 2).reshape(B, L, D)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(1000, 64)
        self.attn = TextSelfAttention(64, 4)

    def forward(self, input_ids, attention_mask):
        return self.attn(self.tok(input_ids), attention_mask)
"""


def test_the_message_names_the_callees_inversion(tmp_path):
    (got,) = analyze_source(TEXT, str(tmp_path / "one.py"), ["MHA002"])
    assert (got.line, got.col) == (26, 16)
    assert got.message.startswith(
        "mask from this call (attention_mask), inverted by the function it is given to, "
        "means True = ignore; "
        "scaled_dot_product_attention treats True as attend (the callee's inversion or the "
        "mask handed to it is the mistake: fix one)"
    )


def test_a_mask_made_here_keeps_the_plain_fix(tmp_path):
    text = TEXT.replace("ignore = attention_mask == 0", "ignore = attention_mask")
    text = text.replace(
        "return self.attn(self.tok(input_ids), attention_mask)",
        "return self.attn(self.tok(input_ids), input_ids == 0)",
    )
    (got,) = analyze_source(text, str(tmp_path / "one.py"), ["MHA002"])
    assert got.message.startswith(
        "mask from this call, as the callee uses it (input_ids == 0) means True = ignore"
    )
    assert "(invert it: ~mask)" in got.message
