"""The project files that call into a set of changed files (issue 26).

A pre-commit hook hands ``check`` the files a commit changes.  A broken
wrapper (a ``~`` removed from a shared mask helper) changes nothing in its
callers' text, yet their findings change: the hook must check them too.
``dependents`` finds, under each changed file's project root, the files that
import it, directly or through a chain of importers (``MAX_HOPS``), read as
text and resolved like the analysis resolves imports (``project_files``).
Nothing is imported or run.
"""

from __future__ import annotations

import os
import re
from typing import Dict, Iterable, List, Set

from .project_files import ProjectFiles, module_parts, project_root

MAX_HOPS = 3  # importer of an importer of ...: chains are rarely longer
MAX_FILES = 20_000  # a root with more .py files than this is not scanned
MAX_BYTES = 2 * 1024 * 1024
_SKIP_DIRS = {
    ".git",
    ".hg",
    ".svn",
    "__pycache__",
    ".tox",
    ".nox",
    ".venv",
    "venv",
    "build",
    "dist",
    "node_modules",
    ".mypy_cache",
    ".pytest_cache",
    ".flake8-mha-cache",
}
_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+\(?([^#\n]*)", re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^#\n]+)", re.M)


def dependents(changed: Iterable[str]) -> List[str]:
    """The ``.py`` files of the changed files' projects that import one of them
    (or an importer of one), sorted, the changed files themselves left out."""
    targets = {os.path.abspath(p) for p in changed if p.endswith(".py") and os.path.isfile(p)}
    found: Set[str] = set()
    by_root: Dict[str, Set[str]] = {}
    for path in targets:
        by_root.setdefault(project_root(path), set()).add(path)
    for root, wanted in by_root.items():
        files = _python_files(root)
        if files is None:
            continue
        frontier = set(wanted)
        seen = set(wanted)
        for _ in range(MAX_HOPS):
            names = {_module_name(p, root) for p in frontier}
            nxt = {f for f in files if f not in seen and _imports_one_of(f, frontier, names)}
            if not nxt:
                break
            seen |= nxt
            frontier = nxt
        found |= seen - targets
    return sorted(os.path.relpath(p) for p in found)


def _python_files(root: str):
    out = []
    for here, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for name in names:
            if name.endswith(".py"):
                out.append(os.path.join(here, name))
                if len(out) > MAX_FILES:
                    return None
    return out


def _module_name(path: str, root: str) -> str:
    parts = module_parts(path, root)
    return parts[-1] if parts else ""


def _imports_one_of(path: str, targets: Set[str], names: Set[str]) -> bool:
    """Whether ``path`` imports one of the files ``targets`` (whose last module
    names are ``names``: a cheap text screen before the imports are resolved)."""
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > MAX_BYTES:
            return False
        with open(path, "rb") as fh:
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return False
    if not any(n and n in text for n in names):
        return False
    files = ProjectFiles(path)
    for m in _FROM.finditer(text):
        level, module = len(m.group(1)), m.group(2)
        imported = [a.strip().split()[0] for a in m.group(3).strip(" ()").split(",") if a.strip()]
        for candidate in [module] + [f"{module}.{a}" if module else a for a in imported]:
            if _resolves_to(files, level, candidate, targets):
                return True
    for m in _IMPORT.finditer(text):
        for item in m.group(1).split(","):
            words = item.split()
            if words and _resolves_to(files, 0, words[0], targets):
                return True
    return False


def _resolves_to(files: ProjectFiles, level: int, dotted: str, targets: Set[str]) -> bool:
    """Whether the module ``dotted`` (or the module a name in it lives in) is one
    of ``targets``."""
    if not dotted or not all(p.isidentifier() for p in dotted.split(".")):
        return False
    loc = files.locate(level, dotted + "._")  # "._": the module itself, whatever it holds
    return loc is not None and os.path.abspath(loc[0]) in targets
