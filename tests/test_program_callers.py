"""Issue 26, items 3 and 8: facts into a function from its callers.

``fixtures/program_calls/callers``: a mask or a dropout that every call in
the package leaves off (None, 0) is known inside the function, and a
finding it makes harmless is not reported; one a call leaves open is; a
function or class nothing in the package calls keeps its judgement, and
the message says its callers are outside the package.  The confirmer's
witness runs with the values the program passes.  Expectations: the inline
``# MHA006:16 => VERDICT`` comments of the fixture's files."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from fixture_expect import FIXTURES, ROOT, check_json, expected, flake8_run
from flake8_mha.lint import engine

PKG = FIXTURES / "program_calls" / "callers"
FILES = sorted(PKG.glob("*.py"))
REL = "fixtures/program_calls/callers/"
MHA006 = ("scaled_dot_product_attention given attn_mask together with is_causal: it raises "
          "with dropout and silently applies both masks otherwise")
MHA005 = ("is_causal=True without attn_mask: MultiheadAttention raises in training and "
          "silently ignores the causal hint on the inference fastpath")
# what the user reads, per finding of attend.py (blocks.py and model.py report nothing)
MESSAGES = {
    (32, 16, "MHA006"): MHA006 + "; every construction of Masked in the project (1) passes "
                                 "causal=True",
    (41, 12, "MHA006"): MHA006,
    (46, 12, "MHA006"): MHA006,
    (53, 16, "MHA006"): MHA006,
    # the pair raises only with dropout: what every call passes for it is said
    (63, 16, "MHA006"): MHA006 + "; every call of Triangle.forward in the project (2) has "
                                 "dropout_p=0.0",
    (72, 16, "MHA006"): MHA006,
    # heads=8 is fixed by the project too, but MHA005 does not rest on it: not said
    (83, 16, "MHA005"): MHA005 + "; every call of CausalMHA.forward in the project (1) "
                                 "has mask=None",
    (101, 16, "MHA006"): MHA006 + "; Loose is never built in the project: its callers are "
                                  "outside it",
    (106, 12, "MHA006"): MHA006 + "; loose_attend is never called in the project: its "
                                  "callers are outside it",
    (120, 16, "MHA006"): MHA006 + "; every construction of TriangleBuilt in the project (1) "
                                  "passes p=0.0",
}


def _want():
    return {("attend.py", line, col, code) for line, col, code in expected(PKG / "attend.py")}


def test_the_fixture_states_what_the_messages_say():
    # guards the fixture: every expected finding has its message here, and no other file expects one
    assert _want() == {("attend.py",) + key for key in MESSAGES}
    assert all(not expected(p) for p in FILES if p.name != "attend.py")


def _flake8(*args):
    status, found = flake8_run(*args)
    return status, {(f.path.rsplit("/", 1)[-1], f.line, f.col, f.code): f.msg for f in found}


def _messages():
    return {("attend.py",) + key: msg for key, msg in MESSAGES.items()}


def test_flake8_over_the_package():
    assert _flake8(REL) == (1, _messages())


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_flake8_one_file_at_a_time(path):
    status, got = _flake8(str(path.relative_to(ROOT)))
    want = {k: v for k, v in _messages().items() if k[0] == path.name}
    assert (status, got) == (1 if want else 0, want)


def test_check_reports_what_flake8_reports():
    status, found, stderr = check_json(REL)
    assert status == 1, stderr
    got = {(f["path"].rsplit("/", 1)[-1], f["line"], f["col"], f["code"]): f["message"]
           for f in found}
    assert got == _messages()
    by_line = {f["line"]: f["evidence"] for f in found}
    assert by_line[83]["called"] == {"CausalMHA.forward": {"mask": None}}
    assert by_line[101]["callers_outside"] == ["Loose"]
    assert by_line[106]["callers_outside"] == ["loose_attend"]


# ------------------------------------------------ what leaves the callers' facts open


def _copy(tmp_path):
    pkg = tmp_path / "callers"
    shutil.copytree(PKG, pkg)
    return pkg


def _found(path):
    return [(f.line, f.col, f.code) for f in engine.analyze_file(str(path))]


SETTLED = [(32, 16, "MHA006"), (41, 12, "MHA006"), (46, 12, "MHA006"), (53, 16, "MHA006"),
           (63, 16, "MHA006"), (72, 16, "MHA006"), (83, 16, "MHA005"), (101, 16, "MHA006"),
           (106, 12, "MHA006"), (120, 16, "MHA006")]


def test_the_fixture_in_a_copy(tmp_path):
    assert _found(_copy(tmp_path) / "attend.py") == SETTLED


@pytest.mark.parametrize("change, reported", [
    # a call passes a mask: Attend's pair meets, causal_attend's too
    (("a = self.attend(q, k, v)", "a = self.attend(q, k, v, keep)"), (21, 16, "MHA006")),
    (("c = causal_attend(q, k, v)", "c = causal_attend(q, k, v, keep)"), (37, 12, "MHA006")),
    # the mask is the caller's own parameter: not a literal
    (("c = causal_attend(q, k, v)", "c = causal_attend(q, k, v, causal_mask)"),
     (37, 12, "MHA006")),
    # handed to another function: calls not read
    (("a = self.attend(q, k, v)", "a = run(self.attend, q, k, v)"), (21, 16, "MHA006")),
    (("c = causal_attend(q, k, v)", "c = run(causal_attend, q, k, v)"), (37, 12, "MHA006")),
    # a splat at the call; a call that does not fit the signature
    (("c = causal_attend(q, k, v)", "c = causal_attend(*qkv)"), (37, 12, "MHA006")),
    (("c = causal_attend(q, k, v)", "c = causal_attend(q, k, v, keep, keep)"),
     (37, 12, "MHA006")),
    # built into a container, or subclassed
    (("self.attend = Attend(causal=True)", "self.attend = nn.ModuleList([Attend(causal=True)])"),
     (21, 16, "MHA006")),
    (("class Block(nn.Module):", "class Sub(Attend):\n    pass\n\n\nclass Block(nn.Module):"),
     (21, 16, "MHA006")),
    # the dropout: a call passes one (the triangle then is no longer harmless to the witness:
    # the finding is there either way), and the MHA005 mask: its call passes one
    (("y = self.mix(x)", "y = self.mix(x, causal_mask)"), None),
])
def test_a_call_the_analysis_cannot_settle_leaves_the_finding(tmp_path, change, reported):
    pkg = _copy(tmp_path)
    blocks = pkg / "blocks.py"
    text = blocks.read_text()
    assert change[0] in text
    blocks.write_text(text.replace(change[0], change[1]))
    got = _found(pkg / "attend.py")
    if reported is None:  # the MHA005 of CausalMHA goes: its mask may be given
        assert got == [f for f in SETTLED if f[2] != "MHA005"]
    else:
        assert got == sorted(SETTLED + [reported])
        finding = next(f for f in engine.analyze_file(str(pkg / "attend.py"))
                       if f.line == reported[0])
        # no word of the calls: they settle nothing (what constructions settle is still said)
        assert "every call of" not in finding.message
        assert "outside" not in finding.message


def test_this_file_alone_knows_no_caller():
    text = (PKG / "attend.py").read_text()
    got = engine.analyze_source(text, str(PKG / "attend.py"), project=False)
    assert [(f.line, f.code) for f in got] == [
        (21, "MHA006"), (32, "MHA006"), (37, "MHA006"), (41, "MHA006"), (46, "MHA006"),
        (53, "MHA006"), (63, "MHA006"), (72, "MHA006"), (101, "MHA006"), (106, "MHA006"),
        (120, "MHA006"), (120, "MHA007")]
    # nothing is said of callers the analysis did not look for
    assert all(f.message == MHA006 for f in got if f.code == "MHA006")


def test_an_edit_of_a_caller_invalidates_the_cached_finding(tmp_path, monkeypatch, capsys):
    from flake8_mha.frontends.check import main as check_main

    monkeypatch.chdir(tmp_path)
    pkg = _copy(tmp_path)

    def run():
        status = check_main(["--format", "json", "callers/attend.py"])
        return status, [(f["line"], f["code"]) for f in json.loads(capsys.readouterr().out)["findings"]]

    first = run()
    assert first == run()  # from the cache
    assert (21, "MHA006") not in first[1]
    model = pkg / "model.py"
    model.write_text(model.read_text().replace("self.attend(q, k, v, None)",
                                               "self.attend(q, k, v, causal_mask)"))
    assert (21, "MHA006") in run()[1]


def test_a_function_passed_around_in_a_file_beyond_is_still_a_use(tmp_path):
    # a third file that only hands the function on: nothing settles
    pkg = _copy(tmp_path)
    (pkg / "extra.py").write_text("from .attend import causal_attend\n\nHANDLERS = [causal_attend]\n")
    assert (37, 12, "MHA006") in _found(pkg / "attend.py")


# ------------------------------------------------ the confirmer runs what the program passes

MASK_ASSUMED = "mask origin unknown: used a (N, 1, 1, S) padding mask (True = attend)"
DROPOUT_ASSUMED = "the damage shows only with dropout_p=0.1, and dropout_p is unknown"
CAUSAL_ASSUMED = "is_causal may be True on this path: used True"


def _confirm(tmp_path, *args):
    out = tmp_path / "confirm.json"
    proc = subprocess.run(
        [sys.executable, "-m", "flake8_mha.frontends.cli", "confirm", "--no-cache", "--json", str(out),
         *args, REL],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    if "torch is not available" in proc.stdout + proc.stderr:
        pytest.skip("torch is not installed")
    doc = json.loads(out.read_text())
    got = {(r["line"], r["code"]): (r["verdict"], r["depends_on"]) for r in doc["results"]}
    return proc.returncode, got, proc.stdout, doc


def test_confirm_uses_what_the_program_passes(tmp_path):
    status, got, table, doc = _confirm(tmp_path)
    assert status == 1
    assert got == {
        (32, "MHA006"): ("CONFIRMED*", [MASK_ASSUMED]),  # causal=True: every construction
        (41, "MHA006"): ("CONFIRMED*", [MASK_ASSUMED]),
        (46, "MHA006"): ("CONFIRMED*", [MASK_ASSUMED]),
        (53, "MHA006"): ("CONFIRMED*", [MASK_ASSUMED]),
        # the triangle twice, and every call leaves dropout_p at 0: harmless here
        (63, "MHA006"): ("NOT REPRODUCED", []),
        # its one call passes dropout_p=0.1: the dropout call raises, nothing assumed
        (72, "MHA006"): ("CONFIRMED", []),
        (83, "MHA005"): ("CONFIRMED", []),  # 8 heads: every construction passes heads=8
        (101, "MHA006"): ("CONFIRMED*", [MASK_ASSUMED]),
        (106, "MHA006"): ("CONFIRMED*", [MASK_ASSUMED]),
        # the dropout from the constructor: every construction passes p=0.0
        (120, "MHA006"): ("NOT REPRODUCED", []),
    }
    # the table marks what the verdict still rests on, and only that
    assert table.count("[assumed*:") == 6
    assert "dropout_p is unknown" not in table
    # MHA005's witness kept the head count the program uses (a note, not an assumption)
    mha005 = next(r for r in doc["results"] if r["code"] == "MHA005")
    assert mha005["evidence"]["num_heads"] == 8
    assert mha005["assumed"] == ["embed_dim unknown: used 64 (8 heads of 8)"]


def test_without_the_project_the_witness_fills_the_unknowns(tmp_path):
    # the same files, each alone: the values the program passes are unknown again
    _, got, _, _ = _confirm(tmp_path, "--no-project-wide")
    assert got[(63, "MHA006")] == ("CONFIRMED*", [DROPOUT_ASSUMED])
    assert got[(72, "MHA006")] == ("CONFIRMED*", [DROPOUT_ASSUMED])
    assert got[(32, "MHA006")] == ("CONFIRMED*", [MASK_ASSUMED, CAUSAL_ASSUMED])
    assert got[(120, "MHA006")] == ("CONFIRMED*", [DROPOUT_ASSUMED])
    assert got[(120, "MHA007")] == ("CONFIRMED*", ["dropout_p unknown: used 0.1"])
    assert (21, "MHA006") in got and (83, "MHA005") not in got


def test_an_installed_package_is_its_own_project(tmp_path):
    """Inside ``site-packages`` the root above a package holds every other
    installed package: the callers of a file are looked for in its own
    package only.  In a checkout, every package of the root counts."""
    from flake8_mha.analysis.program import callers

    for where, expect_other in (("site-packages", False), ("checkout", True)):
        root = tmp_path / where
        for pkg in ("lib", "other"):
            (root / pkg).mkdir(parents=True)
            (root / pkg / "__init__.py").write_text("")
        (root / "lib" / "attn.py").write_text("def attend(q):\n    return q\n")
        (root / "lib" / "model.py").write_text("from .attn import attend\n")
        (root / "other" / "user.py").write_text("from lib.attn import attend\n")
        found = {p.replace("\\", "/").rsplit(f"{where}/", 1)[-1]
                 for p in callers.dependents([str(root / "lib" / "attn.py")])}
        assert ("lib/model.py" in found, "other/user.py" in found) == (True, expect_other), where


def test_a_call_through_forward_is_the_call(tmp_path):
    """``self.attend.forward(q, k, v)`` is ``self.attend(q, k, v)`` (issue 26,
    "a call is a call"): it passes no mask, so the causal ``Attend`` stays
    settled (before the seventh stop it was not read, and MHA006 stood)."""
    pkg = _copy(tmp_path)
    blocks = pkg / "blocks.py"
    blocks.write_text(blocks.read_text().replace(
        "a = self.attend(q, k, v)", "a = self.attend.forward(q, k, v)"))
    assert _found(pkg / "attend.py") == SETTLED
    blocks.write_text(blocks.read_text().replace(
        "a = self.attend.forward(q, k, v)", "a = self.attend.forward(q, k, v, keep)"))
    assert _found(pkg / "attend.py") == sorted(SETTLED + [(21, 16, "MHA006")])


def test_a_file_that_calls_a_kept_instance_without_naming_its_class_is_read(tmp_path):
    # the callers' files are read only where their text names the class (or the
    # function); a file that only calls the attribute an instance is kept in is
    # read too, and its call with a mask leaves the mask open
    pkg = _copy(tmp_path)
    (pkg / "runner.py").write_text(
        "from .blocks import Block\n\n\n"
        "def run(q, k, v, keep):\n"
        "    blk = Block()\n"
        "    return blk.attend(q, k, v, keep)\n"
    )
    assert "Attend" not in (pkg / "runner.py").read_text()
    assert _found(pkg / "attend.py") == sorted(SETTLED + [(21, 16, "MHA006")])


def test_a_text_s_signatures_are_parsed_once_whatever_else_is_asked(monkeypatch):
    """The callers' facts ask for the signatures of many functions and
    classes of one linted text (a dozen on a 3 MB generated file): its
    functions' signatures come from one parse, not one per question, also
    when ``__init__`` signatures and another text's functions are asked in
    between (the two caches once shared one name, and the functions' small
    bound emptied both)."""
    from flake8_mha.analysis.program import signatures

    text = "".join(
        f"class C{i}:\n    def __init__(self, a, b=1):\n        pass\n\n"
        f"    def forward(self, x, mask=None):\n        pass\n\n" for i in range(12)
    ) + "def attend(q, k, v, mask=None):\n    pass\n"
    other = "def helper(x):\n    pass\n"
    parsed = []
    real = signatures._signatures
    monkeypatch.setattr(signatures, "_signatures", lambda t: parsed.append(t) or real(t))
    assert signatures.function_signature(text, "attend")[0] == ("q", "k", "v", "mask")
    for i in range(12):
        assert list(signatures.init_signature(text, f"C{i}")[0]) == ["a", "b"]
    assert signatures.function_signature(other, "helper")[0] == ("x",)
    for i in range(12):
        assert signatures.function_signature(text, f"C{i}.forward")[0] == ("x", "mask")
    assert parsed.count(text) == 1


def test_the_linted_file_s_own_ast_is_read_not_parsed_again(monkeypatch):
    """The questions about the linted file's own signatures, constructions and
    calls read the ``ast`` flake8 made (a 3 MB file's second parse held 300 MB
    more), and let go of it when the file is done."""
    import ast

    from flake8_mha.analysis.program import signatures

    path = FIXTURES / "program_calls" / "callers" / "attend.py"
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    parsed = []
    real = ast.parse

    def counting(source, *args, **kwargs):
        if source == text:
            parsed.append(1)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(signatures.ast, "parse", counting)  # the one ``ast`` module, for all
    with_tree = engine.analyze_source(text, str(path), None, tree=tree)
    assert parsed == [] and not signatures._GIVEN
    monkeypatch.undo()
    assert [(f.code, f.line, f.col) for f in with_tree] == [
        (f.code, f.line, f.col) for f in engine.analyze_source(text, str(path))]
