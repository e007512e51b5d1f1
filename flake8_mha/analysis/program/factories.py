"""What a factory function of a file returns, read with ``ast``: the module
it builds (``def build_attn(): return Attention(dim)``), the torch attention
module among them, and the ``batch_first`` that module is given (a literal,
the factory's parameter, or a constant of the project); and the function a
factory returns, or a named lambda, as a function to summarise."""

from __future__ import annotations

import ast
from typing import Dict, List, NamedTuple, Optional

from ...core import walk as astwalk
from .chains import constructor, dotted_name, super_method
from .held_lists import torch_class


def returned_modules(tree: ast.Module) -> Dict[int, str]:
    """``id`` of each of the file's top-level functions -> the constructor (as
    written, dotted names too) of the module it returns (``returned_module``)."""
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            made = returned_module(node, dotted=True)
            if made is not None:
                out[id(node)] = made
    return out


def torch_factories(tree: ast.Module, returned, torch_names: Dict[str, str]) -> Dict[str, str]:
    """The file's undecorated top-level functions that build and return one
    torch attention module -> its qualified class (``def build_encoder(d, h):
    ... return nn.TransformerEncoder(layer, 2)``); ``returned``:
    ``returned_modules(tree)``."""
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.decorator_list:
            made = returned.get(id(node))
            qn = torch_class(made, torch_names) if made else None
            if qn is not None:
                out[node.name] = qn
    return out


def returned_module(func, dotted: bool = False) -> Optional[str]:
    """The constructor (as written) of the module a factory function returns
    (``def build_attn(): return Attention(dim)``, or through one local name):
    every ``return`` of the function itself gives a construction of that one
    class; None otherwise.  ``dotted``: ``nn.MultiheadAttention(...)`` too
    (a class reached through a module name)."""
    returns, built = _returned_values(func)
    kinds = set()
    for value in returns:
        value = built(value)
        kinds.add(constructor(value) if value is not None else None)
    if len(kinds) != 1:
        return None
    made = kinds.pop()
    last = made.rsplit(".", 1)[-1] if dotted and made is not None else made
    return made if last is not None and last[:1].isupper() else None


def returned_batch_first(func):
    """The literal ``batch_first`` of the torch module a factory returns
    (``return nn.TransformerEncoder(layer, 1)`` after ``layer =
    nn.TransformerEncoderLayer(..., batch_first=True)``, or the module's own
    keyword), read as ``returned_module`` reads the construction; or the
    factory's parameter that gives it, unchanged, as ``[name, position,
    default]`` (position -1 for a keyword-only one, default a literal bool
    or None), bound at each call (``bound.bound_flag``); None otherwise."""
    returns, built = _returned_values(func)
    flags = [_flag_given(built(value), built) for value in returns]
    if len(flags) == 1 and isinstance(flags[0], _Partial):
        return ["partial", flags[0].name]  # the module-level partial's own (files.py)
    if len(flags) == 1 and isinstance(flags[0], (ast.Name, ast.Attribute)):
        got = _param_flag(func, flags[0]) if isinstance(flags[0], ast.Name) else None
        name = dotted_name(flags[0])
        if got is None and name is not None and name.count(".") <= 1:
            return ["const", name]  # ``cfg.BATCH_FIRST``: the project's constant (files.py)
        return got
    if not flags or not all(isinstance(f, ast.Constant) and type(f.value) is bool for f in flags):
        return None
    found = {f.value for f in flags}
    return found.pop() if len(found) == 1 else None


class _Partial(NamedTuple):
    """A layer built by calling a module-level name without ``batch_first``
    (``EncoderLayer(d, h)`` after ``EncoderLayer = partial(
    nn.TransformerEncoderLayer, batch_first=True)``, here or in the file it
    is imported from: probe AB's AB07): the flag is the partial's."""

    name: str


def _flag_given(call, built):
    """The ``batch_first`` expression of a construction, or of the layer a
    container (``nn.TransformerEncoder(layer, n)``) is built from; a
    ``_Partial`` for a layer built by a module-level name that gives none."""
    if not isinstance(call, ast.Call):
        return None
    given = {k.arg: k.value for k in call.keywords}
    if "batch_first" not in given:  # a container: its layer's
        layer = given.get("encoder_layer", given.get("decoder_layer"))
        if layer is None and call.args:
            layer = call.args[0]
        call = built(layer) if layer is not None else None
        given = {k.arg: k.value for k in call.keywords} if isinstance(call, ast.Call) else {}
        if (
            "batch_first" not in given
            and isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and not any(k.arg is None for k in call.keywords)
        ):
            return _Partial(call.func.id)
    return given.get("batch_first")


def init_batch_first(cls: ast.ClassDef):
    """The ``batch_first`` a torch module subclass with an ``__init__`` of its
    own gives torch's in its one ``super().__init__(...)`` (probe AN's AN19:
    ``super().__init__(d_model, n_heads, 128, 0.1, batch_first=False)``): a
    literal; the parameter of its ``__init__`` that gives it, as
    ``returned_batch_first`` reads a factory's (positions counted without
    ``self``); None otherwise.  Left to torch's default, the construction is
    MHA001's, at the ``super().__init__`` call, as in one file."""
    init = next(
        (f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None
    )
    if init is None or init.decorator_list or not init.args.args:
        return None
    supers = [
        n
        for n in astwalk.own_nodes(init)
        if isinstance(n, ast.Call) and super_method(n.func) == "__init__"
    ]
    if len(supers) != 1:
        return None
    call = supers[0]
    given = {k.arg: k.value for k in call.keywords}
    flag = given.get("batch_first")
    if flag is None:  # torch's default: MHA001's, where the subclass calls it
        return None
    if isinstance(flag, ast.Constant) and type(flag.value) is bool:
        return flag.value
    got = _param_flag(init, flag) if isinstance(flag, ast.Name) else None
    if got is None or got[1] == 0:
        return None
    return [got[0], got[1] - 1 if got[1] > 0 else -1, got[2]]


def _param_flag(func, flag: ast.Name) -> Optional[list]:
    """``[name, position, default]`` of the parameter of ``func`` that
    ``flag`` names, never rebound in it; else None."""
    a = func.args
    positional = [p.arg for p in (*a.posonlyargs, *a.args)]
    names = positional + [p.arg for p in a.kwonlyargs]
    if flag.id not in names or any(
        isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
        and any(isinstance(t, ast.Name) and t.id == flag.id for t in _targets(n))
        for n in astwalk.own_nodes(func)
    ):
        return None
    defaults = dict(zip(positional[len(positional) - len(a.defaults) :], a.defaults))
    defaults.update((p.arg, d) for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None)
    default = defaults.get(flag.id)
    default = default.value if isinstance(default, ast.Constant) else None
    at = positional.index(flag.id) if flag.id in positional else -1
    return [flag.id, at, default if type(default) is bool else None]


def _targets(n) -> list:
    return n.targets if isinstance(n, ast.Assign) else [n.target]


def _returned_values(func):
    """(what each ``return`` of the function itself gives, a reading of a
    value through one local name assigned once: ``layer`` of ``layer =
    nn.TransformerEncoderLayer(...)`` is that call)."""
    assigned: Dict[str, List[ast.AST]] = {}
    returns: List[ast.AST] = []
    for n in astwalk.own_statements(func):  # a return and an assignment are statements
        t = n.__class__
        if t is ast.Return:
            returns.append(n.value)  # type: ignore[attr-defined]
        elif t is ast.Assign:
            for target in n.targets:  # type: ignore[attr-defined]
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(n.value)  # type: ignore[attr-defined]

    def built(value):
        if isinstance(value, ast.Name) and len(assigned.get(value.id, ())) == 1:
            return assigned[value.id][0]
        return value

    return returns, built


def as_function(node: ast.Assign) -> ast.FunctionDef:
    """``name = lambda a: body`` as ``def name(a): return body``, at its place."""
    lam = node.value
    ret = ast.copy_location(ast.Return(value=lam.body), lam.body)
    func = ast.FunctionDef(
        name=node.targets[0].id, args=lam.args, body=[ret], decorator_list=[], returns=None
    )
    if "type_params" in ast.FunctionDef._fields:  # pragma: no cover - Python 3.12+
        func.type_params = []
    return ast.copy_location(func, node)


def returned_function(func) -> Optional[ast.FunctionDef]:
    """The nested function a factory returns (``def call(...): ...; return
    call``), or the lambda its last statement returns (``return lambda q, k,
    v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)``) as such a
    function."""
    nested = {
        n.name: n for n in func.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    last = func.body[-1]
    if not nested and isinstance(last, ast.Return) and isinstance(last.value, ast.Lambda):
        lam = last.value
        body = [ast.copy_location(ast.Return(lam.body), lam.body)]
        made = ast.FunctionDef("<lambda>", lam.args, body, [], None, None)
        return ast.copy_location(made, lam)
    if not nested:
        return None
    found = None
    for n in astwalk.walk(func):
        if isinstance(n, ast.Return) and n.value is not None:
            if isinstance(n.value, ast.Name) and n.value.id in nested:
                if found is not None and found is not nested[n.value.id]:
                    return None
                found = nested[n.value.id]
    return found
