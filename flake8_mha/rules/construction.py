"""What every rule on how a torch attention module is built shares: its
arguments' values and the evidence a witness needs (``construction_evidence``).
Holds no rule itself (MHA001 is in ``mha001_batch_first_unset``)."""

from __future__ import annotations

from typing import Any, Dict

import libcst as cst

from ..analysis.events import Construction
from ..analysis.resolve import passed
from ..analysis.tree import walk
from ..analysis.values import UNKNOWN

MODULES_DOC = (
    "`nn.MultiheadAttention`, `nn.TransformerEncoderLayer`, `nn.TransformerDecoderLayer` "
    "and `nn.Transformer`"
)


def init_value(ctx, ev: Construction, name: str):
    """The statically known value of a constructor argument (torch's default
    when it is not passed), or UNKNOWN."""
    expr = ev.args.get(name)
    if expr is not None:
        return ctx.value(expr, ev.site)
    if ev.args.maybe_given(name) or not ev.spec.init.has_default(name):
        return UNKNOWN
    return ev.spec.init.default(name)


def int_or_none(v):
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def construction_evidence(ctx, ev: Construction) -> Dict[str, Any]:
    spec = ev.spec
    out: Dict[str, Any] = {"module": spec.name}
    if spec.embed_param:
        out["embed_dim"] = int_or_none(init_value(ctx, ev, spec.embed_param))
        out["num_heads"] = int_or_none(init_value(ctx, ev, spec.heads_param))
    for key in ("dropout", "batch_first", "bias", "add_bias_kv", "add_zero_attn", "kdim", "vdim"):
        if key in spec.init.names:
            v = init_value(ctx, ev, key)
            out[key] = None if v is UNKNOWN or isinstance(v, str) else v
    if ev.cls is not None:
        out["subclass"] = ev.cls.name
    return out


def replaces_forward(ctx, ev: Construction) -> bool:
    """A subclass of ``nn.MultiheadAttention`` whose ``forward`` is code of
    its own that never runs torch's (no ``super().forward(...)``): torch's
    fast path, whatever the settings, never runs for it (torchtext's T5
    attention)."""
    if ev.via == "layer":  # a layer of another file with a forward of its own
        return True
    if ev.cls is None or ev.spec.name != "MultiheadAttention":
        return False
    forward = ctx.resolver.method_of(ev.cls, "forward")
    if forward is None:
        return False
    # ``super().forward(...)``, ``nn.MultiheadAttention.forward(self, ...)``
    return not any(
        isinstance(n, cst.Call)
        and isinstance(n.func, cst.Attribute)
        and n.func.attr.value == "forward"
        for n in walk(forward)
    )


THROUGH = "; this call builds it through {callee}() at {where}"


def handed_sizes(ctx, site):
    """``(entry, embed, heads, evidence, tail)`` for each torch module a call of
    a project function or class builds with sizes this call hands it
    (``sizes.sizes_table``'s entries, ``build_attention(AUDIO_DIM,
    AUDIO_HEADS)``, ``Block(100, 8)``), both sizes known here.  A class whose
    every construction in the project passes the same sizes is left out:
    its construction is judged where it stands, with them.  ``evidence``: what
    a witness needs; ``tail``: the message's end, naming the construction."""
    call = site.node
    project = getattr(ctx, "project", None)
    if (
        project is None
        or not hasattr(project, "sized")
        or not isinstance(call.func, (cst.Name, cst.Attribute))
        or any(a.star for a in call.args)
    ):
        return
    got = project.sized(call.func, site.env, site.scope)
    if got is None:
        return
    filename, callee, entries = got
    for entry in entries:
        embed = _size(ctx, site, entry, entry["embed"])
        heads = _size(ctx, site, entry, entry["heads"])
        if embed is None or heads is None:
            continue
        params = [r[1] for r in (entry["embed"], entry["heads"]) if r[0] == "param"]
        if entry["init"] and project.built_alike(filename, callee, params, entry["defaults"]):
            continue  # every construction passes the same: judged at the module
        where = f"{project.relative(filename)}:{entry['line']}"
        evidence = {
            "module": entry["module"],
            "embed_dim": embed,
            "num_heads": heads,
            **entry.get("settings", {}),
            "through": {
                "function": callee,
                "file": project.relative(filename),
                "line": entry["line"],
            },
        }
        yield entry, embed, heads, evidence, THROUGH.format(callee=callee, where=where)


def _size(ctx, site, entry: dict, ref: list):
    """The number a size of the entry is at this call: a number of the
    callee's own, or what the call passes for the parameter (its default
    when it passes nothing)."""
    kind, x = ref
    if kind == "value":
        return x
    index = entry["params"].index(x) if x in entry["params"] else -1
    expr = passed(site.node, index, x)
    if expr is None:
        return entry["defaults"].get(x)
    return int_or_none(ctx.value(expr, site))
