"""A form feed (the ``^L`` page break of older code) is part of its line for
Python, but ``str.splitlines`` breaks there.  Lines are counted as Python
counts them: findings keep their line, ``# noqa`` silences the line it is on,
and the focused parse does not cut a statement in two (which made LibCST
refuse the file, MHA000, before)."""
from __future__ import annotations

import ast
import subprocess
import sys

from flake8_mha.lint.engine import analyze_source, select_codes
from flake8_mha.analysis.focus import focus
from flake8_mha.core.lines import source_lines

ALL = select_codes(["MHA"])
SDPA = "F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=True)"
PAGED = (
    "import torch.nn.functional as F\n"
    "\x0c\n"
    "\n"
    "def a(q, k, v, m):\n"
    f"\x0c    return {SDPA}\n"
    "\x0c\n"
    "\n"
    "def b(q, k, v, m):\n"
    f"    return {SDPA}  # noqa: MHA006\n"
    "\n"
    "\n"
    "def c(q, k, v, m):\n"
    f"    return {SDPA}\n"
)
EXPECTED = ["m.py:5:13: MHA006", "m.py:13:12: MHA006"]


def test_lines_end_only_where_python_ends_them():
    text = "a = 1\x0c\nb = 2\x0b\x1c\x1d\x1e\x85\u2028\u2029\r\nc = 3\rd = 4\ne = 5"
    lines = source_lines(text)
    assert lines == ["a = 1\x0c\n", "b = 2\x0b\x1c\x1d\x1e\x85\u2028\u2029\r\n",
                     "c = 3\r", "d = 4\n", "e = 5"]
    assert [n.lineno for n in ast.parse(text.replace("\x0b\x1c\x1d\x1e\x85\u2028\u2029", "")).body] \
        == [1, 2, 3, 4, 5]
    assert "".join(lines) == text


def test_focus_keeps_a_form_feed_indented_statement_whole():
    # found by hypothesmith in CI: the second class's body survived without its header
    source = "class A:\n pass\nclass A:\n\x0c pass\n"
    ast.parse(focus(source, ast.parse(source)))
    assert analyze_source(source, "gen.py", ALL, use_prefilter=False) == []


def test_engine_reports_the_lines_python_numbers_after_page_breaks():
    found = analyze_source(PAGED, "m.py", ALL)
    assert [(f.code, f.line, f.col) for f in found] == [("MHA006", 5, 13), ("MHA006", 9, 12),
                                                         ("MHA006", 13, 12)]


def test_check_and_flake8_keep_lines_and_noqa_after_page_breaks(tmp_path):
    (tmp_path / "m.py").write_text(PAGED)
    check = subprocess.run([sys.executable, "-m", "flake8_mha.frontends.cli", "check", "--no-cache", "m.py"],
                           cwd=tmp_path, capture_output=True, text=True)
    assert check.returncode == 1, check.stderr
    assert [line.split(" ")[0] + " " + line.split(" ")[1] for line in check.stdout.splitlines()] \
        == EXPECTED
    flake8 = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "E999,MHA",
                             "m.py"], cwd=tmp_path, capture_output=True, text=True)
    assert flake8.returncode == 1, flake8.stderr
    assert [" ".join(line.split(" ")[:2]) for line in flake8.stdout.splitlines()] == EXPECTED
