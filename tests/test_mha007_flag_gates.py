"""Review 22's str2speech (Dia's attention): ``dropout_p=self.p if not
deterministic else 0.0`` with ``deterministic: bool = True`` turns dropout
on only where a caller asks for it, whatever ``model.eval()`` says: not
MHA007's.  With the default the other way, dropout is on after ``eval()``."""

from __future__ import annotations

import pytest

from flake8_mha.lint.engine import analyze_source

ATTENTION = """\
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, dropout_rate):
        super().__init__()
        self.dropout_rate = dropout_rate

    def forward(self, q, k, v, deterministic: bool = True):
        return F.scaled_dot_product_attention(
            q, k, v, dropout_p=self.dropout_rate if not deterministic else 0.0
        )
"""


def test_dropout_a_caller_asks_for(tmp_path):
    assert analyze_source(ATTENTION, str(tmp_path / "layers.py"), ["MHA007"]) == []


@pytest.mark.parametrize(
    "old, new",
    [
        ("deterministic: bool = True", "deterministic: bool = False"),
        ("if not deterministic else 0.0", "if deterministic else 0.0"),
    ],
)
def test_dropout_on_by_default_is_reported(tmp_path, old, new):
    got = analyze_source(ATTENTION.replace(old, new), str(tmp_path / "layers.py"), ["MHA007"])
    assert [(f.line, f.col, f.code) for f in got] == [(11, 16, "MHA007")]


def test_a_flag_of_the_module_is_no_gate(tmp_path):
    text = ATTENTION.replace("if not deterministic else", "if not self.deterministic else")
    got = analyze_source(text, str(tmp_path / "layers.py"), ["MHA007"])
    assert [(f.line, f.col) for f in got] == [(11, 16)]
