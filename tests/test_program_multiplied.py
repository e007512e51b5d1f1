"""Issue 26, item 2: a function that multiplies the mask it is given into its
attention scores before softmax (BERT4Rec-style gated attention) is a sink
of its summary; the caller's mask is judged at the call (MHA012), as a mask
added to the scores is (MHA004).

``fixtures/program_calls/multiplied_masks``: the sequence model hands a bool
keep-mask built in a third file to attention that multiplies it into its
scores: MHA012 at the call, per file, over the package and through ``check``;
the additive mask beside it is silent.  In one file the finding is at the
call, not also at the product."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs

from flake8_mha.lint.engine import analyze_file, analyze_source

PKG = pathlib.Path("fixtures/program_calls/multiplied_masks")


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(str(PKG), [("model.py", 17, 16, "MHA012")])


def test_the_finding_names_the_chain():
    got = analyze_file(str(PKG / "model.py"), ["MHA012"])
    assert [(f.line, f.col, f.code) for f in got] == [(17, 16, "MHA012")]
    assert "the call reaches scores * mask at " in got[0].message
    assert got[0].message.endswith("attention.py:13 through GatedAttention.forward()")


ONE_FILE = """\
import math

import torch
import torch.nn.functional as F
from torch import nn


class GatedAttention(nn.Module):
    def forward(self, query, key, value, mask):
        scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.size(-1))
        scores = scores * {factor}
        return torch.matmul(F.softmax(scores, dim=-1), value)


class Model(nn.Module):
    def __init__(self, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.attention = GatedAttention()

    def forward(self, items, q, k, v):
        mask = (items != self.pad_id)[:, None, None, :]
        return self.attention(q, k, v, mask)
"""


def test_in_one_file_the_finding_is_at_the_call_only(tmp_path):
    src = ONE_FILE.format(factor="mask")
    got = analyze_source(src, str(tmp_path / "one.py"), ["MHA012"])
    assert [(f.line, f.col, f.code) for f in got] == [(23, 16, "MHA012")]


def test_a_factor_not_named_a_mask_is_no_sink_of_the_summary(tmp_path):
    # a scale or a gate is no sink of the summary: in one file the mask the
    # one caller passes is still judged at the product, as before
    src = ONE_FILE.format(factor="gate").replace("value, mask)", "value, gate)")
    got = analyze_source(src, str(tmp_path / "one.py"), ["MHA012"])
    assert [(f.line, f.col, f.code) for f in got] == [(11, 18, "MHA012")]
    assert "the call reaches" not in got[0].message


def test_multiplied_after_the_softmax_is_not_this_rule(tmp_path):
    src = ONE_FILE.format(factor="1.0").replace(
        "        return torch.matmul(F.softmax(scores, dim=-1), value)\n",
        "        return torch.matmul(F.softmax(scores, dim=-1) * mask, value)\n",
    )
    assert analyze_source(src, str(tmp_path / "one.py"), ["MHA012"]) == []
