"""MHA901: settings that turn the inference fastpath off (opt-in)."""

from __future__ import annotations

from typing import Iterator

from ..analysis.events import Construction
from ..core.torch_api import FASTPATH_BLOCKERS
from .base import Example, Report, Rule
from .construction import replaces_forward, construction_evidence, init_value, int_or_none


class FastpathBlocker(Rule):
    CODE = "MHA901"
    NAME = "fastpath-blocker"
    CATEGORY = "opinionated"
    DEFAULT_ENABLED = False
    MESSAGE = "{module} built with {blockers}: the inference fastpath is off for it"
    WHAT = """
        Flags settings that statically disable the inference fastpath:
        `bias=False`, `add_bias_kv=True`, `add_zero_attn=True`, and `kdim`/`vdim`
        different from `embed_dim` on a module that the file calls for
        self-attention (query, key and value the same tensor). One finding per
        construction, listing every blocker. Off by default.
        """
    WHY = """
        `nn.MultiheadAttention` takes its fused inference kernel only when none
        of these is set. `bias=False` turns it off without any message.
        """
    EXAMPLE = """
        import torch.nn as nn

        attn = nn.MultiheadAttention(256, 8, bias=False, batch_first=True)
        """
    USE_INSTEAD = """
        import torch.nn as nn

        attn = nn.MultiheadAttention(256, 8, batch_first=True)
        """
    DECISIONS = """
        - `kdim`/`vdim` count only on a module the file calls with the same
          tensor as query, key and value: a cross-attention module with other
          key widths never takes the fastpath anyway, and the setting is needed.
        - `bias=False` also counts on `nn.TransformerEncoderLayer`/`DecoderLayer`/
          `nn.Transformer`, whose attention inherits it.
        - A subclass of `nn.MultiheadAttention` whose `forward` is code of its
          own that never calls torch's (`super().forward(...)`) is not
          reported: torch's fastpath never runs for it, whatever its settings
          (torchtext's T5 attention, release review 9).
        """
    VALID = [
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n",
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, kdim=32, vdim=32, batch_first=True)\n"
        "def f(q, k, v):\n    return attn(q, k, v, need_weights=False)\n",
    ]
    INVALID = [
        Example(
            "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, bias=False, add_zero_attn=True, batch_first=True)\n",
            2,
            8,
        ),
    ]

    def on_construction(self, ev: Construction) -> Iterator[Report]:
        if replaces_forward(self.ctx, ev):
            return  # its own forward: torch's fast path never runs for it
        blockers = []
        names = ev.spec.init.names
        for key, bad in FASTPATH_BLOCKERS.items():
            expr = ev.args.get(key)
            if key in names and expr is not None and self.ctx.value(expr, ev.site) is bad:
                blockers.append(f"{key}={bad}")
        embed = (
            int_or_none(init_value(self.ctx, ev, ev.spec.embed_param))
            if ev.spec.embed_param
            else None
        )
        if embed is not None and "kdim" in names:
            for key in ("kdim", "vdim"):
                expr = ev.args.get(key)
                value = int_or_none(self.ctx.value(expr, ev.site)) if expr is not None else None
                if value is not None and value != embed and self.ctx.used_for_self_attention(ev):
                    blockers.append(f"{key}={value}")
        if blockers:
            evidence = construction_evidence(self.ctx, ev)
            evidence["blockers"] = blockers
            yield self.report(
                ev.site.node, evidence, module=ev.spec.name, blockers=", ".join(blockers)
            )
