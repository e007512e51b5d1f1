"""Lines of source text as Python counts them.

``str.splitlines`` also breaks at a form feed, a vertical tab, ``\\x1c``-``\\x1e``,
``\\x85`` and the Unicode line and paragraph separators. Python's tokenizer
does not: a form feed in an indent (the ``^L`` page breaks of older code) is
part of its line. Splitting there would shift every later line number, so a
``# noqa`` would silence the wrong line and a focused parse would cut a
statement in two. Only ``\\n``, ``\\r\\n`` and ``\\r`` end a line here.
"""

from __future__ import annotations

import io
from typing import List


def source_lines(text: str) -> List[str]:
    """The lines of ``text``, each with its own line ending, as Python numbers them."""
    return io.StringIO(text, newline="").readlines()
