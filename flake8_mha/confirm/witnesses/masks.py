"""Mask witnesses: MHA002 (ignore-mask to SDPA), MHA003 (keep-mask as an
ignore-mask), MHA004 (numeric 0/1 mask), MHA009 (2-D padding mask to SDPA).

The two conventions (TORCH_FACTS item 2): nn.MultiheadAttention and the
Transformer layers read bool True as *ignore*; SDPA reads True as *attend*.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...core import torch_api
from . import Witness
from ._common import (
    DEC_LAYER,
    ENC_LAYER,
    ENCODER,
    FORWARD_ARGS,
    MHA,
    MODULE_KINDS,
    SDPA,
    Params,
    build,
    catch,
    compare,
    fmt,
    forward,
    forward_text,
    module_text,
    nan_samples,
    result,
    verdict,
)

# The seed article's mask experiment (exp3_masks.py): seed 0, the module is
# built first, then x of shape (2, 5, E); sample 0 has its last two keys padded.
SEED = 0
N, L = 2, 5
PAD_ROWS = ((False, False, False, True, True), (False, False, False, False, False))

# A wrong mask must move the output by more than float32 noise (~1e-7).
ERROR_THRESHOLD = 1e-3

SQUARE_SINKS = torch_api.ATTN_MASK_ARGS  # the (L, S) mask arguments
# Hand-written attention: the evidence names the function as the sink.
FILL_SINKS = ("masked_fill", "masked_fill_", "where")
# The module a sink belongs to when the evidence does not name one.
SINK_HOST = {
    "key_padding_mask": MHA,
    "attn_mask": MHA,
    "src_key_padding_mask": ENC_LAYER,
    "src_mask": ENC_LAYER,
    "mask": ENCODER,
    "tgt_key_padding_mask": DEC_LAYER,
    "memory_key_padding_mask": DEC_LAYER,
    "tgt_mask": DEC_LAYER,
    "memory_mask": DEC_LAYER,
}


# --------------------------------------------------------------- set-ups


def _params(evidence: Dict[str, Any]) -> Params:
    """The evidence reader; a mask whose meaning the analyzer read from a name
    alone (a parameter called key_padding_mask) is a fact the verdict rests on."""
    p = Params(evidence)
    mask = p.mask()
    if mask.get("by_name"):
        p.assume(
            "the mask's meaning comes from its name only"
            + (f" ({mask['source']})" if mask.get("source") else "")
        )
    return p


def _setup(e: int, h: int) -> Tuple[Any, Any]:
    """The seed recipe: torch.manual_seed(0), the module, then x."""
    import torch

    mha = build(MHA, e, h, seed=SEED, batch_first=True)
    x = torch.randn(N, L, e)
    return mha, x


def _pad() -> Any:
    """MHA-convention padding mask (True = ignore): sample 0 padded at the end,
    sample 1 without padding."""
    import torch

    return torch.tensor(PAD_ROWS)


def _triu() -> Any:
    """MHA-convention causal mask: True above the diagonal = ignore."""
    import torch

    return torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)


def _attention_on(mha: Any, x: Any, attend: Callable[[Any, Any, Any], Any]) -> Any:
    """The hand-written MHA of seed 000: mha's own projections split into
    heads, ``attend(q, k, v)``, heads merged, mha's out_proj."""
    import torch.nn.functional as F

    n, length, e = x.shape
    h = mha.num_heads
    q, k, v = (
        t.view(n, length, h, e // h).transpose(1, 2)
        for t in F.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)
    )
    return mha.out_proj(attend(q, k, v).transpose(1, 2).reshape(n, length, e))


def _sdpa_with(mha: Any, x: Any, attn_mask: Any) -> Any:
    """SDPA on mha's projections."""
    import torch.nn.functional as F

    return _attention_on(
        mha, x, lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
    )


def _manual(mha: Any, x: Any, mask: Any, keep_door: bool) -> Any:
    """Softmax attention on mha's projections, the scores going through
    ``torch.where(mask, scores, -inf)`` (keep door: True = attend) or
    ``scores.masked_fill(mask, -inf)`` (ignore door)."""
    import torch

    def attend(q: Any, k: Any, v: Any) -> Any:
        scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
        if keep_door:
            scores = torch.where(mask, scores, float("-inf"))
        else:
            scores = scores.masked_fill(mask, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v

    return _attention_on(mha, x, attend)


def _fill_text(sink: str, keep_door: bool) -> str:
    if keep_door:
        return "torch.where(mask, scores, -inf)"
    if sink == "where":
        return "torch.where(mask, -inf, scores)"
    return "scores.masked_fill(mask, -inf)"


def _shape(p: Params, sink: Optional[str]) -> str:
    shape = p.mask().get("shape")
    if shape in ("padding", "square", "broadcast"):
        return "square" if shape == "square" else "padding"
    if sink in SQUARE_SINKS:
        p.note("mask shape unknown: used a square causal mask (the usual mask for this argument)")
        return "square"
    p.note("mask shape unknown: used an (N, S) padding mask")
    return "padding"


def _target(p: Params, sink: Optional[str], shape: str) -> Tuple[str, str]:
    """The module and the forward argument that receive the mask."""
    raw = p.evidence.get("module")
    name = str(raw).rsplit(".", 1)[-1] if raw else None
    if name in MODULE_KINDS and sink in FORWARD_ARGS[name]:
        return name, sink
    host = SINK_HOST.get(sink or "", MHA)
    if sink in FORWARD_ARGS[host]:
        return host, sink
    arg = "key_padding_mask" if shape == "padding" else "attn_mask"
    p.note(f"sink {'unknown' if sink is None else repr(sink)}: used {host}'s {arg}")
    return host, arg


def _as_arg(mask: Any, arg: str, h: int) -> Any:
    """The mask shaped for the argument: an (N, S) padding mask given to an
    attention-mask argument becomes the (N*H, L, S) mask it takes."""
    if arg not in SQUARE_SINKS or mask.dim() != 2 or mask.shape[0] != N:
        return mask
    n, s = mask.shape
    return mask[:, None, None, :].expand(n, h, s, s).reshape(n * h, s, s)


def _nan_words(samples: List[int], rows: int) -> str:
    if samples:
        return f"sample(s) {samples} of {N} entirely NaN"
    if rows:
        return f"{rows} of {N * L} query rows NaN (every key masked there)"
    return "no NaN"


# ------------------------------------------------------------------ MHA002


def run_mha002(evidence: Dict[str, Any]) -> Dict[str, Any]:
    import torch

    p = _params(evidence)
    e, h = p.dims()
    sink = evidence.get("sink")
    shape = _shape(p, None)  # unknown: the seed's padding experiment
    mha, x = _setup(e, h)
    if shape == "padding":
        ignore = _pad()
        made = "MHA-convention padding mask pad (True = ignore; sample 0 padded, sample 1 not)"
        rows_words = (
            f"sample(s) {[i for i in range(N) if bool(ignore[i].logical_not().all())]} "
            "had every key masked"
        )
        module_kwargs = {"key_padding_mask": ignore}
        shaped = ignore[:, None, None, :]
    else:
        ignore = _triu()
        made = "MHA-convention causal mask triu(ones(L, L), 1).bool() (True = ignore)"
        rows_words = "the last query row had every key masked"
        module_kwargs = {"attn_mask": ignore}
        shaped = ignore
    if sink in FILL_SINKS:

        def attend(mask: Any) -> Any:
            return _manual(mha, x, mask, keep_door=True)

        where = (
            f"hand-written attention {_fill_text(sink, True)} on the projections of "
            f"{module_text(MHA, e, h, batch_first=True)}"
        )
        zero_rows = "softmax over all -inf gives NaN there"
    else:

        def attend(mask: Any) -> Any:
            return _sdpa_with(mha, x, mask)

        where = (
            f"F.scaled_dot_product_attention on the projections of "
            f"{module_text(MHA, e, h, batch_first=True)}"
        )
        zero_rows = "SDPA returns zeros for rows with every key masked"
    with torch.no_grad():
        reference = mha(x, x, x, **module_kwargs)[0]
        as_is, inverted = attend(shaped), attend(~shaped)
    wrong, right = compare(reference, as_is), compare(reference, inverted)
    measured = {
        "max_error": wrong["max_error"],
        "max_error_inverted": right["max_error"],
        "nan": wrong["nan"],
    }
    nan_words = f"NaN in the output ({zero_rows})" if wrong["nan"] else f"no NaN ({zero_rows})"
    damage = (
        f"max error {fmt(wrong['max_error'])} against nn.MultiheadAttention with the same "
        f"mask (inverted with ~: {fmt(right['max_error'])}); {rows_words}; {nan_words}"
    )
    witness = (
        f"{where} (seed {SEED}, x of shape ({N}, {L}, {e})), mask = the {made} as is, "
        f"vs ~mask, vs the module itself"
    )
    return result(
        verdict(wrong["max_error"] > ERROR_THRESHOLD or wrong["nan"]), witness, damage, measured, p
    )


# ------------------------------------------------------------------ MHA003


def run_mha003(evidence: Dict[str, Any]) -> Dict[str, Any]:
    import torch

    p = _params(evidence)
    sink = evidence.get("sink")
    e, h = p.dims()
    shape = _shape(p, sink)
    mha, x = _setup(e, h)
    pad, causal = _pad(), _triu()
    correct = pad if shape == "padding" else causal  # True = ignore
    keep = ~correct  # True = keep: what the code passes
    if shape == "padding":
        made = "keep-mask attention_mask.bool() (True = real token; sample 1 has no padding)"
    else:
        made = "keep-mask tril(ones(L, L)).bool() (True = may attend)"

    if sink in FILL_SINKS:
        fill_mask = (lambda m: m[:, None, None, :]) if shape == "padding" else (lambda m: m)
        with torch.no_grad():
            reference = _manual(mha, x, fill_mask(correct), keep_door=False)
            wrong = _manual(mha, x, fill_mask(keep), keep_door=False)
        where = (
            f"hand-written attention {_fill_text(sink, False)} before softmax on the "
            f"projections of {module_text(MHA, e, h)} (seed {SEED})"
        )
    else:
        host, arg = _target(p, sink, shape)
        if host != MHA:
            mha = build(host, e, h, seed=SEED, batch_first=True)
        if arg in SQUARE_SINKS and shape == "padding":
            correct, keep = _as_arg(correct, arg, h), _as_arg(keep, arg, h)
            made += f", expanded to ({N}*{h}, {L}, {L})"
        with torch.no_grad():
            reference = forward(host, mha, x, **{arg: correct})
            wrong = forward(host, mha, x, **{arg: keep})
        where = (
            f"{module_text(host, e, h, batch_first=True)} in eval (seed {SEED}), "
            f"{forward_text(host, **{arg: 'mask'})}"
        )
    diff = compare(reference, wrong)
    samples = nan_samples(wrong)
    rows = int(torch.isnan(wrong).all(dim=-1).sum())
    measured = {
        "max_error": diff["max_error"],
        "nan": diff["nan"],
        "nan_samples": samples,
        "nan_rows": rows,
    }
    if math.isnan(diff["max_error"]):
        error_words = "no finite output left to compare with the correct ignore-mask"
    else:
        error_words = (
            f"max error {fmt(diff['max_error'])} against the correct ignore-mask (finite positions)"
        )
    damage = f"{error_words}; {_nan_words(samples, rows)}"
    witness = f"{where}, x of shape ({N}, {L}, {e}), mask = the {made}, vs the inverted mask"
    return result(
        verdict(diff["max_error"] > ERROR_THRESHOLD or diff["nan"]), witness, damage, measured, p
    )


# ------------------------------------------------------------------ MHA004

_DTYPES = ("float32", "float16", "float64", "bfloat16", "int64", "int32", "int16", "int8", "uint8")


def _numeric_dtype(p: Params) -> str:
    mask = p.mask()
    kind = mask.get("kind")
    dtype = mask.get("dtype")
    if dtype in _DTYPES:
        return dtype
    if kind == "int":
        p.note("mask dtype unknown: used int64 (.long())")
        return "int64"
    if kind != "float01":
        p.note("mask kind unknown: used a float32 0/1 mask (.float())")
    else:
        p.note("mask dtype unknown: used float32 (.float())")
    return "float32"


def run_mha004(evidence: Dict[str, Any]) -> Dict[str, Any]:
    import torch

    if evidence.get("sink") == "scores-add":  # hand-written attention: scores + mask
        from .handwritten import run_mha004_scores_add

        return run_mha004_scores_add(evidence)
    p = Params(evidence)  # the numeric kind is the fact, not the meaning
    sink = evidence.get("sink")
    module = str(evidence.get("module") or "").rsplit(".", 1)[-1]
    e, h = p.dims()
    dtype_name = _numeric_dtype(p)
    dtype = getattr(torch, dtype_name)
    shape = _shape(p, sink)
    mha, x = _setup(e, h)

    legs: List[Tuple[str, Any, Any]] = []  # (label, call with numeric mask, call with bool)
    if module == SDPA:
        good = ~_pad()[:, None, None, :] if shape == "padding" else ~_triu()
        numeric = good.to(dtype)
        legs.append(("SDPA", lambda: _sdpa_with(mha, x, numeric), lambda: _sdpa_with(mha, x, good)))
        where = (
            f"F.scaled_dot_product_attention on the projections of {module_text(MHA, e, h)} "
            f"(seed {SEED}), attn_mask"
        )
        made = (
            "keep-mask (1 = attend) of shape (N, 1, 1, S)"
            if shape == "padding"
            else "tril(ones(L, L)) (1 = attend)"
        )
    else:
        host, arg = _target(p, sink, shape)
        good = _as_arg(_pad() if shape == "padding" else _triu(), arg, h)
        numeric = good.to(dtype)
        expanded = f", expanded to ({N}*{h}, {L}, {L})" if good.dim() == 3 else ""
        module_obj = mha if host == MHA else build(host, e, h, seed=SEED, batch_first=True)
        # Slow path (training mode, dropout 0) and inference (eval + no_grad,
        # where TransformerEncoderLayer's fastpath reads float masks as bool).
        for label, train in (("training mode", True), ("eval + no_grad", False)):

            def run_with(mask: Any, train: bool = train) -> Any:
                module_obj.train(train)
                with torch.set_grad_enabled(train):
                    return forward(host, module_obj, x, **{arg: mask}).detach()

            legs.append((label, lambda f=run_with: f(numeric), lambda f=run_with: f(good)))
        where = (
            f"{module_text(host, e, h, batch_first=True)} (seed {SEED}), "
            f"{forward_text(host, **{arg: 'mask'})}"
        )
        made = (
            "padding mask (1 = ignore)" + expanded
            if shape == "padding"
            else "triu(ones(L, L), 1) (1 = ignore)"
        )

    measured: Dict[str, Any] = {"dtype": dtype_name}
    words: List[str] = []
    worst = 0.0
    raised: Optional[str] = None
    for label, with_numeric, with_bool in legs:
        out, error = catch(with_numeric)
        if error:
            raised = raised or error
            measured[f"exception ({label})"] = error
            words.append(f"{label}: raised {error}")
            continue
        with torch.no_grad():
            diff = compare(with_bool(), out)
        worst = max(worst, diff["max_error"])
        measured[f"max_error ({label})"] = diff["max_error"]
        words.append(
            f"{label}: max error {fmt(diff['max_error'])} against the bool mask"
            + (", NaN" if diff["nan"] else "")
        )
    if raised:
        measured["exception"] = raised
    measured["max_error"] = worst
    witness = (
        f"{where} = a {dtype_name} 0/1 {made} vs the same mask as bool (in the "
        f"argument's own convention, so a wrong polarity, MHA002/MHA003, is not part "
        f"of this number); x of shape ({N}, {L}, {e})"
    )
    confirmed = bool(raised) or worst > ERROR_THRESHOLD
    return result(verdict(confirmed), witness, "; ".join(words), measured, p)


# ------------------------------------------------------------------ MHA009

MHA009_SILENT = (4, 4)  # N == L: the (N, S) mask broadcasts as (L, S) silently
MHA009_RAISES = (2, 3)  # N != L: a shape error


def _mha009_case(n: int, length: int, h: int, d: int, additive: bool) -> Tuple[Any, Any]:
    """(output with mask[:, None, None, :], call with the 2-D mask as is)."""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(SEED)
    q, k, v = (torch.randn(n, h, length, d) for _ in range(3))
    kept = torch.arange(length, length - n, -1).clamp(min=1)  # sample i keeps L - i keys
    mask = torch.arange(length)[None, :] < kept[:, None]
    if additive:  # 0 where kept, -inf elsewhere
        mask = torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))
    right = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None, None, :])
    return right, lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def run_mha009(evidence: Dict[str, Any]) -> Dict[str, Any]:
    import torch

    p = Params(evidence)  # the shape is the fact, not the meaning
    e, h = p.dims()
    d = e // h
    additive = p.mask().get("kind") == "additive" or p.mask().get("meaning") == "additive"
    with torch.no_grad():
        n, length = MHA009_SILENT
        right, wrong_call = _mha009_case(n, length, h, d, additive)
        silent = compare(right, wrong_call())
        n2, length2 = MHA009_RAISES
        _, raising_call = _mha009_case(n2, length2, h, d, additive)
        _, error = catch(raising_call)
    measured = {"max_error_L_equals_N": silent["max_error"], "exception_L_not_N": error}
    damage = (
        f"with L == N == {n}: runs silently, max error {fmt(silent['max_error'])} against "
        f"mask[:, None, None, :]; with N={n2}, L={length2}: "
        + (f"raised {error}" if error else "ran (no error)")
    )
    made = (
        "additive float mask (0 = keep, -inf = padding)"
        if additive
        else "bool keep-mask (True = attend)"
    )
    witness = (
        f"F.scaled_dot_product_attention(q, k, v, attn_mask=mask) with q, k, v of shape "
        f"(N, {h}, L, {d}) (seed {SEED}) and a 2-D (N, S) {made}, sample i keeping "
        f"its first L - i keys; once with L == N = {n}, once with N={n2}, L={length2}"
    )
    confirmed = silent["max_error"] > ERROR_THRESHOLD or error is not None
    return result(verdict(confirmed), witness, damage, measured, p)


WITNESSES = [
    Witness(
        code="MHA002",
        summary=(
            "Gives SDPA (or torch.where(mask, scores, -inf)) an MHA-convention mask "
            "(True = ignore) as is and inverted, on a seeded nn.MultiheadAttention's "
            "projections, and compares both with the module itself."
        ),
        threshold_text=f"""\
CONFIRMED when the as-is mask's output differs from the module's by more than
{ERROR_THRESHOLD:g} (max abs), or has NaN. Measured on torch 2.13 CPU (E=64, H=8,
N=2, L=5, seed 0; sample 0 padded at keys 3-4): padding mask as is 1.347e+00,
inverted 1.788e-07; sample 1 (no padding) gets every key masked and SDPA returns
zeros there (no NaN); through `torch.where(mask, scores, -inf)` the same 1.347e+00
and sample 1 all NaN. Causal `triu(..., 1).bool()` as is: 1.391e+00 (the last row
has every key masked).""",
        func=run_mha002,
    ),
    Witness(
        code="MHA003",
        summary=(
            "Gives a keep-mask (True = keep: a tokenizer attention_mask .bool(), tril) "
            "to an ignore-mask argument (the module's key_padding_mask/attn_mask, or "
            "masked_fill with -inf) and compares with the correct mask."
        ),
        threshold_text=f"""\
CONFIRMED when the output differs from the one with the correct ignore-mask by
more than {ERROR_THRESHOLD:g} (max abs over finite positions), or has NaN.
Measured on torch 2.13 CPU (E=64, H=8, N=2, L=5, seed 0):
`key_padding_mask=attention_mask.bool()` 1.347e+00 off for the padded sample and
the unpadded sample 1 all NaN (eval, train and need_weights=False alike);
`src_key_padding_mask` of `TransformerEncoderLayer` (fastpath) 1.180e+00 and
sample 1 all NaN; `masked_fill(keep, -inf)` 1.347e+00, sample 1 all NaN;
`attn_mask=tril(...).bool()` 1.391e+00 off, the last query row NaN.""",
        func=run_mha003,
    ),
    Witness(
        code="MHA004",
        summary=(
            "Passes the mask as a float 0/1 (or integer) tensor and as bool to the same "
            "argument: the max error between them, or the exact exception."
        ),
        threshold_text=f"""\
CONFIRMED when the numeric mask raises, or its output differs from the bool
mask's by more than {ERROR_THRESHOLD:g} (max abs). Measured on torch 2.13 CPU (E=64,
H=8, N=2, L=5, seed 0): float32 `key_padding_mask` 9.082e-01, float32
`triu(ones(L, L), 1)` as attn_mask 1.133e+00 (added to the logits: nothing
masked); SDPA: float keep-mask 3.147e-01, float `tril` 7.047e-01;
`TransformerEncoderLayer`: 8.044e-01 in training (added) but 0 on the eval
fastpath, which reads the float mask as bool; int64/int32/uint8:
`AssertionError: only bool and floating types of key_padding_mask are supported`
(`... of attn_mask ...`); float64/float16 to a module: `RuntimeError: Input
dtypes must be the same, got: input double, batch1: float, batch2: float`; any
integer or float64 mask to SDPA: `RuntimeError: Expected attn_mask dtype to be
bool or float or to match query dtype, ...`.""",
        func=run_mha004,
    ),
    Witness(
        code="MHA009",
        summary=(
            "Gives SDPA a 2-D (N, S) padding mask: silently wrong when L == N (max "
            "error against mask[:, None, None, :]), a shape error otherwise."
        ),
        threshold_text=f"""\
CONFIRMED when the L == N call differs from the (N, 1, 1, S) mask by more than
{ERROR_THRESHOLD:g} (max abs) or the L != N call raises. Measured on torch 2.13 CPU
(H=8, d=8, seed 0): L == N == 4: 3.586e+00, silently; N=2, L=3: `RuntimeError: The
size of tensor a (3) must match the size of tensor b (2) at non-singleton
dimension 2`.""",
        func=run_mha009,
    ),
]
