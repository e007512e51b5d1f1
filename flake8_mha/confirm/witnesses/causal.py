"""MHA005 (is_causal without its mask) and MHA006 (SDPA mask with is_causal)."""

from __future__ import annotations

import warnings
from typing import Any, Dict, List

from . import Witness
from ._common import (
    DEC_LAYER,
    DECODER,
    ENC_LAYER,
    ENCODER,
    FORWARD_ARGS,
    MHA,
    TRANSFORMER,
    Params,
    build,
    catch,
    compare,
    fmt,
    forward,
    forward_text,
    module_text,
    result,
    verdict,
)

SEED = 0
N, L = 2, 6
# Silently non-causal output must differ from the causal reference by more
# than float32 noise.
ERROR_THRESHOLD = 1e-3
TRAINING_DROPOUT_P = 0.1  # MHA006's raising leg when the call's dropout_p is unknown or 0
NEED_MASK = "Need attn_mask if specifying the is_causal hint"

DEFAULT_FLAG = {
    MHA: "is_causal",
    ENC_LAYER: "is_causal",
    ENCODER: "is_causal",
    DEC_LAYER: "tgt_is_causal",
    DECODER: "tgt_is_causal",
    TRANSFORMER: "tgt_is_causal",
}
MASK_FOR_FLAG = {
    (MHA, "is_causal"): "attn_mask",
    (ENC_LAYER, "is_causal"): "src_mask",
    (ENCODER, "is_causal"): "mask",
    "src_is_causal": "src_mask",
    "tgt_is_causal": "tgt_mask",
    "memory_is_causal": "memory_mask",
}


def _causal_mask() -> Any:
    import torch

    return torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)


def run_mha005(evidence: Dict[str, Any]) -> Dict[str, Any]:
    import torch

    p = Params(evidence)
    kind = p.module_kind()
    e, h = p.dims()
    flag = evidence.get("flag")
    if flag not in FORWARD_ARGS[kind]:
        if flag:
            p.note(f"{kind} has no argument {flag}: used {DEFAULT_FLAG[kind]}")
        else:
            p.note(f"flag unknown: used {DEFAULT_FLAG[kind]}")
        flag = DEFAULT_FLAG[kind]
    mask_arg = MASK_FOR_FLAG.get((kind, flag)) or MASK_FOR_FLAG[flag]
    if evidence.get("mask_arg") not in (None, mask_arg):
        p.note(f"mask_arg {evidence['mask_arg']!r} does not go with {flag}: used {mask_arg}")
    batch_first = evidence.get("batch_first")
    if batch_first is None:
        batch_first = True
        p.note("batch_first unknown: used True (the inference fastpath needs it)")
    torch.manual_seed(SEED)
    x = torch.randn(N, L, e) if batch_first else torch.randn(L, N, e)
    module = build(kind, e, h, seed=SEED + 1, batch_first=batch_first)

    module.train()
    _, train_error = catch(lambda: forward(kind, module, x, **{flag: True}))
    module.eval()
    with torch.no_grad():
        silent, eval_error = catch(lambda: forward(kind, module, x, **{flag: True}))
        causal = forward(kind, module, x, **{mask_arg: _causal_mask(), flag: True})
        plain = forward(kind, module, x)
    measured: Dict[str, Any] = {"exception_training": train_error, "exception_eval": eval_error}
    words = [f"training: raised {train_error}" if train_error else "training: ran (no error)"]
    eval_err = 0.0
    if silent is not None:
        eval_err = compare(causal, silent)["max_error"]
        same = compare(plain, silent)["max_error"]
        measured.update(max_error_eval=eval_err, diff_from_non_causal=same)
        words.append(
            f"eval + no_grad: ran silently, max error {fmt(eval_err)} against the "
            f"causal reference (differs from the non-causal output by {fmt(same)})"
        )
    else:
        words.append(f"eval + no_grad: raised {eval_error}")
    witness = (
        f"{module_text(kind, e, h, batch_first=batch_first)} (seed {SEED + 1}), "
        f"{forward_text(kind, **{flag: True})} without {mask_arg}, x of "
        f"{'(N, L, E)' if batch_first else '(L, N, E)'} with N={N}, L={L}; in training "
        f"mode, then in eval under no_grad against {mask_arg}=triu(ones(L, L), 1).bool()"
    )
    confirmed = bool(train_error and NEED_MASK in train_error) or eval_err > ERROR_THRESHOLD
    return result(verdict(confirmed), witness, "; ".join(words), measured, p)


def _mha006_mask(p: Params) -> str:
    """ "causal_triangle" or "padding": the mask the call passes, from the
    evidence; an unknown or mixed origin is assumed to be padding."""
    mask = p.mask()
    origin = mask.get("origin")
    if mask.get("by_name"):
        p.assume(f"the mask's meaning comes from its name only ({mask.get('source')})")
    if origin in ("causal_triangle", "padding"):
        return origin
    p.assume(
        f"mask origin {'unknown' if origin is None else repr(origin)}: used a "
        "(N, 1, 1, S) padding mask (True = attend)"
    )
    return "padding"


def _kernels_on_cpu() -> Dict[str, Any]:
    """The SDPA backends that run a plain call on this CPU, by name; None is
    torch's own choice."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q = torch.randn(1, 1, 4, 8)
    found: Dict[str, Any] = {"default": None}
    for name in ("MATH", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION"):
        backend = getattr(SDPBackend, name, None)
        if backend is None:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with sdpa_kernel(backend):
                _, error = catch(lambda: F.scaled_dot_product_attention(q, q, q))
        if error is None:
            found[name.lower()] = backend
    return found


def run_mha006(evidence: Dict[str, Any]) -> Dict[str, Any]:
    import contextlib

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel

    p = Params(evidence)
    e, h = p.dims()
    d = e // h
    origin = _mha006_mask(p)
    if evidence.get("is_causal") is not True:
        p.assume("is_causal may be True on this path: used True")
    known_p = evidence.get("dropout_p")
    if isinstance(known_p, (int, float)) and not isinstance(known_p, bool):
        dropouts = [float(known_p)]
    else:
        dropouts = [0.0, TRAINING_DROPOUT_P]
        p.note(f"dropout_p unknown: ran 0 and {TRAINING_DROPOUT_P}")
    torch.manual_seed(SEED)
    q, k, v = (torch.randn(N, h, L, d) for _ in range(3))
    tril = torch.tril(torch.ones(L, L, dtype=torch.bool))
    if origin == "causal_triangle":
        additive = p.mask().get("kind") == "additive"
        mask = torch.zeros(L, L).masked_fill(~tril, float("-inf")) if additive else tril
        made = (
            "generate_square_subsequent_mask(L) (0 / -inf)"
            if additive
            else "tril(ones(L, L)).bool(), the triangle is_causal applies"
        )
    else:
        keep = torch.ones(N, L, dtype=torch.bool)
        keep[0, L - 2 :] = False
        mask = keep[:, None, None, :]
        made = "(N, 1, 1, S) padding mask (True = attend; sample 0 padded)"
    # SDPA's contract: is_causal is for calls without a mask, so a call that
    # passes a mask means that mask; the triangle on top of it is the damage.
    mask_only = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    kernels_ = _kernels_on_cpu()
    measured: Dict[str, Any] = {"mask": origin, "kernels": sorted(kernels_)}
    words: List[str] = []
    harmful_default: Dict[float, bool] = {}
    for name, backend in kernels_.items():
        for dp in dropouts:

            def call() -> Any:
                ctx = sdpa_kernel(backend) if backend is not None else contextlib.nullcontext()
                with ctx, warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return F.scaled_dot_product_attention(
                        q, k, v, attn_mask=mask, is_causal=True, dropout_p=dp
                    )

            with torch.no_grad():
                out, error = catch(call)
            label = f"{name}, dropout_p={dp:g}"
            if error is not None:
                outcome, harmful = f"raised {error}", "attn_mask should not be set" in error
                if not harmful:
                    outcome += " (this kernel does not run this call at all)"
            elif dp > 0:
                outcome, harmful = "ran (random output: not compared)", False
            else:
                err = compare(mask_only, out)["max_error"]
                harmful = err > ERROR_THRESHOLD
                outcome = f"ran, {fmt(err)} from the mask alone" + (
                    " (both masks applied)" if harmful else ""
                )
            measured[label] = error if error is not None else "ran"
            words.append(f"{label}: {outcome}")
            if name == "default":
                harmful_default[dp] = harmful
    confirmed = any(harmful_default.values())
    if confirmed and not all(harmful_default.values()):
        shown = ", ".join(f"{dp:g}" for dp, bad in harmful_default.items() if bad)
        p.assume(f"the damage shows only with dropout_p={shown}, and dropout_p is unknown")
    if not confirmed:
        words.insert(
            0,
            "harmless on the kernel torch picks"
            + (
                ": the mask is the very triangle is_causal applies"
                if origin == "causal_triangle"
                else ""
            )
            + "; a kernel forced with sdpa_kernel is reported, not judged",
        )
    witness = (
        f"F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=True), q, "
        f"k, v of shape ({N}, {h}, {L}, {d}) (seed {SEED}), mask = {made}; torch's own "
        f"kernel choice and each SDPA kernel that runs on this CPU, against the mask "
        f"alone"
    )
    return result(verdict(confirmed), witness, "; ".join(words), measured, p)


WITNESSES = [
    Witness(
        code="MHA005",
        summary=(
            "Calls the module with the is_causal hint and no mask: in training (raises) "
            "and in eval under no_grad (the fastpath ignores the hint), against the "
            "causal reference."
        ),
        threshold_text=f"""\
CONFIRMED when training raises `RuntimeError: {NEED_MASK}. You may use the
Transformer module method `generate_square_subsequent_mask` to create this
mask.`, or the eval output differs from the causal reference by more than
{ERROR_THRESHOLD:g} (max abs). Measured on torch 2.13 CPU (E=64, H=8, N=2, L=6,
batch_first=True): every module raises in training; in eval the output is exactly
the non-causal one, off from causal by 1.308e+00 (MultiheadAttention),
9.570e-01 (TransformerEncoderLayer), 1.768e+00 (TransformerEncoder, 2 layers),
9.661e-01 (TransformerDecoderLayer, `tgt_is_causal`), 1.562e+00
(TransformerDecoder), 1.688e+00 (nn.Transformer, `tgt_is_causal`);
`memory_is_causal` raises in eval too (cross-attention is never on the
fastpath).""",
        func=run_mha005,
    ),
    Witness(
        code="MHA006",
        summary=(
            "Calls SDPA with a padding mask and is_causal=True: with dropout (raises), "
            "and with dropout 0 on the default kernel (both masks applied silently) and "
            "the math kernel."
        ),
        threshold_text=f"""\
CONFIRMED when the dropout call raises, or the default-kernel call differs from
the mask-only call by more than {ERROR_THRESHOLD:g} (max abs). Measured on torch 2.13 CPU
(N=2, H=8, L=6, d=8, seed 0): with dropout_p=0.1 and on the math kernel:
`RuntimeError: _scaled_dot_product_attention: Explicit attn_mask should not be set
when is_causal=True`; dropout_p=0 on the default kernel runs and applies both:
2.834e+00 from mask-only, 0 from `mask & tril`.""",
        func=run_mha006,
    ),
]
