"""Name resolution and instance tracking, seen through the rules' findings."""
from __future__ import annotations

import textwrap

import pytest

from flake8_mha.lint.engine import analyze_source


def codes_at(src, codes=None):
    src = textwrap.dedent(src)
    return [(f.line, f.col, f.code) for f in analyze_source(src, codes=codes or ["MHA001", "MHA102", "MHA005", "MHA006"])]


@pytest.mark.parametrize("header,ctor", [
    ("import torch", "torch.nn.MultiheadAttention"),
    ("import torch.nn as nn", "nn.MultiheadAttention"),
    ("from torch import nn", "nn.MultiheadAttention"),
    ("import torch.nn", "torch.nn.MultiheadAttention"),
    ("from torch.nn import MultiheadAttention as MHA", "MHA"),
    ("from torch.nn import MultiheadAttention", "MultiheadAttention"),
    ("from torch.nn import *", "MultiheadAttention"),
    ("import torch as th", "th.nn.MultiheadAttention"),
    ("import torch.nn.modules.activation as act", "act.MultiheadAttention"),
    ("from torch.nn.modules.activation import MultiheadAttention as M", "M"),
    ("import torch", "torch.nn.modules.activation.MultiheadAttention"),
    ("import torch.nn as nn\nAttn = nn.MultiheadAttention", "Attn"),
])
def test_every_import_spelling_of_the_module(header, ctor):
    src = f"{header}\nattn = {ctor}(64, 8)\n"
    assert codes_at(src) == [(header.count("\n") + 2, 8, "MHA001")]


@pytest.mark.parametrize("header,func", [
    ("import torch", "torch.nn.functional.scaled_dot_product_attention"),
    ("import torch.nn.functional as F", "F.scaled_dot_product_attention"),
    ("from torch.nn import functional as F", "F.scaled_dot_product_attention"),
    ("from torch.nn.functional import scaled_dot_product_attention as sdpa", "sdpa"),
    ("from torch.nn.functional import scaled_dot_product_attention", "scaled_dot_product_attention"),
])
def test_every_import_spelling_of_sdpa(header, func):
    src = f"{header}\ndef f(q, k, v, m):\n    return {func}(q, k, v, attn_mask=m, is_causal=True)\n"
    assert codes_at(src) == [(header.count("\n") + 3, 12, "MHA006")]


@pytest.mark.parametrize("src", [
    # defined in the file
    "class MultiheadAttention:\n    def __init__(self, *a): pass\nattn = MultiheadAttention(64, 8)\n",
    # imported from another package
    "from fairseq.modules import MultiheadAttention\nattn = MultiheadAttention(64, 8)\n",
    "import mindspore.nn as nn\nattn = nn.MultiheadAttention(64, 8)\n",
    # shadowed after the import
    "from torch.nn import MultiheadAttention\nfrom mylib import MultiheadAttention\nattn = MultiheadAttention(64, 8)\n",
    # a local function named like torch's
    "def scaled_dot_product_attention(q, k, v, attn_mask=None, is_causal=False):\n    return q\n"
    "def f(q, k, v, m):\n    return scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=True)\n",
    # no import at all
    "attn = nn.MultiheadAttention(64, 8)\n",
])
def test_lookalikes_are_not_torch(src):
    assert codes_at(src) == []


def test_instance_in_self_attribute_is_known_in_another_method():
    src = """
    import torch.nn as nn
    class M(nn.Module):
        def build(self):
            self.attn = nn.MultiheadAttention(64, 8, batch_first=True)
        def forward(self, x):
            out, _ = self.attn(x, x, x)
            return out
    """
    assert codes_at(src) == [(7, 18, "MHA102")]


@pytest.mark.parametrize("container", [
    "nn.ModuleList([nn.MultiheadAttention(64, 8, batch_first=True) for _ in range(3)])",
    "nn.ModuleList(nn.MultiheadAttention(64, 8, batch_first=True) for _ in range(3))",
    "nn.ModuleList([nn.MultiheadAttention(64, 8, batch_first=True), nn.MultiheadAttention(64, 4, batch_first=True)])",
    "[nn.MultiheadAttention(64, 8, batch_first=True)]",
])
@pytest.mark.parametrize("use,col", [
    ("for layer in self.layers:\n                x = layer(x, x, x)[0]", 17),
    ("for i, layer in enumerate(self.layers):\n                x = layer(x, x, x)[0]", 17),
    ("x = self.layers[0](x, x, x)[0]", 13),
])
def test_module_list_items_are_known(container, use, col):
    src = f"""\
    import torch.nn as nn
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = {container}
        def forward(self, x):
            {use}
            return x
    """
    line = 7 if use.startswith("x") else 8
    assert codes_at(src) == [(line, col, "MHA102")]


def test_module_list_filled_by_append():
    src = """
    import torch.nn as nn
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList()
            for _ in range(2):
                self.layers.append(nn.MultiheadAttention(64, 8, batch_first=True))
        def forward(self, x):
            for layer in self.layers:
                x = layer(x, x, x)[0]
            return x
    """
    assert codes_at(src) == [(11, 17, "MHA102")]


def test_mixed_module_list_is_unknown():
    src = """
    import torch.nn as nn
    class M(nn.Module):
        def __init__(self, block):
            super().__init__()
            self.layers = nn.ModuleList([nn.MultiheadAttention(64, 8, batch_first=True), block])
        def forward(self, x):
            for layer in self.layers:
                x = layer(x, x, x)[0]
            return x
    """
    assert codes_at(src) == []


def test_local_variable_instance():
    src = """
    import torch.nn as nn
    def run(x):
        attn = nn.MultiheadAttention(64, 8, batch_first=True)
        return attn(x, x, x, is_causal=True)
    """
    assert codes_at(src) == [(5, 12, "MHA005")]


def test_subclass_without_forward_override_is_tracked_and_with_override_is_not():
    src = """
    import torch.nn as nn
    class Plain(nn.MultiheadAttention):
        pass
    class Custom(nn.MultiheadAttention):
        def forward(self, q, k, v, **kw):
            return super().forward(q, k, v, need_weights=False, **kw)
    a = Plain(64, 8, batch_first=True)
    b = Custom(64, 8, batch_first=True)
    def f(x):
        return a(x, x, x)[0] + b(x, x, x)[0]
    """
    assert codes_at(src) == [(11, 12, "MHA102")]


@pytest.mark.parametrize("forward,want", [
    # hands torch's parameters on, in place: torch's own forward, the call is MHA's
    ("def forward(self, query, key, value, key_padding_mask=None):\n"
     "        return super().forward(query, key, value, key_padding_mask=key_padding_mask)",
     [(12, 12, "MHA102")]),
    ("def forward(self, query, key, value):\n"
     "        \"\"\"Kept for the docs.\"\"\"\n"
     "        return super().forward(query, key, value)",
     [(12, 12, "MHA102")]),
    # changes what it hands on, or decorates it: the class's own forward
    ("def forward(self, query, key, value):\n"
     "        return super().forward(key, query, value)", []),
    ("@torch.jit.ignore\n    def forward(self, query, key, value):\n"
     "        return super().forward(query, key, value)", []),
])
def test_a_forward_that_only_delegates_is_torchs_own(forward, want):
    head = "import torch\nimport torch.nn as nn\nclass Kept(nn.MultiheadAttention):\n    "
    src = head + forward + "\na = Kept(64, 8, batch_first=True)\n"
    src += "\n" * (10 - src.count("\n")) + "def f(x):\n    return a(x, x, x)[0]\n"
    assert codes_at(src) == want


def test_reassigned_attribute_with_another_module_is_unknown():
    src = """
    import torch.nn as nn
    class M(nn.Module):
        def __init__(self, fast, attn_impl):
            super().__init__()
            if fast:
                self.attn = attn_impl
            else:
                self.attn = nn.MultiheadAttention(64, 8, batch_first=True)
        def forward(self, x):
            return self.attn(x, x, x)[0]
    """
    assert codes_at(src) == []


def test_module_constants_and_arithmetic():
    src = """
    import torch.nn as nn
    BASE = 32
    HEADS = 3
    WIDTH = BASE * 2 + 1
    attn = nn.MultiheadAttention(WIDTH, HEADS - 1, batch_first=True)
    """
    assert codes_at(src, ["MHA008", "MHA101"]) == [(6, 8, "MHA008")]


def test_constant_rebound_through_global_is_unknown():
    src = """
    import torch.nn as nn
    HEADS = 3
    def configure(h):
        global HEADS
        HEADS = h
    attn = nn.MultiheadAttention(64, HEADS, batch_first=True)
    """
    assert codes_at(src, ["MHA008", "MHA101"]) == []


def test_parameters_and_config_values_are_unknown():
    src = """
    import torch.nn as nn
    def build(cfg, heads=3):
        return nn.MultiheadAttention(cfg.d, heads, batch_first=True), nn.MultiheadAttention(cfg.d, cfg.h, batch_first=True)
    """
    assert codes_at(src, ["MHA008", "MHA101"]) == []


SUBCLASS = """\
import torch.nn as nn


class SelfAttn(nn.MultiheadAttention):
    def __init__(self, dim, heads):
        super().__init__(dim, heads, dropout=0.1)

    def forward(self, x, key_padding_mask=None):
        return super().forward(x, x, x, key_padding_mask=key_padding_mask, need_weights=False)[0]


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = SelfAttn(dim, heads)

    def forward(self, x, ids):
        B, L, D = x.shape
        FED
"""


@pytest.mark.parametrize("fed, want", [
    # sequence-first data reaches torch's forward through the subclass's own
    ("x = x.permute(1, 0, 2)\n        return self.attn(x)", [("MHA903", 6, 9)]),
    ("return self.attn(x)", [("MHA001", 6, 9)]),
    # a keep mask where torch's key_padding_mask ignores True: the subclass's summary
    # carries it to ``super().forward``, so it is judged at the call that hands it in
    ("x = x.permute(1, 0, 2)\n        return self.attn(x, key_padding_mask=ids != 0)",
     [("MHA903", 6, 9), ("MHA003", 20, 16)]),
])
def test_super_forward_of_a_torch_subclass_is_a_call_of_its_module(fed, want):
    from flake8_mha.lint.engine import analyze_source as lint

    src = SUBCLASS.replace("FED", fed)
    got = lint(src, "t.py", ["MHA001", "MHA903", "MHA003"])
    assert sorted((f.code, f.line, f.col) for f in got) == sorted(want)


NARROWED = """\
import torch.nn as nn


class MambAttn(nn.Module):
    def __init__(self, d_model=64, n_heads=8, n_blocks=4):
        super().__init__()
        self.layers = nn.ModuleList()
        for i in range(n_blocks):
            if i % 2 == 1:
                self.layers.append(nn.MultiheadAttention(d_model, n_heads))
            else:
                self.layers.append(nn.Linear(d_model, d_model))

    def forward(self, x):
        for layer in self.layers:
            if TEST:
                x = x.transpose(0, 1)
                x, _ = layer(x, x, x)
                x = x.transpose(0, 1)
            else:
                x = layer(x)
        return x
"""


def test_a_loop_variable_narrowed_by_isinstance_is_that_module():
    """mambular: a ModuleList of Mamba blocks and ``nn.MultiheadAttention``
    run in one loop, the attention under ``isinstance(layer,
    nn.MultiheadAttention)``: its call is the module's (MHA102 on the
    thrown-away weights).  Without the test the loop variable is of several
    kinds: not followed."""
    narrowed = NARROWED.replace("TEST", "isinstance(layer, nn.MultiheadAttention)")
    assert codes_at(narrowed, ["MHA102"]) == [(18, 24, "MHA102")]
    other = NARROWED.replace("TEST", "isinstance(layer, nn.Linear)")
    assert codes_at(other, ["MHA102"]) == []
