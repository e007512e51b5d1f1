"""The project-aware gate against no gate at all, on the real-world corpus.

    python bench/gate_parity.py                   # the application set
    python bench/gate_parity.py --set libs --only timm,x-transformers

Every file of the pinned releases (``bench/corpus.py`` downloads them) is
analysed twice: as flake8 and ``check`` do (the text pre-filter, then the
project-aware gate for a file without an attention word) and with neither
(every file parsed and analysed).  A finding only the ungated run gives is a
file the gate dropped although it reports: a bug.  Prints each difference and
the two counts; exits 1 on a difference.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import corpus  # noqa: E402  (bench/corpus.py: the pinned releases)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", choices=sorted(corpus.SETS), default="apps")
    ap.add_argument("--only", help="comma-separated project names")
    args = ap.parse_args(argv)
    from flake8_mha.lint.engine import SourceSyntaxError, analyze_file

    only = set(args.only.split(",")) if args.only else None
    differ = total_gated = total_all = 0
    for name, version in corpus.SETS[args.set]:
        if only and name not in only:
            continue
        for path in corpus.py_files(corpus.fetch(name, version)):
            try:
                gated = analyze_file(str(path))
                ungated = analyze_file(str(path), use_prefilter=False)
            except (OSError, SourceSyntaxError):
                continue
            a = {(f.code, f.line, f.col) for f in gated}
            b = {(f.code, f.line, f.col) for f in ungated}
            total_gated += len(a)
            total_all += len(b)
            for got in sorted(a ^ b):
                differ += 1
                side = "ungated only" if got in b else "gated only"
                print(f"{path.relative_to(corpus.CACHE)}:{got[1]}:{got[2]} {got[0]} ({side})")
        print(f"{name}=={version}: done", flush=True)
    print(f"findings gated {total_gated}, ungated {total_all}, differences {differ}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
