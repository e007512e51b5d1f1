"""Issue 15: what targets 1, 2, 3 and 5 leave to the plugin, against what the
plugin cannot avoid while its analysis runs on LibCST trees.

Each target bounds the plugin's cost by a share of flake8 alone's: target 1
at most 5% more, target 2 30%, target 3 20%, target 5 100% and 600 MB.  The
run measures, in the same session, flake8 alone (CPU seconds, fresh
processes, bench/.venvs/base) and the costs no change to the analysis can
remove as long as the analysis reads LibCST trees and finds what it finds now:

- importing libcst, which every flake8 process that analyses one file pays
  (fresh processes, ``python -c pass`` against ``python -c "import libcst"``,
  interleaved);
- LibCST's parse of the focused text of each file that must be analysed
  (``focus.py`` already drops what cannot matter), timed inside the engine
  as flake8 runs it, garbage collection paused as the engine pauses it.

Which files must be analysed is the open question for target 1.  ``gate``
below is a syntactic test on Python's ``ast`` (which flake8 hands over for
free) that keeps a file only where an attention sink can stand: a live name
of an attention module or of SDPA, a ``masked_fill``/``where`` call, softmax
beside a product, or grouped-query repetition.  It is built to keep as little
as it can: where it is too eager and drops a file that reports, the floor is
understated, never overstated; the run counts such files.  What it keeps
is parsed by LibCST; no syntactic test keeps less without doing the
analysis itself on ``ast``.

Target 5's memory cap is compared with flake8 alone's own peak on the file.

    python bench/floors.py [--reps 3] [--torch-reps 1] [--write]

--write puts the table into bench/RESULTS.md (section ``floors.py``).
"""

from __future__ import annotations

import argparse
import ast
import os
import pathlib
import shlex
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _common import ROOT, ensure_venv, machine, median, py_files, torch_root  # noqa: E402
from targets import DENSE_TORCH, EDITOR_FILE, generated_file, interleaved, log  # noqa: E402

# call names that stand for the other kinds of sink (E, attention modules and SDPA,
# comes from torch_api inside gate)
FILLS = {"masked_fill", "masked_fill_", "where"}  # masks/sinks.py: fills and selections
PRODUCTS = {"matmul", "bmm", "einsum"}  # scores.py: hand-written scores, with ``@``
TILES = {"repeat", "tile", "expand", "cat", "concat"}  # kv heads made to match q heads
# calls that hand a module class on unchanged: a name passed to them stays live
PASS_ON = {
    "partial",
    "compile",
    "deepcopy",
    "copy",
    "checkpoint_wrapper",
    "wraps",
    "script",
    "trace",
}


def _callee(node: ast.expr):
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def gate(tree: ast.Module) -> str:
    """Letters for the kinds of sink the file can hold: E (attention module or
    SDPA, named other than as data: not only a call's argument such as
    ``isinstance(m, nn.MultiheadAttention)``, nor a dict key), F (a fill),
    H (softmax beside a product), G (grouped-query repetition).  ""
    when none: no rule can report there."""
    from flake8_mha.core import torch_api
    from flake8_mha.analysis.heads import name_role

    events = set(torch_api.MODULE_NAMES) | {"scaled_dot_product_attention"}
    data, calls, words = set(), set(), set()
    live = matmul = roles = False
    for node in ast.walk(tree):  # breadth first: a parent before its children
        kind = type(node)
        name = None
        if kind is ast.Name:
            name = node.id
        elif kind is ast.Attribute:
            name = node.attr
        elif kind is ast.Call:
            callee = _callee(node.func)
            if callee:
                calls.add(callee)
            if callee not in PASS_ON:
                data.update(map(id, node.args))
                data.update(id(k.value) for k in node.keywords)
        elif kind is ast.Dict:
            data.update(id(k) for k in node.keys if k is not None)
        elif kind in (ast.Tuple, ast.List, ast.Set) and id(node) in data:
            data.update(map(id, node.elts))  # isinstance(m, (nn.MultiheadAttention, ...))
        elif kind in (ast.BinOp, ast.AugAssign) and isinstance(node.op, ast.MatMult):
            matmul = True
        elif kind is ast.Constant and node.value in events:
            live = True  # getattr(nn, "MultiheadAttention") and the like
        elif kind is ast.alias:
            parts = node.name.split(".")
            words.update(parts)
            live = live or parts[-1] in events or node.asname in events
        if name:
            words.add(name)
            roles = roles or bool(name_role(name))
            if name in events and id(node) not in data:
                live = True
    kinds = {
        "E": live,
        "F": bool(calls & FILLS),
        "H": "softmax" in words and (matmul or bool(words & PRODUCTS)),
        # a tiling alone is MHA904's (opt-in): ``torch.cat([k] * n_rep, dim=1)``
        # in a subclass's override has no grouping beside it
        "G": bool(calls & TILES) and (roles or "einops" in words),
    }
    return "".join(k for k, v in kinds.items() if v)


def parsed(files):
    """Per file that passes the pre-filter: the CPU seconds of LibCST's parse of
    its focused text inside ``analyze_source`` (the file's own parse, not that
    of another file read for a mask builder), its findings, its gate letters."""
    import gc

    from flake8_mha.lint import engine

    out = {}
    current = {}
    real = engine.reparse.parse  # the focused text's parse, whole or by pieces

    def timed(text, *args, **kwargs):
        start = time.process_time()
        try:
            return real(text, *args, **kwargs)
        finally:
            current.setdefault("parse", time.process_time() - start)

    engine.reparse.parse = timed
    codes = engine.select_codes(["MHA"])
    try:
        for path in files:
            try:
                source = engine.decode_source(path.read_bytes())
                if not engine.prefilter(source):
                    continue
                tree = ast.parse(source)
            except (OSError, SyntaxError, ValueError, UnicodeDecodeError, LookupError):
                continue
            current.clear()
            findings = engine.analyze_source(source, str(path), codes, tree=tree)
            gc.collect()
            out[path] = {
                "parse": current.get("parse", 0.0),
                "findings": len(findings),
                "gate": gate(tree),
                "bytes": len(source.encode("utf-8")),
            }
    finally:
        engine.reparse.parse = real
    return out


def focused_texts(files, gated: bool = False):
    """Per file the engine must analyse: the focused text LibCST parses (the
    first parse inside ``analyze_source``, as ``parsed`` times it).  ``gated``:
    only the files ``gate`` keeps (target 1's files that must be analysed)."""
    from flake8_mha.lint import engine, reparse

    out = {}
    seen = []
    real = reparse.parse

    def capture(text, *args, **kwargs):
        # the whole focused text, also when a large one is parsed by pieces
        seen.append(text)
        return real(text, *args, **kwargs)

    engine.reparse.parse = capture
    codes = engine.select_codes(["MHA"])
    try:
        for path in files:
            try:
                source = engine.decode_source(path.read_bytes())
                if not engine.prefilter(source):
                    continue
                tree = ast.parse(source)
            except (OSError, SyntaxError, ValueError, UnicodeDecodeError, LookupError):
                continue
            if gated and not gate(tree):
                continue
            seen.clear()
            reparse.forget()  # the whole parse, as a process that lints the file once
            engine.analyze_source(source, str(path), codes, tree=tree)
            if seen:
                out[path] = seen[0]
    finally:
        engine.reparse.parse = real
    return out


# The floor in a fresh process: CPU of ``import libcst``, then of LibCST's parse
# of each text in the JSON list at argv[1], garbage collection paused as the
# engine pauses it; prints {"import": s, "parse": s} (CPU seconds).
FLOOR_SCRIPT = """
import gc, json, sys, time
t = time.process_time()
import libcst
imported = time.process_time() - t
texts = json.load(open(sys.argv[1], encoding="utf-8"))
parse = 0.0
for text in texts:
    gc.disable()
    t = time.process_time()
    module = libcst.parse_module(text)
    parse += time.process_time() - t
    del module
    gc.enable()
    gc.collect(0)
print(json.dumps({"import": imported, "parse": parse}))
"""


class Floors:
    def __init__(self, args) -> None:
        self.args = args
        self.base_py = str(ensure_venv("base", log))
        self.torch = torch_root()
        self.rows = []  # (target, measured on, flake8 alone, budget, floor, what the floor is)
        self.notes = []

    def alone(self, paths, reps):
        """flake8 alone's CPU seconds and peak MB (medians) over paths."""
        # isolated (-I): a checkout on PYTHONPATH with an editable install's
        # egg-info in it would load the plugin into flake8 alone
        argv = [self.base_py, "-I", "-m", "flake8", "--select=E9", "-j", "1", *map(str, paths)]
        runs = interleaved({"flake8 alone": argv}, reps)["flake8 alone"]
        return median([r["cpu"] for r in runs]), median([r["rss_mb"] for r in runs])

    def import_cost(self) -> float:
        py = sys.executable
        runs = interleaved(
            {"python": [py, "-c", "pass"], "python + libcst": [py, "-c", "import libcst"]},
            max(self.args.reps, 5),
        )
        cost = median(
            [b["cpu"] - a["cpu"] for a, b in zip(runs["python"], runs["python + libcst"])]
        )
        self.notes.append(
            f"`import libcst`: {cost:.3f} s CPU (median of the per-repetition "
            f"differences, {max(self.args.reps, 5)} repetitions)"
        )
        return cost

    def row(self, number, what, base, share, floor, parts):
        budget = share * base
        self.rows.append((number, what, base, share, budget, floor, parts))

    def run(self) -> None:
        imp = self.import_cost()
        # target 3: one file, as an editor lints it
        editor = self.torch / EDITOR_FILE
        base, _ = self.alone([editor], self.args.reps)
        p = parsed([editor])[editor]["parse"]
        self.row(
            3,
            f"flake8 on torch's {EDITOR_FILE}",
            base,
            0.2,
            imp + p,
            f"import libcst {imp:.2f} + focused parse {p:.2f}",
        )
        # target 2: the attention-dense files
        files = sorted((ROOT / "fixtures").glob("**/*.py")) + [self.torch / r for r in DENSE_TORCH]
        base, _ = self.alone(files, self.args.reps)
        res = parsed(files)
        p = sum(r["parse"] for r in res.values())
        self.row(
            2,
            f"{len(files)} attention-dense files",
            base,
            0.3,
            imp + p,
            f"import libcst {imp:.2f} + focused parse of {len(res)} files {p:.2f}",
        )
        # target 5: memory first (flake8 alone's own peak), then the parse
        with tempfile.TemporaryDirectory() as tmp:
            big = generated_file(pathlib.Path(tmp), 3_000_000)
            base, peak = self.alone([big], self.args.reps)
            p = parsed([big])[big]["parse"]
            mb = big.stat().st_size / 1e6
            self.row(
                5,
                f"a generated {mb:.1f} MB file",
                base,
                1.0,
                imp + p,
                f"import libcst {imp:.2f} + focused parse {p:.2f}",
            )
            self.notes.append(
                f"target 5: flake8 alone peaks at {peak:.0f} MB on the {mb:.1f} MB "
                "file, against a cap of 600 MB for flake8 with the plugin"
            )
        # target 1: the whole tree; only what the gate keeps is charged
        if self.args.torch_reps:
            tree = self.torch
            base, _ = self.alone([tree], self.args.torch_reps)
            every = py_files(tree)
            res = parsed(every)
            kept = {f: r for f, r in res.items() if r["gate"]}
            p = sum(r["parse"] for r in kept.values())
            dropped = [f for f, r in res.items() if not r["gate"] and r["findings"]]
            share = sum(r["bytes"] for r in kept.values()) / max(
                1, sum(r["bytes"] for r in res.values())
            )
            self.row(
                1,
                f"flake8 -j 1 over torch ({len(every)} files)",
                base,
                0.05,
                imp + p,
                f"import libcst {imp:.2f} + focused parse of the {len(kept)} files the "
                f"gate keeps {p:.2f}",
            )
            self.notes.append(
                f"target 1: {len(res)} files pass the text pre-filter; the gate keeps {len(kept)} "
                f"({share:.0%} of their bytes); their focused parse {p:.2f} s of "
                f"{sum(r['parse'] for r in res.values()):.2f} s; files with findings the gate "
                f"drops: {len(dropped)}"
                + (
                    " (" + ", ".join(str(f.relative_to(tree)) for f in dropped) + ")"
                    if dropped
                    else ""
                )
            )

    def table(self) -> str:
        out = [
            "| # | measured on | flake8 alone CPU s | plugin's budget | floor CPU s | floor | within |",
            "| ---: | --- | ---: | ---: | ---: | --- | --- |",
        ]
        for number, what, base, share, budget, floor, parts in self.rows:
            out.append(
                f"| {number} | {what} | {base:.2f} | {share:.0%}: {budget:.2f} s | "
                f"**{floor:.2f}** | {parts} | {'yes' if floor <= budget else '**no**'} |"
            )
        return "\n".join(out) + "\n\n" + "\n".join(f"- {n}" for n in self.notes)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3, help="repetitions of flake8 alone (default 3)")
    ap.add_argument(
        "--torch-reps",
        type=int,
        default=1,
        help="repetitions of flake8 alone over torch's tree (default 1; 0: no target 1)",
    )
    ap.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = ap.parse_args(argv)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = os.getloadavg()[0]
    floors = Floors(args)
    floors.run()
    text = floors.table()
    print(text)
    if args.write:
        from bench import update_results

        cmd = "python bench/floors.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
        update_results(
            "floors.py",
            f"## Issue 15: the floors under targets 1, 2, 3 and 5 "
            f"({started}; {machine()}; {load:.1f} at the start)\n\n"
            f"Command: `{cmd.strip()}`\n\n{text}",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
