"""Attention recognised by use (issue 27): a softmax over the last axis whose
result is multiplied with values reads attention scores, however the scores
were made; MHA004's additive case, MHA012 and MHA003's triangle at a -inf fill
read this definition.  A softmax that feeds anything else stays unjudged.

Findings are checked as a user sees them: code, line and column.
"""
from __future__ import annotations

import textwrap

import pytest

from flake8_mha.lint.engine import analyze_source


def found(source: str, *codes: str):
    out = analyze_source(textwrap.dedent(source), "t.py", list(codes) if codes else None)
    return [(f.code, f.line, f.col) for f in out if f.code != "MHA000"]


PROTEIN = """\
    import torch.nn.functional as F

    def attend(rotation_term, distance_term, w1, w2, value, ids):
        ids_i = ids[:, :, None]
        ids_j = ids[:, None, :]
        scores = rotation_term * w1 - distance_term * w2
        scores = scores + (ids_i == ids_j).float()
        attn = F.softmax(scores, dim=-1)
        return attn.matmul(value)
    """


def test_scores_of_any_origin_multiplied_with_values_are_attention():
    assert found(PROTEIN, "MHA004", "MHA012") == [("MHA004", 7, 14)]


@pytest.mark.parametrize("use", [
    "w @ v",
    "torch.matmul(w, v)",
    "torch.bmm(w, v)",
    "w.bmm(v)",
    "torch.einsum('bqk,bkd->bqd', w, v)",
    "self_drop(w) @ v",
    "F.dropout(w, 0.1, True) @ v",
    "w.to(v.dtype) @ v",
    "w.type_as(v).matmul(v)",
])
def test_every_product_with_values_counts(use):
    src = f"""\
    import torch
    import torch.nn.functional as F

    def attend(s, v, tokens, pad, self_drop):
        keep = tokens != pad
        s = s * keep[:, None, :]
        w = torch.softmax(s, dim=-1)
        return {use}
    """
    assert found(src, "MHA004", "MHA012") == [("MHA012", 6, 9)]


def test_the_use_is_followed_through_locals_and_dropout():
    src = """\
    import torch

    def attend(s, v, tokens, pad, drop):
        keep = (tokens != pad).float()
        s += keep[:, None, :]
        w = torch.softmax(s, dim=-1)
        w = drop(w)
        out = torch.matmul(w, v)
        return out
    """
    assert found(src, "MHA004", "MHA012") == [("MHA004", 5, 5)]


@pytest.mark.parametrize("use", [
    "probs.argmax(-1)",                              # routing
    "torch.multinomial(probs, 1)",                   # sampling
    "-(probs * target).sum()",                        # a loss
    "probs",                                          # returned: unknown use
    "v @ probs",                                      # the weights are not on the left
])
def test_a_softmax_that_feeds_anything_else_stays_unjudged(use):
    src = f"""\
    import torch

    def route(logits, v, target, tokens, pad):
        keep = (tokens != pad).float()
        probs = torch.softmax(logits + keep, dim=-1)
        return {use}
    """
    assert found(src, "MHA004", "MHA012") == []


@pytest.mark.parametrize("extra", [
    "s = s.masked_fill(~keep, float('-inf'))",       # the -inf fill covers the term
    "s = s + torch.where(keep, 0.0, float('-inf'))",  # an additive -inf mask also reaches
    "s = s + mask",                                   # an added tensor named like a mask
])
def test_an_additive_mask_that_also_reaches_the_scores_keeps_it_silent(extra):
    src = f"""\
    import torch

    def attend(s, v, tokens, pad, mask):
        keep = tokens != pad
        s = s + keep.float()
        {extra}
        return torch.softmax(s, -1) @ v
    """
    assert found(src, "MHA004", "MHA012") == []


def test_softmax_over_another_axis_is_not_attention_by_use():
    src = """\
    import torch

    def f(s, v, tokens, pad):
        keep = (tokens != pad).float()
        return torch.softmax(s + keep, dim=1) @ v
    """
    assert found(src, "MHA004", "MHA012") == []


def test_scale_and_bias_of_unknown_kind_are_not_masks():
    src = """\
    import torch

    def f(s, v, bias, scale, gate):
        s = s * scale + bias
        s = s * torch.sigmoid(gate)
        return torch.softmax(s, -1) @ v
    """
    assert found(src, "MHA004", "MHA012") == []


TRIANGLE = """\
    import torch

    def attend(s, v, T):
        keep = torch.tril(torch.ones(T, T, dtype=torch.bool))
        s = s.masked_fill(keep, float("-inf"))
        return {tail}
    """


def test_mha003_triangle_at_a_fill_of_scores_recognised_by_use():
    src = TRIANGLE.format(tail="torch.softmax(s, dim=-1) @ v")
    assert found(src, "MHA003") == [("MHA003", 5, 9)]


def test_mha003_triangle_at_a_fill_whose_softmax_is_not_attention_stays_silent():
    src = TRIANGLE.format(tail="torch.softmax(s, dim=-1)")
    assert found(src, "MHA003") == []


def test_the_query_key_product_still_needs_no_use():
    src = """\
    import torch

    def f(q, k, tokens, pad):
        keep = tokens != pad
        s = q @ k.transpose(-2, -1)
        s = s * keep[:, None, None, :]
        return torch.softmax(s, dim=-1)
    """
    assert found(src, "MHA012") == [("MHA012", 6, 9)]


@pytest.mark.parametrize("use", [
    "torch.matmul(probs, probs.transpose(1, 2))",            # a clustering's link loss
    "torch.einsum('bkd,bk->bd', probs, v)",                 # the last axis is not summed
])
def test_a_product_that_is_not_weights_times_values_stays_unjudged(use):
    src = f"""\
    import torch

    def f(logits, v, tokens, pad):
        keep = (tokens != pad).float()
        probs = torch.softmax(logits + keep, dim=-1)
        return {use}
    """
    assert found(src, "MHA004", "MHA012") == []


def test_einsum_summing_the_weights_last_axis_counts():
    src = """\
    import torch

    def f(logits, v, tokens, pad):
        keep = (tokens != pad).float()
        probs = torch.softmax(logits + keep, dim=-1)
        return torch.einsum('b h i j, b h j d -> b h i d', probs, v)
    """
    assert found(src, "MHA004", "MHA012") == [("MHA004", 5, 27)]


def test_einops_einsum_makes_scores_and_meets_values():
    src = """\
    from einops import einsum

    def attend(q, k, v, tokens, pad):
        keep = (tokens != pad).float()[:, None, None, :]
        sim = einsum(q, k, '... i d, ... j d -> ... i j')
        sim = sim * keep
        attn = sim.softmax(dim=-1)
        return einsum(attn, v, '... i j, ... j d -> ... i d')
    """
    assert found(src, "MHA004", "MHA012") == [("MHA012", 6, 11)]


def test_einops_einsum_of_values_makes_attention_by_use():
    src = """\
    from einops import einsum

    def attend(b, values, tokens, pad):
        keep = (tokens != pad).float()[:, None, None, :]
        weights = (b + keep).softmax(dim=-1)
        return einsum(weights, values, 'b h i j, b h s j d -> b h s i d')
    """
    assert found(src, "MHA004", "MHA012") == [("MHA004", 5, 16)]


def test_scores_made_by_a_call_given_a_mask_or_bias_stay_unjudged():
    src = """\
    import torch

    def attend(attn, v, tokens, pad, attn_bias, helper, proj):
        keep = (tokens != pad).float()
        a = helper(attn, attn_bias) + keep          # the helper may add -inf itself
        b = proj(attn) + keep                         # a call given no mask: judged
        return torch.softmax(a, dim=-1) @ v, torch.softmax(b, dim=-1) @ v
    """
    assert found(src, "MHA004") == [("MHA004", 6, 9)]
