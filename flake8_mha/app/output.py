"""Report formats for ``flake8-mha check``: text, json, sarif, github.

``Item`` and ``Problem`` (what a run found) are the lint pipeline's; they are
imported here for the formats, and kept importable from here.

Every format is a pure function of the run's items and problems, so the
output is the same whatever ``-j`` was.  The JSON schema is versioned
(``"version": 1``) and documented in docs/cli.md; SARIF follows the 2.1.0
schema that GitHub code scanning accepts.
"""

from __future__ import annotations

import json
import os
import re
import textwrap
from typing import Dict, List, Optional, Sequence, Tuple
from urllib.parse import quote

from .. import __version__
from .pipeline import Item, Problem

JSON_SCHEMA_VERSION = 1
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/flake8-mha/flake8-mha"
LEVELS = {
    "correctness": "error",
    "internal": "error",
    "performance": "warning",
    "opinionated": "note",
}


def statistics(items: Sequence[Item]) -> Dict[str, int]:
    counts: Dict[str, int] = {}
    for item in items:
        counts[item.code] = counts.get(item.code, 0) + 1
    return dict(sorted(counts.items()))


def statistics_lines(items: Sequence[Item]) -> List[str]:
    """flake8's ``--statistics``: count, code, and the first message (by file) for it."""
    first: Dict[str, str] = {}
    for item in sorted(items, key=lambda i: i.finding.path):
        first.setdefault(item.code, item.finding.message)
    return [f"{count:<5} {code} {first[code]}" for code, count in statistics(items).items()]


def render(
    fmt: str,
    items: Sequence[Item],
    problems: Sequence[Problem],
    codes: Sequence[str],
    show_statistics: bool = False,
    root: Optional[str] = None,
    source: Optional["SourceLines"] = None,
) -> str:
    """``source``: text and github formats show each finding's line under it
    (``--show-source``)."""
    if fmt == "json":
        return render_json(items, problems) + "\n"
    if fmt == "sarif":
        return render_sarif(items, problems, codes, root) + "\n"
    if fmt == "github":
        lines = [github_line(i) for i in items] + [github_problem(p) for p in problems]
    else:
        lines = [i.text() for i in items]
    if source is not None and fmt == "text":
        lines = [line + source.shown(i) for line, i in zip(lines, items)]
    if show_statistics:
        lines += statistics_lines(items)
    return "".join(line + "\n" for line in lines)


class SourceLines:
    """The line of a finding, and a caret under its column, as flake8's
    ``--show-source`` prints them; read once per file (a notebook's line is
    its cell's)."""

    def __init__(self, stdin: Optional[bytes] = None, stdin_name: str = "stdin") -> None:
        self.stdin, self.stdin_name = stdin, stdin_name
        self.files: Dict[Tuple[str, Optional[int]], List[str]] = {}

    def _lines(self, path: str, cell_index: Optional[int]) -> List[str]:
        key = (path, cell_index)
        if key not in self.files:
            try:
                if self.stdin is not None and path == self.stdin_name:
                    data = self.stdin
                else:
                    with open(path, "rb") as fh:
                        data = fh.read()
                text = data.decode("utf-8-sig", errors="replace")
                if cell_index is not None:
                    cell = json.loads(text)["cells"][cell_index]["source"]
                    text = "".join(cell) if isinstance(cell, list) else cell
                self.files[key] = text.splitlines()
            except (OSError, ValueError, KeyError, IndexError, TypeError):
                self.files[key] = []
        return self.files[key]

    def shown(self, item: Item) -> str:
        f = item.finding
        lines = self._lines(f.path, item.cell_index)
        if not 0 < f.line <= len(lines):
            return ""
        line = lines[f.line - 1]
        pad = "".join(c if c.isspace() else " " for c in line[: f.col - 1])
        return f"\n{line}\n{pad}^"


# -- json ---------------------------------------------------------------------


def render_json(items: Sequence[Item], problems: Sequence[Problem]) -> str:
    from ..rules.base import REGISTRY, all_rules

    all_rules()  # the names; a run whose results all came from the cache loaded no rule
    doc = {
        "version": JSON_SCHEMA_VERSION,
        "tool": {"name": "flake8-mha", "version": __version__},
        "findings": [
            {
                "path": i.finding.path,
                "line": i.finding.line,
                "col": i.finding.col,
                "cell": i.cell,
                "cell_index": i.cell_index,
                "code": i.code,
                "name": getattr(REGISTRY.get(i.code), "NAME", ""),
                "message": i.finding.message,
                "fixable": i.fixable,
                "evidence": dict(i.finding.evidence),
            }
            for i in items
        ],
        "errors": [p.as_dict() for p in problems],
        "statistics": statistics(items),
    }
    return json.dumps(doc, indent=2, sort_keys=False, default=str)


# -- github workflow commands -------------------------------------------------


def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def github_level(code: str) -> str:
    """The annotation level of a code: ``notice`` for an opt-in code (MHA9xx),
    ``warning`` for a performance code (MHA1xx), ``error`` for the rest
    (correctness, and MHA000: a file the analyzer could not read)."""
    from ..rules.base import REGISTRY, all_rules

    all_rules()
    rule = REGISTRY.get(code)
    if rule is None:
        return "error"
    if not rule.DEFAULT_ENABLED:
        return "notice"
    return "warning" if rule.CATEGORY == "performance" else "error"


def github_line(item: Item) -> str:
    f = item.finding
    if item.cell is not None:
        line = item.file_line or 1
        props = f"file={_gh_prop(f.path)},line={line},title={_gh_prop(f.code)}"
        message = f"cell_{item.cell}:{f.line}:{f.col}: {f.message}"
    else:
        props = f"file={_gh_prop(f.path)},line={f.line},col={f.col},title={_gh_prop(f.code)}"
        message = f.message
    return f"::{github_level(f.code)} {props}::{_gh_data(message)}"


def github_problem(p: Problem) -> str:
    props = f"file={_gh_prop(p.path)}"
    line = p.file_line if p.cell is not None else p.line
    if line is not None:
        props += f",line={line}"
        if p.cell is None and p.col is not None:
            props += f",col={p.col}"
    props += ",title=E999"
    return f"::error {props}::{_gh_data(p.text())}"


# -- sarif ----------------------------------------------------------------------


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", textwrap.dedent(text or "")).strip()


def _first_sentence(text: str) -> str:
    flat = _flat(text)
    m = re.match(r"(.+?[.:])(\s|$)", flat)
    return m.group(1) if m else flat


def sarif_rule(rule) -> dict:
    from ..rules.base import DOCS_URL

    category = getattr(rule, "CATEGORY", "correctness")
    short = _first_sentence(rule.WHAT) or rule.NAME
    full = " ".join(part for part in (_flat(rule.WHAT), _flat(rule.WHY)) if part) or short
    from .docs import page

    docs = page(rule)
    level = LEVELS.get(category, "warning")
    return {
        "id": rule.CODE,
        "name": rule.NAME,
        "shortDescription": {"text": short},
        "fullDescription": {"text": full},
        "help": {"text": docs, "markdown": docs},
        "helpUri": DOCS_URL.format(code=rule.CODE),
        "defaultConfiguration": {"level": level, "enabled": bool(rule.DEFAULT_ENABLED)},
        "properties": {
            "tags": [category],
            "problem.severity": {"error": "error", "warning": "warning"}.get(
                level, "recommendation"
            ),
        },
    }


def artifact_uri(path: str, root: Optional[str] = None) -> str:
    """Relative to ``root`` (default: the current directory), forward slashes, URI-escaped."""
    root = os.path.abspath(root or os.getcwd())
    rel = os.path.relpath(os.path.abspath(path), root)
    rel = rel.replace(os.sep, "/")
    return quote(rel, safe="/-_.~")


def render_sarif(
    items: Sequence[Item],
    problems: Sequence[Problem],
    codes: Sequence[str],
    root: Optional[str] = None,
) -> str:
    from ..rules.base import REGISTRY, all_rules

    all_rules()
    wanted = sorted(set(codes) | {i.code for i in items})
    rules = [REGISTRY[c] for c in wanted if c in REGISTRY]
    index = {r.CODE: n for n, r in enumerate(rules)}
    results = []
    for item in items:
        f = item.finding
        rule = REGISTRY.get(f.code)
        level = LEVELS.get(getattr(rule, "CATEGORY", "correctness"), "warning")
        physical: dict = {
            "artifactLocation": {"uri": artifact_uri(f.path, root), "uriBaseId": "%SRCROOT%"}
        }
        props: dict = {}
        if item.cell is not None:
            if item.file_line is not None:
                physical["region"] = {"startLine": item.file_line}
            props = {
                "cell": item.cell,
                "cellIndex": item.cell_index,
                "cellLine": f.line,
                "cellColumn": f.col,
            }
        else:
            physical["region"] = {"startLine": f.line, "startColumn": f.col}
        result = {
            "ruleId": f.code,
            "level": level,
            "message": {
                "text": f.message
                if item.cell is None
                else f"cell_{item.cell}:{f.line}:{f.col}: {f.message}"
            },
            "locations": [{"physicalLocation": physical}],
        }
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        if props:
            result["properties"] = props
        results.append(result)
    notifications = []
    for p in problems:
        note: dict = {"level": "error", "message": {"text": p.text()}, "descriptor": {"id": "E999"}}
        physical = {
            "artifactLocation": {"uri": artifact_uri(p.path, root), "uriBaseId": "%SRCROOT%"}
        }
        line = p.file_line if p.cell is not None else p.line
        if line is not None:
            physical["region"] = {"startLine": line}
            if p.cell is None and p.col is not None:
                physical["region"]["startColumn"] = p.col
        note["locations"] = [{"physicalLocation": physical}]
        notifications.append(note)
    root_path = os.path.abspath(root or os.getcwd()).replace(os.sep, "/")
    root_uri = "file://" + quote(
        root_path if root_path.startswith("/") else "/" + root_path, safe="/:"
    )
    if not root_uri.endswith("/"):
        root_uri += "/"
    run = {
        "tool": {
            "driver": {
                "name": "flake8-mha",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": [sarif_rule(r) for r in rules],
            }
        },
        "invocations": [
            {"executionSuccessful": not problems, "toolExecutionNotifications": notifications}
        ],
        "originalUriBaseIds": {"%SRCROOT%": {"uri": root_uri}},
        "columnKind": "unicodeCodePoints",
        "results": results,
    }
    doc = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(doc, indent=2)


# -- ending a run -------------------------------------------------------------------

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for Ctrl-C
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a closed pipe


def guarded(prog: str, main, argv) -> int:
    """``main(argv)``, ended quietly when the reader of our output goes away
    (``| head``) or the user presses Ctrl-C: one line of message, no traceback."""
    import sys

    try:
        return main(argv)
    except KeyboardInterrupt:
        try:
            sys.stderr.write(f"\n{prog}: interrupted\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        _end_now_if_threads_run()
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE


def _end_now_if_threads_run() -> None:
    """Exit 130 at once when another thread still runs.

    The engine analyzes on a daemon thread with a large stack; Ctrl-C reaches
    the main thread while that thread may be inside LibCST's native parser.
    Normal interpreter shutdown would stop it mid-native-frame, which aborts
    the process (SIGABRT) instead of exiting 130.  Nothing is left to write:
    the report was not printed, and stdio is flushed first."""
    import sys
    import threading

    if threading.active_count() <= 1:
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(EXIT_INTERRUPTED)


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush of what is
    still buffered does not fail again on the closed pipe."""
    import sys

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
