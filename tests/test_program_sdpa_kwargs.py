"""Issue 26, item 1: a wrapper that hands its ``**kwargs`` straight to SDPA.

``fixtures/program_calls/sdpa_kwargs``: ``Attention.forward(x, mask=None,
**kwargs)`` and ``attend(q, k, v, **kwargs)`` call SDPA with ``**kwargs``;
the keywords a caller puts there (``is_causal=True``, ``attn_mask=~keep``)
reach SDPA as if it were called at that line, in another file or the same
one.  ``attend_causal_only`` pops the mask out of its ``**kwargs`` first:
what reaches SDPA is not the caller's, and nothing is said of its calls."""
from __future__ import annotations


import pytest

from fixture_expect import (
    FIXTURES, assert_package_messages, copied, engine_rows,
)

PKG = FIXTURES / "program_calls" / "sdpa_kwargs"
REL = "fixtures/program_calls/sdpa_kwargs/"
MHA006 = ("scaled_dot_product_attention given attn_mask together with is_causal: it raises "
          "with dropout and silently applies both masks otherwise; the call reaches "
          f"scaled_dot_product_attention at {REL}attention.py:18 through Attention.forward()")
MHA002 = ("mask from line 21 (~keep) means True = ignore; scaled_dot_product_attention treats "
          "True as attend (invert it: ~mask); the call reaches scaled_dot_product_attention at "
          f"{REL}attention.py:22 through attend()")
MESSAGES = {("model.py", 17, 17, "MHA006"): MHA006, ("model.py", 21, 13, "MHA002"): MHA002}


def test_flake8_over_the_package_and_on_each_file_alone():
    assert_package_messages(PKG, MESSAGES)


def test_the_same_wrappers_in_the_callers_file(tmp_path):
    attention = (PKG / "attention.py").read_text().splitlines()
    model = [line for line in (PKG / "model.py").read_text().splitlines()
             if not line.startswith("from .attention")]
    (tmp_path / "one.py").write_text("\n".join(attention + [""] + model) + "\n")
    moved = len(attention)  # model.py's lines move down by attention.py's, one import gone, one blank added
    assert engine_rows(tmp_path / "one.py") == [(line + moved, col, code)
                                          for (_, line, col, code) in sorted(MESSAGES)]


@pytest.mark.parametrize("change", [
    # the splat is no longer the wrapper's **kwargs as it came
    ("        b, n, d = x.shape\n", "        kwargs = dict(kwargs)\n        b, n, d = x.shape\n"),
    ("        b, n, d = x.shape\n", "        kwargs.update(is_causal=False)\n        b, n, d = x.shape\n"),
    ("attn_mask=mask, **kwargs)", "attn_mask=mask, **kwargs, **{})"),
])
def test_kwargs_changed_on_the_way_settle_nothing(tmp_path, change):
    pkg = copied(PKG, tmp_path)
    attention = pkg / "attention.py"
    text = attention.read_text()
    assert change[0] in text
    attention.write_text(text.replace(change[0], change[1], 1))
    assert engine_rows(pkg / "model.py") == [(21, 13, "MHA002")]
