"""The environment of the flow pass: which definitions reach a point.

``Env`` is an immutable map ``name -> tuple of Def`` (a hash trie with path
copying), ``join`` merges the environments of two branches and remembers
both sides, and ``worlds`` reads those sides back: the combinations of
definitions that can reach a point together.  ``flow.py`` builds them in its
one pass; the rules read them through ``flow`` and ``relational``.
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import libcst as cst

# a tuple of ``flow.Def`` (the definitions of one name); flow.py imports this module
Defs = Tuple[object, ...]


class Env:
    """An immutable map ``name -> tuple of Def``: the definitions reaching one
    point of the program.

    Every binding makes a new environment and the old one stays (definitions
    and call sites keep the environment they saw).  A dict copied per binding
    made that quadratic: a module of 50,000 assignments took tens of GB.  This
    is a hash trie with path copying: up to 32 names it is one small dict
    (copied per binding, as before); beyond, a binding copies one 32-slot node
    per level and one small leaf.  Joins share every subtree the two sides
    have in common.

    An environment made by a join remembers its sides (``_join``), and every
    environment bound from it keeps that memory: values assigned together
    on one path stay related at the join (see ``worlds``).
    """

    __slots__ = ("_root", "_join")

    def __init__(self, root=None, join_=None) -> None:
        self._root = {} if root is None else root
        self._join: Optional["_Join"] = join_

    def get(self, name: str, default=None):
        node = self._root
        if type(node) is dict:
            return node.get(name, default)
        h = hash(name)
        while type(node) is tuple:
            node = node[h & 31]
            if node is None:
                return default
            h >>= 5
        return node.get(name, default)

    def __contains__(self, name: str) -> bool:
        return self.get(name, _MISSING) is not _MISSING

    def __getitem__(self, name: str):
        got = self.get(name, _MISSING)
        if got is _MISSING:
            raise KeyError(name)
        return got

    def items(self) -> Iterator[Tuple[str, Defs]]:
        stack = [self._root]
        while stack:
            node = stack.pop()
            if type(node) is dict:
                yield from node.items()
            elif node is not None:
                stack.extend(reversed(node))

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self.items())

    def __len__(self) -> int:
        return sum(1 for _ in self.items())

    def set(self, name: str, defs: Defs) -> "Env":
        return Env(_trie_set(self._root, hash(name), 0, name, defs), self._join)

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Env({dict(self.items())!r})"


_MISSING = object()
_LEAF_MAX = 32
_MAX_SHIFT = 60  # past this, hashes are spent: leaves just grow


def _trie_set(node, h: int, shift: int, name: str, value):
    if node is None:
        return {name: value}
    if type(node) is dict:
        if name in node or len(node) < _LEAF_MAX or shift >= _MAX_SHIFT:
            leaf = dict(node)
            leaf[name] = value
            return leaf
        slots: List = [None] * 32
        for key, val in node.items():
            i = (hash(key) >> shift) & 31
            if slots[i] is None:
                slots[i] = {}
            slots[i][key] = val
        node = tuple(slots)
    i = (h >> shift) & 31
    slots = list(node)
    slots[i] = _trie_set(node[i], h, shift + 5, name, value)
    return tuple(slots)


EMPTY_ENV = Env()


def join(a: Env, b: Env, conds: Optional[Tuple[Optional[tuple], Optional[tuple]]] = None) -> Env:
    """Definitions reaching a point from either side (a's first).

    ``conds``: the condition (test, polarity, env) under which each side ran,
    for an ``if``.  The result remembers both sides for ``worlds``."""
    if a is b:
        return a
    root = _trie_join(a._root, b._root, 0)
    ca, cb = conds if conds is not None else (None, None)
    return Env(root, _Join(root, ((a, ca), (b, cb))))


class _Join:
    """The sides of one join: the trie right after it, and each side's
    environment with the condition it ran under (None: no condition)."""

    __slots__ = ("root", "sides")

    def __init__(self, root, sides) -> None:
        self.root = root
        self.sides = sides


World = Tuple[Dict[str, Defs], Tuple[Tuple[cst.BaseExpression, bool, Env], ...]]
MAX_WORLDS = 32
_MAX_JOIN_DEPTH = 12
_MAX_SKIPS = 10_000


def worlds(env: Env, names: Sequence[str], limit: int = MAX_WORLDS) -> Optional[List[World]]:
    """The combinations of definitions of ``names`` that can reach ``env``
    together, each with the conditions of the branches that made it.

    Each variable on its own is joined at every merge point; here the sides
    of the joins are followed instead, as long as a name has not been rebound
    since the join (then its later definition holds on every side).  One
    branch that sets ``mask = None; is_causal = True`` and another that sets
    only ``is_causal = False`` give two worlds, never ``mask`` with ``True``.
    None when there are more than ``limit`` worlds (the caller then reads
    the joined values, as before).  A condition is the one the branch ran
    under; whether it still says something about a name at ``env`` (it was
    not rebound since) is the caller's to check against the condition's env.
    """
    out: List[World] = []
    if not _worlds(env, tuple(dict.fromkeys(names)), {}, (), out, limit, 0):
        return None
    return out


def _worlds(env: Env, names, fixed, conds, out: List[World], limit: int, depth: int) -> bool:
    fixed = dict(fixed)
    steps = 0
    while True:
        j = env._join
        if j is None or depth > _MAX_JOIN_DEPTH or not names or steps > _MAX_SKIPS:
            world = dict(fixed)
            for name in names:
                got = env.get(name)
                if got is not None:
                    world[name] = got
            out.append((world, conds))
            return len(out) <= limit
        at_join = Env(j.root)
        free = []
        for name in names:
            got = env.get(name)
            if got is at_join.get(name):
                free.append(name)
            elif got is not None:
                fixed[name] = got  # rebound after the join: the same on every side
        names = tuple(free)
        first = j.sides[0][0]
        if all(all(side.get(n) is first.get(n) for n in names) for side, _ in j.sides[1:]):
            env = first  # no side touched these names: the join says nothing about them
            steps += 1
            continue
        for side, cond in j.sides:
            more = conds + (cond,) if cond is not None else conds
            if not _worlds(side, names, fixed, more, out, limit, depth + 1):
                return False
        return True


def _merge_defs(mine, defs):
    if mine is None:
        return defs
    if mine is defs:
        return mine
    merged = list(mine)
    for d in defs:
        if d not in merged:
            merged.append(d)
    return tuple(merged)


def _trie_join(x, y, shift: int):
    if x is y or y is None:
        return x
    if x is None:
        return y
    if type(x) is tuple and type(y) is tuple:
        slots = [_trie_join(a, b, shift + 5) for a, b in zip(x, y)]
        if all(s is a for s, a in zip(slots, x)):
            return x
        return tuple(slots)
    if type(x) is dict and type(y) is dict:
        out = dict(x)
        for name, defs in y.items():
            out[name] = _merge_defs(out.get(name), defs)
        if len(out) <= _LEAF_MAX or shift >= _MAX_SHIFT:
            return out
        x, y = {}, out  # too big for a leaf: insert one by one below
    out = x  # a leaf against a node: y's names go into x one by one
    for name, defs in Env(y).items():
        h = hash(name)
        out = _trie_set(out, h, shift, name, _merge_defs(_trie_get(out, h, shift, name), defs))
    return out


def _trie_get(node, h: int, shift: int, name: str):
    h >>= shift
    while type(node) is tuple:
        node = node[h & 31]
        if node is None:
            return None
        h >>= 5
    return node.get(name) if node is not None else None
