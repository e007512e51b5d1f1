"""Reading the expectations written inline in ``fixtures/*.py``.

A line that must produce a finding ends with a comment naming the code and
the 1-based column flake8 prints, e.g. ``# MHA001:21``; several findings on
one line: ``# MHA005:17 MHA102:17``.  A fixture may open with
``# select: MHA901,MHA902`` to enable off-by-default codes for itself.
"""
from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
from typing import List, Optional, Set, Tuple

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
        comment = line[line.index("#"):]
        for code, col in _EXPECT.findall(comment):
            out.add((lineno, int(col), code))
    return out


def selected(path: pathlib.Path) -> Optional[List[str]]:
    m = _SELECT.search(path.read_text(encoding="utf-8"))
    return [c.strip() for c in m.group(1).split(",") if c.strip()] if m else None


def flake8_findings(fixture: str, *args: str) -> Tuple[int, Set[Tuple[int, int, str]]]:
    """Real flake8 (``--isolated --select MHA``) on ``fixtures/<fixture>``:
    its exit status and the ``(line, column, code)`` it printed."""
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "MHA", *args,
         os.path.join("fixtures", fixture)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert not proc.stderr, proc.stderr
    got = {tuple(int(x) for x in line.split(":")[1:3]) + (line.split()[1],)
           for line in proc.stdout.splitlines()}
    return proc.returncode, got
