"""Two ways a layer reaches its attention that a call of it does not show:

- its attention class is a constructor parameter with a default (timm's
  ``attn_layer=Attention``, ``block_fn=Block``): the attribute it builds
  holds the default class (``chains.class_defaults``);
- it hands its keywords on untouched (``def forward(self, x, **kwargs):
  return self.attn(x, **kwargs)``): a keyword the caller puts there reaches
  the callee's parameter of that name (``chains.edges``' ``fwd``).

A mask handed to the block or to a tower of such blocks reaches the SDPA
call.  Checked as a user sees it: the exact code, line and column, over the
package, one file at a time and through ``check``."""
from __future__ import annotations

import ast
import textwrap

import pytest

from fixture_expect import ROOT, assert_package_runs
from flake8_mha.analysis.program.chains import class_attrs, class_defaults
from flake8_mha.analysis.program.summaries import summarise
from flake8_mha.core.torch_api import TRIGGER_WORDS

PACKAGES = {
    "fixtures/program_calls/layer_defaults": [
        ("model.py", 15, 13, "MHA002"), ("model.py", 17, 13, "MHA002"),
        # the block's own mask, its attention the default class of another file
        ("padded.py", 15, 20, "MHA002")],
    "fixtures/program_calls/kwargs": [
        ("model.py", 16, 13, "MHA002"), ("model.py", 18, 13, "MHA002")],
}


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_over_the_package_one_file_at_a_time_and_through_check(package):
    assert [w for w in TRIGGER_WORDS if w in (ROOT / package / "model.py").read_text()] == []
    assert_package_runs(package, PACKAGES[package])


def _init(source: str):
    cls = ast.parse(source).body[0]
    return cls, cls.body[0]


def test_which_defaults_name_the_class_an_attribute_holds():
    cls, init = _init(
        "class Block:\n"
        "    def __init__(self, dim, attn_layer=Attention, *, norm=nn.LayerNorm, act=None, n=2):\n"
        "        self.attn = attn_layer(dim)\n"
        "        self.norm = norm(dim)\n"
        "        self.act = act(dim)\n")
    assert class_defaults(init) == {"attn_layer": "Attention", "norm": "nn.LayerNorm"}
    assert class_attrs(cls) == {"attn": "Attention", "norm": "nn.LayerNorm", "act": "act"}
    rebound, _ = _init(
        "class Block:\n"
        "    def __init__(self, dim, attn_layer=Attention):\n"
        "        attn_layer = attn_layer or Other\n"
        "        self.attn = attn_layer(dim)\n")
    assert class_attrs(rebound) == {"attn": "attn_layer"}  # rebound: not the default


def _edges(body: str):
    source = "import torch.nn.functional as F\n\n\n" + textwrap.dedent(body)
    return summarise(source, screen=False).get("Block.forward", {}).get("edges")


def test_which_splats_hand_the_keywords_on():
    head = "class Block:\n    def forward(self, x, **kw):\n"
    edge = {"callee": ["method", "attend"], "pos": {"0": {"param": "x", "ops": []}}, "kw": {},
            "line": 6, "fwd": True, "given": [1, ["scale"]],
            "result": "returned"}  # returned as it is (masked scores' callers: returned_scores)
    attend = "    def attend(self, x, attn_mask=None):\n" \
             "        return F.scaled_dot_product_attention(x, x, x, attn_mask=attn_mask)\n"
    assert _edges(head + "        return self.attend(x, scale=2, **kw)\n" + attend) == [edge]
    for unread in (
        "        kw.pop('attn_mask', None)\n",  # changed in place
        "        kw['attn_mask'] = None\n",
        "        kw = {}\n",  # rebound
    ):
        got = _edges(head + unread + "        return self.attend(x, scale=2, **kw)\n" + attend)
        assert got is None, unread  # a splat it cannot read: not an edge
    # another dict splatted: which parameter gets what is not known
    assert _edges(head + "        o = {}\n        return self.attend(x, **o)\n" + attend) is None
