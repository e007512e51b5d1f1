"""Masks through star-arguments (issue 17): ``f(*args)`` and ``f(**kw)`` are
spread as Python spreads them, and only the positions the code lets us count
are bound.  Findings are checked as a user sees them: code, line, column."""
from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from flake8_mha.lint.engine import analyze_source
from flake8_mha.analysis.flow import FlowPass
from flake8_mha.analysis.splats import expand_call

HEAD = "import torch.nn.functional as F\n"


def found(source: str, *codes: str):
    out = analyze_source(HEAD + textwrap.dedent(source), "t.py", list(codes) or None)
    return [(f.code, f.line, f.col) for f in out if f.code != "MHA000"]


def test_a_tuple_spread_into_sdpa_carries_the_mask_meaning():
    src = """
    def f(q, k, v, tokens, pad_id):
        pad = tokens == pad_id
        args = (q, k, v, pad[:, None, None, :])
        return F.scaled_dot_product_attention(*args)
    """
    assert found(src, "MHA002") == [("MHA002", 6, 12)]


def test_positions_after_a_splat_of_unknown_length_stay_unbound():
    src = """
    def f(*args, tokens=None, pad_id=0):
        pad = tokens == pad_id
        args = (*args, pad[:, None, None, :])
        return F.scaled_dot_product_attention(*args)
    """
    assert found(src) == []


def test_a_counted_prefix_is_bound_and_nothing_after_the_unknown_rest():
    # (q, k, v, *rest, pad): the mask sits after an unknown rest: never bound
    src = """
    def f(q, k, v, rest, tokens, pad_id):
        pad = tokens == pad_id
        args = (q, k, v, *rest, pad[:, None, None, :])
        return F.scaled_dot_product_attention(*args)
    """
    assert found(src) == []
    call = cst.parse_expression("f(*args, x)")
    module = cst.parse_module("args = (a, *rest, b)\nf(*args, x)\n")
    flow = FlowPass()
    flow.run(module)
    site = flow.calls[-1]
    spread = expand_call(site.node, site.env, site.scope)
    got = [(a.star, cst.Module([]).code_for_node(a.value)) for a in spread.args]
    assert got == [("", "args[0]"), ("*", "args"), ("", "x")]
    assert call.args[0].star == "*"


def test_definitions_that_disagree_on_the_count_bind_only_what_all_share():
    src = """
    def f(q, k, v, tokens, pad_id, flag):
        pad = tokens == pad_id
        if flag:
            args = (q, k, v, pad[:, None, None, :])
        else:
            args = (q, k, v)
        return F.scaled_dot_product_attention(*args)
    """
    assert found(src) == []


def test_definitions_that_agree_are_joined_position_by_position():
    src = """
    def f(q, k, v, tokens, pad_id, flag):
        pad = tokens == pad_id
        if flag:
            args = (q, k, v, pad[:, None, None, :])
        else:
            args = (q, k, v, ~pad[:, None, None, :])
        return F.scaled_dot_product_attention(*args)
    """
    assert found(src) == []  # an ignore-mask on one path, a keep-mask on the other
    assert found(src.replace("~pad", "pad"), "MHA002") == [("MHA002", 9, 12)]


def test_a_tuple_grown_in_a_loop_is_not_counted():
    src = """
    def f(q, k, v, tokens, pad_id, extra):
        pad = tokens == pad_id
        args = (q, k, v)
        for e in extra:
            args = (*args, e)
        args = (*args, pad[:, None, None, :])
        return F.scaled_dot_product_attention(*args)
    """
    assert found(src) == []


@pytest.mark.parametrize("change", ["args.append(pad)", "args[3] = ~pad", "args.insert(0, q)"])
def test_a_list_changed_in_place_is_not_spread(change):
    src = f"""
    def f(q, k, v, tokens, pad_id):
        pad = tokens == pad_id
        args = [q, k, v, pad[:, None, None, :]]
        {change}
        return F.scaled_dot_product_attention(*args)
    """
    assert found(src) == []
    assert found(src.replace(f"{change}\n", "\n"), "MHA002") == [("MHA002", 7, 12)]


@pytest.mark.parametrize("build", [
    "dict(attn_mask=pad[:, None, None, :])",
    "{'attn_mask': pad[:, None, None, :]}",
    "{'attn_mask': pad[:, None, None, :], 'dropout_p': 0.0}",
])
def test_a_literal_kwargs_dict_carries_the_mask(build):
    src = f"""
    def f(q, k, v, tokens, pad_id):
        pad = tokens == pad_id
        kw = {build}
        return F.scaled_dot_product_attention(q, k, v, **kw)
    """
    assert found(src, "MHA002") == [("MHA002", 6, 12)]


@pytest.mark.parametrize("build, change", [
    ("{'attn_mask': pad[:, None, None, :], **other}", ""),
    ("dict(attn_mask=pad[:, None, None, :], **other)", ""),
    ("{'attn_mask': pad[:, None, None, :]}", "kw['attn_mask'] = ~pad[:, None, None, :]"),
    ("{'attn_mask': pad[:, None, None, :]}", "kw.update(attn_mask=None)"),
])
def test_a_dict_with_unknown_keys_or_changed_in_place_is_not_spread(build, change):
    src = f"""
    def f(q, k, v, tokens, pad_id, other):
        pad = tokens == pad_id
        kw = {build}
        {change}
        return F.scaled_dot_product_attention(q, k, v, **kw)
    """
    assert found(src) == []


def test_a_module_of_the_file_called_with_a_spread_tuple():
    src = """
    import torch.nn as nn

    class Attend(nn.Module):
        def forward(self, q, k, v, mask):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attend = Attend()

        def forward(self, x, tokens, pad_id):
            pad = tokens == pad_id
            args = (x, x, x)
            return self.attend(*args, pad[:, None, None, :])
    """
    assert found(src, "MHA002") == [("MHA002", 7, 16)]
