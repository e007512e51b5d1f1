"""Do the timing witnesses give the same verdict run after run on a loaded machine?

    python bench/confirm_stability.py [--runs 5] [--load 2] [FIXTURE ...]

Starts ``--load`` busy processes of its own (pure-Python spin loops, one per
core of a two-core machine by default), then confirms every finding of the
timing fixtures (MHA101, MHA102, MHA901 and the verdict corpus) ``--runs``
times, each run in a fresh worker exactly as ``flake8-mha confirm`` does. It
prints, per finding, the verdict and the ratio's median [quartiles] of every
run, and exits 0 when every finding got the same verdict in every run, 1
otherwise. The load processes are stopped (by their own handles) at the end.

This is a benchmark, not a unit test: it takes minutes, and what it shows
depends on the machine. Results: bench/RESULTS.md, "Confirm: stable timing
verdicts under load".
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from typing import Dict, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

DEFAULT_FIXTURES = (
    "fixtures/MHA101_odd_num_heads.py",
    "fixtures/MHA102_weights_discarded.py",
    "fixtures/MHA901_fastpath_blocker.py",
    "fixtures/verdicts/MHA101_fastpath_already_off.py",
    "fixtures/verdicts/MHA901_fastpath_already_off.py",
)
TIMING = ("MHA101", "MHA102", "MHA901")


def _spin(stop: "multiprocessing.synchronize.Event") -> None:  # type: ignore[name-defined]
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x = (x * 1103515245 + 12345) & 0x7FFFFFFF


def _ratio(measured: Dict[str, object]) -> str:
    for key in ("ratio", "ratio_default_call"):
        if key in measured:
            low = measured.get(key.replace("ratio", "ratio_low"))
            high = measured.get(key.replace("ratio", "ratio_high"))
            return f"{measured[key]:.2f}x [{low:.2f}-{high:.2f}]"
    return "-"


def main(argv: List[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fixtures", nargs="*", default=list(DEFAULT_FIXTURES))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--load", type=int, default=2, help="busy processes to start (0: none)")
    args = parser.parse_args(argv)

    from flake8_mha.confirm.runner import Runner
    from flake8_mha.lint.engine import check_paths

    findings = []
    for path in args.fixtures:
        findings += [f for f in check_paths([os.path.join(ROOT, path)], select=list(TIMING))
                     if f.code in TIMING]
    stop = multiprocessing.Event()
    load = [multiprocessing.Process(target=_spin, args=(stop,), daemon=True)
            for _ in range(args.load)]
    for proc in load:
        proc.start()
    print(f"cpus: {os.cpu_count()}, background load: {args.load} busy processes, "
          f"runs: {args.runs}, findings: {len(findings)}")
    rows: Dict[Tuple[str, int, str], List[Tuple[str, str]]] = {}
    try:
        for run in range(args.runs):
            started = time.monotonic()
            runner = Runner(timeout=120, budget=None)
            try:
                runner.ready()
                outcomes = runner.run(findings)
            finally:
                runner.close()
            for o in outcomes:
                key = (os.path.relpath(o.finding.path, ROOT), o.finding.line, o.finding.code)
                words = o.measured.get("time_default_call")
                rows.setdefault(key, []).append(
                    (o.verdict, _ratio(o.measured) + (f" {words}" if words else "")))
            print(f"run {run + 1}: {time.monotonic() - started:.1f} s, load average "
                  f"{os.getloadavg()[0]:.1f}")
    finally:
        stop.set()
        for proc in load:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
                proc.join()
    same = True
    for (path, line, code), got in rows.items():
        verdicts = {v for v, _ in got}
        same &= len(verdicts) == 1
        flag = "same" if len(verdicts) == 1 else "DIFFER"
        print(f"{path}:{line} {code}: {flag}: " + "; ".join(f"{v} {r}" for v, r in got))
    print("every finding got the same verdict in every run" if same
          else "verdicts differ between runs")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
