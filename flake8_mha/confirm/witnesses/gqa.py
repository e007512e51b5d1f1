"""MHA013/MHA904: K/V heads tiled instead of grouped; MHA014: GQA head counts
that do not divide."""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from . import NOT_REPRODUCED, Witness
from ._common import Params, catch, fmt, result, skipped, verdict

SEED = 0
B, L, D = 2, 5, 16
DEFAULT_HEADS, DEFAULT_KV_HEADS = 8, 2  # TORCH_FACTS item 18
MAX_HEADS = 256  # more query heads than this: run at the default counts
# Grouping and tiling on the same projections: anything above float32 noise
# is the pairing.  Measured (seed 0, the defaults): 2.735e+00.
DIFF_THRESHOLD = 1e-4


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _counts(p: Params) -> Tuple[int, int]:
    """(query heads, KV heads) from the evidence, or the defaults (noted)."""
    ev = p.evidence
    n_kv, n_rep, heads = (
        _int(ev.get("num_kv_heads")),
        _int(ev.get("n_rep")),
        _int(ev.get("num_heads")),
    )
    if n_kv is not None and n_rep is None and heads is not None and heads % n_kv == 0:
        n_rep = heads // n_kv
    if n_kv is None and n_rep is not None and heads is not None and heads % n_rep == 0:
        n_kv = heads // n_rep
    if n_kv is None and n_rep is None:
        p.note(
            f"num_kv_heads and n_rep unknown: used {DEFAULT_HEADS} query heads over "
            f"{DEFAULT_KV_HEADS} KV heads"
        )
        return DEFAULT_HEADS, DEFAULT_KV_HEADS
    if n_kv is None:
        n_kv = DEFAULT_KV_HEADS
        p.note(f"num_kv_heads unknown: used {n_kv} (n_rep={n_rep} from the code)")
    if n_rep is None:
        n_rep = DEFAULT_HEADS // DEFAULT_KV_HEADS
        p.note(f"n_rep unknown: used {n_rep} (num_kv_heads={n_kv} from the code)")
    if n_kv * n_rep > MAX_HEADS:
        p.note(
            f"{n_kv * n_rep} query heads too many for a quick witness: used "
            f"{DEFAULT_HEADS} over {DEFAULT_KV_HEADS}"
        )
        return DEFAULT_HEADS, DEFAULT_KV_HEADS
    return n_kv * n_rep, n_kv


def run_tiling(evidence: Dict[str, Any]) -> Dict[str, Any]:
    import torch
    import torch.nn.functional as F

    p = Params(evidence)
    heads, n_kv = _counts(p)
    n_rep = heads // n_kv
    p.note(f"batch {B}, length {L}, head_dim {D}: sizes the pairing does not depend on")
    torch.manual_seed(SEED)
    q = torch.randn(B, heads, L, D)
    k = torch.randn(B, n_kv, L, D)
    v = torch.randn(B, n_kv, L, D)
    grouped = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    interleaved = F.scaled_dot_product_attention(
        q, k.repeat_interleave(n_rep, dim=1), v.repeat_interleave(n_rep, dim=1)
    )
    tiled = F.scaled_dot_product_attention(q, k.repeat(1, n_rep, 1, 1), v.repeat(1, n_rep, 1, 1))
    diff = (grouped - tiled).abs().max().item()
    same = (grouped - interleaved).abs().max().item()
    axis = evidence.get("head_axis")
    measured = {
        "max_difference": diff,
        "interleave_vs_enable_gqa": same,
        "num_heads": heads,
        "num_kv_heads": n_kv,
        "n_rep": n_rep,
        "head_axis": axis,
    }
    witness = (
        f"q ({B}, {heads}, {L}, {D}), k and v ({B}, {n_kv}, {L}, {D}), seed {SEED}: "
        f"F.scaled_dot_product_attention(q, k, v, enable_gqa=True) against the same call "
        f"on k.repeat(1, {n_rep}, 1, 1), v.repeat(1, {n_rep}, 1, 1) (the code tiles axis "
        f"{axis} of its layout; SDPA's layout puts the heads on axis 1)"
    )
    damage = (
        f"tiling pairs query head i with KV head i % {n_kv} instead of i // {n_rep}: the "
        f"outputs differ by {fmt(diff)} (max abs); repeat_interleave matches enable_gqa to "
        f"{fmt(same)}"
    )
    if n_kv == 1:
        return result(
            NOT_REPRODUCED,
            witness,
            "one KV head: tiling and grouping pair the same heads",
            measured,
            p,
        )
    return result(verdict(diff > DIFF_THRESHOLD), witness, damage, measured, p)


def run_mha014(evidence: Dict[str, Any]) -> Dict[str, Any]:
    import torch
    import torch.nn.functional as F

    p = Params(evidence)
    heads, n_kv = _int(evidence.get("num_heads")), _int(evidence.get("num_kv_heads"))
    if heads is None or n_kv is None:
        return skipped(
            "num_heads/num_kv_heads not in the evidence: the finding is about those "
            "counts, so there is no safe default",
            params=p,
        )
    if max(heads, n_kv) > 4096:
        return skipped(f"{heads} query heads over {n_kv}: too many for a quick witness", params=p)
    p.note(f"batch {B}, length {L}, head_dim {D}: sizes the check does not depend on")
    torch.manual_seed(SEED)
    q = torch.randn(B, heads, L, D)
    k = torch.randn(B, n_kv, L, D)
    _, error = catch(lambda: F.scaled_dot_product_attention(q, k, k, enable_gqa=True))
    witness = (
        f"F.scaled_dot_product_attention(q, k, v, enable_gqa=True) with q ({B}, {heads}, "
        f"{L}, {D}) and k, v ({B}, {n_kv}, {L}, {D})"
    )
    damage = f"raised {error}" if error else "ran without error"
    return result(
        verdict(error is not None),
        witness,
        damage,
        {"exception": error, "num_heads": heads, "num_kv_heads": n_kv},
        p,
    )


_TILING_SUMMARY = (
    "Runs SDPA with enable_gqa=True and with K/V tiled by .repeat on one seeded "
    "set of projections, with the finding's head counts: the max difference."
)
_TILING_THRESHOLD = f"""\
CONFIRMED when the two outputs differ by more than {DIFF_THRESHOLD:g} (max abs).
Measured on torch 2.13 CPU (B={B}, {DEFAULT_HEADS} query heads, {DEFAULT_KV_HEADS} KV heads,
L={L}, D={D}, seed {SEED}, the defaults when the counts are unknown): 2.735e+00;
`repeat_interleave` against `enable_gqa`: 0. NOT REPRODUCED with one KV head
(multi-query), where both orders pair the same heads."""

WITNESSES = [
    Witness(
        code="MHA013", summary=_TILING_SUMMARY, threshold_text=_TILING_THRESHOLD, func=run_tiling
    ),
    Witness(
        code="MHA904", summary=_TILING_SUMMARY, threshold_text=_TILING_THRESHOLD, func=run_tiling
    ),
    Witness(
        code="MHA014",
        summary=(
            "Calls SDPA with enable_gqa=True and the finding's query and KV head counts: "
            "the exact exception."
        ),
        threshold_text="""\
CONFIRMED when the call raises. Measured on torch 2.13 CPU (12 query heads over
5 KV heads, or 7 over 2): `RuntimeError: Number of heads in key and value must
divide the number of heads in` (torch's message ends there). SKIPPED when either
count is unknown.""",
        func=run_mha014,
    ),
]
