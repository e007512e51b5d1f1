"""A function called under another name: ``attn_fn = sdpa_attention`` then
``attn_fn(...)``, and a function looked up in a dict of functions,
``ATTENTION_FUNCTIONS["sdpa"](...)`` (transformers' ``ALL_ATTENTION_FUNCTIONS``
pattern, copied into many packages).  ``callsites._callee`` follows what
this names as it follows the function itself."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from ..flow import CallSite, DefKind, lookup
from .dict_tables import function_dicts, valid_dicts
from .returns import imported_target

_REFERENCE = (cst.Name, cst.Attribute)


def aliased(func, env, scope, project=None) -> Optional[list]:
    """What a callee stands for: for each value a local name is assigned
    (``attn_fn = eager if c else ...`` is not read) or each entry of a dict
    of functions indexed by the call (the entry of a literal key; every
    entry for a key not known), a function reference (expression, env,
    scope), or, for a dict another project file defines (``project``), the
    (file, summary) of the function there.  None when a value is anything
    else, or a name is bound otherwise too (a parameter, a loop)."""
    if isinstance(func, cst.Subscript):
        got = _entries(func, env, scope)
        if got is None and project is not None:
            return _elsewhere(project, func, env, scope) or None
        return got
    if not isinstance(func, cst.Name):
        return None
    defs = lookup(func.value, env, scope)
    if not defs or any(d.kind != DefKind.ASSIGN for d in defs):
        return None
    out = []
    for d in defs:
        value = d.node
        if isinstance(value, cst.Subscript):
            got = aliased(value, d.env, d.scope, project)
        elif isinstance(value, _REFERENCE) and not _is_alias(value, d.env, d.scope):
            got = [(value, d.env, d.scope)]
        else:
            got = None
        if not got:
            return None
        out.extend(got)
    return out


def _is_alias(value, env, scope) -> bool:
    """A name assigned in turn (``f = g`` then ``g = f``): not followed."""
    return isinstance(value, cst.Name) and any(
        d.kind == DefKind.ASSIGN for d in lookup(value.value, env, scope)
    )


def _entries(sub: cst.Subscript, env, scope):
    """``TABLE[key]`` of a dict literal assigned once to ``TABLE``, whose
    values are all function references: the entry of a literal string key,
    else every entry."""
    if not isinstance(sub.value, cst.Name) or len(sub.slice) != 1:
        return None
    defs = lookup(sub.value.value, env, scope)
    if len(defs) != 1 or defs[0].kind != DefKind.ASSIGN or not isinstance(defs[0].node, cst.Dict):
        return None
    table, d = defs[0].node, defs[0]
    items = []
    for el in table.elements:
        if not isinstance(el, cst.DictElement) or not isinstance(el.value, _REFERENCE):
            return None
        key = el.key.evaluated_value if isinstance(el.key, cst.SimpleString) else None
        items.append((key, el.value))
    index = sub.slice[0].slice
    key = getattr(index, "value", None)
    if isinstance(key, cst.SimpleString) and isinstance(key.evaluated_value, str):
        items = [i for i in items if i[0] == key.evaluated_value]
    return [(value, d.env, d.scope) for _, value in items] or None


def followed(callee, func, site, resolver, others, project=None):
    """What the function a callee stands for runs (``callee``:
    ``CallSites._callee``): the one summary every reference gives; several
    different ones are added to ``others``, each read by the caller, as
    ``resolver.held`` reads several modules.  ``project``: a dict of
    functions another project file defines is read there."""
    found = []
    for ref in aliased(func, site.env, site.scope, project) or ():
        if ref is None or len(ref) == 2:  # (file, summary) of another file's function
            found.append(ref)
        else:
            found.append(
                callee(ref[0], CallSite(site.node, ref[1], ref[2], (), (), None), resolver)
            )
    if not found or None in found:
        return None
    if len({id(f[1]) for f in found}) == 1:
        return found[0]
    if others is not None:
        others.extend({id(f[1]): f for f in found}.values())
    return None


def _elsewhere(project, func, env, scope) -> list:
    """``FUNCTIONS[key]`` of a dict ``from .impls import FUNCTIONS`` brings:
    (file, summary) of each function its entries name in that file (the one
    of a literal key; None for a function there with no summary), or []
    when it is no such dict."""
    if not (isinstance(func, cst.Subscript) and isinstance(func.value, cst.Name)):
        return []
    if len(func.slice) != 1 or not isinstance(func.slice[0].slice, cst.Index):
        return []
    target = imported_target(func.value, env, scope)
    loc = project._defined(target) if target is not None else None
    if loc is None or "." in loc[1]:
        return []
    table = project._kept(loc[0], ("function-dicts", "1"), valid_dicts, function_dicts)
    entries = (table or {}).get(loc[1])
    if not entries:
        return []
    key = func.slice[0].slice.value
    if isinstance(key, cst.SimpleString) and isinstance(key.evaluated_value, str):
        entries = {k: v for k, v in entries.items() if k == key.evaluated_value}
    got = [project.effective(loc[0], name) for name in entries.values()]
    return [(loc[0], g) if g is not None else None for g in got]
