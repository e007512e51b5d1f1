"""The analysis core: pre-filter, one LibCST parse, one flow pass, every rule.

Never imports torch.  ``analyze_source`` is what the flake8 adapter and the
CLI call (through the lint pipeline, ``pipeline.py``, which walks, reads and
decodes files for every entry point).
"""

from __future__ import annotations

import ast
import io
import os
import re
import sys
import threading
import tokenize
import warnings
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import libcst as cst

from ..core import collector, positions, torch_api
from ..core import screen as screen_mod
from ..analysis.events import Construction, FillCall, ModuleCall, SdpaCall, classify
from ..core.findings import Finding
from ..analysis.flow import CallSite, FlowPass
from ..analysis.focus import focus
from ..analysis.layout import project_callers
from ..core.lines import source_lines
from ..analysis.program import returns, signatures
from ..analysis.program.callsites import Project
from .selection import PERFORMANCE, in_tests
from ..analysis.program.wrapped import WrappedModuleCall, annotate
from ..analysis.program.handed_params import reaches_a_sink
from ..analysis.resolve import Resolver
from ..rules.base import all_rules
from ..analysis.values import value_of
from . import facts, reparse

MAX_BYTES = 8 * 1024 * 1024
_HANDLERS = {
    Construction: "on_construction",
    ModuleCall: "on_module_call",
    WrappedModuleCall: "on_module_call",
    SdpaCall: "on_sdpa_call",
    FillCall: "on_fill_call",
}


class SourceSyntaxError(Exception):
    """The file is not valid Python (flake8 reports E999; the CLI says so)."""

    def __init__(self, message: str, line: int = 1, col: int = 1):
        super().__init__(message)
        self.line = line
        self.col = col


collector.loaded()  # what the plugin settles after its first analysis (collector.py)


def prefilter(source: str) -> bool:
    """Cheap text test: can this file contain an attention API at all?  Its
    code is read once the file is parsed with ``ast`` (``screen.py``)."""
    return screen_mod.text_names_a_trigger(source)


def _gated_in(source: str, path: str, project, tree) -> bool:
    """The project-aware gate, for a file without an attention word: it calls
    a project function, or builds a project class, that reaches a sink
    (``program.files.ProjectFiles.gate``; a run's own project records what it
    reads as the file's dependencies).  Never with ``project`` False (this
    file alone)."""
    if project is False or project is None or not getattr(project, "files", True):
        return False
    tree = tree if isinstance(tree, ast.Module) else None
    if not isinstance(project, Project):
        return reaches_a_sink(source, path, tree)
    return project.gate(source, tree)


def default_codes() -> List[str]:
    return [rule.CODE for rule in all_rules() if rule.DEFAULT_ENABLED and rule.CODE != "MHA000"]


class Context:
    """What rules may ask about the file being analyzed."""

    def __init__(self, module: cst.Module, flow: FlowPass, resolver: Resolver):
        self.module = module
        self.flow = flow
        self.resolver = resolver
        self.events: List[object] = []
        self._calls_by_ctor: Optional[Dict[int, List[ModuleCall]]] = None
        # analyses made lazily for this file (``masks.analysis_for`` keeps its
        # MaskAnalysis here): they live and die with the file's Context
        self.analyses: Dict[str, object] = {}

    def value(self, node: cst.CSTNode, site: CallSite):
        return value_of(node, site.env, site.scope)

    def name_read(self, name: str, site: CallSite) -> bool:
        """Whether ``name`` is read anywhere in the function around ``site`` (or its closures)."""
        scope = site.scope
        while scope is not None and scope.kind != "function" and scope.parent is not None:
            scope = scope.parent
        if name in scope.loads:
            return True
        for inner in self.flow.functions.values():
            parent = inner.parent
            while parent is not None:
                if parent is scope:
                    if name in inner.loads:
                        return True
                    break
                parent = parent.parent
        return False

    def module_calls_of(self, ev: Construction) -> List[ModuleCall]:
        """The calls that run the module built at ``ev``: the calls of its
        instances; for the ``super().__init__(...)`` of a subclass with an
        ``__init__`` of its own and torch's ``forward``, the calls of every
        instance of that subclass in the file (each runs torch's ``forward``
        with the arguments that call gives: pero-ocr's ``EncLayer(d, h)``)."""
        if self._calls_by_ctor is None:
            index: Dict[int, List[ModuleCall]] = {}
            for other in self.events:
                if isinstance(other, ModuleCall):
                    for inst in other.instances:
                        if inst.ctor is not None:
                            index.setdefault(id(inst.ctor.node), []).append(other)
                        elif inst.subclass is not None and not inst.overrides_forward:
                            index.setdefault(id(inst.subclass), []).append(other)
            self._calls_by_ctor = index
        got = self._calls_by_ctor.get(id(ev.site.node), [])
        if ev.via == "super" and ev.cls is not None:
            got = got + self._calls_by_ctor.get(id(ev.cls), [])
        return got

    def used_for_self_attention(self, ev: Construction) -> bool:
        for call in self.module_calls_of(ev):
            qkv = torch_api.MULTIHEAD_ATTENTION.forward.names[:3]  # query, key, value
            q, k, v = (call.args.get(n) for n in qkv)
            if (
                q is not None
                and k is not None
                and v is not None
                and q.deep_equals(k)
                and k.deep_equals(v)
            ):
                return True
        return False


def analyze_module(
    module: cst.Module, codes: Optional[Iterable[str]] = None, path: str = "", project=None
) -> List[Finding]:
    """``project``: a ``project.Project`` to see calls of the project's own
    attention wrappers in other files (None: this file alone)."""
    contexts: List[Context] = []
    try:
        return _analyze_module(module, codes, path, contexts, project)
    finally:
        for ctx in contexts:
            _forget(ctx)
        signatures.given_tree(None, None)  # flake8's ``ast`` of the file goes with it


def _forget(ctx: Context) -> None:
    """Drop what analyses cached for this file.

    A MaskAnalysis holds its Context, so the pair is a cycle that only a
    garbage collection frees, and the engine pauses collection while a file
    is analyzed.  Clearing the store ends it at once, and so does releasing
    the flow pass's scopes: the file's trees are then freed by reference
    counting, and the collection that ends the pause (``collector.paused``)
    has little left to walk.  tests/test_robust_memory.py checks that no tree
    outlives its file.
    """
    ctx.analyses.clear()
    ctx.flow.release()
    ctx.__dict__.clear()  # the analyses a rule keeps on it point back at it
    positions.forget()
    returns.forget()


def _analyze_module(
    module: cst.Module,
    codes: Optional[Iterable[str]],
    path: str,
    contexts: List["Context"],
    project=None,
) -> List[Finding]:
    flow = FlowPass()
    flow.run(module)
    if project is not None:
        project.module = module  # positions of what a call site names (partial of SDPA)
    if project is not None and project.files:  # facts of the project (values.py)
        flow.module_scope.project = project
    resolver = Resolver(flow)
    if project is not None and project.files and os.path.isfile(path):
        project_callers.attach_readers(resolver, os.path.abspath(path))
    if project is not None and project.files:  # torch modules made by another file's factory
        resolver.imported_module = project.module_made
    ctx = Context(module, flow, resolver)
    ctx.project = project  # mask builders in other files (masks/evaluator.py)
    contexts.append(ctx)
    wanted = set(codes) if codes is not None else set(default_codes())
    if in_tests(path):  # a speed finding in a test is nobody's cost (docs/cli.md)
        wanted.difference_update(PERFORMANCE)
    rules = [rule(ctx) for rule in all_rules() if rule.CODE in wanted]
    if not rules:
        return []
    for site in flow.calls:
        ev = classify(site, resolver)
        if ev is None and project is not None:
            ev = project.classify(site, resolver)
        if ev is not None:
            ctx.events.append(ev)
            ctx.events.extend(getattr(ev, "more", ()))
    reports: List[tuple] = []
    # the fills of this file judged at their callers instead (their masks are
    # each caller's: RULES.md, where the fact enters the chain)
    judged = facts.fills_judged_by_callers(ctx.events, project, module, flow)
    # rules that look at every call (mask sinks such as masked_fill) get the raw sites
    for rule in rules:
        method = getattr(rule, "on_call", None)
        if method is not None:
            for site in flow.calls:
                if rule.CODE in facts.FILL_CODES and id(site.node) in judged:
                    continue
                for rep in method(site):
                    reports.append((rule.CODE, rep))
    added = facts.additions_judged_by_callers(ctx.events, project, module, reports)
    if added:
        reports = [(code, rep) for code, rep in reports if id(rep) not in added]
    ctx.callers_args = {}  # module calls' masks judged at the callers (MaskAnalysis.module_sinks)
    decided = facts.decided_by_callers(ctx.events, project, ctx.callers_args)
    dead_memo: Dict = {}  # methods run only from branches the program never takes
    alternatives: set = set()  # (code, call) reported from one of a call's alternatives
    located = []
    asks = getattr(project, "asks", None)
    for ev in ctx.events:
        if isinstance(ev, Construction) and (
            facts.never_built(ev, project) or facts.handed_another(ev, project)
        ):
            continue
        if (ev.site.conds or ev.site.parents) and facts.dead_in_program(ev.site):
            continue
        if facts.dead_method(ev.site, flow.calls, dead_memo):
            continue
        handler = _HANDLERS[type(ev)]
        for rule in rules:
            method = getattr(rule, handler, None)
            if method is None or rule.CODE in decided.get(id(ev), ()):
                continue
            if isinstance(ev, WrappedModuleCall) and rule.CODE not in ev.CODES:
                continue
            before = len(asks) if asks is not None else 0
            made = list(method(ev))
            asked = asks[before:] if made and asks is not None else ()
            if made and (getattr(ev, "through", None) or {}).get("alternative"):
                # one of the things a call may run (callsites: ``others``): a
                # code another of them gave at this call is not given twice
                key = (rule.CODE, id(ev.site.node))
                if key in alternatives:
                    continue
                alternatives.add(key)
            for rep in made:
                reports.append((rule.CODE, annotate(rep, ev)))
                located.append((rule.CODE, rep, ev, asked))
    for code, rep, ev, asked in located:  # once every rule has asked what it needs of the project
        carried = facts.carried(code, ev)
        facts.settled(rep, ev, project, carried)
        if asked:
            facts.from_callers(rep, ev, asked, carried)
    if not reports:
        return []
    starts = start_positions(module, [rep.node for _, rep in reports])
    findings = set()
    for code, rep in reports:
        line, col0 = starts[id(rep.node)]
        findings.add(Finding(code, line, col0 + 1, rep.message, path, rep.evidence))
    return sorted(findings, key=lambda f: (f.line, f.col, f.code, f.message))


def start_positions(module: cst.Module, nodes: Sequence[cst.CSTNode]) -> Dict[int, Tuple[int, int]]:
    """``id(node) -> (line, 0-based column)`` of each node's start, as LibCST's
    ``PositionProvider`` reports it (``positions.py``: a lean codegen that stops
    once the last of them is done)."""
    return positions.start_positions(module, nodes)


def analyze_source(
    source: str,
    path: str = "<string>",
    codes: Optional[Iterable[str]] = None,
    use_prefilter: bool = True,
    tree: Optional[ast.AST] = None,
    project: object = "auto",
) -> List[Finding]:
    """Findings for one file's text.  Raises ``SourceSyntaxError`` for a file
    that is not valid Python; every other failure becomes one MHA000.

    ``tree``: the file's ``ast`` when the caller has it (flake8 does); it
    proves that Python parsed the file, which spares a check (see
    ``_nesting_guard``).  ``project``: a ``project.Project`` (calls of the
    project's wrappers in other files), False for this file alone, or "auto":
    a Project when ``path`` is a file on disk (summaries kept in memory)."""
    try:
        by_text = prefilter(source)
        if use_prefilter and not by_text and not _gated_in(source, path, project, tree):
            return []
        if len(source) > MAX_BYTES:
            return [
                _internal(path, f"file larger than {MAX_BYTES // (1024 * 1024)} MiB, not analyzed")
            ]
        with collector.paused():
            return _on_deep_stack(
                _parse_and_analyze, source, path, codes, tree, project, use_prefilter and by_text
            )
    except SourceSyntaxError:
        raise
    except RecursionError:
        return [_internal(path, "nesting too deep to analyze")]
    except MemoryError:
        return [_internal(path, "out of memory while analyzing")]
    except Exception as exc:  # never let one file stop the run
        return [_internal(path, f"internal error {type(exc).__name__}: {exc}; please report it")]


def _ast_or_none(source: str) -> Optional[ast.Module]:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # focus then parses the file whole


def _parse_and_analyze(
    source: str,
    path: str,
    codes: Optional[Iterable[str]],
    tree: Optional[ast.AST],
    project=None,
    code_screen: bool = False,
) -> List[Finding]:
    """``code_screen``: the file passed the text pre-filter; once parsed with
    ``ast``, a file whose trigger words are all in comments and docstrings
    goes to the project-aware gate, as a file without one does."""
    # a function of its own so that the tree is unreachable once it returns
    screened = _screen(source)
    if tree is None:
        refused = _nesting_guard(source, path, screened)
        if refused is not None:
            return [refused]
    try:
        # only what can matter is parsed (focus.py: same lines and columns); a file with
        # a very long line or deep brackets, where LibCST's parser may give up, is
        # parsed whole, so that its refusal (MHA000) stays what it was (a long
        # bracketed span alone is data, such as torch's 25,000-line ``op_db``: focused)
        if project == "auto":
            project = Project(path) if os.path.isfile(path) else None
        if not project:  # this file alone: its own wrappers are still followed
            project = Project(path, files=False)
        screen = None
        if screened != _DEEP:
            screen = tree if isinstance(tree, ast.Module) else _ast_or_none(source)
        if (
            code_screen
            and screen is not None
            and not screen_mod.code_names_a_trigger(screen)
            and not _gated_in(source, path, project, screen)
        ):
            return []
        project.again = reparse.again(path)  # its summaries' unchanged parts are kept
        project.own(source, screen)  # its own summaries read this ``ast`` (not parsed again)
        text = source
        if screen is not None:
            keep = project.imported_names(screen) if project else ()
            text = focus(source, screen, keep=keep)
        # a file linted again in this process: only its changed statements (reparse.py)
        module = reparse.parse(text, screen, path)
    except cst.ParserSyntaxError as exc:
        _raise_if_invalid_python(source, exc)
        why = _mixed_indentation(source) or _first_line(exc)
        return [_internal(path, f"LibCST cannot parse this file ({why})")]
    return analyze_module(module, codes, path, project)


def _mixed_indentation(source: str) -> Optional[str]:
    """Where a file Python compiles first indents with tabs after spaces or
    spaces after tabs (LibCST refuses it, and points at line 1): release
    review 29's diffnovo-dia data script."""
    seen = set()
    for number, line in enumerate(source.splitlines(), 1):
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        if not indent or not line.strip():
            continue
        kinds = {c for c in indent}
        seen |= kinds
        if len(kinds) > 1 or len(seen) > 1:
            return f"its indentation mixes tabs and spaces from line {number}"
    return None


# LibCST's native parser recurses on the C stack once per nesting level (a
# 10,000-term ``a and b and ...`` is 10,000 levels, though Python's own ast
# keeps it flat): on the 8 MiB main-thread stack that is a segmentation
# fault that kills flake8.  A thread with a large stack (address space,
# touched only as deep as the file goes) parses it, and has room for a
# recursion limit that lets the flow pass walk what LibCST could parse.
STACK_BYTES = 512 * 1024 * 1024
RECURSION_LIMIT = 50_000


def _on_deep_stack(fn, *args):
    result: Dict[str, object] = {}

    def target() -> None:
        try:
            result["value"] = fn(*args)
        except BaseException as exc:  # re-raised in the caller's thread
            result["error"] = exc

    old_limit = sys.getrecursionlimit()
    try:
        old_size = threading.stack_size(STACK_BYTES)
    except (ValueError, RuntimeError):  # pragma: no cover - platform without it
        return fn(*args)
    try:
        thread = threading.Thread(target=target, name="flake8-mha", daemon=True)
        thread.start()
    except RuntimeError:  # pragma: no cover - no thread to be had: do it here
        return fn(*args)
    finally:
        threading.stack_size(old_size)
    sys.setrecursionlimit(max(old_limit, RECURSION_LIMIT))
    try:
        thread.join()
    finally:
        sys.setrecursionlimit(old_limit)
    if "error" in result:
        raise result["error"]  # type: ignore[misc]
    return result["value"]


# CPython's own limits; each is far below the nesting at which LibCST's native
# parser overflows its stack and kills the process (about 2,000 brackets,
# 6,000 chained attributes or lambdas, measured with LibCST 1.9).
MAX_BRACKETS = 200
_NESTING_ERRORS = (
    "too many nested parentheses",
    "too many levels of indentation",
    "too many statically nested blocks",
)
_BRACKETS = re.compile(r"[][(){}]")


def _nesting_guard(source: str, path: str, screened: str) -> Optional[Finding]:
    """Keep from LibCST what could crash it: a file nested deeper than Python
    itself accepts.  Python's parser fails cleanly on those (SyntaxError,
    RecursionError, MemoryError); LibCST's native parser would take the whole
    process down with a stack overflow, or take minutes (its cost grows with
    the square of the depth).  Returns MHA000, raises SourceSyntaxError, or
    returns None to go on.  ``screened``: what ``_screen`` says of the source."""
    if screened == _SHALLOW:
        return None
    try:
        _quiet_ast_parse(source)
    except SyntaxError as err:
        msg = err.msg or ""
        if any(text in msg for text in _NESTING_ERRORS):
            raise _as_e999(err) from None
        # newer syntax than this Python knows, or invalid: LibCST decides,
        # unless brackets nest deeper than any Python accepts
        if _bracket_depth(source) > MAX_BRACKETS:
            return _internal(
                path, f"nesting too deep to analyze (more than {MAX_BRACKETS} brackets)"
            )
    except (RecursionError, MemoryError):
        return _internal(path, "nesting too deep to analyze (Python's own parser gives up on it)")
    except ValueError:  # null bytes: LibCST reports them
        pass
    return None


# Nesting N levels deep takes at least N tokens in one line or one bracketed
# span; below these bounds nothing is deep enough to trouble LibCST, and the
# screen (one pass over the brackets) costs a tenth of Python's parse.
_SHALLOW_DEPTH = 100
_SHALLOW_SPAN = 4000


_SHALLOW, _LONG, _DEEP = "shallow", "long", "deep"


def _screen(source: str) -> str:
    """``_SHALLOW``: nothing long or deep; ``_LONG``: a bracketed span longer than
    the bound and nothing else (a list of data, which LibCST parses whole as
    well as focused); ``_DEEP``: a line longer than the bound, or brackets
    nested deeper than ``_SHALLOW_DEPTH``."""
    if max(map(len, source_lines(source)), default=0) > _SHALLOW_SPAN:
        return _DEEP
    opened: List[int] = []
    long = False
    for match in _BRACKETS.finditer(source):
        if match.group() in "([{":
            opened.append(match.start())
            if len(opened) > _SHALLOW_DEPTH:
                return _DEEP
        elif opened and match.start() - opened.pop() > _SHALLOW_SPAN:
            long = True
    return _LONG if long else _SHALLOW


def _bracket_depth(source: str) -> int:
    depth = deepest = 0
    for ch in _BRACKETS.findall(source):
        if ch in "([{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif depth:
            depth -= 1
    return deepest


def _quiet_ast_parse(source: str) -> ast.AST:
    # without the SyntaxWarnings ("'int' object is not callable") Python's
    # compiler prints for odd but valid code: they are not ours to report
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source)


def _as_e999(err: SyntaxError) -> SourceSyntaxError:
    """flake8's E999 for the error: its text (``IndentationError: unexpected
    indent``) and its column (flake8 prints Python's 1-based offset plus one)."""
    return SourceSyntaxError(
        f"{type(err).__name__}: {err.msg}", err.lineno or 1, (err.offset or 0) + 1
    )


def _raise_if_invalid_python(source: str, exc: Exception) -> None:
    try:
        _quiet_ast_parse(source)
    except SyntaxError as err:
        raise _as_e999(err) from None
    except (ValueError, RecursionError, MemoryError):
        pass


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _internal(path: str, reason: str) -> Finding:
    return Finding(
        "MHA000",
        1,
        1,
        f"flake8-mha could not analyze this file: {reason}",
        path,
        {"reason": reason},
    )


def decode_source(data: bytes) -> str:
    """Decode as Python does (BOM, coding cookie, UTF-8 default)."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def analyze_file(
    path: str, codes: Optional[Iterable[str]] = None, use_prefilter: bool = True
) -> List[Finding]:
    """Findings for a file on disk.  Raises OSError and SourceSyntaxError."""
    with open(path, "rb") as fh:
        data = fh.read()
    if use_prefilter and not any(w.encode() in data for w in torch_api.TRIGGER_WORDS):
        # UTF-16/32 files would hide the words: they start with a BOM or NULs; a file
        # that imports may call a project wrapper, one that defines a function may be
        # handed the project's modules (the gate, in analyze_source)
        if not data.startswith((b"\xff\xfe", b"\xfe\xff")) and b"\x00" not in data[:4]:
            if b"import" not in data and b"def " not in data:
                return []
    try:
        source = decode_source(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        return [_internal(path, f"cannot decode the file ({_first_line(exc)})")]
    return analyze_source(source, path, codes, use_prefilter)


def select_codes(
    select: Optional[Sequence[str]] = None, ignore: Optional[Sequence[str]] = None
) -> List[str]:
    """Static codes enabled by prefix lists, by flake8's decision rules
    (``selection.Decider``): the default codes unless selected.  MHA000 is left out."""
    from .selection import Decider, codes

    decide = Decider(
        select=list(select) if select else None, ignore=list(ignore) if ignore else None
    )
    return [code for code in codes(decide) if code != "MHA000"]


if sys.version_info < (3, 9):  # pragma: no cover
    raise ImportError("flake8-mha needs Python 3.9+")
