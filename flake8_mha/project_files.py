"""The project around one linted file, read with Python's ``ast`` only: its
root, which of its files an import names, and the summaries of the
functions those files define (``summaries.py``), kept once per process and
in the results cache's side store.

``project.py`` builds on this to follow a call of a summarised function at
its call site in the LibCST tree; the project-aware gate (``reaches_a_sink``)
needs nothing more than this module, so a file without an attention word
costs no LibCST import.  The project root: the linted file's directory, or,
when that directory is a package (holds ``__init__.py``), the directory above
its topmost package.  Only files below the root are read; nothing outside it
is followed (site-packages, torch itself).  See docs/reach.md.
"""

from __future__ import annotations

import ast
import hashlib
import os
from typing import Dict, List, Optional, Tuple

from .summaries import (
    MAX_FILE_BYTES,
    REEXPORTS,
    SUMMARY_VERSION,
    dotted_name,
    summarise,
    valid_table,
)
from .torch_api import SDPA_NAME

MAX_REEXPORT_HOPS = 3

# --------------------------------------------------------------------------- the root


def project_root(path: str) -> str:
    """The directory above the topmost package holding ``path`` (or its own
    directory when that is not a package)."""
    here = os.path.dirname(os.path.abspath(path))
    while os.path.isfile(os.path.join(here, "__init__.py")):
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    return here


def module_parts(path: str, root: str) -> List[str]:
    rel = os.path.relpath(os.path.abspath(path), root)
    parts = rel.replace(os.sep, "/").split("/")
    parts[-1] = os.path.splitext(parts[-1])[0]
    if parts[-1] == "__init__":
        parts.pop()
    return parts


def module_file(root: str, parts: List[str]) -> Optional[str]:
    if not parts or any(not p.isidentifier() for p in parts):
        return None
    base = os.path.join(root, *parts)
    for candidate in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(candidate):
            return candidate
    return None


# --------------------------------------------------------------------------- the project

# summaries already read in this process (a flake8 run asks for the same
# imported files once per linted file), by summary key
_MEMO: Dict[str, Dict[str, dict]] = {}
MAX_MEMO = 2048


class ProjectFiles:
    """The project around one linted file: its root, and the summaries of the
    project files it imports (read once, through ``store`` when given).
    ``deps`` lists every project file a summary was asked of, with the
    SHA-256 of its bytes, for the results cache's key."""

    def __init__(self, path: str, store=None, version: str = "", files: bool = True):
        self.path = os.path.abspath(path)
        # ``files`` False: this file alone (``--no-project-wide``, text from stdin, a
        # test's string): its own wrappers are followed, no other file is read
        self.files = files
        self.root = project_root(path)
        self.package = module_parts(path, self.root)[:-1]
        if os.path.basename(path) == "__init__.py":
            self.package = module_parts(path, self.root)
        self.store = store
        self.version = version
        self._files: Dict[str, Optional[Dict[str, dict]]] = {}
        self.deps: Dict[str, str] = {}
        self._located: Dict[tuple, Optional[Tuple[str, str]]] = {}
        self._own_source: Optional[str] = None
        self._own_table: Optional[Dict[str, dict]] = None

    def own(self, source: str) -> None:
        """The linted file's own text.  Its functions, classes and factories are
        summarised as another file's are, and a call of one is followed through
        its summary at the call site: the same mechanism wherever the callee
        lives (docs/reach.md)."""
        if source != self._own_source:
            self._own_source, self._own_table = source, None

    def own_name(self) -> str:
        """The linted file as a ``through`` entry names it."""
        return self.relative(self.path)

    def _own(self) -> Dict[str, dict]:
        if self._own_table is None:
            src = self._own_source or ""
            key = "own\0" + hashlib.sha256(src.encode("utf-8", "surrogatepass")).hexdigest()
            got = _MEMO.get(key)
            if got is None:
                got = summarise(src) if SDPA_NAME in src else {}
                if len(_MEMO) >= MAX_MEMO:
                    _MEMO.clear()
                _MEMO[key] = got
            self._own_table = got
        return self._own_table

    # -- names to files ---------------------------------------------------------
    def locate(
        self, level: int, dotted: str, package: Optional[Tuple[str, ...]] = None
    ) -> Optional[Tuple[str, str]]:
        """(file, object path) for a name the linted file imported: level 1,
        ``attn.attend`` for ``from .attn import attend``; level 0,
        ``models.attn.attend`` for an absolute import.  ``package``: the
        package a relative import is read in (default: the linted file's)."""
        if not self.files:
            return None
        package = tuple(self.package) if package is None else package
        key = (level, dotted, package)
        if key not in self._located:
            self._located[key] = self._locate(level, dotted, list(package))
        return self._located[key]

    def _locate(self, level: int, dotted: str, package: List[str]) -> Optional[Tuple[str, str]]:
        rest = dotted.split(".") if dotted else []
        if level:
            if level - 1 > len(package):
                return None
            base = package[: len(package) - (level - 1)]
        else:
            base = []
        for cut in range(len(rest), -1, -1):  # cut 0: the package's own __init__
            parts = base + rest[:cut]
            found = module_file(self.root, parts)
            if found is not None and os.path.abspath(found) != self.path:
                obj = ".".join(rest[cut:])
                return (found, obj) if obj else None
        return None

    def imported_names(self, tree: ast.Module) -> List[str]:
        """The names this file binds by importing from its own project that some
        call of the file reaches a wrapper through (``attend`` for ``from .attn
        import attend`` and ``attend(...)``, ``A`` for ``import pkg.attn as A``
        and ``A.attend(...)``, a class whose ``forward`` is one, a factory):
        code that uses one may call a wrapper without a trigger word, so the
        focused parse (``focus.py``) keeps it.  A project import that leads to
        no wrapper keeps nothing (``import torch`` inside torch's own tree)."""
        bound: Dict[str, List[Tuple[int, str]]] = {}
        calls: List[ast.Call] = []
        for node in _nodes(tree):  # one walk: imports anywhere bind (the calls are read after)
            if isinstance(node, ast.Call):
                calls.append(node)
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    dotted = ".".join(p for p in (node.module, alias.name) if p)
                    if alias.name != "*" and self._in_project(node.level, dotted):
                        bound.setdefault(alias.asname or alias.name, []).append(
                            (node.level, dotted)
                        )
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if self._in_project(0, alias.name):
                        name = alias.asname or alias.name.split(".")[0]
                        bound.setdefault(name, []).append((0, alias.name if alias.asname else name))
        if not bound:
            return []
        names: List[str] = []
        for node in calls:
            callee = dotted_name(node.func)
            chain = callee.split(".") if callee is not None else None
            if chain is None or chain[0] not in bound or chain[0] in names:
                continue
            for level, dotted in bound[chain[0]]:
                target = (level, ".".join([dotted, *chain[1:]]))
                try:
                    useful = self._function(target, True) or self._function(target, False)
                except (OSError, ValueError, RecursionError):
                    useful = True  # unreadable: keep, as before
                if useful:
                    names.append(chain[0])
                    break
        return names

    def _in_project(self, level: int, dotted: str) -> bool:
        """Whether the module ``dotted`` (or a package on its way) is a file of
        the project."""
        if not self.files:
            return False
        package = list(self.package)
        if level:
            if level - 1 > len(package):
                return False
            base = package[: len(package) - (level - 1)]
        else:
            base = []
        rest = dotted.split(".") if dotted else []
        return any(
            module_file(self.root, base + rest[:cut]) is not None
            for cut in range(1 if not level else 0, len(rest) + 1)
        )

    def summaries(self, filename: str) -> Dict[str, dict]:
        if filename in self._files:
            return self._files[filename] or {}

        def table(data: bytes) -> Dict[str, dict]:
            try:
                text = decode(data)
            except (SyntaxError, UnicodeDecodeError, LookupError):
                return {}
            return summarise(text, os.path.basename(filename) == "__init__.py")

        got = self._kept(filename, (str(SUMMARY_VERSION),), valid_table, table)
        self._files[filename] = got
        return got or {}

    def _kept(self, filename: str, salt: Tuple[str, ...], valid, compute) -> Optional[dict]:
        """What ``compute(bytes)`` gives for a project file, read once per process
        (``_MEMO``) and kept in the store, keyed by the file's bytes, the
        analyzer version and ``salt`` (what is asked of it).  The file becomes a
        dependency of the linted file's cached findings.  None when it cannot
        be read or is larger than ``MAX_FILE_BYTES``."""
        try:
            with open(filename, "rb") as fh:
                data = fh.read(MAX_FILE_BYTES + 1)
        except OSError:
            return None
        if len(data) > MAX_FILE_BYTES:
            return None
        digest = hashlib.sha256(data).hexdigest()
        self.deps[filename] = digest
        head, *tail = salt
        key = hashlib.sha256("\0".join([head, self.version, digest, *tail]).encode()).hexdigest()
        got = _MEMO.get(key)
        if got is None and self.store is not None:
            got = self.store.get(key)
            if not valid(got):
                got = None
        if got is None:
            got = compute(data)
            if self.store is not None:
                self.store.put(key, got)
        if len(_MEMO) >= MAX_MEMO:
            _MEMO.clear()
        _MEMO[key] = got
        return got

    def relative(self, filename: str) -> str:
        return os.path.relpath(filename, self.root).replace(os.sep, "/")

    def _function(self, target: Tuple[int, str], call: bool) -> Optional[Tuple[str, dict]]:
        """``call``: the target is called (a function); otherwise it is
        constructed or made (a class: its forward; a factory: what it returns)."""
        loc = self._defined(target)
        if loc is None:
            return None
        filename, obj = loc
        table = self.summaries(filename)  # read once: _defined's last step read it
        if call:
            got = table.get(obj)
            if got is not None and "." in obj:
                return None  # Class.method called unbound: self would shift
        else:
            got = table.get(obj + ".forward") or table.get(obj + "()")
        return (filename, got) if got is not None else None

    def _defined(self, target: Tuple[int, str]) -> Optional[Tuple[str, str]]:
        """(file, name) where an imported name is defined, through a package's
        re-exports (one hop per ``__init__.py``, at most ``MAX_REEXPORT_HOPS``)."""
        loc = self.locate(*target)
        for _ in range(MAX_REEXPORT_HOPS):
            if loc is None:
                return None
            filename, obj = loc
            table = self.summaries(filename)
            head, _, rest = obj.partition(".")
            again = table.get(REEXPORTS, {}).get(head)
            if again is None or head in table:
                return loc
            package = tuple(module_parts(filename, self.root))
            loc = self.locate(again[0], again[1] + ("." + rest if rest else ""), package)
        return None


def decode(data: bytes) -> str:
    import io
    import tokenize

    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    return text[1:] if text.startswith("\ufeff") else text


def reaches_a_sink(source: str, path: str, tree: Optional[ast.Module] = None) -> bool:
    """The project-aware gate: whether a file that names no attention word
    calls a function of its project, or builds a class or factory of it,
    whose summary reaches a sink (``attend(...)``, ``self.attn = Attention()``
    with ``from .attn import Attention``).  Such a file is analysed like any
    other.  Read with ``ast``; False for a file not on disk."""
    if "import" not in source or not os.path.isfile(path):
        return False
    if tree is None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
    try:
        return bool(ProjectFiles(path).imported_names(tree))
    except (OSError, ValueError, RecursionError):
        return False


def _nodes(tree: ast.AST):
    """Every node of ``tree``, depth first: what ``ast.walk`` yields (in another
    order) at about 60% of its cost, which shows on torch's own tree, where
    every file imports from its project."""
    stack = [tree]
    pop, push, extend, AST = stack.pop, stack.append, stack.extend, ast.AST
    while stack:
        node = pop()
        yield node
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                extend(v for v in value if isinstance(v, AST))
            elif isinstance(value, AST):
                push(value)
