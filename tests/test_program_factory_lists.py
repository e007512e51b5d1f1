"""Issue 26, item 3: layers built by a factory and kept in a list are the class's instances.

``fixtures/program_calls/factory_lists``: ``causal_layer(dim)`` returns
``Attend(dim, causal=True)``; its products are kept in an ``nn.ModuleList``
and an ``nn.Sequential`` of another file and called there without a mask, so
Attend's SDPA call never meets a mask with ``is_causal=True`` (MHA006 is not
reported). ``PaddedAttend``'s products get a padding mask from one call:
reported.  A call inside ``for layer in self.padded`` is a call of that
container's items only, even when another loop binds the same name."""
from __future__ import annotations


import pytest

from fixture_expect import (
    FIXTURES, assert_package_messages, copied, engine_rows,
)

PKG = FIXTURES / "program_calls" / "factory_lists"
MHA006 = ("scaled_dot_product_attention given attn_mask together with is_causal: it raises "
          "with dropout and silently applies both masks otherwise")
MESSAGES = {
    ("attend.py", 30, 16, "MHA006"): MHA006 + "; every construction of PaddedAttend in the "
                                              "project (1) passes causal=True",
}


def test_flake8_over_the_package_and_on_each_file_alone():
    assert_package_messages(PKG, MESSAGES)


PADDED = (30, 16, "MHA006")
ATTEND = (19, 16, "MHA006")


@pytest.mark.parametrize("path, change", [
    # a call of the causal layers passes a mask
    ("model.py", ("x = x + layer(x)\n", "x = x + layer(x, pad)\n")),
    # the factory's product kept where its calls cannot be read, or the factory passed around
    ("model.py", ("self.head = nn.Sequential(nn.LayerNorm(dim), causal_layer(dim))",
                  "self.head = {'attn': causal_layer(dim)}")),
    ("model.py", ("self.padded = nn.ModuleList(", "self.make = causal_layer\n        self.padded = nn.ModuleList(")),
    # a product of a factory of the factory, kept in a name and given a mask
    ("layers.py", ("def padded_layer(dim):",
                   "def stacked(dim):\n    return causal_layer(dim)\n\n\nSTACK = stacked(8)\n"
                   "STACK(None, 1)\n\n\ndef padded_layer(dim):")),
])
def test_a_call_or_use_that_may_pass_a_mask_keeps_the_finding(tmp_path, path, change):
    pkg = copied(PKG, tmp_path)
    target = pkg / path
    text = target.read_text()
    assert change[0] in text
    target.write_text(text.replace(change[0], change[1]))
    assert engine_rows(pkg / "attend.py") == [ATTEND, PADDED]


def test_a_factory_of_the_factory_is_followed(tmp_path):
    pkg = copied(PKG, tmp_path)
    layers = pkg / "layers.py"
    layers.write_text(layers.read_text() + "\n\ndef block(dim):\n    return causal_layer(dim)\n")
    model = pkg / "model.py"
    text = model.read_text().replace("from .layers import causal_layer, padded_layer",
                                     "from .layers import block, causal_layer, padded_layer")
    model.write_text(text.replace("self.head = nn.Sequential(nn.LayerNorm(dim), causal_layer(dim))",
                                  "self.head = nn.Sequential(nn.LayerNorm(dim), block(dim))"))
    assert engine_rows(pkg / "attend.py") == [PADDED]
    model.write_text(model.read_text().replace("return self.head(x)", "return self.head[1](x, pad)"))
    assert engine_rows(pkg / "attend.py") == [ATTEND, PADDED]


def test_a_loop_name_bound_over_two_containers_outside_its_loop_counts_for_both(tmp_path):
    # ``layer`` called after both loops: it may hold an item of either container
    pkg = copied(PKG, tmp_path)
    model = pkg / "model.py"
    model.write_text(model.read_text().replace("return self.head(x)",
                                               "x = layer(x, pad)\n        return self.head(x)"))
    assert engine_rows(pkg / "attend.py") == [ATTEND, PADDED]
