"""Parse less: only the definitions that can matter, at the same lines and columns.

LibCST's parse is the analyzer's main cost, and most functions and methods
of a file that passes the text pre-filter never touch attention.  ``focus``
screens the file with Python's own ``ast`` (flake8 hands it over for free)
and blanks out every function, class and method that cannot change a
finding, keeping every other statement on its original lines and columns, so
positions are unchanged and nothing needs mapping back.

What is always kept: every statement that is not a definition (imports,
module-level and class-level assignments, ``if``/``try`` blocks, expression
statements), every class header, and every definition that

- holds a trigger word of the text pre-filter (``torch_api.TRIGGER_WORDS``,
  as a substring: ``TransformerEncoderLayer``, ``n_kv_heads``), or a word a
  rule reacts to beyond them (``where`` sinks, the K/V expanders, ``eval``,
  ``training``, ...), or a word that rebinds names behind the analysis'
  back (``global``, ``setattr``, ``__dict__``, ...);
- is named by kept code (a helper called by relevant code, a class it
  builds, a method it calls);
- names a definition that is kept, or a name that a kept module-level
  statement with a trigger word or a project wrapper's name binds
  (``model = Classifier(...)`` in a training script; ``from ... import
  scaled_dot_product_attention as sdpa``);
- shares a ``self.NAME`` attribute with kept code (the method that calls
  ``self.attn`` that ``__init__`` builds, or that sets a value it reads).

A module-level statement of more than ``_BIG_STATEMENT`` lines is data
(torch's ``op_db``: one list of 25,000 lines): the elements of its list,
tuple and set literals that hold no trigger or kept word become ``0`` at
their place, so only the entries that name attention are parsed, and the
closure does not keep the helpers the dropped entries name.

The rule is a fixpoint: what is kept can pull in more.  A blanked definition
can only make something unknown, and unknown never fires; the words are
matched as text (comments and strings included), which can keep more than
needed, never less.  ``tests/test_focus_parity.py`` compares the findings
with and without ``focus`` on every fixture and on torch's attention files,
and ``bench/focus_parity.py`` over the real-world corpus.

``FOCUS`` is the switch the parity checks flip to get the full parse.
"""

from __future__ import annotations

import ast
import re
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

from ..core import walk as astwalk
from ..core.lines import source_lines
from .program.summaries import statements
from ..core.torch_api import TRIGGER_WORDS

FOCUS = True  # False: every file is parsed whole (the reference the parity checks use)

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ATTRIBUTE = re.compile(r"(\bself\s*)?\.\s*([A-Za-z_][A-Za-z0-9_]*)")
_SELF_CALL = re.compile(r"\bself\s*\(")
_DOTTED = re.compile(r"\.\s*([A-Za-z_][A-Za-z0-9_]*)")

# Words beyond the trigger words that keep a definition whole: the calls the
# rules react to without a trigger word in sight (mask fills through
# ``torch.where``, K/V head expansion), the train/eval switches the dropout
# rule reads, and whatever can rebind a name or an attribute where the flow
# pass does not look.
KEEP_WORDS: FrozenSet[str] = frozenset(
    {
        "where",
        "masked_fill_",
        "repeat",
        "repeat_interleave",
        "tile",
        "expand",
        "cat",
        "concat",
        "einops",
        "rearrange",
        "enable_gqa",
        "training",
        "train",
        "eval",
        "global",
        "nonlocal",
        "setattr",
        "getattr",
        "delattr",
        "__setattr__",
        "__getattr__",
        "__getattribute__",
        "__dict__",
        "__class__",
        "globals",
        "locals",
        "vars",
        "exec",
        "register_forward_hook",
        "register_module_forward_hook",
    }
)


class _Unit:
    """One definition that may be blanked: a function, a class or a method."""

    __slots__ = (
        "node",
        "first",
        "last",
        "name",
        "words",
        "attrs",
        "dotted",
        "kept",
        "children",
        "trigger",
        "outer",
        "base",
        "kept_attrs",
        "calls_self",
    )

    def __init__(
        self,
        node: ast.stmt,
        first: int,
        last: int,
        text: str,
        words: Sequence[str],
        keep: FrozenSet[str] = KEEP_WORDS,
    ):
        self.node = node
        self.first = first  # 0-based first line (its first decorator's)
        self.last = last  # 0-based last line, inclusive
        self.name: str = node.name  # type: ignore[attr-defined]
        self.words = set(_WORD.findall(text))
        self.dotted, self.attrs = _attributes(text)  # .NAME, self.NAME
        self.trigger = any(w in text for w in words) or not self.words.isdisjoint(keep)
        self.kept = False
        self.children: List["_Unit"] = []
        self.outer: Optional["_Unit"] = None  # the class this method is in
        self.base = False  # a class whose own text (bases, class statements) has a trigger
        self.kept_attrs: Set[str] = set()  # a class's: self.NAME of its kept text
        self.calls_self = _SELF_CALL.search(text) is not None  # ``self(window)``: its forward


def focus(
    source: str,
    tree: Optional[ast.Module] = None,
    words: Sequence[str] = TRIGGER_WORDS,
    keep: Iterable[str] = (),
) -> str:
    """``source`` with the definitions that cannot matter replaced by blank lines.

    ``keep``: more names that keep the code using them (beyond ``KEEP_WORDS``):
    the project's attention wrappers this file imports (``program/callsites.py``)."""
    if not FOCUS:
        return source
    if tree is None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return source
    units: List[_Unit] = []
    try:
        keep_words = KEEP_WORDS | frozenset(keep)
        return _focus(source, source_lines(source), tree, words, keep_words, units)
    except (RecursionError, _Unscreenable):  # pragma: no cover - parse it whole
        return source
    finally:  # a unit and its children point at each other: freed now, not by a collection
        for unit in units:
            unit.children = unit.outer = None


def _focus(
    source: str,
    original: List[str],
    tree: ast.Module,
    words: Sequence[str],
    keep: FrozenSet[str] = KEEP_WORDS,
    units: Optional[List[_Unit]] = None,
) -> str:
    """``units``: filled with every definition, classes before their methods."""
    lines = _code_lines(original, tree)  # what the words are looked for in
    wrappers = keep - KEEP_WORDS
    top: List[_Unit] = []
    units = [] if units is None else units
    stmts: List[_Stmt] = []  # module-level statements: those that may go, and the others
    shared = _shared_lines(tree.body)

    def text_of(first: int, last: int) -> str:
        return "".join(lines[first : last + 1])

    def scan(body: Iterable[ast.stmt], outer: Optional[_Unit]) -> None:
        for stmt in body:
            end = getattr(stmt, "end_lineno", None)
            if end is None:  # pragma: no cover - an ast without end positions
                raise _Unscreenable
            if isinstance(stmt, _DEFS):
                first = min([stmt.lineno] + [d.lineno for d in stmt.decorator_list]) - 1
                is_class = isinstance(stmt, ast.ClassDef) and stmt.body
                # a class's own text: its header and its statements that are not
                # definitions (a trigger in a method keeps that method, not the rest)
                last = stmt.body[0].lineno - 2 if is_class else end - 1  # type: ignore[union-attr]
                unit = _Unit(stmt, first, end - 1, text_of(first, last), words, keep)
                unit.outer = outer
                units.append(unit)
                (top if outer is None else outer.children).append(unit)
                if is_class:
                    unit.base = unit.trigger and any(w in text_of(first, last) for w in words)
                    scan(stmt.body, unit)  # type: ignore[union-attr]  # noqa: F821 (del below)
                continue
            text = text_of(stmt.lineno - 1, end - 1)
            if outer is None:
                code = _code_text(text)
                found = set(_WORD.findall(code))
                targets = _targets(stmt) if isinstance(stmt, _SIMPLE) else set()
                st = _Stmt(stmt, found, set(_DOTTED.findall(code)), targets)
                st.bound = _bound(stmt, ":=" in text)
                # ``model = Classifier(...)`` of a project wrapper (``keep`` beyond
                # ``KEEP_WORDS``): what it binds is relevant, as a trigger's is
                st.trigger = any(w in text for w in words) or not found.isdisjoint(wrappers)
                # always kept: imports, compound statements, triggers, reflective code
                st.kept = not (
                    isinstance(stmt, _SIMPLE)
                    and stmt.lineno not in shared
                    and end not in shared
                    and not st.trigger
                    and found.isdisjoint(keep)
                )
                stmts.append(st)
            else:
                outer.words.update(_WORD.findall(text))
                dotted, attrs = _attributes(text)
                outer.dotted.update(dotted)
                outer.attrs.update(attrs)
                if any(w in text for w in words) or not outer.words.isdisjoint(keep):
                    outer.base = outer.trigger = True

    scan(tree.body, None)
    del scan  # a recursive closure is a cycle: end it
    elements = _idle_elements(stmts, lines, original, words, keep)
    if elements:  # what the kept text of a pruned statement names, without the data
        pruned = _without(lines, [e for e, _ in elements])
        for st in {id(st): st for _, st in elements}.values():
            code = _code_text("".join(pruned[st.first : st.last + 1]))
            st.words, st.dotted = set(_WORD.findall(code)), set(_DOTTED.findall(code))
    if not units and not elements and all(st.kept for st in stmts):
        return source
    _Closure(units, stmts).run()
    drop: List[object] = []

    def collect(unit: _Unit) -> None:
        if not unit.kept:
            drop.append(unit)
            return
        for child in unit.children:
            collect(child)  # noqa: F821 (del below)

    for unit in top:
        collect(unit)
    del collect
    drop.extend(st for st in stmts if not st.kept)
    elements = [e for e, st in elements if st.kept]
    if not drop and not elements:
        return source
    return _blank(original, drop, elements)  # type: ignore[arg-type]


class _Closure:
    """What is kept, grown to a fixpoint with a work list: a set grows by a word,
    and only what waits for that word is looked at again."""

    def __init__(self, units: List[_Unit], stmts: List["_Stmt"]) -> None:
        self.units = units
        self.stmts = stmts
        self.kept_words: Set[str] = set()  # names kept code uses
        self.kept_dotted: Set[str] = set()  # attributes (``.NAME``) kept code reads or calls
        # relevant names: kept module-level definitions, what module statements with a
        # trigger bind, and what statements built from relevant names bind
        self.names: Set[str] = set()
        self.on_word: Dict[str, List[object]] = {}
        self.on_dotted: Dict[str, List[object]] = {}
        self.on_name: Dict[str, List[object]] = {}
        self.on_attr: Dict[Tuple[int, str], List[object]] = {}
        self.queue: List[object] = []

    def run(self) -> None:
        for unit in self.units:
            for w in unit.words:
                self.on_name.setdefault(w, []).append(unit)
            if unit.outer is None:
                self.on_word.setdefault(unit.name, []).append(unit)
            else:
                for a in unit.attrs:
                    self.on_attr.setdefault((id(unit.outer), a), []).append(unit)
            self.on_dotted.setdefault(unit.name, []).append(unit)
        for st in self.stmts:
            for w in st.words:
                self.on_name.setdefault(w, []).append(st)
            if not st.kept:
                for t in st.targets:
                    self.on_word.setdefault(t, []).append(st)
        for st in self.stmts:
            if st.kept:
                self._keep_stmt(st)
            if st.trigger:
                self._add_names(st.bound)
        for unit in self.units:
            if unit.trigger and not unit.kept:
                self._keep(unit)
        self.queue.extend(self.units)
        self.queue.extend(self.stmts)
        while self.queue:
            item = self.queue.pop()
            if isinstance(item, _Unit):
                if not item.kept and self._wanted(item):
                    self._keep(item)
            else:
                st = item  # type: ignore[assignment]
                if not st.kept and (  # type: ignore[attr-defined]
                    not st.targets.isdisjoint(self.kept_words)  # type: ignore[attr-defined]
                    or not st.words.isdisjoint(self.names)  # type: ignore[attr-defined]
                ):
                    self._keep_stmt(st)  # type: ignore[arg-type]
                if st.kept and not st.words.isdisjoint(self.names):  # type: ignore[attr-defined]
                    self._add_names(st.bound)  # type: ignore[attr-defined]

    def _wake(self, index: Dict, key) -> None:
        waiting = index.pop(key, None)
        if waiting:
            self.queue.extend(waiting)

    def _add_words(self, found: Set[str]) -> None:
        for w in found - self.kept_words:
            self.kept_words.add(w)
            self._wake(self.on_word, w)

    def _add_dotted(self, found: Set[str]) -> None:
        for w in found - self.kept_dotted:
            self.kept_dotted.add(w)
            self._wake(self.on_dotted, w)

    def _add_names(self, found: Set[str]) -> None:
        for w in found - self.names:
            self.names.add(w)
            waiting = self.on_name.get(w)  # kept statements look again: not popped
            if waiting:
                self.queue.extend(waiting)

    def _keep_stmt(self, st: "_Stmt") -> None:
        st.kept = True
        self._add_words(st.words)
        self._add_dotted(st.dotted)

    def _keep(self, unit: _Unit) -> None:
        unit.kept = True
        self._add_words(unit.words)
        self._add_dotted(unit.dotted)
        outer = unit.outer
        if outer is None:
            self._add_names({unit.name})
        else:
            # its self.NAMEs, and its own name: a method that calls it (``self.NAME(...)``)
            # is a caller whose arguments the analysis follows into it
            for a in (unit.attrs | {unit.name}) - outer.kept_attrs:
                outer.kept_attrs.add(a)
                self._wake(self.on_attr, (id(outer), a))
            if not outer.kept:
                self.queue.append(outer)
        if isinstance(unit.node, ast.ClassDef):
            unit.kept_attrs.update(unit.attrs)
            self.queue.extend(unit.children)

    def _wanted(self, unit: _Unit) -> bool:
        if any(c.kept for c in unit.children):  # a kept method keeps its class
            return True
        names = self.names
        if not unit.words.isdisjoint(names):  # uses a relevant name
            return True
        outer = unit.outer
        if outer is None:  # a module-level definition: named by kept code
            return unit.name in self.kept_words or unit.name in self.kept_dotted
        if not outer.kept:
            return False
        return (
            unit.name in self.kept_dotted  # a method kept code calls
            or not unit.attrs.isdisjoint(outer.kept_attrs)  # shares self.NAME with kept code
            or "super" in unit.words  # reaches the relevant bases
            or unit.name
            in ("forward", "__call__")  # what a call of the kept class's instances runs
            or unit.calls_self  # ``self(window)`` in ``training_step``: runs the forward
            or "classmethod" in unit.words  # ``cls(200, 6)``: builds the kept class
            or outer.base  # an attention module's subclass is kept whole
            or any(w in names for w in outer.words if w != outer.name)  # a kept class's subclass
        )


def _attributes(text: str) -> Tuple[Set[str], Set[str]]:
    """The attributes a text reads (``.NAME``) and those of ``self`` (``self.NAME``)."""
    found = _ATTRIBUTE.findall(text)
    return {name for _, name in found}, {name for own, name in found if own}


class _Unscreenable(Exception):
    pass


# module-level statements that may be blanked: they bind or change names, or call
_SIMPLE = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr)


class _Stmt:
    """A module-level assignment or expression statement that may be blanked."""

    __slots__ = (
        "node",
        "first",
        "last",
        "words",
        "dotted",
        "targets",
        "kept",
        "outer",
        "bound",
        "trigger",
    )

    def __init__(self, node: ast.stmt, words: Set[str], dotted: Set[str], targets: Set[str]):
        self.node = node
        self.first = node.lineno - 1
        self.last = node.end_lineno - 1  # type: ignore[operator]
        self.words = words
        self.dotted = dotted
        self.targets = targets  # the names it binds or changes
        self.kept = False
        self.outer = None
        self.bound: Set[str] = set()  # the names it binds
        self.trigger = False


def _shared_lines(body: Sequence[ast.stmt]) -> Set[int]:
    """Lines on which two module-level statements meet (``a = 1; b = 2``)."""
    out: Set[int] = set()
    for prev, nxt in zip(body, body[1:]):
        if prev.end_lineno is not None and prev.end_lineno >= nxt.lineno:
            out.update((prev.end_lineno, nxt.lineno))
    return out


def _root(node: ast.AST) -> Optional[str]:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call, ast.Starred)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _targets(stmt: ast.stmt) -> Set[str]:
    """What a statement binds (``x = ...``) or changes (``x.a = ...``, ``x[i] += ...``,
    ``x.append(...)``); a call of a plain function (``f(...)``) changes nothing here."""
    out: Set[str] = set()
    if isinstance(stmt, ast.Expr):
        value = stmt.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
            root = _root(value.func.value)
            if root is not None:
                out.add(root)
        elif not isinstance(value, (ast.Call, ast.Constant)):
            out.update(n.id for n in astwalk.walk(value) if isinstance(n, ast.Name))
        return out
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]  # type: ignore[attr-defined]
    for target in targets:
        for node in astwalk.walk(target):
            if isinstance(node, ast.Name):
                out.add(node.id)
        root = _root(target)
        if root is not None:
            out.add(root)
    return out


def _code_lines(lines: List[str], tree: ast.Module) -> List[str]:
    """The file's lines without docstrings and comments ("where" and "train" are common
    words of prose).  A comment is cut only where no quote comes before its ``#``;
    a docstring only when it has its lines to itself."""
    out = list(lines)
    for i, line in enumerate(out):
        if "#" in line:
            head = line.split("#", 1)[0]
            if "'" not in head and '"' not in head:
                out[i] = head + "\n"
    for node in (tree, *statements(tree)):  # docstrings open a module's or a definition's body
        if isinstance(node, (ast.Module, *_DEFS)) and node.body:
            doc = node.body[0]
            if (
                isinstance(doc, ast.Expr)
                and isinstance(doc.value, ast.Constant)
                and isinstance(doc.value.value, str)
                and doc.end_lineno is not None
                and doc.end_col_offset is not None
                and not lines[doc.lineno - 1][: doc.col_offset].strip()
                and not lines[doc.end_lineno - 1][doc.end_col_offset :].split("#", 1)[0].strip()
            ):
                for i in range(doc.lineno - 1, doc.end_lineno):
                    out[i] = "\n"
    return out


def _whole(cls: _Unit, names: Set[str]) -> bool:
    """A class is kept whole when it builds on something relevant: a trigger word in
    its own text (an attention module's subclass) or a kept name among its bases."""
    return cls.base or not cls.words.isdisjoint(names)


_REFLECTIVE = frozenset(
    {"getattr", "setattr", "globals", "locals", "vars", "__dict__", "eval", "exec"}
)


_STRING = re.compile(r"""(?s)(\"\"\"|''').*?\1|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""")
_FSTRING = re.compile(r"""\b[rRbBuU]?[fF][rRbB]?["']""")


def _code_text(text: str) -> str:
    """A module-level statement's text without its strings (``__all__`` names every
    definition, ``add_docstr`` calls hold whole manuals), unless it reaches names
    through strings (``getattr(module, "name")``) or holds an f-string (code inside
    a string)."""
    if _FSTRING.search(text) or not set(_WORD.findall(text)).isdisjoint(_REFLECTIVE):
        return text
    return _STRING.sub(" ", text)


def _bound(stmt: ast.stmt, walrus: bool = True) -> Set[str]:
    """Names a module-level statement binds (imports, assignment targets)."""
    out: Set[str] = set()
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        for alias in stmt.names:
            out.add((alias.asname or alias.name).split(".")[0])
        return out
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        value = getattr(stmt, "value", None)
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        # a walrus in the value binds too; the value is not walked for nothing else
        roots = targets + ([value] if value is not None and walrus else [])
    elif isinstance(stmt, ast.Expr):
        roots = [stmt.value] if walrus else []
    else:
        roots = [stmt]
    for root in roots:
        for node in astwalk.walk(root):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                out.add(node.id)
    return out


def _without(lines: List[str], elements: Sequence[ast.expr]) -> List[str]:
    """The lines with ``0`` in each element's place and the rest of its text blank."""
    out = list(lines)
    for e in elements:
        first, last = e.lineno - 1, e.end_lineno - 1  # type: ignore[operator]
        start, end = e.col_offset, e.end_col_offset
        if first == last:
            line = out[first]
            out[first] = line[:start] + "0" + " " * (end - start - 1) + line[end:]
            continue
        out[first] = out[first][:start] + "0" + _ending(out[first])
        for i in range(first + 1, last):
            out[i] = _ending(out[i])
        out[last] = " " * end + out[last][end:]
    return out


def _blank(lines: List[str], drop: List[_Unit], elements: Sequence[ast.expr] = ()) -> str:
    out = _without(lines, elements)
    dropped = {id(u.node) for u in drop}
    for unit in drop:
        first_line = lines[unit.first]
        for i in range(unit.first, unit.last + 1):
            out[i] = _ending(out[i])
        cls = unit.outer.node if unit.outer is not None else None
        if isinstance(cls, ast.ClassDef) and cls.body[0] is unit.node:
            if all(id(s) in dropped for s in cls.body):
                # a class whose every statement goes keeps a ``pass`` in its place
                indent = first_line[: len(first_line) - len(first_line.lstrip(" \t"))]
                out[unit.first] = indent + "pass" + out[unit.first]
    return "".join(out)


def _ending(line: str) -> str:
    return "\r\n" if line.endswith("\r\n") else ("\n" if line.endswith(("\n", "\r")) else "")


# A module-level statement this long is data (torch's ``op_db``: 25,000 lines of
# ``OpInfo(...)`` in one list, kept whole because three entries name attention).
_BIG_STATEMENT = 1000
_COLLECTIONS = (ast.List, ast.Tuple, ast.Set)


def _idle_elements(stmts, lines: List[str], original: List[str], words, keep) -> list:
    """(element, its statement) for the elements of the collection literals of a
    very long module-level statement that hold no trigger or kept word: each
    becomes ``0`` at its place, so LibCST does not parse 25,000 lines of data for
    the three entries that name attention.  The entries that matter, and every
    line and column, stay as they are; an element on a line that is not ASCII
    (ast counts columns in bytes) stays too."""
    out = []
    for st in stmts:
        if st.last - st.first < _BIG_STATEMENT or not isinstance(st.node, _SIMPLE):
            continue
        stack = [st.node.value] if getattr(st.node, "value", None) is not None else []
        while stack:
            node = stack.pop()
            if not isinstance(node, _COLLECTIONS):
                stack.extend(c for c in astwalk.children(node) if isinstance(c, ast.expr))
                continue
            for e in node.elts:
                if isinstance(e, ast.Starred) or e.end_lineno is None or e.end_col_offset is None:
                    continue
                first, last = e.lineno - 1, e.end_lineno - 1
                if not (original[first].isascii() and original[last].isascii()):
                    continue
                text = "".join(lines[first : last + 1])
                if any(w in text for w in words) or not set(_WORD.findall(text)).isdisjoint(keep):
                    stack.append(e)  # kept: its own elements may still go
                    continue
                out.append((e, st))
    return out
