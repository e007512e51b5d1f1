"""A rule module that does not import (a broken install) must not hang
flake8: with ``-j 2`` an exit in a worker process left flake8 waiting for
the worker forever (found by a release review).  Serial runs end with the
one-line message and status 1; worker runs give each analysed file one
MHA000 with that message, and status 1."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _broken_copy(tmp_path):
    shutil.copytree(
        ROOT / "flake8_mha", tmp_path / "flake8_mha", ignore=shutil.ignore_patterns("__pycache__")
    )
    rule = tmp_path / "flake8_mha" / "rules" / "mha015_mask_on_keys_values.py"
    rule.write_text(
        rule.read_text(encoding="utf-8") + "\nraise ImportError('broken on purpose')\n",
        encoding="utf-8",
    )
    work = tmp_path / "work"
    work.mkdir()
    for name in ("MHA002_ignore_mask_to_sdpa.py", "MHA007_sdpa_dropout_in_eval.py"):
        shutil.copy(ROOT / "fixtures" / name, work / name)
    return work


def _flake8(tmp_path, work, jobs: str):
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    return subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "-j", jobs, "--select=MHA", "."],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_worker_processes_report_it_as_mha000_and_do_not_hang(tmp_path):
    work = _broken_copy(tmp_path)
    proc = _flake8(tmp_path, work, "2")
    assert proc.returncode == 1
    lines = sorted(proc.stdout.splitlines())
    assert lines == [
        f"./{name}:1:1: MHA000 rule module flake8_mha.rules.mha015_mask_on_keys_values "
        "failed to import: ImportError: broken on purpose"
        for name in ("MHA002_ignore_mask_to_sdpa.py", "MHA007_sdpa_dropout_in_eval.py")
    ]


def test_a_serial_run_ends_with_one_line(tmp_path):
    work = _broken_copy(tmp_path)
    proc = _flake8(tmp_path, work, "1")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines()[-1] == (
        "flake8-mha: rule module flake8_mha.rules.mha015_mask_on_keys_values "
        "failed to import: ImportError: broken on purpose"
    )
