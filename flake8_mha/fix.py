"""Applying the rules' autofixes: ``flake8-mha check --fix`` / ``--diff``.

Each rule module declares its own fix beside the rule (see
``flake8_mha.rules.autofix`` for what a fix is made of).  Here the fixes are
applied: the ``cst.Call`` a finding points at is found again by its start
position (LibCST's PositionProvider) and handed to the fix of its code.
Everything else in the file is left byte for byte: LibCST keeps formatting
and comments.
"""

from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from .findings import Finding
from .flow import FlowPass
from .resolve import Resolver
from .rules.autofix import FIXES, NEVER_FIXED, Fix, FixContext, fixable_codes, register

__all__ = ["FIXES", "NEVER_FIXED", "Fix", "FixContext", "fixable_codes", "register", "fix_source"]


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
                site = self.resolver.site_of.get(id(original))
                ctx = FixContext(self, original, finding, site, self.resolver)
                result = fix.apply(node, ctx)
            except Exception:  # a fix that cannot cope leaves the code as it was
                result = None
            if result is not None and not result.deep_equals(node):
                node = result
                self.fixed.append(finding)
                self.claimed.add(id(finding))
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


def fix_source(
    source: str, findings: Sequence[Finding], path: str = "<string>"
) -> Tuple[str, List[Finding]]:
    """The source with every safe fix for ``findings`` applied, and the findings fixed.

    A result that does not parse is thrown away whole (the source comes back
    unchanged)."""
    fixable = fixable_codes()  # loads the rule modules, which declare the fixes
    wanted = [f for f in findings if can_fix(f, fixable)]
    if not wanted:
        return source, []
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return source, []
    by_position: Dict[Tuple[int, int], List[Finding]] = {}
    for f in sorted(wanted, key=lambda f: f.code):
        by_position.setdefault((f.line, f.col), []).append(f)
    flow = FlowPass()
    try:
        flow.run(module)
    except RecursionError:  # pragma: no cover - the engine analyzed it on a deeper stack
        return source, []
    transformer = _FixTransformer(by_position, flow)
    # no copy: the flow pass's sites are keyed by these very nodes
    new_module = MetadataWrapper(module, unsafe_skip_copy=True).visit(transformer)
    new_source = _keep_tail(source, new_module.code)
    if not transformer.fixed or new_source == source:
        return source, []
    try:
        cst.parse_module(new_source)
        compile(new_source, path, "exec", dont_inherit=True)
    except (cst.ParserSyntaxError, SyntaxError, ValueError):
        return source, []
    return new_source, transformer.fixed
