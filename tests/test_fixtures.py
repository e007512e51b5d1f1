"""Every fixture's inline expectations hold, through the engine and through
a real flake8 process, with and without the text pre-filter."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from fixture_expect import FIXTURES, ROOT, expected, fixture_files, selected
from flake8_mha.lint.engine import analyze_source, select_codes

FILES = fixture_files()
IDS = [p.name for p in FILES]


def _codes(path):
    sel = selected(path)
    return select_codes(sel) if sel else select_codes()


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_engine_matches_inline_expectations(path):
    findings = analyze_source(path.read_text(encoding="utf-8"), str(path), _codes(path))
    got = {(f.line, f.col, f.code) for f in findings}
    assert got == expected(path)


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_prefilter_drops_no_finding(path):
    source = path.read_text(encoding="utf-8")
    every = select_codes(["MHA"])
    with_filter = analyze_source(source, str(path), every, use_prefilter=True)
    without = analyze_source(source, str(path), every, use_prefilter=False)
    assert with_filter == without


def test_every_rule_code_has_a_bad_fixture():
    from flake8_mha.rules.base import all_rules

    covered = {code for p in FILES for (_, _, code) in expected(p)}
    static = {r.CODE for r in all_rules() if r.CODE != "MHA000"}
    assert static <= covered, f"codes without a fixture finding: {sorted(static - covered)}"


_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>MHA\d{3}) ")


def _flake8(*args):
    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", *args],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stderr
    out = set()
    for line in proc.stdout.splitlines():
        m = _LINE.match(line)
        if m is None:
            assert re.match(r"^.+?:\d+:\d+: [A-Z]+\d+ ", line), f"not a flake8 line: {line!r}"
            continue  # another plugin's code (pycodestyle, pyflakes)
        out.add((os.path.normpath(m["path"]), int(m["line"]), int(m["col"]), m["code"]))
    return out


def _expected_all(include_opt_in: bool):
    out = set()
    for p in FILES:
        sel = selected(p) or []
        if sel and not include_opt_in:
            opt = set(sel)
        else:
            opt = set()
        rel = os.path.normpath(str(p.relative_to(ROOT)))
        for line, col, code in expected(p):
            if code.startswith("MHA9") and not include_opt_in:
                continue
            if code in opt:
                continue
            out.add((rel, line, col, code))
    return out


def test_real_flake8_default_run_matches_fixtures():
    """Plain ``flake8``: the plugin is on by default, MHA9xx off by default."""
    got = _flake8("fixtures")
    assert got == _expected_all(include_opt_in=False)


def test_real_flake8_select_mha_matches_fixtures():
    got = _flake8("--select", "MHA0,MHA1", "fixtures")
    assert got == _expected_all(include_opt_in=False)


def test_real_flake8_default_selection_keeps_opt_in_codes_off():
    got = _flake8("fixtures/MHA901_fastpath_blocker.py", "fixtures/MHA902_batch_first_false.py",
                  "fixtures/MHA903_batch_first_implicit.py")
    assert not {g for g in got if g[3].startswith("MHA9")}


@pytest.mark.parametrize("how", [["--select", "MHA"], ["--select", "MHA9"],
                                 ["--enable-extensions", "MHA9"]])
def test_real_flake8_turns_opt_in_codes_on(how):
    paths = ["fixtures/MHA901_fastpath_blocker.py", "fixtures/MHA902_batch_first_false.py",
             "fixtures/MHA903_batch_first_implicit.py", "fixtures/MHA904_gqa_repeat_tiling.py"]
    got = {g for g in _flake8(*how, *paths) if g[3].startswith("MHA9")}
    want = {e for e in _expected_all(include_opt_in=True)
            if e[3].startswith("MHA9") and e[0] in {os.path.normpath(p) for p in paths}}
    assert got == want


def test_flake8_version_lists_the_plugin():
    proc = subprocess.run([sys.executable, "-m", "flake8", "--version"], capture_output=True, text=True)
    assert "flake8-mha" in proc.stdout
