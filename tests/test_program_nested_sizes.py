"""Issue 26 (probe M): sizes handed down more than one construction in the
callee's file (``Encoder(d, h, depth)`` -> ``Layer(d, h)`` ->
``nn.MultiheadAttention(d, h)``), and through a class method that returns
``cls(...)``: MHA008 at the call that hands sizes that do not divide, naming
the construction; a correct sibling call beside it is silent and does not
hide it.

``fixtures/program_calls/nested_sizes``: per file, over the package and
through ``check``."""

from __future__ import annotations

import ast
import pathlib

import pytest
from fixture_expect import assert_package_runs

from flake8_mha.analysis.program import forms
from flake8_mha.analysis.program.sizes import sizes_table
from flake8_mha.lint.engine import analyze_file, analyze_source

PKG = pathlib.Path("fixtures/program_calls/nested_sizes")


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(
        str(PKG),
        [
            ("model.py", 12, 22, "MHA008"),
            ("model.py", 14, 23, "MHA008"),
            ("model.py", 14, 23, "MHA101"),
        ],
    )


def test_the_findings_name_the_construction():
    got = analyze_file(str(PKG / "model.py"), ["MHA008"])
    assert [f.message.split("; ")[-1] for f in got] == [
        "this call builds it through Encoder() at fixtures/program_calls/nested_sizes/layers.py:9",
        "this call builds it through Encoder.from_width() at "
        "fixtures/program_calls/nested_sizes/layers.py:9",
    ]


def test_the_table_composes_within_the_file():
    tree = ast.parse((PKG / "layers.py").read_text())
    table = sizes_table(tree, forms.torch_names(tree), {})
    assert sorted(table) == ["Encoder", "Encoder.from_width", "Layer"]
    enc = table["Encoder"][0]
    assert (enc["embed"], enc["heads"], enc["params"]) == (
        ["param", "dim"],
        ["param", "heads"],
        ["dim", "heads", "depth"],
    )
    made = table["Encoder.from_width"][0]
    assert (made["defaults"], made["init"]) == ({"heads": 8, "depth": 2}, False)


ONE_FILE = """\
from torch import nn


class Layer(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, h, batch_first=True)


class Encoder(nn.Module):
    def __init__(self, d, h, n):
        super().__init__()
        {body}


small = Encoder(100, 8, 2)
big = Encoder(512, 8, 6)
"""


@pytest.mark.parametrize(
    "body, want",
    [
        ("self.layers = nn.ModuleList([Layer(d, h) for _ in range(n)])", [(16, 9, "MHA008")]),
        ("self.layer = Layer(d, h)", [(16, 9, "MHA008")]),
        # a size the caller does not hand on as it is: unknown, silent
        ("self.layer = Layer(d * 2, h)", []),
        # built only on a branch: not every run builds it
        ("self.layer = Layer(d, h) if n else None", []),
    ],
)
def test_in_one_file(tmp_path, body, want):
    got = analyze_source(ONE_FILE.format(body=body), str(tmp_path / "m.py"), ["MHA008"])
    assert [(f.line, f.col, f.code) for f in got] == want
