"""``flake8-mha check`` and ``flake8-mha explain``."""
from __future__ import annotations

import argparse
import os
import re
import sys
from typing import List, Sequence

from .findings import Finding

_NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z][0-9]+(?:[,\s]+[A-Z][0-9]+)*))?", re.I)


def noqa_filter(findings: Sequence[Finding], lines: Sequence[str]) -> List[Finding]:
    """Drop findings silenced by ``# noqa`` / ``# noqa: MHA001`` as flake8 does."""
    out = []
    for f in findings:
        line = lines[f.line - 1] if 0 < f.line <= len(lines) else ""
        m = _NOQA.search(line)
        if m is None:
            out.append(f)
            continue
        codes = m.group("codes")
        if codes is None:
            continue  # bare noqa silences everything on the line
        listed = [c.strip().upper() for c in re.split(r"[,\s]+", codes) if c.strip()]
        if not any(f.code.startswith(c) for c in listed):
            out.append(f)
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="flake8-mha check", description="Lint PyTorch attention code.")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--select", default="", help="comma-separated code prefixes to enable (e.g. MHA0,MHA901)")
    p.add_argument("--ignore", default="", help="comma-separated code prefixes to disable")
    return p


def _split(text: str) -> List[str]:
    return [c.strip().upper() for c in text.split(",") if c.strip()]


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, no traceback
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def main(argv: Sequence[str]) -> int:
    from .engine import (SourceSyntaxError, analyze_file, decode_source, iter_python_files,
                         select_codes)

    parser = _parser()
    parser.__class__ = _Parser
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    for path in args.paths:
        if not os.path.exists(path):
            print(f"flake8-mha check: error: no such file or directory: {path}", file=sys.stderr)
            return 2
    codes = select_codes(_split(args.select), _split(args.ignore))
    findings: List[Finding] = []
    errors = 0
    for path in iter_python_files(args.paths):
        try:
            found = analyze_file(path, codes)
        except SourceSyntaxError as exc:
            print(f"{path}:{exc.line}:{exc.col}: E999 {exc}", file=sys.stderr)
            errors += 1
            continue
        except OSError as exc:
            print(f"flake8-mha check: error: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
            errors += 1
            continue
        if found:
            with open(path, "rb") as fh:
                try:
                    lines = decode_source(fh.read()).splitlines()
                except Exception:
                    lines = []
            findings.extend(noqa_filter(found, lines))
    for f in findings:
        print(f.text())
    if errors:
        return 2
    return 1 if findings else 0


def explain(argv: Sequence[str]) -> int:
    from .rules.base import REGISTRY, all_rules

    all_rules()
    if len(argv) != 1:
        print("usage: flake8-mha explain CODE", file=sys.stderr)
        return 2
    code = argv[0].upper()
    rule = REGISTRY.get(code)
    if rule is None:
        known = ", ".join(sorted(REGISTRY))
        print(f"flake8-mha explain: unknown code {code!r} (known: {known})", file=sys.stderr)
        return 2
    print(rule.docs_markdown())
    return 0
