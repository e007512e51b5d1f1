"""What a name of the linted file means at a call site, for the program
analysis (``callsites.py``): a local instance, the class around a method, a
module-level ``def`` or ``class`` of the file; and how the project's
summaries name the function around a scope (``function_key``, asked by the
mask evaluator and by ``lint/facts.py``)."""

from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from ..flow import DefKind, ScopeKind, import_path, lookup


def instance_name(node, env, scope) -> bool:
    """A local name or loop variable, never a class or an import (whose
    ``.forward`` is the method called unbound, ``Attention.forward(self, x)``)."""
    if not isinstance(node, cst.Name):
        return False
    defs = lookup(node.value, env, scope)
    return bool(defs) and all(
        d.kind in (DefKind.ASSIGN, DefKind.FOR, DefKind.UNPACK, DefKind.WITH) for d in defs
    )


def annotated_class(node, env, scope) -> Optional[cst.Call]:
    """``attn(x, pad)`` where ``attn`` is a parameter annotated with a class
    (``attn: CausalSelfAttention``, ``"CausalSelfAttention"``, ``layers.Block``;
    probe AN's AN04): a construction of that class, whose instance the call
    runs; None for anything else (``Optional[...]``, a union, no annotation,
    a name that is no class's)."""
    defs = lookup(node.value, env, scope) if isinstance(node, cst.Name) else ()
    named = annotation_of(defs[0]) if len(defs) == 1 else None
    if not isinstance(named, (cst.Name, cst.Attribute)) or not _capitalised(named):
        return None
    return cst.Call(func=named)


def self_forward(func, env, scope):
    """``self.forward`` for ``self(...)`` in a method (a Lightning-style
    ``training_step``: probe AO's AO27), else ``func`` as it is."""
    defs = lookup(func.value, env, scope) if isinstance(func, cst.Name) else ()
    if len(defs) == 1 and defs[0].kind == DefKind.SELF:
        return cst.Attribute(value=func, attr=cst.Name("forward"))
    return func


def annotation_of(d) -> Optional[cst.BaseExpression]:
    """The annotation of the parameter ``d`` defines (``model: Forecaster``),
    a string of one name read as that name (``model: "Forecaster"``); None
    for any other definition or a parameter without one."""
    note = d.node.annotation if d.kind == DefKind.PARAM else None
    named = note.annotation if note is not None else None
    if isinstance(named, cst.SimpleString) and str(named.evaluated_value).isidentifier():
        return cst.Name(str(named.evaluated_value))
    return named


def _capitalised(named) -> bool:
    last = named.attr.value if isinstance(named, cst.Attribute) else named.value
    return last[:1].isupper()


def enclosing_class(scope):
    """The ``ClassInfo`` of the class whose method holds ``scope``."""
    while scope is not None and scope.kind != ScopeKind.FUNCTION:
        scope = scope.parent
    if scope is None or scope.parent is None or scope.parent.kind != ScopeKind.CLASS:
        return None
    return scope.parent.cls


def own_definition(node, env, scope, *kinds) -> Optional[str]:
    """The name of the module-level ``def`` or ``class`` of the linted file a
    name means (one definition, of one of ``kinds``), else None."""
    if not isinstance(node, cst.Name):
        return None
    defs = lookup(node.value, env, scope)
    if len(defs) != 1:
        return None
    d = defs[0]
    if d.kind not in kinds or d.scope is None or d.scope.kind != ScopeKind.MODULE:
        return None
    name = getattr(d.node, "name", None)
    return name.value if isinstance(name, cst.Name) else None


def function_key(scope) -> Optional[str]:
    """How a summary table names the function a call site is in: ``attend``,
    ``Attention.forward``, ``make_attention()`` (the function a factory
    returns); None inside anything else."""
    while scope is not None and scope.kind != ScopeKind.FUNCTION:
        scope = scope.parent
    if scope is None or not isinstance(scope.node, cst.FunctionDef):
        return None
    name = scope.node.name.value
    parent = scope.parent
    if parent is not None and parent.kind == ScopeKind.CLASS:
        outer = parent.parent
        if outer is not None and outer.kind == ScopeKind.MODULE and parent.node is not None:
            return f"{parent.node.name.value}.{name}"
        return None
    if parent is not None and parent.kind == ScopeKind.FUNCTION:
        outer = parent.parent
        if outer is not None and outer.kind == ScopeKind.MODULE:
            return parent.node.name.value + "()"
        return None
    return name


def imported_target(node, env, scope, depth: int = 0) -> Optional[Tuple[int, str]]:
    """(relative level, dotted name) of what an imported name (or an attribute
    of an imported module) is, read from the import statement itself."""
    if depth > 8:
        return None
    if isinstance(node, cst.Attribute):
        base = imported_target(node.value, env, scope, depth + 1)
        if base is None:
            return None
        return base[0], (base[1] + "." if base[1] else "") + node.attr.value
    if not isinstance(node, cst.Name):
        return None
    defs = lookup(node.value, env, scope)
    if len(defs) != 1 or defs[0].kind != DefKind.IMPORT:
        return None
    stmt = defs[0].node
    if isinstance(stmt, cst.ImportFrom) and not isinstance(stmt.names, cst.ImportStar):
        module = import_path(stmt.module) if stmt.module is not None else ""
        for alias in stmt.names:
            bound = alias.asname.name if alias.asname is not None else alias.name
            if isinstance(bound, cst.Name) and bound.value == node.value:
                name = import_path(alias.name)
                return len(stmt.relative), (module + "." if module else "") + name
        return None
    if isinstance(stmt, cst.Import):
        for alias in stmt.names:
            full = import_path(alias.name)
            if alias.asname is not None:
                bound = alias.asname.name
                if isinstance(bound, cst.Name) and bound.value == node.value:
                    return 0, full
            elif full.split(".")[0] == node.value:
                return 0, node.value
    return None


def self_method(call: cst.Call, scope):
    """(the class, the method's name) of ``self.<method>(...)`` called in a
    method of a class; None for any other call."""
    func = call.func
    cls = scope.cls if scope is not None else None
    if cls is None or not (
        isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Name)
        and func.value.value == "self"
    ):
        return None
    return cls, func.attr.value
