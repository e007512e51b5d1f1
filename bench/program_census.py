"""What the program analysis (docs/reach.md) follows on the real-world corpus.

    python bench/program_census.py               # the nine libraries
    python bench/program_census.py --set apps    # the application set

For every file of the pinned releases (``bench/corpus.py`` downloads them
into ``bench/.cache``), the engine runs as ``check`` does, and this counts:

- call sites seen through a summary (``SdpaCall.through``): with the callee
  in the same file or another one, and through a chain of several functions;
- of them, those that pass a mask or a flag (the ones a rule can judge), and
  those of a wrapper of a torch attention module (``through["sink"]``);
- files the project-aware gate admitted (no attention word, but a call of a
  project wrapper).

The review of what it prints is ``docs/corpus_review.md``.
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import corpus  # noqa: E402  (bench/corpus.py: the pinned releases)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", choices=sorted(corpus.SETS), default="libs")
    ap.add_argument("--list", action="store_true", help="print every followed call site")
    args = ap.parse_args(argv)

    from flake8_mha.lint import engine
    from flake8_mha.analysis.program import callsites

    seen = []
    real_classify = callsites.Project._classify

    def classify(self, site, resolver):
        got = real_classify(self, site, resolver)
        if got is not None:
            seen.append((self.path, got.through, sorted(got.args.args)))
        return got

    callsites.Project._classify = classify
    gated = []
    real_gate = engine._gated_in

    def gate(source, path, project, tree):
        got = real_gate(source, path, project, tree)
        if got:
            gated.append(path)
        return got

    engine._gated_in = gate
    totals = collections.Counter()
    for name, version in corpus.SETS[args.set]:
        files = corpus.py_files(corpus.fetch(name, version))
        before = len(seen), len(gated)
        for path in files:
            try:
                engine.analyze_file(str(path))
            except (OSError, engine.SourceSyntaxError):
                continue
        here = seen[before[0]:]
        row = collections.Counter()
        for path, through, mapped in here:
            own = through["file"].endswith(pathlib.Path(path).name) and "chain" not in through
            row["same file" if own else "other file"] += 1
            if through.get("chain"):
                row["chain"] += 1
            if through.get("sink"):  # a wrapper of a torch module it holds
                row["module wrapper"] += 1
            if mapped:
                row["passes a mask or flag"] += 1
        row["gate admitted"] = len(gated) - before[1]
        totals.update(row)
        print(f"{name}=={version}: " + ", ".join(f"{k} {v}" for k, v in sorted(row.items())))
        if args.list:
            for path, through, mapped in here:
                rel = pathlib.Path(path).relative_to(corpus.CACHE)
                print(f"  {rel}: {through['function']} -> {through['file']}:{through['line']}"
                      f" {mapped}")
    print("total: " + ", ".join(f"{k} {v}" for k, v in sorted(totals.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
