"""Runs the witnesses of a confirm run in one worker subprocess.

The parent never imports torch: it starts ``python -m
flake8_mha.confirm.worker``, sends one request per finding and waits for the
reply under a per-witness time budget. A witness that raises is reported as
ERROR and the worker goes on; one that hangs past its budget (TIMEOUT) or
kills the worker (CRASHED) costs that worker: it is stopped and a fresh one
is started for the remaining witnesses.

The worker runs under limits of its own (``--memory-limit``, ``--cpu-limit``;
see worker.py): a witness that crosses one is CRASHED with the reason
``memory limit ...`` or ``cpu limit ...``, and the run goes on in a fresh
worker.
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, IO, List, Optional

from ..core.findings import Finding
from .witnesses import (
    CONFIRMED,
    CONFIRMED_ASSUMED,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    SKIPPED,
    WITNESSES,
)

ERROR = "ERROR"
TIMEOUT = "TIMEOUT"
CRASHED = "CRASHED"
VERDICTS = (
    CONFIRMED,
    CONFIRMED_ASSUMED,
    NOT_REPRODUCED,
    INCONCLUSIVE,
    SKIPPED,
    ERROR,
    TIMEOUT,
    CRASHED,
)
# What --fail-on counts (docs/confirm.md, "CI gating").
FAIL_ON = {"confirmed": (CONFIRMED, CONFIRMED_ASSUMED), "proven": (CONFIRMED,), "none": ()}

DEFAULT_TIMEOUT = 30.0  # seconds per witness
DEFAULT_BUDGET = 300.0  # seconds for all witnesses of a run
# The worker's own limits. Memory: its data segment (RLIMIT_DATA), torch's
# import included (about 220 MB; the witnesses add about 10 MB at the scaled
# sizes). CPU: seconds of CPU time per witness (RLIMIT_CPU), a backstop that
# still holds when the parent is gone and cannot enforce --timeout.
DEFAULT_MEMORY_LIMIT_MB = 2048.0
DEFAULT_CPU_LIMIT = 60.0
# The largest value --timeout, --budget, --memory-limit and --cpu-limit take
# (a petabyte, thirty years): beyond it the system's own types overflow
# (RLIMIT_DATA holds 2**63 bytes, a queue's timeout a time_t).
MAX_LIMIT = 1e9
STARTUP_TIMEOUT = 120.0  # seconds for a worker to import torch and say ready
INSTALL_HINT = "pip install 'flake8-mha[confirm]'"
_BUDGET_REASON = "time budget used up (raise it with --budget)"

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class TorchUnavailable(Exception):
    """The worker could not import torch."""


class WorkerFailed(Exception):
    """The worker died, or sent nothing in time (``timed_out``)."""

    def __init__(self, message: str, timed_out: bool = False):
        super().__init__(message)
        self.timed_out = timed_out


@dataclass
class Outcome:
    """The confirmation of one finding."""

    finding: Finding
    verdict: str
    witness: str = ""
    damage: str = ""
    measured: Dict[str, Any] = field(default_factory=dict)
    assumed: List[str] = field(default_factory=list)
    reason: str = ""
    seconds: float = 0.0
    warnings: List[str] = field(default_factory=list)
    depends_on: List[str] = field(default_factory=list)  # the assumptions behind CONFIRMED*


def _signal_name(returncode: Optional[int]) -> str:
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


class Worker:
    """One ``python -m flake8_mha.confirm.worker`` process."""

    def __init__(
        self,
        env: Optional[Dict[str, str]] = None,
        memory_limit: Optional[float] = DEFAULT_MEMORY_LIMIT_MB,
        cpu_limit: Optional[float] = DEFAULT_CPU_LIMIT,
    ):
        run_env = dict(os.environ if env is None else env)
        self.memory_limit, self.cpu_limit = memory_limit, cpu_limit
        # The worker must find this package however it was found here, and
        # must not see the user's directory first on sys.path: its working
        # directory is the directory that holds the package.
        run_env["PYTHONPATH"] = os.pathsep.join(
            p for p in (_PACKAGE_ROOT, run_env.get("PYTHONPATH", "")) if p
        )
        self._stderr: IO[bytes] = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "flake8_mha.confirm.worker",
                "--memory-limit",
                f"{memory_limit or 0:g}",
                "--cpu-limit",
                f"{cpu_limit or 0:g}",
                # the worker ends when this process does (worker.watch_parent)
                "--parent",
                str(os.getpid()),
                "--parent-signal",
                "1" if threading.current_thread() is threading.main_thread() else "0",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=_PACKAGE_ROOT,
            env=run_env,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self._lines: "queue.Queue[Optional[str]]" = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.info: Dict[str, Any] = {}
        self._next_id = 0

    def _read(self) -> None:
        assert self.proc.stdout is not None
        try:
            for line in self.proc.stdout:
                self._lines.put(line)
        except (OSError, ValueError):
            pass
        self._lines.put(None)  # end of file: the worker is gone

    def _receive(self, timeout: float) -> Dict[str, Any]:
        try:
            line = self._lines.get(timeout=max(0.0, timeout))
        except queue.Empty:
            raise WorkerFailed(f"no answer within {timeout:g} s", timed_out=True) from None
        if line is None:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            tail = self.stderr_tail()
            raise WorkerFailed(
                f"the worker died ({_signal_name(self.proc.returncode)})"
                + (f": {tail}" if tail else "")
            )
        return json.loads(line)

    def handshake(self, timeout: float = STARTUP_TIMEOUT) -> Dict[str, Any]:
        if self.info:
            return self.info
        try:
            hello = self._receive(timeout)
        except WorkerFailed as exc:
            limit = self.limit_crossed()  # before stop() closes its stderr
            self.stop()
            raise WorkerFailed(
                f"the worker did not start: {limit + ': ' if limit else ''}{exc}"
            ) from None
        if not hello.get("ready"):
            self.stop()
            if hello.get("error") == "memory-limit":
                raise WorkerFailed(
                    f"the worker could not import torch within its memory limit "
                    f"({_amount(self.memory_limit, 'MB')}; raise it with "
                    "--memory-limit)"
                )
            raise TorchUnavailable(hello.get("detail") or "torch could not be imported")
        self.info = hello
        return hello

    def request(self, code: str, evidence: Dict[str, Any], timeout: float) -> Dict[str, Any]:
        self._next_id += 1
        message = json.dumps({"id": self._next_id, "code": code, "evidence": evidence})
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(message + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the reader reports the death with its exit status
        while True:
            reply = self._receive(timeout)
            if reply.get("id") == self._next_id:
                return reply

    def stderr_tail(self) -> str:
        """The last line the worker wrote to stderr (Python's fault reports)."""
        try:
            self._stderr.seek(0)
            text = self._stderr.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""
        lines = [ln.strip() for ln in text.splitlines()]
        lines = [ln for ln in lines if ln and not ln.startswith("USDT:")]
        return lines[-1][:300] if lines else ""

    def stop(self) -> None:
        """Close stdin and wait briefly; kill this worker (by its own handle) if needed."""
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout=5)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        self._stderr.close()

    def limit_crossed(self) -> str:
        """Which limit ended this (dead) worker: "memory limit ...", "cpu limit ..." or ""."""
        if self.proc.returncode == -getattr(signal, "SIGXCPU", -1):
            return f"cpu limit ({_amount(self.cpu_limit, 's of CPU time')})"
        tail = self.stderr_tail()
        # Python, C++ (std::bad_alloc), torch's allocator, OpenBLAS's buffers at import
        markers = (
            "MemoryError",
            "bad_alloc",
            "can't allocate memory",
            "Cannot allocate memory",
            "Memory allocation",
        )
        if any(t in tail for t in markers):
            return f"memory limit ({_amount(self.memory_limit, 'MB')})"
        return ""

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.stop()


def _amount(value: Optional[float], unit: str) -> str:
    return f"{value:g} {unit}" if value else "none set"


def _refused(error: str) -> str:
    """torch's long allocator message, said short."""
    m = re.search(r"tried to allocate (\d+) bytes", error)
    if m:
        return f"an allocation of {int(m.group(1)) / 2**20:.0f} MB more was refused"
    return error.split("\n")[0][:200] or "an allocation was refused"


def _key(finding: Finding) -> str:
    return finding.code + json.dumps(finding.evidence, sort_keys=True, default=str)


# progress(done, total, finding about to run or None when all are done)
Progress = Callable[[int, int, Optional[Finding]], None]


class Runner:
    """Confirms findings one by one in a worker, restarting it after a fault."""

    def __init__(
        self,
        timeout: float = DEFAULT_TIMEOUT,
        budget: Optional[float] = DEFAULT_BUDGET,
        progress: Optional[Progress] = None,
        env: Optional[Dict[str, str]] = None,
        memory_limit: Optional[float] = DEFAULT_MEMORY_LIMIT_MB,
        cpu_limit: Optional[float] = DEFAULT_CPU_LIMIT,
    ):
        self.timeout = timeout
        self.memory_limit, self.cpu_limit = memory_limit, cpu_limit
        self.budget = budget
        self.progress = progress
        self.env = env
        self.worker: Optional[Worker] = None
        self.torch_version: Optional[str] = None

    def start(self) -> None:
        """Start a worker now (torch imports while the caller lints)."""
        if self.worker is None:
            self.worker = Worker(self.env, self.memory_limit, self.cpu_limit)

    def ready(self) -> Worker:
        """The running worker, started and handshaken; raises TorchUnavailable
        or WorkerFailed."""
        self.start()
        assert self.worker is not None
        try:
            info = self.worker.handshake()
        except (TorchUnavailable, WorkerFailed):
            self.worker = None
            raise
        self.torch_version = info.get("torch")
        return self.worker

    def close(self) -> None:
        if self.worker is not None:
            self.worker.stop()
            self.worker = None

    def run(self, findings: List[Finding]) -> List[Outcome]:
        outcomes: List[Outcome] = []
        done: Dict[str, Outcome] = {}
        start = time.monotonic()
        for index, finding in enumerate(findings):
            if self.progress:
                self.progress(index, len(findings), finding)
            key = _key(finding)
            if key in done:  # the same witness with the same evidence: share its outcome
                outcomes.append(dataclasses.replace(done[key], finding=finding, seconds=0.0))
                continue
            outcome = self._confirm(finding, start)
            if outcome.reason != _BUDGET_REASON:
                done[key] = outcome
            outcomes.append(outcome)
        if self.progress:
            self.progress(len(findings), len(findings), None)
        return outcomes

    def _confirm(self, finding: Finding, start: float) -> Outcome:
        if finding.code not in WITNESSES:
            return Outcome(finding, SKIPPED, reason=f"no witness for {finding.code}")
        if self.budget is not None and time.monotonic() - start >= self.budget:
            return Outcome(finding, SKIPPED, reason=_BUDGET_REASON)
        try:
            worker = self.ready()
        except TorchUnavailable as exc:
            return Outcome(finding, SKIPPED, reason=f"torch is not available: {exc}")
        except WorkerFailed as exc:
            return Outcome(finding, SKIPPED, reason=str(exc))
        try:
            reply = worker.request(finding.code, finding.evidence, self.timeout)
        except WorkerFailed as exc:
            limit = "" if exc.timed_out else worker.limit_crossed()
            worker.kill()
            self.worker = None
            verdict = TIMEOUT if exc.timed_out else CRASHED
            return Outcome(
                finding,
                verdict,
                reason=(f"{limit}: " if limit else "") + f"{exc}; a fresh worker runs the rest",
                seconds=self.timeout if exc.timed_out else 0.0,
            )
        if reply.get("limit") == "memory":  # the allocator said no: replace the worker
            worker.kill()
            self.worker = None
            return Outcome(
                finding,
                CRASHED,
                reason=(
                    f"memory limit ({_amount(worker.memory_limit, 'MB')}): "
                    f"{_refused(reply.get('error', ''))}; "
                    "a fresh worker runs the rest"
                ),
                seconds=reply.get("seconds", 0.0),
            )
        if not reply.get("ok"):
            return Outcome(
                finding,
                ERROR,
                reason=f"the witness raised {reply.get('error')}",
                seconds=reply.get("seconds", 0.0),
                warnings=reply.get("warnings", []),
            )
        result = reply["result"]
        return Outcome(
            finding,
            result.get("verdict", ERROR),
            result.get("witness", ""),
            result.get("damage", ""),
            result.get("measured", {}),
            result.get("assumed", []),
            result.get("reason", ""),
            reply.get("seconds", 0.0),
            reply.get("warnings", []),
            result.get("depends_on", []),
        )
