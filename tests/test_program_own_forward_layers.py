"""Encoder layers that keep torch's ``__init__`` and run a ``forward`` of
their own, built in another file (``fixtures/program_calls/own_forward_layers/``):
the data each caller hands such a layer is what its attention reads, so its
construction is judged by MHA001 there, over the package, one file at a
time and through ``check``.  A layer whose ``forward`` changes the axes
itself is not judged by its callers' data."""

from __future__ import annotations

import ast

from fixture_expect import assert_package_runs, flake8_run, package_rows
from flake8_mha.analysis.program import forms
from flake8_mha.analysis.program.summaries import TORCH_LAYERS, summarise

PACKAGE = "fixtures/program_calls/own_forward_layers"


def test_over_the_package_one_file_at_a_time_and_through_check():
    found = assert_package_runs(
        PACKAGE, [("text.py", 15, 22, "MHA001"), ("tower.py", 33, 38, "MHA001")], select="MHA0,MHA1"
    )
    assert "line 19: `self.embed(ids)`" in found[0].msg
    assert "line 36: `self.patchify(images).flatten(2).transpose(1, 2)`" in found[1].msg


def test_the_clip_style_tower_is_sequence_first_for_the_opt_in_code():
    status, found = flake8_run(f"{PACKAGE}/tower.py", select="MHA9")
    assert (status, package_rows(found)) == (1, [("tower.py", 15, 38, "MHA903")])


def _layer(source: str):
    tree = ast.parse("import torch.nn as nn\n" + source)
    return forms.torch_layer(tree.body[1], {"nn": "torch.nn"})


def test_a_forward_that_feeds_its_input_through_norms_and_sums_is_a_layer():
    assert _layer(
        "class L(nn.TransformerEncoderLayer):\n"
        "    def forward(self, src, src_mask=None):\n"
        "        h = self.norm1(src)\n"
        "        x = src + self.self_attn(h, h, h, attn_mask=src_mask)[0]\n"
        "        return x + self._ff_block(self.norm2(x))\n"
    ) == "torch.nn.TransformerEncoderLayer"


def test_what_is_not_a_layer_of_its_callers_data():
    bodies = {
        "an axis change": "        x = src.permute(1, 0, 2)\n        return self.self_attn(x, x, x)[0]\n",
        "another module first": "        x = self.pos(src)\n        return self.self_attn(x, x, x)[0]\n",
        "rebound in a loop": "        x = src\n        for x in [src]:\n            pass\n"
        "        return self.self_attn(x, x, x)[0]\n",
        "no attention": "        return self._ff_block(src)\n",
    }
    for why, body in bodies.items():
        assert _layer(
            "class L(nn.TransformerEncoderLayer):\n"
            "    def forward(self, src, src_mask=None):\n" + body
        ) is None, why
    # an ``__init__`` of its own, or torch's blocks replaced
    assert _layer(
        "class L(nn.TransformerEncoderLayer):\n"
        "    def __init__(self, d, h):\n        super().__init__(d, h, batch_first=True)\n"
        "    def forward(self, src):\n        return self._sa_block(src, None, None)\n"
    ) is None
    assert _layer(
        "class L(nn.TransformerEncoderLayer):\n"
        "    def _sa_block(self, x, m, p, is_causal=False):\n        return x.t()\n"
        "    def forward(self, src):\n        return self._sa_block(src, None, None)\n"
    ) is None
    # a module's subclass, not a layer's
    assert _layer(
        "class L(nn.MultiheadAttention):\n"
        "    def forward(self, x):\n        return self.self_attn(x, x, x)[0]\n"
    ) is None


def test_the_summary_names_the_layer_and_not_the_time_major_one():
    path = f"{PACKAGE}/layers.py"
    with open(path, encoding="utf-8") as fh:
        table = summarise(fh.read())
    assert table[TORCH_LAYERS] == {
        "PreNormLayer": "torch.nn.TransformerEncoderLayer",
        "WeightsLayer": "torch.nn.TransformerEncoderLayer",
    }
