"""How a run ends when the user stops reading or stops it, and where its report
cannot go: a closed pipe and Ctrl-C end quietly (one line, no traceback), and
a report file that is a directory is a usage error.  Real subprocesses."""
from __future__ import annotations

import importlib.util
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
CLI = [sys.executable, "-m", "flake8_mha.frontends.cli"]
BAD = "import torch.nn as nn\n\nattn = nn.MultiheadAttention(64, 8)\n"


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def _needs_torch():
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed (pip install 'flake8-mha[confirm]')")


def _closed_stdout(args, cwd) -> subprocess.CompletedProcess:
    """Run with a stdout pipe whose reading end is already closed: every write fails."""
    proc = subprocess.Popen([*CLI, *args], cwd=cwd, env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    proc.stdout.close()
    err = proc.stderr.read()
    proc.wait(timeout=300)
    return subprocess.CompletedProcess(args, proc.returncode, "", err)


# -- a closed pipe ---------------------------------------------------------------------

def test_check_into_a_closed_pipe_ends_quietly(tmp_path):
    (tmp_path / "m.py").write_text(BAD)
    proc = _closed_stdout(["check", "m.py"], tmp_path)
    assert proc.stderr == ""
    assert proc.returncode == 141  # 128 + SIGPIPE, as a shell reports it


def test_confirm_into_a_closed_pipe_ends_quietly(tmp_path):
    _needs_torch()
    (tmp_path / "m.py").write_text(BAD)
    proc = _closed_stdout(["confirm", "m.py"], tmp_path)
    assert proc.stderr == ""
    assert proc.returncode == 141


@pytest.mark.parametrize("command", ["check", "confirm"])
def test_piped_into_head_ends_quietly(command):
    # --isolated: this repository's [flake8] section excludes fixtures/, and check reads it
    if shutil.which("bash") is None or shutil.which("head") is None:
        pytest.skip("needs bash and head")
    if command == "confirm":
        _needs_torch()
    cli = " ".join(CLI)
    proc = subprocess.run(["bash", "-c", f"{cli} {command} --isolated fixtures/ | head -5"], cwd=ROOT,
                          env=_env(), capture_output=True, text=True, timeout=600)
    assert proc.stderr == ""
    assert len(proc.stdout.splitlines()) == 5


# -- Ctrl-C --------------------------------------------------------------------------------

def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt(args, cwd, after: float) -> subprocess.CompletedProcess:
    """Start a run in its own process group, then press Ctrl-C: SIGINT to the
    whole group, as a terminal sends it (workers included).  The run starts with
    SIGINT at its default, as a terminal's foreground job does: a test session
    started in the background (``cmd &`` in a script) ignores SIGINT, every child
    would inherit that, and the run would rightly never see the Ctrl-C."""
    proc = subprocess.Popen([*CLI, *args], cwd=cwd, env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_sigint_default)
    time.sleep(after)
    assert proc.poll() is None, "the run ended before Ctrl-C: make the tree bigger"
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


@pytest.fixture(scope="module")
def big_tree(tmp_path_factory):
    tree = tmp_path_factory.mktemp("big")
    source = (FIXTURES / "MHA003_handwritten_attention.py").read_text(encoding="utf-8")
    for n in range(800):
        (tree / f"f{n:03}.py").write_text(source, encoding="utf-8")
    return tree


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_during_check_is_one_line_and_exit_130(big_tree, jobs):
    # --no-cache: the other case's run fills the tree's results cache, and a run
    # that reads it may end before the interrupt
    proc = _interrupt(["check", "--no-cache", "-j", jobs, "."], big_tree, after=2.5)
    assert proc.returncode == 130
    assert proc.stderr.strip().splitlines() == ["flake8-mha: interrupted"]


def test_ctrl_c_during_confirm_is_one_line_and_exit_130():
    _needs_torch()
    proc = _interrupt(["confirm", "--isolated", "--no-progress", "fixtures/"], ROOT, after=4.0)
    assert proc.returncode == 130
    assert proc.stderr.strip().splitlines() == ["flake8-mha confirm: interrupted"]


# -- a report file that is a directory ------------------------------------------------------

def test_check_output_file_that_is_a_directory_is_a_usage_error(tmp_path):
    (tmp_path / "m.py").write_text(BAD)
    (tmp_path / "out").mkdir()
    proc = subprocess.run([*CLI, "check", "--output-file", "out", "m.py"], cwd=tmp_path,
                          env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["flake8-mha check: error: --output-file is a directory: out"]
    assert proc.stdout == ""


def test_check_output_file_from_the_configuration_that_is_a_directory(tmp_path):
    (tmp_path / "m.py").write_text(BAD)
    (tmp_path / "reports").mkdir()
    (tmp_path / "setup.cfg").write_text("[flake8-mha]\noutput-file = reports\n")
    proc = subprocess.run([*CLI, "check", "m.py"], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1
    assert "--output-file is a directory" in proc.stderr and "Traceback" not in proc.stderr


def test_confirm_json_that_is_a_directory_is_a_usage_error(tmp_path):
    (tmp_path / "m.py").write_text(BAD)
    (tmp_path / "out").mkdir()
    proc = subprocess.run([*CLI, "confirm", "--json", "out", "m.py"], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["flake8-mha confirm: error: --json is a directory: out"]
    assert proc.stdout == ""
