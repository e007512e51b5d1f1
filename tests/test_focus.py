"""Files parse only their relevant definitions, with the same findings."""

from __future__ import annotations

import libcst as cst

from flake8_mha.engine import analyze_module, analyze_source, select_codes
from flake8_mha.focus import focus

HEAD = "import torch.nn as nn\nimport torch.nn.functional as F\nHEADS = 3\n\n"
FILLER = "def helper_{i}(x):\n    y = x + {i}\n    return y * 2\n\n\n"
TAIL = (
    "class Block(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.attn = nn.MultiheadAttention(64, HEADS)\n"
    "        self.p = 0.1\n"
    "    def forward(self, x):\n"
    "        out, _ = self.attn(x, x, x)\n"
    "        return F.scaled_dot_product_attention(x, x, x, dropout_p=self.p)\n"
)


def big_source(n_helpers: int = 410, extra: str = "") -> str:
    return HEAD + "".join(FILLER.format(i=i) for i in range(n_helpers)) + extra + TAIL


def test_a_file_where_every_definition_matters_is_left_whole():
    src = HEAD + TAIL
    assert focus(src) is src


def test_large_file_keeps_lines_and_relevant_definitions():
    src = big_source()
    focused = focus(src)
    assert focused.count("\n") == src.count("\n")
    assert "def helper_" not in focused
    assert focused.endswith(TAIL) and focused.startswith(HEAD)


def test_large_file_gives_the_same_findings_as_a_full_parse():
    src = big_source()
    codes = select_codes(["MHA"])
    full = analyze_module(cst.parse_module(src), codes, "big.py")
    got = analyze_source(src, "big.py", codes)
    assert [(f.line, f.col, f.code) for f in got] == [(f.line, f.col, f.code) for f in full]
    assert {f.code for f in got} == {"MHA001", "MHA007", "MHA008", "MHA101", "MHA102"}


def test_a_definition_that_rebinds_a_global_is_kept():
    extra = "def configure(h):\n    global HEADS\n    HEADS = h\n\n\n"
    src = big_source(extra=extra)
    assert "global HEADS" in focus(src)
    # HEADS may change at run time: no MHA101 on it
    codes = [f.code for f in analyze_source(src, "big.py", select_codes(["MHA"]))]
    assert "MHA101" not in codes


def test_crlf_line_endings_survive():
    src = big_source().replace("\n", "\r\n")
    focused = focus(src)
    assert focused.count("\r\n") == src.count("\r\n")
    assert "\n" not in focused.replace("\r\n", "")
