"""Tables of a project file's top-level dicts, read with ``ast`` and kept by
the file's bytes (``files.ProjectFiles._kept``): its registries of torch
classes, its dicts of functions, and its keyword dicts (what a ``**``
splat of one carries)."""

from __future__ import annotations

import ast
from typing import Optional

from ...core import torch_api
from . import chains, signatures


_DICT_CHANGERS = ("update", "setdefault", "pop", "popitem", "clear")


def decode(data: bytes) -> str:
    import io
    import tokenize

    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    return text[1:] if text.startswith("\ufeff") else text


def registries_of(data: bytes) -> dict:
    """``{name: {key: torch class or None}}`` for each dict display a file binds
    once at its top level with string keys and names as values
    (``MIXERS = {"mha": nn.MultiheadAttention, "linear": LinearMixer}``): the
    qualified torch class each value names through the file's imports
    (``chains.imports``), None for one that names none."""
    tree = _tree(data)
    if tree is None:
        return {}
    imported = chains.imports(tree)
    out: dict = {}
    for name, found in _dicts_bound_once(tree):
        entries = {}
        for k, v in zip(found.keys, found.values):
            dotted = chains.dotted_name(v) if isinstance(v, (ast.Name, ast.Attribute)) else None
            if not isinstance(k, ast.Constant) or not isinstance(k.value, str) or dotted is None:
                break
            head, _, rest = dotted.partition(".")
            level, base = imported.get(head, (None, None))
            qn = torch_api.canonical(f"{base}.{rest}" if rest else base) if level == 0 else None
            entries[k.value] = qn if qn and qn.startswith("torch.") else None
        else:
            out[name] = entries
    return out


def valid_key_lists(got) -> bool:
    return isinstance(got, dict) and all(
        isinstance(v, list) and all(isinstance(k, str) for k in v) for v in got.values()
    )


def valid_dicts(got) -> bool:
    return isinstance(got, dict) and all(isinstance(v, dict) for v in got.values())


def function_dicts(data: bytes) -> dict:
    """``{name: {key: function name}}`` of each dict display a file binds once
    at its top level with string keys and names of its own top-level
    functions as values (``ATTENTION_FUNCTIONS = {"eager": eager_attention,
    "sdpa": sdpa_attention}``)."""
    tree = _tree(data)
    if tree is None:
        return {}
    functions = {s.name for s in tree.body if isinstance(s, ast.FunctionDef)}
    out: dict = {}
    for name, d in _dicts_bound_once(tree):
        entries = {}
        for k, v in zip(d.keys, d.values):
            if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                break
            if not (isinstance(v, ast.Name) and v.id in functions):
                break
            entries[k.value] = v.id
        else:
            if entries:
                out[name] = entries
    return out


def keyword_dicts(data: bytes) -> dict:
    """``{name: [key, ...]}`` of each name a file binds once at its top level
    to a dict display with string keys or to ``dict(k=v, ...)`` with keywords
    only, and never changes by item (``LAYER_KW = dict(dropout=0.0,
    norm_first=True)``, splatted into a construction elsewhere)."""
    tree = _tree(data)
    if tree is None:
        return {}
    changed = set()  # ``KW["k"] = v``, ``del KW["k"]``, ``KW |= {...}``, ``KW.update(...)``
    for n in ast.walk(tree):
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, (ast.Store, ast.Del)):
            target = n.value
        elif isinstance(n, ast.AugAssign):
            target = n.target
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            target = n.func.value if n.func.attr in _DICT_CHANGERS else None
        else:
            continue
        if isinstance(target, ast.Name):
            changed.add(target.id)
    out: dict = {}
    for name, values in _bound_at_top(tree).items():
        if len(values) != 1 or name in changed:
            continue
        value = values[0]
        keys = None
        if isinstance(value, ast.Dict) and None not in value.keys:
            if all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in value.keys):
                keys = [k.value for k in value.keys]
        elif (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "dict"
            and not value.args
            and all(k.arg is not None for k in value.keywords)
        ):
            keys = [k.arg for k in value.keywords]
        if keys is not None:
            out[name] = keys
    return out


def _tree(data: bytes) -> Optional[ast.Module]:
    try:
        return signatures.parse(decode(data))
    except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError):
        return None


def _bound_at_top(tree: ast.Module) -> dict:
    """``{name: [value, ...]}``: what each plain assignment at a module's top
    level binds to a name."""
    bound: dict = {}
    for st in tree.body:
        for tg in st.targets if isinstance(st, ast.Assign) else ():
            if isinstance(tg, ast.Name):
                bound.setdefault(tg.id, []).append(st.value)
    return bound


def _dicts_bound_once(tree: ast.Module):
    """(name, dict display) of each name a module binds once at its top
    level, to a dict display whose keys are all written out."""
    for name, values in _bound_at_top(tree).items():
        if len(values) == 1 and isinstance(values[0], ast.Dict) and None not in values[0].keys:
            yield name, values[0]
