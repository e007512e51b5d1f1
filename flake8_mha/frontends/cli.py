"""``flake8-mha``: check, confirm, explain."""

from __future__ import annotations

import sys
from typing import List, Optional


def main(argv: Optional[List[str]] = None) -> int:
    from ..app.output import guarded

    return guarded("flake8-mha", _main, list(sys.argv[1:] if argv is None else argv))


def _main(argv: List[str]) -> int:
    from .check import main as check_main

    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "--version":
        from .. import __version__

        print(f"flake8-mha {__version__}")
        return 0
    if command == "check":
        return check_main(rest)
    if command == "confirm":
        try:
            from .confirm_cli import main as confirm_main
        except ImportError as exc:  # pragma: no cover
            print(f"flake8-mha confirm: unavailable ({exc})", file=sys.stderr)
            return 2
        return confirm_main(rest)
    if command == "explain":
        from .check import explain

        return explain(rest)
    print(f"flake8-mha: unknown command {command!r}\n{USAGE}", file=sys.stderr)
    return 2


USAGE = """usage: flake8-mha COMMAND [ARGS]

commands:
  check PATH...      lint files and directories (same findings as the flake8 plugin)
  confirm PATH...    lint, then prove each finding with a measured witness (needs torch)
  explain CODE       print a rule's documentation (explain --list: every code)"""


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
