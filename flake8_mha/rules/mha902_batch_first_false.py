"""MHA902: a module built with batch_first=False (opt-in)."""

from __future__ import annotations

from typing import Iterator

from ..analysis.events import Construction
from ..analysis.layout import UNBATCHED
from ._layout_rule import call_layouts
from .base import Example, Report, Rule
from .construction import MODULES_DOC, construction_evidence


class BatchFirstFalse(Rule):
    CODE = "MHA902"
    NAME = "batch-first-false"
    CATEGORY = "opinionated"
    DEFAULT_ENABLED = False
    MESSAGE = "{module} built with batch_first=False: it expects (L, N, E) input, unlike the rest of the model"
    WHAT = f"""
        Flags {MODULES_DOC} built with an explicit `batch_first=False`.
        Off by default: for teams that keep every tensor batch-first.
        """
    WHY = """
        A sequence-first module in a batch-first code base needs a transpose at
        every call; forget one and samples silently mix (see MHA001). Batch-first
        modules also take the inference fastpath; sequence-first ones never do.
        """
    EXAMPLE = """
        import torch.nn as nn

        attn = nn.MultiheadAttention(256, 8, batch_first=False)
        """
    USE_INSTEAD = """
        import torch.nn as nn

        attn = nn.MultiheadAttention(256, 8, batch_first=True)
        """
    DECISIONS = """
        - Reported only when the value is statically `False` (a literal or a
          module constant); a variable is not reported.
        - A module fed only unbatched 2-D data `(L, E)` (learned tokens
          `nn.Parameter(torch.randn(n, d))`, terratorch's wave encoder) is not
          reported: `batch_first` changes nothing for it, as for MHA001 and
          MHA903.
        """
    VALID = [
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n",
        "import torch.nn as nn\ndef f(bf):\n    return nn.MultiheadAttention(64, 8, batch_first=bf)\n",
    ]
    INVALID = [
        Example(
            "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=False)\n", 2, 8
        ),
    ]

    def on_construction(self, ev: Construction) -> Iterator[Report]:
        expr = ev.args.get("batch_first")
        if expr is None or not ev.spec.has_batch_first:
            return
        if self.ctx.value(expr, ev.site) is False:
            kinds = [c.kind for _, c in call_layouts(self, ev)[0]]
            if kinds and all(k == UNBATCHED for k in kinds):
                return  # no batch axis: the flag changes nothing
            yield self.report(
                ev.site.node, construction_evidence(self.ctx, ev), module=ev.spec.name
            )
