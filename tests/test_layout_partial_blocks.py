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


def test_blocks_of_another_class_run_in_a_loop_keep_the_layout_they_are_fed(tmp_path):
    """A construction in the file that hands ``block_fn`` makes the default
    not the one class, so what a block returns is unknown; a stack of
    blocks run in a loop (``x = blk(x)``) keeps the layout it is fed (a
    decision of the thirtieth stop, spanet's gated transformer): the
    transposed tokens are still reported at the head."""
    one = _one_file() + (
        "\n\nclass Other(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x.transpose(0, 1)\n\n\n"
        "def build():\n"
        "    return VisionTransformer(block_fn=lambda d, h: Other())\n"
    )
    path = tmp_path / "one.py"
    path.write_text(one, encoding="utf-8")
    want = (
        "        return self.dense_head(patch_tokens.transpose(0, 1)).transpose(0, 1)  # MHA010:16"
    )
    line = one.splitlines().index(want) + 1
    got = analyze_source(one, str(path), ["MHA010"])
    assert [(f.line, f.col, f.code) for f in got] == [(line, 16, "MHA010")]


def test_a_block_s_unknown_output_outside_a_loop_says_nothing(tmp_path):
    """The same default handed another class, its one block called once
    under a flag (not a loop): its output is unknown, nothing is said."""
    one = _one_file().replace(
        "        for blk in self.blocks:\n            x = blk(x)\n        patch_tokens",
        "        if self.blocks:\n            x = self.blocks[0](x)\n        patch_tokens",
        1,
    ) + (
        "\n\nclass Other(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x.transpose(0, 1)\n\n\n"
        "def build():\n"
        "    return VisionTransformer(block_fn=lambda d, h: Other())\n"
    )
    assert "x = self.blocks[0](x)" in one
    path = tmp_path / "one.py"
    path.write_text(one, encoding="utf-8")
    assert analyze_source(one, str(path), ["MHA010"]) == []
