"""Where nodes start, as LibCST's ``PositionProvider`` says, for a fraction of its cost.

``PositionProvider`` builds a range object for every node of the file and
walks the tree a second time to hand them out; resolving it for one
file's evidence cost more than the file's parse (a 0.5 MB file: 9 s of 20).
Here one lean codegen pass records each node's start (line, 0-based
column) by ``id``, exactly where ``PositionProvidingCodegenState`` would put
it: the syntactic start a node declares (``record_syntactic_position``,
possibly hoisted from a child), else where its code begins.

``start_positions`` answers for a few nodes and stops once they are all
done (the reported findings).  ``line_of`` answers for any node of the file
being analyzed (or of the few other files a helper was read in), from one
full pass made the first time it is asked and kept until the engine
``forget``s the file: the mask, layout and GQA analyses all ask it for the
lines their evidence names.

It leans on LibCST's codegen hooks; if they ever change, the public provider
is used.
"""

from __future__ import annotations

import contextlib
import re
from typing import Dict, List, Optional, Sequence, Tuple

import libcst as cst

Starts = Dict[int, Tuple[int, int]]
# [(module, its starts)], the last asked first: the file being analyzed, and the
# other files whose lines its evidence names (a helper read in another file)
_last: List[Tuple[cst.Module, "Starts"]] = []
_KEPT = 3


def start_positions(module: cst.Module, nodes: Sequence[cst.CSTNode]) -> Starts:
    """``id(node) -> (line, 0-based column)`` for each of ``nodes``."""
    known = _kept(module)
    if known is not None and all(id(n) in known for n in nodes):
        return known
    if _StartFinder is not None:
        finder = _StartFinder(module, {id(n) for n in nodes})
        try:
            module._codegen(finder)
        except _AllFound:
            pass
        except Exception:  # pragma: no cover - a LibCST whose codegen hooks differ
            finder = None
        if finder is not None and all(id(n) in finder.starts for n in nodes):
            return finder.starts
    return _provider(module, nodes)


def all_starts(module: cst.Module) -> Starts:
    """Every node's start, computed once for the file being analyzed."""
    starts = _kept(module)
    if starts is None:
        if _StartFinder is not None:
            finder = _StartFinder(module, set())
            try:
                module._codegen(finder)
                starts = finder.starts
            except Exception:  # pragma: no cover - a LibCST whose codegen hooks differ
                starts = None
        if starts is None:  # pragma: no cover
            from libcst.metadata import MetadataWrapper, PositionProvider

            found = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
            starts = {id(n): (p.start.line, p.start.column) for n, p in found.items()}
        _last.insert(0, (module, starts))
        del _last[_KEPT:]
    return starts


def _kept(module: cst.Module) -> Optional[Starts]:
    for i, (kept, starts) in enumerate(_last):
        if kept is module:
            if i:
                _last.insert(0, _last.pop(i))
            return starts
    return None


def line_of(module: cst.Module, node: cst.CSTNode) -> Optional[int]:
    """The line ``node`` starts on, or None for a node that is not in ``module``."""
    start = all_starts(module).get(id(node))
    return start[0] if start is not None else None


def forget() -> None:
    """The file is done: let its trees go."""
    _last.clear()


def _provider(module: cst.Module, nodes: Sequence[cst.CSTNode]) -> Starts:
    from libcst.metadata import MetadataWrapper, PositionProvider

    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return {id(n): (positions[n].start.line, positions[n].start.column) for n in nodes}


class _AllFound(Exception):
    pass


try:
    from libcst._nodes.internal import CodegenState as _CodegenState
except ImportError:  # pragma: no cover
    _StartFinder = None
else:
    _NEWLINE = re.compile(r"\r\n?|\n")

    class _StartFinder(_CodegenState):  # type: ignore[misc]
        """Codegen state that records node starts exactly as LibCST's
        ``PositionProvidingCodegenState`` does: the syntactic start where a node
        declares one (``record_syntactic_position``, possibly hoisted from a
        child), else where its code begins."""

        __slots__ = ("line", "column", "stack", "starts", "wanted", "left")

        def __init__(self, module: cst.Module, wanted: set) -> None:
            super().__init__(
                default_indent=module.default_indent, default_newline=module.default_newline
            )
            self.line = 1
            self.column = 0
            self.stack: List[Tuple[int, int]] = []
            self.starts: Dict[int, Tuple[int, int]] = {}
            self.wanted = wanted
            self.left = len(wanted)

        def _advance(self, value: str) -> None:
            if "\n" in value or "\r" in value:
                segments = _NEWLINE.split(value)
                self.line += len(segments) - 1
                self.column = len(segments[-1])
            else:
                self.column += len(value)

        # the code itself is not kept (``tokens`` stays empty): only where it goes.
        # LibCST's codegen reads ``tokens`` once, after the last statement, to
        # place the final newline of a file without any, which moves no node
        def add_indent_tokens(self) -> None:
            for token in self.indent_tokens:
                self._advance(token)

        def add_token(self, value: str) -> None:
            self._advance(value)

        def before_codegen(self, node: cst.CSTNode) -> None:
            self.stack.append((self.line, self.column))

        def after_codegen(self, node: cst.CSTNode) -> None:
            key = id(node)
            self.starts.setdefault(key, self.stack.pop())
            if key in self.wanted:
                self.wanted.discard(key)  # a node met twice counts once
                self.left -= 1
                if self.left == 0:
                    raise _AllFound

        def record_syntactic_position(self, node: cst.CSTNode, *, start_node=None, end_node=None):
            # called for most nodes: a plain context manager, not a generator one.  A node
            # starts here, unless it names the child it starts with (known once that is done)
            if start_node is None:
                self.starts[id(node)] = (self.line, self.column)
                return _NOTHING
            return _FromChild(self.starts, id(node), id(start_node))

    _NOTHING = contextlib.nullcontext()  # reusable: it holds no state

    class _FromChild:
        __slots__ = ("starts", "node", "child")

        def __init__(self, starts: Starts, node: int, child: int) -> None:
            self.starts, self.node, self.child = starts, node, child

        def __enter__(self) -> None:
            pass

        def __exit__(self, *exc) -> None:
            if self.child in self.starts:
                self.starts[self.node] = self.starts[self.child]
