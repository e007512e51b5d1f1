"""Review 23's aurora-torch: ``x.view(-1, C)`` of a (B, D, H, W, C) tensor is
one 2-D (L, E) sequence of every token of every sample: torch reads it as
one unbatched sample whatever ``batch_first`` says, so MHA001's claim of
(N, L, E) input and its fix (``batch_first=True``, which changes nothing:
0.095 before and after, measured) were wrong.  No code covers the
flattening itself."""

from __future__ import annotations

import pytest

from flake8_mha.lint.engine import analyze_source

BLOCK = """\
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.attention = nn.MultiheadAttention(dim, num_heads=8)

    def forward(self, x):
        B, D, H, W, C = x.shape
        tokens = x.view(-1, C)
        out, _ = self.attention(tokens, tokens, tokens, need_weights=False)
        return out.view(B, D, H, W, C)
"""


@pytest.mark.parametrize("first", ["", ", batch_first=True"])
def test_tokens_flattened_to_two_axes_are_one_unbatched_sample(tmp_path, first):
    text = BLOCK.replace("num_heads=8)", f"num_heads=8{first})")
    got = analyze_source(text, str(tmp_path / "block.py"), ["MHA001", "MHA010", "MHA903"])
    assert got == []


def test_three_axes_kept_are_still_judged(tmp_path):
    text = BLOCK.replace("tokens = x.view(-1, C)", "tokens = x.view(B, -1, C)")
    got = analyze_source(text, str(tmp_path / "block.py"), ["MHA001"])
    assert [(f.line, f.col, f.code) for f in got] == [(7, 26, "MHA001")]
