"""MHA102: attention weights computed and thrown away, and its fix (need_weights=False)."""

from __future__ import annotations

import re
from typing import Iterator, List, Optional

import libcst as cst

from ..analysis.events import ModuleCall
from ..core.torch_api import FASTPATH_BLOCKERS
from ..analysis.flow import CallSite, DefKind, ScopeKind, lookup
from ..analysis.program.callers import KEPT_FIRST
from ..analysis.layout import analysis_for as layout_for
from ..analysis.masks.names import last_name
from ..analysis.tree import walk
from ..analysis.values import KWARGS_CHANGED, kwargs_changed
from .autofix import Fix, FixContext, add_keyword, find_arg, register
from ._evidence import module_call_evidence
from .construction import init_value
from .base import Example, Report, Rule


class AttentionWeightsDiscarded(Rule):
    CODE = "MHA102"
    NAME = "attention-weights-discarded"
    CATEGORY = "performance"
    MESSAGE = (
        "attention weights computed and thrown away: pass need_weights=False, or "
        "nn.MultiheadAttention takes the slow path (up to about 2x off the fastpath) "
        "to build them"
    )
    WHAT = """
        Flags a call of a known `nn.MultiheadAttention` (directly, through
        `self.attn`, through a `ModuleList` item) whose second result is thrown
        away (`out, _ = attn(...)`, `attn(...)[0]`, `(out, w) = attn(...)` with
        `w` never read) while `need_weights` is not given as `False`.
        Through a wrapper too: a function or method that gives its callers
        the weights as they came (`return self.mha(x, x, x)`; `out =
        self.mha(...)` then `return out`; `attn_output, attn_weights =
        self.mha(...)` then `return attn_output, attn_weights`) is reported
        at that call when every call of it in the project keeps only the
        output, in this file or another; the message names the wrapper and
        its first caller.
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
        - Not reported in test files (`test_*.py`, `*_test.py`, `conftest.py`,
          or a file right in a folder named `test`, `tests` or `testing`): the
          cost is speed only, and a test's speed is nobody's (a shape test that
          throws the weights away, shipped in a release). The other codes are
          reported there as anywhere.
        - A module kept on `self.<attr>` where another branch keeps another
          kind (`if mode == "quadratic": self.attn = nn.MultiheadAttention(...)`,
          `elif mode == "linear": self.attn = LinearMixer(...)`): the calls of
          `self.attn` in that class that give it a query, a key and a value
          run the module, and are judged as its calls, when the other kind is
          a class of the file whose `forward` cannot take that many arguments
          (`LinearMixer.forward(self, x)`); any other kind may be what runs:
          silent (`fixtures/MHA102_branch_modules.py`).
        - Not reported in a file that registers a forward hook
          (`self.attn.register_forward_hook(self._keep_map)`,
          `torch.nn.modules.module.register_module_forward_hook`): a hook
          sees the module's whole output, the weights too, whatever the
          caller keeps (attention rollout), and `need_weights=False` would
          hand it None (probe AM).
        - Not reported when the weights are read anywhere in the function,
          returned, stored on `self` or elsewhere, or when `need_weights` is a
          variable. An attribute of the same name is no read of the local:
          `h, attn = self.attn(x, x, x)` with `attn` never read is reported
          (probe AH's AH26).
        - Not reported when the query is one position long (a learned pooling
          query `self.query.repeat(B, 1, 1)` of a `(1, 1, E)` parameter, also
          one scaled by a number at its creation, `torch.randn(1, 1, E) * 0.02`,
          `x[:, :1]`, `cls.unsqueeze(1)`, by the module's stated
          `batch_first`): the weights are `(N, 1, S)` and `need_weights=False`
          saves nothing measurable (1.00x-1.03x, two released packages). Also
          when the layout that reaches the query through its callers is a
          `view`/`reshape` with a literal 1 on the sequence axis (TranAD's
          `elem.view(1, local_bs, n)` handed to a decoder layer's `tgt`, also
          after `tgt.repeat(1, 1, 2)`: a constant count keeps an axis), or
          an `unsqueeze` of that axis, or a shape comment with a literal 1
          there (sonati's `q = self.proj(query).unsqueeze(1)  # (B, 1, D)`).
        - The pair kept whole under one name whose only reads are `[0]`, up
          to the statement that rebinds that name in the same block
          (`src2 = self.self_attn(q, k, src2)`, `src = src + src2[0]`, `src2 =
          self.norm2(src)`: spandrel's IPT), keeps only the output.
        - A call whose whole result is dropped (an expression statement) is not
          reported, nor one that leaves out the key or the value (it raises
          before computing anything).
        - Not reported for self-attention that the fastpath takes at inference
          and that dropout keeps from any saving in training (one tensor as
          query, key and value, no mask, `batch_first=True`, `bias=True`, no
          `add_bias_kv`, `add_zero_attn`, `kdim`, `vdim`, a head count not
          known to be odd and a dropout not known to be 0): the weights cost
          about 1.05x on the fastpath and nothing measurable with dropout
          (torch 2.13: seven such calls in one released package measured
          0.89x-1.08x). With a dropout of 0 the training step keeps the 2x,
          and the call is reported.
        - The result kept whole under one name and cut by the very next
          statement, `x = self.attn(q, k, value=x)` then `x = x[0]` (lerobot's
          ACT), is `[0]` of the call; so is `out = x[0]` when `x` is read
          nowhere else in the function.
        - A wrapper's callers are read as the project's other facts from
          callers are (docs/reach.md, "Facts from the callers"): each keeps
          only the output when it takes `[0]` of the result or unpacks it to
          two names whose second is never read in its file. One caller that
          may keep the weights (reads them, returns the pair, passes it on,
          runs the module inside an `nn.Sequential`), a use of the wrapper
          the analysis cannot read (passed around, kept in a list, a
          subclass), or no caller in the project at all (a library's public
          module: its users may read the weights) leaves it unreported.
        - When `need_weights` is the wrapper's own parameter
          (`need_weights=need_weights`), or may come through the wrapper's
          `**kwargs` handed on unchanged (`self.inner(x, x, x, **kwargs)`:
          probe AC), it is reported only if every caller also leaves that
          parameter (that keyword) `True`; no fix is offered then, since
          the default or the callers are the author's to change.
        - A tracing wrapper that hands every argument on (`def
          forward(self, *args, **kwargs): return self.inner(*args,
          **kwargs)`) is read as the module itself at a call in its own
          file. When its callers are in other files, it is reported at its
          inner call if every one of them keeps only the output and gives
          no `need_weights`, by keyword or as the fifth positional argument
          (probe AM's AM30, `fixtures/program_calls/traced_wrappers/`).
        - A caller that returns the pair whole in turn (`return
          self.attn(x)`) keeps what the callers of its own function keep:
          followed two steps (a wrapper of a wrapper of the module), and the
          message names the function that returns it.
        - A wrapper that names the weights hands them on only when that
          name appears nowhere but in its assignment and in the second place
          of every return (`return attn_output, attn_weights`): weights it
          reads, changes (`attn_weights.mean(dim=1)`) or returns on one path
          only are its own business, and it is not reported.
        """
    VALID = [
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n"
        "def f(x):\n    out, w = attn(x, x, x)\n    return out, w\n",
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n"
        "def f(x):\n    return attn(x, x, x, need_weights=False)[0]\n",
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n"
        "def f(x):\n    y = attn(x, x, x)\n    out = y[0]\n    return out, y[1]\n",
    ]
    INVALID = [
        Example(
            "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n"
            "def f(x):\n    x = attn(x, x, value=x)\n    x = x[0]\n    return x\n",
            4,
            9,
            fixed="import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n"
            "def f(x):\n    x = attn(x, x, value=x, need_weights=False)\n    x = x[0]\n    return x\n",
        ),
        Example(
            "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n"
            "def f(x):\n    out, _ = attn(x, x, x)\n    return out\n",
            4,
            14,
            fixed="import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n"
            "def f(x):\n    out, _ = attn(x, x, x, need_weights=False)\n    return out\n",
        ),
    ]

    # the weights returned by a wrapper, and thrown away by every one of its callers
    THROUGH = (
        "attention weights computed and thrown away by every caller of `{key}` ({where}): "
        "pass need_weights=False, or nn.MultiheadAttention takes the slow path "
        "(up to about 2x off the fastpath) to build them"
    )

    def on_construction(self, ev) -> Iterator[Report]:
        """A module kept on ``self.<attr>`` that may hold another kind on
        another branch (ptls' ``elif self_attn_mode == "linear":``): its calls
        are no module calls of their own, so each call of that attribute
        that gives the module its query, key and value is judged here as one
        (the layout analysis reads them so too)."""
        if ev.spec.name != "MultiheadAttention" or self.ctx.module_calls_of(ev):
            return
        done = self.ctx.analyses.setdefault("mha102-stored", set())
        for call in layout_for(self.ctx).stored_calls(ev):
            if id(call.site.node) in done or not self._only_module(ev, call):
                continue
            done.add(id(call.site.node))  # two such modules on one attribute: once
            yield from self.on_module_call(call)

    def _only_module(self, ev, call: ModuleCall) -> bool:
        """Whether every other thing the attribute may hold is a class of this
        file whose ``forward`` cannot take the call's positional arguments
        (ptls' ``LinearAttn.forward(self, x)`` beside ``self.attn(X, X, X)``):
        then the call runs the module.  Anything else (a class of another
        file, an expression) may be what runs: unknown, silent."""
        func = call.site.node.func
        if not isinstance(func, cst.Attribute) or ev.site.cls is None:
            return False
        given = sum(1 for a in call.site.node.args if a.keyword is None and not a.star)
        resolver = self.ctx.resolver
        for d in resolver.attr_defs(ev.site.cls, func.attr.value):
            value = d.node
            if value is ev.site.node or (isinstance(value, cst.Name) and value.value == "None"):
                continue
            if not isinstance(value, cst.Call):
                return False
            held = resolver.instances(value, d.env, d.scope)
            if held and all(i.spec is ev.spec for i in held):
                continue  # another such module (built with other sizes): judged alike
            info = resolver.local_class(value.func, d.env, d.scope)
            forward = info.methods.get("forward") if info is not None else None
            if forward is None or forward.params.star_arg is not cst.MaybeSentinel.DEFAULT:
                return False
            if given <= len(forward.params.params) - 1:  # ``self`` aside: it may take them
                return False
        return True

    def on_module_call(self, ev: ModuleCall) -> Iterator[Report]:
        if ev.spec.name != "MultiheadAttention" or self._one_query(ev) or self._hooked():
            return
        star = _star_args_handed_on(ev.site)
        if star is None and (ev.args.get("key") is None or ev.args.get("value") is None):
            return  # the call raises before it computes anything (a key or value left out)
        if self._fastpath_and_dropout(ev):
            return
        if star is not None:
            # ``forward(self, *args, **kwargs): return self.inner(*args, **kwargs)``
            # (probe AM's AM30): the callers give query, key and value, and
            # need_weights by keyword or as the fifth positional argument
            param = "**need_weights" if star else None
            through = self._discarded_by_callers(ev.site, param, elsewhere=True)
            if through is not None:
                key, where = through
                evidence = module_call_evidence(self.ctx, ev)
                yield self.report(ev.site.node, evidence, self.THROUGH, key=key, where=where)
            return
        site = ev.site
        nw = ev.args.get("need_weights")
        param = None  # the wrapper's parameter need_weights is given, if it is one
        if nw is not None:
            value = self.ctx.value(nw, site)
            if value is not True:
                if value is False or not isinstance(nw, cst.Name):
                    return  # False, or an expression: the caller decided
                param = nw.value  # a parameter of the wrapper: its callers may decide
        elif ev.args.maybe_given("need_weights"):
            if not _kwargs_handed_on(site):
                return
            param = "**need_weights"  # the wrapper's ``**kwargs``: its callers' keyword (probe AC)
        if param is None and self._discarded(site):
            yield self.report(site.node, module_call_evidence(self.ctx, ev))
            return
        through = self._discarded_by_callers(site, param)
        if through is not None:
            key, where = through
            evidence = module_call_evidence(self.ctx, ev)
            yield self.report(site.node, evidence, self.THROUGH, key=key, where=where)

    def _hooked(self) -> bool:
        """Whether the file registers a forward hook (``.register_forward_hook``,
        ``register_module_forward_hook``): a hook sees the module's whole
        output, the weights too, whatever its caller keeps (attention
        rollout, probe AM's FALSE01), and ``need_weights=False`` would hand
        it None."""
        got = self.ctx.analyses.get("mha102-hooked")
        if got is None:
            got = any(
                isinstance(n, cst.Call) and last_name(n.func) in _HOOKS
                for n in walk(self.ctx.module)
            )
            self.ctx.analyses["mha102-hooked"] = got
        return got

    def _fastpath_and_dropout(self, ev: ModuleCall) -> bool:
        """Self-attention (one tensor as query, key and value, no mask) of a
        module built ``batch_first=True`` with its bias, no extra keys, a
        head count not known to be odd and a dropout not known to be 0: at
        inference it takes the fastpath, where the weights cost about 1.05x,
        and in training with dropout no saving was measured (TORCH_FACTS
        13), so ``need_weights=False`` is not known to buy anything.  A
        dropout of 0 leaves training the 2x (reported)."""
        names = [ev.args.get(n) for n in ev.spec.forward.names[:3]]  # query, key, value
        if not all(isinstance(n, cst.Name) for n in names) or len({n.value for n in names}) != 1:
            return False
        if any(ev.args.get(m) is not None for m in ("attn_mask", "key_padding_mask")):
            return False  # a float mask keeps it off the fastpath
        ctor = ev.single_ctor()
        if ctor is None or layout_for(self.ctx).stated_batch_first(ev) is not True:
            return False
        got = {
            n: init_value(self.ctx, ctor, n)
            for n in ("num_heads", "dropout", *FASTPATH_BLOCKERS, "kdim", "vdim")
        }
        heads, dropout = got["num_heads"], got["dropout"]
        return (
            not (isinstance(heads, int) and heads % 2 == 1)
            and not (isinstance(dropout, (int, float)) and dropout == 0)
            and all(got[k] is (not off) for k, off in FASTPATH_BLOCKERS.items())
            and got["kdim"] is None
            and got["vdim"] is None
        )

    def _one_query(self, ev: ModuleCall) -> bool:
        """The query is one position long (a learned pooling query
        ``self.query.repeat(B, 1, 1)`` of an ``(1, 1, E)`` parameter,
        ``x[:, :1]``, ``cls.unsqueeze(1)``): the weights are ``(N, 1, S)``,
        and ``need_weights=False`` saves nothing measurable."""
        query = ev.args.get("query")
        analysis = layout_for(self.ctx)
        batch_first = analysis.stated_batch_first(ev, default=False)
        if query is None or batch_first is None:
            return False
        axis = 1 if batch_first else 0
        if _length_one(query, axis, ev.site, 0):
            return True
        # the layout's own evidence: TranAD's ``elem.view(1, local_bs, n)``,
        # handed to a decoder layer's ``tgt`` through its callers
        shaped = analysis.of_call(ev).layout
        node = shaped.node if shaped is not None and shaped.origin is None else None
        if shaped is not None and isinstance(shaped.node, cst.Comment):  # ``# (B, 1, D)``
            axes = re.findall(r"[\w.]+", shaped.node.value.split("(", 1)[-1].split(")")[0])
            return len(axes) == 3 and axes[axis] == "1"
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
            return False
        if node.func.attr.value == "unsqueeze":  # sonati's ``proj(x).unsqueeze(1)  # (B, 1, D)``
            return len(node.args) == 1 and _int(node.args[0].value) == axis
        return (
            node.func.attr.value in ("view", "reshape")
            and len(node.args) == 3
            and _int(node.args[axis].value) == 1
        )

    def _discarded_by_callers(self, site: CallSite, param: Optional[str], elsewhere=False):
        """(the wrapper, where its first caller is) when the call's whole
        result is what a function or method returns (``return
        self.mha(x, x, x)``), that function is called in the project, and
        every call keeps only the first result (``out, _ = self.sa(x)``,
        ``self.sa(x)[0]``) and leaves ``param`` (the wrapper's parameter
        given as need_weights) True; else None.  A wrapper nothing in the
        project calls is left alone: its callers are outside and may read
        the weights."""
        if not _returned_whole(site):
            return None
        project = getattr(self.ctx, "project", None)
        key = _function_key(site)
        if key is None or project is None or not getattr(project, "files", False):
            return None
        found = project.results_kept(key)
        if not found or not _all_keep_first(project, found, param, {(None, key)}):
            return None  # unsettled, no caller in the project, or one that may read them
        if elsewhere and any(f[0] is None for f in found):
            return None  # a call in this file runs the module itself (``forwarded_attr``)
        if elsewhere and any(f"*{NEED_WEIGHTS_AT}" in f[3] for f in found):
            return None  # need_weights given by place, through ``*args``
        shown, line, use = found[0][0], found[0][1], found[0][2]
        where = f"line {line}" if shown is None else f"{shown} line {line}"
        if isinstance(use, tuple):  # ``return self.attn(x)``: that function's callers keep
            where += f", returned by `{use[1]}`"
        if len(found) > 1:
            where += f" and {len(found) - 1} more"
        return key, where

    def _discarded(self, site: CallSite) -> bool:
        call = site.node
        if site.parents:
            parent = site.parents[-1]
            return (
                isinstance(parent, cst.Subscript) and parent.value is call and _index_zero(parent)
            )
        stmt = site.stmt
        if isinstance(stmt, cst.Assign) and stmt.value is call and len(stmt.targets) == 1:
            target = stmt.targets[0].target
            if isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
                second = target.elements[1]
                if isinstance(second, cst.StarredElement):
                    return False
                w = second.value
                return isinstance(w, cst.Name) and not self.ctx.name_read(w.value, site)
            if isinstance(target, cst.Name):
                return _first_taken_next(site, target.value) or _only_output_read(
                    site, target.value
                )
        return False


MAX_CHAIN = 2  # a wrapper's caller that returns the pair on: followed this many steps


def _all_keep_first(project, found, param, seen, depth: int = 0) -> bool:
    """Whether every call in ``found`` (``results_kept``'s answer) keeps only
    the output and leaves ``param`` True: itself, or, when it returns the
    pair whole (``return self.attn(x)``), through every call of the
    function that returns it (``MAX_CHAIN`` steps)."""
    for _, _, use, bound, path in found:
        left_out = True if param is not None and param.startswith("**") else None
        if param is not None and bound.get(param, left_out) is not True:
            return False
        if use == KEPT_FIRST:
            continue
        if not isinstance(use, tuple) or param is not None or depth >= MAX_CHAIN:
            return False
        if (path, use[1]) in seen:
            return False  # recursion: what it keeps cannot be told
        further = project.results_kept(use[1], path)
        if not further or not _all_keep_first(
            project, further, None, seen | {(path, use[1])}, depth + 1
        ):
            return False
    return True


def _returned_whole(site: CallSite) -> bool:
    """Whether the function around the call gives its callers the weights
    as they came: ``return self.mha(...)``; ``out = self.mha(...)`` then
    only ``return out``; or ``out, w = self.mha(...)`` then only ``return
    <anything>, w`` (HF's ``attn_output, attn_weights``), ``w`` read nowhere
    else."""
    stmt = site.stmt
    if site.parents:
        return False
    if isinstance(stmt, cst.Return):
        return stmt.value is site.node
    if not (isinstance(stmt, cst.Assign) and stmt.value is site.node and len(stmt.targets) == 1):
        return False
    target = stmt.targets[0].target
    if isinstance(target, cst.Name):
        name, second = target.value, False
    elif (
        isinstance(target, (cst.Tuple, cst.List))
        and len(target.elements) == 2
        and all(
            isinstance(e, cst.Element) and isinstance(e.value, cst.Name) for e in target.elements
        )
    ):
        name, second = target.elements[1].value.value, True
        if target.elements[0].value.value == name:
            return False
    else:
        return False
    func = site.scope.node if site.scope is not None else None
    if not isinstance(func, cst.FunctionDef):
        return False
    # the name: its one assignment here, and its place in every return
    count = returns = 0
    for n in walk(func.body, prune=_nested):
        if _nested(n):  # a nested function: not this one's returns
            if any(isinstance(m, cst.Name) and m.value == name for m in walk(n)):
                return False
        elif isinstance(n, cst.Return):
            if not _gives(n.value, name, second):
                return False  # a return that gives the callers something else
            returns += 1
        elif isinstance(n, cst.Name) and n.value == name:
            count += 1
    return returns > 0 and count == 1 + returns


def _nested(node: cst.CSTNode) -> bool:
    return isinstance(node, (cst.FunctionDef, cst.Lambda))


def _gives(value, name: str, second: bool) -> bool:
    """Whether a return's value is ``name`` as it is: the whole value, or,
    ``second``, the second of a pair."""
    if second:
        if not (
            isinstance(value, cst.Tuple)
            and len(value.elements) == 2
            and isinstance(value.elements[1], cst.Element)
        ):
            return False
        value = value.elements[1].value
    return isinstance(value, cst.Name) and value.value == name


def _function_key(site: CallSite) -> Optional[str]:
    """How the project names the function whose own body holds the call:
    ``attend`` (module level) or ``Attention.forward`` (a method of a
    module-level class, not a dunder one); None otherwise."""
    scope = site.scope
    parent = scope.parent if scope is not None else None
    if parent is None or scope.kind != ScopeKind.FUNCTION:
        return None
    if not isinstance(scope.node, cst.FunctionDef) or scope.node.decorators:
        return None
    name = scope.node.name.value
    if parent.kind == ScopeKind.MODULE:
        return name
    if parent.kind != ScopeKind.CLASS or parent.parent is None:
        return None
    if parent.parent.kind != ScopeKind.MODULE or name.startswith("__"):
        return None
    return f"{parent.node.name.value}.{name}"


def _first_taken_next(site: CallSite, name: str) -> bool:
    """``x = self.attn(q, k, value=x)`` and, as the very next statement,
    ``x = x[0]`` (lerobot's ACT), or ``out = x[0]`` with ``x`` read nowhere
    else in the function: only the output is kept."""
    scope = site.scope
    while scope is not None and scope.kind != ScopeKind.FUNCTION:
        scope = scope.parent
    fn = scope.node if scope is not None else None
    if not isinstance(fn, cst.FunctionDef):
        return False
    for block in walk(fn):
        body = block.body if isinstance(block, cst.IndentedBlock) else None
        for i, line in enumerate(body or ()):
            if not isinstance(line, cst.SimpleStatementLine) or line.body[-1] is not site.stmt:
                continue
            after = body[i + 1] if i + 1 < len(body) else None
            if not (isinstance(after, cst.SimpleStatementLine) and len(after.body) == 1):
                return False
            taken = after.body[0]
            if not (isinstance(taken, cst.Assign) and len(taken.targets) == 1):
                return False
            value, target = taken.value, taken.targets[0].target
            if not (
                isinstance(value, cst.Subscript)
                and isinstance(value.value, cst.Name)
                and value.value.value == name
                and _index_zero(value)
            ):
                return False
            if isinstance(target, cst.Name) and target.value == name:
                return True  # the pair's name rebound to its output
            reads = sum(isinstance(n, cst.Name) and n.value == name for n in walk(fn))
            return reads == 2  # its assignment and this ``[0]``
    return False


_MAKERS = ("randn", "zeros", "ones", "empty", "rand", "full")


def _length_one(expr, axis: int, site: CallSite, depth: int) -> bool:
    """Whether ``expr`` (a 3-D query) is statically of size 1 along ``axis``."""
    if depth > 6:
        return False
    if isinstance(expr, cst.Subscript):
        parts = [e.slice for e in expr.slice]
        if len(parts) <= axis or any(
            isinstance(p, cst.Index) and isinstance(p.value, cst.Ellipsis) for p in parts
        ):
            return False
        part = parts[axis]
        if isinstance(part, cst.Index):
            return isinstance(part.value, cst.Name) and part.value.value == "None"
        return isinstance(part, cst.Slice) and _one_slice(part)
    if isinstance(expr, cst.BinaryOperation) and isinstance(
        expr.operator, (cst.Multiply, cst.Divide, cst.Add, cst.Subtract)
    ):  # ``torch.randn(1, 1, dim) * 0.02``: a number keeps the shape (probe AD's LA12c)
        for tensor, other in ((expr.left, expr.right), (expr.right, expr.left)):
            if isinstance(other, (cst.Integer, cst.Float)) and _length_one(
                tensor, axis, site, depth + 1
            ):
                return True
        return False
    if isinstance(expr, cst.Call):
        pattern = _rearranged_to(expr, site)
        if pattern is not None:  # ``Rearrange("b c -> b 1 c")``: a new axis of 1
            return len(pattern) > axis and pattern[axis] == "1"
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        method, base = expr.func.attr.value, expr.func.value
        args = [a.value for a in expr.args if a.keyword is None and not a.star]
        if method == "unsqueeze" and len(args) == 1:
            return _int(args[0]) in (axis, axis - 3)
        if method in ("repeat", "expand") and len(args) == 3:
            size = _int(args[axis])
            if method == "expand" and size == 1:
                return True
            return size in ((1, -1) if method == "expand" else (1,)) and _length_one(
                base, axis, site, depth + 1
            )
        if method in ("contiguous", "clone", "detach", "to", "type_as", "float", "half"):
            return _length_one(base, axis, site, depth + 1)
        if method == "Parameter" or _dotted(expr.func).endswith(".Parameter"):
            return bool(args) and _length_one(args[0], axis, site, depth + 1)
        if method in _MAKERS and len(args) == 3:  # ``torch.randn(1, 1, dim)``
            return _int(args[axis]) == 1
        return False
    if isinstance(expr, cst.Attribute) and getattr(expr.value, "value", None) == "self":
        got = _self_assigned(site, expr.attr.value)
        return got is not None and _length_one(got, axis, site, depth + 1)
    if isinstance(expr, cst.Name):  # a local bound once
        defs = lookup(expr.value, site.env, site.scope)
        if len(defs) == 1 and defs[0].kind == DefKind.ASSIGN:
            return _length_one(defs[0].node, axis, site, depth + 1)
    return False


def _rearranged_to(call: cst.Call, site: CallSite) -> Optional[List[str]]:
    """The output axes of an einops rearrangement the call makes: a
    ``Rearrange`` layer held on ``self`` (``self.add_query_axis(q)``) or
    ``rearrange(x, "...")``; a parenthesised group is one axis."""
    text = None
    func = call.func
    if isinstance(func, cst.Attribute) and getattr(func.value, "value", None) == "self":
        made = _self_assigned(site, func.attr.value)
        if isinstance(made, cst.Call) and _dotted(made.func).rsplit(".", 1)[-1] == "Rearrange":
            text = made.args[0].value if made.args else None
    elif _dotted(func).rsplit(".", 1)[-1] == "rearrange" and len(call.args) >= 2:
        text = call.args[1].value
    if not isinstance(text, cst.SimpleString) or "->" not in text.evaluated_value:
        return None
    out = text.evaluated_value.split("->", 1)[1]
    return re.findall(r"\([^)]*\)|[^\s()]+", out)


def _one_slice(part: cst.Slice) -> bool:
    lower = _int(part.lower) if part.lower is not None else 0
    upper = _int(part.upper) if part.upper is not None else None
    if part.step is not None:
        return False
    return (lower == 0 and upper == 1) or (lower == -1 and part.upper is None)


def _int(node) -> Optional[int]:
    if isinstance(node, cst.Integer):
        return int(node.value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _int(node.expression)
        return -inner if inner is not None else None
    return None


def _dotted(node) -> str:
    if isinstance(node, cst.Attribute):
        return _dotted(node.value) + "." + node.attr.value
    return node.value if isinstance(node, cst.Name) else ""


def _self_assigned(site: CallSite, attr: str):
    """The one value ``self.<attr>`` is assigned in the class around ``site``
    (``self.query = nn.Parameter(torch.randn(1, 1, dim))``), else None."""
    scope = site.scope
    while scope is not None and scope.kind != ScopeKind.CLASS:
        scope = scope.parent
    if scope is None or not isinstance(scope.node, cst.ClassDef):
        return None
    found = [
        n.value
        for n in walk(scope.node)
        if isinstance(n, cst.Assign)
        and len(n.targets) == 1
        and isinstance(n.targets[0].target, cst.Attribute)
        and getattr(n.targets[0].target.value, "value", None) == "self"
        and n.targets[0].target.attr.value == attr
    ]
    return found[0] if len(found) == 1 else None


def _only_output_read(site: CallSite, name: str) -> bool:
    """``src2 = self.self_attn(q, k, src2)``, then only ``src2[0]`` read in
    the statements after it, up to ``src2 = ...`` that rebinds it in the same
    block (spandrel's IPT): the weights are never read.  Another read, an
    augmented assignment, or a compound statement that names it before the
    rebinding, leaves it unsettled."""
    for block in walk(_function_of(site) or site.stmt):
        body = block.body if isinstance(block, cst.IndentedBlock) else None
        for i, line in enumerate(body or ()):
            if not isinstance(line, cst.SimpleStatementLine) or line.body[-1] is not site.stmt:
                continue
            taken = 0
            for after in body[i + 1 :]:
                names = [n for n in walk(after) if isinstance(n, cst.Name) and n.value == name]
                if not isinstance(after, cst.SimpleStatementLine) or len(after.body) != 1:
                    if names:
                        return False
                    continue
                stmt = after.body[0]
                targets = (
                    {id(t.target) for t in stmt.targets} if isinstance(stmt, cst.Assign) else set()
                )
                firsts = {
                    id(n.value)
                    for n in walk(after)
                    if isinstance(n, cst.Subscript) and _index_zero(n)
                }
                for n in names:
                    if id(n) in targets:
                        continue
                    if id(n) not in firsts or isinstance(stmt, cst.AugAssign):
                        return False
                    taken += 1
                if any(isinstance(t, cst.Name) and id(t) in targets for t in names):
                    return taken > 0  # rebound: the pair's binding ends here
            return False
    return False


def _kwargs_handed_on(site: CallSite) -> bool:
    """The call's one splat is the ``**kwargs`` of the function around it,
    handed on as it came (``self.inner(x, x, x, **kwargs)``; never stored to,
    indexed into or changed by a method in the function): ``need_weights``
    is then what its callers pass under that keyword, True when they leave
    it out."""
    func = _function_of(site)
    splats = [a for a in site.node.args if a.star]
    return func is not None and len(splats) == 1 and _own_kwargs(func, splats[0])


def _own_kwargs(func: cst.FunctionDef, arg: cst.Arg) -> bool:
    """``arg`` is ``**kwargs`` of ``func``, its own, handed on as it came:
    never rebound, stored to, indexed into or changed by a method
    (``kwargs["need_weights"] = False``, ``kwargs.pop(...)``)."""
    star = func.params.star_kwarg
    if not isinstance(star, cst.Param) or arg.star != "**":
        return False
    name = star.name.value
    if not (isinstance(arg.value, cst.Name) and arg.value.value == name):
        return False
    return not kwargs_changed(func, name, (*KWARGS_CHANGED, "pop"), rebound=True)


NEED_WEIGHTS_AT = 4  # need_weights' place in MultiheadAttention.forward (query first)


def _star_args_handed_on(site: CallSite) -> Optional[bool]:
    """Whether the call's arguments are only ``*args`` of the function around
    it, and maybe its ``**kwargs``, each handed on as it came (a tracing
    wrapper): True with ``**kwargs``, False without, None for any other
    call."""
    func = _function_of(site)
    args = site.node.args
    if func is None or not isinstance(func.params.star_arg, cst.Param) or not args:
        return None
    first = args[0]
    name = func.params.star_arg.name.value
    if first.star != "*" or not (isinstance(first.value, cst.Name) and first.value.value == name):
        return None
    if len(args) == 1:
        return False
    return True if len(args) == 2 and _own_kwargs(func, args[1]) else None


def _function_of(site: CallSite):
    scope = site.scope
    while scope is not None and scope.kind != ScopeKind.FUNCTION:
        scope = scope.parent
    return scope.node if scope is not None and isinstance(scope.node, cst.FunctionDef) else None


def _index_zero(sub: cst.Subscript) -> bool:
    if len(sub.slice) != 1:
        return False
    el = sub.slice[0].slice
    return isinstance(el, cst.Index) and isinstance(el.value, cst.Integer) and el.value.value == "0"


def _need_weights_false(call: cst.Call, ctx: FixContext) -> Optional[cst.Call]:
    index = find_arg(call, "need_weights")
    if index is not None:
        arg = call.args[index]
        if isinstance(arg.value, cst.Name) and arg.value.value == "True":
            args = list(call.args)
            args[index] = arg.with_changes(value=cst.Name("False"))
            return call.with_changes(args=args)
        return None
    if any(a.star == "**" for a in call.args):
        return None
    return add_keyword(call, "need_weights", cst.Name("False"))


FIX = register(
    Fix(
        "MHA102",
        "Add `need_weights=False` to the call",
        "Only the discarded second result changes (it becomes None); the attention output is "
        "the same. A call given `need_weights=True` literally has it turned to False; a call "
        "with a `**kwargs` splat is left alone.",
        _need_weights_false,
    )
)


_HOOKS = frozenset(("register_forward_hook", "register_module_forward_hook"))
