"""Probe U's message error: in an einops pattern that also names the
features (``f (b t) d``), ``f`` counts frames or frequency bins, not features; the message
showed ``(E, N, E)`` for sequence-first data."""

from __future__ import annotations

from flake8_mha.analysis.layout.domain import EMBED, roles_of_names
from flake8_mha.lint.engine import analyze_source

TEMPORAL = """\
import torch.nn as nn
from einops import rearrange


class FactorizedBlock(nn.Module):
    def __init__(self, d_model=32, n_heads=4):
        super().__init__()
        self.time_attn = nn.MultiheadAttention(d_model, n_heads)

    def forward(self, h, b):
        x = rearrange(h, "(b f) t d -> f (b t) d", b=b)
        return self.time_attn(x, x, x, need_weights=False)[0]
"""


def test_frames_beside_features_have_no_role():
    assert roles_of_names(["f", "(b t)", "d"])[0] is None
    assert roles_of_names(["b", "n", "f"])[2] == EMBED  # alone, f is still the features


def test_the_message_shows_the_frames_unnamed(tmp_path):
    (got,) = analyze_source(TEMPORAL, str(tmp_path / "block.py"), ["MHA903"])
    assert (got.line, got.col) == (8, 26)
    assert "fed sequence-first data on every call ((?, N, E), line 11:" in got.message
    assert analyze_source(TEMPORAL, str(tmp_path / "block.py"), ["MHA001", "MHA010"]) == []
