"""What the layout rules (MHA001 and MHA903 in ``mha001_batch_first_unset``,
MHA010 in ``mha010_layout_mismatch``) share.

They read the layout analysis (``flake8_mha/layout``): for each call of a
module, whether its query/key/value (``src``/``tgt``/``memory``) is known to be
batch-first ``(N, L, E)``, sequence-first ``(L, N, E)``, unbatched ``(L, E)``,
or of unknown layout, with the line that decided it.
"""

from __future__ import annotations

from typing import Any, List, Tuple

import libcst as cst

from ..analysis.events import Construction
from ..analysis.tree import walk
from ..analysis.layout import BATCH_FIRST, SEQ_FIRST, CallLayout, analysis_for
from .base import Rule

LAYOUT_MODULES_DOC = (
    "`nn.MultiheadAttention`, `nn.TransformerEncoderLayer`, `nn.TransformerDecoderLayer` "
    "and `nn.Transformer`"
)
KIND_TEXT = {BATCH_FIRST: "batch-first", SEQ_FIRST: "sequence-first"}


def default_left(ev: Construction) -> bool:
    """The module is left to torch's default ``batch_first=False``: not one
    built under a test that names ``"batch_first"`` (torch-ecg's ``if
    "batch_first" in get_kwargs(nn.TransformerEncoderLayer): ... else:``,
    the fallback for a torch that has no such argument)."""
    if not ev.spec.has_batch_first or ev.args.maybe_given("batch_first"):
        return False
    return not any(_names_batch_first(test) for test, _, _ in ev.site.conds)


def _names_batch_first(test: cst.BaseExpression) -> bool:
    for n in walk(test):
        if isinstance(n, cst.SimpleString) and n.value[1:-1] == "batch_first":
            return True
    return False


def call_layouts(rule: Rule, ev: Construction) -> Tuple[List[Tuple[Any, CallLayout]], Any]:
    """Each call of the module built at ``ev``, with the layout it is fed; for
    a module no call of this file runs, built inside the construction of a
    class of another project file that keeps it, the calls of that class
    (``(None, layout)``; docs/evidence.md)."""
    analysis = analysis_for(rule.ctx)
    calls = analysis.calls_of(ev)
    if not calls:
        return [(None, c) for c in analysis.handed(ev)], analysis
    with analysis.evaluator.judging(ev.site):
        return [(call, analysis.of_call(call)) for call in calls], analysis


def where(analysis, layout: CallLayout) -> str:
    """The evidence line of a layout, in words."""
    ev = analysis.evidence(layout)
    there = f"{ev['layout_file']} " if ev.get("layout_file") else ""  # another file's
    return f"{ev['layout']}, {there}line {ev['layout_line']}: `{ev['layout_source']}`"
