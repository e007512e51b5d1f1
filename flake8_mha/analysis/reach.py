"""Module identity through the containers and accessors real code uses
(issue 14), for ``Resolver.held``:

* the submodules torch builds inside a module: ``transformer.encoder`` /
  ``.decoder`` of an ``nn.Transformer`` built here without a custom one, and
  ``.layers`` of a ``TransformerEncoder``/``Decoder`` (copies of the layer it
  was given, or of the layer an ``nn.Transformer`` builds);
* the values of an ``nn.ModuleDict`` built from a dict literal or ``dict(k=...)``;
* one element of ``zip(...)`` / ``enumerate(...)`` in a ``for`` target;
* ``getattr(self, f"stage_{i}_x")`` matched against the ``setattr(self,
  f"stage_{i}_x", ...)`` calls of its class: same literal parts, no other
  dynamic ``setattr`` and no plain attribute the template could name.

Every helper answers None (unknown) when unsure.
"""

from __future__ import annotations

import re
from typing import Any, Callable, List, Optional, Tuple

import libcst as cst

from ..core import torch_api
from ..core.lines import word_count
from . import tree
from .bound import Bound, Instance
from .classes import instance_class, is_property
from .flow import DefKind, Env, ScopeKind, lookup, scope_appends
from .tree import choices, module_text, walk
from .values import UNKNOWN, fixed_side, literal

Resolver = Any  # resolve.Resolver (which imports this module)
Leaf = Callable

MODULE_DICT = "torch.nn.ModuleDict"
# (owner class, attribute) -> the class torch builds there
_SUBMODULES = {
    ("Transformer", "encoder"): torch_api.TRANSFORMER_ENCODER,
    ("Transformer", "decoder"): torch_api.TRANSFORMER_DECODER,
}
_CUSTOM = {"encoder": "custom_encoder", "decoder": "custom_decoder"}
_LAYER_OF = {
    "TransformerEncoder": torch_api.TRANSFORMER_ENCODER_LAYER,
    "TransformerDecoder": torch_api.TRANSFORMER_DECODER_LAYER,
}
Template = Tuple[Optional[str], ...]  # literal parts; None for a placeholder


def _plain_torch(res: Resolver, node, env: Env, scope, depth: int):
    """The torch instances ``node`` holds, each built here by a direct call of
    the torch class (no subclass), or None."""
    got = res.held(node, env, scope, res.torch_leaf, depth + 1)
    if not got or any(i.subclass is not None or i.ctor is None for i in got):
        return None
    return got


def submodule(
    res: Resolver, node: cst.Attribute, env: Env, scope, leaf: Leaf, depth: int
) -> Optional[list]:
    """``<transformer>.encoder`` / ``.decoder``: the module torch built there;
    ``self.self_attn`` of a layer subclass (``inner_attention``)."""
    owner = res.self_class(node, env, scope)
    if owner is not None:
        return inner_attention(res, owner, node.attr.value, leaf)
    held = instance_class(res, node.value, env, scope)
    if held is not None:  # ``model.decoder(...)`` of ``model = Forecaster()``: its self.decoder
        return res.held_from_defs(tuple(res.attr_defs(held, node.attr.value)), leaf, depth)
    if leaf != res.torch_leaf or node.attr.value not in _CUSTOM:
        return None
    owners = _plain_torch(res, node.value, env, scope, depth)
    if not owners:
        return None
    out = []
    for inst in owners:
        spec = _SUBMODULES.get((inst.spec.name, node.attr.value))
        if spec is None or _custom(inst, _CUSTOM[node.attr.value]):
            return None
        out.append(type(inst)(spec, None, None, False))
    return out


def members_of(res: Resolver, info, attr: str, leaf: Leaf, depth: int = 0) -> Optional[list]:
    """What the container attribute ``attr`` of the class ``info`` holds
    (``self.transformer.resblocks``), unless the class changes it in place."""
    defs = res.attr_defs(info, attr)
    if not defs or mutated_in_place(res, info, attr):
        return None
    appended = [d for cls in res.base_classes(info) for d in cls.appends.get(attr, ())]
    return res._elements_from_defs(tuple(defs), appended, leaf, depth)


def layer_part(res: Resolver, owner, attr: str) -> Optional[str]:
    """``self.norm1`` in a subclass of a torch encoder or decoder layer (the
    class assigns no such attribute): the torch class torch's ``__init__``
    built there, by name."""
    found = res.class_spec(owner)
    return torch_api.LAYER_PARTS.get(found[0].name, {}).get(attr) if found is not None else None


def inner_attention(res: Resolver, owner, attr: str, leaf: Leaf) -> Optional[list]:
    """``self.self_attn`` in a subclass of a torch encoder or decoder layer
    that runs a ``forward`` of its own: the ``nn.MultiheadAttention`` torch's
    ``__init__`` built there (the class assigns no such attribute itself)."""
    if leaf != res.torch_leaf:
        return None
    found = res.class_spec(owner)
    if found is None or attr not in torch_api.INNER_ATTENTION.get(found[0].name, ()):
        return None
    return [Instance(torch_api.MULTIHEAD_ATTENTION, None, None, False)]


def _custom(inst, param: str) -> bool:
    """Whether the construction hands in its own part for ``param``
    (``custom_encoder=...``) on every path.  darts hands in a name that is
    None unless a setting builds one: where it is None, torch builds the
    part, and the part is the Transformer's own (with its ``batch_first``)."""
    args = inst.init_args()
    if args is None or args.star or args.double_star:
        return args is not None and args.maybe_given(param)
    given = args.get(param)
    if given is None or tree.is_none(given):
        return False
    if isinstance(given, cst.Name) and inst.ctor is not None:
        defs = lookup(given.value, inst.ctor.env, inst.ctor.scope)
        may_be_none = any(
            (d.kind == DefKind.ASSIGN and tree.is_none(d.node))
            or (
                d.kind == DefKind.PARAM
                and isinstance(d.node, cst.Param)
                and d.node.default is not None
                and tree.is_none(d.node.default)
            )
            for d in defs
        )
        return not may_be_none
    return True


def layers(
    res: Resolver, node: cst.Attribute, env: Env, scope, leaf: Leaf, depth: int
) -> Optional[list]:
    """``<encoder>.layers``: the layers a TransformerEncoder/Decoder holds;
    ``self.layers`` of a subclass (``inherited_layers``)."""
    owner = res.self_class(node, env, scope)
    if owner is not None:
        return inherited_layers(res, owner, node.attr.value, leaf, depth)
    held = instance_class(res, node.value, env, scope)
    if held is not None:  # ``self.transformer.resblocks``: a container of a class of this file
        return members_of(res, held, node.attr.value, leaf, depth)
    foreign = getattr(leaf, "foreign", None)
    if foreign is not None:  # the same, of a class of another project file (layout)
        return foreign(node.value, node.attr.value, env, scope)
    if leaf != res.torch_leaf or node.attr.value != "layers":
        return None
    # an instance without a construction call here is one ``submodule`` gave:
    # built by nn.Transformer (a subclass with its own __init__ is unknown)
    value = node.value
    owners = res.held(value, env, scope, leaf, depth + 1)
    if not owners or any(i.subclass is not None for i in owners):
        return None
    built_by_transformer = (
        isinstance(value, cst.Attribute)
        and value.attr.value in _CUSTOM
        and submodule(res, value, env, scope, leaf, depth + 1) is not None
    )
    out: list = []
    for inst in owners:
        layer_spec = _LAYER_OF.get(inst.spec.name)
        if layer_spec is None:
            return None
        if inst.ctor is None:  # built by nn.Transformer from its own arguments, or unknown
            if not built_by_transformer:
                return None
            out.append(type(inst)(layer_spec, None, None, False))
            continue
        given = inst.init_args().get(inst.spec.init.names[0])
        if given is None:
            return None
        site = res.site_of.get(id(inst.ctor.node))
        got = res.held(given, site.env, site.scope, leaf, depth + 1) if site else None
        if not got or any(g.spec is not layer_spec for g in got):
            return None
        out.extend(got)
    return out


def inherited_layers(res: Resolver, owner, attr: str, leaf: Leaf, depth: int) -> Optional[list]:
    """``self.layers`` in a subclass of ``nn.TransformerEncoder``/``Decoder``
    that keeps torch's ``__init__`` and loops its layers in a ``forward`` of
    its own (docling's ``for mod in self.layers: output = mod(output,
    memory)``): clones of the layer every construction of the class in this
    file hands it.  None when the class builds its own, or is built nowhere
    here, or one construction does not say."""
    if attr != "layers":
        return None
    spec = res.class_spec(owner)
    if spec is None or spec[1] or spec[0].name not in _LAYER_OF:
        return None
    out: list = []
    for site in res.constructions(owner):
        given = Bound(site.node, spec[0].init).get(spec[0].init.names[0])
        got = res.held(given, site.env, site.scope, leaf, depth + 1) if given is not None else None
        if not got:
            return None
        out.extend(got)
    return out or None


def pair_values(res, node, env, scope, leaf, depth: int) -> Optional[list]:
    """The second items of the ``(name, module)`` pairs ``node`` holds: a
    display or comprehension of pairs, or a local list of them filled by
    ``.append((f"layer_{i}", Block(...)))`` (classy-vision's
    ``nn.Sequential(OrderedDict(layers))``)."""
    if depth > 16:  # resolve.MAX_DEPTH
        return None

    def second(pair, penv=env, pscope=scope) -> Optional[list]:
        if not isinstance(pair, cst.Tuple) or len(pair.elements) != 2:
            return None
        if isinstance(pair.elements[1], cst.StarredElement):
            return None
        return res.held(pair.elements[1].value, penv, pscope, leaf, depth + 1)

    t = type(node)
    if t in (cst.List, cst.Tuple):
        out: list = []
        for el in node.elements:
            got = None if isinstance(el, cst.StarredElement) else second(el.value)
            if not got:
                return None
            out.extend(got)
        return out
    if t in (cst.ListComp, cst.GeneratorExp):
        return second(node.elt)
    if t is not cst.Name:
        return None
    out = []
    for d in lookup(node.value, env, scope):
        if d.kind != DefKind.ASSIGN:
            return None
        got = pair_values(res, d.node, d.env, d.scope, leaf, depth + 1)
        if got is None:
            return None
        out.extend(got)
    for d in scope_appends(scope, node.value):
        got = second(d.node, d.env, d.scope) if d.kind == DefKind.ASSIGN else None
        if not got:
            return None
        out.extend(got)
    return out or None


def module_dict_values(
    res: Resolver, call: cst.Call, env: Env, scope, leaf: Leaf, depth: int
) -> Optional[list]:
    """The modules an ``nn.ModuleDict({...})`` / ``nn.ModuleDict(dict(k=...))``
    / ``nn.ModuleDict({k: Attn() for k in names})`` holds."""
    if res.qualname(call.func, env, scope) != MODULE_DICT:
        return _made_container(res, call, env, scope, leaf, depth)
    if not call.args:
        return []  # filled by item assignment: the caller does not see those, so unknown
    if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
        return None
    arg = call.args[0].value
    values: List[cst.BaseExpression] = []
    if isinstance(arg, cst.Dict):
        for el in arg.elements:
            if not isinstance(el, cst.DictElement):
                return None
            values.append(el.value)
    elif isinstance(arg, cst.DictComp):
        values = [arg.value]  # ``{name: Attn() for name in NAMES}``: one module per key
    elif (
        isinstance(arg, cst.Call)
        and res.qualname(arg.func, env, scope) == "builtins.dict"
        and all(a.keyword is not None for a in arg.args)
    ):
        values = [a.value for a in arg.args]
    else:
        return None
    out: list = []
    for v in values:
        got = res.held(v, env, scope, leaf, depth + 1)
        if not got:
            return None
        out.extend(got)
    return out


def _dict_view(call: cst.Call) -> Optional[str]:
    """``"values"`` or ``"items"`` for ``x.values()`` / ``x.items()``."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in ("values", "items") and not call.args:
        return func.attr.value
    return None


def for_element(
    res: Resolver, iterable, index: Tuple[int, ...], env: Env, scope, leaf: Leaf, depth: int
) -> Optional[list]:
    """What the ``for`` target part at ``index`` holds, walking ``enumerate``/``zip``."""
    if not index:
        return res.held_elements(iterable, env, scope, leaf, depth + 1)
    parts = literal_parts(iterable, index)
    if parts is not None:  # ``for nb, layer in ((a, self.one), (b, self.two))``
        return _joined([res.held(p, env, scope, leaf, depth + 1) for p in parts])
    yields = _yields(res, iterable, env, scope)
    if yields:  # ``for blk, mask in self.layer_masks(T)``: what the generator yields
        got = []
        for expr, yenv, yscope in yields:
            part = literal_parts(cst.Tuple([cst.Element(expr)]), index) if index else [expr]
            got.append(res.held(part[0], yenv, yscope, leaf, depth + 1) if part else None)
        return _joined(got)
    if not isinstance(iterable, cst.Call) or any(a.star for a in iterable.args):
        return None
    if index[0] == 1 and _dict_view(iterable) == "items":  # for name, block in self.heads.items()
        return for_element(res, iterable, index[1:], env, scope, leaf, depth + 1)
    qn = res.qualname(iterable.func, env, scope)
    first, rest = index[0], index[1:]
    args = iterable.args
    if (
        qn == "builtins.enumerate"
        and first == 1
        and args
        and args[0].keyword is None
        and len(args) <= 2
    ):  # enumerate(m), enumerate(m, 1), enumerate(m, start=1)
        return for_element(res, args[0].value, rest, env, scope, leaf, depth + 1)
    if qn == "builtins.zip":
        positional = [a for a in args if a.keyword is None]
        if (
            first < len(positional)
            and len(positional) + 1 >= len(args)
            and all(a.keyword is None or a.keyword.value == "strict" for a in args)
        ):
            return for_element(res, positional[first].value, rest, env, scope, leaf, depth + 1)
    return None


def _made_container(res: Resolver, call: cst.Call, env: Env, scope, leaf: Leaf, depth: int):
    """What the container a factory of this file returns holds (``def
    build_mixers(d, h): return nn.ModuleDict({"temporal":
    nn.MultiheadAttention(d, h)})``, then ``self.mixers = build_mixers(d,
    h)``: probe AA's AA18), every return a container of known modules."""
    target = res.own_function(call, env, scope)
    if target is None and getattr(leaf, "made_items", None) is not None:
        return leaf.made_items(call, env, scope)  # a factory of another file (the project's)
    fscope = res.flow.functions.get(id(target)) if target is not None else None
    if fscope is None or not fscope.returns or depth > 6:
        return None
    found = [res.held_elements(ret, renv, fscope, leaf, depth + 1) for ret, renv in fscope.returns]
    return _joined(found)


def _yields(res: Resolver, call, env: Env, scope) -> list:
    """(value, env, scope) of each ``yield`` of the generator of this file a
    loop's call runs (a function, or a method called on ``self``)."""
    target = res.own_function(call, env, scope) if isinstance(call, cst.Call) else None
    fscope = res.flow.functions.get(id(target)) if target is not None else None
    return [(e, yenv, fscope) for e, yenv in fscope.yields] if fscope is not None else []


def literal_parts(iterable, index: Tuple[int, ...]) -> Optional[list]:
    """The part at ``index`` of each item of a literal tuple or list of
    tuples (``((time_nb, self.temporal_layers), (space_nb,
    self.spatial_layers))`` at ``(1,)``: both containers); None for any
    other iterable, or an item without that part."""
    if not index or not isinstance(iterable, (cst.Tuple, cst.List)) or not iterable.elements:
        return None
    out = []
    for el in iterable.elements:
        node = el.value
        for i in index:
            if isinstance(el, cst.StarredElement) or not isinstance(node, (cst.Tuple, cst.List)):
                return None
            items = node.elements
            if i >= len(items) or isinstance(items[i], cst.StarredElement):
                return None
            node = items[i].value
        out.append(node)
    return out


def def_elements(res: Resolver, d, leaf: Leaf, depth: int) -> Optional[list]:
    """What the container a definition binds holds: an assignment's value's
    items, or the items of the containers a loop's target part holds (``for
    layer in layers`` after ``for nb, layers in ((a, self.one), (b,
    self.two))``); None for any other definition."""
    if d.kind == DefKind.ASSIGN:
        return res.held_elements(d.node, d.env, d.scope, leaf, depth + 1)
    if d.kind != DefKind.FOR:
        return None
    parts = literal_parts(d.node, d.index)
    if parts is None:
        return None
    return _joined([res.held_elements(p, d.env, d.scope, leaf, depth + 1) for p in parts])


def _joined(found: list) -> Optional[list]:
    """All of ``found``'s lists in one, or None when one of them is empty or None."""
    if not all(found):
        return None
    return [x for got in found for x in got]


# getattr / setattr with a name template ------------------------------------------


def template(node: cst.BaseExpression) -> Optional[Template]:
    if isinstance(node, cst.SimpleString):
        try:
            value = node.evaluated_value
        except Exception:
            return None
        return (value,) if isinstance(value, str) else None
    if isinstance(node, cst.FormattedString):
        parts: List[Optional[str]] = []
        for part in node.parts:
            if isinstance(part, cst.FormattedStringText):
                if "{" in part.value or "\\" in part.value:
                    return None  # escapes: not worth the risk
                parts.append(part.value)
            else:
                parts.append(None)
        return tuple(parts)
    return None


def _regex(tpl: Template) -> "re.Pattern":
    return re.compile("".join(".*" if p is None else re.escape(p) for p in tpl) + r"\Z", re.S)


def _self_call(res: Resolver, call: cst.Call, name: str, arity: int, env: Env, scope):
    """The class whose ``self`` is the first argument of ``name(self, ...)``."""
    if (
        not isinstance(call.func, cst.Name)
        or call.func.value != name
        or len(call.args) != arity
        or any(a.star or a.keyword for a in call.args)
    ):
        return None
    from .flow import lookup

    if lookup(name, env, scope):
        return None  # a local getattr/setattr shadows the builtin
    first = call.args[0].value
    if not isinstance(first, cst.Name):
        return None
    return res.self_class(cst.Attribute(value=first, attr=cst.Name("x")), env, scope)


def fetched(
    res: Resolver, call: cst.Call, env: Env, scope, leaf: Leaf, depth: int
) -> Optional[list]:
    """``getattr(self, <template>)``: the values of the matching ``setattr`` calls."""
    owner = _self_call(res, call, "getattr", 2, env, scope)
    if owner is None:
        return None
    tpl = template(call.args[1].value)
    if tpl is None:
        return None
    if None not in tpl:  # ``getattr(self, "attn")``: the attribute itself
        name = "".join(tpl)
        if any(name in cls.attrs for cls in res.base_classes(owner)):
            plain = cst.Attribute(value=call.args[0].value, attr=cst.Name(name))
            return res.held(plain, env, scope, leaf, depth + 1)
    classes = {id(c.node) for c in res.base_classes(owner)}
    pattern = _regex(tpl)
    for cls in res.base_classes(owner):
        if any(pattern.match(attr) for attr in cls.attrs):
            return None  # a plain attribute the template may name
    out: list = []
    for site in res.flow.calls:
        set_owner = _self_call(res, site.node, "setattr", 3, site.env, site.scope)
        if set_owner is None or id(set_owner.node) not in classes:
            continue
        set_tpl = template(site.node.args[1].value)
        if set_tpl is None:
            names = _looped_names(site.node.args[1].value, site.env, site.scope)
            if names is None:
                return None  # a setattr whose name we cannot read may name it
            if not any(pattern.match(n) for n in names):
                continue  # ``for name in ("text", "image"): setattr(self, name, ...)``
            return None
        if set_tpl != tpl:
            if pattern.match("".join(p or "" for p in set_tpl)) or _regex(set_tpl).match(
                "".join(p or "" for p in tpl)
            ):
                return None  # another template that may name the same attribute
            continue
        got = res.held(site.node.args[2].value, site.env, site.scope, leaf, depth + 1)
        if not got:
            return None
        out.extend(got)
    return out or None


def _looped_names(node: cst.BaseExpression, env: Env, scope) -> Optional[List[str]]:
    """The strings a loop variable takes, for ``for name in ("a", "b"):``."""
    from .flow import lookup

    if not isinstance(node, cst.Name):
        return None
    defs = lookup(node.value, env, scope)
    if len(defs) != 1 or defs[0].kind != "for" or defs[0].index not in ((), None):
        return None
    seq = defs[0].node
    if not isinstance(seq, (cst.Tuple, cst.List)):
        return None
    out = []
    for el in seq.elements:
        got = template(el.value) if not isinstance(el, cst.StarredElement) else None
        if got is None or None in got:
            return None
        out.append("".join(got))
    return out


def is_getattr(node: cst.CSTNode) -> bool:
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value == "getattr"
    )


# containers changed in place ------------------------------------------------------
_MUTATORS = {"update", "pop", "popitem", "setdefault", "clear", "__setitem__", "__delitem__"}


def mutated_in_place(res: Resolver, owner, attr: str) -> bool:
    """Whether a method of ``owner`` (or of its base classes here) replaces an
    item of ``self.<attr>``: ``self.attn["x"] = m``, ``del self.attn["x"]``,
    ``self.attn.update(...)``. Then the container's entries are unknown."""
    cache = res.reach_cache
    for cls in res.base_classes(owner):
        key = id(cls.node)
        if key not in cache:
            cache[key] = _mutated_attrs(cls.node)
        if attr in cache[key]:
            return True
    return False


def _self_attr_name(node) -> Optional[str]:
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
        return node.attr.value
    return None


def _mutated_attrs(class_node: cst.CSTNode) -> set:
    """The ``self.NAME`` containers the class changes in place: an item or a
    slice assigned, augmented or deleted (``self.NAME[k] = ...``), or a
    method that replaces entries called (``self.NAME.update(...)``)."""
    attrs: set = set()
    for node in walk(class_node):
        t = type(node)
        if t in (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.Del):
            attrs |= _items_changed(node.target)
        elif t is cst.Call:
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in _MUTATORS:
                name = _self_attr_name(func.value)
                if name is not None:
                    attrs.add(name)
    return attrs


def _items_changed(target) -> set:
    """``{"NAME"}`` for an assignment target ``self.NAME[k]`` (also inside a
    tuple or list of targets)."""
    if isinstance(target, (cst.Tuple, cst.List)):
        out: set = set()
        for el in target.elements:
            out |= _items_changed(el.value)
        return out
    if isinstance(target, cst.Subscript):
        name = _self_attr_name(target.value)
        if name is not None:
            return {name}
    return set()


def imported_items(resolver, func, env, scope):
    """The torch attention module (its spec) each item of the container that
    a factory of another project file ``func`` imports returns is (``return
    nn.ModuleList([nn.MultiheadAttention(...) ...])``), else None."""
    made = resolver.imported_module
    qn = made(func, env, scope) if made is not None else None
    return torch_api.module_spec(qn) if getattr(qn, "items", False) else None


def chosen(res: Resolver, func, env: Env, scope) -> Optional[list]:
    """The classes of this file a local bound once to a choice of them may
    build (``make = FastSelfAttention if fast else SlowAttention``, then
    ``make(16, 2)``), or an ``__init__`` parameter names (``local_cls()``,
    each class the file's constructions pass or its default): each of them;
    None for anything else."""
    if not isinstance(func, cst.Name):
        return None
    defs = lookup(func.value, env, scope)
    if len(defs) == 1 and defs[0].kind == DefKind.PARAM and _class_default(res, defs[0]):
        passed = init_arguments(res, defs[0])  # ``local_cls()``: what each construction passes
        out = [res.local_class(e, e_env, e_scope) for e, e_env, e_scope in passed or ()]
        if passed is None:  # built in other files only: what they pass, by name
            out = _handed_classes(res, defs[0])
        return None if not out or None in out else list({id(c): c for c in out}.values())
    if len(defs) != 1 or defs[0].kind != DefKind.ASSIGN or not isinstance(defs[0].node, cst.IfExp):
        return None
    out = [res.local_class(node, defs[0].env, defs[0].scope) for node in choices(defs[0].node)]
    return None if None in out else out


def init_arguments(res: Resolver, d) -> Optional[list]:
    """For the parameter ``d`` of a class's ``__init__``, what each
    construction of the class in this file passes it, the default where
    one leaves it out: ``(expression, env, scope)`` each; None when the
    class is built nowhere in the file, a construction splats, or leaves
    out a parameter without a default.  For a parameter of a module-level
    function: what each call of it in the file passes (``function_calls``)."""
    func, scope = d.extra, d.scope
    info = scope.cls if scope is not None else None
    if not isinstance(d.node, cst.Param) or not isinstance(func, cst.FunctionDef):
        return None
    if info is None:  # ``*args``, ``**kwargs``: not read; a keyword-only one by keyword
        names, name = _positions(func), d.node.name.value
        sites = function_calls(res, func, scope) if name in names or _kwonly(func, name) else []
        return _passed(sites, d, names.index(name) if name in names else None) if sites else None
    if func.name.value != "__init__" or info.methods.get("__init__") is not func:
        return None
    names = _positions(func)
    name = d.node.name.value
    index = names.index(name) - 1 if name in names[1:] else None  # after self
    return _passed(res.constructions(info), d, index)


def _positions(func: cst.FunctionDef) -> List[str]:
    p = func.params
    return [x.name.value for x in list(p.posonly_params) + list(p.params)]


def _kwonly(func: cst.FunctionDef, name: str) -> bool:
    return any(x.name.value == name for x in func.params.kwonly_params)


def function_calls(res: Resolver, func: cst.FunctionDef, scope) -> list:
    """The calls of this file of the module-level function ``func``, by its
    name (``score(LM(), ids, 0)``: probe AO's FALSE01, a module handed to a
    helper that calls it); empty when the name is bound more than once, or
    handed anywhere but called (a callback whose caller is not read)."""
    parent = scope.parent if scope is not None else None
    if parent is None or parent.kind != ScopeKind.MODULE:
        return []
    name = func.name.value
    defs = parent.final_env.get(name, ())
    if len(defs) != 1 or defs[0].node is not func:
        return []
    key = ("called", id(func))
    if key not in res._built:
        sites = [
            site
            for site in res.flow.calls
            if isinstance(site.node.func, cst.Name)
            and site.node.func.value == name
            and lookup(name, site.env, site.scope) == defs
        ]
        res._built[key] = sites if _only_called(res, name, len(sites)) else []
    return res._built[key]


def _only_called(res: Resolver, name: str, calls: int) -> bool:
    """The file names ``name`` only to define and call it."""
    module = res.flow.module_scope.node
    return calls > 0 and word_count(name, module_text(module)) == calls + 1


def _passed(sites, d, index: Optional[int]) -> Optional[list]:
    name = d.node.name.value
    out: list = []
    for site in sites:
        given = None
        for i, arg in enumerate(site.node.args):
            if arg.star:
                return None
            if (arg.keyword is None and i == index) or (
                arg.keyword is not None and arg.keyword.value == name
            ):
                given = arg.value
        if given is not None:
            out.append((given, site.env, site.scope))
        elif d.node.default is not None and not tree.is_none(d.node.default):
            out.append((d.node.default, d.env, d.scope.parent or d.scope))
        else:
            return None
    return out or None


def _class_default(res: Resolver, d) -> bool:
    """The parameter's default is a class of this file (``local_cls=Neighbours``;
    timm's ``norm_layer=nn.LayerNorm`` is not: its constructions are not read)."""
    default = d.node.default if isinstance(d.node, cst.Param) else None
    scope = d.scope.parent if d.scope is not None else None
    return default is not None and res.local_class(default, d.env, scope or d.scope) is not None


def _handed_classes(res: Resolver, d) -> list:
    """The classes of this file that the project's constructions of a
    module-level class hand its ``__init__`` parameter ``d`` (the default
    where one leaves it out: ``LocalBlock(local_cls=FilledAttention)``
    beside ``LocalBlock()``); a None among them for one that is no class of
    this file, or when the project does not say."""
    from .program.built import MISSING
    from .values import project_of

    scope, func = d.scope, d.extra
    info = scope.cls if scope is not None else None
    if info is None or info.scope is None or info.scope.kind != "module":
        return []
    if not isinstance(func, cst.FunctionDef) or func.name.value != "__init__":
        return []
    project = project_of(scope)
    ask = getattr(project, "classes_passed", None)
    names = ask(info.name, d.node.name.value) if ask is not None else None
    if not names:
        return []
    by_name = {c.name: c for c in res.flow.classes.values() if c.scope is info.scope}
    out = []
    for name in names:
        if name == MISSING:
            default = d.node.default if isinstance(d.node, cst.Param) else None
            out.append(res.local_class(default, d.env, info.scope) if default else None)
        else:
            out.append(by_name.get(name))
    return out


def registered(res: Resolver, func, env: Env, scope) -> Optional[list]:
    """The classes of this file a registry call may build (``BLOCKS[kind](d,
    h)`` with ``BLOCKS = {"light": LightBlock, "full": FullBlock}`` bound
    once): the one under a literal key, else each of them; None when the
    dict holds anything else or is changed elsewhere."""
    if not (isinstance(func, cst.Subscript) and isinstance(func.value, cst.Name)):
        return None
    defs = lookup(func.value.value, env, scope)
    if len(defs) != 1 or defs[0].kind != DefKind.ASSIGN or not isinstance(defs[0].node, cst.Dict):
        return None
    if defs[0].scope is None or scope_appends(defs[0].scope, func.value.value):
        return None
    index = func.slice[0].slice if len(func.slice) == 1 else None
    key = literal(index.value) if isinstance(index, cst.Index) else UNKNOWN
    out = []
    for el in defs[0].node.elements:
        if not isinstance(el, cst.DictElement):
            return None
        info = res.local_class(el.value, defs[0].env, defs[0].scope)
        if info is None:
            return None
        if key is UNKNOWN or literal(el.key) == key:
            out.append(info)
    return out or None


def held_function(res, func, env, scope) -> Optional[Tuple[cst.Name, Env, Any]]:
    """``self.expand(mask, h)`` where the class sets ``self.expand =
    tile_heads`` once, ``tile_heads`` a function of this file or an import
    (probe AB's AB11): the name, with the place that binds it; the call
    then runs that function, no ``self`` passed."""
    if not isinstance(func, cst.Attribute):
        return None
    defs = res.self_attr_defs(func, env, scope)
    if not defs or len(defs) != 1 or defs[0].kind != DefKind.ASSIGN:
        return None
    name = defs[0].node
    # ``heads_interleaved if interleave else heads_first``, the program fixing it
    name = fixed_side(name, defs[0].env, defs[0].scope, cst.Name) or name
    if not isinstance(name, cst.Name):
        return None
    bound = lookup(name.value, defs[0].env, defs[0].scope)
    if len(bound) != 1 or bound[0].kind not in (DefKind.DEF, DefKind.IMPORT):
        return None
    return name, defs[0].env, defs[0].scope


def property_held(res, node: cst.Attribute, env, scope, leaf, depth: int) -> Optional[list]:
    """``self.cross(...)`` where the class (or a base of this file) defines
    ``cross`` as a ``@property`` whose one return gives a module (``return
    self._cross``: probe AC's AC23): what that return holds."""
    owner = res.self_class(node, env, scope)
    method = res.method_of(owner, node.attr.value) if owner is not None else None
    if method is None or not is_property(method):
        return None
    fscope = res.flow.functions.get(id(method))
    if fscope is None or len(fscope.returns) != 1:
        return None
    ret, renv = fscope.returns[0]
    return res.held(ret, renv, fscope, leaf, depth + 1)
