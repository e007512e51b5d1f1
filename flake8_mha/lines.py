"""Lines of source text as Python counts them.

``str.splitlines`` also breaks at a form feed, a vertical tab, ``\\x1c``-``\\x1e``,
``\\x85`` and the Unicode line and paragraph separators. Python's tokenizer
does not: a form feed in an indent (the ``^L`` page breaks of older code) is
part of its line. Splitting there would shift every later line number, so a
``# noqa`` would silence the wrong line and a focused parse would cut a
statement in two. Only ``\\n``, ``\\r\\n`` and ``\\r`` end a line here.
"""

from __future__ import annotations

import difflib
import io
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
