"""Which files a run lints: the walk of directories, flake8's ``exclude`` and
``extend-exclude``, ``.gitignore`` (``gitignore.py``), and the paths the
reports name.  ``pipeline.lint_paths`` calls ``discover``."""

from __future__ import annotations

import os
from typing import List, Optional, Sequence, Tuple

from ..core.atomic import walked_file
from .config import path_matches

# Never walked into (a file named on the command line inside one is skipped
# too, as flake8 does).  Any directory holding a ``pyvenv.cfg`` is a
# virtualenv, whatever its name, and is skipped as well.
DEFAULT_EXCLUDES: Tuple[str, ...] = (
    ".git",
    ".hg",
    ".svn",
    ".bzr",
    "CVS",
    ".tox",
    ".nox",
    ".venv",
    "venv",
    "__pycache__",
    "__pypackages__",
    "build",
    "dist",
    ".eggs",
    "*.egg",
    "*.egg-info",
    "node_modules",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".flake8-mha-cache",
    ".ipynb_checkpoints",
    "site-packages",
)
SUFFIXES = (".py", ".pyi", ".ipynb")


def is_excluded(path: str, patterns: Sequence[str]) -> bool:
    """flake8's rule: a pattern matches the base name, or the absolute path."""
    return path_matches(path, patterns)


def lintable(name: str) -> bool:
    return name.endswith(SUFFIXES)


def is_virtualenv(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "pyvenv.cfg"))


def display_path(path: str) -> str:
    """A path as the reports name it: as given, without ``./`` (``git apply``,
    GitHub's annotations and editors take ``mypkg/model.py``, not
    ``./mypkg/model.py``); an absolute path stays absolute."""
    if path == "-" or os.path.isabs(path):
        return path
    return os.path.normpath(path)


def discover(
    paths: Sequence[str],
    extra_excludes: Sequence[str] = (),
    exclude: Optional[Sequence[str]] = None,
    respect_gitignore: bool = False,
) -> List[str]:
    """Files to lint, in a stable order: each named file as given (unless
    excluded), and ``*.py``/``*.pyi``/``*.ipynb`` below each directory, sorted.
    ``exclude`` replaces ``DEFAULT_EXCLUDES`` (flake8's ``--exclude``),
    ``extra_excludes`` adds to it (``--extend-exclude``); ``respect_gitignore``
    skips, below directories, what ``.gitignore`` names.  ``-`` (stdin) is
    kept as it is."""
    from . import gitignore

    base = list(DEFAULT_EXCLUDES) if exclude is None else list(exclude)
    patterns = base + list(extra_excludes) + [".flake8-mha-cache"]
    out: List[str] = []
    seen = set()

    def add(path: str) -> None:
        real = "-" if path == "-" else os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            out.append(display_path(path))

    for arg in paths:
        if arg == "-":
            add(arg)
            continue
        if is_excluded(arg, patterns) and arg not in (".", ".."):
            continue
        if os.path.isdir(arg):
            rules = {os.path.abspath(arg): gitignore.inherited(arg) if respect_gitignore else []}
            for root, dirs, files in os.walk(arg):
                here = rules.pop(os.path.abspath(root), [])

                def skip(full: str, is_dir: bool) -> bool:
                    if is_excluded(full, patterns):
                        return True
                    return bool(here) and gitignore.ignored(full, is_dir, here)

                dirs[:] = sorted(
                    d
                    for d in dirs
                    if not skip(os.path.join(root, d), True)
                    and not is_virtualenv(os.path.join(root, d))
                )
                if respect_gitignore:
                    for d in dirs:
                        full = os.path.abspath(os.path.join(root, d))
                        rules[full] = here + gitignore.read(full)
                for name in sorted(files):
                    full = os.path.join(root, name)
                    if lintable(name) and not skip(full, False) and walked_file(full):
                        add(full)  # walked_file: a FIFO or a device is skipped, with a notice
        else:
            add(arg)
    return out
