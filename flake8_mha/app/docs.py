"""Generate ``docs/rules/<CODE>.md`` from the rule classes.

python -m flake8_mha.app.docs          # write the pages
python -m flake8_mha.app.docs --check  # exit 1 if a page is out of date
"""

from __future__ import annotations

import pathlib
import sys
import textwrap
from typing import Dict

from ..confirm.witnesses import WITNESSES  # no torch at import time
from .fix import FIXES, fixable_codes
from ..rules.base import all_rules
from ..rules.runtime import runtime_rules

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "rules"


def page(rule) -> str:
    """A rule's page (``docs/rules/<CODE>.md``, ``flake8-mha explain CODE``):
    ruff's sections from the rule class, what the confirmer's witness measures
    (from the witness), and a Fix section whenever the rule module declares a
    fix (from the fix registry)."""

    def block(code: str) -> str:
        return "```python\n" + textwrap.dedent(code).strip("\n") + "\n```"

    parts = [f"# {rule.CODE}: {rule.NAME}", ""]
    state = (
        "on by default"
        if rule.DEFAULT_ENABLED
        else (f"off by default: enable with `--select MHA9` or `--enable-extensions {rule.CODE}`")
    )
    if getattr(rule, "RUNTIME_ONLY", False):
        state = (
            "runtime only: reported by the sanitizer (`flake8_mha.sanitizer`), "
            "never by `flake8-mha check` or flake8"
        )
    parts += [
        f"Category: {rule.CATEGORY}; {state}.",
        "",
        f"Message: `{rule.CODE} {rule.MESSAGE}`",
        "",
    ]
    parts += ["## What it does", "", textwrap.dedent(rule.WHAT).strip(), ""]
    parts += ["## Why is this bad?", "", textwrap.dedent(rule.WHY).strip(), ""]
    parts += ["## Example", "", block(rule.EXAMPLE), ""]
    parts += ["## Use instead", "", block(rule.USE_INSTEAD), ""]
    if rule.DECISIONS:
        parts += ["## Scope decisions", "", textwrap.dedent(rule.DECISIONS).strip(), ""]
    witness = WITNESSES.get(rule.CODE)
    if witness is not None:
        parts += [
            "## What the confirmer measures",
            "",
            witness.summary.strip(),
            "",
            textwrap.dedent(witness.threshold_text).strip(),
            "",
        ]
    fix = FIXES.get(rule.CODE) if rule.CODE in fixable_codes() else None
    if fix is not None:
        parts += [
            "## Fix",
            "",
            f"{fix.title} (`flake8-mha check --fix`, or `--diff` to see it).",
            "",
            "Fix safety: " + " ".join(fix.safety.split()),
            "",
        ]
    if rule.REFERENCES:
        parts += ["## References", ""] + [f"- {ref}" for ref in rule.REFERENCES] + [""]
    return "\n".join(parts)


def pages() -> Dict[str, str]:
    return {rule.CODE: page(rule) for rule in [*all_rules(), *runtime_rules()]}


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
        print("out of date (run python -m flake8_mha.app.docs):\n  " + "\n  ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
