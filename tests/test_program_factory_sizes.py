"""MHA008 at the call that hands a function or class of the project the sizes
of the module it builds (probe L's ``build_attention(AUDIO_DIM,
AUDIO_HEADS)``): the construction's sizes are its parameters and the
callers disagree, so the construction cannot say; each call can, and a
correct sibling call does not hide a wrong one.  When every construction of
a class passes the same sizes, each still reports; only sizes every
construction leaves to the class's defaults are judged at the construction
inside the class."""

from __future__ import annotations

import textwrap

from fixture_expect import assert_package_runs
from flake8_mha.analysis.program.summaries import SIZES, summarise
from flake8_mha.analysis.program.tables import valid_table
from flake8_mha.lint.engine import analyze_source

SIZES_DIR = "fixtures/program_calls/factory_sizes"

BLOCKS = """\
from torch import nn


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)


def build(dim, heads=8):
    return nn.MultiheadAttention(dim, heads, batch_first=True)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Block(100, 8)
        self.b = Block(128, 8)
        self.c = build(96)
        self.d = build(100)
        self.e = build(dim=64, heads=0)
"""


def _found(src):
    out = analyze_source(textwrap.dedent(src), "m.py", ["MHA008"])
    return [(f.code, f.line, f.col, f.message) for f in out]


def test_each_call_is_judged_with_its_own_sizes():
    got = _found(BLOCKS)
    assert [g[:3] for g in got] == [("MHA008", 17, 18), ("MHA008", 20, 18), ("MHA008", 21, 18)]
    assert got[0][3] == (
        "embed_dim=100 is not divisible by num_heads=8: MultiheadAttention raises at "
        "construction; this call builds it through Block() at m.py:7"
    )
    assert got[1][3].endswith("through build() at m.py:11")  # heads from build's default
    assert got[2][3].startswith("num_heads=0 must be greater than 0")


def test_sizes_every_construction_passes_alike_are_judged_at_each_call(tmp_path):
    """With the project read (a file on disk) or not, every call that hands
    the wrong sizes reports: they enter the program there (RULES.md, "Where
    findings go"), and the construction inside the class does not repeat
    them (probe Q's B4 and B15, labelled at the calls)."""
    alike = BLOCKS.replace("Block(128, 8)", "Block(100, 8)")
    path = tmp_path / "m.py"
    path.write_text(alike)
    got = analyze_source(alike, str(path), ["MHA008"])
    assert [(f.line, f.col) for f in got] == [(17, 18), (18, 18), (20, 18), (21, 18)]
    assert got[0].message.endswith("this call builds it through Block() at m.py:7")
    assert [g[1:3] for g in _found(alike)] == [(17, 18), (18, 18), (20, 18), (21, 18)]


def test_sizes_every_construction_leaves_to_defaults_are_judged_at_the_module(tmp_path):
    """``def __init__(self, dim=100, heads=8)`` built ``Block()`` everywhere:
    the sizes enter at the defaults, so the construction reports, once."""
    src = BLOCKS.replace("def __init__(self, dim, heads):", "def __init__(self, dim=100, heads=8):")
    src = src.replace("Block(100, 8)", "Block()").replace("Block(128, 8)", "Block()")
    path = tmp_path / "m.py"
    path.write_text(src)
    got = analyze_source(src, str(path), ["MHA008"])
    assert [(f.line, f.col) for f in got] == [(7, 21), (20, 18), (21, 18)]
    # what every construction leaves out is said to be the default (probe AA's AA26)
    assert got[0].message.endswith(
        "every construction of Block in the project (2) leaves the default dim=100, heads=8"
    )


def test_a_module_built_only_on_a_branch_the_call_turns_off_is_not_judged():
    src = """\
    from torch import nn


    def optional(dim, heads):
        return nn.MultiheadAttention(dim, heads, batch_first=True) if heads else nn.Identity()


    def maybe(dim, heads):
        if heads:
            return nn.MultiheadAttention(dim, heads, batch_first=True)
        return nn.Identity()


    a = optional(128, 0)
    b = maybe(128, 0)
    c = optional(100, 8)
    """
    # the construction under the branch is never reached with heads=0 (it was
    # reported as num_heads=0 before); a call that reaches it with bad sizes is
    # not judged either: the sizes table reads only unconditional constructions
    assert _found(src) == []


def test_a_parameter_the_function_changes_is_not_its_caller_s():
    src = """\
    from torch import nn


    def build(dim, heads):
        dim = dim * heads
        return nn.MultiheadAttention(dim, heads)


    a = build(10, 3)
    """
    assert _found(src) == []


def test_across_files_per_file_over_the_package_and_through_check():
    found = assert_package_runs(
        SIZES_DIR, [("fusion.py", 18, 26, "MHA008"), ("fusion.py", 20, 28, "MHA008")]
    )
    assert found[0].msg.endswith(
        "this call builds it through build_attention() at "
        "fixtures/program_calls/factory_sizes/builders.py:6"
    )
    assert found[1].msg.endswith(
        "through CrossBlock() at fixtures/program_calls/factory_sizes/builders.py:18"
    )


def test_the_summary_s_table_and_a_damaged_stored_entry():
    """The sizes are part of the file's summary (cached with it); a stored
    summary whose sizes were changed or damaged is made again."""
    with open(f"{SIZES_DIR}/builders.py", encoding="utf-8") as fh:
        summary = summarise(fh.read())
    table = summary[SIZES]
    assert sorted(table) == ["CrossBlock", "build_attention"]
    entry = table["CrossBlock"][0]
    assert (entry["embed"], entry["heads"], entry["params"], entry["defaults"], entry["init"]) == (
        ["param", "dim"],
        ["param", "heads"],
        ["dim", "heads"],
        {"heads": 8},
        True,
    )
    assert entry["line"] == 18 and table["build_attention"][0]["line"] == 6
    assert valid_table(summary)
    for damaged in (
        {"Block": [dict(entry, embed=["param", 3])]},
        {"Block": [dict(entry, defaults={"heads": "8"})]},
        {"Block": [{k: v for k, v in entry.items() if k != "line"}]},
        {"Block": "x"},
    ):
        assert not valid_table(dict(summary, **{SIZES: damaged}))
