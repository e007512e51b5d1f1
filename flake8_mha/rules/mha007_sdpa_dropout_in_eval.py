"""MHA007: SDPA dropout not gated on self.training, and its fix (gate it)."""

from __future__ import annotations

from typing import Iterator, Literal, Optional, Tuple

import libcst as cst

from ..core import torch_api
from ..analysis.events import SdpaCall, is_module_class, mixed_into_modules, self_name
from ..analysis.flow import CallSite, DefKind, lookup, subclasses_in, walk
from ..analysis.values import UNKNOWN, in_class_body, value_of
from .autofix import Fix, FixContext, atom, parenthesize, register, rewrite_argument
from ._syntax import dotted, root_name, same
from .base import Example, Report, Rule


# Where a dropout_p comes from: a number (None when not known statically), or
# an nn.Dropout module (its dotted name, e.g. "self.drop").
Source = Tuple[Literal["value", "module"], object]


def _mentions_self_training(node: cst.CSTNode, self_var: str) -> bool:
    return any(
        isinstance(n, cst.Attribute)
        and n.attr.value == "training"
        and isinstance(n.value, cst.Name)
        and n.value.value == self_var
        for n in walk(node)
    )


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
        - A wrapper called under another name is followed: a local alias
          (`attn_fn = sdpa_attention`), or the entry of a dict of functions
          written in the file (`ATTENTION_FUNCTIONS["sdpa"]`; an unknown key,
          `ATTENTION_FUNCTIONS[config.impl]`, reads every entry, and one that
          hands the probability to SDPA is judged). transformers'
          `attention_interface = ALL_ATTENTION_FUNCTIONS[...]` with
          `dropout=0.0 if not self.training else p` is gated; with
          `dropout=p` it is reported at the call.
        - A `dropout_p=` keyword beside a `**kw` splat is the call's dropout
          (the splat cannot give it again: Python would raise); a call that
          may take `dropout_p` only from a splat is not judged.
        - Gating counts anywhere in the method: inline (`p if self.training else
          0.0`), through a local, in an `if self.training:` branch, or as
          `self.training and p` / `p * self.training`. A method that reads
          `self.training` at all is taken as gated.
        - A `dropout_p` that comes from a parameter of the function is the
          caller's decision: not reported (also for free functions).
        - A probability chosen by branches is followed through each branch:
          `self.p if self.use_dropout else 0.0`, or a local set to `0.0` on
          one path and `self.p` on another, is reported when no branch is
          gated by `self.training` and at least one is a probability of the
          module that is not 0; every branch must be known (a branch from a
          parameter or a call leaves the whole value the caller's: silent).
          A branch chosen by a bool parameter of the method whose default
          picks the 0 (`self.p if not deterministic else 0.0` with
          `deterministic=True`, Flax's and Dia's convention) is dropout a
          caller asks for: the caller's, silent. With the other default
          (`deterministic=False`) it is on after `model.eval()`: reported.
        - Outside a method of an `nn.Module` subclass: not reported. A class is
          one through its bases, in its file or in other files of the project
          (`SetAttention(abc.ABC, Mixin, nn.Module)` in `api/modules.py`;
          `fixtures/program_calls/module_bases/`). A mixin of no base (or
          whose bases are such mixins of its file: `class
          AttendMixin(HeadsMixin)`, `fixtures/program_calls/mixin_chains/`)
          that its file mixes only into module classes (`class SDPAMixin:`
          under `class SelfAttention(SDPAMixin, nn.Module)`), or that the
          project's files importing it mix only into module classes (probe
          AN's AN21), runs on modules alone: its methods are judged as
          theirs.
        - A probability kept as a class attribute (`attn_pdrop = 0.0` in the
          class body) is joined with what the subclasses set that the project
          uses (named outside their own `class` statement), in the file or in
          another project file: a subclass with `attn_pdrop = 0.1` makes its
          instances drop, and the base's call is reported (probe AN's AN03,
          `fixtures/program_calls/subclass_attrs/`). A subclass that sets the
          same 0, or that nothing builds, changes nothing. The message names
          the subclass and its rate (`(FinetuneAttention in model.py sets
          attn_pdrop = 0.1)`), and the witness runs that rate.
        - A probability from the constructor (`self.p = p`) is known when every
          construction in the project passes the same literal (0: not
          reported); when nothing in the project builds the class, the
          finding says its callers are outside the project. `self.drop.p` of
          an `nn.Dropout` the class builds is the rate it is built with,
          known the same way (torch-molecule builds `nn.Dropout(attn_drop)`
          with `attn_drop` 0 in every construction). A `dropout_p`
          parameter that every call leaves at 0 is 0 (docs/reach.md, "Facts
          from the callers").
        - A `functools.partial(F.scaled_dot_product_attention, dropout_p=...)`
          kept on the module and called in a method: its bound probability
          is fixed when the partial is made, and read as one of the module
          (`dropout_p=self.p`, or `cfg.attn_pdrop` of the constructor's
          config: reported unless a literal 0 or gated where it is called).
        - A call that runs only where the probability is 0 is not reported:
          under `if p == 0:` (or the other branch of `if p > 0:` / `if p != 0:`),
          or under a flag the class sets once to that test (nanoGPT's
          `self.flash = self.dropout == 0.0`, then `if self.flash:` around
          `dropout_p=self.dropout`), `p` written as the argument is. A flag
          set to an `and` holding that test (bark's `hasattr(F,
          "scaled_dot_product_attention") and self.dropout == 0.0`) counts
          where the flag is true.
        """
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
            5,
            16,
            fixed="import torch.nn as nn\nimport torch.nn.functional as F\nclass A(nn.Module):\n"
            "    def forward(self, q, k, v):\n"
            "        return F.scaled_dot_product_attention(q, k, v, dropout_p=self.p if self.training else 0.0)\n",
        ),
    ]

    def on_sdpa_call(self, ev: SdpaCall) -> Iterator[Report]:
        site = ev.site
        dropout = ev.args.get("dropout_p")
        named = any(
            a.keyword is not None and a.keyword.value == "dropout_p" for a in site.node.args
        )
        if dropout is None or ((ev.args.star or ev.args.double_star) and not named):
            return  # a splat beside a keyword cannot give it again (probe AB's AB06)
        project = getattr(self.ctx, "project", None)  # a base in another file
        if not is_module_class(site.cls, self.ctx.resolver, project=project) and not (
            mixed_into_modules(site.cls, self.ctx.resolver, self.ctx.flow.classes.values(), project)
        ):
            return
        self_var = self_name(site)
        if self_var is None:
            return
        func = site.function
        if _mentions_self_training(func, self_var):
            return
        if _zero_where_called(dropout, site, self_var, self.ctx.resolver):
            return
        source = self._source(dropout, site, self_var, 0)
        if source is None and not named and _bound_at_construction(dropout, site):
            source = ("value", None)  # ``partial(F.sdpa, dropout_p=cfg.p)`` kept on self
        if source is None:
            return
        kind, attr = source
        evidence = {"module": torch_api.SDPA_NAME, "dropout_is_module": kind == "module"}
        if kind == "module":
            evidence["dropout_p"] = None
            yield self.report(site.node, evidence, self.MESSAGE_MODULE, attr=attr)
            return
        evidence["dropout_p"] = attr if isinstance(attr, (int, float)) else None
        report = self.report(site.node, evidence)
        sub = self._subclass_rate(dropout, site, self_var) if attr is None else None
        if sub is not None:  # the base's own value is 0: the subclass's instances drop
            name, where, rate = sub
            report.evidence.update(dropout_p=rate, subclass=name)
            report.message += (
                f" ({name}{where} sets {dotted(dropout)[len(self_var) + 1 :]} = {rate})"
            )
        yield report

    def _source(
        self, expr: cst.CSTNode, site: CallSite, self_var: str, depth: int
    ) -> Optional[Source]:
        """('value', number|None) or ('module', text) when dropout_p comes from
        the module or a constant and is not zero; None when unsure or gated."""
        got = self._branch(expr, site, self_var, depth)
        return None if got is _ZERO else got

    def _branch(self, expr: cst.CSTNode, site: CallSite, self_var: str, depth: int):
        """A ``Source``, ``_ZERO`` (a known 0) or None (unsure).  Values chosen
        by branches (``a if c else b``, a local assigned on several paths) are
        a source when every branch is known and one is not zero."""
        if depth > 8:
            return None
        ctx = self.ctx
        v = (
            ctx.value(expr, site)
            if isinstance(expr, (cst.Name, cst.Integer, cst.Float))
            else UNKNOWN
        )
        if v is not UNKNOWN:
            if _rate(v):
                return ("value", v)
            return _ZERO if isinstance(v, (int, float)) and v == 0 else None
        if (
            isinstance(expr, cst.Attribute)
            and expr.attr.value == "p"
            and isinstance(expr.value, cst.Attribute)
            and self._is_dropout_module(expr.value, site)
        ):  # ``self.attn_drop.p``: the rate the module was built with
            return self._built_rate(expr.value, site)
        if isinstance(expr, cst.Attribute) and root_name(expr) == self_var:
            if self._is_dropout_module(expr, site):
                return ("module", dotted(expr))
            sv = ctx.value(expr, site)
            if isinstance(sv, (int, float)) and not isinstance(sv, bool) and sv == 0:
                return _ZERO
            return ("value", sv if isinstance(sv, (int, float)) and sv is not UNKNOWN else None)
        if isinstance(expr, cst.IfExp):
            branches = [
                self._branch(e, site, self_var, depth + 1) for e in (expr.body, expr.orelse)
            ]
            if _ZERO in branches and _flag_off_by_default(expr.test, site, branches):
                return None  # ``p if not deterministic else 0.0``: the caller turns it on
            return _chosen(branches)
        if isinstance(expr, cst.Name):
            defs = lookup(expr.value, site.env, site.scope)
            if not defs:
                return None
            branches = []
            for d in defs:
                if d.kind != DefKind.ASSIGN:
                    return None
                dsite = CallSite(site.node, d.env, d.scope, site.conds, (), None)
                branches.append(self._branch(d.node, dsite, self_var, depth + 1))
            return _chosen(branches)
        return None

    def _subclass_rate(self, expr, site: CallSite, self_var: str):
        """(subclass, " in <file>" or "", rate) of a subclass that sets the
        class attribute ``self.<attr>`` reads to a probability that is not 0
        (probe AN's AN03: the base's ``attn_pdrop = 0.0``, a finetuning
        subclass's 0.1), in this file or another project file; else None."""
        if not (
            isinstance(expr, cst.Attribute) and dotted(expr) == f"{self_var}.{expr.attr.value}"
        ):
            return None
        cls, attr = site.cls, expr.attr.value
        # set on the instance by the base, a subclass's class body changes nothing
        mine = cls.attrs.get(attr, ()) if cls is not None else ()
        on_instance = not all(in_class_body(d) for d in mine)
        for sub in subclasses_in(cls, list(self.ctx.flow.classes.values())) if mine else ():
            for d in sub.attrs.get(attr, ()):
                if d.kind != DefKind.ASSIGN or (on_instance and in_class_body(d)):
                    continue
                v = value_of(d.node, d.env, d.scope)
                if _rate(v):
                    return sub.name, "", v
        project = getattr(self.ctx, "project", None)
        setters = getattr(project, "setters_elsewhere", None) if mine else None
        for where, name, v in (setters(cls.name, attr, on_instance) or ()) if setters else ():
            if _rate(v):
                return name, f" in {project.relative(where)}", v
        return None

    def _built_rate(self, module: cst.Attribute, site: CallSite):
        """The ``p`` every ``nn.Dropout(...)`` the class keeps at ``module`` is
        built with (left out: torch's 0.5), as ``_branch`` answers."""
        defs = lookup(module.value.value, site.env, site.scope)
        values = []
        for d in self.ctx.resolver.attr_defs(defs[0].extra, module.attr.value):
            arg = next((a.value for a in d.node.args if a.keyword and a.keyword.value == "p"), None)
            if arg is None and d.node.args and d.node.args[0].keyword is None:
                arg = d.node.args[0].value if not d.node.args[0].star else None
            v = 0.5 if not d.node.args else self.ctx.value(arg, d) if arg is not None else UNKNOWN
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                return ("value", None)
            values.append(v)
        if values and all(v == 0 for v in values):
            return _ZERO
        return ("value", values[0] if len(set(values)) == 1 else None)

    def _is_dropout_module(self, expr: cst.Attribute, site: CallSite) -> bool:
        if not isinstance(expr.value, cst.Name):
            return False
        defs = lookup(expr.value.value, site.env, site.scope)
        if len(defs) != 1 or defs[0].kind != DefKind.SELF:
            return False
        attr_defs = self.ctx.resolver.attr_defs(defs[0].extra, expr.attr.value)
        if not attr_defs:
            return False
        for d in attr_defs:
            if d.kind != DefKind.ASSIGN or not isinstance(d.node, cst.Call):
                return False
            if self.ctx.resolver.qualname(d.node.func, d.env, d.scope) != torch_api.DROPOUT:
                return False
        return True


_ZERO = ("zero", 0)


def _rate(v) -> bool:
    """A probability that is not 0: a number, not a bool, above 0."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0


def _bound_at_construction(expr: cst.CSTNode, site: CallSite) -> bool:
    """``dropout_p`` given by a partial bound where the module is built
    (``self.attend = partial(F.scaled_dot_product_attention, dropout_p=cfg.p)``
    in ``__init__``): a name or attribute of that place, which the method
    calling it cannot see (a literal is read as it is)."""
    root = expr
    while isinstance(root, cst.Attribute):
        root = root.value
    return isinstance(root, cst.Name) and not lookup(root.value, site.env, site.scope)


def _flag_off_by_default(test, site: CallSite, branches) -> bool:
    """``p if not deterministic else 0.0`` (``p if train else 0.0``) where
    ``deterministic`` is a parameter of the method whose default picks the
    zero: dropout only where a caller asks for it (Flax's convention, Dia's
    ``deterministic=True``), which ``model.eval()`` has no say in: the
    caller's business, as a ``dropout_p`` parameter is."""
    negated = False
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, negated = test.expression, not negated
    if not isinstance(test, cst.Name) or site.function is None:
        return False
    defs = lookup(test.value, site.env, site.scope)
    if len(defs) != 1 or defs[0].kind != DefKind.PARAM:
        return False
    default = defs[0].node.default
    if not (isinstance(default, cst.Name) and default.value in ("True", "False")):
        return False
    on = (default.value == "True") != negated  # the test's value by default
    return branches[0 if on else 1] == _ZERO


def _chosen(branches):
    """The source of a value chosen among branches: unsure if any branch is,
    zero if all are, else the first branch that is not zero."""
    if any(b is None for b in branches):
        return None
    for b in branches:
        if b is not _ZERO:
            return b
    return _ZERO


def _zero_where_called(dropout, site: CallSite, self_var: str, resolver) -> bool:
    """The call runs only where the probability is 0: under ``if p == 0:``
    (or the ``else`` of ``if p > 0:``/``if p != 0:``), or under a flag the
    class sets to that test (nanoGPT's ``self.flash = self.dropout == 0.0``,
    then ``if self.flash:``), ``p`` written as the ``dropout_p`` argument is."""
    for test, truth, _env in site.conds:
        while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test, truth = test.expression, not truth
        if _says_zero(test, truth, dropout):
            return True
        for zero_test, when_true in _flag_tests(test, site, self_var, resolver):
            if (truth or not when_true) and _says_zero(zero_test, truth, dropout):
                return True
    return False


def _flag_tests(test, site: CallSite, self_var: str, resolver) -> list:
    """The comparisons a ``self.<flag>`` test stands for, when the class (or a
    base of its file) assigns the flag once, to a comparison or to an ``and``
    of terms (bark's ``hasattr(F, "scaled_dot_product_attention") and
    self.dropout == 0.0``): each paired with whether it holds only when the
    flag is true (a term of an ``and`` says nothing when the flag is false)."""
    if not (
        isinstance(test, cst.Attribute)
        and isinstance(test.value, cst.Name)
        and test.value.value == self_var
        and site.cls is not None
    ):
        return []
    defs = resolver.attr_defs(site.cls, test.attr.value)
    if len(defs) != 1 or defs[0].kind != DefKind.ASSIGN:
        return []
    node = defs[0].node
    if isinstance(node, cst.Comparison):
        return [(node, False)]
    terms = []
    while isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.And):
        terms.append(node.right)
        node = node.left
    if not terms:
        return []
    terms.append(node)
    return [(t, True) for t in terms if isinstance(t, cst.Comparison)]


def _says_zero(test, truth: bool, p: cst.CSTNode) -> bool:
    """Whether ``test`` being ``truth`` makes the probability ``p`` 0."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    op = test.comparisons[0]
    on_left, on_right = same(test.left, p), same(op.comparator, p)
    if on_left == on_right:
        return False
    other = op.comparator if on_left else test.left
    if not (isinstance(other, (cst.Integer, cst.Float)) and other.evaluated_value == 0):
        return False
    kind = type(op.operator)
    if kind is cst.Equal:
        return truth
    if kind is cst.NotEqual or (kind is cst.GreaterThan and on_left):
        return not truth  # a probability is never below 0
    return False


def _mentions_training(node: cst.CSTNode) -> bool:
    return any(isinstance(n, cst.Attribute) and n.attr.value == "training" for n in walk(node))


def _gate_dropout(value: cst.BaseExpression, ctx: FixContext) -> Optional[cst.BaseExpression]:
    self_var = ctx.self_name()
    if self_var is None or _mentions_training(value):
        return None
    body: cst.BaseExpression = value
    if ctx.finding.evidence.get("dropout_is_module"):
        # an nn.Dropout module passed as dropout_p: its probability is .p
        body = cst.Attribute(
            value=value if atom(value) else parenthesize(value), attr=cst.Name("p")
        )
    elif isinstance(value, (cst.IfExp, cst.Lambda, cst.NamedExpr)) and not value.lpar:
        body = parenthesize(value)
    return cst.IfExp(
        test=cst.Attribute(value=cst.Name(self_var), attr=cst.Name("training")),
        body=body,
        orelse=cst.Float("0.0"),
    )


FIX = register(
    Fix(
        "MHA007",
        "Gate dropout_p: `p if self.training else 0.0`",
        "In training mode the call is unchanged; after model.eval() dropout is off, which is what "
        "nn.Dropout does. An nn.Dropout module passed as dropout_p becomes `module.p if "
        "self.training else 0.0`. Only inside a method (the enclosing method's first parameter "
        "is used for self).",
        rewrite_argument("dropout_p", _gate_dropout, torch_api.SDPA_SIGNATURE),
    )
)
