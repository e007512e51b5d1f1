"""MHA006: whether some path through a function reaches its SDPA call with
both a mask and ``is_causal`` set, read path by path.

lucidrains' older ``Attend`` (copied into zeta and many others) folds the
causal triangle into a given mask and clears the flag (``if exists(mask): if
causal: mask = mask & ~tri; causal = False``), then may replace the mask by
a bias and clear the flag again.  Joined over paths, the mask may be set and
the flag may be True at the call; on every single path one of them is off.

The reading follows the statements of the function that holds the call, in
order, with a small state per path: the mask None, set or unknown; the flag
False, True or unknown.  A test of the mask's None-ness (``mask is None``,
``exists(mask)``) or of the flag splits the paths; assignments set them; a
``return`` or ``raise`` ends a path.  A loop or ``try`` that assigns either
name, a ``del``, or the call in a loop or ``try``: not read (the finding
stands).  Only plain names given as ``attn_mask`` and ``is_causal`` are
read."""

from __future__ import annotations

from typing import Callable, FrozenSet, Optional, Set, Tuple

import libcst as cst

from ..analysis.classes import dotted_text
from ..analysis.flow import CallSite, DefKind, lookup, walk

NONE, SET, UNKNOWN = "none", "set", "?"
ALIAS = "="  # a flag set from a name or attribute: "=self.causal", settled by a test of it
FALSE, TRUE = "false", "true"
State = Tuple[str, str]  # (mask, flag)
_LOOPS = (cst.For, cst.While, cst.Try, cst.TryStar, cst.Match)


class _Unread(Exception):
    """A statement the reading does not follow."""


def never_both(site: CallSite, mask, causal, none_test: Callable) -> bool:
    """Whether no path of the function reaches the call at ``site`` with the
    mask set and the flag True (``none_test(test, negated)``: whether
    ``test`` is ``mask is None``, or ``mask is not None`` when negated)."""
    func = site.function
    if not (
        isinstance(mask, cst.Name)
        and isinstance(causal, cst.Name)
        and isinstance(func, cst.FunctionDef)
        and isinstance(func.body, cst.IndentedBlock)
    ):
        return False
    reading = _Reading(mask.value, causal.value, site.node, none_test)
    try:
        _, at_call = reading.block(func.body.body, frozenset({(UNKNOWN, UNKNOWN)}))
    except (_Unread, RecursionError):
        return False
    if not at_call:
        return False
    return all(m == NONE or c == FALSE for m, c in at_call)


class _Reading:
    def __init__(self, mask: str, flag: str, call: cst.Call, none_test: Callable):
        self.mask, self.flag, self.call, self.none_test = mask, flag, call, none_test
        self._holds: dict = {}

    def holds_call(self, node: cst.CSTNode) -> bool:
        key = id(node)
        if key not in self._holds:
            self._holds[key] = any(n is self.call for n in walk(node))
        return self._holds[key]

    def assigns(self, node: cst.CSTNode) -> bool:
        return any(
            isinstance(n, cst.Name) and n.value in (self.mask, self.flag) for n in _targets(node)
        )

    # statements ----------------------------------------------------------------
    def block(self, stmts, states: FrozenSet[State]):
        """(the states after ``stmts``, the states at the call when it is in them)."""
        for stmt in stmts:
            if self.holds_call(stmt):
                return frozenset(), self.at(stmt, states)
            states = self.stmt(stmt, states)
        return states, None

    def at(self, stmt, states) -> Optional[FrozenSet[State]]:
        if isinstance(stmt, cst.SimpleStatementLine):
            return states
        if isinstance(stmt, cst.With):
            return self.block(stmt.body.body, states)[1]
        if isinstance(stmt, cst.If):
            if self.holds_call(stmt.test):
                return states
            if self.holds_call(stmt.body):
                return self.block(stmt.body.body, self.refine(stmt.test, states, True))[1]
            return self.orelse(stmt.orelse, self.refine(stmt.test, states, False))[1]
        raise _Unread

    def orelse(self, node, states):
        if node is None:
            return states, None
        if isinstance(node, cst.If):
            if self.holds_call(node):
                return frozenset(), self.at(node, states)
            return self.stmt(node, states), None
        return self.block(node.body.body, states)

    def stmt(self, stmt, states: FrozenSet[State]) -> FrozenSet[State]:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                states = self.small(small, states)
            return states
        if isinstance(stmt, cst.If):
            body, _ = self.block(stmt.body.body, self.refine(stmt.test, states, True))
            rest, _ = self.orelse(stmt.orelse, self.refine(stmt.test, states, False))
            return body | rest
        if isinstance(stmt, cst.With):
            return self.block(stmt.body.body, states)[0]
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            return states
        if isinstance(stmt, _LOOPS) and not self.assigns(stmt):
            return states  # the body runs or not; it sets neither name
        raise _Unread

    def small(self, node, states: FrozenSet[State]) -> FrozenSet[State]:
        if isinstance(node, (cst.Return, cst.Raise)):
            return frozenset()
        if isinstance(node, (cst.Del, cst.Global, cst.Nonlocal)):
            if isinstance(node, cst.Del) and not self.assigns(node):
                return states
            raise _Unread
        if isinstance(node, (cst.Assign, cst.AnnAssign)):
            targets = (
                [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            )
            value = node.value
            for target in targets:
                if isinstance(target, cst.Name) and target.value == self.mask:
                    if isinstance(value, cst.IfExp):  # ``bias = m if needs_bias else None``
                        states = self.chosen_mask(value, states)
                        continue
                    states = frozenset((self.mask_value(value, m), c) for m, c in states)
                elif isinstance(target, cst.Name) and target.value == self.flag:
                    states = frozenset((m, _flag_value(value)) for m, c in states)
                elif any(
                    isinstance(n, cst.Name) and n.value in (self.mask, self.flag)
                    for n in _targets(target)
                ):
                    raise _Unread  # ``mask, causal = ...``
            return states
        if isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name):
            if node.target.value == self.flag:
                return frozenset((m, UNKNOWN) for m, c in states)
            return states  # ``mask &= ...``: set stays set
        return states

    def chosen_mask(self, value: cst.IfExp, states: FrozenSet[State]) -> FrozenSet[State]:
        """The mask set to one side of ``a if test else b``: each side on the
        paths where the test is what picks it (a flag set from the same test,
        ``is_causal = not needs_bias``, is then known on each)."""
        out: FrozenSet[State] = frozenset()
        for side, truth in ((value.body, True), (value.orelse, False)):
            for m, c in self.refine(value.test, states, truth):
                out |= {(self.mask_value(side, m), c)}
        return out

    def mask_value(self, value, before: str) -> str:
        if isinstance(value, cst.Name) and value.value == "None":
            return NONE
        root = value
        while isinstance(root, (cst.Attribute, cst.Subscript, cst.Call, cst.BinaryOperation)):
            root = (
                root.left
                if isinstance(root, cst.BinaryOperation)
                else (root.func if isinstance(root, cst.Call) else root.value)
            )
        if isinstance(root, cst.Name) and root.value == self.mask and root is not value:
            return before  # ``mask.expand(...)``, ``mask & ~tri``: set stays set
        return UNKNOWN

    # tests ---------------------------------------------------------------------
    def refine(self, test, states: FrozenSet[State], truth: bool) -> FrozenSet[State]:
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self.refine(test.expression, states, not truth)
        if isinstance(test, cst.BooleanOperation):
            both = isinstance(test.operator, cst.And) == truth  # and/True, or/False
            if not both:
                return states
            return self.refine(test.right, self.refine(test.left, states, truth), truth)
        if self.none_test(test, False):  # ``mask is None``
            return _set_mask(states, NONE if truth else SET)
        if self.none_test(test, True):  # ``mask is not None``, ``exists(mask)``
            return _set_mask(states, SET if truth else NONE)
        if isinstance(test, cst.Name) and test.value == self.flag:
            want = TRUE if truth else FALSE
            return frozenset(
                (m, want) for m, c in states if c in (want, UNKNOWN) or c.startswith(ALIAS)
            )
        text = dotted_text(test)
        if text is not None:  # ``is_causal = self.causal`` then ``if self.causal:``
            want, other = (TRUE, FALSE) if truth else (FALSE, TRUE)
            return frozenset(
                (m, want if c == ALIAS + text else other if c == ALIAS + "!" + text else c)
                for m, c in states
            )
        return states


def _set_mask(states: FrozenSet[State], want: str) -> FrozenSet[State]:
    return frozenset((want, c) for m, c in states if m in (want, UNKNOWN))


def _flag_value(value) -> str:
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Not):
        text = dotted_text(value.expression)  # ``is_causal = not needs_bias``
        return ALIAS + "!" + text if text is not None else UNKNOWN
    if isinstance(value, cst.Name) and value.value in ("False", "None"):
        return FALSE
    if isinstance(value, cst.Integer) and value.evaluated_value == 0:
        return FALSE
    if isinstance(value, cst.Name) and value.value == "True":
        return TRUE
    text = dotted_text(value)
    # the flag is what a later test of the same name or attribute finds it (openlanguagemodel's
    # ``is_causal = self.causal``, then ``if self.causal: ...; is_causal = False``)
    return ALIAS + text if text is not None else UNKNOWN


def _targets(node) -> Set[cst.CSTNode]:
    """The names a statement (or target) binds: assignment and loop targets,
    ``with ... as``, ``del``, walrus."""
    out: Set[cst.CSTNode] = set()
    for n in walk(node):
        if isinstance(n, cst.AssignTarget):
            out.update(walk(n.target))
        elif isinstance(n, (cst.AnnAssign, cst.AugAssign)):
            out.update(walk(n.target))
        elif isinstance(n, (cst.For, cst.CompFor)):
            out.update(walk(n.target))
        elif isinstance(n, cst.AsName):
            out.update(walk(n.name))
        elif isinstance(n, cst.Del):
            out.update(walk(n.target))
        elif isinstance(n, cst.NamedExpr):
            out.update(walk(n.target))
    if isinstance(node, (cst.Name, cst.Tuple, cst.List, cst.StarredElement)):
        out.update(walk(node))
    return out


def keyword_default(expr, env, scope) -> Optional[cst.BaseExpression]:
    """``D`` of ``kwargs.get("k", D)`` (``**`` parameter), not a constant (``mask is None``)."""
    if not (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in ("get", "pop")
        and isinstance(expr.func.value, cst.Name)
        and len(expr.args) == 2
        and all(a.keyword is None and not a.star for a in expr.args)
        and isinstance(expr.args[0].value, cst.SimpleString)
    ):
        return None
    defs = lookup(expr.func.value.value, env, scope)
    if len(defs) != 1 or defs[0].kind != DefKind.PARAM:
        return None
    param = defs[0].node
    if not isinstance(param, cst.Param) or param.star != "**":
        return None
    default = expr.args[1].value  # a constant: what the callers pass decides (values.py)
    return None if isinstance(default, (cst.Name, cst.Integer, cst.Float)) else default
