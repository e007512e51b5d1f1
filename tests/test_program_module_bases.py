"""A class that is an ``nn.Module`` through a base of another project file
(``fixtures/program_calls/module_bases/``): MHA007 reads its ``self.training``
as a module's, over the package, one file at a time and through ``check``."""

from __future__ import annotations

import ast

from fixture_expect import assert_package_runs, write_package
from flake8_mha.analysis.program import module_bases
from flake8_mha.lint.engine import analyze_source

PACKAGE = "fixtures/program_calls/module_bases"


def test_over_the_package_one_file_at_a_time_and_through_check():
    assert_package_runs(PACKAGE, [("attention.py", 11, 15, "MHA007")], select="MHA")


def test_the_table_names_each_base_that_may_make_a_module():
    tree = ast.parse(
        "import abc\nimport torch.nn as nn\nfrom torch import nn as tnn\n"
        "from .api import Base\nfrom other import Mixin\n"
        "class A(abc.ABC, nn.Module): pass\n"
        "class B(A): pass\n"
        "class C(Base, Mixin): pass\n"
        "class D(tnn.TransformerEncoderLayer): pass\n"
        "class E(object): pass\n"
    )
    assert module_bases.table(tree) == {
        "A": [["torch"]],
        "B": [["local", "A"]],
        "C": [["import", 1, "api.Base"], ["import", 0, "other.Mixin"]],
        "D": [["torch"]],
    }


def _run(tmp_path, base: str, more=None):
    pkg = write_package(
        tmp_path / "pkg",
        {
            **(more or {}),
            "base.py": base,
            "attn.py": "import torch.nn.functional as F\n\nfrom .base import Base\n\n\n"
            "class Attn(Base):\n"
            "    def forward(self, q, k, v):\n"
            "        return F.scaled_dot_product_attention(q, k, v, dropout_p=self.p)\n",
        },
    )
    attn = pkg / "attn.py"
    return [
        (f.code, f.line, f.col) for f in analyze_source(attn.read_text(), str(attn), ["MHA007"])
    ]


def test_a_base_two_classes_and_two_files_up_is_followed(tmp_path):
    root = {"root.py": "import torch.nn as nn\n\n\nclass Root(nn.Module):\n    p = 0.1\n"}
    base = (
        "from .root import Root\n\n\nclass Mid(Root):\n    pass\n\n\nclass Base(Mid):\n    pass\n"
    )
    assert _run(tmp_path, base, root) == [("MHA007", 8, 16)]


def test_a_base_that_is_no_module_is_not_one(tmp_path):
    # a plain class: ``self.training`` means nothing there, dropout is the caller's
    assert _run(tmp_path, "class Base:\n    p = 0.1\n") == []
