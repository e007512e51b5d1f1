"""Probe M (twenty-third stop): hand-labelled multi-file packages written
from RULES.md by a session that did not see the code.  What it found
missed or false, each as a package run through flake8 per file, over the
package and through ``check``:

- SDPA wrappers that are static or class methods, called through their
  class from another file (``Attend.sdpa(q, k, v, causal=True,
  dropout_p=self.dropout)``): MHA007 and MHA006 were missed;
- encoder layers a factory of another file builds into an ``nn.ModuleList``
  (or an ``nn.Sequential``) that a class iterates: the factory's
  construction got MHA001 on sequence-first data, the layout of the
  callers two files away was not read."""

from __future__ import annotations

import ast

from fixture_expect import assert_package_runs
from flake8_mha.analysis.program.summaries import summarise

METHODS = "fixtures/program_calls/class_methods"
LAYERS = "fixtures/program_calls/factory_layers"


def test_static_and_class_method_wrappers_called_through_their_class():
    found = assert_package_runs(
        METHODS, [("layers.py", 20, 13, "MHA007"), ("layers.py", 21, 13, "MHA006")]
    )
    assert all(f.msg.endswith("through Attend.sdpa()") for f in found)


def test_their_summaries_bind_no_self():
    with open(f"{METHODS}/attend.py", encoding="utf-8") as fh:
        table = summarise(fh.read())
    assert table["Attend.sdpa"]["positional"] == ["q", "k", "v", "mask", "causal", "dropout_p"]
    assert table["Attend.sdpa"]["unbound"] is True
    plain = summarise(
        "import torch.nn.functional as F\n"
        "class A:\n"
        "    def run(self, q, k, v, m):\n"
        "        return F.scaled_dot_product_attention(q, k, v, attn_mask=m)\n"
    )
    # a plain method is a method: called through the class its self would shift
    assert plain["A.run"]["positional"] == ["q", "k", "v", "m"] and "unbound" not in plain["A.run"]


def test_a_factory_s_layers_are_judged_by_what_the_callers_of_their_container_feed():
    found = assert_package_runs(
        LAYERS,
        [("factory.py", 6, 12, "MHA001"), ("factory.py", 10, 12, "MHA903")],
        select="MHA0,MHA1,MHA903",
    )
    assert "factory_layers/model.py line 16: `B, L, D = x.shape`" in found[0].msg
    assert "factory_layers/model.py line 29: `x.transpose(0, 1)`" in found[1].msg
