"""Functions a module defines once per branch of a top-level ``if`` or
``try`` (``summaries.py``)."""

from __future__ import annotations

import ast
from typing import Dict


def branch_functions(tree: ast.Module, out: Dict[str, dict], summarise) -> None:
    """A function a module defines only inside a top-level ``if``/``else`` or
    ``try``/``except``, once per branch (eole's ``ops/__init__.py``: ``_sdpa``
    as a ``torch.library.custom_op`` under ``if EOLE_TORCH_COMPILE:``, plain
    in the ``else:``): summarised when every branch's definition reaches the
    same sinks in the same way (the summary of the first that is not
    decorated, else the first); left out when they differ.  ``summarise(func,
    table)`` adds one definition's summary to ``table``."""
    top = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    found: Dict[str, list] = {}
    for node in tree.body:
        if not isinstance(node, (ast.If, ast.Try)):
            continue
        blocks = [node.body, node.orelse]
        if isinstance(node, ast.Try):
            blocks += [h.body for h in node.handlers] + [node.finalbody]
        for block in blocks:
            for st in block:
                if isinstance(st, ast.FunctionDef) and st.name not in top:
                    found.setdefault(st.name, []).append(st)
    for name, defs in found.items():
        if name in out:
            continue
        made = []
        for func in defs:
            table: Dict[str, dict] = {}
            summarise(func, table)
            made.append(table.get(name))
        if None in made or any(_shape(m) != _shape(made[0]) for m in made):
            continue
        plain = [m for m, f in zip(made, defs) if not f.decorator_list]
        out[name] = (plain or made)[0]


def _shape(summary: dict) -> dict:
    """A summary without its lines: two definitions of one function compared."""
    return {k: v for k, v in summary.items() if k not in ("line", "edges")} | {
        "edges": [{k: v for k, v in e.items() if k != "line"} for e in summary.get("edges", ())]
    }
