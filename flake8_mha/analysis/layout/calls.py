"""Calls, in the layout analysis: what a call does to the axes of a tensor.

Torch's axis transforms (transpose, permute, flatten, ...), sized views,
einops ``rearrange`` and ``einsum`` patterns, layout-preserving functions and
modules, a torch attention module's output, and the file's own helpers and
methods.  ``LayoutCalls`` is a part of ``LayoutEvaluator`` (evaluate.py),
kept apart so each stays small enough to read.
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import libcst as cst

from .. import reach
from ..bound import Bound
from ..classes import class_default, instance_class
from ..program.callgraph import CHECKPOINT, bind_call, checkpointed
from ..flow import Def, lookup
from ..heads import EINOPS_REARRANGE
from ..tree import is_none
from ..values import literal
from . import lambdas
from .comments import DocLine
from .padded_ids import compared, read_compared
from .helper_calls import CYCLE, HelperCalls, real, said
from .domain import (
    BATCH,
    CHANNEL,
    CONV,
    CTORS,
    EMBED,
    PRESERVE_FUNCS,
    PRESERVE_METHODS,
    PRESERVE_MODULES,
    SEQ,
    SPATIAL,
    Layout,
    group_role,
    is_rotation,
    is_swap,
    is_swap_pattern,
    parse_einops_side,
    positional,
    roles_of_names,
    size_read,
    transform,
    useful,
)

_TRANSFORMS = (
    "transpose",
    "swapaxes",
    "swapdims",
    "permute",
    "movedim",
    "moveaxis",
    "flatten",
    "unflatten",
    "unsqueeze",
    "squeeze",
)
_TORCH_TRANSFORMS = {"torch." + m: m for m in _TRANSFORMS}
_SIZED = ("view", "reshape", "expand", "new_zeros", "new_ones", "new_empty")
_NESTED = {
    "torch.nested.nested_tensor",
    "torch.nested.as_nested_tensor",
    "torch.nested.narrow",
    "torch.nested.nested_tensor_from_jagged",
}
MODULE_OUTPUT_ARG = {  # the input whose shape a module's output has
    "MultiheadAttention": "query",
    "TransformerEncoderLayer": "src",
    "TransformerEncoder": "src",
    "TransformerDecoderLayer": "tgt",
    "TransformerDecoder": "tgt",
    "Transformer": "tgt",
}


CONCAT = {"torch.cat", "torch.concat", "torch.concatenate"}


def _relabelled(inner: Optional[Layout], got: Layout) -> bool:
    """A ``view`` that names the batch at another axis than the data holds it:
    batch-first ``(N, L, E)`` viewed ``(-1, batch_size, E)`` (review 24's
    mire2e) reads row ``l * N + n`` as sample ``n``: no transpose, samples
    mixed; the sizes' names are no evidence of the new layout."""
    if inner is None or inner.roles.count(BATCH) != 1:
        return False
    before, after = inner.roles.index(BATCH), got.roles.index(BATCH)
    return before != after and (before == 0 or after == 0)


def join(values: Sequence[Optional[Layout]]) -> Optional[Layout]:
    """The layout every path gives, else unknown; cycles have no say.

    Paths agree when their axis roles do where both state them: ``(L, N, ?)``
    and ``(?, N, E)`` give ``(L, N, E)``, what they state together.  An axis swap
    of data of unknown layout (``conforms``) is converted to whatever the
    module reads, so it conforms to the layout the other paths state (as
    it does among one call's inputs); only swaps: the first swap."""
    out: Optional[Layout] = None
    swap: Optional[Layout] = None
    seen = False
    for v in values:
        if v is CYCLE:
            continue
        if v is None:
            return None
        seen = True
        if v.conforms:
            swap = swap or v
        elif out is None:
            out = v
        else:
            out = meet(out, v)
            if out is None:
                return _disagreeing(values)
    if not seen:
        return CYCLE if values else None
    return out if out is not None else swap


def _disagreeing(values: Sequence[Optional[Layout]]) -> Optional[Layout]:
    """Paths that state opposite layouts, one batch-first, one sequence-first
    (each known on its own): unknown roles that keep one of each; None for
    any other disagreement."""
    firsts: Dict[bool, Layout] = {}
    for v in values:
        if v is CYCLE or v is None or v.conforms:
            continue
        for one in v.disagree or (v,):
            if one.batch_first is None:
                return None
            firsts.setdefault(one.batch_first, one)
    if len(firsts) != 2:
        return None
    rank = len(firsts[True].roles)
    return Layout((None,) * rank, None, "paths disagree", disagree=(firsts[True], firsts[False]))


_FEATURE = (EMBED, CHANNEL)


def shaped(returns: list, index: Optional[int]) -> list:
    """The returns of a function that its caller can be using: read whole
    (``x = blk(x)``), not the tuples of the branch that also gives back the
    weights; unpacked (``x, attn = blk(x)``), only the tuples.  All of them
    when none or all are tuples (mmpretrain's CLIP block returns ``x, attention``
    on one branch and ``x`` on the other)."""
    tuples = [r for r in returns if isinstance(r[0], cst.Tuple)]
    if not tuples or len(tuples) == len(returns):
        return returns
    return tuples if index is not None else [r for r in returns if not isinstance(r[0], cst.Tuple)]


def _keeps_shape(qn: Optional[str]) -> bool:
    """A torch module class whose output has its input's shape (``nn.LayerNorm``)."""
    return (
        qn is not None and qn.startswith("torch.nn.") and qn.rsplit(".", 1)[1] in PRESERVE_MODULES
    )


def meet(a: Layout, b: Layout) -> Optional[Layout]:
    """The roles ``a`` and ``b`` state together (with ``a``'s evidence), or
    None when they state different roles for one axis.  Embedding and channel
    name one axis, the features: ``# [num_queries, batch_size, num_channels]``
    and ``(seq_len, batch, embed_dim)`` agree."""
    if a.roles == b.roles:
        return a
    if len(a.roles) != len(b.roles):
        return None
    roles = []
    for x, y in zip(a.roles, b.roles):
        if x is not None and y is not None and x != y and not (x in _FEATURE and y in _FEATURE):
            return None
        roles.append(x if x is not None else y)
    if a.node is None and b.node is not None:
        a = b  # ``a`` only says paths disagree: the evidence is ``b``'s
    return Layout(tuple(roles), a.node, a.how, origin=a.origin)


def same(a: Layout, b: Layout) -> bool:
    """The same axis roles, and both or neither a conversion (``conforms``)."""
    return a.roles == b.roles and a.conforms == b.conforms


def fed_alone(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The data a call of a module kept on ``self`` is fed, when it is its one
    positional argument (``self.pos_enc(x)``, ``self.project(x)``, darts'
    ``self.positional_encoding(x, start_pos=t)``: keywords beside it are
    settings): a per-token step between a swap and the module call the swap
    is for."""
    func = call.func
    positional = [a for a in call.args if a.keyword is None]
    if (
        isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Name)
        and (
            func.value.value == "self"
            or (func.value.value in _FUNCTIONAL and func.attr.value in _ELEMENTWISE)
        )
        and len(positional) == 1
        and not any(a.star for a in call.args)
    ):  # also ``F.relu(self.mapping(x))``: an activation keeps every axis
        return positional[0].value
    return None


_FUNCTIONAL = ("F", "torch", "functional")
_ELEMENTWISE = frozenset(
    "relu relu6 gelu silu elu selu celu leaky_relu mish tanh sigmoid softplus hardswish "
    "hardtanh dropout".split()
)


class Frame:
    __slots__ = ("func", "fscope", "args", "env", "scope", "parent")

    def __init__(self, func, fscope, args, env, scope, parent):
        self.func, self.fscope, self.args = func, fscope, args
        self.env, self.scope, self.parent = env, scope, parent


# einops' layer form of ``rearrange``: ``Rearrange(pattern)`` built once, called on a tensor
EINOPS_LAYERS = ("einops.layers.torch.Rearrange",)
REARRANGE_LAYER = "einops.Rearrange"


class LayoutCalls(HelperCalls):
    """The call cases of ``LayoutEvaluator`` (which supplies ``eval``,
    ``qualname``, ``resolver``, ... )."""

    def _module_ctor(self, func, env, scope) -> Optional[Tuple[str, cst.Call, Def]]:
        """``self.proj`` / a local holding ``nn.Linear(...)``: (torch class name, its call)."""
        defs: Sequence[Def] = ()
        if isinstance(func, cst.Attribute):
            cls = self.resolver.self_class(func, env, scope)
            if cls is not None:
                defs = self.resolver.attr_defs(cls, func.attr.value)
                part = None if defs else reach.layer_part(self.resolver, cls, func.attr.value)
                if part is not None:  # ``self.norm1`` of a layer subclass: torch built it
                    return part, None, None
            else:  # ``self.encoder.conv``: the attribute of the class an instance is of
                owner = instance_class(self.resolver, func.value, env, scope)
                defs = self.resolver.attr_defs(owner, func.attr.value) if owner else ()
        elif isinstance(func, cst.Name):
            defs = lookup(func.value, env, scope)
        elif isinstance(func, cst.Subscript):  # ``self.embeddings[0](x)``: a container's member
            kinds = self.resolver.held_elements(func.value, env, scope, self._torch_class_name)
            if kinds and all(k in PRESERVE_MODULES for k in kinds):
                return kinds[0], None, None
        # ``self.final_proj = None``, then maybe the module: a call runs the module
        defs = [d for d in defs if not is_none(d.node)]
        found = [self._torch_ctor(d) for d in defs]
        if len(found) == 1 and found[0] is not None:
            return found[0]
        if len(found) > 1 and all(f is not None and f[0] in PRESERVE_MODULES for f in found):
            # ``nn.Linear(d_in, d)`` on one branch, ``nn.Identity()`` on the other
            return found[0]
        return None

    def _torch_class_name(self, call: cst.Call, env, scope) -> Optional[list]:
        """A leaf of ``Resolver.held``: the torch.nn class a call builds, by name."""
        qn = self.qualname(class_default(call.func, env, scope), env, scope)
        return [qn.rsplit(".", 1)[1]] if qn is not None and qn.startswith("torch.nn.") else None

    def _torch_ctor(self, d: Def) -> Optional[Tuple[str, cst.Call, Def]]:
        if d.kind != "assign" or not isinstance(d.node, cst.Call):
            return None
        made_by = class_default(d.node.func, d.env, d.scope)
        qn = self.qualname(made_by, d.env, d.scope)
        if qn in EINOPS_LAYERS:  # ``Rearrange("b d h w c -> (d h w) b c")`` kept on self
            return REARRANGE_LAYER, d.node, d
        if qn is None or not qn.startswith("torch.nn."):
            qn = self._partial_class(made_by, d.env, d.scope)
        if qn is None or not qn.startswith("torch.nn."):
            return None
        return qn.rsplit(".", 1)[1], d.node, d

    def _partial_class(self, func, env, scope) -> Optional[str]:
        """``LayerNorm = partial(nn.LayerNorm, eps=1e-6)`` bound once: the torch
        class a call of the name builds (classy-vision's and timm's norms)."""
        if not isinstance(func, cst.Name):
            return None
        defs = lookup(func.value, env, scope)
        if len(defs) != 1 or defs[0].kind != "assign" or not isinstance(defs[0].node, cst.Call):
            return None
        made = defs[0].node
        if self.qualname(made.func, defs[0].env, defs[0].scope) != "functools.partial":
            return None
        if not made.args or made.args[0].keyword is not None or made.args[0].star:
            return None
        return self.qualname(made.args[0].value, defs[0].env, defs[0].scope)

    def _call(self, node: cst.Call, env, scope, frame, depth, index) -> Optional[Layout]:
        func = node.func
        # a torch attention module: its output has its query's (src's, tgt's) shape
        target = (
            func.value if isinstance(func, cst.Attribute) and func.attr.value == "forward" else func
        )
        if isinstance(target, (cst.Name, cst.Attribute, cst.Subscript)):
            try:
                instances = self.resolver.instances(target, env, scope)
            except RecursionError:  # pragma: no cover
                instances = None
            spec = self.resolver.common_spec(instances)
            if spec is not None:
                if spec.name == "MultiheadAttention" and index != 0:
                    return None  # the (output, weights) pair itself
                arg = Bound(node, spec.forward).get(MODULE_OUTPUT_ARG.get(spec.name, "query"))
                if arg is None:
                    return None
                got = real(self.eval(arg, env, scope, frame, depth))
                if got is None or got.conforms:
                    return got  # a conversion keeps its evidence: the swap
                return Layout(got.roles, node, "module output")
        if index is not None:  # ``a, b = helper(x)``: the helper's returned tuples
            found = self.callee(node, env, scope)
            if found is None:  # ``x, attn = layer(x)``: a held module's tuple
                return self.module_output(node, env, scope, frame, depth, index)
            return self._helper(found, node, env, scope, frame, depth, index)
        qn = None
        if not (
            isinstance(func, cst.Attribute)
            and not isinstance(func.value, (cst.Name, cst.Attribute))
        ):
            qn = self.qualname(func, env, scope)
        if qn in CHECKPOINT:
            run = self._checkpointed(node)
            return self._call(run, env, scope, frame, depth, index) if run is not None else None
        if qn is not None and (qn.startswith("torch.") or qn.startswith("einops.")):
            return self._torch_call(qn, node, env, scope, frame, depth)
        if isinstance(func, cst.Attribute):
            got = self._method_call(func.attr.value, func.value, node, env, scope, frame, depth)
            if got is not None:
                return got
        ctor = self._module_ctor(func, env, scope)
        if ctor is not None:
            return self._torch_module(ctor, node, env, scope, frame, depth)
        found = self.callee(node, env, scope)
        if found is not None:
            return self._helper(found, node, env, scope, frame, depth)
        body = lambdas.applied(node, env, scope, self.__dict__.setdefault("_lambdas", {}))
        if body is not None:  # ``permute(q)`` of ``permute = lambda t: t.permute(1, 0, 2)``
            return lambdas.anchored(self.eval(body, env, scope, frame, depth + 1), body, node)
        given = lambdas.handed(node, env, scope, frame, self.__dict__.setdefault("_handed", {}))
        if given is not None:  # ``f()`` of a parameter ``f`` the caller gives a method
            run, cenv, cscope, cframe = given
            got = self._call(run, cenv, cscope, cframe, depth + 1, None)
            return lambdas.anchored(got, run, node)
        if isinstance(func, cst.Name) and node.args:
            got = self._chain_helper(node, env, scope, frame, depth) or self._stated_helper(
                node, env, scope
            )
            if got is not None:
                return got
        chosen = self.chosen_methods(node, env, scope)
        if chosen:  # ``fwd_fn(...)``: what every method it may be returns
            return join([self._helper((m, 1), node, env, scope, frame, depth) for m in chosen])
        got = self.module_output(node, env, scope, frame, depth)
        data = fed_alone(node) if got is None else None
        if data is not None and self._opaque(func, env, scope):
            # a module no one can read (``get_pos_encoder(kind)(d)``) fed converted
            # data: the conversion, fed through it to the module call it is for
            fed = real(self.eval(data, env, scope, frame, depth))
            # also data known to be sequence-first (chronocratic's documented
            # ``x.permute(1, 0, 2)``): the per-token step keeps it so
            return fed if fed is not None and (fed.conforms or fed.batch_first is False) else None
        return got

    def _checkpointed(self, node: cst.Call) -> Optional[cst.Call]:
        """``checkpointed(node)``, made once per node and kept as long as the
        evaluator, so that no other node ever shares its ``id``."""
        made = self.__dict__.setdefault("_runs", {})
        if id(node) not in made:
            made[id(node)] = (node, checkpointed(node))
        return made[id(node)][1]

    def _opaque(self, func: cst.Attribute, env, scope) -> bool:
        """Whether the module ``self.<attr>`` holds is not known."""
        try:
            return not self.resolver.instances(func, env, scope)
        except RecursionError:  # pragma: no cover
            return False

    def _torch_module(self, ctor, node, env, scope, frame, depth) -> Optional[Layout]:
        name, built, d = ctor
        args = positional(node)
        if not args:
            return None
        if name == REARRANGE_LAYER:  # the layer's pattern, as ``rearrange(x, pattern)``
            pattern = positional(built)
            if len(args) != 1 or len(pattern) != 1:
                return None
            return self._rearrange(args[0], pattern[0], node, env, scope, frame, depth)
        if name in PRESERVE_MODULES or (name == "Sequential" and self._all_preserving(built, d)):
            return self.eval(args[0], env, scope, frame, depth)  # the evidence stays where it was
        if name == "Sequential":
            return self.module_output(node, env, scope, frame, depth)
        if name == "Embedding":
            ids = real(self.eval(args[0], env, scope, frame, depth))
            if ids is None:
                ids = self._padded_ids(args[0], scope, env, frame)
            if ids is None or EMBED in ids.roles:
                return None
            stated = ids.node.value if isinstance(ids.node, cst.Assign) else ids.node
            if ids.how == "shape unpacking" and size_read(stated) is not None:
                # ``batch_size = ids.size(0)`` reads the batch as if ``ids`` were the
                # module's 3-D input; token ids are not, and their rank is unknown
                # (``batch_size, n = ids.shape`` states it, and is read)
                return None
            if isinstance(ids.node, DocLine):  # what a docstring says of the ids
                return Layout(ids.roles + (EMBED,), ids.node, "embedding of ids, docstring")
            return Layout(ids.roles + (EMBED,), node, "embedding of ids")
        if name in CONV:
            k = CONV[name]
            return Layout(
                (BATCH, CHANNEL) + ((SEQ,) if k == 1 else (SPATIAL,) * k), node, "conv feature map"
            )
        return None

    def _padded_ids(self, ids, scope, env, frame) -> Optional[Layout]:
        """Token ids whose comparison with a pad id some call of the same
        function hands a module as a ``*key_padding_mask`` (``padded_ids.py``;
        probe W's W32: ``self.tok(title_ids)`` beside ``src_key_padding_mask=
        title_ids == 0``); a parameter of a method the caller's frame binds
        (``self.embed(title_ids)``), by the caller's argument."""
        if not isinstance(ids, cst.Name):
            return None
        for site in self.flow.calls:
            if site.scope is not scope:
                continue
            for a in site.node.args:
                if a.keyword is None or not a.keyword.value.endswith("key_padding_mask"):
                    continue
                got = compared(a.value, ids.value, site.env, scope, self._compared_by_helper)
                if got is not None:
                    return Layout((BATCH, SEQ), got, "ids compared into a key padding mask")
        defs = lookup(ids.value, env, scope)
        if frame is not None and len(defs) == 1 and defs[0].kind == "param":
            if frame.func is defs[0].extra:
                arg = frame.args.get(ids.value)
                if isinstance(arg, cst.Name) and frame.scope is not scope:
                    return self._padded_ids(arg, frame.scope, frame.env, frame.parent)
        return None

    def _compared_by_helper(self, call: cst.Call, env, scope) -> Optional[cst.CSTNode]:
        """The caller's argument a helper compares with a pad id (``token_padding(ids)``)."""
        from ..program.returns import ReturnsFiles, helper_reading

        # the file's own helpers, and, for the linted file, those of the project
        got = helper_reading(self.ctx, call, env, scope, "padded-ids", read_compared)
        if got is None and not isinstance(getattr(self.ctx, "project", None), ReturnsFiles):
            # a file read for the linted one: another file's helper, from where it is
            got = self._helper_form(call, env, scope, "padded-ids", read_compared)
        return got.args.get(got.form["params"][0]) if got is not None else None

    def _preserving_base(self, owner, scope) -> bool:
        """``super()`` in a class of this file whose torch base keeps the shape
        (CLIP's ``class LayerNorm(nn.LayerNorm)``, cast to float and back)."""
        if not (
            isinstance(owner, cst.Call)
            and isinstance(owner.func, cst.Name)
            and owner.func.value == "super"
        ):
            return False
        while scope is not None and scope.cls is None:
            scope = scope.parent
        cls = scope.cls if scope is not None else None
        if cls is None:
            return False
        return any(_keeps_shape(self.qualname(b, cls.env, cls.scope)) for b in cls.base_exprs)

    def _all_preserving(self, built: cst.Call, d: Def) -> bool:
        for arg in built.args:
            if arg.star or not isinstance(arg.value, cst.Call):
                return False
            if not _keeps_shape(self.qualname(arg.value.func, d.env, d.scope)):
                return False
        return bool(built.args)

    def _helper(self, found, node, env, scope, frame, depth, index=None) -> Optional[Layout]:
        func, skip = found
        fscope = self.flow.functions.get(id(func))
        if fscope is None or not fscope.returns:
            return None
        returns = shaped(fscope.returns, index)
        hops, f = 0, frame
        while f is not None:
            hops += 1
            if f.func is func:
                return None
            f = f.parent
        if hops > 4:
            return None
        inner = Frame(func, fscope, bind_call(func, node, skip), env, scope, frame)
        if index is not None:  # the element ``index`` of every returned tuple, or unknown
            return join([self.element(e, renv, fscope, inner, depth, index) for e, renv in returns])
        return join([self.eval(expr, renv, fscope, inner, depth) for expr, renv in returns])

    def _method_call(self, attr, owner, node, env, scope, frame, depth) -> Optional[Layout]:
        if attr in _TRANSFORMS:
            inner = said(self.eval(owner, env, scope, frame, depth))
            if inner is None:
                if is_rotation(node, attr):
                    return self.rotation_layout(node)
                return self.swap_layout(node) if is_swap(node, attr) else None
            return transform(inner, attr, node, node)
        if attr in PRESERVE_METHODS:
            return self.eval(owner, env, scope, frame, depth)
        if attr == "forward" and self._preserving_base(owner, scope):
            args = positional(node)  # ``super().forward(x.type(torch.float32))`` of a LayerNorm
            return self.eval(args[0], env, scope, frame, depth) if args else None
        if attr in _SIZED:
            got = self._sized(node, attr, env, scope, frame, depth)
            if got is not None and attr in ("view", "reshape") and BATCH in got.roles:
                inner = real(self.eval(owner, env, scope, frame, depth))
                if _relabelled(inner, got):
                    return None  # the data's order is not the one the sizes name
            return got
        if attr == "repeat":
            return self._repeat(owner, node, env, scope, frame, depth)
        return None

    def _repeat(self, owner, node: cst.Call, env, scope, frame, depth) -> Optional[Layout]:
        """``q.unsqueeze(1).repeat(1, batch_size, 1)``: an axis repeated a named
        number of times (``batch_size``, ``x.shape[1]`` of known ``x``) takes
        that size's role; an axis repeated a constant number of times keeps
        the tensor's own (TranAD's ``tgt.repeat(1, 1, 2)``: still its features)."""
        if any(a.keyword is not None or a.star for a in node.args):
            return None
        args = [a.value for a in node.args]
        if len(args) == 1 and isinstance(args[0], (cst.Tuple, cst.List)):
            if any(isinstance(e, cst.StarredElement) for e in args[0].elements):
                return None
            args = [e.value for e in args[0].elements]
        inner = real(self.eval(owner, env, scope, frame, depth))
        if inner is not None and len(inner.roles) != len(args):
            inner = None
        roles = []
        for i, count in enumerate(args):
            if isinstance(count, cst.Integer):  # a constant: more of the same axis
                roles.append(inner.roles[i] if inner is not None else None)
            else:
                roles.append(self._size_role(count, env, scope, frame, depth))
        if inner is not None and tuple(roles) == inner.roles:
            return inner
        return Layout(tuple(roles), node, "repeat with named sizes") if useful(roles) else None

    def _size_role(self, size, env, scope, frame, depth) -> Optional[str]:
        """The role of the axis a size names: ``batch_size``, ``self.num_heads``,
        ``x.shape[1]`` / ``x.size(1)`` of an ``x`` whose layout is known."""
        if isinstance(size, (cst.Name, cst.Attribute)):
            name = size.value if isinstance(size, cst.Name) else _attr_name(size)
            if name and name.lower() not in ("n", "h", "shape"):  # n, h: ambiguous alone
                return roles_of_names([name])[0]
            return None
        if isinstance(size, cst.BinaryOperation) and isinstance(size.operator, cst.Multiply):
            # ``seq_len * batch_size``: a batch axis merged with another is a
            # batch axis (attention never mixes across either)
            sides = [self._size_role(s, env, scope, frame, depth) for s in (size.left, size.right)]
            return BATCH if BATCH in sides else None
        read = size_read(size)
        if read is None:
            return None
        of, index = read
        known = real(self.eval(of, env, scope, frame, depth))
        if known is None or not -len(known.roles) <= index < len(known.roles):
            return None
        return known.roles[index]

    def _sized(self, node: cst.Call, how: str, env=None, scope=None, frame=None, depth=0):
        args = _sizes(node)
        names = [a.value if isinstance(a, cst.Name) else _attr_name(a) for a in args]
        if None in names:
            # ``reshape(batch * n_chunks, chunk_size, N)``: an unnamed size may be
            # the batch, so ``N`` alone says nothing (it is often the features)
            names = [None if n is not None and n.lower() == "n" else n for n in names]
        roles = list(roles_of_names(names))
        if env is not None:  # ``x.view(x.size(0), x.size(1), -1)``: the axes of a known x
            for i, (arg, name) in enumerate(zip(args, names)):
                if (
                    name is None
                    and roles[i] is None
                    and (size_read(arg) is not None or isinstance(arg, cst.BinaryOperation))
                ):
                    roles[i] = self._size_role(arg, env, scope, frame, depth)
        if (
            len(args) == 2
            and literal(args[0]) == -1
            and roles[0] is None
            and roles[1] in (EMBED, CHANNEL)
        ):  # ``x.view(-1, C)``: every token of every sample in one row, no batch
            roles = [SEQ, roles[1]]
        if useful(roles):
            return Layout(tuple(roles), node, f"{how} with named sizes")
        return None

    def _torch_call(self, qn, node, env, scope, frame, depth) -> Optional[Layout]:
        args = positional(node)
        if qn in EINOPS_REARRANGE and len(args) >= 2:
            return self._rearrange(args[0], args[1], node, env, scope, frame, depth)
        if qn in ("torch.einsum", "torch.functional.einsum") and len(args) >= 2:
            return self._einsum(args, node, env, scope, frame, depth)
        if qn in _TORCH_TRANSFORMS and args:
            inner = said(self.eval(args[0], env, scope, frame, depth))
            rest = node.with_changes(args=node.args[1:])
            if inner is None:
                swap = is_swap(rest, _TORCH_TRANSFORMS[qn])
                return self.swap_layout(node) if swap else None
            return transform(inner, _TORCH_TRANSFORMS[qn], rest, node)
        if qn in PRESERVE_FUNCS and args:
            return self.eval(args[0], env, scope, frame, depth)
        if qn in CONCAT and args and isinstance(args[0], (cst.List, cst.Tuple)):
            return self._concat(args[0], env, scope, frame, depth)
        if qn in CTORS:
            got = self._sized(node, qn)
            sizes = _sizes(node)
            if (
                (got is None or BATCH not in got.roles)
                and len(sizes) == 2
                and qn not in ("torch.full", "torch.randint")
                and not any(isinstance(a, (cst.Tuple, cst.List)) for a in sizes)
            ):
                # ``torch.randn(n, d)``: two axes, no batch named: one unbatched sequence
                # (terratorch's learned wave tokens; torch reads 2-D input as (L, E))
                return Layout((SEQ, EMBED), node, f"{qn} of two sizes: unbatched")
            return got
        if qn in _NESTED:
            # a nested tensor is a batch of (L_i, E) sequences: (N, *, E), batch first
            return Layout((BATCH, SEQ, EMBED), node, "nested tensor")
        return None

    def _concat(self, seq, env, scope, frame, depth) -> Optional[Layout]:
        """``torch.cat([a, b], dim=d)``: the tensors share their rank and every
        size but one, so each axis keeps its role: the layout the operands
        whose layout is known agree on (a presence token of unknown layout
        prepended to sequence-first queries leaves them sequence-first).
        Operands swapped from unknown layouts are converted to one layout
        together (monai's pyramid: each level ``.permute(1, 0, 2)``, joined
        to the layer before's output); beside a known layout, they take it."""
        known = []
        for e in seq.elements:
            if isinstance(e, cst.StarredElement):
                return None
            got = real(self.eval(e.value, env, scope, frame, depth))
            if got is not None:
                known.append(got)
        return join(known) if known else None

    def _rearrange(self, tensor, pattern, node, env, scope, frame, depth) -> Optional[Layout]:
        if not isinstance(pattern, cst.SimpleString):
            return None
        text = pattern.evaluated_value
        if not isinstance(text, str) or "->" not in text:
            return None
        left_s, right_s = text.split("->", 1)
        left, right = parse_einops_side(left_s), parse_einops_side(right_s)
        if left is None or right is None:
            return None
        inner = real(self.eval(tensor, env, scope, frame, depth))
        if inner is None and is_swap_pattern(text):
            swap = self.swap_layout(node)
            if swap is not None and not useful(tuple(roles_of_names(left))):
                return swap  # ``"x y z -> y x z"``: names that say nothing
        all_names = [n for g in left for n in g.split()]
        guessed = dict(zip(all_names, roles_of_names(all_names)))  # what the names say
        if inner is not None and len(inner.roles) == len(left):
            # a group keeps its axis's role where it is moved whole (``(b t) a d ->
            # a (b t) d``: the batch rows of the data, group_role)
            named = dict(zip(left, inner.roles))
            for g, r in zip(left, inner.roles):
                if " " not in g:
                    continue
                if r in (SEQ, SPATIAL):  # ``(t n)`` of a sequence: each a part of it
                    named.update({n: r for n in g.split() if n not in named})
                elif r is None:  # ``(t n)`` of an axis the data does not name: the names say
                    named.update({n: guessed.get(n) for n in g.split() if n not in named})
        else:
            named = guessed
        if any(g.isdigit() for g in right[:2]):
            # SAINT's intersample ``"b n d -> 1 b (n d)"``: one sequence of the batch's
            # rows, attended on purpose; the module's batch axis holds one sample
            return None
        roles = tuple(group_role(g, named) for g in right)
        if not useful(roles):
            return None
        return Layout(roles, node, "einops pattern")

    def _einsum(self, args, node, env, scope, frame, depth) -> Optional[Layout]:
        eq = args[0]
        if not isinstance(eq, cst.SimpleString) or not isinstance(eq.evaluated_value, str):
            return None
        text = eq.evaluated_value.replace(" ", "")
        if "->" not in text or "." in text:
            return None
        ins, out = text.split("->", 1)
        operands = ins.split(",")
        letters: Dict[str, Optional[str]] = {}
        for spec, arg in zip(operands, args[1:]):
            got = real(self.eval(arg, env, scope, frame, depth))
            if got is not None and len(got.roles) == len(spec):
                for ch, role in zip(spec, got.roles):
                    letters.setdefault(ch, role)
        guessed = dict(zip(out, roles_of_names(list(out))))
        roles = tuple(letters.get(ch) or guessed.get(ch) for ch in out)
        if not useful(roles) or roles.count(BATCH) != 1:
            return None
        return Layout(roles, node, "einsum string")


def _attr_name(node) -> Optional[str]:
    if isinstance(node, cst.Attribute):
        return node.attr.value  # self.num_heads, cfg.d_model
    return None


def _sizes(node: cst.Call) -> list:
    """The sizes a constructor or a view is given: its positional arguments,
    or the elements of the one tuple or list it is given."""
    args = [a.value for a in node.args if a.keyword is None and not a.star]
    if len(args) == 1 and isinstance(args[0], (cst.Tuple, cst.List)):
        args = [e.value for e in args[0].elements]
    return args
