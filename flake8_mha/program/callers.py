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
import re
from typing import Dict, Iterable, List, Optional, Set

from .files import ProjectFiles, module_parts, project_root

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


# the project's .py files, per root, for this process (a flake8 run asks per file)
_FILES: Dict[str, Optional[List[str]]] = {}
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
    if root in _FILES:
        return _FILES[root]
    out: Optional[List[str]] = []
    for here, dirs, names in os.walk(root):
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


# ------------------------------------------------------ constructions of a class


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
                if os.path.getsize(name) > MAX_BYTES:
                    return None
                with open(name, "rb") as fh:
                    text = fh.read().decode("utf-8", "replace")
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
