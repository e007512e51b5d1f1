"""A mask as the small JSON a project file's reading keeps (``returns.py``):
what a builder returns, and what the constructions of a record class give
one of its fields (``Batch(input_ids=ids, mask=ids.ne(PAD_ID))`` in
data.py, read for ``batch.mask`` of ``batch: Batch`` in model.py: probe
AN's AN13)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

MASK_FIELDS = ("meaning", "kind", "dtype", "fill")
FIELD = "="  # after a ``Class.attr`` name: that field of a record class, by its constructions


def summary_of(ev, m, node, name: str) -> dict:
    """The JSON of the mask ``m`` the evaluator ``ev`` found, its line that
    of its origin (else of ``node``); ``{}`` when it says nothing a rule reads."""
    from ..masks.domain import Kind

    if m.none or not m.known:
        return {}
    if m.meaning is None and m.zero_one and m.kind not in (Kind.FLOAT01, Kind.INT):
        return {}  # a bool of unknown meaning: nothing a rule reads (cast, it is MHA004's)
    out: dict = {k: (None if getattr(m, k) is None else str(getattr(m, k))) for k in MASK_FIELDS}
    out["layout"] = list(m.layout) if m.layout is not None else None
    out["tri"] = list(m.tri) if m.tri is not None else None
    out["causal"] = bool(m.causal)
    out["zero_one"] = bool(m.zero_one)
    out["by_name"] = bool(m.origin is not None and m.origin.by_name)
    origin = m.origin or m.kind_origin or m.shape_origin
    out["source"] = None if origin is None else ev.text(origin.node)
    if origin is not None and origin.by_name and origin.text.startswith(out["source"] + ","):
        out["source"] = origin.text  # what the name adds: ``(images == 0).all(1), named pad``
    line = ev.line(origin.node) if origin is not None else None
    out["line"] = line if line is not None else ev.line(node)
    out["name"] = name
    return out


def field_summary(source: str, name: str, context) -> dict:
    """``Class.attr``: what every construction of the record class ``Class``
    in its own file gives the field ``attr``, joined, each evaluated where it
    stands with the file's parameters unknown; ``{}`` when unknown.
    ``context(module, flow, resolver)`` makes the evaluator's file context."""
    from ..flow import FlowPass
    from ..masks import At, MaskEvaluator, join_all
    from ..records import field_values
    from ..resolve import Resolver

    owner, _, attr = name.partition(".")
    if not owner or not attr or "." in attr:
        return {}
    module = cst.parse_module(source)
    flow = FlowPass()
    flow.run(module)
    cls = _top_class(flow, module, owner)
    if cls is None:
        return {}
    resolver = Resolver(flow)
    given = field_values(resolver, flow, cls, attr)
    if not given:
        return {}
    ev = MaskEvaluator(context(module, flow, resolver))
    m = join_all([ev.eval(e, At(env, scope, None, 0)) for e, env, scope in given])
    return summary_of(ev, m, cls.node, name + FIELD)


def _top_class(flow, module: cst.Module, name: str) -> Optional[object]:
    found = [s for s in module.body if isinstance(s, cst.ClassDef) and s.name.value == name]
    if len(found) != 1:
        return None
    return flow.classes.get(id(found[0]))
