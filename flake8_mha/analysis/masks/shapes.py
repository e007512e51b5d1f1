"""Shapes: what indexing, reshaping and transposing do to a mask's layout
(and to a triangle, which a transpose turns the other way round)."""

from __future__ import annotations

from dataclasses import replace
from typing import List, Optional

import libcst as cst

from ..tree import is_none
from .calls import At, arg, positional
from .domain import (
    ADDITIVE,
    BROADCAST,
    IGNORE,
    KEEP,
    SQUARE,
    UNKNOWN_MASK,
    Layout,
    Mask,
    Origin,
    shape_class,
    tri_meaning,
    tri_transpose,
)

# the methods (and, with an ``input`` first, the torch functions) that keep a
# mask's meaning and change only its layout
RESHAPES = (
    "unsqueeze",
    "unsqueeze_",
    "squeeze",
    "squeeze_",
    "view",
    "reshape",
    "expand",
    "expand_as",
    "repeat",
    "broadcast_to",
    "transpose",
    "transpose_",
    "swapaxes",
    "t",
    "permute",
    "repeat_interleave",
    "flatten",
)


def index_layout(layout: Optional[Layout], elements) -> Optional[Layout]:
    """The layout after ``m[...]``: None adds an axis, a slice keeps one, an
    integer drops one, ``...`` stands for the untouched axes."""
    if layout is None:
        return None
    out: List[str] = []
    els = list(elements)
    consumed = sum(
        1
        for el in els
        if not (
            isinstance(el.slice, cst.Index)
            and (is_none(el.slice.value) or isinstance(el.slice.value, cst.Ellipsis))
        )
    )
    if consumed > len(layout):
        return None
    i = 0
    for el in els:
        s = el.slice
        if isinstance(s, cst.Slice):
            out.append(layout[i])
            i += 1
        elif isinstance(s, cst.Index) and is_none(s.value):
            out.append("1")
        elif isinstance(s, cst.Index) and isinstance(s.value, cst.Ellipsis):
            rest = len(layout) - consumed
            out.extend(layout[i : i + rest])
            i += rest
        elif isinstance(s, cst.Index) and isinstance(s.value, (cst.Integer, cst.UnaryOperation)):
            i += 1
        else:
            return None
    out.extend(layout[i:])
    return tuple(out)


class Shapes:
    """The part of ``MaskEvaluator`` that follows layouts."""

    def _shape_origin(self, inner: Mask, layout, node) -> Optional[Origin]:
        if layout is None:
            return None
        if layout == inner.layout:
            return inner.shape_origin
        return self.origin(node)

    def _reshape(self, attr: str, inner: Mask, call: cst.Call, node, at: At) -> Mask:
        """unsqueeze/squeeze/view/reshape/expand/transpose/permute: the same
        meaning, another layout.  ``call`` holds the arguments after the tensor."""
        if inner.none or not inner.known and inner.fill is None:
            return UNKNOWN_MASK
        layout = inner.layout
        new_layout: Optional[Layout] = None
        pos = positional(call)
        if attr in ("unsqueeze", "unsqueeze_"):
            d = self._number(arg(call, 0, "dim"), at) if call.args else None
            if layout is not None and isinstance(d, int) and not isinstance(d, bool):
                n = len(layout) + 1
                i = d if d >= 0 else n + d
                if 0 <= i < n:
                    new_layout = layout[:i] + ("1",) + layout[i:]
        elif attr in ("squeeze", "squeeze_"):
            d = self._number(arg(call, 0, "dim"), at) if call.args else None
            if layout is not None and isinstance(d, int) and not isinstance(d, bool):
                i = d if d >= 0 else len(layout) + d
                if 0 <= i < len(layout):
                    new_layout = layout[:i] + layout[i + 1 :] if layout[i] == "1" else layout
        elif attr in ("view", "reshape"):
            if pos is not None and len(pos) == 1 and isinstance(pos[0], (cst.Tuple, cst.List)):
                pos = [el.value for el in pos[0].elements if not isinstance(el, cst.StarredElement)]
            if pos and layout is not None:
                if len(pos) == 4:
                    new_layout = self._four_axes(pos, layout, at)
                elif len(pos) == len(layout) and len(pos) == 2:
                    new_layout = layout
        elif attr in ("expand", "expand_as", "repeat", "broadcast_to"):
            if layout is not None and pos is not None and len(pos) == len(layout):
                new_layout = (
                    tuple("?" if lab == "1" else lab for lab in layout)
                    if shape_class(layout) == BROADCAST
                    else layout
                )
            elif layout is not None and attr == "expand_as":
                new_layout = None
        elif attr == "repeat_interleave":
            new_layout = None  # (N, L, S) -> (N*H, L, S): the meaning stays
        elif attr == "flatten":  # a 2-D grid per sample made one row: (N, H, W) -> (N, H*W)
            start = self._number(arg(call, 0, "start_dim"), at) if call.args else 0
            if layout is not None and len(layout) == 3 and layout[0] == "N" and start == 1:
                new_layout = ("N", "S")
        elif attr == "t":
            return self._transpose(inner, node, two_d=True)
        elif attr == "permute":
            if inner.shape == SQUARE or inner.tri is not None:
                return UNKNOWN_MASK  # which way round a permuted triangle reads is not tracked
            return replace(inner, layout=None, shape_origin=None)
        elif attr in ("transpose", "transpose_", "swapaxes"):
            return self._swap(inner, pos, node, at)
        return replace(
            inner,
            layout=new_layout,
            tri=inner.tri,
            shape_origin=self._shape_origin(inner, new_layout, node),
        )

    def _four_axes(self, pos, layout: Layout, at: At) -> Layout:
        """The labels of ``m.view(a, b, c, d)``: ones stay ones, the batch and
        the key axis keep their place."""
        labels = []
        for i, p in enumerate(pos):
            v = self._number(p, at)
            if v == 1:
                labels.append("1")
            elif i == 0:
                labels.append("N" if layout[0] == "N" else "?")
            elif i == 3:
                labels.append("S")
            elif i == 2 and layout[-2:] == ("L", "S"):
                labels.append("L")
            else:
                labels.append("?")
        return tuple(labels)

    def _swap(self, inner: Mask, pos, node, at: At) -> Mask:
        """``m.transpose(a, b)``: two axes change places."""
        layout = inner.layout
        dims = [self._number(p, at) for p in (pos or [])]
        if len(dims) != 2 or not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
            return UNKNOWN_MASK
        a, b = dims
        if layout is None:
            if {a, b} in ({0, 1}, {-1, -2}) and (inner.tri is not None or inner.shape is None):
                return self._transpose(inner, node, two_d=False)
            return UNKNOWN_MASK
        n = len(layout)
        if not (-n <= a < n and -n <= b < n):
            return UNKNOWN_MASK
        a, b = a % n, b % n
        if {a, b} == {n - 1, n - 2}:
            return self._transpose(inner, node, two_d=False)
        lab = list(layout)
        lab[a], lab[b] = lab[b], lab[a]
        return replace(inner, layout=tuple(lab), shape_origin=self.origin(node))

    def _transpose(self, inner: Mask, node, two_d: bool) -> Mask:
        """Swap the last two axes: a lower triangle becomes an upper one."""
        if inner.none or not inner.known and inner.fill is None:
            return UNKNOWN_MASK
        if inner.tri is not None:
            tri = tri_transpose(inner.tri)
            meaning = tri_meaning(tri)
            origin = self.origin(node)
            return replace(inner, tri=tri, meaning=meaning, origin=origin if meaning else None)
        layout = inner.layout
        if layout is not None and len(layout) >= 2:
            if layout[-2:] == ("L", "S") or inner.meaning == ADDITIVE and layout[-2:] != ("N", "S"):
                # a transposed square mask: which way round it now reads is not known
                return (
                    replace(inner, meaning=None, origin=None)
                    if inner.meaning != ADDITIVE
                    else inner
                )
            return replace(
                inner, layout=layout[:-2] + (layout[-1], layout[-2]), shape_origin=self.origin(node)
            )
        if inner.meaning in (KEEP, IGNORE):
            return replace(inner, layout=None, shape_origin=None)
        return inner
