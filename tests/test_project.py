"""Reach across files (issue 14): summaries of the project's own attention
wrappers, calls of them checked at the call site, through the engine, the
pipeline (check, with its cache) and a real flake8 run on one file."""
from __future__ import annotations

import json
import os
import pathlib
import re
import textwrap

import pytest

from fixture_expect import FIXTURES, flake8_run
from flake8_mha.lint import engine
from flake8_mha.frontends.check import main as check_main
from flake8_mha.lint.engine import analyze_source, select_codes
from flake8_mha.analysis.program.callsites import Project, project_root
from flake8_mha.analysis.program.wrapped import annotate
from flake8_mha.analysis.program.summaries import summarise

TREE = FIXTURES / "project_reach"
MODEL = TREE / "pkg" / "model.py"
BLOCK = TREE / "pkg" / "stack" / "block.py"
ATTN = TREE / "pkg" / "attn.py"

# (line, col, code, the other place named in the message)
MODEL_FINDINGS = {
    (22, 13, "MHA002", "pkg/attn.py:10 through attend()"),
    (24, 13, "MHA002", "pkg/attn.py:17 through attend_padded()"),
    (27, 13, "MHA002", "pkg/attn.py:41 through the function make_attention() returns"),
    (33, 13, "MHA006", "pkg/attn.py:10 through attend()"),
    (34, 13, "MHA006", "pkg/attn.py:48 through Attention.forward()"),
    (35, 13, "MHA006", "pkg/attn.py:41 through the function make_attention() returns"),
    # self.dropout is TinyTransformer's parameter, and nothing in the project builds it
    (44, 16, "MHA007", "pkg/attn.py:10 through attend(); TinyTransformer is never built in "
                       "the project: its callers are outside it"),
    (51, 13, "MHA009", "pkg/attn.py:10 through attend()"),
    (54, 13, "MHA004", "pkg/attn.py:10 through attend()"),
}
# attend, attn.attend, A.attend, attend_abs, and pkg.attend re-exported by pkg/__init__.py
BLOCK_FINDINGS = {
    (line, 13, "MHA002", "pkg/attn.py:10 through attend()") for line in (15, 16, 17, 18, 21)
}
_PLACE = re.compile(r"; the call reaches scaled_dot_product_attention at (.+)$")


def _found(findings):
    out = set()
    for f in findings:
        m = _PLACE.search(f.message)
        out.add((f.line, f.col, f.code, m.group(1) if m else None))
    return out


# -- the summaries ---------------------------------------------------------------


def test_root_is_above_the_topmost_package():
    assert project_root(str(MODEL)) == str(TREE)
    assert project_root(str(BLOCK)) == str(TREE)
    assert project_root(str(FIXTURES / "MHA002_ignore_mask_to_sdpa.py")) == str(FIXTURES)


def test_summary_of_each_helper():
    table = summarise(ATTN.read_text())
    kv = {"key": {"param": "k", "ops": []}, "value": {"param": "v", "ops": []}}
    assert table["attend"]["line"] == 10
    assert table["attend"]["reach"] == {
        "attn_mask": {"param": "attn_mask", "ops": []},
        "dropout_p": {"param": "dropout_p", "ops": []},
        "is_causal": {"param": "is_causal", "ops": []},
        **kv,  # the keys and values too (MHA015 at a caller)
    }
    assert table["attend_padded"]["reach"] == {
        "attn_mask": {"param": "keep", "ops": [["index", ":, None, None, :"]]}, **kv
    }
    # the subscript applies first, then the inversion
    assert table["attend_ignoring"]["reach"]["attn_mask"]["ops"] == [
        ["index", ":, None, None, :"],
        ["invert"],
    ]
    # the assert relates the pair: is_causal is the wrapper's business
    assert table["attend_guarded"]["reach"] == {"attn_mask": {"param": "mask", "ops": []}, **kv}
    # fold-and-clear rebinds both parameters: neither is mapped, and the mask it makes
    # is its own (a caller's masked keys meet masked scores)
    assert table["attend_folded"]["reach"] == kv
    assert table["attend_folded"]["own_mask"] is True
    # dropout gated on self.training: only the keys and values are the caller's
    assert "dropout_p" not in table["GatedAttention.forward"]["reach"]
    assert table["make_attention()"]["positional"] == ["q", "k", "v", "mask", "causal"]
    assert table["Attention.forward"]["positional"] == ["q", "k", "v", "mask", "is_causal"]
    json.dumps(table)  # JSON-able, for the cache


def test_a_package_init_lists_its_reexports():
    table = summarise((TREE / "pkg" / "__init__.py").read_text(), package_init=True)
    assert table == {"@reexports": {"attend": [1, "attn.attend"]}}


@pytest.mark.parametrize(
    "body",
    [
        "attn_mask=mask.long()",  # a dtype the summary does not describe (a float one it does)
        "attn_mask=mask * 2",
        "attn_mask=mask[0]",  # slicing, not broadcasting
        "attn_mask=other(mask)",
    ],
)
def test_an_undescribed_transformation_is_not_a_wrapper(body):
    source = (
        "import torch.nn.functional as F\n"
        f"def attend(q, k, v, mask):\n    return F.scaled_dot_product_attention(q, k, v, {body})\n"
    )
    # the mask is not described (the keys and values still are: MHA015 reads them)
    assert "attn_mask" not in summarise(source)["attend"]["reach"]


def test_splat_parameters_and_non_sdpa_calls():
    source = textwrap.dedent(
        """\
        import torch.nn.functional as F
        from torch.nn.functional import scaled_dot_product_attention as sdpa
        def a(q, k, v, *args, mask=None, **kwargs):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        def b(q, k, v, mask):
            return F.softmax(q @ k + mask, -1) @ v
        def c(q, k, v, mask):
            return sdpa(q, k, v, mask)
        def d(q, k, v, mask, **kwargs):
            return sdpa(q, k, v, attn_mask=mask, **kwargs)
        """
    )
    table = summarise(source)
    # d: SDPA given the wrapper's own **kwargs: the mask it names is read (the splat
    # cannot carry attn_mask again: Python would raise), the flags come from the caller's
    # keywords put in the splat
    assert sorted(table) == ["a", "b", "c", "d"]
    # b: no SDPA, its mask added to its scores before the softmax (fills.added_sinks)
    assert table["b"]["reach"] == {"added": {"param": "mask", "ops": [["softmax"]]}}
    assert table["d"]["reach"] == {
        "attn_mask": {"param": "mask", "ops": []},
        "dropout_p": {"param": "dropout_p", "ops": [], "fwd": True},
        "is_causal": {"param": "is_causal", "ops": [], "fwd": True},
        "key": {"param": "k", "ops": []},
        "value": {"param": "v", "ops": []},
    }
    assert (table["a"]["varargs"], table["a"]["varkw"]) == (True, True)
    assert table["a"]["kwonly"] == ["mask"]


def _package(tmp_path, **files: str) -> pathlib.Path:
    """``tmp_path/pkg`` with the given modules (``attn="..."`` is ``pkg/attn.py``)."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    for name, text in files.items():
        (pkg / f"{name}.py").write_text(text)
    return pkg


def test_arguments_a_wrapper_takes_in_its_splats_bind_to_the_named_ones(tmp_path):
    pkg = _package(
        tmp_path,
        __init__="",
        attn="import torch.nn.functional as F\n"
        "def attend(module, q, k, v, attention_mask, *args, **kwargs):\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask)\n",
    )
    (pkg / "use.py").write_text(
        "import torch.nn as nn\n"
        "from .attn import attend\n"
        "class TinyTransformer(nn.Module):\n"
        "    def forward(self, q, k, v, tokens):\n"
        "        pad = tokens == 0\n"
        "        a = attend(self, q, k, v, pad[:, None, None, :], 0.1, scaling=None)\n"
        "        return attend(self, q, k, v, ~pad[:, None, None, :], 0.1, scaling=None)\n"
    )
    path = pkg / "use.py"
    found = analyze_source(path.read_text(), str(path), select_codes(["MHA"]))
    assert _found(found) == {(6, 13, "MHA002", "pkg/attn.py:3 through attend()")}


# -- the engine ----------------------------------------------------------------------


def test_engine_reports_at_the_call_site_naming_the_wrapper():
    findings = analyze_source(MODEL.read_text(), str(MODEL), select_codes(["MHA"]))
    assert _found(findings) == MODEL_FINDINGS
    through = {f.line: f.evidence["through"] for f in findings}
    assert through[34] == {
        "function": "Attention.forward",
        "file": "pkg/attn.py",
        "line": 48,
        "params": {"attn_mask": "mask", "is_causal": "is_causal", "key": "k", "value": "v"},
    }
    assert not any(os.path.isabs(t["file"]) for t in through.values())


def test_every_import_spelling_reaches_the_wrapper():
    findings = analyze_source(BLOCK.read_text(), str(BLOCK), select_codes(["MHA"]))
    assert _found(findings) == BLOCK_FINDINGS


def test_off_means_this_file_alone():
    source = MODEL.read_text()
    assert analyze_source(source, str(MODEL), select_codes(["MHA"]), project=False) == []


def test_the_wrappers_own_file_is_clean():
    assert analyze_source(ATTN.read_text(), str(ATTN), select_codes(["MHA"])) == []


def test_a_caller_in_another_directory_sees_nothing_without_the_import(tmp_path):
    # same text, no project around it: the import resolves to no file
    copy = tmp_path / "model.py"
    copy.write_text(MODEL.read_text())
    assert analyze_source(copy.read_text(), str(copy), select_codes(["MHA"])) == []


def test_a_bad_summary_on_disk_is_recomputed(tmp_path):
    class Junk:
        def __init__(self):
            self.put_calls = 0

        def get(self, key):
            return {"attend": {"line": "ten", "reach": []}}

        def put(self, key, value):
            self.put_calls += 1

    store = Junk()
    project = Project(str(MODEL), store, "v")
    findings = analyze_source(
        MODEL.read_text(), str(MODEL), select_codes(["MHA"]), project=project
    )
    assert _found(findings) == MODEL_FINDINGS
    assert store.put_calls == 1
    assert project.deps == {str(ATTN): project.deps[str(ATTN)]}


def test_splat_call_and_unbound_method_are_not_mapped(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "attn.py").write_text(ATTN.read_text())
    (pkg / "use.py").write_text(
        textwrap.dedent(
            """\
            import torch.nn as nn
            from .attn import Attention, attend
            def f(q, k, v, tokens, args):
                pad = tokens == 0  # a MultiheadAttention key_padding_mask
                a = attend(q, k, v, *args, attn_mask=pad[:, None, None, :])
                return Attention.forward(None, q, k, v, pad[:, None, None, :], True)
            """
        )
    )
    path = pkg / "use.py"
    assert analyze_source(path.read_text(), str(path), select_codes(["MHA"])) == []


def test_annotate_leaves_plain_sdpa_reports_alone():
    class Rep:
        message = "m"
        evidence: dict = {}

    class Ev:
        through = None

    rep = Rep()
    assert annotate(rep, Ev()) is rep and rep.message == "m"


# -- a real flake8 on one file of the tree, as pre-commit runs it ---------------------



def _flake8(*args):
    status, found = flake8_run(*args)
    out = set()
    for f in found:
        place = _PLACE.search(f.msg)
        out.add((f.line, f.col, f.code, place.group(1) if place else None))
    return status, out


def _from_the_root(findings):
    """flake8 ran on a relative path: the other file is named from the current
    directory, as a path that can be clicked there (issue 28)."""
    return {(line, col, code, "fixtures/project_reach/" + place)
            for line, col, code, place in findings}


def test_flake8_on_one_file_sees_across_files():
    status, got = _flake8("fixtures/project_reach/pkg/model.py")
    assert status == 1
    assert got == _from_the_root(MODEL_FINDINGS)


def test_flake8_on_one_file_of_a_subpackage():
    status, got = _flake8("fixtures/project_reach/pkg/stack/block.py")
    assert status == 1
    assert got == _from_the_root(BLOCK_FINDINGS)


def test_flake8_option_turns_it_off():
    status, got = _flake8("--mha-no-project-wide", "fixtures/project_reach/pkg/model.py")
    assert (status, got) == (0, set())


def _plain_package(tmp_path, caller: str):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "attn.py").write_text(ATTN.read_text())
    (pkg / "util.py").write_text("def helper(x):\n    return x + 1\n")
    (pkg / "plain.py").write_text(caller)
    return pkg / "plain.py"


def test_plugin_does_no_project_work_for_a_file_that_reaches_no_sink(monkeypatch, tmp_path):
    """No attention word, and what it imports from the project reaches no sink:
    the gate drops it before any LibCST or project analysis."""
    from flake8_mha.app import pipeline
    from flake8_mha.frontends import plugin

    def boom(*args, **kwargs):
        raise AssertionError("project work for a file the gate drops")

    monkeypatch.setattr(pipeline, "make_project", boom)
    text = "from .util import helper\ndef f(q, k, v, t):\n    return helper(t == 0)\n"
    path = _plain_package(tmp_path, text)
    checker = plugin.MHAChecker(None, text.splitlines(keepends=True), str(path))
    assert list(checker.run()) == []


def test_the_gate_keeps_a_file_that_calls_a_project_wrapper(tmp_path):
    """No attention word, but it calls the project's SDPA wrapper: analysed
    (issue 26: the caller used to be dropped by the trigger-word pre-filter)."""
    from flake8_mha.frontends import plugin

    text = (
        "from .attn import attend\n"
        "def f(q, k, v, tokens, pad_id):\n"
        "    return attend(q, k, v, attn_mask=(tokens == pad_id)[:, None, None, :])\n"
    )
    path = _plain_package(tmp_path, text)
    checker = plugin.MHAChecker(None, text.splitlines(keepends=True), str(path))
    assert [(line, col, msg.split()[0]) for line, col, msg, _ in checker.run()] == [
        (3, 11, "MHA002")
    ]
    # the same through check, and off with --no-project-wide (this file alone)
    got = [(f.line, f.col, f.code) for f in engine.analyze_file(str(path))]
    assert got == [(3, 12, "MHA002")]
    assert engine.analyze_source(text, str(path), project=False) == []


# -- flake8-mha check, its cache and its option -------------------------------------

WRAPPER = textwrap.dedent(
    """\
    import torch.nn.functional as F


    def attend(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=MASK)
    """
)
CALLER = textwrap.dedent(
    """\
    import torch.nn as nn

    from .b import attend


    class TinyTransformer(nn.Module):  # a trigger word: the pre-filter keeps the file
        def forward(self, q, k, v, tokens):
            pad = tokens == 0  # True = padding
            return attend(q, k, v, pad[:, None, None, :])
    """
)


@pytest.fixture
def two_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text(CALLER)
    (pkg / "b.py").write_text(WRAPPER.replace("MASK", "mask"))
    return pkg


@pytest.fixture
def analyses(monkeypatch):
    calls = []
    real = engine.analyze_source

    def counted(text, path, *args, **kwargs):
        calls.append(path)
        return real(text, path, *args, **kwargs)

    monkeypatch.setattr(engine, "analyze_source", counted)
    return calls


def check(capsys, *args):
    status = check_main(list(args))
    return status, capsys.readouterr().out


def test_editing_the_imported_file_changes_the_cached_finding(two_files, analyses, capsys):
    a = os.path.join("pkg", "a.py")
    status, out = check(capsys, a)
    assert status == 1
    assert out.strip() == (
        f"{a}:9:16: MHA002 mask from line 8 (tokens == 0) means True = ignore; "
        "scaled_dot_product_attention treats True as attend (invert it: ~mask); "
        "the call reaches scaled_dot_product_attention at pkg/b.py:5 through attend()"
    )
    assert check(capsys, a) == (status, out) and analyses == [a]  # warm: from the cache
    # the wrapper now inverts what it is given: the caller's ignore-mask is right
    (two_files / "b.py").write_text(WRAPPER.replace("MASK", "~mask"))
    assert check(capsys, a) == (0, "")
    assert analyses == [a, a]
    # back as it was: the first entry is found again
    (two_files / "b.py").write_text(WRAPPER.replace("MASK", "mask"))
    assert check(capsys, a) == (status, out)
    assert analyses == [a, a]
    summaries = list(pathlib.Path(".flake8-mha-cache").glob("*/sum-*.json"))
    assert len(summaries) == 2  # one per content of b.py


def test_a_deleted_import_target_misses_the_cache(two_files, capsys):
    a = os.path.join("pkg", "a.py")
    assert check(capsys, a)[0] == 1
    (two_files / "b.py").unlink()
    assert check(capsys, a) == (0, "")


def test_no_project_wide_option_and_config_key(two_files, capsys):
    a = os.path.join("pkg", "a.py")
    assert check(capsys, a, "--no-project-wide") == (0, "")
    assert check(capsys, a, "--no-cache")[0] == 1
    (two_files.parent / "setup.cfg").write_text("[flake8-mha]\nno-project-wide = true\n")
    assert check(capsys, a) == (0, "")
    assert check(capsys, a, "--isolated")[0] == 1


def test_no_fix_is_offered_through_a_wrapper(two_files, capsys):
    a = os.path.join("pkg", "a.py")
    before = (two_files / "a.py").read_text()
    status, out = check(capsys, a, "--fix")
    assert (two_files / "a.py").read_text() == before
    assert "MHA002" in out


# -- mask builders in another file (return values) -----------------------------------

MASKED = TREE / "pkg" / "masked.py"
BUILDERS = TREE / "pkg" / "masks_util.py"
MASKED_FINDINGS = {
    (18, 16, "MHA003", "make_keep_mask() -> pkg/masks_util.py:17"),
    (27, 13, "MHA002", "make_pad_mask() -> pkg/masks_util.py:11"),
}
_BUILDER = re.compile(r"\((\w+\(\) -> [\w/.]+:\d+): ")


def _built(findings):
    out = set()
    for f in findings:
        m = _BUILDER.search(f.message)
        out.add((f.line, f.col, f.code, m.group(1) if m else None))
    return out


def test_builder_summary_reads_what_a_mask_builder_returns():
    from flake8_mha.analysis.program.returns import builder_summary

    source = BUILDERS.read_text()
    pad = builder_summary(source, "make_pad_mask")
    assert (pad["meaning"], pad["kind"], pad["layout"], pad["line"]) == (
        "ignore",
        "bool",
        ["N", "S"],
        11,
    )
    assert builder_summary(source, "make_keep_mask")["meaning"] == "keep"
    # returns its parameter: unknown, so no summary; a name not defined: none
    assert builder_summary(source, "passthrough") == {}
    assert builder_summary(source, "nowhere") == {}


@pytest.mark.parametrize(
    "body",
    [
        "    if lengths is None:\n        return None\n    return lengths > 0\n",  # unknown path
        "    return torch.arange(n)[None, :] < lengths[:, None] if n else lengths\n",
        "    yield torch.arange(n)[None, :] < lengths[:, None]\n",  # a generator
    ],
)
def test_a_builder_with_an_unknown_path_has_no_summary(body):
    from flake8_mha.analysis.program.returns import builder_summary

    source = "import torch\n\n\ndef build(lengths, n):\n" + body
    assert builder_summary(source, "build") == {}


@pytest.mark.parametrize(
    "before, after, known",
    [
        ("", "", True),
        ("@functools.lru_cache()\n", "", True),
        ("@register\n", "", False),  # a decorator may change the result
        ("", "build = torch.compile(build)\n", False),  # rebound after the def
        ("", "if FAST:\n    from .fast import build\n", False),
    ],
)
def test_a_builder_is_the_function_the_name_holds(before, after, known):
    from flake8_mha.analysis.program.returns import builder_summary

    source = (
        "import torch\n\n\n" + before + "def build(n):\n"
        "    return torch.ones(n, n, dtype=torch.bool).triu(1)\n" + after
    )
    got = builder_summary(source, "build")
    assert (got.get("meaning"), got.get("causal")) == (("ignore", True) if known else (None, None))


def test_engine_reads_the_mask_a_builder_in_another_file_returns():
    findings = analyze_source(MASKED.read_text(), str(MASKED), select_codes(["MHA"]))
    assert _built(findings) == MASKED_FINDINGS
    assert not any(os.path.isabs(f.message.split("-> ")[1].split(":")[0]) for f in findings)
    alone = analyze_source(MASKED.read_text(), str(MASKED), select_codes(["MHA"]), project=False)
    assert alone == []
    assert analyze_source(BUILDERS.read_text(), str(BUILDERS), select_codes(["MHA"])) == []


def test_flake8_on_one_file_reads_mask_builders_across_files():
    status, got = _flake8("fixtures/project_reach/pkg/masked.py")
    assert status == 1
    assert {g[:3] for g in got} == {m[:3] for m in MASKED_FINDINGS}
    status, got = _flake8("--mha-no-project-wide", "fixtures/project_reach/pkg/masked.py")
    assert (status, got) == (0, set())


BUILDER = textwrap.dedent(
    """\
    import torch


    def pad_mask(lengths, n):
        return torch.arange(n)[None, :] OP lengths[:, None]
    """
)
USER = textwrap.dedent(
    """\
    import torch.nn as nn

    from .b import pad_mask


    class Enc(nn.Module):
        def forward(self, x, lengths):
            return self.mha(x, x, x, key_padding_mask=pad_mask(lengths, 4), need_weights=False)
    """
)


def test_editing_the_builders_file_changes_the_cached_finding(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    mha = "class Enc(nn.Module):\n    mha = nn.MultiheadAttention(8, 2, batch_first=True)"
    (pkg / "a.py").write_text(USER.replace("class Enc(nn.Module):", mha))
    (pkg / "b.py").write_text(BUILDER.replace("OP", "<"))  # True = keep: wrong there
    a = os.path.join("pkg", "a.py")
    status, out = check(capsys, a)
    assert status == 1 and out.count("\n") == 1 and ":9:16: MHA003 mask from line 9" in out
    assert "(pad_mask() -> pkg/b.py:5: torch.arange(n)[None, :] < lengths[:, None])" in out
    assert check(capsys, a) == (status, out)  # warm
    (pkg / "b.py").write_text(BUILDER.replace("OP", ">="))  # True = padding: right
    assert check(capsys, a) == (0, "")


def test_focus_keeps_only_the_imports_that_lead_to_a_wrapper(tmp_path):
    """A project import keeps the code that uses it (the focused parse) only when
    a call through it reaches a wrapper: inside torch's own tree, ``import torch``
    alone kept every function of ``common_methods_invocations.py`` (880 MB)."""
    import ast

    pkg = _package(
        tmp_path,
        __init__="from .attn import attend\n",
        attn="import torch.nn.functional as F\n\n\n"
        "def attend(q, k, v, mask=None):\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)\n",
        util="def scale(x):\n    return x * 2\n",
    )
    model = pkg / "model.py"
    source = textwrap.dedent("""\
        import pkg
        import pkg.util as U
        from . import util
        from .attn import attend
        from .util import scale as s


        def a(x):
            return U.scale(util.scale(s(x)))


        def b(q, k, v, m):
            return attend(q, k, v, m)


        def c(q, k, v, m):
            return pkg.attn.attend(q, k, v, m) + pkg.attend(q, k, v, m)
    """)
    model.write_text(source)
    assert sorted(Project(str(model)).imported_names(ast.parse(source))) == ["attend", "pkg"]
