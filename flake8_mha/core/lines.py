"""Lines of source text as Python counts them.

``str.splitlines`` also breaks at a form feed, a vertical tab, ``\\x1c``-``\\x1e``,
``\\x85`` and the Unicode line and paragraph separators. Python's tokenizer
does not: a form feed in an indent (the ``^L`` page breaks of older code) is
part of its line. Splitting there would shift every later line number, so a
``# noqa`` would silence the wrong line and a focused parse would cut a
statement in two. Only ``\\n``, ``\\r\\n`` and ``\\r`` end a line here.
"""

from __future__ import annotations

import ast
import difflib
import io
import re
import warnings
import bisect
from typing import List


def source_lines(text: str) -> List[str]:
    """The lines of ``text``, each with its own line ending, as Python numbers them."""
    return io.StringIO(text, newline="").readlines()


_NO_NEWLINE = "\\ No newline at end of file\n"


def unified_diff(path: str, old: str, new: str) -> str:
    """``--diff`` for one file, as ``patch -p0`` and ``git apply`` read it:
    lines end at ``\\n`` only (to both tools a ``\\r`` is part of its line, so
    a CR-only file is one line), and a last line without ``\\n`` is followed
    by ``\\ No newline at end of file``, as ``diff -u`` writes it."""
    out = []
    for line in difflib.unified_diff(lf_lines(old), lf_lines(new), fromfile=path, tofile=path):
        out.append(line)
        if not line.endswith("\n"):
            out.append("\n" + _NO_NEWLINE)
    return "".join(out)


def lf_lines(text: str) -> List[str]:
    """The lines of ``text`` split after each ``\\n`` only, each with its ending."""
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


# -- skimming data --------------------------------------------------------------------

SKIM_CHARS = 20_000  # a list, dict or set display of pure data longer than this is skimmed

_SCAN = re.compile(
    r"""
    (?P<s>(?:[rRbBuUfF]{1,2})?
        (?:\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"
          |'''(?:[^'\\]|\\.|'(?!''))*'''
          |"(?:[^"\\\r\n]|\\.)*"
          |'(?:[^'\\\r\n]|\\.)*'))
    |(?P<c>\#[^\r\n]*)
    |(?P<o>[\[{(])
    |(?P<x>[\]})])
    """,
    re.X | re.S,
)
_NOT_DISPLAY_AFTER = re.compile(r"[\w)\]}'\"]")
_DATA_NODES = (ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.UnaryOp, ast.Load)
_SIGNS = (ast.USub, ast.UAdd)
_KEPT = re.compile(r"[^\r\n]")


def skim_data(text: str, min_chars: int = SKIM_CHARS) -> str:
    """``text`` with the inside of each list, dict or set display longer than
    ``min_chars`` that holds data only (numbers, strings, None/True/False,
    signs, and displays of them) blanked to spaces, line breaks kept: every
    other line and column stays where it was, and a 500,000-item literal
    costs the analyzer nothing (LibCST would build a node for each item).
    A display Python would not parse as data is left as it is, so a syntax
    error inside one is still reported."""
    if len(text) < min_chars:
        return text
    found = []  # (start, end) of the brackets of long displays, end inclusive
    stack = []
    for m in _SCAN.finditer(text):
        kind = m.lastgroup
        if kind == "o":
            pos = m.start()
            before = _char_before(text, pos)
            display = m.group() in "[{" and not _NOT_DISPLAY_AFTER.match(before)
            stack.append((pos, display))
        elif kind == "x" and stack:
            start, display = stack.pop()
            if display and m.start() - start > min_chars:
                found.append((start, m.start()))
    if not found:
        return text
    out = []
    at = 0
    for start, end in sorted(found, key=lambda se: (se[0], -se[1])):
        if start < at or not _is_data(text[start : end + 1]):
            continue
        out += [text[at : start + 1], _KEPT.sub(" ", text[start + 1 : end])]
        at = end
    return "".join(out) + text[at:] if out else text


def _char_before(text: str, pos: int) -> str:
    """The last non-blank character before ``pos`` ("" at the start): read
    backwards, not by copying the text up to ``pos`` for each bracket, which
    made a large file's skim quadratic."""
    at = pos - 1
    while at >= 0 and text[at].isspace():
        at -= 1
    return text[at] if at >= 0 else ""


def _is_data(display: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(display, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    for node in ast.walk(tree.body):
        if not isinstance(node, _DATA_NODES) and not isinstance(node, _SIGNS):
            return False
    return True


def word_count(word: str, text: str) -> int:
    """How often ``word`` stands in ``text`` as a whole word."""
    return len(re.findall(r"\b" + re.escape(word) + r"\b", text))


def lines_naming(source: str, words) -> List[int]:
    """The (1-based, sorted) numbers of the lines that hold one of ``words`` as
    an identifier."""
    found = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(words))) + r")\b")
    source = source.replace("\r\n", "\n").replace("\r", "\n")  # as the tokenizer counts lines
    out: List[int] = []
    line = 1
    at = 0
    for m in found.finditer(source):
        line += source.count("\n", at, m.start())
        at = m.start()
        if not out or out[-1] != line:
            out.append(line)
    return out


def spans(lines: List[int], node: ast.AST) -> bool:
    """Whether one of ``lines`` falls within ``node``'s."""
    i = bisect.bisect_left(lines, node.lineno)
    return i < len(lines) and lines[i] <= (node.end_lineno or node.lineno)
