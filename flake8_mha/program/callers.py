"""The project files that call into a set of changed files (issue 26).

A pre-commit hook hands ``check`` the files a commit changes.  A broken
wrapper (a ``~`` removed from a shared mask helper) changes nothing in its
callers' text, yet their findings change: the hook must check them too.
``dependents`` finds, under each changed file's project root, the files that
import it, directly or through a chain of importers (``MAX_HOPS``), read as
text and resolved like the analysis resolves imports (``files.py``).
Nothing is imported or run.
"""

from __future__ import annotations

import ast
import os
from typing import Dict, Iterable, List, Optional, Set

from ..atomic import read_regular
from . import chains
from .files import ProjectFiles, project_root

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
# the project's .py files, per root, for this process (a flake8 run asks per file)
_FILES: Dict[str, Optional[List[str]]] = {}
# per file, by (path, mtime, size): the project files its import lines name
_IMPORTS: Dict[tuple, frozenset] = {}
_CONSTRUCTIONS: Dict[tuple, tuple] = {}
UNKNOWN = "<unknown>"  # an argument whose value is not a literal
MISSING = "<missing>"  # a parameter the construction does not pass (its default applies)


def dependents(changed: Iterable[str]) -> List[str]:
    """The ``.py`` files of the changed files' projects that import one of them
    (or an importer of one), sorted, the changed files themselves left out."""
    targets = {os.path.abspath(p) for p in changed if p.endswith(".py") and os.path.isfile(p)}
    found: Set[str] = set()
    by_root: Dict[str, Set[str]] = {}
    for path in targets:
        by_root.setdefault(project_root(path), set()).add(path)
    for root, wanted in by_root.items():
        importers = _importers(root)
        if importers is None:
            continue
        frontier = set(wanted)
        seen = set(wanted)
        for _ in range(MAX_HOPS):
            nxt = {f for t in frontier for f in importers.get(t, ()) if f not in seen}
            if not nxt:
                break
            seen |= nxt
            frontier = nxt
        found |= seen - targets
    return sorted(os.path.relpath(p) for p in found)


def _importers(root: str) -> Optional[Dict[str, Set[str]]]:
    """``imported file -> the project files that import it``, from each file's
    import lines (re-read only when a file's size or time changed)."""
    files = _python_files(root)
    if files is None:
        return None
    out: Dict[str, Set[str]] = {}
    for path in files:
        for target in _imported_files(path):
            out.setdefault(target, set()).add(path)
    return out


def _imported_files(path: str) -> frozenset:
    try:
        st = os.stat(path)
    except OSError:
        return frozenset()
    key = (path, st.st_mtime_ns, st.st_size)
    got = _IMPORTS.get(key)
    if got is None:
        got = frozenset(_resolve_imports(path, st.st_size))
        if len(_IMPORTS) > 50_000:
            _IMPORTS.clear()
        _IMPORTS[key] = got
    return got


def _resolve_imports(path: str, size: int) -> Set[str]:
    if size > MAX_BYTES:
        return set()
    try:
        text = read_regular(path, MAX_BYTES).decode("utf-8", "replace")
    except OSError:  # a FIFO or a device too (atomic.NotRegular), or over the size
        return set()
    files = ProjectFiles(path)
    package = files.package_of(files.path)
    out: Set[str] = set()
    for level, module, names in chains.imported_from(text):
        for name in names or [None]:
            dotted = ".".join(p for p in (module, name) if p)
            loc = files.locate(level, dotted + "._", package) if dotted else None
            if loc is not None:
                out.add(os.path.abspath(loc[0]))
    return out


def _python_files(root: str):
    """The ``.py`` files below a project root (a folder holding packages). A
    plain folder (a script's, ``$HOME``) is not walked: only its own files."""
    if root in _FILES:
        return _FILES[root]
    out: Optional[List[str]] = []
    packages = any(
        os.path.isfile(os.path.join(root, d, "__init__.py"))
        for d in _listdir(root)
        if os.path.isdir(os.path.join(root, d))
    )
    for here, dirs, names in os.walk(root):
        if not packages:
            dirs[:] = []
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for name in names:
            if name.endswith(".py"):
                out.append(os.path.join(here, name))
                if len(out) > MAX_FILES:
                    out = None
                    break
        if out is None:
            break
    if len(_FILES) > 64:
        _FILES.clear()
    _FILES[root] = out
    return out


# ------------------------------------------------------ constructions of a class


def _listdir(path: str) -> List[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def constructions(path: str, cls: str, params: List[str], own_text: Optional[str] = None):
    """Every construction of the class ``cls`` (defined in ``path``, its
    ``__init__`` taking ``params`` after ``self``) in the project: per
    construction, each parameter's literal value, ``UNKNOWN`` or ``MISSING``.
    None when the project does not settle it: the class is never built in the
    project (its callers are outside), it is subclassed, passed around as a
    value (``partial(Cls, ...)``, ``block=Cls``), or built with a splat.
    ``own_text``: the linted text of ``path`` (an editor's unsaved buffer).
    Returns (that list or None, the files it read)."""
    key = (os.path.abspath(path), cls, tuple(params), own_text)
    if key not in _CONSTRUCTIONS:
        if len(_CONSTRUCTIONS) > 256:
            _CONSTRUCTIONS.clear()
        _CONSTRUCTIONS[key] = _constructions(path, cls, params, own_text)
    return _CONSTRUCTIONS[key]


def _constructions(path, cls, params, own_text):
    files = [os.path.abspath(path)] + [os.path.abspath(p) for p in dependents([path])]
    return _read_constructions(files, cls, params, own_text), files[1:]


def _read_constructions(files, cls, params, own_text):
    out: List[Dict[str, object]] = []
    for i, name in enumerate(files):
        if i == 0 and own_text is not None:
            text = own_text
        else:
            try:
                text = read_regular(name, MAX_BYTES).decode("utf-8", "replace")
            except OSError:
                return None
        if cls not in text:
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        found = _built_in(tree, cls, params)
        if found is None:
            return None
        out.extend(found)
    return out or None


def _built_in(tree: ast.Module, cls: str, params: List[str]) -> Optional[List[Dict[str, object]]]:
    """The constructions of ``cls`` in one file, or None when one of them, or
    another use of the class, leaves the project's constructions unsettled."""
    names = {cls}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.name == cls and a.asname:
                    names.add(a.asname)
    calls: List[ast.Call] = []
    called = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            if any(_names_class(b, names) for b in node.bases):
                return None  # a subclass: its own constructions and super() calls
        elif isinstance(node, ast.Call) and _names_class(node.func, names):
            calls.append(node)
            called.add(id(node.func))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Name, ast.Attribute)) and _names_class(node, names):
            if id(node) not in called and isinstance(node.ctx, ast.Load):
                return None  # passed around as a value: built elsewhere, with anything
    out = []
    for call in calls:
        got: Dict[str, object] = {p: MISSING for p in params}
        for i, a in enumerate(call.args):
            if isinstance(a, ast.Starred) or i >= len(params):
                return None
            got[params[i]] = _literal(a)
        for k in call.keywords:
            if k.arg is None:
                return None
            got[k.arg] = _literal(k.value)
        out.append(got)
    return out


def _names_class(node: ast.AST, names: Set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in names
    return isinstance(node, ast.Attribute) and node.attr in names


def _literal(node: ast.AST) -> object:
    if isinstance(node, ast.Constant) and (
        node.value is None or type(node.value) in (bool, int, float, str)
    ):
        return node.value
    return UNKNOWN


_SIGNATURES: Dict[tuple, object] = {}


def init_signature(text: str, cls: str):
    """(parameters after ``self``, {parameter: literal default}) of the
    ``__init__`` of the top-level class ``cls`` in ``text``; None when it has
    none of its own, or takes ``*args``/``**kwargs``."""
    key = (hash(text), len(text), cls)
    if key not in _SIGNATURES:
        if len(_SIGNATURES) > 256:
            _SIGNATURES.clear()
        _SIGNATURES[key] = _init_signature(text, cls)
    return _SIGNATURES[key]


def _init_signature(text: str, cls: str):
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    args = item.args
                    if args.vararg or args.kwarg or args.posonlyargs:
                        return None
                    params = [a.arg for a in args.args[1:]] + [a.arg for a in args.kwonlyargs]
                    defaults: Dict[str, object] = {}
                    pos = args.args[1:]
                    for a, d in zip(pos[len(pos) - len(args.defaults) :], args.defaults):
                        defaults[a.arg] = _literal(d)
                    for a, d in zip(args.kwonlyargs, args.kw_defaults):
                        if d is not None:
                            defaults[a.arg] = _literal(d)
                    return params, defaults
    return None
