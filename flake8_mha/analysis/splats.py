"""Star-arguments whose contents the code shows: ``f(*args)`` after
``args = (q, k, v, mask)`` or ``args = (*args, mask)``, and ``f(**kw)`` after
``kw = dict(attn_mask=mask)`` or ``kw = {"attn_mask": mask}``.

``expand_call`` rewrites such a call the way Python passes it: ``*args``
becomes the positional arguments ``args[0], args[1], ...`` and ``**kw`` the
keyword arguments ``attn_mask=kw["attn_mask"], ...``, so the one argument
binder (``torch_api.Signature.bind``, ``callgraph.bind_call``) binds them and
the analyses evaluate ``args[i]``/``kw["k"]`` through the literal (``element``
and ``item`` below, which the evaluators call).

Precision over recall:

- Only positions that can be counted are bound: a splat of unknown length
  (a ``*args`` parameter, a call's result) inside a literal keeps its place
  as a splat, and nothing after it is bound.  ``(x, *rest, mask)`` binds
  ``x`` alone.
- A name bound by several definitions is expanded only as far as all of
  them agree on the count (each position is evaluated as the join of the
  definitions, as for any name).
- A list or dict changed in place in its function (``args.append(m)``,
  ``kw["k"] = m``, ``kw.update(...)``, ``del kw["k"]``) is not expanded.
- ``**kw`` is expanded only when every key is known: string keys, no
  ``**other`` inside the literal.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import libcst as cst

from ..core.walk import LIST_MUTATORS
from .flow import Env, Scope, children, lookup
from .records import record_fields
from .tree import walk

MAX_DEPTH = 8
_SEQUENCES = (cst.Tuple, cst.List)
_DICT_MUTATORS = {"update", "pop", "popitem", "clear", "setdefault"}

# One counted position of a sequence: the element expression and the place
# (env, scope) where it was written.
Element = Tuple[cst.BaseExpression, Env, Optional[Scope]]


# --------------------------------------------------------------------------- sequences


def elements(
    expr: cst.BaseExpression, env: Env, scope: Optional[Scope], depth: int = 0
) -> Tuple[List[List[Element]], bool]:
    """The positions of a tuple/list value that can be counted, each with
    every expression that may sit there, and whether that is the whole value.

    ``([], False)`` when nothing is known."""
    if depth > MAX_DEPTH:
        return [], False
    if isinstance(expr, _SEQUENCES):
        out: List[List[Element]] = []
        for el in expr.elements:
            if isinstance(el, cst.StarredElement):
                inner, complete = elements(el.value, env, scope, depth + 1)
                out.extend(inner)
                if not complete:
                    return out, False
            else:
                out.append([(el.value, env, scope)])
        return out, True
    if isinstance(expr, cst.Name):
        defs = lookup(expr.value, env, scope)
        if not defs or any(d.kind != "assign" for d in defs):
            return [], False
        shapes = []
        for d in defs:
            if isinstance(d.node, cst.List) and mutated(expr.value, d.scope, LIST_MUTATORS):
                return [], False
            shapes.append(elements(d.node, d.env, d.scope, depth + 1))
        return _agree(shapes)
    return [], False


def _agree(shapes: Sequence[Tuple[List[List[Element]], bool]]) -> Tuple[List[List[Element]], bool]:
    """The positions every definition has: the shortest count, complete only
    when every definition is complete with the same length."""
    n = min(len(s) for s, _ in shapes)
    complete = all(c for _, c in shapes) and all(len(s) == n for s, _ in shapes)
    merged = [[e for s, _ in shapes for e in s[i]] for i in range(n)]
    return merged, complete


def loop_items(iterated, index: tuple, env: Env, scope: Optional[Scope]) -> Optional[List[Element]]:
    """Every value a loop's target (its place ``index`` in the target
    tuple) takes over a literal or countable sequence: ``for m in (a, b)``;
    ``for blk, m in zip(self.blocks, (pad_keep, causal_keep))`` (probe AN's
    AN15); ``for i, m in enumerate(masks)``.  None when they cannot all be
    counted."""
    if isinstance(iterated, cst.Call) and isinstance(iterated.func, cst.Name) and index:
        name = iterated.func.value
        args = iterated.args
        if lookup(name, env, scope) or any(a.star or a.keyword is not None for a in args):
            return None
        if name == "zip" and index[0] < len(args):
            return loop_items(args[index[0]].value, index[1:], env, scope)
        if name == "enumerate" and len(args) == 1 and index[0] == 1:
            return loop_items(args[0].value, index[1:], env, scope)
        return None
    if index:
        return None
    got, complete = elements(iterated, env, scope)
    if not complete or not got:
        return None
    return [e for position in got for e in position]


def element(
    expr: cst.BaseExpression, index: int, env: Env, scope: Optional[Scope]
) -> Optional[List[Element]]:
    """Every expression that may sit at position ``index`` of a tuple/list
    value, or None when that position cannot be counted."""
    if index < 0:
        return None
    got, _ = elements(expr, env, scope)
    return got[index] if index < len(got) else None


# --------------------------------------------------------------------------- dicts


def items(
    expr: cst.BaseExpression, env: Env, scope: Optional[Scope], depth: int = 0
) -> Optional[dict]:
    """``key -> [Element]`` of a dict value whose keys are all known, else None."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(expr, cst.Dict):
        out: dict = {}
        for el in expr.elements:
            if not isinstance(el, cst.DictElement):
                return None  # **other: keys unknown
            key = _string(el.key)
            if key is None or not key.isidentifier():
                return None
            out[key] = [(el.value, env, scope)]
        return out
    if isinstance(expr, cst.Call) and _is_builtin_dict(expr.func, env, scope):
        out = {}
        for a in expr.args:
            if a.keyword is None or a.star:
                return None
            out[a.keyword.value] = [(a.value, env, scope)]
        return out
    if isinstance(expr, cst.Name):
        defs = lookup(expr.value, env, scope)
        if not defs or any(d.kind != "assign" for d in defs):
            return None
        merged: Optional[dict] = None
        for d in defs:
            stored = None
            if mutated(expr.value, d.scope, _DICT_MUTATORS):
                stored = _item_stores(expr.value, d.scope)  # ``masks["pad"] = ...`` only
                if stored is None:
                    return None
            got = items(d.node, d.env, d.scope, depth + 1)
            for key, values in (stored or {}).items():
                if got is not None:
                    got = {**got, key: got.get(key, []) + values}
            if got is None or (merged is not None and set(got) != set(merged)):
                return None
            if merged is None:
                merged = {k: list(v) for k, v in got.items()}
            else:
                for k, v in got.items():
                    merged[k].extend(v)
        return merged
    return None


def item(
    expr: cst.BaseExpression, key: str, env: Env, scope: Optional[Scope]
) -> Optional[List[Element]]:
    got = items(expr, env, scope)
    if got is None:
        return None
    return got.get(key)


def spread_value(expr: cst.BaseExpression, env: Env, scope: Optional[Scope]):
    """For ``kw["k"]`` as ``expand_call`` writes it, of a dict written once
    in this scope: the value written there, when it is a name that means
    the same thing at the call (``{"is_causal": is_causal}``), or a literal;
    else ``expr`` itself.  A rule that reads a parameter by its name
    (MHA006's flag handed on) then sees it."""
    if not (isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name)):
        return expr
    if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index):
        return expr
    key = _string(expr.slice[0].slice.value)
    got = item(expr.value, key, env, scope) if key is not None else None
    if not got or len(got) != 1:
        return expr
    value, venv, vscope = got[0]
    if vscope is not scope:
        return expr
    if isinstance(value, (cst.Integer, cst.Float, cst.SimpleString)):
        return value
    if isinstance(value, cst.Name):
        here = lookup(value.value, env, scope)
        there = lookup(value.value, venv, vscope)
        if {id(d) for d in here} == {id(d) for d in there}:
            return value
    return expr


def dataclass_fields(expr, env, scope) -> Optional[List[str]]:
    """The fields of ``asdict(cfg)`` (``dataclasses.asdict``) where ``cfg`` is
    a parameter annotated with a ``@dataclass`` of this file that has no
    base class (probe AC's AC29: ``super().__init__(**asdict(cfg))`` with no
    ``batch_first`` field carries none); None otherwise."""
    if not (
        isinstance(expr, cst.Call)
        and len(expr.args) == 1
        and not expr.args[0].star
        and expr.args[0].keyword is None
        and isinstance(expr.args[0].value, cst.Name)
    ):
        return None
    func = expr.func
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
    if name != "asdict":
        return None
    params = lookup(expr.args[0].value.value, env, scope)
    if len(params) != 1 or params[0].kind != "param":
        return None
    note = params[0].node.annotation
    cls = note.annotation if note is not None else None
    found = lookup(cls.value, env, scope) if isinstance(cls, cst.Name) else ()
    if len(found) != 1 or found[0].kind != "class":
        return None
    node: cst.ClassDef = found[0].node
    fields = record_fields(node)
    if fields is None or node.bases:  # a NamedTuple has one: no ``asdict``
        return None
    return [f.target.value for f in fields]


def splat_keys(call: cst.Call, env, scope, project=None) -> Optional[frozenset]:
    """The keywords the call's ``**`` splats may carry when each is
    ``**asdict(cfg)`` of a dataclass of the file (``dataclass_fields``), a
    dict whose keys are all known (``**LAYER_KW`` of ``LAYER_KW =
    dict(dropout=0.0)``: probe AN's AN27), or, with ``project``, such a dict
    imported from a project file; None otherwise."""
    out: set = set()
    for a in call.args:
        if a.star == "**":
            fields = dataclass_fields(a.value, env, scope)
            if fields is None:
                got = items(a.value, env, scope)
                fields = list(got) if got is not None else None
            if fields is None and project is not None:
                fields = _imported_keys(a.value, env, scope, project)
            if fields is None:
                return None
            out.update(fields)
    return frozenset(out)


def _imported_keys(expr, env, scope, project) -> Optional[frozenset]:
    ask = getattr(project, "imported_dict_keys", None)
    if ask is None or not isinstance(expr, cst.Name):
        return None
    defs = lookup(expr.value, env, scope)
    if len(defs) != 1 or defs[0].kind != "import":
        return None
    try:
        return ask(defs[0].node, expr.value)
    except (OSError, ValueError, RecursionError):
        return None


def _is_builtin_dict(func, env, scope) -> bool:
    return isinstance(func, cst.Name) and func.value == "dict" and not lookup("dict", env, scope)


def _string(node) -> Optional[str]:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


# --------------------------------------------------------------------------- in-place changes


def mutated(name: str, scope: Optional[Scope], methods, nested: bool = False) -> bool:
    """``name`` is changed in place in its scope's body (with ``nested``, in
    the functions nested in it too: a module's list a function appends to):
    a mutating method, an item assignment or deletion, ``+=``."""
    if scope is None:
        return True
    for n in walk(scope.node) if nested else _own_nodes(scope):
        if isinstance(n, cst.Attribute) and _names(n.value, name) and n.attr.value in methods:
            return True
        if isinstance(n, (cst.Assign, cst.Del, cst.AugAssign)):
            targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target]
            for t in targets:
                if isinstance(t, cst.Subscript) and _names(t.value, name):
                    return True
    return False


def _own_nodes(scope: Scope):
    """The nodes of a scope's body, not those of the functions, classes and
    lambdas nested in it."""
    root = scope.node
    stack = list(children(root.body)) if isinstance(root, cst.FunctionDef) else list(children(root))
    while stack:
        n = stack.pop()
        if isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        yield n
        stack.extend(children(n))


def _item_stores(name: str, scope: Scope) -> Optional[dict]:
    """``key -> [Element]`` of the ``name["key"] = value`` statements of the
    scope (probe AM's AM17: ``masks = {}`` then ``masks["key_padding"] =
    ids != PAD_ID``), each value where it is written; None when the dict is
    changed otherwise too (a method, ``del``, ``+=``, a key not a string), or
    on some paths only (a store inside an ``if`` or a loop)."""
    out: dict = {}
    where = {id(d.node): d for d in scope.appends.get(name, ())}
    top = set()
    root = scope.node
    body = root.body.body if isinstance(root, cst.FunctionDef) else getattr(root, "body", ())
    for stmt in body if isinstance(body, (list, tuple)) else ():
        if isinstance(stmt, cst.SimpleStatementLine):
            top.update(id(n) for n in stmt.body if isinstance(n, cst.Assign))
    for n in _own_nodes(scope):
        if (
            isinstance(n, cst.Attribute)
            and _names(n.value, name)
            and n.attr.value in _DICT_MUTATORS
        ):
            return None
        if isinstance(n, (cst.Del, cst.AugAssign)) and _names(
            getattr(n.target, "value", None), name
        ):
            return None
        if isinstance(n, cst.Assign):
            for t in n.targets:
                t = t.target
                if isinstance(t, cst.Subscript) and _names(t.value, name):
                    index = t.slice[0].slice if len(t.slice) == 1 else None
                    key = _string(index.value) if isinstance(index, cst.Index) else None
                    d = where.get(id(n.value))
                    if key is None or d is None or len(n.targets) != 1 or id(n) not in top:
                        return None
                    out.setdefault(key, []).append((n.value, d.env, d.scope))
    return out


def _names(node, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name


# --------------------------------------------------------------------------- calls


def expand_call(
    call: cst.Call, env: Env, scope: Optional[Scope], positional: bool = True
) -> cst.Call:
    """``call`` with its countable ``*x`` and fully known ``**kw`` spread into
    ``x[i]`` positional and ``k=kw["k"]`` keyword arguments (the call itself
    when there is nothing to spread); ``positional`` False: ``**kw`` only."""
    if not any(a.star for a in call.args):
        return call
    out: List[cst.Arg] = []
    changed = False
    for a in call.args:
        if a.star == "*" and positional:
            got, complete = elements(a.value, env, scope)
            for i in range(len(got)):
                out.append(cst.Arg(_subscript(a.value, cst.Integer(str(i)))))
            changed = changed or bool(got) or complete
            if not complete:
                out.append(a)  # the rest stays a splat: nothing after it is bound
        elif a.star == "**":
            got_items = items(a.value, env, scope)
            if got_items is None:
                got_items = _own_items(a.value, env, scope)  # ``**self.layer_kwargs``
            if got_items is None:
                out.append(a)
                continue
            changed = True
            for key, entries in got_items.items():
                value = _subscript(a.value, cst.SimpleString(repr(key)))
                if len(entries) == 1 and (
                    isinstance(a.value, cst.Dict) or _is_literal(entries[0][0])
                ):  # ``**{"is_causal": True}``: the value written there
                    value = entries[0][0]
                out.append(cst.Arg(value, keyword=cst.Name(key)))
        else:
            out.append(a)
    return call.with_changes(args=out) if changed else call


def _is_literal(node) -> bool:
    """A number, a string, ``True``/``False``/``None``."""
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    return isinstance(node, cst.Name) and node.value in ("True", "False", "None")


def _own_items(expr, env: Env, scope: Optional[Scope]) -> Optional[dict]:
    """The items of ``self.<attr>`` that its class sets once to a dict of
    known keys (``self.layer_kwargs = {"is_causal": True}``) and never
    changes in place (``self.layer_kwargs[k] = v``, ``.update(...)``)."""
    if not (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name)):
        return None
    owners = lookup(expr.value.value, env, scope)
    if len(owners) != 1 or owners[0].kind != "self" or owners[0].extra is None:
        return None
    cls = owners[0].extra
    attr = expr.attr.value
    defs = cls.attrs.get(attr) or []
    if len(defs) != 1 or defs[0].kind != "assign" or _attr_changed(cls.node, attr):
        return None
    return items(defs[0].node, defs[0].env, defs[0].scope)


def _attr_changed(root, attr: str) -> bool:
    """``self.<attr>`` changed in place anywhere in the class: an item set or
    deleted, a mutating method called, ``+=``/``|=``."""
    stack = list(children(root))
    while stack:
        n = stack.pop()
        if (
            isinstance(n, cst.Attribute)
            and n.attr.value in _DICT_MUTATORS
            and isinstance(n.value, cst.Attribute)
            and n.value.attr.value == attr
        ):
            return True
        if isinstance(n, (cst.Assign, cst.Del, cst.AugAssign)):
            targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target]
            for tg in targets:
                if isinstance(tg, cst.Subscript) and isinstance(tg.value, cst.Attribute):
                    if tg.value.attr.value == attr:
                        return True
                if isinstance(n, cst.AugAssign) and isinstance(tg, cst.Attribute):
                    if tg.attr.value == attr:
                        return True
        stack.extend(children(n))
    return False


def _subscript(value: cst.BaseExpression, index: cst.BaseExpression) -> cst.Subscript:
    return cst.Subscript(value, [cst.SubscriptElement(cst.Index(index))])


def spread_index(node: cst.Subscript) -> Optional[int]:
    """``i`` of ``x[i]`` with a literal non-negative integer ``i``."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    value = node.slice[0].slice.value
    if isinstance(value, cst.Integer):
        return int(value.evaluated_value)
    return None
