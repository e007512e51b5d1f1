"""The witness worker: ``python -m flake8_mha.confirm.worker``.

One process runs every witness of a confirm run, so torch is imported once.
It speaks JSON lines:

* first line out, the handshake: ``{"ready": true, "torch": "2.13.0+cpu",
  "threads": 2, "protocol": 1}``, or ``{"ready": false, "error":
  "torch-unavailable", "detail": "ModuleNotFoundError: No module named
  'torch'"}`` after which the worker exits with status 3;
* each request in, one line: ``{"id": 7, "code": "MHA001", "evidence": {...}}``;
* each reply out, one line: ``{"id": 7, "ok": true, "result": {...},
  "seconds": 0.08, "warnings": [...]}`` or ``{"id": 7, "ok": false, "error":
  "ValueError: ...", "traceback": "..."}`` when the witness itself raised.

The worker exits when its stdin closes. Anything a witness or torch prints
goes to stderr: stdout carries the protocol only.

The worker never imports the user's code: a request holds only a rule code
and the evidence the analyzer extracted.

The worker does not outlive the runner (``--parent PID``): when the runner
is killed, the worker ends within a second, mid-witness or not (exit 4, or
SIGKILL from the kernel on Linux).

Limits (``--memory-limit MB``, ``--cpu-limit SECONDS`` on the command line,
set by the runner): the worker caps its own data segment with
``RLIMIT_DATA`` (what torch's CPU allocator and Python allocate; measured on
torch 2.13: about 220 MB after ``import torch``) and, before each witness,
sets ``RLIMIT_CPU`` to the CPU time used so far plus the per-witness limit.
An allocation over the cap fails inside the witness: the reply then carries
``"limit": "memory"`` and the runner replaces the worker. Over the CPU limit
the kernel sends SIGXCPU, which ends the worker; the runner reads that from
its exit status. ``RLIMIT_AS`` is not used: OpenBLAS reserves address space
per thread at import (about 640 MB of address space for 220 MB of data on a
2-core machine), so an address-space cap breaks ``import torch`` on larger
machines long before any witness allocates.

Test hook: when the environment has ``FLAKE8_MHA_CONFIRM_TEST_FAULTS=1``, a
request whose evidence has ``"_test_fault"`` set to ``"raise"``, ``"hang"``,
``"exit"``, ``"segfault"``, ``"allocate"`` (grow memory until an allocation
fails) or ``"spin"`` (burn CPU forever) runs that fault instead of the
witness, so tests can check that faults are reported and the run goes on;
``"_test_flag": PATH`` makes it create PATH first, so a test knows the witness
is running. Without the variable the keys are ignored.
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import time
import traceback
import warnings
from typing import Any, Dict, Optional, Sequence, TextIO, Tuple

PROTOCOL = 1
# One thread: the witnesses' tensors are small, and on a busy 2-core machine a
# second torch thread made timing ratios swing from 0.02x to 45x (1 thread:
# within about 0.6-2x over the same runs).
THREADS = 1
TEST_FAULTS_ENV = "FLAKE8_MHA_CONFIRM_TEST_FAULTS"
FAULT_KEY = "_test_fault"
FLAG_KEY = "_test_flag"
EXIT_TORCH_UNAVAILABLE = 3
EXIT_PARENT_GONE = 4  # the runner died: nobody reads the replies
MAX_WARNINGS = 5


def _send(channel: TextIO, message: Dict[str, Any]) -> None:
    channel.write(json.dumps(message) + "\n")
    channel.flush()


def _exc_text(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")


def _fault(kind: str) -> Dict[str, Any]:
    """Test-only witnesses that misbehave on purpose."""
    if kind == "raise":
        raise RuntimeError("injected fault: the witness raised")
    if kind == "hang":
        while True:
            time.sleep(1.0)
    if kind == "exit":
        os._exit(17)
    if kind == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
        time.sleep(5.0)  # the signal is delivered before this returns
    if kind == "allocate":  # 64 MB at a time, touched, until the allocator says no
        import torch

        held = []
        while True:
            held.append(torch.ones(16 * 1024 * 1024))
    if kind == "spin":
        n = 0
        while True:
            n += 1
    raise ValueError(f"unknown test fault {kind!r}")


def _reset(torch: Any) -> None:
    """The same starting state for every witness."""
    torch.manual_seed(0)
    torch.set_grad_enabled(True)
    torch.backends.mha.set_fastpath_enabled(True)


def handle(
    request: Dict[str, Any], torch: Any, cpu_limit: Optional[float] = None
) -> Dict[str, Any]:
    from .witnesses import WITNESSES

    reply: Dict[str, Any] = {"id": request.get("id")}
    code = request.get("code")
    evidence = request.get("evidence") or {}
    fault: Optional[str] = None
    if os.environ.get(TEST_FAULTS_ENV) == "1":
        fault = evidence.get(FAULT_KEY)
        if evidence.get(FLAG_KEY):
            open(str(evidence[FLAG_KEY]), "w").close()
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            arm_cpu_limit(cpu_limit)
            if fault:
                result = _fault(str(fault))
            elif code not in WITNESSES:
                raise KeyError(f"no witness for {code}")
            else:
                _reset(torch)
                result = WITNESSES[code].run(evidence)
            reply.update(ok=True, result=result)
        except Exception as exc:  # reported as verdict ERROR; the worker goes on
            reply.update(ok=False, error=_exc_text(exc), traceback=traceback.format_exc(limit=8))
            if out_of_memory(exc):  # the runner replaces this worker
                reply["limit"] = "memory"
        finally:
            arm_cpu_limit(None)
    reply["seconds"] = time.perf_counter() - start
    seen = []
    for item in caught:
        text = f"{item.category.__name__}: {str(item.message).strip().splitlines()[0]}"
        if text not in seen:
            seen.append(text)
    reply["warnings"] = seen[:MAX_WARNINGS]
    return reply


# -- limits -------------------------------------------------------------------


# What the kernel holds, far above any real limit: rlim_t is 2**63 - 1 bytes;
# CPU seconds are kept in nanoseconds (2**62 s would wrap to a limit already
# passed).  The command line refuses more than runner.MAX_LIMIT up front.
_MAX_MB = float(2**42)
_MAX_SECONDS = 1e9


def set_memory_limit(megabytes: Optional[float]) -> None:
    """Cap the data segment (soft and hard) at ``megabytes``."""
    if not megabytes:
        return
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX: no limit
        return

    limit = int(min(megabytes, _MAX_MB) * 1024 * 1024)  # no OverflowError from setrlimit
    hard = resource.getrlimit(resource.RLIMIT_DATA)[1]
    if hard != resource.RLIM_INFINITY:  # a lower cap set outside (ulimit -d) stays
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def arm_cpu_limit(seconds: Optional[float]) -> None:
    """SIGXCPU once this process has used ``seconds`` more CPU time (None: no limit)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    soft = hard  # disarmed: up to a cap set outside (ulimit -t), if any
    if seconds:
        used = resource.getrusage(resource.RUSAGE_SELF)
        soft = int(math.ceil(used.ru_utime + used.ru_stime + min(seconds, _MAX_SECONDS)))
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def out_of_memory(exc: BaseException) -> bool:
    """An allocation refused (over the memory limit), from Python or torch's allocator."""
    text = str(exc)
    return (
        isinstance(exc, MemoryError)
        or "can't allocate memory" in text
        or "Cannot allocate memory" in text
    )


def _limits(argv: Sequence[str]) -> Tuple[Optional[float], Optional[float]]:
    """``--memory-limit MB --cpu-limit SECONDS`` (0: none), as the runner passes them."""
    values: Dict[str, Optional[float]] = {"--memory-limit": None, "--cpu-limit": None}
    for name, value in zip(argv[::2], argv[1::2]):
        if name in values:
            values[name] = float(value) or None
    return values["--memory-limit"], values["--cpu-limit"]


def _parent(argv: Sequence[str]) -> Tuple[Optional[int], bool]:
    """``--parent PID`` and ``--parent-signal 1`` (the runner's thread is the
    main thread, so the kernel may tie this process's life to it)."""
    pid, tie = None, False
    for name, value in zip(argv[::2], argv[1::2]):
        if name == "--parent" and value.isdigit():
            pid = int(value)
        elif name == "--parent-signal":
            tie = value == "1"
    return pid, tie


WATCH_INTERVAL = 0.2  # seconds between two looks at the parent


def watch_parent(pid: Optional[int], tie: bool) -> None:
    """End this worker within a second of its parent's death (SIGKILL or
    SIGTERM of ``confirm`` leaves no witness running on).  On Linux, when
    ``tie``, the kernel sends SIGKILL at once (``PR_SET_PDEATHSIG``; only
    asked for when the runner's thread is its main thread, since the signal
    follows the thread that started the worker); everywhere, a thread looks
    at the parent's id every ``WATCH_INTERVAL`` seconds, and exits the
    process when the worker has been handed to another parent."""
    if pid is None:
        return
    if tie and sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1: PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # pragma: no cover - no libc to ask
            pass
    if os.getppid() != pid:  # gone before the signal was asked for
        os._exit(EXIT_PARENT_GONE)

    def watch() -> None:
        while True:
            time.sleep(WATCH_INTERVAL)
            if os.getppid() != pid:
                os._exit(EXIT_PARENT_GONE)

    import threading

    threading.Thread(target=watch, name="flake8-mha-parent-watch", daemon=True).start()


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    watch_parent(*_parent(args))
    memory_limit, cpu_limit = _limits(args)
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints go to stderr
    sys.stdout = sys.stderr
    set_memory_limit(memory_limit)  # torch's import counts too (about 220 MB)
    try:
        import torch
    except Exception as exc:  # ImportError, or an install that fails to load
        error = "memory-limit" if out_of_memory(exc) else "torch-unavailable"
        _send(channel, {"ready": False, "error": error, "detail": _exc_text(exc)})
        return EXIT_TORCH_UNAVAILABLE
    threads = max(1, min(THREADS, os.cpu_count() or 1))
    torch.set_num_threads(threads)
    _send(
        channel,
        {
            "ready": True,
            "torch": torch.__version__,
            "threads": threads,
            "protocol": PROTOCOL,
            "pid": os.getpid(),
            "memory_limit_mb": memory_limit,
            "cpu_limit_s": cpu_limit,
        },
    )
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError as exc:
            _send(channel, {"id": None, "ok": False, "error": f"bad request: {exc}"})
            continue
        _send(channel, handle(request, torch, cpu_limit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
