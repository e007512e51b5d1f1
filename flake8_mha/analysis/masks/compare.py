"""Comparisons that make masks: token ids against a pad id, positions
against lengths (padding) or against positions (causal), and a mask against
a constant (``m == 0`` flips it, ``m != 0`` keeps it)."""

from __future__ import annotations

from dataclasses import replace
from typing import Optional, Tuple

import libcst as cst

from ..flow import lookup
from ..heads import EINOPS_REARRANGE, einops_axes
from .calls import At, arg, positional
from .domain import (
    ADDITIVE,
    BOOL,
    IGNORE,
    KEEP,
    UNKNOWN_MASK,
    Mask,
    Meaning,
    Origin,
    broadcast,
    comparison,
)
from .names import (
    is_adjacency_name,
    is_count_name,
    is_length_name,
    is_mask_or_length,
    is_pad_name,
    is_token_name,
    last_name,
    string_key,
)
from .numbers import holds
from .shapes import index_layout

COMPARE_OPS = {
    cst.Equal: "==",
    cst.NotEqual: "!=",
    cst.LessThan: "<",
    cst.LessThanEqual: "<=",
    cst.GreaterThan: ">",
    cst.GreaterThanEqual: ">=",
}
MIRROR = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_AXIS_HOPS = 10
_TOKEN_HOPS = 6
# methods that keep what an arange or a lengths tensor is (dtype, device, copies)
_ARANGE_KEEPS = (
    "to",
    "type_as",
    "long",
    "int",
    "float",
    "cuda",
    "cpu",
    "clone",
    "detach",
    "contiguous",
    "type",
)
# the layouts of an arange and of a lengths tensor, by the axis names used below; a
# comparison of the two has their broadcast layout ((N, S), (N, 1, S), (1, N, S))
_ARANGE_LAYOUTS = {
    "vec": ("S",),
    "row": ("1", "S"),
    "row3": ("1", "1", "S"),
    "mid3": ("1", "S", "1"),
}
# a per-sample count not named a length (``n_valid``, ``num_frames``): a
# length only once shaped as a column beside an arange row
COUNT = "count"
_LENGTHS_LAYOUTS = {"col": ("N", "1"), "n11": ("N", "1", "1"), "1n1": ("1", "N", "1")}
_LENGTHS_BY_LAYOUT = {v: k for k, v in _LENGTHS_LAYOUTS.items()}
_BY_ARANGE_LAYOUT = {**{v: k for k, v in _ARANGE_LAYOUTS.items()}, ("S", "1"): "col"}


def new_axes(call: cst.Call, axis: str) -> Optional[Tuple[str, ...]]:
    """The layout ``einops.rearrange(x, "i -> 1 i")`` gives a vector, with its one
    axis named ``axis`` and the new axes of size one as "1"; None for any other
    pattern (a reordering, a merge, a split, an ellipsis, a pattern not written out)."""
    if len(call.args) < 2 or any(a.keyword is not None or a.star for a in call.args[:2]):
        return None
    pattern = call.args[1].value
    if not isinstance(pattern, cst.SimpleString):
        return None
    text = pattern.evaluated_value
    if not isinstance(text, str) or text.count("->") != 1:
        return None
    left, right = (einops_axes(side) for side in text.split("->"))
    if left is None or right is None or len(left) != 1 or right.count(left[0]) != 1:
        return None
    if not left[0].isidentifier() or any(t not in (left[0], "1") for t in right):
        return None
    return tuple(axis if t == left[0] else "1" for t in right)


_LENGTHS_KEEPS = ("to", "type_as", "long", "int", "float", "cuda", "cpu", "expand", "expand_as")


class Comparisons:
    """The part of ``MaskEvaluator`` that reads comparisons."""

    def _compare(self, left, op: str, right, node, at: At) -> Mask:
        text = self.text(node)
        # a segment-id tensor as a column against itself as a row
        got = self._segment_compare(left, op, right, node, at)
        if got is not None:
            return got
        # arange against lengths (padding), or arange against arange (causal)
        got = self._arange_compare(left, op, right, node, text, at)
        if got is not None:
            return got
        # a token tensor against a pad id
        for tokens, pad, o in ((left, right, op), (right, left, MIRROR[op])):
            if (
                (is_pad_name(pad) or self._embeds_as_padding(pad))
                and not is_pad_name(tokens)
                and not is_mask_or_length(tokens)
                and self._number(tokens, at) is None
                and self.eval(pad, at).meaning is None
            ):
                return self._pad_compare(tokens, o, node, text, at)
        # a mask against a constant: m == 0 flips it, m != 0 keeps it
        for mask_side, const_side, o in ((left, right, op), (right, left, MIRROR[op])):
            c = self._number(const_side, at)
            if c is None:
                neg = self._neg(const_side, at)
                c = float("-inf") if neg == "neg" else None
            if c is None:
                continue
            inner = self.eval(mask_side, at)
            if inner.meaning is not None or inner.tri is not None:
                return self._threshold(inner, o, float(c), node, text)
            if (
                isinstance(c, int)
                and not isinstance(c, bool)
                and c >= 0
                and is_token_name(mask_side)
                and self._plain_tokens(mask_side, at)
            ):
                # ids are never negative: ``seq > 0`` is ``seq != 0`` (SASRec, BERT4Rec)
                o = {(">", 0): "!=", (">=", 1): "!=", ("<=", 0): "==", ("<", 1): "=="}.get(
                    (o, c), o
                )
                return self._pad_compare(mask_side, o, node, text, at)
            if c in (-1, -100) and not isinstance(c, bool) and o in ("!=", "=="):
                # SAM's ``point_labels != -1``: a negative id marks an absent
                # item (a padded point, an ignored label); True where present
                if not is_mask_or_length(mask_side):
                    meaning = KEEP if o == "!=" else IGNORE
                    return comparison(meaning, None, Origin(node, text, by_name=True))
            if c == 0 and not isinstance(c, bool) and is_adjacency_name(mask_side):
                # GAT's ``adj > 0``: True on an edge, the pairs to attend
                meaning = {">": KEEP, "!=": KEEP, "==": IGNORE, "<=": IGNORE}.get(o)
                if meaning is not None:
                    return comparison(meaning, None, Origin(node, text, by_name=True))
            return _bool_only(node, text)
        return _bool_only(node, text)

    def _threshold(self, inner: Mask, op: str, c: float, node, text) -> Mask:
        """``mask <op> c``: which of the mask's values compare True."""
        if inner.none:
            return UNKNOWN_MASK
        if inner.meaning == ADDITIVE:
            values = {0.0: KEEP, float("-inf"): IGNORE}
        elif inner.meaning in (KEEP, IGNORE) or inner.tri is not None:
            values = {1.0: "same", 0.0: "flip"}
        else:
            return UNKNOWN_MASK
        true_set = {v for v in values if holds(v, op, c)}
        if len(true_set) != 1:
            return UNKNOWN_MASK
        which = values[true_set.pop()]
        origin_kind = self.origin(node)
        base = dict(
            kind=BOOL,
            dtype="bool",
            layout=inner.layout,
            shape_origin=inner.shape_origin,
            kind_origin=origin_kind,
        )
        if which == "same":
            return replace(inner, **base, fill=None)
        if which == "flip":
            out = self._flip(inner, node, kind=BOOL)
            return replace(out, dtype="bool", kind_origin=origin_kind)
        origin = Origin(node, text, by_name=bool(inner.origin and inner.origin.by_name))
        return Mask(
            meaning=which, origin=origin, causal=inner.causal, pairwise=inner.pairwise, **base
        )

    def _embeds_as_padding(self, node) -> bool:
        """A name (``REST``, ``self.blank``) that some ``nn.Embedding(...,
        padding_idx=<it>)`` of the file takes as its padding id: ids
        compared with it are compared with the pad id, whatever its name."""
        if not isinstance(node, (cst.Name, cst.Attribute)):
            return False
        ids = getattr(self, "_padding_ids", None)
        if ids is None:
            ids = self._padding_ids = _padding_ids(self.module, self.flow.calls)
        return bool(ids) and self.text(node) in ids

    def _pad_compare(self, tokens, op: str, node, text, at: At) -> Mask:
        meaning = {"==": IGNORE, "!=": KEEP}.get(op)
        if meaning is None:
            return UNKNOWN_MASK
        layout = ("N", "S") if self._plain_tokens(tokens, at) else None
        return comparison(meaning, layout, Origin(node, text))

    def _plain_tokens(self, node, at: At, hops: int = 0) -> bool:
        """A batch of token ids as it came (no index that drops or adds an axis)."""
        if hops > _TOKEN_HOPS:
            return False
        if isinstance(node, cst.Name):
            through = self._through_frame(node, at)
            if through is not None and through[0] is not node:
                return self._plain_tokens(through[0], through[1], hops + 1)
            return True
        if isinstance(node, cst.Attribute):
            return node.attr.value not in ("T", "mT")
        if isinstance(node, cst.Subscript):
            if string_key(node) is not None:
                return True
            for el in node.slice:
                if not isinstance(el.slice, cst.Slice):
                    return False
            return self._plain_tokens(node.value, at, hops + 1)
        return False

    def _arange_compare(self, left, op, right, node, text, at: At) -> Optional[Mask]:
        la = self._arange_axis(left, at)
        ra = self._arange_axis(right, at)
        if la is None and ra is None:
            return self._band_compare(left, op, right, node, text, at)
        if la is not None and ra is not None:
            # positions against positions: j (key, a row vector) against i (query, a column)
            if {la, ra} != {"row", "col"}:
                return UNKNOWN_MASK
            o = op if la == "row" else MIRROR[op]  # now "j <o> i"
            meaning = {">": IGNORE, "<=": KEEP}.get(o)
            if meaning is None:
                return UNKNOWN_MASK
            origin = Origin(node, text)
            return Mask(
                meaning=meaning,
                kind=BOOL,
                dtype="bool",
                layout=("L", "S"),
                origin=origin,
                kind_origin=origin,
                shape_origin=origin,
                causal=True,
            )
        if la is not None:
            axis, other, o = la, right, op
        else:
            axis, other, o = ra, left, MIRROR[op]
        # now "arange <o> other"
        lens = self._lengths_axis(other, at)
        left_pad = lens is None and self._left_start(other, at)
        if left_pad:  # ``arange < (S - lengths)[:, None]``: True on the left padding
            lens = left_pad
        if lens is None or lens == COUNT:  # a count compared unshaped: maybe a maximum
            return UNKNOWN_MASK
        meaning: Optional[Meaning] = {">=": IGNORE, ">": IGNORE, "<": KEEP, "<=": KEEP}.get(o)
        if meaning is None:
            return UNKNOWN_MASK
        if left_pad:
            meaning = KEEP if meaning == IGNORE else IGNORE
        layout = broadcast(_ARANGE_LAYOUTS.get(axis), _LENGTHS_LAYOUTS.get(lens))
        return comparison(meaning, layout, Origin(node, text))

    def _left_start(self, node, at: At) -> Optional[str]:
        """The axis of ``(S - lengths)[:, None]`` or ``S - lengths[:, None]``:
        where each sample's real tokens start when it is padded on the left
        (``S`` not itself a length); None otherwise."""
        shaped = None
        if isinstance(node, cst.Subscript) and isinstance(node.value, cst.BinaryOperation):
            shaped, node = node, node.value
        if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract)):
            return None
        if not _a_total(node.left):
            return None  # ``lengths - 1``, ``lengths - prefix_len``: not a start
        lens = self._lengths_axis(node.right, at)
        if shaped is None:
            return lens if lens in _LENGTHS_LAYOUTS else None
        if lens not in ("scalar", COUNT):
            return None
        return _LENGTHS_BY_LAYOUT.get(index_layout(("N",), shaped.slice))

    def _band_compare(self, left, op, right, node, text, at: At) -> Optional[Mask]:
        """A band of positions: the distance between key and query positions
        (``j - i``, ``i - j`` or its ``abs()``, each an arange as a row and as
        a column) against a window ``w`` (a name, or a number >= 0).  ``> w``
        is True away from the diagonal: an ignore-mask (Longformer's
        ``(j - i).abs() > w``, Mistral's ``(i - j) > w``); ``<= w`` is True on
        it: a keep-mask.  Any other operator stays unknown (with ``w`` 0 it
        would cut the diagonal itself)."""
        for dist, window, o in ((left, right, op), (right, left, MIRROR[op])):
            if not self._is_distance(dist, at):
                continue
            w = self._number(window, at)
            if (w is not None and w < 0) or (
                w is None and not isinstance(window, (cst.Name, cst.Attribute))
            ):
                return UNKNOWN_MASK
            meaning = {">": IGNORE, "<=": KEEP}.get(o)
            if meaning is None:
                return UNKNOWN_MASK
            return comparison(meaning, ("L", "S"), Origin(node, text))
        return None

    def _is_distance(self, node, at: At) -> bool:
        """``j - i``, ``i - j``, their ``.abs()`` or ``torch.abs(...)``: an
        arange as a row against itself or another as a column."""
        if isinstance(node, cst.Call) and not node.args and isinstance(node.func, cst.Attribute):
            if node.func.attr.value == "abs":
                return self._is_distance(node.func.value, at)
            return False
        if isinstance(node, cst.Call) and len(node.args) == 1:
            if self.qualname(node.func, at.env, at.scope) == "torch.abs":
                return self._is_distance(node.args[0].value, at)
            return False
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
            axes = {self._arange_axis(node.left, at), self._arange_axis(node.right, at)}
            return axes == {"row", "col"}
        return False

    def _arange_axis(self, node, at: At, hops: int = 0) -> Optional[str]:
        """ "vec" for ``arange(S)``, "row" for it as (1, S), "col" as (S, 1)."""
        if hops > _AXIS_HOPS:
            return None
        hops += 1
        if isinstance(node, cst.Call):
            func = node.func
            qn = (
                self.qualname(func, at.env, at.scope)
                if not isinstance(func, cst.Attribute)
                or not isinstance(func.value, (cst.Call, cst.Subscript))
                else None
            )
            if qn == "torch.arange":
                return "vec"
            if qn in EINOPS_REARRANGE and node.args:
                # rearrange(r, "i -> i 1"): r[:, None]; "j -> 1 j": r[None, :]
                if self._arange_axis(node.args[0].value, at, hops) != "vec":
                    return None
                return _BY_ARANGE_LAYOUT.get(new_axes(node, "S"))
            if isinstance(func, cst.Attribute):
                base = self._arange_axis(func.value, at, hops)
                if base is None:
                    return None
                attr = func.attr.value
                if attr in _ARANGE_KEEPS:
                    return base
                if attr == "unsqueeze" and base == "vec":
                    d = self._number(arg(node, 0, "dim"), at) if node.args else None
                    return (
                        {0: "row", -2: "row", 1: "col", -1: "col"}.get(d)
                        if isinstance(d, int)
                        else None
                    )
                if attr in ("expand", "repeat", "expand_as") and base == "row":
                    return "row"
                if attr in ("expand", "repeat") and base == "vec":
                    # ``arange(S).expand(B, -1)``, ``.repeat(B, 1)``: a row per sample
                    pos = positional(node)
                    last = self._number(pos[-1], at) if pos and len(pos) == 2 else None
                    if last == (-1 if attr == "expand" else 1):
                        return "row"
                if attr in ("view", "reshape") and base == "vec":
                    pos = positional(node)
                    if pos and len(pos) == 2:
                        a, b = (self._number(p, at) for p in pos)
                        if a == 1:
                            return "row"
                        if b == 1:
                            return "col"
                    if pos and len(pos) == 3:
                        a, b, c = (self._number(p, at) for p in pos)
                        if a == 1 and b == 1 and c != 1:
                            return "row3"  # (1, 1, S)
                return None
            return None
        if isinstance(node, cst.Subscript):
            base = self._arange_axis(node.value, at, hops)
            if base != "vec":
                return None
            layout = index_layout(("S",), node.slice)
            if layout == ("1", "S"):
                return "row"
            if layout == ("S", "1"):
                return "col"
            if layout == ("S",):
                return "vec"
            if layout == ("1", "1", "S"):
                return "row3"
            if layout == ("1", "S", "1"):
                return "mid3"  # the rows of a 2-D grid: ``ys[None, :, None]``
            return None
        if isinstance(node, cst.Name):
            through = self._through_frame(node, at)
            if through is not None and through[0] is not node:
                return self._arange_axis(through[0], through[1], hops)
            defs = lookup(node.value, at.env, at.scope)
            if not defs or any(d.kind != "assign" for d in defs):
                return None
            axes = {self._arange_axis(d.node, at.of(d, None), hops) for d in defs}
            return axes.pop() if len(axes) == 1 else None
        return None

    def _lengths_axis(self, node, at: At, hops: int = 0) -> Optional[str]:
        """ "col" for ``lengths[:, None]``-like, "scalar" for a plain lengths
        name, None when the other side is not visibly a length."""
        if hops > _AXIS_HOPS:
            return None
        hops += 1
        if isinstance(node, (cst.Name, cst.Attribute)):
            name = last_name(node) or ""
            if isinstance(node, cst.Name):
                through = self._through_frame(node, at)
                if through is not None and through[0] is not node:
                    got = self._lengths_axis(through[0], through[1], hops)
                    if got is not None:
                        return got
                defs = lookup(node.value, at.env, at.scope)
                if defs and all(d.kind == "assign" for d in defs):
                    axes = {self._lengths_axis(d.node, at.of(d, None), hops) for d in defs}
                    if len(axes) == 1 and None not in axes:
                        return axes.pop()
            if is_length_name(name):
                return "scalar"
            return COUNT if is_count_name(name) else None
        if isinstance(node, cst.Subscript):
            if _size_column(node):  # ``image_sizes[:, 0, None, None]``: the heights
                return _LENGTHS_BY_LAYOUT.get(index_layout(("N", "K"), node.slice))
            base = self._lengths_axis(node.value, at, hops)
            if base is None:
                return None
            layout = index_layout(("N",), node.slice)
            return (
                _LENGTHS_BY_LAYOUT.get(layout)
                if base in ("scalar", COUNT) or layout == ("N", "1")
                else None
            )
        if (
            isinstance(node, cst.Call)
            and node.args
            and self.qualname(node.func, at.env, at.scope) in EINOPS_REARRANGE
        ):
            # rearrange(lengths, "b -> b 1"): lengths[:, None]
            if self._lengths_axis(node.args[0].value, at, hops) != "scalar":
                return None
            return _LENGTHS_BY_LAYOUT.get(new_axes(node, "N"))
        if (
            isinstance(node, cst.Call)
            and len(node.args) >= 2
            and self.qualname(node.func, at.env, at.scope) in ("torch.div", "torch.floor_divide")
        ):  # ``torch.div(n_samples, hop, rounding_mode="floor")``
            return self._scaled_count(node.args[0].value, node.args[1].value, at, hops)
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            attr = node.func.attr.value
            if attr in ("new", "new_tensor") and len(node.args) == 1:
                # seq_range.new(lengths): the lengths are the argument
                return self._lengths_axis(node.args[0].value, at, hops)
            base = self._lengths_axis(node.func.value, at, hops)
            if base is None:
                return None
            if attr == "unsqueeze":
                d = self._number(arg(node, 0, "dim"), at) if node.args else None
                return "col" if d in (1, -1) and base in ("scalar", COUNT) else None
            if attr == "flatten" and not node.args and base in ("scalar", COUNT):
                return base  # ``counts.flatten()``: still one count per sample
            if attr in ("view", "reshape"):
                pos = positional(node)
                if pos and len(pos) == 1 and self._number(pos[0], at) == -1:
                    return base if base in ("scalar", COUNT) else None  # ``counts.reshape(-1)``
                if pos and len(pos) == 2 and self._number(pos[1], at) == 1:
                    return "col"
                if pos and len(pos) == 3 and base in ("scalar", COUNT):
                    a, b, c = (self._number(p, at) for p in pos)
                    if b == 1 and c == 1 and a != 1:
                        return "n11"  # (N, 1, 1)
                    if a == 1 and c == 1 and b != 1:
                        return "1n1"  # (1, N, 1)
                return None
            if attr in _LENGTHS_KEEPS:
                return base
            return None
        if isinstance(node, cst.Call) and len(node.args) >= 1:
            qn = self.qualname(node.func, at.env, at.scope)
            if qn in ("torch.tensor", "torch.as_tensor", "torch.LongTensor"):
                return self._lengths_axis(node.args[0].value, at, hops)
        if isinstance(node, cst.BinaryOperation):
            # ``n_samples // hop + 1``: the frames of each sample's signal, a count
            op, left, right = node.operator, node.left, node.right
            if isinstance(op, (cst.FloorDivide, cst.Divide)):
                return self._scaled_count(left, right, at, hops)
            if isinstance(op, (cst.Add, cst.Subtract)) and isinstance(right, cst.Integer):
                got = self._lengths_axis(left, at, hops)
                return got if got in ("scalar", COUNT) else None
        return None

    def _scaled_count(self, count, by, at: At, hops: int) -> Optional[str]:
        """A per-sample count divided by a size (``n_samples // hop``): one
        count per sample still; not when the divisor is per sample too."""
        got = self._lengths_axis(count, at, hops)
        if got not in ("scalar", COUNT) or self._lengths_axis(by, at, hops) is not None:
            return None
        return COUNT


_TOTALS = ("seq_len", "seqlen", "seq_length", "length", "total_len", "size", "n", "s", "t", "l")


def _size_column(node: cst.Subscript) -> bool:
    """One column of per-sample sizes (``image_sizes[:, 0, None, None]``, the
    heights of (h, w) pairs): a name ending in ``sizes`` indexed ``[:, k, ...]``."""
    els = node.slice
    name = last_name(node.value) or ""
    return (
        name.lower().endswith("sizes")
        and len(els) >= 2
        and isinstance(els[0].slice, cst.Slice)
        and els[0].slice.lower is None
        and els[0].slice.upper is None
        and isinstance(els[1].slice, cst.Index)
        and isinstance(els[1].slice.value, cst.Integer)
    )


def _a_total(node) -> bool:
    """The padded length every sample shares (``S``, ``seq_len``, ``max_len``,
    ``x.size(1)``, ``x.shape[1]``, a number), not one count per sample."""
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        return node.func.attr.value == "size"
    if isinstance(node, cst.Subscript):
        return isinstance(node.value, cst.Attribute) and node.value.attr.value == "shape"
    name = last_name(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
    low = (name or "").lower()
    return low in _TOTALS or "max" in low


def _bool_only(node, text: str) -> Mask:
    """A comparison whose meaning the analysis cannot tell is still a bool
    tensor: made a float 0/1 one (``(x_cat == MISSING_ID).float()``) it is
    MHA004's whatever it meant."""
    origin = Origin(node, text)
    return Mask(kind=BOOL, dtype="bool", kind_origin=origin, zero_one=True)


def _padding_ids(module: cst.Module, calls) -> frozenset:
    """The texts of the names every ``Embedding(..., padding_idx=<name>)``
    call among ``calls`` (the file's call sites) passes (a literal id is no
    name to compare with)."""
    out = set()
    for site in calls:
        call = site.node
        if last_name(call.func) != "Embedding":
            continue
        for a in call.args:
            if a.keyword is not None and a.keyword.value == "padding_idx":
                if isinstance(a.value, (cst.Name, cst.Attribute)):
                    out.add(" ".join(module.code_for_node(a.value).split()))
    return frozenset(out)
