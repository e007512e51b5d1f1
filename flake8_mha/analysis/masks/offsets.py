"""Triangles with a symbolic diagonal: the causal mask of a KV cache.

With ``i`` queries and ``j`` keys (the last ``i`` of them new), the causal
mask is aligned at the bottom right: query ``r`` sits at position
``r + j - i`` and must not see key ``c > r + j - i``.  Code writes it

- ``ones(i, j).triu(j - i + 1)`` / ``torch.triu(ones(L, S), diagonal=S - L + 1)``:
  True = the future, an ignore-mask;
- ``ones(i, j).tril(j - i)``: True = the past and the present, a keep-mask.

Decision (conservative): the diagonal must read ``cols - rows + c`` where
``cols`` and ``rows`` are written exactly as the second and first size
arguments of the ``ones`` the triangle is cut from (the same text; a local
bound once to the ``ones`` call is followed), and ``c`` an integer constant.
Then ``triu`` with ``c >= 1`` is an ignore-mask and ``tril`` with ``c >= 0`` a
keep-mask, whatever the sizes: when ``j >= i`` (a cache only adds keys) the
offset is ``>= c``; when ``j < i`` the same triangle is still the
bottom-right aligned causal mask, so its meaning does not change.  Any other
diagonal (``i - j + 1``, ``past + 1`` with ``past`` not visibly ``j - i``,
a coefficient other than 1) stays unknown.

Such a triangle is not the top-left ``tril(ones(L, L))`` that ``is_causal``
means when ``L != S``, so its ``tri`` is left unset (MHA006 compares against
exactly that triangle); its meaning, kind, layout (L, S) and ``causal`` are
set.  A transposed one loses its meaning like any transposed square mask.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import libcst as cst

from ..flow import lookup
from .calls import At

_HOPS = 4
_ONES = ("torch.ones",)


def _code(node: cst.CSTNode) -> str:
    if getattr(node, "lpar", None):
        node = node.with_changes(lpar=[], rpar=[])
    return " ".join(cst.Module([]).code_for_node(node).split())


def linear(node: cst.CSTNode, sign: int = 1, out=None) -> Optional[Tuple[Dict[str, int], int]]:
    """``node`` as a sum of ``coefficient * atom`` plus an integer constant;
    atoms are names, attributes, calls and subscripts, keyed by their text."""
    terms, const = out if out is not None else ({}, 0)
    if isinstance(node, cst.Integer):
        return terms, const + sign * int(node.evaluated_value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        s = -sign if isinstance(node.operator, cst.Minus) else sign
        return linear(node.expression, s, (terms, const))
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Subtract)):
        got = linear(node.left, sign, (terms, const))
        if got is None:
            return None
        s = -sign if isinstance(node.operator, cst.Subtract) else sign
        return linear(node.right, s, got)
    if isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
        key = _code(node)
        terms = dict(terms)
        terms[key] = terms.get(key, 0) + sign
        if terms[key] == 0:
            del terms[key]
        return terms, const
    return None


class Offsets:
    """The part of ``MaskEvaluator`` that reads a triangle's symbolic diagonal."""

    def _kv_offset(self, diag_node, src, at: At) -> Optional[int]:
        """``c`` when ``diag_node`` reads ``cols - rows + c`` for the sizes of
        the ``ones(rows, cols)`` that ``src`` is; None otherwise."""
        sizes = self._ones_sizes(src, at, 0)
        if sizes is None:
            return None
        rows, cols = sizes
        got = linear(diag_node)
        if got is None:
            return None
        terms, const = got
        if rows == cols or terms != {cols: 1, rows: -1}:
            return None
        return const

    def _ones_sizes(self, node, at: At, hops: int) -> Optional[Tuple[str, str]]:
        if hops > _HOPS:
            return None
        if isinstance(node, cst.Name):
            defs = lookup(node.value, at.env, at.scope)
            if len(defs) != 1 or defs[0].kind != "assign" or defs[0].index:
                return None
            return self._ones_sizes(defs[0].node, at.of(defs[0], None), hops + 1)
        if not isinstance(node, cst.Call):
            return None
        func = node.func
        is_ones = (
            (isinstance(func, cst.Attribute) and func.attr.value == "new_ones")
            or (
                not isinstance(func, cst.Attribute)
                or isinstance(func.value, (cst.Name, cst.Attribute))
            )
            and self.qualname(func, at.env, at.scope) in _ONES
        )
        if not is_ones:
            return None
        dims = [a.value for a in node.args if a.keyword is None and a.star == ""]
        if len(dims) == 1 and isinstance(dims[0], (cst.Tuple, cst.List)):
            if any(isinstance(el, cst.StarredElement) for el in dims[0].elements):
                return None
            dims = [el.value for el in dims[0].elements]
        if len(dims) != 2:
            return None
        return _code(dims[0]), _code(dims[1])
