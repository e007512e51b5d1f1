"""Helpers shared by the witnesses.

Nothing here imports torch at module import time: the functions that need it
import it when called (inside the worker process).
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from ...core import torch_api
from . import CONFIRMED, CONFIRMED_ASSUMED, NOT_REPRODUCED, SKIPPED

# The module kinds and SDPA, named as torch_api (the one description of
# torch's API) names them.
MHA = torch_api.MULTIHEAD_ATTENTION.name
ENC_LAYER = torch_api.TRANSFORMER_ENCODER_LAYER.name
DEC_LAYER = torch_api.TRANSFORMER_DECODER_LAYER.name
ENCODER = torch_api.TRANSFORMER_ENCODER.name
DECODER = torch_api.TRANSFORMER_DECODER.name
TRANSFORMER = torch_api.TRANSFORMER.name
SDPA = torch_api.SDPA_NAME
MODULE_KINDS = torch_api.MODULE_NAMES

# Safe defaults when the call site's values are unknown (the seed articles' sizes).
DEFAULT_E = 64
DEFAULT_H = 8
# Correctness witnesses do not depend on width: a wider call site is run at
# this width at most, to stay fast.
MAX_E = 512

# Ops that show the inference fastpath ran (torch.profiler key names).
FASTPATH_OPS = ("aten::_transformer_encoder_layer_fwd", "aten::_native_multi_head_attention")


class Params:
    """Reads evidence, remembering each fact it had to assume.

    ``assumed`` lists every one; ``depends`` those the verdict depends on
    (``assume``, or ``note(..., material=True)``): a CONFIRMED that rests on
    one of them is reported CONFIRMED* (docs/confirm.md). A plain ``note`` is
    a choice that does not change the verdict (a width run smaller to stay
    fast, a default for a value the damage does not depend on)."""

    def __init__(self, evidence: Dict[str, Any]):
        self.evidence = evidence
        self.assumed: List[str] = []
        self.depends: List[str] = []

    def get(self, key: str, default: Any) -> Any:
        """The evidence's value, or the default; an assumption the verdict
        depends on."""
        value = self.evidence.get(key)
        if value is None:
            self.assume(f"{key} unknown: used {default!r}")
            return default
        return value

    def number(self, key: str, default: float) -> float:
        """A float from the evidence, or the default (an assumption the verdict
        depends on) when unknown."""
        value = self.evidence.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        self.assume(f"{key} {'unknown' if value is None else repr(value)}: used {default}")
        return default

    def note(self, text: str, material: bool = False) -> None:
        self.assumed.append(text)
        if material:
            self.depends.append(text)

    def assume(self, text: str) -> None:
        """An assumed fact the verdict depends on."""
        self.note(text, material=True)

    def mask(self) -> Dict[str, Any]:
        mask = self.evidence.get("mask")
        return mask if isinstance(mask, dict) else {}

    def module_kind(self, default: str = MHA, allowed: Sequence[str] = MODULE_KINDS) -> str:
        raw = self.evidence.get("module")
        name = str(raw).rsplit(".", 1)[-1] if raw else None
        if name in allowed:
            return name
        if raw:
            self.note(f"module {raw!r} has no witness form here: used {default}")
        else:
            self.note(f"module unknown: used {default}")
        return default

    def dims(
        self, default_e: int = DEFAULT_E, default_h: int = DEFAULT_H, max_e: int = MAX_E
    ) -> Tuple[int, int]:
        """embed_dim and num_heads of the call site, or safe defaults."""
        e, h = self.evidence.get("embed_dim"), self.evidence.get("num_heads")
        if _is_int(h) and h > 0 and not _is_int(e):
            # Keep the known head count (a witness once ran 8 heads for 10).
            e = h * max(1, default_e // default_h)
            self.note(f"embed_dim unknown: used {e} ({h} heads of {e // h})")
        elif _is_int(e) and e > 0 and not _is_int(h):
            h = next(c for c in (default_h, 4, 2, 1) if e % c == 0)
            self.note(f"num_heads unknown: used {h}")
        if not _is_int(e) or not _is_int(h):
            missing = [k for k, v in (("embed_dim", e), ("num_heads", h)) if not _is_int(v)]
            self.note(
                f"{' and '.join(missing)} unknown: used embed_dim={default_e}, "
                f"num_heads={default_h}"
            )
            return default_e, default_h
        if h <= 0 or e <= 0 or e % h:
            self.note(
                f"embed_dim={e}, num_heads={h} cannot be built (MHA008's finding): "
                f"used embed_dim={default_e}, num_heads={default_h}"
            )
            return default_e, default_h
        if e > max_e:
            head_dim = e // h
            if h * 8 <= max_e:
                e2 = h * min(head_dim, max_e // h)
                self.note(f"embed_dim={e} run at {e2} (same {h} heads) to stay small")
                return e2, h
            self.note(
                f"embed_dim={e}, num_heads={h} too large for a quick witness: "
                f"used embed_dim={default_e}, num_heads={default_h}"
            )
            return default_e, default_h
        return int(e), int(h)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def result(
    verdict: str,
    witness: str,
    damage: str,
    measured: Optional[Dict[str, Any]] = None,
    params: Optional[Params] = None,
    reason: Optional[str] = None,
) -> Dict[str, Any]:
    depends = list(params.depends) if params else []
    if verdict == CONFIRMED and depends:
        verdict = CONFIRMED_ASSUMED
    out: Dict[str, Any] = {
        "verdict": verdict,
        "witness": witness,
        "damage": damage,
        "measured": dict(measured or {}),
        "assumed": list(params.assumed) if params else [],
        "depends_on": depends if verdict == CONFIRMED_ASSUMED else [],
    }
    if reason:
        out["reason"] = reason
    return out


def skipped(reason: str, witness: str = "", params: Optional[Params] = None) -> Dict[str, Any]:
    return result(SKIPPED, witness, "", params=params, reason=reason)


def verdict(confirmed: bool) -> str:
    return CONFIRMED if confirmed else NOT_REPRODUCED


def fmt(value: float) -> str:
    """A measured number the way the seed articles print it: 4.804e-01."""
    if value is None:
        return "n/a"
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return f"{value:.3e}"


def exc_text(exc: BaseException) -> str:
    """``Type: message`` with the message's first line (torch appends C++ context)."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")


def catch(fn: Callable[[], Any]) -> Tuple[Any, Optional[str]]:
    """Run ``fn``; return (value, None) or (None, "Type: message")."""
    try:
        return fn(), None
    except Exception as exc:  # the witness reports it: that is the point
        return None, exc_text(exc)


# ---------------------------------------------------------------- torch side


def compare(reference: Any, output: Any) -> Dict[str, Any]:
    """Max abs error over positions where both are finite, and NaN facts."""
    import torch

    diff = (reference - output).abs()
    finite = torch.isfinite(diff)
    max_err = diff[finite].max().item() if bool(finite.any()) else float("nan")
    return {"max_error": max_err, "nan": bool(torch.isnan(output).any())}


def nan_samples(output: Any, batch_dim: int = 0) -> List[int]:
    """Indices of samples whose output is entirely NaN."""
    import torch

    out = output.movedim(batch_dim, 0)
    return [i for i in range(out.shape[0]) if bool(torch.isnan(out[i]).all())]


def module_text(kind: str, e: int, h: int, **kwargs: Any) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    sep = ", " if args else ""
    if kind == MHA:
        return f"nn.MultiheadAttention({e}, {h}{sep}{args})"
    if kind in (ENCODER, DECODER):
        layer = ENC_LAYER if kind == ENCODER else DEC_LAYER
        return f"nn.{kind}(nn.{layer}({e}, {h}{sep}{args}), num_layers=2)"
    return f"nn.{kind}({e}, {h}{sep}{args})"


def build(kind: str, e: int, h: int, *, seed: int, batch_first: bool = True, **kwargs: Any) -> Any:
    """The module kind at width e with h heads, dropout 0, eval mode, seeded.

    Feed-forward width 2*e and 2 layers for the stacks keep it small; extra
    keywords (bias=False, add_bias_kv=True, ...) go to the constructor of
    the module, or of the layer for the stacks."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    common = dict(dropout=0.0, batch_first=batch_first, **kwargs)
    if kind == MHA:
        return nn.MultiheadAttention(e, h, **common).eval()
    if kind == TRANSFORMER:
        return nn.Transformer(
            e, h, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=2 * e, **common
        ).eval()
    layer_kind = {ENCODER: ENC_LAYER, DECODER: DEC_LAYER}.get(kind, kind)
    if layer_kind not in (ENC_LAYER, DEC_LAYER):
        raise ValueError(f"no module kind {kind!r}")
    layer = getattr(nn, layer_kind)(e, h, dim_feedforward=2 * e, **common)
    if kind == layer_kind:
        return layer.eval()
    return getattr(nn, kind)(layer, num_layers=2).eval()


# Forward arguments of each kind beyond its input tensors (the witnesses
# feed one input x for self-attention; the decoders and nn.Transformer get x
# as both target and memory/source).
FORWARD_ARGS = {kind: torch_api.forward_options(torch_api.BY_NAME[kind]) for kind in MODULE_KINDS}


def forward(kind: str, module: Any, x: Any, **kwargs: Any) -> Any:
    """Call the module on x the way a user's self-attention call would; the
    output tensor (MHA's weights are dropped)."""
    if kind == MHA:
        return module(x, x, x, **kwargs)[0]
    if kind in (ENC_LAYER, ENCODER):
        return module(x, **kwargs)
    return module(x, x, **kwargs)  # decoders: (tgt, memory); Transformer: (src, tgt)


def forward_text(kind: str, **kwargs: Any) -> str:
    args = "".join(f", {k}={v}" for k, v in kwargs.items())
    if kind == MHA:
        return f"m(x, x, x{args})"
    if kind in (ENC_LAYER, ENCODER):
        return f"m(x{args})"
    return f"m(x, x{args})"


def kernels(fn: Callable[[], Any]) -> List[str]:
    """aten op names that ran in ``fn`` (torch.profiler, CPU)."""
    import torch

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    return sorted({event.key for event in prof.key_averages()})


def path_name(ops: Iterable[str]) -> str:
    """Which attention path the op names show, in words."""
    ops = set(ops)
    if "aten::_transformer_encoder_layer_fwd" in ops:
        return "fastpath (aten::_transformer_encoder_layer_fwd)"
    if "aten::_native_multi_head_attention" in ops:
        return "fastpath (aten::_native_multi_head_attention)"
    if "aten::scaled_dot_product_attention" in ops:
        fused = sorted(o for o in ops if o.startswith("aten::_scaled_dot_product"))
        return "SDPA path (" + (fused[0] if fused else "aten::scaled_dot_product_attention") + ")"
    if "aten::softmax" in ops or "aten::_softmax" in ops:
        return "math path (bmm + aten::softmax)"
    return "unknown path"


def took_fastpath(ops: Iterable[str]) -> bool:
    return any(op in FASTPATH_OPS for op in ops)


def interleaved_medians(fns: Sequence[Callable[[], Any]], reps: int) -> List[float]:
    """Median seconds of each function, runs interleaved (a, b, a, b, ...)
    after one warm-up each, so drift in machine load hits all alike."""
    for fn in fns:
        fn()
    times: List[List[float]] = [[] for _ in fns]
    for _ in range(reps):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]
