"""What a mask means: a small abstract domain and its evaluator.

The package, from the bottom up:

- ``domain``: the mask value (meaning, kind, layout/shape, the expressions
  that decided each) and its algebra (join, combine, triangles);
- ``names``: what names say where the code says nothing;
- ``calls``: frames, argument binding, callers, return paths, and ``At``,
  the place an expression is evaluated;
- ``numbers``, ``compare``, ``shapes``, ``dtypes``: numbers and big negative
  fills, comparisons that make masks, layouts, dtypes;
- ``ops``: torch's operations, one table for ``torch.f(x)`` and ``x.f()``;
- ``evaluator``: ``MaskEvaluator``, the core around them;
- ``sinks``: the arguments that read a mask and the analysis of a file.

Only the names below are public; rules and tests import them from here.
"""

from .calls import At, bind_call
from .domain import (
    ADDITIVE,
    BOOL,
    BROADCAST,
    FLOAT01,
    IGNORE,
    INT,
    KEEP,
    NONE_MASK,
    PADDING,
    SQUARE,
    UNKNOWN_MASK,
    Kind,
    Mask,
    Meaning,
    Origin,
    Shape,
    broadcast,
    combine,
    join,
    join_all,
    shape_class,
    tri_complement,
    tri_meaning,
    tri_transpose,
)
from .evaluator import MaskEvaluator
from .sinks import MaskAnalysis, Sink, analysis_for

__all__ = [
    "ADDITIVE",
    "BOOL",
    "BROADCAST",
    "FLOAT01",
    "IGNORE",
    "INT",
    "KEEP",
    "NONE_MASK",
    "PADDING",
    "SQUARE",
    "UNKNOWN_MASK",
    "At",
    "Kind",
    "Mask",
    "MaskAnalysis",
    "MaskEvaluator",
    "Meaning",
    "Origin",
    "Shape",
    "Sink",
    "analysis_for",
    "bind_call",
    "broadcast",
    "combine",
    "join",
    "join_all",
    "shape_class",
    "tri_complement",
    "tri_meaning",
    "tri_transpose",
]
