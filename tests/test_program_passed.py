"""A wrapper reached without a call of its name (issue 26, "a call is a
call"): a project base class whose ``forward`` or ``_attend`` the subclass
runs (``super().forward(...)``, ``self._attend(...)``), and a project function
handed to ``functools.partial`` and called through what it returns.  The
file that uses them may name no attention API: the project-aware gate and
the focused parse read such a use as they read a call
(``ProjectFiles.imported_names``).  Checked as a user sees it: the exact
code, line and column, per file, over the package, from stdin and through
``check``."""
from __future__ import annotations

import subprocess
import sys

from fixture_expect import ROOT, flake8_run
from flake8_mha.core.torch_api import TRIGGER_WORDS

PACKAGE = "fixtures/program_calls/passed_and_inherited"
WANT = [
    ("layers.py", 18, 16, "MHA006"),
    ("layers.py", 34, 13, "MHA002"),
    ("layers.py", 36, 13, "MHA006"),
    ("model.py", 21, 13, "MHA002"),
    ("model.py", 23, 13, "MHA006"),
    ("model.py", 30, 13, "MHA006"),
    ("model.py", 32, 13, "MHA007"),
    ("model.py", 34, 13, "MHA002"),
]


def _rows(found):
    return sorted((f.path.rsplit("/", 1)[1], f.line, f.col, f.code) for f in found)


def test_neither_using_file_names_an_attention_api():
    for name in ("layers.py", "model.py"):
        text = (ROOT / PACKAGE / name).read_text()
        assert [w for w in TRIGGER_WORDS if w in text] == [], name


def test_over_the_package_and_one_file_at_a_time():
    status, found = flake8_run(PACKAGE, select="MHA")
    assert (status, _rows(found)) == (1, WANT)
    for name in ("__init__.py", "ops.py", "base.py", "layers.py", "model.py"):
        status, found = flake8_run(f"{PACKAGE}/{name}", select="MHA")
        mine = [w for w in WANT if w[0] == name]
        assert (status, _rows(found)) == (1 if mine else 0, mine), name


def test_from_an_editor_s_stdin_and_through_check():
    for name in ("layers.py", "model.py"):
        path = f"{PACKAGE}/{name}"
        status, found = flake8_run(
            "--stdin-display-name", path, "-", select="MHA", stdin=(ROOT / path).read_text())
        assert (status, _rows(found)) == (1, [w for w in WANT if w[0] == name])
    proc = subprocess.run(
        [sys.executable, "-m", "flake8_mha.frontends.cli", "check", "--no-cache", PACKAGE],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    rows = sorted(
        (p.rsplit("/", 1)[1], int(line), int(col), rest.split()[0])
        for p, line, col, rest in (x.split(":", 3) for x in proc.stdout.splitlines())
    )
    assert (proc.returncode, rows) == (1, WANT)


def test_a_base_class_that_reaches_no_sink_lets_nothing_in(tmp_path):
    """The gate stays shut for a subclass of a project class whose methods
    reach no attention API: nothing to report, nothing parsed."""
    from flake8_mha.analysis.program.callsites import Project

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text(
        "import torch.nn as nn\n\n\nclass Base(nn.Module):\n"
        "    def _mix(self, x):\n        return x * 2\n")
    (pkg / "user.py").write_text(
        "from functools import partial\n\nfrom .base import Base\n\n\n"
        "class User(Base):\n    def forward(self, x):\n        return self._mix(x)\n")
    source = (pkg / "user.py").read_text()
    assert Project(str(pkg / "user.py")).gate(source) is False
    (pkg / "base.py").write_text(
        "import torch.nn as nn\nimport torch.nn.functional as F\n\n\nclass Base(nn.Module):\n"
        "    def _mix(self, x):\n        return F.scaled_dot_product_attention(x, x, x)\n")
    assert Project(str(pkg / "user.py")).gate(source) is True
