"""``# noqa`` as flake8 7 reads it, so the CLI silences exactly what flake8 does.

- The comment must read ``# noqa`` (one space after ``#``; any case).
- ``# noqa`` alone, or followed by anything that is not a code list
  (``# noqa: see below``), silences every finding on the line.
- ``# noqa: MHA001,E501`` / ``# noqa:MHA001 E501`` silences findings whose
  code equals or starts with a listed code; the list is matched as written
  (``# noqa: mha001`` matches no code, so the finding stays).
- The line searched is the whole token run the finding's line belongs to: a
  ``# noqa`` after a multi-line string or a backslash continuation counts for
  every line of it.
- A line that is only ``# flake8: noqa`` (or ``# flake8=noqa``) skips the file.
"""

from __future__ import annotations

import io
import re
import tokenize
from typing import Dict, List, Sequence

from ..core.findings import Finding

# The same pattern as flake8.defaults.NOQA_INLINE_REGEXP and NOQA_FILE.
NOQA_INLINE = re.compile(r"# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?", re.I)
NOQA_FILE = re.compile(r"\s*# flake8[:=]\s*noqa", re.I)


def file_is_skipped(lines: Sequence[str]) -> bool:
    return any(NOQA_FILE.match(line) for line in lines)


def line_mapping(lines: Sequence[str]) -> Dict[int, str]:
    """Line number -> the text flake8 searches for ``# noqa`` on that line."""
    source = "".join(lines)
    out: Dict[int, str] = {}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return out
    lo, hi = len(lines) + 2, -1
    for tok in tokens:
        if tok.type in (tokenize.ENDMARKER, tokenize.DEDENT):
            continue
        lo = min(lo, tok.start[0])
        hi = max(hi, tok.end[0])
        if tok.type in (tokenize.NL, tokenize.NEWLINE):
            joined = "".join(lines[lo - 1 : hi])
            for n in range(lo, hi + 1):
                out[n] = joined
            lo, hi = len(lines) + 2, -1
    return out


def is_silenced(code: str, text: str) -> bool:
    match = NOQA_INLINE.search(text)
    if match is None:
        return False
    codes = match.group("codes")
    if codes is None:
        return True
    listed = {c for c in re.split(r"[,\s]", codes) if c.strip()}
    return code in listed or code.startswith(tuple(listed))


_ANY_NOQA = re.compile(r"noqa", re.I)


def apply_noqa(findings: Sequence[Finding], lines: Sequence[str]) -> List[Finding]:
    """Drop what ``# noqa`` comments silence; ``lines`` keep their line ends.
    A text without the word ``noqa`` anywhere is not tokenized: nothing in
    it can silence a finding (tokenizing a 1 MB literal took seconds)."""
    if not findings:
        return []
    if not any(_ANY_NOQA.search(line) for line in lines):
        return list(findings)
    if file_is_skipped(lines):
        return []
    mapping = line_mapping(lines)
    out = []
    for f in findings:
        text = mapping.get(f.line)
        if text is None:
            text = lines[f.line - 1] if 0 < f.line <= len(lines) else ""
        if not is_silenced(f.code, text):
            out.append(f)
    return out
