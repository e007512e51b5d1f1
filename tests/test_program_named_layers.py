"""Layers stored by ``setattr(self, f"layer{i}", ...)`` and called by
``getattr(self, f"layer{i}")(...)`` (``fixtures/program_calls/named_layers/``):
the callers of a wrapper that returns ``nn.MultiheadAttention``'s pair are
found through those names, over the package, one file at a time and through
``check``; a caller that keeps the weights keeps MHA102 silent."""

from __future__ import annotations

import ast

from fixture_expect import assert_package_runs
from flake8_mha.analysis.program.call_index import Index

PACKAGE = "fixtures/program_calls/named_layers"


def test_over_the_package_one_file_at_a_time_and_through_check():
    found = assert_package_runs(PACKAGE, [("layers.py", 14, 16, "MHA102")], select="MHA")
    assert "every caller of `SelfAttentionLayer.forward`" in found[0].msg
    assert "encoder.py line 19" in found[0].msg


def test_the_index_names_a_template_attribute_as_its_stores_do():
    index = Index(
        ast.parse(
            "class E:\n"
            "    def __init__(self):\n"
            "        for i in range(2):\n"
            "            setattr(self, f'layer{i}', Block())\n"
            "    def forward(self, x):\n"
            "        for i in range(2):\n"
            "            x = getattr(self, f'layer{i}')(x)\n"
            "        return getattr(self, 'head')(x)\n"
        )
    )
    assert [c.line for c in index.by_attr["layer*"]] == [7]
    assert [c.line for c in index.by_attr["head"]] == [8]
    assert index.by_name["Block"][0].into == ("attr", "layer*")
