"""Probe U's U16 (a tabular transformer): ``torch.isnan(x)`` is a bool mask
of the missing cells, True = hide (``isinf`` too; ``isfinite`` keeps the
present ones).  Cast to the model's dtype and handed to a padding mask, it
is a float 0/1 mask (MHA004); handed to SDPA as it is, its meaning is the
wrong way round (MHA002)."""

from __future__ import annotations

from flake8_mha.lint.engine import analyze_source

TABULAR = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Tab(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(32, 4, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)

    def forward(self, tokens, x_num):
        missing = torch.isnan(x_num)
        return self.encoder(tokens, src_key_padding_mask=missing.to(tokens.dtype))


def pool(q, k, v, x_num):
    present = x_num.isfinite()
    return F.scaled_dot_product_attention(q, k, v, attn_mask=present[:, None, None, :])
"""


def test_a_float_mask_of_the_missing_cells(tmp_path):
    got = analyze_source(TABULAR, str(tmp_path / "tab.py"), ["MHA002", "MHA003", "MHA004"])
    assert [(f.line, f.col, f.code) for f in got] == [(14, 16, "MHA004")]
    assert got[0].message.startswith("mask from line 14 (missing.to(tokens.dtype))")


def test_the_bool_mask_as_it_is_is_right(tmp_path):
    text = TABULAR.replace("missing.to(tokens.dtype)", "missing")
    assert analyze_source(text, str(tmp_path / "tab.py"), ["MHA002", "MHA003", "MHA004"]) == []


def test_the_missing_cells_as_an_sdpa_mask(tmp_path):
    text = TABULAR.replace("present = x_num.isfinite()", "present = x_num.isnan()")
    got = analyze_source(text, str(tmp_path / "tab.py"), ["MHA002"])
    assert [(f.line, f.col, f.code) for f in got] == [(19, 12, "MHA002")]
    assert "means True = ignore" in got[0].message
