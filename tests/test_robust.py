"""Issue 7: bad input never crashes the engine, the CLI or flake8, and each
failure says clearly what went wrong."""
from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import sys
import textwrap
import time

import libcst as cst
import pytest

from flake8_mha.app.config import Options
from flake8_mha.lint.engine import SourceSyntaxError, analyze_file, analyze_source
from flake8_mha.app.pipeline import discover, lint_paths


def check_paths(paths):
    """What the lint pipeline reports for ``paths``: the findings, and a file
    it could not check as ``("E999" or "ERROR", line, message)``."""
    run = lint_paths(Options(paths=list(paths)))
    return [i.finding for i in run.items], [(p.code or "ERROR", p.line, p.message)
                                            for p in run.problems]

# one MHA006 at 5:11 (SDPA given attn_mask together with is_causal=True)
GOOD = textwrap.dedent("""\
    import torch.nn.functional as F


    def attend(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=True)
""")
GOOD_AT = [(5, 12, "MHA006")]


def spots(findings):
    return [(f.line, f.col, f.code) for f in findings]


def run(*argv, cwd=None, timeout=300):
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout)


def test_reference_file_has_its_finding():
    assert spots(analyze_source(GOOD)) == GOOD_AT


# --- text that is not plain LF UTF-8 ----------------------------------------------------------

def test_syntax_error_is_raised_with_its_position(tmp_path):
    bad = GOOD + "def broken(:\n"
    with pytest.raises(SourceSyntaxError) as err:
        analyze_source(bad)
    assert err.value.line == 6 and "SyntaxError" in str(err.value)
    path = tmp_path / "bad.py"
    path.write_text(bad)
    found, (problem,) = check_paths([str(path)])
    assert found == [] and problem[:2] == ("E999", 6)
    assert "SyntaxError" in problem[2]


def test_undecodable_bytes_are_one_mha000(tmp_path):
    path = tmp_path / "latin.py"
    path.write_bytes(GOOD.encode() + b"s = '\xe9\xff'\n")  # not UTF-8, no cookie
    (found,) = analyze_file(str(path))
    assert found.code == "MHA000" and "cannot decode the file" in found.message


def test_latin1_cookie_is_honoured(tmp_path):
    path = tmp_path / "cookie.py"
    text = "# -*- coding: latin-1 -*-\n" + "s = 'caf\xe9'\n" + GOOD
    path.write_bytes(text.encode("latin-1"))
    assert spots(analyze_file(str(path))) == [(line + 2, col, code) for line, col, code in GOOD_AT]


def test_utf8_bom_is_dropped(tmp_path):
    path = tmp_path / "bom.py"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD.encode())
    assert spots(analyze_file(str(path))) == GOOD_AT


def test_crlf_and_form_feeds_keep_positions(tmp_path):
    text = GOOD.replace("\n\n\ndef", "\n\x0c\n\x0c\n\x0cdef").replace("\n", "\r\n")
    assert spots(analyze_source(text)) == GOOD_AT
    path = tmp_path / "crlf.py"
    path.write_bytes(text.encode())
    assert spots(analyze_file(str(path))) == GOOD_AT


def test_lone_carriage_returns():
    assert spots(analyze_source(GOOD.replace("\n", "\r"))) == GOOD_AT


def test_tabs_for_indentation():
    # columns count characters, as flake8's do: the tab is one
    assert spots(analyze_source(GOOD.replace("    return", "\treturn"))) == [(5, 9, "MHA006")]


def test_empty_and_comment_only_files(tmp_path):
    assert analyze_source("") == []
    assert analyze_source("", use_prefilter=False) == []
    assert analyze_source("# nn.MultiheadAttention, someday\n") == []
    path = tmp_path / "empty.py"
    path.write_bytes(b"")
    assert analyze_file(str(path)) == []


def test_null_byte_is_a_clear_mha000_or_syntax_error():
    try:
        found = analyze_source(GOOD + "x = 1\x00\n")
    except SourceSyntaxError as err:
        assert "null" in str(err).lower() or "syntax" in str(err).lower()
    else:
        assert [f.code for f in found] == ["MHA000"]


def test_fifty_thousand_lines():
    body = "".join(f"x{i} = {i} + 1\n" for i in range(50_000))
    text = body + GOOD
    t = time.perf_counter()
    found = analyze_source(text)
    elapsed = time.perf_counter() - t
    assert spots(found) == [(line + 50_000, col, code) for line, col, code in GOOD_AT]
    assert elapsed < 60, f"{elapsed:.1f} s for 50,000 lines"


# --- nesting: every case in a subprocess, so that a crash fails the test instead of pytest ----

_DEEP = textwrap.dedent("""\
    import sys
    from flake8_mha.lint.engine import SourceSyntaxError, analyze_source
    expr = sys.argv[1]
    src = ("import torch.nn.functional as F\\n"
           "def f(q, k, v, a):\\n"
           "    b = " + expr + "\\n"
           "    return F.scaled_dot_product_attention(q, k, v, attn_mask=a, is_causal=True)\\n")
    try:
        print([(f.line, f.code, f.message) for f in analyze_source(src)])
    except SourceSyntaxError as err:
        print("E999", err)
""")


@pytest.mark.parametrize("expr, expect", [
    (" and ".join(["q"] * 10_000), "MHA006"),  # flat in Python's ast, 10,000 deep in LibCST
    (" + ".join(["q"] * 1_500), "MHA006"),  # deeper than the default recursion limit
    ("q" + ".t" * 1_500, "MHA006"),
    ("lambda: " * 1_500 + "1", "MHA006"),
    (" + ".join(["q"] * 20_000), "nesting too deep to analyze"),  # Python's parser gives up
    ("(" * 500 + "1" + ")" * 500, "E999 SyntaxError: too many nested parentheses"),
    ("[" * 3_000 + "]" * 3_000, "E999 SyntaxError: too many nested parentheses"),
])
def test_deep_nesting_never_crashes(expr, expect):
    res = run("-c", _DEEP, expr)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    assert expect in res.stdout, res.stdout[-500:]
    if expect.startswith("MHA"):
        assert "MHA000" not in res.stdout


@pytest.mark.parametrize("elifs, expect", [
    (900, "MHA001 "),  # deeper than the default recursion limit: analyzed
    (3_000, "MHA001 "),  # deeper than Python's own parser goes: analyzed all the same
])
def test_deep_else_if_chain_in_a_subprocess(elifs, expect):
    src = "import torch\nif a:\n    pass\n" + "elif a:\n    pass\n" * elifs
    src += "attn = torch.nn.MultiheadAttention(8, 2)\n"
    code = ("import sys; from flake8_mha.lint.engine import analyze_source;"
            "print([f.code + ' ' + f.message for f in analyze_source(sys.stdin.read())])")
    res = subprocess.run([sys.executable, "-c", code], input=src, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert expect in res.stdout and res.stdout.count("MHA") == 1, res.stdout[:300]


# --- newer syntax ----------------------------------------------------------------------------

PY312 = textwrap.dedent("""\
    import torch.nn.functional as F
    type Mask = object


    def attend[T](q: T, k: T, v: T, mask):
        label = f"{"nested" + 'quotes'}"
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=True)
""")


def test_python_312_syntax_when_libcst_parses_it():
    try:
        cst.parse_module(PY312)
    except cst.ParserSyntaxError as err:
        pytest.skip(f"this LibCST ({cst.__name__}) cannot parse 3.12 syntax: {err}")
    assert spots(analyze_source(PY312)) == [(7, 12, "MHA006")]


# --- paths that are not regular readable files ------------------------------------------------

def test_a_directory_named_like_a_file_is_walked(tmp_path):
    d = tmp_path / "pkg.py"
    d.mkdir()
    (d / "inner.py").write_text(GOOD)
    assert spots(check_paths([str(d)])[0]) == GOOD_AT
    with pytest.raises(OSError):
        analyze_file(str(d))


def test_missing_path_is_an_mha000(tmp_path):
    found, (problem,) = check_paths([str(tmp_path / "nope.py")])
    assert found == [] and problem[0] == "ERROR" and "cannot read the file" in problem[2]


def test_symlink_loop_is_an_mha000_and_the_walk_goes_on(tmp_path):
    (tmp_path / "a.py").symlink_to(tmp_path / "b.py")
    (tmp_path / "b.py").symlink_to(tmp_path / "a.py")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "up").symlink_to(tmp_path, target_is_directory=True)  # a directory loop
    (tmp_path / "good.py").write_text(GOOD)
    found, problems = check_paths([str(tmp_path)])
    assert [f.code for f in found] == ["MHA006"]
    assert len(problems) == 2
    for code, _, message in problems:
        assert code == "ERROR"
        assert "cannot read the file" in message and "symbolic links" in message


def _socket_file(path: pathlib.Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    return sock


def test_unreadable_file_even_for_root(tmp_path, capsys):
    # a UNIX socket cannot be opened as a file, by root either: named, it is
    # refused; found in a folder, it is skipped with a notice (issue 29, D2)
    sock = _socket_file(tmp_path / "sock.py")
    try:
        (tmp_path / "good.py").write_text(GOOD)
        run = lint_paths(Options(paths=[str(tmp_path)]))
        assert [i.code for i in run.items] == ["MHA006"] and run.problems == []
        assert capsys.readouterr().err == f"{tmp_path / 'sock.py'}: skipped: not a regular file\n"
        run = lint_paths(Options(paths=[str(tmp_path / "sock.py")]))
        (bad,) = run.problems
        assert bad.path.endswith("sock.py") and bad.message == "not a regular file"
    finally:
        sock.close()


def test_permission_denied(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("running as root, who may read a mode-000 file (the socket test covers it)")
    path = tmp_path / "secret.py"
    path.write_text(GOOD)
    path.chmod(0)
    found, (problem,) = check_paths([str(path)])
    assert found == [] and "Permission denied" in problem[2]


def test_walk_skips_nothing_it_should_not(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.txt").write_text("x = 1\n")
    assert [pathlib.Path(p).name for p in discover([str(tmp_path)])] == ["a.py"]


# --- the command line and flake8, as a user runs them -----------------------------------------

CLI = [sys.executable, "-m", "flake8_mha.frontends.cli"]


@pytest.mark.parametrize("argv, needle", [
    (["check"], "required"),
    (["check", "--no-such-option", "x.py"], "unrecognized arguments"),
    (["check", "/definitely/missing.py"], "no such file or directory"),
])
def test_cli_usage_errors_are_one_line_exit_2(argv, needle):
    res = subprocess.run(CLI + argv, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    assert "Traceback" not in res.stderr + res.stdout
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], res.stderr


def test_cli_unknown_command_exits_2_without_traceback():
    res = subprocess.run(CLI + ["no-such-command"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    assert "Traceback" not in res.stderr + res.stdout
    assert "unknown command" in res.stderr.splitlines()[0]


def _broken_tree(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a_good.py").write_text(GOOD)
    (root / "b_syntax.py").write_text("import torch  # nn.Transformer\ndef broken(:\n")
    (root / "c_latin1.py").write_bytes(b"import torch  # nn.Transformer\ns = '\xe9'\n")
    # Python parses it, LibCST's parser refuses it: the one file flake8-mha cannot analyze
    # (its code names attention: words only in comments would send it to the gate)
    strings = " ".join(["'a'"] * 10_000)
    (root / "d_libcst.py").write_text(f"from torch.nn import Transformer\nx = {strings}\n")
    (root / "e_good.py").write_text(GOOD)
    return root


def test_cli_goes_on_past_broken_files(tmp_path):
    root = _broken_tree(tmp_path)
    res = subprocess.run(CLI + ["check", str(root)], capture_output=True, text=True, timeout=300)
    assert "Traceback" not in res.stderr + res.stdout
    assert res.returncode in (1, 2)
    out = res.stdout + res.stderr
    assert "a_good.py:5:12: MHA006" in out and "e_good.py:5:12: MHA006" in out
    assert "b_syntax.py" in out and "d_libcst.py" in out


def test_flake8_goes_on_past_broken_files(tmp_path):
    root = _broken_tree(tmp_path)
    res = subprocess.run([sys.executable, "-m", "flake8", "--select=E9,MHA", str(root)],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert "Traceback" not in res.stderr + res.stdout, res.stderr[-2000:]
    lines = res.stdout.splitlines()
    assert any("a_good.py:5:12: MHA006" in line for line in lines), res.stdout
    assert any("e_good.py:5:12: MHA006" in line for line in lines), res.stdout
    assert any("b_syntax.py" in line and "E999" in line for line in lines), res.stdout
    assert any("d_libcst.py:1:1: MHA000" in line and "LibCST cannot parse" in line
               for line in lines), \
        res.stdout
