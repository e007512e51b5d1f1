"""Issue 17's remaining forms: ``where`` through einx, dropout probabilities
chosen by branches (issue 14's table), and every hand-written-attention
fixture through a real flake8 process.

Findings are checked as a user sees them: code, line and column (flake8's
1-based column)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

from fixture_expect import FIXTURES, ROOT, expected
from flake8_mha.lint.engine import analyze_source


def found(source: str, *codes: str):
    out = analyze_source(textwrap.dedent(source), "t.py", list(codes) or None)
    return [(f.code, f.line, f.col) for f in out if f.code != "MHA000"]


# --------------------------------------------------------------------------- einx.where

EINX = """\
import einx
import torch


def attend(q, k, v, tokens, pad_id):
    sim = q @ k.transpose(-2, -1)
    MASK_LINE
    sim = CALL
    return sim.softmax(-1) @ v
"""


def einx_case(mask: str, call: str) -> str:
    return EINX.replace("MASK_LINE", mask).replace("CALL", call)


@pytest.mark.parametrize("mask, call, want", [
    # True keeps sim (torch.where's convention): an ignore-mask there is MHA002
    ("m = tokens == pad_id", 'einx.where("b j, b h i j,", m, sim, float("-inf"))',
     [("MHA002", 8, 11)]),
    ("m = tokens != pad_id", 'einx.where("b j, b h i j,", m, sim, float("-inf"))', []),
    # -inf first: True removes: a keep-mask there is MHA003
    ("m = tokens != pad_id", 'einx.where("b j, , b h i j", m, float("-inf"), sim)',
     [("MHA003", 8, 11)]),
    ("m = tokens == pad_id", 'einx.where("b j, , b h i j", m, float("-inf"), sim)', []),
    # the fill through a helper / finfo arithmetic
    ("m = tokens == pad_id",
     'einx.where("b j, b h i j,", m, sim, -torch.finfo(sim.dtype).max)', [("MHA002", 8, 11)]),
    # a fill of 0 says nothing about the mask
    ("m = tokens == pad_id", 'einx.where("b j, b h i j,", m, sim, 0.0)', []),
    # keyword arguments are not einx's signature: not read
    ("m = tokens == pad_id", 'einx.where("b j, b h i j,", m, sim, y=float("-inf"))', []),
    # another library's where is not einx's
    ("m = tokens == pad_id", 'other.where("b j, b h i j,", m, sim, float("-inf"))', []),
])
def test_einx_where_is_a_mask_sink(mask, call, want):
    assert found(einx_case(mask, call), "MHA002", "MHA003") == want


TRI = """\
import einx
import torch


def attend(q, k, v):
    i, j = q.size(-2), k.size(-2)
    sim = q @ k.transpose(-2, -1)
    future = torch.ones(i, j, dtype=torch.bool).triu(j - i + 1)
    sim = einx.where(DESC, future, sim, float("-inf"))
    return sim.softmax(-1) @ v
"""


@pytest.mark.parametrize("desc, want", [
    ('"i j, b h i j, -> b h i j"', [("MHA002", 9, 11)]),
    ('"i j, b h i j,"', [("MHA002", 9, 11)]),
    ('"... i j, ... i j,"', [("MHA002", 9, 11)]),
    ('"j i, b h i j, -> b h i j"', []),  # transposed: the triangle flips
    ('"... i j"', []),  # one expression: the axes are not spelled out
    ('"(i j), b h (i j),"', []),  # brackets: not read
    ("DESC_NAME", []),  # not a literal
])
def test_a_triangle_through_einx_only_when_the_axes_line_up(desc, want):
    src = TRI.replace("DESC", desc)
    assert found(src, "MHA002", "MHA003") == want


def test_a_triangle_through_einx_on_scores_never_softmaxed_is_not_judged():
    src = TRI.replace("DESC", '"i j, b h i j,"').replace(
        "    return sim.softmax(-1) @ v\n", "    return sim\n")
    assert found(src, "MHA002", "MHA003") == []


def test_einx_where_covers_a_multiplied_mask_like_torch_where():
    # the scores are multiplied by a 0/1 keep-mask, then its zeros are filled through einx
    src = """\
    import einx
    import torch

    def attend(q, k, v, tokens, pad_id):
        keep = (tokens != pad_id).float()[:, None, None, :]
        sim = q @ k.transpose(-2, -1)
        sim = sim * keep
        sim = einx.where("b h i j, b h i j,", keep.bool(), sim, float("-inf"))
        return sim.softmax(-1) @ v
    """
    assert found(src, "MHA012") == []
    assert found(src.replace('        sim = einx.where("b h i j, b h i j,", keep.bool(), sim, '
                             'float("-inf"))\n', ""), "MHA012") == [("MHA012", 7, 11)]


# --------------------------------------------------------------------------- MHA007 branches

DROP = """\
import torch.nn as nn
import torch.nn.functional as F


class A(nn.Module):
    def __init__(self, p=0.1, use=True):
        super().__init__()
        self.p = p
        self.use = use

    def forward(self, q, k, v, given=None):
BODY
        return F.scaled_dot_product_attention(q, k, v, dropout_p=p)
"""


@pytest.mark.parametrize("body, want", [
    ("p = self.p if self.use else 0.0", [("MHA007", 13, 16)]),
    ("p = 0.0 if self.use else self.p", [("MHA007", 13, 16)]),
    ("p = 0.0\nif self.use:\n    p = self.p", [("MHA007", 15, 16)]),
    ("p = self.p if self.training else 0.0", []),
    ("p = self.p\nif not self.training:\n    p = 0.0", []),
    ("p = 0.0 if self.use else 0", []),
    ("p = given if given is not None else self.p", []),  # a parameter branch: the caller's
    ("p = self.p if self.use else given", []),
])
def test_a_probability_chosen_by_branches(body, want):
    src = DROP.replace("BODY", textwrap.indent(body, " " * 8))
    assert found(src, "MHA007") == want


# --------------------------------------------------------------------------- real flake8

HANDWRITTEN = [
    "MHA002_star_args.py",
    "MHA003_mask_forms.py",
    "MHA004_mask_added_to_scores.py",
    "MHA006_exclusive_branches.py",
    "MHA007_sdpa_dropout_in_eval.py",
    "MHA012_mask_multiplied_before_softmax.py",
    "MHA102_chained_construction.py",
]
_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>MHA\d{3}) ")


@pytest.mark.parametrize("name", HANDWRITTEN)
def test_real_flake8_reports_exactly_the_fixture_markers(name):
    path = FIXTURES / name
    want = expected(path)
    assert want, f"{name} has no expected finding"
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "MHA",
         os.path.join("fixtures", name)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    got = set()
    for line in proc.stdout.splitlines():
        m = _LINE.match(line)
        assert m is not None, line
        got.add((int(m["line"]), int(m["col"]), m["code"]))
    assert got == want


def test_real_flake8_sees_the_star_args_and_einx_sinks():
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "MHA002,MHA003",
         "fixtures/MHA002_star_args.py", "fixtures/MHA003_mask_forms.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert ("MHA002_star_args.py:20:12: MHA002 mask from line 17 (tokens == pad_id) means "
            "True = ignore") in out
    assert ("MHA003_mask_forms.py:78:11: MHA002 mask from line 77 (input_ids == pad_id) means "
            "True = ignore; einx.where(..., mask, x, -inf) treats True as attend") in out


PREDICATE = textwrap.dedent(
    """\
    import torch.nn.functional as F


    {predicate}


    def guarded(q, k, v, mask=None):
        if not exists(mask):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=True)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=False)
    """
)


@pytest.mark.parametrize(
    "predicate,want",
    [
        # the file's own one-line predicate reads as its body: the mask is None there
        ("def exists(v):\n    return v is not None", []),
        # a predicate that says something else, or is decorated, is not read
        ("def exists(v):\n    return v is None", [("MHA006", 10, 16)]),
        ("@staticmethod\ndef exists(v):\n    return v is not None", [("MHA006", 11, 16)]),
        ("def exists(v):\n    print(v)\n    return v is not None", [("MHA006", 11, 16)]),
    ],
)
def test_mha006_reads_the_files_own_none_predicate(predicate, want):
    assert found(PREDICATE.format(predicate=predicate), "MHA006") == want
