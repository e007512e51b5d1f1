"""Parse less of a large file: only the top-level statements that can matter.

LibCST's parse is the analyzer's main cost, and on a large file most
top-level functions and classes never mention an attention API.  For a file
of at least ``MIN_LINES`` lines, ``focus`` blanks out every top-level
function or class whose text contains none of the trigger words (and that
does not rebind a global), keeping imports, module-level statements and the
relevant definitions on their original lines and columns, so positions are
unchanged.  A blanked definition can only make something unknown, and
unknown never fires; the few files it applies to are the ones that made
flake8 slow.
"""

from __future__ import annotations

import ast
from typing import List, Optional, Sequence

from .torch_api import TRIGGER_WORDS

MIN_LINES = 2000
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def focus(
    source: str, tree: Optional[ast.Module] = None, words: Sequence[str] = TRIGGER_WORDS
) -> str:
    """``source`` with irrelevant top-level definitions replaced by blank lines."""
    lines = source.splitlines(keepends=True)
    if len(lines) < MIN_LINES:
        return source
    if tree is None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return source
    drop: List[range] = []
    for stmt in tree.body:
        if not isinstance(stmt, _DEFS) or getattr(stmt, "end_lineno", None) is None:
            continue
        first = min([stmt.lineno] + [d.lineno for d in stmt.decorator_list])
        text = "".join(lines[first - 1 : stmt.end_lineno])
        if any(word in text for word in words) or "global " in text or "nonlocal " in text:
            continue
        drop.append(range(first - 1, stmt.end_lineno))
    if not drop:
        return source
    out = list(lines)
    for span in drop:
        for i in span:
            line = out[i]
            ending = (
                "\r\n" if line.endswith("\r\n") else ("\n" if line.endswith(("\n", "\r")) else "")
            )
            out[i] = ending
    return "".join(out)
