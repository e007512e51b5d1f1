"""Calls of the project's own functions, followed at the call site.

A file calls ``attend(q, k, v, mask, is_causal=True)``, defined in this file
or imported from its project, and ``attend`` hands its parameters to
``F.scaled_dot_product_attention``.  ``files.py`` finds the file
``attend`` lives in (never importing or running it) and its summary
(``summaries.py``): which parameters reach which SDPA argument and through
what transformation.  Here the call of ``attend`` becomes an SDPA call whose
arguments are the caller's (``SdpaCall.through`` names the wrapper), so the
SDPA rules fire at the call site, naming the wrapper's SDPA call.  The same
summary serves a wrapper of the linted file itself: one mechanism, wherever
the callee lives.  See docs/reach.md for what is followed and what is not.
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Tuple

import libcst as cst

from ..classes import class_default
from ..events import FillCall, SdpaCall
from .. import reach, splats
from ..flow import CallSite, DefKind, ScopeKind, lookup
from ...core.atomic import read_regular
from ...core.positions import start_positions
from ...core.torch_api import BY_NAME, SDPA_QUALNAME
from ..values import UNKNOWN, literal
from . import callers, chains, instances, passed_down, signatures, wrapped
from .callgraph import CHECKPOINT, checkpointed
from .files import ProjectFiles, decode, module_constants, module_parts, project_root  # noqa: F401
from .composing import SECOND_LACKS, fill_apart
from .fills import FILL_SINKS, FILL_TEXT, KV, RETURNED, SOFTMAX
from .kv_scores import HANDWRITTEN
from .returned_scores import softmaxed_result
from .forms import sdpa_summary
from .aliases import followed
from .local_names import annotated_class, enclosing_class, instance_name, own_definition
from .local_names import self_forward
from .binding import apply as _apply, bind as _bind, bind_factory, fixed as _fixed  # noqa: F401
from .binding import SPLAT, known as _known, left_off
from .constants import ConstantFiles
from .returns import imported_target as _imported
from .summaries import ATTRS, TRUE_HINT, VARIANT
from .handed_masks import HandedMasks
from .handed_params import HandedParams
from .method_calls import MethodCalls
from .overrides import Overrides
from .wrapped import PARTIAL_SDPA, WrappedModuleCall


class Project(MethodCalls, HandedParams, Overrides, HandedMasks, ConstantFiles):
    """The project around one linted file, and calls of its functions.
    ``settled``: per class of this file, the ``__init__`` parameters whose
    value every construction in the project fixes, as the analysis asked
    (``{cls: {param: (value, constructions)}}``), for the messages."""

    settled: Dict[str, Dict[str, tuple]]

    def own(self, source: str, tree=None) -> None:
        super().own(source, tree)
        signatures.given_tree(source, tree)
        self.settled = {}
        self._left_off: Dict[tuple, bool] = {}
        self.lambdas: Dict[int, set] = {}  # id(a followed lambda's call) -> its callers' sinks
        # what the rules asked of the project about parameters, in order:
        # (BUILT or CALLED, the class or function, the parameter, the answer),
        # the answer (SETTLED, value, count), (KNOWN, value, count) for a
        # value every call passes that is not off, (OUTSIDE,) or (OPEN,); the
        # engine reads the asks each rule made for each finding (its messages)
        self.asks: List[tuple] = []
        self._answers: Dict[tuple, tuple] = {}  # (BUILT or CALLED, owner, param) -> (got, answer)
        self._around: Optional[list] = None  # callers.project_files of this file, once asked

    # -- the call site ------------------------------------------------------------
    def classify(self, site: CallSite, resolver) -> Optional[SdpaCall]:
        """The SDPA call a call of a project wrapper amounts to, or None."""
        try:
            return self._classify(site, resolver)
        except (OSError, ValueError, RecursionError):
            # another file that cannot be read or resolved (a path too long, a
            # name with a NUL): that call is not followed; the analysis goes on
            return None

    def _classify(self, site: CallSite, resolver):
        node = site.node
        if resolver.qualname(node.func, site.env, site.scope) in CHECKPOINT:
            node = checkpointed(node)  # ``checkpoint(blk, x, mask)`` runs ``blk(x, mask)``
            if node is None:
                return None
        others: list = []
        found = self._callee(node.func, site, resolver, others)
        if found is None:
            # ``self.attend`` built one way on one branch of ``__init__`` and
            # another way on the other: each is what the call may run, and a
            # correct one must not hide a wrong one
            made = [self._summary_event(site, node, f, s) for f, s in others]
            made = [ev for ev in made if ev is not None]
            if not made:
                return None
            for ev in made:  # one report per code at the call (lint/engine.py)
                ev.through["alternative"] = True
            made[0].more = list(made[0].more) + made[1:]
            return made[0]
        return self._summary_event(site, node, *found)

    def _summary_event(self, site, node, filename: str, summary: dict):
        """The event a call of the function ``summary`` describes amounts to."""
        args = _bind(summary, splats.expand_call(node, site.env, site.scope, False), splat_ok=True)
        if args is None:
            return None
        split = fill_apart(summary)
        if split is not None:
            apart, rest = split
            made = [self._fill_call(site, filename, one, args) for one in apart]
            if rest is not None:
                made.insert(0, self._event(site, filename, rest, args))
            made = [ev for ev in made if ev is not None]
            if not made:
                return None
            made[0].more = list(made[0].more) + made[1:]
            return made[0]
        return self._event(site, filename, summary, args)

    def _event(self, site, filename, summary, args):
        """The call of a summarised function as the event its reach makes it:
        an SDPA call, a fill, or a torch module's call."""
        if all(sink in FILL_SINKS for sink in summary["reach"]):
            return self._fill_call(site, filename, summary, args)
        if not any("." not in sink and sink not in FILL_SINKS for sink in summary["reach"]):
            return self._module_call(site, filename, summary, args)
        reach = summary["reach"]
        second = {k.split(VARIANT)[0]: v for k, v in reach.items() if VARIANT in k and "." not in k}
        if second:  # two calls of one wrapper fill its mask from different parameters
            base = {k: v for k, v in reach.items() if not (VARIANT in k and "." not in k)}
            kept = {k: v for k, v in base.items() if k not in summary.get(SECOND_LACKS, ())}
            return self._variants(
                self._sdpa_call, site, filename, summary, args, base, {**kept, **second}
            )
        return self._sdpa_call(site, filename, summary, args)

    def _variants(self, make, site, filename, summary, args, first, second):
        """A wrapper that reaches its sink twice, from two parameters (``VARIANT``:
        a block's self- and cross-attention): the call as ``make`` reads it with
        the ``first`` reach, and in its ``more`` with the ``second``."""
        got = make(site, filename, dict(summary, reach=first), args)
        later = dict(summary, reach=second)
        if summary.get("ends"):  # where the second reaches its sink: its own line and chain
            later["ends"] = {
                k.split(VARIANT)[0]: e for k, e in summary["ends"].items() if VARIANT in k
            }
        other = make(site, filename, later, args)
        if got is None or other is None:
            return got or other
        got.more = [other]
        return got

    def _sdpa_call(self, site, filename, summary, args) -> Optional[SdpaCall]:
        """The SDPA call a wrapper's summary amounts to at this call."""
        mapped: Dict[str, cst.BaseExpression] = {}
        for sink_arg, how in summary["reach"].items():
            if "." in sink_arg or sink_arg in FILL_SINKS:
                continue  # a torch module's argument, a fill: judged where SDPA is not
            param = how["param"]
            expr = args.get(param)
            unless = how.get("unless", ())  # T5's bias: given, it takes the mask's place
            if (expr is None and SPLAT in args) or not left_off(unless, summary, args, site):
                continue  # or the call's ``**kwargs`` may give it: unknown
            if expr is None:
                default = self.default_text(summary["defaults"].get(param), filename)
                if default is None:
                    continue
                try:
                    expr = cst.parse_expression(default)
                except cst.ParserSyntaxError:
                    continue
            built = _apply(expr, how["ops"], rows=sink_arg in ("key", "value"))
            if built is not None:
                mapped[sink_arg] = built
        if not mapped:
            return None
        bound = wrapped.bound(mapped)
        through = {
            "function": summary["name"],
            "file": self.relative(summary.get("sink_file", filename)),
            "line": summary["line"],
            "params": {k: v["param"] for k, v in summary["reach"].items() if k in mapped},
        }
        wrapped.note_also(through, summary, mapped)  # the same mask a module's too (AH19)
        wrapped.note_handed(through, summary)
        if summary.get("own_mask"):  # the wrapper masks the scores with its own mask or flag
            through["own_mask"] = True
        if summary.get("chain"):  # [[file, function], ...] from the callee down to the sink
            through["chain"] = [list(step) for step in summary["chain"]]
        ends = wrapped.ends(summary, {k: k for k in mapped}, self.relative)
        if ends:  # an argument that reaches its sink through a callee of its own
            through["ends"] = ends
        return SdpaCall(site, bound, through)

    def _fill_call(self, site, filename, summary, args) -> Optional[FillCall]:
        """A call of a function whose parameter reaches the mask of a fill of
        scores (and nothing else): the fill it amounts to, with the caller's
        mask.  One sink only (a function that both removes and keeps by its
        masks is not judged); a mask left to its default is not judged."""
        if len(summary["reach"]) != 1:
            return None
        ((sink, how),) = summary["reach"].items()
        expr = args.get(how["param"])
        if expr is None or not left_off(how.get("unless", ()), summary, args):
            return None
        returned = how["ops"][-1:] == [RETURNED]  # scores it returns: softmaxed here?
        if returned and not softmaxed_result(site):
            return None
        ops = [step for step in how["ops"] if step not in (SOFTMAX, RETURNED) and step[0] != KV]
        into = [step for step in how["ops"] if step[0] == KV]
        built = _apply(expr, ops)
        if built is None:
            return None
        # the keys of an SDPA call, or of the function's own attention (``kv_scores``)
        fill = FILL_TEXT[sink]
        if into:
            fill = f"scaled_dot_product_attention's {into[-1][1]}"
            if into[-1][2:] == [HANDWRITTEN]:
                fill = f"the {into[-1][1]} of the attention"
        through = {
            "function": summary["name"],
            "file": self.relative(summary.get("sink_file", filename)),
            "line": summary["line"],
            "fill": fill,
            "params": {sink: how["param"]},
        }
        if into and into[-1][2:] == [HANDWRITTEN]:
            through["handwritten"] = True
        if summary.get("chain"):
            through["chain"] = [list(step) for step in summary["chain"]]
        wrapped.note_handed(through, summary)
        softmaxed = returned or (bool(how["ops"]) and how["ops"][-1] == SOFTMAX)
        text = into[-1][1] if into else FILL_TEXT[sink]  # kv: "keys and values"
        ev = FillCall(site, built, FILL_SINKS[sink], text, softmaxed, through)
        ev.given = expr
        ev.inverted = sum(step[0] in ("invert", "eq0") for step in ops) % 2 == 1
        return ev

    def _module_call(self, site, filename, summary, args) -> Optional[WrappedModuleCall]:
        """A call of a wrapper whose parameters reach a torch attention
        module's mask arguments (and no SDPA call): the module call it amounts
        to, with the caller's masks under the module's argument names."""
        reach = {k: v for k, v in summary["reach"].items() if k not in FILL_SINKS}
        specs = {sink.split(".", 1)[0] for sink in reach}
        if len(specs) > 1:  # modules of two kinds (a stack and a layer, probe AO's AO27)
            return wrapped.each_kind(self._module_call, site, filename, summary, args, reach)
        spec = BY_NAME.get(specs.pop()) if specs else None
        if spec is None:
            return None
        if any(VARIANT in k for k in reach):  # a second module call, another parameter
            first = {k: v for k, v in reach.items() if VARIANT not in k}
            second = {k.split(VARIANT)[0]: v for k, v in reach.items() if VARIANT in k}
            return self._variants(self._module_call, site, filename, summary, args, first, second)
        mapped: Dict[str, cst.BaseExpression] = {}
        # the module's arguments the wrapper, or a default not None, may give
        own = {s.split(".", 1)[1].removesuffix(TRUE_HINT) for s in summary.get("module_own", ())}
        left = set()  # the mask arguments this call leaves to a default None
        for sink, how in reach.items():
            arg = sink.split(".", 1)[1]
            expr = args.get(how["param"])
            if expr is None:  # left to its default: a default mask is not judged
                # (a keyword the **kwargs handed on would carry: not given, absent)
                if SPLAT in args or (
                    not how.get("fwd") and summary["defaults"].get(how["param"]) != "None"
                ):
                    own.add(arg)  # a splat of the call's may give it
                else:
                    left.add(arg)
                continue
            built = _apply(expr, how["ops"])
            if built is not None:
                mapped[arg] = built
            else:
                own.add(arg)
        mapped.update(self.hint_left(summary, filename, spec, left, own))  # probe AP's AP10
        if not mapped:
            return None
        bound = wrapped.bound(mapped, own)
        through = {
            "function": summary["name"],
            "file": self.relative(summary.get("sink_file", filename)),
            "line": summary["line"],
            "sink": spec.name,
            "params": {
                k.split(".", 1)[1]: v["param"]
                for k, v in reach.items()
                if k.split(".", 1)[1] in mapped
            },
        }
        if summary.get("chain"):
            through["chain"] = [list(step) for step in summary["chain"]]
        wrapped.note_handed(through, summary)
        ends = wrapped.ends(summary, {f"{spec.name}.{arg}": arg for arg in mapped}, self.relative)
        if ends:
            through["ends"] = ends
        return WrappedModuleCall(site, spec, [], bound, through)

    def _callee(
        self, func, site: CallSite, resolver, others: Optional[list] = None
    ) -> Optional[Tuple[str, dict]]:
        """The summary a call runs: a function of the project or of this file
        called by name or alias (``aliases.py``), or what the object called
        runs, followed to the constructions that made it (``self.attn``, a
        factory's product, a ``ModuleList``'s items by index or in a loop,
        ``getattr(self, f"stage_{i}")``): one summary for all, or None."""
        env, scope = site.env, site.scope
        func = self_forward(func, env, scope)  # ``self(...)``: the class's own ``forward``
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == "forward"
            and (
                isinstance(func.value, (cst.Attribute, cst.Subscript))
                or instance_name(func.value, env, scope)
            )
        ):
            # ``self.attn.forward(...)``, ``block.forward(...)``: as ``self.attn(...)``
            func = func.value
        target = _imported(func, env, scope)
        if target is not None:
            return self._function(target, call=True)
        own = own_definition(func, env, scope, DefKind.DEF)
        if own is not None:
            got = self.effective(self.path, own)
            return (self.path, got) if got is not None else None
        own = own_definition(func, env, scope, DefKind.CLASS)  # a construction: the class's
        got = self.effective(self.path, own) if own is not None else None  # (constructors.py)
        if got is not None:
            return (self.path, got)
        method = self._method(func, env, scope, resolver) or self._instance_method(func, env, scope)
        if method is not None:
            return method
        if isinstance(func, cst.Attribute) and (
            isinstance(func.value, (cst.Attribute, cst.Subscript))
            or instance_name(func.value, env, scope)  # ``layer.prefill(x, mask)`` in a loop
        ):
            method = self._held_method(func, env, scope, resolver)
            if method is not None:  # else: what the object called holds, as before
                return method

        kept = reach.held_function(resolver, func, env, scope)  # ``self.attend = attend``
        if kept is not None:
            return self._callee(
                kept[0], CallSite(site.node, kept[1], kept[2], (), (), None), resolver
            )
        lam = (
            self._lambda(func, env, scope, resolver)
            or followed(self._callee, func, site, resolver, others, self)
            or self._built(annotated_class(func, env, scope), env, scope, resolver)  # ``a: Attn``
        )
        if lam is not None:
            return lam

        try:
            held = resolver.held(func, env, scope, self._held_leaf(resolver))
        except RecursionError:  # pragma: no cover - pathological nesting
            return None
        if not held:
            return self._kept_kind(func, scope) or self._handed_param(func, env, scope)
        if any(got[1] is not held[0][1] for got in held):
            if others is not None:  # several, each known: the caller reads each
                kept = {id(got[1]): got for got in held}
                others.extend(kept.values())
            return None
        return held[0]

    def _kept_kind(self, func, scope) -> Optional[Tuple[str, dict]]:
        """``self.attn2(...)`` where this file's class summary says what
        ``attn2`` holds and the tree cannot follow it: one of several classes
        (``A if c else B``), of a dict of classes (``BACKENDS[name](...)``),
        or the module handed in (``chains.INJECTED``): as from another file."""
        cls = enclosing_class(scope)
        if (
            not isinstance(func, cst.Attribute)
            or cls is None
            or cls.scope is None
            or cls.scope.kind != ScopeKind.MODULE
        ):
            return None
        if not (isinstance(func.value, cst.Name) and func.value.value == "self"):
            return None
        table = self._own()
        ctor = table.get(ATTRS, {}).get(cls.name, {}).get(func.attr.value)
        if ctor is None:
            return None
        if ctor.startswith(chains.INJECTED):
            return self._injected(self.path, cls.name, ctor[len(chains.INJECTED) :], 0)
        return self._named(self.path, table, ctor, tuple(self.package), 0, False)

    def _lambda(self, func, env, scope, resolver) -> Optional[Tuple[str, dict]]:
        """``self.fn = lambda q, k, v, m: attend(q, k, v, m, True)`` then
        ``self.fn(...)``: the lambda's one call, seen through its callee's
        summary, with the lambda's parameters in the callee's place."""
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            cls = resolver.self_class(func, env, scope)
            defs = resolver.attr_defs(cls, func.attr.value) if cls is not None else []
        elif isinstance(func, cst.Name):
            defs = lookup(func.value, env, scope)
        else:
            return None
        if len(defs) != 1 or defs[0].kind != DefKind.ASSIGN:
            return None
        lam = defs[0].node
        if not isinstance(lam, cst.Lambda) or not isinstance(lam.body, cst.Call):
            return None
        params = [p.name.value for p in lam.params.params]
        if lam.params.star_arg not in (None, cst.MaybeSentinel.DEFAULT) or lam.params.star_kwarg:
            return None
        inner = CallSite(lam.body, defs[0].env, defs[0].scope, (), (), None)
        found = self._callee(lam.body.func, inner, resolver)
        if (
            found is None
            and resolver.qualname(lam.body.func, inner.env, inner.scope) == SDPA_QUALNAME
        ):
            label = func.value if isinstance(func, cst.Name) else func.attr.value
            found = (self.path, dict(self._sdpa_summary(lam.body), name=label))  # a lambda of SDPA
        if found is None:
            return None
        filename, summary = found
        args = _bind(summary, lam.body)
        if args is None:
            return None
        reach, defaults = {}, {}
        for sink, how in summary["reach"].items():
            expr = args.get(how["param"])
            if isinstance(expr, cst.Name) and expr.value in params:
                reach[sink] = {"param": expr.value, "ops": how["ops"]}
            elif expr is not None and literal(expr) is not UNKNOWN:
                name = f"<{sink}>"  # fixed by the lambda: a default no call can change
                reach[sink] = {"param": name, "ops": how["ops"]}
                defaults[name] = repr(literal(expr))
            elif expr is None and how["param"] in summary["defaults"]:
                name = f"<{sink}>"
                reach[sink] = {"param": name, "ops": how["ops"]}
                defaults[name] = summary["defaults"][how["param"]]
        if not reach:
            return None
        # the lambda's own call is judged at the lambda's calls, which see all of it
        self.lambdas.setdefault(id(lam.body), set()).update(reach)
        return filename, dict(summary, positional=params, kwonly=[], defaults=defaults, reach=reach)

    def _method(self, func, env, scope, resolver) -> Optional[Tuple[str, dict]]:
        """``self.helper(...)`` and ``super().forward(...)``: the method of the
        class (or the first base that defines it) the call runs, when that
        class is one of this file's top-level classes or is imported from a
        project file.  None for anything else (then: a module attribute?)."""
        if not isinstance(func, cst.Attribute):
            return None
        name = func.attr.value
        owner = func.value
        is_super = (
            isinstance(owner, cst.Call)
            and isinstance(owner.func, cst.Name)
            and owner.func.value == "super"
            and not owner.args
        )
        if is_super:
            cls = enclosing_class(scope)
        elif isinstance(owner, cst.Name):
            cls = resolver.self_class(func, env, scope)
        else:
            return None
        if cls is None:
            return None
        for c in resolver.base_classes(cls)[1 if is_super else 0 :]:
            if name in c.methods:
                if c.scope is None or c.scope.kind != ScopeKind.MODULE:
                    return None
                got = self.effective(self.path, f"{c.name}.{name}")
                return (self.path, got) if got is not None else None
        if is_super or not resolver.attr_defs(cls, name):  # not a module held on self
            for c in resolver.base_classes(cls):
                for base in c.base_exprs:  # a base class imported from a project file
                    target = _imported(base, c.env, c.scope)
                    loc = self._defined(target) if target is not None else None
                    if loc is not None:
                        got = self.effective(loc[0], f"{loc[1]}.{name}")
                        if got is not None:
                            return loc[0], got
        return None

    def _built(self, call, env, scope, resolver=None) -> Optional[Tuple[str, dict]]:
        """What the object ``call`` builds runs when called: a project class's
        ``forward``, the function a project factory returns, or what
        ``functools.partial(f, ...)`` of a project function or of SDPA runs."""
        if not isinstance(call, cst.Call):
            return None
        if resolver is not None and resolver.qualname(call.func, env, scope) == "functools.partial":
            return self._partial(call, env, scope, resolver)
        func = class_default(call.func, env, scope)  # timm's ``attn_layer=Attention``
        made = _imported(func, env, scope)
        handed = self.classes_handed(call, made, func, env, scope)
        if handed and not set(handed) <= set(self.instance):
            # this instance's classes: ``GPT(config, attn_cls=MaskedSelfAttention)``
            with self.instance_of(handed):
                return self._built(call, env, scope, resolver)
        if made is not None:
            found = self._function(made, call=False)
        else:
            name = own_definition(func, env, scope, DefKind.CLASS, DefKind.DEF)
            if name is None and isinstance(func, cst.Attribute):  # ``Cls.from_config()``
                owner = own_definition(func.value, env, scope, DefKind.CLASS)
                name = f"{owner}.{func.attr.value}" if owner is not None else None
            if name is None:
                return None
            got = self.instance_call(self.path, name)
            found = (self.path, got) if got is not None else None
            if found is None and "." not in name:  # a forward inherited as it is
                found = self._inherited(self.path, self._own(), name, 0)
            if found is None and "." not in name:  # a factory of a module
                found = self.made_module(self.path, self._own(), name, 0)
        if found is None or "closure" not in found[1]:
            return found
        # ``make_attend(ATTN_DROPOUT)``: a constant handed to the factory is its literal
        args = [
            a if a.star else a.with_changes(value=_known(a.value, env, scope)) for a in call.args
        ]
        bound = bind_factory(found[1], call.with_changes(args=args))
        return (found[0], bound) if bound is not None else None

    def _partial(self, call, env, scope, resolver) -> Optional[Tuple[str, dict]]:
        """``functools.partial(f, *pre, **kw)``: ``f``'s summary with ``pre``
        filling its first parameters and ``kw`` its named ones, as defaults the
        later call can override by keyword.  A bound value that is not a
        literal makes the sinks it reaches unknown (left out)."""
        if not call.args or call.args[0].keyword is not None or call.args[0].star:
            return None
        inner = call.args[0].value
        if resolver.qualname(inner, env, scope) == SDPA_QUALNAME:  # named so in messages
            found = (self.path, dict(self._sdpa_summary(call), name=PARTIAL_SDPA))
        else:
            target = _imported(inner, env, scope)
            own = own_definition(inner, env, scope, DefKind.DEF)
            if target is not None:
                found = self._function(target, call=True)
            elif own is not None:
                got = self.effective(self.path, own)
                found = (self.path, got) if got is not None else None
            else:
                found = None
        if found is None:
            return None
        filename, summary = found
        positional = list(summary["positional"])
        bound: Dict[str, Optional[cst.BaseExpression]] = {}
        for a in call.args[1:]:
            if a.star:
                return None
            if a.keyword is None:
                if not positional:
                    return None
                bound[positional.pop(0)] = a.value
            else:
                bound[a.keyword.value] = a.value
        bound = {p: _known(e, env, scope) if e is not None else e for p, e in bound.items()}
        defaults, reach = _fixed(summary, bound)
        if not reach:
            return None
        return filename, dict(summary, positional=positional, defaults=defaults, reach=reach)

    def _sdpa_summary(self, call) -> dict:
        """SDPA itself as a summary (for ``partial(F.sdpa, ...)``): each of its mask
        and flag parameters reaches itself; its line is the ``partial`` call's."""
        at = start_positions(self.module, [call])[id(call)][0] if self.module is not None else 0
        return sdpa_summary(at)

    def constructed(self, cls: str, param: str, init_of: Optional[str] = None):
        """``(value,)`` when every construction of this file's class ``cls`` in
        the project passes the same literal for its ``__init__`` parameter
        ``param`` (a construction that leaves it out passes the literal
        default), else None: also when the class is never built in the project
        (its callers are outside it: the ask says so), subclassed or passed
        around.  ``init_of``: the base class of the file whose ``__init__``
        ``cls`` inherits as it is (``class LowRes(Attention)``)."""
        if not self.files or self._own_source is None:
            return None
        asked = (BUILT, cls, param)
        if asked not in self._answers:
            self._answers[asked] = self._constructed(cls, param, init_of)
        got, answer = self._answers[asked]
        if answer is None:
            return None
        self.asks.append(asked + (answer,))
        if got is not None:
            left = self._left_off.get((cls, param), False)
            self.settled.setdefault(cls, {})[param] = (got[0], answer[2], left)
        return got

    def _constructed(self, cls: str, param: str, init_of: Optional[str] = None):
        found = self._constructions(cls, param, init_of=init_of)
        if found is None:
            return None, None
        built, defaults = found
        # every construction leaves it at the default (a message says so)
        self._left_off[(cls, param)] = bool(built) and all(
            e.get(param, callers.MISSING) == callers.MISSING for e in built
        )
        named = self.named_defaults(init_of or cls, defaults)
        got = callers.one_value(built, param, named, self.depend)
        return got, _answer(built, got)

    def _constructions(self, cls: str, param: str, reader=None, init_of: Optional[str] = None):
        """(every construction of this file's class ``cls`` in the project, as
        ``callers.constructions`` reads them with ``reader``, the literal
        defaults of its ``__init__``, or of ``init_of``'s when it inherits
        that one); None when ``param`` is not a parameter of that ``__init__``
        or the project cannot be read.  The files read become dependencies of
        the cached findings."""
        signature = signatures.init_signature(self._own_source, init_of or cls)
        if signature is None or param not in signature[0]:
            return None
        params, defaults = signature
        try:
            built, read = callers.constructions(
                self.path, cls, params, self._own_source, self._project_files(), reader
            )
        except (OSError, ValueError, RecursionError):
            return None
        for filename in read:
            self.depend(filename)
        return built, defaults

    def instances(self, cls: str) -> Optional[list]:
        """Per construction of this file's class ``cls`` in the project, what
        it passes each ``__init__`` parameter it settles (parameter ->
        literal, a default where left out); None when the project does not
        settle the constructions (``callers.constructions``)."""
        signature = signatures.init_signature(self._own_source or "", cls)
        found = self._constructions(cls, signature[0][0]) if signature and signature[0] else None
        if found is None or found[0] is None:
            return None  # the project does not settle them (subclassed, passed around)
        built, defaults = found
        named = self.named_defaults(cls, defaults)
        out = []
        for entry in (e for b in built for e in passed_down.per_construction(b, self.depend)):
            one = {p: callers.one_value([entry], p, named, self.depend) for p in signature[0]}
            out.append({p: v[0] for p, v in one.items() if v is not None})
        return out

    def never_paired(self, cls: str, flag: str, mask: str) -> bool:
        """No instance of ``cls`` is built with ``flag`` on and given ``mask``."""
        if not self.files or self._own_source is None:
            return False
        try:
            got = instances.paired(
                self._project_files(), self._own_source, cls, flag, mask, self.depend
            )
        except (OSError, ValueError, RecursionError):
            return False
        return got is False

    def always_handed(self, cls: str, param: str) -> bool:
        """Whether every construction of this file's class ``cls`` in the
        project (one at least) builds a module right there for its
        ``__init__`` parameter ``param`` (``self_attention=nn.MultiheadAttention(
        ...)``): a default built as ``param or nn.MultiheadAttention(...)``
        never runs in this program."""
        if not self.files or self._own_source is None:
            return False
        found = self._constructions(cls, param, signatures.module_or_unknown)
        built = found[0] if found is not None else None
        return bool(built) and all(b.get(param) == signatures.BUILT_MODULE for b in built)

    def mentioned_elsewhere(self, word: str) -> bool:
        """Whether a project file that may call into this one names ``word``
        (True when the project is not read: it may)."""
        if not self.files:
            return False  # this file alone: no other file is read, none calls it
        for name in self._project_files()[1:]:
            try:
                if word.encode() in read_regular(name, callers.MAX_BYTES):
                    return True
            except OSError:
                return True
            self.depend(name)
        return False

    def _project_files(self) -> list:
        """The files where this file's constructions and calls are looked for,
        found once per analysis (a walk of the project's imports)."""
        if self._around is None:
            self._around = callers.project_files(self.path)
        return self._around

    def called(self, key: str, param: str, default=None):
        """``(value,)`` when every call in the project of this file's function
        ``key`` (``attend``, or ``Attend.forward``: the calls of Attend's
        instances) leaves its parameter ``param`` off: ``None``, ``False`` or
        0, passed as a literal or left at that default.  None otherwise: also
        when a call or another use of it cannot be read (``callers.calls``),
        and when nothing in the project calls it (its callers are outside
        it: the ask says so).  Only an off value is settled: a value that
        switches something on is judged at each call that passes it.
        ``**name`` asks for the keyword ``name`` that a function taking
        ``**kwargs`` reads back as ``kwargs.get(name, default)``."""
        if not self.files or self._own_source is None:
            return None
        asked = (CALLED, key, param)
        if asked not in self._answers:
            self._answers[asked] = self._called(key, param, default)
        got, answer = self._answers[asked]
        if answer is not None:
            self.asks.append(asked + (answer,))
        return got

    def _called(self, key: str, param: str, default=None):
        signature = signatures.function_signature(self._own_source, key)
        if signature is None:
            return None, None
        defaults = signature[2]
        if param.startswith("**") and signature[4]:  # ``kwargs.get("is_causal", False)``
            defaults = dict(defaults, **{param: default})
        elif param not in signature[0] + signature[1]:
            return None, None
        try:
            found, read = callers.calls(
                self.path, key, signature, self._own_source, self._project_files()
            )
        except (OSError, ValueError, RecursionError):
            return None, None
        for filename in read:
            self.depend(filename)
        got = callers.one_value(found, param, defaults)
        if got is None and found and not param.startswith("**"):
            # some calls hand it on from their own callers (a stage's blocks)
            got = passed_down.value_up(
                self.path, key, signature, param, self._own_source, self.depend
            )
        answer = _answer(found, got)
        if got is not None and not _off(got[0]):
            # known, not settled: the rules judge it at each call; the confirmer's
            # witness runs with it (lint/facts.from_callers)
            answer, got = (KNOWN,) + answer[1:], None
        return got, answer

    def results_kept(self, key: str, path: Optional[str] = None, some=False) -> Optional[list]:
        """Every call in the project of this file's function ``key`` (as
        ``called`` reads them; of the project file ``path``'s, when given),
        each as (its file shown relative to the root, or None for the linted
        file; its line; ``callers.KEPT_FIRST`` when it keeps only the first
        of a pair of results, ``(callers.RETURNED, key)`` when that
        function of its file returns it, else None; its parameters' literal
        values; its file).  [] when nothing in the project calls it, None
        when the calls cannot be told."""
        if not self.files or self._own_source is None:
            return None
        text = self._own_source
        if path is not None:
            try:
                text = decode(read_regular(path, callers.MAX_BYTES))
            except (OSError, UnicodeDecodeError, LookupError):
                return None
            self.depend(path)
        signature = signatures.function_signature(text, key)
        if signature is None:
            return None
        try:
            found, read = callers.results(
                path or self.path,
                key,
                signature,
                self._own_source if path is None else None,
                self._project_files() if path is None else callers.project_files(path),
                some,
            )
        except (OSError, ValueError, RecursionError):
            return None
        for filename in read:
            self.depend(filename)
        if found is None:
            return None
        own = os.path.abspath(self.path)
        return [
            (None if os.path.abspath(f) == own else self.relative(f), line, use, bound, f)
            for f, line, use, bound in found
        ]


BUILT, CALLED = "built", "called"
OUTSIDE, OPEN, SETTLED, KNOWN = "outside", "open", "settled", "known"


def _answer(found, got) -> tuple:
    if found is not None and not found:
        return (OUTSIDE,)
    if got is None:
        return (OPEN,)
    return (SETTLED, got[0], len(found))


def _off(value) -> bool:
    return value is None or value is False or (type(value) in (int, float) and value == 0)
