"""The numbers a module's top level states: ``WIDTH = 512``, ``HEADS =
WIDTH // 64``, read with Python's ``ast`` (a summary's constants, the
sizes a construction is handed)."""

from __future__ import annotations

import ast
from typing import Dict, List

from ...core import walk as astwalk
from .chains import statements

_ARITHMETIC = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Div: lambda a, b: a / b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b if abs(b) <= 64 and abs(a) < 1e6 else None,  # ``2 ** 3``
}


def module_constants(tree: ast.Module) -> Dict[str, object]:
    """``{name: value}`` for the names a module assigns exactly once, at its
    top level, to a number or bool or arithmetic on earlier such names."""
    counts: Dict[str, int] = {}
    for node in statements(tree):
        for target in _assigned(node):
            counts[target] = counts.get(target, 0) + 1
    out: Dict[str, object] = {}
    for node in tree.body:
        if (
            isinstance(node, (ast.Assign, ast.AnnAssign))
            and node.value is not None
            and len(_assigned(node)) == 1
        ):
            name = _assigned(node)[0]
            if counts.get(name) == 1:
                value = _number(node.value, out)
                if value is not None:
                    out[name] = value
    return out


def _assigned(node: ast.AST) -> List[str]:
    """The plain names a statement binds by assignment."""
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    else:
        return []
    return [n.id for t in targets for n in astwalk.walk(t) if isinstance(n, ast.Name)]


def _number(node: ast.AST, known: Dict[str, object]):
    """The value of a number, bool, known name or arithmetic on them; else None."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float, bool):
        return node.value
    if isinstance(node, ast.Name):
        return known.get(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _number(node.operand, known)
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return -inner if isinstance(node.op, ast.USub) else inner
        return None
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        left, right = _number(node.left, known), _number(node.right, known)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (left, right)):
            return None
        try:
            value = _ARITHMETIC[type(node.op)](left, right)
        except (ArithmeticError, ValueError, OverflowError):
            return None
        return value if value is not None and abs(value) < 1e18 else None
    return None
