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


# ``SeqMHA = partial(nn.MultiheadAttention, ...)``: a call of the alias builds
# the module, the partial's arguments first (probe N)
ALIAS = """\
from functools import partial

import torch.nn as nn

SeqMHA = partial(nn.MultiheadAttention, {partial})


class Mixer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = SeqMHA(129, 3)

    def forward(self, x):
        B, L, D = x.shape
        return self.attn(x, x, x, need_weights=False)[0]
"""


@pytest.mark.parametrize(
    "partial, want",
    [
        ("dropout=0.0", [(11, 21, "MHA001"), (11, 21, "MHA101")]),
        ("dropout=0.0, batch_first=True", [(11, 21, "MHA101")]),
        ("batch_first=True, bias=False", []),
    ],
)
def test_a_partial_of_a_torch_class_builds_it(tmp_path, partial, want):
    src = ALIAS.format(partial=partial)
    got = analyze_source(src, str(tmp_path / "mix.py"), ["MHA001", "MHA101"])
    assert sorted((f.line, f.col, f.code) for f in got) == want


def test_a_partial_of_another_file():
    from fixture_expect import assert_package_runs

    assert_package_runs(
        "fixtures/program_calls/partial_classes",
        [
            ("blocks.py", 11, 21, "MHA001"),
            ("blocks.py", 31, 22, "MHA008"),
            ("blocks.py", 31, 22, "MHA101"),
        ],
    )
