"""Probe V's B24 (a VITS-style text encoder): layers built from a local bound
to a choice of two classes (``make = FastSelfAttention if fast else
SlowAttention``, then ``nn.ModuleList(make(16, 2) for _ in ...)``) may be
either; the one that attends receives the loop's keep-mask as its
``key_padding_mask`` (MHA003).  The class that does not attend must not hide
the one that does."""

from __future__ import annotations

from flake8_mha.lint.engine import analyze_source

ENCODER = """\
import torch
import torch.nn as nn


def sequence_mask(length, max_length):
    x = torch.arange(max_length, dtype=length.dtype, device=length.device)
    return x.unsqueeze(0) < length.unsqueeze(1)


class FastSelfAttention(nn.Module):
    def __init__(self, channels, n_heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(channels, n_heads, batch_first=True)

    def forward(self, x, attn_mask):
        h = x.transpose(1, 2)  # [b, t, h]
        kpm = attn_mask[:, 0, 0].bool()
        y, _ = self.attn(h, h, h, key_padding_mask=kpm, need_weights=False)
        return y.transpose(1, 2)


class SlowAttention(nn.Module):
    def __init__(self, channels, n_heads):
        super().__init__()
        self.proj = nn.Conv1d(channels, channels, 1)

    def forward(self, x, attn_mask):
        return self.proj(x)


class Encoder(nn.Module):
    def __init__(self, n_layers, fast=False):
        super().__init__()
        make = FastSelfAttention if fast else SlowAttention
        self.attn_layers = nn.ModuleList(make(16, 2) for _ in range(n_layers))
        self.norm_layers = nn.ModuleList(nn.GroupNorm(1, 16) for _ in range(n_layers))

    def forward(self, x, x_lengths):
        x_mask = torch.unsqueeze(sequence_mask(x_lengths, x.size(2)), 1).to(x.dtype)
        attn_mask = x_mask.unsqueeze(2) * x_mask.unsqueeze(-1)
        for attn, norm in zip(self.attn_layers, self.norm_layers):
            x = norm(x + attn(x, attn_mask))
        return x
"""


def test_the_class_that_attends_is_judged_with_the_loops_mask(tmp_path):
    got = analyze_source(ENCODER, str(tmp_path / "encoder.py"), ["MHA003"])
    assert [(f.line, f.col, f.code) for f in got] == [(18, 16, "MHA003")]
    assert got[0].message.startswith(
        "mask from line 40 (x_mask.unsqueeze(2) * x_mask.unsqueeze(-1)) means True = keep"
    )


def test_an_inverted_mask_is_right(tmp_path):
    text = ENCODER.replace("kpm = attn_mask[:, 0, 0].bool()", "kpm = attn_mask[:, 0, 0] == 0")
    assert analyze_source(text, str(tmp_path / "encoder.py"), ["MHA003"]) == []
