"""The witnesses: one small, deterministic torch experiment per rule code.

A witness rebuilds the situation a finding describes from the finding's
structured evidence only (never from the user's code), runs it on CPU and
measures the damage.  Each witness keeps its threshold for CONFIRMED beside
it, as a constant, with the numbers measured on torch 2.13 CPU.

Importing this package never imports torch: every ``run`` imports it inside.
The rule docs generator reads ``summary`` and ``threshold_text`` from
:data:`WITNESSES`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict

CONFIRMED = "CONFIRMED"
# The damage reproduced, but only under a fact the evidence did not hold
# (the witness assumed it; ``depends_on`` names it). docs/confirm.md.
CONFIRMED_ASSUMED = "CONFIRMED*"
NOT_REPRODUCED = "NOT REPRODUCED"
# A timing witness whose ratio's spread straddles its threshold.
INCONCLUSIVE = "INCONCLUSIVE"
SKIPPED = "SKIPPED"


@dataclass(frozen=True)
class Witness:
    """What the confirmer runs for one rule code.

    ``run(evidence)`` returns a JSON-serialisable dict with the keys
    ``verdict`` (``CONFIRMED``, ``CONFIRMED*``, ``NOT REPRODUCED``,
    ``INCONCLUSIVE`` or ``SKIPPED``),
    ``witness`` (what ran, in words), ``damage`` (what was measured, in
    words), ``measured`` (name -> number, string or bool), ``assumed`` (every
    fact the witness supplied because the evidence lacked it), ``depends_on``
    (those of them the verdict depends on) and, for SKIPPED, ``reason``.
    """

    code: str
    summary: str
    threshold_text: str
    func: Callable[[Dict[str, Any]], Dict[str, Any]]
    timing: bool = False  # measures time: needs larger tensors and a few seconds

    def run(self, evidence: Dict[str, Any]) -> Dict[str, Any]:
        return self.func(dict(evidence or {}))


def _collect() -> Dict[str, Witness]:
    from . import batch_first, causal, dropout, gqa, handwritten, heads, kv_masks, masks, perf

    found: Dict[str, Witness] = {}
    for module in (batch_first, masks, causal, dropout, heads, perf, handwritten, gqa, kv_masks):
        for witness in module.WITNESSES:
            if witness.code in found:
                raise RuntimeError(f"two witnesses for {witness.code}")
            found[witness.code] = witness
    return dict(sorted(found.items()))


WITNESSES: Dict[str, Witness] = _collect()

__all__ = [
    "Witness",
    "WITNESSES",
    "CONFIRMED",
    "CONFIRMED_ASSUMED",
    "NOT_REPRODUCED",
    "INCONCLUSIVE",
    "SKIPPED",
]
