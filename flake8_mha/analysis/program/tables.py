"""Whether a summary table read back from the results cache is one
``summaries.summarise`` could have made: every key and value of the shapes it
writes (a file on disk may have been changed, truncated or written by another
version), else the table is made again."""

from __future__ import annotations

from . import forms
from .fills import APART, FILL_SINKS, KV, KV_VIA, RETURNED, SOFTMAX
from .sizes import valid_size_call, valid_size_entry
from .steps import FLOAT_CASTS
from .summaries import (
    ATTRS,
    BASES,
    IMPORTS,
    MODULES,
    PARTIAL_ARGS,
    REEXPORTS,
    REGISTRIES,
    SINK_ARGS,
    SIZE_CALLS,
    TORCH_BATCH_FIRST,
    SIZES,
    TORCH_BUILT,
    TORCH_LAYERS,
    TORCH_MODULES,
)


def valid_table(table) -> bool:
    """A summary table as ``summarise`` makes it (one read from disk may not be)."""
    if not isinstance(table, dict):
        return False
    for name, s in table.items():
        if name in (REEXPORTS, IMPORTS):
            if not isinstance(s, dict) or not all(
                isinstance(v, list) and len(v) == 2 and type(v[0]) is int and isinstance(v[1], str)
                for v in s.values()
            ):
                return False
            continue
        if name in (MODULES, TORCH_MODULES, TORCH_BUILT, TORCH_LAYERS, REGISTRIES):
            if not isinstance(s, dict) or not all(isinstance(c, str) for c in s.values()):
                return False
            continue
        if name == BASES:
            if not isinstance(s, dict) or not all(
                isinstance(v, list) and all(isinstance(b, str) for b in v) for v in s.values()
            ):
                return False
            continue
        if name == PARTIAL_ARGS:
            if not isinstance(s, dict) or not all(
                isinstance(v, list)
                and all(
                    isinstance(a, list) and len(a) == 2 and all(isinstance(x, str) for x in a)
                    for a in v
                )
                for v in s.values()
            ):
                return False
            continue
        if name == SIZES:
            if not isinstance(s, dict) or not all(
                isinstance(v, list) and all(map(valid_size_entry, v)) for v in s.values()
            ):
                return False
            continue
        if name == TORCH_BATCH_FIRST:
            if not isinstance(s, dict) or not all(map(_valid_flag, s.values())):
                return False
            continue
        if name == SIZE_CALLS:
            if not isinstance(s, dict) or not all(
                isinstance(v, list) and all(map(valid_size_call, v)) for v in s.values()
            ):
                return False
            continue
        if name == ATTRS:
            if not isinstance(s, dict) or not all(
                isinstance(v, dict) and all(isinstance(c, str) for c in v.values())
                for v in s.values()
            ):
                return False
            continue
        if not isinstance(s, dict) or not isinstance(name, str):
            return False
        edges = s.get("edges", [])
        if not (
            (isinstance(s.get("line"), int) or (s.get("line") is None and edges))
            and isinstance(s.get("name"), str)
            and isinstance(s.get("positional"), list)
            and isinstance(s.get("kwonly"), list)
            and all(isinstance(p, str) for p in s["positional"] + s["kwonly"])
            and isinstance(s.get("defaults"), dict)
            and all(v is None or isinstance(v, str) for v in s["defaults"].values())
            and isinstance(s.get("reach"), dict)
            and type(s.get("varargs", False)) is bool
            and type(s.get("varkw", False)) is bool
            and isinstance(edges, list)
        ):
            return False
        for arg, how in s["reach"].items():
            if (
                arg not in SINK_ARGS and arg not in forms.MODULE_SINKS and arg not in FILL_SINKS
            ) or not _valid_reach(how):
                return False
        for e in edges:
            if not (
                isinstance(e, dict)
                and isinstance(e.get("callee"), list)
                and len(e["callee"]) == 2
                and all(isinstance(c, str) for c in e["callee"])
                and isinstance(e.get("pos"), dict)
                and isinstance(e.get("kw"), dict)
                and all(_valid_reach(r) for r in [*e["pos"].values(), *e["kw"].values()])
                and _valid_given(e)
                and e.get("result") in (None, SOFTMAX[0], RETURNED[0])
            ):
                return False
    return True


def _valid_reach(how) -> bool:
    """``{"param": name, "ops": [...]}`` with known steps."""
    if not isinstance(how, dict):
        return False
    if not isinstance(how.get("param"), str) or not isinstance(how.get("ops"), list):
        return False
    unless = how.get("unless", [])
    if not isinstance(unless, list) or not all(isinstance(p, str) for p in unless):
        return False
    # ``fills.added_by_helper``: [name, position, position, a mask's name (1 or 0)]
    via = how.get("via", ["", 0, 1, 0])
    if not (isinstance(via, list) and len(via) == 4 and isinstance(via[0], str)):
        return False
    if not all(type(p) is int for p in via[1:]):
        return False
    kv_via = how.get(KV_VIA, ["", 2, 0, [0]])  # ``fills._by_other_file``
    if not (
        isinstance(kv_via, list)
        and len(kv_via) == 4
        and isinstance(kv_via[0], str)
        and all(type(p) is int for p in kv_via[1:3])
        and isinstance(kv_via[3], list)
        and all(type(p) is int for p in kv_via[3])
    ):
        return False
    for step in how["ops"]:
        if not isinstance(step, list) or not step or step[0] not in _OPS:
            return False
        if step[0] == "index" and not (len(step) == 2 and isinstance(step[1], str)):
            return False
        if step[0] == "unsqueeze" and not (len(step) == 2 and type(step[1]) is int):
            return False
        if step[0] == KV and not (
            len(step) in (2, 3) and isinstance(step[1], str) and step[2:] in ([], ["scores"])
        ):  # ``[KV, "keys", "scores"]``: hand-written attention's (``kv_scores.HANDWRITTEN``)
            return False
        if step[0] == "cast" and not (len(step) == 2 and step[1] in FLOAT_CASTS):
            return False
    return True


def _valid_given(edge: dict) -> bool:
    """A forwarding edge's ``given``, another's ``arity``: ``[positional
    count, [keywords]]`` the call passes itself."""
    if "fwd" not in edge:
        arity = edge.get("arity")
        return "given" not in edge and (
            isinstance(arity, list)
            and len(arity) == 2
            and type(arity[0]) is int
            and isinstance(arity[1], list)
            and all(isinstance(k, str) for k in arity[1])
        )
    given = edge.get("given")
    return (
        edge["fwd"] is True
        and isinstance(given, list)
        and len(given) == 2
        and type(given[0]) is int
        and isinstance(given[1], list)
        and all(isinstance(k, str) for k in given[1])
    )


_OPS = ("invert", "eq0", "index", "bool", "unsqueeze", "cast", "rows", "expand", KV, SOFTMAX[0])
_OPS += (APART[0], RETURNED[0])


# a flag named by the factory's file: a module-level constant (``cfg.BATCH_FIRST``)
# or the partial its layer is built by (``EncoderLayer = partial(..., batch_first=True)``)
_NAMED_FLAGS = ("const", "partial")


def _valid_flag(v) -> bool:
    """A factory's ``batch_first``: a literal, or ``[parameter, position,
    default]`` (``factories.returned_batch_first``)."""
    if type(v) is bool:
        return True
    if isinstance(v, list) and len(v) == 2 and v[0] in _NAMED_FLAGS and isinstance(v[1], str):
        return True
    return (
        isinstance(v, list)
        and len(v) == 3
        and isinstance(v[0], str)
        and type(v[1]) is int
        and (v[2] is None or type(v[2]) is bool)
    )
