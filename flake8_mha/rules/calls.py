"""Rules on how attention is called: MHA005, MHA006, MHA007, MHA102."""
from __future__ import annotations

from typing import Iterator, Optional, Tuple

import libcst as cst

from ..events import ModuleCall, SdpaCall, is_module_class, self_name
from ..flow import CallSite, lookup
from ..values import UNKNOWN, definitely
from .base import Example, Report, Rule
from .construction import construction_evidence


def _ctor_evidence(ctx, ev: ModuleCall) -> dict:
    ctor = ev.single_ctor()
    if ctor is not None:
        return construction_evidence(ctx, ctor)
    return {"module": ev.spec.name}


class IsCausalWithoutMask(Rule):
    CODE = "MHA005"
    NAME = "is-causal-without-mask"
    MESSAGE = (
        "{flag}=True without {mask_arg}: {module} raises in training and silently ignores "
        "the causal hint on the inference fastpath"
    )
    WHAT = """
        Flags a call of `nn.MultiheadAttention` or a Transformer module with a
        literal `is_causal=True` (`src_is_causal`, `tgt_is_causal`,
        `memory_is_causal`) and without the mask that flag belongs to
        (`attn_mask`, `src_mask`, `mask`, `tgt_mask`, `memory_mask`).
        """
    WHY = """
        For the torch modules, `is_causal` is only a *hint* that the mask you
        pass is causal; it does not build one. In training the call raises
        `RuntimeError: Need attn_mask if specifying the is_causal hint`. In
        inference (eval, no grad, batch-first, even heads) the fastpath drops
        the hint and attends to the future without a word: 0.88 away from the
        causal output on torch 2.13.
        """
    EXAMPLE = """
        out, _ = self.attn(x, x, x, is_causal=True, need_weights=False)
        """
    USE_INSTEAD = """
        L = x.size(1)
        causal = nn.Transformer.generate_square_subsequent_mask(L, device=x.device)
        out, _ = self.attn(x, x, x, attn_mask=causal, is_causal=True, need_weights=False)
        """
    DECISIONS = """
        - Only a statically true flag counts; a variable flag is not reported.
        - The mask counts as given unless it is missing or statically `None`.
        - Not for `F.scaled_dot_product_attention`, where `is_causal=True`
          without a mask is the right way to ask for causal attention.
        """
    VALID = [
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n"
        "def f(x, m):\n    return attn(x, x, x, attn_mask=m, is_causal=True)\n",
    ]
    INVALID = [
        Example(
            "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n"
            "def f(x):\n    return attn(x, x, x, is_causal=True)[0]\n",
            4, 12,
        ),
        Example(
            "import torch.nn as nn\nlayer = nn.TransformerEncoderLayer(64, 8, batch_first=True)\n"
            "def f(x):\n    return layer(x, is_causal=True)\n",
            4, 12,
        ),
    ]

    def on_module_call(self, ev: ModuleCall) -> Iterator[Report]:
        site = ev.site
        for pair in ev.spec.causal_pairs:
            flag = ev.args.get(pair.flag)
            if flag is None or self.ctx.value(flag, site) is not True:
                continue
            mask = ev.args.get(pair.mask)
            if mask is not None and not definitely(mask, site.env, site.scope, None):
                continue
            if mask is None and ev.args.maybe_given(pair.mask):
                continue
            evidence = _ctor_evidence(self.ctx, ev)
            evidence.update(flag=pair.flag, mask_arg=pair.mask)
            yield self.report(site.node, evidence, flag=pair.flag, mask_arg=pair.mask,
                              module=ev.spec.name)


class SdpaMaskAndCausal(Rule):
    CODE = "MHA006"
    NAME = "sdpa-mask-and-causal"
    FIX_TITLE = ("Drop `is_causal=True` when `attn_mask` already is the causal mask (only then; "
                 "`flake8-mha check --fix`)")
    MESSAGE = (
        "scaled_dot_product_attention given attn_mask together with is_causal: it raises "
        "with dropout and silently applies both masks otherwise"
    )
    WHAT = """
        Flags `F.scaled_dot_product_attention` given an `attn_mask` that can be
        non-None together with an `is_causal` that can be true on the same path.
        """
    WHY = """
        SDPA's contract is one or the other. What happens with both depends on
        the kernel: with `dropout_p > 0` (or the math kernel) it raises
        `RuntimeError: ... Explicit attn_mask should not be set when
        is_causal=True`; with the default CPU kernel and no dropout it applies
        both masks silently, so the same model fails in training and runs in
        evaluation, or behaves differently on another device.
        """
    EXAMPLE = """
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=pad_mask, is_causal=True)
        """
    USE_INSTEAD = """
        # fold the causal triangle into the one mask
        causal = torch.ones(L, L, dtype=torch.bool, device=q.device).tril()
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=pad_mask & causal)
        # or: is_causal=attn_mask is None
        """
    DECISIONS = """
        - Clean when the mask is provably `None` or `is_causal` provably false on
          that path: literals, locals, `is_causal=attn_mask is None` (also inside
          an `and`), `attn_mask=None if is_causal else mask`, and calls inside
          `if mask is None:` / `if not is_causal:` branches.
        - A wrapper that passes its own `is_causal` parameter, and a mask made
          from its own parameters, straight to SDPA (the signature of SDPA,
          forwarded) is not reported: its caller makes the choice, as with SDPA
          itself. So is a pair saved together on one parameter object and
          replayed (`attn_mask=ctx.attn_mask, is_causal=ctx.is_causal` in an
          autograd backward). A literal `is_causal=True`, or a flag from
          `self`/a config, with a mask that can be non-None, is reported.
        """
    VALID = [
        "import torch.nn.functional as F\ndef f(q, k, v, m):\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=m is None)\n",
        "import torch.nn.functional as F\ndef attend(q, k, v, attn_mask=None, is_causal=False):\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal)\n",
        "import torch.nn.functional as F\ndef f(q, k, v):\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=None, is_causal=True)\n",
    ]
    INVALID = [
        Example(
            "import torch.nn.functional as F\ndef f(q, k, v, m):\n"
            "    return F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=True)\n",
            3, 12,
        ),
    ]

    def on_sdpa_call(self, ev: SdpaCall) -> Iterator[Report]:
        site = ev.site
        mask = ev.args.get("attn_mask")
        causal = ev.args.get("is_causal")
        if mask is None or causal is None:
            return
        env, scope = site.env, site.scope
        if definitely(mask, env, scope, None) or definitely(causal, env, scope, False):
            return
        masks = _none_aliases(mask, site)
        if _none_when(mask, causal, site) or _path_excludes(site, masks, causal):
            return
        if _flag_safe(causal, masks, env, scope, site, 0) or _handled_in_function(site, mask, causal):
            return
        if _saved_pair(mask, causal, site):
            return
        dropout = ev.args.get("dropout_p")
        dv = self.ctx.value(dropout, site) if dropout is not None else 0.0
        evidence = {"module": "scaled_dot_product_attention",
                    "dropout_p": dv if isinstance(dv, (int, float)) and dv is not UNKNOWN else None,
                    "is_causal": True if definitely(causal, env, scope, True) else None,
                    "mask": _mha006_mask(self.ctx, mask, site)}
        yield self.report(site.node, evidence)


def _mha006_mask(ctx, expr: cst.BaseExpression, site: CallSite) -> dict:
    """What the confirmer needs about MHA006's mask: its meaning, kind, shape
    and origin: "causal_triangle" (the very triangle is_causal applies: a bool
    tril(ones(L, S)) or generate_square_subsequent_mask), "padding" (no
    triangle in it), "other" (a triangle combined with more), or None."""
    from ..masks import ADDITIVE, BOOL, KEEP, PADDING, BROADCAST, SQUARE, analysis_for

    evaluator = analysis_for(ctx).evaluator
    m = evaluator.at(expr, site)
    origin = None
    if m.causal and m.shape == SQUARE and (
            (m.tri == ("lower", 0) and m.meaning == KEEP and m.kind == BOOL)
            or (m.meaning == ADDITIVE and m.origin is not None
                and isinstance(m.origin.node, cst.Call)
                and cst.Module([]).code_for_node(m.origin.node.func).endswith(
                    "generate_square_subsequent_mask"))):
        origin = "causal_triangle"
    elif m.causal:
        origin = "other"
    elif m.shape in (PADDING, BROADCAST):
        origin = "padding"
    out = m.evidence(evaluator.source_text)
    out.update(origin=origin, by_name=bool(m.origin and m.origin.by_name))
    return out


def _same(a: cst.CSTNode, b: cst.CSTNode) -> bool:
    return a.deep_equals(b)


def _resolve_local(node: cst.CSTNode, site: CallSite, depth: int = 0) -> cst.CSTNode:
    """Follow a local name to its single assigned expression."""
    while isinstance(node, cst.Name) and depth < 8:
        defs = lookup(node.value, site.env, site.scope)
        if len(defs) != 1 or defs[0].kind != "assign":
            break
        node = defs[0].node
        depth += 1
    return node


def _none_aliases(mask: cst.CSTNode, site: CallSite) -> Tuple[cst.CSTNode, ...]:
    """The mask and the names that are None exactly when it is: in
    ``causal_mask = attention_mask; if attention_mask is not None: causal_mask =
    causal_mask[..., :k]`` testing ``attention_mask is None`` tests the mask."""
    out = [mask]
    if not isinstance(mask, cst.Name):
        return tuple(out)
    names = {mask.value}
    frontier = [mask]
    while frontier and len(names) < 8:
        node = frontier.pop()
        defs = lookup(node.value, site.env, site.scope)
        if node is not mask and (not defs or any(d.kind != "assign" for d in defs)):
            continue  # a parameter or the like: the alias itself, nothing more
        if not defs:
            return (mask,)
        for d in defs:
            if d.kind != "assign":
                return (mask,)
            value = d.node
            if isinstance(value, cst.Name):
                if value.value not in names:
                    names.add(value.value)
                    out.append(value)
                    frontier.append(value)
                continue
            root = value
            while isinstance(root, (cst.Subscript, cst.Attribute, cst.Call)):
                root = root.value if not isinstance(root, cst.Call) else root.func
            # a slice or method of an alias raises on None: it ran on a non-None mask
            if not (isinstance(root, cst.Name) and root.value in names and root is not value):
                return (mask,)
    return tuple(out)


def _is_none_test(node: cst.CSTNode, mask, negated: bool = False) -> bool:
    """``mask is None`` (or ``mask is not None`` when negated); ``mask`` may be
    a tuple of expressions that are None together."""
    if isinstance(mask, tuple):
        return any(_is_none_test(node, m, negated) for m in mask)
    if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
        return False
    comp = node.comparisons[0]
    op = cst.IsNot if negated else cst.Is
    if not isinstance(comp.operator, op):
        return False
    left, right = node.left, comp.comparator
    if isinstance(right, cst.Name) and right.value == "None":
        return _same(left, mask)
    if isinstance(left, cst.Name) and left.value == "None":
        return _same(right, mask)
    return False


def _flag_safe(expr: cst.CSTNode, mask: cst.CSTNode, env, scope, site: CallSite, depth: int) -> bool:
    """Whether ``expr`` can be true only while the mask is None (``attn_mask is
    None``, inside an ``and``, through ``True if ... else False`` and locals),
    or is the function's own parameter forwarded with a mask made from its
    own parameters."""
    if depth > 8:
        return False
    if definitely(expr, env, scope, False):
        return True
    if _is_none_test(expr, mask):
        return True
    t = type(expr)
    if t is cst.BooleanOperation and isinstance(expr.operator, cst.And):
        return (_flag_safe(expr.left, mask, env, scope, site, depth + 1)
                or _flag_safe(expr.right, mask, env, scope, site, depth + 1))
    if t is cst.IfExp:
        body_ok = (_flag_safe(expr.body, mask, env, scope, site, depth + 1)
                   or _flag_safe(expr.test, mask, env, scope, site, depth + 1))
        else_ok = (_flag_safe(expr.orelse, mask, env, scope, site, depth + 1)
                   or _is_none_test(expr.test, mask, negated=True))
        return body_ok and else_ok
    if (t is cst.Call and isinstance(expr.func, cst.Name) and expr.func.value == "bool"
            and len(expr.args) == 1):
        return _flag_safe(expr.args[0].value, mask, env, scope, site, depth + 1)
    if (t is cst.Call and isinstance(expr.func, cst.Attribute) and not expr.args
            and expr.func.attr.value in ("item", "bool")):
        return _flag_safe(expr.func.value, mask, env, scope, site, depth + 1)
    if t is cst.Name:
        defs = lookup(expr.value, env, scope)
        if not defs:
            return False
        for d in defs:
            if d.kind == "assign":
                ok = _flag_safe(d.node, mask, d.env, d.scope, site, depth + 1)
            elif d.kind == "param":
                ok = _mask_from_params(mask[0] if isinstance(mask, tuple) else mask, site)
            else:
                ok = False
            if not ok:
                return False
        return True
    return False


def _mask_from_params(mask: cst.CSTNode, site: CallSite) -> bool:
    """Whether the mask is made from parameters of the enclosing function."""
    from ..flow import children

    stack = [(mask, site.env, site.scope, 0)]
    while stack:
        node, env, scope, depth = stack.pop()
        if isinstance(node, cst.Name):
            defs = lookup(node.value, env, scope)
            if defs and any(d.kind == "param" and d.scope is site.scope for d in defs):
                return True
            if depth < 6:
                stack.extend((d.node, d.env, d.scope, depth + 1) for d in defs
                             if d.kind in ("assign", "augassign") and d.node is not None)
            continue
        stack.extend((child, env, scope, depth) for child in children(node))
    return False


def _saved_pair(mask: cst.CSTNode, causal: cst.CSTNode, site: CallSite) -> bool:
    """``attn_mask=ctx.attn_mask, is_causal=ctx.is_causal``: a pair saved together
    on one parameter object (an autograd ctx, a params record) and replayed, as
    forwarding a caller's pair is."""
    if not (isinstance(mask, cst.Attribute) and isinstance(causal, cst.Attribute)):
        return False
    owner_m, owner_c = mask.value, causal.value
    if not (isinstance(owner_m, cst.Name) and isinstance(owner_c, cst.Name)
            and owner_m.value == owner_c.value):
        return False
    defs = lookup(owner_m.value, site.env, site.scope)
    return bool(defs) and all(d.kind == "param" for d in defs)


def _refs(node: cst.CSTNode) -> set:
    """Dotted names read in ``node`` (``mask``, ``self.is_causal``)."""
    from ..flow import children

    out = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (cst.Name, cst.Attribute)):
            text = _dotted(n)
            if "?" not in text:
                out.add(text)
                if isinstance(n, cst.Attribute):
                    continue
        stack.extend(children(n))
    return out


def _handled_in_function(site: CallSite, mask: cst.CSTNode, causal: cst.CSTNode) -> bool:
    """The function tests the mask and the flag together somewhere (``if
    exists(mask) and causal: ... causal = False``): it handles the combination."""
    from ..flow import children

    func = site.function
    if func is None:
        return False
    mask_refs = _refs(mask) - {"None"}
    flag_refs = _refs(causal) - {"True", "False", "None"}
    if not mask_refs or not flag_refs:
        return False
    stack = [func.body]
    while stack:
        n = stack.pop()
        if isinstance(n, (cst.If, cst.IfExp, cst.While)):
            refs = _refs(n.test)
            if refs & mask_refs and refs & flag_refs:
                return True
        stack.extend(children(n))
    return False


def _none_when(mask: cst.CSTNode, causal: cst.CSTNode, site: CallSite) -> bool:
    """``attn_mask=None if is_causal else m`` (directly or through a local)."""
    expr = _resolve_local(mask, site)
    if not isinstance(expr, cst.IfExp):
        return False
    test = expr.test
    is_none = lambda n: isinstance(n, cst.Name) and n.value == "None"  # noqa: E731
    if is_none(expr.body) and _same(test, causal):
        return True
    if (is_none(expr.orelse) and isinstance(test, cst.UnaryOperation)
            and isinstance(test.operator, cst.Not) and _same(test.expression, causal)):
        return True
    return False


def _path_excludes(site: CallSite, mask: cst.CSTNode, causal: cst.CSTNode) -> bool:
    """An enclosing ``if`` proves the mask None or the flag false on this path."""
    for test, polarity, _env in site.conds:
        if polarity and _is_none_test(test, mask):
            return True
        if not polarity and _is_none_test(test, mask, negated=True):
            return True
        if not polarity and _same(test, causal):
            return True
        if (polarity and isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
                and _same(test.expression, causal)):
            return True
    return False


def _mentions_self_training(node: cst.CSTNode, self_var: str) -> bool:
    from ..flow import children

    stack = [node]
    while stack:
        n = stack.pop()
        if (isinstance(n, cst.Attribute) and n.attr.value == "training"
                and isinstance(n.value, cst.Name) and n.value.value == self_var):
            return True
        stack.extend(children(n))
    return False


class SdpaDropoutInEval(Rule):
    CODE = "MHA007"
    NAME = "sdpa-dropout-in-eval"
    MESSAGE = (
        "scaled_dot_product_attention dropout_p is not gated on self.training: dropout "
        "stays on after model.eval() and inference is random"
    )
    MESSAGE_MODULE = (
        "scaled_dot_product_attention given the nn.Dropout module {attr} as dropout_p: it takes "
        "a probability, gated on self.training ({attr}.p if self.training else 0.0)"
    )
    WHAT = """
        Flags `F.scaled_dot_product_attention` inside a method of an `nn.Module`
        subclass whose `dropout_p` comes from the module (an attribute such as
        `self.dropout`, a constant) and is neither 0 nor gated by `self.training`.
        Passing an `nn.Dropout` module as `dropout_p` gets its own message.
        """
    WHY = """
        Unlike `nn.Dropout`, a functional call does not know the module's mode:
        `model.eval()` does not turn `dropout_p` off. Every inference call drops
        attention weights at random; two calls on the same input differ (1.5 on
        torch 2.13). nanoGPT, timm, wenet and torchtune have all shipped this.
        """
    EXAMPLE = """
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout)
        """
    USE_INSTEAD = """
        y = F.scaled_dot_product_attention(
            q, k, v, dropout_p=self.dropout if self.training else 0.0
        )
        """
    DECISIONS = """
        - Gating counts anywhere in the method: inline (`p if self.training else
          0.0`), through a local, in an `if self.training:` branch, or as
          `self.training and p` / `p * self.training`. A method that reads
          `self.training` at all is taken as gated.
        - A `dropout_p` that comes from a parameter of the function is the
          caller's decision: not reported (also for free functions).
        - Outside a method of an `nn.Module` subclass: not reported.
        """
    FIX_TITLE = "Gate dropout_p: `p if self.training else 0.0`"
    VALID = [
        "import torch.nn as nn\nimport torch.nn.functional as F\nclass A(nn.Module):\n"
        "    def forward(self, q, k, v):\n"
        "        return F.scaled_dot_product_attention(q, k, v, dropout_p=self.p if self.training else 0.0)\n",
        "import torch.nn.functional as F\ndef attend(q, k, v, dropout_p):\n"
        "    return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p)\n",
    ]
    INVALID = [
        Example(
            "import torch.nn as nn\nimport torch.nn.functional as F\nclass A(nn.Module):\n"
            "    def forward(self, q, k, v):\n"
            "        return F.scaled_dot_product_attention(q, k, v, dropout_p=self.p)\n",
            5, 16,
            fixed="import torch.nn as nn\nimport torch.nn.functional as F\nclass A(nn.Module):\n"
            "    def forward(self, q, k, v):\n"
            "        return F.scaled_dot_product_attention(q, k, v, dropout_p=self.p if self.training else 0.0)\n",
        ),
    ]

    def on_sdpa_call(self, ev: SdpaCall) -> Iterator[Report]:
        site = ev.site
        dropout = ev.args.get("dropout_p")
        if dropout is None or ev.args.star or ev.args.double_star:
            return
        if not is_module_class(site.cls, self.ctx.resolver):
            return
        self_var = self_name(site)
        if self_var is None:
            return
        func = site.function
        if _mentions_self_training(func, self_var):
            return
        source = self._source(dropout, site, self_var, 0)
        if source is None:
            return
        kind, attr = source
        evidence = {"module": "scaled_dot_product_attention", "dropout_is_module": kind == "module"}
        if kind == "module":
            evidence["dropout_p"] = None
            yield self.report(site.node, evidence, self.MESSAGE_MODULE, attr=attr)
            return
        evidence["dropout_p"] = attr if isinstance(attr, (int, float)) else None
        yield self.report(site.node, evidence)

    def _source(self, expr: cst.CSTNode, site: CallSite, self_var: str, depth: int):
        """('value', number|None) or ('module', text) when dropout_p comes from
        the module or a constant and is not zero; None when unsure or gated."""
        if depth > 8:
            return None
        ctx = self.ctx
        v = ctx.value(expr, site) if isinstance(expr, (cst.Name, cst.Integer, cst.Float)) else UNKNOWN
        if v is not UNKNOWN:
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
                return ("value", v)
            return None
        if isinstance(expr, cst.Attribute) and _root_name(expr) == self_var:
            if self._is_dropout_module(expr, site):
                return ("module", _dotted(expr))
            sv = ctx.value(expr, site)
            if isinstance(sv, (int, float)) and not isinstance(sv, bool) and sv == 0:
                return None
            return ("value", sv if isinstance(sv, (int, float)) and sv is not UNKNOWN else None)
        if isinstance(expr, cst.Name):
            defs = lookup(expr.value, site.env, site.scope)
            if not defs:
                return None
            found = None
            for d in defs:
                if d.kind != "assign":
                    return None
                dsite = CallSite(site.node, d.env, d.scope, site.conds, (), None)
                got = self._source(d.node, dsite, self_var, depth + 1)
                if got is None:
                    return None
                found = got
            return found
        return None

    def _is_dropout_module(self, expr: cst.Attribute, site: CallSite) -> bool:
        from .. import torch_api

        if not isinstance(expr.value, cst.Name):
            return False
        defs = lookup(expr.value.value, site.env, site.scope)
        if len(defs) != 1 or defs[0].kind != "self":
            return False
        attr_defs = self.ctx.resolver.attr_defs(defs[0].extra, expr.attr.value)
        if not attr_defs:
            return False
        for d in attr_defs:
            if d.kind != "assign" or not isinstance(d.node, cst.Call):
                return False
            if self.ctx.resolver.qualname(d.node.func, d.env, d.scope) != torch_api.DROPOUT:
                return False
        return True


def _root_name(node: cst.CSTNode) -> Optional[str]:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _dotted(node: cst.CSTNode) -> str:
    if isinstance(node, cst.Attribute):
        return _dotted(node.value) + "." + node.attr.value
    return node.value if isinstance(node, cst.Name) else "?"


class AttentionWeightsDiscarded(Rule):
    CODE = "MHA102"
    NAME = "attention-weights-discarded"
    CATEGORY = "performance"
    MESSAGE = (
        "attention weights computed and thrown away: pass need_weights=False, or "
        "nn.MultiheadAttention takes the slow path (about 2x) to build them"
    )
    WHAT = """
        Flags a call of a known `nn.MultiheadAttention` (directly, through
        `self.attn`, through a `ModuleList` item) whose second result is thrown
        away (`out, _ = attn(...)`, `attn(...)[0]`, `(out, w) = attn(...)` with
        `w` never read) while `need_weights` is not given as `False`.
        """
    WHY = """
        `need_weights` defaults to `True`: the module then materialises the full
        `(N, L, S)` attention matrix with a manual softmax instead of the fused
        SDPA kernel. Off the fastpath that costs about 2.2x on torch 2.13 CPU (N=4,
        L=1024, E=448), on every step, for a tensor nobody reads.
        """
    EXAMPLE = """
        out, _ = self.attn(x, x, x, key_padding_mask=pad)
        """
    USE_INSTEAD = """
        out, _ = self.attn(x, x, x, key_padding_mask=pad, need_weights=False)
        """
    DECISIONS = """
        - Not reported when the weights are read anywhere in the function,
          returned, stored on `self` or elsewhere, or when `need_weights` is a
          variable.
        - A call whose whole result is dropped (an expression statement) is not
          reported.
        """
    FIX_TITLE = "Add `need_weights=False`"
    VALID = [
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n"
        "def f(x):\n    out, w = attn(x, x, x)\n    return out, w\n",
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n"
        "def f(x):\n    return attn(x, x, x, need_weights=False)[0]\n",
    ]
    INVALID = [
        Example(
            "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n"
            "def f(x):\n    out, _ = attn(x, x, x)\n    return out\n",
            4, 14,
            fixed="import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n"
            "def f(x):\n    out, _ = attn(x, x, x, need_weights=False)\n    return out\n",
        ),
    ]

    def on_module_call(self, ev: ModuleCall) -> Iterator[Report]:
        if ev.spec.name != "MultiheadAttention":
            return
        site = ev.site
        nw = ev.args.get("need_weights")
        if nw is not None:
            if self.ctx.value(nw, site) is not True:
                return  # False, or a variable: the caller decided
        elif ev.args.maybe_given("need_weights"):
            return
        if not self._discarded(site):
            return
        yield self.report(site.node, _ctor_evidence(self.ctx, ev))

    def _discarded(self, site: CallSite) -> bool:
        call = site.node
        if site.parents:
            parent = site.parents[-1]
            return isinstance(parent, cst.Subscript) and parent.value is call and _index_zero(parent)
        stmt = site.stmt
        if isinstance(stmt, cst.Assign) and stmt.value is call and len(stmt.targets) == 1:
            target = stmt.targets[0].target
            if isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
                second = target.elements[1]
                if isinstance(second, cst.StarredElement):
                    return False
                w = second.value
                return isinstance(w, cst.Name) and not self.ctx.name_read(w.value, site)
        return False


def _index_zero(sub: cst.Subscript) -> bool:
    if len(sub.slice) != 1:
        return False
    el = sub.slice[0].slice
    return isinstance(el, cst.Index) and isinstance(el.value, cst.Integer) and el.value.value == "0"
