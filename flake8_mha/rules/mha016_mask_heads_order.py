"""MHA016: a per-sample mask expanded to ``nn.MultiheadAttention``'s 3-D
``attn_mask`` head-major.

The module reads a 3-D mask of shape ``(N * num_heads, L, S)`` batch-major
(row ``n * num_heads + h``).  ``mask.repeat(num_heads, 1, 1)``,
``torch.tile(mask, (num_heads, 1, 1))`` and ``torch.cat([mask] * num_heads)``
build it head-major.  Whether the repeat factor is the head count is read
by the head-axis analysis MHA013 uses (``GqaAnalysis.factor_kind``); whether
the mask differs per sample, by the mask analysis.
"""

from __future__ import annotations

import re
from typing import Iterator, List, Optional, Tuple

import libcst as cst

from ..analysis.classes import property_return
from ..analysis.events import ModuleCall
from ..analysis.flow import CallSite, lookup, subclasses_in
from ..analysis.program.returns import helper_reading, may_be_helper, overriding_readings
from ..analysis.program.returns import self_method
from ..analysis.gqa import GqaAnalysis, code_text
from ..analysis.heads import arg_of, call_sizes, is_one
from ..analysis.splats import element
from ..analysis.values import UNKNOWN, in_use, literal
from ..analysis.masks import At, analysis_for
from ..core.positions import line_of
from .autofix import atom
from .base import Example, Report, Rule
from .construction import construction_evidence

MAX_DEPTH = 8
# methods that keep a mask's rows in their order
_SAME_ROWS = {"to", "bool", "float", "half", "type", "type_as", "contiguous", "detach", "clone"}
_SHARED = ("causal", "tri", "subsequent", "future", "square")

Found = Tuple[cst.CSTNode, cst.CSTNode, str, CallSite]  # expansion, the mask, via, where


class MaskHeadsOrder(Rule):
    CODE = "MHA016"
    NAME = "mask-heads-order"
    MESSAGE = (
        "{expansion} repeats the mask head-major, but {module}'s 3-D {arg} is read "
        "batch-major (row n * num_heads + h): row i holds sample (i mod N)'s mask "
        "(use {fix})"
    )
    WHAT = """
        Flags a per-sample mask expanded to the 3-D `(N * num_heads, L, S)`
        shape head-major and given to a module's `attn_mask` (or a
        Transformer layer's `src_mask`/`tgt_mask`/`memory_mask`/`mask`):
        `mask.repeat(num_heads, 1, 1)` (or `pad[:, None].repeat(num_heads, L,
        1)`), `torch.tile(mask, (num_heads, 1, 1))`, `torch.cat([mask] *
        num_heads)`, `einops.repeat(mask, "b i j -> (h b) i j", h=num_heads)`,
        a head axis put in front and merged with the batch axis
        (`mask[None].expand(num_heads, N, L, S).reshape(-1, L, S)`,
        `mask.unsqueeze(0).repeat(num_heads, 1, 1, 1).flatten(0, 1)`),
        followed through locals and dtype methods, and into a function or
        `self` method of the file, or a function of another file of the
        project, whose one return expands its parameter, or a local made
        from it by steps that keep its batch axis first (`~valid`, `pad ==
        0`, `[:, None, :]`, `.expand(-1, T, -1)`, casts, a local rebound
        from itself, `.repeat_interleave(n_patches, dim=0)` of each sample's
        rows, a join with a mask shared by the samples, `missing[:, None, :]
        & ~eye`: probe AR's AR06 and AR14,
        `fixtures/program_calls/head_major_builders/`) (`def tile(mask,
        heads): return mask.repeat(heads, 1, 1)`; the repeat factor is then
        read inside it, and when it is one of the helper's parameters the
        caller's argument for it must not be another count, such as a
        literal `2`; the finding's evidence names the helper's line). A bias
        filled where such a mask holds (`bias.masked_fill(heads_pad,
        float("-inf"))`, BEiT's padding folded into its relative position
        bias) is judged by the mask it is filled with.

        The repeat factor must be the head count (`num_heads`, `self.nhead`,
        `n_head`: the head-axis analysis of MHA013 decides), and the mask
        must not be known to be the same for every sample.
        """
    WHY = """
        `nn.MultiheadAttention` reads row `n * num_heads + h` of a 3-D mask
        as sample n's head h. A head-major mask puts sample `(n * num_heads +
        h) mod N`'s mask there, so every sample is masked with another
        sample's padding whenever the batch holds more than one sample.
        Nothing raises: the shapes agree (torch 2.13, N=3, 4 heads: 0.57 off
        the same mask given as `key_padding_mask`).
        """
    EXAMPLE = """
        mask = pad[:, None, :].expand(-1, L, -1)         # (N, L, S), per sample
        out, _ = self.attn(x, x, x, attn_mask=mask.repeat(self.num_heads, 1, 1))
        """
    USE_INSTEAD = """
        mask = pad[:, None, :].expand(-1, L, -1)         # (N, L, S), per sample
        out, _ = self.attn(x, x, x, attn_mask=mask.repeat_interleave(self.num_heads, dim=0))
        # or, for padding alone: self.attn(x, x, x, key_padding_mask=pad)
        """
    DECISIONS = """
        - The walk back from the argument reads a one-return `@property` of
          the class (`attn_mask=self.attn_mask`, the property repeating a
          mask stored by the forward), and a helper kept as a
          `functools.partial` (`self.expand = partial(repeat_for_heads,
          num_heads=nhead)`, then `attn_mask=self.expand(outside)`).
        - A helper of the file or of another project file that tiles a mask
          it derives from its parameter by steps that keep the sample axis
          first (elementwise `sigmoid()`, `detach()`, a comparison with a
          number or with a parameter whose default is one: Mask2Former's
          `einops.repeat(logits.sigmoid() < threshold, "b q s -> (h b) q s")`)
          is read as tiling that parameter; the fix the message names is
          written in the helper. A part of the tuple a function or `self`
          method of the file returns (`_, attn_mask = self.prediction_heads(x)`)
          is read in that function.
        - A mask thresholded after it is expanded (Mask2Former's
          `probs.unsqueeze(1).repeat(1, num_heads, 1, 1).flatten(0, 1) < 0.5`)
          is judged by its expansion, as one expanded after the comparison.
        - Grouping the other way is right and silent:
          `mask.repeat_interleave(num_heads, dim=0)`, `mask[:, None].expand(N,
          num_heads, L, S).reshape(N * num_heads, L, S)`, `mask.unsqueeze(1).repeat(1,
          num_heads, 1, 1).flatten(0, 1)`, einops `"b i j -> (b h) i j"`.
        - A mask that is the same for every sample (a causal triangle, a
          mask named causal, triangular, subsequent, future or square, one
          mask copied over the batch as `m[None].expand(B, -1, -1)` or
          `m.unsqueeze(0).repeat(B, 1, 1)`, a streaming encoder's chunks) is
          harmless either way and silent. A mask whose per-sample layout the
          code does not show (a parameter) is reported: repeated head-major to
          a 3-D mask it can only be right when every sample has the same mask,
          and the witness then says it assumed they differ.
        - A factor that is not the head count (the batch, beams, classifier-free
          guidance's 2) is not this rule.
        - Reported at the module call that receives the mask.
        - A `self` method of the file that a subclass of the file overrides
          (`self.expand_heads(mask)` in the base, right; `ToothAttention`'s
          override tiling head-major) is judged for each override whose class
          is named anywhere but its own statement, in the file or in another
          of the project; the message names the subclass. A direct subclass
          in another file of the project (one that imports the base's file)
          is read too, in its own file with `self` unknown, and the message
          names its file and line (`fixtures/program_calls/hook_overrides/`).
          An override that nothing names outside its `class` statement never
          runs, and is not judged.
        - The fix the message names keeps what else the expansion copies:
          for `pad[:, None].repeat(num_heads, L, 1)` it is
          `pad[:, None].repeat_interleave(num_heads, dim=0).repeat(1, L, 1)`
          (without the second repeat the mask would have one query row, and
          `nn.MultiheadAttention` raises on it).
        """
    VALID = [
        "import torch.nn as nn\n"
        "class Block(nn.Module):\n"
        "    def __init__(self, num_heads):\n"
        "        super().__init__()\n"
        "        self.num_heads = num_heads\n"
        "        self.attn = nn.MultiheadAttention(64, num_heads, batch_first=True)\n"
        "    def forward(self, x, pad):\n"
        "        mask = pad[:, None, :].expand(-1, x.size(1), -1)\n"
        "        mask = mask.repeat_interleave(self.num_heads, dim=0)\n"
        "        return self.attn(x, x, x, attn_mask=mask, need_weights=False)[0]\n",
    ]
    INVALID = [
        Example(
            "import torch.nn as nn\n"
            "class Block(nn.Module):\n"
            "    def __init__(self, num_heads):\n"
            "        super().__init__()\n"
            "        self.num_heads = num_heads\n"
            "        self.attn = nn.MultiheadAttention(64, num_heads, batch_first=True)\n"
            "    def forward(self, x, pad):\n"
            "        mask = pad[:, None, :].expand(-1, x.size(1), -1)\n"
            "        mask = mask.repeat(self.num_heads, 1, 1)\n"
            "        return self.attn(x, x, x, attn_mask=mask, need_weights=False)[0]\n",
            10,
            16,
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._helpers: dict = {}  # id(call) -> the Helper it runs
        self._overridden: dict = {}  # id(call) -> the subclass whose override of it does it
        self._building: set = set()  # the builders being read (recursion)
        self.factor: Optional[cst.CSTNode] = None  # the last head-count factor read

    def on_module_call(self, ev: ModuleCall) -> Iterator[Report]:
        for name in ev.spec.attn_mask_args:  # those that take a 3-D (N * H, L, S) mask
            expr = ev.args.get(name)
            if expr is None:
                continue
            got = self.head_major(expr, ev.site.env, ev.site.scope, ev.site, 0)
            if got is None:
                continue
            expansion, mask_expr, via, where = got
            mask = analysis_for(self.ctx).evaluator.eval(
                mask_expr, At(where.env, where.scope, None, 0)
            )
            if mask.causal or mask.fill:
                continue
            layout = mask.layout
            if layout is not None and (len(layout) not in (2, 3) or layout[0] != "N"):
                # a square or broadcast mask: the same for every sample (an (N, S)
                # padding a helper expands itself is per sample)
                continue
            text = code_text(self.ctx, mask_expr).lower()
            if layout is None and any(word in text for word in _SHARED):
                continue
            if _copied_over_batch(mask_expr, where.env, where.scope, 0):
                continue  # one (1, L, S) mask expanded over the batch: the same for every sample
            yield self._report(ev, name, expansion, mask_expr, via, layout is not None, mask)

    # the walk back from the argument ---------------------------------------------
    def head_major(self, node, env, scope, site: CallSite, depth: int) -> Optional[Found]:
        if node is None or depth > MAX_DEPTH:
            return None
        d = depth + 1
        if isinstance(node, cst.Name):
            for df in lookup(node.value, env, scope):
                if df.kind == "assign" and df.node is not None and not df.index:
                    got = self.head_major(df.node, df.env, df.scope, site, d)
                elif df.kind == "unpack" and len(df.index) == 1 and isinstance(df.node, cst.Call):
                    got = self._returned_part(df.node, df.index[0], df.env, df.scope, site, d)
                else:
                    continue
                if got is not None:
                    return got
            return None
        if isinstance(node, cst.Attribute):  # ``self.attn_mask``, a ``@property`` (probe AM's AM23)
            cls = self.ctx.resolver.self_class(node, env, scope)
            got = property_return(self.ctx.resolver, self.ctx.flow, cls, node.attr.value)
            return self.head_major(got[0], got[1], got[2], site, d) if got else None
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
            # Mask2Former thresholds after expanding: ``probs.repeat(h, 1, 1) < 0.5``
            return self.head_major(node.left, env, scope, site, d)
        if not isinstance(node, cst.Call):
            return None
        func = node.func
        qn = self.ctx.resolver.qualname(func, env, scope)
        gqa = GqaAnalysis.of(self.ctx)
        here = CallSite(node, env, scope, (), (), None)
        if qn in ("torch.cat", "torch.concat", "torch.concatenate"):
            return self._cat(node, env, scope, here, gqa)
        if qn == "torch.tile":
            dims = arg_of(node, 1, "dims")
            recv = arg_of(node, 0, "input")
            if isinstance(dims, (cst.Tuple, cst.List)) and recv is not None:
                sizes = [el.value for el in dims.elements]
                if self._heads_first(sizes, env, scope, gqa):
                    return node, recv, "tile", here
            return None
        if qn == "einops.repeat":
            return self._einops(node, env, scope, here, gqa)
        if may_be_helper(qn):  # the project's own helper
            got = self._helper(node, env, scope)
            if got is not None:
                return got
        if qn is not None or not isinstance(func, cst.Attribute):
            return None
        name = func.attr.value
        if name in ("masked_fill", "masked_fill_"):
            # a bias filled where a head-major mask holds (BEiT's padding folded into
            # its relative position bias): the filled rows are the mask's
            got = self.head_major(func.value, env, scope, site, d)
            return got or self.head_major(arg_of(node, 0, "mask"), env, scope, site, d)
        if name in _SAME_ROWS:
            return self.head_major(func.value, env, scope, site, d)
        if name in ("reshape", "view", "flatten"):
            return self._merged(node, env, scope, here, gqa)
        if name in ("repeat", "tile"):
            sizes = call_sizes(node, env, scope)
            if sizes and self._heads_first(sizes, env, scope, gqa):
                return node, func.value, name, here
        return None

    def _returned_part(self, call: cst.Call, index, env, scope, site, depth) -> Optional[Found]:
        """``_, attn_mask = self.prediction_heads(x)``: the part ``index`` of
        the tuple every return of a function or ``self`` method of this file
        writes out (Mask2Former's ``return outputs_class, outputs_mask,
        attn_mask``), read in that function."""
        target = self.ctx.resolver.own_function(call, env, scope)
        fscope = self.ctx.flow.functions.get(id(target)) if target is not None else None
        if fscope is None or not fscope.returns or id(target) in self._building:
            return None
        self._building.add(id(target))
        try:
            for ret, renv in fscope.returns:
                found = element(ret, index, renv, fscope) if isinstance(ret, cst.Tuple) else None
                for expr, eenv, escope in found if found and len(found) == 1 else ():
                    got = self.head_major(expr, eenv, escope, site, depth + 1)
                    if got is not None:
                        return got
            return None
        finally:
            self._building.discard(id(target))

    def _helper(self, call: cst.Call, env, scope) -> Optional[Found]:
        """A function or ``self`` method of this file, or a function of another
        project file, whose one return expands one of its parameters
        head-major (``def tile(mask, heads): return mask.repeat(heads, 1,
        1)``; the repeat factor is read inside it): the caller's argument for
        it, expanded at the call."""
        got = helper_reading(self.ctx, call, env, scope, "mha016", _read_helper)
        given = got.args.get((got.form.get("params") or [""])[0]) if got is not None else None
        for sub, got in () if given is not None else self._overrides(call, env, scope):
            given = got.args.get((got.form.get("params") or [""])[0]) if got is not None else None
            if given is not None:  # ``ToothAttention(Masked)`` overriding ``expand_heads``
                self._overridden[id(call)] = sub
                break
        if given is None:
            return self._builder(call, env, scope)
        factor = got.args.get(got.form.get("factor") or "")
        if factor is not None:
            kind = GqaAnalysis.of(self.ctx).factor_kind(factor, env, scope)
        else:  # left out: the helper's default, if it has one
            kind = got.form.get("factor_default") or "other"
        if kind not in ("heads", "other"):
            return None  # ``tile(mask, 2)``: the caller's factor is not the head count
        self._helpers[id(call)] = got
        return (
            call,
            given,
            got.form.get("via", "repeat"),
            CallSite(call, env, scope, (), (), None),
        )

    def _overrides(self, call: cst.Call, env, scope):
        """``self.expand_heads(mask)`` in a method of a class of this file:
        (subclass, the reading of its override bound to the call) for each
        subclass of the file that overrides it, whose instances run that one
        (probe AH's AH05), then for each of another project file
        (``returns.overriding_readings``)."""
        own = self_method(call, scope)
        if own is None:
            return
        cls, name = own
        for s in subclasses_in(cls, list(self.ctx.flow.classes.values())):
            if name in s.methods and self._used(s):
                target = s.methods[name]
                yield (
                    s.name,
                    helper_reading(
                        self.ctx, call, env, scope, "mha016", _read_helper, target=target
                    ),
                )
        yield from overriding_readings(self.ctx, call, scope, "mha016", _read_helper)

    def _used(self, sub) -> bool:
        """The subclass is named outside its own statement, in this file or in
        another of the project (built or handed somewhere): its override runs."""
        return in_use(sub.name, sub.scope)

    def _builder(self, call: cst.Call, env, scope) -> Optional[Found]:
        """A function or ``self`` method of this file whose one return is a
        mask it makes and expands head-major itself (open_clip-style
        ``def build_pad_mask(self, text): pad = text == self.pad_id ...;
        return pad.repeat(self.heads, 1, 1)``): that expansion, judged in the
        builder's scope."""
        target = self.ctx.resolver.own_function(call, env, scope)
        fscope = self.ctx.flow.functions.get(id(target)) if target is not None else None
        if fscope is None or len(fscope.returns) != 1 or id(target) in self._building:
            return None
        self._building.add(id(target))
        try:
            ret, renv = fscope.returns[0]
            return self.head_major(ret, renv, fscope, None, 1)
        finally:
            self._building.discard(id(target))

    def _merged(self, node: cst.Call, env, scope, here, gqa: GqaAnalysis) -> Optional[Found]:
        """``m[None].expand(H, N, L, S).reshape(-1, L, S)`` (or ``.repeat(H, 1, 1,
        1)``, ``unsqueeze(0)``, ``flatten(0, 1)``): a head axis put before the
        batch axis, then merged with it: head-major."""
        name = node.func.attr.value
        if name == "flatten":
            ends = [literal(a.value) for a in node.args if a.keyword is None]
            if ends != [0, 1]:
                return None
        else:
            sizes = call_sizes(node, env, scope)
            if not sizes or len(sizes) != 3:
                return None
        inner, ienv, iscope = _through_names(node.func.value, env, scope)
        if not isinstance(inner, cst.Call) or not isinstance(inner.func, cst.Attribute):
            return None
        if inner.func.attr.value not in ("expand", "repeat"):
            return None
        sizes = call_sizes(inner, ienv, iscope)
        if not sizes or len(sizes) != 4 or not self._heads(sizes[0], ienv, iscope, gqa):
            return None
        if inner.func.attr.value == "repeat" and not all(is_one(s) for s in sizes[1:]):
            return None
        base, benv, bscope = _through_names(inner.func.value, ienv, iscope)
        mask = _new_first_axis(base)
        # the mask is read where it is written (``mask = mask[None]...``: the name before)
        where = CallSite(base, benv, bscope, (), (), None)
        return (node, mask, "expand", where) if mask is not None else None

    def _heads(self, factor, env, scope, gqa: GqaAnalysis) -> bool:
        """Whether a repeat factor is the head count; the last one that is
        stays in ``factor`` (a helper's reading names it, see ``_read_helper``)."""
        if gqa.factor_kind(factor, env, scope) != "heads":
            return False
        self.factor = factor
        return True

    def _heads_first(self, sizes, env, scope, gqa: GqaAnalysis) -> bool:
        if len(sizes) != 3 or not self._heads(sizes[0], env, scope, gqa):
            return False
        # (H, 1, 1), or (H, L, 1) for an (N, 1, S) padding mask: rows stay per sample
        return is_one(sizes[2]) and gqa.factor_kind(sizes[1], env, scope) not in ("heads", "beam")

    def _cat(self, node: cst.Call, env, scope, here, gqa: GqaAnalysis) -> Optional[Found]:
        seq = arg_of(node, 0, "tensors")
        dim = arg_of(node, 1, "dim")
        if dim is not None and not (isinstance(dim, cst.Integer) and dim.value == "0"):
            return None
        if isinstance(seq, cst.BinaryOperation) and isinstance(seq.operator, cst.Multiply):
            for lst, factor in ((seq.left, seq.right), (seq.right, seq.left)):
                if (
                    isinstance(lst, cst.List)
                    and len(lst.elements) == 1
                    and not isinstance(lst.elements[0], cst.StarredElement)
                    and self._heads(factor, env, scope, gqa)
                ):
                    return node, lst.elements[0].value, "cat", here
        if isinstance(seq, cst.ListComp) and seq.for_in.inner_for_in is None:
            it = seq.for_in.iter
            if (
                isinstance(it, cst.Call)
                and isinstance(it.func, cst.Name)
                and it.func.value == "range"
                and len(it.args) == 1
                and self._heads(it.args[0].value, env, scope, gqa)
            ):
                return node, seq.elt, "cat", here
        return None

    def _einops(self, node: cst.Call, env, scope, here, gqa: GqaAnalysis) -> Optional[Found]:
        """``einops.repeat(m, "b i j -> (h b) i j", h=num_heads)``: a new head
        axis merged *before* the batch axis."""
        recv, pattern = arg_of(node, 0, "tensor"), arg_of(node, 1, "pattern")
        if recv is None or not isinstance(pattern, cst.SimpleString):
            return None
        text = pattern.evaluated_value
        if not isinstance(text, str) or text.count("->") != 1:
            return None
        left, right = (side.split() for side in text.split("->"))
        merged = re.match(r"\(\s*(\w+)\s+(\w+)\s*\)", " ".join(right))
        if not left or merged is None or len(right) < 3:
            return None
        new, batch = merged.groups()
        size = next((a.value for a in node.args if a.keyword and a.keyword.value == new), None)
        if new in left or batch != left[0] or size is None:
            return None
        if not self._heads(size, env, scope, gqa):
            return None
        return node, recv, "einops", here

    # the report ----------------------------------------------------------------
    def _report(self, ev: ModuleCall, arg, expansion, mask_expr, via, per_sample, mask) -> Report:
        a = analysis_for(self.ctx)
        evidence = {}
        ctor = ev.single_ctor()
        if ctor is not None:
            evidence.update(construction_evidence(self.ctx, ctor))
        evidence.setdefault("embed_dim", None)
        evidence.setdefault("num_heads", None)
        evidence.setdefault("batch_first", None)
        data = mask.evidence(a.evaluator.source_text)
        data["line"] = a.evaluator.line(mask.origin.node) if mask.origin is not None else None
        evidence.update(
            {
                "module": ev.spec.name,
                "sink": arg,
                "via": via,
                "expansion": code_text(self.ctx, expansion),
                "expansion_line": a.evaluator.line(expansion),
                "per_sample": True if per_sample else None,
                "mask": data,
            }
        )
        helper = self._helpers.get(id(expansion))
        if helper is not None:  # the expansion written in a helper: where, and how
            evidence["helper"] = {
                "file": helper.where,
                "line": helper.form.get("line"),
                "expansion": helper.form.get("expansion"),
            }
        recv = code_text(self.ctx, mask_expr)
        if isinstance(mask_expr, cst.BaseExpression) and not atom(mask_expr):
            recv = f"({recv})"  # ``(a != b).repeat_interleave(...)``: the method of the whole
        # the head count as the code names it where the fix goes
        heads = code_text(self.ctx, self.factor) if self.factor is not None else "num_heads"
        if helper is not None:  # the caller's argument for the helper's factor
            given = helper.args.get(helper.form.get("factor") or "")
            heads = code_text(self.ctx, given) if given is not None else "num_heads"
        written = expansion if helper is None else _parsed(helper.form.get("expansion"))
        rest = _other_repeats(self.ctx, written)  # ``.repeat(h, L, 1)``: L stays
        fix = f"{recv}.repeat_interleave({heads}, dim=0){rest}"
        if helper is not None and helper.form.get("receiver"):  # a local of the helper's
            heads = helper.form.get("factor") or "num_heads"
            receiver = helper.form["receiver"]
            fix = f"{receiver}.repeat_interleave({heads}, dim=0){rest} in the helper"
        sub = self._overridden.get(id(expansion))
        at = ""
        if sub is not None:  # the base's method is right; the subclass's is not
            evidence["subclass"] = sub
            fix += f" in {sub}'s override"
            if helper is not None and helper.where:  # a subclass of another file
                at = f" at {helper.where}:{helper.form.get('line')}"
        return self.report(
            ev.site.node,
            evidence,
            expansion=f"`{code_text(self.ctx, expansion)}`"
            + (f" (as {sub} overrides it{at})" if sub is not None else ""),
            module=ev.spec.name,
            arg=arg,
            fix=fix,
        )


def _parsed(text: Optional[str]) -> Optional[cst.BaseExpression]:
    try:
        return cst.parse_expression(text) if text else None
    except cst.ParserSyntaxError:
        return None


def _other_repeats(ctx, expansion) -> str:
    """``.repeat(1, L, 1)`` for a head-major ``m.repeat(h, L, 1)`` that also
    copies other axes (probe AG's AG15): what the fix must keep after
    ``repeat_interleave(h, dim=0)``; empty when every other factor is 1."""
    if not (
        isinstance(expansion, cst.Call)
        and isinstance(expansion.func, cst.Attribute)
        and expansion.func.attr.value == "repeat"
        and expansion.args
        and not any(a.star or a.keyword for a in expansion.args)
    ):
        return ""
    args = [a.value for a in expansion.args]
    if len(args) == 1 and isinstance(args[0], (cst.Tuple, cst.List)):
        args = [e.value for e in args[0].elements]
    rest = args[1:]
    if all(literal(a) == 1 for a in rest):
        return ""
    return ".repeat(1, " + ", ".join(code_text(ctx, a) for a in rest) + ")"


_ELEMENTWISE = frozenset(("sigmoid", "detach", "clone", "half", "long", "int", "abs", "exp"))


def _scalar(node, env, scope) -> bool:
    """A number: a literal, or a parameter whose default is one
    (``threshold=0.5``), which a comparison broadcasts over every axis."""
    if literal(node) is not UNKNOWN:
        return True
    if not isinstance(node, cst.Name):
        return False
    defs = lookup(node.value, env, scope)
    return (
        len(defs) == 1
        and defs[0].kind == "param"
        and defs[0].node.default is not None
        and isinstance(literal(defs[0].node.default), (int, float))
    )


def _batch_kept_root(node, env, scope) -> Optional[cst.Name]:
    """The name a local assigned once is made from by steps that keep its
    batch axis first (``pad[:, None, :]``, ``.unsqueeze(1)``, ``.expand(B, T,
    T)``, ``.repeat_interleave(k, dim=0)``, casts, ``~``, a comparison with a
    literal or of the name's own rows):
    whose rows a head-major repeat of the local tiles."""
    node, env, scope = _through_names(node, env, scope)
    for _ in range(MAX_DEPTH):
        if isinstance(node, cst.Name):
            # a local rebound from itself (``m = m.repeat_interleave(n, dim=0)``): what it was
            deeper = _through_names(node, env, scope)
            if deeper[0] is node:
                return node
            node, env, scope = deeper
            continue
        if isinstance(node, cst.Subscript) and node.slice:
            first = node.slice[0].slice
            if not (isinstance(first, cst.Slice) and first.lower is None and first.upper is None):
                return None  # ``m[None]``: a new first axis
            node = node.value
        elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
            node = node.expression  # ``(~valid)[:, None, :]``: the same axes
        elif isinstance(node, cst.BinaryOperation) and isinstance(
            node.operator, (cst.BitAnd, cst.BitOr)
        ):
            # ``missing[:, None, :] & ~eye``: a per-sample mask joined with a shared
            # one keeps its samples first (probe AR's AR06)
            return _batch_kept_root(node.left, env, scope) or _batch_kept_root(
                node.right, env, scope
            )
        elif (
            isinstance(node, cst.Comparison)
            and len(node.comparisons) == 1
            and _scalar(node.comparisons[0].comparator, env, scope)
        ):
            node = node.left  # ``pad == 0``, ``probs < threshold``: the same axes
        elif isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
            # ``ids[:, :, None] != ids[:, None, :]``: pairs of one sample's rows
            left = _batch_kept_root(node.left, env, scope)
            right = _batch_kept_root(node.comparisons[0].comparator, env, scope)
            return (
                left
                if left is not None and right is not None and left.value == right.value
                else None
            )
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            name = node.func.attr.value
            if name == "unsqueeze" and not (node.args and _is_zero_arg(node.args[0].value)):
                node = node.func.value
            elif name in ("expand", "to", "bool", "float", "contiguous", "logical_not"):
                node = node.func.value
            elif name == "repeat_interleave" and _on_first_axis(node):
                # ``m.repeat_interleave(n_patches, dim=0)``: each sample's rows, n times
                # over, one after another (probe AR's AR14): still one sample a row
                node = node.func.value
            elif name in _ELEMENTWISE and not node.args:
                node = node.func.value  # ``logits.sigmoid() < 0.5`` (Mask2Former's helper)
            else:
                return None
        else:
            return None
    return None


def _on_first_axis(call: cst.Call) -> bool:
    """``x.repeat_interleave(k, dim=0)`` or ``(k, 0)``: along the first axis."""
    dim = arg_of(call, 1, "dim")
    return dim is not None and _is_zero_arg(dim)


def _is_zero_arg(node) -> bool:
    return isinstance(node, cst.Integer) and node.value == "0"


def _through_names(node, env, scope, depth: int = 0):
    """(what a local name assigned once holds, where it is written); ``node``
    and its own place otherwise."""
    while isinstance(node, cst.Name) and depth < MAX_DEPTH:
        defs = lookup(node.value, env, scope)
        if len(defs) != 1 or defs[0].kind != "assign" or defs[0].node is None or defs[0].index:
            break
        node, env, scope, depth = defs[0].node, defs[0].env, defs[0].scope, depth + 1
    return node, env, scope


def _new_first_axis(node) -> Optional[cst.CSTNode]:
    """``m`` of ``m[None]``, ``m[None, ...]``, ``m.unsqueeze(0)``: a new axis in front."""
    if isinstance(node, cst.Subscript) and node.slice:
        first = node.slice[0].slice
        rest = node.slice[1:]
        if (
            isinstance(first, cst.Index)
            and isinstance(first.value, cst.Name)
            and first.value.value == "None"
            and all(
                isinstance(s.slice, cst.Index) and isinstance(s.slice.value, cst.Ellipsis)
                for s in rest
            )
        ):
            return node.value
        return None
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "unsqueeze"
        and len(node.args) == 1
        and literal(node.args[0].value) == 0
    ):
        return node.func.value
    return None


def _read_helper(ctx, func: cst.FunctionDef, fscope) -> Optional[dict]:
    """MHA016's reading of a helper, in the helper's own file: its one return
    expands its parameter ``params[0]`` head-major; ``factor``: the parameter
    that gives the head count, when one does (the caller's argument for it is
    then judged too)."""
    if len(fscope.returns) != 1:
        return None
    ret, renv = fscope.returns[0]
    walker = MaskHeadsOrder(ctx)
    got = walker.head_major(ret, renv, fscope, None, 1)
    if got is None:
        return None
    factor = walker.factor
    p = func.params
    params = {x.name.value: x for x in (*p.posonly_params, *p.params, *p.kwonly_params)}
    receiver = None
    if not isinstance(got[1], cst.Name) or got[1].value not in params:
        # ``m = pad[:, None, :].expand(B, T, T)``, or that written in the return
        # (probe AC's AC14): the parameter's rows
        root = _batch_kept_root(got[1], renv, fscope)
        if root is None or root.value not in params:
            return None
        receiver = code_text(ctx, got[1]) if atom(got[1]) else f"({code_text(ctx, got[1])})"
        got = (got[0], root, *got[2:])
    own = factor.value if isinstance(factor, cst.Name) and factor.value in params else None
    default = params[own].default if own else None
    # what a caller that leaves the factor out gets: ``def tile(m, num_heads=2)``
    kind = GqaAnalysis.of(ctx).factor_kind(default, renv, fscope) if default else None
    return {
        "params": [got[1].value] + ([own] if own else []),
        "factor": own,
        "factor_default": kind,
        "via": got[2],
        **({"receiver": receiver} if receiver else {}),
        "expansion": code_text(ctx, got[0]),
        "line": line_of(ctx.module, got[0]),
    }


__all__: List[str] = ["MaskHeadsOrder"]


def _copied_over_batch(node, env, scope, depth: int) -> bool:
    """``m[None].expand(B, -1, -1)``, ``m.unsqueeze(0).repeat(B, 1, 1)``: one
    mask copied to every sample (a chunk or block mask built from positions
    alone), through locals bound once and casts."""
    node, env, scope = _through_names(node, env, scope, depth)
    while (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value in ("to", "bool", "float", "contiguous")
    ):
        node, env, scope = _through_names(node.func.value, env, scope, depth)
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value in ("expand", "repeat")
        and _new_first_axis(node.func.value) is not None
    )
