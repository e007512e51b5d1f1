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
