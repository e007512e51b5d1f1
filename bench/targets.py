"""Issue 30: the nine speed targets re-measured in one run, each a ratio
against its baseline measured in the same run, interleaved (A B C, then
C B A, ...), median of the per-repetition ratios.

  1  flake8 -j 1 over the installed torch package, cold (the results cache
     emptied before each run, as a first run finds it):
     the plugin's added CPU (flake8 + plugin minus flake8 alone) at most 1.5x
     the floor's added CPU; peak memory at most 1.3x flake8 alone's.  The
     floor (bench/floors.py) is ``import libcst`` plus LibCST's parse of the
     focused text of the files that must be analysed (for the whole tree, the
     files floors.py's ``gate`` keeps), a fresh process in the same
     interleaving whose CPU less a bare ``python -c pass``'s is the floor's
  2  attention-dense files (the fixtures and torch's nn/modules/activation.py,
     nn/modules/transformer.py, nn/functional.py): the same ratio, at most 1.5x
  3  torch's nn/modules/activation.py alone, a fresh process (an editor that
     spawns flake8): the same ratio, at most 1.5x
  4  a second ``flake8-mha check`` over an unchanged copy of torch's nn/
     (bench/cache.py, run from here): at most 10% of the first run
  5  a generated attention file of 3 MB (fixtures/MHA002_ignore_mask_to_sdpa.py
     repeated), cold: time and peak memory each at most 2x flake8 alone's
  6  ``flake8-mha check --no-cache`` over torch, -j 2 against -j 1: at least 1.7x faster
  7  project-wide analysis (on by default) against ``--no-project-wide``,
     ``check`` over a copy of torch's nn/: cold at most 1.2x, warm the same
  8  flake8 re-run over an unchanged copy of torch's nn/ with the plugin's
     results cache (left by a first run) against flake8 alone's re-run: at
     most 1.05x wall; the cached run must print what the first run printed
  9  a long-lived editor process: flake8's API called in one Python process
     (as VS Code's flake8 extension runs it: ``flake8.main.cli.main`` with the
     text on stdin and ``--stdin-display-name``), a re-lint of torch's
     nn/modules/activation.py after a one-line edit (a statement inserted
     before the first class, a new one each time), against flake8 alone's
     re-lint in the same kind of process: at most 1.3x wall

flake8 alone runs in bench/.venvs/base (flake8 and libcst, no plugin; made once
with pip); flake8 + plugin runs with the Python that runs this script, which
must have flake8-mha importable (PYTHONPATH is passed on to every process).

    python bench/targets.py [--reps 3] [--quick] [--only 1,3] [--write]

--quick: one repetition, torch's nn/ instead of the whole tree for 1 and 6, a
0.5 MB generated file for 5, torch's nn/modules/ for 8: a smoke run, not a
measurement.  --write puts the table and the commands into bench/RESULTS.md
(rewritten after each target, so an interrupted run keeps what it measured).
"""

from __future__ import annotations

import argparse
import json
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
PROJECT_OFF = "--no-project-wide"  # on by default (docs/reach.md): this turns it off
CACHE_DIR = ".flake8-mha-cache"  # the results cache, on by default in the plugin too
ORDER = (3, 9, 2, 8, 1, 5, 6, 4, 7)  # the short ones first
LIMITS = {1: 1.5, 2: 1.5, 3: 1.5, 5: 2.0, 8: 1.05, 9: 1.3}


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def parse_only(text):
    """``--only 1,3`` -> {1, 3}; every target when not given."""
    if not text:
        return set(ORDER)
    out = {int(x) for x in re.split(r"[,\s]+", text.strip()) if x}
    bad = out - set(ORDER)
    if bad:
        raise SystemExit(f"no such target: {sorted(bad)} (1 to 9)")
    return out


def generated_file(folder: pathlib.Path, size: int) -> pathlib.Path:
    """The fixture repeated until the file holds at least ``size`` bytes."""
    text = FIXTURE.read_text(encoding="utf-8")
    copies = -(-size // len(text.encode("utf-8")))
    path = folder / f"generated_{size // 1000}k.py"
    path.write_text(text * copies, encoding="utf-8")
    return path


def edited(text: str, n: int) -> str:
    """Target 9's one-line edit: ``_edit_marker = n`` inserted before the
    first top-level class (at the end when there is none)."""
    lines = text.splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines) if line.startswith("class ")), len(lines))
    return "".join(lines[:at] + [f"_edit_marker = {n}\n"] + lines[at:])


def added_ratio(alone: float, plugin: float, floor: float) -> float:
    """What the plugin adds to flake8 alone, in units of what the floor adds."""
    return (plugin - alone) / floor if floor > 0 else float("inf")


def env_with_path() -> dict:
    """This process's environment, with the checkout first on PYTHONPATH (a
    worktree run with PYTHONPATH set is measured, not the installed copy)."""
    env = dict(os.environ)
    parts = [str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))
    return env


def interleaved(variants: dict, reps: int, cwd=None, before=None) -> dict:
    """Each variant ``reps`` times in fresh processes, the order turning each
    repetition; per variant the runs (wall, CPU, peak RSS of the largest
    process, its output).  ``before(name)``: called before each run."""
    runs = {name: [] for name in variants}
    names = list(variants)
    for rep in range(reps):
        order = names if rep % 2 == 0 else names[::-1]
        for name in order:
            if before is not None:
                before(name)
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


def own(report: str):
    """flake8's own findings (E9) in a report."""
    return [line for line in report.splitlines() if re.search(r":\d+:\d+: E9\d\d ", line)]


def shown_path(path) -> str:
    from _common import shown

    return shown(path)


# Target 9's editor: one long-lived process lints a file through flake8's API
# ``1 + n`` times (the file as opened, then n one-line edits), the text on
# stdin, and prints the median wall and CPU seconds of the n re-lints and the
# first re-lint's report.  flake8 caches stdin for its plugins
# (``utils.stdin_get_value``); an editor's process that lints again clears it.
EDITOR_SCRIPT = r"""
import io, json, os, sys, time
sys.path.insert(0, sys.argv[4])
from targets import edited
import flake8.main.cli as cli
from flake8 import utils
path, n, extra = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
original = open(path, encoding="utf-8").read()

def lint(text):
    getattr(utils.stdin_get_value, "cache_clear", lambda: None)()
    sys.stdin = io.TextIOWrapper(io.BytesIO(text.encode("utf-8")), encoding="utf-8")
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    real, sys.stdout = sys.stdout, out
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        cli.main(["--select=E9,MHA", *extra, "--stdin-display-name", path, "-"])
    except SystemExit:
        pass
    finally:
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        sys.stdout = real
    out.flush()
    return wall, cpu, out.buffer.getvalue().decode("utf-8")

lint(original)  # the file as the editor opened it
# a new edit in every process: what one process wrote to the results cache is no
# answer for the next one's edits
runs = [lint(edited(original, os.getpid() * 1000 + i)) for i in range(1, n + 1)]
walls, cpus = sorted(r[0] for r in runs), sorted(r[1] for r in runs)
print(json.dumps({"relint_wall": walls[n // 2], "relint_cpu": cpus[n // 2], "report": runs[0][2]}))
"""


class Bench:
    def __init__(self, args) -> None:
        self.args = args
        self.reps = 1 if args.quick else args.reps
        self.base_py = str(ensure_venv("base", log))
        self.mha_py = sys.executable
        compile_plugin()  # as installed: not compiled again by every process
        os.environ.update(env_with_path())  # every process measured inherits it
        # flake8 alone runs isolated (-I): PYTHONPATH holds the checkout, and an
        # editable install leaves flake8_mha.egg-info there, which would load the
        # plugin into flake8 alone too
        seen = subprocess.run(
            [*self.python(self.base_py), "-m", "flake8", "--version"],
            capture_output=True, text=True, cwd=tempfile.gettempdir(),
        ).stdout
        if "flake8-mha" in seen:
            raise SystemExit(f"flake8 alone ({self.base_py}) loads the plugin: {seen.strip()}")
        self.torch = torch_root()
        self.rows = []  # (target, measurement, baseline, with plugin, ratio, target text, met)
        self.commands = []
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="mha-targets-"))
        # cold runs: flake8 runs here, the results cache (at this project root) emptied first
        self.cold = self.tmp / "cold"
        self.cold.mkdir()
        (self.cold / "setup.cfg").write_text("")

    def empty_cache(self, name=None) -> None:
        shutil.rmtree(self.cold / CACHE_DIR, ignore_errors=True)

    def python(self, python: str) -> list:
        """How to start ``python``: flake8 alone's isolated from PYTHONPATH."""
        return [python, "-I"] if python == self.base_py else [python]

    def flake8(self, python: str, paths, jobs: int = 1, plugin_args=()):
        return [
            *self.python(python),
            "-m",
            "flake8",
            "--select=E9,MHA",
            "-j",
            str(jobs),
            *plugin_args,
            *map(str, paths),
        ]

    def row(self, number, what, base, ours, ratio, target, met):
        self.rows.append((number, what, base, ours, ratio, target, met))

    # -- targets 1, 2, 3: added CPU against the floor's ---------------------------------
    def floor_texts(self, paths, gated: bool) -> pathlib.Path:
        from floors import focused_texts

        files = []
        for p in paths:
            files.extend(py_files(p) if p.is_dir() else [p])
        texts = focused_texts(files, gated=gated)
        out = self.tmp / f"floor-{len(list(self.tmp.iterdir()))}.json"
        out.write_text(json.dumps(list(texts.values())), encoding="utf-8")
        log(f"    the floor parses the focused text of {len(texts)} of {len(files)} files")
        return out, len(texts)

    def versus_floor(self, number, what, paths, gated=False, memory=None):
        from floors import FLOOR_SCRIPT

        texts, kept = self.floor_texts(paths, gated)
        variants = {
            "flake8 alone": self.flake8(self.base_py, paths),
            "flake8 + flake8-mha": self.flake8(self.mha_py, paths),
            "floor": [self.mha_py, "-c", FLOOR_SCRIPT, str(texts)],
            "python": [self.mha_py, "-c", "pass"],
        }
        runs = interleaved(variants, self.reps, cwd=self.cold, before=self.empty_cache)
        a, b, f = runs["flake8 alone"], runs["flake8 + flake8-mha"], runs["floor"]
        if own(a[0]["stdout"]) != own(b[0]["stdout"]):
            raise SystemExit(f"target {number}: flake8's own findings differ with the plugin")
        # the floor's added CPU, as the plugin's: a process's CPU less that of a bare one
        # (the process that imports libcst and parses also frees the trees and libcst at exit)
        floors = [fl["cpu"] - py["cpu"] for fl, py in zip(f, runs["python"])]
        ratio = median([added_ratio(x["cpu"], y["cpu"], fl) for x, y, fl in zip(a, b, floors)])
        floor = median(floors)
        imp = median([json.loads(r["stdout"])["import"] for r in f])
        added = median([y["cpu"] - x["cpu"] for x, y in zip(a, b)])
        self.row(
            number,
            f"{what}: the plugin's added CPU against the floor's (import libcst, "
            f"{imp:.2f} s of it in-process, + focused parse of {kept} files)",
            f"flake8 alone {med(a, 'cpu'):.2f} s; floor {floor:.2f} s",
            f"{med(b, 'cpu'):.2f} s: adds {added:.2f} s",
            f"{ratio:.2f}x",
            f"at most {LIMITS[number]}x",
            ratio <= LIMITS[number],
        )
        if memory is not None:
            mem = pair(a, b, "rss_mb")
            self.row(
                number,
                f"{what}: peak memory",
                f"{med(a, 'rss_mb'):.0f} MB",
                f"{med(b, 'rss_mb'):.0f} MB",
                f"{mem:.2f}x",
                f"at most {memory}x",
                mem <= memory,
            )
        shown = f"<{len(paths)} files>" if len(paths) > 1 else shown_path(paths[0])
        self.commands.append(
            (
                number,
                f"python -m flake8 --select=E9,MHA -j 1 {shown} (the cache emptied first); the floor: "
                "bench/floors.py's FLOOR_SCRIPT over the focused texts",
            )
        )

    def target1(self) -> None:
        tree = self.torch / "nn" if self.args.quick else self.torch
        n = len(py_files(tree))
        log(f"target 1: flake8 over {shown_path(tree)} ({n} files)")
        what = f"flake8 -j 1 over {shown_path(tree)} ({n} files), cold"
        self.versus_floor(1, what, [tree], gated=True, memory=1.3)

    def target2(self) -> None:
        files = sorted((ROOT / "fixtures").glob("**/*.py")) + [self.torch / r for r in DENSE_TORCH]
        log(f"target 2: {len(files)} attention-dense files")
        self.versus_floor(2, f"{len(files)} attention-dense files", files)

    def target3(self) -> None:
        log(f"target 3: flake8 on {EDITOR_FILE}")
        self.versus_floor(3, f"flake8 on torch's {EDITOR_FILE}", [self.torch / EDITOR_FILE])

    # -- target 5: time and memory against flake8 alone -------------------------------
    def target5(self) -> None:
        size = 500_000 if self.args.quick else 3_000_000
        path = generated_file(self.tmp, size)
        mb = path.stat().st_size / 1e6
        lines = path.read_text(encoding="utf-8").count("\n")
        log(f"target 5: generated file, {mb:.1f} MB, {lines} lines")
        runs = interleaved(
            {
                "flake8 alone": self.flake8(self.base_py, [path]),
                "flake8 + flake8-mha": self.flake8(self.mha_py, [path]),
            },
            self.reps,
            cwd=self.cold,
            before=self.empty_cache,
        )
        a, b = runs["flake8 alone"], runs["flake8 + flake8-mha"]
        what = f"a generated {mb:.1f} MB file ({lines} lines), cold"
        for key, label, unit in (("wall", "wall", "s"), ("rss_mb", "peak memory", "MB")):
            ratio = pair(a, b, key)
            self.row(
                5,
                f"{what}: {label}",
                f"{med(a, key):.{2 if unit == 's' else 0}f} {unit}",
                f"{med(b, key):.{2 if unit == 's' else 0}f} {unit}",
                f"{ratio:.2f}x",
                "at most 2.0x",
                ratio <= 2.0,
            )
        self.commands.append(
            (5, "python -m flake8 --select=E9,MHA -j 1 <file> (the cache emptied first)")
        )

    # -- target 4: bench/cache.py -------------------------------------------------------
    def target4(self) -> None:
        log("target 4: bench/cache.py")
        cmd = [self.mha_py, str(BENCH / "cache.py"), "--reps", str(self.reps)]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if proc.returncode:
            raise SystemExit(f"bench/cache.py failed: {proc.stderr[-2000:]}")
        cold = re.search(r"\| cold .*? \| ([\d.]+) s \|", proc.stdout)
        warm = re.search(r"\| warm, .*? \| ([\d.]+) s \|", proc.stdout)
        ratio = float(warm.group(1)) / float(cold.group(1))
        self.row(
            4,
            "second `check` over an unchanged copy of torch's nn/",
            f"{cold.group(1)} s (cold)",
            f"{warm.group(1)} s (warm)",
            f"{ratio:.1%}",
            "at most 10%",
            ratio <= 0.10,
        )
        self.commands.append((4, f"python bench/cache.py --reps {self.reps}"))

    # -- target 6: -j 2 against -j 1 ----------------------------------------------------
    def target6(self) -> None:
        tree = self.torch / "nn" if self.args.quick else self.torch
        variants = {
            f"-j {j}": [self.mha_py, "-m", "flake8_mha.frontends.cli", "check", "--no-cache", "-j", str(j)]
            + [str(tree)]
            for j in (1, 2)
        }
        log(f"target 6: flake8-mha check over {shown_path(tree)}, -j 1 against -j 2")
        runs = interleaved(variants, self.reps)
        a, b = runs["-j 1"], runs["-j 2"]
        if a[0]["stdout"] != b[0]["stdout"]:
            raise SystemExit("target 6: -j 2 reports differ from -j 1")
        speedup = 1 / pair(a, b, "wall")
        cpu_share = pair(a, b, "cpu")  # CPU of -j 2 over -j 1: the work added by splitting
        self.row(
            6,
            f"`check` over {shown_path(tree)}, -j 2 against -j 1 ({os.cpu_count()} cores)",
            f"{med(a, 'wall'):.2f} s",
            f"{med(b, 'wall'):.2f} s",
            f"{speedup:.2f}x faster (CPU {cpu_share:.2f}x)",
            "at least 1.7x",
            speedup >= 1.7,
        )
        self.commands.append(
            (6, f"python -m flake8_mha.frontends.cli check --no-cache -j 1|2 {shown_path(tree)}")
        )

    # -- target 7: project-wide against per-file --------------------------------------
    def copy_nn(self, name: str, sub: str = "nn") -> pathlib.Path:
        folder = self.tmp / name
        shutil.copytree(
            self.torch / sub, folder / sub, ignore=shutil.ignore_patterns("__pycache__")
        )
        (folder / "setup.cfg").write_text("")  # the project root: its cache lives here
        return folder

    def target7(self) -> None:
        folder = self.copy_nn("t7")
        check = [self.mha_py, "-m", "flake8_mha.frontends.cli", "check", "-j", "1", "nn"]
        cache = folder / ".flake8-mha-cache"
        cold = {"per-file": [], "project-wide": []}
        warm = {"per-file": [], "project-wide": []}
        log(f"target 7: check nn with and without {PROJECT_OFF}, cold and warm")
        for rep in range(self.reps):
            order = ["per-file", "project-wide"]
            for mode in order if rep % 2 == 0 else order[::-1]:
                argv = check + ([PROJECT_OFF] if mode == "per-file" else [])
                shutil.rmtree(cache, ignore_errors=True)
                cold[mode].append(measure(argv, cwd=folder)["wall"])
                warm[mode].append(measure(argv, cwd=folder)["wall"])
                log(
                    f"    rep {rep + 1} {mode}: cold {cold[mode][-1]:.2f} s, warm {warm[mode][-1]:.2f} s"
                )
        for kind, runs in (("cold", cold), ("warm", warm)):
            ratio = median([p / f for f, p in zip(runs["per-file"], runs["project-wide"])])
            self.row(
                7,
                f"`check nn` {kind}, project-wide against per-file ({PROJECT_OFF})",
                f"{median(runs['per-file']):.2f} s",
                f"{median(runs['project-wide']):.2f} s",
                f"{ratio:.2f}x",
                "at most 1.2x" + (" (the same)" if kind == "warm" else ""),
                ratio <= 1.2,
            )
        self.commands.append((7, f"python -m flake8_mha.frontends.cli check -j 1 nn [{PROJECT_OFF}]"))

    # -- target 8: flake8 re-run with the plugin's results cache -----------------------
    def target8(self) -> None:
        sub = "nn/modules" if self.args.quick else "nn"
        folder = self.copy_nn("t8", sub)
        n = len(py_files(folder / sub))
        alone = self.flake8(self.base_py, [sub])
        plugin = self.flake8(self.mha_py, [sub])
        log(f"target 8: flake8 over a copy of torch's {sub} ({n} files), the cache filled first")
        first = measure(plugin, cwd=folder)
        log(f"    the first run (fills the cache): {first['wall']:.2f} s")
        runs = interleaved(
            {"flake8 alone": alone, "flake8 + flake8-mha, cached": plugin}, self.reps, cwd=folder
        )
        a, b = runs["flake8 alone"], runs["flake8 + flake8-mha, cached"]
        if any(r["stdout"] != first["stdout"] for r in b):
            raise SystemExit("target 8: the cached run's report differs from the first run's")
        ratio = pair(a, b, "wall")
        self.row(
            8,
            f"flake8 re-run over an unchanged copy of torch's {sub} ({n} files), wall "
            f"(the first run with the plugin: {first['wall']:.2f} s)",
            f"{med(a, 'wall'):.2f} s",
            f"{med(b, 'wall'):.2f} s",
            f"{ratio:.2f}x",
            f"at most {LIMITS[8]}x",
            ratio <= LIMITS[8],
        )
        self.commands.append(
            (8, f"python -m flake8 --select=E9,MHA -j 1 {sub} (in the copy, run twice)")
        )

    # -- target 9: an editor's long-lived process --------------------------------------
    def target9(self) -> None:
        path = self.torch / EDITOR_FILE
        n = 3 if self.args.quick else 7
        folder = self.tmp / "t9"
        folder.mkdir(exist_ok=True)

        def editor(python):
            return [*self.python(python), "-c", EDITOR_SCRIPT, str(path), str(n), "[]", str(BENCH)]

        log(f"target 9: an editor process re-lints {EDITOR_FILE} after a one-line edit ({n} edits)")
        runs = interleaved(
            {"flake8 alone": editor(self.base_py), "flake8 + flake8-mha": editor(self.mha_py)},
            self.reps,
            cwd=folder,
        )
        a = [json.loads(r["stdout"]) for r in runs["flake8 alone"]]
        b = [json.loads(r["stdout"]) for r in runs["flake8 + flake8-mha"]]
        if own(a[0]["report"]) != own(b[0]["report"]):
            raise SystemExit("target 9: flake8's own findings differ with the plugin")
        ratio = pair(a, b, "relint_wall")
        self.row(
            9,
            f"re-lint of torch's {EDITOR_FILE} after a one-line edit, in one long-lived "
            f"process (median of {n} edits per process), wall (CPU {pair(a, b, 'relint_cpu'):.2f}x)",
            f"{med(a, 'relint_wall'):.3f} s",
            f"{med(b, 'relint_wall'):.3f} s",
            f"{ratio:.2f}x",
            f"at most {LIMITS[9]}x",
            ratio <= LIMITS[9],
        )
        self.commands.append(
            (
                9,
                "bench/targets.py's EDITOR_SCRIPT: flake8.main.cli.main(['--select=E9,MHA', "
                f"'--stdin-display-name', <{EDITOR_FILE}>, '-']) in one process",
            )
        )

    def table(self) -> str:
        return render(self.rows)


def render(rows) -> str:
    out = [
        "| # | measurement | baseline | flake8-mha | ratio | target | |",
        "| ---: | --- | ---: | ---: | ---: | --- | --- |",
    ]
    for number, what, base, ours, ratio, target, met in rows:
        out.append(
            f"| {number} | {what} | {base} | {ours} | **{ratio}** | {target} | "
            f"{'met' if met else '**missed**'} |"
        )
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3, help="repetitions (default 3)")
    ap.add_argument("--quick", action="store_true", help="a smoke run: see the module's doc")
    ap.add_argument("--only", help="comma-separated target numbers (default: all)")
    ap.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = ap.parse_args(argv)
    only = parse_only(args.only)
    bench = Bench(args)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_before = os.getloadavg()[0]
    log(f"{machine()}; {bench.reps} repetition(s)")
    try:
        for number in [n for n in ORDER if n in only]:
            getattr(bench, f"target{number}")()
            log(f"    load average {os.getloadavg()[0]:.1f}")
            if args.write:
                write(bench, argv, started, load_before)
    finally:
        shutil.rmtree(bench.tmp, ignore_errors=True)
    print(bench.table())
    return 0


def write(bench: Bench, argv, started: str, load_before: float) -> None:
    from bench import update_results

    cmd = "python bench/targets.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    header = (
        f"## Issue 30 targets ({started}; {machine()}; "
        f"{load_before:.1f} at the start)\n\n"
        f"Command: `{cmd.strip()}`. Median of {bench.reps} interleaved repetitions; "
        "each ratio is the median of the per-repetition ratios.\n\n"
        "Commands measured (flake8 alone in bench/.venvs/base, flake8 + plugin in "
        "the environment that runs the script):\n\n"
        + "\n".join(f"- {n}: `{c}`" for n, c in bench.commands)
    )
    only = bench.args.only
    section = "targets.py issue 30" + (f" {only}" if only else "")
    update_results(section, f"{header}\n\n{bench.table()}")


if __name__ == "__main__":
    sys.exit(main())
