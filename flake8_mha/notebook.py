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
"""
from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from .output import Item, Problem

PYTHON_BODY_CELL_MAGICS = frozenset({
    "time", "timeit", "capture", "prun", "debug", "python", "python3", "pypy", "ipython",
    "autoreload", "skip", "memit", "mprun", "tensorboard", "px", "cython_inline",
})
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
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def mask_cell(source: str, counter: List[int]) -> Tuple[Optional[str], Dict[int, str]]:
    """The cell made valid Python-only text, or None to skip it."""
    lines = source.splitlines(keepends=True)
    magics: Dict[int, str] = {}
    if lines and lines[0].lstrip().startswith("%%"):
        name = lines[0].lstrip()[2:].split(None, 1)[0] if lines[0].strip() != "%%" else ""
        if name not in PYTHON_BODY_CELL_MAGICS:
            return None, {}
        lines[0] = _mark(lines[0], counter, magics)
    continued = False
    for n, line in enumerate(lines):
        stripped = line.strip()
        if continued or (stripped.startswith(("%", "!")) and not stripped.startswith("%%")) \
                or _ASSIGN_MAGIC.match(line) or _HELP.match(line):
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
    try:
        nb = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"not a notebook: invalid JSON at line {exc.lineno}") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise NotebookError("not a notebook in nbformat 4 (no 'cells' list)")
    return nb


def is_python(nb: dict) -> bool:
    meta = nb.get("metadata") or {}
    lang = (meta.get("language_info") or {}).get("name") or \
        (meta.get("kernelspec") or {}).get("language")
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


def source_line_map(raw: str) -> Dict[int, List[int]]:
    """cell index -> the line in the raw file where each element of that cell's
    "source" starts (one element when "source" is a single string)."""
    out: Dict[int, List[int]] = {}
    stack: List[list] = []  # [kind, key_or_index, want_key]
    line = 1
    i, n = 0, len(raw)

    def path() -> tuple:
        return tuple(entry[1] for entry in stack)

    def value_start(at_line: int) -> None:
        # a string that is the source, or one element of the source list
        p = path()
        if len(p) in (3, 4) and p[0] == "cells" and p[2] == "source" and isinstance(p[1], int):
            out.setdefault(p[1], []).append(at_line)

    while i < n:
        ch = raw[i]
        if ch == "\n":
            line += 1
        elif ch == '"':
            j = i + 1
            while j < n and raw[j] != '"':
                j += 2 if raw[j] == "\\" else 1
            text = raw[i + 1:j]
            if stack and stack[-1][0] == "obj" and stack[-1][2]:
                stack[-1][1] = json.loads('"' + text + '"')
            else:
                value_start(line)
            line += text.count("\n")
            i = j
        elif ch in "{[":
            stack.append(["obj", None, True] if ch == "{" else ["arr", 0, False])
        elif ch in "}]":
            if stack:
                stack.pop()
        elif ch == ":":
            if stack and stack[-1][0] == "obj":
                stack[-1][2] = False
        elif ch == ",":
            if stack and stack[-1][0] == "obj":
                stack[-1][2] = True
            elif stack:
                stack[-1][1] += 1
        i += 1
    return out


def file_line(nb: dict, raw_map: Dict[int, List[int]], index: int, cell_line: int) -> Optional[int]:
    starts = raw_map.get(index)
    if not starts:
        return None
    src = nb["cells"][index].get("source", "")
    if isinstance(src, list):
        one_per_line = all(s.endswith("\n") and "\n" not in s[:-1] for s in src[:-1]) and \
            (not src or "\n" not in src[-1].rstrip("\n"))
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
    for line in joined.splitlines(keepends=True):
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


def _as_source(original, text: str):
    if isinstance(original, list):
        return text.splitlines(keepends=True)
    return text


def dump_like(nb: dict, raw: str) -> str:
    """JSON written the way the file was: its indent, non-ASCII kept, final newline."""
    m = re.search(r"\n([ \t]+)\"", raw)
    indent = m.group(1) if m else 1
    if isinstance(indent, str) and set(indent) == {" "}:
        indent = len(indent)
    text = json.dumps(nb, indent=indent, ensure_ascii=False)
    return text + ("\n" if raw.endswith("\n") else "")


def check_notebook(path: str, codes: Sequence[str], disable_noqa: bool = False,
                   mode: str = "check"):
    from .check import FileOutcome, read_bytes
    from .engine import SourceSyntaxError
    from .fix import fix_source, fixable_codes, lint_text

    out = FileOutcome(path)
    data = read_bytes(path, out)
    if data is None:
        return out
    try:
        raw = data.decode("utf-8-sig")
        nb = load(raw)
    except UnicodeDecodeError:
        out.problems.append(Problem(path, "cannot decode the file: a notebook is UTF-8 JSON"))
        return out
    except NotebookError as exc:
        out.problems.append(Problem(path, str(exc)))
        return out
    if not is_python(nb):
        return out
    cells = code_cells(nb)
    if not cells:
        return out
    joined = join(cells)
    raw_map = source_line_map(raw)

    def lint(text: str):
        try:
            return lint_text(text, path, codes, disable_noqa), None
        except SourceSyntaxError as exc:
            cell, line = locate(cells, exc.line)
            if cell is None:
                return [], Problem(path, str(exc), exc.line, exc.col)
            return [], Problem(path, str(exc), line, exc.col, cell.number, cell.index,
                               file_line(nb, raw_map, cell.index, line))

    findings, problem = lint(joined)
    if problem is not None:
        out.problems.append(problem)
        return out
    fixable = fixable_codes()
    if mode != "check" and any(f.code in fixable for f in findings):
        new_joined, fixed = fix_source(joined, findings, path)
        if fixed:
            texts = split(new_joined, cells)
            old_texts = split(joined, cells)
            changed = False
            for cell in cells:
                new_text = texts.get(cell.index)
                if new_text is None or new_text == old_texts.get(cell.index):
                    continue
                original = nb["cells"][cell.index].get("source", "")
                if not cell_source(nb["cells"][cell.index]).endswith("\n"):
                    new_text = new_text[:-1] if new_text.endswith("\n") else new_text
                nb["cells"][cell.index]["source"] = _as_source(original, new_text)
                changed = True
            if changed:
                from .atomic import fix_refusal

                new_raw = dump_like(nb, raw)
                new_nb = load(new_raw)
                new_cells = code_cells(new_nb)
                after, problem = lint(join(new_cells))
                refusal = (f"fix not applied: the fixed text does not parse ({problem.message})"
                           if problem is not None else fix_refusal(findings, fixed, after))
                if refusal:  # keep the findings of the file as it is
                    out.problems.append(Problem(path, refusal))
                    nb = load(raw)
                else:
                    out.fixed = len(fixed)
                    out.new_data, out.old_data = new_raw.encode("utf-8"), data
                    out.old_items = _items(findings, cells, load(raw), raw_map, fixable)
                    out.diff = "".join(difflib.unified_diff(
                        raw.splitlines(keepends=True), new_raw.splitlines(keepends=True),
                        fromfile=path, tofile=path))
                    nb, raw, cells, findings = new_nb, new_raw, new_cells, after
                    raw_map = source_line_map(raw)
    out.items = _items(findings, cells, nb, raw_map, fixable)
    return out


def _items(findings, cells, nb, raw_map, fixable) -> List[Item]:
    items = []
    for f in findings:
        cell, line = locate(cells, f.line)
        if cell is None:
            continue
        moved = type(f)(f.code, line, f.col, f.message, f.path, f.evidence)
        items.append(Item(moved, cell.number, cell.index,
                          file_line(nb, raw_map, cell.index, line), f.code in fixable))
    items.sort(key=lambda i: (i.cell or 0, i.finding.line, i.finding.col, i.code))
    return items
