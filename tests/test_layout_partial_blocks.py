"""Issue 26, items 1 and 4: a block built by a constructor default that
binds a class with ``functools.partial`` (DINOv2's ``block_fn=partial(Block,
attn_drop=...)``) runs that class's ``forward``, so the layout flows
through the blocks (probe S's M, missed in the package before).

``fixtures/program_layout/partial_blocks``: MHA010 where the tokens are
fed to a ``batch_first=True`` head transposed, per file, over the package
and through ``check``; the same program in one file too."""

from __future__ import annotations

import pathlib
import re

from fixture_expect import assert_package_runs, package_texts

from flake8_mha.lint.engine import analyze_file, analyze_source

PKG = pathlib.Path("fixtures/program_layout/partial_blocks")


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(str(PKG), [("vit.py", 30, 16, "MHA010")])


def test_the_finding_names_the_swap():
    (got,) = analyze_file(str(PKG / "vit.py"), ["MHA010"])
    assert (got.line, got.col) == (30, 16)
    assert got.message.startswith(
        "TransformerEncoder (its layers) built with batch_first=True is fed sequence-first data"
    )
    assert "`patch_tokens.transpose(0, 1)`" in got.message


def _one_file() -> str:
    texts = package_texts(PKG)
    one = "\n\n".join([texts["blocks.py"], texts["heads.py"], texts["vit.py"]])
    return re.sub(r"^from \.\w+ import .*\n", "", one, flags=re.M)


def test_the_same_program_in_one_file(tmp_path):
    one = _one_file()
    path = tmp_path / "one.py"
    path.write_text(one, encoding="utf-8")
    want = (
        "        return self.dense_head(patch_tokens.transpose(0, 1)).transpose(0, 1)  # MHA010:16"
    )
    line = one.splitlines().index(want) + 1
    got = analyze_source(one, str(path), ["MHA010"])
    assert [(f.line, f.col, f.code) for f in got] == [(line, 16, "MHA010")]


def test_a_partial_handed_another_class_is_not_read_as_its_default(tmp_path):
    """A construction in the file that hands ``block_fn`` makes the default
    not the one class: the blocks' layout is unknown, nothing is said."""
    one = _one_file() + (
        "\n\nclass Other(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x.transpose(0, 1)\n\n\n"
        "def build():\n"
        "    return VisionTransformer(block_fn=lambda d, h: Other())\n"
    )
    path = tmp_path / "one.py"
    path.write_text(one, encoding="utf-8")
    assert analyze_source(one, str(path), ["MHA010"]) == []
