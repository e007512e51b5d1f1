"""Mask forms real code takes (issue 17): segment masks, triangles with a
symbolic offset, 3-D comparisons, fill values, triangles at ``masked_fill``
over attention scores.

Each case is checked as a user sees it: code, line and column through the
engine; bad beside good.
"""

from __future__ import annotations

import textwrap

import pytest

from flake8_mha.lint.engine import analyze_source

MASK_CODES = ["MHA002", "MHA003", "MHA004", "MHA009"]


def found(source: str, codes=None):
    out = analyze_source(textwrap.dedent(source), "t.py", codes or MASK_CODES)
    return [(f.code, f.line, f.col) for f in out if f.code != "MHA000"]


# --------------------------------------------------------------------------- 1. segments


@pytest.mark.parametrize(
    "same",
    [
        "ids[..., :, None] == ids[..., None, :]",
        "ids[:, :, None] == ids[:, None, :]",
        "ids.unsqueeze(-1) == ids.unsqueeze(-2)",
        "ids.unsqueeze(-2) == ids.unsqueeze(-1)",
        "ids.unsqueeze(1) == ids.unsqueeze(2)",  # Swin: unsqueeze(2) needs (N, L) ids
    ],
)
def test_segment_equality_is_a_keep_mask(same):
    src = f"""\
        import torch.nn.functional as F
        def attend(q, k, v, ids):
            same = {same}
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=same[:, None])
            scores = q @ k.transpose(-2, -1)
            b = scores.masked_fill(same[:, None], float("-inf")).softmax(-1) @ v
            return a, b
        """
    assert found(src) == [("MHA003", 6, 9)]


def test_a_pair_mask_fills_only_attention_scores():
    # a metric-learning loss: same-identity pairs masked out of a softmax over
    # distances on purpose (boxmot, release review 10); nothing attends here
    src = """\
        import torch
        import torch.nn.functional as F
        def soft_negatives(features, labels):
            distances = torch.cdist(features, features)
            same = labels[:, None].eq(labels[None, :])
            return F.softmax((-distances).masked_fill(same, -torch.inf), dim=1)
        def relation(sim, pids):
            cross = pids[:, None] != pids[None, :]
            return sim.masked_fill(~cross, float("-inf")).logsumexp(-1)
        """
    assert found(src) == []


def test_segment_inequality_is_an_ignore_mask():
    src = """\
        import torch.nn.functional as F
        def attend(q, k, v, seg):
            other = seg.unsqueeze(-1) != seg.unsqueeze(-2)
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=other[:, None])
            b = F.scaled_dot_product_attention(q, k, v, attn_mask=~other[:, None])
            c = q.masked_fill(other[:, None], float("-inf"))
            return a, b, c
        """
    assert found(src) == [("MHA002", 4, 9)]


def test_segment_through_locals():
    src = """\
        import torch.nn.functional as F
        def attend(q, k, v, segment_ids):
            ids_i = segment_ids[:, :, None]
            ids_j = segment_ids[:, None, :]
            pad = ids_i != ids_j
            return F.scaled_dot_product_attention(q, k, v, attn_mask=pad.unsqueeze(1))
        """
    assert found(src) == [("MHA002", 6, 12)]


@pytest.mark.parametrize(
    "expr",
    [
        "a[:, :, None] == b[:, None, :]",  # two tensors: not one segment tensor
        "ids[:, None] == ids[:, :, None]",  # a vector against a matrix
        "ids.unsqueeze(0) == ids.unsqueeze(1)",  # depends on the rank
        "ids[:, :, None] == ids[:, :, None]",  # same broadcast on both sides
        "ids[:, :, None] < ids[:, None, :]",  # an order, not a segment
    ],
)
def test_segment_lookalikes_stay_unknown(expr):
    src = f"""\
        import torch.nn.functional as F
        def attend(q, k, v, ids, a, b):
            m = {expr}
            return F.scaled_dot_product_attention(q, k, v, attn_mask=m), q.masked_fill(m, -1e9)
        """
    assert found(src) == []


def test_a_vector_s_segment_equality_is_a_square_keep_mask():
    """PyG's node-to-graph assignment: ``batch[:, None] == batch[None, :]``
    is True where two nodes share a graph, (L, S); written so on a 2-D
    tensor it would compare samples with samples, which no one means."""
    src = """\
        import torch.nn.functional as F
        def attend(q, k, v, batch):
            same = batch[:, None] == batch[None, :]
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=same)
            s = q @ k.transpose(-2, -1)
            b = s.masked_fill(same, float("-inf")).softmax(-1) @ v
            c = s.masked_fill(batch[:, None] != batch[None, :], float("-inf")).softmax(-1) @ v
            return a, b, c
        """
    assert found(src) == [("MHA003", 6, 9)]


def test_segment_added_to_scores_still_reports_mha004():
    src = """\
        import math
        import torch
        def packed(q, k, v, segment_ids):
            bias = (segment_ids.unsqueeze(-1) == segment_ids.unsqueeze(-2)).float()
            logits = torch.einsum("bqd,bkd->bqk", q, k) / math.sqrt(q.size(-1))
            return torch.softmax(logits + bias, dim=-1) @ v
        """
    assert found(src, ["MHA004"]) == [("MHA004", 6, 26)]


# --------------------------------------------------------------------------- 2. KV-cache triangles


@pytest.mark.parametrize(
    "future",
    [
        "torch.ones(i, j, dtype=torch.bool).triu(j - i + 1)",
        "torch.triu(torch.ones(i, j, dtype=torch.bool), diagonal=j - i + 1)",
        "torch.ones((i, j), dtype=torch.bool).triu(1 + j - i)",
        "~torch.ones(i, j, dtype=torch.bool).tril(j - i)",
        "torch.ones(i, j, dtype=torch.bool).tril(j - i) == 0",
    ],
)
def test_kv_cache_triangle_with_offset_is_an_ignore_mask(future):
    src = f"""\
        import torch
        import torch.nn.functional as F
        def attend(q, k, v):
            i, j = q.size(-2), k.size(-2)
            future = {future}
            bad = F.scaled_dot_product_attention(q, k, v, attn_mask=future)
            good = F.scaled_dot_product_attention(q, k, v, attn_mask=~future)
            return bad, good
        """
    assert found(src) == [("MHA002", 6, 11)]


def test_kv_cache_keep_triangle_through_a_local_ones():
    src = """\
        import torch
        import torch.nn.functional as F
        def attend(q, k, v, L, S):
            ones = torch.ones(L, S, dtype=torch.bool, device=q.device)
            keep = torch.tril(ones, diagonal=S - L)
            good = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
            bad = F.scaled_dot_product_attention(q, k, v, attn_mask=keep.logical_not())
            return bad, good
        """
    assert found(src) == [("MHA002", 7, 11)]


@pytest.mark.parametrize(
    "tri",
    [
        "torch.ones(i, j, dtype=torch.bool).triu(i - j + 1)",  # the other way round
        "torch.ones(i, j, dtype=torch.bool).triu(j - i)",  # includes the diagonal
        "torch.ones(i, j, dtype=torch.bool).triu(past + 1)",  # past is not visibly j - i
        "torch.ones(i, j, dtype=torch.bool).tril(j - i - 1)",  # drops the diagonal
        "torch.ones(i, j, dtype=torch.bool).triu(2 * j - i)",  # a coefficient other than 1
        "torch.zeros(i, j, dtype=torch.bool).triu(j - i + 1)",  # not ones
    ],
)
def test_other_symbolic_diagonals_stay_unknown(tri):
    src = f"""\
        import torch
        import torch.nn.functional as F
        def attend(q, k, v, past):
            i, j = q.size(-2), k.size(-2)
            m = {tri}
            return (F.scaled_dot_product_attention(q, k, v, attn_mask=m),
                    F.scaled_dot_product_attention(q, k, v, attn_mask=~m))
        """
    assert found(src) == []


def test_kv_cache_triangle_is_not_the_is_causal_triangle():
    # tril(ones(L, S), S - L) is aligned at the bottom right; is_causal=True
    # means the top-left one: MHA006 must not call them the same
    src = """\
        import torch
        import torch.nn.functional as F
        def attend(q, k, v, L, S):
            keep = torch.ones(L, S, dtype=torch.bool).tril(S - L)
            return F.scaled_dot_product_attention(q, k, v, attn_mask=keep, is_causal=True)
        """
    got = analyze_source(textwrap.dedent(src), "t.py", ["MHA006"])
    assert [(f.code, f.line, f.col, f.evidence["mask"]["origin"]) for f in got] == [
        ("MHA006", 5, 12, "other")
    ]


# --------------------------------------------------------------------------- 3. 3-D comparisons


@pytest.mark.parametrize(
    "pad",
    [
        "torch.arange(S).view(1, 1, -1) >= lens.view(-1, 1, 1)",
        "torch.arange(S, device=x.device)[None, None, :] >= lens[:, None, None]",
        "lens[:, None, None] <= torch.arange(S)[None, None, :]",
        "torch.arange(S).view(1, 1, -1) > lens.view(1, -1, 1) - 1",
    ],
)
def test_three_d_length_comparisons_are_padding_masks(pad):
    src = f"""\
        import torch
        import torch.nn.functional as F
        def attend(q, k, v, x, lens, S):
            pad = {pad}
            bad = F.scaled_dot_product_attention(q, k, v, attn_mask=pad.unsqueeze(1))
            good = F.scaled_dot_product_attention(q, k, v, attn_mask=~pad.unsqueeze(1))
            return bad, good
        """
    want = [] if "- 1" in pad else [("MHA002", 5, 11)]
    assert found(src) == want


def test_three_d_keep_mask_at_masked_fill():
    src = """\
        import torch
        def scores_for(scores, lengths, S):
            keep = torch.arange(S).view(1, 1, -1) < lengths.view(1, -1, 1)
            bad = scores.masked_fill(keep.unsqueeze(0), float("-inf"))
            good = scores.masked_fill(~keep.unsqueeze(0), float("-inf"))
            return bad, good
        """
    assert found(src) == [("MHA003", 4, 11)]


def test_three_d_padding_mask_layout_reaches_the_evidence():
    src = textwrap.dedent("""\
        import torch
        import torch.nn.functional as F
        def attend(q, k, v, lens, S):
            pad = torch.arange(S)[None, None, :] >= lens[:, None, None]  # (N, 1, S)
            return F.scaled_dot_product_attention(q, k, v, attn_mask=pad[:, None])
        """)
    (f,) = analyze_source(src, "t.py", MASK_CODES)
    assert (f.code, f.line, f.col) == ("MHA002", 5, 12)
    assert f.evidence["mask"]["shape"] == "broadcast"
    assert f.evidence["mask"]["meaning"] == "ignore"


# --------------------------------------------------------------------------- 4. fill values

FILL = """\
    import torch
    {imports}
    def scores_for(scores, tokens, pad_id):
        keep = tokens != pad_id
        bad = scores.masked_fill(keep[:, None, None, :], {fill})
        good = scores.masked_fill(~keep[:, None, None, :], {fill})
        return bad, good
    """


@pytest.mark.parametrize(
    "imports, fill",
    [
        ("from . import constant", "-constant.INFINITY_NUMBER"),
        ("import pkg.constants as C", "-C.INF"),
        ("from .constants import NEG_INF", "NEG_INF"),
        ("from .constants import LARGE_NEGATIVE", "LARGE_NEGATIVE"),
        ("from .constants import neg_infinity", "neg_infinity"),
        ("", "-torch.finfo(scores.dtype).max // 2"),
        ("", "torch.finfo(scores.dtype).min / 2"),
        ("", "torch.finfo(scores.dtype).min // 2.0"),
        ("", "-torch.finfo(scores.dtype).max / -(-4)"),
        ("", "torch.finfo(scores.dtype).min / 0.5"),  # twice as negative (or -inf)
    ],
)
def test_fill_values_that_are_big_negatives(imports, fill):
    assert found(FILL.format(imports=imports, fill=fill)) == [("MHA003", 5, 11)]


@pytest.mark.parametrize(
    "imports, fill",
    [
        ("from . import constant", "constant.INFINITY_NUMBER"),  # +inf: not a mask fill
        ("from . import constant", "-constant.LARGE_NUMBER"),  # may be -100
        ("from . import constant", "constant.FLOAT_MIN"),  # may be tiny and positive
        ("from . import constant", "constant.MASK_VALUE"),
        ("from .constants import NEG_INF; NEG_INF = 0.0", "NEG_INF"),  # rebound: not only imported
        ("", "torch.finfo(scores.dtype).min / 100"),  # float16: -655, not removed
        ("", "torch.finfo(scores.dtype).min / -2"),  # a big positive
        ("", "torch.finfo(scores.dtype).min / 0"),  # raises: nothing to say
    ],
)
def test_fill_values_that_stay_unknown(imports, fill):
    assert found(FILL.format(imports=imports, fill=fill)) == []


# --------------------------------------------------------------------------- 5. triangles at fills


@pytest.mark.parametrize(
    "body, want",
    [
        # a keep triangle filled with -inf on attention scores that reach softmax
        (
            """\
        s = q @ k.transpose(-2, -1)
        s = s.masked_fill(keep, float("-inf"))
        return s.softmax(-1) @ v""",
            [("MHA003", 7, 9)],
        ),
        (
            """\
        s = torch.einsum("bhqd,bhkd->bhqk", q, k) / 8
        s.masked_fill_(keep, float("-inf"))
        return torch.softmax(s, dim=-1) @ v""",
            [("MHA003", 7, 5)],
        ),
        (
            """\
        s = q @ k.transpose(-2, -1)
        return s.masked_fill(keep, float("-inf")).softmax(-1) @ v""",
            [("MHA003", 7, 12)],
        ),
        (
            """\
        s = q @ k.transpose(-2, -1)
        s = torch.where(~keep, s, float("-inf"))
        return s.softmax(-1) @ v""",
            [("MHA002", 7, 9)],
        ),
        # the right way round: nothing
        (
            """\
        s = q @ k.transpose(-2, -1)
        s = s.masked_fill(~keep, float("-inf"))
        return s.softmax(-1) @ v""",
            [],
        ),
        (
            """\
        s = q @ k.transpose(-2, -1)
        s = torch.where(keep, s, float("-inf"))
        return s.softmax(-1) @ v""",
            [],
        ),
        # pairwise scores that never reach a softmax: a span or ordering head
        (
            """\
        s = q @ k.transpose(-2, -1)
        return s.masked_fill(keep, float("-inf"))""",
            [],
        ),
        # not a query-key product
        (
            """\
        s = q + k
        return s.masked_fill(keep, float("-inf")).softmax(-1)""",
            [],
        ),
        # softmax over another axis: not attention
        (
            """\
        s = q @ k.transpose(-2, -1)
        return s.masked_fill(keep, float("-inf")).softmax(1)""",
            [],
        ),
    ],
)
def test_triangles_at_fills_are_judged_on_attention_scores(body, want):
    src = (
        "import torch\n"
        "def attend(q, k, v, T):\n"
        "    keep = torch.tril(torch.ones(T, T, dtype=torch.bool))\n"
        "    # True = keep\n"
        "    #\n" + textwrap.indent(textwrap.dedent(body), "    ") + "\n"
    )
    assert found(src) == want


# --------------------------------------------------------------------------- in-place fills

INPLACE = """\
import torch


def attend(q, k, v, scores, tokens, pad_id):
    bias = (tokens MASK pad_id).to(q.dtype)[:, None, None, :]
    BODY
    return torch.softmax(scores + bias, dim=-1) @ v
"""


@pytest.mark.parametrize(
    "mask, body, want",
    [
        # an additive bias made in place (litgpt builds its softcapping mask so): the
        # arguments of the fill read the value the name had before it, so the fill is
        # judged: True = padding is what masked_fill_ fills; True = kept is not
        ("==", "bias.masked_fill_(bias.bool(), torch.finfo(q.dtype).min)", []),
        ("!=", "bias.masked_fill_(bias.bool(), torch.finfo(q.dtype).min)", [("MHA003", 6, 5)]),
        ("==", "bias.masked_fill_(~bias.bool(), torch.finfo(q.dtype).min)", [("MHA003", 6, 5)]),
        # changed twice, or in a loop: its value there is not known
        ("!=", "bias.masked_fill_(bias.bool(), torch.finfo(q.dtype).min)\n    bias.mul_(2)", []),
        (
            "!=",
            "for _ in range(2):\n        bias.masked_fill_(bias.bool(), torch.finfo(q.dtype).min)",
            [],
        ),
        # the name read in a later statement, after the change: not known either
        (
            "==",
            "bias.masked_fill_(bias.bool(), torch.finfo(q.dtype).min)\n"
            "    scores = scores.masked_fill(~bias.bool(), float('-inf'))",
            [],
        ),
    ],
)
def test_the_arguments_of_an_in_place_fill_see_the_value_before_it(mask, body, want):
    assert found(INPLACE.replace("MASK", mask).replace("BODY", body)) == want


def test_a_name_the_code_inverts_at_the_fill_is_the_author_s_convention():
    """llm-foundry names its keep-mask ``key_padding_mask`` and fills with
    ``masked_fill(~key_padding_mask, min)``: the name alone says True =
    pad, the code's own ``~`` says the opposite, and a name counts only
    where the code says nothing better. A mask the code makes (``tokens ==
    0``) inverted the same way is still MHA003."""
    src = """\
        def by_name(q, k, v, key_padding_mask):
            s = q @ k.transpose(-1, -2)
            s = s.masked_fill(~key_padding_mask[:, None, None, :], float("-inf"))
            return s.softmax(-1) @ v

        def made(q, k, v, tokens):
            key_padding_mask = tokens == 0
            s = q @ k.transpose(-1, -2)
            s = s.masked_fill(~key_padding_mask[:, None, None, :], float("-inf"))
            return s.softmax(-1) @ v
        """
    assert found(src) == [("MHA003", 9, 9)]


# --------------------------------------------------------------------------- bands


@pytest.mark.parametrize(
    "far",
    [
        "(pos[None, :] - pos[:, None]).abs() > window",  # Longformer's local band
        "torch.abs(pos[:, None] - pos[None, :]) > window",
        "(pos[:, None] - pos[None, :]) > window",  # Mistral's too old
        "(pos[None, :] - pos[:, None]) > 0",  # the future
        "window < (pos[None, :] - pos[:, None]).abs()",
    ],
)
def test_a_band_beyond_a_window_is_an_ignore_mask(far):
    src = f"""\
        import torch
        import torch.nn.functional as F
        def attend(q, k, v, window):
            pos = torch.arange(q.shape[-2])
            far = {far}
            bad = F.scaled_dot_product_attention(q, k, v, attn_mask=far)
            good = F.scaled_dot_product_attention(q, k, v, attn_mask=~far)
            return bad, good
        """
    assert found(src) == [("MHA002", 6, 11)]


def test_a_band_within_a_window_is_a_keep_mask():
    src = """\
        import torch
        import torch.nn.functional as F
        def attend(q, k, v, window, scores):
            pos = torch.arange(q.shape[-2])
            near = (pos[None, :] - pos[:, None]).abs() <= window
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=near)
            b = scores.masked_fill(near, float("-inf"))
            return a, b
        """
    assert found(src) == [("MHA003", 7, 9)]


@pytest.mark.parametrize(
    "expr",
    [
        "(pos[None, :] - pos[:, None]).abs() >= window",  # with a window of 0, not the diagonal
        "(pos[None, :] - pos[:, None]).abs() < window",
        "(pos[None, :] - pos[:, None]) > -1",  # a negative window keeps the diagonal
        "(pos[None, :] - pos[:, None]).abs() > window + pos",  # not a window
        "(pos - pos[:, None]).abs() > window",  # a vector, not a row
    ],
)
def test_other_bands_stay_unknown(expr):
    src = f"""\
        import torch
        import torch.nn.functional as F
        def attend(q, k, v, window):
            pos = torch.arange(q.shape[-2])
            m = {expr}
            return F.scaled_dot_product_attention(q, k, v, attn_mask=m), q.masked_fill(m, -1e9)
        """
    assert found(src) == []


# --------------------------------------------------------------------------- concatenations


@pytest.mark.parametrize(
    "made, found_",
    [
        # a class token before a keep-mask: still a keep-mask
        ("torch.cat([torch.ones(b, 1, dtype=torch.bool), keep], dim=1)", [("MHA003", 7, 12)]),
        ("torch.cat((keep, keep), 1)", [("MHA003", 7, 12)]),
        # zeros beside a keep-mask, or an ignore-mask beside it: mixed, unknown
        ("torch.cat([torch.zeros(b, 1, dtype=torch.bool), keep], dim=1)", []),
        ("torch.cat([~keep, keep], dim=1)", []),
        ("torch.cat([other, keep], dim=1)", []),
    ],
)
def test_a_concatenation_keeps_a_meaning_its_pieces_agree_on(made, found_):
    src = f"""\
        import torch
        import torch.nn as nn
        attn = nn.MultiheadAttention(8, 2, batch_first=True)
        def pool(x, lengths, b, other):
            keep = torch.arange(x.shape[1] - 1)[None, :] < lengths[:, None]
            m = {made}
            return attn(x, x, x, key_padding_mask=m, need_weights=False)[0]
        """
    assert found(src) == found_


@pytest.mark.parametrize(
    "softmax",
    [
        "nn.Softmax(dim=-1)(scores)",
        "self.softmax(scores)",
    ],
)
def test_an_nn_softmax_module_is_a_softmax(softmax):
    src = f"""\
        import torch
        import torch.nn as nn
        class A(nn.Module):
            def __init__(self):
                super().__init__()
                self.softmax = nn.Softmax(dim=-1)
            def forward(self, q, k, v, ids):
                keep = (ids != 0)[:, None, None, :].float()
                scores = q @ k.transpose(-1, -2) + keep
                return {softmax} @ v
        """
    assert found(src) == [("MHA004", 9, 18)]
    assert found(src.replace("dim=-1", "dim=1")) == []


# --------------------------------------------------------------------------- keep beside ignore


@pytest.mark.parametrize(
    "made, found_",
    [
        ("keep[:, None, None, :] | causal", [("MHA003", 8, 12)]),  # BLOOM: the keep part removes
        ("~keep[:, None, None, :] | causal", []),
        ("pad[:, None, None, :] | causal", []),
        ("keep[:, None, None, :] | named_mask", []),  # the other side known by its name only
    ],
)
def test_a_keep_mask_or_ed_with_an_ignore_mask_into_a_fill(made, found_):
    src = f"""\
        import torch
        def scores_for(scores, input_ids, pad_id, named_mask):
            keep = input_ids != pad_id
            pad = input_ids == pad_id
            pos = torch.arange(input_ids.shape[1])
            causal = pos[:, None] < pos[None, :]
            m = {made}
            return scores.masked_fill(m, float("-inf")).softmax(-1)
        """
    assert found(src) == found_


# --------------------------------------------------------------------------- special tokens


@pytest.mark.parametrize(
    "keep, found_",
    [
        ("tokens.ne(pad_idx) & tokens.ne(eos_idx)", [("MHA003", 5, 12)]),  # ESM
        ("(tokens != pad_idx) & (tokens != cls_idx) & (tokens != eos_idx)", [("MHA003", 5, 12)]),
        ("tokens.ne(pad_idx) & tokens.ne(width)", []),  # not a special token's id
        ("tokens.ne(pad_idx) & tokens.eq(eos_idx)", []),  # only the eos tokens: not a keep-mask
        ("tokens.ne(pad_idx) | tokens.ne(eos_idx)", []),
    ],
)
def test_a_keep_mask_narrowed_by_another_special_token(keep, found_):
    src = f"""\
        import torch.nn as nn
        attn = nn.MultiheadAttention(8, 2, batch_first=True)
        def run(x, tokens, pad_idx, cls_idx, eos_idx, width):
            keep = {keep}
            return attn(x, x, x, key_padding_mask=keep, need_weights=False)[0]
        """
    assert found(src) == found_


# --------------------------------------------------------------------------- counts reshaped


@pytest.mark.parametrize("flat", ["counts.reshape(-1)", "counts.view(-1)", "counts.flatten()"])
def test_a_count_flattened_is_still_a_count(flat):
    # Point Transformer's neighbour counts, flattened before the arange
    # comparison (probe G): a keep-mask multiplied into the scores
    src = f"""\
    import torch

    def local_attention(q, k, v, counts, nsample):
        flat = {flat}
        valid = torch.arange(nsample)[None, :] < flat[:, None]
        attn = q @ k.transpose(-2, -1)
        attn = attn * valid[:, None, None, :]
        return attn.softmax(dim=-1) @ v
    """
    assert found(src, ["MHA012"]) == [("MHA012", 7, 12)]
    assert found(src.replace("counts", "offsets"), ["MHA012"]) == []


MEDIA = """\
import torch
import torch.nn as nn


class PerceiverResampler(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, latents, media, COUNT):
        n = media.shape[1]
        media_mask = torch.arange(n, device=media.device)[None, :] < COUNT[:, None]
        return self.attn(latents, media, media, key_padding_mask=media_mask, need_weights=False)[0]
"""


@pytest.mark.parametrize("count", ["num_media", "n_images", "num_segments", "nb_visits"])
def test_a_count_of_the_units_a_sample_holds_against_an_arange_is_a_keep_mask(count):
    # probe H, a Flamingo-style VLM: ``arange < num_media[:, None]``
    got = analyze_source(MEDIA.replace("COUNT", count), "m.py", ["MHA003"])
    assert [(f.code, f.line, f.col) for f in got] == [("MHA003", 13, 16)]


@pytest.mark.parametrize("count", ["n_layers", "n_epochs"])
def test_a_sample_s_layers_and_epochs_are_its_own_counts(count):
    # probe AK's AK09 and AK13: a snow pit's layers, a night's sleep epochs,
    # indexed per sample against an arange
    got = analyze_source(MEDIA.replace("COUNT", count), "m.py", ["MHA003"])
    assert [(f.code, f.line, f.col) for f in got] == [("MHA003", 13, 16)]


@pytest.mark.parametrize("count", ["num_heads", "num_experts"])
def test_counts_of_other_things_say_nothing(count):
    assert analyze_source(MEDIA.replace("COUNT", count), "m.py", ["MHA003"]) == []


def test_a_count_of_sequences_is_lengths_not_ids():
    """Probe S's AC: ``num_seqs`` counts an MSA's real rows (a count, as
    ``n_valid`` is), so ``arange(S)[None, :] >= num_seqs[:, None]`` is an
    ignore padding mask; before, the ``_seqs`` ending read it as item ids."""
    from flake8_mha.lint.engine import analyze_source

    src = (
        "import torch\nimport torch.nn.functional as F\n\n\n"
        "def attend(q, k, v, num_seqs):\n"
        "    pad = torch.arange(k.size(-2))[None, :] >= num_seqs[:, None]\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=pad[:, None, None, :])\n"
    )
    got = analyze_source(src, "t.py", ["MHA002"])
    assert [(f.code, f.line, f.col) for f in got] == [("MHA002", 7, 12)]
    assert analyze_source(src.replace(">= num_seqs", "< num_seqs"), "t.py", ["MHA002"]) == []
