"""What a call of one of the project's helpers gives back, read in the
helper's own file and applied at the call.

Two readings share one way of finding the helper, wherever it lives:

- **mask builders** (``make_pad_mask(lens)``, imported from another file):
  the mask every return of the function is, with its parameters unknown
  (``builder_summary``), for the mask analysis;
- **helper forms**: what a function's one return does to its parameters,
  asked by a rule with its own reading (``helper_reading``).  MHA016 asks
  whether ``def tile(mask, heads): return mask.repeat(heads, 1, 1)`` expands
  its ``mask`` head-major; MHA015 whether ``def zero_pad(x, keep): return x
  * keep[..., None]`` multiplies its result by its ``keep``.  The caller's
  arguments for the parameters the form names are then judged at the call.

The linted file's own helpers are read in its own tree; another project
file's are parsed with LibCST once, read, and kept by the file's bytes
(``files.py``'s ``_kept``): the same reading, wherever the helper is.
"""

from __future__ import annotations

import ast
import os
from dataclasses import replace
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple

import libcst as cst

from ...core.atomic import read_regular

from .. import reach
from ..flow import DefKind, lookup
from ..tree import last_word
from ..bound import passed
from ..partials import partial_of_name
from . import signatures
from .callgraph import static_kind
from .files import ProjectFiles, decode
from .local_names import imported_target, self_method  # noqa: F401  (their old home)
from .mask_summary import FIELD, field_summary, summary_of

RETURNS_VERSION = 8
# a builder of another file read with LibCST, by (file, its state, name): the
# few a linted file calls with masks of its own (``ReturnsFiles._transformed``)
_FUNCTION_READS: Dict[tuple, object] = {}
MAX_FUNCTION_READS = 16
MAX_READ_BYTES = 2 * 1024 * 1024
# the last text ``read_function`` parsed: a linted file's helpers are often
# several functions of one file (torch's nn/functional.py); it goes with the
# linted file (``forget``, from the engine)
_LAST_PARSED: List[object] = [None, None]
HELPER_VERSION = 9

# a rule's reading of a helper: (the helper's file context, its def, its flow
# scope) -> a small JSON dict naming parameters, or None
Read = Callable[[object, cst.FunctionDef, object], Optional[dict]]


class Helper(NamedTuple):
    """A call of a helper whose form a rule read: the form, the caller's
    argument for each parameter the form names, and where the helper is
    (``None``: the linted file)."""

    form: dict
    args: Dict[str, Optional[cst.BaseExpression]]
    where: Optional[str]


def helper_reading(
    ctx, call: cst.Call, env, scope, salt: str, read: Read, words: Tuple[str, ...] = (), target=None
) -> Optional[Helper]:
    """What ``read`` says of the helper ``call`` runs: a function or ``self``
    method of the linted file, or a function another project file defines and
    this one imports.  ``salt`` names the reading (its cache key); ``words``:
    one of them is in the text of any function ``read`` says something of
    (another file's is read only then); ``target``: the method of this file
    the call runs (a subclass's override of a ``self`` method)."""
    if any(a.star for a in call.args):
        return None
    kept = reach.held_function(ctx.resolver, call.func, env, scope)  # ``self.expand = tile_heads``
    if kept is not None and target is None:
        return helper_reading(ctx, call.with_changes(func=kept[0]), kept[1], kept[2], salt, read)
    if target is None:  # ``self.expand(m)`` of ``self.expand = partial(tile, heads=h)``
        wrapped = partial_of_name(call, env, scope, ctx.resolver)
        if wrapped is not None:
            return helper_reading(ctx, wrapped[3], wrapped[1], wrapped[2], salt, read, words)
    target = target or ctx.resolver.own_function(call, env, scope)
    module = target is None and _module_forward(ctx, call, env, scope)
    target = module or target
    if target is not None:
        fscope = ctx.flow.functions.get(id(target))
        reading = ctx.analyses.setdefault("helper readings", set())
        if fscope is None or (salt, id(target)) in reading:
            return None  # recursion reads nothing
        reading.add((salt, id(target)))
        try:
            form = read(ctx, target, fscope)
        finally:
            reading.discard((salt, id(target)))
        if not form:
            return None
        static = static_kind(target) == "staticmethod"
        skip = 1 if (isinstance(call.func, cst.Attribute) and not static) or module else 0
        return _bound(form, _params(target)[skip:], call, None, _keyword_only(target))
    project = getattr(ctx, "project", None)
    if isinstance(project, ReturnsFiles):
        try:
            got = project.helper_form(call, env, scope, salt, read, words)
            built = _one_construction(ctx, call, env, scope) if got is None else None
            loc = project._elsewhere(built[0].func, built[1], built[2]) if built else None
            if loc is not None and "." not in loc[1]:  # ``self.mask_kv = MaskKV()`` of ops.py
                got = project.override_form(loc[0], loc[1], "forward", call, salt, read)
            return got if got is not None else project.inherited_form(call, env, scope, salt, read)
        except (OSError, ValueError, RecursionError):
            return None
    return None


def _one_construction(ctx, call: cst.Call, env, scope):
    """(the construction, its env, its scope) of the one module ``call``
    runs: ``self.mask_kv = MaskKV()``, ``self.ops["mask_kv"]`` of a
    ``ModuleDict``; None when it may be several, or none is known."""
    if not isinstance(call.func, (cst.Attribute, cst.Subscript)):
        return None
    try:
        got = ctx.resolver.held(call.func, env, scope, lambda c, e, s: [(c, e, s)])
    except RecursionError:  # pragma: no cover - pathological nesting
        return None
    return got[0] if got and len(got) == 1 and isinstance(got[0], tuple) else None


def _module_forward(ctx, call: cst.Call, env, scope):
    """The ``forward`` a call of an instance of one class of this file runs
    (``self.mask_kv(k, v, keep)`` of ``self.mask_kv = MaskKV()``: probe AM's
    AM27); None for anything else."""
    classes = ctx.resolver.instance_classes(call.func, env, scope)
    if not classes or any(c is not classes[0] for c in classes):
        return None
    return ctx.resolver.method_of(classes[0], "forward")


def overriding_readings(ctx, call: cst.Call, scope, salt: str, read: Read):
    """``self.expand_heads(mask)`` in a method of a class of the linted file:
    (subclass, ``read``'s reading bound to ``call``, or None) for each direct
    subclass of another project file that overrides that method and is used
    (``overrides.Overrides``), its instances running the override at the call
    (probe AH's AH05, AE's AE30)."""
    own = self_method(call, scope)
    project = getattr(ctx, "project", None)
    ask = getattr(project, "overrides_elsewhere", None)
    for where, sub in ask(own[0].name, own[1]) if own and ask is not None else ():
        yield sub, project.override_form(where, sub, own[1], call, salt, read)


def _function_names(text: str, name: str, words: Tuple[str, ...]) -> bool:
    """Whether the text of the top-level function (or ``Class.method``)
    ``name`` of a file's ``text`` holds one of ``words`` (in any case:
    ``nn.Softmax``); True when that cannot be told cheaply."""
    owner, _, method = name.rpartition(".")
    tree = signatures.parse(text)
    found = None
    for node in tree.body:
        if owner and isinstance(node, ast.ClassDef) and node.name == owner:
            found = next((n for n in node.body if getattr(n, "name", None) == method), found)
        elif not owner and isinstance(node, ast.FunctionDef) and node.name == name:
            found = node
    if found is None or getattr(found, "end_lineno", None) is None:
        return True
    body = "\n".join(text.splitlines()[found.lineno - 1 : found.end_lineno]).lower()
    return any(w.lower() in body for w in words)


def _params(func: cst.FunctionDef) -> list:
    p = func.params
    return [x.name.value for x in (*p.posonly_params, *p.params)]


def _keyword_only(func: cst.FunctionDef) -> list:
    return [x.name.value for x in func.params.kwonly_params]


def _all_params(func: cst.FunctionDef) -> list:
    return _params(func) + _keyword_only(func)


def _bound(
    form: dict, params: list, call: cst.Call, where: Optional[str], kwonly=()
) -> Optional[Helper]:
    """The caller's argument for each parameter the form names (None: not
    passed); None when the form names a parameter the helper does not have."""
    args: Dict[str, Optional[cst.BaseExpression]] = {}
    for name in form.get("params", ()):
        if name in params:
            args[name] = passed(call, params.index(name), name)
        elif name in kwonly:
            args[name] = passed(call, -1, name)  # by keyword only
        else:
            return None
    return Helper(form, args, where)


class ReturnsFiles(ProjectFiles):
    """The project's files, with what their helpers return."""

    # -- mask builders ----------------------------------------------------------------
    def returned(self, call: cst.Call, env, scope, text: str, evaluate=None, index=()):
        """The mask a call of a project function in another file returns
        (``make_pad_mask(lens)`` with ``make_pad_mask`` imported), as a
        ``masks.Mask`` whose origins are ``call`` and name the other file's
        place; None when that function is not a mask builder the analysis
        understands.  ``evaluate``: the caller's evaluation of an argument
        expression; with it, a builder that transforms a mask it is passed
        (``def invert(mask): return ~mask``) is evaluated with the caller's
        masks for its parameters (``transformed``), else with them unknown.
        ``index``: the element of each returned tuple the caller unpacks
        (``h, mask = to_dense_batch(...)``: ``(1,)``), read with the
        builder's parameters unknown."""
        try:
            return self._returned(call, env, scope, text, evaluate, tuple(index))
        except (OSError, ValueError, RecursionError):
            return None

    def _returned(self, call: cst.Call, env, scope, text: str, evaluate=None, index=()):
        loc = self._elsewhere(call.func, env, scope, methods=True)
        if loc is None:  # ``self.causal_mask()`` of a base of another file (probe AP's AP18)
            target = inherited_target(call.func, env, scope)
            loc = self._defined(target) if target is not None else None
            loc = (loc[0], loc[1] + PLAIN) if loc is not None else None  # ``self`` unknown
        if loc is None or loc[1].count(".") > 1:
            return None
        filename, name = loc
        if evaluate is not None and not index:
            got = self._transformed(filename, name, call, env, scope, text, evaluate)
            if got is not None:
                return got
        return self._builder_mask(filename, name, call, text, index)

    def override_returned(self, filename, sub, method, call, env, scope, text, evaluate):
        """The mask the plain method ``method`` of the class ``sub`` of the
        project file ``filename`` returns for ``call`` (``self.build_mask(lengths,
        t)`` in its base, whose own is abstract: ``masks/hooks.py``), read
        with ``self`` unknown; None otherwise."""
        try:
            return self._method_mask(
                filename, f"{sub}.{method}{PLAIN}", call, env, scope, text, evaluate
            )
        except (OSError, ValueError, RecursionError):
            return None

    def _method_mask(self, filename, name, call, env, scope, text, evaluate, index=()):
        """What ``name`` of ``filename`` returns for ``call``: with the caller's
        masks for its parameters, else with them unknown."""
        got = self._transformed(filename, name, call, env, scope, text, evaluate, index)
        return got if got is not None else self._builder_mask(filename, name, call, text, index)

    def property_returned(self, cls_expr, cls_at: tuple, node, text: str, attr: str):
        """The mask a ``@property`` of a class of another project file gives
        (``batch.frame_padding`` of ``batch: AudioBatch``, probe AM's AM08),
        read with ``self`` unknown; None otherwise."""
        try:
            loc = self._elsewhere(cls_expr, *cls_at)
            if loc is None or "." in loc[1]:
                return None
            got = self._builder_mask(loc[0], f"{loc[1]}.{attr}{PROPERTY}", node, text)
            if got is None:  # a field of a dataclass or NamedTuple, by its constructions
                got = self._builder_mask(loc[0], f"{loc[1]}.{attr}{FIELD}", node, text)
            return got
        except (OSError, ValueError, RecursionError):
            return None

    def instance_returned(
        self,
        built: cst.Call,
        built_at: tuple,
        call: cst.Call,
        env,
        scope,
        text,
        evaluate,
        index=(),
        method=None,
    ):
        """The mask a call of an instance returns (``self.causal_mask(L)``)
        when the instance is ``built`` (``SquareSubsequentMask()``, at
        ``built_at``: its env and scope) from a class of another project
        file whose ``__call__`` makes it, or, a module's, its ``forward``
        (``keep = self.keep(ids)``; with ``index``, that element of the
        tuple it returns: ``text, keep = self.prompt(ids)``); with
        ``method``, that plain method of the class (``self.masker.valid(n)``,
        read with ``self`` unknown: probe AI's AI16); None otherwise."""
        try:
            loc = self._elsewhere(built.func, *built_at)
            if loc is None or "." in loc[1]:
                return None
            for run in _RUN if method is None else (method + PLAIN,):
                name = f"{loc[1]}.{run}"
                got = self._method_mask(
                    loc[0], name, call, env, scope, text, evaluate, tuple(index)
                )
                if got is not None:
                    return got
            return None
        except (OSError, ValueError, RecursionError):
            return None

    def _builder_mask(self, filename, name, call, text, index=(), closure=False):
        """``builder_summary`` of ``name`` in ``filename`` (kept by the file's
        bytes) as the mask ``call`` gives; None when it says nothing."""
        salt = (str(RETURNS_VERSION), *(("closure",) if closure else ()), name, *map(repr, index))
        got = self._read(
            filename,
            salt,
            lambda got: isinstance(got, dict),
            lambda source: builder_summary(source, name, index, closure),
        )
        if not got:
            return None
        return mask_of(got, call, f"{text} -> {self.relative(filename)}:{got['line']}")

    def closure_returned(self, fcall: cst.Call, env, scope, call: cst.Call, text: str):
        """The mask that the function a factory of another project file returns
        gives for ``call`` (``self.pad_fn(ids)`` after ``self.pad_fn =
        make_pad_fn(PAD_ID)``, ``make_pad_fn`` imported; ``fcall`` is that
        factory's call): the inner function's returns with every parameter
        unknown, the factory's too; None when the factory does not return one
        nested function or its mask is unknown."""
        try:
            loc = self._elsewhere(fcall.func, env, scope)
            return self._builder_mask(*loc, call, text, closure=True) if loc is not None else None
        except (OSError, ValueError, RecursionError):
            return None

    def _transformed(self, filename, name, call, env, scope, text, evaluate, index=()):
        """The mask the builder ``name`` of ``filename`` returns for this
        call, its parameters bound to the masks the caller passes (each
        evaluated by ``evaluate`` where the caller stands); None when no
        argument is a known mask (the summary with unknown parameters then
        says as much) or the result is unknown.  The result's origins that
        the caller's masks carried stay theirs (lines of the linted file);
        the others are ``call``, and name the builder's place."""
        from ..masks.calls import bind_call
        from ..masks.domain import Mask, Origin
        from ..masks.literal_paths import OPEN, literal_of
        from ..splats import expand_call

        if not call.args:
            return None
        self.depend(filename)  # an edit of the builder changes what its callers are told
        read = self._function_read(filename, name)
        if read is None:
            return None
        fctx, func, fscope = read
        if not fscope.returns:
            return None
        # a method's ``cls`` or ``self`` (``Class.method``); a function's and a static one's none
        skip = 1 if "." in name and static_kind(func) != "staticmethod" else 0
        bound = bind_call(func, expand_call(call, env, scope), skip)
        masks: dict = {}
        for param, expr in bound.items():
            if literal_of(expr) is not OPEN and not isinstance(expr, cst.Integer):
                # ``kind="ignore"``, ``causal=True``: a choice of path (literal_paths)
                masks[param] = expr
                continue
            got = evaluate(expr) if expr is not None else None
            masks[param] = got if got is not None and (got.known or got.none) else None
        if not any(m is not None and (not isinstance(m, Mask) or m.known) for m in masks.values()):
            return None
        ev, m = _returned_mask(fctx, func, fscope, masks, tuple(index))
        if m.none or not m.known:
            return None
        carried = {
            id(o)
            for given in masks.values()
            if isinstance(given, Mask)
            for o in (given.origin, given.kind_origin, given.shape_origin)
            if o is not None
        }
        where = f"{text} -> {self.relative(filename)}"

        def moved(o):
            if o is None or id(o) in carried:
                return o
            return Origin(call, f"{where}:{ev.line(o.node)}: {ev.text(o.node)}", o.by_name)

        return replace(
            m,
            origin=moved(m.origin),
            kind_origin=moved(m.kind_origin),
            shape_origin=moved(m.shape_origin),
        )

    def _function_read(self, filename: str, name: str):
        """``read_function`` of a project file's text, kept for the process
        by the file's state (a few files: the builders a linted file calls)."""
        try:
            st = os.stat(filename)
        except OSError:
            return None
        key = (filename, st.st_mtime_ns, st.st_size, name)
        if key not in _FUNCTION_READS:
            if len(_FUNCTION_READS) >= MAX_FUNCTION_READS:
                del _FUNCTION_READS[next(iter(_FUNCTION_READS))]  # the oldest
            try:
                text = decode(read_regular(filename, MAX_READ_BYTES))
                _FUNCTION_READS[key] = read_function(text, name)
            except (OSError, SyntaxError, UnicodeDecodeError, LookupError, cst.ParserSyntaxError):
                _FUNCTION_READS[key] = None
        return _FUNCTION_READS[key]

    # -- helper forms -------------------------------------------------------------------
    def helper_form(
        self, call: cst.Call, env, scope, salt: str, read: Read, words: Tuple[str, ...] = ()
    ) -> Optional[Helper]:
        """``read`` of a top-level function of another project file that
        ``call`` names through an import (parsed only when its text holds one
        of ``words``, when given)."""
        loc = self._elsewhere(call.func, env, scope, methods=True)
        if loc is None:
            return None
        filename, name = loc

        def compute(text: str) -> Optional[dict]:
            if words and not _function_names(text, name, words):
                return None  # cheaper than LibCST's parse of the whole file
            got = read_function(text, name)
            if got is None:
                return None
            # ``MaskOps.per_head(m, h)``: a static or class method (probe AC's AC14)
            kind = static_kind(got[1]) if "." in name else "staticmethod"
            form = read(*got) if kind in ("staticmethod", "classmethod") else None
            if not form:
                return None
            params = _params(got[1])[1 if kind == "classmethod" else 0 :]
            return dict(form, all_params=params, kwonly=_keyword_only(got[1]))

        key = ("helper", str(HELPER_VERSION), salt, name)
        got = self._read(filename, key, _valid_form, compute)
        if not got:
            return None
        kwonly = got.get("kwonly") if isinstance(got.get("kwonly"), list) else []
        return _bound(got, got["all_params"], call, self.relative(filename), kwonly)

    def override_form(
        self, filename: str, sub: str, method: str, call: cst.Call, salt: str, read: Read
    ) -> Optional[Helper]:
        """``read`` of ``sub.method``, a plain method of a class of another
        project file that overrides the one ``call`` (``self.method(...)``) runs
        in its base (``overrides.Overrides``), read with ``self`` unknown."""
        name = f"{sub}.{method}{PLAIN}"

        def compute(text: str) -> Optional[dict]:
            got = read_function(text, name)
            form = read(*got) if got is not None else None
            if not form:
                return None
            return dict(form, all_params=_params(got[1])[1:], kwonly=_keyword_only(got[1]))

        try:
            key = ("override", str(HELPER_VERSION), salt, name)
            got = self._read(filename, key, _valid_form, compute)
        except (OSError, ValueError, RecursionError):
            return None
        if not got:
            return None
        kwonly = got.get("kwonly") if isinstance(got.get("kwonly"), list) else []
        return _bound(got, got["all_params"], call, self.relative(filename), kwonly)

    def inherited_form(self, call: cst.Call, env, scope, salt: str, read: Read):
        """``read`` of the method ``self.expand_kv(k, v)`` runs when the class
        inherits it from a base or mixin of another project file (probe AN's
        AN05: ``class Attention(RepeatKVMixin, nn.Module)``, the mixin in
        ``kv.py``), read as an override is, with ``self`` unknown."""
        target = inherited_target(call.func, env, scope)
        loc = self._defined(target) if target is not None else None
        if loc is None or loc[1].count(".") != 1:
            return None
        cls, method = loc[1].split(".")
        return self.override_form(loc[0], cls, method, call, salt, read)

    # -- the other file ------------------------------------------------------------------
    def _elsewhere(self, node, env, scope, methods=False) -> Optional[Tuple[str, str]]:
        """(file, name) of the top-level function of another project file that
        the imported name ``node`` is; None otherwise (a method: its self is
        the caller's object).  ``methods``: also ``Class.method`` of a class
        the name imports (``read_function`` reads it only when it is a
        static or class method)."""
        target = imported_target(node, env, scope)
        loc = self._defined(target) if target is not None else None
        if loc is None or loc[1].count(".") > (1 if methods else 0):
            return None
        return loc

    def _read(self, filename: str, salt: tuple, valid, compute) -> Optional[dict]:
        """``compute(text)`` of a project file (``{}`` for what it cannot read
        or gives nothing for), kept by the file's bytes and ``salt``."""

        def built(data: bytes) -> dict:
            try:
                return compute(decode(data)) or {}
            except (SyntaxError, UnicodeDecodeError, LookupError, cst.ParserSyntaxError):
                return {}

        return self._kept(filename, salt, valid, built)

    # -- torch modules made by factories ----------------------------------------------
    def module_made(self, node, env, scope) -> Optional[str]:
        """The torch attention module class (qualified) that a top-level
        function of another project file builds and returns (its summary's
        ``TORCH_MODULES``), for the call of the name ``node`` imports; the
        module's constructor arguments stay the factory's own (unknown here)."""
        target = imported_target(node, env, scope) or inherited_target(node, env, scope)
        try:
            return self.torch_factory(target) if target is not None else None
        except (OSError, ValueError, RecursionError):
            return None


def inherited_target(node, env, scope) -> Optional[Tuple[int, str]]:
    """``self._make_attention`` in a class that does not define it, one of
    whose bases is imported from a project file (a mixin, probe AC's FA01
    and AC20): (relative level, ``Base._make_attention``) of the first such
    base; None otherwise."""
    if not (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)):
        return None
    owners = lookup(node.value.value, env, scope)
    if len(owners) != 1 or owners[0].kind != DefKind.SELF or owners[0].extra is None:
        return None
    info = owners[0].extra
    if node.attr.value in info.methods:
        return None
    for base in info.base_exprs:
        target = imported_target(base, info.env, info.scope)
        if target is not None and target[1]:
            return target[0], target[1] + "." + node.attr.value
    return None


# roots of qualified names that are never a helper of the project
LIBRARIES = ("torch.", "einops.", "numpy.", "math.", "functools.", "builtins.")


def may_be_helper(qualname: Optional[str]) -> bool:
    """Whether a call with this qualified name (None: unknown) may run a helper
    of the project: a cheap test before ``helper_reading``."""
    return qualname is None or not qualname.startswith(LIBRARIES)


def _valid_form(got) -> bool:
    """A stored helper reading as ``helper_form`` writes it: ``{}``, or its
    parameters and the helper's (a changed or damaged entry is read again)."""
    if not isinstance(got, dict):
        return False
    if not got:
        return True
    names = (got.get("params"), got.get("all_params"))
    return all(isinstance(n, list) and all(isinstance(x, str) for x in n) for n in names)


def builder_summary(source: str, name: str, index=(), closure: bool = False) -> dict:
    """What the top-level function ``name`` of a file returns, as the mask
    analysis sees it with every parameter unknown (``{}`` when nothing is
    known): ``def make_pad_mask(lengths): return arange(...)[None, :] >=
    lengths[:, None]`` is an ignore padding mask whatever ``lengths`` is.
    Each return path is evaluated in the file it is written in (its own
    helpers and constants are followed, its parameters are not), and the
    paths are joined; with ``index``, the element of each returned tuple.
    With ``closure``, what the one function ``name`` defines and returns
    gives (``def make_pad_fn(pad_id): def is_pad(ids): return ids == pad_id;
    return is_pad``), its parameters and the factory's unknown.
    Small JSON, cached by the file's bytes, ``name`` and ``index``."""
    from ..masks.calls import Frame, returned_function

    if name.endswith(FIELD):  # a record class's field, by its constructions
        return field_summary(source, name[: -len(FIELD)], _FileContext)
    read = read_function(source, name)
    if read is None:
        return {}
    fctx, func, fscope = read
    outer = None
    if closure:
        inner = returned_function(func, fscope)
        if inner is None or fctx.flow.functions.get(id(inner)) is None:
            return {}
        outer = Frame(func, fscope, dict.fromkeys(_all_params(func)), {}, None, None)
        func, fscope = inner, fctx.flow.functions[id(inner)]
    if not fscope.returns:
        return {}
    ev, m = _returned_mask(
        fctx, func, fscope, dict.fromkeys(_all_params(func)), tuple(index), outer
    )
    return summary_of(ev, m, func, name)


def _returned_mask(fctx, func, fscope, args: dict, index=(), outer=None):
    """(the evaluator of the builder's file, the join of what every return
    path of ``func`` gives, or its element ``index``) with its parameters
    bound to ``args`` (None: unknown; a ``Mask``: a caller's, evaluated where
    it stands); ``outer``: the frame of the factory that made ``func``."""
    from ..masks import At, MaskEvaluator, join_all
    from ..masks.calls import Frame, falls_off_end
    from ..masks.domain import NONE_MASK
    from ..masks.literal_paths import not_taken

    ev = MaskEvaluator(fctx)
    frame = Frame(func, fscope, args, {}, None, outer)
    conds = fscope.return_conds
    values = [
        ev._indexed(expr, index, At(renv, fscope, frame, 0))
        if index
        else ev.eval(expr, At(renv, fscope, frame, 0))
        for i, (expr, renv) in enumerate(fscope.returns)
        if not (i < len(conds) and not_taken(conds[i], frame))
    ]
    if falls_off_end(func) and not index:
        values.append(NONE_MASK)
    return ev, join_all(values)


_RUN = ("__call__", "forward")  # what a call of an instance runs


# after a ``Class.method`` name: a plain method, read with ``self`` unknown
PLAIN = "!"
PROPERTY = "?"  # after a ``Class.attr`` name: its ``@property``, read with ``self`` unknown


def forget() -> None:
    """The linted file is done: the tree of the last file read goes too."""
    _LAST_PARSED[:] = [None, None]


def read_function(source: str, name: str):
    """(the file's context, the top-level ``def name``, its flow scope) of a
    file's text, for a reading of what the function returns; None when the
    name is not one plain function there (rebound after it, async, a
    generator, or under a decorator that may change what a call gives).
    ``Class.method``: a static or class method of a top-level class;
    ``Class.method!`` (``PLAIN``): any method of it (a subclass's override,
    a mask maker's named method), read with ``self`` unknown."""
    from ..flow import FlowPass
    from ..masks.calls import is_generator
    from ..resolve import Resolver

    prop = name.endswith(PROPERTY)
    plain = name.endswith(PLAIN) or prop
    if plain:
        name = name[: -len(PLAIN)]
    if _LAST_PARSED[0] != source:
        _LAST_PARSED[:] = [None, None]  # one tree at a time
        _LAST_PARSED[:] = [source, cst.parse_module(source)]
    module = _LAST_PARSED[1]
    owner, _, method = name.rpartition(".")
    func = None
    for stmt in module.body:
        if isinstance(stmt, (cst.ClassDef if owner else cst.FunctionDef)) and stmt.name.value == (
            owner or name
        ):
            func = stmt  # the last definition wins, as at import time
        elif func is not None and _rebinds(stmt, owner or name):
            return None  # ``make_mask = other(make_mask)``: not the function read here
    allowed = _SAME_RESULT
    if owner and func is not None:
        body = func.body.body if isinstance(func.body, cst.IndentedBlock) else ()
        found = [s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == method]
        func = found[-1] if found else None
        if func is None or (static_kind(func) == "method" and method not in _RUN and not plain):
            return None  # a method called through the class: its self is an argument
        # ``__call__``, ``forward``: what a call of an instance runs, ``self`` unknown
        allowed = _SAME_RESULT | {"staticmethod", "classmethod"}
        if prop != (
            func is not None and "property" in [last_word(d.decorator) for d in func.decorators]
        ):
            return None  # a property is read, not called: ``Class.attr?`` names one
        allowed = allowed | {"property"} if prop else allowed
    if func is None or func.asynchronous is not None or is_generator(func):
        return None
    if any(last_word(d.decorator) not in allowed for d in func.decorators):
        return None  # a decorator may change what a call returns
    flow = FlowPass()
    flow.run(module)
    fscope = flow.functions.get(id(func))
    if fscope is None:
        return None
    return _FileContext(module, flow, Resolver(flow)), func, fscope


# decorators that keep what the function returns
_SAME_RESULT = {"lru_cache", "cache", "no_grad", "inference_mode", "script", "compile", "wraps"}


def _rebinds(stmt, name: str) -> bool:
    """Whether a top-level statement may bind ``name`` again (an assignment,
    an import, a class, anything compound that could hold one)."""
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            if isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
                targets = (
                    [t.target for t in small.targets]
                    if isinstance(small, cst.Assign)
                    else [small.target]
                )
                if any(name in _names(t) for t in targets):
                    return True
            elif isinstance(small, (cst.Import, cst.ImportFrom)):
                code = cst.Module([]).code_for_node(small)
                if name in code:
                    return True
        return False
    if isinstance(stmt, cst.ClassDef):
        return stmt.name.value == name
    if isinstance(stmt, cst.FunctionDef):
        return False
    return name in cst.Module([]).code_for_node(stmt)  # if/try/for at top level


def _names(target) -> set:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        out: set = set()
        for el in target.elements:
            out |= _names(el.value)
        return out
    return set()


class _FileContext:
    """What the mask evaluator reads of a file (the engine's Context, minus the rules)."""

    def __init__(self, module, flow, resolver):
        self.module = module
        self.flow = flow
        self.resolver = resolver
        self.analyses: dict = {}
        self.project = None  # the other file's own imports are not followed


def mask_of(summary: dict, call, text: str):
    """The ``masks.Mask`` a call of a summarised builder gives; every origin
    is the call (its line in the linted file), its text names the builder's place."""
    from ..masks.domain import Kind, Mask, Meaning, Origin

    origin = Origin(call, f"{text}: {summary.get('source')}", bool(summary.get("by_name")))
    meaning = Meaning(summary["meaning"]) if summary.get("meaning") else None
    kind = Kind(summary["kind"]) if summary.get("kind") else None
    layout = tuple(summary["layout"]) if summary.get("layout") else None
    tri = tuple(summary["tri"]) if summary.get("tri") else None
    return Mask(
        meaning=meaning,
        kind=kind,
        layout=layout,
        dtype=summary.get("dtype"),
        tri=tri,
        fill=summary.get("fill"),
        origin=origin if meaning is not None else None,
        kind_origin=origin if kind is not None else None,
        shape_origin=origin if layout is not None else None,
        causal=bool(summary.get("causal")),
        zero_one=bool(summary.get("zero_one")),
    )
