"""What a class's construction hands the sinks its methods reach (issue 26,
item 3: facts from the constructions into a module).

CLIP's residual block keeps the mask it is built with and hands it to its
attention at every call::

    class ResidualAttentionBlock(nn.Module):
        def __init__(self, d_model, n_head, attn_mask=None):
            ...
            self.attn_mask = attn_mask

        def attention(self, x):
            return self.attn(x, x, x, need_weights=False, attn_mask=self.attn_mask)[0]

The mask enters at the construction (``Transformer(width, layers, heads,
attn_mask=build_attention_mask())``), so the construction is the call a
finding belongs to.  The class gets a summary under its own name, as a
function's: its ``__init__``'s parameters, what each reaches through the
attributes ``__init__`` stores them in (``self.<attr> = param``, or
``self.register_buffer("<attr>", param)``, read by any other method), and the edges ``__init__`` hands them on through (a
construction of another such class: ``ResidualAttentionBlock(width, heads,
attn_mask)``).  Only a parameter or attribute named a mask is followed: a
mask is what enters at a construction, and a class built with a config
(``self.config = config``, read by every method) is not summarised again.  A construction is then a call of that summary, the same
for a class of the linted file or another project file.

Each method that reads such an attribute is summarised as if the attribute
were a parameter of its own (``self.attn_mask`` read as a name), then mapped
back to the ``__init__`` parameter.  An attribute stored anywhere but once in
``__init__`` from an unchanged parameter (a method may rebind it to a step of
itself: CLIP's ``self.attn_mask = self.attn_mask.to(dtype=x.dtype) if
self.attn_mask is not None else None``) is not followed.
"""

from __future__ import annotations

import ast
import copy
from typing import Callable, Dict, List, Optional

from ...core import walk as astwalk
from ...core.torch_api import MODULES
from .chains import VARIANT, self_attr
from .fills import FILL_SINKS
from .signatures import literal_defaults

PREFIX = "self."  # a stored attribute read as a parameter: ``self.attn_mask``


def summary(cls: ast.ClassDef, init_summary: Optional[dict], summarise: Callable) -> Optional[dict]:
    """The summary of constructing ``cls`` (module docstring), or None when
    its construction hands no sink anything.  ``init_summary``: ``__init__``'s
    own (its edges); ``summarise(method)``: a method's summary."""
    init = next(
        (m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"), None
    )
    if init is None:
        return None
    stored = _stored(cls, init)
    reach: Dict[str, dict] = {}
    clash: set = set()
    edges: List[dict] = []
    line = None
    for method in cls.body:
        if not isinstance(method, ast.FunctionDef) or method.name == "__init__":
            continue
        if method.decorator_list or not stored or not _reads(method, stored):
            continue
        got = summarise(_as_parameters(method, stored))
        if not got:
            continue
        for sink, how in got.get("reach", {}).items():
            param = how.get("param", "")
            if not param.startswith(PREFIX) or not mask_sink(sink):
                continue
            mapped = dict(how, param=stored[param[len(PREFIX) :]])
            if reach.setdefault(sink, mapped) != mapped:
                clash.add(sink)
            line = line if line is not None else got.get("line")
        edges.extend(_mapped_edges(got.get("edges", ()), stored))
    for sink in clash:
        del reach[sink]
    edges.extend(_mask_edges((init_summary or {}).get("edges", ())))
    if not reach and not edges:
        return None
    a = init.args
    positional = [p.arg for p in a.posonlyargs + a.args][1:]
    return {
        "line": line if line is not None else init.lineno,
        "positional": positional,
        "kwonly": [p.arg for p in a.kwonlyargs],
        "defaults": literal_defaults(a),
        "reach": reach,
        "varargs": a.vararg is not None,
        "varkw": a.kwarg is not None,
        "rebound": [],
        "related": [],
        "training": False,
        "edges": edges,
        "cls": cls.name,
        "name": cls.name,
        "masks_only": True,
    }


_MASK_ARGS = frozenset(a for spec in MODULES.values() for a in spec.mask_args) | {"attn_mask"}


def mask_sink(sink: str) -> bool:
    """A sink a mask reaches (SDPA's ``attn_mask``, a module's mask arguments,
    a fill of scores): a construction is where such a mask enters.  A flag
    or a dropout kept on ``self`` is judged where the sink reads it (MHA006,
    MHA007: not at each construction)."""
    name = sink.split(VARIANT, 1)[0]
    return name in FILL_SINKS or name.rpartition(".")[2] in _MASK_ARGS


def _stored(cls: ast.ClassDef, init: ast.FunctionDef) -> Dict[str, str]:
    """``{attr: param}`` for ``self.<attr> = param`` at ``__init__``'s top
    level, the parameter never rebound there and the attribute stored
    nowhere else but as a step of itself in another method."""
    a = init.args
    params = {p.arg for p in a.posonlyargs[1:] + a.args[1:] + a.kwonlyargs}
    for n in astwalk.walk(init):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            params.discard(n.id)
    out: Dict[str, str] = {}
    for stmt in init.body:
        kept = _buffer(stmt)  # ``self.register_buffer("attn_mask", attn_mask)``
        if kept is not None and kept[1] in params and "mask" in (kept[0] + kept[1]).lower():
            out[kept[0]] = kept[1]
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            attr = self_attr(stmt.targets[0])
            if attr is not None and isinstance(stmt.value, ast.Name) and stmt.value.id in params:
                if "mask" in attr.lower() or "mask" in stmt.value.id.lower():
                    out[attr] = stmt.value.id  # a mask, by its name: what enters here
    counts: Dict[str, int] = {}
    for item in cls.body:
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for n in astwalk.walk(item):
            if isinstance(n, ast.Attribute) and isinstance(n.ctx, (ast.Store, ast.Del)):
                attr = self_attr(n)
                if attr in out and item is not init:
                    counts[attr] = counts.get(attr, 0) + 1
    for attr, count in counts.items():
        if count > 1:
            del out[attr]  # set again and again: not the constructor's value
    return out


def _buffer(stmt: ast.stmt) -> Optional[tuple]:
    """(attribute, parameter) of ``self.register_buffer("name", param, ...)``."""
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "register_buffer"
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == "self"
        and len(call.args) >= 2
        and isinstance(call.args[0], ast.Constant)
        and isinstance(call.args[0].value, str)
        and isinstance(call.args[1], ast.Name)
    ):
        return None
    return call.args[0].value, call.args[1].id


def _reads(method: ast.FunctionDef, stored: Dict[str, str]) -> bool:
    return any(
        isinstance(n, ast.Attribute) and self_attr(n) in stored for n in astwalk.walk(method)
    )


class _AsName(ast.NodeTransformer):
    def __init__(self, stored: Dict[str, str]):
        self.stored = stored

    def visit_Attribute(self, node: ast.Attribute):
        attr = self_attr(node)
        if attr in self.stored:
            return ast.copy_location(ast.Name(id=PREFIX + attr, ctx=node.ctx), node)
        return self.generic_visit(node)


def _as_parameters(method: ast.FunctionDef, stored: Dict[str, str]) -> ast.FunctionDef:
    """A copy of ``method`` reading each stored attribute as a parameter of
    its own, named ``self.<attr>``."""
    func = _AsName(stored).visit(copy.deepcopy(method))
    extra = [ast.arg(arg=PREFIX + attr) for attr in stored]
    func.args.kwonlyargs = list(func.args.kwonlyargs) + extra
    func.args.kw_defaults = list(func.args.kw_defaults) + [None] * len(extra)
    return func


def _mask_edges(edges) -> List[dict]:
    """``__init__``'s edges that hand on a parameter named a mask
    (``ResidualAttentionBlock(width, heads, attn_mask)``), with only those
    arguments: a construction is followed for the masks it hands on, and a
    class built with a config alone (transformers' models, by the thousand)
    costs nothing."""
    out = []
    for edge in edges:
        kept = {
            how: {
                k: a for k, a in edge.get(how, {}).items() if "mask" in a.get("param", "").lower()
            }
            for how in ("pos", "kw")
        }
        if kept["pos"] or kept["kw"]:
            out.append(dict(edge, **kept))
    return out


def _mapped_edges(edges, stored: Dict[str, str]) -> List[dict]:
    """The edges that hand on a stored attribute, with the ``__init__``
    parameter it holds in its place (the method's own parameters left out:
    a construction gives none of them)."""
    out = []
    for edge in edges:
        kept: Dict[str, dict] = {}
        for how in ("pos", "kw"):
            given = {}
            for key, arg in edge.get(how, {}).items():
                param = arg.get("param", "")
                if param.startswith(PREFIX):
                    given[key] = dict(arg, param=stored[param[len(PREFIX) :]])
            kept[how] = given
        if kept["pos"] or kept["kw"]:
            out.append(dict(edge, **kept))
    return out
