"""Generate ``docs/rules/<CODE>.md`` from the rule classes.

    python -m flake8_mha.docs          # write the pages
    python -m flake8_mha.docs --check  # exit 1 if a page is out of date
"""
from __future__ import annotations

import pathlib
import sys
from typing import Dict

from .rules.base import all_rules
from .rules.runtime import runtime_rules

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs" / "rules"


def pages() -> Dict[str, str]:
    return {rule.CODE: rule.docs_markdown() for rule in [*all_rules(), *runtime_rules()]}


def rule_table() -> str:
    rows = ["| code | name | on by default | what it flags |", "| --- | --- | --- | --- |"]
    for rule in all_rules():
        first = " ".join(rule.WHAT.split()).split(". ")[0].rstrip(".")
        on = "yes" if rule.DEFAULT_ENABLED else "no (opt-in)"
        rows.append(f"| [{rule.CODE}](docs/rules/{rule.CODE}.md) | {rule.NAME} | {on} | {first}. |")
    return "\n".join(rows)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    check = "--check" in argv
    stale = []
    DOCS.mkdir(parents=True, exist_ok=True)
    for code, text in pages().items():
        path = DOCS / f"{code}.md"
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path))
        else:
            path.write_text(text, encoding="utf-8")
    if "--table" in argv:
        print(rule_table())
    if stale:
        print("out of date (run python -m flake8_mha.docs):\n  " + "\n  ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
