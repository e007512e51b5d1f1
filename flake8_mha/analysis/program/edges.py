"""The edges of a summary: the calls a function makes that pass one of its
parameters on (``chains.py`` says what an edge is and how it composes).

``for blk in self.blocks: blk(x, mask)`` calls the items of ``self.blocks``;
``checkpoint(blk, x, mask)`` runs ``blk(x, mask)``; ``self.attn.forward(...)``
and ``getattr(self, "attn")(...)`` are ``self.attn(...)``.  Each edge names
its callee symbolically (``["name", "attend"]``, ``["self", "attn"]``,
``["method", "helper"]``, ``["held", "vit.forward_features"]``,
``["super", "forward"]``), with what the call passes itself (``arity``).
Read with Python's ``ast``; nothing is imported or run.
"""

from __future__ import annotations

import ast
import builtins
from typing import Dict, List, Optional

from ...core import walk as astwalk
from .chains import CHECKPOINT_KEYWORDS, attr_template, dotted_name, self_attr, super_method

MAX_EDGES = 64  # per function: a generated file's huge forward is not followed
_BUILTINS = frozenset(dir(builtins))


def edges(calls, loops_over, attrs: Dict[str, str], reach_of, fwd=None, uses=None) -> List[dict]:
    """The calls (``calls``: the function's own, SDPA's left out) that pass
    one of its parameters (through the transformations a summary can
    describe) to a function, method or module that may reach a sink:
    ``{"callee": [...], "pos": {"0": reach}, "kw": {"attn_mask": reach},
    "line": n}``.  ``loops_over``: the function's ``for`` statements (a loop
    variable over ``self.blocks``, or over ``self.heads.values()`` or
    ``.items()``, calls its items); ``reach_of(expr, call)``: the
    parameter an argument is, and through what (``summaries``).

    ``fwd``: the function's own ``**kwargs`` parameter, when it is handed on
    untouched.  A call that passes it on as ``**kwargs`` (and no other
    splat) forwards every keyword its own callers put there: the edge says
    so (``"fwd"``), with how many positional arguments and which keywords the
    call gives itself (``"given"``), which the callee's parameters so filled
    cannot receive.  ``uses``: ``id`` of a call -> what the function does
    with its result (``returned_scores.result_uses``), the edge's ``"result"``."""
    loops: Dict[str, str] = {}  # for blk in self.blocks / enumerate(self.blocks)
    each: List[tuple] = []  # (the loop, the names it binds to items): a call in it reads these
    for n in loops_over:
        own: Dict[str, str] = {}
        _loop_items(n, attrs, own)
        loops.update(own)
        each.append((n, own))
    each.sort(key=lambda e: e[0].lineno)  # the innermost loop around a call read last
    out: List[dict] = []
    for call in calls:
        n = _checkpointed(call)
        callee = _callee(n.func, _around(n, each, loops), attrs)
        if callee is None:
            continue
        pos: Dict[str, dict] = {}
        kw: Dict[str, dict] = {}
        starred = False
        for i, a in enumerate(n.args):
            if isinstance(a, ast.Starred):
                starred = True
                break
            got = reach_of(a, call)
            if got is not None:
                pos[str(i)] = got
        splats = [k for k in n.keywords if k.arg is None]
        forwards = (
            fwd is not None
            and len(splats) == 1
            and isinstance(splats[0].value, ast.Name)
            and splats[0].value.id == fwd
        )
        if starred or (splats and not forwards):
            continue  # a splat: which parameter gets what is not known
        for k in n.keywords:
            if k.arg is None:
                continue
            got = reach_of(k.value, call)
            if got is not None:
                kw[k.arg] = got
        if pos or kw or forwards:
            edge = {"callee": callee, "pos": pos, "kw": kw, "line": n.lineno}
            given = [len(n.args), sorted(k.arg for k in n.keywords if k.arg)]
            edge.update(fwd=True, given=given) if forwards else edge.update(arity=given)
            if uses and id(call) in uses:
                edge["result"] = uses[id(call)]
            out.append(edge)
            if len(out) >= MAX_EDGES:
                break
    return sorted(out, key=lambda e: e["line"])


def _checkpointed(call: ast.Call) -> ast.Call:
    """``checkpoint(blk, x, mask, use_reentrant=False)`` (``torch.utils.checkpoint``,
    by any import of it) runs ``blk(x, mask)``; any other call is itself."""
    name = dotted_name(call.func) or ""
    if (
        name.rsplit(".", 1)[-1] != "checkpoint"
        or not call.args
        or isinstance(call.args[0], ast.Starred)
        or name not in ("checkpoint", "torch.utils.checkpoint.checkpoint")
        and not name.endswith("checkpoint.checkpoint")
        and name != "cp.checkpoint"
    ):
        return call
    keywords = [k for k in call.keywords if k.arg not in CHECKPOINT_KEYWORDS]
    run = ast.Call(func=call.args[0], args=call.args[1:], keywords=keywords)
    return ast.copy_location(run, call)


def _loop_items(n: ast.For, attrs: Dict[str, str], loops: Dict[str, str]) -> None:
    """Record in ``loops`` the names the loop ``n`` binds to the items of a
    container attribute (``for blk in self.blocks``, ``enumerate``, ``zip``,
    ``.values()``/``.items()``)."""
    it, target = n.iter, n.target
    if (
        isinstance(it, ast.Call)
        and dotted_name(it.func) == "enumerate"
        and it.args
        and isinstance(target, ast.Tuple)
        and len(target.elts) == 2
    ):
        it, target = it.args[0], target.elts[1]
    if (  # for block in self.heads.values(); for name, block in self.heads.items()
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Attribute)
        and it.func.attr in ("values", "items")
        and not it.args
    ):
        if it.func.attr == "items":
            if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
                return
            target = target.elts[1]
        it = it.func.value
    if (  # for attn, ff in zip(self.attns, self.ffs)
        isinstance(it, ast.Call)
        and dotted_name(it.func) == "zip"
        and not it.keywords
        and isinstance(target, ast.Tuple)
        and len(target.elts) == len(it.args)
    ):
        for el, arg in zip(target.elts, it.args):
            attr = self_attr(arg)
            if isinstance(el, ast.Name) and attr is not None and attr in attrs:
                loops[el.id] = attr
        return
    attr = self_attr(it) or _member(it, attrs)  # or nanoGPT's ``self.transformer.h``
    if attr is not None and attr in attrs and isinstance(target, ast.Name):
        loops[target.id] = attr
    elif attr is not None and isinstance(target, ast.Tuple):  # for attn, ff in self.layers
        for i, el in enumerate(target.elts):
            if isinstance(el, ast.Name) and f"{attr}#{i}" in attrs:
                loops[el.id] = f"{attr}#{i}"


def _around(call: ast.Call, each: List[tuple], loops: Dict[str, str]) -> Dict[str, str]:
    """The loop names a call reads: those of the loops around it (``each``,
    in line order), the innermost last (DETR's ``for layer in self.encoder``
    then ``for layer in self.decoder``: each loop's call its own layers,
    probe AO's AO18); else what the function's loops bound last."""
    line = getattr(call, "lineno", 0)
    out = dict(loops)
    for loop, names in each:
        if loop.body and loop.body[0].lineno <= line <= (loop.end_lineno or 0):
            for x in astwalk.walk(loop.target):  # what else the loop binds is not an item
                if isinstance(x, ast.Name):
                    out.pop(x.id, None)
            out.update(names)
    return out


def _callee(func: ast.AST, loops: Dict[str, str], attrs: Dict[str, str]) -> Optional[list]:
    if (
        isinstance(func, ast.Attribute)
        and func.attr == "forward"
        and (self_attr(func.value) or (isinstance(func.value, ast.Name) and func.value.id in loops))
    ):  # ``self.attn.forward(...)``, ``blk.forward(...)`` over ``self.blocks``: the call of it
        func = func.value
    if (  # getattr(self, "attn")(...)
        isinstance(func, ast.Call)
        and isinstance(func.func, ast.Name)
        and func.func.id == "getattr"
        and len(func.args) == 2
        and not func.keywords
        and isinstance(func.args[0], ast.Name)
        and func.args[0].id == "self"
        and attr_template(func.args[1]) in attrs
    ):  # also ``getattr(self, f"stage_{i}")`` after ``setattr(self, f"stage_{i}", ...)``
        return ["self", attr_template(func.args[1])]
    if isinstance(func, ast.Name):
        if func.id in loops:
            return ["self", loops[func.id]]
        return ["name", func.id] if func.id not in _BUILTINS else None
    if isinstance(func, ast.Subscript):  # self.blocks[0](...), self.layers["attn"](...)
        attr = self_attr(func.value)
        key = func.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            keyed = f"{attr}[{key.value}]"
            if keyed in attrs:
                return ["self", keyed]
        return ["self", attr] if attr in attrs else None
    attr = self_attr(func)
    if attr is not None:
        return ["self", attr] if attr in attrs else ["method", attr]
    if isinstance(func, ast.Attribute) and _member(func, attrs):  # ``self.transformer.wte(...)``
        return ["self", _member(func, attrs)]
    if isinstance(func, ast.Attribute) and self_attr(func.value) in attrs:
        # ``self.vit.forward_features(...)``: a named method of a held module
        return ["held", f"{self_attr(func.value)}.{func.attr}"]
    if super_method(func) is not None and not func.value.keywords:
        # super().forward(...), super(Cls, self).attend(...): a base's method
        return ["super", func.attr]
    name = dotted_name(func)
    return ["name", name] if name is not None else None


def _member(node: ast.AST, attrs: Dict[str, str]) -> Optional[str]:
    """``"transformer[h]"`` for ``self.transformer.h`` where ``self.transformer``
    is an ``nn.ModuleDict`` whose member ``h`` the class builds (``chains._keyed``)."""
    if not isinstance(node, ast.Attribute):
        return None
    keyed = f"{self_attr(node.value)}[{node.attr}]"
    return keyed if self_attr(node.value) is not None and keyed in attrs else None
