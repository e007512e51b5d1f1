"""What every rule on how a torch attention module is built shares: its
arguments' values and the evidence a witness needs (``construction_evidence``).
Holds no rule itself (MHA001 is in ``mha001_batch_first_unset``)."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

import libcst as cst

from ..analysis.events import Construction
from ..analysis.program.local_names import function_key
from ..core.positions import line_of
from ..analysis.bound import passed
from ..analysis.partials import partial_of_name
from ..analysis.tree import walk
from ..analysis.values import UNKNOWN, instance, project_of

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


def handed_sizes(ctx, site, judged=("embed", "heads")):
    """``(entry, embed, heads, evidence, tail)`` for each torch module a call of
    a project function or class builds with sizes this call hands it
    (``sizes.sizes_table``'s entries, ``build_attention(AUDIO_DIM,
    AUDIO_HEADS)``, ``Block(100, 8)``), the ``judged`` sizes known here (a
    size not judged may be None).  Left out: sizes every construction of a
    class leaves to the same defaults (the construction inside the class
    judges them), and sizes the function around the call hands on from its
    own parameters (its callers judge them).  ``evidence``: what a witness
    needs; ``tail``: the message's end, naming the construction."""
    call = site.node
    project = getattr(ctx, "project", None)
    if (
        project is None
        or not hasattr(project, "sized")
        or not isinstance(call.func, (cst.Name, cst.Attribute, cst.Subscript))
        or any(a.star == "*" for a in call.args)  # positions unknown
    ):
        return
    got = project.sized(call.func, site.env, site.scope)
    if got is None:  # ``make_block(72)``, ``make_block = partial(Block, n_heads=16)``
        wrapped = partial_of_name(call, site.env, site.scope, ctx.resolver)
        if wrapped is None:
            return
        got = project.sized(*wrapped[:3])
        call = wrapped[3]
        if got is None:
            return
    filename, callee, entries = got
    made: dict = {}  # one report per module and sizes: the lines that build it named together
    for entry in entries:
        if not _runs(ctx, site, call, entry):
            continue
        sizes = {k: _size(ctx, site, call, entry, entry[k]) for k in ("embed", "heads")}
        if any(sizes[k] is None for k in judged):
            continue
        params = [entry[k][1] for k in judged if entry[k][0] == "param"]
        if not params:
            continue  # the callee's own numbers: judged where it builds the module
        if (
            entry["init"]
            and not _hands_one(call, entry, params)
            and project.built_alike(filename, callee, params, entry["defaults"])
        ):
            continue  # left to defaults every construction shares: judged at the module
        if _handed_on(ctx, site, entry, judged, filename):
            continue  # this function's callers hand the sizes: judged there
        built_in = entry.get("file", filename)  # handed on to another file: built there
        where = f"{project.relative(built_in)}:{entry['line']}"
        evidence = {
            "module": entry["module"],
            "embed_dim": sizes["embed"],
            "num_heads": sizes["heads"],
            **entry.get("settings", {}),
            "through": {
                "function": callee,
                "file": project.relative(built_in),
                "line": entry["line"],
            },
        }
        key = (entry["module"], sizes["embed"], sizes["heads"], built_in)
        if key in made:  # a block's self- and cross-attention built alike (RT-DETR's decoder)
            made[key][4].append((entry["line"], where))
            continue
        made[key] = [entry, sizes["embed"], sizes["heads"], evidence, [(entry["line"], where)]]
    for entry, embed, heads, evidence, wheres in made.values():
        where = " and ".join(w for _, w in sorted(wheres))
        yield entry, embed, heads, evidence, THROUGH.format(callee=callee, where=where)


def _runs(ctx, site, call: cst.Call, entry: dict) -> bool:
    """Whether the call makes the construction: one under ``if p is not
    None:`` (``if p:``) runs when the call gives ``p`` a known value (a
    true one); left out, ``p`` is its default, which does not run it."""
    when = entry.get("when")
    if when is None:
        return True
    kind, p = when
    expr = _passed_for(call, entry, p)
    if expr is None:
        return False
    value = ctx.value(expr, site)
    if value is UNKNOWN or value is None:
        return False
    return bool(value) if kind == "truthy" else True


def _hands_one(call: cst.Call, entry: dict, params) -> bool:
    """Whether the call passes one of the size parameters ``params`` itself."""
    return any(_passed_for(call, entry, p) is not None for p in params)


def _passed_for(call: cst.Call, entry: dict, param: str):
    """What the call passes for the entry's parameter ``param``, by position
    or keyword; None when it leaves it to its default."""
    return passed(call, entry["params"].index(param) if param in entry["params"] else -1, param)


def _handed_on(ctx, site, entry: dict, judged, site_file: str) -> bool:
    """The call hands the ``judged`` sizes on from the parameters of the
    function or class around it, as they are (``Layer(dim, heads)`` in
    ``Encoder.__init__``), and that function's own entry for the same
    construction (``sizes.sizes_table`` composes it, ``ProjectFiles.sizes``
    across files) has them as its parameters: its callers judge them."""
    key = function_key(site.scope)
    if key is None:
        return False
    owner = key[: -len(".__init__")] if key.endswith(".__init__") else key
    own = ctx.project.sizes(ctx.project.path).get(owner) or ()
    mine = (entry["module"], entry["line"], entry.get("file", site_file))
    return any(
        (e["module"], e["line"], e.get("file", ctx.project.path)) == mine
        and all(e[k][0] == "param" for k in judged)
        for e in own
    )


def judged_at_callers(ctx, ev: Construction, judged=("embed", "heads")) -> bool:
    """A construction whose ``judged`` sizes are parameters of its class's
    ``__init__`` as they are (a sizes entry), when some construction of the
    class in the project passes one of them itself: the sizes enter the
    program there, so those calls report (``handed_sizes``), not this one
    (RULES.md: where a fact from another function enters the chain)."""
    project = getattr(ctx, "project", None)
    key = function_key(ev.site.scope)
    if project is None or not hasattr(project, "sizes_handed") or key is None:
        return False
    if not key.endswith(".__init__") or key.count(".") != 1:
        return False
    cls = key.split(".")[0]
    line = line_of(ctx.module, ev.site.node)
    for entry in project.sizes(project.path).get(cls) or ():
        if entry["line"] != line or not entry["init"] or "file" in entry:
            continue
        if any(entry[k][0] != "param" for k in judged):
            continue  # a number of the class's own: it enters here
        params = [entry[k][1] for k in judged]
        if project.sizes_handed(project.path, cls, params):
            return True
    return False


def _size(ctx, site, call: cst.Call, entry: dict, ref: list):
    """The number a size of the entry is at this call: a number of the
    callee's own, or what the call passes for the parameter (its default
    when it passes nothing)."""
    kind, x = ref
    if kind == "value":
        return x
    expr = _passed_for(call, entry, x)
    if expr is None and any(a.star for a in call.args):
        return None  # ``Net(dim=640, **kwargs)``: the kwargs may give it
    if expr is None:
        return entry["defaults"].get(x)
    return int_or_none(ctx.value(expr, site))


def one_construction(scope, cls, judge: Callable, at_least: int = 1) -> Optional[Tuple[Any, str]]:
    """Each construction in the project of the module-level class ``cls`` of
    ``scope`` read on its own (``values.instance``: its ``__init__``'s
    parameters take what it passes): the first answer of ``judge()`` that is
    not None, and what a message adds to name that construction; None when
    none gives one, or the project holds fewer than ``at_least``."""
    project = project_of(scope)
    built = project.instances(cls.name) if hasattr(project, "instances") else None
    if not built or len(built) < at_least:
        return None
    for given in built:
        with instance(cls.name, given):
            got = judge()
        if got is not None:
            shown = ", ".join(f"{p}={v!r}" for p, v in given.items())
            return got, f"; one construction of {cls.name} in the project passes {shown}"
    return None
