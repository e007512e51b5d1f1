"""What a class statement or a constructor parameter says of the module a
call runs: a parameter's class default (``attn_layer=Attention``) and a
``forward`` that only hands its arguments to the torch base's."""

from __future__ import annotations

import ast
import textwrap
from typing import Optional

import libcst as cst

from ..core.lines import word_count
from ..core.torch_api import ModuleSpec
from .flow import DefKind, Env, Scope, lookup, module_scope, walk
from .program import forms
from .program.local_names import annotation_of
from .tree import module_text


def delegates(func: cst.FunctionDef, spec: ModuleSpec) -> bool:
    """A ``forward`` that only hands its parameters, named as torch's
    ``forward`` names them, to ``super().forward(...)`` in the same places
    (``def forward(self, src, src_mask=None, ...): return super().forward(src,
    src_mask=src_mask, ...)``): the torch module's own ``forward``.  Read
    with ``ast`` by the test the project's summaries use
    (``program/forms.delegates``), so a subclass in the linted file and one
    in another file are judged alike."""
    try:
        tree = ast.parse(textwrap.dedent(_CODE.code_for_node(func)))
    except (SyntaxError, ValueError, RecursionError):
        return False
    node = tree.body[0] if tree.body else None
    return isinstance(node, ast.FunctionDef) and forms.delegates(node, spec.forward.names)


_CODE = cst.Module(body=[])


def class_default(func, env: Env, scope: Optional[Scope]):
    """``attn_layer(dim)`` inside ``def __init__(self, dim, attn_layer=Attention)``,
    the parameter not rebound: the default class (timm's and open_clip's
    ``attn_layer``, ``norm_layer``, ``block_fn``), the kind every construction
    that leaves the parameter out gets.  Anything else: ``func`` itself."""
    d = _param_def(func, env, scope)
    if d is None:
        return func
    default = d.node.default
    if isinstance(default, (cst.Name, cst.Attribute)) and not _passed_in_file(d.scope, func.value):
        return default
    handed = handed_in_file(d.scope, func.value)
    return handed if handed is not None else func


def _param_def(func, env: Env, scope: Optional[Scope]):
    """The ``Def`` of the one parameter the name ``func`` is; None otherwise."""
    if not isinstance(func, cst.Name):
        return None
    defs = lookup(func.value, env, scope)
    if len(defs) != 1 or defs[0].kind != DefKind.PARAM or not isinstance(defs[0].node, cst.Param):
        return None
    return defs[0]


def class_run(func, env: Env, scope: Optional[Scope]):
    """``class_default``, also through a default that binds arguments of a
    class with ``functools.partial`` (DINOv2's ``block_fn=partial(Block,
    attn_class=MemEffAttention)``): the class whose ``forward`` a call of
    what it builds runs (the layout through it), not its construction; not
    when the partial binds ``batch_first``, which the class's own reading of
    its constructions would not see."""
    got = class_default(func, env, scope)
    d = _param_def(func, env, scope) if got is func else None
    if d is None:
        return got
    default = d.node.default
    if (
        isinstance(default, cst.Call)
        and dotted_text(default.func) in ("partial", "functools.partial")
        and default.args
        and default.args[0].keyword is None
        and not default.args[0].star
        and isinstance(default.args[0].value, (cst.Name, cst.Attribute))
        and not any(
            a.keyword is not None and a.keyword.value == "batch_first" for a in default.args
        )
        and not _passed_in_file(d.scope, func.value)
    ):
        return default.args[0].value
    return func


def handed_in_file(fscope: Optional[Scope], param: str):
    """The class every construction in the file of the class whose
    ``__init__`` holds ``fscope`` hands ``param`` (``Layer(RelAttn, 32)``
    for ``def __init__(self, attn_cls, d): self.attn = attn_cls(d)``;
    ``Block(48, 4, attn_cls=nn.MultiheadAttention)``), a construction that
    leaves it out counting its default: the one class of the file, import or
    dotted name they all name, by position or keyword; None when one passes
    another, something else or a splat, or the class is never built here."""
    found = _constructions_here(fscope)
    if not found:
        return None
    cls_scope, calls = found
    own = list(fscope.node.params.params)[1:]
    params = [p.name.value for p in own]
    index = params.index(param) if param in params else -1
    default = own[index].default if index >= 0 else None
    names = set()
    for call in calls:
        if any(a.star for a in call.args):
            return None
        given = _argument(call, index, param)
        given = default if given is None else given
        text = dotted_text(given)
        if text is None:
            return None
        names.add(text)
        chosen = given
    if len(names) != 1:
        return None
    if isinstance(chosen, cst.Attribute):
        return chosen  # ``nn.MultiheadAttention``: its qualified name says what it is
    module = module_scope(cls_scope)
    defs = lookup(chosen.value, module.final_env, module)
    kinds = (DefKind.CLASS, DefKind.IMPORT)
    return chosen if defs and all(d.kind in kinds for d in defs) else None


def dotted_text(node) -> Optional[str]:
    """``Name`` or ``a.b.Name`` as text; None for anything else."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_text(node.value)
        return f"{base}.{node.attr.value}" if base is not None else None
    return None


def _constructions_here(fscope: Optional[Scope]):
    """(the class scope, every call in the file of the class whose
    ``__init__`` holds ``fscope``, by its plain name); None elsewhere."""
    cls_scope = fscope.parent if fscope is not None else None
    if cls_scope is None or not isinstance(cls_scope.node, cst.ClassDef):
        return None
    if not isinstance(fscope.node, cst.FunctionDef) or fscope.node.name.value != "__init__":
        return None
    root = cls_scope
    while root.parent is not None:
        root = root.parent
    module = root.node
    kept = _CALLS.get(id(module))
    if kept is None or kept[0] is not module:
        _CALLS.clear()
        kept = _CALLS[id(module)] = (module, _calls_by_name(module))
    return cls_scope, kept[1].get(cls_scope.node.name.value, ())


_CALLS: dict = {}  # the file being analysed -> {class name: its constructions}


def _calls_by_name(module) -> dict:
    out: dict = {}
    for n in walk(module):
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Name):
            out.setdefault(n.func.value, []).append(n)
    return out


def _passed_in_file(fscope: Optional[Scope], param: str) -> bool:
    """Whether a construction in the file of the class whose ``__init__``
    holds ``fscope`` passes ``param`` (HF's ``BertEncoder(config,
    attn_cls=BertSdpaSelfAttention)``): then the default is not every
    instance's class."""
    found = _constructions_here(fscope)
    if not found:
        return False
    params = [p.name.value for p in fscope.node.params.params][1:]
    index = params.index(param) if param in params else -1
    return any(
        any(a.star for a in call.args) or _argument(call, index, param) is not None
        for call in found[1]
    )


def _argument(call: cst.Call, index: int, param: str):
    """What a construction passes for ``param``: by keyword, or at the
    positional ``index``; None when neither (a splat is the caller's to check)."""
    for i, a in enumerate(call.args):
        if a.keyword is not None:
            if a.keyword.value == param:
                return a.value
        elif i == index and not a.star:
            return a.value
    return None


def static_kind(func: cst.FunctionDef) -> str:
    """``staticmethod``, ``classmethod`` or ``method``."""
    for dec in func.decorators:
        d = dec.decorator
        if isinstance(d, cst.Name) and d.value in ("staticmethod", "classmethod"):
            return d.value
    return "method"


def is_property(func: cst.FunctionDef) -> bool:
    """A method under ``@property``: an attribute read runs it."""
    return any(
        isinstance(d.decorator, cst.Name) and d.decorator.value == "property"
        for d in func.decorators
    )


def property_return(resolver, flow, cls, attr: str):
    """(the return, its env, the method's scope) of the ``@property`` ``attr``
    of the class ``cls`` when it has one return; None otherwise."""
    method = resolver.method_of(cls, attr) if cls is not None else None
    fscope = flow.functions.get(id(method)) if method is not None else None
    if fscope is None or len(fscope.returns) != 1 or not is_property(method):
        return None
    ret, renv = fscope.returns[0]
    return ret, renv, fscope


def builds_own_class(func: cst.FunctionDef) -> bool:
    """A ``@classmethod`` whose every ``return`` builds the class by its first
    parameter (``return cls(cfg.dim, cfg.heads)``): a call of it makes an
    instance of the class it is called on (``Encoder.from_config()``)."""
    params = func.params.params
    if static_kind(func) != "classmethod" or not params:
        return False
    first = params[0].name.value
    returns = []
    stack = list(func.body.children)
    while stack:
        n = stack.pop()
        if isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(n, cst.Return):
            returns.append(n.value)
        stack.extend(n.children)
    return bool(returns) and all(
        isinstance(r, cst.Call) and isinstance(r.func, cst.Name) and r.func.value == first
        for r in returns
    )


def instance_class(res, node, env: Env, scope):
    """The class of this file that ``node`` holds an instance of: a name's one
    definition builds it (``model = Forecaster()``) or is a parameter
    annotated with it (``model: Forecaster``, ``"Forecaster"``); an attribute
    (``self.encoder`` of ``self.encoder.layers``) holds one class's instances."""
    if isinstance(node, cst.Attribute):
        got = res.instance_classes(node, env, scope)
        return got[0] if got and all(c is got[0] for c in got) else None
    defs = lookup(node.value, env, scope) if isinstance(node, cst.Name) else ()
    if len(defs) != 1:
        return None
    d = defs[0]
    if d.kind == DefKind.ASSIGN and isinstance(d.node, cst.Call):
        return res.local_class(d.node.func, d.env, d.scope)
    named = annotation_of(d)
    return res.local_class(named, env, scope) if named is not None else None


def forwarded_attr(info) -> Optional[str]:
    """``inner`` when the class's ``forward`` only hands every argument on to
    ``self.inner``: ``def forward(self, *args, **kwargs): return
    self.inner(*args, **kwargs)`` (a tracing or profiling wrapper, probe AM's
    AM30): a call of an instance is a call of ``self.inner``."""
    method = info.methods.get("forward") if info is not None else None
    if method is None or method.decorators:
        return None
    p = method.params
    if len(p.params) != 1 or p.posonly_params or p.kwonly_params:
        return None
    if not isinstance(p.star_arg, cst.Param) or p.star_kwarg is None:
        return None
    body = [s for s in method.body.body if not _is_docstring(s)]
    if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine):
        return None
    ret = body[0].body[0]
    call = ret.value if isinstance(ret, cst.Return) else None
    if not isinstance(call, cst.Call) or len(call.args) != 2:
        return None
    func = call.func
    if not (
        isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Name)
        and func.value.value == p.params[0].name.value
    ):
        return None
    star, kw = call.args
    names = (p.star_arg.name.value, p.star_kwarg.name.value)
    if (star.star, kw.star) != ("*", "**") or (
        getattr(star.value, "value", None),
        getattr(kw.value, "value", None),
    ) != names:
        return None
    return func.attr.value


def _is_docstring(stmt) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, cst.SimpleString)
    )


def set_when_built(defs) -> list:
    """``defs`` of a ``self.<attr>`` without those a setter method makes that
    the file never calls: ``def set_processor(self, processor):
    self.processor = processor``, named nowhere else in the file (probe
    AO's AO05: the processor the module is built with is the one it runs;
    ``chains.uncalled_setters`` says the same for the summaries).  All of
    ``defs`` when every one is such a setter's."""
    kept = [d for d in defs if not _uncalled_setter(d)]
    return kept or list(defs)


def _uncalled_setter(d) -> bool:
    func = d.scope.node if d.scope is not None else None
    if d.kind != DefKind.ASSIGN or not isinstance(func, cst.FunctionDef):
        return False
    name = func.name.value
    if name.startswith("__") or name == "forward" or func.decorators:
        return False
    given = lookup(d.node.value, d.env, d.scope) if isinstance(d.node, cst.Name) else ()
    if len(given) != 1 or given[0].kind != DefKind.PARAM:
        return False
    module = module_scope(d.scope)
    return module is not None and word_count(name, module_text(module.node)) == 1
