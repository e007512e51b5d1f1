"""``flake8-mha check`` and ``flake8-mha explain``.

``check`` reports what the flake8 plugin reports, without flake8's other
checks: the same codes, the same ``# noqa`` handling, the same select/ignore
decisions.  Exit status: 0 clean, 1 findings, 2 usage error or a file that
could not be checked (syntax error, unreadable).
"""
from __future__ import annotations

import argparse
import difflib
import io
import os
import sys
import tokenize
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

from .config import (FORMATS, Options, UsageError, apply_config, code_list, discover,
                     exclude_patterns, find_config, format_value, jobs_value, read_config_file)
from .output import Item, Problem, render


@dataclass
class FileOutcome:
    """What checking one file produced; built in a worker process, so picklable."""

    path: str
    items: List[Item] = field(default_factory=list)
    problems: List[Problem] = field(default_factory=list)
    new_data: Optional[bytes] = None  # the rewritten file (--fix/--diff), if anything changed
    old_data: Optional[bytes] = None  # the bytes analysed: --fix writes only over these
    old_items: List[Item] = field(default_factory=list)  # reported if the fix is not written
    diff: str = ""
    fixed: int = 0


# -- one file -------------------------------------------------------------------

def _encoding(data: bytes) -> str:
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return encoding


def read_bytes(path: str, out: FileOutcome) -> Optional[bytes]:
    """The file's bytes, or None with the reason recorded on ``out``."""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        out.problems.append(Problem(path, f"cannot read the file: {exc.strerror or exc}"))
        return None


def check_python(path: str, codes: Sequence[str], disable_noqa: bool = False,
                 mode: str = "check") -> FileOutcome:
    from .engine import SourceSyntaxError, decode_source
    from .fix import fixable_codes, lint_text

    out = FileOutcome(path)
    data = read_bytes(path, out)
    if data is None:
        return out
    try:
        text = decode_source(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        out.problems.append(Problem(path, f"cannot decode the file: {reason}"))
        return out
    try:
        findings = lint_text(text, path, codes, disable_noqa)
    except SourceSyntaxError as exc:
        out.problems.append(Problem(path, str(exc), exc.line, exc.col))
        return out
    if mode != "check" and any(f.code in fixable_codes() for f in findings):
        from .fix import fix_source

        new_text, fixed = fix_source(text, findings, path)
        if fixed and new_text != text:
            from .atomic import fix_refusal

            try:
                after = lint_text(new_text, path, codes, disable_noqa)
                refusal = fix_refusal(findings, fixed, after)
            except SourceSyntaxError as exc:
                refusal = f"fix not applied: the fixed text does not parse ({exc})"
            if refusal:
                out.problems.append(Problem(path, refusal))
                fixed = []
        if fixed and new_text != text:
            out.fixed = len(fixed)
            encoding = _encoding(data)
            out.new_data, out.old_data = new_text.encode(encoding), data
            out.old_items = [Item(f, fixable=f.code in fixable_codes()) for f in findings]
            out.diff = "".join(difflib.unified_diff(
                text.splitlines(keepends=True), new_text.splitlines(keepends=True),
                fromfile=path, tofile=path))
            findings = after
    fixable = fixable_codes()
    out.items = [Item(f, fixable=f.code in fixable) for f in findings]
    return out


def check_one(task: Tuple[str, Tuple[str, ...], bool, str]) -> FileOutcome:
    path, codes, disable_noqa, mode = task
    try:
        if path.endswith(".ipynb"):
            from .notebook import check_notebook

            return check_notebook(path, codes, disable_noqa, mode)
        return check_python(path, codes, disable_noqa, mode)
    except Exception as exc:  # never lose the whole run to one file
        return FileOutcome(path, problems=[Problem(
            path, f"internal error {type(exc).__name__}: {exc}; please report it")])


def run_files(files: Sequence[str], codes: Sequence[str], disable_noqa: bool, mode: str,
              jobs: int) -> List[FileOutcome]:
    tasks = [(path, tuple(codes), disable_noqa, mode) for path in files]
    if jobs <= 1 or len(tasks) <= 1:
        return [check_one(t) for t in tasks]
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with ctx.Pool(min(jobs, len(tasks))) as pool:
        # imap keeps the input order: output does not depend on -j
        return list(pool.imap(check_one, tasks, chunksize=1))


# -- command line -----------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, no usage dump, no traceback
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="flake8-mha check", allow_abbrev=False,
                description="Lint PyTorch attention code (the flake8-mha rules only).")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="files and directories (*.py, *.pyi, *.ipynb below directories)")
    p.add_argument("--select", metavar="CODES",
                   help="comma-separated code prefixes to report (replaces the default: MHA)")
    p.add_argument("--ignore", metavar="CODES",
                   help="comma-separated code prefixes not to report (replaces the default: "
                        "MHA901,MHA902)")
    p.add_argument("--extend-select", metavar="CODES", help="add to --select")
    p.add_argument("--extend-ignore", metavar="CODES", help="add to --ignore")
    p.add_argument("--enable-extensions", metavar="CODES",
                   help="turn on off-by-default codes, as flake8's option does (MHA9)")
    p.add_argument("--exclude", metavar="PATTERNS",
                   help="comma-separated glob patterns to skip, added to the defaults "
                        "(.git, virtualenvs, build, dist, ...)")
    p.add_argument("--format", metavar="NAME", help=f"output format: {', '.join(FORMATS)}")
    p.add_argument("--output-file", metavar="FILE", help="write the report to FILE")
    p.add_argument("--statistics", action="store_true", default=None,
                   help="count findings per code (text and github formats)")
    p.add_argument("-j", "--jobs", metavar="N",
                   help="check files in N processes ('auto': one per CPU)")
    p.add_argument("--disable-noqa", action="store_true", default=None,
                   help="report findings even on lines with # noqa")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--fix", action="store_true", help="apply the safe fixes to the files")
    mode.add_argument("--diff", action="store_true",
                      help="print the safe fixes as a unified diff; change nothing")
    p.add_argument("--config", metavar="FILE",
                   help="read settings from this pyproject.toml or setup.cfg")
    p.add_argument("--isolated", action="store_true", help="ignore configuration files")
    return p


def parse_options(argv: Sequence[str], cwd: Optional[str] = None) -> Options:
    args = _parser().parse_args(list(argv))
    opts = Options()
    cwd = cwd or os.getcwd()
    if args.config and args.isolated:
        raise UsageError("--config and --isolated cannot be used together")
    if args.config:
        if not os.path.isfile(args.config):
            raise UsageError(f"no such configuration file: {args.config}")
        settings = read_config_file(args.config)
        if settings is not None:
            apply_config(opts, settings, args.config)
    elif not args.isolated:
        found = find_config(cwd)
        if found is not None:
            apply_config(opts, found[1], found[0])
    # the command line wins, key by key
    if args.select is not None:
        opts.select = code_list(args.select, "--select")
    if args.ignore is not None:
        opts.ignore = code_list(args.ignore, "--ignore")
    if args.extend_select is not None:
        opts.extend_select = code_list(args.extend_select, "--extend-select")
    if args.extend_ignore is not None:
        opts.extend_ignore = code_list(args.extend_ignore, "--extend-ignore")
    if args.enable_extensions is not None:
        opts.enable_extensions = code_list(args.enable_extensions, "--enable-extensions")
    if args.exclude is not None:
        opts.exclude = exclude_patterns(args.exclude, "--exclude", cwd)
    if args.format is not None:
        opts.format = format_value(args.format)
    if args.output_file is not None:
        opts.output_file = args.output_file
    if args.statistics:
        opts.statistics = True
    if args.jobs is not None:
        opts.jobs = jobs_value(args.jobs, "--jobs")
    if args.disable_noqa:
        opts.disable_noqa = True
    opts.fix, opts.diff = args.fix, args.diff
    opts.paths = list(args.paths)
    for path in opts.paths:
        if not os.path.exists(path):
            raise UsageError(f"no such file or directory: {path}")
    return opts


def main(argv: Sequence[str]) -> int:
    try:
        opts = parse_options(argv)
    except UsageError as exc:
        print(f"flake8-mha check: error: {exc}", file=sys.stderr)
        return 2
    codes = opts.codes()
    files = discover(opts.paths, opts.exclude)
    mode = "fix" if opts.fix else "diff" if opts.diff else "check"
    outcomes = run_files(files, codes, opts.disable_noqa, mode, opts.jobs)

    items = [i for o in outcomes for i in o.items]
    problems = [p for o in outcomes for p in o.problems]
    for p in problems:
        print(p.text(), file=sys.stderr)

    if mode == "diff":
        report = "".join(o.diff for o in outcomes)
        changed = any(o.diff for o in outcomes)
        if not _emit(report, opts.output_file):
            return 2
        if problems:
            return 2
        return 1 if changed else 0

    if mode == "fix":
        fixed = files_fixed = 0
        for o in outcomes:
            if o.new_data is not None:
                from .atomic import WriteError, write_bytes

                try:  # atomic, and only over the bytes that were analysed
                    write_bytes(o.path, o.new_data, expected=o.old_data)
                except WriteError as exc:  # FileChanged too: one line, exit 2
                    problem = Problem(o.path, f"not fixed: {exc}")
                    print(problem.text(), file=sys.stderr)
                    problems.append(problem)
                    o.items = o.old_items  # the file is as it was: report what it holds
                    continue
                fixed += o.fixed
                files_fixed += 1
        if fixed:
            noun = "finding" if fixed == 1 else "findings"
            print(f"flake8-mha: fixed {fixed} {noun} in {files_fixed} "
                  f"file{'s' if files_fixed != 1 else ''}", file=sys.stderr)
        items = [i for o in outcomes for i in o.items]

    report = render(opts.format, items, problems, codes, opts.statistics)
    if not _emit(report, opts.output_file):
        return 2
    if problems:
        return 2
    return 1 if items else 0


def _emit(report: str, output_file: Optional[str]) -> bool:
    if output_file:
        from .atomic import WriteError, write_text

        try:  # atomic: a fault leaves the previous report whole
            write_text(output_file, report)
        except WriteError as exc:
            print(f"flake8-mha check: error: cannot write {output_file}: {exc}", file=sys.stderr)
            return False
    elif report:
        sys.stdout.write(report)
        sys.stdout.flush()
    return True


def explain(argv: Sequence[str]) -> int:
    from .rules.base import REGISTRY, all_rules

    all_rules()
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: flake8-mha explain CODE", file=sys.stderr)
        return 2
    code = argv[0].upper()
    rule = REGISTRY.get(code)
    if rule is None:
        known = ", ".join(sorted(REGISTRY))
        print(f"flake8-mha explain: unknown code {argv[0]!r} (known: {known})", file=sys.stderr)
        return 2
    sys.stdout.write(rule.docs_markdown().rstrip("\n") + "\n")
    return 0
