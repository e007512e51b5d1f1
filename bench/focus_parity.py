"""Issue 15: the focused parse finds exactly what the full parse finds, over the
real-world corpus (bench/corpus.py's releases, same download cache) and the
installed torch package.

Every file that passes the text pre-filter is analyzed twice with every code
enabled: with ``focus`` (irrelevant definitions blanked) and without it
(``focus.FOCUS = False``: the whole file parsed).  The findings must be
identical: code, line, column and message.  Prints the counts; exits 1 on any
difference, listing it.

    python bench/focus_parity.py [--jobs 2] [--only torch,timm]
"""

from __future__ import annotations

import argparse
import multiprocessing
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _common import machine, py_files, shown, torch_root  # noqa: E402


def _one(path: str):
    from flake8_mha.analysis import focus as focus_mod
    from flake8_mha.lint.engine import SourceSyntaxError, analyze_file, select_codes

    codes = select_codes(["MHA"])
    out = []
    kept = total = 0
    for on in (True, False):
        focus_mod.FOCUS = on
        try:
            found = analyze_file(path, codes)
            out.append(sorted((f.code, f.line, f.col, f.message) for f in found))
        except SourceSyntaxError as exc:
            out.append([("E999", exc.line, exc.col, str(exc))])
        except OSError as exc:
            out.append([("OSError", 0, 0, str(exc))])
    focus_mod.FOCUS = True
    try:
        text = pathlib.Path(path).read_text(encoding="utf-8")
        total = len(text)
        kept = len(focus_mod.focus(text).replace("\n", "").replace(" ", "")) if total else 0
        total = len(text.replace("\n", "").replace(" ", ""))
    except (OSError, UnicodeDecodeError):
        pass
    return path, out[0], out[1], kept, total


def _passes(path: pathlib.Path) -> bool:
    from flake8_mha.core.torch_api import TRIGGER_WORDS

    data = path.read_bytes()
    return any(w.encode() in data for w in TRIGGER_WORDS)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", help="comma-separated set names (torch, timm, ...)")
    args = ap.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    from corpus import PROJECTS, fetch

    sets = []
    if not only or "torch" in only:
        sets.append(("torch (installed)", py_files(torch_root())))
    for name, version in PROJECTS:
        if only and name not in only:
            continue
        root = fetch(name, version)
        sets.append((f"{name} {version}", sorted((root / "src").rglob("*.py"))))
    start = time.perf_counter()
    print(f"# {machine()}")
    print("| set | files | analyzed | findings (focused) | findings (full parse) | differ |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    bad = []
    sums = [0, 0, 0, 0, 0, 0, 0]
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        for label, files in sets:
            passing = [str(p) for p in files if _passes(p)]
            n_f = n_full = n_diff = 0
            for path, focused, full, kept, total in pool.imap_unordered(_one, passing):
                n_f += len(focused)
                n_full += len(full)
                sums[5] += kept
                sums[6] += total
                if focused != full:
                    n_diff += 1
                    bad.append((path, focused, full))
            print(f"| {label} | {len(files)} | {len(passing)} | {n_f} | {n_full} | {n_diff} |")
            for i, v in enumerate((len(files), len(passing), n_f, n_full, n_diff)):
                sums[i] += v
    print(f"| **all** | {sums[0]} | {sums[1]} | {sums[2]} | {sums[3]} | {sums[4]} |")
    share = sums[5] / sums[6] if sums[6] else 1.0
    print(f"\nfocus hands LibCST {share:.0%} of the analyzed files' text (non-blank characters)")
    print(f"{time.perf_counter() - start:.0f} s")
    for path, focused, full in bad:
        print(f"\nDIFFERS: {shown(path)}\n  focused: {focused}\n  full:    {full}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
