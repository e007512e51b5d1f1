"""Issue 26, item 3: facts from the constructions into a module.  A class
that keeps a constructor parameter on ``self`` and hands it to a sink in a
method (CLIP's ``self.attn_mask = attn_mask``, then
``self.attn(x, x, x, attn_mask=self.attn_mask)``) has a summary of its own:
its construction is a call of it (``program/constructors.py``), in the
linted file or another, also when another class's ``__init__`` hands its
own parameter on (``Transformer(width, layers, heads, attn_mask=...)``).

``fixtures/program_calls/constructor_masks``: a bool ``tril`` keep-mask
built into the blocks, which turn it into the data's dtype: MHA003 and
MHA004 at the construction, per file, over the package and through
``check``; CLIP's additive mask beside it is silent.  Probe P's B18."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs, package_texts, write_package

from flake8_mha.lint.engine import analyze_file, analyze_source

PKG = pathlib.Path("fixtures/program_calls/constructor_masks")


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(
        str(PKG), [("text.py", 29, 28, "MHA003"), ("text.py", 29, 28, "MHA004")], select="MHA0"
    )


def test_the_findings_name_the_chain():
    got = analyze_file(str(PKG / "text.py"), ["MHA003", "MHA004"])
    assert [(f.line, f.col, f.code) for f in got] == [(29, 28, "MHA003"), (29, 28, "MHA004")]
    assert "through Transformer() -> ResidualAttentionBlock()" in got[0].message


def test_a_mask_the_block_does_not_convert(tmp_path):
    """Without the block's ``.to(dtype=x.dtype)`` the bool keep-mask is
    MHA003 alone."""
    texts = package_texts(PKG)
    old = (
        "        self.attn_mask = (\n"
        "            self.attn_mask.to(dtype=x.dtype, device=x.device) if self.attn_mask is not None else None\n"
        "        )\n"
    )
    assert old in texts["transformer.py"]
    texts["transformer.py"] = texts["transformer.py"].replace(old, "")
    pkg = write_package(tmp_path / "pkg", texts)
    got = analyze_file(str(pkg / "text.py"), ["MHA003", "MHA004"])
    assert [(f.line, f.col, f.code) for f in got] == [(29, 28, "MHA003")]


def test_an_attribute_set_again_elsewhere_is_not_the_constructions(tmp_path):
    texts = package_texts(PKG)
    texts["transformer.py"] = texts["transformer.py"].replace(
        "    def forward(self, x: torch.Tensor):\n        x = x + self.attention",
        "    def set_mask(self, m):\n        self.attn_mask = m\n\n"
        "    def forward(self, x: torch.Tensor):\n        x = x + self.attention",
    )
    pkg = write_package(tmp_path / "pkg", texts)
    assert analyze_file(str(pkg / "text.py"), ["MHA003", "MHA004"]) == []


def test_the_same_program_in_one_file(tmp_path):
    texts = package_texts(PKG)
    one = "\n\n".join([texts["masks.py"], texts["transformer.py"], texts["text.py"]])
    one = one.replace("from .masks import build_attention_mask, build_keep_mask\n", "")
    one = one.replace("from .transformer import Transformer\n", "")
    path = tmp_path / "one.py"
    path.write_text(one, encoding="utf-8")
    got = analyze_source(one, str(path), ["MHA003", "MHA004"])
    line = next(i for i, t in enumerate(one.splitlines(), 1) if "# MHA003:28 MHA004:28" in t)
    assert [(f.line, f.col, f.code) for f in got] == [(line, 28, "MHA003"), (line, 28, "MHA004")]


def test_a_mask_registered_as_a_buffer(tmp_path):
    """Probe Q's Gato prompt block: ``self.register_buffer("attn_mask",
    attn_mask)`` keeps the mask it is built with as the attribute does."""
    texts = package_texts(PKG)
    texts["transformer.py"] = texts["transformer.py"].replace(
        "        self.attn_mask = attn_mask\n",
        '        self.register_buffer("attn_mask", attn_mask, persistent=False)\n',
    )
    pkg = write_package(tmp_path / "pkg", texts)
    got = analyze_file(str(pkg / "text.py"), ["MHA003", "MHA004"])
    assert [(f.line, f.col, f.code) for f in got] == [(29, 28, "MHA003"), (29, 28, "MHA004")]
