"""The text pre-filter: free for files that cannot concern attention, and it
never changes what is found."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from fixture_expect import fixture_files
from flake8_mha.lint.engine import analyze_source, prefilter, select_codes

ALL = select_codes(["MHA"])


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.name)
def test_fixtures_find_the_same_without_the_prefilter(path):
    text = path.read_text(encoding="utf-8")
    without = analyze_source(text, str(path), ALL, use_prefilter=False)
    assert analyze_source(text, str(path), ALL) == without


def test_an_attention_free_megabyte_costs_microseconds():
    text = "def f(x):\n    return [y * 2 for y in x if y]\n" * 25_000
    assert len(text) > 1_000_000 and not prefilter(text)
    t = time.perf_counter()
    for _ in range(10):
        assert analyze_source(text, "big.py", ALL) == []
    assert (time.perf_counter() - t) / 10 < 0.05


def test_the_plugin_does_not_load_libcst_for_attention_free_files(tmp_path):
    path = tmp_path / "plain.py"
    path.write_text("import os\nprint(os.sep)\n")
    code = textwrap.dedent(f"""
        import ast, sys
        from flake8_mha.frontends.plugin import MHAChecker
        text = open({str(path)!r}).read()
        found = list(MHAChecker(ast.parse(text), text.splitlines(True), {str(path)!r}).run())
        print(found, "libcst" in sys.modules, "torch" in sys.modules)
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["[]", "False", "False"]


DOCUMENTED_ONLY = '''"""Helpers for code that calls scaled_dot_product_attention (not this file)."""
import torch


def pad(x):  # a MultiheadAttention caller pads first
    """Pad for nn.MultiheadAttention; see torch's Transformer docs."""
    return torch.nn.functional.pad(x, (0, 1))
'''


def test_words_only_in_comments_and_docstrings_do_not_pass_the_code_screen():
    import ast

    from flake8_mha.core.screen import code_names_a_trigger

    assert prefilter(DOCUMENTED_ONLY)
    assert not code_names_a_trigger(ast.parse(DOCUMENTED_ONLY))
    # a string that is not a whole statement is code: a lookup by name
    looked_up = (
        DOCUMENTED_ONLY + 'sdpa = getattr(torch.nn.functional, "scaled_dot_product_attention")\n'
    )
    assert code_names_a_trigger(ast.parse(looked_up))
    assert code_names_a_trigger(ast.parse("def f(n_rep): pass\n"))
    assert code_names_a_trigger(ast.parse("from torch.nn import MultiheadAttention as M\n"))


def test_a_documented_only_file_is_not_parsed_by_libcst(monkeypatch, tmp_path):
    import libcst

    path = tmp_path / "helpers.py"
    path.write_text(DOCUMENTED_ONLY)

    def boom(*a, **k):
        raise AssertionError("LibCST parsed a file whose code names no trigger word")

    monkeypatch.setattr(libcst, "parse_module", boom)
    assert analyze_source(DOCUMENTED_ONLY, str(path), ALL) == []


def test_a_documented_only_file_that_calls_a_project_wrapper_still_reports(tmp_path):
    """The code screen sends the file to the project-aware gate, which lets in
    a file that calls a wrapper of its project: the finding is the same with
    and without its comments."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "attn.py").write_text(
        "import torch.nn.functional as F\n\n\n"
        "def attend(q, k, v, mask=None):\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)\n"
    )
    caller = (
        '"""Calls attend, which wraps scaled_dot_product_attention."""\n'
        "from .attn import attend\n\n\n"
        "def run(q, k, v, ids):\n"
        "    pad = (ids == 0)[:, None, None, :]  # True = padding\n"
        "    return attend(q, k, v, mask=pad)  # SDPA keeps True: the padding is kept\n"
    )
    (pkg / "model.py").write_text(caller)
    got = [(f.code, f.line, f.col) for f in analyze_source(caller, str(pkg / "model.py"), ALL)]
    assert got == [("MHA002", 7, 12)]
    plain = caller.replace("  # SDPA keeps True: the padding is kept", "").replace(
        '"""Calls attend, which wraps scaled_dot_product_attention."""', '"""Calls attend."""'
    )
    assert not prefilter(plain)
    got = [(f.code, f.line, f.col) for f in analyze_source(plain, str(pkg / "model.py"), ALL)]
    assert got == [("MHA002", 7, 12)]
