"""Applying the rules' autofixes: ``flake8-mha check --fix`` / ``--diff``.

Each rule module declares its own fix beside the rule (see
``flake8_mha.rules.autofix`` for what a fix is made of).  Here the fixes are
applied: the ``cst.Call`` a finding points at is found again by its start
position (LibCST's PositionProvider) and handed to the fix of its code.
Everything else in the file is left byte for byte: LibCST keeps formatting
and comments.

A fixed call that makes a line longer than the configured ``max-line-length``
is broken inside its brackets as black would: first its
arguments on one line of their own, then one argument a line with a trailing
comma.  A call that still does not fit (or holds a comment, or starts inside
another line) is left unfixed, and the reason is given (``FixResult.refused``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ..core.findings import Finding
from ..analysis.flow import FlowPass
from ..core.lines import source_lines
from ..analysis.resolve import Resolver
from ..rules.autofix import FIXES, NEVER_FIXED, Fix, FixContext, fixable_codes, register

__all__ = [
    "FIXES",
    "NEVER_FIXED",
    "Fix",
    "FixContext",
    "FixResult",
    "fixable_codes",
    "register",
    "fix_source",
    "fix_text",
]


class _FixTransformer(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, by_position: Dict[Tuple[int, int], List[Finding]], flow: FlowPass):
        super().__init__()
        self.by_position = by_position
        # the analyzer's view of the same tree: each call's site (environment,
        # scope, enclosing function) and the resolver the rules use
        self.resolver = Resolver(flow)
        self.fixed: List[Finding] = []
        self.claimed: set = set()
        # id of each rewritten call -> (the call before its fixes, the findings fixed)
        self.rewritten: Dict[int, Tuple[cst.Call, List[Finding]]] = {}

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        pos = self.get_metadata(PositionProvider, original).start
        key = (pos.line, pos.column + 1)
        pending = [f for f in self.by_position.get(key, ()) if id(f) not in self.claimed]
        node = updated
        done: List[Finding] = []
        for finding in pending:
            fix = FIXES.get(finding.code)
            if fix is None:
                continue
            try:
                site = self.resolver.site_of.get(id(original))
                ctx = FixContext(self, original, finding, site, self.resolver)
                result = fix.apply(node, ctx)
            except Exception:  # a fix that cannot cope leaves the code as it was
                result = None
            if result is not None and not result.deep_equals(node):
                node = result
                self.fixed.append(finding)
                self.claimed.add(id(finding))
                done.append(finding)
        if done:
            self.rewritten[id(node)] = (updated, done)
        return node


def can_fix(finding: Finding, fixable) -> bool:
    """Whether the finding's code has a fix that applies to it: not one reached
    through a project wrapper (``evidence["through"]``): the call rewritten
    would be the wrapper's, whose arguments are not SDPA's."""
    return finding.code in fixable and "through" not in finding.evidence


def _keep_tail(source: str, new_source: str) -> str:
    """``new_source`` ending in the line breaks ``source`` ends in.  LibCST drops
    a final lone ``\r`` (a file with old-Mac line endings, or a mixed one):
    a fix never touches the end of a file, so its last line breaks are put
    back exactly as they were."""
    tail = source[len(source.rstrip("\r\n")) :]
    if new_source[len(new_source.rstrip("\r\n")) :] == tail:
        return new_source
    return new_source.rstrip("\r\n") + tail


@dataclass
class FixResult:
    """What ``fix_text`` made: the text, the findings fixed, and the findings
    whose fix was not applied with the reason (one line)."""

    text: str
    fixed: List[Finding] = field(default_factory=list)
    refused: List[Tuple[Finding, str]] = field(default_factory=list)


def fix_source(
    source: str, findings: Sequence[Finding], path: str = "<string>"
) -> Tuple[str, List[Finding]]:
    """The source with every safe fix for ``findings`` applied, and the findings
    fixed, with no line length to keep (``fix_text`` keeps one).

    A result that does not parse is thrown away whole (the source comes back
    unchanged)."""
    result = fix_text(source, findings, path, None)
    return result.text, result.fixed


def fix_text(
    source: str,
    findings: Sequence[Finding],
    path: str = "<string>",
    max_line_length: Optional[int] = None,
) -> FixResult:
    """``fix_source``, keeping to the configured line length ``max_line_length``
    (None or 0: none configured, and no line is broken: flake8's default of 79
    is not assumed, as a project that never sets it is often formatted to 88
    by black and does not run E501)."""
    fixable = fixable_codes()  # loads the rule modules, which declare the fixes
    wanted = [f for f in findings if can_fix(f, fixable)]
    if not wanted:
        return FixResult(source)
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return FixResult(source)
    by_position: Dict[Tuple[int, int], List[Finding]] = {}
    for f in sorted(wanted, key=lambda f: f.code):
        by_position.setdefault((f.line, f.col), []).append(f)
    flow = FlowPass()
    try:
        flow.run(module)
    except RecursionError:  # pragma: no cover - the engine analyzed it on a deeper stack
        return FixResult(source)
    transformer = _FixTransformer(by_position, flow)
    # no copy: the flow pass's sites are keyed by these very nodes
    new_module = MetadataWrapper(module, unsafe_skip_copy=True).visit(transformer)
    fixed = list(transformer.fixed)
    refused: List[Tuple[Finding, str]] = []
    if fixed and max_line_length:
        new_module, refused = _keep_to(new_module, source, transformer.rewritten, max_line_length)
        gone = {id(f) for f, _ in refused}
        fixed = [f for f in fixed if id(f) not in gone]
    new_source = _keep_tail(source, new_module.code)
    if not fixed or new_source == source:
        return FixResult(source, [], refused)
    try:
        cst.parse_module(new_source)
        compile(new_source, path, "exec", dont_inherit=True)
    except (cst.ParserSyntaxError, SyntaxError, ValueError):
        return FixResult(source)
    return FixResult(new_source, fixed, refused)


# -- the line length ---------------------------------------------------------------


def _too_long(code: str, before: set, limit: int) -> List[int]:
    """Lines (1-based) of ``code`` over ``limit`` that are not lines of the
    original text: a line that was already long is not the fix's doing."""
    out = []
    for n, line in enumerate(source_lines(code), 1):
        text = line.rstrip("\r\n")
        if len(text) > limit and text not in before:
            out.append(n)
    return out


def _keep_to(
    module: cst.Module,
    source: str,
    rewritten: Dict[int, Tuple[cst.Call, List[Finding]]],
    limit: int,
) -> Tuple[cst.Module, List[Tuple[Finding, str]]]:
    """Break each rewritten call that makes a line too long, black's way; put
    back (unfixed) one that cannot be made to fit, with the reason."""
    before = {line.rstrip("\r\n") for line in source_lines(source)}
    refused: List[Tuple[Finding, str]] = []
    if not _too_long(module.code, before, limit):
        return module, refused
    for node_id, (original, findings) in list(rewritten.items()):
        node = _find(module, node_id)
        if node is None:
            continue
        spans = _lines_of(module, node)
        long = set(_too_long(module.code, before, limit)) & set(spans)
        if not long:
            continue
        new_module = None
        widest = _widest(module.code, long)
        broken_widest = None
        for style in ("hug", "exploded"):
            got = _broken(module, node, style)
            if got is None:
                break
            candidate, moved = got
            lines = _lines_of(candidate, moved)
            over = set(_too_long(candidate.code, before, limit)) & set(lines)
            if lines and not over:
                new_module = candidate
                break
            broken_widest = _widest(candidate.code, over) if over else None
        if new_module is not None:
            module = new_module
            continue
        module = _replace(module, node, original)
        if broken_widest is not None:
            reason = (
                f"broken inside its brackets as black would, the fixed call still has a line "
                f"{broken_widest} characters long, over max-line-length {limit}"
            )
        else:
            reason = (
                f"the fixed call would make a line {widest} characters long, over "
                f"max-line-length {limit}, and it cannot be broken safely (a comment inside "
                f"it, or it does not start its line)"
            )
        refused += [(f, reason) for f in findings]
    return module, refused


def _widest(code: str, numbers) -> int:
    lines = source_lines(code)
    return max(len(lines[n - 1].rstrip("\r\n")) for n in numbers)


class _Finder(cst.CSTVisitor):
    def __init__(self, node_id: int):
        super().__init__()
        self.node_id = node_id
        self.found: Optional[cst.CSTNode] = None

    def on_visit(self, node: cst.CSTNode) -> bool:
        if id(node) == self.node_id:
            self.found = node
            return False
        return self.found is None


def _find(module: cst.Module, node_id: int) -> Optional[cst.CSTNode]:
    finder = _Finder(node_id)
    module.visit(finder)
    return finder.found


def _lines_of(module: cst.Module, node: cst.CSTNode) -> List[int]:
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    where = positions.get(node)
    if where is None:
        return []
    return list(range(where.start.line, where.end.line + 1))


class _Replace(cst.CSTTransformer):
    def __init__(self, old: cst.CSTNode, new: cst.CSTNode):
        super().__init__()
        self.old, self.new = old, new

    def on_leave(self, original, updated):
        return self.new if original is self.old else updated


def _replace(module: cst.Module, old: cst.CSTNode, new: cst.CSTNode) -> cst.Module:
    return module.visit(_Replace(old, new))


def _has_comment(node: cst.CSTNode) -> bool:
    found = []

    class _Comments(cst.CSTVisitor):
        def visit_Comment(self, comment: cst.Comment) -> None:
            found.append(comment)

    node.visit(_Comments())
    return bool(found)


def _starts_its_line(module: cst.Module, node: cst.CSTNode) -> Optional[str]:
    """The indentation of the line the call starts on, when that line is the
    first line of its statement (so the block's indentation is the line's)."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    where = positions.get(node)
    if where is None:
        return None
    line = source_lines(module.code)[where.start.line - 1]
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    for other, span in positions.items():
        if isinstance(other, cst.SimpleStatementLine) and span.start.line == where.start.line:
            return indent
    return None


def _broken(
    module: cst.Module, call: cst.CSTNode, style: str
) -> Optional[Tuple[cst.Module, cst.Call]]:
    """``module`` with ``call`` broken inside its parentheses: ``hug`` puts the
    arguments on one line of their own, ``exploded`` one a line with a trailing
    comma.  None when it cannot be done safely (a comment inside the call, no
    arguments, a call that does not start its statement's line)."""
    if not isinstance(call, cst.Call) or not call.args or _has_comment(call):
        return None
    if _starts_its_line(module, call) is None:
        return None
    unit = module.default_indent

    def down(extra: str) -> cst.ParenthesizedWhitespace:
        # cst.Newline(None) writes the module's own line ending
        return cst.ParenthesizedWhitespace(
            first_line=cst.TrailingWhitespace(newline=cst.Newline(None)),
            indent=True,
            last_line=cst.SimpleWhitespace(extra),
        )

    args = list(call.args)
    out = []
    for i, arg in enumerate(args):
        last = i == len(args) - 1
        if style == "hug":
            comma = (
                cst.MaybeSentinel.DEFAULT
                if last
                else cst.Comma(cst.SimpleWhitespace(""), cst.SimpleWhitespace(" "))
            )
            after = down("") if last else cst.SimpleWhitespace("")
        else:
            comma = cst.Comma(cst.SimpleWhitespace(""), down("" if last else unit))
            after = cst.SimpleWhitespace("")
        out.append(arg.with_changes(comma=comma, whitespace_after_arg=after))
    broken = call.with_changes(args=out, whitespace_before_args=down(unit))
    return _replace(module, call, broken), broken
