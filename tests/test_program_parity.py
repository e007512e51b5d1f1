"""One behaviour everywhere (issue 26): on every fixture package, flake8 on
one file at a time, flake8 from stdin with ``--stdin-display-name`` (an
editor), flake8 over the package and ``flake8-mha check`` over the package
report the same findings, and they are the inline expectations of its files."""
from __future__ import annotations

import concurrent.futures
import json
import subprocess
import sys

import pytest

from fixture_expect import FIXTURES, ROOT, expected, flake8_run

DEFAULT = "MHA0,MHA1"  # the codes on by default (the opt-in MHA9xx are left out)


def _packages():
    """Top-level packages under fixtures/ (a folder with __init__.py whose
    parent has none)."""
    out = []
    for init in sorted(FIXTURES.glob("**/__init__.py")):
        pkg = init.parent
        if not (pkg.parent / "__init__.py").exists():
            out.append(pkg)
    return out


PACKAGES = _packages()


def _rel(path) -> str:
    return path.relative_to(ROOT).as_posix()


def _flake8(*args, stdin=None):
    _, found = flake8_run(*args, select=DEFAULT, stdin=stdin)
    return {(f.path.lstrip("./"), f.line, f.col, f.code) for f in found}


def _want(pkg):
    return {(_rel(p), line, col, code) for p in sorted(pkg.rglob("*.py"))
            for line, col, code in expected(p) if not code.startswith("MHA9")}


def test_there_are_fixture_packages():
    assert {p.name for p in PACKAGES} >= {"zoo", "pkg", "clip_like", "clip_like_batch_first"}
    assert sum(bool(_want(p)) for p in PACKAGES) >= 4  # most of them expect findings


@pytest.mark.parametrize("pkg", PACKAGES, ids=lambda p: _rel(p))
def test_every_door_reports_the_same_findings(pkg):
    want = _want(pkg)  # empty for a package that is all good code (the CLIP pattern)
    files = sorted(pkg.rglob("*.py"))
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        one = set().union(*pool.map(lambda p: _flake8(_rel(p)), files))
        editor = set().union(*pool.map(
            lambda p: _flake8("--stdin-display-name", _rel(p), "-", stdin=p.read_text()), files))
    assert one == want
    assert editor == want
    assert _flake8(_rel(pkg)) == want
    proc = subprocess.run(
        [sys.executable, "-m", "flake8_mha.frontends.cli", "check", "--no-cache", "--format", "json",
         "--select", DEFAULT, _rel(pkg)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == (1 if want else 0), proc.stderr
    got = {(f["path"].lstrip("./"), f["line"], f["col"], f["code"])
           for f in json.loads(proc.stdout)["findings"]}
    assert got == want
