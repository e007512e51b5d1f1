"""Probe V's B09 (a graph readout, ``to_dense_batch``'s way): a tensor of
zeros into which the code writes only ones (``node_mask[batch, idx] = 1.0``)
is a 0/1 mask of the positions written.  A float one handed to SDPA's
``attn_mask`` is added to the scores (MHA004: nothing is masked); a bool one
made the same way is a mask whose meaning the writes do not say (silent);
a -inf written into zeros is an additive mask (silent)."""

from __future__ import annotations

from flake8_mha.lint.engine import analyze_source

READOUT = """\
import torch
import torch.nn.functional as F


def to_dense(x, batch, max_nodes):
    B = int(batch.max()) + 1
    counts = torch.bincount(batch, minlength=B)
    idx = torch.arange(batch.numel()) - (torch.cumsum(counts, 0) - counts)[batch]
    out = x.new_zeros(B, max_nodes, x.size(-1))
    out[batch, idx] = x
    node_mask = torch.zeros(B, max_nodes)
    node_mask[batch, idx] = 1.0
    return out, node_mask


def readout(q, k, v, x, batch):
    h, node_mask = to_dense(x, batch, 6)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=node_mask[:, None, None, :])
"""


def test_ones_written_into_zeros_are_a_float_01_mask(tmp_path):
    got = analyze_source(READOUT, str(tmp_path / "readout.py"), ["MHA002", "MHA003", "MHA004"])
    assert [(f.line, f.col, f.code) for f in got] == [(18, 12, "MHA004")]
    assert got[0].message.startswith("mask from line 12 (node_mask[batch, idx]) is a float32 0/1")


def test_a_bool_one_or_an_additive_one_is_silent(tmp_path):
    bool_mask = READOUT.replace(
        "torch.zeros(B, max_nodes)", "torch.zeros(B, max_nodes, dtype=torch.bool)"
    )
    bool_mask = bool_mask.replace("node_mask[batch, idx] = 1.0", "node_mask[batch, idx] = True")
    additive = READOUT.replace("node_mask[batch, idx] = 1.0", "node_mask[batch, idx] = -1e9")
    for text in (bool_mask, additive):
        assert analyze_source(text, str(tmp_path / "r.py"), ["MHA002", "MHA003", "MHA004"]) == []


def test_other_writes_leave_it_unknown(tmp_path):
    text = READOUT.replace(
        "    node_mask[batch, idx] = 1.0\n",
        "    node_mask[batch, idx] = 1.0\n    node_mask[:, 0] = 0.5\n",
    )
    assert analyze_source(text, str(tmp_path / "r.py"), ["MHA004"]) == []
