"""No file's LibCST tree outlives its analysis: flake8 and the CLI go through
thousands of files in one process."""
from __future__ import annotations

import gc

import libcst as cst

from flake8_mha.lint import reparse
from flake8_mha.lint.engine import analyze_source, select_codes

SOURCE = '''
import torch
import torch.nn.functional as F


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(64, 8)

    def forward(self, x, attention_mask):
        pad = attention_mask.bool()
        scores = x.masked_fill(pad, float("-inf"))
        out, _ = self.attn(x, x, x, key_padding_mask=pad)
        return F.scaled_dot_product_attention(x, x, x, attn_mask=pad, is_causal=True)
'''


def _live_modules() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is cst.Module)


def test_trees_are_freed_after_each_file():
    codes = select_codes(["MHA"])
    reparse.forget()
    before = _live_modules()
    for i in range(5):  # a run over a tree: each path once
        assert analyze_source(SOURCE, f"block{i}.py", codes)
    assert _live_modules() == before


def test_a_file_linted_again_keeps_only_its_chunks_until_forgotten():
    # an editor's process re-lints one path: its chunks' trees are kept (bounded
    # by reparse.MAX_KEPT_CHARS), nothing else of the analyses
    codes = select_codes(["MHA"])
    reparse.forget()
    before = _live_modules()
    for _ in range(5):
        assert analyze_source(SOURCE, "block.py", codes)
    assert _live_modules() == before + len(reparse._kept) and len(reparse._kept) == 3
    reparse.forget()
    assert _live_modules() == before
