"""Issue 26: helper methods.  A class's forward that hands its arguments to
a method of its own (``self._attend(...)``) is followed through the method's
summary at each call, and a parameter that every call of the method in the
project leaves off is known to be off inside it.

``fixtures/program_calls/methods``; flake8 per file and over the package,
stdin and ``check`` are compared in ``test_program_parity.py``."""
from __future__ import annotations

import shutil

import pytest

from fixture_expect import FIXTURES, expected
from flake8_mha.analysis import focus
from flake8_mha.lint import engine

PKG = FIXTURES / "program_calls" / "methods"


def _found(path):
    return [(f.line, f.col, f.code) for f in engine.analyze_file(str(path))]


def test_the_fixture():
    assert _found(PKG / "attend.py") == [(31, 16, "MHA006"), (42, 16, "MHA002")]
    assert expected(PKG / "attend.py") == {(31, 16, "MHA006"), (42, 16, "MHA002")}
    assert _found(PKG / "sub.py") == _found(PKG / "blocks.py") == []


def test_the_focused_parse_keeps_the_callers_of_a_kept_method():
    # forward names no attention word; it calls the method that does
    text = (PKG / "attend.py").read_text()
    focused = focus.focus(text)
    assert "return self._core(q, k, v, mask, causal=True)" in focused
    assert "return self._masked(q, k, v, pad)" in focused
    full = engine.analyze_source(text, str(PKG / "attend.py"))
    try:
        focus.FOCUS = False
        assert engine.analyze_source(text, str(PKG / "attend.py")) == full
    finally:
        focus.FOCUS = True


def test_alone_the_helper_s_mask_is_unknown():
    # without the project, nothing says that no call of _attend passes a mask
    text = (PKG / "attend.py").read_text()
    got = engine.analyze_source(text, str(PKG / "attend.py"), project=False)
    assert [(f.line, f.code) for f in got] == [(16, "MHA006"), (31, "MHA006"), (42, "MHA002")]


def _copy(tmp_path):
    pkg = tmp_path / "methods"
    shutil.copytree(PKG, pkg)
    return pkg


@pytest.mark.parametrize("edit", [
    # a call of the helper passes a mask (here, from another file)
    ("blocks.py", "return self.attn(q, k, v) + self.pad(q, k, v, ids)",
     "return self.attn._attend(q, k, v, ids) + self.pad(q, k, v, ids)"),
    # the helper handed on as a value: called where the analysis cannot see
    ("attend.py", "return self._attend(q, k, v)",
     "return checkpoint(self._attend, q, k, v)"),
    # a call with a splat
    ("attend.py", "return self._attend(q, k, v)", "return self._attend(*(q, k, v))"),
    # a subclass calls it through super() with a mask
    ("sub.py", "return super()._masked(q, k, v, ~pad)",
     "return super()._masked(q, k, v, ~pad) + super()._attend(q, k, v, ~pad)"),
])
def test_a_call_that_may_pass_a_mask_leaves_the_finding(tmp_path, edit):
    pkg = _copy(tmp_path)
    name, old, new = edit
    text = (pkg / name).read_text()
    assert old in text
    (pkg / name).write_text(text.replace(old, new))
    assert (16, 16, "MHA006") in _found(pkg / "attend.py")


def test_another_class_s_method_of_the_same_name_is_not_a_call(tmp_path):
    # sub.Other defines _attend and calls its own with a mask: CausalAttention's
    # helper is still never given one
    assert "self._attend(q, k, v, mask)" in (PKG / "sub.py").read_text()
    assert (16, 16, "MHA006") not in _found(PKG / "attend.py")
    # once Other no longer defines it, that call may run CausalAttention's
    pkg = _copy(tmp_path)
    text = (pkg / "sub.py").read_text()
    (pkg / "sub.py").write_text(text.replace("def _attend(self, q, k, v, mask=None)",
                                             "def _unused(self, q, k, v, mask=None)"))
    assert (16, 16, "MHA006") in _found(pkg / "attend.py")
