"""A wrapper's local made from its mask parameter only when that is given
(ESM's ``attn_mask = None``, then ``if key_padding_mask is not None:
attn_mask = key_padding_mask[:, None, None, :]``) is that parameter through
its steps: probe Q's B1 (0.698 on ESM-2's output), missed before.

``fixtures/program_calls/set_if_given``: MHA002 at the caller that hands
the padding mask, per file, over the package and through ``check``."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs, write_package

from flake8_mha.lint.engine import analyze_file

PKG = pathlib.Path("fixtures/program_calls/set_if_given")


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(str(PKG), [("model.py", 15, 16, "MHA002")])


def test_a_second_store_elsewhere_is_not_read(tmp_path):
    texts = {p.name: p.read_text(encoding="utf-8") for p in PKG.glob("*.py")}
    texts["attention.py"] = texts["attention.py"].replace(
        "        out = F.scaled_dot_product_attention(",
        "        attn_mask = attn_mask if self.training else None\n"
        "        out = F.scaled_dot_product_attention(",
    )
    pkg = write_package(tmp_path / "pkg", texts)
    assert analyze_file(str(pkg / "model.py"), ["MHA002"]) == []
