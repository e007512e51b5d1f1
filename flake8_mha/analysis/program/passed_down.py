"""Values handed down through the program's own parameters.

- ``value_up``: what every call of a function passes a parameter when some
  calls hand it, bare, a parameter of the function around them
  (``layer(x, attn_mask=attn_mask)`` in ``Stage.forward(self, x,
  attn_mask=None)``): the value every call of that function passes,
  followed up ``MAX_UP`` functions (probe AE's AE02: a model, its stage,
  the stage's blocks).  Part of ``callsites.Project.called``;
  ``callers.one_value`` reads literals only.
- ``per_construction``: one construction whose arguments are the building
  class's ``__init__`` parameters (``callers.Forwarded``), once per
  construction of that class (probe AE's AE17: ``Layer(48, 6, 4)`` beside
  ``Layer(48, 6, 2)``, each building ``GQA(dim, heads, kv_heads)``).
- ``hands_on_own`` and ``handed_at``: the calls at a line that hand a
  parameter of the function around them on, bare."""

from __future__ import annotations

import ast
import os
from typing import List, Optional, Tuple

from ...core import walk as astwalk
from ...core.atomic import read_regular
from . import callers, signatures
from .built import MISSING

MAX_UP = 3  # functions a parameter is followed up through


def value_up(path: str, key: str, signature, param: str, own_text, depend, depth: int = 0):
    """``(value,)`` when every call in the project of the function ``key`` of
    ``path`` gives ``param`` the same literal, directly, by its default, or
    handed on bare from the callers of the function around the call (each
    such function followed the same way); None otherwise, also when
    nothing calls it.  ``own_text``: the linted file's text when ``path``
    is it; ``depend`` is told each file read."""
    if depth > MAX_UP:
        return None
    files = callers.project_files(path)
    found, read = callers.results(path, key, signature, own_text, files)
    for name in read:
        depend(name)
    if not found:
        return None
    values = set()
    for where, line, _, bound in found:
        value = bound.get(param, MISSING)
        if value == MISSING:
            if param not in signature[2]:
                return None
            value = signature[2][param]
        if value == signatures.UNKNOWN:
            text = _text(where, path, own_text)  # an editor's unsaved buffer for the linted file
            up = _handed_from(text, line, param, signature) if text is not None else None
            if up is None:
                return None
            sign = signatures.function_signature(text, up[0])
            mine = own_text if os.path.abspath(where) == os.path.abspath(path) else None
            got = (
                value_up(where, up[0], sign, up[1], mine, depend, depth + 1)
                if sign is not None
                else None
            )
            if got is None:
                return None
            value = got[0]
        if value == signatures.UNKNOWN or isinstance(value, callers.Forwarded):
            return None
        values.add((type(value), value))
    return (values.pop()[1],) if len(values) == 1 else None


def per_construction(entry: dict, depend, depth: int = 0) -> List[dict]:
    """``entry`` (parameter -> what one construction passes), once per
    construction in the project of the class whose ``__init__`` hands it
    its arguments (``callers.Forwarded``, all of one class), each forwarded
    parameter given that construction's value (its default where left
    out); ``[entry]`` when that cannot be read."""
    fwd = {p: v for p, v in entry.items() if isinstance(v, callers.Forwarded) and not v.splat}
    if not fwd or depth >= MAX_UP or len({(v.path, v.cls) for v in fwd.values()}) != 1:
        return [entry]
    got = callers.forwarding_class(next(iter(fwd.values())), depend)
    if got is None or not got[1]:
        return [entry]
    signature, built = got
    out: List[dict] = []
    for upper in built:
        made = dict(entry)
        for p, v in fwd.items():
            got = upper.get(v.param, MISSING)
            made[p] = signature[1].get(v.param, signatures.UNKNOWN) if got == MISSING else got
        out.extend(per_construction(made, depend, depth + 1))
    return out


def _text(where: str, path: str, own_text) -> Optional[str]:
    """The text of ``where``: ``own_text`` when it is the linted file ``path``."""
    if own_text is not None and os.path.abspath(where) == os.path.abspath(path):
        return own_text
    return _read(where)


def _read(where: str) -> Optional[str]:
    try:
        return read_regular(where, callers.MAX_BYTES).decode("utf-8", "replace")
    except OSError:
        return None


def _handed_from(text: str, line: int, param: str, signature) -> Optional[Tuple[str, str]]:
    """(the function around it, its parameter) for the one call at ``line``
    of a file's ``text`` that fits ``signature`` and hands ``param`` a bare
    parameter of the function or method around it, never rebound there;
    None otherwise."""
    try:
        tree = signatures.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found = []
    for key, own, nodes, arg in handed_at(tree, line, param, signature):
        if not (isinstance(arg, ast.Name) and arg.id in own):
            return None
        if any(
            isinstance(n, ast.Name) and n.id == arg.id and not isinstance(n.ctx, ast.Load)
            for n in nodes
        ):
            return None  # rebound in the function: not what its callers pass
        found.append((key, arg.id))
    return found[0] if len(set(found)) == 1 else None


def hands_on_own(path: str, line: int, param: str, signature) -> Optional[List[str]]:
    """The functions (``f``, ``Cls.method``) whose calls at ``line`` of
    ``path`` that fit ``signature`` hand ``param``, bare, a parameter of
    their own (``self.readout(h, node_mask)`` in ``forward(self, h,
    node_mask)``), passing on what their callers give; None when one such
    call hands anything else, or there is none."""
    try:
        tree = signatures.parse(read_regular(path, callers.MAX_BYTES).decode("utf-8", "replace"))
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found: List[str] = []
    for key, own, _, arg in handed_at(tree, line, param, signature):
        arg = _uncast(arg)
        if not (isinstance(arg, ast.Name) and arg.id in own):
            return None
        found.append(key)
    return found or None


def handed_at(tree: ast.Module, line: int, param: str, signature):
    """For each call at ``line`` of the module's functions and methods that
    fits ``signature`` and passes ``param``: (the function around it, as
    ``f`` or ``Cls.method``; its parameters; its own nodes; the argument)."""
    positional, kwonly = signature[0], signature[1]
    for owner, func in top_functions(tree):
        a = func.args
        own = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
        nodes = astwalk.own_nodes(func)
        for node in nodes:
            if not isinstance(node, ast.Call) or node.lineno != line:
                continue
            given = {k.arg: k.value for k in node.keywords if k.arg is not None}
            given.update(zip(positional, node.args))
            if not set(given) <= set(positional) | set(kwonly) or param not in given:
                continue  # not a call of this function, or it leaves ``param`` out
            yield (f"{owner}.{func.name}" if owner else func.name), own, nodes, given[param]


_CASTS = ("to", "float", "half", "double", "bool", "long", "int", "type", "type_as", "unsqueeze")


def _uncast(arg):
    """The expression ``arg`` casts or gives unit axes to (``mask.to(h.dtype)``,
    ``mask[:, None]``): handed on, it is still what it was."""
    while True:
        if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute):
            if arg.func.attr not in _CASTS:
                return arg
            arg = arg.func.value
        elif isinstance(arg, ast.Subscript):
            arg = arg.value
        else:
            return arg


def top_functions(tree: ast.Module):
    """(class name or "", function) for the module's functions and its
    classes' methods."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield "", node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield node.name, item
