"""Performance witnesses: MHA101 (odd head count), MHA102 (weights computed
and thrown away), MHA901 (fastpath blockers).

Each builds the module with the settings the evidence holds (batch_first,
bias, add_bias_kv, add_zero_attn, kdim/vdim): a setting that already keeps
the fastpath off makes MHA101 and MHA901 moot, and the profiler shows it.

Times come from :func:`stable_ratio`: the two calls run in interleaved pairs
(a b, b a, a b, ...) until the interquartile range of the per-pair ratios is
narrow or a time budget is spent; the verdict needs the whole range on one
side of the threshold, and a range across it is INCONCLUSIVE (docs/confirm.md).
The fastpath codes are CONFIRMED by the profiler (which kernel ran), not by
the time: on this CPU the fastpath is *slower* than the SDPA path
(TORCH_FACTS, "Speed"; item 17), and the report says so.
"""

from __future__ import annotations

import ast
import math
import statistics
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...core import torch_api
from . import CONFIRMED, INCONCLUSIVE, NOT_REPRODUCED, Witness
from ._common import (
    MHA,
    MODULE_KINDS,
    Params,
    build,
    forward,
    kernels,
    path_name,
    result,
    skipped,
    took_fastpath,
    verdict,
)

SEED = 0
N = 2
INFO_LENGTH = 256
PROFILE_LENGTH = 16  # the kernel choice does not depend on the length: profile a short call
# need_weights=True must cost at least this much more than False (the whole
# interquartile range of the per-pair ratios) to confirm MHA102; measured
# 1.4-2.8x at the sizes below.
WEIGHTS_RATIO_THRESHOLD = 1.2
# MHA101's time is information: "slower" when the whole range is above this,
# "faster" when it is all below 1/this, else "no clear difference".
ODD_TIME_MARGIN = 1.1
MAX_WIDTH = 1024
# stable_ratio: at least MIN_PAIRS pairs, stop when the interquartile range is
# within SPREAD_TARGET of the median, or after MAX_PAIRS pairs / the budget.
MIN_PAIRS = 9
MAX_PAIRS = 61
SPREAD_TARGET = 0.10
RATIO_BUDGET = 6.0  # seconds per ratio
SAMPLE_SECONDS = 0.03  # each side of a pair lasts at least this long


def _length(e: int) -> int:
    """MHA102's sequence length: long enough that the L x L weights dominate."""
    return 512 if e <= 512 else 256


def _heads(n: int) -> str:
    return f"{n} head" + ("" if n == 1 else "s")


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def _inputs(e: int, length: int, batch_first: bool = True) -> Any:
    import torch

    torch.manual_seed(SEED)
    x = torch.randn(N, length, e)
    return x if batch_first else x.transpose(0, 1).contiguous()


def _quartiles(values: List[float]) -> Tuple[float, float, float]:
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def _timed(fn: Callable[[], Any], inner: int) -> float:
    t0 = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - t0) / inner


def stable_ratio(
    fa: Callable[[], Any],
    fb: Callable[[], Any],
    *,
    budget: float = RATIO_BUDGET,
    min_pairs: int = MIN_PAIRS,
    max_pairs: int = MAX_PAIRS,
    target: float = SPREAD_TARGET,
) -> Dict[str, Any]:
    """time(fa) / time(fb) from interleaved pairs, alternating which runs
    first, until the interquartile range of the per-pair ratios is within
    ``target`` of their median (after ``min_pairs``) or ``max_pairs`` /
    ``budget`` seconds are spent. Each side of a pair repeats its call so it
    lasts about SAMPLE_SECONDS (a scheduler hiccup is then a small part of
    it). Returns the median, the range (``low``, ``high``: first and third
    quartile), the pairs run and the median time of one call of each."""
    first = min(_timed(fa, 1), _timed(fb, 1), _timed(fa, 1), _timed(fb, 1))  # warm-up
    inner = max(1, min(50, math.ceil(SAMPLE_SECONDS / max(first, 1e-6))))
    ratios: List[float] = []
    ta_all: List[float] = []
    tb_all: List[float] = []
    start = time.perf_counter()
    while len(ratios) < max_pairs:
        took = [0.0, 0.0]
        for i in (0, 1) if len(ratios) % 2 == 0 else (1, 0):
            took[i] = _timed(fa if i == 0 else fb, inner)
        ta_all.append(took[0])
        tb_all.append(took[1])
        ratios.append(took[0] / took[1] if took[1] > 0 else float("inf"))
        if len(ratios) >= min_pairs:
            low, mid, high = _quartiles(ratios)
            if (high - low) <= target * mid or time.perf_counter() - start > budget:
                break
    low, mid, high = _quartiles(ratios)
    return {
        "median": mid,
        "low": low,
        "high": high,
        "pairs": len(ratios),
        "inner": inner,
        "ms_a": statistics.median(ta_all) * 1e3,
        "ms_b": statistics.median(tb_all) * 1e3,
    }


def judge(stats: Dict[str, Any], threshold: float) -> str:
    """ "above" when the whole range clears the threshold, "below" when all of
    it is under, "straddles" otherwise."""
    if stats["low"] >= threshold:
        return "above"
    if stats["high"] < threshold:
        return "below"
    return "straddles"


def ratio_text(stats: Dict[str, Any]) -> str:
    return (
        f"{stats['median']:.2f}x [{stats['low']:.2f}-{stats['high']:.2f}, {stats['pairs']} pairs]"
    )


# ---------------------------------------------------------- the code's facts

# The constructor settings that can keep the fastpath off, per module kind
# (the Transformer layers and stacks take only these two of them).
FASTPATH_KEYS = {MHA: ("batch_first", "bias", "add_bias_kv", "add_zero_attn", "kdim", "vdim")}
LAYER_KEYS = ("batch_first", "bias")
DEFAULTS = {"batch_first": True, "bias": True, "add_bias_kv": False, "add_zero_attn": False}
OFF_VALUE = {"batch_first": False, **torch_api.FASTPATH_BLOCKERS}


def module_facts(
    p: Params,
    kind: str,
    e: int,
    assume_batch_first: bool = True,
) -> Tuple[bool, Dict[str, Any], List[str]]:
    """(batch_first, other constructor keywords, the settings that keep the
    fastpath off) from the evidence. An unknown setting is assumed to leave
    the fastpath on (``batch_first=True``, torch's default for the rest), and
    the verdict depends on that assumption."""
    keys = FASTPATH_KEYS.get(kind, LAYER_KEYS)
    batch_first = True
    kwargs: Dict[str, Any] = {}
    off: List[str] = []
    for key in keys:
        value = p.evidence.get(key)
        if key in ("kdim", "vdim"):
            # None is torch's default (embed_dim); the analyzer cannot tell it
            # from an unknown value, and the rules report only known widths.
            if isinstance(value, int) and not isinstance(value, bool) and value != e:
                kwargs[key] = value
                off.append(f"{key}={value}")
            continue
        if not isinstance(value, bool):
            default = assume_batch_first if key == "batch_first" else DEFAULTS[key]
            p.assume(f"{key} unknown: used {default!r}")
            value = default
        if key == "batch_first":
            batch_first = value
        elif value != DEFAULTS[key]:
            kwargs[key] = value
        if value is OFF_VALUE[key]:
            off.append(f"{key}={value!r}")
    if "kdim" in kwargs or "vdim" in kwargs:  # nn.MultiheadAttention needs both
        kwargs.setdefault("kdim", e)
        kwargs.setdefault("vdim", e)
    return batch_first, kwargs, off


def _caller(
    kind: str, module: Any, kwargs: Dict[str, Any], **extra: Any
) -> Callable[[Any], Callable[[], Any]]:
    """call(x) -> a thunk running the module on x; with kdim/vdim the key and
    value get their own widths (cross-attention by construction)."""
    import torch

    def call(x: Any) -> Callable[[], Any]:
        if "kdim" in kwargs:
            key = torch.randn(*x.shape[:-1], kwargs["kdim"])
            value = torch.randn(*x.shape[:-1], kwargs["vdim"])
            return lambda: module(x, key, value, **extra)
        return lambda: forward(kind, module, x, **extra)

    return call


def _settings_text(batch_first: bool, kwargs: Dict[str, Any]) -> str:
    return ", ".join([f"batch_first={batch_first}"] + [f"{k}={v!r}" for k, v in kwargs.items()])


# ------------------------------------------------------------------ MHA101


def _widths_for(p: Params, h: int, even: int) -> Optional[int]:
    """An embed_dim divisible by both head counts: the call site's if it is,
    else the smallest multiple of lcm(h, even) that is at least 96."""
    e = p.evidence.get("embed_dim")
    if isinstance(e, int) and 0 < e <= 512 and e % h == 0 and e % even == 0:
        return e
    base = h * even // math.gcd(h, even)
    if base > MAX_WIDTH:
        return None
    width = base * max(1, math.ceil(96 / base))
    p.note(
        f"embed_dim={width} (divisible by {h} and {even} heads)"
        + (f" instead of {e}" if e is not None else "")
    )
    return width


def _time_words(stats: Dict[str, Any]) -> str:
    if stats["low"] >= ODD_TIME_MARGIN:
        return "slower"
    if stats["high"] <= 1 / ODD_TIME_MARGIN:
        return "faster"
    return "no clear difference"


def run_mha101(evidence: Dict[str, Any]) -> Dict[str, Any]:
    import torch

    p = Params(evidence)
    kind = p.module_kind()
    h = p.get("num_heads", 7)
    if not isinstance(h, int) or h <= 0:
        return skipped(f"num_heads={h!r} is not a positive int", params=p)
    even = h + 1 if h % 2 else h
    e = _widths_for(p, h, even)
    if e is None:
        return skipped(
            f"no embed_dim divisible by both {h} and {even} heads is small enough "
            f"for a quick witness",
            params=p,
        )
    batch_first, kwargs, off = module_facts(p, kind, e)
    length = INFO_LENGTH
    x = _inputs(e, length, batch_first)
    short = _inputs(e, PROFILE_LENGTH, batch_first)
    odd_m = build(kind, e, h, seed=SEED, batch_first=batch_first, **kwargs)
    even_m = build(kind, e, even, seed=SEED, batch_first=batch_first, **kwargs)
    labels = ["default call"] + (["need_weights=False"] if kind == MHA else [])

    def call(module: Any, label: str) -> Callable[[Any], Callable[[], Any]]:
        extra = {"need_weights": False} if label == "need_weights=False" else {}
        return _caller(kind, module, kwargs, **extra)

    measured: Dict[str, Any] = {"settings_off": off}
    words: List[str] = []
    confirmed = False
    with torch.no_grad():
        for i, label in enumerate(labels):
            odd_ops = kernels(call(odd_m, label)(short))
            even_ops = kernels(call(even_m, label)(short))
            stats = stable_ratio(
                call(odd_m, label)(x), call(even_m, label)(x), budget=RATIO_BUDGET / 2
            )
            key = label.replace(" ", "_").replace("=", "_")
            measured[f"path_odd_{key}"] = path_name(odd_ops)
            measured[f"path_even_{key}"] = path_name(even_ops)
            measured[f"ms_odd_{key}"] = stats["ms_a"]
            measured[f"ms_even_{key}"] = stats["ms_b"]
            measured[f"ratio_{key}"] = stats["median"]
            measured[f"ratio_low_{key}"] = stats["low"]
            measured[f"ratio_high_{key}"] = stats["high"]
            measured[f"time_{key}"] = _time_words(stats)
            if i == 0:
                confirmed = took_fastpath(even_ops) and not took_fastpath(odd_ops)
            words.append(
                f"{label}: {_heads(h)} ran the {path_name(odd_ops)}, {_heads(even)} "
                f"the {path_name(even_ops)}; odd/even time {ratio_text(stats)}: "
                f"{_time_words(stats)}"
            )
    if off and not confirmed:
        words.insert(0, f"moot: {', '.join(off)} keeps the fastpath off whatever the head count")
    elif confirmed:
        words.append(
            "the verdict is the kernel (the fastpath is lost), not a slowdown: "
            "on this CPU the path odd heads take is often faster"
        )
    witness = (
        f"nn.{kind} with {_heads(h)} vs {_heads(even)} at embed_dim={e}, "
        f"{_settings_text(batch_first, kwargs)}, eval, no_grad, N={N}, L={length}; "
        f"torch.profiler op names, odd/even time ratio of interleaved pairs "
        f"(median [quartiles])"
    )
    return result(verdict(confirmed), witness, "; ".join(words), measured, p)


# ------------------------------------------------------------------ MHA102


def run_mha102(evidence: Dict[str, Any]) -> Dict[str, Any]:
    p = Params(evidence)
    e, h = p.dims(default_e=256, default_h=8, max_e=MAX_WIDTH)
    length = _length(e)
    p.assume(f"sequence length unknown: used L={length}, N={N} (the cost grows with L)")
    p.assume(
        "training/eval unknown: ran eval with grad on, off the fastpath (on the "
        'fastpath need_weights costs about 1.07x: TORCH_FACTS, "Speed")'
    )
    batch_first, kwargs, off = module_facts(p, MHA, e)
    kwargs.pop("kdim", None), kwargs.pop("vdim", None)
    x = _inputs(e, length, batch_first)
    module = build(MHA, e, h, seed=SEED, batch_first=batch_first, **kwargs)

    def with_weights() -> Any:
        return module(x, x, x, need_weights=True)

    def without_weights() -> Any:
        return module(x, x, x, need_weights=False)

    stats = stable_ratio(with_weights, without_weights)
    path_true, path_false = path_name(kernels(with_weights)), path_name(kernels(without_weights))
    side = judge(stats, WEIGHTS_RATIO_THRESHOLD)
    measured = {
        "ms_need_weights_true": stats["ms_a"],
        "ms_need_weights_false": stats["ms_b"],
        "ratio": stats["median"],
        "ratio_low": stats["low"],
        "ratio_high": stats["high"],
        "pairs": stats["pairs"],
        "threshold": WEIGHTS_RATIO_THRESHOLD,
        "path_need_weights_true": path_true,
        "path_need_weights_false": path_false,
    }
    damage = (
        f"need_weights=True {_ms(stats['ms_a'] / 1e3)} ({path_true}) vs False "
        f"{_ms(stats['ms_b'] / 1e3)} ({path_false}): {ratio_text(stats)}; threshold "
        f"{WEIGHTS_RATIO_THRESHOLD}x: "
        + {
            "above": "the whole range clears it",
            "below": "the whole range is below it",
            "straddles": "the range straddles it",
        }[side]
    )
    witness = (
        f"nn.MultiheadAttention({e}, {h}, {_settings_text(batch_first, kwargs)}) in eval "
        f"with grad on (off the fastpath), N={N}, L={length}, need_weights True vs "
        f"False, interleaved pairs (median [quartiles])"
    )
    verdict_ = {"above": CONFIRMED, "below": NOT_REPRODUCED, "straddles": INCONCLUSIVE}[side]
    return result(verdict_, witness, damage, measured, p)


# ------------------------------------------------------------------ MHA901

BLOCKER_KEYS = ("bias", "add_bias_kv", "add_zero_attn", "kdim", "vdim")
BLOCKING_VALUE = torch_api.FASTPATH_BLOCKERS


def _blockers(p: Params, e: int) -> Dict[str, Any]:
    """Constructor keywords that block the fastpath, from evidence["blockers"]
    (strings such as "bias=False") or the evidence's own keys."""
    found: Dict[str, Any] = {}
    items = p.evidence.get("blockers") or []
    for item in items if isinstance(items, list) else []:
        name, _, text = str(item).partition("=")
        name = name.strip()
        if name not in BLOCKER_KEYS:
            p.note(f"blocker {item!r} has no witness form: left out")
            continue
        try:
            value = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            value = None
        if name in ("kdim", "vdim") and not (isinstance(value, int) and value != e):
            p.note(f"{name} value {text.strip() or 'unknown'}: used {e // 2}")
            value = e // 2
        elif name in BLOCKING_VALUE and value is not BLOCKING_VALUE[name]:
            value = BLOCKING_VALUE[name]
        found[name] = value
    if not found:
        for name in BLOCKER_KEYS:
            value = p.evidence.get(name)
            if name in BLOCKING_VALUE and value is BLOCKING_VALUE[name]:
                found[name] = value
            elif name in ("kdim", "vdim") and isinstance(value, int) and value != e:
                found[name] = value
    if "kdim" in found or "vdim" in found:  # nn.MultiheadAttention needs both
        found.setdefault("kdim", e)
        found.setdefault("vdim", e)
    return found


def run_mha901(evidence: Dict[str, Any]) -> Dict[str, Any]:
    import torch

    p = Params(evidence)
    e, h = p.dims(default_e=256, default_h=8, max_e=512)
    blockers = _blockers(p, e)
    if not blockers:
        return skipped(
            "no blocker in the evidence (expected e.g. blockers=['bias=False'])", params=p
        )
    kind = p.module_kind(allowed=MODULE_KINDS)
    if kind != MHA and set(blockers) != {"bias"}:
        p.note(f"{kind} takes only bias among these: used nn.MultiheadAttention")
        kind = MHA
    batch_first = p.evidence.get("batch_first")
    if not isinstance(batch_first, bool):
        p.assume("batch_first unknown: used True (the fastpath needs it)")
        batch_first = True
    length = INFO_LENGTH
    x = _inputs(e, length, batch_first)
    short = _inputs(e, PROFILE_LENGTH, batch_first)
    blocked = build(kind, e, h, seed=SEED, batch_first=batch_first, **blockers)
    plain = build(kind, e, h, seed=SEED, batch_first=batch_first)
    call_blocked, call_plain = _caller(kind, blocked, blockers), _caller(kind, plain, {})
    with torch.no_grad():
        ops_blocked, ops_plain = kernels(call_blocked(short)), kernels(call_plain(short))
        stats = stable_ratio(call_blocked(x), call_plain(x))
    text = ", ".join(f"{k}={v!r}" for k, v in blockers.items())
    measured = {
        "path_blocked": path_name(ops_blocked),
        "path_plain": path_name(ops_plain),
        "ms_blocked": stats["ms_a"],
        "ms_plain": stats["ms_b"],
        "ratio": stats["median"],
        "ratio_low": stats["low"],
        "ratio_high": stats["high"],
        "batch_first": batch_first,
    }
    damage = (
        f"with {text}: {path_name(ops_blocked)}; without: {path_name(ops_plain)}; "
        f"blocked/plain time {ratio_text(stats)}"
    )
    confirmed = took_fastpath(ops_plain) and not took_fastpath(ops_blocked)
    if not batch_first:
        damage = (
            "moot: batch_first=False keeps the fastpath off with or without the blockers; " + damage
        )
    elif not took_fastpath(ops_plain):
        why = f" (num_heads={h} is odd)" if h % 2 else ""
        damage = f"moot: without the blockers the module leaves the fastpath too{why}; " + damage
    witness = (
        f"nn.{kind}({e}, {h}, batch_first={batch_first}, {text}) vs the same without "
        f"them, eval, no_grad, default call, N={N}, L={length}; torch.profiler op "
        f"names, blocked/plain time ratio of interleaved pairs (median [quartiles])"
    )
    return result(verdict(confirmed), witness, damage, measured, p)


WITNESSES = [
    Witness(
        code="MHA101",
        summary=(
            "Runs the module with the odd head count and with the next even one, both "
            "built with the finding's own settings (batch_first, bias, add_bias_kv, "
            "add_zero_attn, kdim/vdim; eval, no_grad): which kernel ran (torch.profiler) "
            "and the odd/even time with its spread."
        ),
        threshold_text=f"""\
CONFIRMED when the even head count runs the fastpath kernel
(`aten::_native_multi_head_attention` or `aten::_transformer_encoder_layer_fwd`)
and the odd one does not; NOT REPRODUCED when a setting of the finding
(`batch_first=False`, `bias=False`, ...) keeps both off the fastpath. The time
is reported, not judged, as the median and quartiles of interleaved odd/even
pairs, called "slower" only when the whole range is above {ODD_TIME_MARGIN}x. On
torch 2.13 CPU (1 thread, 7 vs 8 heads, E=112, N=2, L=256, a busy machine) the default
call (math path vs fastpath) took 0.9-1.4x the even time, with
need_weights=False the odd count's SDPA path 0.6-0.8x (*faster* than the
fastpath); TORCH_FACTS item 17: 0.66x.""",
        func=run_mha101,
        timing=True,
    ),
    Witness(
        code="MHA102",
        summary=(
            "Times nn.MultiheadAttention (the finding's width, heads and settings) in "
            "eval with grad on (off the fastpath) with need_weights=True vs False: "
            "median and quartiles of the per-pair ratio of interleaved runs."
        ),
        threshold_text=f"""\
CONFIRMED when the whole interquartile range of the need_weights True/False
ratio is at least {WEIGHTS_RATIO_THRESHOLD}x, NOT REPRODUCED when all of it is below,
INCONCLUSIVE when it straddles {WEIGHTS_RATIO_THRESHOLD}x. The sequence length and
training/eval are never in the evidence: the verdict rests on them (CONFIRMED*).
Measured on torch 2.13 CPU (E=256, H=8, N=2, L=512, 1 thread, a busy machine):
1.4x-2.8x (math path vs SDPA flash kernel); TORCH_FACTS: 2.2x at N=4, L=1024,
E=448, 2 threads; on the fastpath about 1.07x.""",
        func=run_mha102,
        timing=True,
    ),
    Witness(
        code="MHA901",
        summary=(
            "Runs the module with the finding's fastpath blockers and without (eval, "
            "no_grad, the finding's batch_first): which kernel ran and the time ratio "
            "with its spread."
        ),
        threshold_text="""\
CONFIRMED when the module without the blockers runs the fastpath kernel and the
one with them does not; NOT REPRODUCED when `batch_first=False` keeps both off
the fastpath. The time is reported, not judged: on torch 2.13 CPU
(1 thread, E=256, H=8, N=2, L=256, four runs on a busy machine) the default
call with `bias=False` took 1.0-1.3x and with `add_zero_attn=True` 0.9-1.4x
the plain module's time (math path vs fastpath): below what a user would
notice at this size. With need_weights=False the blocked module runs the SDPA
path, which on this CPU is faster than the fastpath (TORCH_FACTS, "Speed").""",
        func=run_mha901,
        timing=True,
    ),
]
