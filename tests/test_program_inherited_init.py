"""Issue 26, item 3: a subclass that inherits its base's ``__init__`` as it
is reads the base's constructor parameters as its own constructions pass
them.

``fixtures/program_calls/inherited_init`` (SAM's two-way transformer): the
base ``Attention`` stores ``self.dropout_p = dropout``; ``FusedAttention``
and ``LowResAttention`` call SDPA with ``dropout_p=self.dropout_p``, not
gated.  ``FusedAttention`` is built with ``dropout=0.1``: MHA007, and the
message says what the project passes.  ``LowResAttention``'s one
construction passes ``dropout=0.0``: nothing is dropped, silent (it was a
false MHA007)."""

from __future__ import annotations

from fixture_expect import assert_package_runs, write_package

from flake8_mha.lint.engine import analyze_file

PKG = "fixtures/program_calls/inherited_init"


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(PKG, [("attn.py", 32, 15, "MHA007")])


def test_the_message_names_the_subclass_constructions():
    found = analyze_file(PKG + "/attn.py", ["MHA007"])
    assert [(f.line, f.col) for f in found] == [(32, 15)]
    assert found[0].message.endswith(
        "every construction of FusedAttention in the project (1) passes dropout=0.1"
    )


ATTN = """\
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, dim, dropout=0.0):
        super().__init__()
        self.dropout_p = dropout


class Low(Attention):
    OWN_INIT
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout_p)
"""


def _found(tmp_path, own_init="", build="Low(8, dropout=0.0)", extra=""):
    pkg = write_package(
        tmp_path / "pkg",
        {
            "attn.py": ATTN.replace("OWN_INIT", own_init) + extra,
            "model.py": f"from .attn import Low\nfinal = {build}\n",
        },
    )
    return [(f.code, f.line, f.col) for f in analyze_file(str(pkg / "attn.py"), ["MHA007"])]


def test_only_the_subclass_constructions_count(tmp_path):
    assert _found(tmp_path / "a") == []
    assert _found(tmp_path / "b", build="Low(8)") == []  # the inherited default, 0.0
    assert _found(tmp_path / "c", build="Low(8, dropout=0.2)") == [("MHA007", 14, 16)]


def test_an_init_of_its_own_or_a_subclass_leaves_the_value_unknown(tmp_path):
    """Through its own ``__init__`` (it may call ``super().__init__`` with
    anything) or with a subclass of its own built with what the analysis
    cannot read, the class's constructions do not settle the value: reported
    as before.  A subclass that inherits the ``__init__`` is built with the
    same parameters: its constructions count as the class's (probe AD's
    AD18), and one never built changes nothing."""
    own = "def __init__(self, dim):\n        super().__init__(dim, dropout=0.1)\n"
    assert _found(tmp_path / "a", own_init=own, build="Low(8)") == [("MHA007", 16, 16)]
    sub = "\n\nclass Lower(Low):\n    pass\n"
    assert _found(tmp_path / "b", extra=sub + "\n\nmade = Lower(**cfg)\n") == [("MHA007", 14, 16)]
    assert _found(tmp_path / "c", extra=sub) == []
    assert _found(tmp_path / "d", extra=sub + "\n\nmade = Lower(8, dropout=0.3)\n") == [
        ("MHA007", 14, 16)
    ]


def test_an_init_between_the_two_classes_leaves_it_unknown(tmp_path):
    """``class Mid(Attention)`` with an ``__init__`` of its own, then ``class
    Low(Mid)``: Low's constructions pass Mid's parameters, not Attention's."""
    mid = (
        "\n\nclass Mid(Attention):\n    def __init__(self, dim):\n"
        "        super().__init__(dim, dropout=0.1)\n"
    )
    src = ATTN.replace("class Low(Attention):", mid.lstrip("\n") + "\n\nclass Low(Mid):")
    src = src.replace("    OWN_INIT\n", "")
    pkg = write_package(
        tmp_path / "pkg", {"attn.py": src, "model.py": "from .attn import Low\nfinal = Low(8)\n"}
    )
    found = analyze_file(str(pkg / "attn.py"), ["MHA007"])
    assert [(f.code, f.line) for f in found] == [("MHA007", 18)]
