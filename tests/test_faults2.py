"""Faults, round two (issue 29): nothing hangs, nothing stale, no cache entry
trusted blindly.  Each test reproduces one of the faults D1 to D11 through
the real command, ``python -m flake8_mha.cli``, in a subprocess whose timeout
bounds a run that would hang."""
from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from fixture_expect import FIXTURES

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
BAD = (DATA / "bad_model.py").read_bytes()
REACH = FIXTURES / "project_reach"


def cli(*args: str, cwd, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "flake8_mha.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "internal error" not in proc.stdout + proc.stderr
    return proc


def codes_at(stdout: str):
    return sorted(re.findall(r"^(\S+?):(\d+):(\d+): (MHA\d+)", stdout, re.M))


# -- D2: only regular files are read ------------------------------------------------------------

def test_d2_a_fifo_named_on_the_command_line_is_refused_not_waited_on(tmp_path):
    os.mkfifo(tmp_path / "x.py")
    for jobs in ("1", "2"):
        proc = cli("check", "-j", jobs, "x.py", cwd=tmp_path, timeout=60)
        assert proc.returncode == 2
        assert (proc.stdout, proc.stderr) == ("", "x.py: error: not a regular file\n")


def test_d2_a_link_to_dev_zero_is_refused_and_one_in_a_folder_skipped(tmp_path):
    (tmp_path / "pkg").mkdir()
    os.symlink("/dev/zero", tmp_path / "pkg" / "z.py")
    (tmp_path / "pkg" / "m.py").write_bytes(BAD)
    proc = cli("check", "pkg/z.py", cwd=tmp_path, timeout=60)
    assert (proc.returncode, proc.stderr) == (2, "pkg/z.py: error: not a regular file\n")
    proc = cli("check", "--no-cache", "pkg", cwd=tmp_path, timeout=60)
    assert proc.returncode == 1  # the findings of m.py; the link is only a notice
    assert proc.stderr.splitlines() == ["pkg/z.py: skipped: not a regular file"]
    assert "z.py" not in proc.stdout
    assert codes_at(proc.stdout) == [("pkg/m.py", "10", "21", "MHA001"),
                                     ("pkg/m.py", "14", "18", "MHA102"),
                                     ("pkg/m.py", "17", "13", "MHA006"),
                                     ("pkg/m.py", "18", "13", "MHA007")]


def _reach_copy(tmp_path) -> pathlib.Path:
    shutil.copytree(REACH, tmp_path / "tree")
    return tmp_path / "tree"


def test_d2_an_imported_module_turned_into_a_fifo_with_a_warm_cache(tmp_path):
    tree = _reach_copy(tmp_path)
    cold = cli("check", "--select", "MHA", "pkg/model.py", cwd=tree)
    assert cold.returncode == 1
    attn = tree / "pkg" / "attn.py"
    attn.unlink()
    os.mkfifo(attn)
    warm = cli("check", "--select", "MHA", "pkg/model.py", cwd=tree, timeout=60)
    bare = cli("check", "--no-cache", "--select", "MHA", "pkg/model.py", cwd=tree, timeout=60)
    assert (warm.returncode, warm.stdout) == (bare.returncode, bare.stdout)


# -- D3: a dependency that disappears and comes back --------------------------------------------

def test_d3_delete_run_restore_run_agrees_with_no_cache(tmp_path):
    tree = _reach_copy(tmp_path)
    attn = tree / "pkg" / "attn.py"
    kept = attn.read_bytes()
    full = cli("check", "--no-cache", "pkg/model.py", cwd=tree)
    assert len(codes_at(full.stdout)) == 9
    assert cli("check", "pkg/model.py", cwd=tree).stdout == full.stdout  # the cache is warm
    attn.unlink()
    gone = cli("check", "pkg/model.py", cwd=tree)
    assert gone.stdout == cli("check", "--no-cache", "pkg/model.py", cwd=tree).stdout
    assert len(codes_at(gone.stdout)) < 9
    attn.write_bytes(kept)
    back = cli("check", "pkg/model.py", cwd=tree)
    assert (back.returncode, back.stdout) == (full.returncode, full.stdout)


# -- D4 and D5: a cache entry is verified, not trusted ------------------------------------------

def _entries(cache: pathlib.Path):
    return [p for p in cache.glob("??/*.json")
            if not p.name.startswith(("deps-", "sum-"))]


def _tamper(cache: pathlib.Path, change) -> None:
    for p in _entries(cache) + list(cache.glob("codes-*.json")):
        entry = json.loads(p.read_text())
        change(p, entry)


@pytest.mark.parametrize("damage", ["no-findings", "negative-line", "ansi-code", "no-codes",
                                    "deep-entry", "deep-codes"])
def test_d4_d5_a_tampered_cache_is_recomputed_never_printed(tmp_path, damage):
    (tmp_path / "m.py").write_bytes(BAD)
    first = cli("check", "m.py", cwd=tmp_path)
    assert first.returncode == 1 and len(codes_at(first.stdout)) == 4
    cache = tmp_path / ".flake8-mha-cache"

    def change(p, entry):
        if "items" in entry:
            if damage == "no-findings":
                entry["items"] = []
            elif damage == "negative-line":
                entry["items"][0]["finding"]["line"] = -5
            elif damage == "ansi-code":
                entry["items"][0]["finding"]["code"] = "\x1b[2JMHA001"
            elif damage == "deep-entry":
                p.write_text("[" * 100_000)
                return
        elif damage == "no-codes":
            entry["codes"] = []
        elif damage == "deep-codes":
            p.write_text("[" * 100_000)
            return
        p.write_text(json.dumps(entry))

    _tamper(cache, change)
    for _ in range(2):  # recomputed, overwritten, then read back
        again = cli("check", "m.py", cwd=tmp_path)
        assert (again.returncode, again.stdout, again.stderr) == (1, first.stdout, "")
