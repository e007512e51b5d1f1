"""MHA016 mask-heads-order (issue 27): a per-sample mask expanded to
nn.MultiheadAttention's 3-D attn_mask head-major.  Checked as a user sees
it: code, line and column through the engine and a real flake8 process; the
witness compares with key_padding_mask using real torch."""
from __future__ import annotations

import importlib.util
import pathlib
import textwrap

import pytest

from flake8_mha.lint.engine import analyze_source

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURE = "MHA016_mask_heads_order.py"

BLOCK = """\
    import einops
    import torch
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self, num_heads):
            super().__init__()
            self.num_heads = num_heads
            self.attn = nn.MultiheadAttention(64, num_heads, batch_first=True)

        def forward(self, x, tokens, pad_id, L):
            pad = (tokens == pad_id)[:, None, :].expand(-1, L, -1)
            mask = {expand}
            return self.attn(x, x, x, attn_mask=mask, need_weights=False)[0]
    """


def found(source: str):
    out = analyze_source(textwrap.dedent(source), "t.py", ["MHA016"])
    return [(f.code, f.line, f.col) for f in out]


@pytest.mark.parametrize("expand", [
    "pad.repeat(self.num_heads, 1, 1)",
    "pad.float().repeat(self.num_heads, 1, 1)",
    "pad.repeat((self.num_heads, 1, 1))",
    "torch.tile(pad, (self.num_heads, 1, 1))",
    "torch.cat([pad] * self.num_heads)",
    "torch.cat(self.num_heads * [pad], dim=0)",
    "torch.cat([pad for _ in range(self.num_heads)], 0)",
    "(tokens == pad_id)[:, None, :].repeat(self.num_heads, L, 1)",
    "einops.repeat(pad, 'b i j -> (h b) i j', h=self.num_heads)",
    # thresholded after the expansion (Mask2Former's form, head-major here)
    "pad.float().unsqueeze(0).repeat(self.num_heads, 1, 1, 1).flatten(0, 1) < 0.5",
    "(pad.float().repeat(self.num_heads, 1, 1) < 0.5).bool()",
])
def test_head_major_expansions_of_a_per_sample_mask(expand):
    assert found(BLOCK.format(expand=expand)) == [("MHA016", 14, 16)]


@pytest.mark.parametrize("expand", [
    "pad.repeat_interleave(self.num_heads, dim=0)",
    "pad[:, None].expand(-1, self.num_heads, L, L).reshape(-1, L, L)",
    "pad.unsqueeze(1).repeat(1, self.num_heads, 1, 1).flatten(0, 1)",
    "einops.repeat(pad, 'b i j -> (b h) i j', h=self.num_heads)",
    # Mask2Former's own: batch-major, then thresholded
    "(pad.float().unsqueeze(1).repeat(1, self.num_heads, 1, 1).flatten(0, 1) < 0.5).bool()",
    "einops.repeat(pad, 'b i j -> (h b) i j', h=2)",
    "pad.repeat(2, 1, 1)",                                  # not the head count
    "torch.cat([pad] * 2)",                                 # classifier-free guidance
    "torch.cat([pad] * self.num_heads, dim=1)",             # another axis
    "torch.triu(torch.ones(L, L, dtype=torch.bool), 1).repeat(self.num_heads, 1, 1)",
    # one block mask of positions copied to every sample (a streaming encoder's
    # chunks): the same for every sample, so the order of the copies is moot
    "((torch.arange(L)[:, None] // 4) != (torch.arange(L)[None, :] // 4))[None]"
    ".expand(x.shape[0], -1, -1).repeat(self.num_heads, 1, 1)",
    "(torch.arange(L)[:, None] // 4 != torch.arange(L)[None, :] // 4).unsqueeze(0)"
    ".repeat(x.shape[0], 1, 1).repeat(self.num_heads, 1, 1)",
])
def test_batch_major_and_shared_masks_are_silent(expand):
    assert found(BLOCK.format(expand=expand)) == []


def test_a_parameter_named_as_a_causal_mask_is_silent_an_unknown_one_is_reported():
    src = """\
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self, n_head):
            super().__init__()
            self.n_head = n_head
            self.attn = nn.MultiheadAttention(64, n_head)

        def forward(self, x, causal_mask, attn_mask):
            a = self.attn(x, x, x, attn_mask=causal_mask.repeat(self.n_head, 1, 1))[0]
            b = self.attn(x, x, x, attn_mask=attn_mask.repeat(self.n_head, 1, 1))[0]
            return a + b
    """
    assert found(src) == [("MHA016", 11, 13)]
    (f,) = analyze_source(textwrap.dedent(src), "t.py", ["MHA016"])
    assert f.evidence["per_sample"] is None and f.evidence["via"] == "repeat"


def test_message_names_the_expansion_and_the_fix():
    (f,) = analyze_source(textwrap.dedent(BLOCK.format(
        expand="pad.repeat(self.num_heads, 1, 1)")), "t.py", ["MHA016"])
    assert f.message.startswith(
        "`pad.repeat(self.num_heads, 1, 1)` repeats the mask head-major, but "
        "MultiheadAttention's 3-D attn_mask is read batch-major")
    assert "(use pad.repeat_interleave(self.num_heads, dim=0))" in f.message
    assert f.evidence["per_sample"] is True and f.evidence["expansion_line"] == 13


HELPERS = """\
    import torch.nn as nn

    def tile(mask, heads):
        return mask.repeat(heads, 1, 1)

    def interleave(mask, heads):
        return mask.repeat_interleave(heads, dim=0)

    class Block(nn.Module):
        def __init__(self, num_heads):
            super().__init__()
            self.num_heads = num_heads
            self.attn = nn.MultiheadAttention(64, num_heads, batch_first=True)

        def expand(self, mask):
            return mask.repeat(self.num_heads, 1, 1)

        def forward(self, x, tokens, pad_id, L):
            pad = (tokens == pad_id)[:, None, :].expand(-1, L, -1)
            a = self.attn(x, x, x, attn_mask=tile(pad, self.num_heads))[0]
            b = self.attn(x, x, x, attn_mask=self.expand(pad))[0]
            c = self.attn(x, x, x, attn_mask=interleave(pad, self.num_heads))[0]
            return a + b + c
    """


def test_a_helper_of_the_file_that_expands_its_parameter_head_major():
    """A function or a ``self`` method whose one return repeats its
    parameter head-major expands the caller's argument; one that interleaves
    does not."""
    assert found(HELPERS) == [("MHA016", 20, 13), ("MHA016", 21, 13)]
    out = analyze_source(textwrap.dedent(HELPERS), "t.py", ["MHA016"])
    assert out[0].evidence["expansion"] == "tile(pad, self.num_heads)"
    # the head count as the caller writes it, where the fix goes
    assert "(use pad.repeat_interleave(self.num_heads, dim=0))" in out[0].message


def test_real_flake8_reports_the_fixture_exactly():
    from fixture_expect import expected, flake8_findings

    status, got = flake8_findings(FIXTURE)
    assert status == 1
    assert got == expected(ROOT / "fixtures" / FIXTURE)
    assert got == {
        (24, 16, "MHA016"), (29, 16, "MHA016"), (63, 16, "MHA016"), (78, 16, "MHA016"),
        (118, 16, "MHA016"),  # the padding folded into a bias by masked_fill
    }


needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="torch is not installed")


@needs_torch
@pytest.mark.parametrize("line, via", [(24, "repeat"), (29, "cat"), (63, "expand"), (78, "repeat")])
def test_witness_compares_with_key_padding_mask(line, via):
    from flake8_mha.confirm.witnesses import CONFIRMED, WITNESSES

    path = ROOT / "fixtures" / FIXTURE
    (f,) = [f for f in analyze_source(path.read_text(), str(path), ["MHA016"]) if f.line == line]
    assert f.evidence["via"] == via and f.evidence["per_sample"] is True
    got = WITNESSES["MHA016"].run(f.evidence)
    assert got["verdict"] == CONFIRMED
    assert round(got["measured"]["max_error"], 3) == 0.566
    assert got["measured"]["max_error_batch_major"] < 1e-6


@needs_torch
def test_witness_says_when_it_assumed_the_masks_differ():
    from flake8_mha.confirm.witnesses import CONFIRMED_ASSUMED, WITNESSES

    got = WITNESSES["MHA016"].run({"via": "repeat", "per_sample": None})
    assert got["verdict"] == CONFIRMED_ASSUMED
    assert any("differs per sample" in d for d in got["depends_on"])


BUILDER = """\
    import torch
    import torch.nn as nn

    class Decoder(nn.Module):
        def __init__(self, width=64, heads=4, pad_id=0):
            super().__init__()
            self.heads = heads
            self.pad_id = pad_id
            self.cross = nn.MultiheadAttention(width, heads)

        def build_mask(self, text):
            {body}

        def forward(self, x, text):
            mask = self.build_mask(text)
            return self.cross(x, x, x, attn_mask=mask, need_weights=False)[0]
    """


def test_a_method_that_builds_and_expands_the_mask_itself():
    # probe F (open_clip's text tower style): the pad mask made and tiled in a method
    body = (
        "pad = (text == self.pad_id)[:, None, :].expand(-1, text.shape[1], -1)\n"
        "            return pad.repeat(self.heads, 1, 1)"
    )
    assert found(BUILDER.format(body=body)) == [("MHA016", 17, 16)]
    grouped = body.replace("pad.repeat(self.heads, 1, 1)", "pad.repeat_interleave(self.heads, 0)")
    assert found(BUILDER.format(body=grouped)) == []
    causal = (
        "L = text.shape[1]\n"
        "            causal = torch.triu(torch.ones(L, L, dtype=torch.bool), 1)\n"
        "            return causal[None].repeat(self.heads, 1, 1)"
    )
    assert found(BUILDER.format(body=causal)) == []
