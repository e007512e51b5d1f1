"""``flake8-mha check`` as a user runs it: a subprocess, exact output, exit status."""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
FIXTURES = ROOT / "fixtures"

MSG_001 = ("MultiheadAttention built without batch_first: (N, L, E) input silently mixes "
           "samples across the batch")
MSG_102 = ("attention weights computed and thrown away: pass need_weights=False, or "
           "nn.MultiheadAttention takes the slow path (up to about 2x off the fastpath) to build them")
MSG_006 = ("scaled_dot_product_attention given attn_mask together with is_causal: it raises "
           "with dropout and silently applies both masks otherwise")
MSG_007 = ("scaled_dot_product_attention dropout_p is not gated on self.training: dropout "
           "stays on after model.eval() and inference is random")
OUTSIDE = "; Block is never built in the project: its callers are outside it"
BAD_LINES = [
    f"bad_model.py:10:21: MHA001 {MSG_001}",
    f"bad_model.py:14:18: MHA102 {MSG_102}",
    f"bad_model.py:17:13: MHA006 {MSG_006}",
    # Block's p reaches dropout_p; nothing in this one-file project builds Block
    f"bad_model.py:18:13: MHA007 {MSG_007}{OUTSIDE}",
]


def run(*args: str, cwd=None, check_no_traceback: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "flake8_mha.frontends.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    if check_no_traceback:
        assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def flake8(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flake8", "--isolated", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def work(tmp_path):
    shutil.copy(DATA / "bad_model.py", tmp_path / "bad_model.py")
    shutil.copy(DATA / "good_model.py", tmp_path / "good_model.py")
    return tmp_path


def write(path: pathlib.Path, text: str) -> pathlib.Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


BAD_SNIPPET = "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8)\n"


# -- basics ----------------------------------------------------------------------

def test_reports_findings_and_exits_1(work):
    proc = run("check", "bad_model.py", cwd=work)
    assert proc.stdout.splitlines() == BAD_LINES
    assert proc.stderr == ""
    assert proc.returncode == 1


def test_clean_file_exits_0_silently(work):
    proc = run("check", "good_model.py", cwd=work)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_console_script_is_installed(work):
    exe = shutil.which("flake8-mha")
    if exe is None:
        pytest.skip("the flake8-mha console script is not on PATH (package not pip-installed)")
    proc = subprocess.run([exe, "check", "bad_model.py"], cwd=work, capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stdout.splitlines() == BAD_LINES


def test_python_dash_m_runs_the_command(work):
    # ``python -m flake8_mha check`` is the command, for scripts not on PATH
    proc = subprocess.run([sys.executable, "-m", "flake8_mha", "check", "bad_model.py"],
                          cwd=work, capture_output=True, text=True, timeout=300)
    assert (proc.returncode, proc.stdout.splitlines(), proc.stderr) == (1, BAD_LINES, "")


def test_same_findings_as_flake8_on_the_fixtures(tmp_path):
    shutil.copytree(FIXTURES, tmp_path / "fixtures")
    ours = run("check", "--isolated", "--select", "MHA", "fixtures", cwd=tmp_path)
    theirs = flake8("--select", "MHA", "fixtures", cwd=tmp_path)
    assert theirs.returncode == 1, theirs.stderr
    assert ours.returncode == 1
    assert sorted(ours.stdout.splitlines()) == sorted(theirs.stdout.splitlines())
    assert len(ours.stdout.splitlines()) > 20


@pytest.mark.parametrize("options", [
    [],
    ["--select", "MHA"],
    ["--select", "MHA0", "--ignore", "MHA001"],
    ["--select", "MHA001", "--ignore", "MHA0"],
    ["--ignore", "MHA102"],
    ["--extend-ignore", "MHA102"],
    ["--extend-select", "MHA9"],
    ["--enable-extensions", "MHA9"],
    ["--select", "MHA1,MHA90"],
])
def test_select_and_ignore_decide_as_flake8_does(tmp_path, options):
    shutil.copytree(FIXTURES, tmp_path / "fixtures")
    ours = run("check", "--isolated", *options, "fixtures", cwd=tmp_path)
    theirs = flake8(*options, "fixtures", cwd=tmp_path)
    mine = sorted(ours.stdout.splitlines())
    flake8_mha_only = sorted(line for line in theirs.stdout.splitlines() if ": MHA" in line)
    assert mine == flake8_mha_only
    assert ours.returncode == (1 if mine else 0)


# -- noqa -------------------------------------------------------------------------

NOQA_CASES = '''\
import torch.nn as nn
a1 = nn.MultiheadAttention(64, 8)
a2 = nn.MultiheadAttention(64, 8)  # noqa
a3 = nn.MultiheadAttention(64, 8)  # NOQA
a4 = nn.MultiheadAttention(64, 8)  # noqa:MHA001
a5 = nn.MultiheadAttention(64, 8)  # noqa: MHA001,E501
a6 = nn.MultiheadAttention(64, 8)  # noqa:E501,MHA001
a7 = nn.MultiheadAttention(64, 8)  # noqa: E501 MHA001
a8 = nn.MultiheadAttention(64, 8)  # noqa: MHA0
a9 = nn.MultiheadAttention(64, 8)  # noqa: MHA
b1 = nn.MultiheadAttention(64, 8)  # noqa: E501
b2 = nn.MultiheadAttention(64, 8)  # noqa: mha001
b3 = nn.MultiheadAttention(64, 8)  # noqa: see the issue tracker
b4 = nn.MultiheadAttention(64, 8)  #noqa
b5 = nn.MultiheadAttention(64, 8)  # noqa : MHA001
b6 = nn.MultiheadAttention(64, 8)  # noqa:MHA002
b7 = nn.MultiheadAttention(64, 8)  # type: ignore # noqa: MHA001
c1 = nn.MultiheadAttention(64, \\
                           8)  # noqa: MHA001
c2 = nn.MultiheadAttention(
    64, 8)  # noqa: MHA001
c3 = nn.MultiheadAttention(64, 3)  # noqa: MHA001
'''


def test_noqa_is_honoured_exactly_as_flake8_honours_it(tmp_path):
    write(tmp_path / "noqa_cases.py", NOQA_CASES)
    ours = run("check", "--isolated", "noqa_cases.py", cwd=tmp_path)
    theirs = flake8("--select", "MHA", "noqa_cases.py", cwd=tmp_path)
    assert ours.stdout == theirs.stdout
    reported = [line.split(":")[1] for line in ours.stdout.splitlines()]
    # spelled out: a bare, case-insensitive noqa, or a list naming the code or a
    # prefix of it, silences; an unrelated code, a lowercase code, "#noqa"
    # without the space do not; text that is not a code list ("see the issue
    # tracker", " : MHA001") makes a bare noqa; a backslash continuation joins
    # lines, brackets do not; other codes on a line stay reported
    assert reported == ["2", "11", "12", "14", "16", "20", "22", "22"]


def test_file_level_noqa_skips_the_file(tmp_path):
    write(tmp_path / "skipped.py", "# flake8: noqa\n" + BAD_SNIPPET)
    proc = run("check", "skipped.py", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, "")


def test_disable_noqa_reports_silenced_lines(tmp_path):
    write(tmp_path / "m.py", "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8)  # noqa\n")
    assert run("check", "m.py", cwd=tmp_path).returncode == 0
    proc = run("check", "--disable-noqa", "m.py", cwd=tmp_path)
    assert proc.stdout.splitlines() == [f"m.py:2:8: MHA001 {MSG_001}"]


# -- files and directories ------------------------------------------------------------

def test_directories_are_walked_with_default_and_extra_excludes(tmp_path):
    proj = tmp_path / "proj"
    for rel in ("pkg/model.py", "pkg/sub/deep.py", "pkg/skip_me.py", "pkg/stub.pyi",
                ".git/hooks/x.py", ".venv/lib/site.py", "venv/y.py", "build/lib/z.py",
                "dist/w.py", "pkg.egg-info/e.py", "myenv/lib/v.py", ".tox/py/t.py",
                "node_modules/n.py", "pkg/__pycache__/c.py"):
        write(proj / rel, BAD_SNIPPET)
    (proj / "myenv" / "pyvenv.cfg").write_text("home = /usr/bin\n")  # a virtualenv by any name
    write(proj / "pkg" / "notes.txt", BAD_SNIPPET)
    proc = run("check", "--isolated", "--extend-exclude", "skip_*", "proj", cwd=tmp_path)
    assert proc.stdout.splitlines() == [
        f"proj/pkg/model.py:2:8: MHA001 {MSG_001}",
        f"proj/pkg/stub.pyi:2:8: MHA001 {MSG_001}",
        f"proj/pkg/sub/deep.py:2:8: MHA001 {MSG_001}",
    ]
    assert proc.returncode == 1


def test_exclude_pattern_with_a_slash_is_a_path(tmp_path):
    for rel in ("src/a/m.py", "src/b/m.py"):
        write(tmp_path / rel, BAD_SNIPPET)
    proc = run("check", "--isolated", "--exclude", "src/a", "src", cwd=tmp_path)
    assert proc.stdout.splitlines() == [f"src/b/m.py:2:8: MHA001 {MSG_001}"]


def test_named_files_are_checked_whatever_their_suffix_unless_excluded(tmp_path):
    write(tmp_path / "script", BAD_SNIPPET)
    write(tmp_path / "old.py", BAD_SNIPPET)
    proc = run("check", "--isolated", "--exclude", "old.py", "script", "old.py", cwd=tmp_path)
    assert proc.stdout.splitlines() == [f"script:2:8: MHA001 {MSG_001}"]


def test_parallel_jobs_give_the_same_output_in_the_same_order(tmp_path):
    shutil.copytree(FIXTURES, tmp_path / "fixtures")
    shutil.copy(DATA / "bad_model.py", tmp_path / "fixtures" / "bad_model.py")
    serial = run("check", "--isolated", "--select", "MHA", "fixtures", cwd=tmp_path)
    for jobs in ("2", "3", "auto"):
        parallel = run("check", "--isolated", "--select", "MHA", "-j", jobs, "fixtures",
                       cwd=tmp_path)
        assert (parallel.returncode, parallel.stdout) == (serial.returncode, serial.stdout)

    def key(line):
        path, row, col = line.split(":")[:3]
        return path, int(row), int(col), line.split()[1]

    assert serial.stdout.splitlines() == sorted(serial.stdout.splitlines(), key=key)


# -- errors and usage ---------------------------------------------------------------

def test_syntax_error_is_one_line_on_stderr_and_exit_2_after_the_run(tmp_path):
    write(tmp_path / "a_broken.py", "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8\n")
    write(tmp_path / "b_bad.py", BAD_SNIPPET)
    proc = run("check", "--isolated", ".", cwd=tmp_path)
    assert proc.stderr.splitlines() == [
        "a_broken.py:2:30: E999 SyntaxError: '(' was never closed"]
    assert proc.stdout.splitlines() == [f"b_bad.py:2:8: MHA001 {MSG_001}"]
    assert proc.returncode == 2


def test_unreadable_and_undecodable_files(tmp_path):
    os.symlink(tmp_path / "gone.py", tmp_path / "dangling.py")
    (tmp_path / "latin.py").write_bytes(b"# -*- coding: no-such-codec -*-\nMultiheadAttention\n")
    proc = run("check", "--isolated", ".", cwd=tmp_path)
    assert proc.stderr.splitlines() == [
        "dangling.py: error: cannot read the file: No such file or directory",
        "latin.py: error: cannot decode the file: unknown encoding: no-such-codec",
    ]
    assert (proc.stdout, proc.returncode) == ("", 2)


@pytest.mark.parametrize("args, message", [
    (["check"], "flake8-mha check: error: the following arguments are required: PATH"),
    (["check", "nope.py"], "flake8-mha check: error: no such file or directory: nope.py"),
    (["check", "--bogus", "good_model.py"],
     "flake8-mha check: error: unrecognized arguments: --bogus"),
    (["check", "--format", "xml", "good_model.py"],
     "flake8-mha check: error: unknown format 'xml' (choose from text, json, sarif, github)"),
    (["check", "-j", "0", "good_model.py"],
     "flake8-mha check: error: --jobs must be a positive integer or 'auto', not '0'"),
    (["check", "--select", "MHA-1", "good_model.py"],
     "flake8-mha check: error: --select: 'MHA-1' is not a code prefix such as MHA, MHA0 or MHA001"),
    (["check", "--fix", "--diff", "good_model.py"],
     "flake8-mha check: error: argument --diff: not allowed with argument --fix"),
    (["frobnicate"], None),
])
def test_usage_errors_are_one_line_and_exit_2(work, args, message):
    proc = run(*args, cwd=work)
    assert proc.returncode == 2
    if message is None:
        assert proc.stderr.startswith("flake8-mha: unknown command 'frobnicate'")
    else:
        assert proc.stderr.splitlines() == [message]
    assert proc.stdout == ""


# -- configuration ---------------------------------------------------------------------

def test_pyproject_configuration_and_the_command_line_wins(tmp_path):
    write(tmp_path / "pyproject.toml", """
        [project]
        name = "demo"

        [tool.flake8-mha]
        select = ["MHA"]
        extend-ignore = ["MHA102"]
        exclude = ["legacy"]
        """)
    shutil.copy(DATA / "bad_model.py", tmp_path / "bad_model.py")
    write(tmp_path / "legacy" / "old.py", BAD_SNIPPET)
    write(tmp_path / "sub" / "opt.py", "import torch.nn as nn\n"
          "attn = nn.MultiheadAttention(64, 8, batch_first=False)\n")
    proc = run("check", ".", cwd=tmp_path)
    assert [line.split(": ")[1].split()[0] for line in proc.stdout.splitlines()] == [
        "MHA001", "MHA006", "MHA007", "MHA902"]
    # from a subdirectory the same file is found upwards
    proc = run("check", "opt.py", cwd=tmp_path / "sub")
    assert proc.stdout.splitlines()[0].startswith("opt.py:2:8: MHA902 ")
    # the command line replaces a configured key
    proc = run("check", "--select", "MHA1", ".", cwd=tmp_path)
    assert proc.stdout == "" and proc.returncode == 0
    proc = run("check", "--isolated", "bad_model.py", cwd=tmp_path)
    assert proc.stdout.splitlines() == [line for line in BAD_LINES]


def test_setup_cfg_configuration(tmp_path):
    write(tmp_path / "setup.cfg", """
        [metadata]
        name = demo

        [flake8-mha]
        ignore = MHA001,
                 MHA006
        format = github
        """)
    shutil.copy(DATA / "bad_model.py", tmp_path / "bad_model.py")
    proc = run("check", "bad_model.py", cwd=tmp_path)
    assert proc.stdout.splitlines() == [
        f"::warning file=bad_model.py,line=14,col=18,title=MHA102::{MSG_102}",
        f"::error file=bad_model.py,line=18,col=13,title=MHA007::{MSG_007}{OUTSIDE}",
    ]


def test_bad_configuration_is_a_usage_error(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.flake8-mha]\nselekt = ['MHA']\n")
    write(tmp_path / "m.py", BAD_SNIPPET)
    proc = run("check", "m.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1
    assert "unknown option 'selekt'" in proc.stderr
    write(tmp_path / "pyproject.toml", "[tool.flake8-mha\n")
    proc = run("check", "m.py", cwd=tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert "invalid TOML" in proc.stderr


# -- statistics and output file -----------------------------------------------------------

def test_statistics_follow_the_findings(work):
    proc = run("check", "--statistics", "bad_model.py", cwd=work)
    assert proc.stdout.splitlines() == BAD_LINES + [
        f"1     MHA001 {MSG_001}",
        f"1     MHA006 {MSG_006}",
        f"1     MHA007 {MSG_007}{OUTSIDE}",
        f"1     MHA102 {MSG_102}",
    ]


def test_output_file_takes_the_report(work):
    (work / "out").mkdir()  # a missing folder is a usage error (tests/test_doors_cli.py)
    proc = run("check", "--output-file", "out/report.txt", "bad_model.py", cwd=work)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert (work / "out" / "report.txt").read_text().splitlines() == BAD_LINES


# -- explain ---------------------------------------------------------------------------------

def _codes():
    """Every code the project can emit: the static rules and the runtime-only codes."""
    from flake8_mha.rules.base import REGISTRY, all_rules
    from flake8_mha.rules.runtime import RUNTIME

    all_rules()
    return sorted({*REGISTRY, *RUNTIME})


@pytest.mark.parametrize("code", _codes())
def test_explain_prints_the_docs_page(code):
    # the page docs/rules/CODE.md is generated from the same text
    # (flake8_mha.app.docs; test_rules.py checks the files are up to date)
    from flake8_mha.app.docs import pages

    proc = run("explain", code.lower())
    assert proc.returncode == 0
    assert proc.stdout.startswith(f"# {code}: ")
    assert proc.stdout == pages()[code]


def test_explain_mha002():
    if "MHA002" not in _codes():
        pytest.skip("MHA002 (rules/masks.py) is not in this tree yet")
    proc = run("explain", "MHA002")
    assert proc.returncode == 0
    assert proc.stdout.startswith("# MHA002: ignore-mask-to-sdpa")


def test_every_code_the_sanitizer_emits_has_a_page_and_explain():
    import re

    sanitizer = (ROOT / "flake8_mha" / "sanitizer.py").read_text(encoding="utf-8")
    emitted = set(re.findall(r'_emit\(\s*"(MHA\d{3})"', sanitizer))
    assert "MHA011" in emitted
    for code in sorted(emitted):
        assert (ROOT / "docs" / "rules" / f"{code}.md").exists(), code
        assert code in _codes(), code
    proc = run("explain", "MHA011")
    assert proc.returncode == 0
    assert proc.stdout.startswith("# MHA011: fully-masked-rows\n")
    assert "runtime only: reported by the sanitizer" in proc.stdout


def test_runtime_only_codes_are_no_static_codes(tmp_path):
    from flake8_mha.lint.engine import select_codes
    from flake8_mha.lint.selection import all_codes
    from flake8_mha.frontends.plugin import OFF_BY_DEFAULT

    assert "MHA011" not in all_codes() and "MHA011" not in select_codes(["MHA"])
    assert "MHA011" not in OFF_BY_DEFAULT
    (tmp_path / "m.py").write_text("import torch.nn as nn\n\nnn.MultiheadAttention(64, 8)\n")
    proc = run("check", "--select", "MHA", "--format", "sarif", "m.py", cwd=tmp_path)
    import json

    rules = [r["id"] for r in json.loads(proc.stdout)["runs"][0]["tool"]["driver"]["rules"]]
    assert "MHA011" not in rules and "MHA001" in rules


def test_explain_unknown_code_lists_the_known_ones():
    proc = run("explain", "MHA999")
    assert proc.returncode == 2 and proc.stdout == ""
    known = ", ".join(_codes())
    assert proc.stderr.splitlines() == [
        f"flake8-mha explain: unknown code 'MHA999' (known: {known})"]
