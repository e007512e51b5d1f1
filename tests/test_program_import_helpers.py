"""Names bound by an import helper are the modules they name: sktime asks
for torch by ``nn = _safe_import("torch.nn")`` in every file (86 files of
its release were invisible), and ``importlib.import_module("torch.nn.
functional")`` is the standard spelling of the same.

``fixtures/program_calls/import_helpers``: a layer of ``nn.MultiheadAttention``
left sequence-first and fed batch-first data (MHA001), a helper that hands
its mask to SDPA called with an ignore-mask from another file (MHA002);
per file, over the package and through ``check``."""

from __future__ import annotations

import pytest

from fixture_expect import assert_package_runs

from flake8_mha.lint.engine import analyze_source

PKG = "fixtures/program_calls/import_helpers"


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(
        PKG, [("layers.py", 19, 21, "MHA001"), ("model.py", 18, 16, "MHA002")],
        select="MHA0,MHA1")


BLOCK = """\
HEAD
nn = BIND


class Block(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, 3)
"""


@pytest.mark.parametrize("head, bind", [
    ("from sktime.utils.dependencies import _safe_import", '_safe_import("torch.nn")'),
    ("import importlib", 'importlib.import_module("torch.nn")'),
    ("from importlib import import_module", 'import_module("torch.nn")'),
])
def test_an_import_helper_binds_the_module(head, bind):
    src = BLOCK.replace("HEAD", head).replace("BIND", bind)
    got = analyze_source(src, "block.py", ["MHA101"])
    assert [(f.code, f.line, f.col) for f in got] == [("MHA101", 8, 21)]


@pytest.mark.parametrize("head, bind", [
    ("from pkg import load", 'load("torch.nn")'),  # not an import helper's name
    ("import importlib", 'importlib.import_module(NAME)'),  # not a literal
    ("import importlib", 'importlib.import_module("torch.nn" + x)'),
    ("import importlib", 'importlib.import_module("not a module")'),
])
def test_anything_else_binds_nothing(head, bind):
    src = BLOCK.replace("HEAD", head).replace("BIND", bind)
    assert analyze_source(src, "block.py", ["MHA101"]) == []
