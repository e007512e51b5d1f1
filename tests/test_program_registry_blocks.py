"""Probe U's U07 (a protein language model): blocks built from a dict of
the file's classes (``nn.ModuleList([BLOCKS[kind](64, 4) for kind in
layout])``) and run in a loop are calls of those classes, for the masks
the loop hands them: MHA002 at the loop's call, naming the mask the model
makes (it was reported inside each block, from its parameter's name).

``fixtures/program_calls/registry_blocks``: per file, over the package and
through ``check``; the model that hands a keep-mask is silent."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs, package_texts

from flake8_mha.lint.engine import analyze_file

PKG = pathlib.Path("fixtures/program_calls/registry_blocks")


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(str(PKG), [("model.py", 43, 17, "MHA002")])


def test_the_finding_names_the_mask_the_model_makes():
    (got,) = analyze_file(str(PKG / "model.py"), ["MHA002"])
    assert got.message.startswith("mask from line 40 (tokens.eq(self.pad_idx)) means True = ignore")
    assert f"at {PKG / 'attention.py'}:17 through " in got.message


def test_a_registry_that_holds_something_else_is_not_followed(tmp_path):
    """A dict with a value that is no class of the file (a factory) leaves
    the items unknown: each block judges its parameter by its name, as before."""
    texts = package_texts(PKG)
    texts["model.py"] = texts["model.py"].replace(
        'BLOCKS = {"light": LightBlock, "gated": GatedBlock}',
        'BLOCKS = {"light": LightBlock, "gated": lambda d, h: GatedBlock(d, h)}',
    )
    for name, text in texts.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    got = analyze_file(str(tmp_path / "model.py"), ["MHA002"])
    assert [(f.line, f.col) for f in got] == [(15, 20), (25, 13)]
    assert all("(parameter padding_mask)" in f.message for f in got)


def test_a_subclass_that_runs_its_own_forward_with_its_bases_attention(tmp_path):
    """``class GatedBlock(LightBlock)`` overrides ``forward`` and calls the
    ``self.attn`` its base builds: its summary holds the base's attributes,
    so the loop's call is judged through it too (one finding, at the call)."""
    texts = package_texts(PKG)
    old = (
        "class GatedBlock(nn.Module):\n"
        "    def __init__(self, d_model=64, n_heads=4):\n"
        "        super().__init__()\n"
        "        self.norm = nn.LayerNorm(d_model)\n"
        "        self.attn = ResidueSelfAttention(d_model, n_heads)\n\n"
    )
    assert old in texts["model.py"]
    texts["model.py"] = texts["model.py"].replace(old, "class GatedBlock(LightBlock):\n")
    for name, text in texts.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    got = analyze_file(str(tmp_path / "model.py"), ["MHA002"])
    assert [(f.line, f.col) for f in got] == [(38, 17)]
    assert got[0].message.startswith("mask from line 35 (tokens.eq(self.pad_idx))")
