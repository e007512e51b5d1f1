"""Evidence shared by the rules about a torch module's call: the arguments
of the one construction the called instance comes from."""

from __future__ import annotations

from typing import Any, Dict

from ..analysis.events import ModuleCall
from .construction import construction_evidence


def module_call_evidence(ctx, ev: ModuleCall) -> Dict[str, Any]:
    ctor = ev.single_ctor()
    if ctor is not None:
        return construction_evidence(ctx, ctor)
    return {"module": ev.spec.name}
