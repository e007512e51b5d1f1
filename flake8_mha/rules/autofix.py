"""What a rule's autofix is made of: ``Fix``, ``FixContext``, the registry and
the generic rewriting helpers.

A fix is a ``Fix(code, title, safety, apply)``: ``apply(call, ctx)`` gets the
``cst.Call`` a finding points at and returns the rewritten call, or ``None``
when no fix is safe there.  Each rule module declares its own fix beside the
rule (``FIX = register(Fix(...))``), the way Fixit keeps rule and autofix
together; ``flake8_mha.fix`` applies them.  Adding a fix is one declaration,
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
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedNameProvider, ScopeProvider

from ..findings import Finding
from ..resolve import call_arguments
from ..torch_api import Signature

NEVER_FIXED = {"MHA001": "adding batch_first=True changes how the caller's tensors are read; "
                         "only the author knows their layout"}


class FixContext:
    """What a fix may ask about the call it rewrites."""

    def __init__(self, transformer: Any, original: cst.Call, finding: Finding):
        # transformer: the LibCST transformer applying the fixes (it answers get_metadata)
        self._t = transformer
        self.original = original
        self.finding = finding

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self._t.get_metadata(ParentNodeProvider, node, None)

    def enclosing_function(self) -> Optional[cst.FunctionDef]:
        node = self.parent(self.original)
        while node is not None and not isinstance(node, cst.FunctionDef):
            node = self.parent(node)
        return node

    def self_name(self) -> Optional[str]:
        """The first parameter of the enclosing method (normally ``self``)."""
        func = self.enclosing_function()
        if func is None or not isinstance(self.parent(self.parent(func) or func), cst.ClassDef):
            return None
        params = func.params.posonly_params or func.params.params
        return params[0].name.value if params else None

    def lines(self, node: cst.CSTNode) -> Tuple[int, int]:
        """First and last line of ``node`` in the file being fixed."""
        span = self._t.get_metadata(PositionProvider, node)
        return span.start.line, span.end.line

    def qualnames(self, node: cst.CSTNode) -> FrozenSet[str]:
        found = self._t.get_metadata(QualifiedNameProvider, node, set()) or set()
        return frozenset(q.name for q in found)

    def single_assignment(self, name: cst.Name) -> Optional[cst.BaseExpression]:
        """The value of the one ``name = value`` that defines ``name`` here, if that is all."""
        scope = self._t.get_metadata(ScopeProvider, name, None)
        if scope is None:
            return None
        assignments = list(scope[name.value])
        if len(assignments) != 1:
            return None
        target = getattr(assignments[0], "node", None)
        holder = self.parent(target) if target is not None else None
        if isinstance(holder, cst.AssignTarget):
            assign = self.parent(holder)
            if isinstance(assign, cst.Assign) and len(assign.targets) == 1:
                return assign.value
        if isinstance(holder, cst.AnnAssign) and holder.value is not None:
            return holder.value
        return None


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
    return bool(node.lpar) or isinstance(node, (
        cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float,
        cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.List, cst.Tuple,
        cst.Dict, cst.Set))


def parenthesize(node: cst.BaseExpression) -> cst.BaseExpression:
    if node.lpar:
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def add_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """Append ``name=value``, following the call's own comma and line layout."""
    new = cst.Arg(keyword=cst.Name(name), value=value,
                  equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                        whitespace_after=cst.SimpleWhitespace("")))
    args = list(call.args)
    if not args:
        return call.with_changes(args=[new])
    last = args[-1]
    if isinstance(last.comma, cst.Comma) and \
            isinstance(last.comma.whitespace_after, cst.ParenthesizedWhitespace):
        # one argument per line: the last argument keeps its comment and goes
        # on to a new line indented like the others; the new argument ends
        # the way the last one did (a comma, then the closing bracket's line)
        closing = last.comma.whitespace_after
        indent = closing.last_line
        before = args[-2].comma.whitespace_after if len(args) >= 2 and \
            isinstance(args[-2].comma, cst.Comma) else call.whitespace_before_args
        if isinstance(before, cst.ParenthesizedWhitespace):
            indent = before.last_line
        args[-1] = last.with_changes(comma=last.comma.with_changes(
            whitespace_after=closing.with_changes(empty_lines=[], last_line=indent)))
        args.append(new.with_changes(comma=last.comma.with_changes(
            whitespace_after=closing.with_changes(
                first_line=cst.TrailingWhitespace(newline=closing.first_line.newline)))))
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


def rewrite_argument(name: str, transform: Callable[[cst.BaseExpression, FixContext],
                                                    Optional[cst.BaseExpression]],
                     signature: Optional[Signature] = None) -> Apply:
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
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.BitInvert) \
            and not value.lpar:
        return None  # already inverted at the sink: not ours to flip back
    operand = value if atom(value) else parenthesize(value)
    return cst.UnaryOperation(operator=cst.BitInvert(), expression=operand)
