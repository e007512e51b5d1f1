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
dependent file's entry.  The summaries of imported files are kept here too
(``sum-<key>.json``, keyed by the file's bytes and the analyzer version).

Safety: every entry is written through ``atomic.write_bytes`` (a reader sees
the whole old entry or the whole new one, never half), so ``-j N`` and two
runs at once are safe.  An entry that does not read back exactly (bad JSON,
another schema, wrong types) is ignored and recomputed.  A folder that cannot
be created or written turns the cache off for the run, silently; it never
fails a run nor adds a message.  Bounds: after a run that wrote entries, the oldest
(by last use) are removed until at most ``MAX_ENTRIES`` entries and
``MAX_BYTES`` bytes remain.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .findings import Finding

DEFAULT_DIR = ".flake8-mha-cache"
SCHEMA = 1
MAX_ENTRIES = 20_000
MAX_BYTES = 200 * 1024 * 1024
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

_source_hash: Optional[str] = None


def source_hash() -> str:
    """SHA-256 over the package's own ``*.py`` files (names and bytes), once per process."""
    global _source_hash
    if _source_hash is None:
        root = os.path.dirname(os.path.abspath(__file__))
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
    from . import __version__

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
    from . import __version__

    settings = json.dumps(
        {"schema": SCHEMA, "version": __version__, "source": source_hash(), "selection": selection},
        sort_keys=True,
    )
    key = "codes-" + hashlib.sha256(settings.encode()).hexdigest()
    path = os.path.join(directory, key + ".json")
    try:
        with open(path, "rb") as fh:
            entry = json.loads(fh.read().decode("utf-8"))
        if (
            isinstance(entry, dict)
            and entry.get("key") == key
            and isinstance(entry.get("codes"), list)
            and all(type(c) is str for c in entry["codes"])
        ):
            return entry["codes"]
    except (OSError, ValueError):
        pass
    codes = compute()
    try:
        from .atomic import write_text

        if os.path.isdir(directory):  # made by usable(); never made here
            write_text(path, json.dumps({"key": key, "codes": codes}))
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

    def load(self, key: str) -> Optional[Dict[str, Any]]:
        """The entry, or None (missing, unreadable, or not exactly our schema)."""
        path = self._path(key)
        try:
            with open(path, "rb") as fh:
                entry = json.loads(fh.read().decode("utf-8"))
        except (OSError, ValueError):
            return None
        if not _valid(entry, key):
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
            text = json.dumps(entry)  # key order kept: the JSON report shows it
        except (TypeError, ValueError):
            return
        if json.loads(text) != entry or not _valid(entry, key):
            return  # would not come back identical: do not cache this file
        from .atomic import WriteError, write_bytes

        try:
            write_bytes(self._path(key), text.encode("utf-8"))
        except (WriteError, OSError):  # silently off for the rest of this worker's files
            self.broken = True
            return
        self.wrote += 1

    def _prepare(self) -> None:
        """On first use: the folder, with a CACHEDIR.TAG and a .gitignore of ``*``."""
        tag = os.path.join(self.directory, "CACHEDIR.TAG")
        if os.path.exists(tag):
            return
        from .atomic import write_text

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
        try:
            with open(self._path(key), "rb") as fh:
                entry = json.loads(fh.read().decode("utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or entry.get("key") != key or entry.get("schema") != SCHEMA:
            return None
        return entry.get("value")

    def put(self, key: str, value: Any) -> None:
        from .atomic import WriteError, write_bytes

        try:
            text = json.dumps({"schema": SCHEMA, "key": key, "value": value})
            write_bytes(self._path(key), text.encode("utf-8"))
        except (TypeError, ValueError, WriteError, OSError):
            pass


def file_hashes(paths: Sequence[str]) -> Dict[str, Optional[str]]:
    """SHA-256 of each file's bytes (None for a file that cannot be read)."""
    out: Dict[str, Optional[str]] = {}
    for p in paths:
        try:
            with open(p, "rb") as fh:
                out[p] = hashlib.sha256(fh.read()).hexdigest()
        except OSError:
            out[p] = None
    return out


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


def _opt_int(value: Any) -> bool:
    return value is None or (type(value) is int)


def _valid(entry: Any, key: str) -> bool:
    if not isinstance(entry, dict) or entry.get("schema") != SCHEMA or entry.get("key") != key:
        return False
    items, problems = entry.get("items"), entry.get("problems")
    if not isinstance(items, list) or not isinstance(problems, list):
        return False
    for item in items:
        if not isinstance(item, dict) or set(item) != {"finding", "fixable", *_ITEM_KEYS}:
            return False
        f = item["finding"]
        if not isinstance(f, dict) or set(f) != set(_FINDING_KEYS):
            return False
        if any(type(f[k]) is not t for k, t in _FINDING_KEYS.items()):
            return False
        if type(item["fixable"]) is not bool or not all(_opt_int(item[k]) for k in _ITEM_KEYS):
            return False
    for p in problems:
        if not isinstance(p, dict) or set(p) != {"path", "message", *_PROBLEM_KEYS}:
            return False
        if type(p["path"]) is not str or type(p["message"]) is not str:
            return False
        if not all(_opt_int(p[k]) for k in _PROBLEM_KEYS):
            return False
    return True


def usable(directory: str) -> bool:
    """Whether entries can be kept in ``directory`` (made on first use).
    Silent when not: the run's own messages (a full disk for ``--output-file``)
    stay the only ones.  Checked once per run, before any worker."""
    try:
        Cache(directory)._prepare()
    except OSError:
        return False
    return True
