"""Issue 26, item 1: a module built through a local bound once to its class
(latent diffusion's ``attn_cls = CrossAttention; self.attn2 =
attn_cls(...)``, probe F) is that class's module.

``fixtures/program_calls/class_aliases``: the text-conditioned model hands an
(N, S) mask to a block whose attention is built through such a local: MHA009
at the call, per file, over the package and through ``check``; the mask
shaped (N, 1, 1, S) is silent.  A local bound twice is not read."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs, write_package

from flake8_mha.lint.engine import analyze_file

PKG = "fixtures/program_calls/class_aliases"


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(PKG, [("unet.py", 16, 16, "MHA009")])


def test_a_local_bound_twice_is_not_a_class(tmp_path):
    attention = (pathlib.Path(PKG) / "attention.py").read_text(encoding="utf-8")
    twice = attention.replace(
        "        attn_cls = SDPACrossAttention\n",
        "        attn_cls = SDPACrossAttention\n        attn_cls = nn.Identity\n",
    )
    assert twice != attention
    unet = (pathlib.Path(PKG) / "unet.py").read_text(encoding="utf-8")
    pkg = write_package(tmp_path / "pkg", {"attention.py": twice, "unet.py": unet})
    assert analyze_file(str(pkg / "unet.py"), ["MHA009"]) == []
