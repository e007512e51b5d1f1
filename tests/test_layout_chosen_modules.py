"""MHA001: a module stored on an attribute that may hold something else
(``MHA(...) if flag else None``, ``if``/``elif`` branches of other kinds) is
fed what the calls of that attribute pass where they run it
(``fixtures/MHA001_chosen_modules.py``; release review 8: darts-style
optional cross-attention and mixers chosen by name, false MHA001)."""

from __future__ import annotations

import pathlib

import pytest
from fixture_expect import assert_package_runs

from flake8_mha.lint.engine import analyze_source

FIXTURE = pathlib.Path("fixtures/MHA001_chosen_modules.py")


def _found(src):
    return [(f.code, f.line, f.col) for f in analyze_source(src, "m.py", ["MHA001"])]


def test_the_fixture():
    assert _found(FIXTURE.read_text(encoding="utf-8")) == [
        ("MHA001", 52, 22), ("MHA001", 67, 26)]


SRC = """\
from torch import nn


class Block(nn.Module):
    def __init__(self, d, h, flag):
        super().__init__()
        self.attn = BUILD

    def forward(self, x):
        # x: (B, N, C)
        x = x.permute(1, 0, 2)
        return CALL
"""


@pytest.mark.parametrize("build", [
    "nn.MultiheadAttention(d, h) if flag else None",
    "None if flag else nn.MultiheadAttention(d, h)",
    "nn.MultiheadAttention(d, h) if flag else (nn.Identity() if h else None)",
])
def test_a_swap_before_the_call_of_a_chosen_module_is_the_conversion(build):
    src = SRC.replace("BUILD", build).replace("CALL", "self.attn(x, x, x)[0]")
    assert _found(src) == []


def test_batch_first_data_fed_to_a_chosen_module_is_reported():
    src = SRC.replace("BUILD", "nn.MultiheadAttention(d, h) if flag else None").replace(
        "        x = x.permute(1, 0, 2)\n", "").replace("CALL", "self.attn(x, x, x)[0]")
    assert _found(src) == [("MHA001", 7, 21)]


def test_a_call_that_cannot_run_attention_is_not_its_call():
    # ``self.attn(x)`` runs the other kind: the module is never called, unknown layout
    src = SRC.replace("BUILD", "nn.MultiheadAttention(d, h) if flag else nn.Identity()").replace(
        "        x = x.permute(1, 0, 2)\n", "").replace("CALL", "self.attn(x)")
    assert _found(src) == [("MHA001", 7, 21)]
    assert "fed batch-first" not in analyze_source(src, "m.py", ["MHA001"])[0].message


def test_clip_with_a_switchable_attention_over_the_package():
    # cn-clip: the visual tower's swap reaches the block through a Transformer
    # in another file, though the block's attention may be a fused module
    assert_package_runs("fixtures/program_layout/clip_flash", [("block.py", 30, 21, "MHA001")],
                        select="MHA0,MHA1")


OPTIONAL = """\
import torch.nn as nn


class CrossBlock(nn.Module):
    def __init__(self, d_model, nhead, use_cross=True):
        super().__init__()
        self.cross = BUILD

    def forward(self, x, memory):
        if self.cross is not None:
            x = x + self.cross(x, memory, memory)[0]
        return x
"""


@pytest.mark.parametrize("build", [
    "nn.MultiheadAttention(d_model, nhead, batch_first=True) if use_cross else None",
    "None if not use_cross else nn.MultiheadAttention(d_model, nhead, batch_first=True)",
])
def test_a_module_or_none_is_that_module_where_it_is_called(build):
    # probe H: ``self.cross = nn.MultiheadAttention(...) if flag else None``
    src = OPTIONAL.replace("BUILD", build)
    got = analyze_source(src, "m.py", ["MHA102"])
    assert [(f.code, f.line, f.col) for f in got] == [("MHA102", 11, 21)]


def test_a_module_or_another_kind_stays_unknown_to_the_call_rules():
    src = OPTIONAL.replace(
        "BUILD", "nn.MultiheadAttention(d_model, nhead, batch_first=True) if use_cross else Other()")
    assert analyze_source(src, "m.py", ["MHA102"]) == []


def test_an_optional_module_in_another_file_over_the_package():
    assert_package_runs("fixtures/program_calls/optional_modules",
                        [("model.py", 15, 16, "MHA003")])
