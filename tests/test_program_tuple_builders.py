"""Issue 26, item 2: a mask builder of another file that returns a tuple
(PyG's ``to_dense_batch``): the element the caller unpacks is the mask that
element of every return is.

``fixtures/program_calls/tuple_builders``: ``h, mask = to_dense_batch(...)``
gives the keep-mask of real nodes, inverted into SDPA (MHA002); ``pad,
pairs = padded_and_pairs(...)`` gives the padding, inverted into
``key_padding_mask`` (MHA003).  The same elements given as they are stay
silent; so do files that only unpack the other element."""

from __future__ import annotations

from fixture_expect import assert_package_runs, write_package

from flake8_mha.lint.engine import analyze_file

PKG = "fixtures/program_calls/tuple_builders"


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(PKG, [("conv.py", 12, 16, "MHA002"), ("encoder.py", 20, 18, "MHA003")])


UTILS = """\
import torch


def split(lengths, n):
    pad = torch.arange(n)[None, :] >= lengths[:, None]
    return RETURN
"""

CALLER = """\
import torch.nn.functional as F

from .utils import split


def attend(q, k, v, lengths):
    a, b = split(lengths, q.shape[-2])
    return F.scaled_dot_product_attention(q, k, v, attn_mask=USED[:, None, None, :])
"""


def _found(tmp_path, returned, used):
    pkg = write_package(
        tmp_path / "pkg",
        {
            "utils.py": UTILS.replace("RETURN", returned),
            "model.py": CALLER.replace("USED", used),
        },
    )
    return [(f.code, f.line, f.col) for f in analyze_file(str(pkg / "model.py"), ["MHA002"])]


def test_the_element_unpacked_is_the_one_read(tmp_path):
    assert _found(tmp_path / "a", "pad, ~pad", "a") == [("MHA002", 8, 12)]
    assert _found(tmp_path / "b", "pad, ~pad", "b") == []
    assert _found(tmp_path / "c", "~pad, pad", "b") == [("MHA002", 8, 12)]


def test_an_element_unknown_on_one_path_is_unknown(tmp_path):
    returned = "(pad, n) if n > 4 else (lengths, n)"
    assert _found(tmp_path / "a", returned, "a") == []
