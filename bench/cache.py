"""Issue 15 target 4: a second ``flake8-mha check`` over an unchanged tree
costs at most 10% of the first (the cache of per-file results, flake8_mha/app/cache.py).

Copies the installed torch package's ``nn/`` folder to a temporary folder and
times ``flake8-mha check nn`` there in a fresh process, cold (cache folder
removed first) and warm (the cache the cold run left), interleaved
cold/warm for each repetition; reports the medians and their ratio.  Both
runs must print the same report, or the benchmark fails.

    python bench/cache.py [--reps 3] [--jobs 1] [--write]

--write puts the table and the command into bench/RESULTS.md.
"""
from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import pathlib

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _common import machine, median, py_files, torch_root  # noqa: E402


def run_check(folder: pathlib.Path, jobs: int) -> "tuple[float, str]":
    cmd = [sys.executable, "-m", "flake8_mha.frontends.cli", "check", "nn", "-j", str(jobs)]
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=3600)
    elapsed = time.perf_counter() - t
    if proc.returncode not in (0, 1) or "Traceback" in proc.stderr:
        raise SystemExit(f"check failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return elapsed, proc.stdout


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=1, help="check -j (default 1)")
    ap.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = ap.parse_args(argv)
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    source = torch_root() / "nn"
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    cold, warm = [], []
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)
        shutil.copytree(source, folder / "nn", ignore=shutil.ignore_patterns("__pycache__"))
        n = len(py_files(folder / "nn"))
        log(f"torch nn/: {n} files; {machine()}")
        for rep in range(args.reps):
            shutil.rmtree(folder / ".flake8-mha-cache", ignore_errors=True)
            c, report_cold = run_check(folder, args.jobs)
            w, report_warm = run_check(folder, args.jobs)
            if report_cold != report_warm:
                raise SystemExit("the warm run's report differs from the cold run's")
            cold.append(c)
            warm.append(w)
            log(f"rep {rep + 1}: cold {c:.2f} s, warm {w:.2f} s ({w / c:.1%})")
    ratio = median(warm) / median(cold)
    body = "\n".join([
        "| measurement | median | runs |",
        "| --- | --- | --- |",
        f"| cold `flake8-mha check nn -j {args.jobs}` ({n} files, cache removed) | "
        f"{median(cold):.2f} s | {', '.join(f'{x:.2f}' for x in cold)} |",
        f"| warm, same tree, same cache | {median(warm):.2f} s | "
        f"{', '.join(f'{x:.2f}' for x in warm)} |",
        f"| warm / cold (target: at most 10%) | **{ratio:.1%}** | "
        f"{'met' if ratio <= 0.10 else 'missed'} |",
    ])
    print(body)
    if args.write:
        from bench import update_results

        cmd = "python bench/cache.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
        header = (f"## Issue 15 target 4: re-run with the cache ({started}; {machine()})\n\n"
                  f"Command: `{cmd}`. Both runs print the same report (checked).")
        update_results("cache.py", f"{header}\n\n{body}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
