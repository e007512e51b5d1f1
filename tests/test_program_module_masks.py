"""Probe V's B22 and B27 (ALBEF, DiT): a mask returned by the ``forward`` of
a module of another file, alone (``keep = self.token_keep(ids)``) or beside
the states (``text, keep = self.text(ids)``), is that mask at the caller, as
another file's function's is: MHA003 where the keep-mask reaches a
``key_padding_mask`` through a fusion layer of a third file.

``fixtures/program_calls/module_masks``: per file, over the package and
through ``check``; the model that inverts it is silent."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs

from flake8_mha.lint.engine import analyze_file

PKG = pathlib.Path("fixtures/program_calls/module_masks")


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(str(PKG), [("model.py", 18, 16, "MHA003"), ("model.py", 22, 16, "MHA003")])


def test_the_findings_name_the_module_and_its_line():
    got = analyze_file(str(PKG / "model.py"), ["MHA003"])
    assert [f.message.split(" means ")[0] for f in got] == [
        f"mask from line 17 (self.text() -> {PKG / 'text.py'}:20: input_ids != 0)",
        f"mask from line 21 (self.token_keep() -> {PKG / 'text.py'}:10: input_ids != 0)",
    ]


def test_a_modules_returned_pair_made_from_the_callers_mask(tmp_path):
    """Probe V's B27 (a DiT's prompt encoder): ``text, keep =
    self.prompt(input_ids, attention_mask)`` where the prompt module returns
    ``attention_mask.bool()`` beside its states: the element is the caller's
    tokenizer mask (1 = token) made bool, a keep-mask at the
    ``key_padding_mask`` it is handed to."""
    pkg = tmp_path / "dit"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "text.py").write_text(
        "import torch.nn as nn\n\n\n"
        "class PromptEncoder(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.emb = nn.Embedding(100, 16)\n\n"
        "    def forward(self, input_ids, attention_mask):\n"
        "        keep = attention_mask.bool()\n"
        "        return self.emb(input_ids), keep\n"
    )
    (pkg / "model.py").write_text(
        "import torch.nn as nn\n\n"
        "from .text import PromptEncoder\n\n\n"
        "class Model(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.prompt = PromptEncoder()\n"
        "        self.cross = nn.MultiheadAttention(16, 4, batch_first=True)\n\n"
        "    def forward(self, x, input_ids, attention_mask):\n"
        "        text, text_keep = self.prompt(input_ids, attention_mask)\n"
        "        return self.cross(x, text, text, key_padding_mask=text_keep, need_weights=False)[0]\n"
    )
    got = analyze_file(str(pkg / "model.py"), ["MHA003"])
    assert [(f.line, f.col, f.code) for f in got] == [(14, 16, "MHA003")]
    assert "means True = keep; MultiheadAttention's key_padding_mask" in got[0].message
