"""Issue 26: calls through an ``nn.ModuleDict`` (by key, over ``.values()``
and ``.items()``) and through ``super().forward``, in the same file and
across files (``fixtures/program_calls/dicts``; every front end is compared
in ``test_program_parity.py``)."""
from __future__ import annotations

import textwrap

from fixture_expect import FIXTURES, expected
from flake8_mha.analysis.program import chains, summaries
from flake8_mha.lint import engine

PKG = FIXTURES / "program_calls" / "dicts"


def _found(name):
    return {(f.line, f.col, f.code) for f in engine.analyze_file(str(PKG / name))}


def test_the_fixture_gives_its_expected_findings():
    for name in ("local.py", "model.py", "heads.py"):
        assert _found(name) == expected(PKG / name), name
    assert expected(PKG / "local.py") == {(24, 15, "MHA006"), (26, 25, "MHA006"), (30, 21, "MHA002"),
                                         (44, 25, "MHA002")}
    assert expected(PKG / "model.py") == {(16, 13, "MHA006"), (19, 13, "MHA002")}


def test_a_module_dict_s_items_are_its_kind_of_module():
    import ast

    cls = ast.parse(textwrap.dedent("""\
        class H:
            def __init__(self):
                self.a = nn.ModuleDict({"x": Attn(), "y": Attn()})
                self.b = nn.ModuleDict({"x": Attn(), "y": Other()})
                self.c = nn.ModuleDict({k: Attn() for k in "xy"})
                self.d = nn.ModuleDict({**base})
        """)).body[0]
    assert chains.class_attrs(cls) == {
        "a": "Attn", "c": "Attn",
        # by a literal key, each member's own kind (``self.b["y"](...)``)
        "a[x]": "Attn", "a[y]": "Attn", "b[x]": "Attn", "b[y]": "Other",
    }


def test_super_forward_is_an_edge_to_the_base():
    text = (PKG / "heads.py").read_text()
    table = summaries.summarise(text)
    scaled = table["Scaled.forward"]
    assert scaled["bases"] == ["Attn"]
    assert [e["callee"] for e in scaled["edges"]] == [["super", "forward"]]


def test_super_into_a_base_that_calls_modules_on_self_is_not_followed_with_modules_of_its_own(
    tmp_path,
):
    # what the base's forward calls on self would be the subclass's modules: unknown
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "m.py").write_text(textwrap.dedent("""\
        import torch.nn as nn
        import torch.nn.functional as F


        class Inner(nn.Module):
            def forward(self, q, k, v, mask=None, causal=False):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)


        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = Inner()

            def forward(self, q, k, v, mask=None, causal=False):
                return self.inner(q, k, v, mask, causal)


        class Same(Base):
            def forward(self, q, k, v, mask=None, causal=False):
                return super().forward(q, k, v, mask, causal)


        class Own(Base):
            def __init__(self):
                super().__init__()
                self.inner = nn.Identity()

            def forward(self, q, k, v, mask=None, causal=False):
                return super().forward(q, k, v, mask, causal)


        def run(q, k, v, tri):
            return Same()(q, k, v, tri, True), Own()(q, k, v, tri, True)
        """))
    found = engine.analyze_file(str(tmp_path / "pkg" / "m.py"))
    assert [(f.line, f.code) for f in found] == [(34, "MHA006")]
    assert found[0].col == 12  # Same()(...), not Own()(...)


def test_a_factory_that_returns_a_module_runs_that_module_s_forward():
    # fixtures/program_calls/factories/tower.py: build_attend() and build_named() return an
    # Attend; calls of what they build, held directly or in a ModuleList, are followed
    tower = FIXTURES / "program_calls" / "factories" / "tower.py"
    found = {(f.line, f.col, f.code) for f in engine.analyze_file(str(tower))}
    assert found == expected(tower) == {(16, 13, "MHA006"), (19, 21, "MHA006")}
    table = summaries.summarise((FIXTURES / "program_calls" / "factories" / "modules.py").read_text())
    assert table[summaries.MODULES] == {"build_attend": "Attend", "build_named": "Attend"}


def test_a_factory_returning_two_kinds_or_a_parameter_is_not_followed():
    table = summaries.summarise(textwrap.dedent("""\
        import torch.nn.functional as F
        import torch.nn as nn

        class A(nn.Module):
            def forward(self, q, k, v, mask=None):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

        class B(A):
            pass

        def either(flag):
            if flag:
                return A()
            return B()

        def given(module):
            return module

        def one():
            return A()
        """))
    assert table[summaries.MODULES] == {"one": "A"}
