"""MHA001 / MHA902: (N, L, E) data fed to a module left batch_first=False."""
from __future__ import annotations

from typing import Any, Dict

from . import Witness
from ._common import MHA, Params, build, fmt, forward, module_text, result, verdict

N, L = 4, 10  # N != L, so the swap is not hidden by a square batch
INPUT_SEED, MODULE_SEED = 0, 1  # the seed article's recipe (exp2_batch_first.py)

# Sample 0's output must move by more than float32 noise (~1e-7; exactly 0
# with batch_first=True) when only sample 1 changes.
LEAK_THRESHOLD = 1e-4

THRESHOLD_TEXT = f"""\
CONFIRMED when sample 0's output moves by more than {LEAK_THRESHOLD:g} (max abs)
although only sample 1 changed (`x2[1] += 1`). Measured on torch 2.13 CPU
(E=64, H=8, N=4, L=10, input seed 0, module seed 1, eval, no_grad):
`nn.MultiheadAttention` 4.804e-01 (weights come back (10, 4, 4) instead of
(4, 10, 10)); with feed-forward width 2E: `TransformerEncoderLayer` 4.166e-01,
`TransformerDecoderLayer` 6.396e-01, `TransformerEncoder` (2 layers) 3.774e-01,
`TransformerDecoder` (2 layers) 8.852e-01, `nn.Transformer` (1+1 layers)
8.228e-01. With `batch_first=True`: exactly 0 for every kind."""


def _leak(kind: str, e: int, h: int, batch_first: bool) -> Dict[str, Any]:
    import torch

    torch.manual_seed(INPUT_SEED)
    x = torch.randn(N, L, e)  # the user's (N, L, E) batch
    x2 = x.clone()
    x2[1] += 1.0  # change only sample 1
    module = build(kind, e, h, seed=MODULE_SEED, batch_first=batch_first)
    with torch.no_grad():
        y1 = forward(kind, module, x)
        y2 = forward(kind, module, x2)
        shape = tuple(module(x, x, x)[1].shape) if kind == MHA else None
    return {"leak": (y1[0] - y2[0]).abs().max().item(), "weights_shape": shape}


def run_batch_first(evidence: Dict[str, Any]) -> Dict[str, Any]:
    p = Params(evidence)
    kind = p.module_kind()
    e, h = p.dims()
    wrong = _leak(kind, e, h, batch_first=False)
    right = _leak(kind, e, h, batch_first=True)
    measured = {"leak": wrong["leak"], "leak_batch_first_true": right["leak"]}
    damage = (f"sample 0 moved by {fmt(wrong['leak'])} when only sample 1 changed; "
              f"with batch_first=True: {fmt(right['leak'])}")
    if kind == MHA:
        measured["weights_shape"] = list(wrong["weights_shape"])
        measured["weights_shape_batch_first_true"] = list(right["weights_shape"])
        damage += (f"; attention weights {wrong['weights_shape']} instead of "
                   f"{right['weights_shape']}")
    witness = (f"{module_text(kind, e, h, batch_first=False)} in eval, fed x of shape "
               f"(N={N}, L={L}, E={e}) as if batch-first (input seed {INPUT_SEED}, module "
               f"seed {MODULE_SEED}); x2 = x with only sample 1 changed (+1.0); compared "
               f"sample 0's output, then the same with batch_first=True")
    return result(verdict(wrong["leak"] > LEAK_THRESHOLD), witness, damage, measured, p)


WITNESSES = [
    Witness(
        code="MHA001",
        summary=("Feeds (N, L, E) data with N != L to the module left batch_first=False, "
                 "changes only sample 1 and measures how far sample 0's output moves."),
        threshold_text=THRESHOLD_TEXT,
        func=run_batch_first,
    ),
    Witness(
        code="MHA902",
        summary=("Same experiment as MHA001: (N, L, E) data through the module with "
                 "batch_first=False; sample 0 moves when only sample 1 changes."),
        threshold_text=THRESHOLD_TEXT,
        func=run_batch_first,
    ),
]
