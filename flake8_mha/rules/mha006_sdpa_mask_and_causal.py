"""MHA006: SDPA given attn_mask together with is_causal, and its fix (drop a
redundant is_causal=True when the mask already is the causal mask)."""

from __future__ import annotations

from typing import Iterator, Optional, Tuple

import libcst as cst

from ..core import torch_api
from ..analysis.events import SdpaCall
from ..analysis.flow import CallSite, DefKind, lookup, walk
from ..analysis.relational import eliminated, excludes, world_sites
from ..analysis.splats import spread_value
from ..analysis.tree import is_none
from ..analysis.values import UNKNOWN, definitely, project_of
from .autofix import Fix, FixContext, find_arg, register, remove_arg
from ._causal_paths import keyword_default, never_both
from ._exclusive import kept_apart
from ._syntax import dotted, same
from .base import Example, Report, Rule


class SdpaMaskAndCausal(Rule):
    CODE = "MHA006"
    NAME = "sdpa-mask-and-causal"
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
          that path: literals, locals, `is_causal=attn_mask is None` (also in an
          `and`), `None if is_causal else mask`, `if mask is None:` branches.
        - Values assigned together on one path stay together: a branch that sets
          `mask = None; is_causal = True` and another that keeps the mask with
          `is_causal = False` never give SDPA both; neither does a fold-and-clear
          (`if mask is not None:` / `if causal: mask = mask & ~tri; causal =
          False`). An `assert` before the call counts as a condition on the path
          (`assert not (is_causal and mask is not None)`). So does one in each
          caller of a helper method that takes the mask as a parameter and reads
          the flag from `self` (vit-pytorch's `forward` asserts the pair apart,
          then calls `self.flash_attn(q, k, v, mask=mask)`), when every use of
          the helper is such a call. An `elif` is read with the test before
          it: `is_causal = True` under `elif causal:` after `if causal and
          mask is not None:` sets the flag where the mask is None
          (bio-attention), unless that branch gives the mask a value of its own.
        - A test through the file's own one-line predicate reads as its body
          (`def exists(v): return v is not None`; not a decorated one).
        - A wrapper that passes its own `is_causal` parameter, and a mask made
          from its own parameters, straight to SDPA (the signature of SDPA,
          forwarded) is not reported: its caller makes the choice, as with SDPA
          itself. So is a pair saved together on one parameter object and
          replayed (`attn_mask=ctx.attn_mask, is_causal=ctx.is_causal` in an
          autograd backward). A literal `is_causal=True`, or a flag from
          `self`/a config, with a mask that can be non-None, is reported.
        - The program decides what its API allows: a mask parameter of a
          function, or of a module's `forward`, that every call in the project
          leaves `None` (or a flag every construction passes as `False`, also
          when it hands down its own constructor's flag: `Attend(causal=causal)`
          in an `Attention` no construction makes causal) is
          clean, and the message of a finding that stands names the facts it
          used. A class nothing in the project builds (a function nothing
          calls) is judged by its API, and the message says its callers are
          outside the project. One call the analysis cannot read settles
          nothing (docs/reach.md, "Facts from the callers").
        - One instance at a time: when every construction and every call
          taken together may meet, but each instance of the class is either
          built with its flag off or never given a mask (a decoder's causal
          `Attend` without a mask, an encoder's masked `Attend` that is not
          causal), the call is clean. Each construction kept on `self` (or
          as an item of an `nn.ModuleList`/`nn.Sequential`) is paired with
          the calls of what keeps it; a flag and a mask handed down together
          are asked of the class above (docs/reach.md, "One instance at a
          time"). A class above that makes its mask only `if not
          self.causal:` (`else: mask = None`) from the flag it hands down
          never gives an instance both (palm-rlhf's `PaLM`).
        - Within a function the mask and the flag are also read path by path
          (lucidrains' older `Attend`: the triangle folded into a given mask
          and the flag cleared, then a bias that replaces the mask): not
          reported when every path clears the flag or leaves the mask None.
          A flag read from a name or attribute (`is_causal = self.causal`) is
          what a later test of that same name finds it: the fold under `if
          self.causal:` that clears the flag leaves it False on every path
          (openlanguagemodel's `FlashAttention`). A flag set to `not x` and
          a mask set to `m if x else None` (or the other way) are read on
          each side of `x`: composelm's `is_causal = not needs_bias` beside
          `bias = ... if needs_bias else None` never gives both; so are a flag
          `cache is None and t > 1` beside a mask made `if cache is not None`
          and a flag set `if isinstance(mask, str)` beside the mask kept `if
          isinstance(mask, torch.Tensor)` (rules/_exclusive.py). A loop or
          `try` that sets either is not read (rules/_causal_paths.py).
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
            3,
            12,
        ),
    ]

    def on_sdpa_call(self, ev: SdpaCall) -> Iterator[Report]:
        site = ev.site
        mask = ev.args.get("attn_mask")
        causal = ev.args.get("is_causal")
        if mask is None or causal is None:
            return
        # ``**kwargs`` of ``kwargs = {"attn_mask": attn_mask, "is_causal": is_causal}``
        mask = spread_value(mask, site.env, site.scope)
        causal = spread_value(causal, site.env, site.scope)
        if _excluded(mask, causal, site):
            return
        # values assigned together on one path stay together (flow.worlds)
        sites = world_sites(site, (mask, causal))
        if sites is not None and all(_excluded(mask, causal, w) for w in sites):
            return
        dropout = ev.args.get("dropout_p")
        dv = self.ctx.value(dropout, site) if dropout is not None else 0.0
        evidence = {
            "module": torch_api.SDPA_NAME,
            "dropout_p": dv if isinstance(dv, (int, float)) and dv is not UNKNOWN else None,
            "is_causal": True if definitely(causal, site.env, site.scope, True) else None,
            "mask": _mha006_mask(self.ctx, mask, site),
        }
        yield self.report(site.node, evidence)


def _mha006_mask(ctx, expr: cst.BaseExpression, site: CallSite) -> dict:
    """What the confirmer needs about MHA006's mask: its meaning, kind, shape
    and origin: "causal_triangle" (the very triangle is_causal applies: a bool
    tril(ones(L, S)) or generate_square_subsequent_mask), "padding" (no
    triangle in it), "other" (a triangle combined with more), or None."""
    from ..analysis.masks import ADDITIVE, BOOL, BROADCAST, KEEP, PADDING, SQUARE, analysis_for

    evaluator = analysis_for(ctx).evaluator
    m = evaluator.at(expr, site)
    origin = None
    if (
        m.causal
        and m.shape == SQUARE
        and (
            (m.tri == ("lower", 0) and m.meaning == KEEP and m.kind == BOOL)
            or (
                m.meaning == ADDITIVE
                and m.origin is not None
                and isinstance(m.origin.node, cst.Call)
                and cst.Module([])
                .code_for_node(m.origin.node.func)
                .endswith("generate_square_subsequent_mask")
            )
        )
    ):
        origin = "causal_triangle"
    elif m.causal:
        origin = "other"
    elif m.shape in (PADDING, BROADCAST):
        origin = "padding"
    out = m.evidence(evaluator.source_text)
    out.update(origin=origin, by_name=bool(m.origin and m.origin.by_name))
    return out


def _excluded(mask: cst.CSTNode, causal: cst.CSTNode, site: CallSite) -> bool:
    """The mask is None or the flag false wherever the call runs with ``site``."""
    env, scope = site.env, site.scope
    if definitely(mask, env, scope, None) or definitely(causal, env, scope, False):
        return True
    masks = _none_aliases(mask, site)
    if _none_when(mask, causal, site) or _path_excludes(site, masks, causal):
        return True
    if _flag_safe(causal, masks, env, scope, site, 0) or _handled_in_function(site, mask, causal):
        return True
    if _saved_pair(mask, causal, site) or _never_paired(mask, causal, site):
        return True
    if kept_apart(mask, causal, site):  # what each is computed from keeps them apart
        return True
    test = lambda t, neg: _is_none_test(t, mask, neg, env, scope)  # noqa: E731
    return _asserted_by_callers(mask, causal, site) or never_both(site, mask, causal, test)


def _asserted_by_callers(mask: cst.CSTNode, causal: cst.CSTNode, site: CallSite) -> bool:
    """A helper method whose mask is its parameter and whose flag is
    ``self.<attr>`` (also ``self.causal and ...``), called only as
    ``self.helper(...)`` by methods of its class that each assert the flag
    and the mask they pass apart (vit-pytorch's ``assert not (is_causal and
    exists(mask))`` in ``forward``, then ``self.flash_attn(q, k, v, mask=mask)``)."""
    func, cls = site.function, site.scope.cls
    given = _resolve_local(mask, site)
    if func is None or cls is None or not isinstance(given, cst.Name):
        return False
    param = _param_of(given.value, site.env, site.scope)
    flag = _self_flag(causal, site)
    if param is None or flag is None:
        return False
    names = [q.name.value for q in func.params.params[1:]]
    if param not in names:
        return False
    name, attr = func.name.value, "self." + flag.attr.value
    refs, called = [], {}  # each ``self.<helper>`` of the class; the calls of one, by it
    for method in cls.methods.values():
        for n in walk(method):
            if (
                isinstance(n, cst.Attribute)
                and n.attr.value == name
                and dotted(n) == "self." + name
            ):
                refs.append((method, n))
            elif isinstance(n, cst.Call):
                called[id(n.func)] = n
    if not refs or _named_elsewhere(site, name):
        return False
    masked = False
    for method, ref in refs:
        call = called.get(id(ref))
        if call is None or method is func:
            return False  # the helper passed around, or calling itself
        arg = _argument(call, param, names.index(param))
        if arg is None or is_none(arg):
            continue  # left at its default, or None: no mask
        masked = True
        flags = {attr} | {
            dotted(t.target)
            for n in walk(method)
            if isinstance(n, cst.Assign) and attr in _refs(n.value)
            for t in n.targets
            if isinstance(t.target, cst.Name)
        }
        passed = _refs(arg) - {"None"}
        if not any(
            isinstance(n, cst.Assert) and _refs(n.test) & passed and _refs(n.test) & flags
            for n in walk(method)
        ):
            return False
    return masked  # no call passes a mask: the program's facts decide (``_never_paired``)


def _named_elsewhere(site: CallSite, name: str) -> bool:
    """Whether another file of the project may call the helper ``name``:
    its callers there were not read.  A file analysed alone (no project,
    ``--no-project-wide``) has its own callers only."""
    project = project_of(site.scope)
    mentioned = getattr(project, "mentioned_elsewhere", None)
    return False if mentioned is None else mentioned(name)


def _argument(call: cst.Call, param: str, index: int) -> Optional[cst.BaseExpression]:
    """What ``call`` passes for ``param``, the ``index``-th after ``self``."""
    for i, a in enumerate(call.args):
        if a.star:
            return None
        if a.keyword is not None and a.keyword.value == param:
            return a.value
        if a.keyword is None and i == index:
            return a.value
    return None


def _never_paired(mask: cst.CSTNode, causal: cst.CSTNode, site: CallSite) -> bool:
    """In a module's ``forward``, ``is_causal=self.causal`` (kept from an
    ``__init__`` parameter; also ``self.causal and ...``) with a mask that is
    a parameter of that ``forward``: no instance of the class in the project
    is both built causal and given a mask (``program/instances.py``)."""
    scope = site.scope
    cls, func = scope.cls, scope.node
    if cls is None or not isinstance(func, cst.FunctionDef):
        return False
    project = project_of(scope)
    given = _resolve_local(mask, site)
    if project is None or not isinstance(given, cst.Name):
        return False
    param = _param_of(given.value, site.env, site.scope)
    flag = _self_flag(causal, site)
    if param is not None and func.name.value != "forward":
        param = _handed_by_forward(cls, func, param)
    if param is None or flag is None:
        return False
    kept = {_init_param(d) for d in cls.attrs.get(flag.attr.value, ())}
    if len(kept) != 1 or None in kept:
        return False
    return project.never_paired(cls.name, kept.pop(), param)


def _handed_by_forward(cls, helper: cst.FunctionDef, param: str) -> Optional[str]:
    """The ``forward`` parameter a helper method's ``param`` always is:
    palm-rlhf's ``return self.flash_attn(q, k, v, mask=mask)``.  Every use
    of ``self.<helper>`` in the class is a call in ``forward`` that passes
    that parameter, by name, for ``param``; else None."""
    forward = cls.methods.get("forward")
    if forward is None or helper is forward:
        return None
    params = [p.name.value for p in helper.params.params][1:]
    own = {p.name.value for p in forward.params.params + forward.params.kwonly_params}
    in_forward = {id(n) for n in walk(forward)}
    found = set()
    for n in walk(cls.node):
        if not (
            isinstance(n, cst.Attribute)
            and isinstance(n.value, cst.Name)
            and n.value.value == "self"
            and n.attr.value == helper.name.value
        ):
            continue
        call = next((c for c in walk(forward) if isinstance(c, cst.Call) and c.func is n), None)
        if call is None or id(call) not in in_forward:
            return None  # used outside ``forward``, or not called
        passed = None
        for i, a in enumerate(call.args):
            if a.star:
                return None
            name = (
                a.keyword.value
                if a.keyword is not None
                else (params[i] if i < len(params) else None)
            )
            if name == param:
                passed = a.value
        if not (isinstance(passed, cst.Name) and passed.value in own):
            return None
        found.add(passed.value)
    return found.pop() if len(found) == 1 else None


def _self_flag(causal: cst.CSTNode, site: CallSite) -> Optional[cst.Attribute]:
    """The ``self.<attr>`` the flag is, through locals (also ``self.causal
    and q.shape[-2] > 1``: on only when it is); None for any other flag."""
    flag = _resolve_local(causal, site)
    if isinstance(flag, cst.BooleanOperation) and isinstance(flag.operator, cst.And):
        flag = flag.left
    if (
        isinstance(flag, cst.Attribute)
        and isinstance(flag.value, cst.Name)
        and flag.value.value == "self"
    ):
        return flag
    return None


def _param_of(name: str, env, scope, depth: int = 0) -> Optional[str]:
    """The parameter the mask ``name`` is, or is made from on every path
    (x-transformers' ``if mask is not None: mask = mask[:, None, None, :]``,
    ``mask = rearrange(mask, ...)``, ``mask = ~mask``): given exactly when
    that parameter is; else None."""
    defs = lookup(name, env, scope)
    found = set()
    for d in defs:
        if d.kind == DefKind.PARAM and isinstance(d.node, cst.Param):
            found.add(d.node.name.value)
            continue
        if d.kind != DefKind.ASSIGN or depth > 4:
            return None
        root = _root_name(d.node)
        if root is None:
            return None
        found.add(_param_of(root, d.env, d.scope, depth + 1))
    return found.pop() if len(found) == 1 and None not in found else None


def _root_name(expr) -> Optional[str]:
    """The name an expression transforms: ``mask`` in ``mask[:, None]``,
    ``mask.view(b, 1, 1, s)``, ``~mask``, ``rearrange(mask, ...)``."""
    for _ in range(16):
        if isinstance(expr, cst.Name):
            return expr.value
        if isinstance(expr, (cst.Subscript, cst.Attribute)):
            expr = expr.value
        elif isinstance(expr, cst.UnaryOperation):
            expr = expr.expression
        elif isinstance(expr, cst.Call):
            func = expr.func
            name = (
                func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
            )
            head = func.value if isinstance(func, cst.Attribute) else None
            if head is not None and not (isinstance(head, cst.Name) and head.value in _MODULES):
                expr = head  # a method of the mask: ``mask.bool()``, ``mask[:, None].expand(...)``
            elif name in _TRANSFORMS and expr.args and expr.args[0].keyword is None:
                expr = expr.args[0].value  # ``rearrange(mask, ...)``, ``F.pad(mask, ...)``
            else:
                return None
        else:
            return None
    return None


_MODULES = {"torch", "F", "einops", "nn", "functional"}
# functions whose first argument is the mask they reshape
_TRANSFORMS = {"rearrange", "repeat", "pad", "logical_not", "unsqueeze", "reshape", "expand"}


def _init_param(d) -> Optional[str]:
    """The ``__init__`` parameter ``self.<attr> = <param>`` keeps, or None."""
    if d.kind != DefKind.ASSIGN or not isinstance(d.node, cst.Name) or d.scope is None:
        return None
    func = d.scope.node
    if not isinstance(func, cst.FunctionDef) or func.name.value != "__init__":
        return None
    got = lookup(d.node.value, d.env, d.scope)
    return d.node.value if len(got) == 1 and got[0].kind == DefKind.PARAM else None


def _resolve_local(node: cst.CSTNode, site: CallSite, depth: int = 0) -> cst.CSTNode:
    """Follow a local name to its single assigned expression."""
    while isinstance(node, cst.Name) and depth < 8:
        defs = lookup(node.value, site.env, site.scope)
        if len(defs) != 1 or defs[0].kind != DefKind.ASSIGN:
            break
        node = defs[0].node
        depth += 1
    return node


def _none_aliases(mask: cst.CSTNode, site: CallSite) -> Tuple[cst.CSTNode, ...]:
    """The mask and the names None exactly when it is (``causal_mask = attention_mask``,
    then maybe ``causal_mask[..., :k]``: ``attention_mask is None`` tests the mask)."""
    out = [mask]
    if not isinstance(mask, cst.Name):
        return tuple(out)
    names = {mask.value}
    frontier = [mask]
    while frontier and len(names) < 8:
        node = frontier.pop()
        defs = lookup(node.value, site.env, site.scope)
        if node is not mask and (not defs or any(d.kind != DefKind.ASSIGN for d in defs)):
            continue  # a parameter or the like: the alias itself, nothing more
        if not defs:
            return (mask,)
        for d in defs:
            if d.kind != DefKind.ASSIGN:
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
            # (an alias made otherwise, ``mask = kwargs.get("mask")``, is one on its own)
            derived = isinstance(root, cst.Name) and root.value in names and root is not value
            if not derived and node is mask:
                return (mask,)
    return tuple(out)


def _is_none_test(node: cst.CSTNode, mask, negated: bool = False, env=None, scope=None) -> bool:
    """``mask is None`` (``is not None`` when negated); ``mask`` may be a tuple of
    expressions None together.  With ``env`` and ``scope``, the file's one-line
    predicate reads as its body (``exists(mask)``: ``return v is not None``)."""
    if isinstance(mask, tuple):
        return any(_is_none_test(node, m, negated, env, scope) for m in mask)
    if isinstance(node, cst.Call) and env is not None:
        arg = _predicate_argument(node, negated, env, scope)
        return arg is not None and same(arg, mask)
    if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
        return False
    comp = node.comparisons[0]
    op = cst.IsNot if negated else cst.Is
    if not isinstance(comp.operator, op):
        return False
    left, right = node.left, comp.comparator
    if isinstance(right, cst.Name) and right.value == "None":
        return same(left, mask)
    if isinstance(left, cst.Name) and left.value == "None":
        return same(right, mask)
    return False


def _predicate_argument(call: cst.Call, negated: bool, env, scope) -> Optional[cst.BaseExpression]:
    """The argument of ``f(x)`` when ``f`` is a function of the file, defined
    once, whose whole body is ``return <its one parameter> is not None`` (or
    ``is None`` when not ``negated``): lucidrains' ``exists``, ``default``'s
    cousins.  None for anything else."""
    if not isinstance(call.func, cst.Name) or len(call.args) != 1 or call.args[0].keyword:
        return None
    if call.args[0].star:
        return None
    defs = lookup(call.func.value, env, scope)
    if len(defs) != 1 or defs[0].kind != DefKind.DEF:
        return None
    func = defs[0].node
    if not isinstance(func, cst.FunctionDef) or func.decorators:
        return None
    params = func.params
    if len(params.params) != 1 or params.posonly_params or params.kwonly_params:
        return None
    if params.star_arg not in (None, cst.MaybeSentinel.DEFAULT) or params.star_kwarg:
        return None
    body = func.body.body if isinstance(func.body, cst.IndentedBlock) else func.body.body
    if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine):
        return None
    stmts = body[0].body
    if len(stmts) != 1 or not isinstance(stmts[0], cst.Return) or stmts[0].value is None:
        return None
    param = cst.Name(params.params[0].name.value)
    return call.args[0].value if _is_none_test(stmts[0].value, param, negated) else None


def _flag_safe(
    expr: cst.CSTNode, mask: cst.CSTNode, env, scope, site: CallSite, depth: int
) -> bool:
    """Whether ``expr`` can be true only while the mask is None (``attn_mask is
    None``, inside an ``and``, through ``True if ... else False`` and locals),
    or is the function's own parameter forwarded with a mask made from its
    own parameters."""
    if depth > 8:
        return False
    if definitely(expr, env, scope, False):
        return True
    if _is_none_test(expr, mask, env=env, scope=scope):
        return True
    t = type(expr)
    if t is cst.BooleanOperation and isinstance(expr.operator, cst.And):
        return _flag_safe(expr.left, mask, env, scope, site, depth + 1) or _flag_safe(
            expr.right, mask, env, scope, site, depth + 1
        )
    if t is cst.IfExp:
        body_ok = _flag_safe(expr.body, mask, env, scope, site, depth + 1) or _flag_safe(
            expr.test, mask, env, scope, site, depth + 1
        )
        else_ok = _flag_safe(expr.orelse, mask, env, scope, site, depth + 1) or _is_none_test(
            expr.test, mask, negated=True, env=env, scope=scope
        )
        return body_ok and else_ok
    if (
        t is cst.Call
        and isinstance(expr.func, cst.Name)
        and expr.func.value == "bool"
        and len(expr.args) == 1
    ):
        return _flag_safe(expr.args[0].value, mask, env, scope, site, depth + 1)
    default = keyword_default(expr, env, scope)  # kw.get("is_causal_mask", mask is None)
    if default is not None:  # the caller's keyword, forwarded (ibm-fms), or the default
        given = mask[0] if isinstance(mask, tuple) else mask
        safe = _flag_safe(default, mask, env, scope, site, depth + 1)
        return safe and _mask_from_params(given, site)
    if (
        t is cst.Call
        and isinstance(expr.func, cst.Attribute)
        and not expr.args
        and expr.func.attr.value in ("item", "bool")
    ):
        return _flag_safe(expr.func.value, mask, env, scope, site, depth + 1)
    if t is cst.Name:
        defs = lookup(expr.value, env, scope)
        if not defs:
            return False
        for d in defs:
            if d.kind == DefKind.ASSIGN:
                ok = _flag_safe(d.node, mask, d.env, d.scope, site, depth + 1)
            elif d.kind == DefKind.PARAM:
                ok = _mask_from_params(mask[0] if isinstance(mask, tuple) else mask, site)
            else:
                ok = False
            if not ok:
                return False
        return True
    return False


def _mask_from_params(mask: cst.CSTNode, site: CallSite) -> bool:
    """Whether the mask is made from parameters of the enclosing function."""
    stack = [(mask, site.env, site.scope, 0)]
    while stack:
        root, env, scope, depth = stack.pop()
        for node in walk(root):
            if not isinstance(node, cst.Name):
                continue
            defs = lookup(node.value, env, scope)
            if defs and any(d.kind == DefKind.PARAM and d.scope is site.scope for d in defs):
                return True
            if depth < 6:
                stack.extend(
                    (d.node, d.env, d.scope, depth + 1)
                    for d in defs
                    if d.kind in (DefKind.ASSIGN, DefKind.AUGASSIGN) and d.node is not None
                )
    return False


def _saved_pair(mask: cst.CSTNode, causal: cst.CSTNode, site: CallSite) -> bool:
    """``attn_mask=ctx.attn_mask, is_causal=ctx.is_causal``: a pair saved together
    on one parameter object (an autograd ctx, a params record) and replayed, as
    forwarding a caller's pair is."""
    if not (isinstance(mask, cst.Attribute) and isinstance(causal, cst.Attribute)):
        return False
    owner_m, owner_c = mask.value, causal.value
    if not (
        isinstance(owner_m, cst.Name)
        and isinstance(owner_c, cst.Name)
        and owner_m.value == owner_c.value
    ):
        return False
    defs = lookup(owner_m.value, site.env, site.scope)
    return bool(defs) and all(d.kind == DefKind.PARAM for d in defs)


def _refs(node: cst.CSTNode) -> set:
    """Dotted names read in ``node`` (``mask``, ``self.is_causal``)."""

    def whole(n: cst.CSTNode) -> bool:  # a dotted name is one reference: not its parts
        return isinstance(n, cst.Attribute) and "?" not in dotted(n)

    return {
        dotted(n)
        for n in walk(node, prune=whole)
        if isinstance(n, (cst.Name, cst.Attribute)) and "?" not in dotted(n)
    }


def _handled_in_function(site: CallSite, mask: cst.CSTNode, causal: cst.CSTNode) -> bool:
    """The function tests the mask and the flag together somewhere (``if
    exists(mask) and causal: ... causal = False``): it handles the combination."""
    func = site.function
    if func is None:
        return False
    mask_refs = _refs(mask) - {"None"}
    flag_refs = _refs(causal) - {"True", "False", "None"}
    if not mask_refs or not flag_refs:
        return False
    for n in walk(func.body):
        if isinstance(n, (cst.If, cst.IfExp, cst.While)):
            refs = _refs(n.test)
            if refs & mask_refs and refs & flag_refs:
                return True
    return False


def _none_when(mask: cst.CSTNode, causal: cst.CSTNode, site: CallSite) -> bool:
    """``attn_mask=None if is_causal else m`` (directly or through a local)."""
    expr = _resolve_local(mask, site)
    if not isinstance(expr, cst.IfExp):
        return False
    test = expr.test
    if is_none(expr.body) and same(test, causal):
        return True
    if (
        is_none(expr.orelse)
        and isinstance(test, cst.UnaryOperation)
        and isinstance(test.operator, cst.Not)
        and same(test.expression, causal)
    ):
        return True
    return False


def _path_excludes(site: CallSite, mask: cst.CSTNode, causal: cst.CSTNode) -> bool:
    """An enclosing ``if`` (or an ``assert`` before the call) proves the mask
    None or the flag false on this path; ``not``/``and``/``or`` are read."""

    def excluded_under(test: cst.BaseExpression, polarity: bool, env) -> bool:
        def leaf(test: cst.BaseExpression, polarity: bool) -> bool:
            if _is_none_test(test, mask, negated=not polarity, env=env, scope=site.scope):
                return True
            return not polarity and same(test, causal)

        return excludes(test, polarity, leaf)

    conds = eliminated(site.conds, same)  # ``elif causal:`` after ``if causal and mask:``
    return any(excluded_under(test, polarity, env) for test, polarity, env in conds)


# -- the fix ---------------------------------------------------------------------


def _kwarg(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def _is_bool_dtype(node: Optional[cst.BaseExpression], ctx: FixContext) -> bool:
    return node is not None and "torch.bool" in ctx.qualnames(node)


def _square_dims(call: cst.Call) -> bool:
    dims = [a.value for a in call.args if a.keyword is None and not a.star]
    if len(dims) == 1 and isinstance(dims[0], (cst.Tuple, cst.List)):
        dims = [e.value for e in dims[0].elements]
    return len(dims) == 2 and dims[0].deep_equals(dims[1])


def _bool_square_ones(node: cst.BaseExpression, ctx: FixContext) -> bool:
    """``torch.ones(n, n, dtype=torch.bool)`` or ``torch.ones(n, n).bool()``."""
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value == "bool" and not node.args:
        inner = func.value
        return (
            isinstance(inner, cst.Call)
            and "torch.ones" in ctx.qualnames(inner.func)
            and _square_dims(inner)
        )
    return (
        "torch.ones" in ctx.qualnames(func)
        and _square_dims(node)
        and _is_bool_dtype(_kwarg(node, "dtype"), ctx)
    )


def _diagonal_zero(call: cst.Call, positional_index: int) -> bool:
    diag = _kwarg(call, "diagonal")
    positional = [a for a in call.args if a.keyword is None]
    if diag is None and len(positional) > positional_index:
        diag = positional[positional_index].value
    return diag is None or (isinstance(diag, cst.Integer) and diag.value == "0")


def is_causal_mask(node: cst.BaseExpression, ctx: FixContext, depth: int = 0) -> bool:
    """Whether ``node`` is, statically, the mask SDPA's is_causal would build
    (a square lower triangle of True, or the -inf upper triangle of
    ``nn.Transformer.generate_square_subsequent_mask``)."""
    if depth > 4:
        return False
    if isinstance(node, cst.Name):
        found = ctx.single_assignment(node)
        return found is not None and is_causal_mask(found[0], found[1], depth + 1)
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    names = ctx.qualnames(func)
    if any(n.endswith("Transformer.generate_square_subsequent_mask") for n in names):
        return True
    if "torch.tril" in names and node.args and node.args[0].keyword is None:
        return _diagonal_zero(node, 1) and _bool_square_ones(node.args[0].value, ctx)
    if isinstance(func, cst.Attribute) and func.attr.value == "tril":
        return _diagonal_zero(node, 0) and _bool_square_ones(func.value, ctx)
    if isinstance(func, cst.Attribute) and func.attr.value == "to":
        # moving a mask to a device keeps it what it is; a dtype change would not
        args = node.args
        device_only = len(args) == 1 and (
            (args[0].keyword is not None and args[0].keyword.value == "device")
            or (
                args[0].keyword is None
                and isinstance(args[0].value, cst.Attribute)
                and args[0].value.attr.value == "device"
            )
        )
        return device_only and is_causal_mask(func.value, ctx, depth + 1)
    return False


def _drop_is_causal(call: cst.Call, ctx: FixContext) -> Optional[cst.Call]:
    flag = find_arg(call, "is_causal")  # keyword only: a positional flag is left alone
    if flag is None or dotted(call.args[flag].value) != "True":
        return None
    # metadata (names, scopes) is known for the original nodes only
    mask = find_arg(ctx.original, "attn_mask", torch_api.SDPA_SIGNATURE)
    if mask is None or not is_causal_mask(ctx.original.args[mask].value, ctx):
        return None
    return remove_arg(call, flag)


FIX = register(
    Fix(
        "MHA006",
        "Drop `is_causal=True`: the mask already is the causal mask",
        "Only when `is_causal=True` is literal and `attn_mask` is statically a causal mask: a "
        "square `torch.ones(n, n, dtype=torch.bool).tril()` / `torch.tril(...)` (diagonal 0), or "
        "`nn.Transformer.generate_square_subsequent_mask(n)`, inline or through one local "
        "assignment, optionally moved with `.to(device)`. Both then mean the same masking, so "
        "dropping the flag keeps the numbers and removes the error. Any other mask: no fix (which "
        "of the two was meant is the author's call).",
        _drop_is_causal,
    )
)
