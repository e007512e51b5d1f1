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
from ..analysis.flow import module_scope
from ..analysis.splats import splat_keys
from ..analysis.tree import walk
from ..analysis.layout import BATCH_FIRST, SEQ_FIRST, CallLayout, analysis_for
from ._syntax import dotted
from .base import Rule

LAYOUT_MODULES_DOC = (
    "`nn.MultiheadAttention`, `nn.TransformerEncoderLayer`, `nn.TransformerDecoderLayer` "
    "and `nn.Transformer`"
)
KIND_TEXT = {BATCH_FIRST: "batch-first", SEQ_FIRST: "sequence-first"}


def default_left(ev: Construction, project=None) -> bool:
    """The module is left to torch's default ``batch_first=False``: not one
    built under a test that names ``"batch_first"`` (torch-ecg's ``if
    "batch_first" in get_kwargs(nn.TransformerEncoderLayer): ... else:``,
    the fallback for a torch that has no such argument).  ``project``: a
    ``**`` splat of a dict another project file writes out is read there."""
    if not ev.spec.has_batch_first:
        return False
    if ev.args.maybe_given("batch_first"):
        if project is None or ev.args.get("batch_first") is not None:
            return False
        site = ev.site
        keys = splat_keys(site.node, site.env, site.scope, project)
        if keys is None or "batch_first" in keys:
            return False
    return not any(_names_batch_first(test) for test, _, _ in ev.site.conds)


def hooked(site, target: cst.BaseExpression) -> bool:
    """A forward pre-hook is registered on ``target`` (``self.attn``, the
    module a construction is kept in or a call runs) in the class around
    ``site``, or in the module when there is none: the hook may change what
    the module's forward reads (a CLIP port that transposes inside one,
    probe AO's FALSE02), so the layout its calls pass says nothing of it."""
    owner = site.scope.cls.node if site.scope is not None and site.scope.cls else None
    module = module_scope(site.scope)
    body = owner if owner is not None else (module.node if module is not None else None)
    text = dotted(target)
    if body is None or "?" in text:
        return False
    for n in walk(body):
        if (
            isinstance(n, cst.Call)
            and isinstance(n.func, cst.Attribute)
            and n.func.attr.value == "register_forward_pre_hook"
            and dotted(n.func.value) == text
        ):
            return True
    return False


def kept_in(ev: Construction):
    """The target a construction is assigned to (``self.attn = nn.MultiheadAttention(...)``)."""
    stmt = ev.site.stmt
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and stmt.value is ev.site.node:
        return stmt.targets[0].target
    return None


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
    flags = _flags_beside(ev)
    if flags:
        calls = [c for c in calls if not _flag_excludes(c.site, flags)]
    with analysis.evaluator.judging(ev.site):
        return [(call, analysis.of_call(call)) for call in calls], analysis


def _flags_beside(ev: Construction) -> dict:
    """``self.<...>`` flags a literal bool is given in the very block of
    ``__init__`` that builds the module, and nowhere else in its class
    (shiba's ``self.config.deep_transformer_requires_transpose = True``
    beside ``self.deep_transformer = nn.TransformerEncoder(...)``, the other
    branch keeping a module the caller hands in): dotted name -> the value."""
    func, cls = ev.site.function, ev.site.cls
    if func is None or cls is None or func.name.value != "__init__":
        return {}
    block = _block_of(func.body, ev.site.stmt)
    out = {}
    for line in block or ():
        for small in getattr(line, "body", ()) if isinstance(line, cst.SimpleStatementLine) else ():
            if (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and dotted(small.targets[0].target).startswith("self.")
                and isinstance(small.value, cst.Name)
                and small.value.value in ("True", "False")
            ):
                out[dotted(small.targets[0].target)] = small.value.value == "True"
    if not out:
        return {}
    stores = [  # every store of such a name in the class's methods
        dotted(t.target)
        for method in cls.methods.values()
        for n in walk(method)
        if isinstance(n, cst.Assign)
        for t in n.targets
    ]
    return {k: v for k, v in out.items() if stores.count(k) == 1}


def _block_of(block, small):
    """The statements of the block (of ``block`` or nested in it) that holds
    the small statement ``small``, else None."""
    body = _statements(block)
    for line in body:
        if isinstance(line, cst.SimpleStatementLine) and any(s is small for s in line.body):
            return body
    for line in body:
        for part in (getattr(line, "body", None), getattr(line, "orelse", None)):
            got = _block_of(part, small) if part is not None else None
            if got is not None:
                return got
    return None


def _statements(part) -> tuple:
    """The statements a block holds: an indented block's, an ``else:``'s,
    an ``elif`` as the one statement of its branch (its own blocks are
    searched in turn), none for a one-line body."""
    if isinstance(part, cst.If):
        return (part,)
    if isinstance(part, cst.Else):
        part = part.body
    body = getattr(part, "body", ())
    return tuple(body) if isinstance(body, (list, tuple)) else ()


def _flag_excludes(site, flags: dict) -> bool:
    """The call sits where one of ``flags`` has the other value (``else:`` of
    ``if self.config.deep_transformer_requires_transpose:``): the module the
    flag goes with is not what it runs."""
    for test, polarity, _ in site.conds:
        negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
        name = dotted(test.expression if negated else test)
        if name in flags and flags[name] != (polarity != negated):
            return True
    return False


def where(analysis, layout: CallLayout) -> str:
    """The evidence line of a layout, in words."""
    ev = analysis.evidence(layout)
    there = f"{ev['layout_file']} " if ev.get("layout_file") else ""  # another file's
    return f"{ev['layout']}, {there}line {ev['layout_line']}: `{ev['layout_source']}`"
