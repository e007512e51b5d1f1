"""Faults lose nothing (issue 16): atomic fixes, bounded witnesses, concurrent runs.

Where it matters the fault is real: a process SIGKILLed while it is blocked
between writing its temporary file and the rename, two real ``--fix``
processes racing over one tree, a real worker process killed in the middle of
a witness, a witness that really grows past its memory limit, a read-only file
made immutable with ``chattr +i`` (CI runs as root, and root ignores
permission bits). Disk errors (ENOSPC, EIO) are injected by monkeypatching
``os.write``/``os.fsync``/``os.replace`` for the temporary file only, and each
permission case also has an injected ``PermissionError`` twin that runs where
``chattr`` cannot.
"""
from __future__ import annotations

import errno
import importlib.util
import json
import os
import pathlib
import re
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time

import pytest

from flake8_mha.core import atomic
from flake8_mha.frontends import check
from flake8_mha.app import pipeline
from flake8_mha.core.atomic import TMP_SUFFIX, FileChanged, WriteError, write_bytes

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
BAD = (DATA / "bad_model.py").read_bytes()
FIXED = BAD.decode("utf-8").replace(
    "out, _ = self.attn(x, x, x)", "out, _ = self.attn(x, x, x, need_weights=False)").replace(
    "attn_mask=causal, is_causal=True)", "attn_mask=causal)").replace(
    "dropout_p=self.p)", "dropout_p=self.p if self.training else 0.0)").encode("utf-8")
# what bad_model.py holds before any fix: code, line, column
ALL_FOUR = [("MHA001", 10, 21), ("MHA102", 14, 18), ("MHA006", 17, 13), ("MHA007", 18, 13)]
CHANGED = "m.py: error: not fixed: the file changed after it was read (run again)"
SUMMARY = re.compile(r"^flake8-mha: fixed (\d+) findings? in (\d+) files?$")
needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="torch is not installed: pip install 'flake8-mha[confirm]'")


def cli(*args: str, cwd) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "flake8_mha.frontends.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def positions(stdout: str):
    out = []
    for line in stdout.splitlines():
        m = re.match(r"^[^:]+:(\d+):(\d+): (MHA\d+) ", line)
        assert m, line
        out.append((m.group(3), int(m.group(1)), int(m.group(2))))
    return out


def leftovers(folder: pathlib.Path):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(TMP_SUFFIX))


@pytest.fixture
def src(tmp_path, monkeypatch):
    (tmp_path / "m.py").write_bytes(BAD)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "m.py"


# -- what --fix keeps -------------------------------------------------------------------------

def test_fix_keeps_a_latin1_cookie_and_crlf_byte_for_byte(tmp_path):
    text = "# -*- coding: latin-1 -*-\n# caf\xe9\n" + BAD.decode("utf-8")
    (tmp_path / "m.py").write_bytes(text.replace("\n", "\r\n").encode("latin-1"))
    proc = cli("check", "--fix", "m.py", cwd=tmp_path)
    assert proc.returncode == 1
    expected = "# -*- coding: latin-1 -*-\n# caf\xe9\n" + FIXED.decode("utf-8")
    assert (tmp_path / "m.py").read_bytes() == expected.replace("\n", "\r\n").encode("latin-1")


def test_fix_keeps_the_mode_and_the_owner_and_writes_through_a_symlink(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "m.py").write_bytes(BAD)
    os.chmod(real / "m.py", 0o751)
    owner = None
    if os.geteuid() == 0:  # root can give the file away: the fix must give it back
        os.chown(real / "m.py", 4321, 4322)
        owner = (4321, 4322)
    (tmp_path / "link.py").symlink_to(os.path.join("real", "m.py"))
    proc = cli("check", "--fix", "link.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == ["flake8-mha: fixed 3 findings in 1 file"]
    assert os.readlink(tmp_path / "link.py") == os.path.join("real", "m.py")
    assert (real / "m.py").read_bytes() == FIXED
    st = os.stat(real / "m.py")
    assert stat.S_IMODE(st.st_mode) == 0o751
    if owner:
        assert (st.st_uid, st.st_gid) == owner
    assert leftovers(real) == [] and leftovers(tmp_path) == []


def test_output_file_through_a_symlink_keeps_the_link_and_a_new_one_gets_the_umask(tmp_path):
    (tmp_path / "m.py").write_bytes(BAD)
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "r.txt").write_text("old\n")
    (tmp_path / "r.txt").symlink_to(os.path.join("reports", "r.txt"))
    proc = cli("check", "--output-file", "r.txt", "m.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert (tmp_path / "r.txt").is_symlink()
    assert positions((tmp_path / "reports" / "r.txt").read_text()) == ALL_FOUR
    (tmp_path / "new" / "deep").mkdir(parents=True)  # no folder is made for a report (issue 28)
    proc = cli("check", "--output-file", "new/deep/r.txt", "m.py", cwd=tmp_path)
    umask = atomic._umask()
    assert stat.S_IMODE(os.stat(tmp_path / "new/deep/r.txt").st_mode) == 0o666 & ~umask


def test_an_output_file_that_is_not_a_regular_file_is_written_in_place(tmp_path):
    (tmp_path / "m.py").write_bytes(BAD)
    proc = cli("check", "--output-file", "/dev/stdout", "m.py", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (1, "")
    assert positions(proc.stdout) == ALL_FOUR


# -- a kill between the write and the rename ----------------------------------------------------

BLOCK_BEFORE_REPLACE = """
import os, sys, time
flag = sys.argv[1]
def blocked_replace(src, dst):
    with open(flag + ".tmp", "w") as fh:
        fh.write(src)
    os.rename(flag + ".tmp", flag)
    time.sleep(300)
os.replace = blocked_replace
from flake8_mha.frontends.check import main
sys.exit(main(sys.argv[2:]))
"""


def test_sigkill_between_write_and_replace_leaves_the_original_whole(tmp_path):
    (tmp_path / "m.py").write_bytes(BAD)
    flag = tmp_path / "blocked"
    proc = subprocess.Popen([sys.executable, "-c", BLOCK_BEFORE_REPLACE, str(flag),
                             "--fix", "m.py"], cwd=tmp_path, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not flag.exists():
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "the fix never reached os.replace"
            time.sleep(0.05)
        tmp = pathlib.Path(flag.read_text())
        # it is blocked between the two steps: the new bytes are all written, fsynced...
        assert tmp.parent == tmp_path and tmp.name.endswith(TMP_SUFFIX)
        assert tmp.read_bytes() == FIXED
        os.kill(proc.pid, signal.SIGKILL)  # ...and it dies there
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert (tmp_path / "m.py").read_bytes() == BAD
    # the stale temporary file is never linted, and the next run fixes the file
    again = cli("check", "--fix", ".", cwd=tmp_path)
    assert positions(again.stdout) == [("MHA001", 10, 21)]
    assert again.stderr.splitlines() == ["flake8-mha: fixed 3 findings in 1 file"]
    assert (tmp_path / "m.py").read_bytes() == FIXED


# -- disk errors --------------------------------------------------------------------------------

def _is_tmp(fd: int) -> bool:
    try:
        return os.readlink(f"/proc/self/fd/{fd}").endswith(TMP_SUFFIX)
    except OSError:
        return fd > 2


def _inject(monkeypatch, where: str, code: int) -> None:
    """Make one step of writing the temporary file fail with ``code``."""
    if where == "replace":
        def fail(src, dst, *a, **k):
            raise OSError(code, os.strerror(code))
        monkeypatch.setattr(os, "replace", fail)
        return
    real = getattr(os, where)

    def maybe_fail(fd, *args):
        if _is_tmp(fd):
            raise OSError(code, os.strerror(code))
        return real(fd, *args)

    monkeypatch.setattr(os, where, maybe_fail)


@pytest.mark.parametrize("where, code", [("write", errno.ENOSPC), ("fsync", errno.EIO),
                                         ("replace", errno.EIO)])
def test_a_disk_error_while_fixing_is_one_line_exit_2_and_the_source_is_whole(
        src, monkeypatch, capsys, where, code):
    _inject(monkeypatch, where, code)
    status = check.main(["--fix", "m.py"])
    out, err = capsys.readouterr()
    assert err.splitlines() == [f"m.py: error: not fixed: {os.strerror(code)}"]
    assert status == 2
    assert src.read_bytes() == BAD
    assert leftovers(src.parent) == []
    assert positions(out) == ALL_FOUR  # what the file on disk still holds


def test_a_full_disk_while_writing_the_report_keeps_the_previous_report(src, monkeypatch, capsys):
    (src.parent / "r.txt").write_text("the previous report\n")
    _inject(monkeypatch, "write", errno.ENOSPC)
    status = check.main(["--output-file", "r.txt", "m.py"])
    err = capsys.readouterr().err
    assert err.splitlines() == ["flake8-mha check: error: cannot write r.txt: "
                                "No space left on device"]
    assert status == 2
    assert (src.parent / "r.txt").read_text() == "the previous report\n"
    assert leftovers(src.parent) == []


# -- read-only file, read-only folder -----------------------------------------------------------

def _read_only(path: pathlib.Path):
    """Make ``path`` unwritable for this process, really: ``chattr +i`` (works for root),
    else permission bits (when not root). Returns an undo function, or None."""
    if shutil.which("chattr") and subprocess.run(["chattr", "+i", str(path)],
                                                 capture_output=True).returncode == 0:
        return lambda: subprocess.run(["chattr", "-i", str(path)], check=True)
    if os.geteuid() != 0:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        os.chmod(path, mode & ~0o222)
        return lambda: os.chmod(path, mode)
    return None


@pytest.mark.parametrize("what", ["file", "folder"])
def test_a_really_read_only_file_or_folder_is_not_touched(src, capsys, what):
    target = src if what == "file" else src.parent
    undo = _read_only(target)
    if undo is None:
        pytest.skip("neither chattr +i nor permission bits can make this read-only here; "
                    "the injected twin below covers the code path")
    try:
        status = check.main(["--fix", "m.py"])
    finally:
        undo()
    out, err = capsys.readouterr()
    reason = "the file is read-only" if what == "file" else "cannot create a file in its folder"
    assert len(err.splitlines()) == 1 and err.startswith(f"m.py: error: not fixed: {reason} (")
    assert status == 2
    assert src.read_bytes() == BAD
    assert positions(out) == ALL_FOUR
    assert leftovers(src.parent) == []


def test_an_injected_read_only_file_is_not_replaced(src, monkeypatch, capsys):
    real_open = os.open

    def deny(path, flags, *a, **k):
        if flags & (os.O_WRONLY | os.O_RDWR) and os.path.realpath(path) == str(src):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        return real_open(path, flags, *a, **k)

    monkeypatch.setattr(os, "open", deny)
    status = check.main(["--fix", "m.py"])
    err = capsys.readouterr().err
    assert err.splitlines() == ["m.py: error: not fixed: the file is read-only (Permission denied)"]
    assert status == 2
    assert src.read_bytes() == BAD


def test_an_injected_read_only_folder_writes_nothing(src, monkeypatch, capsys):
    def deny(*a, **k):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(atomic.tempfile, "mkstemp", deny)
    status = check.main(["--fix", "m.py"])
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "m.py: error: not fixed: cannot create a file in its folder (Permission denied)"]
    assert status == 2
    assert src.read_bytes() == BAD


# -- compare-and-swap ---------------------------------------------------------------------------

def _after_analysis(monkeypatch, action) -> None:
    real = pipeline.run_files

    def run_files(*args, **kwargs):
        outcomes = real(*args, **kwargs)
        action()
        return outcomes

    monkeypatch.setattr(pipeline, "run_files", run_files)


def test_a_file_saved_between_read_and_write_is_not_overwritten(src, monkeypatch, capsys):
    edited = b"# the editor saved this\n" + BAD
    _after_analysis(monkeypatch, lambda: src.write_bytes(edited))
    status = check.main(["--fix", "m.py"])
    out, err = capsys.readouterr()
    assert err.splitlines() == [CHANGED]
    assert status == 2
    assert src.read_bytes() == edited
    assert positions(out) == ALL_FOUR  # the findings as analysed, none claimed fixed
    assert leftovers(src.parent) == []


def test_a_file_removed_between_read_and_write_is_not_recreated(src, monkeypatch, capsys):
    _after_analysis(monkeypatch, src.unlink)
    status = check.main(["--fix", "m.py"])
    err = capsys.readouterr().err
    assert err.splitlines() == ["m.py: error: not fixed: the file was removed after it was read"]
    assert status == 2
    assert not src.exists() and os.listdir(src.parent) == []


def test_a_notebook_saved_between_read_and_write_is_not_overwritten(tmp_path, monkeypatch, capsys):
    from test_notebook import DEMO, save

    nb = save(tmp_path / "demo.ipynb", DEMO)
    monkeypatch.chdir(tmp_path)
    edited = nb.read_bytes().replace(b"Attention demo", b"Attention demo, edited")
    _after_analysis(monkeypatch, lambda: nb.write_bytes(edited))
    status = check.main(["--fix", "demo.ipynb"])
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        "demo.ipynb: error: not fixed: the file changed after it was read (run again)"]
    assert status == 2
    assert nb.read_bytes() == edited
    # the findings as analysed, in their cells: the MHA102 fix was not written
    assert [line.split(": ")[0] + " " + line.split(": ")[1].split()[0]
            for line in out.splitlines()] == ["demo.ipynb:cell_4:5:14 MHA102",
                                              "demo.ipynb:cell_4:6:9 MHA001"]


def test_write_bytes_compares_and_swaps(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"one")
    write_bytes(str(path), b"two", expected=b"one")
    assert path.read_bytes() == b"two"
    with pytest.raises(FileChanged, match="changed after it was read"):
        write_bytes(str(path), b"three", expected=b"one")
    assert path.read_bytes() == b"two"
    # no expected bytes (reports, cache entries): atomic, unconditional, folders made
    write_bytes(str(tmp_path / "cache" / "entry"), b"x")
    assert (tmp_path / "cache" / "entry").read_bytes() == b"x"
    assert issubclass(FileChanged, WriteError)


# -- a fix is checked before it is written -----------------------------------------------------

@pytest.mark.parametrize("broken, message", [
    ("new finding", "fix not applied: the fixed text has a new finding (MHA001)"),
    ("no parse", "fix not applied: the fixed text does not parse ("),
])
def test_a_fix_that_adds_a_finding_or_does_not_parse_is_refused(
        src, monkeypatch, capsys, broken, message):
    import flake8_mha.app.fix as fix

    real = fix.fix_text

    def bad_fix(source, findings, path="<string>", max_line_length=None):
        result = real(source, findings, path, max_line_length)
        if broken == "new finding":
            result.text += "extra = nn.MultiheadAttention(64, 8)\n"
        else:
            result.text += "def (:\n"
        return result

    monkeypatch.setattr(fix, "fix_text", bad_fix)
    status = check.main(["--fix", "m.py"])
    out, err = capsys.readouterr()
    assert len(err.splitlines()) == 1 and err.startswith(f"m.py: error: {message}")
    assert status == 2
    assert src.read_bytes() == BAD
    assert positions(out) == ALL_FOUR


def test_a_notebook_fix_that_adds_a_finding_is_refused(tmp_path, monkeypatch, capsys):
    import flake8_mha.app.fix as fix
    from test_notebook import DEMO, save

    nb = save(tmp_path / "demo.ipynb", DEMO)
    before = nb.read_bytes()
    monkeypatch.chdir(tmp_path)
    real = fix.fix_text

    def bad_fix(source, findings, path="<string>", max_line_length=None):
        result = real(source, findings, path, max_line_length)
        result.text += "extra = nn.MultiheadAttention(64, 8)\n"
        return result

    monkeypatch.setattr(fix, "fix_text", bad_fix)
    status = check.main(["--fix", "demo.ipynb"])
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        "demo.ipynb: error: fix not applied: the fixed text has a new finding (MHA001)"]
    assert status == 2
    assert nb.read_bytes() == before
    assert [line.split(": ")[1].split()[0] for line in out.splitlines()] == ["MHA102", "MHA001"]


# -- two --fix runs at once -----------------------------------------------------------------------

MEET_AFTER_ANALYSIS = """
import os, sys, time
me, go = sys.argv[1], sys.argv[2]
import flake8_mha.frontends.check as check
import flake8_mha.app.pipeline as pipeline
real = pipeline.run_files
def run_files(*args, **kwargs):
    outcomes = real(*args, **kwargs)
    open(me, "w").close()
    deadline = time.monotonic() + 240
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.01)
    return outcomes
pipeline.run_files = run_files
sys.exit(check.main(sys.argv[3:]))
"""
N_FILES = 24


def _tree(tmp_path: pathlib.Path) -> pathlib.Path:
    tree = tmp_path / "tree"
    for n in range(N_FILES):
        (tree / f"pkg{n % 3}").mkdir(parents=True, exist_ok=True)
        (tree / f"pkg{n % 3}" / f"m{n}.py").write_bytes(BAD)
    return tree


def _files_fixed(stderr: str):
    fixed, refused = 0, 0
    for line in stderr.splitlines():
        m = SUMMARY.match(line)
        if m:
            fixed += int(m.group(2))
        elif line.endswith(": error: not fixed: the file changed after it was read (run again)"):
            refused += 1
        else:
            raise AssertionError(f"unexpected line: {line}")
    return fixed, refused


def _all_fixed_and_clean(tree: pathlib.Path) -> None:
    for path in sorted(tree.rglob("*")):
        if path.is_file():
            assert path.suffix == ".py", path  # no temporary file left behind
            assert path.read_bytes() == FIXED, path


def test_two_fix_runs_that_analysed_the_same_tree_write_each_file_once(tmp_path):
    tree = _tree(tmp_path)
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", MEET_AFTER_ANALYSIS,
                               str(tmp_path / f"analysed{k}"), str(go), "--fix", "."],
                              cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for k in range(2)]
    try:
        deadline = time.monotonic() + 240
        while not all((tmp_path / f"analysed{k}").exists() for k in range(2)):
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
            time.sleep(0.02)
        go.touch()  # both have read every file; now both write at once
        results = [p.communicate(timeout=240) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    _all_fixed_and_clean(tree)
    counts = [_files_fixed(err) for _, err in results]
    for (fixed, refused), p in zip(counts, procs):
        assert fixed + refused == N_FILES  # each tried every file: it wrote it or said why not
        assert p.returncode == (2 if refused else 1)
    assert sum(fixed for fixed, _ in counts) == N_FILES  # and no file was written twice


def test_two_free_running_fix_runs_corrupt_nothing(tmp_path):
    tree = _tree(tmp_path)
    procs = [subprocess.Popen([sys.executable, "-m", "flake8_mha.frontends.cli", "check", "--fix", "-j",
                               "2", "."], cwd=tree, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [p.communicate(timeout=300) for p in procs]
    _all_fixed_and_clean(tree)
    for (_, err), p in zip(results, procs):
        fixed, refused = _files_fixed(err)
        assert p.returncode == (2 if refused else 1)
    assert sum(_files_fixed(err)[0] for _, err in results) == N_FILES  # each written once


# -- the confirm worker: killed, over its memory, over its CPU time ----------------------------

OK_008 = {"module": "MultiheadAttention", "embed_dim": 10, "num_heads": 3}
OK_001 = {"embed_dim": 64, "num_heads": 8, "layout_kind": "batch-first"}  # all facts known: CONFIRMED


def _runner(**kwargs):
    from flake8_mha.confirm.runner import Runner
    from flake8_mha.confirm.worker import TEST_FAULTS_ENV

    return Runner(env=dict(os.environ, **{TEST_FAULTS_ENV: "1"}), **kwargs)


def _findings(*evidence):
    from flake8_mha.core.findings import Finding

    return [Finding(code, n + 1, 1, "m", "faults.py", ev) for n, (code, ev) in enumerate(evidence)]


@needs_torch
def test_sigkill_of_the_worker_mid_witness_is_a_crash_and_the_others_run(tmp_path):
    from flake8_mha.confirm.runner import CRASHED
    from flake8_mha.confirm.witnesses import CONFIRMED

    flag = tmp_path / "witness-running"
    findings = _findings(("MHA008", {"_test_fault": "hang", "_test_flag": str(flag)}),
                         ("MHA008", OK_008), ("MHA001", OK_001))
    runner = _runner(timeout=120)
    killed = []

    def kill_when_running():
        deadline = time.monotonic() + 180
        while not flag.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        killed.append(runner.worker.proc.pid)
        os.kill(killed[0], signal.SIGKILL)

    killer = threading.Thread(target=kill_when_running, daemon=True)
    killer.start()
    try:
        outcomes = runner.run(findings)
    finally:
        runner.close()
    killer.join(timeout=10)
    assert killed, "the witness never started"
    first = outcomes[0]
    assert first.verdict == CRASHED  # not TIMEOUT: the kill was seen, not the 120 s budget
    assert first.reason.startswith("the worker died (killed by SIGKILL)")
    assert first.reason.endswith("; a fresh worker runs the rest")
    assert [o.verdict for o in outcomes[1:]] == [CONFIRMED, CONFIRMED]
    assert outcomes[2].measured["leak"] == pytest.approx(4.804e-01, abs=5e-4)


@needs_torch
def test_limits_cross_as_crashed_verdicts_and_the_run_goes_on():
    from flake8_mha.confirm.runner import CRASHED
    from flake8_mha.confirm.witnesses import CONFIRMED

    findings = _findings(("MHA008", {"_test_fault": "allocate"}), ("MHA008", OK_008),
                         ("MHA008", {"_test_fault": "spin"}), ("MHA008", dict(OK_008, n=2)))
    # 5 s of CPU: filling 700 MB takes well under one, but a machine short of memory
    # charges the page reclaim to the worker's system time (2 s was crossed once so)
    runner = _runner(timeout=120, memory_limit=700, cpu_limit=5)
    try:
        outcomes = runner.run(findings)
    finally:
        runner.close()
    assert [o.verdict for o in outcomes] == [CRASHED, CONFIRMED, CRASHED, CONFIRMED]
    assert outcomes[0].reason == ("memory limit (700 MB): an allocation of 64 MB more was "
                                  "refused; a fresh worker runs the rest")
    # SIGXCPU: the CPU limit ended the spin, long before the 120 s timeout
    assert outcomes[2].reason.startswith("cpu limit (5 s of CPU time): the worker died "
                                         "(killed by SIGXCPU)")


@needs_torch
def test_a_memory_limit_too_small_for_torch_says_so():
    from flake8_mha.confirm.runner import WorkerFailed

    runner = _runner(memory_limit=100)
    with pytest.raises(WorkerFailed, match=r"memory limit \(100 MB"):
        try:
            runner.ready()
        finally:
            runner.close()


@needs_torch
def test_confirm_takes_the_limits_and_writes_its_json_atomically(tmp_path):
    (tmp_path / "m.py").write_bytes(BAD)
    (tmp_path / "r.json").write_text("old")
    proc = cli("confirm", "--no-progress", "--select", "MHA001", "--memory-limit", "1024",
               "--cpu-limit", "30", "--json", "r.json", "m.py", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    assert (doc["settings"]["memory_limit_mb"], doc["settings"]["cpu_limit_s"]) == (1024, 30)
    # m.py does not say its data's layout: the damage rests on the assumed (N, L, E)
    assert [r["verdict"] for r in doc["results"]] == ["CONFIRMED*"]
    assert leftovers(tmp_path) == []


@needs_torch
def test_confirm_json_on_a_full_disk_is_one_line_and_keeps_the_old_report(
        tmp_path, monkeypatch, capsys):
    from flake8_mha.frontends.confirm_cli import main

    (tmp_path / "good.py").write_text("x = 1\n")
    (tmp_path / "r.json").write_text("old")
    monkeypatch.chdir(tmp_path)
    _inject(monkeypatch, "write", errno.ENOSPC)
    status = main(["--no-progress", "--json", "r.json", "good.py"])
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "flake8-mha confirm: error: cannot write r.json: No space left on device"]
    assert status == 2
    assert (tmp_path / "r.json").read_text() == "old"


@pytest.mark.parametrize("value", ["-5", "x"])
def test_a_bad_limit_is_a_usage_error(tmp_path, value):
    proc = cli("confirm", "--memory-limit", value, "m.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1].startswith(
        "flake8-mha confirm: error: argument --memory-limit:")


def test_the_docs_state_the_default_limits():
    from flake8_mha.confirm.runner import DEFAULT_CPU_LIMIT, DEFAULT_MEMORY_LIMIT_MB

    doc = (ROOT / "docs" / "confirm.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(): line for line in doc.splitlines()
            if line.startswith("| `--")}
    assert f"(default {DEFAULT_MEMORY_LIMIT_MB:g})" in rows["`--memory-limit MB`"]
    assert f"(default {DEFAULT_CPU_LIMIT:g})" in rows["`--cpu-limit SECONDS`"]
    assert "## Limits and faults" in doc
    assert "## What is guaranteed when things fail" in \
        (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")


# -- the sanitizer restores what it patched ------------------------------------------------------

def _float_01():
    import torch

    return torch.tensor([[0.0, 0.0, 1.0], [0.0, 1.0, 1.0]])  # 0/1 float: MHA004


def _patched():
    import torch
    import torch.nn.functional as F
    from flake8_mha.sanitizer import MODULE_CLASSES

    return {name: getattr(torch.nn, name).forward for name in MODULE_CLASSES} | {
        "sdpa": F.scaled_dot_product_attention}


@needs_torch
def test_the_sanitizer_restores_everything_when_a_test_raises_inside_a_wrapped_call():
    import torch
    from flake8_mha.sanitizer import SanitizerError, active, sanitize

    before = _patched()
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    x = torch.randn(2, 3, 8)
    float_01 = _float_01()
    with pytest.raises((RuntimeError, AssertionError)) as raised:
        with sanitize():
            mha(x, x, torch.randn(2, 4, 5))  # torch raises inside the wrapped forward
    assert not isinstance(raised.value, SanitizerError)
    assert _patched() == before and not active()
    with pytest.raises(SanitizerError, match="MHA004"):
        with sanitize(mode="raise"):  # the depth counter came back: this call is checked
            mha(x, x, x, key_padding_mask=float_01)
    assert _patched() == before and not active()


@needs_torch
def test_the_sanitizer_restores_everything_after_threads_that_raise():
    import torch
    from flake8_mha.sanitizer import SanitizerError, active, sanitize

    before = _patched()
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    x = torch.randn(2, 3, 8)
    float_01 = _float_01()
    barrier = threading.Barrier(4)
    seen, errors = [], []

    def work(k):
        try:
            barrier.wait(timeout=30)
            for _ in range(10):
                try:
                    with sanitize(mode="raise"):
                        if k % 2:
                            mha(x, x, torch.randn(2, 4, 5))
                        else:
                            mha(x, x, x, key_padding_mask=float_01)
                except SanitizerError as exc:
                    seen.append(exc.report.code)
                except (RuntimeError, AssertionError):
                    seen.append("torch")
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    # (a session reports what any thread observes: a raising session may raise in another
    # thread, so not every one of the 40 calls raises; all that matters here is the restore)
    assert sorted(set(seen)) == ["MHA004", "torch"]
    assert _patched() == before and not active()


@needs_torch
def test_a_sanitizer_that_fails_to_install_leaves_nothing_patched(monkeypatch):
    import flake8_mha.sanitizer as sanitizer

    before = _patched()
    monkeypatch.setattr(sanitizer, "MODULE_CLASSES",
                        sanitizer.MODULE_CLASSES + ("NoSuchAttentionModule",))
    with pytest.raises(AttributeError):
        with sanitizer.sanitize():
            pass  # pragma: no cover - never entered
    monkeypatch.undo()
    assert _patched() == before and not sanitizer.active()
