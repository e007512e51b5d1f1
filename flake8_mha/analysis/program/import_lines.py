"""A file's imports read as text, before any parse: which modules its import
lines name (``imported_from``) and whether any of them can be project code
(``imports_project_code``).  The gate and the summaries' screens ask these
first, so a file whose imports lead nowhere costs a few regular expressions."""

from __future__ import annotations

import re
import sys
from typing import List, Optional

# imports that are never the project's own code: an edge into them is dropped
# when the file is summarised (torch's own tree, where ``torch`` is the
# project, keeps its direct SDPA wrappers; chains through torch are not followed)
EXTERNAL = frozenset(getattr(sys, "stdlib_module_names", ())) | {
    "torch",
    "typing_extensions",  # typing's backports: torch's own modules import them
    "numpy",
    "einops",
    "einx",
    "jax",
    "triton",
    "xformers",
    "flash_attn",
}


_FROM_LINE = re.compile(r"from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+\(?([^#\n]*)")
_PLAIN_IMPORT = re.compile(r"import[ \t]+([^#\n]+)")


def _at_line_start(source: str, at: int) -> bool:
    """Whether only spaces and tabs stand between the line's start and ``at``."""
    start = source.rfind("\n", 0, at) + 1
    return start == at or not source[start:at].strip(" \t")


def imported_from(source: str) -> List[tuple]:
    """(level, module, [names]) for each import line of the file, read as text:
    ``from .attn import Attention, attend`` is ``(1, "attn", ["Attention",
    "attend"])``, ``import pkg.attn`` is ``(0, "pkg.attn", [])``.  Imports of
    packages that are never project code are left out."""
    out: List[tuple] = []
    for m in _FROM_LINE.finditer(source):
        if not _at_line_start(source, m.start()):
            continue
        level, module = len(m.group(1)), m.group(2)
        if level == 0 and module.split(".")[0] in EXTERNAL:
            continue
        names = []
        for a in m.group(3).strip(" ()\\").split(","):
            words = a.split()
            if words and words[0].isidentifier():
                names.append(words[0])
        out.append((level, module, names))
    for m in _PLAIN_IMPORT.finditer(source):
        if not _at_line_start(source, m.start()):
            continue
        for item in m.group(1).split(","):
            words = item.split()
            if words and words[0].split(".")[0] not in EXTERNAL:
                out.append((0, words[0], []))
    return out


# ``from X import``: the word ``import`` after the module, so that a docstring's
# line "from the border, ..." is not read as an import (torch's nn/functional.py)
_IMPORT_LINE = re.compile(
    r"(?:from[ \t]+(\.|[A-Za-z_]\w*)(?:[\w.]*(?:[ \t]|\\\r?\n)+|\.*)import\b"
    r"|import[ \t]+([A-Za-z_]\w*))"
)


def imports_project_code(source: str) -> bool:
    """A text screen: whether the file imports anything that may be the
    project's own code (a relative import, or a package that is not a known
    outside one).  A file that does not, and names no SDPA, has no summary."""
    for m in _IMPORT_LINE.finditer(source):
        if not _at_line_start(source, m.start()):
            continue
        head = m.group(1) or m.group(2)
        if head == "." or head not in EXTERNAL:
            return True
    return False


def helper_import(function: str, text: object) -> Optional[str]:
    """The dotted name an import helper binds: a function whose name says
    import (``importlib.import_module``, sktime's ``_safe_import``) given one
    literal dotted name; None for anything else."""
    if "import" not in function.lower() or not isinstance(text, str):
        return None
    return text if all(p.isidentifier() for p in text.split(".")) else None
