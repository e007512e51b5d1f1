"""The mask value domain: what a mask means, its kind, its shape, and the
expression that decided each part.

A mask value (``Mask``) has four independent parts, each possibly unknown:

- meaning (``Meaning``): ``keep`` (True/1 = attend), ``ignore`` (True/1 =
  masked out) or ``additive`` (0 / -inf, or a bias added to the scores);
- kind (``Kind``): ``bool``, ``float01`` (a float tensor holding 0/1), ``int``
  (an integer tensor holding 0/1) or ``additive``; with the dtype text where
  known;
- layout: the axes of the tensor, as labels (``("N", "S")`` is an (N, S)
  padding mask, ``("L", "S")`` a square mask, ``("N", "1", "1", "S")``
  broadcast-ready), from which the shape class (``Shape``) is derived;
- origin: the expression that decided the meaning (and, separately, the kind
  and the layout), so that a finding can say where its knowledge came from.

Meaning, kind and shape are ``str`` enums: each member equals (and hashes as)
its text, so comparisons with plain strings and the JSON evidence are the
same as when they were bare strings.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Dict, Optional, Sequence, Tuple

import libcst as cst

Layout = Tuple[str, ...]
Tri = Tuple[str, int]  # ("lower" | "upper", diagonal) of a triangle


class _Text(str, Enum):
    """A str enum that prints and formats as its text (``f"{KEEP}"`` is ``keep``)."""

    __str__ = str.__str__
    __format__ = str.__format__


class Meaning(_Text):
    KEEP = "keep"  # True / 1 = attend
    IGNORE = "ignore"  # True / 1 = masked out
    ADDITIVE = "additive"  # 0 / -inf, added to the scores


class Kind(_Text):
    BOOL = "bool"
    FLOAT01 = "float01"  # a float tensor holding 0/1
    INT = "int"  # an integer tensor holding 0/1
    ADDITIVE = "additive"


class Shape(_Text):
    PADDING = "padding"  # (N, S)
    SQUARE = "square"  # (L, S)
    BROADCAST = "broadcast"  # (N, 1, 1, S) and the like


KEEP, IGNORE, ADDITIVE = Meaning.KEEP, Meaning.IGNORE, Meaning.ADDITIVE
BOOL, FLOAT01, INT = Kind.BOOL, Kind.FLOAT01, Kind.INT
PADDING, SQUARE, BROADCAST = Shape.PADDING, Shape.SQUARE, Shape.BROADCAST


def _plain(value: Optional[str]) -> Optional[str]:
    """The text of an enum member, for the JSON evidence."""
    return None if value is None else str(value)


@dataclass(frozen=True)
class Origin:
    """The expression a part of a mask value was decided by."""

    node: cst.CSTNode
    text: str
    by_name: bool = False  # decided by a name only (a parameter called key_padding_mask)
    docstring: bool = False  # decided by the function's docstring (``attn_mask: ... B x N``)


@dataclass(frozen=True)
class Mask:
    meaning: Optional[Meaning] = None
    kind: Optional[Kind] = None  # Kind.ADDITIVE goes with Meaning.ADDITIVE
    layout: Optional[Layout] = None
    dtype: Optional[str] = None
    tri: Optional[Tri] = None  # for triangles
    fill: Optional[str] = None  # "ones" | "zeros" | "neg" for constant tensors
    origin: Optional[Origin] = None  # of the meaning
    kind_origin: Optional[Origin] = None
    shape_origin: Optional[Origin] = None
    none: bool = False  # the value None: no mask at all
    causal: bool = False  # the meaning comes from a triangle (positions against positions)
    # the meaning comes from one tensor of ids against itself (segments, labels)
    pairwise: bool = False
    # ``tril(ones, diagonal=-window)`` (``"lower"``), ``triu(ones, diagonal=-window)``
    # (``"upper"``): a triangle a window away from the diagonal, its meaning
    # what the triangle it is combined with gives it (a sliding window's band)
    band: Optional[str] = None
    # 0 and 1 only, whatever they mean (a comparison the analysis cannot read):
    # made float, it is MHA004's all the same
    zero_one: bool = False

    @property
    def shape(self) -> Optional[Shape]:
        return shape_class(self.layout)

    @property
    def known(self) -> bool:
        return self.meaning is not None or self.kind is not None or self.shape is not None

    def evidence(self, text_of_origin) -> Dict[str, object]:
        """The JSON form a runtime witness reads."""
        return {
            "meaning": _plain(self.meaning),
            "kind": _plain(self.kind),
            "shape": _plain(self.shape),
            "source": text_of_origin(self.origin) if self.origin is not None else None,
            "dtype": self.dtype,
        }


UNKNOWN_MASK = Mask()
NONE_MASK = Mask(none=True)


def shape_class(layout: Optional[Layout]) -> Optional[Shape]:
    if layout is None:
        return None
    if layout == ("N", "S"):
        return PADDING
    if len(layout) == 4 and layout[-1] == "S" and layout[0] in ("N", "1", "?"):
        return BROADCAST
    if len(layout) >= 2 and layout[-2:] == ("L", "S") and "N" not in layout:
        return SQUARE
    return None


def flip_meaning(meaning: Optional[Meaning]) -> Optional[Meaning]:
    return {KEEP: IGNORE, IGNORE: KEEP}.get(meaning or "")


def tri_meaning(tri: Optional[Tri]) -> Optional[Meaning]:
    """tril(ones, d >= 0) keeps the past (True = attend); triu(ones, d >= 1)
    marks the future (True = ignore); other diagonals say nothing sure."""
    if tri is None:
        return None
    side, diag = tri
    if side == "lower" and diag >= 0:
        return KEEP
    if side == "upper" and diag >= 1:
        return IGNORE
    return None


def tri_complement(tri: Optional[Tri]) -> Optional[Tri]:
    if tri is None:
        return None
    side, diag = tri
    return ("upper", diag + 1) if side == "lower" else ("lower", diag - 1)


def tri_transpose(tri: Optional[Tri]) -> Optional[Tri]:
    if tri is None:
        return None
    side, diag = tri
    return ("upper" if side == "lower" else "lower", -diag)


def kind_of_dtype(dtype: Optional[str]) -> Optional[Kind]:
    if dtype is None:
        return None
    if dtype == "bool":
        return BOOL
    if dtype.startswith(("float", "bfloat")):
        return FLOAT01
    if dtype.startswith(("int", "uint")):
        return INT
    return None


def join(a: Mask, b: Mask) -> Mask:
    """The value on either of two paths (branches, several definitions).
    ``None`` on one path contributes nothing: no mask there, nothing wrong."""
    if a.none:
        return b
    if b.none:
        return a
    if a == b:
        return a
    meaning = a.meaning if a.meaning == b.meaning else None
    kind = a.kind if a.kind == b.kind else None
    layout = a.layout if a.layout == b.layout else None
    return Mask(
        meaning=meaning,
        kind=kind,
        layout=layout,
        dtype=a.dtype if a.dtype == b.dtype else None,
        tri=a.tri if a.tri == b.tri else None,
        fill=a.fill if a.fill == b.fill else None,
        origin=(a.origin or b.origin) if meaning is not None else None,
        kind_origin=(a.kind_origin or b.kind_origin) if kind is not None else None,
        shape_origin=(a.shape_origin or b.shape_origin) if layout is not None else None,
        causal=(a.causal or b.causal) if meaning is not None else False,
        pairwise=(a.pairwise or b.pairwise) if meaning is not None else False,
    )


def join_all(values: Sequence[Mask]) -> Mask:
    if not values:
        return UNKNOWN_MASK
    out = values[0]
    for v in values[1:]:
        out = join(out, v)
    return out


def broadcast(a: Optional[Layout], b: Optional[Layout]) -> Optional[Layout]:
    """Layout of an elementwise combination (numpy broadcasting on labels)."""
    if a is None or b is None:
        return None
    n = max(len(a), len(b))
    a2 = ("1",) * (n - len(a)) + a
    b2 = ("1",) * (n - len(b)) + b
    out = []
    for x, y in zip(a2, b2):
        if x == y or y == "1":
            out.append(x)
        elif x == "1":
            out.append(y)
        else:
            return None
    return tuple(out)


def combine(a: Mask, b: Mask, node: cst.CSTNode, text: str, op: str) -> Mask:
    """``a & b``, ``a | b``, ``a * b`` of two 0/1 masks: the same meaning on
    both sides keeps it (the set algebra then only narrows or widens it);
    opposite meanings are mixed and unknown."""
    if a.none or b.none or a.meaning not in (KEEP, IGNORE) or a.meaning != b.meaning:
        return UNKNOWN_MASK
    if op == "mul":
        kinds = {a.kind, b.kind}
        if None in kinds:
            kind = None
        elif FLOAT01 in kinds:
            kind = FLOAT01
        elif INT in kinds:
            kind = INT
        else:
            kind = BOOL
    else:
        kind = a.kind if a.kind == b.kind else None
    layout = broadcast(a.layout, b.layout)
    origin = Origin(
        node, text, by_name=bool(a.origin and a.origin.by_name and b.origin and b.origin.by_name)
    )
    return Mask(
        meaning=a.meaning,
        kind=kind,
        layout=layout,
        dtype=a.dtype if a.dtype == b.dtype else None,
        origin=origin,
        kind_origin=(a.kind_origin or b.kind_origin) if kind else None,
        shape_origin=Origin(node, text) if layout else None,
        causal=a.causal or b.causal,
        pairwise=a.pairwise or b.pairwise,
    )


def comparison(meaning: Meaning, layout: Optional[Layout], origin: Origin) -> Mask:
    """A bool mask made by a comparison (pad id, arange against lengths): its
    meaning, kind and (when known) shape all come from that one expression."""
    return Mask(
        meaning=meaning,
        kind=BOOL,
        dtype="bool",
        layout=layout,
        origin=origin,
        kind_origin=origin,
        shape_origin=origin if layout else None,
    )


def additive(origin: Origin, layout: Optional[Layout], shape_origin: Optional[Origin]) -> Mask:
    """An additive float mask (0 / -inf) decided by ``origin``."""
    return Mask(
        meaning=ADDITIVE,
        kind=Kind.ADDITIVE,
        layout=layout,
        origin=origin,
        kind_origin=origin,
        shape_origin=shape_origin if layout else None,
    )
