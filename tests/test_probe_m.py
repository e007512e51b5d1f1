"""Probe M (twenty-third stop): hand-labelled multi-file packages written
from RULES.md by a session that did not see the code.  What it found
missed or false, each as a package run through flake8 per file, over the
package and through ``check``:

- SDPA wrappers that are static or class methods, called through their
  class from another file (``Attend.sdpa(q, k, v, causal=True,
  dropout_p=self.dropout)``): MHA007 and MHA006 were missed;
- encoder layers a factory of another file builds into an ``nn.ModuleList``
  (or an ``nn.Sequential``) that a class iterates: the factory's
  construction got MHA001 on sequence-first data, the layout of the
  callers two files away was not read."""

from __future__ import annotations

import ast

from fixture_expect import assert_package_runs
from flake8_mha.analysis.program.summaries import summarise
from flake8_mha.lint.engine import analyze_source

METHODS = "fixtures/program_calls/class_methods"
LAYERS = "fixtures/program_calls/factory_layers"


def test_static_and_class_method_wrappers_called_through_their_class():
    found = assert_package_runs(
        METHODS, [("layers.py", 20, 13, "MHA007"), ("layers.py", 21, 13, "MHA006")]
    )
    assert all(f.msg.endswith("through Attend.sdpa()") for f in found)


def test_their_summaries_bind_no_self():
    with open(f"{METHODS}/attend.py", encoding="utf-8") as fh:
        table = summarise(fh.read())
    assert table["Attend.sdpa"]["positional"] == ["q", "k", "v", "mask", "causal", "dropout_p"]
    assert table["Attend.sdpa"]["unbound"] is True
    plain = summarise(
        "import torch.nn.functional as F\n"
        "class A:\n"
        "    def run(self, q, k, v, m):\n"
        "        return F.scaled_dot_product_attention(q, k, v, attn_mask=m)\n"
    )
    # a plain method is a method: called through the class its self would shift
    assert plain["A.run"]["positional"] == ["q", "k", "v", "m"] and "unbound" not in plain["A.run"]


def test_a_factory_s_layers_are_judged_by_what_the_callers_of_their_container_feed():
    found = assert_package_runs(
        LAYERS,
        [("factory.py", 6, 12, "MHA001"), ("factory.py", 10, 12, "MHA903")],
        select="MHA0,MHA1,MHA903",
    )
    assert "factory_layers/model.py line 16: `B, L, D = x.shape`" in found[0].msg
    assert "factory_layers/model.py line 29: `x.transpose(0, 1)`" in found[1].msg


KWARGS = "fixtures/program_calls/kwargs_modules"


def test_keywords_through_a_block_s_kwargs_to_torch_s_modules():
    """``self.layer(x, **kwargs)``, ``self.mha(x, x, x, **kwargs)`` with the
    block's own ``**kwargs`` untouched: a caller's ``is_causal=True`` without
    ``src_mask`` (MHA005) and its keep-mask as ``key_padding_mask`` (MHA003)
    are judged at its call; a mask the caller does not give is absent."""
    found = assert_package_runs(
        KWARGS, [("model.py", 19, 13, "MHA005"), ("model.py", 20, 16, "MHA003")]
    )
    assert "through Block.forward()" in found[0].msg
    with open(f"{KWARGS}/blocks.py", encoding="utf-8") as fh:
        table = summarise(fh.read())
    assert table["Block.pool"]["reach"]["MultiheadAttention.key_padding_mask"] == {
        "param": "key_padding_mask",
        "ops": [],
        "fwd": True,
    }
    changed = summarise(
        "import torch.nn as nn\n"
        "class B(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.mha = nn.MultiheadAttention(8, 2)\n"
        "    def pool(self, x, **kwargs):\n"
        "        kwargs.pop('attn_mask', None)\n"
        "        return self.mha(x, x, x, **kwargs)[0]\n"
    )
    assert "B.pool" not in changed  # a **kwargs changed in place hands on what it likes


def test_a_block_called_through_a_getattr_template_is_fed_its_caller_s_data():
    src = '''\
import torch.nn as nn


class SelfBlock(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, h, batch_first=True)

    def forward(self, x):
        return x + self.attn(x, x, x, need_weights=False)[0]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        for i in range(2):
            setattr(self, f"layer_{i}", SelfBlock(64, 4))

    def forward(self, x):
        B, L, D = x.shape
        h = x.transpose(0, 1)
        for i in range(2):
            h = getattr(self, f"layer_{i}")(h)
        return h
'''
    found = analyze_source(src, "m.py", ["MHA001", "MHA010"])
    assert [(f.code, f.line, f.col) for f in found] == [("MHA010", 10, 20)]
    assert "line 21: `x.transpose(0, 1)`" in found[0].message
    fixed = src.replace("        h = x.transpose(0, 1)\n", "        h = x\n")
    assert analyze_source(fixed, "m.py", ["MHA001", "MHA010"]) == []


PAIRS = "fixtures/program_calls/kv_pairs"


def test_keys_and_values_masked_in_pairs_by_a_helper_of_another_file():
    """``k, v = mask_kv(k, v, keep)`` where the helper returns ``k * m, v *
    m`` of ``m`` made from its ``keep``: MHA015 at the SDPA call, as the same
    lines written in the caller give; a pair helper that scales by a
    parameter that is no mask is silent."""
    found = assert_package_runs(PAIRS, [("attention.py", 16, 16, "MHA015")])
    assert found[0].msg.startswith("mask from line 14 (torch.arange(k.shape[2]")


def test_a_pair_helper_must_mask_each_of_the_pair_by_the_same_parameter():
    src = '''\
import torch
import torch.nn.functional as F


def mask_k_only(k, v, keep):
    return k * keep[:, None, :, None], v


def mask_both(k, v, keep):
    m = keep[:, None, :, None].to(k.dtype)
    return k * m, v * m


def run(q, k, v, lengths):
    keep = torch.arange(k.shape[2])[None, :] < lengths[:, None]
    a, b = mask_k_only(k, v, keep)
    c, d = mask_both(k, v, keep)
    x = F.scaled_dot_product_attention(q, a, b)
    return F.scaled_dot_product_attention(x, c, d)
'''
    got = [(f.code, f.line, f.col) for f in analyze_source(src, "m.py", ["MHA015"])]
    assert got == [("MHA015", 19, 12)]
