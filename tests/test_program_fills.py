"""Hand-written attention that fills its scores with a mask parameter
(``sim.masked_fill(~mask, max_neg_value(sim))``, ``torch.where(keep, sim,
-inf)``): the fill is a sink of the function's summary, and a caller's mask
is judged at each call against the convention of the function it reaches,
in another file or in the same one (a right caller beside a wrong one does
not hide it).  Checked as a user sees it: the exact code, line and column,
over the package, one file at a time and through ``check``."""
from __future__ import annotations

import ast
import textwrap

from fixture_expect import ROOT, assert_package_runs
from flake8_mha.analysis.program import fills
from flake8_mha.analysis.program.summaries import summarise
from flake8_mha.core.fills import helper_sign
from flake8_mha.core.torch_api import TRIGGER_WORDS
from flake8_mha.lint.engine import analyze_source

PACKAGE = "fixtures/program_calls/fills"
WANT = [
    ("attend.py", 53, 17, "MHA003"),
    ("model.py", 19, 13, "MHA003"),
    ("model.py", 21, 13, "MHA003"),
    ("model.py", 28, 13, "MHA002"),
]


def test_over_the_package_one_file_at_a_time_and_through_check():
    assert [w for w in TRIGGER_WORDS if w in (ROOT / PACKAGE / "model.py").read_text()] == []
    assert_package_runs(PACKAGE, WANT)


def _reach(body: str, name: str = "f"):
    source = "import torch\n\n\n" + textwrap.dedent(body)
    return summarise(source, screen=True).get(name, {}).get("reach")


def test_which_fills_are_sinks_of_a_summary():
    neg = [
        "float('-inf')", "-float('inf')", "-torch.inf", "torch.finfo(s.dtype).min",
        "-torch.finfo(s.dtype).max", "-torch.finfo(s.dtype).max // 2", "-1e9", "-10000.0",
        "NEG_INF", "max_neg_value(s)",
    ]
    for value in neg:
        got = _reach(f"def f(s, m):\n    return s.masked_fill(m, {value})\n")
        assert got == {"masked_fill": {"param": "m", "ops": []}}, value
    for value in ("0", "-1.0", "-100", "float('inf')", "LARGE_NUMBER", "fill"):
        assert _reach(f"def f(s, m, fill=0):\n    return s.masked_fill(m, {value})\n") is None, value
    # torch.where: which side the big negative is on says what True means
    assert _reach("def f(s, m):\n    return torch.where(m, s, float('-inf'))\n") == {
        "where_keep": {"param": "m", "ops": []}}
    assert _reach("def f(s, m):\n    return torch.where(m, float('-inf'), s)\n") == {
        "masked_fill": {"param": "m", "ops": []}}
    # the steps the function applies, and a softmax after the fill
    got = _reach("def f(s, m=None):\n"
                 "    if m is not None:\n"
                 "        m = m[:, None, None, :]\n"
                 "    return s.masked_fill(~m, -1e9).softmax(-1)\n")
    assert got == {"masked_fill": {"param": "m", "ops": [
        ["index", ":, None, None, :"], ["invert"], ["softmax"]]}}
    # a fill with the function's own mask is not the caller's business
    assert _reach("def f(s, n):\n    c = torch.ones(n, n).triu(1).bool()\n"
                  "    return s.masked_fill(c, -1e9)\n") is None


def test_a_helper_of_the_file_is_read_and_an_imported_one_by_its_name():
    source = "import torch\n\ndef neg(t):\n    return -torch.finfo(t.dtype).max\n\n" \
             "def small(t):\n    return -1.0\n"
    assert fills.helper_signs(ast.parse(source)) == {"neg": "neg", "small": None}
    assert helper_sign("max_neg_value") == "neg"
    assert helper_sign("neg_inf") == "neg"
    assert helper_sign("max_value") is None
    assert helper_sign("mask_value") is None


def test_a_triangle_is_judged_only_where_the_function_softmaxes_what_it_fills():
    head = "import torch\n\n\n"
    scorer = head + "def spans(scores, allowed):\n" \
                    "    return scores.masked_fill(~allowed, -1e4)\n\n\n"
    caller = "def pairs(scores, n):\n" \
             "    upper = torch.ones(n, n).triu(1).bool()\n" \
             "    return spans(scores, upper)\n"
    assert analyze_source(scorer + caller, "<string>", project=False) == []
    attention = scorer.replace("-1e4)", "-1e4).softmax(-1)")
    got = analyze_source(attention + caller, "<string>", project=False)
    # ``triu(1)`` is True above the diagonal (the future): the helper inverts it
    # and removes the past; reported at the call, where the triangle is given
    assert [(f.code, f.line, f.col) for f in got] == [("MHA003", 10, 12)]
    assert "through spans()" in got[0].message


def test_a_negative_unsqueeze_in_the_steps_is_applied_at_the_call():
    # ``unsqueeze(-1)``: the caller's mask gets the step as written (a unary minus)
    source = ("import torch\n\n\n"
              "def fill(s, m):\n"
              "    return s.masked_fill(m.unsqueeze(-1), -1e9).softmax(-1)\n\n\n"
              "def use(s, ids):\n"
              "    return fill(s, ids != 0)\n")
    got = analyze_source(source, "<string>")
    assert [(f.code, f.line, f.col) for f in got] == [("MHA003", 9, 12)]


def test_a_mask_added_to_the_scores_of_another_file_is_judged_at_each_call():
    """``fixtures/program_calls/added_masks``: Whisper's fallback ``qk = qk +
    mask[:n, :n]`` two calls from the decoders, and BERT's ``scores +
    attention_mask``: a 0/1 keep triangle and a 0/1 keep padding mask added
    to the scores (MHA004 at each call, naming the chain); the -inf
    triangle and the extended ``(1.0 - keep) * -10000.0`` mask beside them
    are what belongs there.  Per file, over the package and through ``check``."""
    found = assert_package_runs("fixtures/program_calls/added_masks", [
        ("model.py", 34, 17, "MHA004"), ("model.py", 40, 12, "MHA004")])
    assert {f.line: f.msg for f in found}[34].endswith(
        "through ResidualAttentionBlock.forward() -> MultiHeadAttention.forward()")


ADDED_HERE = '''\
import torch


def attend(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores + mask
    return scores.softmax(dim=-1) @ v


def causal(q, k, v, n):
    return attend(q, k, v, torch.full((n, n), float("-inf")).triu(1))


def ones(q, k, v, n):
    return attend(q, k, v, torch.ones(n, n).tril())
'''


def test_in_one_file_a_correct_caller_does_not_hide_a_wrong_one():
    """Both callers in the helper's own file: the 0/1 triangle is reported
    at its call, the -inf triangle is not; nothing at the addition, where
    the two would only meet as unknown (issue 26, item 2)."""
    rows = [(f.code, f.line, f.col) for f in analyze_source(ADDED_HERE, "t.py", ["MHA004"])]
    assert rows == [("MHA004", 16, 12)]


ESPNET = '''\
import torch
from torch import nn


class MultiHeadedAttention(nn.Module):
    def forward_attention(self, value, scores, mask):
        if mask is not None:
            mask = mask.unsqueeze(1).eq(0)  # (batch, 1, *, time2): True = pad
            scores = scores.masked_fill(mask, -1e9)
            attn = torch.softmax(scores, dim=-1)
        else:
            attn = torch.softmax(scores, dim=-1)
        return torch.matmul(attn, value)

    def forward(self, q, k, v, mask):
        return self.forward_attention(v, q @ k.transpose(-2, -1), mask)
'''

ENCODER = '''\
import torch
from torch import nn

from .attention import MultiHeadedAttention


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn = MultiHeadedAttention()

    def forward(self, xs, ilens):
        pad = torch.arange(xs.size(1))[None, :] >= ilens[:, None]
        return self.self_attn(xs, xs, xs, MASK)
'''


def test_a_mask_rebound_where_given_with_an_else_where_it_is_none(tmp_path):
    """ESPnet's ``forward_attention``: ``if mask is not None: mask =
    mask.unsqueeze(1).eq(0); ...`` with an ``else:`` for the path without a
    mask is the parameter through those steps (it was no summary step: the
    encoder's wrong mask went unreported)."""
    from fixture_expect import write_package
    from flake8_mha.lint.engine import analyze_file

    for mask, want in (("pad[:, None, :]", [("MHA003", 14, 16)]),
                       ("~pad[:, None, :]", [])):
        pkg = write_package(tmp_path / f"p{len(want)}", {
            "attention.py": ESPNET, "encoder.py": ENCODER.replace("MASK", mask)})
        got = [(f.code, f.line, f.col) for f in analyze_file(str(pkg / "encoder.py"), ["MHA003"])]
        assert got == want, mask
