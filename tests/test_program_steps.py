"""Transformations a function applies to its mask parameter before the sink,
carried by its summary and applied to each caller's mask (issue 26, item 2):
the Annotated Transformer's ``masked_fill(mask == 0, -1e9)`` and HF's
key-length cut ``mask[:, :, :, : k.shape[-2]]``.  Judged at each call, in
another file and in the same one, with the exact code, line and column."""
from __future__ import annotations

import textwrap

import pytest
from fixture_expect import assert_package_runs, write_package

from flake8_mha.lint.engine import analyze_file

ATTENTION = '''\
import math


def attention(query, key, value, mask=None):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if mask is not None:
        scores = scores.masked_fill(FILL, -1e9)
    return scores.softmax(dim=-1) @ value
'''
CALLER = '''\
import torch.nn as nn

from .attention import attention


class Encoder(nn.Module):
    def forward(self, q, k, v, src, pad=0):
        keep = (src != pad).unsqueeze(-2)
        ignore = (src == pad).unsqueeze(-2)
        good = attention(q, k, v, mask=keep)
        return good + attention(q, k, v, mask=ignore)
'''


def _package(tmp_path, files):
    return write_package(tmp_path / "pkg", files)


def _rows(path, codes=("MHA002", "MHA003", "MHA004", "MHA009")):
    return [(f.code, f.line, f.col) for f in analyze_file(str(path), list(codes))]


@pytest.mark.parametrize("fill", ["mask == 0", "mask.eq(0)", "mask == False", "~mask"])
def test_a_fill_of_the_inverted_parameter_is_judged_at_each_call(tmp_path, fill):
    pkg = _package(tmp_path, {"attention.py": ATTENTION.replace("FILL", fill),
                              "encoder.py": CALLER})
    got = analyze_file(str(pkg / "encoder.py"), ["MHA002", "MHA003"])
    assert [(f.code, f.line, f.col) for f in got] == [("MHA003", 11, 23)]
    assert "(src == pad), inverted by the function it is given to, means True = keep" in got[0].message
    assert _rows(pkg / "attention.py") == []  # judged at the calls, not at the fill


def test_the_same_file_judges_each_call_apart(tmp_path):
    """A correct sibling call does not hide the wrong one (issue 26, item 2)."""
    one = ATTENTION.replace("FILL", "mask == 0") + "\n\n" + textwrap.dedent(
        CALLER.replace("from .attention import attention\n", ""))
    pkg = _package(tmp_path, {"model.py": one})
    assert _rows(pkg / "model.py") == [("MHA003", 20, 23)]


SDPA = '''\
import torch.nn.functional as F


def attend(q, k, v, mask=None):
    if mask is not None:
        mask = mask[:, :, :, : k.shape[-2]]
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
'''
SDPA_CALLER = '''\
from .attn import attend


def run(q, k, v, ids):
    keep = (ids != 0)[:, None, None, :]
    pad = (ids == 0)[:, None, None, :]
    return attend(q, k, v, keep) + attend(q, k, v, pad)
'''


def test_a_key_length_cut_keeps_the_mask_s_meaning(tmp_path):
    pkg = _package(tmp_path, {"attn.py": SDPA, "model.py": SDPA_CALLER})
    assert _rows(pkg / "model.py") == [("MHA002", 7, 36)]
    assert _rows(pkg / "attn.py") == []


VIEW = '''\
import torch.nn.functional as F


def attend(q, k, v, key_mask=None):
    if key_mask is not None:
        key_mask = key_mask.view(key_mask.size(0), 1, 1, key_mask.size(-1))
    return F.scaled_dot_product_attention(q, k, v, attn_mask=key_mask)
'''


@pytest.mark.parametrize("view", [
    "key_mask.view(key_mask.size(0), 1, 1, key_mask.size(-1))",
    "key_mask.reshape(key_mask.shape[0], 1, 1, key_mask.shape[1])",
])
def test_a_padding_mask_viewed_to_four_axes_is_shaped(tmp_path, view):
    """``(N, S)`` viewed ``(N, 1, 1, S)``: the caller's meaning is judged
    (MHA002), and its 2-D shape is the right one once viewed (no MHA009)."""
    attn = VIEW.replace("key_mask.view(key_mask.size(0), 1, 1, key_mask.size(-1))", view)
    pkg = _package(tmp_path, {"attn.py": attn, "model.py": SDPA_CALLER.replace(
        "[:, None, None, :]", "").replace("from .attn import attend", "from .attn import attend")})
    assert _rows(pkg / "model.py") == [("MHA002", 7, 36)]


def test_an_aliased_mask_cut_to_the_keys_length_is_the_caller_s(tmp_path):
    """transformers' ``causal_mask = attention_mask`` then, when given,
    ``causal_mask = causal_mask[:, :, :, : k.shape[-2]]``: the caller's
    triangle reaches SDPA two calls away with its meaning, per file, over
    the package and through ``check``; the keep-triangle beside it is right."""
    assert_package_runs("fixtures/program_calls/hf_cut", [("model.py", 18, 22, "MHA002")])


ALIAS = '''\
import torch.nn.functional as F


def attend(q, k, v, attention_mask=None):
    causal_mask = attention_mask
    if TEST:
        causal_mask = STEP
    return F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask)
'''


@pytest.mark.parametrize("test, step, want", [
    ("causal_mask is not None", "causal_mask[:, :, :, : k.shape[-2]]", [("MHA002", 7, 36)]),
    ("attention_mask is not None", "~causal_mask", [("MHA002", 7, 12)]),
    # the last store, under a test of the parameter: given a mask, SDPA gets
    # it made float (MHA004 at both calls; the padding mask's meaning too)
    ("attention_mask is not None", "attention_mask.float()",
     [("MHA004", 7, 12), ("MHA002", 7, 36), ("MHA004", 7, 36)]),
    # cut under a test of something else: a mask may pass uncut or cut
    ("q.shape[2] > 1", "causal_mask[:, :, :, : k.shape[-2]]", []),
])
def test_an_alias_cut_once_is_followed_and_nothing_else_is(tmp_path, test, step, want):
    attn = ALIAS.replace("TEST", test).replace("STEP", step)
    pkg = _package(tmp_path, {"attn.py": attn, "model.py": SDPA_CALLER})
    assert _rows(pkg / "model.py") == want
