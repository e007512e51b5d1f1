"""Masks applied where attention does not read them as masks: MHA015 (a
padding mask on the keys and values instead of the scores) and MHA016 (a
per-sample mask expanded to the 3-D ``attn_mask`` head-major).

MHA015 rebuilds attention with the keys and values the finding names
multiplied by the keep-mask, and compares it with the same keys and values
unmasked and the scores masked with -inf; it also measures the share of the
attention weight left on the masked keys.  MHA016 gives
``nn.MultiheadAttention`` per-sample padding masks expanded with
``repeat(num_heads, 1, 1)`` and compares with the same masks as
``key_padding_mask``.
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

from . import Witness
from ._common import MHA, SDPA, Params, compare, fmt, result, verdict

SEED = 0
# MHA015: B=2, 4 heads, L=6 queries, S=10 keys, d=8,
# sample 0 with its last 6 keys padded
N, H, L, S, D = 2, 4, 6, 10, 8
PADDED = 6
# A difference must exceed float32 noise (~1e-7) by far.
DIFF_THRESHOLD = 1e-3


def _keep() -> Any:
    import torch

    keep = torch.ones(N, S, dtype=torch.bool)
    keep[0, S - PADDED :] = False
    return keep


def _sdpa_case(masked: Tuple[str, ...]) -> Dict[str, Any]:
    import torch
    import torch.nn.functional as F

    g = torch.Generator().manual_seed(SEED)
    q = torch.randn(N, H, L, D, generator=g)
    k = torch.randn(N, H, S, D, generator=g)
    v = torch.randn(N, H, S, D, generator=g)
    keep = _keep()
    m = keep[:, None, :, None].to(q.dtype)  # (N, 1, S, 1)
    k2 = k * m if "keys" in masked else k
    v2 = v * m if "values" in masked else v
    with torch.no_grad():
        out = F.scaled_dot_product_attention(q, k2, v2)
        ref = F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])
        weights = torch.softmax(q @ k2.transpose(-2, -1) / D**0.5, dim=-1)
    share = weights[0, :, :, S - PADDED :].sum(-1).mean().item()
    return {"off": compare(ref, out)["max_error"], "share": share}


def _module_case(masked: Tuple[str, ...]) -> Dict[str, Any]:
    import torch
    import torch.nn as nn

    torch.manual_seed(SEED)
    e = 16
    mha = nn.MultiheadAttention(e, H, batch_first=True).eval()
    g = torch.Generator().manual_seed(SEED)
    x = torch.randn(N, S, e, generator=g)
    keep = _keep()
    m = keep[:, :, None].to(x.dtype)
    k = x * m if "keys" in masked else x
    v = x * m if "values" in masked else x
    with torch.no_grad():
        out, w = mha(x, k, v, need_weights=True)
        ref, _ = mha(x, x, x, key_padding_mask=~keep, need_weights=False)
    share = w[0, :, S - PADDED :].sum(-1).mean().item()
    return {"off": compare(ref, out)["max_error"], "share": share}


def run_mha015(evidence: Dict[str, Any]) -> Dict[str, Any]:
    p = Params(evidence)
    raw = evidence.get("masked")
    masked = tuple(w for w in (raw or ()) if w in ("keys", "values"))
    if not masked:
        p.assume("which of keys and values is masked unknown: used both")
        masked = ("keys", "values")
    mask = p.mask()
    if mask.get("meaning") not in ("keep", "ignore"):
        p.assume("the mask is known by its name only: used a padding keep-mask (1 = real key)")
    sink = evidence.get("sink")
    module = sink == MHA
    got = _module_case(masked) if module else _sdpa_case(masked)
    what = " and ".join(masked)
    if module:
        witness = (
            f"nn.MultiheadAttention(16, {H}, batch_first=True) on seeded x of shape "
            f"({N}, {S}, 16) (seed {SEED}), sample 0's last {PADDED} of {S} positions "
            f"padding; the {what} multiplied by the keep-mask, against the same call "
            f"with key_padding_mask"
        )
    else:
        witness = (
            f"{SDPA} on seeded q ({N}, {H}, {L}, {D}), k and v ({N}, {H}, {S}, {D}) "
            f"(seed {SEED}), sample 0's last {PADDED} of {S} keys padding; the {what} "
            f"multiplied by the keep-mask (N, 1, S, 1), against the scores masked with "
            f"-inf (attn_mask=keep[:, None, None, :])"
        )
    damage = (
        f"output {fmt(got['off'])} off the -inf masking; {got['share']:.0%} of sample "
        f"0's attention weight on its {PADDED} masked keys"
    )
    measured = {"max_error_against_inf": got["off"], "weight_on_masked_keys": got["share"]}
    return result(verdict(got["off"] > DIFF_THRESHOLD), witness, damage, measured, p)


# MHA016: N=3 samples, L=S=5, E=16, 4 heads, each sample its own padding
N16, L16, E16, H16 = 3, 5, 16, 4
_PADDED16 = (2, 4, 1)  # padded keys at the end of samples 0, 1, 2


def run_mha016(evidence: Dict[str, Any]) -> Dict[str, Any]:
    import torch
    import torch.nn as nn

    p = Params(evidence)
    if not evidence.get("per_sample"):
        p.assume("the code does not show that the mask differs per sample: used padding masks")
    torch.manual_seed(SEED)
    mha = nn.MultiheadAttention(E16, H16, batch_first=True).eval()
    x = torch.randn(N16, L16, E16)
    pad = torch.zeros(N16, L16, dtype=torch.bool)
    for n, padded in enumerate(_PADDED16):
        pad[n, L16 - padded :] = True
    mask = pad[:, None, :].expand(N16, L16, L16)
    via = evidence.get("via") or "repeat"
    if via == "cat":
        head_major = torch.cat([mask] * H16)
    elif via == "tile":
        head_major = torch.tile(mask, (H16, 1, 1))
    else:
        head_major = mask.repeat(H16, 1, 1)
    with torch.no_grad():
        ref = mha(x, x, x, key_padding_mask=pad, need_weights=False)[0]
        out = mha(x, x, x, attn_mask=head_major, need_weights=False)[0]
        grouped = mha(x, x, x, attn_mask=mask.repeat_interleave(H16, dim=0), need_weights=False)[0]
    off = compare(ref, out)["max_error"]
    right = compare(ref, grouped)["max_error"]
    witness = (
        f"nn.MultiheadAttention({E16}, {H16}, batch_first=True) on seeded x ({N16}, {L16}, "
        f"{E16}) (seed {SEED}), per-sample padding masks (N, L, S) expanded to "
        f"(N * {H16}, L, S) head-major as the code does ({via}), against the same "
        f"masks as key_padding_mask"
    )
    damage = (
        f"output {fmt(off)} off key_padding_mask; grouped batch-major "
        f"(repeat_interleave) {fmt(right)}"
    )
    measured = {"max_error": off, "max_error_batch_major": right}
    return result(verdict(off > DIFF_THRESHOLD), witness, damage, measured, p)


WITNESSES = [
    Witness(
        code="MHA016",
        summary=(
            "Gives nn.MultiheadAttention per-sample padding masks expanded head-major to "
            "its 3-D attn_mask (as the finding's code does) and compares with the same "
            "masks as key_padding_mask."
        ),
        threshold_text=f"""\
CONFIRMED when the output differs from key_padding_mask by more than
{DIFF_THRESHOLD:g} (max abs). Measured on torch 2.13 CPU (N=3, L=S=5, E=16,
4 heads, seed 0): head-major `repeat(4, 1, 1)` 5.657e-01 off; batch-major
`repeat_interleave(4, dim=0)` 0.""",
        func=run_mha016,
    ),
    Witness(
        code="MHA015",
        summary=(
            "Multiplies seeded keys and values (those the finding names) by a padding "
            "keep-mask instead of masking the scores, and compares with the scores "
            "masked with -inf; reports the share of weight left on the masked keys."
        ),
        threshold_text=f"""\
CONFIRMED when the output differs from the -inf masking by more than
{DIFF_THRESHOLD:g} (max abs). Measured on torch 2.13 CPU (SDPA, N=2, 4 heads,
L=6, S=10, d=8, seed 0, 6 keys of sample 0 padded): keys and values masked
9.924e-01 off, 52% of the weight on the masked keys; keys only 1.433e+00;
values only 1.178e+00 (60% of the weight on them). nn.MultiheadAttention
(E=16, same padding), keys and values masked: 3.114e-01 off, 56%. With the
scores masked with -inf: 0.""",
        func=run_mha015,
    ),
]
