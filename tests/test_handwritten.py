"""Hand-written attention (issue 17): masks applied with arithmetic (MHA004's
additive case, MHA012), relational branches (MHA006), and modules reached
through method chains and wrappers.

Findings are checked as a user sees them: code, line and column, through the
engine and through a real flake8 process; the witnesses run with real torch.
"""
from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import libcst as cst
import pytest

from flake8_mha.lint.engine import analyze_source

ROOT = pathlib.Path(__file__).resolve().parent.parent


def found(source: str, *codes: str):
    out = analyze_source(textwrap.dedent(source), "t.py", list(codes) if codes else None)
    return [(f.code, f.line, f.col) for f in out if f.code != "MHA000"]


def messages(source: str, code: str):
    return [f.message for f in analyze_source(textwrap.dedent(source), "t.py", [code])]


# --------------------------------------------------------------------------- MHA004, added

KV_CACHE = """\
    import math
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Attn(nn.Module):
        def __init__(self, max_len):
            super().__init__()
            self.register_buffer("mask", torch.tril(torch.ones(max_len, max_len, dtype=torch.bool)))

        def forward(self, q, k, v, T):
            scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(q.size(-1))
            scores = scores + self.mask[:T, :T]
            return F.softmax(scores, dim=-1) @ v
    """


def test_bool_keep_mask_buffer_added_to_scores_is_mha004():
    assert found(KV_CACHE, "MHA004", "MHA012") == [("MHA004", 13, 18)]
    (msg,) = messages(KV_CACHE, "MHA004")
    assert "is a bool keep-mask added to the attention scores before softmax" in msg
    assert "masked_fill(~mask, float('-inf'))" in msg


def test_segment_equality_added_as_float_is_mha004():
    src = """\
    import torch

    def packed(q, k, v, ids):
        ids_i = ids[:, :, None]
        ids_j = ids[:, None, :]
        logits = torch.einsum("bqd,bkd->bqk", q, k)
        return torch.softmax(logits + (ids_i == ids_j).float(), dim=-1) @ v
    """
    assert found(src, "MHA004") == [("MHA004", 7, 26)]
    assert "float32 0/1 keep-mask added" in messages(src, "MHA004")[0]


@pytest.mark.parametrize("apply, line, col", [
    ("scores += keep.float()", 6, 5),
    ("scores.add_(keep.float())", 6, 5),
    ("scores = torch.add(scores, keep.long())", 6, 14),
    ("scores = scores - keep.float()", 6, 14),
])
def test_additive_spellings(apply, line, col):
    src = f"""\
    import torch

    def f(q, k, v, tokens, pad):
        keep = (tokens != pad)[:, None, None, :]
        scores = q @ k.mT
        {apply}
        return scores.softmax(-1) @ v
    """
    assert found(src, "MHA004") == [("MHA004", line, col)]


@pytest.mark.parametrize("apply", [
    "scores = scores + (1.0 - keep.float()) * -10000.0",
    "scores = scores + torch.where(keep, 0.0, float('-inf'))",
    "scores = scores + torch.zeros(keep.shape).masked_fill(~keep, float('-inf'))",
    "scores = scores + bias",                       # unknown kind
    "scores = scores - keep",                       # bool subtraction raises: nothing silent
    "scores = (scores + keep.float()).masked_fill(~keep, float('-inf'))",  # covered by -inf
])
def test_additive_masks_and_unknowns_are_not_mha004(apply):
    src = f"""\
    import torch

    def f(q, k, v, tokens, pad, bias):
        keep = (tokens != pad)[:, None, None, :]
        scores = q @ k.transpose(-2, -1)
        {apply}
        return torch.softmax(scores, dim=-1) @ v
    """
    assert found(src, "MHA004", "MHA012") == []


def test_not_attention_without_a_query_key_product_or_over_another_axis():
    src = """\
    import torch

    def f(x, w, q, k, tokens, pad):
        keep = (tokens != pad).float()
        a = torch.softmax(x @ w + keep, dim=-1)
        b = torch.softmax(q @ k.transpose(-2, -1) + keep, dim=1)
        return a, b
    """
    assert found(src, "MHA004", "MHA012") == []


# --------------------------------------------------------------------------- MHA012

def test_causal_triangle_multiplied_into_scores_is_mha012():
    src = """\
    import math
    import torch

    def attend(q, k, v, T):
        causal = torch.tril(torch.ones(T, T))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att * causal[:T, :T]
        return torch.softmax(att, dim=-1) @ v
    """
    assert found(src) == [("MHA012", 7, 11)]
    (msg,) = messages(src, "MHA012")
    assert msg.startswith("mask from line 5 (torch.tril(torch.ones(T, T))) is a float32 0/1 "
                          "keep-mask multiplied into the attention scores before softmax")


@pytest.mark.parametrize("apply", [
    "probs = torch.softmax(scores, dim=-1) * keep",          # after softmax
    "probs = torch.softmax(scores * scale, dim=-1)",         # a float scale
    "probs = torch.softmax(scores * torch.sigmoid(gate), dim=-1)",  # a learned gate
    "probs = torch.softmax((scores * keep).masked_fill(keep == 0, -1e9), dim=-1)",
    # a fill the analysis cannot read may remove the masked scores: unsure, silent
    "probs = torch.softmax((scores * keep).masked_fill(keep == 0, -constant.INF), dim=-1)",
    # an additive mask reaches the scores too: it may remove the zeroed positions
    "probs = torch.softmax(scores * keep + attn_mask, dim=-1)",
    "probs = torch.softmax(scores * keep + torch.full((4, 4), float('-inf')).triu(1), dim=-1)",
])
def test_mha012_traps(apply):
    src = f"""\
    import torch

    def f(q, k, v, tokens, pad, scale, gate, attn_mask):
        keep = (tokens != pad).float()[:, None, None, :]
        scores = q @ k.transpose(-2, -1)
        {apply}
        return probs @ v
    """
    assert found(src, "MHA012", "MHA004") == []


def test_a_fill_known_to_be_small_does_not_cover():
    src = """\
    import torch

    def f(q, k, v, tokens, pad):
        keep = (tokens != pad).float()[:, None, None, :]
        scores = q @ k.transpose(-2, -1)
        scores = (scores * keep).masked_fill(keep == 0, 0.0)
        return scores.softmax(-1) @ v
    """
    assert found(src) == [("MHA012", 6, 15)]


def test_mha012_through_bmm_and_in_place():
    src = """\
    import torch

    def f(q, k, v, tokens, pad):
        keep = tokens != pad
        kt = k.transpose(1, 2)
        scores = torch.bmm(q, kt)
        scores.mul_(keep[:, None, :])
        return scores.softmax(-1) @ v
    """
    assert found(src) == [("MHA012", 7, 5)]


def test_in_place_after_the_softmax_is_not_before_it():
    src = """\
    import torch

    def f(q, k, v, tokens, pad):
        keep = tokens != pad
        scores = q @ k.transpose(-2, -1)
        probs = scores.softmax(-1)
        scores.mul_(keep[:, None, :])
        return probs @ v, scores
    """
    assert found(src) == []


# --------------------------------------------------------------------------- MHA006 relational

def _sdpa(body: str) -> str:
    return ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
            "class A(nn.Module):\n    def forward(self, q, k, v, mask=None):\n"
            + textwrap.indent(textwrap.dedent(body), " " * 8))


def test_exclusive_branches_are_not_mha006():
    src = _sdpa("""\
        if self.causal:
            mask = None
            is_causal = True
        else:
            is_causal = False
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)
        """)
    assert found(src, "MHA006") == []


def test_one_sided_branch_is_still_mha006():
    src = _sdpa("""\
        if self.causal:
            is_causal = True
        else:
            mask = None
            is_causal = False
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)
        """)
    assert found(src, "MHA006") == [("MHA006", 11, 16)]


def test_nested_fold_and_clear_is_not_mha006():
    src = _sdpa("""\
        causal = self.causal
        if mask is not None:
            if causal:
                mask = mask & ~torch.ones(4, 4, dtype=torch.bool).triu(1)
                causal = False
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
        """)
    assert found(src, "MHA006") == []


def test_assert_on_the_pair_is_not_mha006():
    src = _sdpa("""\
        is_causal = self.causal
        assert not (is_causal and mask is not None)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)
        """)
    assert found(src, "MHA006") == []


HELPER_ASSERTED = """\
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, causal=False):
        super().__init__()
        self.causal = causal

    def flash_attn(self, q, k, v, mask=None):
        is_causal = self.causal and q.shape[-2] > 1
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)

    def forward(self, q, k, v, mask=None):
        is_causal = self.causal and q.shape[-2] > 1
        ASSERT
        if mask is not None:
            mask = mask[:, None, None, :]
        return self.flash_attn(q, k, v, mask=mask)
"""


@pytest.mark.parametrize("check, want", [
    # vit-pytorch's vivit_with_moss: the caller asserts the pair apart
    ("assert not (is_causal and mask is not None)", []),
    ("assert not (self.causal and mask is not None)", []),
    # an assert of something else settles nothing
    ("assert q.dim() == 4", [("MHA006", 12, 16)]),
])
def test_a_helper_whose_every_caller_asserts_the_pair_apart(check, want):
    src = HELPER_ASSERTED.replace("ASSERT", check)
    assert found(src, "MHA006") == want


def test_a_condition_on_a_flag_rebound_since_does_not_count():
    # the branch ran under `not causal`, but causal is True when SDPA runs
    src = _sdpa("""\
        causal = self.causal
        if not causal:
            causal = True
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
        """)
    assert found(src, "MHA006") == [("MHA006", 9, 16)]


def test_assert_inside_a_loop_does_not_hold_after_it():
    src = _sdpa("""\
        is_causal = self.causal
        for _ in range(2):
            assert mask is None
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)
        """)
    assert found(src, "MHA006") == [("MHA006", 9, 16)]


def test_worlds_keep_pairs_assigned_together():
    from flake8_mha.analysis.flow import FlowPass

    src = textwrap.dedent("""\
        def f(c):
            if c:
                a = 1
                b = 2
            else:
                a = 3
                b = 4
            g(a, b)
        """)
    flow = FlowPass()
    flow.run(cst.parse_module(src))
    from flake8_mha.analysis.flow import worlds

    (site,) = [s for s in flow.calls
               if isinstance(s.node.func, cst.Name) and s.node.func.value == "g"]
    got = worlds(site.env, ["a", "b"])
    pairs = sorted((w["a"][0].node.value, w["b"][0].node.value) for w, _ in got)
    assert pairs == [("1", "2"), ("3", "4")]
    conds = sorted(pol for _, cs in got for (_, pol, _) in cs)
    assert conds == [False, True]
    assert len(site.env["a"]) == 2  # the joined view is unchanged


# --------------------------------------------------------------------------- chains, wrappers

@pytest.mark.parametrize("made", [
    "nn.MultiheadAttention(64, 8, batch_first=True).to(device)",
    "nn.MultiheadAttention(64, 8, batch_first=True).cuda().half()",
    "nn.MultiheadAttention(64, 8, batch_first=True).eval().requires_grad_(False)",
    "nn.MultiheadAttention(64, 8, batch_first=True).float().train()",
    "torch.compile(nn.MultiheadAttention(64, 8, batch_first=True))",
    "nn.utils.spectral_norm(nn.MultiheadAttention(64, 8, batch_first=True), 'out_proj')",
])
def test_module_through_a_chain_keeps_its_identity(made):
    src = f"""\
    import torch
    import torch.nn as nn

    class B(nn.Module):
        def __init__(self, device):
            super().__init__()
            self.attn = {made}

        def forward(self, x):
            out, _ = self.attn(x, x, x)
            return out
    """
    assert found(src, "MHA102") == [("MHA102", 10, 18)]


def test_checkpoint_wrapper_of_the_attribute_itself():
    src = """\
    import torch.nn as nn
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

    class B(nn.Module):
        def __init__(self, ckpt):
            super().__init__()
            self.attn = nn.MultiheadAttention(64, 8, batch_first=True)
            if ckpt:
                self.attn = checkpoint_wrapper(self.attn)

        def forward(self, x):
            return self.attn(x, x, x, is_causal=True)[0]
    """
    assert found(src, "MHA102", "MHA005") == [("MHA005", 12, 16), ("MHA102", 12, 16)]


def test_unknown_wrapper_still_hides_the_module():
    src = """\
    import torch.nn as nn
    from mylib import wrap

    class B(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = wrap(nn.MultiheadAttention(64, 8, batch_first=True))

        def forward(self, x):
            out, _ = self.attn(x, x, x)
            return out
    """
    assert found(src, "MHA102") == []


# --------------------------------------------------------------------------- real flake8

FIXTURES = ["MHA012_mask_multiplied_before_softmax.py", "MHA004_mask_added_to_scores.py",
            "MHA006_exclusive_branches.py", "MHA102_chained_construction.py"]
_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>MHA\d{3}) ")


def test_real_flake8_reports_the_fixtures_exactly():
    from fixture_expect import expected

    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "MHA",
         *[os.path.join("fixtures", f) for f in FIXTURES]],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    got = set()
    for line in proc.stdout.splitlines():
        m = _LINE.match(line)
        assert m is not None, line
        got.add((os.path.basename(m["path"]), int(m["line"]), int(m["col"]), m["code"]))
    want = {(f, line, col, code) for f in FIXTURES
            for line, col, code in expected(ROOT / "fixtures" / f)}
    assert got == want
    assert ("MHA012_mask_multiplied_before_softmax.py", 34, 15, "MHA012") in got
    assert ("MHA004_mask_added_to_scores.py", 42, 26, "MHA004") in got


def test_explain_mha012():
    proc = subprocess.run([sys.executable, "-m", "flake8_mha.frontends.cli", "explain", "MHA012"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    assert proc.stdout.startswith("# MHA012: mask-multiplied-before-softmax\n")
    assert "Attention scores are a pairwise product of two projections" in " ".join(
        proc.stdout.split())


# --------------------------------------------------------------------------- witnesses

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="torch is not installed")


def _evidence(fixture: str, code: str, line: int) -> dict:
    path = ROOT / "fixtures" / fixture
    (f,) = [f for f in analyze_source(path.read_text(), str(path), [code]) if f.line == line]
    return f.evidence


@needs_torch
def test_mha012_witness_measures_the_leak_and_none_with_inf():
    from flake8_mha.confirm.witnesses import CONFIRMED, WITNESSES

    ev = _evidence("MHA012_mask_multiplied_before_softmax.py", "MHA012", 34)
    assert ev["sink"] == "scores-mul" and ev["mask"]["causal"] is True
    got = WITNESSES["MHA012"].run(ev)
    assert got["verdict"] == CONFIRMED
    assert got["measured"]["leak"] > 1.0
    assert got["measured"]["leak_with_inf"] == 0.0


@needs_torch
def test_mha004_witness_dispatches_the_additive_case():
    from flake8_mha.confirm.witnesses import CONFIRMED, WITNESSES

    ev = _evidence("MHA004_mask_added_to_scores.py", "MHA004", 42)
    assert ev["sink"] == "scores-add" and ev["mask"]["kind"] == "float01"
    got = WITNESSES["MHA004"].run(ev)
    assert got["verdict"] == CONFIRMED
    assert "softmax(q @ k^T / sqrt(d) + mask)" in got["witness"]
    assert got["measured"]["leak"] > 1.0 and got["measured"]["leak_with_inf"] == 0.0


@needs_torch
def test_mha012_witness_through_the_confirmer_worker():
    proc = subprocess.run(
        [sys.executable, "-m", "flake8_mha.frontends.cli", "confirm", "--fail-on", "none",
         "fixtures/MHA012_mask_multiplied_before_softmax.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "7 findings: 7 confirmed" in proc.stdout


def test_a_helper_another_file_may_call_keeps_the_finding(tmp_path):
    from flake8_mha.lint.engine import analyze_file

    from fixture_expect import write_package

    text = HELPER_ASSERTED.replace("ASSERT", "assert not (is_causal and mask is not None)")
    attention = write_package(tmp_path / "proj" / "pkg", {"attention.py": text}) / "attention.py"
    rows = lambda: [(f.code, f.line, f.col) for f in analyze_file(str(attention), ["MHA006"])]  # noqa: E731
    assert rows() == []
    other = write_package(tmp_path / "other" / "pkg", {
        "attention.py": text,
        "use.py": "from .attention import Attention\n\n\n"
                  "def run(q, k, v, keep):\n"
                  "    return Attention(causal=True).flash_attn(q, k, v, mask=keep)\n"})
    got = analyze_file(str(other / "attention.py"), ["MHA006"])
    assert [(f.code, f.line, f.col) for f in got] == [("MHA006", 12, 16)]
