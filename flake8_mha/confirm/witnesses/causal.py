"""MHA005 (is_causal without its mask) and MHA006 (SDPA mask with is_causal)."""
from __future__ import annotations

from typing import Any, Dict

from . import Witness
from ._common import (
    DEC_LAYER, DECODER, ENC_LAYER, ENCODER, FORWARD_ARGS, MHA, TRANSFORMER, Params, build,
    catch, compare, fmt, forward, forward_text, module_text, result, verdict,
)

SEED = 0
N, L = 2, 6
# Silently non-causal output must differ from the causal reference by more
# than float32 noise.
ERROR_THRESHOLD = 1e-3
TRAINING_DROPOUT_P = 0.1  # MHA006's raising leg when the call's dropout_p is unknown or 0
NEED_MASK = "Need attn_mask if specifying the is_causal hint"

DEFAULT_FLAG = {MHA: "is_causal", ENC_LAYER: "is_causal", ENCODER: "is_causal",
                DEC_LAYER: "tgt_is_causal", DECODER: "tgt_is_causal",
                TRANSFORMER: "tgt_is_causal"}
MASK_FOR_FLAG = {
    (MHA, "is_causal"): "attn_mask", (ENC_LAYER, "is_causal"): "src_mask",
    (ENCODER, "is_causal"): "mask", "src_is_causal": "src_mask", "tgt_is_causal": "tgt_mask",
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
    measured: Dict[str, Any] = {"exception_training": train_error,
                                "exception_eval": eval_error}
    words = [f"training: raised {train_error}" if train_error else "training: ran (no error)"]
    eval_err = 0.0
    if silent is not None:
        eval_err = compare(causal, silent)["max_error"]
        same = compare(plain, silent)["max_error"]
        measured.update(max_error_eval=eval_err, diff_from_non_causal=same)
        words.append(f"eval + no_grad: ran silently, max error {fmt(eval_err)} against the "
                     f"causal reference (differs from the non-causal output by {fmt(same)})")
    else:
        words.append(f"eval + no_grad: raised {eval_error}")
    witness = (f"{module_text(kind, e, h, batch_first=batch_first)} (seed {SEED + 1}), "
               f"{forward_text(kind, **{flag: True})} without {mask_arg}, x of "
               f"{'(N, L, E)' if batch_first else '(L, N, E)'} with N={N}, L={L}; in training "
               f"mode, then in eval under no_grad against {mask_arg}=triu(ones(L, L), 1).bool()")
    confirmed = bool(train_error and NEED_MASK in train_error) or eval_err > ERROR_THRESHOLD
    return result(verdict(confirmed), witness, "; ".join(words), measured, p)


def run_mha006(evidence: Dict[str, Any]) -> Dict[str, Any]:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    p = Params(evidence)
    e, h = p.dims()
    d = e // h
    dropout_p = p.number("dropout_p", TRAINING_DROPOUT_P)
    if dropout_p <= 0:
        p.note(f"dropout_p={dropout_p:g} at the call: the raising leg used {TRAINING_DROPOUT_P} "
               "(as in training)")
        dropout_p = TRAINING_DROPOUT_P
    torch.manual_seed(SEED)
    q, k, v = (torch.randn(N, h, L, d) for _ in range(3))
    keep = torch.ones(N, L, dtype=torch.bool)
    keep[0, L - 2:] = False
    mask = keep[:, None, None, :]  # broadcast-ready padding mask (True = attend)
    tril = torch.tril(torch.ones(L, L, dtype=torch.bool))

    def sdpa(**kwargs: Any) -> Any:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **kwargs)

    with torch.no_grad():
        _, drop_error = catch(lambda: sdpa(is_causal=True, dropout_p=float(dropout_p)))
        both, default_error = catch(lambda: sdpa(is_causal=True))
        mask_only = sdpa()
        combined = F.scaled_dot_product_attention(q, k, v, attn_mask=mask & tril)
        with sdpa_kernel(SDPBackend.MATH):
            _, math_error = catch(lambda: sdpa(is_causal=True))
    measured: Dict[str, Any] = {"exception_dropout": drop_error,
                                "exception_math_kernel": math_error}
    words = [f"dropout_p={dropout_p}: raised {drop_error}" if drop_error
             else f"dropout_p={dropout_p}: ran"]
    silent = 0.0
    if both is not None:
        silent = compare(mask_only, both)["max_error"]
        measured.update(diff_vs_mask_only=silent,
                        diff_vs_combined=compare(combined, both)["max_error"])
        words.append(f"dropout_p=0, default kernel: ran silently with both masks applied "
                     f"(max diff {fmt(silent)} against mask only, "
                     f"{fmt(measured['diff_vs_combined'])} against mask & tril)")
    else:
        words.append(f"dropout_p=0, default kernel: raised {default_error}")
    words.append(f"math kernel: raised {math_error}" if math_error else "math kernel: ran")
    witness = (f"F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=True) with "
               f"q, k, v of shape ({N}, {h}, {L}, {d}) (seed {SEED}) and a (N, 1, 1, S) padding "
               f"mask; with dropout_p={dropout_p}, with dropout_p=0 on the default kernel and "
               f"on the math kernel")
    confirmed = drop_error is not None or silent > ERROR_THRESHOLD
    return result(verdict(confirmed), witness, "; ".join(words), measured, p)


WITNESSES = [
    Witness(
        code="MHA005",
        summary=("Calls the module with the is_causal hint and no mask: in training (raises) "
                 "and in eval under no_grad (the fastpath ignores the hint), against the "
                 "causal reference."),
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
        summary=("Calls SDPA with a padding mask and is_causal=True: with dropout (raises), "
                 "and with dropout 0 on the default kernel (both masks applied silently) and "
                 "the math kernel."),
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
