"""The project-aware gate's own cost, in one process as flake8 -j 1 runs it:
CPU seconds of ``ProjectFiles.gate`` over torch's files that name no
attention word (the files the plugin gates), with flake8's ``ast`` tree
handed over as flake8 does (its parse is not counted), and how many it
admits.

    python bench/gate_cost.py
    python bench/gate_cost.py --profile 25     # the 25 costliest functions
"""

from __future__ import annotations

import argparse
import ast
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))
from _common import machine, py_files, torch_root  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", help="files to gate (default: torch's)")
    ap.add_argument("--profile", type=int, default=0, help="print the N costliest functions")
    args = ap.parse_args(argv)
    from flake8_mha.lint.engine import decode_source
    from flake8_mha.analysis.program.files import ProjectFiles
    from flake8_mha.core.torch_api import TRIGGER_WORDS

    work = []
    for path in [pathlib.Path(f) for f in args.files] or py_files(torch_root()):
        try:
            source = decode_source(path.read_bytes())
            if any(w in source for w in TRIGGER_WORDS) or "import" not in source:
                continue
            work.append((str(path), source, ast.parse(source)))
        except (OSError, SyntaxError, UnicodeDecodeError, LookupError, ValueError):
            continue
    prof = None
    if args.profile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    start, admitted = time.process_time(), []
    for path, source, tree in work:
        if ProjectFiles(path).gate(source, tree):
            admitted.append(path)
    cpu = time.process_time() - start
    if prof is not None:
        import pstats

        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(args.profile)
    print(f"# {machine()}")
    print(f"{len(work)} files gated, {len(admitted)} admitted: {cpu:.2f} s CPU")
    for path in admitted:
        print("  admitted", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
