"""Safe, local autofixes, declared per code in one registry.

A fix is a ``Fix(code, title, safety, apply)``: ``apply(call, ctx)`` gets the
``cst.Call`` a finding points at (found again by its start position with
LibCST's PositionProvider) and returns the rewritten call, or ``None`` when
no fix is safe there.  Everything else in the file is left byte for byte:
LibCST keeps formatting and comments.

Adding a fix is one declaration, for example::

    register(Fix("MHA0XX", "Invert the mask where SDPA receives it: `~mask`",
                 "when it is safe, and why", rewrite_argument("attn_mask", invert)))

MHA001 is never fixed: adding ``batch_first=True`` changes how the caller's
tensors are read, and only the author knows their layout.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import (MetadataWrapper, ParentNodeProvider, PositionProvider,
                             QualifiedNameProvider, ScopeProvider)

from .findings import Finding

NEVER_FIXED = {"MHA001": "adding batch_first=True changes how the caller's tensors are read; "
                         "only the author knows their layout"}


class FixContext:
    """What a fix may ask about the call it rewrites."""

    def __init__(self, transformer: "_FixTransformer", original: cst.Call, finding: Finding):
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
    return frozenset(FIXES)


# -- building blocks ------------------------------------------------------------

SDPA_POSITIONS = {"query": 0, "key": 1, "value": 2, "attn_mask": 3, "dropout_p": 4,
                  "is_causal": 5, "scale": 6, "enable_gqa": 7}


def find_arg(call: cst.Call, keyword: str, position: Optional[int] = None) -> Optional[int]:
    """Index in ``call.args`` of the argument bound to ``keyword``, or None."""
    for n, arg in enumerate(call.args):
        if arg.keyword is not None and arg.keyword.value == keyword:
            return n
    if position is not None:
        positional = 0
        for n, arg in enumerate(call.args):
            if arg.star:  # *args: positions beyond it are unknown
                return None
            if arg.keyword is not None:
                break
            if positional == position:
                return n
            positional += 1
    return None


def _atom(node: cst.BaseExpression) -> bool:
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


def rewrite_argument(keyword: str, transform: Callable[[cst.BaseExpression, FixContext],
                                                       Optional[cst.BaseExpression]],
                     position: Optional[int] = None) -> Apply:
    """A fix that rewrites one argument's value in place."""
    if position is None:
        position = SDPA_POSITIONS.get(keyword)

    def apply(call: cst.Call, ctx: FixContext) -> Optional[cst.Call]:
        index = find_arg(call, keyword, position)
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
    operand = value if _atom(value) else parenthesize(value)
    return cst.UnaryOperation(operator=cst.BitInvert(), expression=operand)


# -- MHA102: need_weights=False -------------------------------------------------

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


register(Fix(
    "MHA102", "Add `need_weights=False` to the call",
    "Only the discarded second result changes (it becomes None); the attention output is "
    "the same. A call given `need_weights=True` literally has it turned to False; a call "
    "with a `**kwargs` splat is left alone.",
    _need_weights_false,
))


# -- MHA007: gate dropout_p on self.training ---------------------------------------

def _mentions_training(node: cst.CSTNode) -> bool:
    found = []

    class _V(cst.CSTVisitor):
        def visit_Attribute(self, n: cst.Attribute) -> None:
            if n.attr.value == "training":
                found.append(n)

    node.visit(_V())
    return bool(found)


def _gate_dropout(value: cst.BaseExpression, ctx: FixContext) -> Optional[cst.BaseExpression]:
    self_var = ctx.self_name()
    if self_var is None or _mentions_training(value):
        return None
    body: cst.BaseExpression = value
    if ctx.finding.evidence.get("dropout_is_module"):
        # an nn.Dropout module passed as dropout_p: its probability is .p
        body = cst.Attribute(value=value if _atom(value) else parenthesize(value),
                             attr=cst.Name("p"))
    elif isinstance(value, (cst.IfExp, cst.Lambda, cst.NamedExpr)) and not value.lpar:
        body = parenthesize(value)
    return cst.IfExp(test=cst.Attribute(value=cst.Name(self_var), attr=cst.Name("training")),
                     body=body, orelse=cst.Float("0.0"))


register(Fix(
    "MHA007", "Gate dropout_p: `p if self.training else 0.0`",
    "In training mode the call is unchanged; after model.eval() dropout is off, which is what "
    "nn.Dropout does. An nn.Dropout module passed as dropout_p becomes `module.p if "
    "self.training else 0.0`. Only inside a method (the enclosing method's first parameter "
    "is used for self).",
    rewrite_argument("dropout_p", _gate_dropout),
))


# -- MHA006: drop is_causal when the mask is already the causal mask ------------------

def _is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


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
        return isinstance(inner, cst.Call) and "torch.ones" in ctx.qualnames(inner.func) \
            and _square_dims(inner)
    return "torch.ones" in ctx.qualnames(func) and _square_dims(node) \
        and _is_bool_dtype(_kwarg(node, "dtype"), ctx)


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
        value = ctx.single_assignment(node)
        return value is not None and is_causal_mask(value, ctx, depth + 1)
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
            or (args[0].keyword is None and isinstance(args[0].value, cst.Attribute)
                and args[0].value.attr.value == "device"))
        return device_only and is_causal_mask(func.value, ctx, depth + 1)
    return False


def _drop_is_causal(call: cst.Call, ctx: FixContext) -> Optional[cst.Call]:
    flag = find_arg(call, "is_causal")  # keyword only: a positional flag is left alone
    if flag is None or not _is_true(call.args[flag].value):
        return None
    # metadata (names, scopes) is known for the original nodes only
    mask = find_arg(ctx.original, "attn_mask", SDPA_POSITIONS["attn_mask"])
    if mask is None or not is_causal_mask(ctx.original.args[mask].value, ctx):
        return None
    return remove_arg(call, flag)


register(Fix(
    "MHA006", "Drop `is_causal=True`: the mask already is the causal mask",
    "Only when `is_causal=True` is literal and `attn_mask` is statically a causal mask: a "
    "square `torch.ones(n, n, dtype=torch.bool).tril()` / `torch.tril(...)` (diagonal 0), or "
    "`nn.Transformer.generate_square_subsequent_mask(n)`, inline or through one local "
    "assignment, optionally moved with `.to(device)`. Both then mean the same masking, so "
    "dropping the flag keeps the numbers and removes the error. Any other mask: no fix (which "
    "of the two was meant is the author's call).",
    _drop_is_causal,
))


def _decided_here(line: Optional[int], ctx: FixContext) -> bool:
    """Whether the line that decided the mask's meaning is inside the function
    (or module code) that holds the sink."""
    if not isinstance(line, int):
        return False
    func = ctx.enclosing_function()
    if func is None:
        return True
    span = ctx._t.get_metadata(PositionProvider, func)
    return span.start.line <= line <= span.end.line


def _invert_ignore_mask(call: cst.Call, ctx: FixContext) -> Optional[cst.Call]:
    mask = ctx.finding.evidence.get("mask") or {}
    if mask.get("kind") != "bool":
        return None  # ~ on a float 0/1 mask raises, on an integer one gives -1/-2: no fix
    if not _decided_here(mask.get("line"), ctx):
        return None  # the meaning came from one caller: others may pass the other kind
    names = ctx.qualnames(ctx.original.func)
    if any(n.endswith("scaled_dot_product_attention") for n in names):
        return rewrite_argument("attn_mask", invert)(call, ctx)
    if "torch.where" in names:  # torch.where(mask, scores, -inf) keeps where True, like SDPA
        return rewrite_argument("condition", invert, position=0)(call, ctx)
    return None


MHA002_FIX = register(Fix(
    "MHA002", "Invert the mask where it is used: `attn_mask=~mask`",
    "The mask's True means ignore; SDPA's bool attn_mask (and torch.where's condition) keeps "
    "where True. `~` at the sink flips exactly that argument and nothing upstream, so other "
    "users of the mask are untouched. Only for a bool mask (`~` on a float or integer 0/1 "
    "mask is wrong: that is MHA004's business); a mask already written `~m` at the sink is "
    "left alone; a mask whose meaning was decided in a caller (the sink's function receives it "
    "as a parameter) is left alone too, since other callers may pass the other convention.",
    _invert_ignore_mask,
))


# -- applying -----------------------------------------------------------------------

class _FixTransformer(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider, QualifiedNameProvider,
                             ScopeProvider)

    def __init__(self, by_position: Dict[Tuple[int, int], List[Finding]]):
        super().__init__()
        self.by_position = by_position
        self.fixed: List[Finding] = []
        self.claimed: set = set()

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        pos = self.get_metadata(PositionProvider, original).start
        key = (pos.line, pos.column + 1)
        pending = [f for f in self.by_position.get(key, ()) if id(f) not in self.claimed]
        node = updated
        for finding in pending:
            fix = FIXES.get(finding.code)
            if fix is None:
                continue
            try:
                result = fix.apply(node, FixContext(self, original, finding))
            except Exception:  # a fix that cannot cope leaves the code as it was
                result = None
            if result is not None and not result.deep_equals(node):
                node = result
                self.fixed.append(finding)
                self.claimed.add(id(finding))
        return node


def fix_source(source: str, findings: Sequence[Finding], path: str = "<string>"
               ) -> Tuple[str, List[Finding]]:
    """The source with every safe fix for ``findings`` applied, and the findings fixed.

    A result that does not parse is thrown away whole (the source comes back
    unchanged)."""
    wanted = [f for f in findings if f.code in FIXES]
    if not wanted:
        return source, []
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return source, []
    by_position: Dict[Tuple[int, int], List[Finding]] = {}
    for f in sorted(wanted, key=lambda f: f.code):
        by_position.setdefault((f.line, f.col), []).append(f)
    transformer = _FixTransformer(by_position)
    new_module = MetadataWrapper(module).visit(transformer)
    new_source = new_module.code
    if not transformer.fixed or new_source == source:
        return source, []
    try:
        cst.parse_module(new_source)
        compile(new_source, path, "exec", dont_inherit=True)
    except (cst.ParserSyntaxError, SyntaxError, ValueError):
        return source, []
    return new_source, transformer.fixed


def lint_text(text: str, path: str, codes: Iterable[str], disable_noqa: bool = False
              ) -> List[Finding]:
    """Findings for one text, with ``# noqa`` applied unless disabled.  Raises
    ``engine.SourceSyntaxError``."""
    from .engine import analyze_source
    from .noqa import apply_noqa

    findings = analyze_source(text, path, codes=list(codes))
    if disable_noqa or not findings:
        return findings
    return apply_noqa(findings, text.splitlines(keepends=True))
