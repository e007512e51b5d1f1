"""The layout analysis: which axis of the data an attention module is fed is the batch.

For every tensor that reaches an attention module's query/key/value
(``src``/``tgt``/``memory`` for the Transformer modules) the analysis infers
its axis order from what the code says and carries the line that decided it
as evidence (docs/evidence.md, "Layout evidence").  Without evidence the layout is unknown: no
prior is assumed.  Never imports torch.

- ``domain``: the value (axis roles), names of axes, comment and einops parsing,
  the effect of ``transpose``/``permute``/``flatten``/...;
- ``comments``: shape comments, jaxtyping annotations, shape-unpacking names;
- ``evaluate``: following a value through locals, attributes, helpers, callers.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import libcst as cst

from ...core import torch_api
from ...core import walk as astwalk
from ..events import Construction, ModuleCall
from ..flow import DefKind, lookup
from ..bound import Bound, Instance, passed
from ..splats import expand_call
from ..values import literal, value_of
from .domain import BATCH, SEQ, Layout, parse_shape_comment, roles_of_names
from .evaluate import LayoutEvaluator
from .calls import real
from .program import DEFAULT

BATCH_FIRST, SEQ_FIRST, UNBATCHED = "batch-first", "sequence-first", "unbatched"
CONVERTED = "converted"  # an axis swap of unknown data: whatever the module reads
# the arguments whose layout decides a call, most telling first
_INPUTS = ("query", "src", "tgt", "key", "value", "memory")
_CONTAINER_LAYER = {"TransformerEncoder": "encoder_layer", "TransformerDecoder": "decoder_layer"}


@dataclass
class CallLayout:
    """What one module call is fed: ``kind`` is BATCH_FIRST, SEQ_FIRST, UNBATCHED or
    None (unknown), ``layout`` the deciding argument's layout, ``arg`` its name."""

    kind: Optional[str]
    layout: Optional[Layout] = None
    arg: Optional[str] = None

    @property
    def batch_first(self) -> Optional[bool]:
        return {BATCH_FIRST: True, SEQ_FIRST: False}.get(self.kind or "")


def _kind(layout: Optional[Layout]) -> Optional[str]:
    if layout is None:
        return None
    if layout.conforms:
        return CONVERTED
    if layout.unbatched:
        return UNBATCHED
    bf = layout.batch_first
    return None if bf is None else BATCH_FIRST if bf else SEQ_FIRST


class LayoutAnalysis:
    """One per analyzed file (kept on the engine's Context)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.evaluator = LayoutEvaluator(ctx)
        self._calls: Dict[tuple, CallLayout] = {}
        self._uses: Optional[Dict[tuple, List[int]]] = None  # weights_only's census

    def of_call(self, ev: ModuleCall) -> CallLayout:
        key = (id(ev.site.node), self.evaluator.session.get(DEFAULT))
        if key not in self._calls:
            self._calls[key] = self._of_call(ev)
        return self._calls[key]

    def _of_call(self, ev: ModuleCall) -> CallLayout:
        found: List[CallLayout] = []
        for name in _INPUTS:
            if name not in ev.spec.forward.names:
                continue
            expr = ev.args.get(name)
            if expr is None:
                layout = self._spread(ev, name)  # ``self.decoder(*self.encode(src, tgt))``
                if layout is None:
                    continue
            else:
                layout = self.evaluator.at(expr, ev.site)
            if layout is not None and layout.disagree:
                # one path feeds what the module reads, another the opposite: that one
                reads = self.stated_batch_first(ev, default=False)
                layout = (
                    None
                    if reads is None
                    else next((a for a in layout.disagree if a.batch_first is not reads), None)
                )
            kind = _kind(layout)
            if kind is not None:
                found.append(CallLayout(kind, layout, name))
        if not found:
            return self._output_stated(ev)
        known = [c for c in found if c.kind != CONVERTED]
        if known:
            found = known  # a swap conforms to the layout the other inputs state
        kinds = {c.kind for c in found}
        if len(kinds) > 1 and kinds <= {BATCH_FIRST, SEQ_FIRST}:
            # the inputs disagree: the one the module's stated ``batch_first``
            # contradicts is fed wrong (a decoder built batch-first given
            # ``weight.unsqueeze(1).repeat(1, B, 1)`` queries and batch-first
            # memory: probe W's W15); unstated, torch raises or we misread
            reads = self.stated_batch_first(ev)
            wrong = SEQ_FIRST if reads else BATCH_FIRST
            return (
                next((c for c in found if c.kind == wrong), CallLayout(None))
                if reads is not None
                else CallLayout(None)
            )
        if len(kinds) > 1:
            return CallLayout(None)  # the inputs disagree: torch raises or we misread
        if kinds == {CONVERTED}:
            return self._converted(ev, found[0])
        return found[0]

    def _spread(self, ev: ModuleCall, name: str):
        """The input ``name`` of a module call given all its inputs by one
        splat of a helper's tuple (TranAD's ``self.decoder(*self.encode(src,
        tgt))`` after ``return tgt, src``): that element of what it returns."""
        args = ev.site.node.args
        if len(args) != 1 or args[0].star != "*" or not isinstance(args[0].value, cst.Call):
            return None
        index = ev.spec.forward.names.index(name)
        site = ev.site
        return real(self.evaluator.element(args[0].value, site.env, site.scope, None, 0, index))

    def _output_stated(self, ev: ModuleCall) -> CallLayout:
        """``x = self.transformer(src=x)`` under ``# seq_length, batch_size,
        dim`` (pykeen): the comment states the output, which has the layout
        of the input (an attention module's output is its query's shape);
        said of inputs whose layout the code does not state."""
        stated = self.evaluator.comments.of_call(ev.site.node)
        kind = _kind(stated)
        if kind not in (BATCH_FIRST, SEQ_FIRST):
            return CallLayout(None)
        arg = next((n for n in _INPUTS if ev.args.get(n) is not None), None)
        return CallLayout(kind, stated, arg)

    def handed(self, ev: Construction) -> List[CallLayout]:
        """For a module no call of this file is known to run: what the class
        of another project file it is handed to at its construction feeds it,
        or, built as the default of a parameter (``param or
        nn.MultiheadAttention(...)``), what the calls of the attribute that
        keeps it feed it; at each of those calls (none: neither).  A swap of unknown data there is the conversion to what a
        module left to the default reads: sequence-first."""
        try:
            got = self.evaluator.default_for(ev.site, ev.spec)
            if got is None:
                got = self.evaluator.handed_to(ev.site, ev.spec)
            if got is None:
                got = self.evaluator.fed_in_sequential(ev.site)
            if got is None:
                got = self.evaluator.made_for(ev.site, ev.spec)
        except RecursionError:  # pragma: no cover
            got = None
        out = []
        for layout in got or ():
            kind = _kind(layout)
            if kind == CONVERTED:
                stated = ev.args.get("batch_first")
                kind = (
                    SEQ_FIRST if stated is None and not ev.args.maybe_given("batch_first") else None
                )
                if kind == SEQ_FIRST:  # as ``_converted`` reads a swap
                    layout = Layout(
                        (SEQ, BATCH, None), layout.node, layout.how, origin=layout.origin
                    )
            out.append(CallLayout(kind, layout, "query"))
        return out

    def _converted(self, ev: ModuleCall, call: CallLayout) -> CallLayout:
        """Data swapped right before the call, of a layout the code never states:
        converted to the layout the module reads (docs/evidence.md)."""
        reads = self.stated_batch_first(ev, default=False)
        if reads is None:
            return CallLayout(None)
        roles = (BATCH, SEQ, None) if reads else (SEQ, BATCH, None)
        swap = call.layout
        layout = (
            Layout(roles, swap.node, swap.how, origin=swap.origin) if swap is not None else None
        )
        return CallLayout(BATCH_FIRST if reads else SEQ_FIRST, layout, call.arg)

    def evidence(self, call: CallLayout) -> Dict[str, Any]:
        """The layout evidence a finding carries (and its witness reads)."""
        lay = call.layout
        if lay is not None and lay.origin is not None:
            # the evidence stands in another file of the project
            path, line, source = lay.origin
            return {
                "layout": lay.text(),
                "layout_roles": list(lay.roles),
                "layout_kind": call.kind,
                "batch_first_data": call.batch_first,
                "layout_line": line,
                "layout_source": source,
                "layout_how": lay.how,
                "layout_arg": call.arg,
                "layout_file": _relative(path),
            }
        return {
            "layout": lay.text() if lay is not None else None,
            "layout_roles": list(lay.roles) if lay is not None else None,
            "layout_kind": call.kind,
            "batch_first_data": call.batch_first,
            "layout_line": self.evaluator.line(lay.node) if lay is not None else None,
            "layout_source": self.evaluator.text(lay.node) if lay is not None else None,
            "layout_how": lay.how if lay is not None else None,
            "layout_arg": call.arg,
        }

    # ------------------------------------------------------------ modules and their calls
    def calls_of(self, ev: Construction) -> List[ModuleCall]:
        """The calls that run the module ``ev`` builds: its own, those of a
        ``TransformerEncoder``/``Decoder`` built from it, and for an
        ``nn.Transformer`` those of the parts it builds (``self.transformer.
        encoder(src)``), which read the layout its ``batch_first`` says."""
        if ev.via == "layer":
            out = self._own_forward_calls(ev)
        else:
            out = list(self.ctx.module_calls_of(ev)) or self.stored_calls(ev)
            out = out or self._inner_calls(ev)
        for other in self.ctx.events:
            if isinstance(other, ModuleCall) and other.spec.name in _CONTAINER_LAYER:
                if any(self._layer_is(inst, other.spec.name, ev) for inst in other.instances):
                    out.append(other)
                elif ev.spec.name == "Transformer" and self._part_of(other, ev):
                    out.append(other)
        if not out and ev.site.cls is not None:
            # the layer of ``self.deep = nn.TransformerEncoder(nn.TransformerEncoderLayer(
            # ...))`` on one branch, another module on the other (shiba): the encoder's calls
            name, spec, site = self._container_stored(ev)
            if name is not None:
                inst = Instance(spec, site, None, False)
                out = self._self_calls([ev.site.cls], {name: spec}, inst)
        return out

    def stored_calls(self, ev: Construction) -> List[ModuleCall]:
        """The calls of ``self.<attr>`` in the class that stores the module
        there, when the attribute may also hold something else: built as
        ``MHA(...) if flag else Other(...)``, or in ``if``/``elif`` branches
        that build other kinds (darts, UniFormer).  Where the call runs this
        module it is fed what the call passes."""
        name, cls = _stored_at(ev), ev.site.cls
        if name is None or cls is None:
            return []
        return self._self_calls([cls], {name: ev.spec}, Instance(ev.spec, ev.site, None, False))

    def _container_stored(self, ev: Construction):
        """``(attr, the container's spec, its construction)`` when the layer
        built at ``ev`` is the first argument of a ``TransformerEncoder``/
        ``Decoder`` construction that ``self.attr = ...`` stores; else Nones."""
        none = (None, None, None)
        stmt = ev.site.stmt
        value = stmt.value if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 else None
        if (
            not isinstance(value, cst.Call)
            or not value.args
            or value.args[0].value is not ev.site.node
        ):
            return none
        qn = self.ctx.resolver.qualname(value.func, ev.site.env, ev.site.scope)
        spec = torch_api.module_spec(qn) if qn is not None else None
        site = self.ctx.resolver.site_of.get(id(value))
        if spec is None or spec.name not in _CONTAINER_LAYER or site is None:
            return none
        target = stmt.targets[0].target
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
            if target.value.value == "self":
                return target.attr.value, spec, site
        return none

    def _inner_calls(self, ev: Construction) -> List[ModuleCall]:
        """For a subclass of a torch encoder or decoder layer that runs a
        ``forward`` of its own: its calls of the attention modules torch's
        ``__init__`` built in it (``self.self_attn(tgt[-1:], tgt, tgt)``), which
        read the layer's ``batch_first`` (docling's table decoder)."""
        own = torch_api.INNER_ATTENTION.get(ev.spec.name)
        resolver = self.ctx.resolver
        found = resolver.class_spec(ev.cls) if own is not None and ev.cls is not None else None
        if found is None or not found[2]:
            return []
        func = ev.site.node.func
        if ev.via == "super" and not (
            isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call)
        ):
            return []  # ``nn.TransformerEncoderLayer.__init__(self, ...)``: bound past self
        mha = torch_api.MULTIHEAD_ATTENTION
        names = {n: mha for n in own if not resolver.attr_defs(ev.cls, n)}
        classes = resolver.base_classes(ev.cls)
        # the layer itself: its construction says the ``batch_first`` they read
        return self._self_calls(classes, names, Instance(ev.spec, ev.site, None, True))

    def _own_forward_calls(self, ev: Construction) -> List[ModuleCall]:
        """The calls of the instances built at ``ev``, an encoder or decoder
        layer of another project file that runs a ``forward`` of its own
        feeding its first parameter to the attention torch built in it
        (``forms.torch_layer``): each call's first argument, handed by place,
        is that attention's query, in the layout the layer's ``batch_first``
        says.  Only ``layout`` reads these; no rule judges them as torch's
        ``forward`` (their other arguments are the class's own)."""
        resolver = self.ctx.resolver
        out = []
        for site in self.ctx.flow.calls:
            call = site.node
            if not call.args or call.args[0].keyword is not None or call.args[0].star:
                continue
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "forward":
                func = func.value
            if not isinstance(func, (cst.Name, cst.Attribute, cst.Subscript)):
                continue
            try:
                held = resolver.instances(func, site.env, site.scope)
            except RecursionError:  # pragma: no cover
                continue
            if not held or not all(
                i.ctor is not None and i.ctor.node is ev.site.node for i in held
            ):
                continue
            bound = Bound(call.with_changes(args=call.args[:1]), ev.spec.forward)
            out.append(ModuleCall(site, ev.spec, held, bound))
        return out

    def _self_calls(self, classes, names: Dict[str, Any], inst: Instance) -> List[ModuleCall]:
        """The calls ``self.<name>(...)`` (or ``.forward``) in methods of
        ``classes`` that give the module ``names[name]`` its required inputs."""
        out = []
        for site in self.ctx.flow.calls:
            func = site.node.func
            if isinstance(func, cst.Attribute) and func.attr.value == "forward":
                func = func.value
            if not (
                site.cls in classes
                and isinstance(func, cst.Attribute)
                and func.attr.value in names
                and isinstance(func.value, cst.Name)
                and func.value.value == "self"
            ):
                continue
            spec = names[func.attr.value]
            sig = spec.forward
            args = Bound(expand_call(site.node, site.env, site.scope), sig)
            required = [n for n in sig.names if not sig.has_default(n)]
            if not args.star and all(args.given(n) for n in required):  # not ``self.mixer(x)``
                out.append(ModuleCall(site, spec, [inst], args))
        return out

    def _part_of(self, call: ModuleCall, ev: Construction) -> bool:
        """``call`` runs the encoder or decoder of the ``nn.Transformer`` built at ``ev``."""
        owners = self._transformers_of_part(call)
        return any(o.ctor is not None and o.ctor.node is ev.site.node for o in owners)

    def _transformers_of_part(self, call: ModuleCall) -> list:
        """The ``nn.Transformer`` instances whose encoder or decoder ``call``
        runs (``self.transformer.encoder(src)``), each known by its
        construction; empty for any other call.  The part reads the layout
        the Transformer's ``batch_first`` says."""
        if call.spec.name not in _CONTAINER_LAYER:
            return []
        func = call.site.node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "forward":
            func = func.value
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("encoder", "decoder"):
            return []
        try:
            owners = self.ctx.resolver.instances(func.value, call.site.env, call.site.scope)
        except RecursionError:  # pragma: no cover
            return []
        owners = list(owners or ())
        if not owners or any(o.ctor is None or o.spec.name != "Transformer" for o in owners):
            return []
        return owners

    def weights_only(self, ev: Construction) -> bool:
        """A module kept on ``self.<attr>`` that the file only reads attributes
        of (``self.attn.in_proj_weight``, ``self.attn.out_proj(out)``,
        ``self.attn.num_heads``) and never calls, passes on or aliases: its
        weights serve hand-written attention, its ``forward`` never runs
        (mmaction's UniFormerV2 ``Extractor``, CLIP variants).  Only an
        ``nn.MultiheadAttention``: what its attributes run (``out_proj``) reads
        no layout, where a transformer's parts run with its ``batch_first``."""
        stmt = ev.site.stmt
        if ev.spec.name != "MultiheadAttention":
            return False  # ``self.transformer.encoder(x)`` runs a part with its batch_first
        if not (
            isinstance(stmt, cst.Assign)
            and len(stmt.targets) == 1
            and stmt.value is ev.site.node
            and isinstance(stmt.targets[0].target, cst.Attribute)
            and isinstance(stmt.targets[0].target.value, cst.Name)
            and stmt.targets[0].target.value.value == "self"
        ):
            return False
        name = stmt.targets[0].target.attr.value
        cls = ev.site.cls
        project = getattr(self.ctx, "project", None)
        tree = project.own_tree() if project is not None else None
        if cls is None or tree is None:
            return False
        if self._uses is None:  # read from the whole text: the focused one leaves code out
            self._uses = _attribute_uses(tree)
        read, other = self._uses.get((cls.name, name), (0, 0))
        # the assignment itself is the one other use; none of ``block.attn(...)`` and the like
        return read > 0 and other == 1 and (None, name) not in self._uses

    def _layer_is(self, inst, container: str, ev: Construction) -> bool:
        args = inst.init_args()
        if args is None:
            return self._own_layer_is(inst, ev)
        layers = self._layers(inst, args.get(_CONTAINER_LAYER[container]))
        return any(_built_at(li, ev) for li in layers or ())

    def _own_layer_is(self, inst, ev: Construction) -> bool:
        """For a subclass of torch's encoder or decoder with an ``__init__`` of
        its own and torch's ``forward``: whether the ``self.layers`` it builds
        itself (pero-ocr's ``super().__init__(None, 0)``, then ``self.layers =
        nn.ModuleList([...])``) hold the layer built at ``ev``."""
        if inst.subclass is None or inst.overrides_forward:
            return False
        resolver = self.ctx.resolver
        for d in resolver.attr_defs(inst.subclass, "layers"):
            if d.node is None:
                continue
            try:
                layers = resolver.held_elements(d.node, d.env, d.scope, resolver.torch_leaf)
            except RecursionError:  # pragma: no cover
                return False
            if any(_built_at(li, ev) for li in layers or ()):
                return True
        return False

    def _built_by(self, inst):
        """(the construction, spec, its arguments): for a subclass with its own
        ``__init__``, its one ``super().__init__(...)`` call, which carries
        what torch is given (``super().__init__(d, h, batch_first=True)``)."""
        if inst.ctor is not None or inst.subclass is None:
            return inst.ctor, inst.spec, inst.init_args()
        init = inst.subclass.methods.get("__init__")
        supers = [
            s
            for s in self.ctx.flow.calls
            if init is not None
            and s.function is init
            and isinstance(s.node.func, cst.Attribute)
            and s.node.func.attr.value == "__init__"
            and isinstance(s.node.func.value, cst.Call)
            and getattr(s.node.func.value.func, "value", None) == "super"
        ]
        if len(supers) != 1:
            return None, inst.spec, None
        return supers[0], inst.spec, Bound(supers[0].node, inst.spec.init)

    def stated_batch_first(self, ev: ModuleCall, default=None) -> Optional[bool]:
        """The ``batch_first`` every module this call may run was built with, when
        it is stated (a literal or known constant); None when unknown or not the
        same for all, and ``default`` (None: not stated) where left to torch's."""
        values = set()
        owners = self._transformers_of_part(ev)  # ``self.transformer.encoder(src)``
        kind = "Transformer" if owners else ev.spec.name
        for inst in owners or ev.instances:
            if inst.made_batch_first is not None:  # a factory of another file's literal
                values.add(inst.made_batch_first)
                continue
            for ctor_site, spec, args in self._batch_first_ctors(inst, kind):
                if args is None or not spec.has_batch_first:
                    return None
                expr = args.get("batch_first")
                if expr is None and args.maybe_given("batch_first"):
                    return None
                if expr is None:
                    if default is None:
                        return None  # the default: MHA001/MHA903's business
                    values.add(default)
                    continue
                value = self.ctx.value(expr, ctor_site)
                if not isinstance(value, bool) and inst.made_by is not None:
                    value = _bound_by_factory(expr, ctor_site, inst.made_by)
                if not isinstance(value, bool):
                    return None
                values.add(value)
        return values.pop() if len(values) == 1 else None

    def _batch_first_ctors(self, inst, kind: str):
        if kind not in _CONTAINER_LAYER:
            yield self._built_by(inst)
            return
        args = inst.init_args()
        layers = self._layers(inst, args.get(_CONTAINER_LAYER[kind]) if args is not None else None)
        if not layers:
            yield inst.ctor, inst.spec, None
            return
        for li in layers:
            yield self._built_by(li)

    def _layers(self, inst, layer) -> Optional[list]:
        """The layers a container built at ``inst`` holds, its constructor
        given ``layer`` (through ``typing.cast`` too); None when unknown."""
        if layer is None:
            return None
        env, scope = inst.ctor.env, inst.ctor.scope
        layer = self.ctx.resolver.uncast(layer, env, scope)
        try:
            layers = self.ctx.resolver.instances(layer, env, scope)
        except RecursionError:  # pragma: no cover
            return None
        if not layers and isinstance(layer, cst.Name):
            layers = self._torch_layers(layer, env, scope)
        return layers

    def _torch_layers(self, name: cst.Name, env, scope) -> Optional[list]:
        """The torch layers a name bound on several branches holds, leaving out
        a module class of this file (mvts_transformer's ``encoder_layer`` is a
        ``TransformerEncoderLayer`` or its own ``BatchNorm`` layer): that
        class's attention is judged where it is built, fed what the container
        feeds it.  None when a branch binds anything else."""
        resolver, out = self.ctx.resolver, []
        for d in lookup(name.value, env, scope):
            if d.kind != "assign" or not isinstance(d.node, cst.Call):
                return None
            try:
                got = resolver.instances(d.node, d.env, d.scope)
            except RecursionError:  # pragma: no cover
                return None
            if got:
                out.extend(got)
                continue
            func = d.node.func
            built = lookup(func.value, d.env, d.scope) if isinstance(func, cst.Name) else ()
            if not built or any(b.kind != "class" for b in built):
                return None
        return out or None


def _attribute_uses(tree: ast.Module) -> Dict[tuple, List[int]]:
    """Per (class name, attribute) for ``self.name`` in that top-level class's
    body, and per (None, name) for ``<anything else>.name`` in the file: how
    often it is read only for an attribute of its own (``self.name.weight``),
    and how often it is used otherwise (called, passed, assigned, aliased)."""
    uses: Dict[tuple, List[int]] = {}

    def count(node: ast.AST, cls: Optional[str]) -> None:
        owners = set()
        for n in astwalk.walk(node):
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute):
                owners.add(id(n.value))  # ``n.value`` is read for an attribute
        for n in astwalk.walk(node):
            if isinstance(n, ast.Attribute):
                own = cls is not None and isinstance(n.value, ast.Name) and n.value.id == "self"
                counts = uses.setdefault((cls if own else None, n.attr), [0, 0])
                counts[0 if id(n) in owners else 1] += 1

    for top in tree.body:
        count(top, top.name if isinstance(top, ast.ClassDef) else None)
    return uses


def _stored_at(ev: Construction) -> Optional[str]:
    """``attr`` when the construction is the value of ``self.attr = ...``,
    or one branch of a conditional expression that is."""
    stmt = ev.site.stmt
    if not (isinstance(stmt, cst.Assign) and len(stmt.targets) == 1):
        return None
    target = stmt.targets[0].target
    if not (
        isinstance(target, cst.Attribute)
        and isinstance(target.value, cst.Name)
        and target.value.value == "self"
    ):
        return None
    value = stmt.value
    while isinstance(value, cst.IfExp) and value is not ev.site.node:
        if _holds(value.body, ev.site.node):
            value = value.body
        elif _holds(value.orelse, ev.site.node):
            value = value.orelse
        else:
            return None
    return target.attr.value if value is ev.site.node else None


def _holds(expr: cst.BaseExpression, node: cst.CSTNode) -> bool:
    return expr is node or (
        isinstance(expr, cst.IfExp) and (_holds(expr.body, node) or _holds(expr.orelse, node))
    )


def _relative(path: str) -> str:
    """A file of the project as its findings name it: from the project root."""
    import os

    from ..program.files import project_root

    return os.path.relpath(path, project_root(path)).replace(os.sep, "/")


def analysis_for(ctx) -> LayoutAnalysis:
    found = getattr(ctx, "_layout_analysis", None)
    if found is None:
        found = LayoutAnalysis(ctx)
        ctx._layout_analysis = found
    return found


__all__ = [
    "BATCH",
    "BATCH_FIRST",
    "SEQ",
    "SEQ_FIRST",
    "UNBATCHED",
    "CallLayout",
    "Layout",
    "LayoutAnalysis",
    "analysis_for",
    "parse_shape_comment",
    "roles_of_names",
]


def _built_at(inst, ev: Construction) -> bool:
    """Whether the module ``inst`` is the one built at ``ev``: its construction,
    or, for a subclass with an ``__init__`` of its own (whose instances carry
    no construction of torch's), that ``__init__``'s ``super().__init__(...)``."""
    if inst.ctor is not None:
        return inst.ctor.node is ev.site.node
    return ev.via == "super" and inst.subclass is not None and inst.subclass is ev.cls


def _bound_by_factory(expr, site, made_by):
    """The value the factory call that built a module passes for the
    factory's parameter ``expr`` (``def _transformer(batch_first): ...
    TransformerEncoderLayer(..., batch_first=batch_first)`` with
    ``self.inter = _transformer(batch_first=True)``): that call's argument,
    else the parameter's default; None when unknown."""
    call, env, scope, func = made_by
    if not isinstance(expr, cst.Name):
        return None
    defs = lookup(expr.value, site.env, site.scope)
    if len(defs) != 1 or defs[0].kind != DefKind.PARAM or defs[0].scope is None:
        return None
    if defs[0].scope.node is not func or any(a.star for a in call.args):
        return None
    if defs[0].node in (func.params.star_arg, func.params.star_kwarg):
        return None  # ``*args``, ``**kwargs``: no one argument
    names = [p.name.value for p in (*func.params.posonly_params, *func.params.params)]
    index = names.index(expr.value) if expr.value in names else -1  # -1: keyword-only
    given = passed(call, index, expr.value)
    if given is None:
        default = defs[0].node.default
        got = literal(default) if default is not None else None
        return got if isinstance(got, bool) else None
    got = value_of(given, env, scope)
    return got if isinstance(got, bool) else None
