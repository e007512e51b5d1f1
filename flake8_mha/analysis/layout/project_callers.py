"""Layout across the files of one project.

flake8 hands the analyzer one file at a time, but the CLIP pattern spreads
over three: the tower swaps its data to sequence-first and calls a
``Transformer``, whose ``nn.Sequential`` of residual blocks runs the block
that holds the attention.  Linting the block's file, the layout its
``forward`` is fed comes from the other two.

This module finds those files and reads them with the same layout
evaluator:

- the project root and imports are ``project.py``'s (``project_root``,
  ``Project.locate``);
- a class is named by ``(its file, its name)``; another file's call runs it
  when the callee's name is imported from that file (``from .block import
  Block``, ``import pkg.block as B``), through one package re-export;
- which files may call a class: a text screen for its name (a capitalised
  word), over the project's ``.py`` files, before anything is parsed (one
  index per process); at most ``MAX_CANDIDATES`` of them are read;
- every file read is parsed whole (a ``Unit``), kept for the next question
  (those used last, per process, up to ``MAX_UNITS`` files and
  ``MAX_UNIT_BYTES`` of their text: a tree takes about 40 bytes a byte of
  text, and a package's small files are all kept), and re-read when its size or
  modification time changes; its layout evaluators are new for each linted
  file (``ProjectLayout.other``), so an answer does not depend on what an
  earlier file asked (``flake8 file.py`` and ``flake8 pkg/`` agree);
- at most ``MAX_HOPS`` files away from the linted file, in either direction.

Nothing is imported or run.  What cannot be found is unknown.
"""

from __future__ import annotations

import ast
import os
import re
from typing import Dict, List, Optional, Tuple

import libcst as cst

from ...core import walk as astwalk
from ...core.atomic import read_regular
from ..classes import builds_own_class
from ..flow import ClassInfo, DefKind, FlowPass, lookup
from ..program import signatures
from ..program.call_index import MODULE_CONTAINERS
from ..program.callers import importers_map, importers_of
from ..program.callsites import Project
from ..program.files import project_root
from ..resolve import Resolver, last_star

MAX_HOPS = 4
MAX_CANDIDATES = 8
MAX_UNITS = 256  # parsed files kept per process
MAX_UNIT_BYTES = 512 * 1024  # the text of the files kept (the last one read is always kept)
MAX_FILES = 5000
MAX_DIRS = 2000
MAX_FILE_BYTES = 1024 * 1024
MAX_REEXPORT_HOPS = 2
MAX_STAR_HOPS = 5  # star imports of star imports (fastai's style: imports.py, layers.py, ...)
_SKIP_DIRS = {"__pycache__", "node_modules", "site-packages", "build", "dist", "venv", "env"}

Target = Tuple[str, str]  # (absolute path of the defining file, class name)


class _Ctx:
    """What ``LayoutEvaluator`` reads of an engine Context."""

    def __init__(self, module, flow, resolver, path):
        self.module, self.flow, self.resolver = module, flow, resolver
        self.project = _Where(path)


class _Where:
    __slots__ = ("path",)

    def __init__(self, path: str):
        self.path = path


class Unit:
    """One project file, parsed and walked once."""

    def __init__(self, path: str, module: cst.Module):
        self.path = path
        self.flow = FlowPass()
        self.flow.run(module)
        self.resolver = Resolver(self.flow)
        attach_readers(self.resolver, path, keep=False)
        self.ctx = _Ctx(module, self.flow, self.resolver, path)
        self.classes: Dict[str, ClassInfo] = {
            info.name: info
            for info in self.flow.classes.values()
            if info.scope is self.flow.module_scope
        }


# per process: path -> ((size, mtime_ns), Unit or None)
_UNITS: Dict[str, Tuple[Tuple[int, int], Optional[Unit]]] = {}
# per process: project root -> word -> the files that hold it
_INDEX: Dict[str, Dict[str, List[str]]] = {}


def _stamp(path: str) -> Optional[Tuple[int, int]]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def _read(path: str) -> Optional[str]:
    try:
        data = read_regular(path, MAX_FILE_BYTES)
    except OSError:  # also a FIFO, a device, a file over the size
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def unit(path: str) -> Optional[Unit]:
    """The parsed file at ``path`` (None when it cannot be read or parsed)."""
    path = os.path.abspath(path)
    stamp = _stamp(path)
    if stamp is None:
        return None
    kept = _UNITS.pop(path, None)
    if kept is not None and kept[0] == stamp:
        _UNITS[path] = kept  # the most recently used last
        return kept[1]
    text = _read(path)
    found: Optional[Unit] = None
    if text is not None:
        try:
            found = Unit(path, cst.parse_module(text))
        except Exception:  # another file never breaks this one's analysis: unknown
            found = None
    _UNITS[path] = (stamp, found)
    held = sum(kept[0][0] for kept in _UNITS.values())
    while len(_UNITS) > 1 and (len(_UNITS) > MAX_UNITS or held > MAX_UNIT_BYTES):
        oldest = next(iter(_UNITS))  # a tree is large: keep those used last
        held -= _UNITS.pop(oldest)[0][0]
    return found


_CLASS_WORD = re.compile(r"\b[A-Z][A-Za-z0-9_]+\b")


def _word_index(root: str) -> Dict[str, List[str]]:
    """Every capitalised word (a class name, by convention) of the project's
    files that import something -> those files; built once per process."""
    index = _INDEX.get(root)
    if index is None:
        index = {}
        count = dirs_seen = 0
        for here, dirs, names in os.walk(root):
            dirs_seen += 1
            if dirs_seen > MAX_DIRS:
                break  # not a project (a home directory): what was seen is all
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
            for name in sorted(names):
                if not name.endswith(".py") or count >= MAX_FILES:
                    continue
                count += 1
                path = os.path.abspath(os.path.join(here, name))
                text = _read(path)
                if text is None or "import" not in text:
                    continue
                for word in set(_CLASS_WORD.findall(text)):
                    index.setdefault(word, []).append(path)
        _INDEX[root] = index
    return index


def candidates(path: str, name: str) -> Optional[List[str]]:
    """The project's files other than ``path`` that name ``name`` (a word) and
    import something: the only ones that may call the class.  Past
    ``MAX_CANDIDATES`` of them, only those that also name ``path``'s module
    (its file name, as an import names it).  None when there are still more
    (a caller not read could feed anything).
    The index is made once per process: a file added later is not seen until
    the next run."""
    me = os.path.abspath(path)
    found = [p for p in _word_index(project_root(path)).get(name, ()) if p != me]
    if len(found) > MAX_CANDIDATES:
        # a common class name (``Transformer``, ``Block``): only the files whose
        # imports lead here, or to a package ``__init__`` above that may
        # re-export it, can call it (another package's class of the same name
        # is not this one)
        near = _importers_near(me)
        if near is not None:
            found = [p for p in found if p in near]
    if len(found) > MAX_CANDIDATES:
        # still many: only the files that also name the defining module
        # (``from .block import Block``) import it from here
        stem = os.path.splitext(os.path.basename(me))[0]
        if stem != "__init__":
            word = re.compile(r"\b" + re.escape(stem) + r"\b")
            found = [p for p in found if word.search(_read(p) or "")]
    return found if len(found) <= MAX_CANDIDATES else None


def _importers_near(path: str) -> Optional[set]:
    """The project files that import ``path``, or the ``__init__.py`` of a
    package it stands in (a re-export); None when the project is not scanned."""
    importers = importers_map(path)  # one map of the project for every target
    if importers is None:
        return None
    here = os.path.dirname(path)
    targets = [path]
    while os.path.isfile(os.path.join(here, "__init__.py")):
        targets.append(os.path.join(here, "__init__.py"))
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    return {
        os.path.abspath(p) for target in targets for p in importers.get(os.path.abspath(target), ())
    }


# --------------------------------------------------------------------------- clones

# per process: (path, name) -> ((size, mtime_ns), (index, name) or None)
_CLONES: Dict[Tuple[str, str], tuple] = {}


def attach_readers(resolver: Resolver, path: str, keep: bool = True) -> None:
    """Let the resolver of the file at ``path`` read the project's other
    files for what its imports name: ``imported_clones`` and ``star_names``.
    ``keep``: each answer is kept for the resolver's life, one analysis of
    the linted file (a ``Unit``'s resolver outlives it: asked again, the
    other files' stamps are checked again)."""
    kept = _kept_answers if keep else (lambda read: read)
    resolver.imported_clones = kept(lambda stmt, bound: _clones_at(path, stmt, bound))
    resolver.star_names = kept(lambda dotted: _star_name(path, *_split(dotted), 0))


def _kept_answers(read):
    answers: Dict[tuple, object] = {}

    def kept(*key):
        if key not in answers:
            answers[key] = read(*key)
        return answers[key]

    return kept


def _split(dotted: str) -> Tuple[str, str]:
    base, _, name = dotted.rpartition(".")
    return base, name


def _clones_at(path: str, stmt, bound: str) -> Optional[Tuple[int, str]]:
    """The parameter whose deep copies the function an import names returns
    in a container, ``return nn.ModuleList([copy.deepcopy(module) for i in
    range(N)])`` (DETR's ``_get_clones``, kept in a utilities file)."""
    found = _located(path, *_import_target(stmt, bound))
    if found is None or "." in found[1]:
        return None
    return _clones_param(found[0], found[1])


def _star_name(path: str, base: str, name: str, depth: int) -> Optional[str]:
    """What ``from <base> import *`` in the file at ``path`` binds ``name``
    to: a qualified name (``from ..imports import *`` then ``nn.Linear``:
    ``torch.nn``, as ``imports`` binds it by ``import torch.nn as nn``),
    ``ABSENT`` (the module binds it nowhere, nor do its own star imports), or
    None (unknown: bound otherwise, or more than once)."""
    level = len(base) - len(base.lstrip("."))
    module = base[level:]
    found = _located(path, level, (module + "." if module else "") + name)
    if found is None or found[1] != name or depth > MAX_STAR_HOPS:
        return None
    bound, stars = _module_imports(found[0])
    if name in bound:
        return bound[name] or None  # "" : bound otherwise (a definition, twice)
    return last_star(stars, lambda star: _star_name(found[0], star, name, depth + 1))


# per process: path -> ((size, mtime_ns), ({name: what it binds}, [star imports]))
_IMPORTS: Dict[str, tuple] = {}


def _module_imports(filename: str) -> Tuple[Dict[str, str], List[str]]:
    """The names a module binds at its top level: to the qualified name of an
    absolute import when it is the name's one binding (``import torch.nn as
    nn``, ``from torch import nn``), else to ""; and the modules it
    star-imports, as written (``..imports``)."""
    return _per_stamp(_IMPORTS, filename, filename, 64, lambda: _imports_of(_tree(filename)))


def _imports_of(tree: Optional[ast.Module]) -> Tuple[Dict[str, str], List[str]]:
    bound: Dict[str, List[str]] = {}
    stars: List[str] = []
    todo = list(reversed(tree.body)) if tree is not None else []
    while todo:  # the module's own statements in order, also under if/try/with, not in defs
        node = todo.pop()
        names: List[Tuple[str, str]] = []
        if isinstance(node, ast.Import):
            for a in node.names:
                names.append((a.asname, a.name) if a.asname else (a.name.split(".")[0],) * 2)
        elif isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            stars.append("." * node.level + (node.module or ""))
            continue
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names += [(a.asname or a.name, f"{node.module}.{a.name}") for a in node.names]
        elif isinstance(node, ast.ImportFrom):  # relative: what it binds is another file's
            names += [(a.asname or a.name, "") for a in node.names]
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            inner = []
            for field in ("body", "handlers", "orelse", "finalbody"):
                inner.extend(getattr(node, field, ()))
            todo.extend(reversed(inner))
            continue
        elif isinstance(node, ast.ExceptHandler):
            todo.extend(reversed(node.body))
            continue
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.setdefault(node.name, []).append("")  # a definition binds the name
            continue
        else:  # so does an assignment
            for sub in astwalk.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    bound.setdefault(sub.id, []).append("")
            continue
        for local, qualified in names:
            bound.setdefault(local, []).append(qualified)
    return {name: qs[0] if len(qs) == 1 else "" for name, qs in bound.items()}, stars


def _clones_param(filename: str, name: str) -> Optional[Tuple[int, str]]:
    def compute():
        tree = _tree(filename, (name, "deepcopy"))
        func = next(
            (
                n
                for n in getattr(tree, "body", ())
                if isinstance(n, ast.FunctionDef) and n.name == name
            ),
            None,
        )
        return _copies_of(func) if func is not None else None

    return _per_stamp(_CLONES, (filename, name), filename, 256, compute)


def _per_stamp(cache: dict, key, filename: str, limit: int, compute):
    """``compute()`` for a file, kept until its size or modification time
    changes; past ``limit`` entries the oldest goes."""
    stamp = _stamp(filename)
    kept = cache.get(key)
    if kept is not None and kept[0] == stamp:
        return kept[1]
    got = compute()
    if len(cache) > limit:
        del cache[next(iter(cache))]
    cache[key] = (stamp, got)
    return got


def _tree(filename: str, words=()) -> Optional[ast.Module]:
    """The file's ``ast``; None when it cannot be read or parsed, or its text
    lacks one of ``words``."""
    text = _read(filename)
    if text is None or not all(w in text for w in words):
        return None
    try:
        return signatures.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _copies_of(func: ast.FunctionDef) -> Optional[Tuple[int, str]]:
    """``def f(module, N): return <...>.ModuleList([<copy.>deepcopy(module) for
    ...])``: (0, "module"); also when every one of several returns is such a
    list of the same parameter, copied or shared (groundingdino's
    ``if layer_share: return ModuleList([module for i in range(N)])``); None
    for any other body."""
    returns = [n for n in astwalk.own_nodes(func) if isinstance(n, ast.Return)]
    names = [a.arg for a in func.args.posonlyargs + func.args.args]
    found = {_copied(r.value, names) for r in returns}
    if len(found) != 1 or None in found:
        return None
    name = found.pop()
    return names.index(name), name


def _copied(ret, names) -> Optional[str]:
    """The parameter a returned ``ModuleList([deepcopy(p) for ...])`` (or
    ``[p for ...]``) holds copies of."""
    if (
        not isinstance(ret, ast.Call)
        or len(ret.args) != 1
        or ret.keywords
        or _last(ret.func) != "ModuleList"
        or not isinstance(ret.args[0], (ast.ListComp, ast.GeneratorExp))
    ):
        return None
    elt = ret.args[0].elt
    if isinstance(elt, ast.Call) and _last(elt.func) == "deepcopy" and len(elt.args) == 1:
        elt = elt.args[0]
    return elt.id if isinstance(elt, ast.Name) and elt.id in names else None


def _last(node) -> Optional[str]:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


# --------------------------------------------------------------------------- names


def imported_class(path: str, node, env, scope, hops: int = 0) -> Optional[Target]:
    """The project class an expression names through an import of the file at
    ``path`` (``Block`` after ``from .block import Block``, ``B.Block`` after
    ``import pkg.block as B``), or None."""
    named = _imported_name(node, env, scope)
    return _class_at(path, *named, hops) if named is not None else None


def _imported_name(node, env, scope) -> Optional[Tuple[int, str]]:
    """(relative level, dotted name) an expression names through an import."""
    chain: List[str] = []
    while isinstance(node, cst.Attribute):
        chain.insert(0, node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    defs = lookup(node.value, env, scope)
    if len(defs) != 1 or defs[0].kind != DefKind.IMPORT:
        return None
    level, dotted = _import_target(defs[0].node, node.value)
    if dotted is None:
        return None
    return level, ".".join([dotted] + chain) if dotted else ".".join(chain)


def factory_classes(path: str, node, env, scope) -> Optional[List[Target]]:
    """The project classes a function of another file builds and returns, when
    ``node`` names it through an import of the file at ``path`` (spanet's
    ``self.encoder = create_transformer(options, n)``, returning one of four
    transformer classes): each return, else None."""
    named = _imported_name(node, env, scope)
    found = _located(path, *named) if named is not None else None
    if found is not None and found[1].count(".") == 1:  # ``Encoder.from_config(cfg)``
        cls, _, method = found[1].partition(".")
        there = unit(found[0])
        info = there.classes.get(cls) if there is not None else None
        func = info.methods.get(method) if info is not None else None
        return [(found[0], cls)] if func is not None and builds_own_class(func) else None
    if found is None or "." in found[1]:
        return None
    filename, name = found
    tree = _tree(filename, (name,))
    func = next(
        (n for n in getattr(tree, "body", ()) if isinstance(n, ast.FunctionDef) and n.name == name),
        None,
    )
    built = returned_classes(func) if func is not None else None
    if not built:
        return None
    there = unit(filename)
    out: List[Target] = []
    for cls in built:
        if there is not None and cls in there.classes:
            out.append((filename, cls))
            continue
        defs = there.flow.module_scope.final_env.get(cls, ()) if there is not None else ()
        if len(defs) != 1 or defs[0].kind != DefKind.IMPORT:
            return None
        level, dotted = _import_target(defs[0].node, cls)
        target = _class_at(filename, level, dotted, 0) if dotted is not None else None
        if target is None:
            return None
        out.append(target)
    return list(dict.fromkeys(out))


def returned_classes(func: ast.FunctionDef) -> Optional[List[str]]:
    """The capitalised names every ``return`` of ``func`` builds (``return
    StandardTransformer(options, n)``), else None (a return of anything else)."""
    out = []
    for n in astwalk.walk(func):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and n is not func:
            return None  # a nested function: its returns are not the factory's
        if isinstance(n, ast.Return):
            value = n.value
            if not (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and value.func.id[:1].isupper()
            ):
                return None
            out.append(value.func.id)
    return out or None


def factories_of(path: str, cls: str) -> List[str]:
    """The top-level functions of the file at ``path`` whose returns all build
    a class and one of them builds ``cls``."""
    tree = _tree(path, (cls,))
    return [
        n.name
        for n in getattr(tree, "body", ())
        if isinstance(n, ast.FunctionDef) and cls in (returned_classes(n) or ())
    ]


def factory_files(path: str, name: str, method: str = "") -> Optional[List[str]]:
    """The project files that import the file at ``path`` and name ``name``, a
    function of it (or a class of it, and its ``method``): the only ones
    that may call it; None when they cannot be listed or are more than
    ``MAX_CANDIDATES``."""
    files = importers_of(path)
    if files is None:
        return None
    words = [re.compile(r"\b" + re.escape(w) + r"\b") for w in {name, method or name}]
    files = [f for f in files if all(w.search(_read(f) or "") for w in words)]
    return files if len(files) <= MAX_CANDIDATES else None


def factory_calls(there: Unit, path: str, name: str) -> List[Tuple[Optional[ClassInfo], str]]:
    """Each call in ``there`` of the function ``name`` of the file at
    ``path``: the class and attribute it is kept in (``self.attn =
    build_attn(64)``), or (None, "") for any other use."""
    me = os.path.abspath(path)

    def calls(site) -> bool:
        named = _imported_name(site.node.func, site.env, site.scope)
        return named is not None and _located(there.path, *named) == (me, name)

    return _kept_in(there, calls)


def method_calls(
    there: Unit, path: str, cls: str, name: str
) -> List[Tuple[Optional[ClassInfo], str]]:
    """Each call ``self.<name>(...)`` in ``there`` made in a class whose
    bases name the class ``cls`` of the file at ``path`` (a mixin's factory
    method, ``self.attn = self._make_attention(d, h)``): where it is kept,
    as ``factory_calls``.  A subclass of ``there`` that defines ``name``
    itself runs its own."""
    me = os.path.abspath(path)

    def subclass(info: ClassInfo) -> bool:
        if name in info.methods:
            return False
        for base in info.base_exprs:
            named = _imported_name(base, info.env, info.scope)
            if named is not None and _located(there.path, *named) == (me, cls):
                return True
        return False

    def calls(site) -> bool:
        func = site.node.func
        return (
            isinstance(func, cst.Attribute)
            and func.attr.value == name
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
            and site.scope.cls is not None
            and subclass(site.scope.cls)
        )

    return _kept_in(there, calls)


def _kept_in(there: Unit, calls) -> List[Tuple[Optional[ClassInfo], str]]:
    out: List[Tuple[Optional[ClassInfo], str]] = []
    for site in there.flow.calls:
        if not calls(site):
            continue
        stmt, cls = site.stmt, site.scope.cls
        kept = (
            isinstance(stmt, cst.Assign)
            and len(stmt.targets) == 1
            and (stmt.value is site.node or in_container(site, stmt.value))
        )
        target = stmt.targets[0].target if kept else None
        if (
            cls is not None
            and isinstance(target, cst.Attribute)
            and isinstance(target.value, cst.Name)
            and target.value.value == "self"
        ):
            out.append((cls, target.attr.value))
        else:
            out.append((None, ""))
    return out


def in_container(site, value) -> bool:
    """Whether the call of ``site`` is an item of the container ``value``
    builds (``nn.ModuleList([make_layer(d, h) for _ in range(n)])``,
    ``nn.Sequential(*[...])``, a plain list of them, a value of an
    ``nn.ModuleDict({...})``): the attribute it is
    kept in then holds it, and a call of the attribute or of its items runs it."""
    parents = list(site.parents)
    if value not in parents:
        return False
    for node in parents[parents.index(value) :]:
        if isinstance(node, cst.Call):
            func = node.func
            name = (
                func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
            )
            if name not in MODULE_CONTAINERS and name != "ModuleDict":
                return False
        elif not isinstance(
            node,
            (
                cst.Arg,
                cst.Element,
                cst.List,
                cst.ListComp,
                cst.Tuple,
                cst.StarredElement,
                cst.Dict,  # ``nn.ModuleDict({"spatial": nn.MultiheadAttention(...)})``
                cst.DictElement,
            ),
        ):
            return False
    return True


def _import_target(stmt, bound: str) -> Tuple[int, Optional[str]]:
    """(relative level, dotted name) the import statement binds ``bound`` to."""
    from ..flow import import_path

    if isinstance(stmt, cst.ImportFrom) and not isinstance(stmt.names, cst.ImportStar):
        module = import_path(stmt.module) if stmt.module is not None else ""
        for alias in stmt.names:
            name = alias.asname.name if alias.asname is not None else alias.name
            if isinstance(name, cst.Name) and name.value == bound:
                full = import_path(alias.name)
                return len(stmt.relative), (module + "." if module else "") + full
    if isinstance(stmt, cst.Import):
        for alias in stmt.names:
            full = import_path(alias.name)
            if alias.asname is not None:
                name = alias.asname.name
                if isinstance(name, cst.Name) and name.value == bound:
                    return 0, full
            elif full.split(".")[0] == bound:
                return 0, bound
    return 0, None


def _located(path: str, level: int, dotted: Optional[str]) -> Optional[Tuple[str, str]]:
    """(absolute file, object path) of what an import of the file at ``path``
    names in its project; None for torch's and the standard library's."""
    if not dotted or dotted.split(".")[0] in ("torch", "typing", "collections"):
        return None
    try:
        found = Project(path).locate(level, dotted)
    except (OSError, ValueError):
        return None
    return (os.path.abspath(found[0]), found[1]) if found is not None else None


def _class_at(path: str, level: int, dotted: str, hops: int) -> Optional[Target]:
    found = _located(path, level, dotted)
    if found is None:
        return None
    filename, obj = found
    if "." in obj:
        return None
    there = unit(filename)
    if there is None:
        return None
    if obj in there.classes:
        return filename, obj
    if hops >= MAX_REEXPORT_HOPS:
        return None
    # a package's ``__init__`` re-exporting the class from a module of its own
    defs = there.flow.module_scope.final_env.get(obj, ())
    if len(defs) != 1 or defs[0].kind != DefKind.IMPORT:
        return None
    level2, dotted2 = _import_target(defs[0].node, obj)
    if dotted2 is None:
        return None
    return _class_at(filename, level2, dotted2, hops + 1)
