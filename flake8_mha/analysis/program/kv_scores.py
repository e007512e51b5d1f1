"""Keys and values a parameter's mask is multiplied into, in a summarised
function's hand-written attention (MHA015 at each caller), read with ``ast``.

A function or a module's ``forward`` that computes its own attention
(``scores = q @ k.transpose(-2, -1) / scale``, ``scores.softmax(-1) @ v``)
and multiplies one of its parameters into the keys or values (``k = self.k(x)
* keep[..., None]``) masks nothing its softmax can see: a zeroed key still
scores 0.  The caller's mask is judged at each call, as for a wrapper whose
one SDPA call is given the masked keys (``fills.kv_reach``).  Read only when
the scores reach the softmax unmasked: the one query-key product, scaled or
reshaped, with no fill, no added term and no in-place change of its own.
"""

from __future__ import annotations

import ast
from typing import Optional, Tuple

from ...core import walk as astwalk
from . import steps
from .chains import dotted_name
from .fills import PRODUCTS, kv_reach, names_a_mask, of_weights, scores_of

# where the sink's step says the keys go: hand-written scores, not SDPA
HANDWRITTEN = "scores"
# the changes in place that may mask the scores (``scores.masked_fill_(m, -inf)``)
_IN_PLACE = ("masked_fill_", "add_", "sub_", "mul_", "div_", "copy_", "fill_")
_MAX_DEPTH = 8


def row_movers(body, method: bool) -> frozenset:
    """The functions among ``body`` (a class's, or a module's top level) whose
    one return moves the axes of their first argument and keeps its rows
    (``def split(self, x): return x.view(B, N, h, d).transpose(1, 2)``,
    ``rearrange(t, "b n (h d) -> b h n d", h=h)``), named as they are called:
    ``self.split`` for a method, ``split_heads`` for a function."""
    out = set()
    for item in body:
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = [a.arg for a in item.args.posonlyargs + item.args.args]
        if method:
            params = params[1:]
        last = item.body[-1] if item.body else None
        if not params or not isinstance(last, ast.Return) or last.value is None:
            continue
        if sum(isinstance(n, ast.Return) for n in astwalk.walk(item)) != 1:
            continue
        if steps.keeps_rows(last.value, params[0]):
            out.add(f"self.{item.name}" if method else item.name)
    return frozenset(out)


def handwritten_kv(func, calls, reads, stores, top, pairs=None, movers=frozenset()):
    """``(reach, line)`` for the parameter multiplied into the keys or values
    of ``func``'s hand-written attention (its ops end with ``[KV, "keys and
    values", HANDWRITTEN]``), the line of its query-key product; None when
    the function has no such attention, masks its scores, or multiplies no
    parameter (or two different ones) in.  ``calls``: the function's calls."""
    softmaxes = [c for c in calls if _softmax_input(c) is not None]
    if len(softmaxes) != 1:
        return None
    product = _bare_product(_softmax_input(softmaxes[0]), stores, softmaxes[0].lineno, 0)
    if product is None or _changed_in_place(calls, stores):
        return None
    given = {"key": _operands(product)[1]}
    weighted = [
        n for n in astwalk.own_nodes(func) if _is_product(n) and of_weights(_operands(n)[0], stores)
    ]
    if len(weighted) == 1:
        given["value"] = _operands(weighted[0])[1]
    got = kv_reach(given, reads, stores, top, pairs, movers)
    if got is None:
        return None
    step = got["ops"][-1]
    got["ops"][-1] = [step[0], step[1], HANDWRITTEN]
    return got, product.lineno


def _softmax_input(call: ast.Call) -> Optional[ast.AST]:
    """What ``call`` softmaxes: ``x.softmax(-1)``, ``F.softmax(x, -1)``,
    ``torch.softmax(x, dim=-1)``, ``nn.Softmax(dim=-1)(x)``."""
    func = call.func
    if isinstance(func, ast.Call):  # a module built and called at once
        name = dotted_name(func.func) or ""
        return call.args[0] if name.endswith("Softmax") and len(call.args) == 1 else None
    name = dotted_name(func) or (func.attr if isinstance(func, ast.Attribute) else "")
    if not name.endswith("softmax") or name.endswith("log_softmax"):
        return None
    root = name.split(".")[0] if dotted_name(func) else ""
    if isinstance(func, ast.Attribute) and root not in ("torch", "F", "nn", "functional", "self"):
        return func.value  # ``scores.softmax(dim=-1)``
    return call.args[0] if call.args else None  # ``F.softmax(x)``, ``self.softmax(x)``


def _bare_product(node, stores, line: int, depth: int) -> Optional[ast.AST]:
    """The query-key product ``node`` holds unmasked: the product itself,
    scaled by what names no mask, reshaped, or a local bound to such (read
    at its last store before ``line``, every store of it plain)."""
    if node is None or depth > _MAX_DEPTH:
        return None
    if _is_product(node):
        return node
    if isinstance(node, ast.Name):
        defs = stores.get(node.id, ())
        if not defs or not all(_plain_store(d, node.id) for d in defs):
            return None
        before = [d for d in defs if d.lineno < line]
        if not before:
            return None
        last = max(before, key=lambda d: d.lineno)
        return _bare_product(last.value, stores, last.lineno, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
        sides = [(node.left, node.right)]
        if isinstance(node.op, ast.Mult):
            sides.append((node.right, node.left))
        for scores, other in sides:
            if scores_of(scores, stores, 0) and not scores_of(other, stores, 0):
                if names_a_mask(other):
                    return None  # a mask multiplied into the scores: MHA012's
                return _bare_product(scores, stores, line, depth + 1)
        return None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("view", "reshape", "contiguous", "float", "to", "type_as")
    ):
        return _bare_product(node.func.value, stores, line, depth + 1)
    return None


def _plain_store(d, name: str) -> bool:
    return (
        isinstance(d, ast.Assign)
        and len(d.targets) == 1
        and isinstance(d.targets[0], ast.Name)
        and d.targets[0].id == name
    )


def _is_product(node) -> bool:
    """``a @ b``, ``torch.matmul(a, b)``, ``torch.bmm(a, b)``, ``torch.einsum(
    "bhid,bhjd->bhij", a, b)`` (the query, or the weights, first)."""
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, ast.MatMult)
    if not isinstance(node, ast.Call) or node.keywords:
        return False
    name = dotted_name(node.func) or ""
    if name.split(".")[0] != "torch":
        return False
    last = name.rsplit(".", 1)[-1]
    if last == "einsum":
        return len(node.args) == 3 and isinstance(node.args[0], ast.Constant)
    return len(node.args) == 2 and last in PRODUCTS[:2]


def _operands(node) -> Tuple[ast.AST, ast.AST]:
    if isinstance(node, ast.BinOp):
        return node.left, node.right
    return node.args[-2], node.args[-1]


def _changed_in_place(calls, stores) -> bool:
    """A change in place of the scores (``scores.masked_fill_(m, -inf)``)."""
    return any(
        isinstance(c.func, ast.Attribute)
        and c.func.attr in _IN_PLACE
        and scores_of(c.func.value, stores, 0)
        for c in calls
    )


class Readers:
    """What a file's summaries read keys and values through: its helpers that
    mask what they return (``fills.kv_helpers``, None for a file without SDPA)
    and the calls that keep the rows of their argument (``row_movers`` of the
    file's functions, and of a class's methods inside it)."""

    __slots__ = ("pairs", "movers")

    def __init__(self, pairs, movers: frozenset) -> None:
        self.pairs, self.movers = pairs, movers

    def in_class(self, node: ast.ClassDef) -> "Readers":
        return Readers(self.pairs, self.movers | row_movers(node.body, True))

    def __repr__(self) -> str:  # a summary's reuse key (``summaries._reused``)
        pairs = sorted(self.pairs.items()) if self.pairs is not None else None
        return repr((pairs, sorted(self.movers)))
