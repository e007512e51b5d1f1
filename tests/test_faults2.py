"""Faults, round two (issue 29): nothing hangs, nothing stale, no cache entry
trusted blindly.  Each test reproduces one of the faults D1 to D11 through
the real command, ``python -m flake8_mha.frontends.cli``, in a subprocess whose timeout
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
    proc = subprocess.run([sys.executable, "-m", "flake8_mha.frontends.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "internal error" not in proc.stdout + proc.stderr
    return proc


def cli_bytes(*args: str, cwd, timeout: float = 120) -> subprocess.CompletedProcess:
    """``cli`` with stdout as bytes: a diff's CRs are part of it."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "flake8_mha.frontends.cli", *args], cwd=cwd, env=env,
                          capture_output=True, timeout=timeout)
    assert b"Traceback" not in proc.stderr, proc.stderr
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


# -- D1: every line ending survives --fix and --diff --------------------------------------------

def _with_endings(kind: str) -> bytes:
    if kind == "lf":
        return BAD
    if kind == "crlf":
        return BAD.replace(b"\n", b"\r\n")
    if kind == "cr":
        return BAD.replace(b"\n", b"\r")
    lines = BAD.split(b"\n")[:-1]  # mixed: \n, \r\n, \r in turn, the last one \r
    return b"".join(line + (b"\n", b"\r\n", b"\r")[i % 3] for i, line in enumerate(lines))


ENDINGS = ("lf", "crlf", "cr", "mixed")


def _breaks(data: bytes):
    """How many line breaks of each kind: CRLF, a lone CR, a lone LF."""
    crlf = data.count(b"\r\n")
    return crlf, data.count(b"\r") - crlf, data.count(b"\n") - crlf


def _outside_the_fix(before: bytes, after: bytes):
    """The bytes before the first difference and after the last one."""
    head = 0
    while head < min(len(before), len(after)) and before[head] == after[head]:
        head += 1
    tail = 0
    while (tail < min(len(before), len(after)) - head
           and before[-1 - tail] == after[-1 - tail]):
        tail += 1
    return head, tail


@pytest.mark.parametrize("kind", ENDINGS)
def test_d1_fix_keeps_every_line_break_and_the_diff_applies(tmp_path, kind):
    data = _with_endings(kind)
    for folder in ("fixed", "patched", "applied"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "m.py").write_bytes(data)
    fix = cli("check", "--fix", "m.py", cwd=tmp_path / "fixed")
    assert fix.returncode == 1 and "fixed 3 findings in 1 file" in fix.stderr
    fixed = (tmp_path / "fixed" / "m.py").read_bytes()
    assert _breaks(fixed) == _breaks(data)
    head, tail = _outside_the_fix(data, fixed)
    assert data[:head] == fixed[:head] and data[len(data) - tail:] == fixed[len(fixed) - tail:]

    diff = cli_bytes("check", "--diff", "m.py", cwd=tmp_path / "patched")
    assert diff.returncode == 1
    patch = tmp_path / "m.patch"
    patch.write_bytes(diff.stdout)
    done = subprocess.run(["patch", "-p0", "-i", str(patch)], cwd=tmp_path / "patched",
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "patched" / "m.py").read_bytes() == fixed
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q"], cwd=tmp_path / "applied", check=True, timeout=60)
        done = subprocess.run(["git", "apply", "-p0", str(patch)], cwd=tmp_path / "applied",
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "applied" / "m.py").read_bytes() == fixed


# -- D6: malformed notebooks --------------------------------------------------------------------

NOTEBOOK = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {},
                       "outputs": [], "source": ["import torch.nn as nn\n",
                                                 "attn = nn.MultiheadAttention(64, 8)\n"]}],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def _broken(what: str) -> str:
    nb = json.loads(json.dumps(NOTEBOOK))
    if what == "metadata-string":
        nb["metadata"] = "x"
    elif what == "source-numbers":
        nb["cells"][0]["source"] = [1, 2, None]
    elif what == "minor-5000-digits":
        return json.dumps(nb).replace('"nbformat_minor": 5', '"nbformat_minor": ' + "9" * 5000)
    elif what == "deep":
        return '{"cells": ' + "[" * 100_000
    elif what == "source-object":
        nb["cells"][0]["source"] = {}
    elif what == "cell-string":
        nb["cells"] = ["str"]
    elif what == "cell-null":
        nb["cells"] = [None]
    elif what == "cell-type-5":
        nb["cells"][0]["cell_type"] = 5
    return json.dumps(nb)


@pytest.mark.parametrize("what, message", [
    ("metadata-string", "not a valid notebook: 'metadata' is not an object"),
    ("source-numbers", "not a valid notebook: cell at index 0: 'source' is neither a string "
                       "nor a list of strings"),
    ("minor-5000-digits", "not a notebook: invalid JSON (a number too long to read)"),
    ("deep", "not a notebook: JSON nested too deep to read"),
    ("source-object", "not a valid notebook: cell at index 0: 'source' is neither a string "
                      "nor a list of strings"),
    ("cell-string", "not a valid notebook: cell at index 0 is not an object"),
    ("cell-null", "not a valid notebook: cell at index 0 is not an object"),
    ("cell-type-5", "not a valid notebook: cell at index 0: 'cell_type' is 5, not one of code, "
                    "markdown, raw"),
])
def test_d6_a_malformed_notebook_is_one_line_and_exit_2(tmp_path, what, message):
    (tmp_path / "nb.ipynb").write_text(_broken(what))
    for extra in ((), ("--no-cache",), ("--fix",)):
        proc = cli("check", *extra, "nb.ipynb", cwd=tmp_path)
        assert (proc.returncode, proc.stdout) == (2, "")
        assert proc.stderr == f"nb.ipynb: error: {message}\n"


def test_d6_the_well_formed_base_is_read(tmp_path):
    (tmp_path / "nb.ipynb").write_text(json.dumps(NOTEBOOK))
    proc = cli("check", "nb.ipynb", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stderr == ""
    assert re.findall(r"^\S+ MHA\d+", proc.stdout, re.M) == ["nb.ipynb:cell_1:2:8: MHA001"]


# -- D8: NUL bytes ------------------------------------------------------------------------------

def test_d8_nul_bytes_are_e999_as_python_and_flake8_say(tmp_path):
    (tmp_path / "n.py").write_bytes(BAD[:50] + b"\0" + BAD[50:])
    proc = cli("check", "n.py", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == "n.py:1:1: E999 SyntaxError: source code string cannot contain null bytes\n"
    try:
        compile(BAD[:50] + b"\0" + BAD[50:], "n.py", "exec")
    except SyntaxError as exc:  # Python's own words
        assert proc.stderr.endswith(f"SyntaxError: {exc.msg}\n")
    nb = json.loads(json.dumps(NOTEBOOK))
    nb["cells"][0]["source"][1] = "attn = nn.MultiheadAttention(64, 8)\0\n"
    (tmp_path / "n.ipynb").write_text(json.dumps(nb))
    proc = cli("check", "n.ipynb", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == ("n.ipynb:cell_1:2:1: E999 SyntaxError: source code string cannot "
                           "contain null bytes\n")


# -- D9: out-of-range limits --------------------------------------------------------------------

@pytest.mark.parametrize("option", ["--memory-limit", "--cpu-limit", "--timeout", "--budget"])
def test_d9_an_out_of_range_limit_is_a_usage_error(tmp_path, option):
    (tmp_path / "m.py").write_bytes(BAD)
    proc = cli("confirm", option, "99999999999999", "m.py", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.splitlines()[-1] == (
        f"flake8-mha confirm: error: argument {option}: must be at most 1e+09: '99999999999999'")


def test_d9_the_worker_clamps_a_limit_the_kernel_cannot_hold():
    # in a process of its own: the limit would stay on this one
    code = ("from flake8_mha.confirm.worker import set_memory_limit, arm_cpu_limit\n"
            "set_memory_limit(99999999999999.0); arm_cpu_limit(1e300); print('ok')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "ok\n", "")


# -- D11: the worker does not outlive confirm -------------------------------------------------

PARENT = r"""
import os, sys, threading, time
from flake8_mha.confirm.runner import Runner
from flake8_mha.confirm.worker import TEST_FAULTS_ENV
from flake8_mha.core.findings import Finding

flag, out, in_thread = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
runner = Runner(env=dict(os.environ, **{TEST_FAULTS_ENV: "1"}), timeout=600)
finding = Finding("MHA008", 1, 1, "m", "f.py", {"_test_fault": "hang", "_test_flag": flag})

def tell():
    while not os.path.exists(flag):
        time.sleep(0.05)
    with open(out, "w") as fh:
        fh.write(str(runner.worker.proc.pid))

threading.Thread(target=tell, daemon=True).start()
if in_thread:
    t = threading.Thread(target=runner.run, args=([finding],))
    t.start()
    t.join()
else:
    runner.run([finding])
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig", ["SIGKILL", "SIGTERM"])
@pytest.mark.parametrize("in_thread", [False, True], ids=["main-thread", "other-thread"])
def test_d11_the_worker_ends_within_a_second_of_its_parents_death(tmp_path, sig, in_thread):
    pytest.importorskip("torch")
    import signal
    import time

    flag, out = tmp_path / "running", tmp_path / "worker.pid"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(flag), str(out),
                               "1" if in_thread else "0"],
                              cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        deadline = time.monotonic() + 240
        while not out.exists() or not out.read_text():
            assert parent.poll() is None and time.monotonic() < deadline, "no witness ran"
            time.sleep(0.05)
        worker = int(out.read_text())
        assert _alive(worker)
        parent.send_signal(getattr(signal, sig))
        parent.wait(timeout=60)
        gone_by = time.monotonic() + 1.5  # a second, and room for a loaded machine
        while _alive(worker) and time.monotonic() < gone_by:
            time.sleep(0.02)
        assert not _alive(worker), "the worker outlived its parent"
    finally:
        parent.kill()
        parent.wait(timeout=60)
        if out.exists() and out.read_text() and _alive(int(out.read_text())):
            os.kill(int(out.read_text()), signal.SIGKILL)


# -- D10: a notebook --fix rewrites only the changed cells' source ---------------------------

FIX_CELLS = [
    {"cell_type": "markdown", "metadata": {}, "source": ["# caf\u00e9 \u2014 notes\n", "text"]},
    {"cell_type": "code", "execution_count": 1, "metadata": {"tags": ["x"]}, "outputs": [],
     "source": ["import torch.nn as nn\n", "\n", "attn = nn.MultiheadAttention(64, 8, "
                "batch_first=True)\n"]},
    {"cell_type": "code", "execution_count": 2, "metadata": {}, "outputs": [
        {"name": "stdout", "output_type": "stream", "text": ["ok\n"]}],
     "source": ["def f(x):\n", "    out, _ = attn(x, x, x)\n", "    return out"]},
    {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
     "source": "y = f(1)\nprint(y)\n"},
]


def _notebook_text(style: str) -> str:
    nb = {"cells": FIX_CELLS, "metadata": {"kernelspec": {"language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    if style == "compact":
        return json.dumps(nb, separators=(",", ":"), ensure_ascii=False)
    if style == "crlf":
        return (json.dumps(nb, indent=1, ensure_ascii=False) + "\n").replace("\n", "\r\n")
    if style == "indent2-ascii":
        return json.dumps(nb, indent=2) + "\n"
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"  # nbformat's own


@pytest.mark.parametrize("style", ["nbformat", "compact", "crlf", "indent2-ascii"])
def test_d10_notebook_fix_keeps_the_files_formatting(tmp_path, style):
    raw = _notebook_text(style).encode("utf-8")
    for folder in ("fixed", "patched", "applied"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "nb.ipynb").write_bytes(raw)
    fix = cli("check", "--fix", "nb.ipynb", cwd=tmp_path / "fixed")
    assert "fixed 1 finding in 1 file" in fix.stderr
    fixed = (tmp_path / "fixed" / "nb.ipynb").read_bytes()
    old = '"    out, _ = attn(x, x, x)\\n"'
    new = '"    out, _ = attn(x, x, x, need_weights=False)\\n"'
    assert fixed == raw.replace(old.encode(), new.encode())  # that string, and nothing else
    nb = json.loads(fixed)
    assert nb["cells"][2]["source"][1] == "    out, _ = attn(x, x, x, need_weights=False)\n"

    diff = cli_bytes("check", "--diff", "nb.ipynb", cwd=tmp_path / "patched")
    patch = tmp_path / "nb.patch"
    patch.write_bytes(diff.stdout)
    done = subprocess.run(["patch", "-p0", "-i", str(patch)], cwd=tmp_path / "patched",
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "patched" / "nb.ipynb").read_bytes() == fixed
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q"], cwd=tmp_path / "applied", check=True, timeout=60)
        done = subprocess.run(["git", "apply", "-p0", str(patch)], cwd=tmp_path / "applied",
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "applied" / "nb.ipynb").read_bytes() == fixed


# -- all at once: a hostile tree ends in bounded time and memory -------------------------------

def _capped_memory():  # in the child, before exec: 1.5 GB of data segment at most
    import resource

    resource.setrlimit(resource.RLIMIT_DATA, (1536 << 20, 1536 << 20))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/dev/zero and RLIMIT_DATA")
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_fifo_dev_zero_a_20mb_file_and_a_corrupt_cache_each_named_once(tmp_path, jobs):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "m.py").write_bytes(BAD)
    with open(tree / "big.py", "wb") as fh:  # 20 MB that would be parsed if it were read
        fh.write(b"import torch.nn as nn\n")
        fh.write((b"x = [" + b"1, " * 100_000 + b"]\n") * 70)
    assert (tree / "big.py").stat().st_size > 20_000_000
    cold = cli("check", "-j", jobs, "tree", cwd=tmp_path, timeout=300)
    assert cold.returncode == 1
    for p in (tmp_path / ".flake8-mha-cache").glob("??/*.json"):  # every entry corrupt
        p.write_text("[" * 100_000 if p.name.startswith(("deps-", "sum-")) else '{"schema": 1')
    os.mkfifo(tree / "x.py")
    os.symlink("/dev/zero", tree / "z.py")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "flake8_mha.frontends.cli", "check", "-j", jobs, "tree"],
                          cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120, preexec_fn=_capped_memory)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stdout
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "tree/big.py:1:1: MHA000 flake8-mha could not analyze this file: file larger than "
        "8 MiB, not analyzed",
        *cold.stdout.splitlines()[1:],
    ]
    assert codes_at(proc.stdout)[1:] == [("tree/m.py", "10", "21", "MHA001"),
                                         ("tree/m.py", "14", "18", "MHA102"),
                                         ("tree/m.py", "17", "13", "MHA006"),
                                         ("tree/m.py", "18", "13", "MHA007")]
    assert sorted(proc.stderr.splitlines()) == ["tree/x.py: skipped: not a regular file",
                                                "tree/z.py: skipped: not a regular file"]


# -- D7: a huge literal is skimmed --------------------------------------------------------------

def test_d7_a_1mb_literal_is_skimmed_in_bounded_time_and_memory(tmp_path):
    items = ", ".join(str(i % 10) for i in range(500_000))
    (tmp_path / "big.py").write_text(
        "import torch.nn.functional as F\nDATA = [" + items + "]\n\n"
        "def f(q, k, v, m):\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=True)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    # before: 19-50 s and 2.2 GB; flake8 alone (pycodestyle) takes longer than that
    proc = subprocess.run([sys.executable, "-m", "flake8_mha.frontends.cli", "check", "--no-cache",
                           "big.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120, preexec_fn=_capped_memory_1g)
    assert (proc.returncode, proc.stderr) == (1, "")
    assert codes_at(proc.stdout) == [("big.py", "5", "12", "MHA006")]


def _capped_memory_1g():
    import resource

    resource.setrlimit(resource.RLIMIT_DATA, (1 << 30, 1 << 30))


def test_d7_skimming_keeps_every_position_and_every_syntax_error():
    from flake8_mha.core.lines import skim_data

    data = "[" + ", ".join(f'"k{i}"' for i in range(5000)) + "]"
    text = f"x = {data}\ny = {{1: {data}}}\nz = f({data})\nw = v[{data[1:-1]}]\n"
    out = skim_data(text)
    assert len(out) == len(text) and out.count("\n") == text.count("\n")
    lines = out.splitlines()
    assert lines[0] == "x = [" + " " * (len(data) - 2) + "]"
    assert lines[1] == "y = {" + " " * (len(data) + 3) + "}"  # `1: ` and the list
    assert lines[2] == "z = f([" + " " * (len(data) - 2) + "])"  # a list passed: data still
    assert lines[3] == text.splitlines()[3]  # a subscript is not a display: kept
    broken = "x = [" + "1, " * 10_000 + "2 3]\n"  # Python rejects it: left for E999
    assert skim_data(broken) == broken
    called = "x = [" + "1, " * 10_000 + "f(2)]\n"  # not data
    assert skim_data(called) == called
