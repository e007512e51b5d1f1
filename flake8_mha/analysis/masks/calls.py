"""Calls between functions of the file: frames, argument binding, callers,
return paths.

A helper's parameter is evaluated either inside a ``Frame`` (the helper's
parameters bound to one caller's argument expressions, while the evaluator
follows that call into the helper's return paths) or, outside any frame, as
the join of what every call of the function in this file passes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Dict, List, NamedTuple, Optional

import libcst as cst

from ..program.local_names import function_key
from ..program.callgraph import FileCalls, bind_call, frame_for  # noqa: F401  (the package's names for them)
from ..classes import instance_class, property_return
from ..records import field_values
from ..flow import ClassInfo, Def, Env, Scope, children, lookup
from .literal_paths import not_taken
from ..splats import element, expand_call, item
from ..tree import is_none, leaves
from .domain import KEEP, NONE_MASK, UNKNOWN_MASK, Mask, Origin, join_all
from ..program.conventions import binds_padding, encoder_layer
from .names import documented_padding, last_name, parameter_by_name

MAX_CALLER_DEPTH = 3
MAX_HELPER_FRAMES = 4


MAX_HOLDER_DEPTH = 24  # an object's attribute read inside another's: give up past it


class Frame:
    """Parameters of a helper function bound to a caller's argument expressions."""

    __slots__ = ("func", "fscope", "args", "env", "scope", "parent")

    def __init__(self, func, fscope, args, env, scope, parent):
        self.func = func  # the FunctionDef
        self.fscope = fscope
        # None: unknown (a splat); a Mask: a caller's argument already evaluated
        # where it stands (a builder of another file: program/returns.py)
        self.args: Dict[str, object] = args
        self.env = env  # the caller's environment
        self.scope = scope
        self.parent: Optional[Frame] = parent


class At(NamedTuple):
    """Where an expression is evaluated: the reaching definitions (``env``) and
    scope of the flow pass, the helper frame whose parameters are bound, and
    the evaluation depth spent so far (the evaluator gives up past a limit).

    Immutable; a NamedTuple rather than a frozen dataclass because the
    evaluator makes one per step and a tuple is several times cheaper to make.
    """

    env: Env
    scope: Optional[Scope]
    frame: Optional[Frame]
    depth: int

    def deeper(self) -> "At":
        return At(self.env, self.scope, self.frame, self.depth + 1)

    def but(self, env: Env, scope: Optional[Scope], frame: Optional[Frame]) -> "At":
        """Another place, at the same depth."""
        return At(env, scope, frame, self.depth)

    def of(self, d: Def, frame: Optional[Frame]) -> "At":
        """The place of a definition, at the same depth."""
        return At(d.env, d.scope, frame, self.depth)


def kw(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def _pos(call: cst.Call, i: int) -> Optional[cst.BaseExpression]:
    n = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is None:
            if n == i:
                return arg.value
            n += 1
    return None


def arg(call: cst.Call, i: int, name: str) -> Optional[cst.BaseExpression]:
    """The argument passed as ``name=`` or as the ``i``-th positional one."""
    found = kw(call, name)
    return found if found is not None else _pos(call, i)


def positional(call: cst.Call) -> Optional[list]:
    """The positional arguments, or None behind a ``*splat``."""
    out = []
    for a in call.args:
        if a.star:
            return None
        if a.keyword is None:
            out.append(a.value)
    return out


# --------------------------------------------------------------------------- return paths


def is_generator(func: cst.FunctionDef) -> bool:
    stack = list(children(func.body))
    while stack:
        n = stack.pop()
        if isinstance(n, (cst.Yield,)):
            return True
        if isinstance(n, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            continue
        stack.extend(children(n))
    return False


def returned_function(func: cst.FunctionDef, fscope: Scope) -> Optional[cst.FunctionDef]:
    """The function a factory returns: every return path of ``func`` gives the
    name of the one plain ``def`` nested in it (``def make_pad_fn(pad_id): def
    is_pad(ids): return ids == pad_id; return is_pad``); None otherwise (a
    path that returns something else or falls off the end, a decorated or
    async inner function, a generator)."""
    if not fscope.returns or falls_off_end(func) or is_generator(func):
        return None
    found = None
    for expr, renv in fscope.returns:
        defs = lookup(expr.value, renv, fscope) if isinstance(expr, cst.Name) else ()
        if len(defs) != 1 or defs[0].kind != "def" or defs[0].scope is not fscope:
            return None
        inner = defs[0].node
        if not isinstance(inner, cst.FunctionDef) or (found is not None and inner is not found):
            return None
        found = inner
    if found.decorators or found.asynchronous is not None or is_generator(found):
        return None
    return found


def falls_off_end(func: cst.FunctionDef) -> bool:
    """Whether a path of ``func`` runs off its end (returns None)."""
    return not leaves(func.body)


# --------------------------------------------------------------------------- the evaluator's part


class Calls(FileCalls):
    """The part of ``MaskEvaluator`` that follows calls: parameters from their
    callers, helpers into their return paths, ``self.method(...)`` and
    ``module(...)`` into ``forward``."""

    def _param(self, d: Def, at: At) -> Mask:
        p: cst.Param = d.node
        name = p.name.value
        func = d.extra
        frame = at.frame
        if frame is not None and frame.func is func:
            if name in frame.args:
                arg = frame.args[name]
                if arg is None:
                    return UNKNOWN_MASK
                if isinstance(arg, Mask):  # what a caller in another file passes, evaluated there
                    return arg
                return self.eval(arg, at.but(frame.env, frame.scope, frame.parent))
            if p.default is not None:
                return self.eval(p.default, at.but({}, d.scope.parent if d.scope else None, None))
            return UNKNOWN_MASK
        if not isinstance(func, cst.FunctionDef):
            return UNKNOWN_MASK  # a lambda's parameter
        key = (id(p), self._caller_depth)
        if key in self._param_cache:
            return self._param_cache[key]
        guard = ("param", id(p))
        if guard in self._active:
            return UNKNOWN_MASK
        self._active.add(guard)
        try:
            value = self._from_callers(func, name, p, d, at)
        finally:
            self._active.discard(guard)
        if value.meaning is None and value.kind is None and not value.none:
            named = parameter_by_name(p, name, func)
            if (
                named is not None
                and not handed_by_project(self.ctx, d, name)
                and not self._encoder_layer_mask(d, name)
            ):
                value = named if not self._project_means_padding(name, named) else value
        if (
            value.shape is None
            and not value.none
            and documented_padding(func, name)
            and not handed_by_project(self.ctx, d, name)
        ):  # ``attn_mask ... B x N`` in its docstring: a padding mask's shape
            told = Origin(p, f"parameter {name}, (N, S) in its docstring", True, docstring=True)
            value = replace(
                value, layout=("N", "S"), shape_origin=told, origin=value.origin or told
            )
        self._param_cache[key] = value
        return value

    def _encoder_layer_mask(self, d: Def, name: str) -> bool:
        """``src_key_padding_mask`` of the ``forward`` of a class the project
        hands to ``nn.TransformerEncoder`` as its layer: torch gives it a
        float mask there, whatever True meant (``conventions.encoder_layer``)."""
        cls = getattr(d.scope, "cls", None) if d.scope is not None else None
        func = d.extra
        if name != "src_key_padding_mask" or cls is None or func.name.value != "forward":
            return False
        for site in self.flow.calls:  # this file's own encoders
            call = site.node
            if last_name(call.func) == "TransformerEncoder" and call.args:
                layer = call.args[0].value
                if isinstance(layer, cst.Call) and last_name(layer.func) == cls.name:
                    return True
        project = getattr(self.ctx, "project", None)
        path = getattr(project, "path", None)
        if not path or not getattr(project, "files", False):
            return False
        return encoder_layer(path, cls.name, getattr(project, "depend", None))

    def _project_means_padding(self, name: str, named: Mask) -> bool:
        """The tokenizer's name read as 1 = keep, where the project itself binds
        that name to a comparison with a pad id (shiba: ``attention_mask =
        (id_tensor == self.PAD)``): the name says nothing sure there."""
        project = getattr(self.ctx, "project", None)
        path = getattr(project, "path", None)
        if named.meaning != KEEP or not path or not getattr(project, "files", False):
            return False
        return binds_padding(path, name, getattr(project, "depend", None))

    def _from_callers(self, func: cst.FunctionDef, name: str, p: cst.Param, d: Def, at: At) -> Mask:
        """The join of what every call of ``func`` in this file passes as ``name``."""
        callers = self.callers().get(id(func), [])
        if not callers or self._caller_depth >= MAX_CALLER_DEPTH:
            return UNKNOWN_MASK
        if handed_by_project(self.ctx, d, name):  # another file's call hands it one too:
            return UNKNOWN_MASK  # each call is judged where it hands it (probe AP's DUP01)
        values = []
        self._caller_depth += 1
        try:
            for site, skip in callers:
                args = bind_call(func, expand_call(site.node, site.env, site.scope), skip)
                if name in args:
                    arg = args[name]
                    if arg is None:
                        return UNKNOWN_MASK
                    values.append(self.eval(arg, at.but(site.env, site.scope, None)))
                elif p.default is not None:
                    if is_none(p.default):
                        values.append(NONE_MASK)
                    else:
                        default_at = at.but({}, d.scope.parent if d.scope else None, None)
                        values.append(self.eval(p.default, default_at))
                else:
                    return UNKNOWN_MASK
        finally:
            self._caller_depth -= 1
        return self._agreed(values)

    def keyed_param(self, node: cst.Name, key: str, at: At) -> Mask:
        """``batch["key_padding"]`` of a parameter ``batch``: the entry each
        caller's argument holds (``model(x, collate(ids))`` with ``collate``
        returning a dict of masks; probe AM's AM17), joined as ``_agreed``."""
        defs = lookup(node.value, at.env, at.scope)
        if (
            len(defs) != 1
            or defs[0].kind != "param"
            or not isinstance(defs[0].extra, cst.FunctionDef)
        ):
            return UNKNOWN_MASK
        func, name, frame = defs[0].extra, node.value, at.frame
        if frame is not None and frame.func is func:
            arg = frame.args.get(name)
            if not isinstance(arg, cst.BaseExpression):
                return UNKNOWN_MASK
            return self._indexed(arg, (key,), at.but(frame.env, frame.scope, frame.parent))
        callers = self.callers().get(id(func), [])
        guard = ("keyed", id(defs[0].node), key)
        if not callers or self._caller_depth >= MAX_CALLER_DEPTH or guard in self._active:
            return UNKNOWN_MASK
        values = []
        self._caller_depth += 1
        self._active.add(guard)
        try:
            for site, skip in callers:
                arg = bind_call(func, expand_call(site.node, site.env, site.scope), skip).get(name)
                if arg is None:
                    return UNKNOWN_MASK
                values.append(self._indexed(arg, (key,), at.but(site.env, site.scope, None)))
        finally:
            self._caller_depth -= 1
            self._active.discard(guard)
        return self._agreed(values)

    @staticmethod
    def _agreed(values: List[Mask]) -> Mask:
        """The join of values that may each be the one at run time: unknown when
        one of them is (a join would let the known ones speak for it)."""
        for v in values:
            if not v.none and v.meaning is None and v.kind is None:
                return UNKNOWN_MASK
        return join_all(values)

    def _self_class(self, node: cst.Attribute, env, scope) -> Optional[ClassInfo]:
        return self.resolver.self_class(node, env, scope)

    def _held_by_instance(self, node: cst.Attribute, at: At) -> Optional[Mask]:
        """``attn_mask.mask`` of ``attn_mask = TriangularCausalMask(B, L)``, an
        instance of one class of this file (the time-series libraries' causal
        mask holder, release review 30): what its methods assign to that
        attribute, or what its ``@property`` of that name returns, the
        constructor's arguments unknown.  None for anything else."""
        if not isinstance(node.value, cst.Name) or at.depth > MAX_HOLDER_DEPTH:
            return None
        classes = self.resolver.instance_classes(node.value, at.env, at.scope)
        if not classes:  # ``batch: Batch``, a parameter annotated with the class (probe AM)
            annotated = instance_class(self.resolver, node.value, at.env, at.scope)
            classes = [annotated] if annotated is not None else None
            if annotated is None:
                return self._annotated_elsewhere(node, at)
        if not classes or any(c is not classes[0] for c in classes):
            return None
        cls, attr = classes[0], node.attr.value
        defs = self.resolver.attr_defs(cls, attr)
        if defs:
            return join_all([self._def(d, At(d.env, d.scope, None, at.depth + 1)) for d in defs])
        got = property_return(self.resolver, self.flow, cls, attr)
        if got:
            return self.eval(got[0], At(got[1], got[2], None, at.depth + 1))
        given = field_values(self.resolver, self.flow, cls, attr)  # ``Batch(mask=...)``
        if given is None:
            return None
        return join_all(
            [self.eval(e, At(env, scope, None, at.depth + 1)) for e, env, scope in given]
        )

    def _annotated_elsewhere(self, node: cst.Attribute, at: At) -> Optional[Mask]:
        """``batch.padding`` of a parameter annotated with a class of another
        project file (``batch: AudioBatch``): what its ``@property`` gives."""
        project = getattr(self.ctx, "project", None)
        defs = lookup(node.value.value, at.env, at.scope)
        if project is None or len(defs) != 1 or defs[0].kind != "param":
            return None
        note = defs[0].node.annotation
        named = note.annotation if note is not None else None
        if not isinstance(named, (cst.Name, cst.Attribute)) or not hasattr(
            project, "property_returned"
        ):
            return None
        at_def = (defs[0].env, defs[0].scope)
        return project.property_returned(named, at_def, node, self.text(node), node.attr.value)

    def _helper(self, found, node: cst.Call, at: At, index) -> Mask:
        """The value a helper of this file returns for this call (element
        ``index`` of it when the call's result is unpacked)."""
        func, skip = found
        fscope = self.flow.functions.get(id(func))
        if fscope is None or not fscope.returns or is_generator(func):
            return UNKNOWN_MASK
        if not room_for(at.frame, (func,)):
            return UNKNOWN_MASK  # recursion, or too deep
        bound = bind_call(func, expand_call(node, at.env, at.scope), skip)
        inner = Frame(func, fscope, bound, at.env, at.scope, at.frame)
        return self._returned(inner, at, index)

    def yielded(self, node, index, at: At) -> Optional[Mask]:
        """What a loop's target part ``index`` takes over a call of a
        generator of this file (``for blk, mask in self.layer_masks(T)``,
        probe AN's AN29): the join of every ``yield`` of it, the call's
        arguments bound to its parameters; None when ``node`` is no such call."""
        if not isinstance(node, cst.Call):
            return None
        name = node.func.value if isinstance(node.func, cst.Name) else None
        if name in ("zip", "enumerate") and index and not lookup(name, at.env, at.scope):
            args = node.args  # ``zip(self.blocks, self.layer_masks(T))``: the generator's part
            if any(a.star or a.keyword is not None for a in args):
                return None
            if name == "zip" and index[0] < len(args):
                return self.yielded(args[index[0]].value, index[1:], at)
            if name == "enumerate" and index[0] == 1 and len(args) == 1:
                return self.yielded(args[0].value, index[1:], at)
            return None
        found = self.callee(node, at.env, at.scope)
        fscope = self.flow.functions.get(id(found[0])) if found is not None else None
        if fscope is None or not fscope.yields or not room_for(at.frame, (found[0],)):
            return None
        bound = bind_call(found[0], expand_call(node, at.env, at.scope), found[1])
        frame = Frame(found[0], fscope, bound, at.env, at.scope, at.frame)
        values = []
        for expr, yenv in fscope.yields:
            inside = at.but(yenv, fscope, frame)
            values.append(self._indexed(expr, index, inside) if index else self.eval(expr, inside))
        return join_all(values)

    def _returned(self, frame: Frame, at: At, index=None) -> Mask:
        """The join of what every return path of the frame's function gives
        (element ``index`` of it), a path that falls off the end ``None``."""
        values = []
        conds = frame.fscope.return_conds
        for i, (expr, renv) in enumerate(frame.fscope.returns):
            if i < len(conds) and not_taken(conds[i], frame):
                continue  # ``if kind == "ignore": return ...`` of a call passing "keep"
            inside = at.but(renv, frame.fscope, frame)
            values.append(self._indexed(expr, index, inside) if index else self.eval(expr, inside))
        if falls_off_end(frame.func):
            values.append(NONE_MASK)
        return join_all(values)

    def _closures(self, node: cst.Call, at: At) -> Optional[Mask]:
        """A call of the function a factory returned: ``make_pad_fn(pad_id)(ids)``,
        ``fn = make_pad_fn(pad_id)`` then ``fn(ids)``, or ``self.pad_fn =
        make_pad_fn(pad_id)`` in a method of the class then ``self.pad_fn(ids)``.
        The inner function's returns are evaluated with its parameters bound
        to this call's arguments and the factory's to the arguments of the call
        that made it (a factory of another project file: its returns with the
        parameters unknown, ``program/returns.py``).  None when the callee is
        not such a function, or one of the places that made it is not."""
        made = self._factory_calls(node.func, at)
        if not made:
            return None
        values = []
        for fcall, fat in made:
            got = self._closure(fcall, fat, node, at)
            if got is None:
                return None
            values.append(got)
        return self._agreed(values)

    def _factory_calls(self, func, at: At) -> Optional[List[tuple]]:
        """The calls that made the callee ``func``, each with where it stands."""
        if isinstance(func, cst.Call):
            return [(func, at)]
        if isinstance(func, cst.Name):
            defs = lookup(func.value, at.env, at.scope)
            if not defs or any(
                d.kind != "assign" or not isinstance(d.node, cst.Call) for d in defs
            ):
                return None
            return [(d.node, at.of(d, frame_for(d.scope, at.frame))) for d in defs]
        defs = self.instance_assignments(func, at.env, at.scope)  # ``self.pad_fn``
        if not defs or any(not isinstance(d.node, cst.Call) for d in defs):
            return None
        return [(d.node, At(d.env, d.scope, None, at.depth)) for d in defs]

    def _closure(self, fcall: cst.Call, fat: At, node: cst.Call, at: At) -> Optional[Mask]:
        found = self.callee(fcall, fat.env, fat.scope)
        if found is None:
            project = getattr(self.ctx, "project", None)
            if project is None or not hasattr(project, "closure_returned"):
                return None
            return project.closure_returned(
                fcall,
                fat.env,
                fat.scope,
                node,
                f"{self.text(node.func)}() made by {self.text(fcall.func)}()",
            )
        factory, skip = found
        fscope = self.flow.functions.get(id(factory))
        inner = returned_function(factory, fscope) if fscope is not None else None
        iscope = self.flow.functions.get(id(inner)) if inner is not None else None
        if iscope is None or not iscope.returns:
            return None
        if not room_for(at.frame, (factory, inner), 2):
            return UNKNOWN_MASK  # recursion, or too deep
        made = Frame(
            factory,
            fscope,
            bind_call(factory, expand_call(fcall, fat.env, fat.scope), skip),
            fat.env,
            fat.scope,
            at.frame,
        )
        bound = bind_call(inner, expand_call(node, at.env, at.scope), 0)
        return self._returned(Frame(inner, iscope, bound, at.env, at.scope, made), at)

    def _indexed(self, node, index, at: At) -> Mask:
        """Element ``index`` of a tuple-valued expression (a helper returning several masks)."""
        if not index:
            return self.eval(node, at)
        if isinstance(index[0], str):  # ``masks["pad"]`` of a helper returning a dict
            found = item(node, index[0], at.env, at.scope) if isinstance(node, cst.Dict) else None
            if found is not None:
                return join_all(
                    [
                        self._indexed(e, index[1:], At(env, sc, frame_for(sc, at.frame), at.depth))
                        for e, env, sc in found
                    ]
                )
            if not isinstance(node, (cst.Call, cst.Name)):
                return UNKNOWN_MASK
        elif isinstance(node, (cst.Tuple, cst.List)):
            found = element(node, index[0], at.env, at.scope)  # counts through *splats
            if found is None:
                return UNKNOWN_MASK
            return join_all(
                [
                    self._indexed(
                        e, index[1:], At(env, scope, frame_for(scope, at.frame), at.depth)
                    )
                    for e, env, scope in found
                ]
            )
        if isinstance(node, cst.Call):
            found = self.callee(node, at.env, at.scope)
            if found is not None:
                return self._helper(found, node, at, index)
            project = getattr(self.ctx, "project", None)
            if project is not None:  # ``h, mask = to_dense_batch(...)`` of another file
                got = project.returned(
                    node, at.env, at.scope, self.text(node.func) + "()", index=index
                )
                if got is None:  # ``text, keep = self.prompt(ids)``, a module of another file
                    got = self._instance_mask(project, node, at, index)
                if got is not None:
                    return got
        if isinstance(node, cst.Name):
            defs = lookup(node.value, at.env, at.scope)
            if defs and all(d.kind == "assign" for d in defs):
                return join_all(
                    [
                        self._indexed(d.node, index, at.of(d, frame_for(d.scope, at.frame)))
                        for d in defs
                    ]
                )
        return UNKNOWN_MASK


def room_for(frame: Optional[Frame], funcs, added: int = 1) -> bool:
    """Whether ``added`` frames of ``funcs`` may go on top of ``frame``: none
    of them is already being evaluated (recursion), and the frames stay
    within ``MAX_HELPER_FRAMES`` (one more than the helpers a call may nest)."""
    depth = 0
    while frame is not None:
        depth += 1
        if any(frame.func is f for f in funcs):
            return False
        frame = frame.parent
    return depth + added <= MAX_HELPER_FRAMES + 1


def handed_by_project(ctx, d: Def, name: str, kv: bool = False) -> bool:
    """Whether another file of the project calls the function that has the
    parameter ``d`` (named ``name``) and hands it a mask there: what that
    call passes is judged at that call (RULES.md: where the fact enters the
    chain), so the parameter's name says nothing here (probe J's keep-mask,
    handed through a block to an attention class as ``padding_mask``).
    ``kv``: a mask the function multiplies into keys or values (MHA015,
    ``Project.passed_elsewhere``)."""
    return _asked(ctx, d, "passed_elsewhere", name, kv)


def kv_summarised(ctx, d: Def, name: str) -> bool:
    """Whether the function that has the parameter ``d`` (named ``name``)
    multiplies it into keys or values its summary follows (``reaches_kv``):
    each caller's mask is judged at its call."""
    return _asked(ctx, d, "reaches_kv", name)


def _asked(ctx, d: Def, question: str, *args) -> bool:
    """The project's answer to ``question`` about the function that has the
    parameter ``d``; False without a project that answers it."""
    project = getattr(ctx, "project", None)
    key = function_key(d.scope)
    if project is None or key is None or not hasattr(project, question):
        return False
    return getattr(project, question)(key, *args)
