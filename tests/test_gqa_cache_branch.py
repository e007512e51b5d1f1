"""Probe V's B29 (an LLM server's attention): keys and values that pass a
KV cache only when one is given (``if cache is not None: k, v =
cache.update(k, v)``) keep the head count they are made with on the calls
that give none (the default): 12 query heads over 5 KV heads raise there
(MHA014); the count was lost to the cache's unknown return."""

from __future__ import annotations

from flake8_mha.lint.engine import analyze_source

GQA = """\
import torch.nn as nn
import torch.nn.functional as F

DIM = 96
N_HEADS = 12
N_KV_HEADS = 5
HEAD_DIM = DIM // N_HEADS


class GQAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.wq = nn.Linear(DIM, N_HEADS * HEAD_DIM, bias=False)
        self.wkv = nn.Linear(DIM, 2 * N_KV_HEADS * HEAD_DIM, bias=False)

    def forward(self, x, mask, cache=None):
        B, L, _ = x.shape
        q = self.wq(x).view(B, L, N_HEADS, HEAD_DIM).transpose(1, 2)
        k, v = self.wkv(x).view(B, L, 2, N_KV_HEADS, HEAD_DIM).permute(2, 0, 3, 1, 4)
        if cache is not None:
            k, v = cache.update(k, v)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
"""


def test_the_path_without_a_cache_decides_the_count(tmp_path):
    got = analyze_source(GQA, str(tmp_path / "attn.py"), ["MHA014"])
    assert [(f.line, f.col, f.code) for f in got] == [(22, 16, "MHA014")]
    assert "12 query heads over 5 key/value heads" in got[0].message


def test_a_cache_every_call_must_give_is_no_such_path(tmp_path):
    text = GQA.replace(
        "def forward(self, x, mask, cache=None):", "def forward(self, x, mask, cache):"
    )
    assert analyze_source(text, str(tmp_path / "attn.py"), ["MHA014"]) == []


def test_counts_that_divide_are_silent(tmp_path):
    text = GQA.replace("N_KV_HEADS = 5", "N_KV_HEADS = 4")
    assert analyze_source(text, str(tmp_path / "attn.py"), ["MHA014"]) == []
