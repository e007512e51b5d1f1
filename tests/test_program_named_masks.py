"""MHA003 with a mask known only by its name, inverted by the block it is
handed to (replay-rec's BERT4Rec, a release review's seven false alarms).

``fixtures/program_calls/named_masks``: ``Block.forward`` gives
``key_padding_mask=~mask``; ``Bert4Rec.forward(x, pad_mask)`` hands it a
parameter named ``pad_mask`` that the code documents as 1 for real items.
The block's own ``~`` says its author keeps the other convention, so the
name alone is no evidence: silent.  A mask the code makes (``item_ids ==
pad_id``, True at padding) is judged at its call: MHA003."""

from __future__ import annotations

from fixture_expect import assert_package_runs, write_package

from flake8_mha.lint.engine import analyze_file

PKG = "fixtures/program_calls/named_masks"


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(PKG, [("model.py", 23, 16, "MHA003")])


def _run(tmp_path, given):
    block = (
        "import torch.nn as nn\n\n\nclass Block(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.attention = nn.MultiheadAttention(8, 2, batch_first=True)\n\n"
        "    def forward(self, x, mask):\n"
        "        return self.attention(x, x, x, key_padding_mask=mask, need_weights=False)[0]\n"
    )
    model = (
        "from .block import Block\n\nblock = Block()\n\n\n"
        f"def run(x, pad_mask, input_ids):\n    return block(x, {given})\n"
    )
    pkg = write_package(tmp_path / "pkg", {"block.py": block, "model.py": model})
    found = analyze_file(str(pkg / "model.py"), ["MHA003"])
    return [(f.code, f.line, f.col) for f in found]


def test_the_caller_s_own_inversion_of_a_name(tmp_path):
    """A ``~`` of the caller's own code on a mask known by its name says, as
    the block's does, that its author keeps the other convention; a mask the
    code makes is judged: ``input_ids != 0`` is True at real tokens."""
    assert _run(tmp_path / "a", "input_ids != 0") == [("MHA003", 7, 12)]
    assert _run(tmp_path / "b", "pad_mask") == []
    assert _run(tmp_path / "c", "~pad_mask") == []
