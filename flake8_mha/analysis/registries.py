"""Registries: a dict of classes read by a key (``ATTN_REGISTRY[attn](48,
4)`` after ``ATTN_REGISTRY = {"mha": nn.MultiheadAttention}``, probe AB's
AB27), in the file or imported from another project file; the class every
value names, or the one a key the program fixes picks.  Asked by
``Resolver.qualname`` and the project's sizes."""

from __future__ import annotations

from typing import Any, Optional

import libcst as cst

from .flow import DefKind, Env, lookup
from .values import literal, project_of, value_of

Resolver = Any  # resolve.Resolver


def registry_values(node: cst.Subscript, env: Env, scope) -> Optional[tuple]:
    """``(values, env, scope)`` of the dict literal that the name a
    subscript reads is bound to once (``ATTN_REGISTRY[attn]`` after
    ``ATTN_REGISTRY = {"mha": nn.MultiheadAttention}``), whatever the key;
    None for any other subscript, or a dict with a ``**`` splat."""
    if not isinstance(node.value, cst.Name):
        return None
    defs = lookup(node.value.value, env, scope)
    if len(defs) != 1 or defs[0].kind != DefKind.ASSIGN or not isinstance(defs[0].node, cst.Dict):
        return None
    elements = defs[0].node.elements
    if not all(isinstance(el, cst.DictElement) for el in elements):
        return None
    return [el.value for el in elements], defs[0].env, defs[0].scope


def registry_qualname(res: Resolver, node: cst.Subscript, env: Env, scope, depth: int):
    """The one qualified name every value of a registry names
    (``registry_values``: ``ATTN_REGISTRY[attn](48, 4)``, probe AB's AB27);
    None when the values name several."""
    got = registry_values(node, env, scope) if len(node.slice) == 1 else None
    if got is None:
        return _imported_registry(node, env, scope)
    values, venv, vscope = got
    names = {res.qualname(v, venv, vscope, depth + 1) for v in values}
    if len(names) > 1:  # the entry a key the program fixes picks (``kind="mha"``)
        picked = _keyed_value(node, env, scope)
        names = {res.qualname(picked, venv, vscope, depth + 1)} if picked is not None else names
    return names.pop() if len(names) == 1 and None not in names else None


def _index_value(node: cst.Subscript, env: Env, scope):
    """The value its one index is known to have (``kind`` every construction
    passes as "mha"), else UNKNOWN or None."""
    index = node.slice[0].slice
    return value_of(index.value, env, scope) if isinstance(index, cst.Index) else None


def _keyed_value(node: cst.Subscript, env: Env, scope):
    """The value of the dict display a subscript reads under the string its
    index is known to be, else None."""
    key = _index_value(node, env, scope)
    defs = lookup(node.value.value, env, scope) if isinstance(key, str) else ()
    for el in defs[0].node.elements if defs else ():
        if isinstance(el, cst.DictElement) and literal(el.key) == key:
            return el.value
    return None


def _imported_registry(node: cst.Subscript, env: Env, scope) -> Optional[str]:
    """``ATTN_TYPES[kind]`` of a dict another project file defines and this
    one imports: the torch class its values all name (``imported_registry``)."""
    if not isinstance(node.value, cst.Name) or len(node.slice) != 1:
        return None
    defs = lookup(node.value.value, env, scope)
    project = project_of(scope)
    if len(defs) != 1 or defs[0].kind != DefKind.IMPORT or project is None:
        return None
    ask = getattr(project, "imported_registry", None)
    key = _index_value(node, env, scope)
    return ask(defs[0].node, node.value.value, key) if ask is not None else None
