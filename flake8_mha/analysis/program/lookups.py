"""Classes a module lookup by a computed name may build: ``getattr(attn_lib,
cfg.kind)(...)`` in a file that imports ``attn_lib`` may construct any class
of it, so the constructions and calls of those classes are not settled
(``callers.py``; probe AC's AC18: "never built in the project" was said of
a class built so)."""

from __future__ import annotations

import ast
import os
from typing import Dict, Iterable

from ...core.atomic import read_regular
from .signatures import parse

MAX_BYTES = 2 * 1024 * 1024
_FETCHED: Dict[tuple, bool] = {}  # (file, time, size) -> ``_looks_up_imported`` of it


def fetched_by_name(files: Iterable[str]) -> bool:
    """Some file of ``files`` (the importers) fetches from an imported name
    by a computed name (``_looks_up_imported``); each file's answer kept by
    its size and time."""
    for name in files:
        try:
            st = os.stat(name)
            key = (name, st.st_mtime_ns, st.st_size)
            if key not in _FETCHED:
                if len(_FETCHED) > 4096:
                    _FETCHED.clear()
                data = read_regular(name, MAX_BYTES)
                _FETCHED[key] = b"getattr(" in data and _looks_up_imported(
                    parse(data.decode("utf-8", "replace"))
                )
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            return True  # unreadable: what it builds cannot be told
        if _FETCHED[key]:
            return True
    return False


def _looks_up_imported(tree) -> bool:
    """``getattr(m, name)`` with ``m`` an imported name and ``name`` no
    string literal: what it fetches may be any class of that module."""
    imported = set()
    fetched = set()  # the names ``getattr(m, name)`` fetches from (one walk)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imported.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[0], ast.Name)
            and not isinstance(node.args[1], ast.Constant)
        ):
            fetched.add(node.args[0].id)
    return bool(fetched & imported)
