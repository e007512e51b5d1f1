"""Files parse only their relevant definitions, with the same findings."""

from __future__ import annotations

import libcst as cst

from flake8_mha.lint.engine import analyze_module, analyze_source, select_codes
from flake8_mha.analysis.focus import focus

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


# -- a long statement of data (torch's op_db: 25,000 lines of OpInfo(...) in one list)

ENTRY = "    Info(\n        'op_{i}',\n        sample=sample_{i},\n    ),\n"
SAMPLERS = "def sample_{i}(x):\n    return x + {i}\n\n\n"
SDPA_ENTRY = (
    "    Info(\n"
    "        'sdpa',\n"
    "        op=lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m,\n"
    "                                                             is_causal=True),\n"
    "    ),\n"
)


def data_source(n: int = 400) -> str:
    samplers = "".join(SAMPLERS.format(i=i) for i in range(n))
    entries = "".join(ENTRY.format(i=i) for i in range(n))
    return f"{HEAD}{samplers}op_db = [\n{entries}{SDPA_ENTRY}{entries}]\n"


def test_a_long_list_of_data_keeps_only_its_entries_that_can_matter():
    src = data_source()
    focused = focus(src)
    assert focused.count("\n") == src.count("\n")
    assert SDPA_ENTRY in focused  # the entry naming attention, on its lines
    assert "'op_" not in focused and "def sample_" not in focused  # data and its helpers go
    lines, kept = src.splitlines(), focused.splitlines()
    first = lines.index("        'op_0',") - 1  # "    Info(" of the first entry
    assert kept[first] == "    0" and kept[first + 3] == "     ,"  # same columns
    compile(focused, "focused.py", "exec")


def test_a_long_list_of_data_gives_the_same_findings_as_a_full_parse(monkeypatch):
    src = data_source()
    codes = select_codes(["MHA"])
    full = analyze_module(cst.parse_module(src), codes, "data.py")
    parsed = []
    real = cst.parse_module
    monkeypatch.setattr(cst, "parse_module", lambda text: parsed.append(text) or real(text))
    got = analyze_source(src, "data.py", codes)
    # the list's span is longer than the bracket screen's bound: focused all the same
    assert len(parsed) == 1 and "'op_" not in parsed[0]
    assert [(f.line, f.col, f.code) for f in got] == [(f.line, f.col, f.code) for f in full]
    assert [f.code for f in got] == ["MHA006"]


def test_a_short_list_is_left_as_it_is():
    src = data_source(n=50)  # about 400 lines: under the bound, not data
    assert "'op_" in focus(src)



def test_a_docstring_does_not_keep_its_definition_wherever_it_is():
    # "where" and "train" are words of prose: a nested function's docstring that
    # uses them keeps nothing, inside any block (a ``match`` case included)
    prose = '"""Where the cache lives; train it first."""'
    blocks = {
        "plain": "def plain(x):\n    def inner(y):\n        {doc}\n        return y\n    return x\n",
        "in_if": "def in_if(x):\n    if x:\n        def inner(y):\n            {doc}\n"
        "            return y\n    return x\n",
        "in_case": "def in_case(x):\n    match x:\n        case 1:\n            def inner(y):\n"
        "                {doc}\n                return y\n    return x\n",
    }
    extra = "\n\n".join(b.format(doc=prose) for b in blocks.values()) + "\n\n"
    focused = focus(big_source(extra=extra))
    for name in blocks:
        assert f"def {name}(" not in focused
    # the same functions with the words in code are kept
    code = "\n\n".join(b.format(doc="torch.where(y, y, y)") for b in blocks.values()) + "\n\n"
    focused = focus(big_source(extra=code))
    for name in blocks:
        assert f"def {name}(" in focused
