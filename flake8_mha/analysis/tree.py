"""The one tree walk: a LibCST node's syntax children, and every node under
it, without whitespace, brackets or operator tokens.  Shared by the flow
pass, the analyses, the rules and the fixes (re-exported by ``flow``)."""

from __future__ import annotations

from typing import Callable, Dict, Iterator, List, Optional, Tuple

import libcst as cst

_SKIP_TYPES = (
    cst.BaseParenthesizableWhitespace,
    cst.TrailingWhitespace,
    cst.EmptyLine,
    cst.Newline,
    cst.Comment,
    cst.LeftParen,
    cst.RightParen,
    cst.LeftSquareBracket,
    cst.RightSquareBracket,
    cst.LeftCurlyBrace,
    cst.RightCurlyBrace,
    cst.Comma,
    cst.Dot,
    cst.Semicolon,
    cst.Colon,
    cst.AssignEqual,
    cst.BaseBinaryOp,
    cst.BaseUnaryOp,
    cst.BaseBooleanOp,
    cst.BaseCompOp,
    cst.BaseAugOp,
    cst.ImportStar,
    cst.Asynchronous,
)
_FIELDS: Dict[type, Tuple[str, ...]] = {}


def _fields(t: type) -> Tuple[str, ...]:
    names = _FIELDS.get(t)
    if names is None:
        import dataclasses

        names = tuple(
            f.name
            for f in dataclasses.fields(t)
            if not f.name.startswith("whitespace") and f.name not in ("lpar", "rpar", "comma")
        )
        _FIELDS[t] = names
    return names


# What a field's value is, by its type: LibCST's node classes are ABCs, and
# ``isinstance`` against an ABC (or a tuple of them) costs several times a
# dict lookup; the walk asks it of every field of every node, and it was most
# of the flow pass's time (torch's 25 costliest files: 3.2 s -> 0.65 s).
_OTHER, _NODE, _SKIPPED, _SEQUENCE = range(1, 5)  # never 0: ``get() or _kind()``
_KINDS: Dict[type, int] = {}


def _kind(t: type) -> int:
    kind = _KINDS.get(t)
    if kind is None:
        if issubclass(t, cst.CSTNode):
            kind = _SKIPPED if issubclass(t, _SKIP_TYPES) else _NODE
        elif issubclass(t, (tuple, list)):
            kind = _SEQUENCE
        else:
            kind = _OTHER
        _KINDS[t] = kind
    return kind


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    kinds = _KINDS
    for name in _fields(type(node)):
        value = getattr(node, name)
        kind = kinds.get(type(value)) or _kind(type(value))
        if kind == _NODE:
            yield value
        elif kind == _SEQUENCE:
            for item in value:
                if (kinds.get(type(item)) or _kind(type(item))) == _NODE:
                    yield item


def walk(
    node: cst.CSTNode, prune: Optional[Callable[[cst.CSTNode], bool]] = None
) -> Iterator[cst.CSTNode]:
    """``node`` and every node under it (syntax only: no whitespace, brackets
    or operators), without recursion.  Below a node for which ``prune``
    returns true the walk does not descend (the node itself is yielded)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if prune is None or not prune(n):
            stack.extend(children(n))


def walk_in_order(
    node: cst.CSTNode, prune: Optional[Callable[[cst.CSTNode], bool]] = None
) -> Iterator[cst.CSTNode]:
    """``walk``, parents before children and siblings in their fields' order
    (statements in the order of the source), as a LibCST visitor meets them."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if prune is None or not prune(n):
            stack.extend(reversed(list(children(n))))


def is_none(node: Optional[cst.CSTNode]) -> bool:
    """The literal ``None``."""
    return isinstance(node, cst.Name) and node.value == "None"


def self_attribute(node) -> Optional[str]:
    """``attr`` of ``self.attr``, else None."""
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
    ):
        return node.attr.value
    return None


def choices(expr: cst.BaseExpression) -> List[cst.BaseExpression]:
    """The values a conditional expression may take (itself when it is not one)."""
    if isinstance(expr, cst.IfExp):
        return choices(expr.body) + choices(expr.orelse)
    return [expr]


def leaves(body: cst.BaseSuite) -> bool:
    """Whether a block always ends in a ``return`` or a ``raise``: its last
    statement, or every branch of a last ``if``/``elif``/``else`` (one-line
    blocks, ``if c: return x``, too)."""
    if isinstance(body, cst.SimpleStatementSuite):
        return any(isinstance(s, (cst.Return, cst.Raise)) for s in body.body)
    stmts = getattr(body, "body", ())
    last = stmts[-1] if stmts else None
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(s, (cst.Return, cst.Raise)) for s in last.body)
    return isinstance(last, cst.If) and _if_leaves(last)


def _if_leaves(node: cst.If) -> bool:
    """Every branch of an ``if`` with an ``else`` ends in a return or a raise."""
    if node.orelse is None or not leaves(node.body):
        return False
    if isinstance(node.orelse, cst.If):
        return _if_leaves(node.orelse)
    return leaves(node.orelse.body)


def last_word(node) -> Optional[str]:
    """The last name a decorator, base or callee is written with: ``dataclass``
    of ``@dataclasses.dataclass(frozen=True)``, ``NamedTuple`` of
    ``typing.NamedTuple``; None for anything else."""
    if isinstance(node, cst.Call):
        node = node.func
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return node.value if isinstance(node, cst.Name) else None


_TEXT: list = [None, ""]  # the last module read, held (its id may be reused once freed)


def module_text(module) -> str:
    """A LibCST module's text, made once for the module last asked."""
    if _TEXT[0] is not module:
        _TEXT[:] = [module, module.code]
    return _TEXT[1]
