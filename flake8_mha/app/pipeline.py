"""The one lint pipeline: every entry point lints through it.

    options (command line + configuration)  ->  files  ->  bytes  ->  text
    ->  findings (engine.analyze_source)  ->  # noqa  ->  selection  ->  fixes

``flake8-mha check`` and ``flake8-mha confirm`` call ``options_from_args``
and ``lint_paths``; the flake8 adapter calls ``analyze_for_flake8`` (flake8
itself has walked, read and parsed the file, and applies ``# noqa`` and the
selection).  Notebooks go through the same steps: ``notebook.py`` only turns a
notebook into Python text and findings back into cell positions.

What a file produced is a ``FileOutcome``: the findings (``Item``s, with their
notebook cell) and the reasons it could not be checked (``Problem``s: a
syntax error, unreadable or undecodable bytes).  An outcome is built in a
worker process for ``-j N``, so it is picklable.

A fix (``--fix``/``--diff``) is kept only if the fixed text parses and
re-lints with no new finding.  ``write_fixes`` writes the kept fixes through
``atomic``: each file is replaced in one step, and only if its bytes are still
those that were analysed (compare-and-swap); a file not written reports the
findings it still holds.

This module imports neither libcst nor the analyzer at import time.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import io
import os
import tokenize
import zlib
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..core.atomic import NOT_REGULAR
from .config import (
    Options,
)
from .discovery import (  # noqa: F401 - kept importable from here
    DEFAULT_EXCLUDES,
    SUFFIXES,
    discover,
    display_path,
    is_excluded,
    is_virtualenv,
    lintable,
)
from ..core.findings import Finding
from ..core.lines import skim_data, source_lines, unified_diff
from ..lint.selection import all_codes

MODES = ("check", "fix", "diff")


@dataclass(frozen=True)
class Item:
    """A finding as the CLI reports it, with where it sits in a notebook."""

    finding: Finding
    cell: Optional[int] = None  # 1-based number among the notebook's code cells
    cell_index: Optional[int] = None  # 0-based index into the notebook's "cells"
    file_line: Optional[int] = None  # the line in the file on disk, when known
    fixable: bool = False

    @property
    def code(self) -> str:
        return self.finding.code

    def location(self) -> str:
        f = self.finding
        if self.cell is not None:
            return f"{f.path}:cell_{self.cell}:{f.line}:{f.col}"
        return f"{f.path}:{f.line}:{f.col}"

    def text(self) -> str:
        return f"{self.location()}: {self.code} {self.finding.message}"


@dataclass(frozen=True)
class Problem:
    """A file that could not be checked: a syntax error, unreadable bytes."""

    path: str
    message: str
    line: Optional[int] = None
    col: Optional[int] = None
    cell: Optional[int] = None
    cell_index: Optional[int] = None
    file_line: Optional[int] = None

    @property
    def code(self) -> str:
        """E999 for text that is not Python; empty for a file that could not be read."""
        return "E999" if self.line is not None else ""

    def location(self) -> str:
        if self.line is None:
            return self.path
        cell = f"cell_{self.cell}:" if self.cell is not None else ""
        return f"{self.path}:{cell}{self.line}:{self.col or 1}"

    def as_dict(self) -> Dict[str, Any]:
        """The JSON form, one shape for ``check --format json`` and ``confirm --json``."""
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "cell": self.cell,
            "cell_index": self.cell_index,
            "message": self.message,
        }

    def text(self) -> str:
        if self.line is None:
            return f"{self.path}: error: {self.message}"
        return f"{self.location()}: E999 {self.message}"


@dataclass
class FileOutcome:
    """What checking one file produced; built in a worker process, so picklable."""

    path: str
    items: List[Item] = field(default_factory=list)
    problems: List[Problem] = field(default_factory=list)
    new_data: Optional[bytes] = None  # the rewritten file (--fix/--diff), if anything changed
    old_data: Optional[bytes] = None  # the bytes analysed: a fix is written only over these
    old_items: List[Item] = field(default_factory=list)  # reported if the fix is not written
    diff: str = ""
    fixed: int = 0
    from_cache: bool = False  # read from the cache of per-file results (cache.py)


# -- files ---------------------------------------------------------------------------


# Bigger files are refused by their size before a byte is read: the engine
# would not analyse them anyway (engine.MAX_BYTES, the same 8 MiB), and reading,
# decoding and tokenizing 20 MB for ``# noqa`` took half a minute.  A notebook
# carries its outputs (images) too: it may be larger, its code may not.
MAX_PYTHON_BYTES = 8 * 1024 * 1024
MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024
# Python's own words, which flake8 reports as E999 at 1:1
NUL_BYTES = "SyntaxError: source code string cannot contain null bytes"


def _too_large(path: str, limit: int) -> Item:
    reason = f"file larger than {limit // (1024 * 1024)} MiB, not analyzed"
    message = f"flake8-mha could not analyze this file: {reason}"
    return Item(Finding("MHA000", 1, 1, message, path, {"reason": reason}))


def read_bytes(path: str, out: FileOutcome) -> Optional[bytes]:
    """The file's bytes, or None with the reason recorded on ``out``: a path
    that is not a regular file, or cannot be read, is a problem; a file over
    the size limit is MHA000 (as the engine says of a text too large), found
    from its size alone."""
    from ..core.atomic import NotRegular, TooLarge, read_regular

    limit = MAX_NOTEBOOK_BYTES if path.endswith(".ipynb") else MAX_PYTHON_BYTES
    try:
        return read_regular(path, limit)
    except NotRegular:
        out.problems.append(Problem(path, NOT_REGULAR))
    except TooLarge:
        out.items.append(_too_large(path, limit))
    except (OSError, ValueError) as exc:  # ValueError: a path holding a NUL
        reason = getattr(exc, "strerror", None) or str(exc)
        out.problems.append(Problem(path, f"cannot read the file: {reason}"))
    return None


def _encoding(data: bytes) -> str:
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return encoding


# -- one text ----------------------------------------------------------------------


def lint_text(
    text: str, path: str, codes: Sequence[str], disable_noqa: bool = False, project=None
) -> List[Finding]:
    """Findings for one text, with ``# noqa`` applied unless disabled.  Raises
    ``engine.SourceSyntaxError``.  ``project``: see ``make_project``."""
    from ..lint.engine import SourceSyntaxError, analyze_source
    from ..lint.noqa import apply_noqa

    if "\0" in text:  # Python refuses it; LibCST would parse on
        line = text.count("\n", 0, text.index("\0")) + 1
        raise SourceSyntaxError(NUL_BYTES, line, 1)
    # a huge data literal is skimmed (same lines and columns), not parsed into a tree
    skimmed = skim_data(text)
    findings = analyze_source(skimmed, path, codes=list(codes), project=project or False)
    if disable_noqa or not findings:
        return findings
    return apply_noqa(findings, source_lines(text))


FLAKE8_MODE = "flake8"  # the plugin's cache entries: every code, no noqa, keyed apart from check's
_CACHE_DIRS: Dict[str, Optional[str]] = {}


def flake8_cache_dir() -> Optional[str]:
    """``check``'s results cache at the project root of the folder flake8 runs
    in, made on first use; None (silently off) where it cannot be.  Decided
    once per folder and process."""
    from .cache import DEFAULT_DIR, usable
    from .config import project_root

    here = os.getcwd()
    if here not in _CACHE_DIRS:
        folder = os.path.join(project_root(here), DEFAULT_DIR)
        _CACHE_DIRS[here] = folder if usable(folder) else None
    return _CACHE_DIRS[here]


def analyze_for_flake8(
    source: str,
    path: str,
    tree,
    project_wide: bool = True,
    use_cache: bool = False,
    gated: bool = False,
) -> List[Finding]:
    """What the flake8 adapter reports: every static code, no ``# noqa`` (flake8
    applies both).  Raises ``engine.SourceSyntaxError``.  ``use_cache``: through
    ``check``'s results cache (``_through_cache``, same keys and invalidation;
    summaries of imported files kept there too), else nothing is written.
    ``gated``: no attention word; analysed only if the project-aware gate (on
    ``ast``, no libcst) lets it in, its answer cached the same way."""
    cache_dir = flake8_cache_dir() if use_cache else None
    data = source.encode("utf-8", "surrogatepass")

    def lint(path_, data_, codes, disable_noqa, mode, project) -> FileOutcome:
        if gated and (
            project is None
            or not project.gate(source, tree if isinstance(tree, ast.Module) else None)
        ):
            return FileOutcome(path)
        from ..lint.engine import analyze_source

        full = project
        if gated:  # the gate read the project with ``ast`` only: the analysis needs more
            from ..analysis.program.callsites import Project

            full = Project(path, project.store, project.version)
        codes = list(codes) or all_codes()  # () without the cache: known only once needed
        skimmed = skim_data(source)  # same lines and columns; the tree's positions hold
        # the gate has let a gated file in: analyze_source need not ask it again
        found = analyze_source(
            skimmed, path, codes=codes, tree=tree, project=full or False, use_prefilter=not gated
        )
        if gated:
            project.deps.update(full.deps)  # the manifest lists what both read
        from .notebook import as_nbqa_maps

        return FileOutcome(path, [Item(f) for f in as_nbqa_maps(source, found)])

    make = _gate_project if gated else make_project
    # the codes make the cache's key; without the cache they are asked for only to
    # analyse (finding them imports the rules and libcst, which the gate spares)
    codes = _flake8_codes(cache_dir) if cache_dir is not None else ()
    out = _through_cache(cache_dir, data, path, codes, True, FLAKE8_MODE, lint, project_wide, make)
    if cache_dir is not None and not out.from_cache and zlib.crc32(data) % 64 == 0:
        from .cache import Cache

        Cache(cache_dir).prune()  # flake8 has no end of run: about one write in 64 prunes
    return [i.finding for i in out.items]


_CODES: Dict[str, List[str]] = {}


def _flake8_codes(cache_dir: str) -> List[str]:
    """Every static code (the plugin reports them all), once per process, read
    from the cache as ``check`` reads its codes (``cache.selected_codes``), so
    that a warm run imports neither the rules nor libcst."""
    if cache_dir not in _CODES:
        from .cache import selected_codes

        _CODES[cache_dir] = selected_codes(cache_dir, {"flake8": "every code"}, all_codes)
    return _CODES[cache_dir]


def _gate_project(path: str, cache_dir: Optional[str]):
    """``make_project`` for the gate: the project's files read with ``ast`` only."""
    if not os.path.isfile(path):
        return None
    from ..analysis.program.handed_params import GateFiles

    if cache_dir is None:
        return GateFiles(path)
    from .cache import SideStore, source_hash

    return GateFiles(path, SideStore(cache_dir, "sum-"), source_hash())


def make_project(path: str, cache_dir: Optional[str]):
    """The project around ``path`` for project-wide analysis (``program/``),
    with its summaries cached in ``cache_dir`` (None: kept in memory only).
    None for a path that is not a file (text from stdin, a test's string)."""
    if not os.path.isfile(path):
        return None
    from ..analysis.program.callsites import Project

    if cache_dir is None:
        return Project(path)
    from .cache import SideStore, source_hash

    return Project(path, SideStore(cache_dir, "sum-"), source_hash())


# -- one file ------------------------------------------------------------------------


def _lint_python(
    path: str,
    data: bytes,
    codes: Sequence[str],
    disable_noqa: bool,
    mode: str,
    project=None,
    max_line_length: Optional[int] = None,
) -> FileOutcome:
    """``max_line_length``: the configured ``max-line-length`` a fix keeps to
    (None: none configured, no line is broken; see ``fix.fix_text``)."""
    from ..core.atomic import fix_refusal
    from ..lint.engine import SourceSyntaxError, decode_source
    from .fix import can_fix, fix_text, fixable_codes

    out = FileOutcome(path)
    try:
        text = decode_source(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        out.problems.append(Problem(path, f"cannot decode the file: {reason}"))
        return out
    try:
        findings = lint_text(text, path, codes, disable_noqa, project)
    except SourceSyntaxError as exc:
        at = (1, 1) if str(exc) == NUL_BYTES else (exc.line, exc.col)  # where flake8 says
        out.problems.append(Problem(path, str(exc), *at))
        return out
    fixable = fixable_codes()
    if mode != "check" and any(can_fix(f, fixable) for f in findings):
        result = fix_text(text, findings, path, max_line_length)
        new_text, fixed = result.text, result.fixed
        out.problems += _long_fixes(path, result.refused, lambda n: f"line {n}")
        if fixed and new_text != text:
            try:
                after = lint_text(new_text, path, codes, disable_noqa, project)
                refusal = fix_refusal(findings, fixed, after)
            except SourceSyntaxError as exc:
                after, refusal = findings, f"fix not applied: the fixed text does not parse ({exc})"
            if refusal:  # keep the findings of the file as it is
                out.problems.append(Problem(path, refusal))
            else:
                out.fixed = len(fixed)
                out.new_data, out.old_data = new_text.encode(_encoding(data)), data
                out.old_items = [Item(f, fixable=can_fix(f, fixable)) for f in findings]
                out.diff = unified_diff(path, text, new_text)
                findings = after
    out.items = [Item(f, fixable=can_fix(f, fixable)) for f in findings]
    return out


def _lint_notebook(
    path: str,
    data: bytes,
    codes: Sequence[str],
    disable_noqa: bool,
    mode: str,
    project=None,
    max_line_length: Optional[int] = None,
) -> FileOutcome:
    from . import notebook as nbk
    from ..core.atomic import fix_refusal
    from ..lint.engine import SourceSyntaxError
    from .fix import can_fix, fix_text, fixable_codes

    out = FileOutcome(path)
    try:
        raw = data.decode("utf-8-sig")
        nb = nbk.load(raw)
    except UnicodeDecodeError:
        out.problems.append(Problem(path, "cannot decode the file: a notebook is UTF-8 JSON"))
        return out
    except nbk.NotebookError as exc:
        out.problems.append(Problem(path, str(exc)))
        return out
    if not nbk.is_python(nb):
        return out
    source = nbk.Source.of(nb, raw)
    if source is None:
        return out

    def lint(src: "nbk.Source"):
        try:
            return lint_text(src.joined, path, codes, disable_noqa, project), None
        except SourceSyntaxError as exc:
            cell, line, file_line = src.place(exc.line)
            if cell is None:
                return [], Problem(path, str(exc), exc.line, exc.col)
            return [], Problem(path, str(exc), line, exc.col, cell.number, cell.index, file_line)

    findings, problem = lint(source)
    if problem is not None:
        out.problems.append(problem)
        return out
    fixable = fixable_codes()
    if mode != "check" and any(can_fix(f, fixable) for f in findings):
        result = fix_text(source.joined, findings, path, max_line_length)
        new_joined, fixed = result.text, result.fixed
        where = source.where
        out.problems += _long_fixes(path, result.refused, lambda n: where(n) or f"line {n}")
        new_raw = source.rewritten(new_joined) if fixed else None
        if new_raw is not None:
            new_source = nbk.Source.of(nbk.load(new_raw), new_raw)
            after, problem = lint(new_source) if new_source is not None else ([], None)
            refusal = (
                f"fix not applied: the fixed text does not parse ({problem.message})"
                if problem is not None
                else fix_refusal(findings, fixed, after)
            )
            if refusal:  # keep the findings of the file as it is
                out.problems.append(Problem(path, refusal))
            else:
                out.fixed = len(fixed)
                bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
                out.new_data, out.old_data = bom + new_raw.encode("utf-8"), data
                out.old_items = _cell_items(findings, source, fixable)
                out.diff = unified_diff(path, raw, new_raw)
                source, findings = new_source, after
    out.items = _cell_items(findings, source, fixable)
    return out


def _long_fixes(path: str, refused, where) -> List[Problem]:
    """One line per fix left out for the line length: which, where, and why."""
    return [
        Problem(path, f"fix not applied ({f.code} at {where(f.line)}): {why}") for f, why in refused
    ]


def _cell_items(findings: Sequence[Finding], source, fixable) -> List[Item]:
    """A notebook's findings moved to their cells, in cell order; a line the
    message or the evidence names is moved too (``cell_K:L``)."""
    from . import notebook as nbk
    from .fix import can_fix

    items = []
    for f in findings:
        cell, line, file_line = source.place(f.line)
        if cell is None:
            continue
        message = nbk.cell_message(f.message, source.where)
        evidence = nbk.cell_evidence(f.evidence, source.where)
        moved = type(f)(f.code, line, f.col, message, f.path, evidence)
        items.append(Item(moved, cell.number, cell.index, file_line, can_fix(f, fixable)))
    items.sort(
        key=lambda i: (i.cell or 0, i.finding.line, i.finding.col, i.code, i.finding.message)
    )
    return items


def _through_cache(
    cache_dir: Optional[str],
    data: bytes,
    path: str,
    codes: Sequence[str],
    disable_noqa: bool,
    mode: str,
    lint,
    project_wide: bool = True,
    make=None,
) -> FileOutcome:
    """``lint(path, data, ...)``, or what it gave for the same key (``cache.py``).
    Only modes check and flake8 (the plugin's, ``analyze_for_flake8``) are
    cached: a fix needs the tree.  With project-wide analysis the key adds the
    imported project files (their paths and hashes, listed by the file's
    dependency manifest).  ``make``: how the project is made (``make_project``)."""
    make = make or make_project  # the flake8 plugin's gate reads the project with ast only
    if cache_dir is None or mode not in ("check", FLAKE8_MODE):
        project = make(path, None) if project_wide else None
        return lint(path, data, codes, disable_noqa, mode, project)
    from . import cache as cache_mod

    cache = cache_mod.Cache(cache_dir)
    manifests = cache_mod.SideStore(cache_dir, "deps-")
    # the project is made only to analyse: a warm run imports no analyzer
    project_wide = project_wide and os.path.isfile(path)
    base = cache_mod.entry_key(data, path, codes, disable_noqa, mode, None, project_wide)
    key = base  # a file that imports no project file has no manifest
    listed = manifests.get(base) if project_wide else None
    if isinstance(listed, list) and all(isinstance(p, str) for p in listed):
        listed = cache_mod.located(listed, cache_dir)
        deps = cache_mod.portable_hashes(cache_mod.file_hashes(listed), cache_dir)
        key = cache_mod.entry_key(data, path, codes, disable_noqa, mode, deps, True)
    entry = cache.load(key, path, codes)
    if entry is not None:
        try:
            items = [
                Item(
                    cache_mod.finding_of(i["finding"]),
                    i["cell"],
                    i["cell_index"],
                    i["file_line"],
                    i["fixable"],
                )
                for i in entry["items"]
            ]
            return FileOutcome(
                path, items, [Problem(**p) for p in entry["problems"]], from_cache=True
            )
        except (TypeError, KeyError, ValueError):
            pass  # recompute
    project = make(path, cache_dir) if project_wide else None
    out = lint(path, data, codes, disable_noqa, mode, project)
    key = base
    if project is not None:
        # a dependency listed before and gone now stays listed, as absent
        paths, deps = cache_mod.manifest(listed, project.deps)
        if paths or listed is not None:  # an empty list replaces one now wrong
            manifests.put(base, cache_mod.portable(paths, cache_dir))
            deps = cache_mod.portable_hashes(deps, cache_dir)
            key = cache_mod.entry_key(data, path, codes, disable_noqa, mode, deps, True)
    cache.store(
        key,
        [
            {
                "finding": cache_mod.finding_dict(i.finding),
                "cell": i.cell,
                "cell_index": i.cell_index,
                "file_line": i.file_line,
                "fixable": i.fixable,
            }
            for i in out.items
        ],
        [dataclasses.asdict(p) for p in out.problems],  # read back by Problem(**p)
    )
    return out


def lint_file(task: Tuple) -> FileOutcome:
    """One file, dispatched on its suffix; never raises (a worker process runs it).
    ``task``: path, codes, disable_noqa, mode, cache_dir, project_wide, and
    optionally the configured max-line-length."""
    path, codes, disable_noqa, mode, cache_dir, project_wide, *rest = task
    try:
        out = FileOutcome(path)
        data = read_bytes(path, out)
        if data is None:
            return out
        lint = _lint_notebook if path.endswith(".ipynb") else _lint_python
        if rest and rest[0] is not None:  # the configured max-line-length, for a fix
            lint = functools.partial(lint, max_line_length=rest[0])
        return _through_cache(cache_dir, data, path, codes, disable_noqa, mode, lint, project_wide)
    except Exception as exc:  # never lose the whole run to one file
        return FileOutcome(
            path,
            problems=[
                Problem(path, f"internal error {type(exc).__name__}: {exc}; please report it")
            ],
        )


def run_files(
    files: Sequence[str],
    codes: Sequence[str],
    disable_noqa: bool,
    mode: str,
    jobs: int,
    cache_dir: Optional[str] = None,
    project_wide: bool = True,
    file_codes: Optional[Dict[str, Sequence[str]]] = None,
    max_line_length: Optional[int] = None,
) -> List[FileOutcome]:
    """``cache_dir``: read and write per-file results there (mode check only);
    ``project_wide``: follow calls into the project's other files;
    ``file_codes``: the codes of the files a per-file-ignores entry names;
    ``max_line_length``: the configured line length a fix keeps to."""
    if mode != "check":
        cache_dir = None
    if cache_dir is not None:
        from . import cache as cache_mod

        cache_mod.source_hash()  # once, before the workers fork
        if not cache_mod.usable(cache_dir):
            cache_dir = None
    own = file_codes or {}
    tasks = [
        (
            path,
            tuple(own.get(path, codes)),
            disable_noqa,
            mode,
            cache_dir,
            project_wide,
            max_line_length,
        )
        for path in files
    ]
    if jobs <= 1 or len(tasks) <= 1:
        return [lint_file(t) for t in tasks]
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    # largest files first, so that no big file starts last and leaves the other
    # workers idle; the outcomes go back into the input order: output does not depend on -j
    order = sorted(range(len(tasks)), key=lambda i: -_size(tasks[i][0]))
    outcomes: List[Optional[FileOutcome]] = [None] * len(tasks)
    with ctx.Pool(min(jobs, len(tasks)), initializer=_leave_ctrl_c_to_the_parent) as pool:
        for i, out in pool.imap_unordered(_lint_indexed, [(i, tasks[i]) for i in order]):
            outcomes[i] = out
    return outcomes  # type: ignore[return-value]


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _lint_indexed(item):
    return item[0], lint_file(item[1])


def _prune_cache(cache_dir: Optional[str], outcomes: Sequence[FileOutcome]) -> None:
    """After a run that analysed anything, keep the cache within its bounds."""
    if cache_dir is not None and any(not o.from_cache for o in outcomes):
        from .cache import Cache

        Cache(cache_dir).prune()


def _leave_ctrl_c_to_the_parent() -> None:
    """In a ``-j`` worker: Ctrl-C reaches the whole process group; the parent
    alone handles it (one line of message), and ends the pool."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


@dataclass
class Run:
    """A whole lint run: the codes it reported and what each file produced."""

    codes: List[str]
    outcomes: List[FileOutcome]
    files: int = 0  # how many files the run found (stdin counts)
    stdin: Optional[bytes] = None  # the text read from stdin (-), for --show-source

    @property
    def items(self) -> List[Item]:
        return [i for o in self.outcomes for i in o.items]

    @property
    def problems(self) -> List[Problem]:
        return [p for o in self.outcomes for p in o.problems]


def _dependents(files: Sequence[str], opts: Options) -> List[str]:
    """The project files that import one of ``files``, and those ``files``
    import (``--dependents``: facts flow both ways across a call), as
    discovery would list them: excluded and ignored ones left out."""
    from ..analysis.program.callers import callees, dependents

    named = {os.path.realpath(f) for f in files if f != "-"}
    given = [f for f in files if f != "-"]
    found = sorted(set(dependents(given)) | set(callees(given)))
    if not found:
        return []
    kept = set(discover(found, opts.extend_exclude, opts.exclude, opts.respect_gitignore))
    return [f for f in found if f in kept and os.path.realpath(f) not in named]


def lint_paths(opts: Options, mode: str = "check") -> Run:
    """Discover, read, analyze, silence, select (and fix, for mode fix/diff)."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    cache_dir = None if opts.no_cache or mode != "check" else opts.cache_dir
    if cache_dir is not None:
        from .cache import usable

        cache_dir = cache_dir if usable(cache_dir) else None  # silently off if not
    if cache_dir is not None:  # a warm run need not import the rules to know the codes
        from .cache import selected_codes

        codes = selected_codes(
            cache_dir,
            [
                opts.select,
                opts.ignore,
                opts.extend_select,
                opts.extend_ignore,
                opts.enable_extensions,
            ],
            opts.codes,
        )
    else:
        codes = opts.codes()
    files = discover(
        opts.paths,
        opts.extend_exclude,
        opts.exclude,
        opts.respect_gitignore,
    )
    if opts.dependents and not opts.no_project_wide:
        files += _dependents(files, opts)
    file_codes: Dict[str, Sequence[str]] = {}
    for path in files:
        own = opts.file_codes(opts.stdin_display_name if path == "-" else path)
        if own is not None:
            file_codes[path] = own
    on_disk = [f for f in files if f != "-"]
    outcomes = run_files(
        on_disk,
        codes,
        opts.disable_noqa,
        mode,
        opts.jobs,
        cache_dir,
        not opts.no_project_wide,
        file_codes,
        opts.max_line_length,  # [flake8] max-line-length: a fix keeps to it
    )
    _prune_cache(cache_dir, outcomes)
    data = None
    if "-" in files:
        import sys

        data = sys.stdin.buffer.read()
        outcomes.insert(files.index("-"), lint_stdin(opts, data, file_codes.get("-", codes), mode))
    return Run(codes, outcomes, len(files), data)


def lint_stdin(opts: Options, data: bytes, codes: Sequence[str], mode: str) -> FileOutcome:
    """The text on stdin, reported under ``--stdin-display-name`` (an editor's
    buffer): a notebook when that name ends in ``.ipynb``.  Project-wide
    analysis follows the calls when the name is a file of the project."""
    name = opts.stdin_display_name
    lint = _lint_notebook if name.endswith(".ipynb") else _lint_python
    project = make_project(name, None) if not opts.no_project_wide else None
    try:
        return lint(name, data, codes, opts.disable_noqa, mode, project, opts.max_line_length)
    except Exception as exc:  # as lint_file: never lose the run to one text
        return FileOutcome(
            name,
            problems=[
                Problem(name, f"internal error {type(exc).__name__}: {exc}; please report it")
            ],
        )


# -- writing the fixes ---------------------------------------------------------------


@dataclass
class Written:
    """What ``write_fixes`` did: findings fixed, files written, files not written."""

    fixed: int = 0
    files: int = 0
    problems: List[Problem] = field(default_factory=list)


def write_fixes(outcomes: Sequence[FileOutcome]) -> Written:
    """Write every fixed file through ``atomic``: in one step (a fault leaves
    the old file whole) and only over the bytes that were analysed.  A file
    not written gets a one-line ``Problem`` on its outcome, and its outcome
    reports the findings the file on disk still holds."""
    from ..core.atomic import WriteError, write_bytes

    done = Written()
    for o in outcomes:
        if o.new_data is None:
            continue
        try:
            write_bytes(o.path, o.new_data, expected=o.old_data)
        except WriteError as exc:  # FileChanged too: the file is as someone else left it
            problem = Problem(o.path, f"not fixed: {exc}")
            o.problems.append(problem)
            done.problems.append(problem)
            o.items, o.new_data, o.fixed = o.old_items, None, 0
            continue
        done.fixed += o.fixed
        done.files += 1
    return done
