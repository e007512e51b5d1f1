"""A finding: what the analyzer reports, and the evidence a witness needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict


@dataclass(frozen=True)
class Finding:
    """One report.

    ``line`` is 1-based and ``col`` is 1-based, as a user reads them in
    ``path:line:col: CODE message`` (the flake8 adapter hands flake8 ``col - 1``).
    ``evidence`` is JSON-serialisable and holds everything a runtime witness
    needs to rebuild the situation without touching the user's code (see
    ``docs/evidence.md``).
    """

    code: str
    line: int
    col: int
    message: str
    path: str = ""
    evidence: Dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def text(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message}"

    def to_dict(self) -> Dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "code": self.code,
            "message": self.message,
            "evidence": dict(self.evidence),
        }
