"""Issue 30: the top-level functions a summary table cannot keep are told from
their text before any is summarised (``program/live_defs.py``), and the
tables stay what they were: each case below is checked both ways, the names
left out and the table with the screen against the table without it."""

from __future__ import annotations

import ast
import textwrap

import pytest

from flake8_mha.analysis.program import live_defs, signatures
from flake8_mha.analysis.program.summaries import summarise
from flake8_mha.core.lines import source_lines
from flake8_mha.core.torch_api import SDPA_NAME


def _dead(source: str, fills: bool = False) -> set:
    source = textwrap.dedent(source)
    seeds = {SDPA_NAME, *(live_defs.FILL_WORDS if fills else ())}
    return live_defs.dead_functions(ast.parse(source), source_lines(source), frozenset(seeds))


CASES = {
    # a helper only torch's functions and the file's dead helpers call
    "plain helpers": (
        """
        import torch
        import torch.nn.functional as F

        def norm(x):
            return torch.nn.functional.layer_norm(x, x.shape[-1:])

        def twice(x):
            return norm(norm(x))

        def attend(q, k, v, mask):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

        def outer(q, k, v, mask):
            return attend(q, k, v, mask)
        """,
        {"norm", "twice"},
    ),
    # a call of a project import, of a class, of an alias or a partial keeps it
    "calls of what the table may hold": (
        """
        import functools as ft
        from .attn import attend
        from torch import nn

        class Block(nn.Module):
            pass

        def via_import(q, k, v, m):
            return attend(q, k, v, m)

        def via_class(d):
            return Block(d)

        alias = via_import
        bound = ft.partial(via_import, m=None)
        built = nn.Linear(4, 4)

        def via_alias(q, k, v, m):
            return alias(q, k, v, m)

        def via_partial(q, k, v):
            return bound(q, k, v)

        def via_module(x):
            return built(x)
        """,
        {"via_module"},
    ),
    # a name bound by a ``def`` and by an assignment is not a candidate
    "rebound by assignment": (
        """
        def helper(x):
            return x

        helper = staticmethod(helper)

        def user(x):
            return helper(x)
        """,
        {"user"},
    ),
    # a star import of what may be the project: any name may be a wrapper
    "project star import": (
        """
        from .attn import *

        def user(q, k, v, m):
            return attend(q, k, v, m)
        """,
        set(),
    ),
    # recursion alone keeps nothing
    "recursion": (
        """
        def walk(x, n):
            return x if n == 0 else walk(x, n - 1)
        """,
        {"walk"},
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_functions_left_out(name):
    source, dead = CASES[name]
    assert _dead(source) == dead


def test_a_fill_keeps_its_function_only_where_the_file_fills_scores():
    source = """
    def fill(scores, mask):
        return scores.masked_fill(mask, float("-inf")).softmax(-1)
    """
    assert _dead(source, fills=False) == {"fill"}
    assert _dead(source, fills=True) == set()


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_table_as_without_the_screen(name):
    source = textwrap.dedent(CASES[name][0])
    assert summarise(source, screen=True) == summarise(source, screen=False)


def test_one_parse_shared_per_text():
    text = "def f(x):\n    return x\n"
    first = signatures.parse(text)
    assert signatures.parse(text) is first
    assert signatures.parse(text + "\n") is not first  # another text, another tree
    with pytest.raises(SyntaxError):
        signatures.parse("def (")
