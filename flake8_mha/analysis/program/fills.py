"""Fills of attention scores in a summarised function, read with ``ast``.

``scores.masked_fill(mask, -inf)`` (and ``masked_fill_``,
``torch.masked_fill``, ``torch.where(mask, -inf, scores)``) removes the
scores where ``mask`` is True; ``torch.where(mask, scores, -inf)`` and
``scores.where(mask, -inf)`` keep them where it is True.  When a function's
parameter reaches such a fill's mask, the fill is a sink of its summary
(``FILL_SINKS``): the caller's mask is judged at each call, as a mask given
to SDPA through a wrapper is.  What counts as a fill that masks a score out
is ``core/fills.py``'s measure, the one the mask evaluator applies.
"""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Tuple

from ...core import walk as astwalk
from ...core.fills import SMALL_DIVISOR, constant_sign, helper_sign, sign
from . import steps
from .chains import dotted_name
from .readings import Readings
from .mask_terms import KEEPS_VALUE, folded_mask, mask_factor, multiplied_mask, names_a_mask

# summary sink -> what True means there
MASKED_FILL = "masked_fill"  # True = the score is removed
WHERE_KEEP = "where_keep"  # True = the score is kept
ADDED = "added"  # added to the scores: an additive mask is what belongs there
MULTIPLIED = "multiplied"  # multiplied into the scores before softmax: no mask belongs there
# multiplied into the keys or values of an SDPA call that masks no scores (MHA015)
KV = "kv"
# a second fill of the same door from another parameter (lucidrains' ``mask``, a
# padding mask, then ``attn_mask``): its own sink, judged at each call apart
SECOND = "|2"  # ``chains.VARIANT`` + "2"
FILL_SINKS = {MASKED_FILL: "ignore", WHERE_KEEP: "keep", ADDED: "add", MULTIPLIED: "mul", KV: "kv"}
FILL_SINKS.update({MASKED_FILL + SECOND: "ignore", WHERE_KEEP + SECOND: "keep"})
FILL_TEXT = {
    MASKED_FILL: "masked_fill(mask, -inf)",
    WHERE_KEEP: "torch.where(mask, x, -inf)",
    ADDED: "scores + mask",
    MULTIPLIED: "scores * mask",
    KV: "k * mask",
}
FILL_TEXT.update({k + SECOND: FILL_TEXT[k] for k in (MASKED_FILL, WHERE_KEEP)})
# the calls that make a query-key product (besides ``q @ k``)
PRODUCTS = ("matmul", "bmm", "einsum")
SOFTMAX = ["softmax"]  # the last step of a fill's ops: the function softmaxes after the fill
RETURNED = ["returned"]  # or returns the scores unsoftmaxed (``returned_scores.py``)
# a step of a fill's ops: the fill is on a path of its own beside the function's
# SDPA call that reads the same parameter, the two apart by a test that reads no
# mask (litgpt's soft-capped scores, else SDPA): each is judged at the call
APART = ["apart"]

_OPPOSITE = {"pos": "neg", "neg": "pos"}
# what keeps a query-key product's values as they are, in another shape
_RESHAPES = ("squeeze", "unsqueeze", "view", "reshape", "transpose", "permute", "contiguous")
_INF_ROOTS = ("math", "torch", "np", "numpy")
_WRAPS = ("tensor", "as_tensor", "scalar_tensor")
MAX_DEPTH = 12


# where each of a function's fill sinks is made, in its reach entry, when
# several are reached (a padding mask filled, a window added: ``score_sinks``)
SINK_LINE = "sink_line"


def score_sinks(func, calls: List[ast.Call], stores, helpers) -> tuple:
    """``(sinks, helped, soft)``: the function's fills of scores (``fill_sinks``),
    and when it softmaxes, the one term added to its scores or mask
    multiplied into them, or the term a helper of another file is handed
    with them (``helped``: ``added_by_helper``'s reading, else None).  A term
    is read beside a fill too (a padding mask filled, a window of times
    added: probe Z's Z30), unless it reads a name a fill's mask reads (a
    mask filled when it is bool and added when it is not is one mask).
    ``soft``: whether the function softmaxes (``softmaxes``), read once."""
    if helpers is None:
        return [], None, False
    blocks = steps.default_blocks(stores)  # litgpt's default mask, filled as it is made
    filled = [
        f
        for f in fill_sinks(calls, stores, helpers)
        if not any(b.lineno <= f[2] <= b.end_lineno for b in blocks)
    ]
    if not softmaxes(calls):
        return filled, None, False
    terms = added_sinks(func, stores) + multiplied_sinks(func, stores)
    helped = None if terms else added_by_helper(func, stores, helpers)
    terms = [helped[:3]] if helped else terms
    if filled:
        names = set().union(*(_names(mask) for _, mask, _ in filled))
        terms = [t for t in terms if not (_names(t[1]) & names)]
        helped = helped if terms else None
    return filled + terms, helped, True


def _names(node: ast.AST) -> set:
    return {n.id for n in astwalk.walk(node) if type(n) is ast.Name}


def fill_reach(filled, soft: bool, reads, stores) -> Dict[str, dict]:
    """What the parameters reach through the function's fills of scores: per
    fill sink, the parameter every such fill's mask comes from (fills that
    disagree, or one that no parameter gives, leave that sink out; a second
    parameter's fills of the same door are the sink ``+ SECOND``).  A
    function that calls a softmax (``soft``) marks the fill's ops with
    ``SOFTMAX`` (a triangle is judged only at fills of scores that are
    softmaxed).  When
    several sinks are reached, each entry says where it is made
    (``SINK_LINE``)."""
    out: Dict[str, dict] = {}
    seen: Dict[str, Optional[dict]] = {}
    lines: Dict[str, int] = {}
    for sink, mask, line in filled:
        got = steps.reach(mask, reads, stores, 0)
        if got is None:
            continue  # the function's own mask: judged where it is made
        if soft:
            got["ops"] = got["ops"] + [list(SOFTMAX)]
        elif sink in (ADDED, MULTIPLIED):  # a term in the scores it returns: its caller's
            got["ops"] = got["ops"] + [list(RETURNED)]
        first = seen.get(sink)
        if sink in (MASKED_FILL, WHERE_KEEP) and first and first["param"] != got["param"]:
            second = sink + SECOND  # another parameter's mask filled the same way
            if seen.setdefault(second, got) == got:
                lines.setdefault(second, line)
                continue
            seen[second] = None  # a third: neither is followed
        seen[sink] = None if sink in seen and seen[sink] != got else got
        lines.setdefault(sink, line)
    for sink, got in seen.items():
        if got is not None:
            out[sink] = got
    if len(out) > 1:
        for sink, got in out.items():
            got[SINK_LINE] = lines[sink]
    return out


def fill_sinks(calls: List[ast.Call], stores, helpers) -> List[Tuple[str, ast.AST, int]]:
    """``(sink, mask expression, line)`` for each call among ``calls`` that
    fills with a big negative.  ``stores``: the function's names -> their
    stores; ``helpers``: ``helper_signs`` of the file."""
    out = []
    for call in calls:
        got = _fill(call, stores, helpers)
        if got is not None:
            out.append((got[0], got[1], call.lineno))
    return out


def helper_signs(tree: ast.Module) -> "Readings":
    """The file's top-level functions -> the sign of the one value each
    returns ("neg" for ``def max_neg_value(t): return -torch.finfo(t.dtype).max``),
    None for a function that returns something else or several values."""
    return Readings(tree, _sign_of)


def kv_helpers(tree: ast.Module) -> "Readings":
    """The file's top-level functions -> how the one tuple each returns is
    masked (``def mask_kv(k, v, keep): m = keep[:, None, :, None]; return k *
    m, v * m``): per item, (the position of the parameter it is multiplied
    by, the steps from that parameter), or None."""
    return Readings(tree, _pair_reading)


def _sign_of(node) -> Optional[str]:
    returns = _returns(node)
    return big_negative(returns[0].value, {}, {}) if len(returns) == 1 else None


def _returns(func) -> List[ast.Return]:
    """The ``return`` statements of ``func`` that give a value."""
    return [n for n in astwalk.walk(func) if isinstance(n, ast.Return) and n.value is not None]


def softmaxes(calls: List[ast.Call]) -> bool:
    """Whether the function calls a softmax (``x.softmax(-1)``, ``F.softmax``,
    BERT's ``nn.Softmax(dim=-1)(scores)``)."""
    for call in calls:
        func = call.func
        built = isinstance(func, ast.Call)  # a module built and called at once
        if built:
            func = func.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in (("Softmax",) if built else ("softmax", "log_softmax")):
            return True
    return False


def _fill(call: ast.Call, stores, helpers) -> Optional[Tuple[str, ast.AST]]:
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    name = func.attr
    if name not in ("masked_fill", "masked_fill_", "where"):
        return None
    dotted = dotted_name(func)
    module = dotted is not None and dotted.split(".")[0] == "torch" and dotted.count(".") == 1
    args = _arguments(call)
    if args is None:
        return None
    if name == "where":
        if module:
            cond, a, b = args.get(0, args.get("condition")), args.get(1), args.get(2)
        else:  # x.where(cond, other): x where True
            cond, a, b = (
                args.get(0, args.get("condition")),
                func.value,
                args.get(1, args.get("other")),
            )
        if cond is None or a is None or b is None:
            return None
        a_neg = big_negative(a, stores, helpers) == "neg"
        b_neg = big_negative(b, stores, helpers) == "neg"
        if a_neg == b_neg:
            return None
        return (MASKED_FILL if a_neg else WHERE_KEEP), cond
    if module:
        mask, value = args.get(1, args.get("mask")), args.get(2, args.get("value"))
    else:
        mask, value = args.get(0, args.get("mask")), args.get(1, args.get("value"))
    if mask is None or value is None or big_negative(value, stores, helpers) != "neg":
        return None
    return MASKED_FILL, mask


def _arguments(call: ast.Call) -> Optional[Dict[object, ast.AST]]:
    out: Dict[object, ast.AST] = {}
    for i, a in enumerate(call.args):
        if isinstance(a, ast.Starred):
            return None
        out[i] = a
    for k in call.keywords:
        if k.arg is None:
            return None
        out[k.arg] = k.value
    return out


def big_negative(node: ast.AST, stores, helpers, depth: int = 0) -> Optional[str]:
    """ "neg" for a fill that removes a score (-inf, ``torch.finfo(t).min``,
    ``-1e9``, ``-torch.finfo(t.dtype).max // 2``, a name or helper that is
    one), "pos" for a big positive, None when unknown."""
    if depth > MAX_DEPTH:
        return None
    depth += 1
    t = type(node)
    if t is ast.Constant:
        return sign(node.value)
    if t is ast.UnaryOp:
        if isinstance(node.op, ast.USub):
            return _OPPOSITE.get(big_negative(node.operand, stores, helpers, depth) or "")
        if isinstance(node.op, ast.UAdd):
            return big_negative(node.operand, stores, helpers, depth)
        return None
    if t is ast.Attribute:
        if node.attr in ("inf", "infty", "Inf"):
            return "pos" if dotted_name(node.value) in _INF_ROOTS else None
        if node.attr in ("min", "max") and isinstance(node.value, ast.Call):
            inner = dotted_name(node.value.func) or ""
            if inner.split(".")[-1] in ("finfo", "iinfo"):
                return "neg" if node.attr == "min" else "pos"
            return None
        return constant_sign(node.attr) if isinstance(node.value, ast.Name) else None
    if t is ast.Name:
        defs = stores.get(node.id)
        if defs:
            d = defs[0]
            if (
                len(defs) == 1
                and isinstance(d, ast.Assign)
                and len(d.targets) == 1
                and isinstance(d.targets[0], ast.Name)
            ):
                return big_negative(d.value, stores, helpers, depth)
            return None
        return constant_sign(node.id)
    if t is ast.BinOp:
        a = big_negative(node.left, stores, helpers, depth)
        c = _number(node.right)
        if a is None or c is None or c == 0:
            return None
        if isinstance(node.op, ast.Mult) and abs(c) >= 1:
            return a if c > 0 else _OPPOSITE[a]
        if isinstance(node.op, (ast.Div, ast.FloorDiv)) and 0 < c <= SMALL_DIVISOR:
            return a
        return None
    if t is ast.Call:
        return _call(node, stores, helpers, depth)
    return None


def _call(node: ast.Call, stores, helpers, depth: int) -> Optional[str]:
    func = node.func
    if isinstance(func, ast.Name) and func.id == "float" and len(node.args) == 1:
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            try:
                return sign(float(arg.value))
            except ValueError:
                return None
        return big_negative(arg, stores, helpers, depth)
    if isinstance(func, ast.Attribute):
        if func.attr in _WRAPS and dotted_name(func.value) == "torch" and node.args:
            return big_negative(node.args[0], stores, helpers, depth)
        if func.attr in KEEPS_VALUE:
            return big_negative(func.value, stores, helpers, depth)
        return None
    if isinstance(func, ast.Name):
        if func.id in helpers:  # the file's own helper
            return helpers[func.id]
        return helper_sign(func.id)  # imported: its name alone
    return None


def _number(node: ast.AST) -> Optional[float]:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _number(node.operand)
        return None if v is None else -v
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    return None


def added_sinks(func, stores) -> List[Tuple[str, ast.AST, int]]:
    """``(ADDED, term, line)`` for the one term added to a function's
    attention scores (``scores = scores + mask``, ``scores += mask``,
    ``q @ k.transpose(-2, -1) * scale + bias``): Whisper's ``qk = qk +
    mask[:n_ctx, :n_ctx]``, BERT's ``attention_scores + attention_mask``.
    The scores are a query-key product (``@``, ``matmul``, ``bmm``,
    ``einsum``), scaled or not.  When several terms are added (a relative
    position bias or ALiBi first, then the mask), the one term named a mask
    (``scores = scores + bias; scores = scores + mask``), else the one that
    is a parameter, bare (the callers' term beside one made here); empty when
    none or several are (which is the mask is not known)."""
    out = []
    for n in astwalk.own_nodes(func):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add):
            pairs = ((n.left, n.right), (n.right, n.left))
        elif isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Add):
            pairs = ((n.target, n.value),)
        else:
            continue
        for scores, term in pairs:
            if _summed_scores(scores, stores) and not scores_of(term, stores, 0):
                out.append((ADDED, term, n.lineno))
                break
    if len(out) > 1:
        named = [o for o in out if names_a_mask(o[1])]
        # else the one term the callers hand in, beside terms made here (AlphaFold's row
        # attention: a pair bias it computes, then its ``bias`` parameter; probe AR's AR10)
        out = named or [o for o in out if _a_parameter(o[1], func)]
    if len(out) == 1 and not names_a_mask(out[0][1]):
        folded = folded_mask(out[0][1], stores)
        if folded is not None:  # T5: ``position_bias = position_bias + mask``, then added
            out = [(ADDED, folded, out[0][2])]
    return out if len(out) == 1 else []


def _a_parameter(term: ast.AST, func) -> bool:
    """``term`` is one of ``func``'s parameters, bare."""
    a = func.args
    names = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    return isinstance(term, ast.Name) and term.id in names


# names of libraries and of ``self``: no helper of another project file
_LIBRARIES = {"self", "torch", "F", "nn", "np", "numpy", "math", "einops", "functional"}


def added_by_helper(func, stores, helpers) -> Optional[Tuple[str, ast.AST, int, list]]:
    """``scores = apply_windows(scores, ok)``, a function of another file or
    of this one (not one of ``helpers``, the file's own that return a fill
    value) handed the scores and one term: the one such call, as ``(ADDED,
    the term, line, [name, scores position, term position])``.  Whether the
    helper adds them is read where the summaries compose (``composing``,
    ``score_helpers.table`` of its file; probe AD's AD09: ``add_bias(scores,
    bias)`` beside the function that calls it)."""
    found = []
    for n in astwalk.own_nodes(func):
        if not (isinstance(n, ast.Call) and len(n.args) == 2 and not n.keywords):
            continue
        name = dotted_name(n.func) or ""
        root = name.split(".")[0]
        if not name or root in _LIBRARIES or helpers.get(root) is not None:
            continue
        a, b = n.args
        if any(isinstance(x, (ast.Starred, ast.Constant, ast.UnaryOp)) for x in (a, b)):
            continue  # ``torch.softmax(scores, -1)``
        for at, (scores, term) in enumerate(((a, b), (b, a))):
            if _summed_scores(scores, stores) and not scores_of(term, stores, 0):
                found.append(
                    (ADDED, term, n.lineno, [name, at, 1 - at, int(mask_factor(term, stores))])
                )
                break
    return found[0] if len(found) == 1 else None


def _summed_scores(node, stores) -> bool:
    """Scores, or a sum one of whose terms is scores (``scores + alibi`` in
    ``scores + alibi + causal_mask``: the mask is added to the scores too)."""
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        if scores_of(node.right, stores, 0):
            return True
        node = node.left
    return scores_of(node, stores, 0)


def multiplied_sinks(func, stores) -> List[Tuple[str, ast.AST, int]]:
    """``(MULTIPLIED, term, line)`` for the one mask-named term multiplied
    into a function's attention scores (``scores = scores * mask``, ``scores
    *= mask``), which the function then softmaxes (its caller's check):
    the caller's 0/1 mask is then MHA012's.  A scale or any term not named a
    mask is never this sink; empty when none or several are."""
    out = []
    for n in astwalk.own_nodes(func):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult):
            pairs = ((n.left, n.right), (n.right, n.left))
        elif isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Mult):
            pairs = ((n.target, n.value),)
        else:
            continue
        for scores, term in pairs:
            if (
                multiplied_mask(term)
                and scores_of(scores, stores, 0)
                and not scores_of(term, stores, 0)
                and not _weighted_values(scores, stores)
            ):
                out.append((MULTIPLIED, term, n.lineno))
                break
    return out if len(out) == 1 else []


def _weighted_values(node, stores, depth: int = 0) -> bool:
    """A product whose first operand is a softmax's result (``torch.bmm(w,
    v)``, ``w @ v``, ``torch.einsum("bhqk,bhkd->bhqd", w, v)`` after ``w =
    softmax(scores)``, reshaped or not, or a name stored to one): the output,
    not the scores (probe AO's AO24 zeroes the padded rows of it)."""
    while (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and (node.func.attr in _RESHAPES)
    ):
        node = node.func.value
    if isinstance(node, ast.Name) and depth < 4:  # each store of it: the product, or it scaled
        values = [getattr(d, "value", None) for d in stores.get(node.id) or ()]
        own = [v for v in values if isinstance(v, ast.BinOp) and _names(v) >= {node.id}]
        return len(values) > len(own) and all(
            v is not None and _weighted_values(v, stores, depth + 1) for v in values if v not in own
        )
    if (
        isinstance(node, ast.Call)
        and dotted_name(node.func) in ("torch.einsum", "einsum")
        and len(node.args) >= 3
    ):
        return isinstance(node.args[1], ast.Name) and of_weights(node.args[1], stores)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        first = node.left
    elif isinstance(node, ast.Call) and node.args and not isinstance(node.func, ast.Attribute):
        first = node.args[0]
    elif isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute):
        first = node.args[0] if dotted_name(node.func) in _TORCH_PRODUCTS else node.func.value
    else:
        return False
    return isinstance(first, ast.Name) and of_weights(first, stores)


_TORCH_PRODUCTS = {f"torch.{p}" for p in PRODUCTS}


def is_softmaxed(node) -> bool:
    """``softmax(x, dim=-1)``, ``x.softmax(-1)``, ``torch.softmax(...)``, a
    dropout of one."""
    while isinstance(node, ast.Call):
        name = dotted_name(node.func) or ""
        last = name.rsplit(".", 1)[-1]
        if last == "softmax":
            return True
        if last in ("dropout", "attn_drop", "drop") and node.args:
            node = node.args[0]
            continue
        return False
    return False


def scores_of(node: ast.AST, stores, depth: int) -> bool:
    """Whether ``node`` holds attention scores: a query-key product (``q @ k``,
    ``matmul``, ``bmm``, ``einsum``), scaled, or in another shape."""
    if depth > 6:
        return False
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.MatMult):
            # ``softmax(scores) @ v`` is the attention's output, not its scores
            return not of_weights(node.left, stores)
        if isinstance(node.op, (ast.Mult, ast.Div)):
            return scores_of(node.left, stores, depth + 1) or (
                isinstance(node.op, ast.Mult) and scores_of(node.right, stores, depth + 1)
            )
        return False
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute) and node.func.attr in _RESHAPES:
            # DIN's ``torch.bmm(hist, q.unsqueeze(-1)).squeeze(-1)``: the product reshaped
            return scores_of(node.func.value, stores, depth + 1)
        name = (dotted_name(node.func) or "").rsplit(".", 1)[-1]
        # a helper named for what it returns (probe AE's ``pair_scores(q, k, scale)``)
        return name in PRODUCTS or (name.endswith("scores") and bool(node.args))
    if isinstance(node, ast.Name):  # some store of it makes the product
        defs = [d for d in stores.get(node.id, ()) if isinstance(d, ast.Assign)]
        return any(scores_of(d.value, stores, depth + 1) for d in defs)
    return False


def of_weights(first, stores) -> bool:
    """``first`` is a softmax's weights: the call, or a local bound only to one."""
    if isinstance(first, ast.Call) and is_softmaxed(first):
        return True
    defs = stores.get(first.id, ()) if isinstance(first, ast.Name) else ()
    return bool(defs) and all(isinstance(d, ast.Assign) and is_softmaxed(d.value) for d in defs)


def kv_reach(
    given: Dict[str, ast.AST],
    reads: set,
    stores,
    top: set,
    pairs=None,
    movers=frozenset(),
    func=None,
) -> Optional[dict]:
    """What a function's parameter reaches when it is multiplied into the
    keys or values of its one SDPA call, which masks no scores (``k *
    keep[:, None, :, None]``, ``v.masked_fill(~keep[..., None], 0)``): the
    ``KV`` sink, its ops ending with the step ``["kv", "keys and values"]``
    (what it is multiplied into).  ``given``: the call's arguments by name;
    ``top``: ``id`` of the function's top-level statements (a key rebound
    there, ``k = k * keep``, is read at its last store before the call).
    The caller's mask is judged at each call by MHA015.  None when no
    parameter, or two different ones, are multiplied in.  ``pairs``: the
    file's helpers that do the multiplying (``kv_helpers``: ``k, v =
    mask_kv(k, v, keep)``); ``movers``: the calls whose one return keeps
    the rows of their argument (``kv_scores.row_movers``: ``self.split(k)``).
    ``func``: the function, whose statements that mask a key in place
    (``v.masked_fill_(~keep, 0.)``) are read as rebinding it."""
    if func is not None:
        stores, top = _in_place_stores(func, stores, top)
    found: Dict[str, dict] = {}
    for arg, word in (("key", "keys"), ("value", "values")):
        expr = given.get(arg)
        got = (
            _kv_factor(expr, reads, stores, top, expr.lineno, 0, pairs, movers)
            if expr is not None
            else None
        )
        if got is not None:
            found[word] = got
    hows = list(found.values())
    vias = [h.get(KV_VIA) for h in hows]
    if any(vias):  # keys and values through one helper of another file: one reading
        if not all(vias) or len({(v[0], v[1], v[2]) for v in vias}) != 1:
            return None
        via = vias[0][:3] + [sorted({i for v in vias for i in v[3]})]
        hows = [{k: x for k, x in h.items() if k != KV_VIA} for h in hows]
    if not hows or any(h != hows[0] for h in hows):
        return None
    out = {"param": hows[0]["param"], "ops": hows[0]["ops"] + [[KV, " and ".join(found)]]}
    if any(vias):
        out[KV_VIA] = via
    return out


def _is_zero(node: ast.AST) -> bool:
    """The literal 0 or 0.0."""
    return isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value == 0


def _in_place_stores(func, stores, top: set):
    """``stores`` and ``top`` with each statement of ``top`` that masks a
    name in place (``v.masked_fill_(~keep, 0.)``, ``k.mul_(keep)``: each
    returns what it changed) read as the store ``v = v.masked_fill_(...)``."""
    made = {}
    for st in astwalk.walk(func):
        if id(st) not in top or not isinstance(st, ast.Expr):
            continue
        call = st.value
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            continue
        owner = call.func.value
        if call.func.attr in ("masked_fill_", "mul_") and isinstance(owner, ast.Name):
            store = ast.Assign(targets=[ast.Name(owner.id, ast.Store())], value=call)
            store.lineno = st.lineno
            made.setdefault(owner.id, []).append(store)
    if not made:
        return stores, top
    stores = dict(stores)
    for name, added in made.items():
        stores[name] = list(stores.get(name, ())) + added
    return stores, top | {id(a) for added in made.values() for a in added}


def straight_statements(func, params: set) -> set:
    """``id`` of the statements of ``func`` that run whenever its mask
    parameter is given: its top-level ones, and those of a top-level ``if
    <param> is not None:`` (or ``if <param>:``) without an ``else``, where
    a function applies an optional mask (``k = k * m`` under the test)."""
    out = set()
    for st in func.body:
        out.add(id(st))
        if isinstance(st, ast.If) and not st.orelse and steps.given_test(st.test) in params:
            out.update(id(inner) for inner in st.body)
    return out


# methods that keep the rows of a key where they were, and casts of it
_SAME_ROWS = steps.ROW_METHODS | set(steps.CASTS)


def _kv_factor(expr, reads, stores, top, line, depth, pairs=None, movers=()) -> Optional[dict]:
    """The parameter ``expr`` (a key or value) is multiplied by, or
    zero-filled where it says (``ops`` end with an ``invert``: a keep-mask's
    inverse), through the steps a summary knows."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(expr, ast.Name):
        defs = [d for d in stores.get(expr.id, ()) if d.lineno < line]
        if not defs or not all(isinstance(d, ast.Assign) and id(d) in top for d in defs):
            return None
        last = max(defs, key=lambda d: d.lineno)
        if len(last.targets) != 1:
            return None
        target, value = last.targets[0], last.value
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
            # ``k, v = k * keep, v * keep``: the item bound to this name
            at = [
                i for i, t in enumerate(target.elts) if isinstance(t, ast.Name) and t.id == expr.id
            ]
            if len(at) != 1 or len(value.elts) != len(target.elts):
                return None
            return _kv_factor(
                value.elts[at[0]], reads, stores, top, last.lineno, depth + 1, None, movers
            )
        if isinstance(target, ast.Tuple) and pairs is not None:
            return _by_helper(last, expr.id, reads, stores, pairs)
        if not isinstance(target, ast.Name):
            return None
        if pairs is not None and isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            got = _by_helper(last, expr.id, reads, stores, pairs)  # ``k = mask_atoms(k, keep)``
            if got is not None:
                return got
        return _kv_factor(value, reads, stores, top, last.lineno, depth + 1, None, movers)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
        hits = [_mask_param(side, reads, stores) for side in (expr.left, expr.right)]
        hits = [h for h in hits if h is not None]
        if len(hits) == 1:
            return hits[0]
        if len(hits) == 2:  # ``k * keep[..., None]`` of two parameters: the broadcast one
            shaped = [h for h in hits if h["ops"]]
            return shaped[0] if len(shaped) == 1 else None
        return _kv_factor(expr.left, reads, stores, top, line, depth + 1, None, movers)
    if (
        isinstance(expr, ast.Call)
        and len(expr.args) >= 1
        and dotted_name(expr.func) in movers
        and not isinstance(expr.args[0], ast.Starred)
    ):  # ``self.split(k)``: a helper that moves the axes of its argument
        return _kv_factor(expr.args[0], reads, stores, top, line, depth + 1, None, movers)
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)):
        return None
    name = expr.func.attr
    if dotted_name(expr.func) == "torch.where" and len(expr.args) == 3 and not expr.keywords:
        # ``torch.where(keep4, k, 0.0)``: kept where it holds (probe AK's AK14);
        # ``torch.where(pad4, 0.0, k)``: zeroed where it holds, the inverse
        cond, kept, other = expr.args
        zeroed = [_is_zero(x) for x in (kept, other)]
        got = _mask_param(cond, reads, stores) if zeroed.count(True) == 1 else None
        if got is not None and zeroed[0]:
            ops = got["ops"]
            got["ops"] = ops[:-1] if ops and ops[-1] == ["invert"] else ops + [["invert"]]
        return got
    if name in ("masked_fill", "masked_fill_") and len(expr.args) == 2 and not expr.keywords:
        if _is_zero(expr.args[1]):
            got = _mask_param(expr.args[0], reads, stores)
            if got is not None:  # zeroed where it holds: the factor is its inverse
                ops = got["ops"]
                ops = ops[:-1] if ops and ops[-1] == ["invert"] else ops + [["invert"]]
                return {"param": got["param"], "ops": ops}
        return None
    if name in ("mul", "mul_") and len(expr.args) == 1 and not expr.keywords:
        got = _mask_param(expr.args[0], reads, stores)
        return (
            got
            if got is not None
            else _kv_factor(expr.func.value, reads, stores, top, line, depth + 1, None, movers)
        )
    if name in _SAME_ROWS:
        return _kv_factor(expr.func.value, reads, stores, top, line, depth + 1, None, movers)
    return None


def _mask_param(expr, reads, stores) -> Optional[dict]:
    return steps.reach(expr, reads, stores, 0, casts=True)


def _by_helper(assign: ast.Assign, name: str, reads, stores, pairs) -> Optional[dict]:
    """``k, v = mask_kv(k, v, keep)``, ``mask_kv`` a helper of the file whose
    return multiplies the item ``name`` is unpacked from by one of its
    parameters: the caller's argument for that parameter, through the
    helper's steps after its own."""
    call = assign.value
    target = assign.targets[0]
    items = target.elts if isinstance(target, ast.Tuple) else [target]  # one item: ``k = f(k, m)``
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
        return None
    at = [i for i, t in enumerate(items) if isinstance(t, ast.Name) and t.id == name]
    if call.func.id not in pairs:
        return _by_other_file(call, items, at, reads, stores)
    reading = pairs[call.func.id]
    if len(at) != 1 or reading is None or len(reading["items"]) != len(items):
        return None
    how = reading["items"][at[0]]
    if how is None:
        return None
    position, ops = how
    if position >= len(call.args) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    got = _mask_param(call.args[position], reads, stores)
    return None if got is None else {"param": got["param"], "ops": got["ops"] + ops}


def _by_other_file(call: ast.Call, items, at: List[int], reads, stores) -> Optional[dict]:
    """``k, v = apply_cloud(k, v, clear)``, ``apply_cloud`` a function the
    file does not define: its one argument that is a parameter of the
    caller's other than the items, as a ``KV_VIA`` reach ([the helper, the
    items' count, that argument's position, [the item's position]]): its
    file's ``kv_pairs`` says, where the summaries compose, whether the
    helper multiplies that item by it (probe AE's AE10); ``at``: where the
    item is among ``items``."""
    names = {t.id for t in items if isinstance(t, ast.Name)}
    if len(at) != 1 or call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    if call.func.id in _LIBRARIES:
        return None
    found = []
    for j, a in enumerate(call.args):
        if isinstance(a, ast.Name) and a.id in names:
            continue  # the keys or values themselves
        got = _mask_param(a, reads, stores)
        if got is not None:
            found.append((j, got))
    if len(found) != 1:
        return None
    j, got = found[0]
    return {"param": got["param"], "ops": got["ops"], KV_VIA: [call.func.id, len(items), j, at]}


KV_VIA = "kv_via"  # a ``kv`` reach through a helper of another file (``_by_other_file``)


def _pair_reading(func) -> Optional[dict]:
    returns = _returns(func)
    if len(returns) != 1 or returns[0].value is None:
        return None
    positional = [a.arg for a in func.args.posonlyargs + func.args.args]
    params = set(positional)
    stores: Dict[str, list] = {}
    for n in astwalk.walk(func):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Name):
                    stores.setdefault(t.id, []).append(n)
    top = {id(st) for st in func.body}
    stores = steps.rebinds(func, params, stores)
    items = []
    value = returns[0].value  # a tuple of items, or one (``return x * m[:, None, :, None]``)
    elts = value.elts if isinstance(value, ast.Tuple) else [value]
    for elt in elts:
        got = _kv_factor(elt, params, stores, top, returns[0].lineno, 0)
        items.append(None if got is None else (positional.index(got["param"]), got["ops"]))
    # ``return k * keep, v * keep``: two parameters each, the mask the one they share
    factors = [_bare_factors(e, params, stores) for e in elts]
    if len(elts) > 1 and not any(items) and all(factors):
        common = set.intersection(*factors)
        if len(common) == 1:
            items = [(positional.index(next(iter(common))), []) for _ in elts]
    return {"items": items} if any(items) else None


def _bare_factors(expr: ast.AST, params: set, stores) -> Optional[set]:
    """``a * b`` of two parameters the helper does not rebind: both names."""
    if not (isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult)):
        return None
    sides = {getattr(x, "id", None) for x in (expr.left, expr.right)}
    return sides if len(sides) == 2 and sides <= params and not sides & set(stores) else None
