"""Fixes read the code through the analyzer the rules use (reaching
definitions, the resolver's qualified names), not a resolution of their own."""
from __future__ import annotations

from flake8_mha.lint.engine import analyze_source
from flake8_mha.app.fix import fix_source

HEAD = """\
import torch
import torch.nn.functional as F

def attend(q, k, v, L, pad_mask, flag):
"""
CALL = "    return F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=True)\n"


def _fix(body: str):
    src = HEAD + body + CALL
    findings = analyze_source(src, "t.py", codes=["MHA006"])
    assert [f.code for f in findings] == ["MHA006"]
    return src, fix_source(src, findings)


def test_the_definition_that_reaches_the_call_is_the_one_read():
    # ``m`` is assigned twice; only the causal triangle reaches the call
    src, (new, fixed) = _fix("    m = pad_mask\n"
                             "    m = torch.ones(L, L, dtype=torch.bool).tril()\n")
    assert [f.code for f in fixed] == ["MHA006"]
    assert new == src.replace(", is_causal=True", "")


def test_two_definitions_reaching_the_call_are_not_guessed_between():
    src, result = _fix("    if flag:\n"
                       "        m = torch.ones(L, L, dtype=torch.bool).tril()\n"
                       "    else:\n"
                       "        m = pad_mask\n")
    assert result == (src, [])


def test_names_resolve_where_the_value_was_assigned():
    # ``ones`` is torch.ones where ``m`` is built, whatever the name means later
    src, (new, fixed) = _fix("    from torch import ones\n"
                             "    m = ones(L, L, dtype=torch.bool).tril()\n")
    assert [f.code for f in fixed] == ["MHA006"]
    assert new == src.replace(", is_causal=True", "")


def test_a_name_that_is_not_torch_is_not_taken_for_it():
    src, result = _fix("    ones = lambda *a, **k: pad_mask\n"
                       "    m = ones(L, L, dtype=torch.bool).tril()\n")
    assert result == (src, [])
