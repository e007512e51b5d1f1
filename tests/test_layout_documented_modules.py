"""Layout stated where a module documents its input (``fixtures/program_layout/
documented_modules/``, sstr): a ``forward``'s docstring entry holds when the
caller's data is of unknown layout, a class docstring documents its
``forward``, ``x[..., :-2]`` keeps every axis, and another file's calls of a
held module's ``encode``/``decode`` feed those methods."""

from __future__ import annotations

import shutil

from fixture_expect import ROOT, assert_package_runs
from flake8_mha.lint.engine import analyze_source

PACKAGE = "fixtures/program_layout/documented_modules"


def test_every_path_is_sequence_first_and_only_the_opt_in_note_is_given():
    assert_package_runs(PACKAGE, [("blocks.py", 49, 24, "MHA903")], select="MHA")


def _blocks(tmp_path, old: str, new: str):
    pkg = tmp_path / "documented_modules"
    shutil.copytree(ROOT / PACKAGE, pkg)
    blocks = pkg / "blocks.py"
    blocks.write_text(blocks.read_text().replace(old, new))
    return [
        (f.code, f.line, f.col, f.message)
        for f in analyze_source(blocks.read_text(), str(blocks), ["MHA001", "MHA903"])
    ]


def test_a_class_docstring_that_says_batch_first_is_read_as_such(tmp_path):
    got = _blocks(
        tmp_path, "peaks: (seq_len, batch_size, d_input)", "peaks: (batch_size, seq_len, d_input)"
    )
    assert [g[:3] for g in got] == [("MHA001", 49, 24)]
    assert "peaks: (batch_size, seq_len, d_input)" in got[0][3]


def test_without_the_class_docstring_the_encode_path_is_unknown(tmp_path):
    # (the line removed moves the construction up one line)
    got = _blocks(tmp_path, "    peaks: (seq_len, batch_size, d_input)\n", "")
    assert [g[:3] for g in got] == [("MHA001", 48, 24)]
    assert "is fed" not in got[0][3]  # the unknown layout's message: no data named
