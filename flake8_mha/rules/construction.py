"""MHA001 (a module built without batch_first), and what every rule on how a
torch attention module is built shares: its arguments' values and the
evidence a witness needs (``construction_evidence``)."""
from __future__ import annotations

from typing import Any, Dict, Iterator

from ..events import Construction
from ..values import UNKNOWN
from .base import Example, Report, Rule

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


class BatchFirstUnset(Rule):
    CODE = "MHA001"
    NAME = "batch-first-unset"
    MESSAGE = (
        "{module} built without batch_first: (N, L, E) input silently mixes samples "
        "across the batch"
    )
    WHAT = f"""
        Flags {MODULES_DOC} (and classes that subclass them) built without a
        `batch_first` argument. Any explicit value, `True` or `False`, is accepted,
        and so is a `**kwargs` splat that may carry it.
        """
    WHY = """
        `batch_first` defaults to `False`: these modules read their input as
        `(L, N, E)` (sequence first). Almost every data pipeline yields `(N, L, E)`.
        Fed batch-first data, the module attends across the *batch* instead of
        across the sequence: every sample's output depends on the other samples.
        Nothing raises, the loss still goes down, and the numbers are wrong
        (torch 2.13, E=64, 8 heads, N=4, L=10: changing only sample 1 moves
        sample 0's output by 0.48).
        """
    EXAMPLE = """
        import torch.nn as nn

        attn = nn.MultiheadAttention(embed_dim=64, num_heads=8)
        """
    USE_INSTEAD = """
        import torch.nn as nn

        attn = nn.MultiheadAttention(embed_dim=64, num_heads=8, batch_first=True)
        # or, if your tensors really are (L, N, E), say so:
        attn = nn.MultiheadAttention(embed_dim=64, num_heads=8, batch_first=False)
        """
    DECISIONS = """
        - `nn.TransformerEncoder`/`nn.TransformerDecoder` take no `batch_first`;
          the layer they are built from carries the finding.
        - A subclass with its own `__init__` is reported at its
          `super().__init__(...)` call; one without is reported where it is built.
        - Not auto-fixed: adding `batch_first=True` changes how the caller's
          tensors are read. Decide which layout your data has, then say it.
        """
    REFERENCES = (
        "https://pytorch.org/docs/stable/generated/torch.nn.MultiheadAttention.html",
    )
    VALID = [
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n",
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=False)\n",
        "import torch.nn as nn\ndef make(**kw):\n    return nn.MultiheadAttention(64, 8, **kw)\n",
        "class MultiheadAttention:\n    pass\nattn = MultiheadAttention(64, 8)\n",
        "import torch.nn as nn\nenc = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 8, batch_first=True), 2)\n",
    ]
    INVALID = [
        Example("import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8)\n", 2, 8),
        Example("from torch import nn\nlayer = nn.TransformerEncoderLayer(d_model=64, nhead=8)\n", 2, 9),
        Example(
            "import torch.nn as nn\n\nclass Attn(nn.MultiheadAttention):\n"
            "    def __init__(self, dim):\n        super().__init__(dim, 8)\n",
            5, 9,
        ),
    ]

    def on_construction(self, ev: Construction) -> Iterator[Report]:
        spec = ev.spec
        if not spec.has_batch_first or ev.args.maybe_given("batch_first"):
            return
        yield self.report(ev.site.node, construction_evidence(self.ctx, ev), module=spec.name)
