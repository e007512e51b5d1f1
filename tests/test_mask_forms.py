"""Mask forms real code takes (issue 17): segment masks, triangles with a
symbolic offset, 3-D comparisons, fill values, triangles at ``masked_fill``
over attention scores.

Each case is checked as a user sees it: code, line and column through the
engine; bad beside good.
"""
from __future__ import annotations

import textwrap

import pytest

from flake8_mha.engine import analyze_source

MASK_CODES = ["MHA002", "MHA003", "MHA004", "MHA009"]


def found(source: str, codes=None):
    out = analyze_source(textwrap.dedent(source), "t.py", codes or MASK_CODES)
    return [(f.code, f.line, f.col) for f in out if f.code != "MHA000"]


# --------------------------------------------------------------------------- 1. segments

@pytest.mark.parametrize("same", [
    "ids[..., :, None] == ids[..., None, :]",
    "ids[:, :, None] == ids[:, None, :]",
    "ids.unsqueeze(-1) == ids.unsqueeze(-2)",
    "ids.unsqueeze(-2) == ids.unsqueeze(-1)",
])
def test_segment_equality_is_a_keep_mask(same):
    src = f"""\
        import torch.nn.functional as F
        def attend(q, k, v, ids):
            same = {same}
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=same[:, None])
            b = q.masked_fill(same[:, None], float("-inf"))
            return a, b
        """
    assert found(src) == [("MHA003", 5, 9)]


def test_segment_inequality_is_an_ignore_mask():
    src = """\
        import torch.nn.functional as F
        def attend(q, k, v, seg):
            other = seg.unsqueeze(-1) != seg.unsqueeze(-2)
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=other[:, None])
            b = F.scaled_dot_product_attention(q, k, v, attn_mask=~other[:, None])
            c = q.masked_fill(other[:, None], float("-inf"))
            return a, b, c
        """
    assert found(src) == [("MHA002", 4, 9)]


def test_segment_through_locals():
    src = """\
        import torch.nn.functional as F
        def attend(q, k, v, segment_ids):
            ids_i = segment_ids[:, :, None]
            ids_j = segment_ids[:, None, :]
            pad = ids_i != ids_j
            return F.scaled_dot_product_attention(q, k, v, attn_mask=pad.unsqueeze(1))
        """
    assert found(src) == [("MHA002", 6, 12)]


@pytest.mark.parametrize("expr", [
    "a[:, :, None] == b[:, None, :]",          # two tensors: not one segment tensor
    "ids[:, None] == ids[None, :]",            # rank unknown: stays unknown
    "ids.unsqueeze(1) == ids.unsqueeze(2)",    # depends on the rank
    "ids[:, :, None] == ids[:, :, None]",      # same broadcast on both sides
    "ids[:, :, None] < ids[:, None, :]",       # an order, not a segment
])
def test_segment_lookalikes_stay_unknown(expr):
    src = f"""\
        import torch.nn.functional as F
        def attend(q, k, v, ids, a, b):
            m = {expr}
            return F.scaled_dot_product_attention(q, k, v, attn_mask=m), q.masked_fill(m, -1e9)
        """
    assert found(src) == []


def test_segment_added_to_scores_still_reports_mha004():
    src = """\
        import math
        import torch
        def packed(q, k, v, segment_ids):
            bias = (segment_ids.unsqueeze(-1) == segment_ids.unsqueeze(-2)).float()
            logits = torch.einsum("bqd,bkd->bqk", q, k) / math.sqrt(q.size(-1))
            return torch.softmax(logits + bias, dim=-1) @ v
        """
    assert found(src, ["MHA004"]) == [("MHA004", 6, 26)]
