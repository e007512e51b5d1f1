"""What a confirm run prints: the table, the summary line, the JSON report."""

from __future__ import annotations

import math
import shutil
import textwrap
from collections import Counter
from typing import Any, Dict, List, Optional, Sequence

from .runner import VERDICTS, Outcome
from .witnesses import WITNESSES

# 2: verdicts CONFIRMED* and INCONCLUSIVE, results[].depends_on (docs/confirm.md)
JSON_VERSION = 2
HEADERS = ("LOCATION", "CODE", "VERDICT", "WITNESS", "DAMAGE")


NOT_CHECKED = "UNCHECKED"  # the verdict cell of a file that could not be checked


def location(outcome: Outcome, item: Any = None) -> str:
    """``path:line:col``; for a notebook finding (``item`` knows its cell)
    ``path:cell_N:line:col``, as check writes it."""
    if item is not None:
        return item.location()
    f = outcome.finding
    return f"{f.path}:{f.line}:{f.col}"


def witness_cell(outcome: Outcome) -> str:
    """What ran; then what it assumed: ``[assumed*: ...]`` for the facts the
    CONFIRMED* verdict rests on, ``[assumed: ...]`` for the rest."""
    text = outcome.witness or "-"
    resting = [a for a in outcome.assumed if a in outcome.depends_on]
    other = [a for a in outcome.assumed if a not in outcome.depends_on]
    if resting:
        text += " [assumed*: " + "; ".join(resting) + "]"
    if other:
        text += " [assumed: " + "; ".join(other) + "]"
    return text


def damage_cell(outcome: Outcome) -> str:
    if outcome.reason and not outcome.damage:
        return outcome.reason
    if outcome.reason:
        return f"{outcome.damage} ({outcome.reason})"
    return outcome.damage or "-"


def render_table(
    outcomes: Sequence[Outcome],
    width: Optional[int] = None,
    items: Optional[Sequence[Any]] = None,
    problems: Sequence[Any] = (),
) -> str:
    """One row per finding, then one per file that could not be checked (its
    reason in the damage column); the witness and damage cells wrap.

    ``items`` are the pipeline's items the outcomes were confirmed for, in the
    same order (they know a notebook finding's cell); ``problems`` are the
    pipeline's reasons a file could not be checked."""
    if width is None:
        width = max(100, shutil.get_terminal_size((140, 24)).columns)
    places = list(items) if items is not None else [None] * len(outcomes)
    rows = [
        (location(o, i), o.finding.code, o.verdict, witness_cell(o), damage_cell(o))
        for o, i in zip(outcomes, places)
    ]
    rows += [(p.location(), p.code or "-", NOT_CHECKED, "-", p.message) for p in problems]
    fixed = [
        max(len(HEADERS[i]), *(len(r[i]) for r in rows)) if rows else len(HEADERS[i])
        for i in range(3)
    ]
    rest = max(40, width - sum(fixed) - 4 * 2)
    wrap_w = [rest // 2, rest - rest // 2]
    out = []

    def emit(cells: Sequence[str]) -> None:
        wrapped = [
            textwrap.wrap(c, wrap_w[i], break_on_hyphens=False) or [""]
            for i, c in enumerate(cells[3:])
        ]
        for n in range(max(len(w) for w in wrapped)):
            head = [
                c.ljust(fixed[i]) if n == 0 else " " * fixed[i] for i, c in enumerate(cells[:3])
            ]
            tail = [
                w[n].ljust(wrap_w[i]) if n < len(w) else " " * wrap_w[i]
                for i, w in enumerate(wrapped)
            ]
            out.append("  ".join(head + tail).rstrip())

    emit(HEADERS)
    out.append("  ".join("-" * w for w in fixed + wrap_w))
    for row in rows:
        emit(row)
    return "\n".join(out)


def counts(outcomes: Sequence[Outcome]) -> Dict[str, int]:
    seen = Counter(o.verdict for o in outcomes)
    return {verdict: seen.get(verdict, 0) for verdict in VERDICTS}


def summary_line(outcomes: Sequence[Outcome], seconds: float, problems: Sequence[Any] = ()) -> str:
    n = len(outcomes)
    parts = [
        f"{count} {verdict.lower()}"
        for verdict, count in counts(outcomes).items()
        if count or verdict in ("CONFIRMED", "NOT REPRODUCED")
    ]
    noun = "finding" if n == 1 else "findings"
    unchecked = ""
    if problems:
        files = len({p.path for p in problems})
        unchecked = f"; {files} file{'s' if files != 1 else ''} not checked"
    return f"{n} {noun}: {', '.join(parts)}{unchecked} ({seconds:.1f} s)"


def _plain(value: Any) -> Any:
    """JSON-safe: non-finite floats become the strings "nan", "inf", "-inf"."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def to_json(
    outcomes: Sequence[Outcome],
    *,
    paths: Sequence[str],
    settings: Dict[str, Any],
    torch_version: Optional[str],
    seconds: float,
    exit_status: int,
    items: Optional[Sequence[Any]] = None,
    problems: Sequence[Any] = (),
) -> Dict[str, Any]:
    """The document ``--json FILE`` writes (schema: docs/confirm.md).  ``items``
    and ``problems`` as for ``render_table``."""
    from .. import __version__

    codes = sorted({o.finding.code for o in outcomes if o.finding.code in WITNESSES})
    results: List[Dict[str, Any]] = []
    places = list(items) if items is not None else [None] * len(outcomes)
    for o, item in zip(outcomes, places):
        entry = o.finding.to_dict()
        entry.update(cell=getattr(item, "cell", None), cell_index=getattr(item, "cell_index", None))
        entry.update(
            verdict=o.verdict,
            witness=o.witness,
            damage=o.damage,
            measured=o.measured,
            assumed=o.assumed,
            depends_on=o.depends_on,
            reason=o.reason,
            seconds=round(o.seconds, 4),
            warnings=o.warnings,
        )
        results.append(entry)
    summary: Dict[str, Any] = {
        "findings": len(outcomes),
        **counts(outcomes),
        "seconds": round(seconds, 3),
    }
    return _plain(
        {
            "version": JSON_VERSION,
            "tool": "flake8-mha confirm",
            "flake8_mha": __version__,
            "torch": torch_version,
            "paths": list(paths),
            "settings": settings,
            "summary": summary,
            "exit_status": exit_status,
            "witnesses": {
                code: {
                    "summary": WITNESSES[code].summary,
                    "threshold": WITNESSES[code].threshold_text,
                }
                for code in codes
            },
            "results": results,
            "errors": [p.as_dict() for p in problems],
        }
    )
