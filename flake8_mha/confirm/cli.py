"""``flake8-mha confirm PATH...``: lint, then confirm every finding at runtime."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import IO, List, Optional, Sequence

from ..findings import Finding
from .runner import (
    DEFAULT_BUDGET, DEFAULT_CPU_LIMIT, DEFAULT_MEMORY_LIMIT_MB, DEFAULT_TIMEOUT, INSTALL_HINT,
    Runner, TorchUnavailable, WorkerFailed,
)
from .witnesses import CONFIRMED

PROG = "flake8-mha confirm"
EXIT_CLEAN, EXIT_CONFIRMED, EXIT_USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=("Lint PATHs with flake8-mha, then confirm every finding by running a small "
                     "torch experiment (a witness) built from the finding's evidence. The "
                     "user's code is never imported or executed."),
        epilog=("Exit status: 0 when nothing is confirmed (or --fail-on none), 1 when a "
                "finding is confirmed, 2 on usage errors or when torch is missing."),
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or directories to lint")
    parser.add_argument("--select", action="append", default=[], metavar="CODES",
                        help="comma-separated code prefixes to report (e.g. MHA0,MHA901)")
    parser.add_argument("--ignore", action="append", default=[], metavar="CODES",
                        help="comma-separated code prefixes to leave out")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    parser.add_argument("--fail-on", choices=("confirmed", "none"), default="confirmed",
                        help="exit 1 when a finding is confirmed (default), or never")
    parser.add_argument("--timeout", type=_positive, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"time budget of one witness (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--budget", type=_positive, default=DEFAULT_BUDGET, metavar="SECONDS",
                        help=("time budget of all witnesses; later findings are SKIPPED "
                              f"(default {DEFAULT_BUDGET:g})"))
    parser.add_argument("--memory-limit", type=_limit, default=DEFAULT_MEMORY_LIMIT_MB,
                        metavar="MB", help=("memory of the witness worker, torch included; a "
                                            "witness over it is CRASHED (default "
                                            f"{DEFAULT_MEMORY_LIMIT_MB:g}; 0: none)"))
    parser.add_argument("--cpu-limit", type=_limit, default=DEFAULT_CPU_LIMIT, metavar="SECONDS",
                        help=("CPU time of one witness; over it the witness is CRASHED "
                              f"(default {DEFAULT_CPU_LIMIT:g}; 0: none)"))
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress indicator on stderr (it shows only on a terminal)")
    return parser


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0: {text!r}")
    return value


def _limit(text: str) -> float:
    """A limit: more than 0, or 0 for none."""
    try:
        if float(text) == 0:
            return 0.0
    except ValueError:
        pass  # _positive says what is wrong
    value = _positive(text)
    if value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be finite (0 for no limit): {text!r}")
    return value


def _codes(values: Sequence[str]) -> Optional[List[str]]:
    codes = [c.strip().upper() for v in values for c in v.split(",") if c.strip()]
    return codes or None


def _keep(finding: Finding, select: Optional[List[str]], ignore: Optional[List[str]]) -> bool:
    if select and not any(finding.code.startswith(s) for s in select):
        return False
    return not (ignore and any(finding.code.startswith(i) for i in ignore))


class _Progress:
    """``[3/12] MHA101 model.py:14:5`` rewritten in place on a terminal."""

    def __init__(self, stream: IO[str]):
        self.stream = stream

    def __call__(self, done: int, total: int, finding: Optional[Finding]) -> None:
        if finding is None:
            self.stream.write("\r\033[K")
        else:
            where = f"{finding.path}:{finding.line}:{finding.col}"
            self.stream.write(f"\r\033[K[{done + 1}/{total}] {finding.code} {where}")
        self.stream.flush()


def _error(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # --help (0) or a usage error (2, already printed)
        return int(exc.code or 0)
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        return _error(f"no such file or directory: {', '.join(missing)}")
    select, ignore = _codes(args.select), _codes(args.ignore)
    try:
        from ..engine import check_paths
    except ImportError as exc:
        return _error(f"the analyzer is not available ({exc})")

    started = time.monotonic()
    show_progress = not args.no_progress and sys.stderr.isatty()
    runner = Runner(timeout=args.timeout, budget=args.budget,
                    progress=_Progress(sys.stderr) if show_progress else None,
                    memory_limit=args.memory_limit or None, cpu_limit=args.cpu_limit or None)
    try:
        runner.start()  # torch imports in the worker while we lint
        findings = [f for f in check_paths(list(args.paths), select=select, ignore=ignore)
                    if _keep(f, select, ignore)]
        try:
            runner.ready()
        except TorchUnavailable as exc:
            print(f"{PROG}: torch is required to confirm findings ({exc}); install it with: "
                  f"{INSTALL_HINT}", file=sys.stderr)
            return EXIT_USAGE
        except WorkerFailed as exc:
            return _error(str(exc))
        outcomes = runner.run(findings)
    finally:
        runner.close()
    seconds = time.monotonic() - started

    from .report import render_table, summary_line, to_json

    if outcomes:
        print(render_table(outcomes))
    print(summary_line(outcomes, seconds))
    confirmed = any(o.verdict == CONFIRMED for o in outcomes)
    status = EXIT_CONFIRMED if confirmed and args.fail_on == "confirmed" else EXIT_CLEAN
    if args.json:
        settings = {"select": select, "ignore": ignore, "fail_on": args.fail_on,
                    "timeout": args.timeout, "budget": args.budget,
                    "memory_limit_mb": args.memory_limit, "cpu_limit_s": args.cpu_limit}
        document = to_json(outcomes, paths=args.paths, settings=settings,
                           torch_version=runner.torch_version, seconds=seconds,
                           exit_status=status)
        from ..atomic import WriteError, write_text

        try:  # atomic: a fault leaves the previous report whole
            write_text(args.json, json.dumps(document, indent=2) + "\n")
        except WriteError as exc:
            return _error(f"cannot write {args.json}: {exc}")
    return status
