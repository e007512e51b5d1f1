"""Jupyter notebooks: lint the code cells of an ``.ipynb`` file.

The code cells are joined into one module (cells share one namespace in a
kernel, so an attention module built in cell 2 and called in cell 5 is one
program), with IPython-only lines made inert first:

- a line magic or shell line (``%timeit f()``, ``!pip install x``,
  ``files = !ls``, ``x = %env``, ``obj?``) becomes ``pass`` at the same
  indentation, so line numbers and blocks stay intact;
- a cell magic on the first line (``%%time``) is dropped when the cell body
  is Python (time, timeit, capture, prun, debug, …); any other cell magic
  (``%%bash``, ``%%writefile``, …) skips the whole cell.

Findings are reported as ``nb.ipynb:cell_N:LINE:COL``: N counts code cells
from 1 (as nbQA does), LINE and COL are inside that cell.

This module only translates (notebook -> Python text -> cell positions, and a
fixed text back into the notebook); reading, linting, ``# noqa`` and fixing
are the lint pipeline's (``pipeline.lint_file``).
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..core.lines import lf_lines, source_lines

PYTHON_BODY_CELL_MAGICS = frozenset(
    {
        "time",
        "timeit",
        "capture",
        "prun",
        "debug",
        "python",
        "python3",
        "pypy",
        "ipython",
        "autoreload",
        "skip",
        "memit",
        "mprun",
        "tensorboard",
        "px",
        "cython_inline",
    }
)
_SEPARATOR = "# flake8-mha: cell {n}\n"
_SEPARATOR_RE = re.compile(r"^# flake8-mha: cell (\d+)\n?$")
_MARKER = "pass  # flake8-mha: ipython {k}"
_MARKER_RE = re.compile(r"^(\s*)pass  # flake8-mha: ipython (\d+)(\r?\n)?$")
_ASSIGN_MAGIC = re.compile(r"^\s*[\w.\[\], ]+\s*=\s*[%!]")
_HELP = re.compile(r"^\s*(\?\??[\w.]+|[\w.]+\?\??)\s*$")


class NotebookError(Exception):
    pass


@dataclass
class Cell:
    number: int  # 1-based among code cells
    index: int  # 0-based in nb["cells"]
    text: str  # what is linted (magics made inert)
    magics: Dict[int, str] = field(default_factory=dict)  # marker number -> original line
    start: int = 0  # first line of this cell in the joined module (1-based)


def cell_source(cell: dict) -> str:
    """A cell's source as one string (``load`` checked it is a string or a
    list of strings)."""
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def mask_cell(source: str, counter: List[int]) -> Tuple[Optional[str], Dict[int, str]]:
    """The cell made valid Python-only text, or None to skip it."""
    lines = source_lines(source)
    magics: Dict[int, str] = {}
    if lines and lines[0].lstrip().startswith("%%"):
        name = lines[0].lstrip()[2:].split(None, 1)[0] if lines[0].strip() != "%%" else ""
        if name not in PYTHON_BODY_CELL_MAGICS:
            return None, {}
        lines[0] = _mark(lines[0], counter, magics)
    continued = False
    for n, line in enumerate(lines):
        stripped = line.strip()
        if (
            continued
            or (stripped.startswith(("%", "!")) and not stripped.startswith("%%"))
            or _ASSIGN_MAGIC.match(line)
            or _HELP.match(line)
        ):
            continued = stripped.endswith("\\")
            if _MARKER_RE.match(line) is None:
                lines[n] = _mark(line, counter, magics)
    text = "".join(lines)
    if text and not text.endswith("\n"):
        text += "\n"
    return text, magics


def _mark(line: str, counter: List[int], magics: Dict[int, str]) -> str:
    counter[0] += 1
    k = counter[0]
    magics[k] = line
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    ending = "\n" if line.endswith("\n") else ""
    if line.endswith("\r\n"):
        ending = "\r\n"
    return f"{indent}{_MARKER.format(k=k)}{ending}"


def load(raw: str) -> dict:
    """The notebook in ``raw``, checked against the part of nbformat 4 that
    linting reads; :class:`NotebookError` (one line naming what is wrong)
    otherwise.  Nesting too deep for the parser and integers too long to
    convert are invalid JSON here, not an internal error."""
    try:
        nb = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"not a notebook: invalid JSON at line {exc.lineno}") from None
    except RecursionError:
        raise NotebookError("not a notebook: JSON nested too deep to read") from None
    except ValueError:  # an integer of thousands of digits (sys.get_int_max_str_digits)
        raise NotebookError("not a notebook: invalid JSON (a number too long to read)") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise NotebookError("not a notebook in nbformat 4 (no 'cells' list)")
    problem = malformed(nb)
    if problem is not None:
        raise NotebookError(f"not a valid notebook: {problem}")
    return nb


_CELL_TYPES = ("code", "markdown", "raw")


def malformed(nb: dict) -> Optional[str]:
    """What in ``nb`` breaks nbformat 4 where linting reads it, or None."""
    for key in ("nbformat", "nbformat_minor"):
        if key in nb and type(nb[key]) is not int:
            return f"{key!r} is not an integer"
    meta = nb.get("metadata", {})
    if not isinstance(meta, dict):
        return "'metadata' is not an object"
    for key in ("language_info", "kernelspec"):
        if key in meta and not isinstance(meta[key], dict):
            return f"'metadata.{key}' is not an object"
    for index, cell in enumerate(nb["cells"]):
        where = f"cell at index {index}"
        if not isinstance(cell, dict):
            return f"{where} is not an object"
        kind = cell.get("cell_type")
        if kind not in _CELL_TYPES:
            return f"{where}: 'cell_type' is {_short(kind)}, not one of code, markdown, raw"
        if "source" not in cell:
            return f"{where} has no 'source'"
        src = cell["source"]
        if not (
            isinstance(src, str) or (isinstance(src, list) and all(type(s) is str for s in src))
        ):
            return f"{where}: 'source' is neither a string nor a list of strings"
        if not isinstance(cell.get("metadata", {}), dict):
            return f"{where}: 'metadata' is not an object"
    return None


def _short(value) -> str:
    text = json.dumps(value)
    return text if len(text) <= 20 else text[:17] + "..."


def is_python(nb: dict) -> bool:
    meta = nb.get("metadata") or {}
    lang = (meta.get("language_info") or {}).get("name") or (meta.get("kernelspec") or {}).get(
        "language"
    )
    return lang is None or str(lang).lower() in ("python", "python3", "ipython", "python 3")


def code_cells(nb: dict) -> List[Cell]:
    cells: List[Cell] = []
    counter = [0]
    number = 0
    for index, cell in enumerate(nb["cells"]):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        number += 1
        text, magics = mask_cell(cell_source(cell), counter)
        if text is None:
            continue
        cells.append(Cell(number, index, text, magics))
    return cells


def join(cells: Sequence[Cell]) -> str:
    parts = []
    line = 1
    for cell in cells:
        parts.append(_SEPARATOR.format(n=cell.index))
        line += 1
        cell.start = line
        parts.append(cell.text)
        line += cell.text.count("\n")
    return "".join(parts)


def locate(cells: Sequence[Cell], line: int) -> Tuple[Optional[Cell], int]:
    for cell in reversed(cells):
        if line >= cell.start:
            return cell, line - cell.start + 1
    return None, line


@dataclass
class SourceSpan:
    """Where one cell's ``"source"`` value sits in the raw file: the value
    (``start``, ``end``: offsets, end exclusive), and for a list each
    element's offsets; ``lines``: the line of the file each element (or the
    one string) starts on."""

    start: int
    end: int
    is_list: bool
    elements: List[Tuple[int, int]] = field(default_factory=list)
    lines: List[int] = field(default_factory=list)


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[][{}:,]')


def source_spans(raw: str) -> Dict[int, SourceSpan]:
    """cell index -> where that cell's "source" is in ``raw`` (a notebook that
    ``load`` accepted).  One pass over the strings and punctuation."""
    newlines = [m.start() for m in re.finditer("\n", raw)]
    out: Dict[int, SourceSpan] = {}
    # each open container: [kind, key or index, expecting a key]
    stack: List[list] = []
    value_open: Optional[int] = None  # the offset of the "[" of a source list

    def at_source(extra: int) -> Optional[int]:
        """The cell index when the path is cells[i].source plus ``extra`` levels."""
        if len(stack) != 3 + extra:
            return None
        (k0, cells), (k1, index), (k2, key) = (e[:2] for e in stack[:3])
        if k0 == "obj" and cells == "cells" and k1 == "arr" and k2 == "obj" and key == "source":
            return index
        return None

    for m in _TOKEN.finditer(raw):
        tok, pos = m.group(), m.start()
        top = stack[-1] if stack else None
        if tok[0] == '"':
            if top is not None and top[0] == "obj" and top[2]:
                top[1] = json.loads(tok)
                continue
            line = bisect.bisect_right(newlines, pos) + 1
            index = at_source(0)
            if index is not None:
                out[index] = SourceSpan(pos, m.end(), False, [(pos, m.end())], [line])
            index = at_source(1)
            if index is not None and index in out and value_open is not None:
                out[index].elements.append((pos, m.end()))
                out[index].lines.append(line)
        elif tok in "{[":
            index = at_source(0)
            if tok == "[" and index is not None:
                out[index] = SourceSpan(pos, pos, True)
                value_open = pos
            stack.append(["obj", None, True] if tok == "{" else ["arr", 0, False])
        elif tok in "}]":
            if stack:
                stack.pop()
            index = at_source(0)
            if tok == "]" and index is not None and index in out and out[index].is_list:
                out[index].end = m.end()
                value_open = None
        elif tok == ":":
            if top is not None and top[0] == "obj":
                top[2] = False
        elif tok == ",":
            if top is not None and top[0] == "obj":
                top[2] = True
            elif top is not None:
                top[1] += 1
    return out


def source_line_map(raw: str) -> Dict[int, List[int]]:
    """cell index -> the line in the raw file where each element of that cell's
    "source" starts (one element when "source" is a single string)."""
    return {index: span.lines for index, span in source_spans(raw).items() if span.lines}


def file_line(nb: dict, raw_map: Dict[int, List[int]], index: int, cell_line: int) -> Optional[int]:
    starts = raw_map.get(index)
    if not starts:
        return None
    src = nb["cells"][index].get("source", "")
    if isinstance(src, list):
        one_per_line = all(s.endswith("\n") and "\n" not in s[:-1] for s in src[:-1]) and (
            not src or "\n" not in src[-1].rstrip("\n")
        )
        if one_per_line and 0 < cell_line <= len(starts):
            return starts[cell_line - 1]
        return starts[0]
    return starts[0]


def split(joined: str, cells: Sequence[Cell]) -> Dict[int, str]:
    """The joined module cut back into cell texts, with IPython lines restored."""
    by_index: Dict[int, List[str]] = {}
    current: Optional[int] = None
    magics: Dict[int, str] = {}
    for cell in cells:
        magics.update(cell.magics)
    for line in source_lines(joined):
        m = _SEPARATOR_RE.match(line)
        if m:
            current = int(m.group(1))
            by_index[current] = []
            continue
        if current is None:
            continue
        mm = _MARKER_RE.match(line)
        if mm and int(mm.group(2)) in magics:
            line = magics[int(mm.group(2))]
        by_index[current].append(line)
    return {k: "".join(v) for k, v in by_index.items()}


def _source_json(raw: str, span: SourceSpan, text: str) -> str:
    """The JSON of a cell's new source ``text``, written as the old one was:
    a string stays a string; a list keeps its brackets' whitespace, its
    separator and, element by element, the old text of an unchanged line.
    Non-ASCII is escaped only in a file that is all ASCII."""
    ascii_only = raw.isascii()

    def dump(value: str) -> str:
        return json.dumps(value, ensure_ascii=ascii_only)

    if not span.is_list:
        return dump(text)
    old = [raw[a:b] for a, b in span.elements]
    new = []
    for j, line in enumerate(lf_lines(text)):
        same = j < len(old) and json.loads(old[j]) == line
        new.append(old[j] if same else dump(line))
    if not span.elements:
        return "[" + ", ".join(new) + "]"
    first, last = span.elements[0], span.elements[-1]
    prefix = raw[span.start + 1 : first[0]]
    suffix = raw[last[1] : span.end - 1]
    if len(span.elements) > 1:
        sep = raw[first[1] : span.elements[1][0]]
    elif prefix.strip(" \t") in ("\n", "\r\n"):
        sep = "," + prefix
    else:
        sep = ", " if ", " in raw else ","
    return "[" + prefix + sep.join(new) + suffix + "]"


# A line the analysis names inside a message ("line 9: `# (B, L, E)`") or in
# the evidence (``layout_line``, a mask's ``line``) is a line of the joined
# module: in a notebook it is told as the cell and the line in it, as the
# finding's own position is.
_LINE_REF = re.compile(r"\bline (\d+)\b")


def cell_message(message: str, place: Callable[[int], Optional[str]]) -> str:
    """``message`` with each ``line N`` told as ``cell_K:L`` (``place(N)``)."""

    def sub(m: "re.Match[str]") -> str:
        where = place(int(m.group(1)))
        return where if where is not None else m.group(0)

    return _LINE_REF.sub(sub, message)


def cell_evidence(value, place: Callable[[int], Optional[str]]):
    """A copy of ``value`` (evidence) with every ``line``/``*_line`` integer
    told as ``"cell_K:L"``; anything else as it is."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if (key == "line" or str(key).endswith("_line")) and type(item) is int:
                where = place(item)
                out[key] = where if where is not None else item
            else:
                out[key] = cell_evidence(item, place)
        return out
    if isinstance(value, list):
        return [cell_evidence(item, place) for item in value]
    return value


NBQA_SEPARATOR = "# %%NBQA-CELL-SEP"


def nbqa_place(source: str) -> Optional[Callable[[int], Optional[str]]]:
    """For the Python file nbQA writes from a notebook (each code cell after a
    ``# %%NBQA-CELL-SEP…`` line): line N of it as nbQA maps it back,
    ``cell_K:L``.  None for any other file."""
    if NBQA_SEPARATOR not in source:
        return None
    starts = [
        n for n, line in enumerate(source_lines(source), 1) if line.startswith(NBQA_SEPARATOR)
    ]
    if not starts:
        return None

    def place(line: int) -> Optional[str]:
        k = bisect.bisect_left(starts, line)  # separators before this line
        if k == 0:
            return None
        return f"cell_{k}:{line - starts[k - 1]}"

    return place


def as_nbqa_maps(source: str, findings: list) -> list:
    """Under nbQA, a line a message or its evidence names, told as the
    ``cell_K:L`` nbQA maps the finding's own line to (nbQA maps only the
    position at the start of flake8's line).  ``findings``: ``Finding``s,
    rebuilt through their own type (this module imports no other)."""
    if not findings:
        return findings
    place = nbqa_place(source)
    if place is None:
        return findings
    return [
        type(f)(
            f.code,
            f.line,
            f.col,
            cell_message(f.message, place),
            f.path,
            cell_evidence(f.evidence, place),
        )
        for f in findings
    ]


@dataclass
class Source:
    """A Python notebook as one module: the joined text, and the way back from a
    line of it to a cell, a line in that cell and a line of the file on disk."""

    nb: dict
    raw: str
    cells: List[Cell]
    joined: str
    raw_map: Dict[int, List[int]]

    @classmethod
    def of(cls, nb: dict, raw: str) -> Optional["Source"]:
        """None when the notebook has no code cell to lint."""
        cells = code_cells(nb)
        if not cells:
            return None
        return cls(nb, raw, cells, join(cells), source_line_map(raw))

    def place(self, line: int) -> Tuple[Optional[Cell], int, Optional[int]]:
        """The cell a line of ``joined`` is in, the line in that cell, and the
        line in the file on disk (when known)."""
        cell, cell_line = locate(self.cells, line)
        if cell is None:
            return None, line, None
        return cell, cell_line, file_line(self.nb, self.raw_map, cell.index, cell_line)

    def where(self, line: int) -> Optional[str]:
        """A line of ``joined`` as the user reads it: ``cell_K:L`` (None outside a cell)."""
        cell, cell_line = locate(self.cells, line)
        return f"cell_{cell.number}:{cell_line}" if cell is not None else None

    def rewritten(self, new_joined: str) -> Optional[str]:
        """The notebook file with ``new_joined`` cut back into its cells (IPython
        lines restored), or None if no cell changed.  Only the changed cells'
        ``"source"`` values are rewritten, in place: every other byte of the
        file (indentation, key order, line endings, outputs) stays."""
        texts = split(new_joined, self.cells)
        old_texts = split(self.joined, self.cells)
        spans = source_spans(self.raw)
        edits: List[Tuple[int, int, str]] = []
        for cell in self.cells:
            new_text = texts.get(cell.index)
            if new_text is None or new_text == old_texts.get(cell.index):
                continue
            span = spans.get(cell.index)
            if span is None:  # pragma: no cover - load() and the scan read one file
                return None
            if not cell_source(self.nb["cells"][cell.index]).endswith("\n"):
                new_text = new_text[:-1] if new_text.endswith("\n") else new_text
            edits.append((span.start, span.end, _source_json(self.raw, span, new_text)))
        if not edits:
            return None
        out, at = [], 0
        for start, end, text in sorted(edits):
            out += [self.raw[at:start], text]
            at = end
        return "".join(out) + self.raw[at:]
