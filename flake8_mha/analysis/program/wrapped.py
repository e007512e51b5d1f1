"""What a summarised call amounts to at its call site: a project wrapper
call that hands its parameters to a torch attention module
(``WrappedModuleCall``), the caller's arguments under the sink's names
(``bound``), and the chain a report names (``annotate``).  ``callsites.py``
makes them; the engine and the rules read them."""

from __future__ import annotations

from typing import Dict

import libcst as cst

from ...core.torch_api import SDPA_NAME
from ..events import ModuleCall
from ..bound import Bound


def bound(mapped: Dict[str, cst.BaseExpression], own=frozenset()) -> Bound:
    """The caller's arguments under the sink's names, as a call's ``Bound``;
    ``own``: the sink's arguments that something else may give (``maybe_given``)."""
    bound = _Mapped.__new__(_Mapped)
    bound.args = mapped
    bound.star = bound.double_star = False
    bound.positional_count = 0
    bound.own = frozenset(own)
    return bound


class _Mapped(Bound):
    """A wrapper call's arguments at the sink it reaches."""

    __slots__ = ("own",)

    def maybe_given(self, name: str) -> bool:
        return name in self.args or name in self.own


class WrappedModuleCall(ModuleCall):
    """A call of a project wrapper that hands its parameters to a torch
    attention module's mask arguments (``SelfAttn.forward(x, pad)`` ->
    ``self.mha(x, x, x, key_padding_mask=pad)``): the module call, with the
    caller's arguments.  Only the rules that judge a mask by its value alone
    (``CODES``) look at it: the module's construction, layout and result
    are the wrapper's own, judged where the wrapper calls it."""

    __slots__ = ("through", "more")
    # the masks by their value, and a causal hint the caller gives without its mask
    CODES = frozenset({"MHA003", "MHA004", "MHA005", "MHA015", "MHA016"})
    # what the caller's masks decide at the module call inside the wrapper
    MASK_CODES = frozenset({"MHA003", "MHA004"})

    def __init__(self, site, spec, instances, args, through):
        super().__init__(site, spec, instances, args)
        self.through = through
        self.more: list = []  # the same call as it reaches a second module (``VARIANT``)


def each_kind(make, site, filename, summary, args, reach):
    """A wrapper whose parameters reach the masks of torch modules of two
    kinds (``nn.TransformerEncoder``'s and a further
    ``nn.TransformerEncoderLayer``'s ``src_key_padding_mask``, probe AO's
    AO27): the call as ``make`` reads it for the first kind that reads it.
    The torch modules read a mask argument of one name the same way, so one
    finding says it; None when none is read."""
    kinds: dict = {}
    for sink, how in reach.items():
        kinds.setdefault(sink.split(".", 1)[0], {})[sink] = how
    for part in kinds.values():
        made = make(site, filename, dict(summary, reach=part), args)
        if made is not None:
            return made
    return None


def ends(summary, judged, relative) -> dict:
    """Where each of a call's arguments (``judged``: sink key -> argument)
    reaches its sink, when the wrapper reaches its sinks through different
    callees (``composing``'s ``ends``: GraphGPS's layer hands its blocked mask
    to one attention module and its padding to another), so that the
    argument a finding is about names its own line and chain (``annotate``)."""
    out = {}
    for key, arg in judged.items():
        end = summary.get("ends", {}).get(key)
        if end is not None and (end[0], end[1]) != (summary.get("sink_file"), summary["line"]):
            out[arg] = {"file": relative(end[0]), "line": end[1], "chain": end[2]}
    return out


def note_also(through: dict, summary: dict, mapped: dict) -> None:
    """Record in ``through`` (``also``) the torch modules' mask arguments the
    parameter that gives SDPA its ``attn_mask`` reaches too
    (``TransformerDecoder.memory_key_padding_mask``): a mask that is wrong for
    one of them is right for the other (probe AH's AH19); nothing when none."""
    if "attn_mask" not in mapped:
        return
    param = summary["reach"].get("attn_mask", {}).get("param")
    also = sorted(k for k, v in summary["reach"].items() if "." in k and v["param"] == param)
    if also:
        through["also"] = also


# how a message names SDPA reached through a ``functools.partial`` of it (probe AB's AB25)
PARTIAL_SDPA = "functools.partial(scaled_dot_product_attention)"


def annotate(report, ev):
    """A rule's report on an SDPA call reached through a wrapper names the
    wrapper's SDPA call (message and evidence ``through``); others unchanged."""
    handed = [i.handed for i in getattr(ev, "instances", ()) if getattr(i, "handed", None)]
    if handed:  # a torch module handed by the calls of another file (``handed_params``)
        _say_handed(report, *handed[0], ev.spec.name)
    through = getattr(ev, "through", None)
    if through is None:
        return report
    if through.get("handed"):  # a project class's instance, handed the same way
        _say_handed(report, *through["handed"])
    name = through["function"]
    shown = f"the function {name} returns" if name.endswith("()") else name + "()"
    if name == PARTIAL_SDPA:  # ``self.attn_fn = functools.partial(F.sdpa, dropout_p=p)``
        shown = name
    at = through.get("ends", {}).get(report.evidence.get("sink"))
    if at is not None:  # this argument reaches its sink through a callee of its own
        chain = at["chain"] if len(at["chain"]) > 1 else None
        through = dict(through, file=at["file"], line=at["line"], chain=chain)
    if through.get("chain"):
        shown = " -> ".join(_called(step[1]) for step in through["chain"])
    if "fill" in through:
        sink = through["fill"]
    elif "sink" in through:
        # the one argument the finding is about (MHA005's: the flag given without its mask)
        judged = report.evidence.get("sink") or report.evidence.get("flag")
        params = [judged] if judged in through.get("params", ()) else list(through["params"])
        sink = f"{through['sink']}'s {', '.join(params)}"
    else:
        sink = SDPA_NAME
    report.message += (
        f"; the call reaches {sink} at {through['file']}:{through['line']} through {shown}"
    )
    also = through.get("also") if report.evidence.get("mask", {}).get("meaning") else None
    if also and report.evidence.get("sink") == "attn_mask":  # probe AH's AH19
        named = ", ".join("{}'s {}".format(*k.split(".", 1)) for k in also)
        report.message += (
            f"; it also hands the same mask to {named}, which reads it the other way:"
            f" change it only on its way to {SDPA_NAME}"
        )
    report.evidence["through"] = dict(through)
    return report


def note_handed(through: dict, summary: dict) -> None:
    """The parameter a call runs through, when the project's calls of
    another file hand it the instance (``method_calls._handed_param``)."""
    if summary.get("handed"):
        through["handed"] = list(summary["handed"])


def _say_handed(report, param: str, func: str, at: str, cls: str) -> None:
    report.message += f"; {param} is the {cls} the project's calls hand {func}()"
    report.message += f" ({at})" if at else ""
    report.evidence["handed"] = {"param": param, "function": func, "at": at, "class": cls}


def _called(name: str) -> str:
    """How a chain names one function: ``Block.forward()``, ``make_attention()()``."""
    return name + "()"
