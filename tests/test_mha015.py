"""MHA015 mask-on-keys-values (issue 27): a padding mask multiplied into the
keys or values instead of masking the scores.  Checked as a user sees it:
code, line and column through the engine and a real flake8 process; the
witness measures the damage with real torch."""
from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys
import textwrap

import pytest

from flake8_mha.lint.engine import analyze_file, analyze_source

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURE = "MHA015_mask_on_keys_values.py"


def found(source: str, *codes: str):
    out = analyze_source(textwrap.dedent(source), "t.py", list(codes) if codes else ["MHA015"])
    return [(f.code, f.line, f.col) for f in out if f.code != "MHA000"]


def messages(source: str):
    return [f.message for f in analyze_source(textwrap.dedent(source), "t.py", ["MHA015"])]


SDPA = """\
    import einops
    import torch
    import torch.nn.functional as F

    def attend(q, k, v, tokens, pad_id):
        keep = tokens != pad_id
        {body}
    """


@pytest.mark.parametrize("body, line, col", [
    ("return F.scaled_dot_product_attention(q, k * keep[:, None, :, None], v)", 7, 12),
    ("return F.scaled_dot_product_attention(q, k, v * keep[:, None, :, None])", 7, 12),
    ("k = k.mul(keep[:, None, :, None])\n"
     "        return F.scaled_dot_product_attention(q, k, v)", 8, 12),
    ("k = torch.mul(k, keep[:, None, :, None].float())\n"
     "        return F.scaled_dot_product_attention(q, k, v)", 8, 12),
    ("k *= keep[:, None, :, None]\n"
     "        return F.scaled_dot_product_attention(q, k, v)", 8, 12),
    ("v = v.masked_fill(~keep[:, None, :, None], 0)\n"
     "        return F.scaled_dot_product_attention(q, k, v, is_causal=False)", 8, 12),
    ("k = k * keep[:, :, None]\n"
     "        k = einops.rearrange(k, 'b n (h d) -> b h n d', h=4)\n"
     "        return F.scaled_dot_product_attention(q, k, v)", 9, 12),
    ("k = (k * keep[:, None, :, None]).transpose(1, 2).contiguous()\n"
     "        return F.scaled_dot_product_attention(q, k.transpose(1, 2), v)", 8, 12),
    # each of q, k, v split into heads after the mask, rows kept (lucidrains' style)
    ("k, v = k * keep[..., None], v * keep[..., None]\n"
     "        q, k, v = map(lambda t: einops.rearrange(t, 'b n (h d) -> b h n d', h=4), (q, k, v))\n"
     "        return F.scaled_dot_product_attention(q, k, v)", 9, 12),
    ("k, v = k * keep[..., None], v * keep[..., None]\n"
     "        q, k, v = (t.view(2, -1, 4, 8).transpose(1, 2) for t in (q, k, v))\n"
     "        return F.scaled_dot_product_attention(q, k, v)", 9, 12),
    ("k, v = k * keep[..., None], v * keep[..., None]\n"
     "        q, k, v = rearrange_many((q, k, v), 'b n (h d) -> b h n d', h=4)\n"
     "        return F.scaled_dot_product_attention(q, k, v)", 9, 12),
])
def test_masked_keys_or_values_given_to_sdpa(body, line, col):
    assert found(SDPA.format(body=body)) == [("MHA015", line, col)]


@pytest.mark.parametrize("body", [
    # the scores are masked too: the zeroed keys are never read
    "return F.scaled_dot_product_attention(q, k * keep[:, None, :, None], v, "
    "attn_mask=keep[:, None, None, :])",
    "return F.scaled_dot_product_attention(q, k * keep[:, None, :, None], v, is_causal=True)",
    # the queries, or the output after attention
    "return F.scaled_dot_product_attention(q * keep[:, None, :, None], k, v)",
    "return F.scaled_dot_product_attention(q, k, v) * keep[:, None, :, None]",
    # a scale, a mask of unknown meaning, a zero fill with a keep-mask's True rows
    "return F.scaled_dot_product_attention(q, k * 0.5, v * torch.sigmoid(q))",
    "return F.scaled_dot_product_attention(q, k.masked_fill(keep[:, None, :, None], 0), v)",
    # a triangle is not a mask of the keys
    "return F.scaled_dot_product_attention(q, k * torch.tril(torch.ones(4, 4)), v)",
    # a split that mixes the tensors, or is not each tensor's own
    "k, v = k * keep[..., None], v * keep[..., None]\n"
    "        q, k, v = map(lambda t: t.sum(1), (q, k, v))\n"
    "        return F.scaled_dot_product_attention(q, k, v)",
    "k, v = k * keep[..., None], v * keep[..., None]\n"
    "        q, v, k = map(lambda t: einops.rearrange(t, 'b n d -> b 1 n d'), (q, q, q))\n"
    "        return F.scaled_dot_product_attention(q, k, v)",
])
def test_harmless_or_other_forms_are_silent(body):
    assert found(SDPA.format(body=body)) == []


def test_tuple_assignment_chunks_and_a_mask_known_by_its_name():
    src = """\
    import torch.nn.functional as F
    from einops import repeat

    def cross(q, k, v, context_mask):
        mask = repeat(context_mask, "b m -> b m d", d=v.shape[-1])
        k, v = k * mask, v * mask
        return F.scaled_dot_product_attention(q, k, v)

    def chunked(q, kv, tokens, pad_id):
        kv = kv * (tokens != pad_id)[:, None, :, None]
        k, v = kv.chunk(2, dim=-1)
        return F.scaled_dot_product_attention(q, k, v)

    def not_padding(q, k, v, head_mask, attn_mask, causal_mask):
        k = k * head_mask * causal_mask
        return F.scaled_dot_product_attention(q, k, v * attn_mask)
    """
    assert found(src) == [("MHA015", 7, 12), ("MHA015", 12, 12)]
    first = analyze_source(textwrap.dedent(src), "t.py", ["MHA015"])[0]
    assert first.message.startswith("`mask`, a mask by its name, is applied to the keys and values")
    assert first.evidence["mask"]["by_name"] is True
    assert first.evidence["mask"]["applied"] == "k * mask"


def test_messages_name_what_was_masked_and_the_fix():
    (keys,) = messages(SDPA.format(
        body="return F.scaled_dot_product_attention(q, k * keep[:, None, :, None], v)"))
    assert keys.startswith("mask from line 6 (tokens != pad_id) is a keep-mask applied to the keys")
    assert "weight exp(0)" in keys and "attn_mask=keep[:, None, None, :]" in keys
    (values,) = messages(SDPA.format(
        body="return F.scaled_dot_product_attention(q, k, v.masked_fill(~keep[..., None], 0))"))
    assert "an ignore-mask applied to the values" in values
    assert "dilute the output" in values


def test_handwritten_keys_and_values_are_reported_where_masked():
    src = """\
    import torch

    def attend(q, k, v, tokens, pad_id):
        keep = (tokens != pad_id).float()[:, None, :, None]
        k = k * keep
        v = v * keep
        scores = q @ k.transpose(-2, -1)
        return torch.softmax(scores, dim=-1) @ v
    """
    assert found(src) == [("MHA015", 5, 9), ("MHA015", 6, 9)]


def test_handwritten_values_of_attention_by_use():
    src = """\
    import torch

    def attend(scores, v, tokens, pad_id):
        keep = (tokens != pad_id).float()[:, :, None]
        w = torch.softmax(scores, dim=-1)
        return torch.bmm(w, v * keep)
    """
    assert found(src) == [("MHA015", 6, 25)]


@pytest.mark.parametrize("mask_scores", [
    "scores = scores.masked_fill(keep[:, None, None, :, 0] == 0, float('-inf'))",
    "scores = scores + bias_mask",
    "scores = scores * keep[:, None, None, :, 0]",   # MHA012's finding, not this one
    "scores = scores + position_bias",                # a bias may hold -inf at the padding
])
def test_handwritten_scores_masked_anyway_are_silent(mask_scores):
    src = f"""\
    import torch

    def attend(q, k, v, tokens, pad_id, bias_mask, position_bias):
        keep = (tokens != pad_id).float()[:, None, :, None]
        k = k * keep
        scores = q @ k.transpose(-2, -1)
        {mask_scores}
        return torch.softmax(scores, dim=-1) @ v
    """
    assert found(src) == []


def test_scores_made_by_a_helper_that_may_mask_them_are_silent():
    src = """\
    import torch

    def attend(q, k, v, tokens, pad_id, bias, helper):
        keep = (tokens != pad_id).float()[:, None, :, None]
        v = v * keep
        attn = helper(q @ k.transpose(-2, -1), bias)
        return torch.softmax(attn, dim=-1) @ v
    """
    assert found(src) == []


def test_multihead_attention_with_masked_memory():
    src = """\
    import torch.nn as nn

    attn = nn.MultiheadAttention(64, 4, batch_first=True)

    def pool(query, memory, tokens, pad_id, pad):
        keep = (tokens != pad_id).unsqueeze(-1)
        memory = memory * keep
        a = attn(query, memory, memory, need_weights=False)[0]
        b = attn(query, memory, memory, key_padding_mask=pad, need_weights=False)[0]
        return a + b
    """
    assert found(src) == [("MHA015", 8, 9)]


# --------------------------------------------------------------------------- real flake8

def test_real_flake8_reports_the_fixture_exactly():
    from fixture_expect import expected, flake8_findings

    status, got = flake8_findings(FIXTURE)
    assert status == 1
    assert got == expected(ROOT / "fixtures" / FIXTURE)
    assert (36, 15, "MHA015") in got and (157, 16, "MHA015") in got and len(got) == 8


def test_explain_mha015():
    proc = subprocess.run([sys.executable, "-m", "flake8_mha.frontends.cli", "explain", "MHA015"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    assert proc.stdout.startswith("# MHA015: mask-on-keys-values\n")


# --------------------------------------------------------------------------- the witness

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="torch is not installed")


def _evidence(line: int) -> dict:
    path = ROOT / "fixtures" / FIXTURE
    (f,) = [f for f in analyze_source(path.read_text(), str(path), ["MHA015"]) if f.line == line]
    return f.evidence


@needs_torch
@pytest.mark.parametrize("line, sink, masked", [
    (36, "sdpa", ["keys", "values"]),
    (62, "handwritten", ["keys"]),
    (69, "handwritten", ["values"]),
    (98, "MultiheadAttention", ["keys", "values"]),
])
def test_witness_measures_the_difference_and_the_weight_on_padding(line, sink, masked):
    from flake8_mha.confirm.witnesses import CONFIRMED, WITNESSES

    ev = _evidence(line)
    assert ev["sink"] == sink and ev["masked"] == masked
    got = WITNESSES["MHA015"].run(ev)
    assert got["verdict"] == CONFIRMED
    assert got["measured"]["max_error_against_inf"] > 0.3
    assert got["measured"]["weight_on_masked_keys"] > 0.5
    assert "% of sample 0's attention weight on its 6 masked keys" in got["damage"]


@needs_torch
def test_witness_says_when_the_mask_is_known_by_its_name_only():
    from flake8_mha.confirm.witnesses import CONFIRMED_ASSUMED, WITNESSES

    got = WITNESSES["MHA015"].run({"sink": "sdpa", "masked": ["keys", "values"],
                                   "mask": {"meaning": None, "by_name": True}})
    assert got["verdict"] == CONFIRMED_ASSUMED
    assert any("by its name only" in d for d in got["depends_on"])


@needs_torch
def test_witness_numbers_of_the_threshold_text():
    from flake8_mha.confirm.witnesses import WITNESSES

    got = WITNESSES["MHA015"].run({"sink": "sdpa", "masked": ["keys", "values"]})
    assert round(got["measured"]["max_error_against_inf"], 3) == 0.992
    assert round(got["measured"]["weight_on_masked_keys"], 2) == 0.52
    assert "9.924e-01 off, 52%" in WITNESSES["MHA015"].threshold_text


def test_keys_and_values_masked_before_a_wrapper_that_splits_heads():
    """``fixtures/program_calls/kv_heads``: the wrapper splits each of q, k, v
    into heads (``map(lambda t: rearrange(...), (q, k, v))``, a generator)
    and hands them to SDPA; the keys and values its callers zeroed reach it
    (MHA015 at the caller), the callers that pass the mask instead are
    right.  Per file, over the package and through ``check``."""
    from fixture_expect import assert_package_runs

    found = assert_package_runs("fixtures/program_calls/kv_heads", [
        ("cross.py", 20, 16, "MHA015"), ("flags.py", 22, 16, "MHA015"),
        ("pooling.py", 16, 16, "MHA015")])
    assert all("through AttentionCore.forward()" in f.msg or "through attend()" in f.msg
               for f in found)


def test_a_causal_flag_the_project_fixes_is_read_at_the_wrapper():
    """``is_causal=self.causal or causal`` (stable-audio-tools): ``or`` is
    read as Python reads it, with what every construction and call in the
    project passes. ``MaskedCross`` is built without ``causal`` and no call
    passes it: the flag is False and the zeroed keys reach SDPA unmasked
    (flags.py:22). ``CausalCross`` is built ``causal=True``: the triangle
    hides right padding from every real query, silent."""
    pkg = pathlib.Path(__file__).parent.parent / "fixtures/program_calls/kv_heads"
    got = [(f.code, f.line, f.col) for f in analyze_file(str(pkg / "flags.py"), ["MHA015"])]
    assert got == [("MHA015", 22, 16)]


SPLIT = """\
    import torch.nn as nn
    import torch.nn.functional as F

    class Pool(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.heads = heads
            self.to_k = nn.Linear(dim, dim)

        def transpose_for_scores(self, x):
            new_shape = x.size()[:-1] + (self.heads, -1)
            x = x.view(new_shape)
            return x.permute(0, 2, 1, 3)

        def summed(self, x):
            return x.sum(1, keepdim=True)

        def forward(self, q, x, tokens, pad_id):
            keep = (tokens != pad_id)[:, :, None]
            k = self.HELPER(self.to_k(x) * keep)
            return F.scaled_dot_product_attention(q, k, k)
    """


def test_a_helper_that_splits_heads_keeps_the_rows_it_is_given():
    """BERT's ``transpose_for_scores``: the zeroed keys it is given are the
    keys SDPA reads (MHA015 at the call); a helper that mixes the rows
    (``x.sum(1)``) says nothing of them."""
    assert found(SPLIT.replace("HELPER", "transpose_for_scores")) == [("MHA015", 21, 16)]
    assert found(SPLIT.replace("HELPER", "summed")) == []


def test_a_wrapper_that_splits_heads_with_rearrange_many(tmp_path):
    """einops-exts' ``rearrange_many((q, k, v), "b n (h d) -> b h n d",
    h=heads)`` in a wrapper of another file keeps each tensor's rows: the
    caller's zeroed keys and values reach SDPA (MHA015 at the call)."""
    from fixture_expect import write_package

    pkg = write_package(tmp_path / "pkg", {
        "core.py": (
            "import torch.nn.functional as F\n"
            "from einops_exts import rearrange_many\n\n\n"
            "def attend(q, k, v, heads, mask=None):\n"
            "    q, k, v = rearrange_many((q, k, v), 'b n (h d) -> b h n d', h=heads)\n"
            "    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)\n"),
        "cross.py": (
            "from .core import attend\n\n\n"
            "def cross(q, k, v, tokens, pad_id, heads):\n"
            "    keep = (tokens != pad_id)[:, :, None]\n"
            "    return attend(q, k * keep, v * keep, heads)\n"),
    })
    got = analyze_file(str(pkg / "cross.py"), ["MHA015"])
    assert [(f.code, f.line, f.col) for f in got] == [("MHA015", 6, 12)]


@pytest.mark.parametrize(
    "bound, reported",
    [
        ("frame_mask[:, None, :, None].to(k.dtype)", True),
        ("frame_mask.unsqueeze(1).unsqueeze(-1).float()", True),
        ("frame_mask.sum(-1, keepdim=True)", False),  # a count, not the mask
        ("attn_mask[:, None, :, None].float()", False),  # an attention mask
    ],
)
def test_a_local_bound_to_a_mask_by_its_name(bound, reported):
    """A conformer's streaming layer: ``keep = frame_mask[...]`` then ``k *
    keep``; the local is what its one definition shapes."""
    src = f"""\
        import torch.nn.functional as F
        def attend(q, k, v, frame_mask):
            keep = {bound}
            k = k * keep
            return F.scaled_dot_product_attention(q, k, v)
        """
    assert found(src, "MHA015") == ([("MHA015", 5, 12)] if reported else [])


def test_a_softmax_helper_of_the_file_is_the_softmax():
    # OpenFold's global attention: ``softmax_no_cast(a)`` wraps F.softmax (probe F)
    src = """\
    import torch
    import torch.nn as nn


    def softmax_no_cast(t, dim=-1):
        return torch.nn.functional.softmax(t, dim=dim)


    class GlobalAttention(nn.Module):
        def __init__(self, c_in=16, c_hidden=8):
            super().__init__()
            self.linear_k = nn.Linear(c_in, c_hidden, bias=False)
            self.linear_v = nn.Linear(c_in, c_hidden, bias=False)

        def forward(self, q, m, mask):
            k = self.linear_k(m) * mask.unsqueeze(-1)
            v = self.linear_v(m) * mask.unsqueeze(-1)
            a = torch.matmul(q[..., None, :], k.transpose(-1, -2))
            a = softmax_no_cast(a)
            return torch.matmul(a, v)
    """
    assert found(src, "MHA015") == [("MHA015", 16, 13), ("MHA015", 17, 13)]
    # over another axis, the helper is no softmax of attention scores
    other = src.replace("def softmax_no_cast(t, dim=-1):", "def softmax_no_cast(t, dim=1):")
    assert found(other, "MHA015") == []
