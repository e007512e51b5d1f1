"""The census of hand-written attention sinks (issue 17), per project:
``python bench/corpus.py --hand``.

For every softmax over attention scores (a query-key product, see
``flake8_mha/analysis/scores.py``) the terms added, subtracted or multiplied into the
scores on the way, and every ``masked_fill``/``where`` with a large negative
whose filled tensor is such scores; for each, whether the mask analysis knew
the mask's meaning (keep or ignore), knew it was additive, or knew nothing.
Nothing is imported from the projects; only their ``.py`` files are read.
"""

from __future__ import annotations

import collections
from typing import Dict, List, Tuple


def _census_file(source: str, rel: str, counts, known: List[str]) -> None:
    import libcst as cst

    from flake8_mha.lint.engine import Context
    from flake8_mha.analysis.flow import FlowPass
    from flake8_mha.analysis.masks import ADDITIVE, IGNORE, KEEP, At, analysis_for
    from flake8_mha.analysis.resolve import Resolver
    from flake8_mha.rules._mask_rule import _filled_tensor
    from flake8_mha.analysis.scores import analysis_for as scores_for

    module = cst.parse_module(source)
    flow = FlowPass()
    flow.run(module)
    ctx = Context(module, flow, Resolver(flow))
    a = analysis_for(ctx)
    sa = scores_for(ctx)
    ev = a.evaluator

    def verdict(mask) -> str:
        if mask.meaning in (KEEP, IGNORE):
            return f"known:{mask.meaning}/{mask.kind}"
        if ADDITIVE in (mask.meaning, mask.kind):
            return "additive"
        return "unknown"

    seen = set()  # the flow pass walks a loop body twice: count each call once
    for site in flow.calls:
        if id(site.node) in seen:
            continue
        seen.add(id(site.node))
        if any(arg.star for arg in site.node.args):
            _splat(site, ctx, a, rel, counts, known)
        scores = sa.at(site)
        if scores is not None:
            counts["softmax over scores"] += 1
            for term in scores.terms:
                if id(term.at) in seen:
                    continue
                seen.add(id(term.at))
                mask = ev.eval(term.expr, At(term.env, term.scope, None, 0))
                text = ev.text(term.expr)
                v = verdict(mask)
                if v == "unknown" and "mask" not in text.lower() and "bias" not in text.lower():
                    continue  # a scale, a gate: not a mask
                op = "mul" if term.op == "mul" else "add"
                counts[f"{op} {v.split(':')[0]}"] += 1
                if v != "unknown":
                    line = ev.line(term.at)
                    known.append(f"{rel}:{line}: scores-{op} {text!r}: {v}")
        sink = a.fill_sink(site)
        if sink is None:
            continue
        filled = _filled_tensor(ctx, site)
        if filled is None or sa.position(site) is None or sa.product_of(filled, site) is None:
            continue
        mask = a.value(sink)
        v = verdict(mask)
        counts[f"fill {v.split(':')[0]}"] += 1
        if v != "unknown":
            known.append(f"{rel}:{ev.line(site.node)}: {sink.call_text} on scores: {v}")


def _splat(site, ctx, a, rel, counts, known) -> None:
    """A torch attention call with ``*args``/``**kw``: is a mask bound there
    (the star-args spread, issue 17), and is its meaning known?"""
    from flake8_mha.analysis.events import ModuleCall, SdpaCall, classify

    ev = classify(site, ctx.resolver)
    if isinstance(ev, ModuleCall):
        sinks = a.module_sinks(ev)
    elif isinstance(ev, SdpaCall):
        sinks = [x for x in [a.sdpa_sink(ev)] if x]
    else:
        return
    counts["splat calls"] += 1
    for sink in sinks:
        mask = a.value(sink)
        counts["splat mask bound"] += 1
        if mask.meaning is not None or mask.kind is not None:
            known.append(
                f"{rel}:{a.evaluator.line(site.node)}: {sink.module}.{sink.arg} through a splat: "
                f"meaning={mask.meaning} kind={mask.kind}"
            )


COLUMNS = [
    "splat calls",
    "splat mask bound",
    "softmax over scores",
    "add known",
    "add additive",
    "add unknown",
    "mul known",
    "mul additive",
    "mul unknown",
    "fill known",
    "fill additive",
    "fill unknown",
]


def hand_census(projects, fetch, py_files, norm) -> int:
    from flake8_mha.lint.engine import decode_source, prefilter

    per: Dict[str, collections.Counter] = {}
    known: List[str] = []
    for name, version in projects:
        root = fetch(name, version)
        counts: collections.Counter = collections.Counter()
        for path in py_files(root):
            rel = f"{norm(name)}-{version}/{path.relative_to(root / 'src')}"
            try:
                source = decode_source(path.read_bytes())
                if not prefilter(source):
                    continue
                _census_file(source, rel, counts, known)
            except Exception:  # a file the parser refuses: skipped, as the corpus run does
                continue
        per[name] = counts
    print("## hand-written sinks per project (add: mask added/subtracted into scores; mul:")
    print("## multiplied; fill: masked_fill/where with -inf on scores; known = keep/ignore known)")
    print("| project | " + " | ".join(COLUMNS) + " |")
    print("|---" * (len(COLUMNS) + 1) + "|")
    total: collections.Counter = collections.Counter()
    for name, counts in per.items():
        total.update(counts)
        print(f"| {name} | " + " | ".join(str(counts[c]) for c in COLUMNS) + " |")
    print("| total | " + " | ".join(str(total[c]) for c in COLUMNS) + " |")
    print(f"\n## hand-written sinks with a known meaning: {len(known)}")
    for line in known:
        print(line)
    return 0


__all__: Tuple[str, ...] = ("hand_census",)
