"""Mask conventions: the domain, the evaluator, the four rules (MHA002,
MHA003, MHA004, MHA009) through the engine, and the fixtures through a real
flake8 process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import libcst as cst
import pytest

from fixture_expect import FIXTURES, ROOT, expected
from flake8_mha.lint.engine import Context, analyze_source
from flake8_mha.analysis.events import ModuleCall, SdpaCall, classify
from flake8_mha.analysis.flow import FlowPass
from flake8_mha.analysis.masks import (
    ADDITIVE,
    BOOL,
    FLOAT01,
    IGNORE,
    INT,
    KEEP,
    NONE_MASK,
    UNKNOWN_MASK,
    Mask,
    Origin,
    analysis_for,
    broadcast,
    combine,
    join,
    shape_class,
    tri_complement,
    tri_meaning,
    tri_transpose,
)
from flake8_mha.analysis.resolve import Resolver

CODES = ["MHA002", "MHA003", "MHA004", "MHA009"]
HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def findings(src: str, codes=CODES):
    return analyze_source(HEAD + textwrap.dedent(src), codes=codes, use_prefilter=False)


def got(src: str, codes=CODES):
    """(line, col, code) of every finding; lines count from the first line of ``src``."""
    n = HEAD.count("\n")
    return {(f.line - n, f.col, f.code) for f in findings(src, codes)}


def sink_values(src: str):
    """Every mask sink of the source with the value reaching it."""
    src = HEAD + textwrap.dedent(src)
    module = cst.parse_module(src)
    flow = FlowPass()
    flow.run(module)
    resolver = Resolver(flow)
    ctx = Context(module, flow, resolver)
    a = analysis_for(ctx)
    out = []
    for site in flow.calls:
        ev = classify(site, resolver)
        if isinstance(ev, ModuleCall):
            sinks = a.module_sinks(ev)
        elif isinstance(ev, SdpaCall):
            sinks = [s for s in [a.sdpa_sink(ev)] if s]
        else:
            sinks = [s for s in [a.fill_sink(site)] if s]
        for s in sinks:
            out.append((s, a.value(s)))
    return out


def only_value(src: str) -> Mask:
    """The value reaching the one SDPA/module sink of ``src``."""
    values = [(s, v) for s, v in sink_values(src) if s.attention]
    assert len(values) == 1, values
    return values[0][1]


# ----------------------------------------------------------------------------- the domain


def _o(text="x"):
    return Origin(cst.Name("x"), text)


def test_join_none_contributes_nothing():
    m = Mask(meaning=IGNORE, kind=BOOL, origin=_o())
    assert join(NONE_MASK, m) == m
    assert join(m, NONE_MASK) == m
    assert join(NONE_MASK, NONE_MASK).none


def test_join_disagreeing_parts_become_unknown():
    a = Mask(meaning=IGNORE, kind=BOOL, layout=("N", "S"), origin=_o("a"))
    b = Mask(meaning=KEEP, kind=BOOL, layout=("N", "S"), origin=_o("b"))
    j = join(a, b)
    assert j.meaning is None and j.origin is None
    assert j.kind == BOOL and j.layout == ("N", "S")
    assert join(a, UNKNOWN_MASK).meaning is None


def test_combine_same_meaning_keeps_it_and_broadcasts():
    pad = Mask(meaning=KEEP, kind=BOOL, layout=("N", "1", "1", "S"), origin=_o())
    causal = Mask(meaning=KEEP, kind=BOOL, layout=("L", "S"), origin=_o())
    both = combine(pad, causal, cst.Name("m"), "m", "and")
    assert both.meaning == KEEP and both.shape == "broadcast"
    assert both.layout == ("N", "1", "L", "S")
    mixed = combine(pad, Mask(meaning=IGNORE, kind=BOOL, origin=_o()), cst.Name("m"), "m", "and")
    assert mixed.meaning is None


def test_combine_mul_promotes_kind():
    a = Mask(meaning=KEEP, kind=INT, origin=_o())
    b = Mask(meaning=KEEP, kind=FLOAT01, origin=_o())
    assert combine(a, b, cst.Name("m"), "m", "mul").kind == FLOAT01


def test_shape_classes():
    assert shape_class(("N", "S")) == "padding"
    assert shape_class(("L", "S")) == "square"
    assert shape_class(("N", "1", "1", "S")) == "broadcast"
    assert shape_class(("1", "1", "L", "S")) == "broadcast"
    assert shape_class(("N", "1", "S")) is None
    assert shape_class(None) is None
    assert broadcast(("N", "S"), ("L", "S")) is None


def test_triangles():
    assert tri_meaning(("lower", 0)) == KEEP
    assert tri_meaning(("upper", 1)) == IGNORE
    assert tri_meaning(("upper", 0)) is None
    assert tri_complement(("lower", 0)) == ("upper", 1)
    assert tri_transpose(("upper", 0)) == ("lower", 0)


# ----------------------------------------------------------------------------- sources


@pytest.mark.parametrize(
    "expr,meaning",
    [
        ("tokens == pad_id", IGNORE),
        ("tokens != pad_id", KEEP),
        ("tokens.eq(self.padding_idx)", IGNORE),
        ("tokens.ne(self.padding_idx)", KEEP),
        ("torch.eq(tokens, pad_id)", IGNORE),
        ("pad_id == tokens", IGNORE),
        ("input_ids == 0", IGNORE),
        ("torch.arange(S)[None, :] >= lengths[:, None]", IGNORE),
        ("torch.arange(S)[None, :] < lengths[:, None]", KEEP),
        ("lengths[:, None] > torch.arange(S)[None, :]", KEEP),
        ("lengths.unsqueeze(1) <= torch.arange(S).unsqueeze(0)", IGNORE),
    ],
)
def test_padding_sources(expr, meaning):
    m = only_value(f"""
        class A(nn.Module):
            def f(self, q, k, v, tokens, pad_id, input_ids, lengths, S):
                m = {expr}
                return F.scaled_dot_product_attention(q, k, v, attn_mask=m)
        """)
    assert m.meaning == meaning
    assert m.kind == BOOL
    assert m.shape == "padding"


@pytest.mark.parametrize("count", ["n_valid", "num_frames", "n_patches", "token_count",
                                   "valid_tokens", "num_tokens"])
@pytest.mark.parametrize("expr,meaning", [
    ("torch.arange(S)[None, :] >= COUNT[:, None]", IGNORE),
    ("torch.arange(S)[None, :] < COUNT.unsqueeze(1)", KEEP),
])
def test_a_per_sample_count_shaped_as_a_column_is_a_length(count, expr, meaning):
    """timm's NaFlex ``positions[None, :] >= n_valid[:, None]``: a count of
    real items per sample, beside an arange row, is a length by any of the
    names counts go by."""
    m = only_value(f"""
        def f(q, k, v, {count}, S):
            m = {expr.replace("COUNT", count)}
            return F.scaled_dot_product_attention(q, k, v, attn_mask=m)
        """)
    assert (m.meaning, m.kind, m.shape) == (meaning, BOOL, "padding")


@pytest.mark.parametrize("expr", [
    # a count compared as it is may be a maximum (``arange(S) < self.num_tokens``)
    "torch.arange(S) < num_tokens",
    # a count of padding, a start, a maximum: not the real items
    "torch.arange(S)[None, :] >= n_pad[:, None]",
    "torch.arange(S)[None, :] >= start_count[:, None]",
    "torch.arange(S)[None, :] >= max_tokens[:, None]",
])
def test_counts_that_are_no_lengths_say_nothing(expr):
    assert only_value(f"""
        def f(q, k, v, num_tokens, n_pad, start_count, max_tokens, S):
            m = {expr}
            return F.scaled_dot_product_attention(q, k, v, attn_mask=m)
        """).meaning is None


@pytest.mark.parametrize(
    "expr,meaning,kind",
    [
        ("torch.tril(torch.ones(L, L))", KEEP, FLOAT01),
        ("torch.tril(torch.ones(L, L, dtype=torch.bool))", KEEP, BOOL),
        ("torch.tril(torch.ones(L, L)).bool()", KEEP, BOOL),
        ("torch.ones(L, L).tril()", KEEP, FLOAT01),
        ("torch.ones(L, L, dtype=torch.bool).tril(diagonal=0)", KEEP, BOOL),
        ("torch.triu(torch.ones(L, L), diagonal=1)", IGNORE, FLOAT01),
        ("torch.triu(torch.ones(L, L), 1).bool()", IGNORE, BOOL),
        ("torch.ones(L, L, dtype=torch.bool).triu(1)", IGNORE, BOOL),
        ("(torch.triu(torch.ones(L, L)) == 1).transpose(0, 1)", KEEP, BOOL),
        ("torch.tril(torch.ones(L, L)) == 0", IGNORE, BOOL),
        ("torch.arange(L)[None, :] > torch.arange(L)[:, None]", IGNORE, BOOL),
        ("torch.arange(L)[:, None] >= torch.arange(L)[None, :]", KEEP, BOOL),
        ("nn.Transformer.generate_square_subsequent_mask(L)", ADDITIVE, ADDITIVE),
        ("torch.triu(torch.full((L, L), float('-inf')), diagonal=1)", ADDITIVE, ADDITIVE),
        ("torch.triu(torch.ones(L, L) * float('-inf'), diagonal=1)", ADDITIVE, ADDITIVE),
        ("torch.empty(L, L).fill_(float('-inf')).triu_(1)", ADDITIVE, ADDITIVE),
    ],
)
def test_causal_sources(expr, meaning, kind):
    m = only_value(f"""
        def f(q, k, v, L):
            m = {expr}
            return F.scaled_dot_product_attention(q, k, v, attn_mask=m)
        """)
    assert (m.meaning, m.kind) == (meaning, kind)
    assert m.shape == "square"


def test_pad_comparison_needs_a_token_tensor():
    src = """
        def f(q, k, v, lengths, pad_len, attn_mask, pad_value):
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=lengths == pad_len)
            b = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask == pad_value)
            return a, b
        """
    assert [v.meaning for _, v in sink_values(src)] == [None, None]


def test_unknown_diagonals_stay_unknown():
    m = only_value("""
        def f(q, k, v, L, d):
            m = torch.triu(torch.ones(L, L), d).bool()
            return F.scaled_dot_product_attention(q, k, v, attn_mask=m)
        """)
    assert m.meaning is None


@pytest.mark.parametrize(
    "expr,meaning,kind",
    [
        ('batch["attention_mask"]', KEEP, INT),
        ("inputs.attention_mask", KEEP, INT),
        ("key_padding_mask", IGNORE, BOOL),
        ("padding_mask", IGNORE, BOOL),
        ("pad_mask", IGNORE, BOOL),
        ("src_key_padding_mask", IGNORE, BOOL),
        ("mask", None, None),
        ("attn_mask", None, None),
    ],
)
def test_name_sources(expr, meaning, kind):
    m = only_value(f"""
        def f(q, k, v, batch, inputs, key_padding_mask, padding_mask, pad_mask,
              src_key_padding_mask, mask, attn_mask):
            return F.scaled_dot_product_attention(q, k, v, attn_mask={expr})
        """)
    assert (m.meaning, m.kind) == (meaning, kind)
    assert m.shape is None
    if meaning is not None:
        assert m.origin.by_name


def test_attention_mask_parameter_counts_only_beside_token_ids():
    """Inside attention layers transformers passes additive and True = ignore
    masks under the name attention_mask; beside the token ids it is the
    tokenizer's (1 = real token), an int64 tensor as ``batch["attention_mask"]``
    is (probe O)."""
    entry = only_value("""
        def f(q, k, v, input_ids, attention_mask):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask)
        """)
    assert (entry.meaning, entry.kind, entry.dtype) == (KEEP, INT, "int64")
    assert entry.origin.by_name
    layer = only_value("""
        def f(q, k, v, hidden_states, attention_mask):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask)
        """)
    assert layer.meaning is None


# ----------------------------------------------------------------------------- transfers


@pytest.mark.parametrize(
    "expr,meaning,kind,dtype",
    [
        ("~pad", KEEP, BOOL, "bool"),
        ("pad.logical_not()", KEEP, BOOL, "bool"),
        ("torch.logical_not(pad)", KEEP, BOOL, "bool"),
        ("pad == 0", KEEP, BOOL, "bool"),
        ("pad.eq(0)", KEEP, BOOL, "bool"),
        ("pad == False", KEEP, BOOL, "bool"),
        ("pad != 0", IGNORE, BOOL, "bool"),
        ("pad.float()", IGNORE, FLOAT01, "float32"),
        ("pad.half()", IGNORE, FLOAT01, "float16"),
        ("pad.to(torch.float16)", IGNORE, FLOAT01, "float16"),
        ("pad.to(q.dtype)", IGNORE, FLOAT01, None),
        ("pad.to(dtype=q.dtype)", IGNORE, FLOAT01, None),
        ("pad.type_as(q)", IGNORE, FLOAT01, None),
        ("pad.long()", IGNORE, INT, "int64"),
        ("pad.int()", IGNORE, INT, "int32"),
        ("pad.to(torch.uint8)", IGNORE, INT, "uint8"),
        ("pad.long().bool()", IGNORE, BOOL, "bool"),
        ("pad.float().to(torch.bool)", IGNORE, BOOL, "bool"),
        ("1 - pad.long()", KEEP, INT, "int64"),
        ("1.0 - pad.float()", KEEP, FLOAT01, "float32"),
        ("1.0 - pad.long()", KEEP, FLOAT01, "float32"),
        ("pad.to(q.device)", IGNORE, BOOL, "bool"),
        ("pad.to(device)", IGNORE, BOOL, "bool"),
        ("pad.clone().detach().contiguous()", IGNORE, BOOL, "bool"),
        ("pad.cuda()", IGNORE, BOOL, "bool"),
        ("~(~pad)", IGNORE, BOOL, "bool"),
        ("pad if flag else None", IGNORE, BOOL, "bool"),
        ("pad if flag else ~pad", None, BOOL, "bool"),
    ],
)
def test_transfers(expr, meaning, kind, dtype):
    m = only_value(f"""
        def f(q, k, v, tokens, pad_id, flag, device):
            pad = tokens == pad_id
            return F.scaled_dot_product_attention(q, k, v, attn_mask={expr})
        """)
    assert (m.meaning, m.kind, m.dtype) == (meaning, kind, dtype)


@pytest.mark.parametrize(
    "expr",
    [
        "pad.masked_fill(pad, float('-inf'))",
        "torch.zeros_like(pad, dtype=q.dtype).masked_fill(pad, float('-inf'))",
        "torch.zeros_like(pad, dtype=q.dtype).masked_fill(pad, torch.finfo(q.dtype).min)",
        "torch.zeros_like(pad, dtype=q.dtype).masked_fill_(pad, -1e9)",
        "pad.float() * -10000.0",
        "(1.0 - keep.float()) * -10000.0",
        "(1 - keep.long()) * torch.finfo(q.dtype).min",
        "-1e9 * (1.0 - keep.float())",
        "torch.where(keep, 0.0, float('-inf'))",
        "torch.where(pad, float('-inf'), 0.0)",
        "torch.zeros(L, L).masked_fill(pad, NEG)",
        "bias + torch.where(keep, 0.0, float('-inf'))",
    ],
)
def test_additive(expr):
    m = only_value(f"""
        NEG = -1e9
        def f(q, k, v, tokens, pad_id, L, bias):
            pad = tokens == pad_id
            keep = tokens != pad_id
            return F.scaled_dot_product_attention(q, k, v, attn_mask={expr})
        """)
    assert (m.meaning, m.kind) == (ADDITIVE, ADDITIVE)


@pytest.mark.parametrize(
    "expr,shape",
    [
        ("pad", "padding"),
        ("pad[:, None, None, :]", "broadcast"),
        ("pad.unsqueeze(1).unsqueeze(2)", "broadcast"),
        ("pad.unsqueeze(1).unsqueeze(1)", "broadcast"),
        ("pad.view(N, 1, 1, S)", "broadcast"),
        ("pad.reshape(N, 1, 1, -1)", "broadcast"),
        ("pad[:, None, None, :].expand(N, H, L, S)", "broadcast"),
        ("pad[:, None, :]", None),
        ("pad.unsqueeze(1)", None),
        ("pad[:, :S]", "padding"),
        ("pad[..., :S]", "padding"),
        ("pad[0]", None),
        ("pad.transpose(0, 1)", None),
        ("pad.float()", "padding"),
        ("pad & pad2", "padding"),
        ("pad[:, None, None, :] | causal", "broadcast"),
    ],
)
def test_shapes(expr, shape):
    m = only_value(f"""
        def f(q, k, v, tokens, pad_id, N, H, L, S):
            pad = tokens == pad_id
            pad2 = tokens == pad_id
            causal = torch.triu(torch.ones(L, L, dtype=torch.bool), 1)
            return F.scaled_dot_product_attention(q, k, v, attn_mask={expr})
        """)
    assert m.shape == shape
    assert m.meaning == IGNORE


def test_combinations_and_de_morgan():
    src = """
        def f(q, k, v, tokens, pad_id, L):
            keep = tokens != pad_id
            causal = torch.tril(torch.ones(L, L, dtype=torch.bool))
            future = torch.triu(torch.ones(L, L, dtype=torch.bool), 1)
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :] & causal)
            b = F.scaled_dot_product_attention(q, k, v, attn_mask=~(~keep[:, None] | future))
            c = F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :] & future)
            d = F.scaled_dot_product_attention(q, k, v, attn_mask=~keep[:, None, None, :] | future)
            return a, b, c, d
        """
    values = [v for _, v in sink_values(src)]
    assert [v.meaning for v in values] == [KEEP, KEEP, None, IGNORE]
    assert got(src) == {(9, 9, "MHA002")}


# ----------------------------------------------------------------------------- flow


def test_branches_join():
    src = """
        def f(q, k, v, tokens, pad_id, flag, L):
            if flag:
                m = tokens == pad_id
            else:
                m = torch.triu(torch.ones(L, L, dtype=torch.bool), 1)
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
            if flag:
                n = tokens == pad_id
            else:
                n = tokens != pad_id
            b = F.scaled_dot_product_attention(q, k, v, attn_mask=n)
            o = None
            if flag:
                o = ~(tokens != pad_id)[:, None, None, :]
            c = F.scaled_dot_product_attention(q, k, v, attn_mask=o)
            return a, b, c
        """
    assert got(src) == {(7, 9, "MHA002"), (16, 9, "MHA002")}


def test_loops_join_what_the_loop_carries():
    src = """
        layer = nn.TransformerEncoderLayer(64, 8, batch_first=True)
        def f(x, tokens, pad_id, n):
            pad = tokens == pad_id
            for _ in range(n):
                x = layer(x, src_key_padding_mask=pad)
                pad = ~pad
            keep = tokens != pad_id
            for _ in range(n):
                x = layer(x, src_key_padding_mask=keep)
            return x
        """
    assert got(src) == {(10, 13, "MHA003")}


def test_buffer_crosses_methods():
    src = """
        class Attn(nn.Module):
            def __init__(self, L):
                super().__init__()
                self.register_buffer("causal", torch.tril(torch.ones(L, L)).view(1, 1, L, L))
                self.future = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)

            def forward(self, q, k, v):
                T = q.size(-2)
                att = q @ k.transpose(-2, -1)
                good = att.masked_fill(self.causal[:, :, :T, :T] == 0, float("-inf"))
                y1 = F.scaled_dot_product_attention(q, k, v, attn_mask=self.future[:T, :T])
                y2 = F.scaled_dot_product_attention(q, k, v, attn_mask=~self.future[:T, :T])
                y3 = F.scaled_dot_product_attention(q, k, v, self.causal[..., :T, :T] == 1)
                return good, y1, y2, y3
        """
    assert got(src) == {(12, 14, "MHA002")}
    values = [v for _, v in sink_values(src)]
    assert [v.meaning for v in values] == [IGNORE, IGNORE, KEEP, KEEP]


def test_triangles_are_not_judged_at_masked_fill():
    """Masking a triangle of pairwise scores is a legitimate constraint outside
    causal attention (span scoring, reading order): only attention sinks judge it."""
    src = """
        def pair_logits(q, k, L):  # not attention: a pairwise ordering head
            logits = q @ k.transpose(-2, -1)
            lower = torch.tril(torch.ones(L, L, device=q.device)).bool()
            return logits.masked_fill(lower.unsqueeze(0), -1e4)
        """
    assert got(src) == set()


def test_helpers_are_summarised_with_bound_arguments():
    src = """
        def make_pad_mask(tokens, pad_id):
            return tokens == pad_id

        def causal_mask(L, diagonal=1, dtype=torch.bool):
            return torch.triu(torch.ones(L, L, dtype=dtype), diagonal=diagonal)

        class Model(nn.Module):
            def keep_mask(self, tokens):
                return tokens != self.pad_id

            def forward(self, q, k, v, tokens):
                L = tokens.size(1)
                a = F.scaled_dot_product_attention(q, k, v, make_pad_mask(tokens, self.pad_id))
                b = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(L))
                c = F.scaled_dot_product_attention(q, k, v, attn_mask=~causal_mask(L))
                d = F.scaled_dot_product_attention(q, k, v, self.keep_mask(tokens)[:, None, None])
                e = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(L, 0))
                return a, b, c, d, e
        """
    assert got(src) == {(14, 13, "MHA002"), (14, 13, "MHA009"), (15, 13, "MHA002")}


def test_helper_returning_a_tuple():
    src = """
        PAD = 0
        def create_masks(src, tgt):
            src_pad = src == PAD
            tgt_keep = tgt != PAD
            return src_pad, tgt_keep

        layer = nn.TransformerEncoderLayer(64, 8, batch_first=True)

        def run(x, src, tgt):
            src_pad, tgt_keep = create_masks(src, tgt)
            a = layer(x, src_key_padding_mask=src_pad)
            b = layer(x, src_key_padding_mask=tgt_keep)
            return a, b
        """
    assert got(src) == {(13, 9, "MHA003")}


def test_parameters_take_their_callers_masks():
    src = """
        class Block(nn.Module):
            def forward(self, q, k, v, mask):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList([Block() for _ in range(4)])

            def forward(self, q, k, v, tokens):
                pad = tokens == self.pad_id
                for block in self.blocks:
                    q = block(q, k, v, pad[:, None, None, :])
                return q
        """
    # reported at the call that passes the mask (issue 26: where the fact enters the chain)
    assert got(src) == {(14, 17, "MHA002")}
    fixed = src.replace("pad[:, None, None, :])", "~pad[:, None, None, :])")
    assert got(fixed) == set()


def test_code_evidence_beats_a_parameter_name():
    src = """
        class Block(nn.Module):
            def forward(self, q, k, v, key_padding_mask=None):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=key_padding_mask)

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()

            def forward(self, q, k, v, tokens):
                keep = (tokens != self.pad_id)[:, None, None, :]
                return self.block(q, k, v, key_padding_mask=keep)
        """
    assert got(src) == set()
    # without a caller in the file, the name is all there is
    alone = """
        class Block(nn.Module):
            def forward(self, q, k, v, key_padding_mask=None):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=key_padding_mask)
        """
    assert got(alone) == {(4, 16, "MHA002")}


# ----------------------------------------------------------------------------- sinks


def test_module_sinks_keyword_and_positional():
    src = """
        attn = nn.MultiheadAttention(64, 8, batch_first=True)
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 8, batch_first=True), 2)
        dec = nn.TransformerDecoderLayer(64, 8, batch_first=True)
        def f(x, mem, tokens, pad_id, L):
            keep = tokens != pad_id
            causal = torch.tril(torch.ones(L, L, dtype=torch.bool))
            a = attn(x, x, x, keep, need_weights=False)
            b = enc(x, causal, ~keep)
            c = dec(x, mem, tgt_mask=causal, memory_key_padding_mask=keep)
            d = enc(x, mask=~causal, src_key_padding_mask=~keep)
            return a, b, c, d
        """
    assert got(src) == {(8, 9, "MHA003"), (9, 9, "MHA003"), (10, 9, "MHA003")}
    evidence = {f.evidence["sink"] for f in findings(src)}
    assert evidence == {"key_padding_mask", "mask", "tgt_mask", "memory_key_padding_mask"}


def test_sdpa_positional_attn_mask():
    src = """
        def f(q, k, v, tokens, pad_id):
            pad = (tokens == pad_id)[:, None, None, :]
            return F.scaled_dot_product_attention(q, k, v, pad, 0.0)
        """
    assert got(src) == {(4, 12, "MHA002")}


def test_fill_sinks():
    src = """
        def f(scores, tokens, pad_id):  # scaled_dot_product_attention
            keep = (tokens != pad_id)[:, None, None, :]
            pad = (tokens == pad_id)[:, None, None, :]
            a = scores.masked_fill(keep, float("-inf"))
            b = scores.masked_fill(pad, float("-inf"))
            c = scores.masked_fill_(keep, -1e9)
            d = torch.masked_fill(scores, keep, torch.finfo(scores.dtype).min)
            e = torch.where(pad, scores, float("-inf"))
            f = torch.where(keep, scores, float("-inf"))
            g = torch.where(keep, float("-inf"), scores)
            h = torch.where(pad, float("-inf"), scores)
            i = scores.masked_fill(keep, 0.0)
            j = scores.masked_fill(keep == 0, -10000.0)
            return a, b, c, d, e, f, g, h, i, j
        """
    assert got(src) == {
        (5, 9, "MHA003"),
        (7, 9, "MHA003"),
        (8, 9, "MHA003"),
        (9, 9, "MHA002"),
        (11, 9, "MHA003"),
    }


def test_numeric_masks_report_both_codes():
    src = """
        attn = nn.MultiheadAttention(64, 8, batch_first=True)
        def f(x, q, k, v, tokens, pad_id, L):
            pad = tokens == pad_id
            a = attn(x, x, x, key_padding_mask=pad.float(), need_weights=False)
            b = attn(x, x, x, key_padding_mask=(~pad).float(), need_weights=False)
            c = F.scaled_dot_product_attention(q, k, v, attn_mask=pad[:, None, None, :].float())
            d = F.scaled_dot_product_attention(q, k, v, attn_mask=(~pad)[:, None, None, :].long())
            e = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.tril(torch.ones(L, L)))
            f = attn(x, x, x, attn_mask=torch.triu(torch.ones(L, L), 1), need_weights=False)
            return a, b, c, d, e, f
        """
    assert got(src) == {
        (5, 9, "MHA004"),
        (6, 9, "MHA004"),
        (6, 9, "MHA003"),
        (7, 9, "MHA004"),
        (7, 9, "MHA002"),
        (8, 9, "MHA004"),
        (9, 9, "MHA004"),
        (10, 9, "MHA004"),
    }


def test_square_masks_are_never_mha009():
    src = """
        def f(q, k, v, L):
            causal = torch.tril(torch.ones(L, L, dtype=torch.bool))
            a = F.scaled_dot_product_attention(q, k, v, causal)
            additive = nn.Transformer.generate_square_subsequent_mask(L)
            b = F.scaled_dot_product_attention(q, k, v, additive)
            return a, b
        """
    assert got(src) == set()


def test_in_place_mutation_makes_a_name_unknown():
    """open_clip/CLIP build causal masks in place: the definition alone is stale."""
    src = """
        def f(q, k, v, L, tokens, pad_id):
            mask = torch.empty(L, L)
            mask.fill_(float("-inf"))
            mask.triu_(1)
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            pad = tokens == pad_id
            pad[:, 0] = False
            b = F.scaled_dot_product_attention(q, k, v, attn_mask=pad[:, None, None, :])
            full = torch.zeros(L, L)
            full[:4, :4] = float("-inf")
            c = F.scaled_dot_product_attention(q, k, v, attn_mask=full)
            return a, b, c
        """
    # ``pad[:, 0] = False`` writes the mask's own values: still the padding
    # (True = ignore), which SDPA reads as True = attend (MHA004's page)
    assert [v.known for _, v in sink_values(src)] == [False, True, False]
    assert {code for _, _, code in got(src)} == {"MHA002"}
    changed = src.replace("pad[:, 0] = False", "pad[:, 0] = tokens[:, 0] > 1")
    assert [v.known for _, v in sink_values(changed)] == [False, False, False]
    assert got(changed) == set()


def test_constant_tensors_are_not_01_masks():
    m = only_value("""
        def f(q, k, v, L):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=torch.zeros(L, L))
        """)
    assert (m.meaning, m.kind) == (None, None)


def test_unknown_never_fires():
    src = """
        attn = nn.MultiheadAttention(64, 8, batch_first=True)
        def f(x, q, k, v, mask, m2, cfg):
            a = attn(x, x, x, key_padding_mask=mask, need_weights=False)
            b = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            c = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.float())
            d = F.scaled_dot_product_attention(q, k, v, attn_mask=~mask)
            e = q.masked_fill(mask, float("-inf"))
            g = F.scaled_dot_product_attention(q, k, v, attn_mask=cfg.make_mask(x))
            h = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.zeros(4, 4))
            i = attn(x, x, x, attn_mask=torch.zeros(4, 4), need_weights=False)
            return a, b, c, d, e, g, h, i
        """
    assert got(src) == set()


def test_evidence_is_complete_and_json():
    src = """
        attn = nn.MultiheadAttention(64, 8, batch_first=True)
        def f(x, batch):
            keep = batch["attention_mask"]
            return attn(x, x, x, key_padding_mask=keep, need_weights=False)
        """
    fs = findings(src)
    assert {f.code for f in fs} == {"MHA003", "MHA004"}
    for f in fs:
        ev = json.loads(json.dumps(f.evidence))
        assert ev["module"] == "MultiheadAttention"
        assert ev["sink"] == "key_padding_mask"
        assert ev["embed_dim"] == 64 and ev["num_heads"] == 8 and ev["batch_first"] is True
        assert ev["mask"]["meaning"] == "keep"
        assert ev["mask"]["kind"] == "int"
        assert ev["mask"]["dtype"] == "int64"
        assert ev["mask"]["shape"] is None
        assert ev["mask"]["source"] == 'line 7: batch["attention_mask"]'
        assert ev["mask"]["line"] == 7 and ev["mask"]["by_name"] is True
    msg = {f.code: f.message for f in fs}
    assert msg["MHA003"].startswith('mask from line 7 (batch["attention_mask"]) means 1 = keep')
    assert "int64" in msg["MHA004"]


def test_message_names_the_source_line():
    src = """
        def f(q, k, v, x, pad_id):
            pad = x == pad_id
            return F.scaled_dot_product_attention(q, k, v, attn_mask=pad[:, None, None, :])
        """
    (f,) = findings(src)
    assert f.message.startswith(
        "mask from line 6 (x == pad_id) means True = ignore; "
        "scaled_dot_product_attention treats True as attend"
    )
    assert f.evidence["module"] == "scaled_dot_product_attention"
    assert f.evidence["sink"] == "attn_mask"
    assert f.evidence["mask"]["shape"] == "broadcast"


# ----------------------------------------------------------------------------- fixtures via flake8

MASK_FIXTURES = sorted(p for p in FIXTURES.glob("MHA00[2349]*.py"))


@pytest.mark.parametrize("path", MASK_FIXTURES, ids=[p.name for p in MASK_FIXTURES])
def test_fixture_through_engine(path):
    from flake8_mha.lint.engine import select_codes

    found = analyze_source(path.read_text(encoding="utf-8"), str(path), select_codes())
    assert {(f.line, f.col, f.code) for f in found} == expected(path)


_FLAKE8_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>MHA\d{3}) ")


def test_fixtures_through_real_flake8():
    assert MASK_FIXTURES, "no mask fixtures"
    rel = [str(p.relative_to(ROOT)) for p in MASK_FIXTURES]
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "MHA", *rel],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stderr
    got_lines = set()
    for line in proc.stdout.splitlines():
        m = _FLAKE8_LINE.match(line)
        assert m, line
        got_lines.add((os.path.normpath(m["path"]), int(m["line"]), int(m["col"]), m["code"]))
    want = {
        (os.path.normpath(r), line, col, code)
        for r, p in zip(rel, MASK_FIXTURES)
        for (line, col, code) in expected(p)
    }
    assert got_lines == want


# ----------------------------------------------------------------------------- the package


@pytest.mark.parametrize(
    "function,method",
    [
        ("torch.tril(torch.ones(L, L))", "torch.ones(L, L).tril()"),
        ("torch.triu(input=torch.ones(L, L), diagonal=1)", "torch.ones(L, L).triu_(diagonal=1)"),
        ("torch.logical_not(tokens == pad_id)", "(tokens == pad_id).logical_not()"),
        ("torch.bitwise_not(tokens == pad_id)", "(tokens == pad_id).bitwise_not()"),
        ("torch.logical_and(tokens != pad_id, tokens != 0)",
         "(tokens != pad_id).logical_and(tokens != 0)"),
        ("torch.mul((tokens != pad_id).float(), (tokens != 0).float())",
         "(tokens != pad_id).float().mul((tokens != 0).float())"),
        ("torch.eq(tokens, pad_id)", "tokens.eq(pad_id)"),
        ("torch.ne(input=tokens, other=pad_id)", "tokens.ne(other=pad_id)"),
        ("torch.where(tokens != pad_id, 0.0, float('-inf'))",
         "torch.zeros(L, L).where(tokens != pad_id, float('-inf'))"),
        ("torch.masked_fill(torch.zeros(L, L), tokens == pad_id, float('-inf'))",
         "torch.zeros(L, L).masked_fill(tokens == pad_id, float('-inf'))"),
        ("torch.unsqueeze(tokens == pad_id, 1)", "(tokens == pad_id).unsqueeze(1)"),
        ("torch.transpose(torch.tril(torch.ones(L, L), -1), 0, 1)",
         "torch.tril(torch.ones(L, L), -1).transpose(0, 1)"),
    ],
)
def test_one_table_serves_both_call_forms(function, method):
    """``torch.f(x, ...)`` and ``x.f(...)`` read the same row of ``masks.ops.OPS``."""
    values = []
    for expr in (function, method):
        m = only_value(f"""
            def f(q, k, v, L, tokens, pad_id):
                m = {expr}
                return F.scaled_dot_product_attention(q, k, v, attn_mask=m)
            """)
        values.append((m.meaning, m.kind, m.layout, m.dtype, m.tri))
    assert values[0] == values[1]
    assert values[0][0] is not None, values


def test_every_operation_has_its_handler():
    from flake8_mha.analysis.masks import MaskEvaluator
    from flake8_mha.analysis.masks.ops import FUNCTIONS, METHODS, OPS

    for op in OPS:
        assert callable(getattr(MaskEvaluator, "_op_" + op.handler, None)), op.handler
        assert op.functions or op.methods, op.handler
    # the function form and the method form of the same operation share one row
    assert FUNCTIONS["torch.where"] is METHODS["where"]
    assert FUNCTIONS["torch.tril"] is METHODS["tril_"]
    assert FUNCTIONS["torch.eq"] is METHODS["eq"]


def test_meaning_and_kind_are_typed_and_read_as_their_text():
    from flake8_mha.analysis.masks import Kind, Meaning, Shape

    m = only_value("""
        def f(q, k, v, tokens, pad_id):
            m = (tokens == pad_id)[:, None, None, :]
            return F.scaled_dot_product_attention(q, k, v, attn_mask=m)
        """)
    assert m.meaning is Meaning.IGNORE and m.kind is Kind.BOOL and m.shape is Shape.BROADCAST
    assert (m.meaning, m.kind, m.shape) == ("ignore", "bool", "broadcast")
    assert f"{KEEP}/{FLOAT01}/{ADDITIVE}" == "keep/float01/additive"
    assert json.dumps([IGNORE, INT]) == '["ignore", "int"]'
    ev = m.evidence(lambda o: o.text)
    assert [type(ev[k]) for k in ("meaning", "kind", "shape")] == [str, str, str]


def test_the_analysis_lives_in_the_file_context():
    import gc

    from flake8_mha.analysis.masks import MaskAnalysis

    module = cst.parse_module(HEAD + "m = 1\n")
    flow = FlowPass()
    flow.run(module)
    ctx = Context(module, flow, Resolver(flow))
    a = analysis_for(ctx)
    assert analysis_for(ctx) is a and ctx.analyses == {"masks": a}
    other = Context(module, flow, Resolver(flow))
    assert analysis_for(other) is not a
    del a, ctx, other
    # through the engine: nothing keeps a file's analysis once the file is done
    assert findings("""
        def f(q, k, v, tokens, pad_id):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=tokens == pad_id)
        """)
    gc.collect()
    assert [o for o in gc.get_objects() if isinstance(o, MaskAnalysis)] == []


def _imports(path):
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):  # inside functions too
        if isinstance(node, ast.ImportFrom):
            yield "." * node.level + (node.module or "")
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names)


def test_the_mask_package_imports_nothing_above_the_analysis():
    package = ROOT / "flake8_mha" / "masks"
    for path in sorted(package.glob("*.py")):
        for name in _imports(path):
            assert not re.match(r"(\.\.|flake8_mha\.)(rules|engine|check|cli|plugin|confirm)\b",
                                name), (path.name, name)
            assert name.split(".")[0] != "torch", (path.name, name)


def test_the_mask_package_reads_in_screens():
    import ast

    for path in sorted((ROOT / "flake8_mha" / "masks").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert text.count("\n") <= 800, path.name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                assert node.end_lineno - node.lineno + 1 <= 400, (path.name, node.name)
