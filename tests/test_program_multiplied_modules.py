"""Probe V's B23 (a VITS-style duration predictor): a module of another file
that multiplies its scores by its mask parameter before the softmax, and
its output by the same mask after (``torch.bmm(w, v) * x_mask``), hands the
judgement to its callers: the product after the softmax is the output, not
a second mask of the scores.  MHA012 at the caller that builds the float
keep-mask."""

from __future__ import annotations

from flake8_mha.lint.engine import analyze_file

DURATION = """\
import math

import torch
import torch.nn as nn


def sequence_mask(length, max_length=None):
    if max_length is None:
        max_length = length.max()
    x = torch.arange(max_length, dtype=length.dtype, device=length.device)
    return x.unsqueeze(0) < length.unsqueeze(1)


class ProsodyAttention(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.q = nn.Conv1d(channels, channels, 1)
        self.k = nn.Conv1d(channels, channels, 1)
        self.v = nn.Conv1d(channels, channels, 1)

    def forward(self, h, x_mask):  # h: [b, c, t], x_mask: [b, 1, t]
        q, k, v = self.q(h).transpose(1, 2), self.k(h), self.v(h).transpose(1, 2)
        scores = torch.bmm(q, k) / math.sqrt(q.size(-1))
        scores = scores * x_mask
        w = torch.softmax(scores, dim=-1)
        return torch.bmm(w, v).transpose(1, 2) * x_mask
"""

ENCODER = """\
import torch
import torch.nn as nn

from .duration import ProsodyAttention, sequence_mask


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.ctx = ProsodyAttention(16)

    def forward(self, x, x_lengths):
        x = torch.transpose(self.emb(x), 1, -1)  # [b, h, t]
        x_mask = torch.unsqueeze(sequence_mask(x_lengths, x.size(2)), 1).to(x.dtype)
        return self.ctx(x, x_mask)
"""


def _package(tmp_path, duration=DURATION):
    pkg = tmp_path / "w"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "duration.py").write_text(duration)
    (pkg / "enc.py").write_text(ENCODER)
    return pkg


def test_mha012_at_the_caller_in_another_file(tmp_path):
    pkg = _package(tmp_path)
    got = analyze_file(str(pkg / "enc.py"), ["MHA012"])
    assert [(f.line, f.col, f.code) for f in got] == [(16, 16, "MHA012")]
    assert "is a float 0/1 keep-mask multiplied into the attention scores" in got[0].message
    assert analyze_file(str(pkg / "duration.py"), ["MHA012"]) == []


def test_masking_the_output_alone_is_no_mha012(tmp_path):
    pkg = _package(tmp_path, DURATION.replace("        scores = scores * x_mask\n", ""))
    assert analyze_file(str(pkg / "enc.py"), ["MHA012"]) == []
