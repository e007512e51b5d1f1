"""The numbers a module's top level states: ``WIDTH = 512``, ``HEADS =
WIDTH // 64``, read with Python's ``ast`` (a summary's constants, the
sizes a construction is handed)."""

from __future__ import annotations

import ast
from typing import Dict, List

from ...core import walk as astwalk
from ...core.walk import LIST_MUTATORS
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


SEQUENCE = "[]"  # ``NAME[]``: the numbers of a tuple or list ``NAME`` (``sequences.py``)


def module_constants(tree: ast.Module) -> Dict[str, object]:
    """``{name: value}`` for the names a module assigns exactly once, at its
    top level, to a number or bool or arithmetic on earlier such names;
    ``Class.NAME`` for such names of a top-level class's body; and
    ``NAME[]`` for a tuple or list display of such numbers (``EMBED_DIMS =
    (64, 128, 320, 512)``), a list only when the module never changes it in
    place."""
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
                elif isinstance(node.value, (ast.Tuple, ast.List)):
                    numbers = _numbers(node.value, out)
                    if numbers is not None and not (
                        isinstance(node.value, ast.List) and _changed(tree, name)
                    ):
                        out[name + SEQUENCE] = numbers
        elif isinstance(node, ast.ClassDef) and counts.get(node.name, 0) == 0:
            out.update(_class_constants(node, out))
    return out


def _numbers(node, known: Dict[str, object]):
    """The numbers of a tuple or list display of at most 64 known numbers."""
    if len(node.elts) > 64:
        return None
    got = tuple(_number(e, known) for e in node.elts)
    return None if any(v is None for v in got) else got


def _changed(tree: ast.Module, name: str) -> bool:
    """The module changes the list ``name`` in place (``DIMS.append(...)``,
    ``DIMS[0] = ...``)."""
    for node in astwalk.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == name and node.attr in LIST_MUTATORS:
                return True
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
            if isinstance(node.value, ast.Name) and node.value.id == name:
                return True
    return False


def _class_constants(cls: ast.ClassDef, known: Dict[str, object]) -> Dict[str, object]:
    """``{"Defaults.HEADS": 3}`` for the names a class body assigns exactly
    once to a number, a bool, or arithmetic on the module's constants and
    its own (probe AC's AC30)."""
    counts: Dict[str, int] = {}
    for node in cls.body:
        for target in _assigned(node):
            counts[target] = counts.get(target, 0) + 1
    out: Dict[str, object] = {}
    local = dict(known)  # the body's own names shadow the module's
    for node in cls.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            names = _assigned(node)
            if len(names) == 1 and counts.get(names[0]) == 1:
                value = _number(node.value, local)
                if value is not None:
                    out[f"{cls.name}.{names[0]}"] = local[names[0]] = value
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
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):  # ``DIMS[-1]``
        got, index = known.get(node.value.id + SEQUENCE), _number(node.slice, known)
        if isinstance(got, tuple) and type(index) is int and -len(got) <= index < len(got):
            return got[index]
        return None
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


def valid_constants(got) -> bool:
    """A constants table read back from the results cache has the form
    ``module_constants`` gives."""
    return isinstance(got, dict) and all(
        isinstance(k, str)
        and all(type(x) in (int, float, bool) for x in (v if type(v) is tuple else (v,)))
        for k, v in got.items()
    )
