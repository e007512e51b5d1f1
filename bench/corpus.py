"""Run the analyzer over pinned releases of real PyTorch projects.

    python bench/corpus.py                 # download (once), analyze, print findings by code
    python bench/corpus.py --codes MHA002,MHA003,MHA004,MHA009
    python bench/corpus.py --json out.json # every finding, machine-readable
    python bench/corpus.py --only timm     # one project
    python bench/corpus.py --sinks         # every mask sink and what the analysis knew there
    python bench/corpus.py --set apps      # the application-style set (APPS below)

Releases are fetched with ``pip download --no-deps`` into ``bench/.cache``
(gitignored) and unpacked there; a wheel is a zip of the package's sources,
an sdist a tarball.  Nothing is imported or installed: the analyzer only
reads the ``.py`` files.  The review of what this prints is
``docs/corpus_review.md``.
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import subprocess
import sys
import tarfile
import time
import zipfile
from typing import Dict, List, Optional, Tuple

ROOT = pathlib.Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / ".cache"

# name on PyPI, version: the newest release ``pip download`` found when the
# review in docs/corpus_review.md was written
PROJECTS: List[Tuple[str, str]] = [
    ("transformers", "5.24.0"),
    ("timm", "1.0.31"),
    ("torchvision", "0.29.1"),
    ("torchaudio", "2.11.1"),
    ("open_clip_torch", "3.3.0"),
    ("ultralytics", "8.4.190"),
    ("diffusers", "0.42.1"),
    ("torch_geometric", "2.8.1"),
    ("x-transformers", "2.31.10"),
]

# ``--set apps``: application-style packages whose models call attention and
# mask helpers kept in other files of the same package (issue 14's reach)
APPS: List[Tuple[str, str]] = [
    ("openai-whisper", "20250625"),
    ("fair-esm", "2.0.0"),
    ("audiolm-pytorch", "2.4.0"),
    ("denoising-diffusion-pytorch", "2.3.4"),
    ("alphafold3-pytorch", "0.8.3"),
    ("litgpt", "0.5.13"),
    ("torchtune", "0.6.1"),
]
SETS = {"libs": PROJECTS, "apps": APPS}


def _norm(name: str) -> str:
    return name.lower().replace("-", "_")


def fetch(name: str, version: str) -> pathlib.Path:
    """The unpacked release (downloaded on first use)."""
    dest = CACHE / f"{_norm(name)}-{version}"
    done = dest / ".unpacked"
    if done.exists():
        return dest
    dl = CACHE / "downloads" / f"{_norm(name)}-{version}"
    dl.mkdir(parents=True, exist_ok=True)
    archives = [p for p in dl.iterdir() if p.suffix in (".whl", ".gz", ".zip")]
    if not archives:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":none:",
            f"{name}=={version}",
            "-d",
            str(dl),
            "--quiet",
        ]
        subprocess.run(cmd, check=True)
        archives = [p for p in dl.iterdir() if p.suffix in (".whl", ".gz", ".zip")]
    if not archives:
        raise RuntimeError(f"pip download found nothing for {name}=={version}")
    archive = sorted(archives)[0]
    src = dest / "src"
    src.mkdir(parents=True, exist_ok=True)
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                if member.endswith(".py"):
                    zf.extract(member, src)
    else:
        with tarfile.open(archive) as tf:
            members = [m for m in tf.getmembers() if m.isfile() and m.name.endswith(".py")]
            tf.extractall(src, members=members, filter="data")
    done.write_text(archive.name + "\n")
    return dest


def py_files(root: pathlib.Path) -> List[pathlib.Path]:
    return sorted(p for p in (root / "src").rglob("*.py") if p.is_file())


def analyze(projects, codes: Optional[List[str]]):
    from flake8_mha.lint.engine import SourceSyntaxError, analyze_file, select_codes

    wanted = codes or select_codes(["MHA"])
    out = []
    stats: Dict[str, Dict[str, float]] = {}
    for name, version in projects:
        root = fetch(name, version)
        files = py_files(root)
        start = time.perf_counter()
        n_findings = 0
        for path in files:
            rel = f"{_norm(name)}-{version}/{path.relative_to(root / 'src')}"
            try:
                found = analyze_file(str(path), wanted)
            except SourceSyntaxError as exc:
                found = []
                print(f"# syntax error (skipped): {rel}: {exc}", file=sys.stderr)
            except OSError as exc:  # pragma: no cover
                print(f"# unreadable: {rel}: {exc}", file=sys.stderr)
                continue
            for f in found:
                out.append((rel, f))
            n_findings += len(found)
        stats[f"{name}=={version}"] = {
            "files": len(files),
            "findings": n_findings,
            "seconds": round(time.perf_counter() - start, 1),
        }
    return out, stats


def sinks(projects, reach: bool = True):
    """Every mask sink of the census: (rel, analysis, site, event, sink, mask)."""
    import libcst as cst

    from flake8_mha.lint.engine import Context, decode_source, prefilter
    from flake8_mha.analysis.events import ModuleCall, SdpaCall, classify
    from flake8_mha.analysis.flow import FlowPass
    from flake8_mha.analysis.masks import analysis_for
    from flake8_mha.analysis.program.callsites import Project
    from flake8_mha.analysis.resolve import Resolver

    for name, version in projects:
        root = fetch(name, version)
        for path in py_files(root):
            rel = f"{_norm(name)}-{version}/{path.relative_to(root / 'src')}"
            try:
                source = decode_source(path.read_bytes())
                if not prefilter(source):
                    continue
                module = cst.parse_module(source)
            except Exception:
                continue
            flow = FlowPass()
            flow.run(module)
            resolver = Resolver(flow)
            ctx = Context(module, flow, resolver)
            a = analysis_for(ctx)
            project = Project(str(path)) if reach else None  # issue 14: wrappers in other files
            ctx.project = project
            for site in flow.calls:
                ev = classify(site, resolver)
                if ev is None and project is not None:
                    ev = project.classify(site, resolver)
                if isinstance(ev, ModuleCall):
                    found = a.module_sinks(ev)
                elif isinstance(ev, SdpaCall):
                    found = [x for x in [a.sdpa_sink(ev)] if x]
                else:
                    found = [x for x in [a.fill_sink(site)] if x]
                for sink in found:
                    yield rel, a, site, ev, sink, a.value(sink)


def unknown_sinks(projects, reach: bool = True):
    """(rel, line, mask text) of every sink whose meaning, kind and shape are unknown
    (bench/sink_origins.py)."""
    for rel, a, site, _ev, sink, m in sinks(projects, reach):
        if m.meaning is None and m.kind is None and m.shape is None and not m.none:
            yield rel, a.evaluator.line(sink.expr), cst_code(sink.expr)


def cst_code(node) -> str:
    import libcst as cst

    return cst.Module([]).code_for_node(node)


def sink_census(projects, reach: bool = True) -> int:
    """Every mask sink (module mask argument, SDPA attn_mask, masked_fill/where
    with -inf) and the mask value the analysis found there: how much of the
    corpus it understands, and whether what it understands is consistent."""
    table: Dict[Tuple[str, str, str], int] = collections.Counter()
    known = []
    for rel, a, site, ev, sink, m in sinks(projects, reach):
        kind = "attention" if sink.attention else sink.module
        meaning = "None" if m.none else str(m.meaning)
        table[(kind, sink.door, meaning)] += 1
        if m.meaning is not None or m.kind is not None or m.shape is not None:
            line = a.evaluator.line(site.node)
            via = getattr(ev, "through", None)
            via = f" via {via['function']} ({via['file']}:{via['line']})" if via else ""
            known.append(
                f"{rel}:{line}: {sink.module}.{sink.arg}{via} (door {sink.door}): "
                f"meaning={m.meaning} kind={m.kind} shape={m.shape} "
                f"causal={m.causal} from {a.evaluator.source_text(m.origin)}"
            )
    print("## sinks by (sink, door: what True means there, meaning found)")
    for key, n in sorted(table.items()):
        print(f"{key[0]:12} door={key[1]:7} meaning={key[2]:9} {n}")
    print(f"\n## sinks where something is known: {len(known)}")
    for line in known:
        print(line)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--codes", help="comma-separated codes (default: every MHA code)")
    parser.add_argument("--only", help="comma-separated project names")
    parser.add_argument("--json", help="write every finding to this file")
    parser.add_argument(
        "--sinks", action="store_true", help="print every mask sink and the mask value found there"
    )
    parser.add_argument("--hand", action="store_true", help="census of hand-written sinks")
    parser.add_argument(
        "--no-project-wide", action="store_true", help="--sinks: this file alone (docs/reach.md)"
    )
    parser.add_argument(
        "--set", choices=sorted(SETS), default="libs", help="which releases (default: libs)"
    )
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    projects = SETS[args.set]
    if args.only:
        keep = {_norm(n) for n in args.only.split(",")}
        projects = [p for p in projects if _norm(p[0]) in keep]
    if args.sinks:
        return sink_census(projects, not args.no_project_wide)
    if args.hand:  # issue 17: hand-written attention (bench/hand_census.py)
        from hand_census import hand_census

        return hand_census(projects, fetch, py_files, _norm)
    codes = [c.strip() for c in args.codes.split(",")] if args.codes else None
    found, stats = analyze(projects, codes)

    by_code: Dict[str, list] = collections.defaultdict(list)
    for rel, f in found:
        by_code[f.code].append((rel, f))
    for code in sorted(by_code):
        items = sorted(by_code[code], key=lambda x: (x[0], x[1].line, x[1].col))
        print(f"\n## {code}: {len(items)}")
        for rel, f in items:
            print(f"{rel}:{f.line}:{f.col}: {f.code} {f.message}")
    print("\n## summary")
    total_files = sum(int(s["files"]) for s in stats.values())
    for proj, s in stats.items():
        print(f"{proj}: {s['files']} files, {s['findings']} findings, {s['seconds']} s")
    print(f"total: {total_files} files, {len(found)} findings")
    for code in sorted(by_code):
        print(f"  {code}: {len(by_code[code])}")
    if args.json:
        data = {"projects": stats, "findings": [dict(f.to_dict(), path=rel) for rel, f in found]}
        pathlib.Path(args.json).write_text(json.dumps(data, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
