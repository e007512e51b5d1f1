"""Static values: what an expression is known to equal, or UNKNOWN.

Known: literals, names whose every reaching definition is known (module
constants, locals assigned once), ``self.<attr>`` set to the same known value
everywhere in its class, module-level constants imported from another file
of the project, an ``__init__`` parameter every construction of its class
in the project passes alike, a parameter every call of its function (or
module's ``forward``) in the project leaves off (the engine gives the
module scope the project), and arithmetic on those.  Parameters, config
objects and anything from outside the project are unknown; unknown never
fires a rule.
"""

from __future__ import annotations

from contextlib import contextmanager

import operator
from typing import Callable, Dict, List, Optional, Tuple

import libcst as cst

from ..core.lines import word_count
from .env import worlds
from .flow import Def, DefKind, Env, Scope, ScopeKind, lookup, module_scope, subclasses_in
from .sequences import pass_value, sequence_of
from .tree import is_none, module_text, walk


class _Unknown:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:  # guard against accidental truth tests
        raise TypeError("UNKNOWN has no truth value")


UNKNOWN = _Unknown()
MAX_DEPTH = 24

_BINOPS: Dict[type, Callable] = {
    cst.Add: operator.add,
    cst.Subtract: operator.sub,
    cst.Multiply: operator.mul,
    cst.FloorDivide: operator.floordiv,
    cst.Divide: operator.truediv,
    cst.Modulo: operator.mod,
    cst.Power: operator.pow,
}
_NUMBER = (int, float)


def literal(node: cst.CSTNode):
    """The value of a literal node, else UNKNOWN (no name lookups)."""
    t = type(node)
    if t is cst.Integer or t is cst.Float:
        return node.evaluated_value
    if t is cst.Name:
        return {"True": True, "False": False, "None": None}.get(node.value, UNKNOWN)
    if t is cst.SimpleString:
        try:
            return node.evaluated_value
        except Exception:
            return UNKNOWN
    if t is cst.UnaryOperation and isinstance(node.operator, cst.Minus):
        inner = literal(node.expression)
        if isinstance(inner, _NUMBER) and not isinstance(inner, bool):
            return -inner
    return UNKNOWN


def value_of(node: cst.CSTNode, env: Env, scope: Optional[Scope], depth: int = 0):
    """The static value of ``node`` evaluated at a point with ``env``."""
    if depth > MAX_DEPTH:
        return UNKNOWN
    t = type(node)
    if t is cst.Name:
        if node.value in ("True", "False", "None"):
            return literal(node)
        return _defs_value(lookup(node.value, env, scope), scope, node.value, depth)
    if t in (cst.Integer, cst.Float, cst.SimpleString):
        return literal(node)
    if t is cst.Subscript:  # ``CFG["heads"]`` of a dict the code writes out (probe AD's AD24)
        return _item_value(node, env, scope, depth)
    if t is cst.UnaryOperation:
        inner = value_of(node.expression, env, scope, depth + 1)
        if inner is UNKNOWN:
            return UNKNOWN
        op = type(node.operator)
        if op is cst.Minus and isinstance(inner, _NUMBER):
            return -inner
        if op is cst.Plus and isinstance(inner, _NUMBER):
            return +inner
        if op is cst.Not:
            return not inner
        return UNKNOWN
    if t is cst.BinaryOperation:
        fn = _BINOPS.get(type(node.operator))
        if fn is None:
            return UNKNOWN
        left = value_of(node.left, env, scope, depth + 1)
        if not isinstance(left, _NUMBER):
            return UNKNOWN
        right = value_of(node.right, env, scope, depth + 1)
        if not isinstance(right, _NUMBER):
            return UNKNOWN
        if fn is operator.pow and not (abs(right) <= 64 and abs(left) < 1e6):
            return UNKNOWN  # ``10 ** 10 ** 9`` would take the linter minutes
        try:
            result = fn(left, right)
        except (ArithmeticError, ValueError, OverflowError):
            return UNKNOWN
        if isinstance(result, (int, float)) and abs(result) < 1e18:
            return result
        return UNKNOWN
    if t is cst.BooleanOperation:  # ``self.causal or causal``: Python's own short circuit
        left = value_of(node.left, env, scope, depth + 1)
        if left is UNKNOWN:
            return UNKNOWN
        if bool(left) == isinstance(node.operator, cst.Or):
            return left
        return value_of(node.right, env, scope, depth + 1)
    if t is cst.Call:
        if _named(node.func, "len") and len(node.args) == 1 and not node.args[0].star:
            got = sequence_of(node.args[0].value, env, scope, value_of, depth + 1)
            return UNKNOWN if got is None else len(got)
        return _keyword_value(node, env, scope, depth)
    if t is cst.Attribute and isinstance(node.value, cst.Name):
        owners = lookup(node.value.value, env, scope)
        if owners and all(d.kind == DefKind.SELF for d in owners):
            cls = owners[0].extra
            defs = cls.attrs.get(node.attr.value)
            if defs:
                pinned = _AS_SUBCLASS[0]
                if pinned is not None and pinned[0] is cls:
                    return _subclass_value(pinned[1], cls, node.attr.value, defs, scope, depth)
                # and what the file's subclasses set on their instances (probe
                # AF's AF06: a base's ``attn_p: float = 0.0``, a subclass's 0.2)
                subs = _set_by_subclasses(cls, node.attr.value)
                got = _defs_value(tuple(defs) + tuple(subs), scope, None, depth)
                if got is UNKNOWN and subs and _MET_BASES[0] is not None:
                    _MET_BASES[0][id(cls)] = cls  # ``each_subclass`` reads them one by one
                return _joined_elsewhere(got, cls, node.attr.value, list(defs) + subs, scope)
            return _inherited_value(cls, node.attr.value, scope, depth)
        elif owners and len(owners) == 1 and owners[0].kind == DefKind.IMPORT:
            # ``config.WIDTH`` after ``from . import config``
            return _imported_value(owners[0], scope, node.value.value, node.attr.value)
        elif owners and len(owners) == 1 and owners[0].kind == DefKind.CLASS:
            return _class_constant(owners[0].node, node.attr.value)  # ``Defaults.HEADS``
    return UNKNOWN


def _set_by_subclasses(cls, attr: str) -> list:
    """The definitions of ``self.<attr>`` in the classes of ``cls``'s file
    that derive from it (through the file's classes, ``MAX_BASES`` deep)."""
    module = cls.scope
    if module is None or getattr(module, "kind", None) != "module":
        return []
    classes = _module_classes(module)
    return [d for c in subclasses_in(cls, classes, MAX_BASES) for d in c.attrs.get(attr, ())]


def _module_classes(module) -> list:
    """The ``ClassInfo`` of each class the module scope ``module`` binds."""
    return [
        d.extra
        for _, defs in module.final_env.items()
        for d in defs
        if d.kind == DefKind.CLASS and d.extra is not None
    ]


def _joined_elsewhere(got, cls, attr: str, defs, scope):
    """``got`` joined with what the used subclasses of other project files
    set ``attr`` to (probe AN's AN03: the base's ``attn_pdrop = 0.0``, a
    subclass's 0.1 in ``model.py``): UNKNOWN unless each sets the same."""
    elsewhere = getattr(project_of(scope), "set_elsewhere", None)
    if got is UNKNOWN or elsewhere is None or not _module_level(cls):
        return got
    on_instance = not all(in_class_body(d) for d in defs)
    values = elsewhere(cls.name, attr, on_instance)
    if values is None:
        return UNKNOWN
    for value in values:
        if value != got or (type(value) is bool) != (type(got) is bool):
            return UNKNOWN
    return got


def in_class_body(d: Def) -> bool:
    """The definition is a class body's (``attn_pdrop = 0.0``), not a
    method's ``self.<attr> = ...``: an instance's own value hides it."""
    return d.scope is not None and d.scope.kind == ScopeKind.CLASS


def _class_constant(cls: cst.ClassDef, attr: str):
    """The literal a class body assigns once to ``attr`` (``class Defaults:
    HEADS = 3``: probe AC's AC30), else UNKNOWN."""
    found = [
        line.value
        for stmt in cls.body.body
        if isinstance(stmt, cst.SimpleStatementLine)
        for line in stmt.body
        if isinstance(line, (cst.Assign, cst.AnnAssign))
        and any(
            isinstance(t, cst.Name) and t.value == attr
            for t in (
                [x.target for x in line.targets] if isinstance(line, cst.Assign) else [line.target]
            )
        )
    ]
    return literal(found[0]) if len(found) == 1 and found[0] is not None else UNKNOWN


def _item_value(node: cst.Subscript, env: Env, scope: Optional[Scope], depth: int):
    """``CFG["heads"]`` of a name bound to a dict display or ``dict(...)`` of
    known keys, never changed in place: that entry's value."""
    from .splats import items  # a leaf module: asked lazily, as it reads flow only

    key = (
        literal(node.slice[0].slice.value)
        if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index)
        else None
    )
    if not isinstance(key, str) and key is not None:
        return _element(node, env, scope, depth)  # ``EMBED_DIMS[2]``, ``NUM_HEADS[i]``
    if not isinstance(key, str) or not isinstance(node.value, cst.Name):
        return UNKNOWN
    defs = lookup(node.value.value, env, scope)
    if not defs or not all(d.kind == DefKind.ASSIGN and _dict_made(d.node) for d in defs):
        return (
            UNKNOWN  # cheap first: only a name bound to dicts is read (and its changes looked for)
        )
    got = items(node.value, env, scope)
    entries = got.get(key) if got else None
    if not entries or len(entries) != 1:
        return UNKNOWN
    expr, eenv, escope = entries[0]
    return value_of(expr, eenv, escope, depth + 1)


def _element(node: cst.Subscript, env: Env, scope: Optional[Scope], depth: int):
    """An element of a sequence the code writes out (``sequences.sequence_of``)
    at a known integer index."""
    index = value_of(node.slice[0].slice.value, env, scope, depth + 1)
    if type(index) is not int:
        return UNKNOWN
    got = sequence_of(node.value, env, scope, value_of, depth + 1)
    if got is None or not -len(got) <= index < len(got):
        return UNKNOWN
    return got[index]


def _named(func, name: str) -> bool:
    return isinstance(func, cst.Name) and func.value == name


def _dict_made(node) -> bool:
    return isinstance(node, cst.Dict) or (
        isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "dict"
    )


# the class whose instance an inherited ``__init__``'s parameter is read for
# (``_inherited_value``): its constructions, not the base's, give the value
_READER: List[Optional[str]] = [None]


def _inherited_value(cls, attr: str, scope, depth: int):
    """``self.<attr>`` that a class of the file does not set and a base class
    of the same file does (``class LowRes(Attention)`` reading
    ``self.dropout_p``).  Through a base's ``__init__`` that the class
    inherits as it is, a parameter's value is what every construction of
    the class itself passes (``_constructed_value``); a class with an
    ``__init__`` of its own reads nothing through it."""
    defs = inherited_attr(cls, attr)
    if not defs:
        return UNKNOWN
    chain, base = [cls], _same_file_base(cls)  # every class up to the one that sets it
    while base is not None and base.attrs.get(attr) is None and len(chain) < MAX_BASES:
        chain.append(base)
        base = _same_file_base(base)
    inherits = all("__init__" not in c.methods for c in chain)
    reader = cls.name if _module_level(cls) and inherits else None
    saved, _READER[0] = _READER[0], reader
    try:
        return _defs_value(tuple(defs), scope, None, depth + 1) if reader else UNKNOWN
    finally:
        _READER[0] = saved


# (a base class, one subclass of its file): the base's ``self.<attr>`` read for an
# instance of that subclass (``each_subclass``); and the bases whose attributes
# the subclasses of their file set apart, noted while ``each_subclass`` collects
_AS_SUBCLASS: List[Optional[tuple]] = [None]
_MET_BASES: List[Optional[dict]] = [None]


def each_subclass(judge: Callable[[], object]):
    """``(None, judge())``, then, when ``judge`` read a class attribute that
    subclasses of its class's file set apart (probe AN's AN18 and AM's
    AM10: a base's ``num_heads = 4``, a subclass's ``num_heads = 8``),
    ``(subclass name, judge())`` once per such subclass that the code uses
    (named outside its own statement) and that inherits the base's
    ``__init__`` as it is: its attributes its own or inherited, the
    ``__init__``'s parameters what its own constructions pass; and for the
    base itself when its file names it beside those statements (its own
    attributes; its ``__init__``'s parameters unknown)."""
    saved, _MET_BASES[0] = _MET_BASES[0], {}
    try:
        first = judge()
    finally:
        met, _MET_BASES[0] = _MET_BASES[0], saved
    yield None, first
    if _AS_SUBCLASS[0] is not None:
        return
    for base in met.values():
        for sub in _used_heirs(base):  # the base first, when the file builds it itself
            saved_reader = _READER[0]
            _AS_SUBCLASS[0], _READER[0] = (base, sub), sub.name
            try:
                got = judge()
            finally:
                _AS_SUBCLASS[0], _READER[0] = None, saved_reader
            yield sub.name, got


def _used_heirs(base) -> list:
    """The module-level subclasses of ``base`` in its file, each inheriting
    its ``__init__`` (no class on the way has one), named outside their own
    ``class`` statement in the file or in another project file; ``base``
    itself first when the file names it beside those statements."""
    module = base.scope
    if module is None or module.kind != ScopeKind.MODULE or "__init__" not in base.methods:
        return []
    classes = _module_classes(module)
    text = module_text(module.node)
    direct = [c for c in classes if any(_named(b, base.name) for b in c.base_exprs)]
    # named again beside its class statement and its subclasses' (AM18:
    # ``encoder_cls=SeqEncoder``): the base's own instances, read with its own
    # attributes, and no ``__init__`` parameter (its constructions and its
    # heirs' are not told apart)
    out = [base] if word_count(base.name, text) > 1 + len(direct) else []
    for sub in subclasses_in(base, classes, MAX_BASES):
        chain, up = [], sub
        while up is not None and up is not base and len(chain) < MAX_BASES:
            chain.append(up)
            up = _same_file_base(up)
        if up is not base or any("__init__" in c.methods for c in chain):
            continue
        if in_use(sub.name, module):
            out.append(sub)
    return out


def in_use(name: str, scope: Optional[Scope]) -> bool:
    """A class of the module around ``scope`` named outside its own ``class``
    statement there, or in another project file that may call into it (its
    instances are made: a subclass's override or attribute then runs)."""
    module = module_scope(scope)
    if module is None:
        return False
    if word_count(name, module_text(module.node)) > 1:
        return True
    ask = getattr(module.project, "mentioned_elsewhere", None)
    return bool(ask is not None and ask(name))


def _subclass_value(sub, base, attr: str, defs, scope, depth: int):
    """``self.<attr>`` of ``base`` for an instance of its subclass ``sub``:
    what the nearest class from ``sub`` up sets; UNKNOWN when the base also
    sets it on its instances (which hides every class body)."""
    if not all(in_class_body(d) for d in defs):
        return UNKNOWN
    up = sub
    while up is not None and up is not base:
        own = up.attrs.get(attr)
        if own:
            return _defs_value(tuple(own), scope, None, depth + 1)
        up = _same_file_base(up)
    return _defs_value(tuple(defs), scope, None, depth + 1)


MAX_BASES = 4
# one construction of a class read on its own (``instance``): its name and what
# that construction passes its ``__init__``
_INSTANCE: List[Optional[tuple]] = [None]


@contextmanager
def instance(cls: str, given: dict):
    """While what one construction of the module-level class ``cls`` passes
    (``given``: parameter -> literal) is the value of its ``__init__``'s
    parameters, in place of what every construction passes alike (MHA014:
    ``GQAttention(8, 2)`` beside ``GQAttention(6, 4)``, each its own)."""
    saved, _INSTANCE[0] = _INSTANCE[0], (cls, given)
    try:
        yield
    finally:
        _INSTANCE[0] = saved


def inherited_attr(cls, attr: str) -> tuple:
    """The definitions of ``self.<attr>`` in the nearest base class of the
    same file that sets it (one base per class, ``MAX_BASES`` deep)."""
    seen = {id(cls)}
    base = cls
    for _ in range(MAX_BASES):
        base = _same_file_base(base)
        if base is None or id(base) in seen:
            return ()
        seen.add(id(base))
        defs = base.attrs.get(attr)
        if defs:
            return tuple(defs)
    return ()


def _same_file_base(info):
    """The one base class of ``info`` defined in the same file, if it has
    exactly one base and that base is a class of the file; else None."""
    if len(info.base_exprs) != 1 or not isinstance(info.base_exprs[0], cst.Name):
        return None
    defs = lookup(info.base_exprs[0].value, info.env, info.scope)
    if len(defs) != 1 or defs[0].kind != DefKind.CLASS:
        return None
    return defs[0].extra


def _module_level(info) -> bool:
    scope = info.scope
    return scope is not None and scope.kind == ScopeKind.MODULE


def _defs_value(defs, scope, name: Optional[str], depth: int):
    if not defs:
        return UNKNOWN
    if name is not None and _rebound_elsewhere(name, scope):
        return UNKNOWN
    result = UNKNOWN
    for d in defs:
        if d.kind == DefKind.ASSIGN:
            node = d.node
        elif d.kind == DefKind.UNPACK:
            node = unpacked(d)
        elif d.kind == DefKind.IMPORT and name is not None and len(defs) == 1:
            return _imported_value(d, scope, name)
        elif d.kind == DefKind.PARAM and name is not None and len(defs) == 1:
            return _constructed_value(d, name)
        elif d.kind == DefKind.FOR:  # a pass ``sequences.each_pass`` pins, else unknown
            got = pass_value(d, value_of, depth)
            if got is None or got[0] is UNKNOWN or (result is not UNKNOWN and got[0] != result):
                return UNKNOWN
            result = got[0]
            continue
        else:
            return UNKNOWN
        if node is None:
            return UNKNOWN
        v = value_of(node, d.env, d.scope, depth + 1)
        if v is UNKNOWN:
            return UNKNOWN
        if result is not UNKNOWN and (type(v) is not type(result) or v != result):
            return UNKNOWN
        result = v
    return result


def project_of(scope: Optional[Scope]):
    """The project the engine gave the module scope around ``scope`` (None:
    this file alone)."""
    scope = module_scope(scope)
    return scope.project if scope is not None else None


def _imported_value(d: Def, scope: Optional[Scope], name: str, attr: Optional[str] = None):
    """The value of a constant ``name`` that the import statement ``d.node``
    brings from a project file; with ``attr``, of the constant ``attr`` of
    the project module it binds to ``name``."""
    project = project_of(scope)
    if project is None or not isinstance(d.node, (cst.ImportFrom, cst.Import)):
        return UNKNOWN
    if name is not None and _rebound_elsewhere(name, scope):
        return UNKNOWN
    got = project.imported_constant(d.node, name, attr)
    return UNKNOWN if got is None else got[0]


KWARGS_CHANGED = ("update", "setdefault", "clear", "__setitem__")


def _keyword_value(node: cst.Call, env: Env, scope: Optional[Scope], depth: int):
    """``kwargs.get("is_causal", False)`` in a function that takes
    ``**kwargs`` and never changes them: what every call of the function in
    the project passes under that keyword, the default where a call passes
    none (funasr's ``qkv_attention(q, k, v, mask, is_causal=False)``)."""
    func = node.func
    if not (
        isinstance(func, cst.Attribute)
        and func.attr.value in ("get", "pop")
        and isinstance(func.value, cst.Name)
    ):
        return UNKNOWN
    args = node.args
    if not 1 <= len(args) <= 2 or any(a.keyword is not None or a.star for a in args):
        return UNKNOWN
    key = literal(args[0].value)
    if not isinstance(key, str):
        return UNKNOWN
    default = value_of(args[1].value, env, scope, depth + 1) if len(args) == 2 else None
    if default is UNKNOWN:
        return UNKNOWN
    name = func.value.value
    defs = lookup(name, env, scope)
    if len(defs) != 1 or defs[0].kind != DefKind.PARAM or defs[0].scope is None:
        return UNKNOWN
    fn = defs[0].scope.node
    star = fn.params.star_kwarg if isinstance(fn, cst.FunctionDef) else None
    if not isinstance(star, cst.Param) or star.name.value != name:
        return UNKNOWN
    if kwargs_changed(fn, name):  # ``kwargs.update(...)``, ``kwargs["k"] = v``: not what was passed
        return UNKNOWN
    return _constructed_value(defs[0], "**" + key, default)


def kwargs_changed(
    fn: cst.FunctionDef, name: str, methods=KWARGS_CHANGED, rebound: bool = False
) -> bool:
    """The function changes its ``**kwargs`` ``name``: a method of ``methods``
    called on it (``kwargs.update(...)``), an item stored or deleted
    (``kwargs["k"] = v``), and with ``rebound`` the name bound anew
    (``kwargs = {...}``)."""
    for n in walk(fn.body):
        if isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name):
            if n.value.value == name and n.attr.value in methods:
                return True
        if isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Del)):
            targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target]
            for t in targets:
                if isinstance(t, cst.Subscript) and getattr(t.value, "value", None) == name:
                    return True
                if rebound and isinstance(t, cst.Name) and t.value == name:
                    return True
    return False


def _constructed_value(d: Def, name: str, default=None):
    """The value of a parameter that the project fixes: of a module-level
    class's ``__init__``, what every construction of the class in the project
    passes alike; of a module-level function or a module-level class's
    ``forward`` or other method, an off value (None, False, 0) that every call in the project
    leaves it at (RULES.md, "known statically"; docs/reach.md, "Facts from
    the callers")."""
    scope = d.scope
    if isinstance(d.extra, cst.Lambda):  # ``attend = lambda q, k, v, m=None: ...``
        if scope is None or scope.kind != ScopeKind.MODULE:
            return UNKNOWN
        function = _lambda_name(d.extra, scope.node)
        project = project_of(scope)
        got = project.called(function, name) if function and project is not None else None
        return UNKNOWN if got is None else got[0]
    parent = scope.parent if scope is not None else None
    if parent is None or scope is None or not isinstance(scope.node, cst.FunctionDef):
        return UNKNOWN
    function = scope.node.name.value
    project = project_of(scope)
    if project is None:
        return UNKNOWN
    if parent.kind == ScopeKind.MODULE:
        got = project.called(function, name, default)
    elif parent.kind != ScopeKind.CLASS or parent.parent is None:
        return UNKNOWN
    elif parent.parent.kind != ScopeKind.MODULE:
        return UNKNOWN
    elif function == "__init__":
        pinned = _AS_SUBCLASS[0]
        if pinned is not None and pinned[1] is pinned[0]:
            return UNKNOWN  # the base's own instances: built with what, not read
        reader = _READER[0]
        owner = parent.node.name.value
        one = _INSTANCE[0]
        if one is not None and one[0] == (reader or owner) and name in one[1]:
            return one[1][name]
        if reader is not None and reader != owner:  # a subclass inheriting it as it is
            got = project.constructed(reader, name, init_of=owner)
        else:
            got = project.constructed(owner, name)
    elif function.startswith("__"):  # __call__ and the like: called where no call is seen
        return UNKNOWN
    else:  # ``forward``, through the instances; another method, as an attribute
        got = project.called(f"{parent.node.name.value}.{function}", name, default)
    return UNKNOWN if got is None else got[0]


def _lambda_name(node: cst.Lambda, module) -> Optional[str]:
    """The name a module-level ``name = lambda ...`` statement binds ``node`` to."""
    for stmt in getattr(module, "body", ()):
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if (
                    isinstance(small, cst.Assign)
                    and small.value is node
                    and len(small.targets) == 1
                    and isinstance(small.targets[0].target, cst.Name)
                ):
                    return small.targets[0].target.value
    return None


def _rebound_elsewhere(name: str, scope: Optional[Scope]) -> bool:
    """A module name that some function declares ``global`` may change at run time."""
    module = scope
    while module is not None and module.kind != ScopeKind.MODULE:
        module = module.parent
    return module is not None and name in module.mutated_globals


def definitely(node: Optional[cst.CSTNode], env: Env, scope: Optional[Scope], expected) -> bool:
    """True when ``node`` statically equals ``expected`` (None/True/False/0)."""
    if node is None:
        return False
    v = value_of(node, env, scope)
    if v is UNKNOWN:
        return False
    if expected is None:
        return v is None
    if isinstance(expected, bool):
        return isinstance(v, (bool, int, float)) and bool(v) is expected and v is not None
    return v == expected


def unpacked(d: Def):
    """For an ``unpack`` definition whose value is a literal tuple, the element node."""
    node = d.node
    for i in d.index:
        if isinstance(node, (cst.Tuple, cst.List)) and i < len(node.elements):
            el = node.elements[i]
            if isinstance(el, cst.StarredElement):
                return None
            node = el.value
        else:
            return None
    return node


def branch_truth(test, env, scope, depth: int = 0) -> Optional[bool]:
    """What the test of an ``if`` is in this program, when the program fixes
    it; None when it may be either.  A plain name or ``self.<attr>`` is read
    (what every construction or call in the project passes: ``value_of``),
    also through ``not``, ``is None``/``is not None``, and ``and``/``or``
    when the known parts decide the whole."""
    if depth > 8:
        return None
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = branch_truth(test.expression, env, scope, depth + 1)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        left = branch_truth(test.left, env, scope, depth + 1)
        right = branch_truth(test.right, env, scope, depth + 1)
        decides = isinstance(test.operator, cst.Or)  # True decides an ``or``, False an ``and``
        if decides in (left, right):
            return decides
        return None if None in (left, right) else not decides
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        op = test.comparisons[0]
        if isinstance(op.operator, (cst.Is, cst.IsNot)) and is_none(op.comparator):
            v = _fixed(test.left, env, scope)
            if v is _OPEN:
                return None
            return (v is None) == isinstance(op.operator, cst.Is)
        if isinstance(op.operator, (cst.Equal, cst.NotEqual)):
            # ``attention_type == "multi-head"`` where every construction leaves
            # ``attention_type="feedforward"`` (recstudio's AttentionLayer)
            v, other = _fixed(test.left, env, scope, str), literal(op.comparator)
            if v is _OPEN or other is UNKNOWN or type(other) not in (str, int, bool, type(None)):
                return None
            return (v == other) == isinstance(op.operator, cst.Equal)
        return None
    v = _fixed(test, env, scope)
    return None if v is _OPEN else bool(v)


def decided_name(func, env, scope) -> Optional[cst.Name]:
    """The side of ``make = AuxLayer if aux else Layer`` (bound once) that
    the program fixes its test to, when it is a plain name (probe AD's
    AD25); None otherwise."""
    if not isinstance(func, cst.Name):
        return None
    defs = lookup(func.value, env, scope)
    if len(defs) != 1 or defs[0].kind != DefKind.ASSIGN:
        return None
    return fixed_side(defs[0].node, defs[0].env, defs[0].scope, cst.Name)


def fixed_side(choice, env, scope, kind) -> Optional[cst.BaseExpression]:
    """The side of ``a if test else b``, both of type ``kind`` (two names, two
    calls), that the program fixes ``test`` to (``branch_truth``); None when
    it may be either, or the sides are of another kind (the ask reads the
    project: it is made only of such choices)."""
    if not (
        isinstance(choice, cst.IfExp)
        and isinstance(choice.body, kind)
        and isinstance(choice.orelse, kind)
    ):
        return None
    truth = branch_truth(choice.test, env, scope)
    return None if truth is None else choice.body if truth else choice.orelse


_OPEN = object()  # a value the program does not fix


def _fixed(node, env, scope, *more: type):
    """The value of a plain name or ``self.<attr>`` that the program fixes
    (None included; a bool or an int, or one of the types ``more``), else
    ``_OPEN``."""
    if not (
        isinstance(node, cst.Name)
        or (
            isinstance(node, cst.Attribute)
            and isinstance(node.value, cst.Name)
            and node.value.value == "self"
        )
    ):
        return _OPEN
    v = value_of(node, env, scope)
    return v if v is None or type(v) in (bool, int) + more else _OPEN


def live_lookup(name: str, env: Env, scope: Optional[Scope]) -> Tuple[Def, ...]:
    """``lookup``, less the definitions made only on branches this program
    never takes: ``x = x.transpose(0, 1)`` under ``if not self.batch_first:``
    where every construction leaves ``batch_first=True`` (open_clip's
    ``Transformer.forward``).  The joins of ``if`` statements are followed
    (``env.worlds``); a world with a branch condition the program decides
    the other way is dropped.  When every world is dropped (the read itself
    never runs), or there are too many, the plain lookup."""
    defs = lookup(name, env, scope)
    if len(defs) < 2 or env.get(name) is None:
        return defs
    found = worlds(env, [name])
    if not found:
        return defs
    kept: List[Def] = []
    for world, conds in found:
        if any(
            branch_truth(test, cenv, scope) not in (None, polarity)
            for test, polarity, cenv in conds
        ):
            continue
        for d in world.get(name, ()):
            if d not in kept:
                kept.append(d)
    return tuple(kept) if kept else defs
