"""Probe T's B17 (BLOOM): a bool causal-and-padding mask, ``future |
(attention_mask == 0)``, made by a helper of one file and added to the
scores after an ALiBi bias (``scores + alibi + causal_mask``) in another.

A comparison joined by ``|`` to a causal triangle hides with it (one
meaning on both sides of a union), and a mask added after another term is
added to the scores all the same: MHA004 at the block's call, per file,
over the package and through ``check``; the attention that fills the
mask with the dtype's minimum is silent."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs, package_texts

from flake8_mha.lint.engine import analyze_file, analyze_source

PKG = pathlib.Path("fixtures/program_calls/alibi_masks")


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(str(PKG), [("model.py", 19, 20, "MHA004")])


def test_the_finding_names_the_helper_and_the_sum():
    (got,) = analyze_file(str(PKG / "model.py"), ["MHA004"])
    assert got.message.startswith(
        f"mask from line 18 (prepare_causal_mask() -> {PKG / 'masks.py'}:22: "
        "future[None, None] | padding) is a bool ignore-mask added to the attention scores"
    )
    assert got.message.endswith(
        f"reaches scores + mask at {PKG / 'attention.py'}:24 through AlibiAttention.forward()"
    )


def test_an_additive_mask_made_from_it_is_silent(tmp_path):
    texts = package_texts(PKG)
    old = "    return future[None, None] | padding\n"
    new = (
        "    hidden = future[None, None] | padding\n"
        "    return torch.zeros(hidden.shape).masked_fill(hidden, float('-inf'))\n"
    )
    texts["masks.py"] = texts["masks.py"].replace(old, new)
    for name, text in texts.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert analyze_file(str(tmp_path / "model.py"), ["MHA004"]) == []


UNION = """\
import torch


def attend(q, k, v, attention_mask):
    n = q.size(-2)
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    hidden = future[None, None] | (attention_mask[:, None, None, :] == 0)
    scores = q @ k.transpose(-1, -2) + hidden
    return scores.softmax(-1) @ v
"""


def test_the_union_in_one_function(tmp_path):
    (got,) = analyze_source(UNION, str(tmp_path / "m.py"), ["MHA004"])
    assert (got.line, got.col, got.code) == (8, 14, "MHA004")
    assert "is a bool ignore-mask added to the attention scores" in got.message


def test_a_comparison_alone_keeps_its_unknown_meaning(tmp_path):
    """Without the triangle, ``attention_mask == 0`` of an attention layer's
    parameter (additive, or 1 = keep: transformers does both) has no known
    meaning; added to the scores it removes nothing either way, so it is
    reported as a comparison of unknown meaning (thirtieth stop, probe Z's
    Z30), with no side to invert."""
    alone = UNION.replace("future[None, None] | (attention_mask", "(attention_mask")
    (got,) = analyze_source(alone, str(tmp_path / "m.py"), ["MHA004"])
    assert (got.line, got.col, got.code) == (8, 14, "MHA004")
    assert "is a bool comparison (of unknown meaning) added to the attention scores" in got.message
    assert "scores.masked_fill(<the positions to remove>, float('-inf'))" in got.message
