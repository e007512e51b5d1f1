"""The engine's own cost, in one process as flake8 -j 1 runs it: CPU seconds
and peak memory of ``analyze_source`` (project-wide analysis on, as by
default) over torch's files that pass the text pre-filter, or over given
files.  ``--checkout`` runs the ``flake8_mha`` of another checkout (an older
commit in a ``git worktree``), so two versions compare in one session:

    git worktree add /tmp/before <commit>
    python bench/engine_cost.py --checkout /tmp/before
    python bench/engine_cost.py
    python bench/engine_cost.py <site-packages>/torch/testing/_internal/common_methods_invocations.py
    python bench/engine_cost.py --stages      # CPU seconds per stage of the engine

``--stages`` times, within the same run, the stages of ``_parse_and_analyze``:
Python's parse (``ast``; flake8 hands it over, ``check`` makes it), the
project imports that lead to a wrapper (``imported_names``: reading and
summarising the imported project files), ``focus``, LibCST's parse, and the
analysis (flow pass, events, rules).  A mask builder read from another file
is parsed inside the analysis: its parse counts in both.
"""

from __future__ import annotations

import argparse
import pathlib
import resource
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _common import machine, py_files, shown, torch_root  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", help="files to analyze (default: torch's)")
    ap.add_argument("--checkout", help="the checkout whose flake8_mha to run (default: this one)")
    ap.add_argument("--stages", action="store_true", help="CPU seconds per stage of the engine")
    args = ap.parse_args(argv)
    if args.checkout:
        sys.path.insert(0, str(pathlib.Path(args.checkout).resolve()))
    import flake8_mha
    from flake8_mha.lint.engine import analyze_source, decode_source, prefilter, select_codes

    stages = _timed_stages() if args.stages else {}

    files = [pathlib.Path(f) for f in args.files] or py_files(torch_root())
    codes = select_codes(["MHA"])
    start, analyzed, findings = time.process_time(), 0, 0
    for path in files:
        try:
            source = decode_source(path.read_bytes())
        except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
            continue
        if not prefilter(source):
            continue
        analyzed += 1
        try:
            findings += len(analyze_source(source, str(path), codes))
        except SyntaxError:
            continue
    cpu = time.process_time() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"# {machine()}")
    print(f"flake8_mha from {shown(pathlib.Path(flake8_mha.__file__).parent.parent)}")
    print(f"{analyzed} files analyzed, {findings} findings: {cpu:.1f} s CPU, peak {peak} MB")
    if stages:
        print("stages (CPU s): " + ", ".join(f"{k} {v:.2f}" for k, v in stages.items()))
    return 0


def _timed_stages() -> dict:
    """Wrap the engine's stages so that each adds its CPU time to the dict returned."""
    import libcst

    from flake8_mha.lint import engine
    from flake8_mha.analysis.program import callsites as project

    spent = dict.fromkeys(("ast", "imported_names", "focus", "libcst parse", "analysis"), 0.0)

    def timed(name, fn):
        def wrapper(*args, **kwargs):
            start = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[name] += time.process_time() - start

        return wrapper

    engine._ast_or_none = timed("ast", engine._ast_or_none)
    project.Project.imported_names = timed("imported_names", project.Project.imported_names)
    engine.focus = timed("focus", engine.focus)
    engine.cst.parse_module = timed("libcst parse", libcst.parse_module)
    engine.analyze_module = timed("analysis", engine.analyze_module)
    return spent


if __name__ == "__main__":
    sys.exit(main())
