"""``flake8-mha check`` and ``flake8-mha explain``.

``check`` reports what the flake8 plugin reports, without flake8's other
checks: the same codes, the same ``# noqa`` handling, the same select/ignore
decisions.  Exit status: 0 clean, 1 findings, 2 usage error or a file that
could not be checked (syntax error, unreadable).
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from ..app.config import FORMATS, Options, UsageError, check_output_file, format_value
from ..app.output import SourceLines, render
from ..app.options import add_lint_arguments, options_from_args
from ..app.pipeline import FileOutcome, lint_paths, write_fixes
from ..core import runs

__all__ = ["FileOutcome", "main", "explain", "parse_options"]


# -- command line -----------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, no usage dump, no traceback
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="flake8-mha check",
        allow_abbrev=False,
        description="Lint PyTorch attention code (the flake8-mha rules only).",
    )
    add_lint_arguments(p)
    p.add_argument("--format", metavar="NAME", help=f"output format: {', '.join(FORMATS)}")
    p.add_argument("--output-file", metavar="FILE", help="write the report to FILE")
    p.add_argument(
        "--statistics",
        action="store_true",
        default=None,
        help="count findings per code (text and github formats)",
    )
    p.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 even when findings are reported (2 still means a usage error)",
    )
    p.add_argument(
        "--count", action="store_true", help="print the number of findings and errors last"
    )
    p.add_argument(
        "-q",
        "--quiet",
        action="count",
        default=0,
        help="-q: print only the names of files with findings; -qq: print nothing",
    )
    p.add_argument(
        "--show-source",
        action="store_true",
        help="print the source line of each finding, with a caret under its column",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--fix", action="store_true", help="apply the safe fixes to the files")
    mode.add_argument(
        "--diff", action="store_true", help="print the safe fixes as a unified diff; change nothing"
    )
    return p


def parse_options(argv: Sequence[str], cwd: Optional[str] = None) -> Options:
    args = _parser().parse_args(list(argv))
    opts = options_from_args(args, cwd)
    # the command line wins, key by key
    if args.format is not None:
        opts.format = format_value(args.format)
    if args.output_file is not None:
        opts.output_file = args.output_file
    if opts.output_file is not None:
        check_output_file(opts.output_file, "--output-file")
    if args.statistics:
        opts.statistics = True
    opts.fix, opts.diff = args.fix, args.diff
    opts.exit_zero, opts.count, opts.quiet = args.exit_zero, args.count, args.quiet
    opts.show_source = args.show_source
    if opts.fix and "-" in opts.paths:
        raise UsageError("--fix cannot write to stdin (-); use --diff")
    return opts


def main(argv: Sequence[str]) -> int:
    try:
        opts = parse_options(argv)
    except UsageError as exc:
        print(f"flake8-mha check: error: {exc}", file=sys.stderr)
        return 2
    mode = "fix" if opts.fix else "diff" if opts.diff else "check"
    with runs.held():  # the project's files hold still while they are read
        run = lint_paths(opts, mode)
    codes, outcomes = run.codes, run.outcomes
    items, problems = run.items, run.problems
    for p in problems:
        print(p.text(), file=sys.stderr)
    if not run.files:  # as ruff: a run that looked at nothing says so
        print(
            "flake8-mha check: warning: no Python files found under " + ", ".join(opts.paths),
            file=sys.stderr,
        )

    if mode == "diff":
        report = "".join(o.diff for o in outcomes)
        changed = any(o.diff for o in outcomes)
        if not _emit(report, opts.output_file) or problems:
            return 2
        return 1 if changed and not opts.exit_zero else 0

    if mode == "fix":
        # atomic, and only over the bytes that were analysed (pipeline.write_fixes)
        written = write_fixes(outcomes)
        for p in written.problems:  # one line each, exit 2
            print(p.text(), file=sys.stderr)
        if written.fixed:
            noun = "finding" if written.fixed == 1 else "findings"
            print(
                f"flake8-mha: fixed {written.fixed} {noun} in {written.files} "
                f"file{'s' if written.files != 1 else ''}",
                file=sys.stderr,
            )
        # a file not written reports the findings it still holds
        items, problems = run.items, run.problems

    if opts.format == "text" and opts.quiet:
        # flake8's -q: each file with findings once; -qq: nothing
        names = list(dict.fromkeys(i.finding.path for i in items)) if opts.quiet == 1 else []
        report = "".join(name + "\n" for name in names)
    else:
        source = SourceLines(run.stdin, opts.stdin_display_name) if opts.show_source else None
        report = render(opts.format, items, problems, codes, opts.statistics, source=source)
    if opts.count and opts.format in ("text", "github"):
        report += f"{len(items) + len(problems)}\n"  # flake8 counts its E999 too
    if not _emit(report, opts.output_file) or problems:
        return 2
    return 1 if items and not opts.exit_zero else 0


def _emit(report: str, output_file: Optional[str]) -> bool:
    """Write the report; False (with one line on stderr) if the file cannot be written."""
    if output_file:
        from ..core.atomic import WriteError, write_text

        try:  # atomic: a fault leaves the previous report whole; folders are made
            write_text(output_file, report)
        except WriteError as exc:
            print(f"flake8-mha check: error: cannot write {output_file}: {exc}", file=sys.stderr)
            return False
    elif report:
        sys.stdout.write(report)
        sys.stdout.flush()
    return True


EXPLAIN_USAGE = """usage: flake8-mha explain CODE | --list

  CODE     print the rule's documentation page (MHA001, mha001)
  --list   one line per code: the code, its name, and (opt-in) for the MHA9xx codes"""


def explain(argv: Sequence[str]) -> int:
    """Print a code's page: a static rule's, or a runtime-only code's (MHA011)."""
    from ..rules.base import REGISTRY, all_rules
    from ..rules.runtime import RUNTIME

    all_rules()
    if list(argv) in (["-h"], ["--help"]):
        print(EXPLAIN_USAGE)
        return 0
    if list(argv) == ["--list"]:
        for code, rule in sorted({**REGISTRY, **RUNTIME}.items()):
            if code in RUNTIME:
                note = "  (runtime: the sanitizer)"
            else:
                note = "" if rule.DEFAULT_ENABLED else "  (opt-in)"
            print(f"{code}  {rule.NAME}{note}")
        return 0
    if len(argv) != 1 or argv[0].startswith("-"):
        print(f"flake8-mha explain: error: {EXPLAIN_USAGE.splitlines()[0]}", file=sys.stderr)
        return 2
    code = argv[0].upper()
    rule = REGISTRY.get(code) or RUNTIME.get(code)
    if rule is None:
        known = ", ".join(sorted({*REGISTRY, *RUNTIME}))
        print(f"flake8-mha explain: unknown code {argv[0]!r} (known: {known})", file=sys.stderr)
        return 2
    from ..app.docs import page

    sys.stdout.write(page(rule).rstrip("\n") + "\n")
    return 0
