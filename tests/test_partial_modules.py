"""Issue 26, item 1 (probe M): ``functools.partial`` of a held torch module
(``attend = partial(self.attn, key_padding_mask=keep)``, then ``attend(x, x,
x)``) is a call of that module with the partial's arguments first, then the
call's: its masks and flags are judged at the call, as written inline."""

from __future__ import annotations

import pytest

from flake8_mha.lint.engine import analyze_source

SRC = """\
import functools

import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, d=32, h=4):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, h, batch_first=True)

    def forward(self, x, ids):
        keep = ids != 0
        attend = functools.partial(self.attn, {partial})
        y, _ = attend(x, x, x)
        return y
"""


@pytest.mark.parametrize(
    "partial, want",
    [
        ("key_padding_mask=keep, need_weights=False", [(15, 16, "MHA003")]),
        ("key_padding_mask=~keep, need_weights=False", []),
        ("key_padding_mask=~keep", [(15, 16, "MHA102")]),
        (
            "key_padding_mask=keep.float(), need_weights=False",
            [(15, 16, "MHA003"), (15, 16, "MHA004")],
        ),
    ],
)
def test_a_partial_of_a_held_module_is_a_call_of_it(tmp_path, partial, want):
    got = analyze_source(
        SRC.format(partial=partial), str(tmp_path / "enc.py"), ["MHA003", "MHA004", "MHA102"]
    )
    assert sorted((f.line, f.col, f.code) for f in got) == want


def test_a_partial_rebound_or_made_elsewhere_is_not_read(tmp_path):
    src = SRC.format(partial="key_padding_mask=keep, need_weights=False").replace(
        "        y, _ = attend(x, x, x)\n",
        "        if ids.dim() > 2:\n            attend = self.attn\n        y, _ = attend(x, x, x)\n",
    )
    got = analyze_source(src, str(tmp_path / "enc.py"), ["MHA003"])
    assert got == []
