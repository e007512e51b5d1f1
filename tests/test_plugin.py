"""The flake8 adapter: never imports torch, never crashes flake8."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from flake8_mha.lint.engine import analyze_source

BAD = "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8)\n"


def test_plugin_and_engine_never_import_torch():
    code = textwrap.dedent(f"""
        import sys
        from flake8_mha.frontends.plugin import MHAChecker
        lines = {BAD!r}.splitlines(True)
        found = list(MHAChecker(None, lines, "x.py").run())
        assert found and found[0][2].startswith("MHA001"), found
        import flake8_mha.lint.engine, flake8_mha.rules.base
        flake8_mha.rules.base.all_rules()
        print(sorted(m for m in sys.modules if m == "torch" or m.startswith("torch.")))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_plugin_reports_zero_based_columns_to_flake8():
    from flake8_mha.frontends.plugin import MHAChecker

    found = list(MHAChecker(None, BAD.splitlines(True), "x.py").run())
    assert [(line, col, text.split()[0]) for line, col, text, _ in found] == [(2, 7, "MHA001")]


def test_file_without_attention_words_is_skipped_before_parsing(monkeypatch):
    import libcst

    def boom(*a, **k):
        raise AssertionError("parsed a file the pre-filter should have skipped")

    monkeypatch.setattr(libcst, "parse_module", boom)
    assert analyze_source("import torch\nx = torch.zeros(3)\n") == []


def test_internal_error_becomes_one_mha000(monkeypatch):
    from flake8_mha.rules import mha001_batch_first_unset as layout

    def boom(self, ev):
        raise ValueError("kaboom")

    monkeypatch.setattr(layout.BatchFirstUnset, "on_construction", boom)
    found = analyze_source(BAD, "x.py")
    assert [(f.code, f.line, f.col) for f in found] == [("MHA000", 1, 1)]
    assert "internal error ValueError: kaboom" in found[0].message


def test_flake8_goes_on_after_a_broken_file(tmp_path):
    (tmp_path / "a_broken.py").write_text("import torch.nn as nn\nnn.MultiheadAttention(64, 8\n")
    (tmp_path / "b_good.py").write_text(BAD)
    proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "E999,MHA", "."],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 1
    lines = sorted(proc.stdout.splitlines())
    assert lines[0].startswith("./a_broken.py:") and " E999 " in lines[0]
    assert lines[1].startswith("./b_good.py:2:8: MHA001 ")
    assert "Traceback" not in proc.stderr
