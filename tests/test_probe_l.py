"""Probe L (twenty-second stop): what a call may run when an attribute is
built one way on one branch of ``__init__`` and another way on the other
(``self.attend = partial(F.scaled_dot_product_attention, ...)`` under
``if causal:``/``else:``).  Each is judged at the call, a correct one does
not hide a wrong one, and a code two of them give is reported once."""

from __future__ import annotations

import textwrap

from flake8_mha.lint.engine import analyze_source

BRANCHES = """\
from functools import partial

import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, causal=False):
        super().__init__()
        if causal:
            self.attend = partial(F.scaled_dot_product_attention, is_causal=True)
        else:
            self.attend = partial(F.scaled_dot_product_attention, dropout_p=0.1)

    def forward(self, q, k, v):
        return self.attend(q, k, v)
"""


def _found(src, codes=("MHA006", "MHA007")):
    return [(f.code, f.line, f.col) for f in analyze_source(textwrap.dedent(src), "m.py", codes)]


def test_the_wrong_branch_is_judged_beside_the_right_one():
    assert _found(BRANCHES) == [("MHA007", 16, 16)]
    gated = BRANCHES.replace("dropout_p=0.1)", "dropout_p=0.0)")
    assert _found(gated) == []


def test_a_code_both_branches_give_is_reported_once():
    both = BRANCHES.replace("is_causal=True)", "is_causal=True, dropout_p=0.1)")
    assert _found(both) == [("MHA007", 16, 16)]
