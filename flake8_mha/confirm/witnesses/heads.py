"""MHA008: embed_dim not divisible by num_heads, or num_heads <= 0."""

from __future__ import annotations

from typing import Any, Dict

from . import Witness
from ._common import (
    DEC_LAYER,
    DECODER,
    ENC_LAYER,
    ENCODER,
    MHA,
    TRANSFORMER,
    Params,
    catch,
    module_text,
    result,
    skipped,
    verdict,
)

# The stacks take no embed_dim/num_heads: their layer is what gets built.
LAYER_OF = {ENCODER: ENC_LAYER, DECODER: DEC_LAYER}


def _construct(kind: str, e: int, h: int) -> None:
    """Build on the meta device: the checks run, no weights are allocated
    (a call site's embed_dim may be large)."""
    from torch import nn

    if kind == TRANSFORMER:
        nn.Transformer(
            e, h, num_encoder_layers=1, num_decoder_layers=1, batch_first=True, device="meta"
        )
    else:
        getattr(nn, kind)(e, h, device="meta")


def run_mha008(evidence: Dict[str, Any]) -> Dict[str, Any]:
    p = Params(evidence)
    e, h = evidence.get("embed_dim"), evidence.get("num_heads")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (e, h)):
        return skipped(
            "embed_dim/num_heads not in the evidence: the finding is about those "
            "values, so there is no safe default",
            params=p,
        )
    kind = p.module_kind(default=MHA)
    built = LAYER_OF.get(kind, kind)
    _, error = catch(lambda: _construct(built, e, h))
    witness = f"constructed {module_text(built, e, h)} on the meta device"
    damage = f"raised {error}" if error else "constructed without error"
    return result(verdict(error is not None), witness, damage, {"exception": error}, p)


WITNESSES = [
    Witness(
        code="MHA008",
        summary=(
            "Constructs the module with the call site's embed_dim and num_heads and "
            "reports the exact exception."
        ),
        threshold_text="""\
CONFIRMED when construction raises. Measured on torch 2.13 CPU:
`nn.MultiheadAttention(10, 3)`, `nn.Transformer(d_model=10, nhead=3)` and both
Transformer layers: `AssertionError: embed_dim must be divisible by num_heads`;
`num_heads=0`: `ValueError: embed_dim and num_heads must be greater than 0, got
embed_dim=10 and num_heads=0 instead`. SKIPPED when either value is unknown.""",
        func=run_mha008,
    ),
]
