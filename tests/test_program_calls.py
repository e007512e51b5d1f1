"""Issue 26: one call analysis for the whole program.  A call of the project's
own attention code is followed through the callee's summary at the call site,
whatever kind of call it is and wherever the callee lives, and every front
end reports the same findings: flake8 on one file, flake8 over the package,
and ``flake8-mha check``.

The fixture package is ``fixtures/program_calls/zoo``: its expected findings
are the inline ``# MHA002:13`` comments of each file."""
from __future__ import annotations

import json
import textwrap

import pytest

from fixture_expect import FIXTURES, ROOT, check_json, expected, flake8_run
from flake8_mha.lint import engine

ZOO = FIXTURES / "program_calls" / "zoo"
FILES = sorted(ZOO.glob("*.py"))


def _want():
    return {(p.name, line, col, code) for p in FILES for line, col, code in expected(p)}


def _flake8(*args):
    status, found = flake8_run(*args)
    return status, {(f.path.rsplit("/", 1)[-1], f.line, f.col, f.code) for f in found}


def test_the_fixture_expects_every_call_kind():
    # guards the fixture itself: a finding per call kind, bad beside good
    codes = {code for _, _, _, code in _want()}
    assert codes == {"MHA002", "MHA006", "MHA007", "MHA008", "MHA015", "MHA101"}
    assert len(_want()) == 27


def test_flake8_over_the_package():
    status, got = _flake8("fixtures/program_calls/zoo")
    assert status == 1
    assert got == _want()


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_flake8_one_file_at_a_time(path):
    _, got = _flake8(str(path.relative_to(ROOT)))
    assert got == {w for w in _want() if w[0] == path.name}


def test_check_reports_what_flake8_reports():
    status, found, stderr = check_json("fixtures/program_calls/zoo")
    assert status == 1, stderr
    got = {(f["path"].rsplit("/", 1)[-1], f["line"], f["col"], f["code"]) for f in found}
    assert got == _want()


def test_the_message_names_the_chain():
    found = engine.analyze_file(str(ZOO / "model.py"))
    first = next(f for f in found if (f.line, f.code) == (26, "MHA002"))
    assert first.message.endswith(
        "the call reaches scaled_dot_product_attention at zoo/attn.py:10 through "
        "Attention.forward()"
    )
    assert first.evidence["through"]["file"] == "zoo/attn.py"
    local = next(f for f in engine.analyze_file(str(ZOO / "local.py")) if f.line == 33)
    assert "at zoo/local.py:19 through local_attend()" in local.message


# --------------------------------------------------------------- within one text


HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def found(body):
    src = HEADER + textwrap.dedent(body)
    return [(f.code, f.line, f.col) for f in engine.analyze_source(src)]


def test_a_correct_sibling_call_does_not_hide_a_wrong_one():
    """The helper's two callers disagree: the join at its SDPA call was
    unknown and nothing was reported.  Each call is judged on its own."""
    assert found("""
    def helper(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    def run(q, k, v, tokens, pad_id):
        pad = (tokens == pad_id)[:, None, None, :]
        a = helper(q, k, v, pad)
        b = helper(q, k, v, ~pad)
        return a, b
    """) == [("MHA002", 10, 9)]


def test_agreeing_callers_are_reported_at_the_call_not_also_at_the_wrapper():
    assert found("""
    def helper(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    def run(q, k, v, tokens, pad_id):
        pad = (tokens == pad_id)[:, None, None, :]
        return helper(q, k, v, pad)
    """) == [("MHA002", 10, 12)]


def test_flags_reach_a_module_of_the_same_text():
    # masks were followed into a same-file forward before; the flags were not
    assert found("""
    class Inner(nn.Module):
        def forward(self, x, mask=None, causal=False, p=0.0):
            return F.scaled_dot_product_attention(x, x, x, attn_mask=mask, is_causal=causal, dropout_p=p)

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()
            self.p = 0.1

        def forward(self, x, mask):
            x = self.inner(x, mask, True)
            return self.inner(x, p=self.p)
    """) == [("MHA006", 16, 13), ("MHA007", 17, 16)]


def test_without_callers_the_wrapper_keeps_its_own_judgement():
    # nothing calls it here: what it can tell on its own is still reported there
    assert found("""
    def helper(q, k, v, tokens, pad_id):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=(tokens == pad_id)[:, None, None, :])
    """) == [("MHA002", 6, 12)]


# ------------------------------------------------------------------ chains


def test_a_chain_across_three_files_names_every_link():
    found = engine.analyze_file(str(ZOO / "tower.py"))
    assert [(f.line, f.col, f.code) for f in found] == [(18, 17, "MHA002"), (24, 17, "MHA006")]
    assert found[0].message.endswith(
        "the call reaches scaled_dot_product_attention at zoo/attn.py:10 through "
        "Block.forward() -> Attention.forward()"
    )
    assert found[0].evidence["through"]["chain"] == [
        ["zoo/blocks.py", "Block.forward"],
        ["zoo/attn.py", "Attention.forward"],
    ]


def test_a_summary_records_its_calls_as_edges():
    from flake8_mha.analysis.program.summaries import summarise

    table = summarise(textwrap.dedent("""\
        import torch.nn as nn
        from .attn import Attention, attend

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.mix = Attention()
                self.items = nn.ModuleList([Attention() for _ in range(2)])

            def forward(self, x, mask, flag):
                for it in self.items:
                    x = it(x, attn_mask=mask[:, None, None, :])
                x = attend(x, ~mask)
                return self.mix(x, mask, is_causal=flag)
        """))
    edges = table["Block.forward"]["edges"]
    assert [e["callee"] for e in edges] == [["self", "items"], ["name", "attend"], ["self", "mix"]]
    assert edges[0]["kw"] == {"attn_mask": {"param": "mask", "ops": [["index", ":, None, None, :"]]}}
    assert edges[1]["pos"] == {"1": {"param": "mask", "ops": [["invert"]]}}
    assert table["@attrs"] == {"Block": {"mix": "Attention", "items": "Attention"}}
    assert table["@imports"]["attend"] == [1, "attn.attend"]


def test_edges_that_cannot_reach_a_sink_are_not_kept():
    from flake8_mha.analysis.program.summaries import summarise

    # torch, the standard library, builtins, and own functions that reach nothing
    assert summarise(textwrap.dedent("""\
        import math
        import torch
        from .util import scale

        def helper(x):
            return x

        def f(x, mask):
            y = torch.softmax(mask, -1) + math.sqrt(len(mask))
            return helper(mask), scale(y)
        """)) == {}


def test_a_recursive_chain_terminates(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text(textwrap.dedent("""\
        from .b import g

        def f(x, mask):
            return g(x, mask)
        """))
    (pkg / "b.py").write_text(textwrap.dedent("""\
        from .a import f

        def g(x, mask):
            return f(x, mask)
        """))
    (pkg / "c.py").write_text(textwrap.dedent("""\
        from .a import f

        def run(x, tokens, pad_id):
            return f(x, tokens == pad_id)
        """))
    assert engine.analyze_file(str(pkg / "c.py")) == []


def test_constants_from_another_file_are_known():
    found = engine.analyze_file(str(ZOO / "sizes.py"))
    assert [(f.line, f.col, f.code) for f in found] == [
        (13, 20, "MHA008"), (15, 20, "MHA101"), (24, 20, "MHA008"),
    ]
    assert "embed_dim=500 is not divisible by num_heads=8" in found[0].message
    # ``config.WIDTH`` after ``from . import config``, and under an alias
    assert "embed_dim=500 is not divisible by num_heads=8" in found[2].message
    # this file alone: the imported names are unknown, and unknown never fires
    text = (ZOO / "sizes.py").read_text()
    assert engine.analyze_source(text, str(ZOO / "sizes.py"), project=False) == []


def test_a_constant_assigned_twice_is_unknown(tmp_path):
    from flake8_mha.analysis.program.files import module_constants
    import ast

    tree = ast.parse("A = 4\nB = A * 2\nC = 1\nC = 2\nD = C + 1\nE = f(3)\nF: int = 6\n")
    assert module_constants(tree) == {"A": 4, "B": 8, "F": 6}


# ------------------------------------------------- the cache and the chain's files


def test_an_edit_anywhere_on_the_chain_invalidates_the_cached_finding(tmp_path, monkeypatch,
                                                                      capsys):
    """tower -> blocks -> attn: the tower file names no attention word.  With
    the cache on, an edit of the last file (the wrapper stops inverting) and
    then of the middle one (the block stops forwarding) each change the
    tower's findings on the next run."""
    from flake8_mha.frontends.check import main as check_main

    monkeypatch.chdir(tmp_path)
    pkg = tmp_path / "zoo"
    pkg.mkdir()
    for name in ("__init__.py", "attn.py", "blocks.py", "tower.py"):
        (pkg / name).write_text((ZOO / name).read_text())

    def run():
        status = check_main(["--format", "json", "zoo/tower.py"])
        found = json.loads(capsys.readouterr().out)["findings"]
        return status, [(f["line"], f["code"]) for f in found]

    assert run() == (1, [(18, "MHA002"), (24, "MHA006")])
    assert run() == (1, [(18, "MHA002"), (24, "MHA006")])  # from the cache
    attn = pkg / "attn.py"
    attn.write_text(attn.read_text().replace("attn_mask=attn_mask,", "attn_mask=~attn_mask,"))
    # the caller's ignore-mask is now inverted on the way: right; its keep-mask is now wrong
    assert run() == (1, [(19, "MHA002"), (24, "MHA006")])
    blocks = pkg / "blocks.py"
    blocks.write_text(blocks.read_text().replace("attn_mask=mask,", "attn_mask=None,"))
    assert run() == (0, [])


def test_a_file_the_gate_dropped_is_analysed_once_its_import_becomes_a_wrapper(
        tmp_path, monkeypatch, capsys):
    from flake8_mha.frontends.check import main as check_main

    monkeypatch.chdir(tmp_path)
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "attn.py").write_text("def attend(x, mask):\n    return x\n")
    (pkg / "caller.py").write_text(
        "from .attn import attend\n\n\n"
        "def run(x, tokens, pad_id):\n"
        "    return attend(x, (tokens == pad_id)[:, None, None, :])\n"
    )
    assert check_main(["pkg/caller.py"]) == 0
    capsys.readouterr()
    (pkg / "attn.py").write_text(
        "import torch.nn.functional as F\n\n\n"
        "def attend(x, mask):\n"
        "    return F.scaled_dot_product_attention(x, x, x, attn_mask=mask)\n"
    )
    assert check_main(["pkg/caller.py"]) == 1
    assert capsys.readouterr().out.startswith("pkg/caller.py:5:12: MHA002 ")


# --------------------------------------------------- the callers of a changed file


def test_the_files_that_call_into_a_changed_file(monkeypatch):
    from flake8_mha.analysis.program.callers import dependents

    monkeypatch.chdir(ROOT)
    zoo = "fixtures/program_calls/zoo/"
    # tower.py imports blocks.py, which imports attn.py: two hops
    assert dependents([zoo + "attn.py"]) == [
        zoo + "blocks.py", zoo + "kv.py", zoo + "model.py", zoo + "tower.py"]
    assert dependents([zoo + "config.py"]) == [zoo + "sizes.py"]
    assert dependents([zoo + "tower.py"]) == []


# ------------------------------------------------ facts from every construction


def _attend_package(tmp_path, uses: str, attend=None):
    pkg = tmp_path / "zoo"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "attend.py").write_text(attend or (ZOO / "attend.py").read_text())
    (pkg / "uses.py").write_text(uses)
    return pkg / "attend.py"


def _codes(path):
    return [(f.line, f.code) for f in engine.analyze_file(str(path))]


def test_what_every_construction_passes_is_known(tmp_path):
    # the fixture: causal=False everywhere (MHA006 silent); heads=5 handed by
    # each construction, so each reports (MHA101), not the module they build
    assert _codes(ZOO / "attend.py") == []
    assert _codes(ZOO / "uses.py") == [(14, "MHA101"), (15, "MHA101")]
    odd = engine.analyze_file(str(ZOO / "uses.py"))[0]
    assert odd.message.endswith("; this call builds it through Mixer() at zoo/attend.py:21")
    uses = (ZOO / "uses.py").read_text()
    # one construction that may be causal: the pair may meet again
    attend = _attend_package(tmp_path, uses.replace("Attend()", "Attend(causal=True)"))
    assert _codes(attend) == [(15, "MHA006")]
    # heads left to a default every construction shares: judged at the module
    left_attend = (ZOO / "attend.py").read_text().replace(
        "def __init__(self, dim, heads):", "def __init__(self, dim, heads=5):"
    )
    left = uses.replace("Mixer(dim, 5)", "Mixer(dim)").replace("Mixer(dim, heads=5)", "Mixer(dim)")
    attend = _attend_package(tmp_path / "left", left, left_attend)
    assert _codes(attend) == [(21, "MHA101")]
    odd = engine.analyze_file(str(attend))[0]
    assert odd.message.endswith(
        "; every construction of Mixer in the project (2) leaves the default heads=5"
    )
    assert odd.evidence["constructed"] == {"heads": 5}


@pytest.mark.parametrize("change", [
    ("Attend()", "Attend(causal=flag)"),  # not a literal
    ("Attend()", "Attend(**kw)"),  # a splat
    ("self.cross = Attend()", "self.cross = partial(Attend, causal=False)"),  # passed around
    # a subclass with an __init__ of its own that hands its arguments on splat
    ("class Encoder(nn.Module):", "class Sub(Attend):\n    def __init__(self, *a):\n"
     "        super().__init__(*a)\n\n\nclass Encoder(nn.Module):"),
    # a subclass that inherits the __init__, built with what the analysis cannot read
    ("class Encoder(nn.Module):", "class Sub(Attend):\n    pass\n\n\nsub = Sub(**kw)\n\n\n"
     "class Encoder(nn.Module):"),
])
def test_a_construction_the_analysis_cannot_read_leaves_it_unknown(tmp_path, change):
    uses = (ZOO / "uses.py").read_text().replace(*change)
    assert change[1] in uses
    assert (15, "MHA006") in _codes(_attend_package(tmp_path, uses))


def test_a_subclass_that_inherits_the_init_is_built_as_its_base(tmp_path):
    # probe AD's AD18: its constructions are the base's, with its parameters
    uses = (ZOO / "uses.py").read_text()
    sub = "class Sub(Attend):\n    pass\n\n\nclass Encoder(nn.Module):"
    never = uses.replace("class Encoder(nn.Module):", sub)
    assert _codes(_attend_package(tmp_path / "never", never)) == []
    causal = never.replace("self.cross = Attend()", "self.cross = Sub(causal=True)")
    assert "Sub(causal=True)" in causal
    assert _codes(_attend_package(tmp_path / "causal", causal)) == [(15, "MHA006")]


def test_a_class_never_built_in_the_project_keeps_todays_judgement(tmp_path):
    attend = _attend_package(tmp_path, "")
    assert _codes(attend) == [(15, "MHA006")]
    # and this file alone knows nothing of the others
    text = (ZOO / "attend.py").read_text()
    assert engine.analyze_source(text, str(ZOO / "attend.py"), project=False)[0].code == "MHA006"


def test_a_flag_from_the_caller_meets_the_wrappers_own_mask():
    # only is_causal comes from the caller: the pair is judged inside, with the
    # callers' flag (the call site alone does not see the mask)
    assert found("""
    class Inner(nn.Module):
        def __init__(self):
            super().__init__()
            self.mask = torch.ones(4, 4, dtype=torch.bool).tril()

        def forward(self, x, causal=False):
            return F.scaled_dot_product_attention(x, x, x, attn_mask=self.mask, is_causal=causal)

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def forward(self, x):
            return self.inner(x, causal=True)
    """) == [("MHA006", 11, 16)]


def test_check_dependents_checks_the_importers_of_the_named_files(tmp_path, monkeypatch, capsys):
    from flake8_mha.frontends.check import main as check_main

    monkeypatch.chdir(ROOT)
    status = check_main(["--isolated", "--no-cache", "--dependents",
                         "fixtures/program_calls/zoo/blocks.py"])
    out = capsys.readouterr().out.splitlines()
    assert status == 1
    # blocks.py itself reports nothing; tower.py imports it
    assert [line.split(" MHA")[0] for line in out] == [
        "fixtures/program_calls/zoo/tower.py:18:17:", "fixtures/program_calls/zoo/tower.py:24:17:"]
    assert check_main(["--isolated", "--no-cache", "fixtures/program_calls/zoo/blocks.py"]) == 0


def test_partial_of_a_wrapper_and_of_sdpa():
    found = [(f.line, f.code, f.message.split("; ")[1:])
             for f in engine.analyze_file(str(ZOO / "local.py")) if 60 < f.line < 80]
    # the mask is Partials.forward's parameter, and nothing in the project builds Partials
    outside = "Partials is never built in the project: its callers are outside it"
    assert found == [
        (71, "MHA006", ["the call reaches scaled_dot_product_attention at zoo/local.py:59 "
                        "through local_causal()", outside]),
        # the partial of SDPA itself: named at the line that made it, as a partial
        # (probe AB's AB25)
        (74, "MHA006", ["the call reaches scaled_dot_product_attention at zoo/local.py:68 "
                        "through functools.partial(scaled_dot_product_attention)", outside]),
    ]


def test_keys_and_values_masked_before_a_wrapper(tmp_path):
    """MHA015 through the program's own attention code: silent when the
    wrapper is given a mask, or masks the scores itself."""
    assert [(f.line, f.col, f.code) for f in engine.analyze_file(str(ZOO / "kv.py"))] == [
        (12, 13, "MHA015")]
    assert found("""
    class Own(nn.Module):
        def forward(self, q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.own = Own()

        def forward(self, q, k, v, tokens, pad_id):
            keep = (tokens != pad_id)[:, None, :, None]
            return self.own(q, k * keep, v * keep)
    """) == []


def test_a_lambda_that_calls_a_wrapper():
    found = [(f.line, f.col, f.code) for f in engine.analyze_file(str(ZOO / "local.py"))
             if f.line > 80]
    # judged at the lambda's calls, not also at the call inside the lambda (line 82)
    assert found == [(85, 13, "MHA006")]


def test_a_module_missing_on_the_cold_run_re_analyses_its_importer_when_it_comes(
        tmp_path, monkeypatch, capsys):
    """Issue 29's D3, from the cold side: the wrapper's file is not there on
    the first run (a branch switch, ``git stash``); when it comes, the cached
    entry of the file that imports it misses."""
    from flake8_mha.frontends.check import main as check_main

    monkeypatch.chdir(tmp_path)
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "caller.py").write_text(
        "from .attn import attend\n\n\n"
        "def run(x, tokens, pad_id):  # softmax\n"
        "    return attend(x, (tokens == pad_id)[:, None, None, :])\n"
    )
    assert check_main(["pkg/caller.py"]) == 0
    assert check_main(["pkg/caller.py"]) == 0  # warm
    (pkg / "attn.py").write_text(
        "import torch.nn.functional as F\n\n\n"
        "def attend(x, mask):\n"
        "    return F.scaled_dot_product_attention(x, x, x, attn_mask=mask)\n"
    )
    capsys.readouterr()
    assert check_main(["pkg/caller.py"]) == 1
    assert capsys.readouterr().out.startswith("pkg/caller.py:5:12: MHA002 ")


def test_a_setattr_loop_over_other_literal_names_leaves_the_template_known():
    """``for name in ("text_attn", "image_attn"): setattr(self, name, ...)``
    names none of ``layer{i}``: ``getattr(self, f"layer{i}")`` still reaches
    the modules the template's own ``setattr`` stores (probe p10 of issue 26).
    A looped name the template may match leaves it unknown."""
    import textwrap

    from flake8_mha.lint.engine import analyze_source

    source = textwrap.dedent("""\
        import torch.nn as nn
        import torch.nn.functional as F


        class Attn(nn.Module):
            def forward(self, x, mask=None):
                return F.scaled_dot_product_attention(x, x, x, attn_mask=mask)


        class Model(nn.Module):
            def __init__(self, depth=3):
                super().__init__()
                for i in range(depth):
                    setattr(self, f"layer{i}", Attn())
                for name in NAMES:
                    setattr(self, name, Attn())

            def forward(self, x, ids):
                pad = (ids == 0)[:, None, None, :]
                x = getattr(self, f"layer{0}")(x, pad)
                return getattr(self, f"layer{1}")(x, ~pad)
        """)
    other = source.replace("for name in NAMES:", 'for name in ("text_attn", "image_attn"):')
    found = analyze_source(other, "m.py", ["MHA002"])
    assert [(f.code, f.line, f.col) for f in found] == [("MHA002", 20, 13)]
    clash = source.replace("for name in NAMES:", 'for name in ("layer0", "extra"):')
    assert analyze_source(clash, "m.py", ["MHA002"]) == []
    assert analyze_source(source, "m.py", ["MHA002"]) == []  # names it cannot read
