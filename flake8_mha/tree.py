"""The one tree walk: a LibCST node's syntax children, and every node under
it, without whitespace, brackets or operator tokens.  Shared by the flow
pass, the analyses, the rules and the fixes (re-exported by ``flow``)."""

from __future__ import annotations

from typing import Callable, Dict, Iterator, Optional, Tuple

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


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    for name in _fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            if not isinstance(value, _SKIP_TYPES):
                yield value
        elif isinstance(value, (tuple, list)):
            for item in value:
                if isinstance(item, cst.CSTNode) and not isinstance(item, _SKIP_TYPES):
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
