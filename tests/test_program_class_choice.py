"""A module held as one of two classes (``make = Fused if fused else Conv``)
across files (``fixtures/program_calls/class_choice/``): each class is
followed, so the correct sibling never hides the wrong one; a class of the
project that reaches nothing hides nothing either."""

from __future__ import annotations

import ast

from fixture_expect import assert_package_runs, write_package
from flake8_mha.analysis.program import steps
from flake8_mha.lint.engine import analyze_source

PACKAGE = "fixtures/program_calls/class_choice"


def test_over_the_package_one_file_at_a_time_and_through_check():
    assert_package_runs(PACKAGE, [("model.py", 19, 16, "MHA003")], select="MHA")


def _reach(expr: str):
    return steps.reach(ast.parse(expr, mode="eval").body, {"m"}, {}, 0)


def test_a_pair_mask_and_one_row_of_it_keep_the_mask_they_are_made_of():
    assert _reach("m.unsqueeze(2) * m.unsqueeze(-1)") == {"param": "m", "ops": [["expand"]]}
    assert _reach("m[:, None] & m[None]") == {"param": "m", "ops": [["expand"]]}
    assert _reach("m[:, 0, 0].bool()") == {"param": "m", "ops": [["index", ":, 0, 0"], ["bool"]]}
    # two masks, or a mask and a scale, are not one mask
    assert steps.reach(ast.parse("m * n", mode="eval").body, {"m", "n"}, {}, 0) is None
    assert _reach("m.unsqueeze(2) * 2") is None


def _package(tmp_path, slow_body: str):
    return write_package(
        tmp_path / "pkg",
        {
            "layers.py": "import torch.nn as nn\n\n\n"
            "class Fused(nn.Module):\n"
            "    def __init__(self, d):\n"
            "        super().__init__()\n"
            "        self.attn = nn.MultiheadAttention(d, 2, batch_first=True)\n\n"
            "    def forward(self, x, keep):\n"
            "        return self.attn(x, x, x, key_padding_mask=keep)[0]\n\n\n"
            "class Slow(nn.Module):\n"
            "    def __init__(self, d):\n"
            "        super().__init__()\n"
            "        self.proj = nn.Linear(d, d)\n\n"
            "    def forward(self, x, keep):\n" + slow_body + "\n\n"
            "class Stack(nn.Module):\n"
            "    def __init__(self, d, fused=False):\n"
            "        super().__init__()\n"
            "        make = Fused if fused else Slow\n"
            "        self.blocks = nn.ModuleList(make(d) for _ in range(2))\n\n"
            "    def forward(self, x, keep):\n"
            "        for block in self.blocks:\n"
            "            x = block(x, keep)\n"
            "        return x\n",
            "model.py": "import torch\nimport torch.nn as nn\n\nfrom .layers import Stack\n\n\n"
            "class Model(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.stack = Stack(8)\n\n"
            "    def forward(self, x, lengths):\n"
            "        keep = torch.arange(x.size(1))[None, :] < lengths[:, None]\n"
            "        return self.stack(x, keep)\n",
        },
    )


def test_a_sibling_that_reaches_nothing_hides_nothing(tmp_path):
    pkg = _package(tmp_path, "        return self.proj(x)\n")
    model = pkg / "model.py"
    found = analyze_source(model.read_text(), str(model), ["MHA003"])
    assert [(f.code, f.line, f.col) for f in found] == [("MHA003", 14, 16)]
    assert "through Stack.forward() -> Fused.forward()" in found[0].message


def test_a_sibling_that_cannot_be_read_leaves_the_call_unknown(tmp_path):
    # the other class is not the project's: what it does with the mask is unknown
    pkg = _package(tmp_path, "        return self.proj(x)\n")
    layers = pkg / "layers.py"
    layers.write_text(
        layers.read_text().replace(
            "make = Fused if fused else Slow", "make = Fused if fused else nn.Identity"
        )
    )
    model = pkg / "model.py"
    assert analyze_source(model.read_text(), str(model), ["MHA003"]) == []
