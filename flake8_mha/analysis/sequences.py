"""Sequences of numbers the code writes out, and the passes of a loop over
them: ``EMBED_DIMS = (64, 128, 320, 512)`` read as ``EMBED_DIMS[2]``, and
``for dim, heads in zip(EMBED_DIMS, NUM_HEADS):`` read one pass at a time
(probe AN's AN28, PVT's stages).

A loop's name has no one value, so ``values.value_of`` leaves it unknown.
A rule that judges numbers together (a module's width and head count)
asks ``each_pass``: the judgement runs once per pass of the loops whose
names it read, with each name pinned to that pass's element, so a width
is never paired with another pass's head count (docs/reach.md, "Sizes
handed to a construction")."""

from __future__ import annotations

from contextlib import contextmanager
from itertools import product
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import libcst as cst

from ..core.positions import line_of
from ..core.walk import LIST_MUTATORS
from .flow import Def, DefKind, Env, Scope, lookup, module_scope
from .splats import mutated

MAX_ITEMS = 64  # a longer sequence, or more passes together, is not read

# id(iterable node) -> the element of the pass being judged (``each_pass``)
_PINNED: Dict[int, object] = {}
# the loops read while no pass is pinned: id(iterable node) -> (Def, elements or None)
_MET: List[Optional[Dict[int, tuple]]] = [None]


def sequence_of(
    node, env: Env, scope: Optional[Scope], value_of: Callable, depth: int = 0
) -> Optional[tuple]:
    """The values of a sequence the code writes out: a tuple or list display,
    a name bound once to one (a list never changed in place), a module-level
    one imported from a project file, ``zip``/``enumerate``/``range``/
    ``reversed`` of such; None when unknown or longer than ``MAX_ITEMS``.
    Its elements are what ``value_of`` (``values.value_of``, which asks this
    module) makes of them, unknown ones included."""
    t = type(node)
    if t is cst.Tuple or t is cst.List:
        if len(node.elements) > MAX_ITEMS or any(
            isinstance(e, cst.StarredElement) for e in node.elements
        ):
            return None
        return tuple(value_of(e.value, env, scope, depth + 1) for e in node.elements)
    if t is cst.Name:
        defs = lookup(node.value, env, scope)
        if len(defs) != 1:
            return None
        d = defs[0]
        if d.kind == DefKind.ASSIGN and isinstance(d.node, (cst.Tuple, cst.List)):
            changed = mutated(node.value, module_scope(d.scope), LIST_MUTATORS, nested=True)
            if isinstance(d.node, cst.List) and changed:
                return None
            return sequence_of(d.node, d.env, d.scope, value_of, depth + 1)
        if d.kind == DefKind.IMPORT:
            got = _asker(scope)
            return got(d.node, node.value) if got is not None else None
        return None
    if t is cst.Attribute and isinstance(node.value, cst.Name):  # ``config.DIMS``
        defs = lookup(node.value.value, env, scope)
        got = _asker(scope)
        if len(defs) == 1 and defs[0].kind == DefKind.IMPORT and got is not None:
            return got(defs[0].node, node.value.value, node.attr.value)
        return None
    if t is cst.Call and isinstance(node.func, cst.Name) and not _shadowed(node.func, env, scope):
        name = node.func.value
        if any(a.star or a.keyword is not None for a in node.args):
            if not (name == "enumerate" and _start_only(node)):
                return None
        if name == "zip":
            parts = [sequence_of(a.value, env, scope, value_of, depth + 1) for a in node.args]
            return tuple(zip(*parts)) if parts and all(p is not None for p in parts) else None
        if name == "enumerate" and node.args:
            got = sequence_of(node.args[0].value, env, scope, value_of, depth + 1)
            start = value_of(node.args[1].value, env, scope, depth + 1) if len(node.args) > 1 else 0
            if got is None or type(start) is not int:
                return None
            return tuple(enumerate(got, start))
        if name == "reversed" and len(node.args) == 1:
            got = sequence_of(node.args[0].value, env, scope, value_of, depth + 1)
            return None if got is None else tuple(reversed(got))
        if name == "range" and 1 <= len(node.args) <= 3:
            ends = [value_of(a.value, env, scope, depth + 1) for a in node.args]
            if not all(type(v) is int for v in ends) or (len(ends) == 3 and ends[2] == 0):
                return None
            got = range(*ends)
            return tuple(got) if len(got) <= MAX_ITEMS else None
    return None


def _asker(scope: Optional[Scope]):
    """The project's ``imported_sequence`` (None: this file alone)."""
    return getattr(getattr(module_scope(scope), "project", None), "imported_sequence", None)


def _start_only(call: cst.Call) -> bool:
    """``enumerate(xs, start=1)``: the one keyword it takes."""
    return (
        len(call.args) == 2
        and call.args[0].keyword is None
        and not call.args[0].star
        and call.args[1].keyword is not None
        and call.args[1].keyword.value == "start"
    )


def _shadowed(name: cst.Name, env: Env, scope: Optional[Scope]) -> bool:
    """The builtin's name is bound by the program (``zip = my_zip``)."""
    return bool(lookup(name.value, env, scope))


def pass_value(d: Def, value_of: Callable, depth: int) -> Optional[tuple]:
    """``(value,)`` of the loop name ``d`` (a ``for`` definition) in the
    pass ``each_pass`` pins; else None, and the loop is noted so that
    ``each_pass`` can run its passes."""
    key = id(d.node)
    if key in _PINNED:
        value = _PINNED[key]
        for i in d.index:
            if not isinstance(value, tuple) or i >= len(value):
                return None
            value = value[i]
        return (value,)
    met = _MET[0]
    if met is not None and key not in met:
        met[key] = (d, sequence_of(d.node, d.env, d.scope, value_of, depth + 1))
    return None


@contextmanager
def _collecting() -> Iterator[Dict[int, tuple]]:
    saved = _MET[0]
    _MET[0] = {}
    try:
        yield _MET[0]
    finally:
        _MET[0] = saved


def each_pass(judge: Callable[[], object]) -> Iterator[Tuple[Optional[str], object]]:
    """``(where, judge())`` once for the code as it is (``where`` None), and,
    when ``judge`` read the name of a loop over a known sequence
    (``sequence_of``), once per pass of those loops with their names pinned
    (``where``: ``the loop at line 11, pass 3 of 4``).  The passes are
    yielded only when the unpinned judgement read such a loop; at most
    ``MAX_ITEMS`` passes in all."""
    with _collecting() as met:
        first = judge()
    yield None, first
    loops = [(key, d, elements) for key, (d, elements) in met.items() if elements]
    if not loops or any(key in _PINNED for key, _, _ in loops):
        return
    total = 1
    for _, _, elements in loops:
        total *= len(elements)
    if total > MAX_ITEMS:
        return
    for picks in product(*(range(len(elements)) for _, _, elements in loops)):
        for (key, _, elements), i in zip(loops, picks):
            _PINNED[key] = elements[i]
        try:
            got = judge()
        finally:
            for key, _, _ in loops:
                _PINNED.pop(key, None)
        yield _where(loops, picks), got


def _where(loops, picks) -> str:
    parts = []
    for (_, d, elements), i in zip(loops, picks):
        root = module_scope(d.scope)
        line = line_of(root.node, d.node) if root is not None else None
        at = f" at line {line}" if line else ""
        parts.append(f"the loop{at}, pass {i + 1} of {len(elements)}")
    return ", ".join(parts)
