"""Modules that only swap axes (synthcity's and tsai's ``Permute(1, 0, 2)``)
in an ``nn.Sequential`` before a default-built layer: the swap of data whose
layout the code never states is the conversion to the layout the layer
reads, as ``x.permute(1, 0, 2)`` fed to a module call is (issue 26,
"layout through the program").  Release review 17 found MHA001 on
synthcity's encoder with leak 0.0 (docs/corpus_review.md).

``fixtures/program_layout/swap_modules``: the layer behind the swap gets no
MHA001 (its opt-in MHA903 says it is right), the one fed batch-first data
straight does; per file, over the package and through ``check``."""
from __future__ import annotations

import pytest

from fixture_expect import ROOT, assert_package_runs, package_texts, write_package
from flake8_mha.lint.engine import analyze_file

PACKAGE = "fixtures/program_layout/swap_modules"
WANT = [
    ("models.py", 17, 13, "MHA903"),
    ("models.py", 33, 13, "MHA001"),
    ("local.py", 23, 13, "MHA903"),
]


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(PACKAGE, WANT, select="MHA001,MHA903")


def test_by_default_only_the_unconverted_layer_is_reported():
    assert analyze_file(str(ROOT / PACKAGE / "local.py")) == []
    got = analyze_file(str(ROOT / PACKAGE / "models.py"))
    assert [(f.line, f.col, f.code) for f in got] == [(33, 13, "MHA001")]


@pytest.mark.parametrize("dims", ["0, 2, 1", "2, 0, 1", "1, 0"])
def test_other_dims_are_no_conversion(tmp_path, dims):
    texts = package_texts(PACKAGE)
    texts["models.py"] = texts["models.py"].replace("Permute(1, 0, 2),", f"Permute({dims}),")
    pkg = write_package(tmp_path / "pkg", texts)
    got = analyze_file(str(pkg / "models.py"), ["MHA001"])
    assert [(f.line, f.col, f.code) for f in got] == [(17, 13, "MHA001"), (33, 13, "MHA001")]


def test_a_permute_that_does_more_is_no_swap(tmp_path):
    texts = package_texts(PACKAGE)
    texts["layers.py"] = texts["layers.py"].replace(
        "return x.permute(self.dims)", "return x.permute(self.dims) * 2"
    )
    pkg = write_package(tmp_path / "pkg", texts)
    got = analyze_file(str(pkg / "models.py"), ["MHA001"])
    assert [(f.line, f.col, f.code) for f in got] == [(17, 13, "MHA001"), (33, 13, "MHA001")]
