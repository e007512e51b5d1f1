"""Helpers that do the arithmetic of attention scores they are handed, read
with ``ast``: ``def add_bias(scores, mask): return scores + mask`` and
``def gated_softmax(s, valid): return (s * valid).softmax(dim=-1)``.

Such a helper's one return is the sum, difference or product of two of its
parameters (through casts, ``contiguous()`` and locals bound once), or a
softmax over the last axis of that.  ``table`` lists a file's such helpers
(the project reads it per file, kept by the file's bytes: ``files.py``); at a call, the scores analysis (``analysis/scores.py``) reads
the call as that arithmetic written in the caller, with the caller's
arguments: the caller's scores and mask are judged there as they would be
inline (MHA004's additive case, MHA012), and the report stands at the call
and names the helper.  Whether the first operand holds attention scores,
and whether a softmax follows, is the caller's to show.
"""

from __future__ import annotations

import ast
import re
from typing import Dict, List, Optional

from ...core import walk as astwalk
from .chains import dotted_name

VERSION = 2  # of what ``table`` writes (part of its memo key)
# a file that may hold such a helper: a return of two names combined, or a
# softmax of them (the screen before a file's functions are read)
_TEXT = re.compile(r"return[ \t(]+[\w.]+[ \t]*[-+*][ \t]*[\w.]+|softmax\([\w.]+[ \t]*[-+*]")
_OPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul"}
# methods that keep a tensor's values (a cast, a layout copy)
_KEEPS = ("to", "type_as", "float", "half", "bfloat16", "double", "contiguous", "clone")
MAX_DEPTH = 8


def may_hold(source: str) -> bool:
    """Whether ``source`` may define a helper ``score_op`` reads."""
    return _TEXT.search(source) is not None


def table(tree: ast.Module) -> Dict[str, dict]:
    """``{"add_bias": {...}, "Attn.mask_scores": {...}}``: ``score_op`` of each
    top-level function and of each method (not a class method) of a
    top-level class."""
    out: Dict[str, dict] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            got = score_op(node, False)
            if got is not None:
                out[node.name] = got
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                deco = {dotted_name(d) for d in item.decorator_list}
                if "classmethod" in deco:
                    continue
                got = score_op(item, "staticmethod" not in deco)
                if got is not None:
                    out[f"{node.name}.{item.name}"] = got
    return out


def valid_table(got) -> bool:
    """A ``table`` as it writes it (one read from the store may not be)."""
    return isinstance(got, dict) and all(
        isinstance(k, str) and valid_score_op(v) for k, v in got.items()
    )


def score_op(func, method: bool) -> Optional[dict]:
    """``{"left": p, "right": q, "op": "add"|"sub"|"mul", "softmax": bool,
    "line": n}`` plus the signature a call is bound with (``binding.bind``:
    a helper's defaults bind nothing here, both operands must be passed),
    for a function whose one return combines two of its parameters ``p op
    q``; None otherwise."""
    args = func.args
    positional = [a.arg for a in args.posonlyargs + args.args]
    if method:
        positional = positional[1:]
    kwonly = [a.arg for a in args.kwonlyargs]
    params = set(positional) | set(kwonly)
    if len(params) < 2:
        return None
    returns: List[ast.Return] = []
    stores: Dict[str, List[ast.AST]] = {}
    for n in astwalk.own_statements(func):  # what it reads are statements
        if isinstance(n, ast.Return):
            returns.append(n)
        elif isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.With)):
            for x in ast.walk(n):
                if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store):
                    stores.setdefault(x.id, []).append(n)
    if len(returns) != 1 or returns[0].value is None:
        return None
    if params & set(stores):
        return None  # a parameter rebound: what the return reads is not the caller's
    softmax, expr = _softmaxed(_through(returns[0].value, stores, params))
    expr = _through(expr, stores, params)
    if not isinstance(expr, ast.BinOp) or type(expr.op) not in _OPS:
        return None
    left = _param(expr.left, stores, params)
    right = _param(expr.right, stores, params)
    if left is None or right is None or left == right:
        return None
    return {
        "left": left,
        "right": right,
        "op": _OPS[type(expr.op)],
        "softmax": softmax,
        "line": expr.lineno,
        "positional": positional,
        "kwonly": kwonly,
        "varargs": args.vararg is not None,
        "varkw": args.kwarg is not None,
    }


def valid_score_op(op) -> bool:
    """An entry of ``table`` as ``score_op`` writes it."""
    return (
        isinstance(op, dict)
        and isinstance(op.get("left"), str)
        and isinstance(op.get("right"), str)
        and op.get("op") in _OPS.values()
        and type(op.get("softmax")) is bool
        and type(op.get("line")) is int
        and isinstance(op.get("positional"), list)
        and isinstance(op.get("kwonly"), list)
        and all(isinstance(p, str) for p in op["positional"] + op["kwonly"])
        and type(op.get("varargs")) is bool
        and type(op.get("varkw")) is bool
    )


def _through(expr, stores, params, depth: int = 0):
    """``expr`` read through value-keeping methods and locals bound once."""
    while depth < MAX_DEPTH:
        depth += 1
        if (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in _KEEPS
        ):
            expr = expr.func.value
        elif isinstance(expr, ast.Name) and expr.id not in params:
            got = stores.get(expr.id, ())
            if len(got) != 1 or not isinstance(got[0], ast.Assign):
                return expr
            assign = got[0]
            if len(assign.targets) != 1 or not isinstance(assign.targets[0], ast.Name):
                return expr
            expr = assign.value
        else:
            return expr
    return expr


def _softmaxed(expr):
    """``(True, x)`` for a softmax of ``x`` over the last axis
    (``x.softmax(-1)``, ``x.softmax(dim=-1)``, ``F.softmax(x, dim=-1)``,
    ``torch.softmax(x, -1)``), else ``(False, expr)``."""
    if not isinstance(expr, ast.Call):
        return False, expr
    func = expr.func
    name = dotted_name(func) or ""
    module = name.split(".")[0] in ("F", "torch", "functional")  # ``F.softmax(x, -1)``
    if isinstance(func, ast.Attribute) and func.attr == "softmax" and module:
        x = expr.args[0] if expr.args else None
        rest = expr.args[1:]
    elif isinstance(func, ast.Attribute) and func.attr == "softmax":
        x, rest = func.value, expr.args
    else:
        return False, expr
    dim = rest[0] if rest else next((k.value for k in expr.keywords if k.arg == "dim"), None)
    if x is None or dim is None or not _minus_one(dim):
        return False, expr
    return True, x


def _minus_one(node) -> bool:
    return (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and node.operand.value == 1
    )


def _param(expr, stores, params) -> Optional[str]:
    """The parameter ``expr`` is, through value-keeping methods and locals."""
    expr = _through(expr, stores, params)
    return expr.id if isinstance(expr, ast.Name) and expr.id in params else None
