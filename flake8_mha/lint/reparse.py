"""Parse again only what changed, in a process that lints the same file again.

An editor that runs flake8 in a long-lived process (VS Code's flake8
extension) lints a file after each edit, and an edit changes one top-level
statement of it.  LibCST's parse is the largest part of the analysis, and
the other statements' parses would be the same trees.  From the second lint
of a path on, the focused text (``focus.py``) is cut at top-level statements
into chunks; each chunk's parse is kept in memory, keyed by its text, and
the module is put together from the chunks' trees.  The result is the tree a
parse of the whole text gives, node for node (``tests/test_reparse.py``
compares them on every fixture and on torch's attention files), so the
findings, their lines and their columns are the same.

A cut is made only where the parse of the whole cannot attach anything
across it: before a statement at column 0 whose preceding lines, back to the
previous statement's end, are blank or comments at column 0.  A file whose
chunks disagree on the indentation or the newline is parsed whole, as is
every file the process lints for the first time (a run over a tree keeps
nothing).  What is kept is bounded by ``MAX_KEPT_CHARS`` of chunk text.

A large text (``LARGE_TEXT``) is cut the same way the first time too, and
its pieces are parsed one after the other and put together, keeping
nothing: the native parser's memory then peaks at a piece's, not at the
whole file's (a generated 3 MB file: 2.7 GB of peak memory with one parse).
"""

from __future__ import annotations

import ast
from collections import OrderedDict
from typing import Dict, List, Optional

import libcst as cst

from ..core.lines import source_lines

MAX_KEPT_CHARS = 4_000_000  # of chunk text whose trees are kept
# a text this large is parsed by pieces of about PIECE_CHARS even when linted
# once: LibCST's native parser holds several times a text's size while it
# parses (a 3 MB file: 1.4 GB), and pieces bound that to a piece's
LARGE_TEXT = 256 * 1024
PIECE_CHARS = 64 * 1024
MAX_PATHS = 256  # paths remembered as linted once
_kept: "OrderedDict[str, cst.Module]" = OrderedDict()
_kept_chars = [0]
_linted: Dict[str, None] = {}


def parse(text: str, tree: Optional[ast.Module], path: str) -> cst.Module:
    """The LibCST module of ``text`` (the focused text of the file at
    ``path``, whose ``ast`` is ``tree``, same lines)."""
    again = path in _linted
    if not again:
        if len(_linted) >= MAX_PATHS:
            del _linted[next(iter(_linted))]
        _linted[path] = None
    large = len(text) >= LARGE_TEXT
    if (not again and not large) or tree is None:
        return cst.parse_module(text)
    chunks = cut(text, tree)
    if len(chunks) < 2:
        return cst.parse_module(text)
    used: set = set()
    try:
        if again:
            got = assemble([_parsed(c, used) for c in chunks])
        else:  # a large text linted once: parsed by pieces, nothing kept
            got = assemble([_fresh(c) for c in _grouped(chunks)])
    except (cst.ParserSyntaxError, _NoRoundTrip):  # the whole parse, its error at its place
        got = None
    return got if got is not None else cst.parse_module(text)


def _fresh(chunk: str, always: bool = False) -> cst.Module:
    """The chunk's tree; ``_NoRoundTrip`` when it does not give the text back
    (checked ``always``, else only for the ends that may not)."""
    got = cst.parse_module(chunk)
    if (always or _may_not_round_trip(chunk)) and got.code != chunk:
        raise _NoRoundTrip
    return got


def _may_not_round_trip(chunk: str) -> bool:
    """Whether ``chunk`` ends the way LibCST may not give back: blank lines
    at its end that hold more than line breaks (``_NoRoundTrip``).  Every
    other piece is its text again (a piece of a large file is not generated
    again to check: that doubled its parse)."""
    tail = chunk[len(chunk.rstrip()) :]
    return tail.strip("\r\n") != ""


def _grouped(chunks: List[str]) -> List[str]:
    """Neighbouring chunks joined up to ``PIECE_CHARS`` (a cut between two
    chunks is safe, so is no cut)."""
    out: List[str] = []
    size = PIECE_CHARS + 1
    for c in chunks:
        if size + len(c) > PIECE_CHARS:
            out.append(c)
            size = len(c)
        else:
            out[-1] += c
            size += len(c)
    return out


class _NoRoundTrip(Exception):
    """A chunk whose tree does not give its text back (LibCST drops a
    whitespace-only line that ends a text after a blank one): the whole text
    is parsed instead."""


def again(path: str) -> bool:
    """Whether this process has linted the file at ``path`` before."""
    return path in _linted


def forget() -> None:
    """Drop every kept tree (tests; a process that wants its memory back)."""
    _kept.clear()
    _kept_chars[0] = 0
    _linted.clear()


def _parsed(chunk: str, used: set) -> cst.Module:
    """The chunk's tree, kept or parsed; a tree is used once per module (the
    analyses key what they learn by node identity: two equal statements of
    one file must be two nodes)."""
    got = _kept.get(chunk)
    if got is not None and id(got) not in used:
        _kept.move_to_end(chunk)
        used.add(id(got))
        return got
    got = _fresh(chunk, always=True)  # a kept tree is checked whatever its end
    used.add(id(got))
    if chunk not in _kept and len(chunk) <= MAX_KEPT_CHARS // 4:
        _kept[chunk] = got
        _kept_chars[0] += len(chunk)
        while _kept_chars[0] > MAX_KEPT_CHARS and _kept:
            old, _ = _kept.popitem(last=False)
            _kept_chars[0] -= len(old)
    return got


def cut(text: str, tree: ast.Module) -> List[str]:
    """``text`` in chunks, each starting at a top-level statement where a cut
    is safe (see the module's docstring); one chunk when there is none."""
    lines = source_lines(text)  # as Python numbers them: not at form feeds
    starts: List[int] = []  # 0-based line indexes where a chunk starts
    last_end = -1  # the previous kept statement's last line (0-based)
    for stmt in tree.body:
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", ())]) - 1
        end = (stmt.end_lineno or stmt.lineno) - 1
        if first >= len(lines) or not lines[first].strip():
            continue  # blanked by focus: its lines are part of whatever is around
        if first > last_end >= 0 and _free(lines, last_end + 1, first):
            if lines[first][:1] not in (" ", "\t") and first > 0:
                starts.append(first)
        last_end = max(last_end, end)
    if not starts:
        return [text]
    bounds = [0] + starts + [len(lines)]
    return ["".join(lines[a:b]) for a, b in zip(bounds, bounds[1:])]


def _free(lines: List[str], a: int, b: int) -> bool:
    """Lines ``a`` to ``b - 1`` are blank or comments at column 0."""
    for line in lines[a:b]:
        stripped = line.strip()
        if stripped and not line.startswith("#"):
            return False
    return True


def assemble(modules: List[cst.Module]) -> Optional[cst.Module]:
    """One module of the chunks' modules, the trivia between chunks moved
    where a parse of the whole puts it (the next statement's leading lines);
    None when the chunks do not agree on indentation and newline."""
    first = modules[0]
    indent = None
    body: list = []
    pending: tuple = ()
    for i, m in enumerate(modules):
        if m.default_newline != first.default_newline or (i and not m.body):
            return None
        if any(isinstance(s, cst.BaseCompoundStatement) for s in m.body):
            if indent is not None and m.default_indent != indent:
                return None
            indent = m.default_indent
        if i == 0:
            body.extend(m.body)
        else:
            head = m.body[0]
            lead = (*pending, *m.header, *head.leading_lines)
            body.append(head.with_changes(leading_lines=lead))
            body.extend(m.body[1:])
        pending = tuple(m.footer)
    return first.with_changes(
        body=body,
        footer=pending,
        default_indent=indent or first.default_indent,
        has_trailing_newline=modules[-1].has_trailing_newline,
    )
