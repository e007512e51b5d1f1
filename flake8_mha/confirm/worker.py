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

Test hook: when the environment has ``FLAKE8_MHA_CONFIRM_TEST_FAULTS=1``, a
request whose evidence has ``"_test_fault"`` set to ``"raise"``, ``"hang"``,
``"exit"`` or ``"segfault"`` runs that fault instead of the witness, so tests
can check that faults are reported and the run goes on. Without the variable
the key is ignored.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time
import traceback
import warnings
from typing import Any, Dict, Optional, TextIO

PROTOCOL = 1
# One thread: the witnesses' tensors are small, and on a busy 2-core machine a
# second torch thread made timing ratios swing from 0.02x to 45x (1 thread:
# within about 0.6-2x over the same runs).
THREADS = 1
TEST_FAULTS_ENV = "FLAKE8_MHA_CONFIRM_TEST_FAULTS"
FAULT_KEY = "_test_fault"
EXIT_TORCH_UNAVAILABLE = 3
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
    raise ValueError(f"unknown test fault {kind!r}")


def _reset(torch: Any) -> None:
    """The same starting state for every witness."""
    torch.manual_seed(0)
    torch.set_grad_enabled(True)
    torch.backends.mha.set_fastpath_enabled(True)


def handle(request: Dict[str, Any], torch: Any) -> Dict[str, Any]:
    from .witnesses import WITNESSES

    reply: Dict[str, Any] = {"id": request.get("id")}
    code = request.get("code")
    evidence = request.get("evidence") or {}
    fault: Optional[str] = None
    if os.environ.get(TEST_FAULTS_ENV) == "1":
        fault = evidence.get(FAULT_KEY)
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if fault:
                result = _fault(str(fault))
            elif code not in WITNESSES:
                raise KeyError(f"no witness for {code}")
            else:
                _reset(torch)
                result = WITNESSES[code].run(evidence)
            reply.update(ok=True, result=result)
        except Exception as exc:  # reported as verdict ERROR; the worker goes on
            reply.update(ok=False, error=_exc_text(exc),
                         traceback=traceback.format_exc(limit=8))
    reply["seconds"] = time.perf_counter() - start
    seen = []
    for item in caught:
        text = f"{item.category.__name__}: {str(item.message).strip().splitlines()[0]}"
        if text not in seen:
            seen.append(text)
    reply["warnings"] = seen[:MAX_WARNINGS]
    return reply


def main() -> int:
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints go to stderr
    sys.stdout = sys.stderr
    try:
        import torch
    except Exception as exc:  # ImportError, or an install that fails to load
        _send(channel, {"ready": False, "error": "torch-unavailable", "detail": _exc_text(exc)})
        return EXIT_TORCH_UNAVAILABLE
    threads = max(1, min(THREADS, os.cpu_count() or 1))
    torch.set_num_threads(threads)
    _send(channel, {"ready": True, "torch": torch.__version__, "threads": threads,
                    "protocol": PROTOCOL, "pid": os.getpid()})
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError as exc:
            _send(channel, {"id": None, "ok": False, "error": f"bad request: {exc}"})
            continue
        _send(channel, handle(request, torch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
