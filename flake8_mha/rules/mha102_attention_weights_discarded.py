"""MHA102: attention weights computed and thrown away, and its fix (need_weights=False)."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from ..analysis.events import ModuleCall
from ..analysis.flow import CallSite
from .autofix import Fix, FixContext, add_keyword, find_arg, register
from ._evidence import module_call_evidence
from .base import Example, Report, Rule


class AttentionWeightsDiscarded(Rule):
    CODE = "MHA102"
    NAME = "attention-weights-discarded"
    CATEGORY = "performance"
    MESSAGE = (
        "attention weights computed and thrown away: pass need_weights=False, or "
        "nn.MultiheadAttention takes the slow path (about 2x) to build them"
    )
    WHAT = """
        Flags a call of a known `nn.MultiheadAttention` (directly, through
        `self.attn`, through a `ModuleList` item) whose second result is thrown
        away (`out, _ = attn(...)`, `attn(...)[0]`, `(out, w) = attn(...)` with
        `w` never read) while `need_weights` is not given as `False`.
        """
    WHY = """
        `need_weights` defaults to `True`: the module then materialises the full
        `(N, L, S)` attention matrix with a manual softmax instead of the fused
        SDPA kernel. Off the fastpath that costs about 2.2x on torch 2.13 CPU (N=4,
        L=1024, E=448), on every step, for a tensor nobody reads.
        """
    EXAMPLE = """
        out, _ = self.attn(x, x, x, key_padding_mask=pad)
        """
    USE_INSTEAD = """
        out, _ = self.attn(x, x, x, key_padding_mask=pad, need_weights=False)
        """
    DECISIONS = """
        - Not reported when the weights are read anywhere in the function,
          returned, stored on `self` or elsewhere, or when `need_weights` is a
          variable.
        - A call whose whole result is dropped (an expression statement) is not
          reported.
        """
    VALID = [
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n"
        "def f(x):\n    out, w = attn(x, x, x)\n    return out, w\n",
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n"
        "def f(x):\n    return attn(x, x, x, need_weights=False)[0]\n",
    ]
    INVALID = [
        Example(
            "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n"
            "def f(x):\n    out, _ = attn(x, x, x)\n    return out\n",
            4,
            14,
            fixed="import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n"
            "def f(x):\n    out, _ = attn(x, x, x, need_weights=False)\n    return out\n",
        ),
    ]

    def on_module_call(self, ev: ModuleCall) -> Iterator[Report]:
        if ev.spec.name != "MultiheadAttention":
            return
        site = ev.site
        nw = ev.args.get("need_weights")
        if nw is not None:
            if self.ctx.value(nw, site) is not True:
                return  # False, or a variable: the caller decided
        elif ev.args.maybe_given("need_weights"):
            return
        if not self._discarded(site):
            return
        yield self.report(site.node, module_call_evidence(self.ctx, ev))

    def _discarded(self, site: CallSite) -> bool:
        call = site.node
        if site.parents:
            parent = site.parents[-1]
            return (
                isinstance(parent, cst.Subscript) and parent.value is call and _index_zero(parent)
            )
        stmt = site.stmt
        if isinstance(stmt, cst.Assign) and stmt.value is call and len(stmt.targets) == 1:
            target = stmt.targets[0].target
            if isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
                second = target.elements[1]
                if isinstance(second, cst.StarredElement):
                    return False
                w = second.value
                return isinstance(w, cst.Name) and not self.ctx.name_read(w.value, site)
        return False


def _index_zero(sub: cst.Subscript) -> bool:
    if len(sub.slice) != 1:
        return False
    el = sub.slice[0].slice
    return isinstance(el, cst.Index) and isinstance(el.value, cst.Integer) and el.value.value == "0"


def _need_weights_false(call: cst.Call, ctx: FixContext) -> Optional[cst.Call]:
    index = find_arg(call, "need_weights")
    if index is not None:
        arg = call.args[index]
        if isinstance(arg.value, cst.Name) and arg.value.value == "True":
            args = list(call.args)
            args[index] = arg.with_changes(value=cst.Name("False"))
            return call.with_changes(args=args)
        return None
    if any(a.star == "**" for a in call.args):
        return None
    return add_keyword(call, "need_weights", cst.Name("False"))


FIX = register(
    Fix(
        "MHA102",
        "Add `need_weights=False` to the call",
        "Only the discarded second result changes (it becomes None); the attention output is "
        "the same. A call given `need_weights=True` literally has it turned to False; a call "
        "with a `**kwargs` splat is left alone.",
        _need_weights_false,
    )
)
