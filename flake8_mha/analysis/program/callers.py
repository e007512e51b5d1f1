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
from typing import Dict, Iterable, List, Optional, Set, Tuple

from ...core import runs
from ...core.atomic import read_regular
from . import import_lines
from .files import ProjectFiles, project_root
from .call_index import FIRST, RETURNED, Call, Index
from .built import heirs, MISSING, Forwarded, built_in, classmethods, partial_builders
from .lookups import fetched_by_name
from .signatures import UNKNOWN, ImportedConstant, init_signature, literal, parse

MAX_HOPS = 3  # importer of an importer of ...: chains are rarely longer
KEPT_FIRST = "first"  # a call that keeps only the first of a pair of results (``results``)
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
_MAPS: Dict[str, tuple] = {}  # root -> (run, importers map): once per run (runs.py)
_CONSTRUCTIONS: Dict[tuple, tuple] = {}
MAX_FORWARDS = 5  # classes a parameter is followed up through (``forwarded``)


def forwarded(value: Forwarded, depend, depth: int = 0, default=MISSING) -> Optional[tuple]:
    """``(value,)`` when every construction in the project of the class whose
    ``__init__`` forwards its parameter passes it the same literal (left out:
    its literal default), following such parameters up ``MAX_FORWARDS``
    classes; None otherwise, also when that class is never built.  ``depend``
    is told each file read."""
    if depth >= MAX_FORWARDS:
        return None
    got = forwarding_class(value, depend)
    if got is None or (value.param in got[0][0]) == value.splat:
        return None  # a splat carries only what the building class does not name
    signature, built = got
    if value.splat:  # left out of every construction's keywords: the callee's default
        defaults = {value.param: default} if default != MISSING else {}
        return one_value(built, value.param, defaults, depend, depth + 1)
    return one_value(built, value.param, signature[1], depend, depth + 1)


def forwarding_class(value: Forwarded, depend) -> Optional[tuple]:
    """(the ``init_signature``, ``constructions``) of the class whose
    ``__init__`` hands on the parameter ``value`` names; None when its file
    cannot be read or the class has no such ``__init__``.  ``depend`` is
    told each file read."""
    try:
        text = read_regular(value.path, MAX_BYTES).decode("utf-8", "replace")
    except OSError:
        return None
    depend(value.path)
    signature = init_signature(text, value.cls)
    if signature is None:
        return None
    built, read = constructions(value.path, value.cls, signature[0])
    for name in read:
        depend(name)
    return signature, built


def one_value(found, param: str, defaults: dict, depend=None, depth: int = 0) -> Optional[tuple]:
    """``(value,)`` when every entry of ``found`` (per construction or call,
    parameter -> literal, ``MISSING``: its default) gives ``param`` the same
    literal, else None.  A ``Forwarded`` argument has what the class above
    is passed (``forwarded``, told ``depend``; without it, unknown)."""
    values = set()
    for entry in found or ():
        value = entry.get(param, MISSING)
        if value == MISSING:
            if param not in defaults:
                return None
            value = defaults[param]
        if isinstance(value, Forwarded):  # a parameter of the building class's own
            fallback = defaults.get(param, MISSING)
            up = forwarded(value, depend, depth, fallback) if depend is not None else None
            value = up[0] if up is not None else UNKNOWN
        elif isinstance(value, ImportedConstant):  # ``from .config import P``
            value = _imported_constant(value, depend)
        if value == UNKNOWN:
            return None
        values.add((type(value), value))
    if len(values) != 1:
        return None
    return (values.pop()[1],)


def _imported_constant(value: ImportedConstant, depend) -> object:
    """The module-level constant of a project file that ``value`` names, else
    ``UNKNOWN``; the file it is defined in is told to ``depend``."""
    files = ProjectFiles(value.path)
    try:
        got = files.constant_at(value.level, value.dotted)
    except (OSError, ValueError, RecursionError):
        got = None
    if depend is not None:
        for name in files.deps:
            depend(name)
    return got[0] if got is not None else UNKNOWN


def dependents(changed: Iterable[str]) -> List[str]:
    """The ``.py`` files of the changed files' projects that import one of them
    (or an importer of one), sorted, the changed files themselves left out."""
    targets = {os.path.abspath(p) for p in changed if p.endswith(".py") and os.path.isfile(p)}
    found: Set[str] = set()
    by_root: Dict[str, Set[str]] = {}
    for path in targets:
        by_root.setdefault(_scope(path), set()).add(path)
    for root, wanted in by_root.items():
        importers = runs.once(_MAPS, root, _importers, root)
        if importers is None:
            continue
        found |= _hops(wanted, lambda t: importers.get(t, ())) - targets
    return sorted(os.path.relpath(p) for p in found)


def _hops(start: Set[str], step) -> Set[str]:
    """``start`` and the files ``step`` leads to from them, up to ``MAX_HOPS`` steps."""
    seen = set(start)
    frontier = set(start)
    for _ in range(MAX_HOPS):
        nxt = {f for t in frontier for f in step(t) if f not in seen}
        if not nxt:
            break
        seen |= nxt
        frontier = nxt
    return seen


def callees(changed: Iterable[str]) -> List[str]:
    """The project ``.py`` files the changed files import, directly or through
    what those import (``MAX_HOPS``), sorted, the changed files left out:
    facts flow into a function from its callers too (what they pass, what
    they keep of its result, the layout they feed), so a changed caller
    changes the findings of what it calls."""
    targets = {os.path.abspath(p) for p in changed if p.endswith(".py") and os.path.isfile(p)}
    found = _hops(targets, _imported_files) - targets
    return sorted(os.path.relpath(p) for p in found if os.path.isfile(p))


def importers_of(path: str) -> Optional[List[str]]:
    """The project files that import the file at ``path`` (None: not scanned)."""
    found = importers_map(path)
    return None if found is None else sorted(found.get(os.path.abspath(path), ()))


def importers_map(path: str) -> Optional[Dict[str, Set[str]]]:
    """``imported file -> its importers`` over ``path``'s project (None: not scanned)."""
    root = _scope(os.path.abspath(path))
    return runs.once(_MAPS, root, _importers, root)


_INSTALLED = {"site-packages", "dist-packages"}


def _scope(path: str) -> str:
    """The folder whose files may import ``path``: its project root, or, for
    an installed package (a root that is ``site-packages``), that package's
    own folder: the other packages installed beside it are not its project."""
    root = project_root(path)
    if os.path.basename(root) in _INSTALLED:
        rel = os.path.relpath(os.path.abspath(path), root).split(os.sep)
        if len(rel) > 1:
            return os.path.join(root, rel[0])
    return root


def _importers(root: str) -> Optional[Dict[str, Set[str]]]:
    """``imported file -> the project files that import it``, from each file's
    import lines (re-read only when a file's size or time changed)."""
    files = python_files(root)
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
    for level, module, names in import_lines.imported_from(text):
        for name in names or [None]:
            dotted = ".".join(p for p in (module, name) if p)
            loc = files.locate(level, dotted + "._", package) if dotted else None
            if loc is not None:
                out.add(os.path.abspath(loc[0]))
    return out


def python_files(root: str):
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


def constructions(
    path: str, cls: str, params: List[str], own_text: Optional[str] = None, files=None, reader=None
):
    """Every construction of the class ``cls`` (defined in ``path``, its
    ``__init__`` taking ``params`` after ``self``) in the project: per
    construction, each parameter's literal value, ``UNKNOWN`` or ``MISSING``.
    Empty when the class is never built in the project (its callers are
    outside it); None when the project does not settle it: the class is
    subclassed, passed around as a value (``partial(Cls, ...)``,
    ``block=Cls``), or built with a splat.
    ``own_text``: the linted text of ``path`` (an editor's unsaved buffer).
    ``files``: ``project_files(path)`` when the caller has it.  ``reader``:
    what an argument is read as (``literal``; ``module_or_unknown``).
    Returns (that list or None, the files it read)."""
    files = files if files is not None else project_files(path)
    reader = reader or literal
    key = (cls, tuple(params), own_text, _states(files), reader)
    if key not in _CONSTRUCTIONS:
        if len(_CONSTRUCTIONS) > 256:
            _CONSTRUCTIONS.clear()
        found = _read_constructions(files, cls, params, own_text, reader)
        _CONSTRUCTIONS[key] = found, files[1:]
    return _CONSTRUCTIONS[key]


def project_files(path: str) -> List[str]:
    """``path`` and the project files that import it (``dependents``): where
    its constructions and calls are looked for."""
    return [os.path.abspath(path)] + [os.path.abspath(p) for p in dependents([path])]


def _states(files: List[str]) -> tuple:
    """The files as they are now: an answer cached for them holds while none
    of them changed (an editor's process lives across edits)."""
    out = []
    for name in files:
        try:
            st = os.stat(name)
        except OSError:
            out.append((name, None))
            continue
        out.append((name, st.st_mtime_ns, st.st_size))
    return tuple(out)


def _read_constructions(files, cls, params, own_text, reader):
    trees = []
    for i, name in enumerate(files):
        if i == 0 and own_text is not None:
            text = own_text
        else:
            try:
                text = read_regular(name, MAX_BYTES).decode("utf-8", "replace")
            except OSError:
                return None
        if i > 0 and fetched_by_name([name]):
            return None  # a class of the module fetched by a name the code computes (probe AC)
        trees.append((i, name, text))
    # the subclasses that inherit its ``__init__``: built with its parameters
    inherit: Set[str] = set()
    parsed: Dict[int, ast.Module] = {}
    try:
        for i, name, text in trees:
            if cls in text:
                parsed[i] = parse(text)
                if i and _defines(parsed[i], cls):  # its own class of that name (deepod)
                    del parsed[i]
                    continue
                inherit |= heirs(parsed[i], {cls})
        for i, name, text in trees:
            if i not in parsed and any(n in text for n in inherit):
                parsed[i] = parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for i, tree in parsed.items():  # a partial of the class another file may call
        for name in partial_builders(tree, {cls, *inherit}):
            if any(j != i and name in text for j, _, text in trees):
                return None
    out: List[Dict[str, object]] = []
    builders = classmethods(parsed.get(0), cls)  # ``Attention.from_config()``: read there
    for i, name, text in trees:
        tree = parsed.get(i)
        if tree is None:
            continue
        found = built_in(
            tree, cls, params, reader, name, demo=i == 0, also=inherit, builders=builders
        )
        if found is None:
            return None
        out.extend(found)
    return out


def _defines(tree: ast.Module, name: str) -> bool:
    """A top-level class, function or assignment of ``name`` in the module."""
    return any(
        getattr(n, "name", None) == name
        or any(isinstance(t, ast.Name) and t.id == name for t in getattr(n, "targets", ()))
        for n in tree.body
    )


_INDEXES: Dict[tuple, Optional[Index]] = {}
_CALLS: Dict[tuple, tuple] = {}
MAX_CALLER_FILES = 400  # more files than this import the callee: its callers are not settled


def _index(path: str, own_text: Optional[str]) -> Optional[Index]:
    """The file's ``Index`` (cached by its size and time, or by the text of
    an unsaved buffer); None when it cannot be read or parsed."""
    if own_text is not None:
        key: tuple = ("text", path, hash(own_text), len(own_text))
    else:
        try:
            st = os.stat(path)
        except OSError:
            return None
        key = (path, st.st_mtime_ns, st.st_size)
    if key not in _INDEXES:
        if len(_INDEXES) > 4096:
            _INDEXES.clear()
        got: Optional[Index] = None
        try:
            text = own_text
            if text is None:
                text = read_regular(path, MAX_BYTES).decode("utf-8", "replace")
            got = Index(parse(text), path)
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            got = None
        _INDEXES[key] = got
    return _INDEXES[key]


def calls(path: str, key: str, signature, own_text: Optional[str] = None, files=None):
    """Every call in the project of the function ``key`` of ``path``: a
    module-level function (``attend``), the ``forward`` of a module-level
    class (``Attend.forward``, called through its instances), or another
    method of such a class (``Attend._attend``, called as an attribute).  Per call, each
    parameter's literal value, ``UNKNOWN``, or its default when the call
    leaves it out.  ``signature``: ``function_signature``'s answer;
    ``files``: ``project_files(path)`` when the caller has it.

    Returns (that list, the files read): the list is empty when nothing in
    the project calls it (its callers are outside the project), None when a
    call, or another use, cannot be read: the function (or class) passed
    around as a value, a call with ``*args``/``**kwargs`` or that does not
    fit the signature, an instance kept anywhere but in a plain attribute or
    name (a container, an argument), an instance attribute read other than
    by calling it, a subclass.  Names are matched as text (an attribute of
    the same name elsewhere counts as a call too): what cannot be told
    apart is never settled wrongly, only left unsettled."""
    files = files if files is not None else project_files(path)
    cache = (key, repr(signature), own_text, _states(files))
    if cache not in _CALLS:
        if len(_CALLS) > 256:
            _CALLS.clear()
        _CALLS[cache] = _calls(files, key, signature, own_text)
    return _CALLS[cache]


def _calls(files, key, signature, own_text):
    found = _bound(_found(files, key, own_text)[0], signature)
    return (None if found is None else [b for _, _, b in found]), files[1:]


def _bound(found, signature) -> Optional[list]:
    """``_found``'s calls, each as (the call, where it is, its parameters
    bound by ``_bind_literals``); None when ``found`` is, or one call does
    not fit the signature."""
    if found is None:
        return None
    out = []
    for call, where in found:
        bound = _bind_literals(call, signature)
        if bound is None:
            return None
        out.append((call, where, bound))
    return out


def results(path: str, key: str, signature, own_text: Optional[str] = None, files=None, some=False):
    """Every call in the project of the function ``key`` of ``path``, as
    ``calls`` finds them, with what each keeps of the result: (the file, the
    call's line, ``KEPT_FIRST`` when only the first of a pair of results is
    kept (``f(...)[0]``, ``out, _ = f(...)``, ``out, w = f(...)`` with ``w``
    never read in that file), ``(RETURNED, key)`` when the function ``key``
    of that file returns it whole, else None, its parameters bound as by
    ``calls``).  Returns (that list or None, the files read), None as
    ``calls`` says.  ``some``: the calls found even where others may hide
    (a subclass, an instance read otherwise than called): enough to say
    that some call passes something, never that every call does."""
    files = files if files is not None else project_files(path)
    cache = ("results", key, repr(signature), own_text, _states(files), some)
    if cache not in _CALLS:
        if len(_CALLS) > 256:
            _CALLS.clear()
        found = _bound(_found(files, key, own_text, some)[0], signature)
        out = (
            None
            if found is None
            else [
                (name, call.line, _kept_of(call, index, whole), bound)
                for call, (name, index, whole), bound in found
            ]
        )
        _CALLS[cache] = (out, files[1:])
    return _CALLS[cache]


def _kept_of(call: Call, index: Index, whole: bool):
    """What ``results`` says a call keeps of the pair (``whole``: the call
    of a ``Sequential`` that holds the callee, whose result goes on to the
    next item)."""
    use = call.use if not whole else None
    if isinstance(use, str):  # ``out, w = f(...)``: kept when ``w`` is read
        use = FIRST if use not in index.loaded_names else None
    if isinstance(use, tuple) and use[0] == RETURNED:
        return use  # ``return f(...)``: what the callers of that function keep
    return KEPT_FIRST if use == FIRST else None


def _found(files, key, own_text, some=False):
    """The calls ``calls`` binds, each with (its file, that file's
    ``Index``, whether it calls a ``Sequential`` that holds it), or None
    when they cannot be told; and the files read."""
    if len(files) > MAX_CALLER_FILES:
        return None, files[1:]
    if key.endswith(".forward") and fetched_by_name(files[1:]):
        return None, files[1:]  # its instances may be built by ``getattr(module, name)()``
    if key.endswith(".forward"):
        words = {key.split(".")[0]}  # the class: its instances are found from its constructions
    else:
        words = {key.rsplit(".", 1)[-1]}  # the function or method called by its name
    indexes, unread, paths = [], [], []
    for i, name in enumerate(files):
        if i and not _mentions(name, words):
            unread.append(name)  # cannot call it: its text never names it
            continue
        index = _index(name, own_text if i == 0 else None)
        if index is None:
            return None, files[1:]
        indexes.append(index)
        paths.append(name)
    if key.endswith(".forward") and unread:
        # where the instances are kept: a file that names one of those may call them
        kept = _kept(indexes, key.split(".")[0], some=some)  # None: unsettled anyway
        words = set().union(*kept) if kept else set()
        for name in unread if words else ():
            if _mentions(name, words):
                index = _index(name, None)
                if index is None:
                    return None, files[1:]
                indexes.append(index)
                paths.append(name)
    kept = _kept(indexes, key.split(".")[0], some=some) if key.endswith(".forward") else None
    whole: Set[int] = set()
    out = []
    for name, index in zip(paths, indexes):
        if key.endswith(".forward"):
            found = _instance_calls([index], key.split(".")[0], kept, whole, some, indexes[0])
        elif "." in key:
            found = _method_calls([index], *key.split(".", 1))
        else:
            found = _function_calls([index], key)
        if found is None:
            return None, files[1:]
        out.extend((call, (name, index, id(call) in whole)) for call in found)
    return out, files[1:]


def _mentions(path: str, words: Set[str]) -> bool:
    """Whether the file's text names one of ``words`` (every call, import or
    use of a name spells it); True when it cannot be read (then ``_index``
    says so)."""
    try:
        data = read_regular(path, MAX_BYTES)
    except OSError:
        return True
    return any(w.encode() in data for w in words)


def _names(index: Index, name: str) -> Set[str]:
    return {name} | index.aliases.get(name, set())


def _function_calls(indexes: List[Index], name: str) -> Optional[List[Call]]:
    found: List[Call] = []
    for index in indexes:
        names = _names(index, name)
        if names & index.loaded_names or name in index.loaded_attrs or names & index.bases:
            return None  # passed around (``partial(f)``, ``fn=f``): called elsewhere
        for n in names:
            found.extend(index.by_name.get(n, ()))
        found.extend(index.by_attr.get(name, ()))  # ``module.f(...)``
    return found


def _instance_calls(
    indexes: List[Index], cls: str, kept, whole_calls=None, some=False, own=None
) -> Optional[List[Call]]:
    """The calls in ``indexes`` of the instances of ``cls``: each
    construction kept in a plain attribute (``self.attn = Cls(...)``) or
    name, and every call of that attribute or name (``kept``: ``_kept``'s
    answer over every file read).  ``whole_calls``: a set that gets the
    calls of a ``Sequential`` as a whole (the instance's result goes on to
    the next item, unless it is the last).  ``own``: the index of the file
    that defines ``cls`` (its methods)."""
    if kept is None:
        return None
    attrs, names, held, whole, makers = kept
    found: List[Call] = []
    # a container kept on ``self`` is read as an attribute; a local of the same
    # name (``zones = batch["zones"]`` beside ``self.zones``) is another value
    named = set().union(*(index.held_names for index in indexes))
    for index in indexes:
        for n in _names(index, cls):
            found.extend(index.called_now.get(n, ()))
        if not some and (
            _read_otherwise(attrs & index.loaded_attrs, index, own or indexes[0], cls)
            or names & index.loaded_names
        ):
            return None  # the instance read otherwise than called (``.forward``, a hook)
        if not some and held & (index.loaded_attrs | (index.loaded_names & named)):
            return None  # the container read otherwise (``len(self.blocks)``, appended to)
        for a in attrs:
            # ``self.attn(...)`` in a class that keeps other classes' modules there is not ours
            found.extend(
                c for c in index.by_attr.get(a, ()) if _may_keep(index, c.owner, a, cls, makers)
            )
        for n in names:
            found.extend(index.by_name.get(n, ()))
        for h in held:
            found.extend(
                c for c in index.by_item.get(h, ()) if _may_hold(index, c.within, h, cls, makers)
            )
            called = [*index.by_attr.get(h, ()), *index.by_name.get(h, ())]
            if called and h not in whole:
                return None  # a ModuleList called as a whole: not a call of its items
            found.extend(called)  # a Sequential called: its first item gets the input
            if whole_calls is not None:
                whole_calls.update(map(id, called))
            for n in index.loop_names.get(h, ()):
                if n in index.loaded_names:
                    return None  # the item read otherwise than called
                for c in index.by_name.get(n, ()):
                    if not c.within or any(
                        held_there == h and _may_hold(index, o, h, cls, makers)
                        for o, held_there in c.within
                    ):
                        found.append(c)
    return found


def _read_otherwise(read: Set[str], index: Index, own: Index, cls: str) -> bool:
    """Whether an attribute of ``read`` that may keep an instance of ``cls``
    is read otherwise than called: anything but a call of something it keeps
    (``self.decoder.token_embedding(tokens)``, probe AN's AN10), which runs a
    submodule, not ``cls``'s ``forward``.  A method of ``cls``'s (``own``: the
    file that defines it) may run it, and so may any name called on an
    instance of a class with a base other than ``nn.Module``."""
    if not read:
        return False
    if read & index.read_plain:
        return True
    methods, bases = own.classes.get(cls, (None, None))
    if methods is None or not bases <= {"nn.Module", "Module", "torch.nn.Module"}:
        return True
    return any(
        index.methods_called.get(a, set()) & (methods | {"__call__", "forward"}) for a in read
    )


def _may_hold(index: Index, owner: Optional[str], held: str, cls: str, makers=()) -> bool:
    """Whether ``self.<held>`` in a method of the class ``owner`` may hold
    instances of ``cls``: unless that class fills it itself, with
    constructions of other classes only (then its items are not ``cls``'s);
    ``makers``: the factories that return ``cls``'s instances."""
    built = index.holds.get((owner, held)) if owner is not None else None
    return _may_be(built, {cls}, makers)


def _may_keep(index: Index, owner: Optional[str], attr: str, cls: str, makers=()) -> bool:
    """Whether ``self.<attr>`` in a method of the class ``owner`` may hold an
    instance of ``cls``: unless that class assigns it itself, constructions
    of other classes only (an ``Encoder`` whose ``self.attn = SelfAttention(...)``
    beside a ``Mixer`` whose ``self.attn = Other(...)``)."""
    built = index.attr_holds.get((owner, attr)) if owner is not None else None
    return _may_be(built, _names(index, cls), makers)


def _may_be(built: Optional[Set[str]], names: Set[str], makers) -> bool:
    """Whether a place a class fills with ``built`` (classes, "" for anything
    else; None: nowhere) may hold what ``names`` or ``makers`` build."""
    return built is None or "" in built or bool(built & (names | set(makers)))


MAX_FACTORIES = 2  # a factory of a factory of the class: followed no deeper


def _kept(
    indexes: List[Index], cls: str, depth: int = 0, some: bool = False
) -> Optional[Tuple[Set[str], ...]]:
    """(attributes, names, containers of modules, the containers among them
    that are ``Sequential``, the factories that return them) the
    constructions of ``cls`` are kept in; None when one is not kept so, or
    the class is used otherwise.  A construction a module-level function
    returns (``def make(d): return Block(d)``) is kept where that function's
    calls are."""
    attrs: Set[str] = set()
    names: Set[str] = set()
    held: Set[str] = set()
    whole: Set[str] = set()
    makers: Set[str] = set()
    for index in indexes:
        own = _names(index, cls)
        if not some and (
            own & index.loaded_names or cls in index.loaded_attrs or own & index.forward_bases
        ):
            return None  # passed around or subclassed: built and called elsewhere
        for n in own:
            for built in index.by_name.get(n, ()):
                if built.into is None:
                    if some:
                        continue
                    return None  # in a container, an argument: not followed
                kind = built.into[0]
                if kind == "called":
                    continue  # ``Block(32, 4)(x)``: its call is ``called_now``'s
                if kind == "return":
                    makers.add(built.into[1])
                    continue
                (attrs if kind == "attr" else names if kind == "name" else held).add(built.into[1])
                if kind == "seq":
                    whole.add(built.into[1])
        if index.by_attr.get(cls) and not some:
            return None  # ``module.Cls(...)``: not followed
    for maker in sorted(makers - {cls}):
        got = _kept(indexes, maker, depth + 1, some) if depth < MAX_FACTORIES else None
        if got is None:
            return None
        for mine, theirs in zip((attrs, names, held, whole, makers), got):
            mine |= theirs
    return attrs, names, held, whole, makers


def _method_calls(indexes: List[Index], cls: str, method: str) -> Optional[List[Call]]:
    """The calls of ``cls``'s method other than ``forward``
    (``self._attend(...)``, ``super()._attend(...)``, ``block._attend(...)``):
    every call of an attribute of that name in the project, whatever its
    object, so that a call of another class's method of the same name can
    only unsettle a parameter; but not ``self._attend(...)`` inside another
    class that defines ``_attend`` itself, which calls its own.  None when
    the method is read otherwise than called (``fn = self._attend``,
    ``checkpoint(self._attend, ...)``): it is then called where this cannot
    see."""
    found: List[Call] = []
    for index in indexes:
        if method in index.loaded_attrs:
            return None
        found.extend(c for c in index.by_attr.get(method, ()) if c.definer in (None, cls))
    return found


def _bind_literals(call: Call, signature) -> Optional[Dict[str, object]]:
    positional, kwonly, defaults, varargs, varkw = signature
    if call.splat:
        return None
    got: Dict[str, object] = {}
    if len(call.args) > len(positional) and not varargs:
        return None
    for name, value in zip(positional, call.args):
        got[name] = value
    for i, value in enumerate(call.args[len(positional) :]):
        got[f"*{i}"] = value  # into ``*args``: read back by its place
    for name, value in call.keywords.items():
        if name in got:
            return None
        if name not in positional and name not in kwonly:
            if not varkw:
                return None
            got["**" + name] = value  # read back as ``kwargs.get(name)``
            continue
        got[name] = value
    for name in list(positional) + list(kwonly):
        if name not in got:
            if name not in defaults:
                return None  # a required parameter left out: not a call of this function
            got[name] = defaults[name]
    return got
