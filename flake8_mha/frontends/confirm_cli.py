"""``flake8-mha confirm PATH...``: lint, then confirm every finding at runtime.

The linting is ``flake8-mha check``'s (``pipeline.lint_paths``): the same
files, configuration, ``# noqa``, notebooks and code selection, and a file
that cannot be checked is reported with its reason and makes the run exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import IO, Optional, Sequence

from ..core import runs
from ..core.findings import Finding
from ..confirm.runner import (
    DEFAULT_BUDGET,
    DEFAULT_CPU_LIMIT,
    DEFAULT_MEMORY_LIMIT_MB,
    DEFAULT_TIMEOUT,
    FAIL_ON,
    INSTALL_HINT,
    MAX_LIMIT,
    Runner,
    TorchUnavailable,
    WorkerFailed,
)

PROG = "flake8-mha confirm"
EXIT_CLEAN, EXIT_CONFIRMED, EXIT_USAGE = 0, 1, 2


class _UsageExit(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2: no usage block
        raise _UsageExit(message)


def build_parser() -> argparse.ArgumentParser:
    from ..app.options import add_lint_arguments

    parser = _Parser(
        prog=PROG,
        description=(
            "Lint PATHs with flake8-mha, then confirm every finding by running a small "
            "torch experiment (a witness) built from the finding's evidence. The "
            "user's code is never imported or executed. Files, configuration, "
            "# noqa and code selection are those of flake8-mha check."
        ),
        epilog=(
            "Exit status: 0 when nothing is confirmed (or --fail-on none), 1 when a "
            "finding is CONFIRMED or CONFIRMED* (--fail-on proven: CONFIRMED only), 2 on "
            "usage errors, when torch is missing, or when a file could not be checked."
        ),
    )
    add_lint_arguments(parser, repeatable=True)
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    parser.add_argument(
        "--fail-on",
        choices=tuple(FAIL_ON),
        default="confirmed",
        help=(
            "exit 1 when a finding is CONFIRMED or CONFIRMED* (confirmed, "
            "the default), only CONFIRMED from the code's own facts "
            "(proven), or never (none)"
        ),
    )
    parser.add_argument(
        "--timeout",
        type=_positive,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"time budget of one witness (default {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--budget",
        type=_positive,
        default=DEFAULT_BUDGET,
        metavar="SECONDS",
        help=(
            f"time budget of all witnesses; later findings are SKIPPED (default {DEFAULT_BUDGET:g})"
        ),
    )
    parser.add_argument(
        "--memory-limit",
        type=_limit,
        default=DEFAULT_MEMORY_LIMIT_MB,
        metavar="MB",
        help=(
            "memory of the witness worker, torch included; a "
            "witness over it is CRASHED (default "
            f"{DEFAULT_MEMORY_LIMIT_MB:g}; 0: none)"
        ),
    )
    parser.add_argument(
        "--cpu-limit",
        type=_limit,
        default=DEFAULT_CPU_LIMIT,
        metavar="SECONDS",
        help=(
            "CPU time of one witness; over it the witness is CRASHED "
            f"(default {DEFAULT_CPU_LIMIT:g}; 0: none)"
        ),
    )
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress indicator on stderr (it shows only on a terminal)",
    )
    return parser


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0: {text!r}")
    if value > MAX_LIMIT:  # issue 29 (D9): the worker's limits would overflow
        raise argparse.ArgumentTypeError(f"must be at most {MAX_LIMIT:g}: {text!r}")
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
    from ..app.output import guarded

    return guarded(PROG, _main, list(sys.argv[1:] if argv is None else argv))


def _main(argv: Sequence[str]) -> int:
    from ..app.config import UsageError, check_output_file
    from ..app.options import options_from_args
    from ..app.pipeline import lint_paths

    parser = build_parser()
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:  # --help (0)
        return int(exc.code or 0)
    except _UsageExit as exc:
        return _error(str(exc))
    try:
        opts = options_from_args(args)
        if args.json:
            check_output_file(args.json, "--json")
    except UsageError as exc:
        return _error(str(exc))

    started = time.monotonic()
    show_progress = not args.no_progress and sys.stderr.isatty()
    runner = Runner(
        timeout=args.timeout,
        budget=args.budget,
        progress=_Progress(sys.stderr) if show_progress else None,
        memory_limit=args.memory_limit or None,
        cpu_limit=args.cpu_limit or None,
    )
    try:
        runner.start()  # torch imports in the worker while we lint
        with runs.held():  # the project's files hold still while they are read
            run = lint_paths(opts)
        items, problems = run.items, run.problems
        try:
            runner.ready()
        except TorchUnavailable as exc:
            print(
                f"{PROG}: torch is required to confirm findings ({exc}); install it with: "
                f"{INSTALL_HINT}",
                file=sys.stderr,
            )
            return EXIT_USAGE
        except WorkerFailed as exc:
            return _error(str(exc))
        outcomes = runner.run([item.finding for item in items])
    finally:
        runner.close()
    seconds = time.monotonic() - started

    from ..confirm.report import render_table, summary_line, to_json

    for problem in problems:  # as check prints them
        print(problem.text(), file=sys.stderr)
    if outcomes or problems:
        print(render_table(outcomes, items=items, problems=problems))
    print(summary_line(outcomes, seconds, problems=problems))
    failing = FAIL_ON[args.fail_on]
    status = EXIT_CONFIRMED if any(o.verdict in failing for o in outcomes) else EXIT_CLEAN
    if problems:
        status = EXIT_USAGE  # a file could not be checked: check exits 2 for it too
    if args.json:
        settings = {
            "select": opts.select,
            "ignore": opts.ignore,
            "extend_select": opts.extend_select or None,
            "extend_ignore": opts.extend_ignore or None,
            "fail_on": args.fail_on,
            "timeout": args.timeout,
            "budget": args.budget,
            "memory_limit_mb": args.memory_limit,
            "cpu_limit_s": args.cpu_limit,
        }
        document = to_json(
            outcomes,
            paths=args.paths,
            settings=settings,
            torch_version=runner.torch_version,
            seconds=seconds,
            exit_status=status,
            items=items,
            problems=problems,
        )
        from ..core.atomic import WriteError, write_text

        try:  # atomic: a fault leaves the previous report whole
            write_text(args.json, json.dumps(document, indent=2) + "\n")
        except WriteError as exc:
            return _error(f"cannot write {args.json}: {exc}")
    return status
