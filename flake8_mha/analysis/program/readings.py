"""A file's top-level functions, each read by a reader when first asked for
(``fills.helper_signs``, ``fills.kv_helpers``): a file has many functions
and few such helpers."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Dict


class Readings(Mapping):
    """A file's top-level functions -> what ``read`` says of each, read when
    first asked for: a file has many functions and few such helpers."""

    def __init__(self, tree: ast.Module, read) -> None:
        self._functions = {
            n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        self._reader = read
        self._read: Dict[str, object] = {}

    def defines(self, name: str) -> bool:
        return name in self._functions

    def __getitem__(self, name: str):
        if name not in self._read:
            self._read[name] = self._reader(self._functions[name])
        return self._read[name]

    def __iter__(self):
        return iter(self._functions)

    def __len__(self) -> int:
        return len(self._functions)
