"""Segment masks: token-to-token "same sequence" comparisons of packed
sequences, ``ids[..., :, None] == ids[..., None, :]``.

One tensor of segment ids, broadcast once as a column (the query axis) and
once as a row (the key axis), compared with ``==``: True where query and key
belong to the same segment, a keep-mask; ``!=`` gives the ignore-mask.  The
layout is (N, L, S).

Recognised broadcasts (directly or through a local bound once):

- column: ``ids[..., :, None]``, ``ids[:, :, None]``, ``ids.unsqueeze(-1)``;
- row: ``ids[..., None, :]``, ``ids[:, None, :]``, ``ids.unsqueeze(-2)``.

Both sides must be the same name (after following locals) and one must be
the column, the other the row.  A vector's ``batch[:, None] == batch[None,
:]`` (PyG's node-to-graph assignment) is the same comparison over (L, S):
written with two indices on each side, a 2-D tensor would compare samples
with samples, which no one means.  Swin's ``ids.unsqueeze(1) !=
ids.unsqueeze(2)`` is the same comparison too: ``unsqueeze(2)`` needs two
axes, so the ids are (N, L).  Anything else (an ``unsqueeze(1)`` against
``unsqueeze(0)``, whose meaning depends on the rank, two different tensors,
``ids[:, None]`` against ``ids[:, :, None]``) stays unknown: precision over
recall.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional, Tuple

import libcst as cst

from ..flow import lookup
from .calls import At, arg
from .domain import IGNORE, KEEP, Mask, comparison

_HOPS = 6
SEGMENT_LAYOUT = ("N", "L", "S")


def _is_none(el: cst.SubscriptElement) -> bool:
    s = el.slice
    return isinstance(s, cst.Index) and isinstance(s.value, cst.Name) and s.value.value == "None"


def _is_full(el: cst.SubscriptElement) -> bool:
    s = el.slice
    return isinstance(s, cst.Slice) and s.lower is None and s.upper is None and s.step is None


def _is_ellipsis(el: cst.SubscriptElement) -> bool:
    s = el.slice
    return isinstance(s, cst.Index) and isinstance(s.value, cst.Ellipsis)


def _axis_of_index(elements) -> Optional[str]:
    """ "col" for ``[..., :, None]`` / ``[:, :, None]``, "row" for
    ``[..., None, :]`` / ``[:, None, :]``; "col1"/"row1" for a vector's
    ``[:, None]`` / ``[None, :]``."""
    els = list(elements)
    if len(els) == 2:
        if _is_full(els[0]) and _is_none(els[1]):
            return "col1"
        if _is_none(els[0]) and _is_full(els[1]):
            return "row1"
        return None
    if len(els) != 3:
        return None
    first, a, b = els
    if not (_is_ellipsis(first) or _is_full(first)):
        return None
    if _is_full(a) and _is_none(b):
        return "col"
    if _is_none(a) and _is_full(b):
        return "row"
    return None


class Segments:
    """The part of ``MaskEvaluator`` that reads segment comparisons."""

    def _segment_compare(self, left, op: str, right, node, at: At) -> Optional[Mask]:
        if op not in ("==", "!="):
            return None
        a = self._segment_side(left, at, 0)
        b = self._segment_side(right, at, 0)
        if a is None or b is None or a[0] != b[0]:
            return None
        meaning = KEEP if op == "==" else IGNORE
        if {a[1], b[1]} == {"col1", "row1"}:  # PyG's ``batch[:, None] == batch[None, :]``
            return replace(
                comparison(meaning, SEGMENT_LAYOUT[1:], self.origin(node)), pairwise=True
            )
        if {a[1], b[1]} not in ({"col", "row"}, {"u1", "u2"}):
            return None
        return replace(comparison(meaning, SEGMENT_LAYOUT, self.origin(node)), pairwise=True)

    def _segment_side(self, node, at: At, hops: int) -> Optional[Tuple[str, str]]:
        """(root name, "col" | "row") of one side of a segment comparison."""
        if hops > _HOPS:
            return None
        if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name):
            axis = _axis_of_index(node.slice)
            return (node.value.value, axis) if axis else None
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "unsqueeze"
            and isinstance(node.func.value, cst.Name)
            and len(node.args) == 1
        ):
            d = self._number(arg(node, 0, "dim"), at)
            axis = {-1: "col", -2: "row", 1: "u1", 2: "u2"}.get(d) if isinstance(d, int) else None
            return (node.func.value.value, axis) if axis else None
        if isinstance(node, cst.Name):
            defs = lookup(node.value, at.env, at.scope)
            if len(defs) != 1 or defs[0].kind != "assign" or defs[0].index:
                return None
            return self._segment_side(defs[0].node, at.of(defs[0], None), hops + 1)
        return None
