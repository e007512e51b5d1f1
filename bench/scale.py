"""Issue 7: the analyzer (every code) over real code at scale.

Every .py of the installed torch package and of the pinned PyPI releases
that bench/corpus.py reviews (same download cache, bench/.cache: ``pip
download --no-deps`` of each release, unpacked there once).  Asserts that no
file raises and that no file gets MHA000 except true syntax errors and
undecodable files (listed); reports files/s, peak memory and findings per
code.

    python bench/scale.py [--jobs 2] [--only torch,timm] [--write]

--write keeps the result in bench/SCALE.md.
"""
from __future__ import annotations

import argparse
import collections
import multiprocessing
import pathlib
import resource
import sys
import time
import traceback

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _common import BENCH, machine, py_files, shown, torch_root  # noqa: E402

_CODES = None


def _init() -> None:
    global _CODES
    from flake8_mha.lint.engine import select_codes

    _CODES = select_codes(["MHA"])


def _one(path: str):
    """(path, status, findings as (code, line, message), seconds)."""
    from flake8_mha.lint.engine import SourceSyntaxError, analyze_file

    t = time.perf_counter()
    try:
        found = analyze_file(path, _CODES)
        status = "ok"
        out = [(f.code, f.line, f.message) for f in found]
    except SourceSyntaxError as exc:
        status, out = "syntax", [("E999", exc.line, str(exc))]
    except OSError as exc:
        status, out = "oserror", [("OSError", 0, str(exc))]
    except BaseException:  # the thing this script exists to catch
        status, out = "crash", [("crash", 0, traceback.format_exc(limit=8))]
    return path, status, out, time.perf_counter() - t


def corpora(only):
    out = []
    if not only or "torch" in only:
        out.append(("torch (installed)", torch_root()))
    try:
        from corpus import PROJECTS, fetch  # bench/corpus.py: same releases, same cache
    except ImportError:  # pragma: no cover
        PROJECTS, fetch = [], None
    for name, version in list(PROJECTS) + MORE:
        if only and name not in only:
            continue
        out.append((f"{name} {version}", fetch(name, version)))
    return out


# beyond corpus.py's list, to reach tens of thousands of files: more pinned
# releases of projects built on attention (speech, medical imaging, detection,
# fine-tuning, an older transformers)
MORE = [
    ("transformers", "4.46.3"),
    ("nemo_toolkit", "3.0.0"),
    ("espnet", "202511"),
    ("speechbrain", "1.1.2"),
    ("monai", "1.6.1"),
    ("mmdet", "3.3.0"),
    ("fairseq", "0.12.2"),
    ("torchtune", "0.6.1"),
    ("peft", "0.21.2"),
    ("sentence-transformers", "6.2.0"),
]


def _allowed_mha000(message: str) -> bool:
    return "cannot decode the file" in message or "syntax error" in message


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="", help="comma-separated: torch and/or project names")
    ap.add_argument("--write", action="store_true", help="keep the result in bench/SCALE.md")
    args = ap.parse_args(argv)
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    sets = corpora(only)
    jobs = []
    for label, root in sets:
        files = [str(p) for p in py_files(pathlib.Path(root))]
        jobs.append((label, files))
        log(f"{label}: {len(files)} files under {root}")
    all_files = [(label, f) for label, files in jobs for f in files]
    label_of = {f: label for label, f in all_files}
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    t0 = time.perf_counter()
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    results = []
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(args.jobs, initializer=_init) as pool:
        todo = [f for _, f in all_files]
        for i, res in enumerate(pool.imap_unordered(_one, todo, chunksize=8), 1):
            results.append(res)
            if i % 2000 == 0:
                log(f"  {i}/{len(all_files)} files, {time.perf_counter() - t0:.0f} s")
    wall = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (ru.ru_utime - cpu0.ru_utime) + (ru.ru_stime - cpu0.ru_stime)
    peak_mb = ru.ru_maxrss / 1024

    per_code = collections.Counter()
    per_set = collections.defaultdict(collections.Counter)
    crashes, bad000, syntax, undecodable, oserrors = [], [], [], [], []
    for path, status, found, secs in results:
        label = label_of[path]
        per_set[label]["files"] += 1
        if status == "crash":
            crashes.append((path, found[0][2]))
            continue
        if status == "syntax":
            syntax.append((path, found[0][2]))
            continue
        if status == "oserror":
            oserrors.append((path, found[0][2]))
            continue
        if found:
            per_set[label]["with findings"] += 1
        for code, line, message in found:
            per_code[code] += 1
            per_set[label][code] += 1
            if code == "MHA000":
                if "cannot decode the file" in message:
                    undecodable.append((path, message))
                elif not _allowed_mha000(message):
                    bad000.append((path, message))
    slowest = sorted(results, key=lambda r: -r[3])[:10]
    lines = [f"## Real code at scale ({started}; {machine()})", "",
             f"Command: `python bench/scale.py {' '.join(sys.argv[1:] if argv is None else argv)}`",
             "",
             f"- files: **{len(results)}** in {len(sets)} sets; every code enabled; "
             f"{args.jobs} worker processes",
             f"- wall {wall:.0f} s: **{len(results) / wall:.0f} files/s**; CPU {cpu:.0f} s "
             f"({len(results) / max(cpu, 1e-9):.0f} files per CPU second)",
             f"- peak RSS of the largest worker: **{peak_mb:.0f} MB**",
             f"- exceptions: **{len(crashes)}**; "
             f"MHA000 other than syntax/decoding: **{len(bad000)}**",
             f"- syntax errors (E999, true): {len(syntax)}; undecodable: {len(undecodable)}; "
             f"unreadable: {len(oserrors)}", "",
             "| set | files | with findings | " + " | ".join(sorted(per_code)) + " |",
             "| --- | ---: | ---: | " + " | ".join("---:" for _ in per_code) + " |"]
    for label, _ in sets:
        c = per_set[label]
        lines.append(f"| {label} | {c['files']} | {c['with findings']} | "
                     + " | ".join(str(c[code]) for code in sorted(per_code)) + " |")
    with_findings = sum(c["with findings"] for c in per_set.values())
    lines.append(f"| **all** | {len(results)} | {with_findings} | "
                 + " | ".join(f"**{per_code[code]}**" for code in sorted(per_code)) + " |")
    lines += ["", "Slowest files (s):", ""]
    lines += [f"- {secs:.2f} {shown(path)}" for path, _, _, secs in slowest]
    for title, items in (("Exceptions", crashes), ("Unexpected MHA000", bad000),
                         ("Syntax errors", syntax), ("Undecodable", undecodable),
                         ("Unreadable", oserrors)):
        if items:
            lines += ["", f"{title}:", ""]
            lines += [f"- `{shown(p)}`: {m.splitlines()[0] if m else ''}" for p, m in items[:40]]
            if len(items) > 40:
                lines.append(f"- ... and {len(items) - 40} more")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write:
        out = BENCH / "SCALE.md"
        old = out.read_text() if out.exists() else ""
        notes = old[old.index("## Notes"):] if "## Notes" in old else ""  # kept: written by hand
        out.write_text("# flake8-mha at scale\n\n" + text + ("\n" + notes if notes else ""))
    return 1 if crashes or bad000 else 0


if __name__ == "__main__":
    sys.exit(main())
