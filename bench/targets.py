"""Issue 15: every speed target re-measured in one run, each as a ratio against
its baseline measured in the same run, interleaved (A B, then B A, ...),
median of the repetitions.

  1  flake8 over the installed torch package, -j 1: flake8 + flake8-mha against
     flake8 alone, wall time (at most 1.05x) and peak memory (at most 1.2x)
  2  attention-dense files (the fixtures, which are written like the exam's
     files, and torch's nn/modules/activation.py, nn/modules/transformer.py,
     nn/functional.py): flake8 + plugin against flake8 alone (at most 1.3x)
  3  one big attention file as an editor lints it (flake8 on torch's
     nn/modules/activation.py): at most 1.2x flake8 alone
  4  a second ``flake8-mha check`` over an unchanged copy of torch's nn/:
     bench/cache.py, run from here (at most 10% of the first run)
  5  a generated attention-heavy file of 3 MB (fixtures/MHA002_ignore_mask_to_sdpa.py
     repeated): flake8 + plugin at most 2x flake8 alone, at most 600 MB
  6  ``flake8-mha check --no-cache`` over torch, -j 2 against -j 1: at least 1.7x faster
  7  project-wide analysis (on by default) against per-file mode
     (``--no-project-wide``): cold at most 1.2x, warm the same

flake8 alone runs in bench/.venvs/base (flake8 and libcst, no plugin; made once
with pip); flake8 + plugin runs with the Python that runs this script, which
must have flake8-mha installed.

    python bench/targets.py [--reps 3] [--quick] [--only 1,3] [--write]

--quick: one repetition, torch's nn/ instead of the whole tree for 1 and 6, a
0.5 MB generated file for 5, no target 4: a smoke run, not a measurement.
--write puts the table and the command into bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    BENCH,
    ROOT,
    compile_plugin,
    ensure_venv,
    machine,
    measure,
    median,
    py_files,
    torch_root,
)

FIXTURE = ROOT / "fixtures" / "MHA002_ignore_mask_to_sdpa.py"
DENSE_TORCH = ("nn/modules/activation.py", "nn/modules/transformer.py", "nn/functional.py")
EDITOR_FILE = "nn/modules/activation.py"
PROJECT_FLAGS = ("--project", "--project-wide", "--cross-file", "--whole-project")
PROJECT_OFF = "--no-project-wide"  # on by default (docs/reach.md): this turns it off
SKIPPED_7 = "skipped: project-wide analysis not available in this build"


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def generated_file(folder: pathlib.Path, size: int) -> pathlib.Path:
    """The fixture repeated until the file holds at least ``size`` bytes."""
    text = FIXTURE.read_text(encoding="utf-8")
    copies = -(-size // len(text.encode("utf-8")))
    path = folder / f"generated_{size // 1000}k.py"
    path.write_text(text * copies, encoding="utf-8")
    return path


def interleaved(variants: dict, reps: int, cwd=None) -> dict:
    """Each variant ``reps`` times in fresh processes, the order turning each
    repetition; per variant the runs (wall, CPU, peak RSS of the largest process)."""
    runs = {name: [] for name in variants}
    names = list(variants)
    for rep in range(reps):
        order = names if rep % 2 == 0 else names[::-1]
        for name in order:
            r = measure(variants[name], cwd=cwd)
            if r["rc"] not in (0, 1) or "Traceback" in r["stderr"]:
                raise SystemExit(f"{name} failed ({r['rc']}): {r['stderr'][-2000:]}")
            runs[name].append(r)
            log(
                f"    rep {rep + 1}/{reps} {name}: {r['wall']:.2f} s wall, "
                f"{r['cpu']:.2f} s CPU, {r['rss_mb']:.0f} MB"
            )
    return runs


def med(runs, key):
    return median([r[key] for r in runs])


def pair(a_runs, b_runs, key):
    """Median of the per-repetition ratios B/A (each pair ran back to back)."""
    return median([b[key] / a[key] for a, b in zip(a_runs, b_runs)])


class Bench:
    def __init__(self, args) -> None:
        self.args = args
        self.reps = 1 if args.quick else args.reps
        self.base_py = str(ensure_venv("base", log))
        self.mha_py = sys.executable
        compile_plugin()  # as installed: not compiled again by every process
        self.torch = torch_root()
        self.rows = []  # (target, measurement, baseline, with plugin, ratio, target text, met)
        self.commands = []

    def flake8(self, python: str, paths, jobs: int = 1):
        return [python, "-m", "flake8", "--select=E9,MHA", "-j", str(jobs), *map(str, paths)]

    def versus_flake8(self, number, what, paths, limit, mem_limit=None, mem_abs=None):
        variants = {
            "flake8 alone": self.flake8(self.base_py, paths),
            "flake8 + flake8-mha": self.flake8(self.mha_py, paths),
        }
        runs = interleaved(variants, self.reps)
        a, b = runs["flake8 alone"], runs["flake8 + flake8-mha"]
        if _own(a[0]["stdout"]) != _own(b[0]["stdout"]):
            raise SystemExit(f"target {number}: flake8's own findings differ with the plugin")
        wall = pair(a, b, "wall")
        cpu = pair(a, b, "cpu")
        self.rows.append(
            (
                number,
                f"{what}: wall (CPU)",
                f"{med(a, 'wall'):.2f} s ({med(a, 'cpu'):.2f} s)",
                f"{med(b, 'wall'):.2f} s ({med(b, 'cpu'):.2f} s)",
                f"{wall:.2f}x ({cpu:.2f}x)",
                f"at most {limit}x",
                wall <= limit,
            )
        )
        if mem_limit is not None:
            mem = pair(a, b, "rss_mb")
            self.rows.append(
                (
                    number,
                    f"{what}: peak memory",
                    f"{med(a, 'rss_mb'):.0f} MB",
                    f"{med(b, 'rss_mb'):.0f} MB",
                    f"{mem:.2f}x",
                    f"at most {mem_limit}x",
                    mem <= mem_limit,
                )
            )
        if mem_abs is not None:
            peak = med(b, "rss_mb")
            self.rows.append(
                (
                    number,
                    f"{what}: peak memory with the plugin",
                    f"{med(a, 'rss_mb'):.0f} MB",
                    f"{peak:.0f} MB",
                    "-",
                    f"at most {mem_abs} MB",
                    peak <= mem_abs,
                )
            )
        shown = f"<{len(paths)} files>" if len(paths) > 1 else _shown(paths[0])
        self.commands.append(
            (number, f"python -m flake8 --select=E9,MHA -j 1 {shown}", "both environments")
        )

    def target1(self) -> None:
        tree = self.torch / "nn" if self.args.quick else self.torch
        n = len(py_files(tree))
        log(f"target 1: flake8 over {_shown(tree)} ({n} files)")
        self.versus_flake8(1, f"flake8 -j 1 over {_shown(tree)} ({n} files)", [tree], 1.05, 1.2)

    def target2(self) -> None:
        files = sorted((ROOT / "fixtures").glob("**/*.py")) + [self.torch / r for r in DENSE_TORCH]
        log(f"target 2: {len(files)} attention-dense files")
        what = f"{len(files)} attention-dense files (the fixtures and torch's 3)"
        self.versus_flake8(2, what, files, 1.3)

    def target3(self) -> None:
        log(f"target 3: flake8 on {EDITOR_FILE}")
        self.versus_flake8(3, f"flake8 on torch's {EDITOR_FILE}", [self.torch / EDITOR_FILE], 1.2)

    def target5(self, tmp: pathlib.Path) -> None:
        size = 500_000 if self.args.quick else 3_000_000
        path = generated_file(tmp, size)
        mb = path.stat().st_size / 1e6
        lines = path.read_text(encoding="utf-8").count("\n")
        log(f"target 5: generated file, {mb:.1f} MB, {lines} lines")
        self.versus_flake8(5, f"a generated {mb:.1f} MB file ({lines} lines)", [path], 2.0, None, 600)

    def target6(self) -> None:
        tree = self.torch / "nn" if self.args.quick else self.torch
        variants = {
            f"-j {j}": [self.mha_py, "-m", "flake8_mha.cli", "check", "--no-cache", "-j", str(j)]
            + [str(tree)]
            for j in (1, 2)
        }
        log(f"target 6: flake8-mha check over {_shown(tree)}, -j 1 against -j 2")
        runs = interleaved(variants, self.reps)
        a, b = runs["-j 1"], runs["-j 2"]
        if a[0]["stdout"] != b[0]["stdout"]:
            raise SystemExit("target 6: -j 2 reports differ from -j 1")
        speedup = 1 / pair(a, b, "wall")
        cpu_share = pair(a, b, "cpu")  # CPU of -j 2 over -j 1: the work added by splitting
        self.rows.append(
            (
                6,
                f"`check` over {_shown(tree)}, -j 2 against -j 1 ({os.cpu_count()} cores)",
                f"{med(a, 'wall'):.2f} s",
                f"{med(b, 'wall'):.2f} s",
                f"{speedup:.2f}x faster (CPU {cpu_share:.2f}x)",
                "at least 1.7x",
                speedup >= 1.7,
            )
        )
        self.commands.append(
            (6, f"python -m flake8_mha.cli check --no-cache -j 1|2 {_shown(tree)}", "")
        )

    def target4(self) -> None:
        log("target 4: bench/cache.py")
        cmd = [self.mha_py, str(BENCH / "cache.py"), "--reps", str(self.reps)]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if proc.returncode:
            raise SystemExit(f"bench/cache.py failed: {proc.stderr[-2000:]}")
        cold = re.search(r"\| cold .*? \| ([\d.]+) s \|", proc.stdout)
        warm = re.search(r"\| warm, .*? \| ([\d.]+) s \|", proc.stdout)
        ratio = float(warm.group(1)) / float(cold.group(1))
        self.rows.append(
            (
                4,
                "second `check` over an unchanged copy of torch's nn/",
                f"{cold.group(1)} s (cold)",
                f"{warm.group(1)} s (warm)",
                f"{ratio:.1%}",
                "at most 10%",
                ratio <= 0.10,
            )
        )
        self.commands.append((4, f"python bench/cache.py --reps {self.reps}", ""))

    def project_flag(self):
        if self.args.project_flag:
            return self.args.project_flag
        proc = subprocess.run(
            [self.mha_py, "-m", "flake8_mha.cli", "check", "--help"],
            capture_output=True,
            text=True,
        )
        if re.search(rf"(^|\s){re.escape(PROJECT_OFF)}\b", proc.stdout):
            return PROJECT_OFF
        for flag in PROJECT_FLAGS:
            if re.search(rf"(^|\s){re.escape(flag)}\b", proc.stdout):
                return flag
        return None

    def target7(self, tmp: pathlib.Path) -> None:
        flag = self.project_flag()
        if flag is None:
            log(f"target 7: {SKIPPED_7}")
            self.rows.append((7, "project-wide analysis", "-", "-", "-", "-", None))
            return
        folder = tmp / "t7"
        shutil.copytree(
            self.torch / "nn", folder / "nn", ignore=shutil.ignore_patterns("__pycache__")
        )
        check = [self.mha_py, "-m", "flake8_mha.cli", "check", "-j", "1", "nn"]
        cache = folder / ".flake8-mha-cache"
        cold = {"per-file": [], "project-wide": []}
        warm = {"per-file": [], "project-wide": []}
        log(f"target 7: check nn with and without {flag}, cold and warm")
        for rep in range(self.reps):
            order = ["per-file", "project-wide"]
            for mode in order if rep % 2 == 0 else order[::-1]:
                if flag == PROJECT_OFF:  # project-wide is the default: the flag is per-file
                    argv = check + ([flag] if mode == "per-file" else [])
                else:
                    argv = check + ([flag] if mode == "project-wide" else [])
                shutil.rmtree(cache, ignore_errors=True)
                cold[mode].append(measure(argv, cwd=folder)["wall"])
                warm[mode].append(measure(argv, cwd=folder)["wall"])
                log(f"    rep {rep + 1} {mode}: cold {cold[mode][-1]:.2f} s, warm {warm[mode][-1]:.2f} s")
        for kind, runs, limit in (("cold", cold, 1.2), ("warm", warm, 1.1)):
            ratio = median([p / f for f, p in zip(runs["per-file"], runs["project-wide"])])
            self.rows.append(
                (
                    7,
                    f"`check nn` {kind}, project-wide against per-file ({PROJECT_OFF})"
                    if flag == PROJECT_OFF
                    else f"`check nn` {kind}, project-wide ({flag}) against per-file",
                    f"{median(runs['per-file']):.2f} s",
                    f"{median(runs['project-wide']):.2f} s",
                    f"{ratio:.2f}x",
                    f"at most {limit}x" + (" (the same)" if kind == "warm" else ""),
                    ratio <= limit,
                )
            )
        self.commands.append((7, f"python -m flake8_mha.cli check -j 1 nn [{flag}]", ""))

    def table(self) -> str:
        out = [
            "| # | measurement | baseline | flake8-mha | ratio | target | |",
            "| ---: | --- | ---: | ---: | ---: | --- | --- |",
        ]
        for number, what, base, ours, ratio, target, met in self.rows:
            if met is None:
                out.append(f"| {number} | {what} | | | | | {SKIPPED_7} |")
                continue
            out.append(
                f"| {number} | {what} | {base} | {ours} | **{ratio}** | {target} | "
                f"{'met' if met else '**missed**'} |"
            )
        return "\n".join(out)


def _own(report: str):
    """flake8's own findings (E9) in a report."""
    return [line for line in report.splitlines() if re.search(r":\d+:\d+: E9\d\d ", line)]


def _shown(path) -> str:
    from _common import shown

    return shown(path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3, help="repetitions (default 3)")
    ap.add_argument("--quick", action="store_true", help="a smoke run: see the module's doc")
    ap.add_argument("--only", help="comma-separated target numbers (default: all)")
    ap.add_argument("--project-flag", help="check's option that turns project-wide analysis on")
    ap.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = ap.parse_args(argv)
    only = {int(x) for x in args.only.split(",")} if args.only else {1, 2, 3, 4, 5, 6, 7}
    if args.quick:
        only.discard(4)
    bench = Bench(args)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_before = os.getloadavg()[0]
    log(f"{machine()}; {bench.reps} repetition(s)")
    with tempfile.TemporaryDirectory() as tmp:
        # the short ones first; with --write the table is rewritten after each target,
        # so that an interrupted run leaves what it measured
        for number in [n for n in (3, 2, 1, 5, 6, 4, 7) if n in only]:
            if number == 5:
                bench.target5(pathlib.Path(tmp))
            elif number == 7:
                bench.target7(pathlib.Path(tmp))
            else:
                getattr(bench, f"target{number}")()
            if args.write:
                write(bench, argv, started, load_before)
    print(bench.table())
    return 0


def write(bench: Bench, argv, started: str, load_before: float) -> None:
    text = bench.table()
    from bench import update_results

    cmd = "python bench/targets.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    header = (
        f"## Issue 15 targets ({started}; {machine()}; "
        f"{load_before:.1f} at the start)\n\n"
        f"Command: `{cmd.strip()}`. Median of {bench.reps} interleaved repetitions; "
        "each ratio is the median of the per-repetition ratios.\n\n"
        "Commands measured (flake8 alone in bench/.venvs/base, flake8 + plugin in "
        "the environment that runs the script):\n\n"
        + "\n".join(f"- {n}: `{c}`" for n, c, _ in bench.commands)
    )
    only = bench.args.only
    update_results("targets.py" + (f" {only}" if only else ""), f"{header}\n\n{text}")


if __name__ == "__main__":
    sys.exit(main())
