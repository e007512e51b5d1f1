"""bench/floors.py charges target 1's floor with the LibCST parse of only the
files its syntactic gate keeps.  The gate must keep a file only where a
rule's sink can stand (a name used as data is none), or the floor charges
parses no analysis needs; and it should keep every file that reports (the
run counts those it drops, which only lower the floor): both on code we
can see."""

from __future__ import annotations

import ast
import pathlib
import sys
import textwrap

import pytest

from flake8_mha.lint.engine import analyze_source, select_codes

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def gate():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import floors

        yield floors.gate
    finally:
        sys.path.remove(str(ROOT / "bench"))


def _letters(gate, code: str) -> str:
    return gate(ast.parse(textwrap.dedent(code)))


def test_every_fixture_that_reports_is_kept(gate):
    codes = select_codes(["MHA"])
    reporting = 0
    for path in sorted((ROOT / "fixtures").glob("**/*.py")):
        source = path.read_text(encoding="utf-8")
        if analyze_source(source, str(path), codes, project=False):
            reporting += 1
            assert gate(ast.parse(source)), path.relative_to(ROOT)
    assert reporting >= 30  # the bad fixtures: the loop above ran over them


def test_names_used_as_data_are_not_sinks(gate):
    assert (
        _letters(
            gate,
            """
        import torch.nn as nn
        def is_attention(m):
            return isinstance(m, (nn.MultiheadAttention, nn.TransformerEncoderLayer))
        NAMES = {nn.MultiheadAttention: "mha"}
    """,
        )
        == ""
    )


def test_each_kind_of_sink(gate):
    assert _letters(gate, "import torch.nn as nn\nlayer = nn.MultiheadAttention(8, 2)\n") == "E"
    assert (
        _letters(
            gate,
            "from functools import partial\nimport torch.nn as nn\n"
            "make = partial(nn.TransformerEncoderLayer, 8, 2)\n",
        )
        == "E"
    )
    assert _letters(gate, "from torch.nn.functional import scaled_dot_product_attention\n") == "E"
    assert _letters(gate, "s = s.masked_fill(mask, float('-inf'))\n") == "F"
    assert _letters(gate, "w = (q @ k.transpose(-2, -1)).softmax(-1)\n") == "H"
    assert _letters(gate, "w = torch.softmax(torch.matmul(q, k), -1)\n") == "H"
    assert (
        _letters(
            gate,
            "k = k.repeat_interleave(num_heads // num_kv_heads, dim=1)\nv = torch.cat([v, v], 1)\n",
        )
        == "G"
    )
    assert _letters(gate, "x = torch.softmax(logits, -1)\n") == ""  # softmax, no product
