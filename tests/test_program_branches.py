"""Issue 26: branches the program never takes, tested through ``and``/``or``,
``not`` and ``is None``.

``fixtures/program_calls/branches``: every construction of ``Block`` passes
``causal=False`` and no call passes ``pad``; the branches under ``if
self.causal and x.dim() == 3``, ``if x.dim() == 4 and not (not
self.causal)`` and ``if pad is not None`` never run, so their MHA005 is not
reported. ``if self.causal or x.dim() == 3`` runs for 3-D data: reported."""
from __future__ import annotations


import pytest

from fixture_expect import (
    FIXTURES, assert_package_messages, copied, engine_rows,
)
from flake8_mha.lint import engine

PKG = FIXTURES / "program_calls" / "branches"
MHA005 = ("is_causal=True without attn_mask: MultiheadAttention raises in training and silently "
          "ignores the causal hint on the inference fastpath")
MESSAGES = {("layers.py", 23, 20, "MHA005"): MHA005}


def test_flake8_over_the_package_and_on_each_file_alone():
    assert_package_messages(PKG, MESSAGES)


@pytest.mark.parametrize("change, lines", [
    # a construction asks for the causal path: the causal branches run
    (("self.second = Block(dim)", "self.second = Block(dim, causal=True)"), [17, 19, 23]),
    # a call passes a padding mask: its branch runs
    (("self.second(self.first(x))", "self.second(self.first(x), x.sum(-1) == 0)"), [21, 23]),
    # the flag handed in from outside: nothing is fixed
    (("self.first = Block(dim, causal=False)", "self.first = Block(dim, causal=CAUSAL)"),
     [17, 19, 23]),
])
def test_a_program_that_takes_the_branch_reports_it(tmp_path, change, lines):
    pkg = copied(PKG, tmp_path)
    model = pkg / "model.py"
    text = model.read_text()
    assert change[0] in text
    model.write_text(text.replace(change[0], change[1]))
    assert engine_rows(pkg / "layers.py") == [(line, 20, "MHA005") for line in lines]


def test_this_file_alone_knows_no_construction():
    text = (PKG / "layers.py").read_text()
    got = engine.analyze_source(text, str(PKG / "layers.py"), project=False)
    assert [(f.line, f.code) for f in got] == [(17, "MHA005"), (19, "MHA005"), (21, "MHA005"),
                                              (23, "MHA005")]
