"""Scopes, reaching definitions and the one pass over a file.

The pass walks every statement once, in order, keeping for each scope an
environment ``name -> tuple of Def`` (the definitions that reach this point;
branches join, loops are walked twice).  Every call it meets is recorded as a
``CallSite`` together with the environment, the enclosing ``if`` conditions and
the chain of parent nodes: the rules and the evaluators in ``resolve.py``,
``values.py`` and ``masks/`` read those lazily, so a file pays only for the
calls that concern attention.
"""

from __future__ import annotations

import enum

from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import libcst as cst

from .env import EMPTY_ENV, MAX_WORLDS, Env, World, join, worlds  # noqa: F401  (re-exported)
from .tree import children, leaves, walk  # noqa: F401  (re-exported: the one tree walk)
from .program.import_lines import helper_import


class DefKind(str, enum.Enum):
    """What kind of definition a ``Def`` is (see ``Def``).  A ``str`` enum,
    so code that still compares with the plain words keeps working."""

    ASSIGN = "assign"
    UNPACK = "unpack"
    PARAM = "param"
    SELF = "self"
    FOR = "for"
    WITH = "with"
    IMPORT = "import"
    STAR = "star"
    DEF = "def"
    CLASS = "class"
    AUGASSIGN = "augassign"
    UNKNOWN = "unknown"

    def __str__(self) -> str:
        return self.value

    __format__ = str.__format__


class ScopeKind(str, enum.Enum):
    MODULE = "module"
    CLASS = "class"
    FUNCTION = "function"

    def __str__(self) -> str:
        return self.value

    __format__ = str.__format__


class Def:
    """One definition of a name (or of ``self.<attr>``).

    kind is one of: assign (node = value), unpack (node = value, index = path
    into it), param (node = cst.Param), self (the first parameter of a method;
    extra = ClassInfo), for (node = iterable, index = path into one element),
    with (node = context expression), import (extra = qualified name), star
    (extra = module of a ``from m import *``), def (node = FunctionDef), class
    (node = ClassDef, extra = ClassInfo), augassign (node = AugAssign, extra =
    the definitions it updates), unknown.
    """

    __slots__ = ("kind", "node", "env", "scope", "index", "extra")

    def __init__(self, kind: DefKind, node=None, env=None, scope=None, index=(), extra=None):
        self.kind = kind
        self.node = node
        self.env = env
        self.scope = scope
        self.index = index
        self.extra = extra

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Def({self.kind}, {type(self.node).__name__}, {self.index})"


class Scope:
    """A module, class or function body."""

    __slots__ = (
        "kind",
        "node",
        "parent",
        "final_env",
        "cls",
        "returns",
        "return_conds",
        "yields",
        "loads",
        "globals",
        "mutated_globals",
        "appends",
        "project",
    )

    def __init__(self, kind, node, parent, cls=None):
        self.kind: ScopeKind = kind
        self.node = node
        self.parent = parent
        self.final_env: Env = EMPTY_ENV
        self.cls = cls  # ClassInfo for a class body or a method body
        self.returns: List[Tuple[cst.BaseExpression, Env]] = []
        self.return_conds: List[tuple] = []  # each return's tests, as ``CallSite.conds``
        self.yields: List[Tuple[cst.BaseExpression, Env]] = []  # ``yield value`` statements
        self.loads: set = set()  # names read anywhere in this function
        self.globals: set = set()  # names this function declares global/nonlocal
        self.mutated_globals: set = set()  # module scope: names some function rebinds
        # a local list -> what ``.append()`` added; a container -> its ``name[key] = v``
        self.appends: Dict[str, List[Def]] = {}
        # module scope: the project values.py asks (None: this file alone)
        self.project = None


class ClassInfo:
    __slots__ = ("name", "node", "scope", "base_exprs", "methods", "attrs", "env", "appends")

    def __init__(self, name, node, scope, env):
        self.name = name
        self.node = node
        self.scope = scope  # the scope the class statement stands in
        self.env = env  # environment at the class statement (to resolve bases)
        self.base_exprs = [arg.value for arg in node.bases if arg.keyword is None and not arg.star]
        self.methods: Dict[str, cst.FunctionDef] = {}
        self.attrs: Dict[str, List[Def]] = {}
        self.appends: Dict[str, List[Def]] = {}  # self.<attr>.append(x) / .extend([...])

    def add_attr(self, name: str, d: Def) -> None:
        self.attrs.setdefault(name, []).append(d)


def subclasses_in(cls: ClassInfo, classes, depth: int = 4) -> List[ClassInfo]:
    """The classes of ``classes`` (one file's) that derive from ``cls``
    through the file's classes, named as plain bases, ``depth`` deep."""
    found: List[ClassInfo] = []
    bases = {cls.name}
    for _ in range(depth):
        heirs = [
            c
            for c in classes
            if c.name not in bases
            and any(isinstance(b, cst.Name) and b.value in bases for b in c.base_exprs)
        ]
        if not heirs:
            break
        found.extend(heirs)
        bases.update(c.name for c in heirs)
    return found


class CallSite:
    """A call met by the pass, with everything needed to evaluate it later."""

    __slots__ = ("node", "env", "scope", "conds", "parents", "stmt")

    def __init__(self, node, env, scope, conds, parents, stmt):
        self.node: cst.Call = node
        self.env: Env = env
        self.scope: Scope = scope
        self.conds: Tuple[Tuple[cst.BaseExpression, bool, Env], ...] = conds
        self.parents: Tuple[cst.CSTNode, ...] = parents  # enclosing expressions, outermost first
        self.stmt = stmt  # the small statement (Assign, Expr, Return, ...) or compound header

    @property
    def cls(self) -> Optional[ClassInfo]:
        return self.scope.cls

    @property
    def or_default_of(self) -> Optional[cst.BaseExpression]:
        """``left`` when this call is the right side of ``left or <call>``
        (``self_attention or nn.MultiheadAttention(...)``), else None."""
        either = self.parents[-1] if self.parents else None
        if (
            isinstance(either, cst.BooleanOperation)
            and isinstance(either.operator, cst.Or)
            and either.right is self.node
        ):
            return either.left
        return None

    @property
    def init_default(self) -> Optional[Tuple[str, int]]:
        """(the parameter, its index after ``self``) when this call is the
        default an ``__init__`` builds for one of its parameters:
        ``self_attention or nn.MultiheadAttention(...)``; else None."""
        left, scope = self.or_default_of, self.scope
        func = scope.node if scope is not None and scope.cls is not None else None
        if (
            not isinstance(left, cst.Name)
            or not isinstance(func, cst.FunctionDef)
            or func.name.value != "__init__"
        ):
            return None
        names = [p.name.value for p in func.params.params][1:]
        return (left.value, names.index(left.value)) if left.value in names else None

    @property
    def function(self) -> Optional[cst.FunctionDef]:
        scope = self.scope
        while scope is not None and scope.kind != ScopeKind.FUNCTION:
            scope = scope.parent
        return scope.node if scope is not None else None


def lookup(name: str, env: Env, scope: Optional[Scope]) -> Tuple[Def, ...]:
    """The definitions of ``name`` visible from ``env`` in ``scope``."""
    defs = env.get(name)
    if defs is not None:
        return defs
    if scope is not None and scope.kind == ScopeKind.MODULE and "*" in env:
        return tuple(Def(DefKind.IMPORT, extra=d.extra + "." + name) for d in env["*"])
    parent = scope.parent if scope is not None else None
    while parent is not None:
        if parent.kind != ScopeKind.CLASS:  # class bodies are not enclosing scopes
            defs = parent.final_env.get(name)
            if defs is not None:
                return defs
            star = parent.final_env.get("*")
            if star is not None and parent.kind == ScopeKind.MODULE:
                return tuple(Def(DefKind.IMPORT, extra=d.extra + "." + name) for d in star)
        parent = parent.parent
    return ()


# --- the pass ----------------------------------------------------------------

_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


def _mapped_over(lam: cst.Lambda, parents, env, scope):
    """(the parameter's name, the sequence) of a one-parameter lambda that is
    the first argument of the builtin ``map`` over one literal tuple or list
    (spear-tts' ``k, v = map(lambda t: repeat(t, ...), (k, v))``, release
    review 31): read as the generator ``(... for t in (k, v))``."""
    up = [n for n in parents[-2:] if not isinstance(n, cst.Arg)]  # an argument's call
    call = up[-1] if up else None
    p = lam.params
    if (
        not isinstance(call, cst.Call)
        or not isinstance(call.func, cst.Name)
        or call.func.value != "map"
        or len(call.args) != 2
        or call.args[0].value is not lam
        or any(a.star or a.keyword is not None for a in call.args)
        or not isinstance(call.args[1].value, (cst.Tuple, cst.List))
        or len(p.params) != 1
        or p.params[0].default is not None
        or p.posonly_params
        or p.kwonly_params
        or not isinstance(p.star_arg, cst.MaybeSentinel)
        or p.star_kwarg is not None
        or lookup("map", env, scope)
    ):
        return None
    return p.params[0].name, call.args[1].value


class FlowPass:
    """Walks a module once; fills scopes, classes and call sites."""

    def __init__(self) -> None:
        self.calls: List[CallSite] = []
        self.classes: Dict[int, ClassInfo] = {}  # id(ClassDef) -> info
        self.functions: Dict[int, Scope] = {}  # id(FunctionDef) -> its scope
        self.scopes: List[Scope] = []  # every scope made, for ``release``
        self._params: List[Def] = []  # parameters see one another: cycles too
        self._deferred: List[Tuple[cst.FunctionDef, Scope, Env]] = []
        self._conds: Tuple = ()
        self._parents: List[cst.CSTNode] = []
        self._pending: List[Tuple[str, Def]] = []  # walrus bindings
        self._stmt: Optional[cst.CSTNode] = None

    # entry point
    def run(self, module: cst.Module) -> Scope:
        scope = Scope(ScopeKind.MODULE, module, None)
        self.module_scope = scope
        self.scopes.append(scope)
        scope.final_env = self.block(module.body, EMPTY_ENV, scope)
        # function bodies run after the module body: they see every module-level name
        while self._deferred:
            func, scope_, env = self._deferred.pop(0)
            self._function(func, scope_, env)
        for fscope in self.functions.values():
            scope.mutated_globals |= fscope.globals
        return scope

    def release(self) -> None:
        """End the cycles the pass made (a scope and the definitions it holds
        point at each other, and so do a class and its body), so that the
        file's trees are freed as soon as its analysis is done instead of by
        a collection that walks every node.  The pass answers nothing after."""
        for scope in self.scopes:
            scope.final_env, scope.returns, scope.appends = EMPTY_ENV, [], {}
            scope.return_conds, scope.yields = [], []
            scope.parent = scope.cls = scope.project = None
        for info in self.classes.values():
            info.scope = info.env = None
            info.attrs, info.appends, info.methods = {}, {}, {}
        for site in self.calls:
            site.env = site.scope = None
        for d in self._params:
            d.env = d.scope = None
        self._params = []
        self.calls, self.classes, self.functions, self.scopes = [], {}, {}, []

    # statements
    def block(self, stmts: Sequence[cst.CSTNode], env: Env, scope: Scope) -> Env:
        for stmt in stmts:
            env = self.stmt(stmt, env, scope)
        return env

    def body(self, suite, env: Env, scope: Scope) -> Env:
        if isinstance(suite, cst.IndentedBlock):
            return self.block(suite.body, env, scope)
        return self.block(suite.body, env, scope)  # SimpleStatementSuite: small statements

    def stmt(self, node: cst.CSTNode, env: Env, scope: Scope) -> Env:
        t = type(node)
        self._stmt = node
        if t is cst.SimpleStatementLine:
            for small in node.body:
                env = self.stmt(small, env, scope)
            return env
        if t is cst.Assign:
            self.expr(node.value, env, scope)
            env = self._flush(env)
            for target in node.targets:
                env = self.bind(
                    target.target, Def(DefKind.ASSIGN, node.value, env, scope), env, scope
                )
            return env
        if t is cst.AnnAssign:
            if node.value is not None:
                self.expr(node.value, env, scope)
                env = self._flush(env)
                env = self.bind(
                    node.target, Def(DefKind.ASSIGN, node.value, env, scope), env, scope
                )
            return env
        if t is cst.AugAssign:
            self.expr(node.value, env, scope)
            self.expr(node.target, env, scope)
            prev = ()
            if isinstance(node.target, cst.Name):
                prev = lookup(node.target.value, env, scope)
            return self.bind(
                node.target, Def(DefKind.AUGASSIGN, node, env, scope, extra=prev), env, scope
            )
        if t is cst.Expr:
            self.expr(node.value, env, scope)
            got = node.value  # ``yield blk, mask``: what a loop over the generator takes
            if isinstance(got, cst.Yield) and isinstance(got.value, cst.BaseExpression):
                scope.yields.append((got.value, env))
            return self._flush(env)
        if t is cst.Return:
            if node.value is not None:
                self.expr(node.value, env, scope)
                scope.returns.append((node.value, env))
                scope.return_conds.append(self._conds)
            return self._flush(env)
        if t in (cst.Raise, cst.Assert, cst.Del):
            for child in children(node):
                self.expr(child, env, scope)
            env = self._flush(env)
            if t is cst.Assert:
                # what follows in this block runs only where the test held
                # (loops and try bodies restore the conditions after them)
                self._conds = self._conds + ((node.test, True, env),)
            return env
        if t is cst.Import:
            for alias in node.names:
                dotted = import_path(alias.name)
                if alias.asname is not None:
                    name = _asname(alias)
                    if name:
                        env = env.set(name, (Def(DefKind.IMPORT, node, extra=dotted),))
                else:
                    top = dotted.split(".")[0]
                    env = env.set(top, (Def(DefKind.IMPORT, node, extra=top),))
            return env
        if t is cst.ImportFrom:
            if node.module is None or node.relative:
                base = "." * len(node.relative) + (import_path(node.module) if node.module else "")
            else:
                base = import_path(node.module)
            if isinstance(node.names, cst.ImportStar):
                return env.set("*", env.get("*", ()) + (Def(DefKind.STAR, node, extra=base),))
            for alias in node.names:
                name = _asname(alias) if alias.asname is not None else import_path(alias.name)
                if name:
                    env = env.set(
                        name,
                        (Def(DefKind.IMPORT, node, extra=base + "." + import_path(alias.name)),),
                    )
            return env
        if t is cst.Global or t is cst.Nonlocal:
            for item in node.names:
                scope.globals.add(item.name.value)
            return env
        if t is cst.If:
            self.expr(node.test, env, scope)
            env = self._flush(env)
            saved = self._conds
            self._conds = saved + ((node.test, True, env),)
            then_env = self.body(node.body, env, scope)
            self._conds = saved + ((node.test, False, env),)
            if node.orelse is None:
                else_env = env
            elif isinstance(node.orelse, cst.If):
                else_env = self.stmt(node.orelse, env, scope)
            else:
                else_env = self.body(node.orelse.body, env, scope)
            self._conds = saved
            if node.orelse is None and leaves(node.body):
                # ``if c: return ...``: what follows in this block runs where ``c`` is false
                self._conds = saved + ((node.test, False, env),)
            return join(then_env, else_env, ((node.test, True, env), (node.test, False, env)))
        if t is cst.For:
            self.expr(node.iter, env, scope)
            env = self._flush(env)
            saved_conds = self._conds
            first = self.bind(node.target, Def(DefKind.FOR, node.iter, env, scope), env, scope)
            loop_env = self.body(node.body, first, scope)
            again = self.bind(
                node.target, Def(DefKind.FOR, node.iter, env, scope), join(env, loop_env), scope
            )
            loop_env = self.body(node.body, again, scope)
            self._conds = saved_conds
            out = join(env, loop_env)
            if node.orelse is not None:
                out = self.body(node.orelse.body, out, scope)
            return out
        if t is cst.While:
            self.expr(node.test, env, scope)
            env = self._flush(env)
            saved_conds = self._conds
            loop_env = self.body(node.body, env, scope)
            loop_env = self.body(node.body, join(env, loop_env), scope)
            self._conds = saved_conds
            out = join(env, loop_env)
            if node.orelse is not None:
                out = self.body(node.orelse.body, out, scope)
            return out
        if t is cst.Try or t is getattr(cst, "TryStar", None):
            saved_conds = self._conds
            body_env = self.body(node.body, env, scope)
            self._conds = saved_conds
            outs = [body_env]
            handler_in = join(env, body_env)
            for handler in node.handlers:
                h_env = handler_in
                if handler.type is not None:
                    self.expr(handler.type, h_env, scope)
                if handler.name is not None:
                    h_env = self.bind(handler.name.name, Def(DefKind.UNKNOWN), h_env, scope)
                outs.append(self.body(handler.body, h_env, scope))
                self._conds = saved_conds
            if node.orelse is not None:
                outs[0] = self.body(node.orelse.body, body_env, scope)
            out = outs[0]
            for other in outs[1:]:
                out = join(out, other)
            if node.finalbody is not None:
                out = self.body(node.finalbody.body, out, scope)
            return out
        if t is cst.With:
            for item in node.items:
                self.expr(item.item, env, scope)
                env = self._flush(env)
                if item.asname is not None:
                    env = self.bind(
                        item.asname.name, Def(DefKind.WITH, item.item, env, scope), env, scope
                    )
            return self.body(node.body, env, scope)
        if t is cst.FunctionDef:
            for dec in node.decorators:
                self.expr(dec.decorator, env, scope)
            self._defaults(node.params, env, scope)
            env = self._flush(env)
            if scope.kind == ScopeKind.CLASS and scope.cls is not None:
                scope.cls.methods.setdefault(node.name.value, node)
            self._deferred.append((node, scope, env))
            return self.bind(node.name, Def(DefKind.DEF, node, env, scope), env, scope)
        if t is cst.ClassDef:
            for dec in node.decorators:
                self.expr(dec.decorator, env, scope)
            for arg in node.bases:
                self.expr(arg.value, env, scope)
            for arg in node.keywords:
                self.expr(arg.value, env, scope)
            info = ClassInfo(node.name.value, node, scope, env)
            self.classes[id(node)] = info
            cscope = Scope(ScopeKind.CLASS, node, scope, cls=info)
            self.scopes.append(cscope)
            cenv = self.body(node.body, EMPTY_ENV, cscope)
            cscope.final_env = cenv
            for name, defs in cenv.items():
                for d in defs:
                    if d.kind == DefKind.ASSIGN:
                        info.add_attr(name, d)
            return self.bind(
                node.name, Def(DefKind.CLASS, node, env, scope, extra=info), env, scope
            )
        if t is getattr(cst, "Match", None):
            self.expr(node.subject, env, scope)
            env = self._flush(env)
            out = env
            for case in node.cases:
                c_env = env
                for name in _pattern_names(case.pattern):
                    c_env = c_env.set(name, (Def(DefKind.UNKNOWN),))
                if case.guard is not None:
                    self.expr(case.guard, c_env, scope)
                out = join(out, self.body(case.body, c_env, scope))
            return out
        # Pass, Break, Continue, TypeAlias and anything newer: read expressions only
        for child in children(node):
            if isinstance(child, cst.BaseExpression):
                self.expr(child, env, scope)
        return self._flush(env)

    def _defaults(self, params: cst.Parameters, env: Env, scope: Scope) -> None:
        for p in _all_params(params):
            if p.default is not None:
                self.expr(p.default, env, scope)

    def _function(self, node: cst.FunctionDef, outer: Scope, env_at_def: Env) -> None:
        cls = outer.cls if outer.kind == ScopeKind.CLASS else None
        fscope = Scope(
            ScopeKind.FUNCTION, node, outer if outer.kind != ScopeKind.CLASS else outer, cls=cls
        )
        if outer.kind == ScopeKind.CLASS:
            # a method sees the module (and enclosing functions), not the class body
            fscope.parent = outer
        elif outer.kind == ScopeKind.FUNCTION:
            fscope.cls = outer.cls
        self.functions[id(node)] = fscope
        self.scopes.append(fscope)
        env: Env = EMPTY_ENV
        params = _all_params(node.params)
        is_static = any(
            isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod"
            for d in node.decorators
        )
        made = []
        for i, p in enumerate(params):
            name = p.name.value
            if i == 0 and cls is not None and not is_static and outer.kind == ScopeKind.CLASS:
                d = Def(DefKind.SELF, p, None, fscope, extra=cls)
            else:
                d = Def(DefKind.PARAM, p, None, fscope, extra=node)
            made.append(d)
            env = env.set(name, (d,))
        for d in made:  # each parameter sees all of them, as Python binds them at once
            d.env = env
        self._params.extend(made)
        saved_conds, saved_parents = self._conds, self._parents
        self._conds, self._parents = (), []
        fscope.final_env = self.body(node.body, env, fscope)
        self._conds, self._parents = saved_conds, saved_parents

    # binding
    def bind(self, target: cst.CSTNode, d: Def, env: Env, scope: Scope, index=()) -> Env:
        t = type(target)
        if t is cst.Name:
            if index:
                d = Def(
                    DefKind.UNPACK if d.kind == DefKind.ASSIGN else d.kind,
                    d.node,
                    d.env,
                    d.scope,
                    d.index + index,
                    d.extra,
                )
            return env.set(target.value, (d,))
        if t in (cst.Tuple, cst.List):
            for i, el in enumerate(target.elements):
                if isinstance(el, cst.StarredElement):
                    env = self.bind(el.value, Def(DefKind.UNKNOWN), env, scope)
                else:
                    env = self.bind(el.value, d, env, scope, index + (i,))
            return env
        if t is cst.Attribute:
            self.expr(target.value, env, scope)
            if isinstance(target.value, cst.Name):
                for owner in lookup(target.value.value, env, scope):
                    if owner.kind == DefKind.SELF:
                        if index:
                            d = Def(
                                DefKind.UNPACK if d.kind == DefKind.ASSIGN else d.kind,
                                d.node,
                                d.env,
                                d.scope,
                                d.index + index,
                                d.extra,
                            )
                        owner.extra.add_attr(target.attr.value, d)
            return env
        if t is cst.Subscript:
            self.expr(target, env, scope)
            if isinstance(target.value, cst.Name) and d.kind == DefKind.ASSIGN and not index:
                # ``layers[f"layer_{i}"] = Block()``: what the container holds
                scope.appends.setdefault(target.value.value, []).append(d)
            return env
        if t is cst.StarredElement:
            return self.bind(target.value, Def(DefKind.UNKNOWN), env, scope)
        return env

    def _flush(self, env: Env) -> Env:
        if self._pending:
            for name, d in self._pending:
                env = env.set(name, (d,))
            self._pending = []
        return env

    # expressions
    def expr(self, node: cst.CSTNode, env: Env, scope: Scope) -> None:
        t = type(node)
        if t is cst.Name:
            scope.loads.add(node.value)
            return
        if t in (cst.Integer, cst.Float, cst.SimpleString, cst.Imaginary):
            return
        parents = self._parents
        if t is cst.Call:
            self.calls.append(CallSite(node, env, scope, self._conds, tuple(parents), self._stmt))
            self._register_buffer(node, env, scope)
        elif t is cst.Lambda:
            mapped = _mapped_over(node, parents, env, scope)
            if mapped is not None:  # ``map(lambda t: ..., (k, v))``: ``t`` runs over the tuple
                parents.append(node)
                lenv = self.bind(mapped[0], Def(DefKind.FOR, mapped[1], env, scope), env, scope)
                self.expr(node.body, lenv, scope)
                parents.pop()
                return
            lenv = env
            made = []
            for p in _all_params(node.params):
                if p.default is not None:
                    self.expr(p.default, env, scope)
                d = Def(DefKind.PARAM, p, None, scope, extra=node)
                made.append(d)
                lenv = lenv.set(p.name.value, (d,))
            for d in made:
                d.env = lenv
            self._params.extend(made)
            parents.append(node)
            self.expr(node.body, lenv, scope)
            parents.pop()
            return
        elif t in _COMPREHENSIONS:
            cenv = env
            comp = node.for_in
            parents.append(node)
            while comp is not None:
                self.expr(comp.iter, cenv, scope)
                cenv = self.bind(comp.target, Def(DefKind.FOR, comp.iter, cenv, scope), cenv, scope)
                for cond in comp.ifs:
                    self.expr(cond.test, cenv, scope)
                comp = comp.inner_for_in
            if t is cst.DictComp:
                self.expr(node.key, cenv, scope)
                self.expr(node.value, cenv, scope)
            else:
                self.expr(node.elt, cenv, scope)
            parents.pop()
            return
        elif t is cst.NamedExpr:
            self.expr(node.value, env, scope)
            if isinstance(node.target, cst.Name):
                self._pending.append(
                    (node.target.value, Def(DefKind.ASSIGN, node.value, env, scope))
                )
            return
        parents.append(node)
        if t is cst.Attribute or t is cst.Arg:  # ``self.attn``, ``f(attn=...)``: no name read
            self.expr(node.value, env, scope)
        else:
            for child in children(node):
                self.expr(child, env, scope)
        parents.pop()

    def _register_buffer(self, node: cst.Call, env: Env, scope: Scope) -> None:
        func = node.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in ("append", "extend", "insert")
            and node.args
        ):
            self._append(func, node, env, scope)
            return
        if not (
            isinstance(func, cst.Attribute)
            and func.attr.value in ("register_buffer", "register_parameter")
        ):
            return
        if not isinstance(func.value, cst.Name) or len(node.args) < 2:
            return
        name_arg = node.args[0].value
        if not isinstance(name_arg, cst.SimpleString) or node.args[0].keyword is not None:
            return
        for owner in lookup(func.value.value, env, scope):
            if owner.kind == DefKind.SELF:
                owner.extra.add_attr(
                    name_arg.evaluated_value, Def(DefKind.ASSIGN, node.args[1].value, env, scope)
                )

    def _append(self, func: cst.Attribute, node: cst.Call, env: Env, scope: Scope) -> None:
        kind = DefKind.FOR if func.attr.value == "extend" else DefKind.ASSIGN
        d = Def(kind, node.args[-1].value, env, scope)
        owner = func.value
        if isinstance(owner, cst.Name):
            scope.appends.setdefault(owner.value, []).append(d)
        elif isinstance(owner, cst.Attribute) and isinstance(owner.value, cst.Name):
            for o in lookup(owner.value.value, env, scope):
                if o.kind == DefKind.SELF:
                    o.extra.appends.setdefault(owner.attr.value, []).append(d)


def _all_params(params: cst.Parameters) -> List[cst.Param]:
    out = list(params.posonly_params) + list(params.params)
    if isinstance(params.star_arg, cst.Param):
        out.append(params.star_arg)
    out.extend(params.kwonly_params)
    if params.star_kwarg is not None:
        out.append(params.star_kwarg)
    return out


def import_path(node: cst.CSTNode) -> str:
    """``"torch.nn.functional"`` for the module path of an import statement or
    alias (a name and its attributes; anything else gives "")."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return import_path(node.value) + "." + node.attr.value
    return ""


def _asname(alias: cst.ImportAlias) -> str:
    asname = alias.asname.name if alias.asname is not None else None
    return asname.value if isinstance(asname, cst.Name) else ""


def _pattern_names(pattern: cst.CSTNode) -> Iterator[str]:
    return (node.value for node in walk(pattern) if isinstance(node, cst.Name))


def imported_by_call(call: cst.Call, qualname=None) -> Optional[str]:
    """The dotted name an import helper binds: ``importlib.import_module(
    "torch.nn")``, sktime's ``_safe_import("torch.nn.MultiheadAttention")``
    (``import_lines.helper_import``); or, with ``qualname`` (an expression's
    dotted name), the function a ``device_partial`` binds."""
    wrapped = device_partial(call) if qualname is not None else None
    if wrapped is not None:
        return qualname(wrapped)
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
    if not isinstance(name, str) or not call.args:
        return None
    arg = call.args[0]
    if arg.keyword is not None or not isinstance(arg.value, cst.SimpleString):
        return None
    return helper_import(name, arg.value.evaluated_value)


def device_partial(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The function ``partial(f, device=d)`` binds (lucidrains' ``arange =
    partial(torch.arange, device = device)``): only a device given, so a call
    of the partial makes what a call of ``f`` makes; None for anything else."""
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
    if name != "partial" or not call.args or call.args[0].keyword or call.args[0].star:
        return None
    if not all(a.keyword is not None and a.keyword.value == "device" for a in call.args[1:]):
        return None
    return call.args[0].value


def module_scope(scope: Optional[Scope]) -> Optional[Scope]:
    """The module scope around ``scope`` (None for None)."""
    while scope is not None and scope.parent is not None:
        scope = scope.parent
    return scope


def scope_appends(scope: Optional[Scope], name: str) -> List[Def]:
    """What ``name.append(...)`` added in this scope or an enclosing one."""
    while scope is not None:
        if name in scope.appends:
            return scope.appends[name]
        scope = scope.parent
    return []
