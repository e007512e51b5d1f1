"""The forms a wrapper takes beyond a plain function, read with ``ast`` for
``summaries.py``: a factory's product that reads the factory's parameters
(closures), a ``functools.partial`` bound at module level, a method that
hands its parameters to a torch attention module it holds
(``self.mha(x, x, x, key_padding_mask=pad)``), and a factory that returns a
module it builds (``def build_attn(): return Attention()``)."""

from __future__ import annotations

import ast
import re
from typing import Dict, List, Optional, Tuple

from ...core import walk as astwalk
from ...core.torch_api import BY_NAME, INNER_ATTENTION, LAYER_PARTS, SDPA_NAME, SDPA_SIGNATURE
from ...core.torch_api import module_spec
from .handed import holds_injected
from .chains import (
    KINDS,
    dotted_name,
    imports,
    names_class,
    self_attr,
)
from .chains import statements
from .chains import super_method
from .fills import PRODUCTS
from .module_numbers import module_constants
from .held_lists import ITEMS, item_of, torch_class
from .import_lines import helper_import
from .signatures import class_methods
from .steps import none_or_false

# the torch attention modules a wrapper may hold, and their mask arguments as sinks of a
# summary (``"MultiheadAttention.key_padding_mask"``) beside SDPA's
WRAPPED = tuple(name for name in sorted(BY_NAME) if name != "Transformer")  # not the whole model
# and the causal hints (``is_causal``, ``tgt_is_causal``), judged with their masks (MHA005)
MODULE_SINKS = tuple(
    f"{name}.{arg}"
    for name in sorted(BY_NAME)  # the whole ``nn.Transformer``'s masks too (vietocr)
    for arg in BY_NAME[name].mask_args + tuple(p.flag for p in BY_NAME[name].causal_pairs)
)
# the context an ``nn.MultiheadAttention`` that masks no scores attends over
# (cross-attention's key and value): a keep-mask multiplied into it by the
# wrapper's caller is MHA015's, judged at that call (probe AP's AP15)
KV_SINKS = ("MultiheadAttention.key", "MultiheadAttention.value")
MODULE_SINKS += KV_SINKS
# a construction of a torch module class a wrapper may hold
# or a subclass of one: ``class EncoderLayer(nn.TransformerEncoderLayer):``
# ``self.transformer.encoder(...)``: the parts torch builds inside an ``nn.Transformer``
PARTS = {"encoder": "TransformerEncoder", "decoder": "TransformerDecoder"}
MODULE_WORDS = re.compile(
    r"\b(?:" + "|".join(WRAPPED + ("Transformer",)) + r")\s*\("
    r"|^[ \t]*class[ \t]+\w+[ \t]*\([^)]*\b(?:" + "|".join(WRAPPED) + r")\b"
    # ``SeqMHA = partial(nn.MultiheadAttention, ...)``: built where it is called
    r"|partial\([ \t]*[\w.]*\b(?:" + "|".join(WRAPPED) + r")\b"
    # ``{"mha": nn.MultiheadAttention}``: a registry, built where it is indexed
    r"|:[ \t]*[\w.]*\b(?:" + "|".join(WRAPPED) + r")[ \t]*[,}\n]",
    re.MULTILINE,
)


def names_a_sink(text: str) -> bool:
    """The text screen of a file that may hold a wrapper: it names SDPA,
    builds a torch attention module (``nn.MultiheadAttention(...)``), or
    fills scores (``masked_fill``, ``.where(``: ``fills.py``)."""
    return SDPA_NAME in text or holds_modules(text) or fills_scores(text) or holds_injected(text)


# ``self.inner_attention = attention``: an attribute set from a plain name
def holds_modules(text: str) -> bool:
    """``MODULE_WORDS`` in ``text``.  A plain substring test first: a pattern
    that starts with ``\\b`` and an alternation is tried at every position
    (about 10 ms on a 100 KB file against 0.1 ms), and most files name none."""
    return (any(word in text for word in WRAPPED) or "Transformer(" in text) and (
        MODULE_WORDS.search(text) is not None
    )


# a fill of scores a summary may read (``fills.py``): the words, and the
# pattern that asks ``masked_fill`` to start a word
FILL_TEXTS = ("masked_fill", ".where(")
FILL_WORDS = re.compile(r"\b" + re.escape(FILL_TEXTS[0]) + "|" + re.escape(FILL_TEXTS[1]))


# a query-key product: ``q @ k`` (not a decorator), or a call that makes one
PRODUCT = re.compile(r"[\w)\]]\s*@|" + "|".join(PRODUCTS))


def fills_scores(text: str) -> bool:
    """``FILL_WORDS`` in ``text``, the substrings tested first (``holds_modules``),
    or a softmax beside a query-key product (a term added to the scores
    before the softmax: ``fills.added_sinks``)."""
    if any(word in text for word in FILL_TEXTS) and FILL_WORDS.search(text) is not None:
        return True
    return ("softmax" in text or "Softmax" in text) and PRODUCT.search(text) is not None


def module_summary(name: str, line: int) -> Optional[dict]:
    """A torch attention module's call as a summary (what ``self.attn(...)``
    stands for where a factory of another file built ``self.attn``): each
    of its mask arguments and causal hints reaches itself, as a held
    module's call writes them (``"MultiheadAttention.key_padding_mask"``)."""
    spec = BY_NAME.get(name)
    if spec is None or name == "Transformer":
        return None
    args = spec.mask_args + tuple(p.flag for p in spec.causal_pairs)
    return {
        "name": name,
        "line": line,
        "positional": list(spec.forward.names),
        "kwonly": [],
        "defaults": {a: "None" for a in spec.mask_args},
        "reach": {f"{name}.{a}": {"param": a, "ops": []} for a in args},
        "varargs": False,
        "varkw": False,
    }


def sdpa_summary(line: int) -> dict:
    """SDPA itself as a summary (what ``partial(F.scaled_dot_product_attention,
    ...)`` stands for): each of its mask and flag parameters reaches itself."""
    return {
        "name": SDPA_NAME,
        "line": line,
        "positional": list(SDPA_SIGNATURE.names),
        "kwonly": [],
        "defaults": {"attn_mask": "None", "dropout_p": "0.0", "is_causal": "False"},
        "reach": {n: {"param": n, "ops": []} for n in ("attn_mask", "dropout_p", "is_causal")},
        "varargs": False,
        "varkw": False,
    }


def partial_names(tree: ast.Module) -> Tuple[set, set]:
    """(names bound to ``functools.partial``, names bound to ``functools``)."""
    direct, modules = set(), set()
    for node in statements(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "functools" and not node.level:
            direct.update(a.asname or a.name for a in node.names if a.name == "partial")
        elif isinstance(node, ast.Import):
            modules.update(a.asname or a.name for a in node.names if a.name == "functools")
    return direct, modules


def add_partials(tree: ast.Module, out: Dict[str, dict], is_sdpa) -> None:
    """``causal = functools.partial(F.scaled_dot_product_attention, is_causal=True)``
    or ``partial(attend, ...)`` of a summarised function of the file, bound
    once at module level: a summary of its own under that name, so that
    another file's ``causal(q, k, v, attn_mask=m)`` is followed as the
    function it stands for (the twin of ``callsites.Project._partial`` for
    the linted file).  ``is_sdpa``: whether an expression names SDPA."""
    names, modules = partial_names(tree)
    if not (names or modules):
        return
    constants = module_constants(tree)  # ``dropout_p=P`` with ``P = 0.1`` in the file
    # ``from .config import P``: a constant of another file, read at the call
    constants.update(
        {n: IMPORTED + f"{lv}:{d}" for n, (lv, d) in imports(tree).items() if n not in constants}
    )
    for name, call in module_partials(tree, names, modules):
        if name in out:
            continue
        inner = call.args[0]
        if is_sdpa(inner):
            base = sdpa_summary(call.lineno)
        elif isinstance(inner, ast.Name) and isinstance(out.get(inner.id), dict):
            base = dict(out[inner.id])
            if "." in inner.id or "closure" in base:
                continue
        else:
            continue
        got = bind_partial(base, call, constants)
        if got is not None:
            got["name"] = name
            out[name] = got


# a default a ``partial`` binds to an imported name: ``@import:1:config.P``
IMPORTED = "@import:"


def add_aliases(tree: ast.Module, out: Dict[str, dict]) -> None:
    """``default_attention = sdpa_attention_forward`` at a file's top level,
    the name bound once to a summarised function of the file: the function's
    summary under that name too, so that another file's call of the alias is
    followed as the function (the twin of ``aliases.aliased`` for the linted
    file).  The summary keeps the function's name, which the chain shows."""
    bound: Dict[str, list] = {}
    for st in tree.body:
        targets = st.targets if isinstance(st, ast.Assign) else ()
        if isinstance(st, (ast.AnnAssign, ast.AugAssign)):
            targets = (st.target,)
        for tg in targets:
            if isinstance(tg, ast.Name):
                bound.setdefault(tg.id, []).append(st.value)
    for name, values in bound.items():
        if name in out or len(values) != 1 or not isinstance(values[0], ast.Name):
            continue
        base = out.get(values[0].id)
        if isinstance(base, dict) and "closure" not in base:
            out[name] = dict(base)


def module_partials(tree: ast.Module, names: set, modules: set):
    """``(name, call)`` for each ``name = functools.partial(f, ...)`` bound
    once, at the module's top level (``names``, ``modules``: ``partial_names``)."""
    assigned: Dict[str, int] = {}
    for node in statements(tree):
        for target in getattr(node, "targets", ()):
            if isinstance(target, ast.Name):
                assigned[target.id] = assigned.get(target.id, 0) + 1
    for node in tree.body:
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and assigned[node.targets[0].id] == 1
            and isinstance(node.value, ast.Call)
            and node.value.args
            and not isinstance(node.value.args[0], ast.Starred)
        ):
            continue
        func = dotted_name(node.value.func) or ""
        head, _, attr = func.partition(".")
        if func in names or (attr == "partial" and head in modules):
            yield node.targets[0].id, node.value


def torch_partials(tree: ast.Module, torch_names: Dict[str, str]) -> Dict[str, tuple]:
    """``SeqMHA = functools.partial(nn.MultiheadAttention, dropout=0.0)`` bound
    once at module level: ``{"SeqMHA": (qualified class, [[keyword or "",
    literal source or "..."], ...])}``, the partial's arguments as a
    construction receives them first ("..." for a value that is no literal)."""
    names, modules = partial_names(tree)
    if not (names or modules):
        return {}
    out: Dict[str, tuple] = {}
    for name, call in module_partials(tree, names, modules):
        ctor = dotted_name(call.args[0])
        qn = torch_class(ctor, torch_names) if ctor is not None else None
        if qn is None or any(isinstance(a, ast.Starred) for a in call.args):
            continue
        given = [["", _literal_text(a)] for a in call.args[1:]]
        if any(k.arg is None for k in call.keywords):
            continue
        out[name] = (qn, given + [[k.arg, _literal_text(k.value)] for k in call.keywords])
    return out


def _literal_text(node: ast.AST) -> str:
    """A literal's source (``True``, ``0.1``, ``-1``), else ``"..."``."""
    inner = (
        node.operand if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) else node
    )
    if isinstance(inner, ast.Constant) and type(inner.value) in (bool, int, float, str, type(None)):
        return ast.unparse(node)
    return "..."


def bind_partial(summary: dict, call: ast.Call, constants=None) -> Optional[dict]:
    """``summary`` with the ``partial`` call's arguments bound: positional
    ones fill the first parameters, keywords become defaults a later call
    may override; a bound value that is not a plain constant makes the sinks
    it reaches unknown (left out)."""
    positional = list(summary["positional"])
    defaults = dict(summary["defaults"])
    reach = dict(summary["reach"])
    bound: Dict[str, ast.AST] = {}
    for a in call.args[1:]:
        if isinstance(a, ast.Starred) or not positional:
            return None
        bound[positional.pop(0)] = a
    for k in call.keywords:
        if k.arg is None or (k.arg not in positional and k.arg not in summary["kwonly"]):
            return None
        bound[k.arg] = k.value
    for param, expr in bound.items():
        got = (constants or {}).get(expr.id) if isinstance(expr, ast.Name) else None
        if isinstance(got, str) and got.startswith(IMPORTED):
            defaults[param] = got  # an imported name: its value is read where it is called
        elif got is not None:
            defaults[param] = repr(got)  # a module constant of the file
        elif isinstance(expr, ast.Constant) and (
            expr.value is None or type(expr.value) in (bool, int, float)
        ):
            defaults[param] = repr(expr.value)
        else:
            reach = {k: v for k, v in reach.items() if v["param"] != param}
    if not reach and not summary.get("edges"):
        return None
    return dict(summary, positional=positional, defaults=defaults, reach=reach)


def torch_names(tree: ast.Module) -> Dict[str, str]:
    """Local name -> the torch module it is (``nn`` -> ``torch.nn``), and the
    attention module classes imported by name (``MultiheadAttention`` ->
    ``torch.nn.MultiheadAttention``)."""
    out: Dict[str, str] = {}
    for node in statements(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "torch" or a.name.startswith("torch."):
                    out[a.asname or a.name.split(".")[0]] = a.name if a.asname else "torch"
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module == "torch" or node.module.startswith("torch."):
                for a in node.names:
                    out[a.asname or a.name] = f"{node.module}.{a.name}"
    for local, full in called_imports(tree):
        if full == "torch" or full.startswith("torch."):
            out[local] = full
    return out


def called_imports(tree: ast.Module) -> List[Tuple[str, str]]:
    """(local name, dotted name) for each module-level ``X = f("a.b")`` whose
    function's name says import: ``importlib.import_module("torch.nn")``,
    sktime's ``_safe_import("torch.nn.MultiheadAttention")``
    (``import_lines.helper_import``)."""
    out = []
    for node in statements(tree):
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
            and node.value.args
        ):
            continue
        func, arg = node.value.func, node.value.args[0]
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        got = helper_import(name, arg.value) if isinstance(arg, ast.Constant) else None
        if got is not None:
            out.append((node.targets[0].id, got))
    return out


def torch_subclass(cls: ast.ClassDef, torch_names: Dict[str, str]) -> Optional[str]:
    """The torch attention module class (qualified) ``cls`` is, for its callers:
    a direct subclass that keeps torch's ``forward``, or whose ``forward``
    only hands its parameters, named and placed as torch's, to
    ``super().forward(...)``; else None."""
    if cls.decorator_list:
        return None
    qn = direct_torch_base(cls, torch_names)
    if qn is None:
        return None
    forward = next(
        (f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "forward"), None
    )
    if forward is None or delegates(forward, module_spec(qn).forward.names):
        return qn
    return None


def direct_torch_base(cls: ast.ClassDef, torch_names: Dict[str, str]) -> Optional[str]:
    """The torch attention module class (qualified) that the first of
    ``cls``'s bases naming one names, else None."""
    for base in cls.bases:
        name = dotted_name(base)
        qn = torch_class(name, torch_names) if name is not None else None
        if qn is not None:
            return qn
    return None


# the parts torch's ``__init__`` of an encoder or decoder layer builds that
# keep the layout of what they are fed, and the attention modules it builds
_KEEPING_PARTS = frozenset(part for parts in LAYER_PARTS.values() for part in parts)
_INNER = frozenset(attr for attrs in INNER_ATTENTION.values() for attr in attrs)
# torch's blocks that return their first argument's layout (when the class keeps them)
_KEEPING_BLOCKS = ("_sa_block", "_mha_block", "_ff_block")
# a method whose name says it may change which axis is which
_AXIS_WORDS = ("transpose", "permute", "swapaxes", "movedim", "view", "reshape", "flatten")
_AXIS_WORDS += ("unsqueeze", "squeeze", "rearrange", "einsum", "t")


def torch_layer(cls: ast.ClassDef, torch_names: Dict[str, str]) -> Optional[str]:
    """The torch encoder or decoder layer class (qualified) ``cls`` is built
    as, when it keeps torch's ``__init__`` and runs a ``forward`` of its own
    that feeds its first parameter, through norms, dropouts and residual
    sums only, as the query of the ``self.self_attn`` torch built (or of
    torch's ``self._sa_block``): its construction is the torch layer's, and
    the data its callers hand it is what that attention reads, in the
    layout the layer's ``batch_first`` says.  None for anything else (an
    ``__init__`` of its own, a decorator, any axis change in ``forward``)."""
    if cls.decorator_list or any(
        isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == "__init__"
        for f in cls.body
    ):
        return None
    qn = direct_torch_base(cls, torch_names)
    if qn is None or qn.rpartition(".")[2] not in INNER_ATTENTION:
        return None
    own = {f.name for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    forward = next(
        (f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "forward"), None
    )
    if forward is None or forward.decorator_list or len(forward.args.args) < 2:
        return None
    if delegates(forward, module_spec(qn).forward.names):
        return None  # torch's own forward: ``torch_subclass``
    same = {forward.args.args[1].arg}  # the names that hold the input, in its layout
    queries = []
    for node in ast.walk(forward):
        if isinstance(node, ast.Attribute) and node.attr in _AXIS_WORDS:
            return None
        if isinstance(node, ast.Name) and node.id in _AXIS_WORDS:
            return None
        if isinstance(node, ast.Call) and self_attr(node.func) in ("self_attn", "_sa_block"):
            queries.append(node)
    # a name bound anywhere in ``forward`` to anything but the input kept
    # (``x = self.pos(x)``, a loop or ``with`` target) never holds it
    kept, other = [], set()
    for node in ast.walk(forward):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            if isinstance(node, ast.AugAssign) and not isinstance(node.op, ast.Add):
                value = None
            for t in targets:
                if isinstance(t, ast.Name) and value is not None and len(targets) == 1:
                    kept.append((t.id, value))
                else:
                    other.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.For, ast.comprehension)):
            other.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            other.update(n.id for n in ast.walk(node.optional_vars) if isinstance(n, ast.Name))
    # the largest set of names, the input among them, each of whose bindings
    # keeps the input: ``x = x + self._sa_block(self.norm1(x), ...)`` holds it
    same |= {name for name, _ in kept}
    same -= other
    changed = True
    while changed:
        changed = False
        for name, value in kept:
            if name in same and not _keeps_input(value, same):
                same.discard(name)
                changed = True
    if not queries or own.intersection(_KEEPING_BLOCKS):
        return None  # torch's blocks, replaced, may do anything
    for call in queries:
        if not call.args or not _keeps_input(call.args[0], same):
            return None
    return qn


def _keeps_input(node: ast.AST, same: set) -> bool:
    """``node`` is the input in its layout: a name that holds it, a kept
    part of the layer applied to it (``self.norm1(x)``), or a sum with it."""
    if isinstance(node, ast.Name):
        return node.id in same
    if isinstance(node, ast.Call) and self_attr(node.func) in _KEEPING_PARTS:
        return len(node.args) == 1 and not node.keywords and _keeps_input(node.args[0], same)
    if isinstance(node, ast.Call) and self_attr(node.func) in _KEEPING_BLOCKS:
        return bool(node.args) and _keeps_input(node.args[0], same)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        # ``self.self_attn(x, x, x)[0]``: the output, in the query's layout
        inner = node.value
        return (
            node.slice.value == 0
            and isinstance(inner, ast.Call)
            and self_attr(inner.func) in _INNER
            and bool(inner.args)
            and _keeps_input(inner.args[0], same)
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _keeps_input(node.left, same) or _keeps_input(node.right, same)
    return False


def delegates(func: ast.FunctionDef, torch_names_in_order) -> bool:
    """A ``forward`` that only hands its parameters, named as torch's
    ``forward`` names them (``torch_names_in_order``), to
    ``super().forward(...)`` in the same places: the torch module's own
    ``forward``, in this file or another (``classes.delegates``)."""
    body = [
        s
        for s in func.body
        if not (isinstance(s, ast.Expr) and isinstance(getattr(s, "value", None), ast.Constant))
    ]
    if len(body) != 1 or not isinstance(body[0], ast.Return):
        return False
    call = body[0].value
    if not (isinstance(call, ast.Call) and super_method(call.func) == "forward"):
        return False
    a = func.args
    if a.vararg or a.kwarg or a.posonlyargs or func.decorator_list:
        return False
    names = [x.arg for x in a.args[1:] + a.kwonlyargs]
    if names != list(torch_names_in_order[: len(names)]):
        return False
    passed: List[str] = []
    for i, arg in enumerate(call.args):
        if not isinstance(arg, ast.Name) or passed != names[:i] or arg.id != names[i]:
            return False
        passed.append(arg.id)
    for k in call.keywords:
        if k.arg is None or not isinstance(k.value, ast.Name) or k.value.id != k.arg:
            return False
        passed.append(k.arg)
    return sorted(passed) == sorted(names)


def torch_modules(attrs: Dict[str, str], torch_names: Dict[str, str]) -> Dict[str, str]:
    """``self.<attr>`` -> the torch attention module class name it holds."""
    out = {}
    for attr, ctor in attrs.items():
        head, _, rest = ctor.partition(".")
        base = torch_names.get(head)
        if base is None:
            continue
        spec = module_spec(base + ("." + rest if rest else ""))
        if spec is not None:
            out[attr] = spec.name
    return out


# the key of ``held`` under which a subclass of a torch attention module
# keeps its base: ``super().forward(...)`` is a call of that module
SUPER = "super()"


def torch_base(cls: ast.ClassDef, torch_names: Dict[str, str]) -> Optional[str]:
    """The torch attention module (``spec.name``) that ``cls`` subclasses
    directly, whose ``forward`` its ``super().forward(...)`` runs; None for
    the whole ``nn.Transformer`` (not a sink) and for any other class."""
    qn = direct_torch_base(cls, torch_names)
    name = module_spec(qn).name if qn is not None else None
    return name if name != "Transformer" else None


def positional_self(func) -> Optional[str]:
    """The name a method calls its instance (``self``)."""
    args = func.args.posonlyargs + func.args.args
    return args[0].arg if args else None


def module_calls(others, held: Dict[str, str], self_name: Optional[str], loops=()):
    """The calls ``self.<attr>(...)`` of a held torch attention module, and
    ``self.<attr>.encoder(...)``/``.decoder(...)`` of a held ``nn.Transformer``
    (the PyTorch tutorial's ``encode``/``decode``): (call, spec).  The whole
    ``nn.Transformer`` called is no sink (not the whole model).  An item of a
    held list of such modules (``torch_lists``), by index or in a loop of the
    function's ``loops``, is such a call too."""
    out = []
    if not self_name:
        return out
    for call in others:
        f = call.func
        if not isinstance(f, ast.Attribute):
            attr = item_of(f, loops, self_name)
            name = held.get(attr + ITEMS) if attr is not None else None
            if name is not None and name != "Transformer":
                out.append((call, BY_NAME[name]))
            continue
        if super_method(f) == "forward" and held.get(SUPER) is not None:
            out.append((call, BY_NAME[held[SUPER]]))
        elif isinstance(f.value, ast.Name) and f.value.id == self_name:
            name = held.get(f.attr)
            if name is not None:  # the whole ``nn.Transformer``: its masks are sinks too
                out.append((call, BY_NAME[name]))
        elif (
            f.attr in PARTS
            and isinstance(f.value, ast.Attribute)
            and isinstance(f.value.value, ast.Name)
            and f.value.value.id == self_name
            and held.get(f.value.attr) == "Transformer"
        ):
            out.append((call, BY_NAME[PARTS[f.attr]]))
    return out


def custom_parts(cls: ast.ClassDef) -> set:
    """The attributes of ``cls`` whose construction is given a part of its
    own (``nn.Transformer(..., custom_encoder=enc)``): its ``.encoder`` may
    be no torch module."""
    out = set()
    for n in astwalk.walk(cls):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
            if any(k.arg in ("custom_encoder", "custom_decoder") for k in n.value.keywords):
                out.update(t.attr for t in n.targets if isinstance(t, ast.Attribute))
    return out


# what ``module_arguments`` gives an argument the function's own ``**kwargs`` carries
FORWARDED = ast.Name(id="**", ctx=ast.Load())


def module_arguments(
    call: ast.Call, spec, fwd: Optional[str] = None
) -> Optional[Dict[str, ast.AST]]:
    """The mask and causal-hint arguments of one module call, by name; None
    behind a splat (then what it passes is not known), but for the
    function's own ``**kwargs`` handed on untouched (``fwd``: its name):
    the arguments the call does not name come from the caller's keywords
    of those names (``FORWARDED``)."""
    splats = [k.value for k in call.keywords if k.arg is None]
    if any(isinstance(a, ast.Starred) for a in call.args) or (
        splats
        and not (len(splats) == 1 and isinstance(splats[0], ast.Name) and splats[0].id == fwd)
    ):
        return None
    names = spec.forward.names
    got = {names[i]: a for i, a in enumerate(call.args) if i < len(names)}
    got.update({k.arg: k.value for k in call.keywords if k.arg is not None})
    wanted = set(spec.mask_args) | {p.flag for p in spec.causal_pairs}
    out = {k: v for k, v in got.items() if k in wanted}
    if splats:
        out.update({k: FORWARDED for k in sorted(wanted) if k not in out})
    return out


def context_arguments(call: ast.Call, spec, given: Dict[str, ast.AST]) -> Dict[str, ast.AST]:
    """The key and value of an ``nn.MultiheadAttention`` call that attends
    over another tensor than its query (cross-attention) and is given no mask
    or causal flag but None or a parameter (``given``: ``module_arguments``'
    answer): the context the scores cannot tell padding in (``KV_SINKS``)."""
    if f"{spec.name}.key" not in KV_SINKS or any(
        not isinstance(v, ast.Name) and not none_or_false(v) for v in given.values()
    ):
        return {}
    names = spec.forward.names
    got = {names[i]: a for i, a in enumerate(call.args) if i < len(names)}
    got.update({k.arg: k.value for k in call.keywords if k.arg is not None})
    query, key = got.get("query"), got.get("key")
    if query is None or key is None or ast.dump(query) == ast.dump(key):
        return {}  # self-attention: its own input, not a context handed in
    return {k: got[k] for k in ("key", "value") if k in got}


def closure_params(factory, func, params: set) -> set:
    """The factory's named parameters the product may read as they are: not
    shadowed by the product's own parameters, and never rebound in the
    factory's body (``p = p or 0.1``, a ``nonlocal``)."""
    fargs = factory.args
    outer = {a.arg for a in fargs.posonlyargs + fargs.args + fargs.kwonlyargs} - params
    for n in astwalk.walk(factory):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            outer.discard(n.id)
        elif isinstance(n, ast.Nonlocal):
            outer.difference_update(n.names)
    return outer


def inherits_forward(cls: ast.ClassDef, own_attrs) -> list:
    """The bases (as written: ``"Attention"``, ``"layers.Attention"``) of a
    class that runs a base's ``forward`` as it is: it defines no method but
    perhaps ``__init__``, and that holds no module of its own (``own_attrs``,
    ``chains.class_attrs``), so what the base's ``forward`` calls on ``self``
    is what the base holds.  Empty for any other class."""
    methods = {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if not cls.bases or own_attrs or not methods <= {"__init__"}:
        return []
    return [name for name in map(dotted_name, cls.bases) if name is not None]


def registries(tree: ast.Module) -> Dict[str, str]:
    """The file's top-level dicts of classes (``ATTENTION_BACKENDS = {"torch":
    TorchAttention, "flash": FlashAttention}``): name -> ``"A|B"``
    (``KINDS``); a dict with a splat or a value that is not a class name, or
    a name bound twice, is left out."""
    out: Dict[str, str] = {}
    bound: Dict[str, int] = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        for t in targets:
            if isinstance(t, ast.Name):
                bound[t.id] = bound.get(t.id, 0) + 1
        if len(targets) != 1 or not isinstance(targets[0], ast.Name):
            continue
        value = node.value
        if isinstance(value, ast.Dict) and value.values and None not in value.keys:
            if all(names_class(v) for v in value.values):
                kinds = dict.fromkeys(dotted_name(v) for v in value.values)
                out[targets[0].id] = KINDS.join(k for k in kinds if k)
    out = {k: v for k, v in out.items() if bound.get(k) == 1}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            out.update((f"{node.name}.{m}", node.name) for m in _builders(node))
    return out


def _builders(cls: ast.ClassDef) -> List[str]:
    """The ``@classmethod``s of a class whose every ``return`` builds the
    class by its first parameter (``return cls(cfg.dim, cfg.heads)``): a
    call of one makes an instance (``Encoder.from_config()``), listed in
    ``registries`` as ``"Encoder.from_config": "Encoder"``."""
    out = []
    for item, first in class_methods(cls):
        returns = [n for n in astwalk.own_nodes(item) if isinstance(n, ast.Return)]
        if returns and all(
            isinstance(r.value, ast.Call)
            and isinstance(r.value.func, ast.Name)
            and r.value.func.id == first
            for r in returns
        ):
            out.append(item.name)
    return out


_DICT_CHANGES = ("update", "pop", "popitem", "setdefault", "clear")


def dict_splat(splat: ast.AST, func) -> Optional[Dict[str, ast.AST]]:
    """What ``**kwargs`` splats when ``kwargs`` is a dict the function builds
    once (``{"attn_mask": m, "dropout_p": p}`` or ``dict(...)``, string keys)
    and then only gives new keys (``kwargs["scale"] = scale``, maybe under an
    ``if``): key -> value (stackformer's attention engine).  A key given
    twice is left out; None for any other change or binding of the name."""
    if not isinstance(splat, ast.Name):
        return None
    name, literal, added, twice = splat.id, None, {}, set()
    for node in ast.walk(func):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name) and t.id == name:
                    if literal is not None or node.value is None:
                        return None
                    literal = node.value
                elif isinstance(t, ast.Subscript) and dotted_name(t.value) == name:
                    key = t.slice
                    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                        return None
                    if key.value in added:
                        twice.add(key.value)
                    added[key.value] = node.value
                elif any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(t)):
                    return None
        elif isinstance(node, (ast.AugAssign, ast.Delete, ast.For, ast.NamedExpr)):
            targets = node.targets if isinstance(node, ast.Delete) else [node.target]
            if any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t)):
                return None
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in _DICT_CHANGES
            and dotted_name(node.value) == name
        ):
            return None
    out: Dict[str, ast.AST] = {}
    if isinstance(literal, ast.Dict):
        for key, value in zip(literal.keys, literal.values):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                return None  # ``**other`` inside, or a key not known
            out[key.value] = value
    elif (
        isinstance(literal, ast.Call)
        and dotted_name(literal.func) == "dict"
        and not literal.args
        and all(k.arg is not None for k in literal.keywords)
    ):
        out = {k.arg: k.value for k in literal.keywords}
    else:
        return None
    for key, value in added.items():
        if key in out or key in twice:
            out.pop(key, None)  # which one the call sees depends on the path
        else:
            out[key] = value
    return out


SDPA_POSITIONS = SDPA_SIGNATURE.names


def sdpa_arguments(call: ast.Call) -> Tuple[Dict[str, ast.AST], Optional[ast.AST]]:
    """SDPA's arguments by name, and what its one ``**`` splat splats (None
    without one); ({}, None) behind a ``*`` splat or two ``**`` splats, and
    behind one ``**`` splat all but what the call names itself
    (``kwargs_given`` reads the splat)."""
    out = {}
    for i, a in enumerate(call.args):
        if isinstance(a, ast.Starred):
            return {}, None
        if i < len(SDPA_POSITIONS):
            out[SDPA_POSITIONS[i]] = a
    splats = [k.value for k in call.keywords if k.arg is None]
    if len(splats) > 1:
        return {}, None
    for k in call.keywords:
        if k.arg is not None:
            out[k.arg] = k.value
    return out, (splats[0] if splats else None)


# SDPA's parameters a caller names as keywords (what ``**kwargs`` can carry to it)
_KEYWORD_SINKS = ("attn_mask", "dropout_p", "is_causal")


def kwargs_given(splat: Optional[ast.AST], fwd: Optional[str], given) -> List[str]:
    """The sink arguments an SDPA call takes from the function's own
    ``**kwargs`` (``fwd``: handed on untouched) when that is what the call's
    one ``**`` splat (``splat``) splats: those it does not give itself."""
    if fwd is None or not (isinstance(splat, ast.Name) and splat.id == fwd):
        return []
    return [name for name in _KEYWORD_SINKS if name not in given]
