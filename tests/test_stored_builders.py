"""Mask builders a module stores on itself (``self.make = a if flag else b``)
and positions made with ``einops.rearrange`` (issue 14: return values of
builders).  The value is known only when every function the attribute may
hold gives the same answer; findings are checked as a user sees them: code,
line and column."""
from __future__ import annotations

import textwrap

import pytest

from flake8_mha.lint.engine import analyze_source

BUILDERS = """\
import torch
import torch.nn.functional as F
from einops import rearrange


def above(i, j, device=None):
    return torch.ones(i, j, dtype=torch.bool, device=device).triu(1)


def above_onnx(i, j, device=None):
    r = torch.arange(i, device=device)
    return rearrange(r, "i -> i 1") < rearrange(r, "j -> 1 j")


def below(i, j, device=None):
    return torch.ones(i, j, dtype=torch.bool, device=device).tril()


def unknown(i, j, device=None):
    return torch.load("mask.pt")


class Attend(torch.nn.Module):
    INIT

    def forward(self, q, k, v):
        mask = self.make(q.shape[-2], k.shape[-2])
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
"""
SDPA_LINE = 30


def found(source: str):
    out = analyze_source(textwrap.dedent(source), "t.py", None)
    return [(f.code, f.line, f.col) for f in out if f.code != "MHA000"]


@pytest.mark.parametrize("init, want", [
    # one builder, or two that agree (True = masked): an ignore-mask given to SDPA
    ("def __init__(self):\n        self.make = above", [("MHA002", SDPA_LINE, 16)]),
    ("def __init__(self, onnx):\n        self.make = above_onnx if onnx else above",
     [("MHA002", SDPA_LINE, 16)]),
    ("def __init__(self, a, b):\n        self.make = above if a else (above_onnx if b else above)",
     [("MHA002", SDPA_LINE, 16)]),
    # the keep-mask builder: what SDPA wants
    ("def __init__(self):\n        self.make = below", []),
    # builders that disagree, or one the analysis cannot read: not known
    ("def __init__(self, keep):\n        self.make = below if keep else above", []),
    ("def __init__(self, x):\n        self.make = unknown if x else above", []),
    # set once to a builder and elsewhere to something else: not known
    ("def __init__(self):\n        self.make = above\n\n    def reset(self, f):\n"
     "        self.make = f", []),
    # a lambda, a method of another object, a local function: not followed
    ("def __init__(self):\n        self.make = lambda i, j: above(i, j)", []),
    ("def __init__(self, other):\n        self.make = other.above", []),
    # a function in the class body binds self when called: not followed
    ("make = above", []),
])
def test_a_builder_stored_on_self(init, want):
    source = BUILDERS.replace("INIT", init)
    line = source.splitlines().index(
        "        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)") + 1
    assert [(c, line if ln == SDPA_LINE else ln, col) for c, ln, col in want] == found(source)


POSITIONS = """\
import torch
import torch.nn.functional as F
from einops import rearrange


def attend(q, k, v, lengths):
    n = k.shape[-2]
    pad = MASK
    return F.scaled_dot_product_attention(q, k, v, attn_mask=pad[:, None, None, :])
"""


@pytest.mark.parametrize("mask, want", [
    # positions at or past the length: True = padding, an ignore-mask
    ('rearrange(torch.arange(n), "s -> 1 s") >= rearrange(lengths, "b -> b 1")',
     [("MHA002", 9, 12)]),
    ('rearrange(lengths, "b -> b 1") <= rearrange(torch.arange(n), "s -> 1 s")',
     [("MHA002", 9, 12)]),
    # positions before the length: a keep-mask, what SDPA wants
    ('rearrange(torch.arange(n), "s -> 1 s") < rearrange(lengths, "b -> b 1")', []),
    # patterns that are not a new axis of size one: not read
    ('rearrange(torch.arange(n), "(a b) -> a b", a=2) >= rearrange(lengths, "b -> b 1")', []),
    ('rearrange(torch.arange(n), "s -> s s") >= rearrange(lengths, "b -> b 1")', []),
    ('rearrange(torch.arange(n), "s -> 1 (s)") >= rearrange(lengths, "b -> b 1")', []),
    ('rearrange(torch.arange(n), PATTERN) >= rearrange(lengths, "b -> b 1")', []),
    ('rearrange(torch.arange(n), "s -> 1 s") >= rearrange(other, "b -> b 1")', []),
])
def test_positions_made_with_rearrange(mask, want):
    assert found(POSITIONS.replace("MASK", mask)) == want
