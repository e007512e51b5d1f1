"""Masks made by the function a factory returns (probe L's ``make_pad_fn``):
``self.pad_fn = make_pad_fn(PAD_ID)`` in ``__init__`` then
``self.pad_fn(ids)`` in ``forward``, ``fn = make_pad_fn(0)`` then
``fn(ids)``, and ``make_pad_fn(0)(ids)``.  The inner function's returns are
evaluated with its parameters bound to the call's arguments and the
factory's to the arguments of the call that made it, in the linted file;
a factory of another project file is read there with its parameters
unknown (``docs/reach.md``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

from fixture_expect import ROOT, assert_package_runs
from flake8_mha.lint.engine import analyze_source

CLOSURES = "fixtures/program_calls/closures"

IN_FILE = """\
import torch.nn.functional as F
from torch import nn


def make_pad_fn(pad_id):
    def is_pad(ids):
        return ids == pad_id
    return is_pad


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.pad_fn = make_pad_fn(0)

    def forward(self, q, k, v, ids):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.pad_fn(ids)[:, None, None, :])


def direct(q, k, v, ids):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=make_pad_fn(0)(ids)[:, None, None, :])


def local(q, k, v, ids):
    fn = make_pad_fn(0)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=fn(ids)[:, None, None, :])
"""


def _found(src, codes=("MHA002", "MHA003")):
    return [(f.code, f.line, f.col) for f in analyze_source(textwrap.dedent(src), "m.py", codes)]


def test_each_form_of_a_closure_call_is_followed_in_the_file():
    assert _found(IN_FILE) == [("MHA002", 17, 16), ("MHA002", 21, 12), ("MHA002", 26, 12)]
    kept = IN_FILE.replace("ids == pad_id", "ids != pad_id")
    assert _found(kept) == []


def test_the_factory_s_own_arguments_are_bound_at_the_call_that_made_it():
    src = """\
    import torch.nn.functional as F


    def make_masker(mask):
        def masker(heads):
            return mask[:, None, None, :].expand(-1, heads, -1, -1)
        return masker


    def run(q, k, v, ids, pad_id):
        good = make_masker(ids != pad_id)
        bad = make_masker(ids == pad_id)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=good(8))
        return F.scaled_dot_product_attention(a, k, v, attn_mask=bad(8))
    """
    assert _found(src) == [("MHA002", 14, 12)]


def test_what_is_not_one_nested_function_is_unknown():
    # the factory returns a module-level function, or its inner function on one path only
    src = """\
    import torch.nn.functional as F


    def is_pad(ids):
        return ids == 0


    def make_pad_fn(pad_id):
        return is_pad


    def make_maybe(pad_id, on):
        def inner(ids):
            return ids == pad_id
        if on:
            return inner
        return None


    def run(q, k, v, ids):
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=make_pad_fn(0)(ids))
        return F.scaled_dot_product_attention(a, k, v, attn_mask=make_maybe(0, True)(ids))
    """
    assert _found(src) == []


def test_a_recursive_factory_ends():
    src = """\
    import torch.nn.functional as F


    def make(n):
        def inner(m):
            return make(n - 1)(m) if n else m
        return inner


    def run(q, k, v, ids):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=make(3)(ids == 0))
    """
    assert _found(src) == []  # the recursive path is unknown, and so is the join: no guess


def test_a_closure_from_another_file_stored_on_the_module_is_judged_at_sdpa():
    found = assert_package_runs(
        CLOSURES, [("blocks.py", 24, 13, "MHA002"), ("model.py", 29, 16, "MHA002")]
    )
    blocks = [f for f in found if f.path.endswith("blocks.py")][0]
    assert blocks.msg.startswith(
        "mask from line 24 (self.pad_fn() made by make_pad_fn() -> "
        "fixtures/program_calls/closures/masks.py:8: ids == pad_id) means True = ignore"
    )


def test_an_edit_of_the_factory_s_file_changes_the_finding(tmp_path):
    """With flake8's results cache on (a project of its own), blocks.py is
    unchanged but its finding follows masks.py."""
    (tmp_path / "setup.cfg").write_text("[flake8]\n")
    shutil.copytree(ROOT / CLOSURES, tmp_path / "pkg")

    def run():
        proc = subprocess.run(
            [sys.executable, "-m", "flake8", "--select", "MHA", "-j", "1", "pkg/blocks.py"],
            cwd=tmp_path, capture_output=True, text=True, timeout=300,
        )
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc.returncode, [line.split(" ", 2)[:2] for line in proc.stdout.splitlines()]

    assert run() == (1, [["pkg/blocks.py:24:13:", "MHA002"]])
    assert (tmp_path / ".flake8-mha-cache").is_dir()
    masks = tmp_path / "pkg" / "masks.py"
    masks.write_text(masks.read_text().replace("return ids == pad_id", "return ids != pad_id"))
    assert run() == (0, [])
