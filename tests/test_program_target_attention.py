"""Issue 26: scores made by a query-key product in another shape
(DIN's ``torch.bmm(hist, q.unsqueeze(-1)).squeeze(-1)``) are attention
scores for a summary's fills, as in one file (probe S's AA, missed across
files before): the keep-mask a caller hands a layer that multiplies it into
them before the softmax is MHA012 at that call; the layer that fills them
with -inf beside it is silent.

``fixtures/program_calls/target_attention``: per file, over the package and
through ``check``."""

from __future__ import annotations

import ast
import pathlib

from fixture_expect import assert_package_runs

from flake8_mha.analysis.program import fills

PKG = pathlib.Path("fixtures/program_calls/target_attention")


def test_per_file_over_the_package_and_through_check():
    found = assert_package_runs(str(PKG), [("model.py", 19, 16, "MHA012")])
    assert "target_attention/layers.py" in found[0].msg


def test_a_reshaped_product_is_scores():
    stores = {}
    for text, want in (
        ("torch.bmm(h, q.unsqueeze(-1)).squeeze(-1)", True),
        ("torch.matmul(q, k.transpose(-2, -1)).view(b, h, n, n)", True),
        ("x.squeeze(-1)", False),  # no product under it
        ("torch.bmm(a, b).sum(-1)", False),  # a sum is no longer the scores
    ):
        assert fills.scores_of(ast.parse(text).body[0].value, stores, 0) is want, text
