"""``.gitignore`` files, read as git reads them, for the walk of directories
(``pipeline.discover``): a file that git ignores is not linted, as in ruff,
unless ``--no-respect-gitignore`` is given.

Each ``.gitignore`` holds patterns relative to its own directory; those of a
deeper directory come later and so win, and the last pattern that matches a
path decides (``!pattern`` takes a path back).  A pattern with a slash other
than a trailing one is anchored to its directory; one without matches a name
at any depth; a trailing slash matches directories only; ``*`` and ``?`` do
not cross a slash, ``**`` does.  A directory that is ignored is not entered,
so nothing below it can be taken back (git's rule too).

The ``.gitignore`` files above a walked directory count up to the root of
the git work tree (the nearest directory with ``.git``); outside a work tree
only those at and below the walked directory do.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import List, Optional, Pattern, Tuple


@dataclass(frozen=True)
class Rule:
    base: str  # absolute directory of the .gitignore
    regex: Pattern[str]
    negated: bool
    dir_only: bool


def _translate(pattern: str) -> str:
    """A gitignore glob (already stripped of ``!``, anchoring and trailing
    slash) as a regular expression over a slash-separated relative path."""
    out: List[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i) and (i == 0 or pattern[i - 1] == "/"):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i) and i + 2 == n and (i == 0 or pattern[i - 1] == "/"):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end < 0:
                out.append(re.escape(c))
                i += 1
                continue
            body = pattern[i + 1 : end]
            if body[:1] in ("!", "^"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def parse(text: str, base: str) -> List[Rule]:
    rules = []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if not line or line.startswith("#"):
            continue
        # trailing spaces are dropped unless escaped
        stripped = line.rstrip(" ")
        if stripped.endswith("\\") and len(stripped) < len(line):
            stripped += " "
        line = stripped
        negated = line.startswith("!")
        if negated:
            line = line[1:]
        if line.startswith(("\\!", "\\#")):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        body = _translate(line)
        regex = re.compile(("" if anchored else "(?:.*/)?") + body + r"\Z", re.S)
        rules.append(Rule(base, regex, negated, dir_only))
    return rules


def read(directory: str) -> List[Rule]:
    """The rules of ``directory/.gitignore`` (none when it has none or it cannot be read)."""
    path = os.path.join(directory, ".gitignore")
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return parse(fh.read(), os.path.abspath(directory))
    except OSError:
        return []


def work_tree(directory: str) -> Optional[str]:
    here = os.path.abspath(directory)
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def inherited(directory: str) -> List[Rule]:
    """The rules that apply in ``directory``, from the work tree's root down to it."""
    top = work_tree(directory)
    here = os.path.abspath(directory)
    if top is None:
        return read(here)
    chain: List[str] = []
    while True:
        chain.append(here)
        if here == top:
            break
        here = os.path.dirname(here)
    return [rule for d in reversed(chain) for rule in read(d)]


def ignored(path: str, is_dir: bool, rules: List[Rule]) -> bool:
    """Whether the last rule matching ``path`` ignores it."""
    absolute = os.path.abspath(path)
    decision: Tuple[bool, ...] = ()
    for rule in rules:
        if rule.dir_only and not is_dir:
            continue
        rel = os.path.relpath(absolute, rule.base)
        if rel.startswith(".."):
            continue
        if rule.regex.match(rel.replace(os.sep, "/")):
            decision = (not rule.negated,)
    return bool(decision and decision[0])
