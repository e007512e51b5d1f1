"""MHA007: an SDPA call that runs only where the probability is 0 drops
nothing (nanoGPT's ``self.flash = self.dropout == 0.0``; coqui's Bark fine
model).  Found when the guard tests something else."""

from __future__ import annotations

import pytest

from flake8_mha.lint.engine import analyze_source

HEAD = """\
import torch.nn as nn
import torch.nn.functional as F


class A(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.dropout = dropout
        self.flash = FLAG

    def forward(self, q, k, v):
        if TEST:
            return F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout)
        return q
"""


def _found(flag="self.dropout == 0.0", test="self.flash"):
    src = HEAD.replace("FLAG", flag).replace("TEST", test)
    return [(f.code, f.line, f.col) for f in analyze_source(src, "a.py", ["MHA007"])]


@pytest.mark.parametrize(
    "flag, test",
    [
        ("self.dropout == 0.0", "self.flash"),
        ("0 == self.dropout", "self.flash"),
        ("self.dropout != 0", "not self.flash"),
        ("self.dropout > 0", "not self.flash"),
        ("True", "self.dropout == 0"),
        ("True", "not self.dropout > 0.0"),
        # suno bark: the flag is an `and` holding the test
        ("hasattr(F, 'scaled_dot_product_attention') and self.dropout == 0.0", "self.flash"),
        ("self.dropout == 0.0 and hasattr(F, 'x') and True", "self.flash"),
    ],
)
def test_a_guard_that_makes_the_rate_zero(flag, test):
    assert _found(flag, test) == []


@pytest.mark.parametrize(
    "flag, test",
    [
        ("self.dropout > 0", "self.flash"),  # the call runs exactly when it drops
        ("self.dropout == 0.1", "self.flash"),
        ("hasattr(F, 'scaled_dot_product_attention')", "self.flash"),
        ("self.dropout == 0.0", "not self.flash"),
        ("True", "self.dropout < 0.5"),
        # an `and` says nothing when it is false, an `or` nothing when true
        ("hasattr(F, 'scaled_dot_product_attention') and self.dropout == 0.0", "not self.flash"),
        ("hasattr(F, 'scaled_dot_product_attention') or self.dropout == 0.0", "self.flash"),
    ],
)
def test_a_guard_on_something_else_is_reported(flag, test):
    assert _found(flag, test) == [("MHA007", 13, 20)]


def test_a_flag_set_twice_is_not_read():
    src = HEAD.replace("FLAG", "self.dropout == 0.0\n        self.flash = True").replace(
        "TEST", "self.flash"
    )
    assert [(f.line, f.col) for f in analyze_source(src, "a.py", ["MHA007"])] == [(14, 20)]
