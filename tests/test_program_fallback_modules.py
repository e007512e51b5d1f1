"""Issue 26, item 3: a layer that builds its own module when its constructor
is handed none (lucidrains' ``self.attend = default(attend, Attend())``,
``attend or Attend()``, ``attend if attend is not None else Attend()``)
holds that module wherever the project's constructions leave the parameter
out.

``fixtures/program_calls/fallback_modules``: the model builds its layers
without a kernel and feeds one a padding mask; SDPA two calls away reads
True as attend: MHA002 at the model's call, per file, over the package and
through ``check``, although the model's file names nothing the kernel is
made of (the gate keeps it).  A construction that hands its own module
settles nothing; the same program in one file reports the same."""

from __future__ import annotations

import pathlib

import pytest

from fixture_expect import assert_package_runs, package_texts, write_package

from flake8_mha.lint.engine import analyze_file, analyze_source

PKG = pathlib.Path("fixtures/program_calls/fallback_modules")


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(str(PKG), [("model.py", 18, 17, "MHA002")])


def test_the_finding_names_the_chain():
    got = analyze_file(str(PKG / "model.py"), ["MHA002"])
    assert [(f.line, f.col, f.code) for f in got] == [(18, 17, "MHA002")]
    assert "through Attention.forward() -> Attend.forward()" in got[0].message


def test_a_construction_handing_its_own_module_leaves_the_others_their_default(tmp_path):
    # each instance runs what its own construction gives it (the forty-third
    # stop): the layer built without a kernel still runs ``Attend()``
    texts = package_texts(PKG)
    model = texts["model.py"]
    texts["model.py"] = model.replace(
        "        self.cross_attn = CrossAttention(dim)\n",
        "        self.cross_attn = CrossAttention(dim)\n"
        "        self.other = Attention(dim, attend=nn.Identity())\n",
    )
    assert texts["model.py"] != model
    pkg = write_package(tmp_path / "pkg", texts)
    got = analyze_file(str(pkg / "model.py"), ["MHA002"])
    assert [(f.line, f.col, f.code) for f in got] == [(19, 17, "MHA002")]


def test_the_instance_called_built_with_its_own_module_settles_nothing(tmp_path):
    texts = package_texts(PKG)
    model = texts["model.py"]
    texts["model.py"] = model.replace(
        "        self.self_attn = Attention(dim)\n",
        "        self.self_attn = Attention(dim, attend=nn.Identity())\n",
    )
    assert texts["model.py"] != model
    pkg = write_package(tmp_path / "pkg", texts)
    assert analyze_file(str(pkg / "model.py"), ["MHA002"]) == []


@pytest.mark.parametrize(
    "spelling",
    [
        "attend or Attend()",
        "attend if attend is not None else Attend()",
        "Attend() if attend is None else attend",
    ],
)
def test_the_other_spellings(tmp_path, spelling):
    texts = package_texts(PKG)
    layer = texts["attention.py"]
    texts["attention.py"] = layer.replace("default(attend, Attend())", spelling, 1)
    assert texts["attention.py"] != layer
    pkg = write_package(tmp_path / "pkg", texts)
    got = analyze_file(str(pkg / "model.py"), ["MHA002"])
    assert [(f.line, f.col, f.code) for f in got] == [(18, 17, "MHA002")]


def test_a_parameter_with_another_default_is_not_a_fallback(tmp_path):
    texts = package_texts(PKG)
    layer = texts["attention.py"]
    texts["attention.py"] = layer.replace(
        "def __init__(self, dim, heads=4, attend=None):", "def __init__(self, dim, heads=4, attend=0):", 1
    )
    assert texts["attention.py"] != layer
    pkg = write_package(tmp_path / "pkg", texts)
    assert analyze_file(str(pkg / "model.py"), ["MHA002"]) == []


def test_the_same_program_in_one_file(tmp_path):
    texts = package_texts(PKG)
    one = "\n\n".join(
        [texts["helpers.py"], texts["attend.py"], texts["attention.py"], texts["model.py"]]
    )
    for line in (
        "from .attend import Attend\n",
        "from .helpers import default\n",
        "from .attention import Attention, CrossAttention\n",
    ):
        one = one.replace(line, "")
    path = tmp_path / "one.py"
    path.write_text(one, encoding="utf-8")
    got = analyze_source(one, str(path), ["MHA002"])
    line = one.splitlines().index("        x = x + self.self_attn(x, mask=pad)  # MHA002:17") + 1
    assert [(f.line, f.col, f.code) for f in got] == [(line, 17, "MHA002")]
