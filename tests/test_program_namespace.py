"""A directory without ``__init__.py`` inside a package is a namespace
portion of it: torch-molecule keeps its generators in
``torch_molecule/generator/<model>/`` with no ``generator/__init__.py``, and
they import ``from ...nn import AttentionWithNodeMask``.  Those imports are
followed, so the attention's constructions are read (every one leaves
``attn_drop`` at 0: no MHA007) and the project reaches them per file."""

from __future__ import annotations

import subprocess
import sys

from fixture_expect import ROOT
from flake8_mha.lint.engine import analyze_file

ATTENTION = """\
import torch.nn as nn
import torch.nn.functional as F


class AttentionWithNodeMask(nn.Module):
    def __init__(self, dim, num_head=8, attn_drop=0.0):
        super().__init__()
        self.num_head = num_head
        self.qkv = nn.Linear(dim, dim * 3)
        self.attn_drop = nn.Dropout(attn_drop)

    def forward(self, x):
        b, n, d = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.num_head, d // self.num_head).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        x = F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_drop.p)
        return x.transpose(1, 2).reshape(b, n, d)
"""

BLOCK = """\
import torch.nn as nn

from ...nn import AttentionWithNodeMask


class Block(nn.Module):
    def __init__(self, hidden_size, num_head):
        super().__init__()
        self.attn = AttentionWithNodeMask(hidden_size, num_head=num_head, RATE)
"""


def _project(tmp_path, rate):
    top = tmp_path / "torch_molecule"
    (top / "nn").mkdir(parents=True)
    (top / "__init__.py").write_text("")
    (top / "nn" / "__init__.py").write_text("from .attention import AttentionWithNodeMask\n")
    (top / "nn" / "attention.py").write_text(ATTENTION)
    model = top / "generator" / "graph_dit"  # ``generator/`` has no __init__.py
    model.mkdir(parents=True)
    (model / "__init__.py").write_text("")
    (model / "transformer.py").write_text(BLOCK.replace("RATE", rate))
    return top / "nn" / "attention.py"


def test_constructions_under_a_namespace_directory_are_read(tmp_path):
    path = _project(tmp_path, "attn_drop=0.0")
    assert analyze_file(str(path), ["MHA007"]) == []


def test_and_a_rate_they_pass_is_reported(tmp_path):
    path = _project(tmp_path, "attn_drop=0.1")
    got = analyze_file(str(path), ["MHA007"])
    assert [(f.code, f.line, f.col) for f in got] == [("MHA007", 16, 13)]
    assert got[0].evidence["dropout_p"] == 0.1  # the rate the construction passes


def test_through_flake8_on_the_one_file(tmp_path):
    path = _project(tmp_path, "attn_drop=0.1")
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--select", "MHA007", str(path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert f"{path}:16:13: MHA007" in proc.stdout
