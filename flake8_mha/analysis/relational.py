"""Rules that read two values together (a mask and a flag) ask here for the
combinations that can really meet at a call.

``env.worlds`` gives the definitions that reach a point together, with the
conditions of the branches that made them; ``world_sites`` turns each into a
``CallSite`` whose environment holds that combination and whose conditions
are the call's own plus the branch conditions that still hold (no name the
test reads was rebound since).  ``excludes`` reads a condition through
``not``, ``and`` and ``or`` (``assert not (is_causal and mask is not None)``).
"""

from __future__ import annotations

from typing import Callable, Iterable, List, Optional, Set

import libcst as cst

from .env import World, worlds
from .flow import CallSite, children

Leaf = Callable[[cst.BaseExpression, bool], bool]


def names_in(nodes: Iterable[cst.CSTNode]) -> Set[str]:
    """Plain names read in ``nodes`` (``self.mask`` counts as ``self``)."""
    out: Set[str] = set()
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            out.add(node.value)
            continue
        stack.extend(children(node))
    return out


def world_sites(site: CallSite, exprs: Iterable[cst.CSTNode]) -> Optional[List[CallSite]]:
    """One CallSite per combination of definitions of the names in ``exprs``
    that reaches ``site`` together; None when there is only one combination,
    or too many to tell."""
    names = sorted(names_in(exprs) - {"None", "True", "False"})
    found = worlds(site.env, names) if names else None
    if found is None or len(found) < 2:
        return None
    return [_site_for(site, world) for world in found]


def _site_for(site: CallSite, world: World) -> CallSite:
    defs, conds = world
    env = site.env
    for name, d in defs.items():
        if env.get(name) is not d:
            env = env.set(name, d)
    fresh = tuple(c for c in conds if _still_holds(c, defs, site))
    return CallSite(site.node, env, site.scope, site.conds + fresh, site.parents, site.stmt)


def _still_holds(cond, defs, site: CallSite) -> bool:
    test, _polarity, at_test = cond
    for name in names_in([test]):
        now = defs[name] if name in defs else site.env.get(name)
        then = at_test.get(name)
        # not rebound since the test: the same definitions, or some of those
        # it saw joined (a world split by an earlier branch, ``if mask is not
        # None: mask = ...`` before ``if causal and mask is not None:``)
        if now is not then and not (now and then and all(any(d is e for e in then) for d in now)):
            return False
    return True


def excludes(test: cst.BaseExpression, polarity: bool, leaf: Leaf, depth: int = 0) -> bool:
    """Whether knowing ``test`` is ``polarity`` proves what ``leaf`` proves of
    its simple parts: through ``not``, ``a and b`` (true: either part; false:
    both parts false-proving) and ``a or b`` (the dual)."""
    if depth > 12:
        return False
    if leaf(test, polarity):
        return True
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return excludes(test.expression, not polarity, leaf, depth + 1)
    if isinstance(test, cst.BooleanOperation):
        conj = isinstance(test.operator, cst.And)
        parts = (test.left, test.right)
        if conj == polarity:  # a and b true / a or b false: each part holds
            return any(excludes(p, polarity, leaf, depth + 1) for p in parts)
        return all(excludes(p, polarity, leaf, depth + 1) for p in parts)
    return False


def eliminated(conds, same) -> list:
    """``conds`` (``(test, polarity, ...)``), and what their ``and``s leave
    once the other conditions are known: ``not (a and b)`` with ``a`` true
    means ``not b`` (``elif causal:`` after ``if causal and mask is not
    None:``: the mask is None there).  ``same``: whether two tests are one."""
    known = [p for c in conds if c[1] for p in _and_parts(c[0])]
    out = list(conds)
    for c in conds:
        parts = _and_parts(c[0])
        if c[1] or len(parts) < 2:
            continue
        left = [p for p in parts if not any(same(p, k) for k in known)]
        if len(left) == 1:
            out.append((left[0], False, *c[2:]))
    return out


def _and_parts(test: cst.BaseExpression) -> list:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _and_parts(test.left) + _and_parts(test.right)
    return [test]
