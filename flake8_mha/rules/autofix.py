"""What a rule's autofix is made of: ``Fix``, ``FixContext``, the registry and
the generic rewriting helpers.

A fix is a ``Fix(code, title, safety, apply)``: ``apply(call, ctx)`` gets the
``cst.Call`` a finding points at and returns the rewritten call, or ``None``
when no fix is safe there.  Each rule module declares its own fix beside the
rule (``FIX = register(Fix(...))``), the way Fixit keeps rule and autofix
together; ``flake8_mha.app.fix`` applies them.  Adding a fix is one declaration,
for example::

    FIX = register(Fix("MHA0XX", "Invert the mask where SDPA receives it: `~mask`",
                       "when it is safe, and why",
                       rewrite_argument("attn_mask", invert, torch_api.SDPA_SIGNATURE)))

MHA001 is never fixed: adding ``batch_first=True`` changes how the caller's
tensors are read, and only the author knows their layout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, FrozenSet, Optional, Tuple

import libcst as cst
from libcst.metadata import PositionProvider

from ..analysis.events import self_name
from ..core.findings import Finding
from ..analysis.flow import CallSite, DefKind, Env, Scope, lookup
from ..analysis.bound import call_arguments
from ..analysis.resolve import Resolver
from ..core.torch_api import Signature

NEVER_FIXED = {
    "MHA001": "adding batch_first=True changes how the caller's tensors are read; "
    "only the author knows their layout"
}


class FixContext:
    """What a fix may ask about the call it rewrites, answered by the analyzer
    the rules use (the flow pass's reaching definitions and the resolver's
    qualified names), at the call's own site or, after ``single_assignment``,
    at the definition followed."""

    def __init__(
        self,
        positions: Any,
        original: cst.Call,
        finding: Finding,
        site: Optional[CallSite],
        resolver: Optional[Resolver],
        env: Optional[Env] = None,
        scope: Optional[Scope] = None,
    ):
        # positions: answers get_metadata(PositionProvider, node) for the file being fixed
        self._positions = positions
        self.original = original
        self.finding = finding
        self.site = site
        self.resolver = resolver
        self.env = env if env is not None else (site.env if site is not None else None)
        self.scope = scope if scope is not None else (site.scope if site is not None else None)

    def enclosing_function(self) -> Optional[cst.FunctionDef]:
        return self.site.function if self.site is not None else None

    def self_name(self) -> Optional[str]:
        """The name of ``self`` in the enclosing method (its first parameter)."""
        return self_name(self.site) if self.site is not None else None

    def lines(self, node: cst.CSTNode) -> Tuple[int, int]:
        """First and last line of ``node`` in the file being fixed."""
        span = self._positions.get_metadata(PositionProvider, node)
        return span.start.line, span.end.line

    def qualnames(self, node: cst.CSTNode) -> FrozenSet[str]:
        """The qualified name ``node`` has here (``torch.ones``), as a set: empty when unknown."""
        if self.resolver is None or self.env is None:
            return frozenset()
        qualname = self.resolver.qualname(node, self.env, self.scope)
        return frozenset((qualname,)) if qualname is not None else frozenset()

    def single_assignment(
        self, name: cst.Name
    ) -> Optional[Tuple[cst.BaseExpression, "FixContext"]]:
        """The value of the one ``name = value`` that reaches ``name`` here, if that
        is all, and the context to read that value in."""
        if self.env is None:
            return None
        defs = lookup(name.value, self.env, self.scope)
        if len(defs) != 1 or defs[0].kind != DefKind.ASSIGN or defs[0].node is None:
            return None
        d = defs[0]
        return d.node, FixContext(
            self._positions, self.original, self.finding, self.site, self.resolver, d.env, d.scope
        )


Apply = Callable[[cst.Call, FixContext], Optional[cst.Call]]


@dataclass(frozen=True)
class Fix:
    code: str
    title: str  # imperative, as shown in docs/cli.md
    safety: str  # when it applies, and why the rewrite keeps the program's meaning
    apply: Apply


FIXES: Dict[str, Fix] = {}


def register(fix: Fix) -> Fix:
    if fix.code in NEVER_FIXED:
        raise ValueError(f"{fix.code} is never auto-fixed: {NEVER_FIXED[fix.code]}")
    FIXES[fix.code] = fix
    return fix


def fixable_codes() -> FrozenSet[str]:
    """The codes with a fix (every rule module loaded first: the fixes live there)."""
    from .base import all_rules

    all_rules()
    return frozenset(FIXES)


# -- building blocks ------------------------------------------------------------


def find_arg(call: cst.Call, name: str, signature: Optional[Signature] = None) -> Optional[int]:
    """Index in ``call.args`` of the argument bound to parameter ``name``
    (by keyword, or by position in ``signature`` when given), or None."""
    if signature is None:
        for n, arg in enumerate(call.args):
            if arg.keyword is not None and arg.keyword.value == name and not arg.star:
                return n
        return None
    return signature.bind(call_arguments(call)).slots.get(name)


def atom(node: cst.BaseExpression) -> bool:
    return bool(node.lpar) or isinstance(
        node,
        (
            cst.Name,
            cst.Attribute,
            cst.Call,
            cst.Subscript,
            cst.Integer,
            cst.Float,
            cst.SimpleString,
            cst.ConcatenatedString,
            cst.FormattedString,
            cst.List,
            cst.Tuple,
            cst.Dict,
            cst.Set,
        ),
    )


def parenthesize(node: cst.BaseExpression) -> cst.BaseExpression:
    if node.lpar:
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def add_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """Append ``name=value``, following the call's own comma and line layout."""
    new = cst.Arg(
        keyword=cst.Name(name),
        value=value,
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        ),
    )
    args = list(call.args)
    if not args:
        return call.with_changes(args=[new])
    last = args[-1]
    if isinstance(last.comma, cst.Comma) and isinstance(
        last.comma.whitespace_after, cst.ParenthesizedWhitespace
    ):
        # one argument per line: the last argument keeps its comment and goes
        # on to a new line indented like the others; the new argument ends
        # the way the last one did (a comma, then the closing bracket's line)
        closing = last.comma.whitespace_after
        indent = closing.last_line
        before = (
            args[-2].comma.whitespace_after
            if len(args) >= 2 and isinstance(args[-2].comma, cst.Comma)
            else call.whitespace_before_args
        )
        if isinstance(before, cst.ParenthesizedWhitespace):
            indent = before.last_line
        args[-1] = last.with_changes(
            comma=last.comma.with_changes(
                whitespace_after=closing.with_changes(empty_lines=[], last_line=indent)
            )
        )
        args.append(
            new.with_changes(
                comma=last.comma.with_changes(
                    whitespace_after=closing.with_changes(
                        first_line=cst.TrailingWhitespace(newline=closing.first_line.newline)
                    )
                )
            )
        )
    elif isinstance(last.comma, cst.Comma):
        # f(a, b,): keep the trailing comma after the new argument
        args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        args.append(new.with_changes(comma=last.comma))
    else:
        args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        args.append(new)
    return call.with_changes(args=args)


def remove_arg(call: cst.Call, index: int) -> cst.Call:
    args = list(call.args)
    removed = args.pop(index)
    if index == len(args) and args:
        # it was the last: the new last argument keeps the old ending (trailing comma or not)
        args[-1] = args[-1].with_changes(comma=removed.comma)
    return call.with_changes(args=args)


def rewrite_argument(
    name: str,
    transform: Callable[[cst.BaseExpression, FixContext], Optional[cst.BaseExpression]],
    signature: Optional[Signature] = None,
) -> Apply:
    """A fix that rewrites one argument's value in place (the argument bound
    to ``name`` by keyword, or by position in ``signature``)."""

    def apply(call: cst.Call, ctx: FixContext) -> Optional[cst.Call]:
        index = find_arg(call, name, signature)
        if index is None:
            return None
        arg = call.args[index]
        value = transform(arg.value, ctx)
        if value is None:
            return None
        args = list(call.args)
        args[index] = arg.with_changes(value=value)
        return call.with_changes(args=args)

    return apply


def invert(value: cst.BaseExpression, ctx: FixContext) -> Optional[cst.BaseExpression]:
    """``~value``, parenthesized when needed; a value already inverted is left alone."""
    if (
        isinstance(value, cst.UnaryOperation)
        and isinstance(value.operator, cst.BitInvert)
        and not value.lpar
    ):
        return None  # already inverted at the sink: not ours to flip back
    operand = value if atom(value) else parenthesize(value)
    return cst.UnaryOperation(operator=cst.BitInvert(), expression=operand)
