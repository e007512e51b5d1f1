"""Three spellings of a call that is the same call (issue 26, "a call is a
call"): ``self.attn.forward(...)``, ``getattr(self, "attn")(...)`` with a
literal name, and a module-level ``name = lambda ...: sdpa(...)``.  Each is
followed in the linted file and from another file, as ``self.attn(...)``
and a ``def`` are.  Checked as a user sees it: code, line and column."""
from __future__ import annotations

import textwrap

from fixture_expect import flake8_run
from flake8_mha.analysis.program.summaries import summarise
from flake8_mha.lint.engine import analyze_source

ONE_FILE = """\
import torch.nn.functional as F
from torch import nn

attend = lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)


class Attention(nn.Module):
    def forward(self, x, attn_mask=None):
        return F.scaled_dot_product_attention(x, x, x, attn_mask=attn_mask)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.one = Attention()

    def forward(self, x, tokens):
        pad = tokens == 0
        a = self.one.forward(x, attn_mask=pad)
        b = getattr(self, "one")(x, attn_mask=pad)
        c = attend(x, x, x, pad)
        return a + b + c

    def forward_fixed(self, x, tokens):
        keep = tokens != 0
        a = self.one.forward(x, attn_mask=keep)
        b = getattr(self, "one")(x, attn_mask=keep)
        return a + b + attend(x, x, x, keep)
"""


def test_the_three_spellings_in_one_file():
    found = analyze_source(textwrap.dedent(ONE_FILE), "m.py", ["MHA002"])
    assert [(f.code, f.line, f.col) for f in found] == [
        ("MHA002", 19, 13), ("MHA002", 20, 13), ("MHA002", 21, 13)]
    assert found[2].message.endswith(
        "the call reaches scaled_dot_product_attention at m.py:4 through attend()")


def test_a_module_level_lambda_is_summarised_as_a_function():
    table = summarise(ONE_FILE)
    assert table["attend"]["positional"] == ["q", "k", "v", "m"]
    assert table["attend"]["reach"]["attn_mask"] == {"param": "m", "ops": []}


def test_the_three_spellings_across_files_through_flake8():
    package = "fixtures/program_calls/spellings"
    status, found = flake8_run(f"{package}/model.py", select="MHA")
    assert status == 1
    assert sorted((f.line, f.col, f.code) for f in found) == [
        (17, 13, "MHA002"), (18, 13, "MHA002"), (19, 16, "MHA002")]
