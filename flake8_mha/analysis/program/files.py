"""The project around one linted file, read with Python's ``ast`` only: its
root, which of its files an import names, and the summaries of the
functions those files define (``summaries.py``), kept once per process and
in the results cache's side store.  ``callsites.py`` follows a summarised
call in the LibCST tree; the gate (``ProjectFiles.gate``) needs only this
module, so a file without an attention word costs no LibCST import.  The
root and what is read below it: docs/reach.md, "The project root"."""

from __future__ import annotations

import ast
import hashlib
import os
from stat import S_ISREG
from typing import Dict, List, Optional, Tuple

from .held_lists import ITEMS
from ...core import walk as astwalk
from ...core.atomic import read_regular
from . import chains, import_lines, module_bases, score_helpers
from .forms import names_a_sink
from .sizes import handed_through
from .signatures import noted, parse
from .module_numbers import module_constants, valid_constants  # noqa: F401  (a package name)
from .summaries import (
    MAX_FILE_BYTES,
    TORCH_BUILT,
    TORCH_LAYERS,
    TORCH_MODULES,
    PARTIAL_ARGS,
    REEXPORTS,
    SIZE_CALLS,
    SIZES,
    SUMMARY_VERSION,
    TORCH_BATCH_FIRST,
    dotted_name,
    summarise,
)
from .composing import MAX_CHAIN, Composing, decode
from .tables import valid_table

MAX_REEXPORT_HOPS = 3
MAX_BASE_HOPS = 6  # classes followed up to ``nn.Module`` (``Project.module_class``)
CONSTANTS_VERSION = 3
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DOTTED = (ast.Name, ast.Attribute)  # a name a use can read as dotted


class TorchMade(str):
    """The torch attention module class (qualified) a project function or
    class makes; ``built`` when it is a subclass constructed with torch's own
    arguments (no ``__init__`` of its own): its construction is the module's."""

    __slots__ = ("built", "own_forward", "given", "items", "batch_first")

    def __new__(
        cls, name: str, built: bool, own_forward=False, given=None, items=False, batch_first=None
    ):
        self = super().__new__(cls, name)
        self.built = built
        self.own_forward = own_forward
        self.items = items  # a container of such modules, each run by a call of its items
        # a factory's ``batch_first``: a literal, or its parameter (``TORCH_BATCH_FIRST``)
        self.batch_first = batch_first
        # a module-level ``partial`` of the class: its arguments ([keyword or "", source])
        self.given = given
        return self


# --------------------------------------------------------------------------- the root


def project_root(path: str) -> str:
    """The directory above the topmost package holding ``path`` (or its own
    directory when that is not a package).  A directory without an
    ``__init__.py`` inside a package is a namespace portion of it
    (torch-molecule's ``torch_molecule/generator/``, whose modules import
    ``from ...nn import ...``): the package goes on above it."""
    here = os.path.dirname(os.path.abspath(path))
    while True:
        parent = os.path.dirname(here)
        if parent == here:
            break
        if os.path.isfile(os.path.join(here, "__init__.py")) or (
            os.path.basename(here).isidentifier()
            and os.path.isfile(os.path.join(parent, "__init__.py"))
        ):
            here = parent
            continue
        break
    return here


def module_parts(path: str, root: str) -> List[str]:
    rel = os.path.relpath(os.path.abspath(path), root)
    parts = rel.replace(os.sep, "/").split("/")
    parts[-1] = os.path.splitext(parts[-1])[0]
    if parts[-1] == "__init__":
        parts.pop()
    return parts


def module_file(root: str, parts: List[str]) -> Optional[str]:
    """``root/a/b.py`` or ``root/a/b/__init__.py`` for ``["a", "b"]``, if it is a
    regular file.  Called for every cut of every import name (callers.py
    resolves the imports of every file of a root): one ``stat`` a candidate,
    without ``os.path.join`` and ``isfile``'s layers."""
    if not parts or not all(map(str.isidentifier, parts)):
        return None
    base = os.path.join(root, _SEP.join(parts))
    for candidate in (base + ".py", base + _INIT):
        try:
            if S_ISREG(os.stat(candidate).st_mode):
                return candidate
        except (OSError, ValueError):
            pass
    return None


_SEP = os.sep
_INIT = os.sep + "__init__.py"


# --------------------------------------------------------------------------- the project

# summaries already read in this process (a flake8 run asks for the same
# imported files once per linted file), by summary key
_MEMO: Dict[str, Dict[str, dict]] = {}
# leads_to_sink's answers, by (root, file, mtime, size)
_LEADS: Dict[tuple, bool] = {}
MAX_MEMO = 2048


class ProjectFiles(Composing):
    """The project around one linted file: its root, and the summaries of the
    project files it imports (read once, through ``store`` when given).
    ``deps`` lists every project file a summary was asked of, with the
    SHA-256 of its bytes, for the results cache's key."""

    def __init__(self, path: str, store=None, version: str = "", files: bool = True):
        self.path = os.path.abspath(path)
        self.given_relative = not os.path.isabs(path)
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
        self.deps: Dict[str, Optional[str]] = {}  # path -> SHA-256, None: absent
        self._located: Dict[tuple, Optional[Tuple[str, str]]] = {}
        self._chained: Dict[Tuple[str, str], Optional[dict]] = {}
        self._own_source: Optional[str] = None
        self.module = None  # the linted file's LibCST module, while it is analysed
        self._own_table: Optional[Dict[str, dict]] = None
        self._own_tree: Optional[ast.Module] = None
        self._own_scores: Optional[Dict[str, dict]] = None  # ``score_ops`` of the linted file
        self.again = False  # the linted file was linted before in this process (reparse.py)

    def own(self, source: str, tree: Optional[ast.Module] = None) -> None:
        """The linted file's own text.  Its functions, classes and factories are
        summarised as another file's are, and a call of one is followed through
        its summary at the call site: the same mechanism wherever the callee
        lives (docs/reach.md).  ``tree``: Python's ``ast`` of exactly ``source``
        when the caller has it (flake8 hands it over), read instead of parsing
        the text again; it is not changed."""
        if source != self._own_source:
            self._own_source, self._own_table, self._own_scores = source, None, None
            self._chained.clear()
        self._own_tree = tree

    def own_tree(self) -> Optional[ast.Module]:
        """Python's ``ast`` of the linted file's whole text (not the focused
        text LibCST parses), parsed once if the caller did not hand it over."""
        if self._own_tree is None and self._own_source is not None:
            try:
                self._own_tree = ast.parse(self._own_source)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return None
        return self._own_tree

    def own_name(self) -> str:
        """The linted file as a ``through`` entry names it."""
        return self.relative(self.path)

    def _own(self) -> Dict[str, dict]:
        if self._own_table is None:
            src = self._own_source or ""
            key = "own\0" + hashlib.sha256(src.encode("utf-8", "surrogatepass")).hexdigest()
            got = _MEMO.get(key)
            if got is None:
                # summarise screens the text itself: a file that names no sink
                # and imports no project code has no summary
                got = summarise(src, tree=self._own_tree, reuse=self.again)
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
                if level and cut < len(rest) and os.path.basename(found) == "__init__.py":
                    self._absent(parts + [rest[cut]])
                return (found, obj) if obj else None
        return None

    def _absent(self, parts: List[str]) -> None:
        """A relative import names a module that is not there (yet: ``git
        stash pop`` or a branch switch may bring it): its places are
        dependencies, absent, so that its arrival re-analyses the file."""
        if not all(p.isidentifier() for p in parts):
            return
        base = os.path.join(self.root, *parts)
        for candidate in (base + ".py", os.path.join(base, "__init__.py")):
            if not os.path.lexists(candidate):
                self.deps.setdefault(candidate, None)

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
        used: List[Tuple[ast.expr, bool]] = []  # (a base or an argument, called?)
        registries: List[str] = []  # dicts of classes indexed, then called
        for node in astwalk.depth_first(tree):  # one walk: imports anywhere bind
            if isinstance(node, ast.Call):
                calls.append(node)
                if isinstance(node.func, ast.Subscript) and isinstance(node.func.value, ast.Name):
                    registries.append(node.func.value.id)  # ``ATTENTION[kind](dim, heads)``
                # ``partial(attend, ...)``, ``Block(d, attn_layer=Attention)``: called later
                used.extend((a, True) for a in node.args if isinstance(a, _DOTTED))
                used.extend((k.value, True) for k in node.keywords if chains.names_class(k.value))
            elif isinstance(node, _FUNCTIONS):  # ``def __init__(self, d, attn_layer=Attention)``
                a = node.args  # also ``def sample(attn: CausalSelfAttention)``: ``attn`` called
                given = [*a.defaults, *a.kw_defaults, *(noted(p.annotation) for p in a.args)]
                used.extend((d, True) for d in given if d is not None and chains.names_class(d))
            elif (  # ``self.attend = attend``: called as ``self.attend(...)``
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Name)
                and isinstance(node.targets[0], ast.Attribute)
            ):
                used.append((node.value, True))
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Subscript):
                if isinstance(node.value.value, ast.Name):  # ``fn = FUNCTIONS[impl]``, called
                    registries.append(node.value.value.id)
            elif (
                isinstance(node, ast.Dict)
                and node.values
                and all(map(chains.names_class, node.values))
            ):
                used.extend((v, True) for v in node.values)  # ``{"attn": Attention}[kind](d)``
            elif isinstance(node, ast.ClassDef):  # ``class SelfAttention(AttentionBase)``
                used.extend((b, False) for b in node.bases if isinstance(b, _DOTTED))
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
        asked = set()  # a callee called again asks the same question
        uses = [(node.func, True) for node in calls] + used
        for expr, called in uses:
            callee = dotted_name(expr)
            if callee is None or (callee, called) in asked:
                continue
            asked.add((callee, called))
            chain = callee.split(".")
            if chain[0] not in bound or chain[0] in names:
                continue
            for level, dotted in bound[chain[0]]:
                target = (level, ".".join([dotted, *chain[1:]]))
                try:
                    useful = (
                        (
                            self._function(target, True)
                            or self._function(target, False)
                            or self.torch_factory(target)
                            or self._a_method_reaches(target)  # ``self.vit.forward_features``
                            or self.sizes_at(target)  # ``Block(100, 8)``: MHA008 at the call
                        )
                        if called
                        else self._function(target, False) or self._a_method_reaches(target)
                    )
                except (OSError, ValueError, RecursionError):
                    useful = True  # unreadable: keep, as before
                if useful:
                    names.append(chain[0])
                    break
        for name in dict.fromkeys(registries):
            if name in bound and name not in names and self._a_kind_reaches(bound[name]):
                names.append(name)
        return names

    def _a_method_reaches(self, target: Tuple[int, str]) -> bool:
        """Some method of the class the import ``target`` names reaches a
        sink (a base class whose ``self._attend(...)`` its subclasses call),
        or builds a torch attention module (a mixin's factory method)."""
        loc = self._defined(target)
        return loc is not None and "." not in loc[1] and self.class_reaches(*loc)

    def class_reaches(self, filename: str, cls: str) -> bool:
        """Some method of the class ``cls`` of ``filename`` reaches a sink, or
        builds a torch attention module."""
        prefix = cls + "."
        table = self.summaries(filename)
        if any(key.startswith(prefix) for key in table.get(TORCH_MODULES, {})):
            return True  # a mixin's method that builds a torch module (``_make_attention``)
        return any(
            isinstance(key, str)
            and key.startswith(prefix)
            and self.effective(filename, key) is not None
            for key in list(table)
        )

    def torch_factory(self, target: Tuple[int, str]) -> Optional[str]:
        """The torch attention module class a project function the import
        ``target`` names builds and returns (``TORCH_MODULES``), else None."""
        loc = self._defined(target)
        if loc is None or loc[1].count(".") > 1:
            return None
        table = self.summaries(loc[0])
        made = table.get(TORCH_MODULES, {}).get(loc[1])
        if made is not None and "." in loc[1] and made.endswith(ITEMS):
            return None  # a method's: a module itself, not a container (``Base._make_attention``)
        if made is None:
            # a layer built by torch's ``__init__`` that runs a forward of its own
            layer = table.get(TORCH_LAYERS, {}).get(loc[1])
            return TorchMade(layer, True, True) if layer is not None else None
        given = table.get(PARTIAL_ARGS, {}).get(loc[1])
        if made.endswith(ITEMS):  # a container of such modules (``held_lists.returned_items``)
            return TorchMade(made[: -len(ITEMS)], False, items=True)
        built = loc[1] in table.get(TORCH_BUILT, {})
        flag = table.get(TORCH_BATCH_FIRST, {}).get(loc[1])
        if isinstance(flag, list) and flag[:1] == ["const"]:
            flag = self._constant_in(loc[0], flag[1])
            flag = flag if type(flag) is bool else None
        elif isinstance(flag, list) and flag[:1] == ["partial"]:
            flag = self._partial_flag(loc[0], flag[1])
        return TorchMade(made, built, given=given, batch_first=flag)

    def _partial_flag(self, filename: str, name: str) -> Optional[bool]:
        """The literal ``batch_first`` of the module-level partial ``name``
        (``EncoderLayer = partial(nn.TransformerEncoderLayer,
        batch_first=True)``) as the file ``filename`` names it: its own, or
        one a project file it imports defines; None when unknown."""
        given = self.summaries(filename).get(PARTIAL_ARGS, {}).get(name)
        if given is None:
            loc = self._imported_into(filename, name)
            if loc is None or "." in loc[1]:
                return None
            given = self.summaries(loc[0]).get(PARTIAL_ARGS, {}).get(loc[1])
        flags = [v for k, v in given or () if k == "batch_first"]
        return {"True": True, "False": False}.get(flags[0]) if len(flags) == 1 else None

    def _constant_in(self, filename: str, name: str):
        """The value of the module-level constant ``name`` (``BATCH_FIRST``,
        ``cfg.BATCH_FIRST``) as the file ``filename`` names it: its own, or one
        of a project file it imports; None when unknown."""
        head, _, rest = name.partition(".")
        if self._import_of(filename, head) is None:
            return None if rest else self.constants(filename).get(name)
        loc = self._imported_into(filename, name)
        return self.constants(loc[0]).get(loc[1]) if loc is not None and "." not in loc[1] else None

    def _import_of(self, filename: str, head: str) -> Optional[list]:
        """``[level, dotted]`` of the import that binds ``head`` in the project
        file ``filename``; None when none does."""

        def table(data: bytes) -> Dict[str, list]:
            try:
                return chains.imports(parse(decode(data)))
            except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError):
                return {}

        got = self._kept(filename, ("imports", "1"), _valid_imports, table, False) or {}
        return got.get(head)

    def _imported_into(self, filename: str, name: str) -> Optional[Tuple[str, str]]:
        """(file, name) where the name ``name`` (``cfg.BATCH_FIRST``: its
        head) the project file ``filename`` imports is defined; None for a
        name it does not import from its project."""
        head, _, rest = name.partition(".")
        imported = self._import_of(filename, head)
        if imported is None:
            return None
        level, dotted = imported
        return self._defined(
            (level, dotted + ("." + rest if rest else "")), self.package_of(filename)
        )

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
        if os.path.basename(filename) != "__init__.py" and not self.leads_to_sink(filename):
            self.depend(filename)  # it may become a wrapper: its callers' findings follow it
            self._files[filename] = {}
            return {}

        def table(data: bytes) -> Dict[str, dict]:
            try:
                text = decode(data)
            except (SyntaxError, UnicodeDecodeError, LookupError):
                return {}
            return summarise(text, os.path.basename(filename) == "__init__.py")

        got = self._kept(filename, (str(SUMMARY_VERSION),), valid_table, table)
        self._files[filename] = got
        return got or {}

    def leads_to_sink(self, filename: str, depth: int = 0) -> bool:
        """A text screen before a file is summarised: whether it names SDPA, or
        imports a project file that does, or one that imports such a file
        (``MAX_CHAIN`` deep).  A file that does not cannot reach a sink
        through any chain of calls, so it is not parsed at all; the answer is
        kept for the process, keyed by the file's size and time."""
        try:
            st = os.stat(filename)
        except OSError:
            return False
        key = (self.root, filename, st.st_mtime_ns, st.st_size)
        if key in _LEADS:
            return _LEADS[key]
        if depth > MAX_CHAIN or st.st_size > MAX_FILE_BYTES:
            return False
        _LEADS[key] = False  # met again while being decided (an import cycle)
        try:
            text = decode(read_regular(filename, MAX_FILE_BYTES))
        except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
            text = ""
        found = names_a_sink(text) or self.imports_lead_to_sink(
            text, self.package_of(filename), depth + 1
        )
        if len(_LEADS) > 20_000:
            _LEADS.clear()
        _LEADS[key] = found
        return found

    def gate(self, source: str, tree: Optional[ast.Module] = None) -> bool:
        """The project-aware gate: whether a file that names no attention word
        calls a function of its project, or builds a class or factory of it,
        whose summary reaches a sink (``attend(...)``, ``self.attn = Attention()``
        with ``from .attn import Attention``).  Such a file is analysed like any
        other.  First as text (``imports_lead_to_sink``), then with ``ast``; the
        files it reads become dependencies of the cached findings."""
        if "import" not in source or not self.imports_lead_to_sink(source):
            return False
        try:
            return bool(self.imported_names(tree or ast.parse(source)))
        except (SyntaxError, ValueError, RecursionError, MemoryError, OSError):
            return False

    def imports_lead_to_sink(self, text: str, package=None, depth: int = 0) -> bool:
        """Whether one of the project files ``text``'s import lines name leads
        to SDPA (``leads_to_sink``): read as text, no parse.  The gate asks it
        first, so a file whose imports lead nowhere (a file of torch's own
        tree: torch is no project code to the screen) costs a few regular
        expressions.  The files it names become dependencies of the cached
        findings."""
        if not import_lines.imports_project_code(text):
            return False
        package = tuple(self.package) if package is None else package
        for level, module, names in import_lines.imported_from(text):
            for f in self._lead(level, module, names, package):
                if depth == 0:
                    self.depend(f)
                if self.leads_to_sink(f, depth):
                    return True
        return False

    def _lead(self, level: int, module: str, names, package) -> List[str]:
        """The project files an import line may bring a callee from: the
        module itself for ``import pkg.attn``; for ``from m import a, b``
        each name's submodule, or the module's file, or, for a package's
        ``__init__.py``, the file each name is re-exported from (not the whole
        package, which a large project's ``__init__`` imports at once)."""
        out: List[str] = []
        for name in names or [None]:
            dotted = ".".join(p for p in (module, name) if p)
            loc = self.locate(level, dotted + "._", package) if dotted else None
            if loc is None:
                continue
            filename, obj = loc
            if obj == "_" or os.path.basename(filename) != "__init__.py" or name is None:
                out.append(filename)  # a module, or the module the name is defined in
                continue
            table = self.summaries(filename)
            head = obj.split(".")[0]
            again = table.get(REEXPORTS, {}).get(head)
            if again is None and (head in table or any(k.startswith(head + ".") for k in table)):
                out.append(filename)  # a wrapper the ``__init__.py`` defines (eole's ``_sdpa``)
            elif again is not None:
                found = self.locate(again[0], again[1] + "._", self.package_of(filename))
                if found is not None:
                    out.append(found[0])
        return out

    def _kept(
        self, filename: str, salt: Tuple[str, ...], valid, compute, store: bool = True
    ) -> Optional[dict]:
        """What ``compute(bytes)`` gives for a project file, read once per process
        (``_MEMO``) and, unless ``store`` is False, kept in the results store,
        keyed by the file's bytes, the analyzer version and ``salt`` (what is
        asked of it).  The file becomes a
        dependency of the linted file's cached findings.  None when it cannot
        be read or is larger than ``MAX_FILE_BYTES``."""
        try:
            data = read_regular(filename, MAX_FILE_BYTES)
        except OSError:  # absent, not a regular file, or over the size
            return None
        digest = hashlib.sha256(data).hexdigest()
        self.deps[filename] = digest
        head, *tail = salt
        key = hashlib.sha256("\0".join([head, self.version, digest, *tail]).encode()).hexdigest()
        got = _MEMO.get(key)
        kept = self.store if store else None
        if got is None and kept is not None:
            got = kept.get(key)
            if not valid(got):
                got = None
        if got is None:
            got = compute(data)
            if kept is not None:
                kept.put(key, got)
        if len(_MEMO) >= MAX_MEMO:
            _MEMO.clear()
        _MEMO[key] = got
        return got

    def constants(self, filename: str) -> Dict[str, object]:
        """The module-level constants of a project file (``WIDTH = 512``,
        ``HEADS = WIDTH // 64``): names assigned once at its top level to a
        number, a bool, or arithmetic on its earlier constants."""

        def table(data: bytes) -> Dict[str, object]:
            try:
                return module_constants(parse(decode(data)))
            except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError):
                return {}

        got = self._kept(filename, ("constants", str(CONSTANTS_VERSION)), valid_constants, table)
        return got or {}

    def score_ops(self, filename: str) -> Dict[str, dict]:
        """The helpers of score arithmetic a project file defines
        (``score_helpers.table``), the linted file's own from its ``ast``."""
        if filename == self.path:
            if self._own_scores is None:
                tree = self.own_tree() if score_helpers.may_hold(self._own_source or "") else None
                self._own_scores = score_helpers.table(tree) if tree is not None else {}
            return self._own_scores

        def table(data: bytes) -> Dict[str, dict]:
            try:
                text = decode(data)
                return score_helpers.table(parse(text)) if score_helpers.may_hold(text) else {}
            except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError):
                return {}

        salt = ("score-ops", str(score_helpers.VERSION))
        # read for many calls' callees and small: kept for the process, not in the store
        return self._kept(filename, salt, score_helpers.valid_table, table, store=False) or {}

    def module_class(self, target: Tuple[int, str], package=None, depth: int = 0) -> bool:
        """Whether the class an import names (``(level, dotted)``, read in
        ``package``, default the linted file's) derives from ``torch.nn.Module``
        through the classes of the project's files (``module_bases``)."""
        loc = self._defined(target, package)
        return loc is not None and "." not in loc[1] and self._module_in(*loc, depth)

    def bases_of(self, filename: str) -> Dict[str, list]:
        """``module_bases.table`` of a project file, read once per file state."""
        got = self._kept(
            filename, module_bases.SALT, module_bases.valid, module_bases.table_of, False
        )
        return got or {}

    def _module_in(self, filename: str, name: str, depth: int) -> bool:
        bases = self.bases_of(filename).get(name, ())
        for base in bases if depth < MAX_BASE_HOPS else ():
            if base[0] == module_bases.TORCH:
                return True
            if (
                base[0] == "local"
                and base[1] != name
                and self._module_in(filename, base[1], depth + 1)
            ):
                return True
            if base[0] == "import" and self.module_class(
                (base[1], base[2]), self.package_of(filename), depth + 1
            ):
                return True
        return False

    def sizes(self, filename: str, depth: int = 0) -> Dict[str, list]:
        """The summary's ``SIZES`` of a project file (``sizes.sizes_table``): per
        top-level function and class, the parameters that reach the width and
        head count of a torch attention module it builds; with the entries
        it hands a function or class of another project file
        (``SIZE_CALLS``: ``FTTransformer(d_token, n_heads)`` building the
        imported ``Block(d_token, n_heads)``), up to ``MAX_SIZE_HOPS`` files
        deep.  Such an entry's ``file`` is where its module is built."""
        memo = self.__dict__.setdefault("_sizes_memo", {})
        if filename in memo:
            return memo[filename]
        table = self._table(filename)
        got = memo[filename] = dict(table.get(SIZES, {}))  # a cycle reads it as it is
        if depth >= MAX_SIZE_HOPS or SIZE_CALLS not in table:
            return got
        package = self.package_of(filename)
        for name, handoffs in table[SIZE_CALLS].items():
            for handoff in handoffs:
                loc = self._written(filename, table, handoff["callee"], package)
                if loc is None or loc[0] == filename or "." in loc[1]:
                    continue
                for entry in self.sizes(loc[0], depth + 1).get(loc[1]) or ():
                    made = handed_through(handoff, entry)
                    if made is None:
                        continue
                    made["file"] = entry.get("file", loc[0])
                    have = got.setdefault(name, [])
                    if not any(_same_module(made, e) for e in have):
                        got[name] = [*have, made]
        return got

    def sizes_at(self, target: Tuple[int, str]) -> Optional[Tuple[str, str, list]]:
        """(file, name, entries) of the sizes a project function or class an
        import of this file names hands a torch module it builds; else None."""
        loc = self._defined(target)
        if loc is None or "." in loc[1]:
            return None
        got = self.sizes(loc[0]).get(loc[1])
        return (loc[0], loc[1], got) if got else None

    def constant_at(self, level: int, dotted: str) -> Optional[tuple]:
        """``(value,)`` of the module-level constant an import of this file
        names (``from .config import WIDTH``: level 1, ``config.WIDTH``), when
        it is one of a project file; else None."""
        loc = self._defined((level, dotted))
        if loc is None or loc[1].count(".") > 1:
            return None  # ``Defaults.HEADS``: a constant of a class body (``module_constants``)
        table = self.constants(loc[0])
        return (table[loc[1]],) if loc[1] in table else None

    def depend(self, filename: str) -> None:
        """Record ``filename`` (its bytes' SHA-256) as a dependency of the
        linted file's cached findings."""
        if filename in self.deps:
            return
        try:
            self.deps[filename] = hashlib.sha256(read_regular(filename, MAX_FILE_BYTES)).hexdigest()
        except OSError:
            pass

    def relative(self, filename: str) -> str:
        """How a message names another project file.  When the linted file
        was named by a relative path (``flake8-mha check .``, flake8, a
        pre-commit hook), relative to the current directory if the other file
        is below it (``src/acme/layers/attn.py``, a path that can be clicked
        where the command ran); otherwise relative to the import root."""
        absolute = os.path.abspath(filename)
        here = os.getcwd()
        if self.given_relative and absolute.startswith(os.path.join(here, "")):
            return os.path.relpath(absolute, here).replace(os.sep, "/")
        return os.path.relpath(filename, self.root).replace(os.sep, "/")

    def _function(
        self, target: Tuple[int, str], call: bool, package: Optional[Tuple[str, ...]] = None
    ) -> Optional[Tuple[str, dict]]:
        """``call``: the target is called (a function); otherwise it is
        constructed or made (a class: its forward; a factory: what it returns).
        ``package``: the package the import was read in (the linted file's)."""
        loc = self._defined(target, package)
        if loc is None:
            return None
        filename, obj = loc
        if call:
            got = self.effective(filename, obj)
            if "." in obj and not (got or {}).get("unbound"):
                return None  # Class.method called unbound: self would shift
        else:
            got = self.instance_call(filename, obj)
            if got is None:
                table = self.summaries(filename)
                return self._inherited(filename, table, obj, 0) or self.made_module(
                    filename, table, obj, 0
                )
        return (filename, got) if got is not None else None

    def _table(self, filename: str) -> Dict[str, dict]:
        """The summary table of the linted file or of another project file."""
        return self._own() if filename == self.path else self.summaries(filename)

    def package_of(self, filename: str) -> Tuple[str, ...]:
        """The package a file's relative imports are read in."""
        if filename == self.path:
            return tuple(self.package)
        parts = module_parts(filename, self.root)
        return tuple(parts if os.path.basename(filename) == "__init__.py" else parts[:-1])

    def _defined(
        self, target: Tuple[int, str], package: Optional[Tuple[str, ...]] = None
    ) -> Optional[Tuple[str, str]]:
        """(file, name) where an imported name is defined, through a package's
        re-exports (one hop per ``__init__.py``, at most ``MAX_REEXPORT_HOPS``)."""
        loc = self.locate(*target, package)
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


MAX_SIZE_HOPS = 3  # files between a call that hands sizes and the module built with them


def _same_module(a: dict, b: dict) -> bool:
    """Two sizes entries for one construction."""
    return (a["module"], a["line"], a.get("file")) == (b["module"], b["line"], b.get("file"))


def _valid_imports(got) -> bool:
    return isinstance(got, dict) and all(
        isinstance(v, list) and len(v) == 2 and type(v[0]) is int and isinstance(v[1], str)
        for v in got.values()
    )
