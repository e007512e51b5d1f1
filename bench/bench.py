"""Issue 2's benchmark: what flake8-mha costs, measured side by side in one run.

1. flake8 --select=E9 -j 1 over every .py of the installed torch package, in a
   virtualenv without the plugin and in one with it (targets: at most 1.10x
   wall time, 1.2x peak RSS).
2. The attention-dense subset of those files (they mention MultiheadAttention,
   Transformer*Layer or scaled_dot_product_attention): flake8-mha's analysis
   (``analyze_source``, every code) against a bare ``libcst.parse_module``
   (target: at most 1.5x) and against TorchFix (target: ours at least 5x
   faster), both in process per file and as flake8 plugins.

Every measurement runs in a fresh process; the repetitions are interleaved
(the order of the variants rotates) and the medians are reported.

    python bench/bench.py [--reps 3] [--jobs 1] [--only flake8|dense] [--write]

--write puts the table and the command into bench/RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import shlex
import subprocess
import sys
import tempfile
import textwrap
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _common import (BENCH, compile_plugin, dense_files, ensure_venv, machine,  # noqa: E402
                     measure, median, py_files, shown_command, torch_root, venv_python,
                     venv_versions)

# per-file timing inside one process; prints JSON
_INPROC = textwrap.dedent("""
    import gc, json, resource, sys, time
    mode, listing = sys.argv[1], sys.argv[2]
    paths = json.load(open(listing))
    if mode in ("parse", "ours"):
        import libcst as cst
        from flake8_mha.lint.engine import analyze_source, decode_source
        from flake8_mha.rules.base import all_rules
        codes = [r.CODE for r in all_rules() if r.CODE != "MHA000"]
        texts = [decode_source(open(p, "rb").read()) for p in paths]
    else:
        from torchfix.torchfix import TorchChecker
        texts = [open(p, "rb").read().decode("utf-8") for p in paths]
    times, found = [], 0
    for path, text in zip(paths, texts):
        t = time.perf_counter()
        if mode == "parse":
            cst.parse_module(text)
        elif mode == "ours":
            found += len(analyze_source(text, path, codes))
        else:
            found += len(list(TorchChecker(None, text.splitlines(keepends=True)).run()))
        times.append(time.perf_counter() - t)
    print(json.dumps({"total": sum(times), "times": times, "found": found,
                      "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
""")


def inproc(venv: str, mode: str, listing: pathlib.Path) -> dict:
    res = subprocess.run([str(venv_python(venv)), "-c", _INPROC, mode, str(listing)],
                         capture_output=True, text=True, cwd=tempfile.gettempdir())
    if res.returncode:
        raise SystemExit(f"{venv} {mode} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout)


def flake8(venv: str) -> str:
    return str(venv_python(venv).parent / "flake8")


def part1(torch: pathlib.Path, files, reps: int, jobs: int, log) -> dict:
    variants = {
        "flake8 (no plugin)": [flake8("base"), "--select=E9", "-j", str(jobs), str(torch)],
        "flake8 + flake8-mha": [flake8("mha"), "--select=E9", "-j", str(jobs), str(torch)],
    }
    runs = {name: [] for name in variants}
    names = list(variants)
    for rep in range(reps):
        order = names if rep % 2 == 0 else names[::-1]
        for name in order:
            r = measure(variants[name])
            if r["rc"] not in (0, 1):
                raise SystemExit(f"{name} failed ({r['rc']}): {r['stderr']}")
            runs[name].append(r)
            log(f"  rep {rep + 1}/{reps} {name}: {r['wall']:.1f} s wall, {r['cpu']:.1f} s CPU, "
                f"{r['rss_mb']:.0f} MB")
    base, mha = (runs[n] for n in names)
    med = {n: {k: median([r[k] for r in runs[n]]) for k in ("wall", "cpu", "rss_mb")}
           for n in names}
    return {
        "files": len(files), "jobs": jobs, "reps": reps, "median": med,
        "ratio": {k: med[names[1]][k] / med[names[0]][k] for k in ("wall", "cpu", "rss_mb")},
        "commands": {n: shown_command(v) for n, v in variants.items()},
        "same_output": base[0]["stdout"] == mha[0]["stdout"],
    }


def part2(dense, reps: int, log) -> dict:
    listing = pathlib.Path(tempfile.mkstemp(suffix=".json", prefix="dense-")[1])
    listing.write_text(json.dumps([str(p) for p in dense]))
    inproc_variants = {
        "libcst.parse_module": ("mha", "parse"),
        "flake8-mha analyze_source": ("mha", "ours"),
        "TorchFix TorchChecker": ("torchfix", "torchfix"),
    }
    flake8_variants = {
        "flake8 (no plugin)": [flake8("base"), "--select=E9", "-j", "1", *map(str, dense)],
        "flake8 --select=MHA": [flake8("mha"), "--select=MHA", "-j", "1", *map(str, dense)],
        "flake8 --select=TOR": [flake8("torchfix"), "--select=TOR", "-j", "1", *map(str, dense)],
    }
    res = {n: [] for n in list(inproc_variants) + list(flake8_variants)}
    names = list(res)
    for rep in range(reps):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for name in order:
            if name in inproc_variants:
                r = inproc(*inproc_variants[name], listing)
                res[name].append({"time": r["total"], "rss_mb": r["rss_mb"], "found": r["found"],
                                  "times": r["times"]})
            else:
                r = measure(flake8_variants[name])
                res[name].append({"time": r["wall"], "rss_mb": r["rss_mb"],
                                  "found": len(r["stdout"].splitlines())})
            log(f"  rep {rep + 1}/{reps} {name}: {res[name][-1]['time']:.2f} s, "
                f"{res[name][-1]['rss_mb']:.0f} MB, {res[name][-1]['found']} findings")
    listing.unlink()
    med = {n: {"time": median([r["time"] for r in res[n]]),
               "rss_mb": median([r["rss_mb"] for r in res[n]]),
               "found": res[n][0]["found"]} for n in names}
    parse, ours, tfix = (med[n]["time"] for n in list(inproc_variants))
    base, f_mha, f_tor = (med[n]["time"] for n in list(flake8_variants))
    # per-file ratio ours/parse: median over files of the per-file medians
    per_file = []
    for i in range(len(dense)):
        p = median([r["times"][i] for r in res["libcst.parse_module"]])
        o = median([r["times"][i] for r in res["flake8-mha analyze_source"]])
        if p > 0:
            per_file.append(o / p)
    return {
        "files": len(dense), "reps": reps, "median": med,
        "ours_over_parse": ours / parse,
        "ours_over_parse_per_file_median": median(per_file) if per_file else None,
        "torchfix_over_ours": tfix / ours,
        "plugin_cost": {"flake8-mha": f_mha - base, "TorchFix": f_tor - base},
        "torchfix_over_ours_in_flake8": (f_tor - base) / (f_mha - base) if f_mha > base else None,
        "commands": {n: shown_command(v[:4]) + f" <{len(dense)} files>"
                     for n, v in flake8_variants.items()},
    }


def table(p1, p2, versions) -> str:
    out = []
    if p1:
        m, r = p1["median"], p1["ratio"]
        out += [f"### 1. flake8 over the torch package ({p1['files']} files, -j {p1['jobs']}, "
                f"median of {p1['reps']} interleaved runs)", "",
                "| run | wall s | CPU s | peak RSS MB |", "| --- | ---: | ---: | ---: |"]
        for name, v in m.items():
            out.append(f"| {name} | {v['wall']:.1f} | {v['cpu']:.1f} | {v['rss_mb']:.0f} |")
        out.append(f"| **ratio** (target 1.10 / - / 1.20) | **{r['wall']:.3f}** | {r['cpu']:.3f} | "
                   f"**{r['rss_mb']:.2f}** |")
        out += ["", "Commands:", ""] + [f"    {c}" for c in p1["commands"].values()]
        out += ["", "flake8's output identical with and without the plugin: "
                f"{p1['same_output']}", ""]
    if p2:
        m = p2["median"]
        out += [f"### 2. The attention-dense subset ({p2['files']} files), median of {p2['reps']} "
                f"interleaved runs", "",
                "| what | time s | peak RSS MB | findings |", "| --- | ---: | ---: | ---: |"]
        for name, v in m.items():
            out.append(f"| {name} | {v['time']:.2f} | {v['rss_mb']:.0f} | {v['found']} |")
        pf = p2["ours_over_parse_per_file_median"]
        tf = p2["torchfix_over_ours_in_flake8"]
        out += ["",
                f"- flake8-mha / bare parse: **{p2['ours_over_parse']:.2f}x** in total "
                f"(median per file {pf:.2f}x; target at most 1.5x)",
                f"- TorchFix / flake8-mha, in process: **{p2['torchfix_over_ours']:.2f}x** "
                f"(target at least 5x)",
                f"- plugin cost inside flake8 (run minus flake8 alone): flake8-mha "
                f"{p2['plugin_cost']['flake8-mha']:.2f} s, "
                f"TorchFix {p2['plugin_cost']['TorchFix']:.2f} s"
                + (f" ({tf:.2f}x)" if tf else ""),
                "", "Commands (each over the same file list):", ""]
        out += [f"    {c}" for c in p2["commands"].values()]
        out += ["", "In process: `python -c` in each virtualenv timing, per file, "
                "`libcst.parse_module(text)`, "
                "`flake8_mha.lint.engine.analyze_source(text, path, all codes)` "
                "and `list(torchfix.torchfix.TorchChecker(None, lines).run())`.", ""]
    out += ["Versions: " + "; ".join(f"{v}: " + ", ".join(f"{k} {x}" for k, x in d.items())
                                     for v, d in versions.items()), ""]
    return "\n".join(out)


def update_results(section: str, body: str) -> None:
    path = BENCH / "RESULTS.md"
    text = path.read_text() if path.exists() else "# Benchmark results\n\n"
    start, end = f"<!-- {section} -->", f"<!-- /{section} -->"
    block = f"{start}\n{body}\n{end}"
    if start in text and end in text:
        text = text[:text.index(start)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=1, help="flake8 -j for part 1 (default 1)")
    ap.add_argument("--only", choices=("flake8", "dense"))
    ap.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    ap.add_argument("--render", action="store_true",
                    help="rewrite bench/RESULTS.md from the last run's figures")
    args = ap.parse_args(argv)
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    last = BENCH / ".cache" / "bench-last.json"
    if args.render:
        saved = json.loads(last.read_text())
        for key, part in (("p1", "part 1"), ("p2", "part 2")):
            if saved.get(key):
                p = saved[key]
                body = table(p if key == "p1" else None, p if key == "p2" else None,
                             saved["versions"])
                update_results(f"bench.py {part}", f"{saved['header'][key]}\n\n{body}")
        return 0
    for name in ("base", "mha", "torchfix"):
        ensure_venv(name, log)
    compile_plugin()  # the mha environment's editable copy, as installed
    versions = {n: venv_versions(n) for n in ("base", "mha", "torchfix")}
    torch = torch_root()
    files = py_files(torch)
    dense = dense_files(files)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    log(f"torch at {torch}: {len(files)} files, {len(dense)} attention-dense; {machine()}")
    p1 = part1(torch, files, args.reps, args.jobs, log) if args.only != "dense" else None
    p2 = part2(dense, args.reps, log) if args.only != "flake8" else None
    text = table(p1, p2, versions)
    print(text)
    if args.write:
        cmd = "python bench/bench.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
        header = f"## Issue 2 benchmark ({started}; {machine()})\n\nCommand: `{cmd}`"
        saved = json.loads(last.read_text()) if last.exists() else {"header": {}}
        saved["versions"] = versions
        for key, part, p in (("p1", "part 1", p1), ("p2", "part 2", p2)):
            if p:  # a run of one part keeps the other's last figures
                saved[key] = p
                saved["header"][key] = header
                body = table(p if key == "p1" else None, p if key == "p2" else None, versions)
                update_results(f"bench.py {part}", f"{header}\n\n{body}")
        last.parent.mkdir(exist_ok=True)
        last.write_text(json.dumps(saved, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
