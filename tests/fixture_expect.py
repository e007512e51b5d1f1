"""Reading the expectations written inline in ``fixtures/*.py``.

A line that must produce a finding ends with a comment naming the code and
the 1-based column flake8 prints, e.g. ``# MHA001:21``; several findings on
one line: ``# MHA005:17 MHA102:17``.  A fixture may open with
``# select: MHA901,MHA902`` to enable off-by-default codes for itself.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
from typing import Dict, List, NamedTuple, Optional, Set, Tuple

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
_EXPECT = re.compile(r"\b(MHA\d{3}):(\d+)\b")
_SELECT = re.compile(r"^#\s*select:\s*([A-Z0-9, ]+)$", re.M)


def fixture_files() -> List[pathlib.Path]:
    return sorted(FIXTURES.glob("**/*.py"))


def expected(path: pathlib.Path) -> Set[Tuple[int, int, str]]:
    out = set()
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if "#" not in line:
            continue
        comment = line[line.index("#") :]
        for code, col in _EXPECT.findall(comment):
            out.add((lineno, int(col), code))
    return out


def selected(path: pathlib.Path) -> Optional[List[str]]:
    m = _SELECT.search(path.read_text(encoding="utf-8"))
    return [c.strip() for c in m.group(1).split(",") if c.strip()] if m else None


# one line of flake8's default report for one of our codes
FLAKE8_LINE = re.compile(
    r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>MHA\d{3}) (?P<msg>.*)$"
)


class Reported(NamedTuple):
    path: str
    line: int
    col: int
    code: str
    msg: str


def flake8_run(
    *args: str, select: str = "MHA", stdin: Optional[str] = None, clean_stderr: bool = False
) -> Tuple[int, List[Reported]]:
    """Real flake8 (``--isolated --select <select>``) from the repository root:
    its exit status (0 or 1, else the test fails) and every line it printed,
    each of which must be one of our findings.  ``clean_stderr``: flake8 must
    also print nothing on stderr."""
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", select, *args],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stderr
    if clean_stderr:
        assert not proc.stderr, proc.stderr
    out = []
    for line in proc.stdout.splitlines():
        m = FLAKE8_LINE.match(line)
        assert m is not None, line
        out.append(Reported(m["path"], int(m["line"]), int(m["col"]), m["code"], m["msg"]))
    return proc.returncode, out


def flake8_in_project(
    project: pathlib.Path, target: str, select: str
) -> Tuple[int, List[List[str]]]:
    """flake8 run as a user runs it inside ``project`` (its own configuration,
    the results cache on, one job) on ``target``: the exit status and each
    finding's ``[path:line:col:, code]``; a traceback fails the test."""
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--select", select, "-j", "1", target],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, [line.split(" ", 2)[:2] for line in proc.stdout.splitlines()]


def flake8_findings(fixture: str, *args: str) -> Tuple[int, Set[Tuple[int, int, str]]]:
    """Real flake8 on ``fixtures/<fixture>``: its exit status and the
    ``(line, column, code)`` it printed."""
    status, found = flake8_run(*args, os.path.join("fixtures", fixture), clean_stderr=True)
    return status, {(f.line, f.col, f.code) for f in found}


def package_rows(found) -> List[Tuple[str, int, int, str]]:
    """(file name, line, column, code) of each finding, sorted."""
    return sorted((f.path.rsplit("/", 1)[1], f.line, f.col, f.code) for f in found)


def package_messages(*args: str) -> Tuple[int, Dict[Tuple[str, int, int, str], str]]:
    """flake8's exit status and its findings, as {(file name, line, column,
    code): message}."""
    status, found = flake8_run(*args)
    return status, {(f.path.rsplit("/", 1)[-1], f.line, f.col, f.code): f.msg for f in found}


def stated(package: pathlib.Path) -> Set[Tuple[str, int, int, str]]:
    """What a fixture package's files expect inline, as (file name, line, column, code)."""
    return {(p.name,) + e for p in sorted(package.glob("*.py")) for e in expected(p)}


def alone(path: pathlib.Path, messages: Dict[Tuple[str, int, int, str], str]):
    """The exit status and messages flake8 must give on one file of a package alone."""
    want = {k: v for k, v in messages.items() if k[0] == path.name}
    return 1 if want else 0, want


def assert_package_messages(package: pathlib.Path, messages) -> None:
    """A fixture package as a user runs it, message by message: its inline
    expectations are ``messages``' keys ((file name, line, column, code)),
    and flake8 over the package, and on each of its files alone, prints
    exactly those messages."""
    assert stated(package) == set(messages)
    assert package_messages(str(package.relative_to(ROOT)) + "/") == (1, messages)
    for path in sorted(package.glob("*.py")):
        assert package_messages(str(path.relative_to(ROOT))) == alone(path, messages), path.name


def check_rows(path: str, capsys) -> Tuple[int, List[Tuple[int, str]]]:
    """``flake8-mha check --format json path`` in this process, with the
    results cache on: its exit status and (line, code) of each finding."""
    from flake8_mha.frontends.check import main

    status = main(["--format", "json", path])
    found = json.loads(capsys.readouterr().out)["findings"]
    return status, [(f["line"], f["code"]) for f in found]


def check_json(*args: str) -> Tuple[int, List[dict], str]:
    """``flake8-mha check --no-cache --format json ARGS`` in a process of its
    own, from the repository root: its exit status, its findings, its stderr."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "flake8_mha.frontends.cli",
            "check",
            "--no-cache",
            "--format",
            "json",
            *args,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    found = json.loads(proc.stdout)["findings"] if proc.stdout.strip() else []
    return proc.returncode, found, proc.stderr


def engine_rows(path: pathlib.Path) -> List[Tuple[int, int, str]]:
    """(line, column, code) of what the engine reports on a file on disk."""
    from flake8_mha.lint import engine

    return [(f.line, f.col, f.code) for f in engine.analyze_file(str(path))]


def source_rows(source: str, codes=None, tmp: Optional[pathlib.Path] = None):
    """(line, column, code) of what the engine reports on ``source`` written
    to ``tmp/t.py`` (its project: that file alone)."""
    from flake8_mha.lint.engine import analyze_source

    path = tmp / "t.py"
    path.write_text(source)
    return [(f.line, f.col, f.code) for f in analyze_source(source, str(path), codes)]


def package_texts(package) -> Dict[str, str]:
    """A fixture package's files, by name: the texts a test changes and
    writes again with ``write_package``."""
    path = ROOT / package if not pathlib.Path(package).is_absolute() else pathlib.Path(package)
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(path.glob("*.py"))}


def write_package(pkg: pathlib.Path, files: Dict[str, str]) -> pathlib.Path:
    """A package written to disk: ``pkg`` with an empty ``__init__.py`` and
    ``files`` (name -> text)."""
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for name, text in files.items():
        (pkg / name).write_text(text)
    return pkg


def copied(package: pathlib.Path, tmp_path: pathlib.Path) -> pathlib.Path:
    """A copy of a fixture package under ``tmp_path``, to edit."""
    dest = tmp_path / package.name
    shutil.copytree(package, dest)
    return dest


def assert_package_runs(
    package: str, want: List[Tuple[str, int, int, str]], select: str = "MHA"
) -> List[Reported]:
    """A fixture package as a user runs it: flake8 over the package, flake8
    on each of its files alone, and ``flake8-mha check``, each reporting
    exactly ``want`` ((file name, line, column, code)) with exit status 1.
    ``select``: the codes, for flake8 and ``check`` alike (an opt-in code
    such as MHA903 is reported only when selected).  Returns what flake8 printed over the package."""
    status, found = flake8_run(package, select=select)
    assert (status, package_rows(found)) == (1, sorted(want))
    for path in sorted((ROOT / package).glob("*.py")):
        mine = sorted(w for w in want if w[0] == path.name)
        status, alone = flake8_run(f"{package}/{path.name}", select=select)
        assert (status, package_rows(alone)) == (1 if mine else 0, mine), path.name
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "flake8_mha.frontends.cli",
            "check",
            "--no-cache",
            "--select",
            select,
            package,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = sorted(line.split(" ", 2)[:2] for line in proc.stdout.splitlines() if ": MHA" in line)
    assert (proc.returncode, out) == (
        1,
        sorted([f"{package}/{f}:{l}:{c}:", code] for f, l, c, code in want),
    )
    return found
