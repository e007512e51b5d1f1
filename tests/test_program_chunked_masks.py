"""Issue 26, item 2 (transformations in a summary): a mask reshaped by
``view``/``reshape`` keeps its meaning at the sink, its shape unknown, as
``expand`` does (probe S's J: Reformer's chunked ``pad_mask.view(B, 1, L
// c, 1, c)``, missed before).

``fixtures/program_calls/chunked_masks``: the keep-mask handed as the
padding is MHA003 at the model's call, per file, over the package and
through ``check``; the inverted one is silent."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs

from flake8_mha.lint.engine import analyze_file, analyze_source

PKG = pathlib.Path("fixtures/program_calls/chunked_masks")


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(str(PKG), [("model.py", 19, 16, "MHA003")])


def test_the_finding_names_the_fill_through_the_view():
    (got,) = analyze_file(str(PKG / "model.py"), ["MHA003"])
    assert (got.line, got.col) == (19, 16)
    assert got.message.startswith("mask from line 18 (token_keep_mask() -> ")
    assert f"{PKG / 'chunked.py'}:24 through ChunkedSelfAttention.forward()" in got.message


WRAPPER = (
    "import torch.nn.functional as F\n"
    "def attend(q, k, v, mask):\n"
    "    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask.view({shape}))\n"
    "def run(q, k, v, tokens):\n"
    "    return attend(q, k, v, tokens != 0)\n"
)


def test_a_reshaped_mask_keeps_its_meaning_and_loses_its_shape():
    """A keep-mask made bool by a comparison is right for SDPA whatever its
    view; an (N, S) mask viewed to another shape is not judged as (N, S)."""
    for shape in ("q.size(0), -1", "-1, q.size(2), k.size(2)"):
        assert analyze_source(WRAPPER.format(shape=shape), "w.py", ["MHA002", "MHA009"]) == []
    ignore = WRAPPER.format(shape="q.size(0), -1").replace("tokens != 0", "tokens == 0")
    got = analyze_source(ignore, "w.py", ["MHA002", "MHA009"])
    assert [(f.code, f.line, f.col) for f in got] == [("MHA002", 5, 12)]
