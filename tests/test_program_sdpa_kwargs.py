"""Issue 26, item 1: a wrapper that hands its ``**kwargs`` straight to SDPA.

``fixtures/program_calls/sdpa_kwargs``: ``Attention.forward(x, mask=None,
**kwargs)`` and ``attend(q, k, v, **kwargs)`` call SDPA with ``**kwargs``;
the keywords a caller puts there (``is_causal=True``, ``attn_mask=~keep``)
reach SDPA as if it were called at that line, in another file or the same
one.  ``attend_causal_only`` pops the mask out of its ``**kwargs`` first:
what reaches SDPA is not the caller's, and nothing is said of its calls."""
from __future__ import annotations

import shutil

import pytest

from fixture_expect import FIXTURES, ROOT, expected, flake8_run
from flake8_mha.lint import engine

PKG = FIXTURES / "program_calls" / "sdpa_kwargs"
FILES = sorted(PKG.glob("*.py"))
REL = "fixtures/program_calls/sdpa_kwargs/"
MHA006 = ("scaled_dot_product_attention given attn_mask together with is_causal: it raises "
          "with dropout and silently applies both masks otherwise; the call reaches "
          f"scaled_dot_product_attention at {REL}attention.py:18 through Attention.forward()")
MHA002 = ("mask from line 21 (~keep) means True = ignore; scaled_dot_product_attention treats "
          "True as attend (invert it: ~mask); the call reaches scaled_dot_product_attention at "
          f"{REL}attention.py:22 through attend()")
MESSAGES = {("model.py", 17, 17, "MHA006"): MHA006, ("model.py", 21, 13, "MHA002"): MHA002}


def test_the_fixture_states_what_the_messages_say():
    assert {(p.name,) + e for p in FILES for e in expected(p)} == set(MESSAGES)


def _flake8(*args):
    status, found = flake8_run(*args)
    return status, {(f.path.rsplit("/", 1)[-1], f.line, f.col, f.code): f.msg for f in found}


def test_flake8_over_the_package():
    assert _flake8(REL) == (1, MESSAGES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_flake8_one_file_at_a_time(path):
    status, got = _flake8(str(path.relative_to(ROOT)))
    want = {k: v for k, v in MESSAGES.items() if k[0] == path.name}
    assert (status, got) == (1 if want else 0, want)


def _found(path):
    return [(f.line, f.col, f.code) for f in engine.analyze_file(str(path))]


def test_the_same_wrappers_in_the_callers_file(tmp_path):
    attention = (PKG / "attention.py").read_text().splitlines()
    model = [line for line in (PKG / "model.py").read_text().splitlines()
             if not line.startswith("from .attention")]
    (tmp_path / "one.py").write_text("\n".join(attention + [""] + model) + "\n")
    moved = len(attention)  # model.py's lines move down by attention.py's, one import gone, one blank added
    assert _found(tmp_path / "one.py") == [(line + moved, col, code)
                                          for (_, line, col, code) in sorted(MESSAGES)]


@pytest.mark.parametrize("change", [
    # the splat is no longer the wrapper's **kwargs as it came
    ("        b, n, d = x.shape\n", "        kwargs = dict(kwargs)\n        b, n, d = x.shape\n"),
    ("        b, n, d = x.shape\n", "        kwargs.update(is_causal=False)\n        b, n, d = x.shape\n"),
    ("attn_mask=mask, **kwargs)", "attn_mask=mask, **kwargs, **{})"),
])
def test_kwargs_changed_on_the_way_settle_nothing(tmp_path, change):
    pkg = tmp_path / "sdpa_kwargs"
    shutil.copytree(PKG, pkg)
    attention = pkg / "attention.py"
    text = attention.read_text()
    assert change[0] in text
    attention.write_text(text.replace(change[0], change[1], 1))
    assert _found(pkg / "model.py") == [(21, 13, "MHA002")]
