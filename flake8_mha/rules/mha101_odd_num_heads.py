"""MHA101: an odd number of heads keeps the module off the fastpath."""
from __future__ import annotations

from typing import Iterator

from ..events import Construction
from .base import Example, Report, Rule
from .construction import construction_evidence, init_value, int_or_none


class OddNumHeads(Rule):
    CODE = "MHA101"
    NAME = "odd-num-heads"
    CATEGORY = "performance"
    MESSAGE = "{heads_name}={heads} is odd: {module} never takes the fast inference path"
    WHAT = """
        Flags a module built with a statically odd `num_heads` (`nhead`),
        `num_heads=1` included.
        """
    WHY = """
        The inference fastpath of `nn.MultiheadAttention` and
        `nn.TransformerEncoderLayer` (fused native kernels, nested tensors for
        padded batches) requires an even number of heads. With an odd count
        every inference call silently takes the slow, general path.
        """
    EXAMPLE = """
        import torch.nn as nn

        attn = nn.MultiheadAttention(embed_dim=96, num_heads=3, batch_first=True)
        """
    USE_INSTEAD = """
        import torch.nn as nn

        attn = nn.MultiheadAttention(embed_dim=96, num_heads=4, batch_first=True)
        """
    DECISIONS = """
        - `num_heads=1` is odd and is reported (RULES.md).
        - Reported beside MHA008 when both apply: each code is about its own fact.
        """
    VALID = [
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n",
        "import torch.nn as nn\nmodel = nn.Transformer(batch_first=True)\n",
    ]
    INVALID = [
        Example("import torch.nn as nn\nattn = nn.MultiheadAttention(96, 3, batch_first=True)\n", 2, 8),
        Example("import torch.nn as nn\nattn = nn.MultiheadAttention(64, num_heads=1, batch_first=True)\n", 2, 8),
    ]

    def on_construction(self, ev: Construction) -> Iterator[Report]:
        spec = ev.spec
        if spec.heads_param is None:
            return
        heads = int_or_none(init_value(self.ctx, ev, spec.heads_param))
        if heads is not None and heads > 0 and heads % 2 == 1:
            yield self.report(ev.site.node, construction_evidence(self.ctx, ev),
                              heads_name=spec.heads_param, heads=heads, module=spec.name)
