"""Pieces of the scores analysis (``scores.py``) that read one expression or
one function's text: a two-operand einsum's axes, the local an expression
starts from, the local a statement assigns, and where a local is read."""

from __future__ import annotations

from typing import Dict, List, Optional

import libcst as cst


def einsum_spec(call: cst.Call, qn: str):
    """A two-operand einsum's axes: ((axes of a, axes of b), output axes, (a, b)),
    for ``torch.einsum("bhid,bhjd->bhij", a, b)`` (one letter an axis) and
    einops' ``einsum(a, b, "b h i d, b h j d -> b h i j")`` (names); ``...`` is
    one axis; None for anything else (three operands, brackets, keywords)."""
    args = call.args
    if len(args) != 3 or any(arg.keyword is not None or arg.star for arg in args):
        return None
    spec, ops = (args[0], args[1:]) if qn == "torch.einsum" else (args[2], args[:2])
    text = spec.value.evaluated_value if isinstance(spec.value, cst.SimpleString) else None
    if not isinstance(text, str) or text.count("->") != 1 or "(" in text:
        return None
    ins, out = text.split("->")
    parts = ins.split(",")
    if len(parts) != 2:
        return None

    def axes(side: str) -> List[str]:
        if qn == "torch.einsum":
            side = side.replace(" ", "").replace("...", ".")
            return ["..." if c == "." else c for c in side]
        return side.split()

    return (axes(parts[0]), axes(parts[1])), axes(out), (ops[0].value, ops[1].value)


def root_name(node) -> Optional[str]:
    """The local a tensor expression starts from (``s`` of ``s.transpose(1, 2)``)."""
    while True:
        if isinstance(node, cst.Name):
            return node.value
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            node = node.func.value
        elif isinstance(node, (cst.Attribute, cst.Subscript)):
            node = node.value
        else:
            return None


def assigned_name(stmt, value) -> Optional[str]:
    """The local ``value`` is assigned to in ``stmt`` (``w = value``)."""
    if isinstance(stmt, cst.Assign) and stmt.value is value and len(stmt.targets) == 1:
        target = stmt.targets[0].target
        return target.value if isinstance(target, cst.Name) else None
    if isinstance(stmt, cst.AnnAssign) and stmt.value is value:
        return stmt.target.value if isinstance(stmt.target, cst.Name) else None
    return None


class Uses:
    """Where a local is read in a function: each ``Name`` with its enclosing
    expressions and small statement (nested functions and classes left out)."""

    def __init__(self, func: cst.FunctionDef):
        self.func = func
        self._found: Optional[Dict[str, list]] = None

    def uses(self, name: str, after) -> list:
        if self._found is None:
            self._found = {}
            self._collect(self.func.body, None, [])
        return [u for u in self._found.get(name, ()) if u[2] is not after]

    def _collect(self, node, stmt, chain: list) -> None:
        from .tree import children

        for child in children(node):
            if isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                continue
            if isinstance(child, cst.BaseSmallStatement):
                self._collect(child, child, [])
                continue
            if isinstance(child, cst.BaseCompoundStatement) or isinstance(
                child, (cst.IndentedBlock, cst.SimpleStatementLine, cst.Else)
            ):
                self._collect(child, None, [])
                continue
            if isinstance(child, cst.Name) and stmt is not None:
                self._found.setdefault(child.value, []).append((child, tuple(chain), stmt))
            chain.append(child)
            self._collect(child, stmt, chain)
            chain.pop()
