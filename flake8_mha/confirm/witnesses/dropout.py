"""MHA007: SDPA's dropout_p applied in eval mode."""

from __future__ import annotations

from typing import Any, Dict

from . import Witness
from ._common import Params, catch, fmt, result, verdict

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
    as_module = bool(evidence.get("dropout_is_module"))
    known = evidence.get("dropout_p")
    if as_module and not isinstance(known, (int, float)):
        # The module raises whatever its p: the verdict does not rest on it.
        dropout_p = DEFAULT_DROPOUT_P
        p.note(f"dropout_p unknown: used {DEFAULT_DROPOUT_P} for the nn.Dropout module")
    else:
        dropout_p = p.number("dropout_p", DEFAULT_DROPOUT_P)

    class Attention(nn.Module):
        """The pattern the rule flags: SDPA with a dropout_p not gated by training."""

        def __init__(self, dropout: Any) -> None:
            super().__init__()
            self.dropout = dropout

        def forward(self, q: Any, k: Any, v: Any) -> Any:
            # The bug on purpose: this is what the witness measures.
            return F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout)  # noqa: MHA007

    torch.manual_seed(SEED)
    q, k, v = (torch.randn(N, h, L, e // h) for _ in range(3))
    shape = f"({N}, {h}, {L}, {e // h})"
    measured: Dict[str, Any] = {"dropout_p": dropout_p}
    words = []
    error = None
    if as_module:  # dropout_p=self.drop where self.drop is nn.Dropout: SDPA takes a float
        _, error = catch(lambda: Attention(nn.Dropout(dropout_p)).eval()(q, k, v))
        measured["exception"] = error
        words.append(
            f"with the nn.Dropout module: raised {error}"
            if error
            else "with the nn.Dropout module: ran"
        )
    module = Attention(dropout_p).eval()
    with torch.no_grad():
        first, second = module(q, k, v), module(q, k, v)
    diff = (first - second).abs().max().item()
    measured["max_diff"] = diff
    words.append(
        f"{'with its .p ungated: ' if as_module else ''}the two eval-mode outputs "
        f"differ by {fmt(diff)} (max abs)"
    )
    if as_module:
        witness = (
            f"a module calling F.scaled_dot_product_attention(q, k, v, "
            f"dropout_p=self.drop) with self.drop = nn.Dropout({dropout_p}), .eval(), "
            f"then with dropout_p=self.drop.p not gated by self.training, called twice "
            f"under no_grad on the same q, k, v of shape {shape} (seed {SEED})"
        )
    else:
        witness = (
            f"a module calling F.scaled_dot_product_attention(q, k, v, "
            f"dropout_p={dropout_p}) not gated by self.training, .eval(), no_grad, "
            f"called twice on the same q, k, v of shape {shape} (seed {SEED})"
        )
    if (
        error is None
        and as_module
        and diff > DIFF_THRESHOLD
        and dropout_p == DEFAULT_DROPOUT_P
        and not isinstance(known, (int, float))
    ):
        p.assume("the ungated .p fires only if it is above 0, and it is unknown")
    return result(
        verdict(error is not None or diff > DIFF_THRESHOLD), witness, "; ".join(words), measured, p
    )


WITNESSES = [
    Witness(
        code="MHA007",
        summary=(
            "Calls SDPA with the finding's dropout_p (or nn.Dropout module) inside an "
            "eval-mode module, twice on the same input: how far the outputs differ."
        ),
        threshold_text=f"""\
CONFIRMED when two eval-mode, no_grad calls on the same input differ by more
than {DIFF_THRESHOLD:g} (max abs), or, for an `nn.Dropout` module passed as
`dropout_p`, when the call raises. Measured on torch 2.13 CPU (q, k, v of shape
(4, 8, 10, 8), seed 0, dropout_p=0.1, the default when the value is unknown):
1.635e+00; with dropout_p=0 the outputs are identical. An `nn.Dropout` module:
`TypeError: scaled_dot_product_attention(): argument 'dropout_p' must be float,
not Dropout`.""",
        func=run_mha007,
    ),
]
