"""MHA001 / MHA010 / MHA903 / MHA902: data of one layout read by a module set for the other.

The experiment is the same for all four: build the module with the
``batch_first`` the code gives it, feed it data laid out the way the code
lays it out (the finding's layout evidence: ``layout_kind``), change only
sample 1 and measure how far sample 0's output moves.  Then the same with the
flag that matches the data, which moves it by exactly 0.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from . import Witness
from ._common import MHA, Params, build, fmt, forward, module_text, result, verdict

N, L = 4, 10  # N != L, so the swap is not hidden by a square batch
INPUT_SEED, MODULE_SEED = 0, 1  # the seed article's recipe (exp2_batch_first.py)

# Sample 0's output must move by more than float32 noise (~1e-7; exactly 0
# with batch_first=True) when only sample 1 changes.
LEAK_THRESHOLD = 1e-4

THRESHOLD_TEXT = f"""\
CONFIRMED when sample 0's output moves by more than {LEAK_THRESHOLD:g} (max abs)
although only sample 1 changed. Measured on torch 2.13 CPU (E=64, H=8, N=4,
L=10, input seed 0, module seed 1, eval, no_grad), (N, L, E) data into a module
left batch_first=False: `nn.MultiheadAttention` 4.804e-01 (weights come back
(10, 4, 4) instead of (4, 10, 10)); with feed-forward width 2E:
`TransformerEncoderLayer` 4.166e-01, `TransformerDecoderLayer` 6.396e-01,
`TransformerEncoder` (2 layers) 3.774e-01, `TransformerDecoder` (2 layers)
8.852e-01, `nn.Transformer` (1+1 layers) 8.228e-01. (L, N, E) data into a
`batch_first=True` module mixes samples the same way (MHA010). With the flag
that matches the data: exactly 0 for every kind, which is what MHA903's witness
shows (NOT REPRODUCED: the code is correct)."""

_BATCH_FIRST, _SEQ_FIRST = "batch-first", "sequence-first"


def _leak(
    kind: str, e: int, h: int, module_batch_first: bool, data_batch_first: bool
) -> Dict[str, Any]:
    import torch

    axis = 0 if data_batch_first else 1  # where the code's data keeps its samples
    torch.manual_seed(INPUT_SEED)
    x = torch.randn(N, L, e)
    if not data_batch_first:
        x = x.transpose(0, 1).contiguous()  # the same samples, laid out (L, N, E)
    x2 = x.clone()
    x2.select(axis, 1).add_(1.0)  # change only sample 1
    module = build(kind, e, h, seed=MODULE_SEED, batch_first=module_batch_first)
    with torch.no_grad():
        y1 = forward(kind, module, x)
        y2 = forward(kind, module, x2)
        shape = tuple(module(x, x, x)[1].shape) if kind == MHA else None
    leak = (y1.select(axis, 0) - y2.select(axis, 0)).abs().max().item()
    return {"leak": leak, "weights_shape": shape}


def _data_layout(p: Params, default_batch_first: bool) -> bool:
    """Whether the code's data is batch-first; an unknown layout is assumed and noted."""
    kind = p.evidence.get("layout_kind")
    if kind == _BATCH_FIRST:
        return True
    if kind == _SEQ_FIRST:
        return False
    shape = "(N, L, E)" if default_batch_first else "(L, N, E)"
    # the damage rests on this: fed (L, N, E) the same module mixes nothing (CONFIRMED*)
    p.assume(f"layout of the data unknown (the code does not say it): assumed {shape}")
    return default_batch_first


def _module_flag(p: Params, code: str) -> bool:
    if code == "MHA010":
        stated = p.evidence.get("batch_first")
        if isinstance(stated, bool):
            return stated
        p.assume("batch_first unknown: used True")
        return True
    return False  # MHA001/MHA903: the default; MHA902: stated False


def _run(evidence: Dict[str, Any], code: str, default_batch_first: bool) -> Dict[str, Any]:
    p = Params(evidence)
    kind = p.module_kind()
    e, h = p.dims()
    flag = _module_flag(p, code)
    data_bf = _data_layout(p, default_batch_first)
    wrong = _leak(kind, e, h, module_batch_first=flag, data_batch_first=data_bf)
    right = _leak(kind, e, h, module_batch_first=data_bf, data_batch_first=data_bf)
    shape = "(N, L, E)" if data_bf else "(L, N, E)"
    matching = f"batch_first_{str(data_bf).lower()}"  # the flag that fits the data
    measured: Dict[str, Any] = {
        "leak": wrong["leak"],
        f"leak_{matching}": right["leak"],
        "data_layout": shape,
        "module_batch_first": flag,
    }
    where: Optional[str] = None
    if evidence.get("layout_line") is not None:
        where = f"line {evidence['layout_line']}: {evidence.get('layout_source')}"
        measured["layout_evidence"] = where
    damage = (
        f"sample 0 moved by {fmt(wrong['leak'])} when only sample 1 changed; "
        f"with batch_first={data_bf} (matching the data): {fmt(right['leak'])}"
    )
    if kind == MHA and flag != data_bf:
        measured["weights_shape"] = list(wrong["weights_shape"])
        measured[f"weights_shape_{matching}"] = list(right["weights_shape"])
        damage += (
            f"; attention weights {wrong['weights_shape']} instead of {right['weights_shape']}"
        )
    if flag == data_bf:
        damage = (
            f"no damage: the module's batch_first={flag} matches the {shape} data "
            f"(sample 0 moved by {fmt(wrong['leak'])} when only sample 1 changed)"
        )
    witness = (
        f"{module_text(kind, e, h, batch_first=flag)} in eval, fed x laid out {shape} "
        f"(N={N}, L={L}, E={e}) as the code lays it out"
        + (f" ({where})" if where else "")
        + f" (input seed {INPUT_SEED}, module seed {MODULE_SEED}); x2 = x with only "
        f"sample 1 changed (+1.0); compared sample 0's output, then the same with "
        f"batch_first={data_bf}"
    )
    return result(verdict(wrong["leak"] > LEAK_THRESHOLD), witness, damage, measured, p)


def run_batch_first(evidence: Dict[str, Any]) -> Dict[str, Any]:
    """MHA001 (and MHA902): the default/False module, the code's layout (else (N, L, E))."""
    return _run(evidence, "MHA001", default_batch_first=True)


def run_layout_mismatch(evidence: Dict[str, Any]) -> Dict[str, Any]:
    return _run(evidence, "MHA010", default_batch_first=True)


def run_implicit(evidence: Dict[str, Any]) -> Dict[str, Any]:
    return _run(evidence, "MHA903", default_batch_first=False)


WITNESSES = [
    Witness(
        code="MHA001",
        summary=(
            "Feeds data laid out as the code lays it out (the finding's layout evidence; "
            "(N, L, E) when the code does not say, noted in `assumed`) to the module left "
            "batch_first=False, changes only sample 1 and measures how far sample 0's "
            "output moves. NOT REPRODUCED when the code's data is sequence-first."
        ),
        threshold_text=THRESHOLD_TEXT,
        func=run_batch_first,
    ),
    Witness(
        code="MHA010",
        summary=(
            "Builds the module with the batch_first the code states and feeds it data in "
            "the other layout, as the code does; changes only sample 1 and measures how "
            "far sample 0's output moves (then with the flag that matches the data)."
        ),
        threshold_text=THRESHOLD_TEXT,
        func=run_layout_mismatch,
    ),
    Witness(
        code="MHA902",
        summary=(
            "Same experiment as MHA001: data of the code's layout ((N, L, E) when not "
            "known) through the module with batch_first=False."
        ),
        threshold_text=THRESHOLD_TEXT,
        func=run_batch_first,
    ),
    Witness(
        code="MHA903",
        summary=(
            "Shows the code is correct: the sequence-first data the code feeds, through "
            "the module left batch_first=False; sample 0 does not move when only sample 1 "
            "changes (NOT REPRODUCED: no damage, the finding asks only for an explicit "
            "flag)."
        ),
        threshold_text=THRESHOLD_TEXT,
        func=run_implicit,
    ),
]
