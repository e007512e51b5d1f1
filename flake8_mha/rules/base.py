"""The shape of a rule: one class per code, registered by subclassing.

A rule holds its code, name, message, documentation (ruff's sections) and
its VALID/INVALID examples together with its logic.  It subscribes to the
events it cares about by defining ``on_construction``, ``on_module_call``,
``on_sdpa_call`` or ``on_call``; each yields ``Report``s.

Rules live one per module (or one module per pair of tightly coupled
rules) in this package, each module with its autofix beside it
(``FIX = register(Fix(...))``, see ``rules/autofix.py``).  :func:`all_rules`
finds them: every module of the package whose name does not start with an
underscore (helpers shared by rule modules), except this one and
``autofix``.  A module that fails to import stops the run
with one line naming it (:class:`RuleLoadError`): a rule that vanished
silently would report a clean file that is not.  docs/adding-a-rule.md has
the steps.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, List, Literal, Optional, Tuple, get_args

import libcst as cst

REGISTRY: Dict[str, type] = {}
DOCS_URL = "https://github.com/flake8-mha/flake8-mha/blob/main/docs/rules/{code}.md"
Category = Literal["correctness", "performance", "opinionated", "internal"]
CATEGORIES: Tuple[str, ...] = get_args(Category)


@dataclass(frozen=True)
class Example:
    """An INVALID example: the code, and where the finding must be (1-based)."""

    source: str
    line: int
    col: int
    fixed: Optional[str] = None  # the expected rewrite, for rules with a safe fix


@dataclass
class Report:
    node: cst.CSTNode
    message: str
    evidence: Dict[str, Any] = field(default_factory=dict)


class Rule:
    CODE: ClassVar[str] = ""
    NAME: ClassVar[str] = ""
    MESSAGE: ClassVar[str] = ""  # one sentence: the problem and its consequence
    DEFAULT_ENABLED: ClassVar[bool] = True
    CATEGORY: ClassVar[Category] = "correctness"
    WHAT: ClassVar[str] = ""
    WHY: ClassVar[str] = ""
    EXAMPLE: ClassVar[str] = ""
    USE_INSTEAD: ClassVar[str] = ""
    DECISIONS: ClassVar[str] = ""  # scope decisions and edge cases settled
    REFERENCES: ClassVar[Tuple[str, ...]] = ()
    VALID: ClassVar[List[str]] = []
    INVALID: ClassVar[List[Example]] = []

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.CODE:
            if cls.CODE in REGISTRY:
                raise RuntimeError(f"duplicate rule code {cls.CODE}")
            if cls.CATEGORY not in CATEGORIES:
                raise RuntimeError(f"{cls.CODE}: unknown category {cls.CATEGORY!r}")
            REGISTRY[cls.CODE] = cls

    def __init__(self, ctx) -> None:
        self.ctx = ctx

    def report(
        self,
        node: cst.CSTNode,
        evidence: Optional[Dict[str, Any]] = None,
        message: Optional[str] = None,
        **fmt: Any,
    ) -> Report:
        text = (message or self.MESSAGE).format(**fmt) if (fmt or message) else self.MESSAGE
        return Report(node, text, dict(evidence or {}))


class RuleLoadError(SystemExit):
    """A rule module failed to import.

    A ``SystemExit`` on purpose: the run must stop (the engine turns ordinary
    exceptions into one MHA000 per file, which would hide a missing rule
    behind a wall of per-file errors), and every entry point (the CLI, the
    flake8 plugin, ``confirm``) then ends with this one line on stderr and
    exit status 1 instead of a traceback.  In flake8's worker processes
    (``-j 2`` and more), where an exit would leave flake8 waiting for the
    worker forever, the plugin gives the line as each analysed file's MHA000
    (tests/test_plugin_broken_rule.py)."""

    def __init__(self, module: str, exc: BaseException):
        self.module = module
        self.error = exc
        first = (str(exc).strip().splitlines() or [""])[0]
        super().__init__(
            f"flake8-mha: rule module {module} failed to import: "
            f"{type(exc).__name__}: {first}".rstrip(": ")
        )


# modules of this package that hold no static rule (runtime: the sanitizer's codes,
# documented like rules but never reported statically; docs.py loads it by name)
NOT_RULES = ("base", "autofix", "construction", "runtime")


# the package's path -> its rule modules, and the paths whose modules all imported:
# a listing of the directory for each file linted cost 1.7 ms (issue 30)
_LISTED: Dict[tuple, List[str]] = {}
_IMPORTED: set = set()


def rule_modules() -> List[str]:
    """The importable names of the rule modules of this package, sorted."""
    from . import __path__ as path, __name__ as package

    key = tuple(path)
    if key not in _LISTED:
        _LISTED[key] = sorted(
            f"{package}.{info.name}"
            for info in pkgutil.iter_modules(path)
            if not info.name.startswith("_") and info.name not in NOT_RULES
        )
    return list(_LISTED[key])


def all_rules() -> List[type]:
    """Every rule class, by code.  Raises :class:`RuleLoadError` when a rule
    module does not import."""
    from . import __path__ as path

    if tuple(path) not in _IMPORTED:
        for name in rule_modules():
            try:
                importlib.import_module(name)
            except Exception as exc:
                raise RuleLoadError(name, exc) from exc
        _IMPORTED.add(tuple(path))
    return [REGISTRY[code] for code in sorted(REGISTRY)]
