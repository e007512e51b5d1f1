"""MHA007: SDPA's dropout_p applied in eval mode."""
from __future__ import annotations

from typing import Any, Dict

from . import Witness
from ._common import Params, fmt, result, verdict

SEED = 0
N, L = 4, 10
DEFAULT_DROPOUT_P = 0.1
# Two eval-mode calls on the same input must agree exactly; any difference
# above float32 noise is dropout firing.
DIFF_THRESHOLD = 1e-6


def run_mha007(evidence: Dict[str, Any]) -> Dict[str, Any]:
    import torch
    import torch.nn.functional as F
    from torch import nn

    p = Params(evidence)
    e, h = p.dims()
    dropout_p = p.number("dropout_p", DEFAULT_DROPOUT_P)

    class Attention(nn.Module):
        """The pattern the rule flags: SDPA with a dropout_p not gated by training."""

        def __init__(self) -> None:
            super().__init__()
            self.dropout_p = dropout_p

        def forward(self, q: Any, k: Any, v: Any) -> Any:
            return F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout_p)

    module = Attention().eval()
    torch.manual_seed(SEED)
    q, k, v = (torch.randn(N, h, L, e // h) for _ in range(3))
    with torch.no_grad():
        first, second = module(q, k, v), module(q, k, v)
    diff = (first - second).abs().max().item()
    source = ("an attribute holding the module's dropout" if evidence.get("dropout_is_module")
              else "a number")
    witness = (f"a module calling F.scaled_dot_product_attention(q, k, v, dropout_p={dropout_p}) "
               f"({source}, not gated by self.training), .eval(), no_grad, called twice on "
               f"the same q, k, v of shape ({N}, {h}, {L}, {e // h}) (seed {SEED})")
    damage = f"the two eval-mode outputs differ by {fmt(diff)} (max abs)"
    return result(verdict(diff > DIFF_THRESHOLD), witness, damage,
                  {"max_diff": diff, "dropout_p": dropout_p}, p)


WITNESSES = [
    Witness(
        code="MHA007",
        summary=("Calls SDPA with the finding's dropout_p inside an eval-mode module, twice on "
                 "the same input, and measures how far the two outputs differ."),
        threshold_text=f"""\
CONFIRMED when two eval-mode, no_grad calls on the same input differ by more
than {DIFF_THRESHOLD:g} (max abs). Measured on torch 2.13 CPU (q, k, v of shape (4, 8, 10, 8),
seed 0, dropout_p=0.1, the default when the value is unknown): 1.635e+00. With dropout_p=0 the outputs are identical.""",
        func=run_mha007,
    ),
]
