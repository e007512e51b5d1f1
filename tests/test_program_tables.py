"""Layers run in ways a plain call does not show.  Layers kept as a table (vit-pytorch's ``for attn, ff in self.layers`` over
rows of ``nn.ModuleList([Attention(), FeedForward()])``, and ``for attn, ff
in zip(self.attns, self.ffs)``), and a padding mask reshaped with einops
(``rearrange(mask, "b j -> b 1 1 j")``, which keeps its meaning): each
row's member is called by its position, and the wrong mask is reported at
the call.  A block run under activation checkpointing (``checkpoint(blk,
x, mask, use_reentrant=False)``) is called with the mask.  Checked as a user sees it: the exact code, line and column, over
the package, one file at a time and through ``check``."""
from __future__ import annotations

import ast
import textwrap

import pytest
from fixture_expect import ROOT, assert_package_runs
from flake8_mha.analysis.program.chains import class_attrs
from flake8_mha.analysis.program.summaries import summarise
from flake8_mha.lint.engine import analyze_source

PACKAGES = {
    "fixtures/program_calls/layer_tables": [
        ("model.py", 16, 13, "MHA002"), ("model.py", 18, 13, "MHA002")],
    # checkpoint(blk, x, mask) runs blk(x, mask): in another file and at the call
    "fixtures/program_calls/checkpointed": [
        ("model.py", 16, 13, "MHA002"), ("model.py", 19, 17, "MHA002")],
    # a subclass of a torch module in another file, with or without a forward
    # that only hands its arguments to super().forward: the torch module
    "fixtures/program_calls/torch_subclass": [
        ("model.py", 17, 13, "MHA003"), ("model.py", 19, 13, "MHA003"),
        ("model.py", 20, 13, "MHA005")],
}


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_over_the_package_one_file_at_a_time_and_through_check(package):
    assert "scaled_dot_product" not in (ROOT / package / "model.py").read_text()
    assert "TransformerEncoderLayer" not in (ROOT / package / "model.py").read_text()
    assert_package_runs(package, PACKAGES[package])


def test_a_row_of_a_layer_table_holds_one_kind_by_position():
    cls = ast.parse(textwrap.dedent("""\
        class T:
            def __init__(self, depth):
                self.layers = nn.ModuleList([])
                for _ in range(depth):
                    self.layers.append(nn.ModuleList([Attention(), FeedForward()]))
                self.rows = nn.ModuleList([nn.ModuleList([Attention(), Mlp()]) for _ in range(2)])
                self.mixed = nn.ModuleList([nn.ModuleList([Attention(), Mlp()]),
                                            nn.ModuleList([Mlp(), Attention()])])
        """)).body[0]
    assert class_attrs(cls) == {"layers#0": "Attention", "layers#1": "FeedForward",
                                "rows#0": "Attention", "rows#1": "Mlp"}


def _reach(body: str):
    source = "import torch.nn.functional as F\nfrom einops import rearrange\n\n\n"
    source += textwrap.dedent(body)
    return summarise(source).get("attend", {}).get("reach", {}).get("attn_mask")


def test_an_einops_pattern_that_adds_unit_axes_is_an_index_step():
    call = "    return F.scaled_dot_product_attention(q, k, v, attn_mask=m)\n"
    head = "def attend(q, k, v, mask):\n"
    assert _reach(head + "    m = rearrange(mask, 'b j -> b 1 1 j')\n" + call) == {
        "param": "mask", "ops": [["index", ":, None, None, :"]]}
    assert _reach(head + "    m = rearrange(mask, 'b j -> b () j')\n" + call) == {
        "param": "mask", "ops": [["index", ":, None, :"]]}
    for unread in ("'b j -> j b'", "'b i j -> b (i j)'", "'b j -> b j'", "'b 1 j -> b j'"):
        assert _reach(head + f"    m = rearrange(mask, {unread})\n" + call) is None, unread


SAME_FILE = """\
import torch.nn.functional as F
from einops import rearrange


def attend(q, k, v, tokens):
    pad = rearrange(tokens == 0, "b j -> b 1 1 j")
    keep = rearrange(tokens != 0, "b j -> b () () j")
    moved = rearrange(tokens == 0, "b i j -> b j i")
    a = F.scaled_dot_product_attention(q, k, v, attn_mask=pad)
    b = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
    c = F.scaled_dot_product_attention(q, k, v, attn_mask=moved)
    return a, b, c
"""


def test_a_mask_reshaped_by_einops_keeps_its_meaning():
    found = analyze_source(SAME_FILE, "t.py", ["MHA002", "MHA009"])
    # a pattern that moves axes may transpose a triangle: unknown, not reported
    assert sorted((f.code, f.line, f.col) for f in found) == [("MHA002", 9, 9)]


def test_which_subclasses_of_a_torch_module_are_the_torch_module():
    head = "import torch.nn as nn\n\n\nclass Layer(nn.TransformerEncoderLayer):\n"
    fwd = "    def forward(self, src, src_mask=None, src_key_padding_mask=None):\n"
    same = "        return super().forward(src, src_mask, src_key_padding_mask=src_key_padding_mask)\n"
    torch_layer = {"@torch": {"Layer": "torch.nn.TransformerEncoderLayer"}}
    # without an __init__ of its own it is built with torch's arguments
    built = {**torch_layer, "@torch-built": torch_layer["@torch"]}
    assert summarise(head + "    pass\n") == built
    assert summarise(head + fwd + same) == built
    init = "    def __init__(self, d):\n        super().__init__(d, 8, batch_first=True)\n\n"
    # an __init__ of its own: the flag its ``super().__init__`` states (probe AN's AN19)
    flag = {"@torch-batch-first": {"Layer": True}}
    assert summarise(head + init + fwd + same) == {**torch_layer, **flag}
    left = init.replace(", batch_first=True", "")  # torch's default: MHA001's, where it is built
    assert summarise(head + left + fwd + same) == torch_layer
    for own in (
        "        return super().forward(src, src_key_padding_mask=src_mask)\n",  # moved
        "        src = src * 2\n" + same,  # does more
        "        return super().forward(src)\n",  # drops what its callers pass
    ):
        assert "@torch" not in summarise(head + fwd + own), own
    renamed = "    def forward(self, x, mask=None):\n        return super().forward(x, mask)\n"
    assert "@torch" not in summarise(head + renamed)  # not torch's names
