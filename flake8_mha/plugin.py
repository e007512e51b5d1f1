"""The flake8 adapter: options and ``run()``; all analysis is in engine.py.

flake8 calls ``MHAChecker(tree, lines, filename)`` once per file; ``run()``
yields ``(line, col0, "MHA001 message", type)`` with a 0-based column.
Asking for ``tree`` means flake8 does not call us on a file with a syntax
error: it reports E999 itself.
"""
from __future__ import annotations

from typing import Iterator, Tuple

from . import __version__

_OFF_BY_DEFAULT = ("MHA9",)


class MHAChecker:
    name = "flake8-mha"
    version = __version__

    def __init__(self, tree, lines, filename: str = "<unknown>") -> None:
        self.lines = lines
        self.filename = filename

    @classmethod
    def add_options(cls, option_manager) -> None:
        # opinionated codes are registered but off unless selected
        option_manager.extend_default_ignore(list(_OFF_BY_DEFAULT))

    def run(self) -> Iterator[Tuple[int, int, str, type]]:
        try:
            from .engine import SourceSyntaxError, analyze_source, select_codes

            source = "".join(self.lines)
            try:
                # every code runs; flake8's own select/ignore decides what is shown
                findings = analyze_source(source, self.filename, codes=select_codes(["MHA"]))
            except SourceSyntaxError:
                return  # flake8 reports E999
        except Exception as exc:  # pragma: no cover - last line of defence
            yield (1, 0, f"MHA000 flake8-mha could not analyze this file: internal error {exc!r}", type(self))
            return
        for f in findings:
            yield (f.line, f.col - 1, f"{f.code} {f.message}", type(self))
