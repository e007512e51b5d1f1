"""A cache of per-file results for ``flake8-mha check`` (and ``confirm``'s lint).

An entry holds what one file produced (its findings with their notebook
cells, and its problems, e.g. a syntax error), as JSON, under a key that is
the SHA-256 of everything those results depend on today:

- the file's bytes and its path as given (findings carry the path; the
  suffix decides Python or notebook);
- the settings that change findings: the codes the run reports (after
  select/ignore), ``--disable-noqa``, the mode (only ``check`` is cached);
- the project version and a hash of the package's own source files, so an
  edited rule (a developer's checkout) never reads an old entry.

With project-wide analysis on (``program/``, docs/reach.md) a file's
findings also depend on the project files it imports: a small manifest
(``deps-<key>.json``, keyed as above) lists those files, and the results' key
adds each one's path and SHA-256, so an edit to an imported file misses the
dependent file's entry.  Paths under the folder that holds the cache are
stored relative to it (``portable``): a tree copied elsewhere with its cache
checks its own files.  The summaries of imported files are kept here too
(``sum-<key>.json``, keyed by the file's bytes and the analyzer version).

Safety: every entry is written to a temporary file and moved into place in
one step (``write_entry``: a reader sees the whole old entry or the whole new
one, never half), so ``-j N`` and two runs at once are safe; it is not
fsynced, since a torn entry fails its checksum.  An entry is verified, not trusted (a shared or
restored cache in CI may hold anything): it is read only if it is a regular
file under ``MAX_ENTRY_BYTES``; JSON nested too deep is refused; it must hold
a SHA-256 of its own content (``sum``) and match the schema in every type and
range (lines and columns from 1, codes the run reports, the file's own path,
messages without control characters).  Anything else is ignored, recomputed
and overwritten; it is never printed and never fatal.  A dependency that
disappears stays in the manifest as absent, so its return misses the entry.  A folder that cannot
be created or written turns the cache off for the run, silently; it never
fails a run nor adds a message.  Bounds: after a run that wrote entries, the oldest
(by last use) are removed until at most ``MAX_ENTRIES`` entries and
``MAX_BYTES`` bytes remain.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..core.findings import Finding

DEFAULT_DIR = ".flake8-mha-cache"
SCHEMA = 1
MAX_ENTRIES = 20_000
MAX_BYTES = 200 * 1024 * 1024
MAX_ENTRY_BYTES = 16 * 1024 * 1024  # an entry, a manifest, a summary
MAX_DEP_BYTES = 2 * 1024 * 1024  # summaries.MAX_FILE_BYTES: a larger file is never a dependency
_PRUNE_TO = 0.8  # prune down to this share of the bounds, so pruning is rare

_FINDING_KEYS = {
    "code": str,
    "line": int,
    "col": int,
    "message": str,
    "path": str,
    "evidence": dict,
}
_ITEM_KEYS = ("cell", "cell_index", "file_line")
_PROBLEM_KEYS = ("line", "col", "cell", "cell_index", "file_line")

_CODE = re.compile(r"^[A-Z]{1,3}[0-9]{3}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_source_hash: Optional[str] = None


def read_json(path: str) -> Any:
    """The JSON value in ``path``, or None: not a regular file, larger than
    ``MAX_ENTRY_BYTES``, not UTF-8, not JSON, or nested deeper than the
    parser's recursion limit (``[`` 100,000 deep)."""
    from ..core.atomic import read_regular

    try:
        return json.loads(read_regular(path, MAX_ENTRY_BYTES).decode("utf-8"))
    except (OSError, ValueError, RecursionError, MemoryError):
        return None


def checksum(value: Any) -> str:
    """SHA-256 of a JSON value in canonical form (sorted keys)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def source_hash() -> str:
    """SHA-256 over the package's own ``*.py`` files (names and bytes), once per process."""
    global _source_hash
    if _source_hash is None:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the package, not app/
        h = hashlib.sha256()
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    full = os.path.join(folder, name)
                    h.update(os.path.relpath(full, root).replace(os.sep, "/").encode() + b"\0")
                    with open(full, "rb") as fh:
                        h.update(hashlib.sha256(fh.read()).digest())
        _source_hash = h.hexdigest()
    return _source_hash


def entry_key(
    data: bytes,
    path: str,
    codes: Sequence[str],
    disable_noqa: bool,
    mode: str,
    deps: Optional[Dict[str, Optional[str]]] = None,
    project: bool = False,
) -> str:
    """``project``: project-wide analysis is on; ``deps``: then the imported
    project files' paths and SHA-256 (None for a file that is gone)."""
    from .. import __version__

    settings = json.dumps(
        {
            "project": bool(project),
            "deps": sorted((deps or {}).items(), key=lambda kv: kv[0]),
            "schema": SCHEMA,
            "version": __version__,
            "source": source_hash(),
            "path": path,
            "codes": sorted(codes),
            "disable_noqa": bool(disable_noqa),
            "mode": mode,
        },
        sort_keys=True,
    )
    h = hashlib.sha256(settings.encode())
    h.update(b"\0")
    h.update(data)
    return h.hexdigest()


def selected_codes(directory: str, selection: Any, compute: Callable[[], List[str]]) -> List[str]:
    """The codes a run reports, memoised in the cache folder: finding them
    imports every rule (and libcst), most of a warm run's time otherwise.
    Keyed by the selection options (JSON values), the version and the
    package's sources."""
    from .. import __version__

    settings = json.dumps(
        {"schema": SCHEMA, "version": __version__, "source": source_hash(), "selection": selection},
        sort_keys=True,
    )
    key = "codes-" + hashlib.sha256(settings.encode()).hexdigest()
    path = os.path.join(directory, key + ".json")
    entry = read_json(path)
    if (
        isinstance(entry, dict)
        and set(entry) == {"key", "codes", "sum"}
        and entry["key"] == key
        and isinstance(entry["codes"], list)
        and entry["codes"]  # a run reports some code: an empty list would silence it
        and all(type(c) is str and _CODE.match(c) for c in entry["codes"])
        and entry["sum"] == checksum([key, entry["codes"]])
    ):
        return entry["codes"]
    codes = compute()
    try:
        from ..core.atomic import write_text

        if os.path.isdir(directory):  # made by usable(); never made here
            write_text(
                path, json.dumps({"key": key, "codes": codes, "sum": checksum([key, codes])})
            )
    except OSError:
        pass
    return codes


class Cache:
    """The entries under one folder, ``<dir>/<2 hex>/<key>.json``."""

    def __init__(self, directory: str):
        self.directory = directory
        self.wrote = 0
        self.broken = False

    def _path(self, key: str) -> str:
        return os.path.join(self.directory, key[:2], key + ".json")

    def load(
        self, key: str, path_: Optional[str] = None, codes: Optional[Sequence[str]] = None
    ) -> Optional[Dict[str, Any]]:
        """The entry, or None (missing, unreadable, or not exactly our schema).
        ``path_`` and ``codes``: the linted file's path and the codes the run
        reports; an entry naming another path or another code is refused."""
        path = self._path(key)
        entry = read_json(path)
        if not _valid(entry, key, path_, codes):
            return None
        try:  # last use, for pruning the oldest
            os.utime(path)
        except OSError:
            pass
        return entry

    def store(self, key: str, items: List[Dict[str, Any]], problems: List[Dict[str, Any]]) -> None:
        """Write an entry, if it reads back as the same values (JSON has no tuple)."""
        if self.broken:
            return
        entry = {"schema": SCHEMA, "key": key, "items": items, "problems": problems}
        try:
            entry["sum"] = checksum([key, items, problems])
            text = json.dumps(entry)  # key order kept: the JSON report shows it
        except (TypeError, ValueError, RecursionError):
            return
        if json.loads(text) != entry or not _valid(entry, key):
            return  # would not come back identical: do not cache this file
        try:
            write_entry(self._path(key), text.encode("utf-8"))
        except OSError:  # silently off for the rest of this worker's files
            self.broken = True
            return
        self.wrote += 1

    def _prepare(self) -> None:
        """On first use: the folder, with a CACHEDIR.TAG and a .gitignore of ``*``."""
        tag = os.path.join(self.directory, "CACHEDIR.TAG")
        if os.path.exists(tag):
            return
        from ..core.atomic import write_text

        write_text(os.path.join(self.directory, ".gitignore"), "# made by flake8-mha\n*\n")
        write_text(
            tag,
            "Signature: 8a477f597d28d172789f06886806bc55\n"
            "# flake8-mha's cache of per-file results; safe to delete.\n",
        )

    def prune(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> int:
        """Remove the least recently used entries beyond the bounds; the number removed."""
        entries: List[Tuple[float, int, str]] = []
        try:
            shards = [self.directory]  # the codes-*.json of selected_codes
            shards += [
                e.path
                for e in os.scandir(self.directory)
                if e.is_dir(follow_symlinks=False) and len(e.name) == 2
            ]
            for shard in shards:
                for e in os.scandir(shard):
                    if e.name.endswith(".json"):
                        st = e.stat(follow_symlinks=False)
                        entries.append((st.st_mtime, st.st_size, e.path))
        except OSError:
            return 0
        total = sum(size for _, size, _ in entries)
        if len(entries) <= max_entries and total <= max_bytes:
            return 0
        entries.sort()
        keep_n, keep_b = int(max_entries * _PRUNE_TO), int(max_bytes * _PRUNE_TO)
        removed = 0
        for _, size, path in entries:
            if len(entries) - removed <= keep_n and total <= keep_b:
                break
            try:
                os.unlink(path)
            except OSError:
                continue
            removed += 1
            total -= size
        return removed


class SideStore:
    """Small JSON values beside the entries, ``<dir>/<2 hex>/<prefix><key>.json``
    (pruned with them): dependency manifests and summaries of imported files.
    ``get`` gives None for anything that does not read back; ``put`` is
    silent when it cannot write."""

    def __init__(self, directory: str, prefix: str):
        self.directory = directory
        self.prefix = prefix

    def _path(self, key: str) -> str:
        return os.path.join(self.directory, key[:2], self.prefix + key + ".json")

    def get(self, key: str) -> Any:
        entry = read_json(self._path(key))
        if (
            not isinstance(entry, dict)
            or set(entry) != {"schema", "key", "value", "sum"}
            or entry["key"] != key
            or entry["schema"] != SCHEMA
        ):
            return None
        try:
            if entry["sum"] != checksum([key, entry["value"]]):
                return None
        except (TypeError, ValueError, RecursionError):
            return None
        return entry["value"]

    def put(self, key: str, value: Any) -> None:
        try:
            entry = {"schema": SCHEMA, "key": key, "value": value}
            entry["sum"] = checksum([key, value])
            text = json.dumps(entry)
            write_entry(self._path(key), text.encode("utf-8"))
        except (TypeError, ValueError, RecursionError, OSError):
            pass


def write_entry(path: str, data: bytes) -> None:
    """Put a cache file in place in one step: a temporary file in its folder,
    then ``os.replace``, so a reader (another worker, another run) sees the
    whole old file or the whole new one.  Unlike ``atomic.write_bytes``, which
    writes the user's files (``--fix``, reports), nothing is fsynced: an entry
    that a crash leaves empty or cut short fails its checksum and is computed
    again, so durability buys nothing here, and its two fsyncs per file were
    most of the time a cold flake8 run spent writing entries (3,581 over
    torch's tree).  Raises ``OSError``."""
    from ..core.atomic import TMP_SUFFIX

    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(
        folder, "." + os.path.basename(path) + "." + os.urandom(8).hex() + TMP_SUFFIX
    )
    # mode 0o666: the umask applies, as for ``open()``
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(tmp, path)
        tmp = None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def file_hashes(paths: Sequence[str]) -> Dict[str, Optional[str]]:
    """SHA-256 of each file's bytes; None for a file that is absent, cannot be
    read, is not a regular file (a FIFO is never opened for a blocking read)
    or is larger than a dependency may be."""
    from ..core.atomic import read_regular

    out: Dict[str, Optional[str]] = {}
    for p in paths:
        try:
            out[p] = hashlib.sha256(read_regular(p, MAX_DEP_BYTES)).hexdigest()
        except (OSError, ValueError):
            out[p] = None
    return out


def _root(cache_dir: str) -> str:
    return os.path.dirname(os.path.abspath(cache_dir))


def portable(paths: Sequence[str], cache_dir: str) -> List[str]:
    """Dependency paths as the manifest stores them: relative to the folder
    that holds the cache (the project root), with ``/``, when under it, so
    that a tree copied or checked out elsewhere with its cache (CI restoring
    it) checks its own files, not the old tree's.  Others stay absolute."""
    root = _root(cache_dir)
    out = []
    for p in paths:
        try:
            rel = os.path.relpath(os.path.abspath(p), root)
        except ValueError:  # another drive (Windows): no relative path
            out.append(p)
            continue
        inside = rel != os.pardir and not rel.startswith(os.pardir + os.sep)
        out.append(rel.replace(os.sep, "/") if inside and not os.path.isabs(rel) else p)
    return out


def located(paths: Sequence[str], cache_dir: str) -> List[str]:
    """The files a stored manifest names, in this tree (``portable`` undone)."""
    root = _root(cache_dir)
    return [p if os.path.isabs(p) else os.path.join(root, *p.split("/")) for p in paths]


def portable_hashes(deps: Dict[str, Optional[str]], cache_dir: str) -> Dict[str, Optional[str]]:
    """``deps`` keyed by ``portable`` paths: what an entry's key is made of."""
    paths = list(deps)
    return dict(zip(portable(paths, cache_dir), (deps[p] for p in paths)))


def manifest(
    old: Any, deps: Dict[str, Optional[str]]
) -> Tuple[List[str], Dict[str, Optional[str]]]:
    """The dependency manifest to store after an analysis whose project read
    ``deps`` (path -> SHA-256), given the ``old`` manifest: a file listed
    before that is absent now stays, as absent (None), so that when it comes
    back (``git stash pop``, a branch switch) the entry misses and the file
    is analysed again with it.  A file still there but no longer read is
    dropped.  Returns the paths and the hashes the entry's key is made of."""
    keyed: Dict[str, Optional[str]] = dict(deps)
    if isinstance(old, list):
        for p in old:
            if type(p) is str and p not in keyed and not os.path.lexists(p):
                keyed[p] = None
    return sorted(keyed), keyed


def finding_dict(f: Finding) -> Dict[str, Any]:
    return {
        "code": f.code,
        "line": f.line,
        "col": f.col,
        "message": f.message,
        "path": f.path,
        "evidence": f.evidence,
    }


def finding_of(d: Dict[str, Any]) -> Finding:
    return Finding(d["code"], d["line"], d["col"], d["message"], d["path"], d["evidence"])


_LOWEST = {"line": 1, "col": 1, "cell": 1, "cell_index": 0, "file_line": 1}


def _opt_int(value: Any, name: str) -> bool:
    """None, or an int in range: positions from 1, a cell index from 0."""
    return value is None or (type(value) is int and _LOWEST[name] <= value < 1 << 31)


def _text(value: Any) -> bool:
    return type(value) is str and _CONTROL.search(value) is None


def _valid(
    entry: Any, key: str, path: Optional[str] = None, codes: Optional[Sequence[str]] = None
) -> bool:
    """Whether ``entry`` is exactly what ``Cache.store`` writes for ``key``:
    the schema's keys and types, positions in range, printable text, its own
    checksum; with ``path``/``codes``, only that path and codes the run reports
    (MHA000, the analyzer's own "could not analyze", always is)."""
    if not isinstance(entry, dict) or set(entry) != {"schema", "key", "items", "problems", "sum"}:
        return False
    if entry["schema"] != SCHEMA or entry["key"] != key:
        return False
    items, problems = entry["items"], entry["problems"]
    if not isinstance(items, list) or not isinstance(problems, list):
        return False
    allowed = None if codes is None else {*codes, "MHA000"}
    for item in items:
        if not isinstance(item, dict) or set(item) != {"finding", "fixable", *_ITEM_KEYS}:
            return False
        f = item["finding"]
        if not isinstance(f, dict) or set(f) != set(_FINDING_KEYS):
            return False
        if any(type(f[k]) is not t for k, t in _FINDING_KEYS.items()):
            return False
        if not _CODE.match(f["code"]) or (allowed is not None and f["code"] not in allowed):
            return False
        if not (_opt_int(f["line"], "line") and _opt_int(f["col"], "col")):
            return False
        if not (_text(f["message"]) and _text(f["path"])):
            return False
        if path is not None and f["path"] != path:
            return False
        if type(item["fixable"]) is not bool or not all(_opt_int(item[k], k) for k in _ITEM_KEYS):
            return False
    for p in problems:
        if not isinstance(p, dict) or set(p) != {"path", "message", *_PROBLEM_KEYS}:
            return False
        if not (_text(p["path"]) and _text(p["message"])):
            return False
        if path is not None and p["path"] != path:
            return False
        if not all(_opt_int(p[k], k) for k in _PROBLEM_KEYS):
            return False
    try:
        return entry["sum"] == checksum([key, items, problems])
    except (TypeError, ValueError, RecursionError):
        return False


def usable(directory: str) -> bool:
    """Whether entries can be kept in ``directory`` (made on first use).
    Silent when not: the run's own messages (a full disk for ``--output-file``)
    stay the only ones.  Checked once per run, before any worker."""
    try:
        Cache(directory)._prepare()
    except OSError:
        return False
    return True
