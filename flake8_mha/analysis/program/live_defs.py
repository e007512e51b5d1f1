"""Which top-level functions of a file no summary table keeps, told before any
is summarised (issue 30: torch's ``nn/functional.py`` names SDPA, so each of
its 125 functions was summarised, and ``summaries._keep_reaching`` dropped
them all).

A top-level function's summary is kept when it reaches a sink itself (an
SDPA call, or a fill or softmax of scores in a file that fills scores: words
of its own text), or has an edge that ``chains.may_reach`` keeps: a call of
a name imported from what may be the project, or of a name the table holds
(another kept function, a class, or what a module-level assignment makes an
entry of: a lambda, an alias, a ``partial``).  A call through ``self``,
``super()`` or a method is kept only in a class.  A function whose text
names none of these is dropped, so it is not summarised.  Identifiers are
read from the text (comments, strings and attribute names only add to them),
so the test keeps a superset of what the table keeps and the tables are
unchanged (``tests/test_summaries_screen.py`` compares them with and without
it)."""

from __future__ import annotations

import ast
import re
from typing import Dict, FrozenSet, List, Set

from ...core import walk as astwalk
from .import_lines import EXTERNAL

_WORD = re.compile(r"[A-Za-z_]\w*")
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
# the words of a fill or softmax of scores (``fills.score_sinks``), which a
# summary reads only in a file that fills scores
FILL_WORDS = frozenset(
    {"masked_fill", "masked_fill_", "where", "softmax", "log_softmax", "Softmax"}
    # and of a query-key product a helper masks and returns (``returned_scores``)
    | {"@", "matmul", "bmm", "einsum"}
)
# values a module-level assignment binds that no summary table holds under the
# name (a table's entries by assignment: a lambda, an alias, a ``partial``)
_NO_ENTRY = (
    ast.Constant,
    ast.JoinedStr,
    ast.Dict,
    ast.List,
    ast.Set,
    ast.Tuple,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.BinOp,
    ast.UnaryOp,
    ast.Compare,
    ast.BoolOp,
)


def dead_functions(tree: ast.Module, lines: List[str], seeds: FrozenSet[str]) -> Set[str]:
    """The names of the top-level functions of ``tree`` whose summaries the
    table would drop, each bound only by such a ``def``.  ``lines``: the
    file's lines as Python numbers them; ``seeds``: the words that make a
    function a sink's by its own text (the file's spellings of SDPA, and
    ``FILL_WORDS`` where the file fills scores)."""
    kinds: Dict[str, List[object]] = {}  # name -> its module-level bindings
    partials = {"functools"}  # the names ``partial`` may be called by
    if not _bindings(tree, kinds, partials):
        return set()  # a star import of the project: any name may be a wrapper
    for bound in kinds.values():  # an assignment: what it assigns
        bound[:] = [_kind(b, partials) if isinstance(b, ast.expr) else b for b in bound]
    words: Dict[str, Set[str]] = {}
    for name, bound in kinds.items():
        if all(isinstance(b, _DEFS) for b in bound):
            found: Set[str] = set()
            for node in bound:
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                text = "".join(lines[first - 1 : node.end_lineno])
                found.update(_WORD.findall(text))
                if "@" in text:  # ``q @ k.transpose(-2, -1)`` (or a decorator: kept, a superset)
                    found.add("@")
            found.discard(name)  # a recursive call keeps nothing
            words[name] = found
    # the names whose call may reach a sink, whatever the caller
    open_names = {n for n, bound in kinds.items() if n not in words and "open" in bound}
    live = {n for n, found in words.items() if found & seeds or found & open_names}
    grown = True
    while grown:  # a function that calls a kept one is kept
        grown = False
        for name, found in words.items():
            if name not in live and found & live:
                live.add(name)
                grown = True
    return set(words) - live


def _bindings(tree: ast.Module, kinds: Dict[str, List[object]], partials: Set[str]) -> bool:
    """Fill ``kinds`` with the module-level bindings of ``tree`` (its own
    statements: in its compound statements' blocks, not in functions or
    classes): a ``def`` binds its node, an assignment its value; a class or
    an import of what may be the project binds ``"open"``, an outside
    package's import ``"closed"``.  ``partials`` gathers what ``functools`` is
    imported as.  False at a star import of what may be the project."""
    for node in astwalk.own_statements(tree):
        if isinstance(node, _DEFS):
            kinds.setdefault(node.name, []).append(node)
        elif isinstance(node, ast.ClassDef):
            kinds.setdefault(node.name, []).append("open")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if isinstance(node, ast.ImportFrom):
                    if alias.name == "*":
                        if node.level or (node.module or "").split(".")[0] not in EXTERNAL:
                            return False
                        continue
                    outside = not node.level and (node.module or "").split(".")[0] in EXTERNAL
                    name = alias.asname or alias.name
                    if node.module == "functools":
                        partials.add(name)
                else:
                    outside = alias.name.split(".")[0] in EXTERNAL
                    name = alias.asname or alias.name.split(".")[0]
                    if alias.name == "functools":
                        partials.add(name)
                kinds.setdefault(name, []).append("closed" if outside else "open")
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    kinds.setdefault(target.id, []).append(node.value or "closed")
    return True


def _kind(value: ast.AST, partials: Set[str]) -> str:
    """``"closed"`` for an assigned value no summary table holds under the
    name: a literal, arithmetic, or a call other than a ``partial``'s."""
    if isinstance(value, _NO_ENTRY):
        return "closed"
    if isinstance(value, ast.Call):
        func = value.func
        while isinstance(func, ast.Attribute):
            if func.attr == "partial":
                return "open"
            func = func.value
        return "open" if isinstance(func, ast.Name) and func.id in partials else "closed"
    return "open"
