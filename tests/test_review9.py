"""Release review 9 and probe I (twentieth stop): each false finding and miss
cut to its form, with the exact code, line and column."""

from __future__ import annotations

import textwrap

import pytest
from fixture_expect import assert_package_runs, write_package

from flake8_mha.analysis.layout.domain import BATCH, EMBED, SEQ, parse_shape_comment
from flake8_mha.lint.engine import analyze_source, select_codes


def _found(src, codes, path="m.py"):
    return [(f.code, f.line, f.col) for f in analyze_source(textwrap.dedent(src), path, codes)]


# -- faesm (flash-attn's reference): ``~key_padding_mask`` reshaped, then filled

FILL = """\
import torch
from einops import rearrange


def attention_ref(q, k, v, key_padding_mask=None):
    scores = torch.einsum("bthd,bshd->bhts", q, k)
    if key_padding_mask is not None:
        scores.masked_fill_(FILLED, float("-inf"))
    return torch.einsum("bhts,bshd->bthd", torch.softmax(scores, dim=-1), v)
"""


@pytest.mark.parametrize(
    "filled",
    [
        'rearrange(~key_padding_mask, "b s -> b 1 1 s")',
        "(~key_padding_mask)[:, None, None, :]",
        "(~key_padding_mask).unsqueeze(1).unsqueeze(2)",
        "~key_padding_mask[:, None, None, :]",
    ],
)
def test_a_named_mask_the_code_inverts_then_reshapes_keeps_its_convention(filled):
    assert _found(FILL.replace("FILLED", filled), ["MHA003"]) == []


KNOWN = """\
import torch
from einops import rearrange


def attend(q, k, v, lengths):
    scores = q @ k.transpose(-2, -1)
    pad = torch.arange(k.shape[2])[None, :] >= lengths[:, None]
    scores = scores.masked_fill(FILLED, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
"""


@pytest.mark.parametrize(
    "filled",
    ["(~pad)[:, None, None, :]", 'rearrange(~pad, "b s -> b 1 1 s")', "~pad[:, None, None, :]"],
)
def test_a_mask_the_code_explains_is_judged_however_reshaped(filled):
    # ``pad`` is an ignore-mask by its making: inverted, a keep-mask at the fill
    assert _found(KNOWN.replace("FILLED", filled), ["MHA003"]) == [("MHA003", 8, 14)]


def test_a_caller_handing_on_its_own_named_mask_is_not_reported(tmp_path):
    # the callee inverts it itself; only the name says what either means
    pkg = write_package(
        tmp_path / "faesm",
        {
            "ref.py": FILL.replace("FILLED", 'rearrange(~key_padding_mask, "b s -> b 1 1 s")'),
            "packed.py": "from .ref import attention_ref\n\n\n"
            "def attention_qkvpacked_ref(qkv, key_padding_mask=None):\n"
            "    return attention_ref(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], "
            "key_padding_mask)\n"
            "\n\ndef padded(qkv, lengths):\n"
            "    pad = torch.arange(qkv.shape[1])[None, :] >= lengths[:, None]\n"
            "    return attention_ref(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], pad)\n",
        },
    )
    path = pkg / "packed.py"
    text = "import torch\n" + path.read_text()
    path.write_text(text)
    # a padding mask the caller builds, inverted by the callee: keep at the fill
    assert _found(text, ["MHA003"], str(path)) == [("MHA003", 11, 12)]


# -- pykeen: a shape comment of bare axis names, or after ``shape:``


@pytest.mark.parametrize(
    "comment, roles",
    [
        ("# seq_length, batch_size, dim", (SEQ, BATCH, EMBED)),
        ("# shape: (seq_len, batch_size, dim)", (SEQ, BATCH, EMBED)),
        ("# batch, seq, dim", (BATCH, SEQ, EMBED)),
    ],
)
def test_bare_axis_names_state_the_value(comment, roles):
    assert parse_shape_comment(comment) == {None: roles}


@pytest.mark.parametrize("comment", ["# q, k, v", "# first, second, third", "# see the paper"])
def test_names_that_are_not_axes_state_nothing(comment):
    assert parse_shape_comment(comment) == {}


PYKEEN = """\
import torch
from torch import nn


class TransformerInteraction(nn.Module):
    def __init__(self, input_dim=512, num_heads=8):
        super().__init__()
        self.transformer = nn.TransformerEncoder(
            encoder_layer=nn.TransformerEncoderLayer(d_model=input_dim, nhead=num_heads),
            num_layers=2,
        )

    def forward(self, h, r):
        x = torch.stack(torch.broadcast_tensors(h, r), dim=0)
        x = x.view(2, -1, x.shape[-1])
        COMMENT
        x = self.transformer(src=x)
        return x.sum(dim=0)
"""


def test_pykeens_two_token_sequence_is_sequence_first():
    assert _found(PYKEEN.replace("COMMENT", "# seq_length, batch_size, dim"), ["MHA001"]) == []
    found = analyze_source(
        PYKEEN.replace("COMMENT", "# shape: (seq_len, batch_size, dim)"), "m.py", ["MHA903"]
    )
    assert [(f.code, f.line, f.col) for f in found] == [("MHA903", 9, 27)]
    assert "line 16" in found[0].message
    # nothing said: the layout stays unknown, and MHA001 says so
    assert _found(PYKEEN.replace("COMMENT", "pass"), ["MHA001"]) == [("MHA001", 9, 27)]


def test_a_comment_over_the_call_that_rebinds_the_data_states_its_layout():
    # pykeen as released: the comment heads ``x = self.transformer(src=x)``,
    # whose output keeps the input's layout; two statements after the view
    src = PYKEEN.replace(
        "        COMMENT\n",
        "        x = x + self.pos.unsqueeze(dim=1)\n        # seq_length, batch_size, dim\n",
    )
    found = analyze_source(src, "m.py", ["MHA001", "MHA903"])
    assert [(f.code, f.line, f.col) for f in found] == [("MHA903", 9, 27)]
    assert "line 17" in found[0].message
    # the same comment over a function call says nothing of what it is fed
    helper = src.replace(
        "x = self.transformer(src=x)", "x = self.mix(x)\n        x = self.transformer(src=x)"
    )
    assert _found(helper, ["MHA001"]) == [("MHA001", 9, 27)]


# -- torchtext's T5: an nn.MultiheadAttention subclass with a forward of its own

T5 = """\
import torch.nn as nn
import torch.nn.functional as F


class T5MultiheadAttention(nn.MultiheadAttention):
    def __init__(self, embed_dim, num_heads, dropout=0.0):
        super().__init__(embed_dim, num_heads, dropout, False, False, False, None, None, True)

    def forward(self, query, key, value):
        FORWARD


attn = T5MultiheadAttention(512, 7)
"""


def test_a_forward_of_its_own_leaves_no_fast_path_to_block():
    own = T5.replace("FORWARD", "return F.scaled_dot_product_attention(query, key, value), None")
    assert _found(own, select_codes(["MHA9", "MHA101"])) == []
    torch_s = T5.replace("FORWARD", "return super().forward(query.transpose(0, 1), key, value)")
    # torch's forward still runs: its fast path is blocked by ``bias=False``
    assert _found(torch_s, select_codes(["MHA9", "MHA101"])) == [("MHA901", 7, 9)]


# -- probe I: a 0/1 mask written in place with 0/1 keeps what it is

PREFIX = """\
import torch
import torch.nn.functional as F


def prefix_lm_mask(T, prefix_len):
    causal = torch.tril(torch.ones(T, T))
    causal[:, :prefix_len] = VALUE
    return causal


def attend(q, k, v, prefix_len):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=prefix_lm_mask(q.shape[2], prefix_len))
"""


def test_a_float_mask_filled_in_place_with_ones_is_still_a_float_mask():
    assert _found(PREFIX.replace("VALUE", "1.0"), ["MHA004"]) == [("MHA004", 12, 12)]
    # another value makes it unknown
    assert _found(PREFIX.replace("VALUE", "0.5"), ["MHA004"]) == []


# -- neuralhydrology: a class of another file that says what it gives back


def test_a_stated_output_of_another_files_class_over_the_package():
    assert_package_runs(
        "fixtures/program_layout/stated_outputs",
        [("transformer.py", 30, 17, "MHA001")],
        select="MHA0,MHA1",
    )
