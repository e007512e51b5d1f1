"""Masks a base class asks its subclasses for (probe AP's AP07 and AP08).

``class MaskedSelfAttention(nn.Module)`` calls ``mask =
self.build_mask(lengths, t)`` in its ``forward`` and hands it to SDPA; its own
``build_mask`` is abstract (``raise NotImplementedError``, ``...``, ``pass``,
a docstring, ``@abstractmethod``).  Which mask SDPA gets is the subclass's:
``PaddedSelfAttention`` returns the padding (True = ignore), a sibling the
keep-mask.  The base's mask is unknown on its own; a rule then judges it once
per used subclass that overrides the hook (``each_override``), in the base's
file or in another project file, the hook's call read as that override's
return.  The finding stays at the base's SDPA call, and its message names
the subclass and where its override is.
"""

from __future__ import annotations

from typing import Callable, Iterator, List, Optional, Tuple

import libcst as cst

from ...core.lines import word_count
from ..flow import DefKind, ScopeKind
from ..program.local_names import self_method
from ..tree import last_word, module_text

# the hook being read for one subclass: (base class, method, file or None, subclass)
_PINNED: List[Optional[tuple]] = [None]
# the abstract hooks a judgement met: (base class name, method) -> its ClassInfo
_MET: List[Optional[dict]] = [None]
MAX_OVERRIDERS = 8


def abstract(func: cst.FunctionDef) -> bool:
    """A method that returns nothing of its own: its body only a docstring,
    ``pass``, ``...`` or ``raise NotImplementedError``, or it is an
    ``@abstractmethod``."""
    if any(last_word(d.decorator) == "abstractmethod" for d in func.decorators):
        return True
    body = func.body.body if isinstance(func.body, cst.IndentedBlock) else [func.body]
    for stmt in body:
        small = stmt.body if isinstance(stmt, cst.SimpleStatementLine) else None
        if small is None:
            return False
        for s in small:
            if isinstance(s, cst.Pass):
                continue
            if isinstance(s, cst.Expr) and isinstance(
                s.value, (cst.SimpleString, cst.ConcatenatedString, cst.Ellipsis)
            ):
                continue
            if isinstance(s, cst.Raise) and "NotImplementedError" in (last_word(s.exc) or ""):
                continue
            return False
    return True


def hooked(evaluator, node: cst.Call, at) -> Optional[object]:
    """The mask ``self.<hook>(...)`` gives while one subclass's override is
    pinned (``each_override``); None otherwise.  A hook met is noted."""
    found = self_method(node, at.scope)
    if found is None:
        return None
    cls, name = found
    own = cls.methods.get(name)
    if own is None or not abstract(own) or cls.scope is None:
        return None
    if cls.scope.kind != ScopeKind.MODULE:
        return None
    if _MET[0] is not None:
        _MET[0][(cls.name, name)] = cls
    pin = _PINNED[0]
    if pin is None or pin[:2] != (cls.name, name):
        return None
    where, sub = pin[2], pin[3]
    text = f"self.{name}() of {sub.name if where is None else sub}"
    if where is None:  # a subclass of this file
        method = sub.methods.get(name)
        return evaluator._helper((method, 1), node, at, None) if method is not None else None
    project = getattr(evaluator.ctx, "project", None)
    read = getattr(project, "override_returned", None)
    if read is None:
        return None
    return read(where, sub, name, node, at.env, at.scope, text, lambda e: evaluator.eval(e, at))


def each_override(judge: Callable[[], object], project) -> Iterator[Tuple[Optional[str], object]]:
    """``(None, judge())``, then, when ``judge`` met an abstract hook of a
    module-level class (``hooked``), ``(what the message adds, judge())``
    once per used subclass that overrides it: of the base's file (named
    outside its own ``class`` statement, there or in another project file),
    then of the project's other files (``Overrides.overrides_elsewhere``)."""
    saved, _MET[0] = _MET[0], {}
    try:
        first = judge()
    finally:
        met, _MET[0] = _MET[0], saved
    yield None, first
    if _PINNED[0] is not None:
        return
    for (base, name), cls in met.items():
        for where, sub, shown in _overriders(cls, name, project)[:MAX_OVERRIDERS]:
            _PINNED[0] = (base, name, where, sub)
            try:
                got = judge()
            finally:
                _PINNED[0] = None
            yield f"; an instance of {shown} returns this mask from its {name}()", got


def _overriders(cls, name: str, project) -> list:
    """(file or None, the subclass, its name) for each used direct subclass
    of ``cls`` that defines ``name`` itself: its file's, then the project's."""
    out = []
    module = cls.scope
    text = module_text(module.node)
    mentioned = getattr(project, "mentioned_elsewhere", None)
    for d in (d for _, defs in module.final_env.items() for d in defs):
        other = d.extra if d.kind == DefKind.CLASS else None
        if other is None or other is cls or name not in other.methods:
            continue
        if abstract(other.methods[name]) or cls.name not in map(last_word, other.base_exprs):
            continue
        if word_count(other.name, text) > 1 or (mentioned is not None and mentioned(other.name)):
            out.append((None, other, other.name))
    ask = getattr(project, "overrides_elsewhere", None)
    return out + [(where, sub, sub) for where, sub in (ask(cls.name, name) if ask else ())]
