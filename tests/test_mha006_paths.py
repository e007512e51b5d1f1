"""MHA006 read path by path (``rules/_causal_paths.py``): lucidrains' older
``Attend`` (zeta, a release review's three false alarms) folds the causal
triangle into a given mask and clears the flag, then may replace the mask by
a bias and clear the flag again; on no path are both set.  A path that
keeps both is reported, whatever the others do."""
from __future__ import annotations

import textwrap

import pytest

from flake8_mha.lint.engine import analyze_source

HEAD = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


def exists(v):
    return v is not None


class Attend(nn.Module):
    def __init__(self, causal=False):
        super().__init__()
        self.causal = causal

    def forward(self, q, k, v, mask=None, attn_bias=None):
        causal = self.causal
"""


def _found(body: str):
    src = HEAD + textwrap.indent(textwrap.dedent(body), "        ")
    src += "        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)\n"
    line = src.count("\n")
    got = [(f.code, f.line) for f in analyze_source(src, "a.py", ["MHA006"])]
    return got, line


FOLDS = [
    # the fold: a given mask takes the triangle, the flag is cleared
    """
    if exists(mask):
        if causal:
            mask = mask & ~torch.ones(4, 4, dtype=torch.bool).triu(1)
            causal = False
    """,
    # the fold, then a bias that replaces the mask and clears the flag (zeta)
    """
    if exists(mask):
        mask = mask.expand(2, 2, 4, 4)
        if causal:
            mask = mask & ~torch.ones(4, 4, dtype=torch.bool).triu(1)
            causal = False
    if exists(attn_bias):
        if exists(mask):
            attn_bias = attn_bias.masked_fill(~mask, -1e4)
        elif causal:
            attn_bias = attn_bias.masked_fill(torch.ones(4, 4, dtype=torch.bool).triu(1), -1e4)
            causal = False
        mask = attn_bias
    """,
    # the fold tested on the attribute the flag was read from (openlanguagemodel's
    # ``is_causal = self.causal``, then ``if self.causal: ...; is_causal = False``)
    """
    if exists(mask):
        if self.causal:
            mask = mask & ~torch.ones(4, 4, dtype=torch.bool).triu(1)
            causal = False
    """,
    # early return on the causal path
    """
    if causal and mask is None:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    causal = False
    """,
    # one flag picks both (review 22's composelm): ``is_causal = not needs_bias``
    # and the mask set only where ``needs_bias`` holds
    """
    needs_bias = exists(mask) or exists(attn_bias)
    causal = not needs_bias
    mask = attn_bias if needs_bias else None
    """,
    """
    needs_bias = exists(mask)
    causal = not needs_bias
    mask = None if not needs_bias else mask
    """,
    # the flag set only in an ``elif`` after ``if <flag> and <mask given>``: the
    # mask is None there (review 24's bio-attention), also when an earlier
    # branch reshaped a given mask (a world split before the test)
    """
    flag, causal = causal, False
    if flag and (mask is not None):
        mask = mask.masked_fill(torch.ones(4, 4, dtype=torch.bool).triu(1), -1e4)
    elif flag:
        causal = True
    """,
    """
    if mask is not None:
        mask = mask[:, None, None, :]
    flag, causal = causal, False
    if flag and exists(mask) is True and mask is not None:
        mask = mask.masked_fill(torch.ones(4, 4, dtype=torch.bool).triu(1), -1e4)
    elif flag and exists(mask) is True:
        causal = True
    """,
]


@pytest.mark.parametrize("body", FOLDS)
def test_no_path_gives_both(body):
    assert _found(body)[0] == []


KEPT = [
    # the fold forgets to clear the flag
    """
    if exists(mask):
        if causal:
            mask = mask & ~torch.ones(4, 4, dtype=torch.bool).triu(1)
    """,
    # the bias replaces the mask while the flag survived (no ``elif causal``)
    """
    if exists(mask):
        if causal:
            mask = mask & ~torch.ones(4, 4, dtype=torch.bool).triu(1)
            causal = False
    if exists(attn_bias):
        mask = attn_bias
    """,
    # the attribute tested, the flag cleared on the other branch: True with the mask
    """
    if exists(mask):
        if not self.causal:
            causal = False
    """,
    # the same flag picks both the same way: both set where it holds
    """
    needs_bias = exists(mask)
    causal = needs_bias
    mask = mask if needs_bias else None
    """,
    # the ``elif`` makes a mask of its own beside the flag
    """
    flag, causal = causal, False
    if flag and (mask is not None):
        mask = mask[:, None, None, :]
    elif flag:
        mask = torch.zeros(4, 4)
        causal = True
    """,
    # an ``elif`` on another test says nothing of the mask
    """
    flag, causal = causal, False
    if flag and (mask is not None):
        causal = False
    elif self.causal:
        causal = True
    """,
    # a loop that sets the flag is not read: the finding stands
    """
    for _ in range(2):
        if exists(mask):
            causal = False
    """,
]


@pytest.mark.parametrize("body", KEPT)
def test_a_path_with_both_is_reported(body):
    got, line = _found(body)
    assert got == [("MHA006", line)]
