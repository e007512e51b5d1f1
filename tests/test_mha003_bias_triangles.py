"""Probe V's B15 (a music transformer with a relative-position bias): a
causal keep-triangle filled into the bias (``bias = rel.masked_fill(keep,
-inf)``) that SDPA is then given as ``attn_mask`` removes the past and keeps
the future: MHA003 at the fill, as for a fill of the scores themselves.  The
triangle is judged at a fill only where what it fills reaches the scores."""

from __future__ import annotations

import pytest

from flake8_mha.lint.engine import analyze_source

MUSIC = """\
import torch
import torch.nn.functional as F


def attend(q, k, v, rel):
    L = q.size(-2)
    keep = torch.tril(torch.ones(L, L, device=q.device)).bool()
    bias = rel.masked_fill(keep, float("-inf"))
    return F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
"""


def test_a_keep_triangle_filled_into_an_sdpa_bias(tmp_path):
    (got,) = analyze_source(MUSIC, str(tmp_path / "music.py"), ["MHA003"])
    assert (got.line, got.col, got.code) == (8, 12, "MHA003")
    assert "means True = keep; masked_fill(mask, -inf) treats True as ignore" in got.message


@pytest.mark.parametrize(
    "old, new",
    [
        ("masked_fill(keep,", "masked_fill(~keep,"),  # the future filled: right
        ("attn_mask=bias)", "attn_mask=None)"),  # the bias never reaches the scores
    ],
)
def test_right_or_unused_fills_are_silent(tmp_path, old, new):
    text = MUSIC.replace(old, new)
    assert analyze_source(text, str(tmp_path / "music.py"), ["MHA002", "MHA003"]) == []


PREFIX_LM = '''\
import torch
import torch.nn.functional as F


def prefix_lm_keep(L, n_prefix, device=None):
    """True where a query may attend: the past, and the whole style prefix."""
    causal = torch.tril(torch.ones(L, L, device=device)).bool()
    pos = torch.arange(L, device=device)
    prefix = (pos[:, None] < n_prefix) & (pos[None, :] < n_prefix)
    return causal | prefix


def attend(q, k, v, rel, n_prefix):
    keep = prefix_lm_keep(q.size(-2), n_prefix, q.device)
    bias = rel.masked_fill(keep, float("-inf"))
    return F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
'''


def test_a_prefix_lm_keep_mask_is_a_keep_mask(tmp_path):
    """Probe V's B15 in its package: ``causal | prefix``, a keep-triangle
    joined to a comparison of positions, keeps what the triangle keeps."""
    (got,) = analyze_source(PREFIX_LM, str(tmp_path / "music.py"), ["MHA003"])
    assert (got.line, got.col) == (15, 12)
    assert got.message.startswith("mask from line 10 (causal | prefix) means True = keep")
