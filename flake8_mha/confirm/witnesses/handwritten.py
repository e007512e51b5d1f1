"""Hand-written attention witnesses: MHA012 (mask multiplied into the scores
before softmax) and MHA004's additive case (``evidence["sink"] ==
"scores-add"``: a bool or 0/1 mask added to the scores; ``run_mha004``
dispatches here).

Both rebuild softmax attention from seeded q, k, v, apply the mask the way
the finding says (added, subtracted, multiplied) and the same mask as -inf,
and measure the leak: how far the output of the queries that must not see
them moves when only the masked keys and values change (0 with -inf).
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

from . import Witness
from ._common import Params, catch, compare, fmt, result, verdict

SEED = 0
N, H, L, D = 2, 4, 6, 8
PADDED = 2  # sample 0's last two keys are padding
# A leak must move the output by more than float32 noise (~1e-7).
LEAK_THRESHOLD = 1e-3
_DTYPES = ("float32", "float16", "float64", "bfloat16", "int64", "int32", "int16", "int8", "uint8")


def _keep(causal: bool) -> Any:
    """The keep-mask (True = attend) broadcast to (N, H, L, L)."""
    import torch

    if causal:
        return torch.tril(torch.ones(L, L, dtype=torch.bool))[None, None]
    keep = torch.ones(N, L, dtype=torch.bool)
    keep[0, L - PADDED :] = False
    return keep[:, None, None, :]


def _as_code_has_it(keep: Any, p: Params) -> Tuple[Any, str]:
    """The mask in the finding's meaning, kind and dtype."""
    import torch

    mask = p.mask()
    meaning = mask.get("meaning")
    if meaning not in ("keep", "ignore"):
        p.note("mask meaning unknown: used a keep-mask (1 = attend)")
        meaning = "keep"
    m = keep if meaning == "keep" else ~keep
    kind = mask.get("kind")
    dtype = mask.get("dtype")
    if kind == "bool" and dtype in (None, "bool"):
        return m, f"bool {meaning}-mask"
    if dtype not in _DTYPES:
        dtype = "int64" if kind == "int" else "float32"
        p.note(f"mask dtype unknown: used {dtype}")
    return m.to(getattr(torch, dtype)), f"{dtype} 0/1 {meaning}-mask"


def _qkv() -> Tuple[Any, Any, Any]:
    import torch

    g = torch.Generator().manual_seed(SEED)
    return tuple(torch.randn(N, H, L, D, generator=g) for _ in range(3))


def _attend(q: Any, k: Any, v: Any, apply: Any) -> Any:
    import torch

    scores = q @ k.transpose(-2, -1) / D**0.5
    return torch.softmax(apply(scores), dim=-1) @ v


def _changed_where_masked(k: Any, v: Any, causal: bool) -> Tuple[Any, Any, Any]:
    """k and v changed only at masked keys, and which outputs must not move."""
    import torch

    g = torch.Generator().manual_seed(SEED + 1)
    k2, v2 = k.clone(), v.clone()
    if causal:  # the last key: hidden from every query but the last
        k2[..., L - 1, :] += 3 * torch.randn(k2[..., L - 1, :].shape, generator=g)
        v2[..., L - 1, :] += 3 * torch.randn(v2[..., L - 1, :].shape, generator=g)
        return k2, v2, (slice(None), slice(None), slice(0, L - 1))
    k2[0, :, L - PADDED :] += 3 * torch.randn(k2[0, :, L - PADDED :].shape, generator=g)
    v2[0, :, L - PADDED :] += 3 * torch.randn(v2[0, :, L - PADDED :].shape, generator=g)
    return k2, v2, (0,)


def _leak(p: Params, how: str) -> Dict[str, Any]:
    import torch

    causal = bool(p.mask().get("causal"))
    keep = _keep(causal)
    mask, made = _as_code_has_it(keep, p)
    op = how
    if how == "add" and p.evidence.get("op") == "sub":
        op = "sub"

    def as_written(scores: Any) -> Any:
        if op == "mul":
            return scores * mask
        return scores - mask if op == "sub" else scores + mask

    def as_inf(scores: Any) -> Any:
        return scores.masked_fill(~keep, float("-inf"))

    q, k, v = _qkv()
    k2, v2, watched = _changed_where_masked(k, v, causal)
    with torch.no_grad():
        out, error = catch(lambda: _attend(q, k, v, as_written))
        if error:
            return {"error": error, "made": made, "causal": causal, "op": op}
        moved = compare(out[watched], _attend(q, k2, v2, as_written)[watched])["max_error"]
        ref = _attend(q, k, v, as_inf)
        ref_moved = compare(ref[watched], _attend(q, k2, v2, as_inf)[watched])["max_error"]
        off = compare(ref, out)["max_error"]
    return {
        "moved": moved,
        "ref_moved": ref_moved,
        "off": off,
        "made": made,
        "causal": causal,
        "op": op,
    }


def _report(p: Params, got: Dict[str, Any], symbol: str) -> Dict[str, Any]:
    shape = (
        f"a causal tril({L}, {L})"
        if got["causal"]
        else f"a padding mask (sample 0's last {PADDED} keys masked)"
    )
    witness = (
        f"softmax(q @ k^T / sqrt(d) {symbol} mask) @ v on seeded q, k, v of shape "
        f"({N}, {H}, {L}, {D}) (seed {SEED}), mask = {shape} as a {got['made']}; "
        f"then only the masked keys and values are changed; the same with the mask "
        f"applied as masked_fill(-inf)"
    )
    if "error" in got:
        return result(
            verdict(True), witness, f"raised {got['error']}", {"exception": got["error"]}, p
        )
    measured = {
        "leak": got["moved"],
        "leak_with_inf": got["ref_moved"],
        "max_error_against_inf": got["off"],
    }
    damage = (
        f"the queries that must not see the masked keys move by {fmt(got['moved'])} "
        f"when only those keys change ({fmt(got['ref_moved'])} with -inf); output "
        f"{fmt(got['off'])} off the -inf masking"
    )
    return result(verdict(got["moved"] > LEAK_THRESHOLD), witness, damage, measured, p)


def run_mha012(evidence: Dict[str, Any]) -> Dict[str, Any]:
    p = Params(evidence)
    return _report(p, _leak(p, "mul"), "*")


def run_mha004_scores_add(evidence: Dict[str, Any]) -> Dict[str, Any]:
    p = Params(evidence)
    got = _leak(p, "add")
    return _report(p, got, "-" if got.get("op") == "sub" else "+")


THRESHOLD_TEXT = f"""\
CONFIRMED when the outputs of the queries that must not see the masked keys
move by more than {LEAK_THRESHOLD:g} (max abs) when only those keys and values
change, or the arithmetic raises. With the mask applied as -inf they move by 0.
"""

WITNESSES = [
    Witness(
        code="MHA012",
        summary=(
            "Multiplies seeded attention scores by the mask (in its own meaning and "
            "dtype) before softmax, changes only the masked keys and values, and "
            "measures how far the output moves; then the same with the mask as -inf."
        ),
        threshold_text=THRESHOLD_TEXT
        + """Measured on torch 2.13 CPU (N=2, H=4, L=6,
d=8, seed 0): float32 causal `tril(ones(L, L))` 1.593e+00, float32 or bool
padding keep-mask 2.050e+00; -inf masking 0. MHA004's additive case, same
set-up: a bool causal `tril` added 7.252e+00, a float32 same-segment keep-mask
added 8.174e+00; -inf masking 0.""",
        func=run_mha012,
    ),
]
