"""The shape of a rule: one class per code, registered by subclassing.

A rule holds its code, name, message, documentation (ruff's sections) and
its VALID/INVALID examples together with its logic.  It subscribes to the
events it cares about by defining ``on_construction``, ``on_module_call`` or
``on_sdpa_call``; each yields ``Report``s.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, Iterator, List, Optional, Tuple

import libcst as cst

REGISTRY: Dict[str, type] = {}
DOCS_URL = "https://github.com/flake8-mha/flake8-mha/blob/main/docs/rules/{code}.md"


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
    FIX_TITLE: ClassVar[str] = ""
    DEFAULT_ENABLED: ClassVar[bool] = True
    CATEGORY: ClassVar[str] = "correctness"
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
            REGISTRY[cls.CODE] = cls

    def __init__(self, ctx) -> None:
        self.ctx = ctx

    def report(self, node: cst.CSTNode, evidence: Optional[Dict[str, Any]] = None,
               message: Optional[str] = None, **fmt: Any) -> Report:
        text = (message or self.MESSAGE).format(**fmt) if (fmt or message) else self.MESSAGE
        return Report(node, text, dict(evidence or {}))

    # docs ---------------------------------------------------------------------
    @classmethod
    def docs_markdown(cls) -> str:
        def block(code: str) -> str:
            return "```python\n" + textwrap.dedent(code).strip("\n") + "\n```"

        parts = [f"# {cls.CODE}: {cls.NAME}", ""]
        state = "on by default" if cls.DEFAULT_ENABLED else (
            "off by default: enable with `--select MHA9` or `--enable-extensions "
            f"{cls.CODE}`")
        parts += [f"Category: {cls.CATEGORY}; {state}.", "",
                  f"Message: `{cls.CODE} {cls.MESSAGE}`", ""]
        parts += ["## What it does", "", textwrap.dedent(cls.WHAT).strip(), ""]
        parts += ["## Why is this bad?", "", textwrap.dedent(cls.WHY).strip(), ""]
        parts += ["## Example", "", block(cls.EXAMPLE), ""]
        parts += ["## Use instead", "", block(cls.USE_INSTEAD), ""]
        if cls.DECISIONS:
            parts += ["## Scope decisions", "", textwrap.dedent(cls.DECISIONS).strip(), ""]
        witness = _witness(cls.CODE)
        if witness is not None:
            parts += ["## What the confirmer measures", "", witness.summary.strip(), "",
                      textwrap.dedent(witness.threshold_text).strip(), ""]
        if cls.FIX_TITLE:
            parts += ["## Fix", "", cls.FIX_TITLE, ""]
        if cls.REFERENCES:
            parts += ["## References", ""] + [f"- {ref}" for ref in cls.REFERENCES] + [""]
        return "\n".join(parts)


def _witness(code: str):
    try:
        from ..confirm.witnesses import WITNESSES  # no torch at import time
    except Exception:
        return None
    return WITNESSES.get(code)


def all_rules() -> List[type]:
    from . import calls, construction, layout  # noqa: F401  (fill the registry)

    try:
        from . import masks  # noqa: F401
    except ImportError:  # pragma: no cover - mask rules not present
        pass
    return [REGISTRY[code] for code in sorted(REGISTRY)]


def iter_rules(codes) -> Iterator[type]:
    for rule in all_rules():
        if codes is None or rule.CODE in codes:
            yield rule
