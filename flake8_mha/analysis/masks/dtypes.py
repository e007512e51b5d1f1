"""Dtypes: which kind of mask a dtype makes, and conversions between kinds."""

from __future__ import annotations

from dataclasses import replace
from typing import Optional, Tuple

import libcst as cst

from ..flow import lookup
from .calls import At
from .domain import ADDITIVE, BOOL, FLOAT01, INT, UNKNOWN_MASK, Kind, Mask
from .names import is_device_name, last_name

DTYPES = {
    "torch.bool": (BOOL, "bool"),
    "torch.float": (FLOAT01, "float32"),
    "torch.float32": (FLOAT01, "float32"),
    "torch.half": (FLOAT01, "float16"),
    "torch.float16": (FLOAT01, "float16"),
    "torch.double": (FLOAT01, "float64"),
    "torch.float64": (FLOAT01, "float64"),
    "torch.bfloat16": (FLOAT01, "bfloat16"),
    "torch.long": (INT, "int64"),
    "torch.int64": (INT, "int64"),
    "torch.int": (INT, "int32"),
    "torch.int32": (INT, "int32"),
    "torch.short": (INT, "int16"),
    "torch.int16": (INT, "int16"),
    "torch.int8": (INT, "int8"),
    "torch.uint8": (INT, "uint8"),
    "torch.FloatTensor": (FLOAT01, "float32"),
    "torch.LongTensor": (INT, "int64"),
    "torch.BoolTensor": (BOOL, "bool"),
    "torch.ByteTensor": (INT, "uint8"),
    "torch.cuda.FloatTensor": (FLOAT01, "float32"),
    "torch.cuda.BoolTensor": (BOOL, "bool"),
}
# ``x.bool()``, ``x.float()``...: the dtype each conversion method makes
METHOD_DTYPES = {
    "bool": (BOOL, "bool"),
    "float": (FLOAT01, "float32"),
    "half": (FLOAT01, "float16"),
    "double": (FLOAT01, "float64"),
    "bfloat16": (FLOAT01, "bfloat16"),
    "long": (INT, "int64"),
    "int": (INT, "int32"),
    "short": (INT, "int16"),
    "byte": (INT, "uint8"),
    "char": (INT, "int8"),
}
KNOWN_DTYPE_NAMES = {dt for _, dt in DTYPES.values()}


class Dtypes:
    """The part of ``MaskEvaluator`` that reads dtypes."""

    def _dtype_of(self, node, at: At) -> Tuple[Optional[Kind], Optional[str]]:
        through = self._through_frame(node, at)
        if through is None:
            return FLOAT01, None
        node, where = through
        env, scope = where.env, where.scope
        qn = self.qualname(node, env, scope)
        if qn in DTYPES:
            return DTYPES[qn]
        if isinstance(node, cst.Attribute) and node.attr.value == "dtype":
            return FLOAT01, None  # the dtype of a tensor of scores/queries: floating point
        if isinstance(node, cst.Name) and "dtype" in node.value.lower():
            vals = set()
            for d in lookup(node.value, env, scope):
                if d.kind == "assign":
                    vals.add(self.qualname(d.node, d.env, d.scope))
                elif d.kind == "param" and d.node.default is not None:
                    vals.add(self.qualname(d.node.default, {}, d.scope.parent if d.scope else None))
                else:
                    vals.add(None)
            found = {DTYPES[v] for v in vals if v in DTYPES}
            if vals and all(v in DTYPES for v in vals) and len(found) == 1:
                return found.pop()
            if any(k != FLOAT01 for k, _ in found):
                return None, None
            return FLOAT01, None  # ``.to(dtype)``: the model's floating dtype
        return None, None

    def _is_device(self, node, at: At) -> bool:
        if isinstance(node, cst.SimpleString):
            return True
        if is_device_name(last_name(node)):
            return True
        if isinstance(node, cst.Call):
            return self.qualname(node.func, at.env, at.scope) == "torch.device"
        return False

    def _convert(self, inner: Mask, kind: Optional[Kind], dtype: Optional[str], node) -> Mask:
        """A dtype conversion of a mask."""
        if inner.none or not inner.known and inner.fill is None:
            return UNKNOWN_MASK
        if inner.meaning == ADDITIVE or inner.kind == ADDITIVE:
            if kind == FLOAT01:
                return replace(inner, dtype=dtype or inner.dtype)
            return UNKNOWN_MASK  # an additive mask made bool/int: nonzero = masked, an odd path
        if inner.fill == "neg":
            return inner if kind == FLOAT01 else UNKNOWN_MASK
        if kind is None:
            return replace(inner, kind=None, dtype=None, kind_origin=None)
        if kind == inner.kind and dtype == inner.dtype:
            return inner
        return replace(inner, kind=kind, dtype=dtype, kind_origin=self.origin(node))
