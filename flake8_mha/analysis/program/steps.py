"""The steps a summary follows a parameter through (``summaries.py``), read
with ``ast``: the parameter itself, a local bound once to a step of it, or
a parameter rebound once to a step of itself at the function's top
(``mask = mask[:, None, None, :]`` under ``if mask is not None:``), through
the transformations the rules know (``~``, ``logical_not``, broadcasting
indexes and unit-axes ``rearrange``, ``.bool()``, ``.unsqueeze(i)``, a
device move).  docs/reach.md lists them.
"""

from __future__ import annotations

import ast
import re
from typing import Dict, List, Optional, Tuple

from .chains import dotted_name, is_none_constant


class Rebound(list):
    """The one store of a parameter that rebinds it to a transformation of
    itself (``rebinds``): ``ops``, the steps, and the statement; ``param``,
    the parameter a local alias stands for (None: the name is the
    parameter)."""

    def __init__(self, stmt: ast.Assign, ops: list, param: Optional[str] = None):
        super().__init__([stmt])
        self.ops = ops
        self.param = param


def rebinds(func, params: set, stores: Dict[str, List[ast.AST]]) -> Dict[str, List[ast.AST]]:
    """``stores`` with each parameter stored once, by ``p = <step of p>`` at
    the function's top level or in the body of a top-level ``if p is not
    None:`` (whatever its ``else:``, where ``p`` is None), marked
    (``Rebound``): a use after it reads ``p`` through that step on every
    path that gives a mask (``mask = mask[:, None, None, :]``, ``mask =
    ~mask.bool()``).  A parameter given a value only in an ``if p is
    None:`` with no ``else:`` (at the top level, or in ``if``, ``with`` and
    ``try`` blocks) keeps the caller's value, unchanged, on every path where
    a caller gives one.  A parameter reshaped once in the body of any other
    top-level ``if`` without an ``else:`` (``if attn_mask is not None and
    attn_mask.dim() == 3: attn_mask = attn_mask[:, None]``), by indexes and
    ``unsqueeze`` only, keeps its meaning on every path, its shape on some:
    the step ``expand`` (shape unknown).  Any other store leaves the
    parameter rebound."""
    allowed: Dict[int, Tuple[ast.Assign, Optional[str]]] = {}  # (statement, name tested)
    # the stores in the body of another top-level ``if`` with no ``else:``: a shape on some paths
    on_some_paths: Dict[int, ast.Assign] = {}
    # ``if p is None: p = <default>``: the caller's ``p`` after the ``if``
    defaulted: Dict[int, Tuple[str, ast.If]] = {}
    for stmt in func.body:
        if isinstance(stmt, ast.Assign):
            allowed[id(stmt)] = (stmt, None)
        elif isinstance(stmt, ast.If) and _not_none_test(stmt.test):
            # an ``else:`` is the path without a mask (ESPnet's ``forward_attention``)
            for inner in stmt.body:
                if isinstance(inner, ast.Assign):
                    allowed[id(inner)] = (inner, _not_none_test(stmt.test))
        elif isinstance(stmt, ast.If) and not stmt.orelse:
            on_some_paths.update((id(i), i) for i in stmt.body if isinstance(i, ast.Assign))
    for stmt in _in_blocks(func.body):
        if isinstance(stmt, ast.If) and _is_none(stmt.test) and not stmt.orelse:
            name = stmt.test.left
            for inner in stmt.body:
                if isinstance(name, ast.Name) and isinstance(inner, ast.Assign):
                    defaulted[id(inner)] = (name.id, stmt)
    out = dict(stores)
    for p in params & set(stores):
        defs = stores[p]
        test = defaulted.get(id(defs[0]), (None,)) if len(defs) == 1 else (None,)
        if test[0] == p and _assigns_only(defs[0], p):
            # litgpt's ``if mask is None: mask = <causal bias>``: after the ``if``, a
            # mask a caller gives is read as it is given (one that gives none gets
            # the default); inside it, ``p`` is the default being made
            out[p] = Rebound(test[1], [])
            continue
        got = allowed.get(id(defs[0])) if len(defs) == 1 else None
        if got is None and len(defs) == 1 and id(defs[0]) in on_some_paths:
            shaped = _reshaped_self(defs[0], p)
            if shaped:
                out[p] = Rebound(defs[0], [["expand"]])
            continue
        if got is None or got[1] not in (None, p):
            continue
        stmt = got[0]
        if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
            continue
        got = reach(stmt.value, {p}, {}, 0)  # the steps it applies to ``p`` itself
        if got is not None:
            out[p] = Rebound(stmt, got["ops"])
    for stmt, _ in allowed.values():  # ``q, k, v = map(lambda t: rearrange(...), (q, k, v))``
        for p in _split_heads(stmt, params):
            if len(stores.get(p, ())) == 1:
                out[p] = Rebound(stmt, [["rows"]])
    for name, defs in stores.items():
        alias = _alias_cut(name, defs, allowed, params, stores) or _set_if_given(
            name, defs, allowed, params, stores
        )
        if alias is not None:
            out[name] = alias
    return out


def _reshaped_self(stmt: ast.Assign, p: str) -> bool:
    """``p = p[:, None]`` or ``p = p.unsqueeze(1)``: ``p`` given axes, taken
    or picked, nothing else."""
    if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
        return False
    got = reach(stmt.value, {p}, {}, 0)
    return (
        got is not None
        and got.get("param") == p
        and bool(got["ops"])
        and all(op[0] in ("index", "unsqueeze") for op in got["ops"])
    )


def _in_blocks(body):
    """The statements of ``body`` and of the ``if``, ``with`` and ``try``
    blocks in it, at any depth: litgpt's ``if mask is None:`` default sits
    in the soft-capped path's ``if``."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from _in_blocks(stmt.body)
            yield from _in_blocks(stmt.orelse)
        elif isinstance(stmt, ast.With):
            yield from _in_blocks(stmt.body)
        elif isinstance(stmt, ast.Try):
            for part in (stmt.body, stmt.orelse, stmt.finalbody, *(h.body for h in stmt.handlers)):
                yield from _in_blocks(part)


def _split_heads(stmt: ast.Assign, params: set) -> List[str]:
    """The parameters ``q, k, v = <each split into heads>`` rebinds each to
    itself with its rows kept: ``map(lambda t: rearrange(t, "b n (h d) -> b
    h n d", h=h), (q, k, v))``, the generator ``(rearrange(t, ...) for t in
    (q, k, v))``, einops-exts' ``rearrange_many((q, k, v), ...)``.  Only the
    keys and values are read through it (the step ``rows``)."""
    target, value = stmt.targets[0] if len(stmt.targets) == 1 else None, stmt.value
    if not isinstance(target, (ast.Tuple, ast.List)):
        return []
    items = param = body = None
    if isinstance(value, ast.Call) and value.args:
        name = dotted_name(value.func) or ""
        if name.rsplit(".", 1)[-1] == "rearrange_many":  # ``h=heads`` among its keywords
            items = value.args[0]
        elif (
            name == "map"
            and len(value.args) == 2
            and not value.keywords
            and isinstance(value.args[0], ast.Lambda)
        ):
            lam = value.args[0]
            if len(lam.args.args) == 1 and not (lam.args.vararg or lam.args.kwarg):
                param, body, items = lam.args.args[0].arg, lam.body, value.args[1]
    elif isinstance(value, ast.GeneratorExp) and len(value.generators) == 1:
        gen = value.generators[0]
        if isinstance(gen.target, ast.Name) and not gen.ifs:
            param, body, items = gen.target.id, value.elt, gen.iter
    if not isinstance(items, (ast.Tuple, ast.List)) or len(items.elts) != len(target.elts):
        return []
    if param is not None and not keeps_rows(body, param):
        return []
    return [
        t.id
        for t, e in zip(target.elts, items.elts)
        if isinstance(t, ast.Name) and isinstance(e, ast.Name) and t.id == e.id and t.id in params
    ]


ROW_METHODS = {"view", "reshape", "transpose", "permute", "contiguous", "unflatten", "flatten"}


def keeps_rows(body: ast.AST, param: str) -> bool:
    """``rearrange(t, ...)`` or ``t.view(...).transpose(1, 2)`` of ``param``."""
    while isinstance(body, ast.Call):
        func = body.func
        if isinstance(func, ast.Attribute) and func.attr in ROW_METHODS:
            body = func.value
            continue
        if (dotted_name(func) or "").rsplit(".", 1)[-1] != "rearrange" or not body.args:
            return False
        body = body.args[0]
    return isinstance(body, ast.Name) and body.id == param


def _alias_cut(name, defs, allowed, params, stores) -> Optional[Rebound]:
    """HF's alias-then-cut: a local bound at the top to a parameter
    (``causal_mask = attention_mask``), then once more to a step of itself
    at the top or under ``if <it or the parameter> is not None:``
    (``causal_mask = causal_mask[:, :, :, : key_states.shape[-2]]``).  A
    use after the second store reads the parameter through both."""
    if name in params or len(defs) != 2:
        return None
    first, second = (allowed.get(id(d)) for d in sorted(defs, key=lambda d: d.lineno))
    if first is None or second is None or first[1] is not None:
        return None
    if any(
        len(s.targets) != 1 or not isinstance(s.targets[0], ast.Name) for s, _ in (first, second)
    ):
        return None
    base = reach(first[0].value, params, {k: v for k, v in stores.items() if k != name}, 0)
    if base is None or second[1] not in (None, name, base["param"]):
        return None
    step = reach(second[0].value, {name}, {}, 0)
    if step is None:
        return None
    return Rebound(second[0], base["ops"] + step["ops"], base["param"])


def _set_if_given(name, defs, allowed, params, stores) -> Optional[Rebound]:
    """A local whose last store is ``name = <step of p>`` in the body of a
    top-level ``if p is not None:`` (``p`` a parameter), every other store
    before it: a use after it reads ``p`` through its steps whenever the
    caller gives ``p`` (ESM's ``attn_mask = None`` then ``if
    key_padding_mask is not None: attn_mask = key_padding_mask[:, None,
    None, :]``; MPT's ``if prefix_mask is not None: attn_bias =
    prefix_mask`` over a bias built before it).  Given None, the other
    stores hold what the function makes itself: judged where it is made."""
    if name in params:
        return None
    ordered = sorted(defs, key=lambda d: d.lineno)
    last = allowed.get(id(ordered[-1]))
    if last is None or last[1] not in params:
        return None
    stmt = last[0]
    if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
        return None
    if len(ordered) > 1 and ordered[-2].lineno >= stmt.lineno:
        return None
    # the function's stores: ``qk = qk + mask`` adds the mask to the scores, which
    # hold data of other parameters (``fills``), not to a bias of its own
    step = reach(stmt.value, params, stores, 0)
    if step is None or step["param"] != last[1]:
        return None
    return Rebound(stmt, step["ops"], last[1])


def default_blocks(stores) -> List[ast.If]:
    """The ``if p is None:`` blocks that give a parameter its default
    (``rebinds``): what runs in them makes the default, on no path where a
    caller gives ``p``."""
    return [d[0] for d in stores.values() if isinstance(d, Rebound) and isinstance(d[0], ast.If)]


def _assigns_only(stmt: ast.Assign, name: str) -> bool:
    """``name = <value>``: one target, the name."""
    return (
        len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and stmt.targets[0].id == name
    )


def none_test_of(test: ast.AST) -> Optional[str]:
    """The name ``p`` of ``p is None``, ``p is not None`` or ``exists(p)``."""
    if _is_none(test) and isinstance(test.left, ast.Name):
        return test.left.id
    return _not_none_test(test)


def _not_none_test(test: ast.AST) -> Optional[str]:
    """The name ``p`` a test ``p is not None`` or ``exists(p)`` (the helper
    of that meaning many attention packages define) reads, or None."""
    if _is_not_none(test):
        return test.left.id
    if (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == "exists"
        and len(test.args) == 1
        and not test.keywords
        and isinstance(test.args[0], ast.Name)
    ):
        return test.args[0].id
    return None


def _is_not_none(test: ast.AST) -> bool:
    """``p is not None`` of a name ``p``."""
    return isinstance(_none_compared(test, ast.IsNot), ast.Name)


def _is_none(test: ast.AST) -> bool:
    """``x is None``."""
    return _none_compared(test, ast.Is) is not None


def _none_compared(test: ast.AST, op: type) -> Optional[ast.AST]:
    """``x`` of ``x is None`` (``op``: ``ast.Is``) or ``x is not None``
    (``ast.IsNot``), else None."""
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], op)
        and is_none_constant(test.comparators[0])
    ):
        return test.left
    return None


def given_test(test: ast.AST) -> Optional[str]:
    """The name an ``if`` test says is given: ``m is not None``, ``m``."""
    if isinstance(test, ast.Name):
        return test.id
    return test.left.id if _is_not_none(test) else None


def reach(expr: ast.AST, params: set, stores, depth: int, casts: bool = False) -> Optional[dict]:
    """``{"param": name, "ops": [...]}`` when ``expr`` is a parameter, unchanged
    or through transformations the rules know; None otherwise.  ``casts``: a
    cast to a number type (``.float()``, ``.to(k.dtype)``, ``.type_as(k)``)
    keeps it as it is, as for a factor multiplied into keys (MHA015), where a
    0/1 mask and a bool one zero the same rows (never for a mask given to
    SDPA, where a float mask is added)."""
    if depth > 8:
        return None
    if casts and _cast(expr):
        return reach(expr.func.value, params, stores, depth + 1, casts)
    if isinstance(expr, ast.Name):
        defs = stores.get(expr.id)
        if expr.id in params and not defs:
            return {"param": expr.id, "ops": []}
        if isinstance(defs, Rebound) and getattr(expr, "lineno", 0) > defs[0].end_lineno:
            if expr.id in params:
                return {"param": expr.id, "ops": list(defs.ops)}
            if defs.param is not None:
                return {"param": defs.param, "ops": list(defs.ops)}
        if expr.id not in params and defs and len(defs) == 1:
            d = defs[0]
            if (
                isinstance(d, ast.Assign)
                and len(d.targets) == 1
                and isinstance(d.targets[0], ast.Name)
            ):
                return reach(d.value, params, stores, depth + 1, casts)
        if expr.id not in params and defs and len(defs) == 2:
            return _folded(expr.id, defs, params, stores, depth, casts)
        return None
    op = _op(expr)
    if op is None:
        return _joined(expr, params, stores, depth, casts)
    inner, step = op
    got = reach(inner, params, stores, depth + 1, casts)
    if got is None:
        return None
    got["ops"] = got["ops"] + [step] if step else got["ops"]
    return got


def _folded(name: str, defs, params: set, stores, depth: int, casts: bool) -> Optional[dict]:
    """T5's ``position_bias = <bias of its own>``, then ``if mask is not None:
    position_bias = position_bias + mask`` (probe AN's AN07): on the path that
    gives a mask, the caller's mask added to the function's bias (``_joined``'s
    ``+``); the other store holds no data of a parameter (``_params_data``)."""
    first, second = sorted(defs, key=lambda d: (d.lineno, d.col_offset))
    if not (isinstance(first, ast.Assign) and len(first.targets) == 1):
        return None
    if _params_data(first.value, params, stores, 0):
        return None  # ``scores = q @ k.transpose(-2, -1)``: the scores, not a bias
    return _fold_of(name, second, params, stores, depth, casts)


def _fold_of(name: str, store, params: set, stores, depth: int, casts: bool) -> Optional[dict]:
    """``name = name + mask`` or ``name += mask``: where ``mask`` reaches a
    parameter, that parameter added to the scores as numbers."""
    if isinstance(store, ast.AugAssign) and isinstance(store.op, ast.Add):
        added = store.value
    elif (
        isinstance(store, ast.Assign)
        and len(store.targets) == 1
        and isinstance(store.value, ast.BinOp)
        and isinstance(store.value.op, ast.Add)
    ):
        sides = (store.value.left, store.value.right)
        own = [i for i, x in enumerate(sides) if isinstance(x, ast.Name) and x.id == name]
        if len(own) != 1:
            return None
        added = sides[1 - own[0]]
    else:
        return None
    if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(added)):
        return None
    got = reach(added, params, stores, depth + 1, casts)
    if got is not None:
        got["ops"] = got["ops"] + [["cast", "float"]]
    return got


def defaulted_fold(func, expr: ast.AST, params: set, stores) -> Optional[dict]:
    """HF T5's attention: ``if position_bias is None:`` makes the bias (its
    own, of no parameter's data) and, last, folds the caller's mask into it
    (``position_bias = position_bias + mask``); a caller that gives
    ``position_bias`` gives the whole bias (probe AO's AO15).  The mask's
    reach, ``"unless"`` ``name``: on the calls that give ``name`` nothing."""
    name = expr.id if isinstance(expr, ast.Name) else None
    defs = stores.get(name)
    if name not in params or not defs or isinstance(defs, Rebound):
        return None
    block = next(
        (
            stmt
            for stmt in func.body
            if isinstance(stmt, ast.If)
            and not stmt.orelse
            and _is_none(stmt.test)
            and isinstance(stmt.test.left, ast.Name)
            and stmt.test.left.id == name
        ),
        None,
    )
    if block is None:
        return None
    inside = {id(n) for stmt in block.body for n in ast.walk(stmt)}
    *made, last = sorted(defs, key=lambda d: (d.lineno, d.col_offset))
    if not made or not all(id(d) in inside for d in defs):
        return None
    others = params - {name}
    if not all(
        isinstance(d, ast.Assign)
        and _assigns_only(d, name)
        and not _params_data(d.value, others, stores, 0)
        for d in made
    ):
        return None
    got = _fold_of(name, last, others, {**stores, name: made}, 0, False)
    if got is None or got["param"] == name:
        return None
    got["unless"] = [name]
    return got


# what a tensor says of itself, not of its values: ``L = q.shape[2]`` is no data of ``q``
_META = ("shape", "device", "dtype", "ndim", "size", "dim")


def _params_data(node: ast.AST, params: set, stores, depth: int) -> bool:
    """Whether ``node``'s value may hold data of a parameter: it names one,
    or a local whose stores do (a few deep), other than through its shape,
    device or dtype (T5's bias of ``torch.arange(L)`` with ``L =
    q.shape[2]`` holds none; ``scores = q @ k.T`` does)."""
    if depth > 4:
        return True
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Attribute) and n.attr in _META:
            continue
        if isinstance(n, ast.Name):
            if n.id in params:
                return True
            for d in stores.get(n.id, ()):
                value = getattr(d, "value", d)
                if value is not None and _params_data(value, params, stores, depth + 1):
                    return True
            continue
        todo.extend(ast.iter_child_nodes(n))
    return False


def _joined(expr: ast.AST, params: set, stores, depth: int, casts: bool) -> Optional[dict]:
    """``self.bias[:, :, :T, :T] & key_keep[:, None, None, :]`` (nanoGPT's
    padded path, probe AN's AN04), ``pad | causal``: the parameter's mask
    joined with one of the function's own, which keeps what True means in
    it (True where both, or either, are) in a shape the caller's call cannot
    know (the step ``expand``); ``bias + mask``, the caller's mask as numbers
    (the step ``cast``).  Only when the other side holds no data of a
    parameter (``_params_data``)."""
    if not (isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.BitAnd, ast.BitOr, ast.Add))):
        return None
    # ``bias + mask``: the caller's mask added to a bias of the function's own is
    # added to the scores as numbers (a bool one as 0/1), as ``mask.float()`` is
    step = ["cast", "float"] if isinstance(expr.op, ast.Add) else ["expand"]
    for mine, other in ((expr.left, expr.right), (expr.right, expr.left)):
        if _params_data(other, params, stores, 0):
            continue  # ``scores + mask``: hand-written attention's, read by ``fills``
        got = reach(mine, params, stores, depth + 1, casts)
        if got is not None:
            got["ops"] = got["ops"] + [step]
            return got
    return None


CASTS = ("float", "half", "double", "bfloat16", "long", "int", "to", "type", "type_as")
# the casts to a float type a summary writes as a step (``["cast", "float"]``):
# the caller's mask as numbers, which SDPA and the modules add to the scores
FLOAT_CASTS = ("float", "half", "double", "bfloat16")
_FLOAT_DTYPES = {
    "torch.float": "float",
    "torch.float32": "float",
    "torch.half": "half",
    "torch.float16": "half",
    "torch.double": "double",
    "torch.float64": "double",
    "torch.bfloat16": "bfloat16",
}


def _cast(expr: ast.AST) -> bool:
    """``m.float()``, ``m.to(k.dtype)``, ``m.to(torch.float32)``, ``m.type_as(k)``:
    the same values as numbers (not ``m.to(device, non_blocking=True)``'s
    keywords, which change nothing either, nor a device move, read as one)."""
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)):
        return False
    name = expr.func.attr
    if name not in CASTS or expr.keywords:
        return False
    if name in ("to", "type", "type_as"):
        return len(expr.args) == 1
    return not expr.args


_EINOPS_AXIS = re.compile(r"\([^)]*\)|\.\.\.|[A-Za-z_][A-Za-z_0-9]*|\d+")


def _unit_axes_index(pattern: ast.AST) -> Optional[str]:
    """The index an einops pattern that only adds axes of size one amounts to
    (``"b j -> b 1 1 j"``: ``":, None, None, :"``); None for any other."""
    if not (isinstance(pattern, ast.Constant) and isinstance(pattern.value, str)):
        return None
    if pattern.value.count("->") != 1:
        return None
    # einops' axes, as ``heads.einops_axes`` reads them (that module needs LibCST)
    left, right = (_EINOPS_AXIS.findall(side) for side in pattern.value.split("->"))
    if "..." in left + right:
        return None
    if not left or not right or any(a.startswith("(") or a.isdigit() for a in left):
        return None
    if [a for a in right if a not in ("1", "()")] != left or len(set(left)) != len(left):
        return None
    if len(right) == len(left):
        return None  # nothing added
    return ", ".join("None" if a in ("1", "()") else ":" for a in right)


def _op(expr: ast.AST) -> Optional[Tuple[ast.AST, Optional[list]]]:
    """(operand, step) for a transformation a summary can describe."""
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Invert):
        return expr.operand, ["invert"]
    if (  # ``mask == 0``: the Annotated Transformer's inversion, to bool
        isinstance(expr, ast.Compare)
        and len(expr.ops) == 1
        and isinstance(expr.ops[0], ast.Eq)
        and _is_zero(expr.comparators[0])
    ):
        return expr.left, ["eq0"]
    if isinstance(expr, ast.Subscript):
        sl = expr.slice
        items = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        if all(_broadcast_item(i) for i in items) and any(is_none_constant(i) for i in items):
            text = ", ".join(ast.unparse(i) for i in items)
            return expr.value, ["index", text]
        if all(_broadcast_item(i) or _bounded(i) for i in items) and any(map(_bounded, items)):
            # HF's key-length cut ``mask[:, :, :, : k.shape[-2]]``: the same
            # meaning and rank; the bounds are the callee's, so left unnamed
            text = ", ".join(":_" if _bounded(i) else ast.unparse(i) for i in items)
            return expr.value, ["index", text]
        if (
            len(items) > 1
            and _broadcast_item(items[0])
            and all(_broadcast_item(i) or _axis_pick(i) for i in items)
            and any(map(_axis_pick, items))
        ):  # the batch kept (``mask[0]``, one sample's, is no mask of the batch)
            # glow-tts' ``attn_mask[:, 0, 0]``: one row of a pair mask, the keys' padding
            return expr.value, ["index", ", ".join(ast.unparse(i) for i in items)]
        return None
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Mult, ast.BitAnd)):
        # glow-tts' pair mask ``m.unsqueeze(2) * m.unsqueeze(-1)``: kept where both
        # positions are, of one mask: its meaning, another shape
        left, right = _shaped_name(expr.left), _shaped_name(expr.right)
        if left is not None and right is not None and left.id == right.id:
            return left, ["expand"]
        return None
    if isinstance(expr, ast.IfExp) and _is_not_none(expr.test):  # ``m.to(d) if m is not None``
        return (expr.body, None) if is_none_constant(expr.orelse) else None
    if isinstance(expr, ast.IfExp) and _is_none(expr.test):  # ``None if m is None else m.to(d)``
        return (expr.orelse, None) if is_none_constant(expr.body) else None
    if _to_dtype_of(expr):  # CLIP's ``mask.to(dtype=x.dtype, device=x.device)``
        return expr.func.value, ["cast", "float"]
    if repeated_rows(expr):  # diffusers' ``attention_mask.repeat_interleave(heads, dim=0)``
        return expr.func.value, ["expand"]
    if not isinstance(expr, ast.Call) or expr.keywords:
        return None
    func = expr.func
    if dotted_name(func) in ("rearrange", "einops.rearrange") and len(expr.args) == 2:
        index = _unit_axes_index(expr.args[1])  # "b j -> b 1 1 j": [:, None, None, :]
        return (expr.args[0], ["index", index]) if index is not None else None
    if isinstance(func, ast.Attribute) and dotted_name(func) in (
        "torch.logical_not",
        "torch.bitwise_not",
    ):
        if len(expr.args) == 1:
            return expr.args[0], ["invert"]
        return None
    if not isinstance(func, ast.Attribute):
        return None
    name, args = func.attr, expr.args
    if name in ("logical_not", "bitwise_not") and not args:
        return func.value, ["invert"]
    if name == "bool" and not args:
        return func.value, ["bool"]
    if name in FLOAT_CASTS and not args:  # a 0/1 float mask of a bool one (MHA004)
        return func.value, ["cast", name]
    if name == "eq" and len(args) == 1 and _is_zero(args[0]):
        return func.value, ["eq0"]
    if name in ("view", "reshape") and _padding_view(func.value, args):
        return func.value, ["index", ":, None, None, :"]
    if name == "unsqueeze" and len(args) == 1 and small_int(args[0]) is not None:
        return func.value, ["unsqueeze", small_int(args[0])]
    if name in ("expand", "expand_as", "broadcast_to", "view", "reshape") and args:
        # ``mask.expand(b, h, n, n)``, Reformer's chunked ``pad_mask.view(B, 1, L // c,
        # 1, c)``: its meaning, a new shape (a view to ``[:, None, None, :]`` is above)
        return func.value, ["expand"]
    if name in ("permute", "transpose", "swapaxes", "movedim") and args:
        # ``mask.permute(0, 2, 1)`` (an MSA's rows and columns swapped, probe AR's AR09):
        # its meaning, axes in another order
        if all(small_int(a) is not None for a in args):
            return func.value, ["expand"]
        return None
    if name == "flatten" and len(args) <= 2:
        # DETR's ``mask.flatten(1)``: a (B, H, W) pixel map as (B, H*W) keys (probe AN's AN11)
        return func.value, ["expand"]
    if name in ("contiguous", "clone", "detach") and not args:
        return func.value, None  # the same mask
    if name == "to" and len(args) == 1 and isinstance(args[0], ast.Attribute):
        if args[0].attr == "device":
            return func.value, None  # moved, unchanged
        if dotted_name(args[0]) == "torch.bool":
            return func.value, ["bool"]
        cast = _FLOAT_DTYPES.get(dotted_name(args[0]) or "")
        if cast is not None:
            return func.value, ["cast", cast]
    return None


def repeated_rows(expr: ast.AST) -> bool:
    """``m.repeat_interleave(heads, dim=0)`` (or ``, 0)``): each sample's mask
    once per head, its meaning kept (probe AO's AO06)."""
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)):
        return False
    if expr.func.attr != "repeat_interleave" or len(expr.args) not in (1, 2):
        return False
    dims = expr.args[1:] + [k.value for k in expr.keywords if k.arg == "dim"]
    return len(expr.keywords) <= 1 and len(dims) == 1 and _is_zero(dims[0])


def _to_dtype_of(expr: ast.AST) -> bool:
    """``m.to(x.dtype)``, ``m.to(dtype=x.dtype, device=x.device)``,
    ``m.type_as(x)``: the mask in the dtype of the data it meets, numbers
    (a float type: what attention's inputs are)."""
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)):
        return False
    name, args, kw = expr.func.attr, expr.args, {k.arg: k.value for k in expr.keywords}
    if name == "type_as":
        return len(args) == 1 and not kw
    if name != "to" or None in kw or set(kw) - {"dtype", "device", "non_blocking"}:
        return False
    dtypes = [a for a in args if not (isinstance(a, ast.Attribute) and a.attr == "device")]
    dtypes += [kw["dtype"]] if "dtype" in kw else []
    return (
        len(dtypes) == 1
        and isinstance(dtypes[0], ast.Attribute)
        and dtypes[0].attr == "dtype"
        and isinstance(dtypes[0].value, ast.Name)
        and "mask" not in dtypes[0].value.id.lower()
    )


def _padding_view(mask: ast.AST, args: List[ast.AST]) -> bool:
    """``mask.view(mask.size(0), 1, 1, mask.size(-1))`` (also ``.shape[i]``,
    ``reshape``): a 2-D ``(N, S)`` mask shaped ``(N, 1, 1, S)``, as
    ``mask[:, None, None, :]`` would."""
    if len(args) != 4 or not all(small_int(a) == 1 for a in args[1:3]):
        return False
    if _axis_of(args[0], mask) == 0 and _axis_of(args[3], mask) in (-1, 1):
        return True
    # ``mask.view(B, 1, 1, S)`` with the data's sizes: whatever the names, a
    # view to four axes with two ones between gives (N, 1, 1, S)
    return all(_size_name(a) for a in (args[0], args[3]))


def _size_name(node: ast.AST) -> bool:
    """A size as code writes one: a name (``B``, ``self.n``), ``-1``, or
    ``x.size(i)``/``x.shape[i]``."""
    if isinstance(node, (ast.Name, ast.Attribute)) or small_int(node) == -1:
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr == "size" and len(node.args) == 1
    return isinstance(node, ast.Subscript) and getattr(node.value, "attr", None) == "shape"


def _axis_of(node: ast.AST, mask: ast.AST) -> Optional[int]:
    """``i`` for ``mask.size(i)`` or ``mask.shape[i]`` of the same name."""
    if isinstance(node, ast.Call) and len(node.args) == 1:
        read, index = node.func, node.args[0]  # ``mask.size(i)``
    elif isinstance(node, ast.Subscript):
        read, index = node.value, node.slice  # ``mask.shape[i]``
    else:
        return None
    want = "size" if isinstance(node, ast.Call) else "shape"
    if not (isinstance(read, ast.Attribute) and read.attr == want):
        return None
    if not (isinstance(mask, ast.Name) and isinstance(read.value, ast.Name)):
        return None
    return small_int(index) if read.value.id == mask.id else None


def small_int(node: ast.AST) -> Optional[int]:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = small_int(node.operand)
        return None if v is None else -v
    if isinstance(node, ast.Constant) and type(node.value) is int and abs(node.value) < 8:
        return node.value
    return None


def _is_zero(node: ast.AST) -> bool:
    """``0`` or ``False``."""
    return isinstance(node, ast.Constant) and type(node.value) in (int, bool) and node.value == 0


def none_or_false(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in (None, False)


def _bounded(node: ast.AST) -> bool:
    """A slice ``:end`` (no start, no step): the first elements of an axis."""
    return (
        isinstance(node, ast.Slice)
        and node.lower is None
        and node.step is None
        and node.upper is not None
    )


def _shaped_name(expr: ast.AST) -> Optional[ast.Name]:
    """The name ``expr`` only reshapes (``m.unsqueeze(2)``, ``m[:, None]``)."""
    while True:
        if isinstance(expr, ast.Name):
            return expr
        op = _op(expr) if isinstance(expr, (ast.Call, ast.Subscript)) else None
        if op is None or (op[1] is not None and op[1][0] not in ("unsqueeze", "index")):
            return None
        expr = op[0]


def _axis_pick(node: ast.AST) -> bool:
    """A small literal index (``0``, ``-1``): one element of an axis, the axis gone."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is int and node.value < 8


def _broadcast_item(node: ast.AST) -> bool:
    if is_none_constant(node) or (isinstance(node, ast.Constant) and node.value is Ellipsis):
        return True
    return isinstance(node, ast.Slice) and node.lower is node.upper is node.step is None


def reads_beyond_none(test: ast.AST, name: str) -> bool:
    """Whether ``test`` reads ``name`` otherwise than ``name is None``, ``name
    is not None`` or ``exists(name)`` (``mask.dtype == torch.bool`` does)."""
    parts = test.values if isinstance(test, ast.BoolOp) else [test]
    for part in parts:
        if none_test_of(part) == name:
            continue
        if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(part)):
            return True
    return False
