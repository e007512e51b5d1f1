"""Issue 7: speed that scales.

1. Attention-free files (torch's own files that the text pre-filter turns
   away): the cost per file with 1, 2, ... all rules enabled stays flat,
   because no rule runs on them; the same files without the pre-filter show
   what it saves.
2. Attention-dense code: the largest fixture repeated 1x, 4x and 16x; the
   analysis time per line stays flat (linear growth).

    python bench/scaling.py [--reps 3] [--write]
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _common import ROOT, machine, median, py_files, torch_root  # noqa: E402

sys.path.insert(0, str(ROOT))
from flake8_mha.lint.engine import analyze_source, decode_source, prefilter, select_codes  # noqa: E402


def timed(fn, reps: int) -> float:
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return median(out)


def part1(reps: int, sample: int):
    texts = []
    for p in py_files(torch_root()):
        try:
            text = decode_source(p.read_bytes())
        except Exception:
            continue
        if not prefilter(text):
            texts.append(text)
    codes = select_codes(["MHA"])
    rows = []
    few = texts[:: max(1, len(texts) // sample)][:sample]
    for k in sorted({1, 2, len(codes) // 2, len(codes)}):
        chosen = codes[:k]
        on = timed(lambda: [analyze_source(t, "f.py", chosen) for t in texts], reps)
        off = timed(lambda: [analyze_source(t, "f.py", chosen, use_prefilter=False)
                             for t in few], 1)
        rows.append((k, on / len(texts) * 1e6, off / len(few) * 1e3))
    return len(texts), len(few), rows


def part2(reps: int):
    fixtures = sorted((ROOT / "fixtures").glob("**/*.py"), key=lambda p: p.stat().st_size)
    base = fixtures[-1]
    text = base.read_text(encoding="utf-8")
    codes = select_codes(["MHA"])
    rows = []
    for n in (1, 4, 16):
        big = "\n".join([text] * n)
        lines = big.count("\n") + 1
        findings = len(analyze_source(big, "big.py", codes))
        secs = timed(lambda: analyze_source(big, "big.py", codes), reps)
        rows.append((n, lines, findings, secs, secs / lines * 1e6))
    return base, rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sample", type=int, default=100,
                    help="attention-free files analyzed without the pre-filter (slow)")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    n, few, rows1 = part1(args.reps, args.sample)
    base, rows2 = part2(args.reps)
    out = [f"### 1. Attention-free files: cost per file as rules are added ({n} torch files "
           f"the pre-filter turns away; median of {args.reps})", "",
           "| rules enabled | with the pre-filter, µs/file | without it, ms/file "
           f"({few} of them) |", "| ---: | ---: | ---: |"]
    out += [f"| {k} | {on:.1f} | {off:.1f} |" for k, on, off in rows1]
    out += ["", f"### 2. Attention-dense code: `{base.relative_to(ROOT)}` repeated "
            f"(median of {args.reps})", "",
            "| copies | lines | findings | seconds | µs per line |",
            "| ---: | ---: | ---: | ---: | ---: |"]
    out += [f"| {c} | {lines} | {f} | {s:.3f} | {per:.0f} |" for c, lines, f, s, per in rows2]
    grow = rows2[-1][4] / rows2[0][4]
    out += ["", f"Cost per line at 16x / at 1x: **{grow:.2f}** (1.0 = linear).", ""]
    text = "\n".join(out)
    print(text)
    if args.write:
        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
        from bench import update_results

        cmd = "python bench/scaling.py " + " ".join(argv if argv is not None else sys.argv[1:])
        update_results("scaling.py", f"## Speed that scales ({started}; {machine()})\n\n"
                                     f"Command: `{cmd.strip()}`\n\n{text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
