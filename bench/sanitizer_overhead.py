"""Overhead of the runtime sanitizer on typical attention calls.

    python bench/sanitizer_overhead.py [--reps 30]

Runs each call with the sanitizer off and on, interleaved, and prints the
ratio of medians.  Target: at most 1.20x (issue: "stays under 20% of the
attention call itself for typical sizes").
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from flake8_mha.sanitizer import sanitize


def cases():
    torch.manual_seed(0)
    N, L, E, H = 8, 128, 256, 8
    mha = nn.MultiheadAttention(E, H, batch_first=True)
    x = torch.randn(N, L, E)
    lengths = torch.randint(L // 2, L + 1, (N,))
    pad = torch.arange(L)[None, :] >= lengths[:, None]
    layer = nn.TransformerEncoderLayer(E, H, batch_first=True, dropout=0.0)
    q = torch.randn(N, H, L, E // H)
    yield "MultiheadAttention (8x128x256, 8 heads, padding mask)", lambda: mha(
        x, x, x, key_padding_mask=pad, need_weights=False)
    yield "TransformerEncoderLayer (same, padding mask)", lambda: layer(x, src_key_padding_mask=pad)
    yield "scaled_dot_product_attention (8x8x128x32, padding mask)", lambda: F.scaled_dot_product_attention(
        q, q, q, attn_mask=~pad[:, None, None, :])


def timeit(fn, inner=5):
    start = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - start) / inner


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    torch.set_num_threads(2)
    worst = 0.0
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.reps} interleaved reps")
    print(f"{'call':58} {'off ms':>8} {'on ms':>8} {'ratio':>6}")
    for name, fn in cases():
        with torch.no_grad():
            fn()
            off, on = [], []
            for _ in range(args.reps):
                off.append(timeit(fn))
                with sanitize():
                    on.append(timeit(fn))
        ratio = statistics.median(on) / statistics.median(off)
        worst = max(worst, ratio)
        print(f"{name:58} {statistics.median(off) * 1e3:8.2f} {statistics.median(on) * 1e3:8.2f} {ratio:6.2f}")
    print(f"worst ratio {worst:.2f} (target <= 1.20)")
    return 0 if worst <= 1.20 else 1


if __name__ == "__main__":
    raise SystemExit(main())
