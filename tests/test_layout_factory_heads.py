"""Issue 26, item 4: the layout a module needs, stated where a factory of
another file builds it (``build_head()`` returning ``nn.TransformerEncoder``
of a ``batch_first=True`` layer; ``build_seq_head()`` an explicit
``batch_first=False`` layer), is known at the calls of the module in the
caller's file (probe S's M, missed before): MHA010 at each call fed the
other layout, none at the calls beside them.

``fixtures/program_layout/factory_heads``: per file, over the package and
through ``check``."""

from __future__ import annotations

import ast
import pathlib

from fixture_expect import assert_package_runs, package_texts

from flake8_mha.analysis.program.factories import returned_batch_first
from flake8_mha.lint.engine import analyze_file

PKG = pathlib.Path("fixtures/program_layout/factory_heads")


def test_per_file_over_the_package_and_through_check():
    # MHA902 (opt-in) names the explicit batch_first=False of the factory
    want = [("vit.py", 17, 16, "MHA010"), ("vit.py", 25, 16, "MHA010")]
    assert_package_runs(str(PKG), [*want, ("heads.py", 12, 12, "MHA902")])
    assert_package_runs(str(PKG), want, select="MHA0")


def test_the_findings_name_the_layout_fed():
    got = analyze_file(str(PKG / "vit.py"), ["MHA010"])
    assert [(f.line, f.col) for f in got] == [(17, 16), (25, 16)]
    assert got[0].message.startswith("TransformerEncoder (its layers) built with batch_first=True")
    assert got[1].message.startswith("TransformerEncoderLayer built with batch_first=False")


def test_the_factory_s_flag_is_read_from_its_return():
    tree = ast.parse(package_texts(PKG)["heads.py"])
    funcs = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    assert returned_batch_first(funcs["build_head"]) is True
    assert returned_batch_first(funcs["build_seq_head"]) is False
    bare = ast.parse("def f(d, h):\n    return nn.TransformerEncoderLayer(d, h)\n").body[0]
    assert returned_batch_first(bare) is None  # torch's default: MHA001's, not stated
