"""``check`` and ``confirm`` lint through one pipeline: on the same tree they
report the same files, lines, columns and codes, and the same broken files.

The tree holds what makes two walkers drift apart: ``# noqa`` comments (one
code, bare, file-level), a ``[tool.flake8-mha]`` configuration with
``exclude`` and ``extend-ignore``, a notebook, a file that does not parse, a
file that does not decode, and a virtualenv whose name no exclude pattern
knows (it is found by its ``pyvenv.cfg``).  Both commands run as real
subprocesses; confirm runs its witnesses with the torch of this venv.
"""
from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

MODEL = """\
import torch.nn as nn

bad = nn.MultiheadAttention(64, 8)
quiet = nn.MultiheadAttention(64, 8)  # noqa: MHA001
hushed = nn.MultiheadAttention(64, 8)  # noqa
other = nn.MultiheadAttention(64, 8)  # noqa: E501
wrong = nn.MultiheadAttention(10, 3, batch_first=True)
"""
SKIPPED_FILE = """\
# flake8: noqa
import torch.nn as nn

attn = nn.MultiheadAttention(64, 8)
"""
FINDING = "import torch.nn as nn\n\nattn = nn.MultiheadAttention(64, 8)\n"
BROKEN = "import torch.nn as nn\n\nattn = nn.MultiheadAttention(64, 8\n"
UNDECODABLE = b"# -*- coding: utf-8 -*-\nimport torch.nn as nn\nname = '\xff\xfe'\n" \
              b"attn = nn.MultiheadAttention(64, 8)\n"
PYPROJECT = """\
[tool.flake8-mha]
exclude = ["generated"]
extend-ignore = ["MHA008", "MHA101"]
"""


def _notebook() -> str:
    def code(src):
        return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                "source": src.splitlines(keepends=True)}

    nb = {"cells": [code("import torch.nn as nn"),
                    {"cell_type": "markdown", "metadata": {}, "source": ["# two\n"]},
                    code("x = 1\nlayer = nn.TransformerEncoderLayer(64, 8)")],
          "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(nb, indent=1) + "\n"


@pytest.fixture()
def tree(tmp_path):
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    src = tmp_path / "src"
    src.mkdir()
    (src / "model.py").write_text(MODEL)
    (src / "skipped.py").write_text(SKIPPED_FILE)
    (src / "broken.py").write_text(BROKEN)
    (src / "undecodable.py").write_bytes(UNDECODABLE)
    (src / "nb.ipynb").write_text(_notebook())
    (src / "generated").mkdir()
    (src / "generated" / "gen.py").write_text(FINDING)
    venv = tmp_path / "src" / "sandbox"  # a virtualenv no default pattern names
    (venv / "lib").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "lib" / "dep.py").write_text(FINDING)
    return tmp_path


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def _run(*args, cwd):
    proc = subprocess.run([sys.executable, "-m", "flake8_mha.frontends.cli", *args], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _spots(entries):
    return sorted((os.path.normpath(e["path"]), e.get("cell"), e["line"], e["col"], e["code"])
                  for e in entries)


def _errors(entries):
    return sorted((os.path.normpath(e["path"]), e["line"], e["col"]) for e in entries)


EXPECTED = [
    (os.path.join("src", "model.py"), None, 3, 7, "MHA001"),
    (os.path.join("src", "model.py"), None, 6, 9, "MHA001"),
    (os.path.join("src", "nb.ipynb"), 2, 2, 9, "MHA001"),
]
EXPECTED_ERRORS = [
    (os.path.join("src", "broken.py"), 3, 30),  # flake8's E999 column
    (os.path.join("src", "undecodable.py"), None, None),
]


def test_check_and_confirm_report_the_same_findings_and_broken_files(tree):
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed (pip install 'flake8-mha[confirm]')")
    check = _run("check", "--format", "json", "src", cwd=tree)
    assert check.returncode == 2, check.stderr
    report = json.loads(check.stdout)
    assert _spots(report["findings"]) == EXPECTED
    assert _errors(report["errors"]) == EXPECTED_ERRORS

    out = tree / "confirm.json"
    confirm = _run("confirm", "--json", str(out), "src", cwd=tree)
    assert confirm.returncode == 2, confirm.stdout + confirm.stderr
    document = json.loads(out.read_text())
    assert _spots(document["results"]) == EXPECTED
    assert _errors(document["errors"]) == EXPECTED_ERRORS
    assert document["exit_status"] == 2
    assert all(r["code"] != "MHA000" for r in document["results"])
    # the table names each broken file with its reason, not "MHA000 SKIPPED no witness"
    assert "SKIPPED" not in confirm.stdout
    rows = {line.split()[0]: line for line in confirm.stdout.splitlines() if line.strip()}
    broken = rows[os.path.join("src", "broken.py") + ":3:30"]
    assert broken.split()[1:3] == ["E999", "UNCHECKED"]
    assert "'(' was never closed" in confirm.stdout
    undecodable = rows[os.path.join("src", "undecodable.py")]
    assert "cannot decode the file" in undecodable
    # the same one-line reasons on stderr, as check prints them
    assert sorted(confirm.stderr.splitlines()) == sorted(check.stderr.splitlines())


def test_the_command_line_wins_over_the_configuration_in_both(tree):
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed (pip install 'flake8-mha[confirm]')")
    args = ("--isolated", "--select", "MHA008", "--exclude", "broken.py,undecodable.py")
    check = _run("check", "--format", "json", *args, "src", cwd=tree)
    out = tree / "confirm.json"
    confirm = _run("confirm", "--json", str(out), *args, "src", cwd=tree)
    expected = [(os.path.join("src", "model.py"), None, 7, 9, "MHA008")]
    assert _spots(json.loads(check.stdout)["findings"]) == expected
    assert _spots(json.loads(out.read_text())["results"]) == expected
    assert (check.returncode, confirm.returncode) == (1, 1)
