"""What the mask rules (MHA002, MHA003, MHA004, MHA009) share.

Each rule asks ``masks.analysis_for(ctx)`` what mask reaches a sink (a torch
module's mask argument, SDPA's ``attn_mask``, ``masked_fill`` with -inf,
``torch.where`` against -inf) and fires only on a part of the mask value the
analysis knows; an unknown mask never fires.
"""
from __future__ import annotations

from ..masks import FLOAT01, INT, Mask, MaskAnalysis, Sink, analysis_for
from ..torch_api import SDPA_NAME
from .base import Report, Rule
from .construction import construction_evidence


def sink_text(sink: Sink) -> str:
    if sink.module == SDPA_NAME:
        return SDPA_NAME
    if sink.module in ("masked_fill", "where"):
        return sink.call_text
    return f"{sink.module}'s {sink.arg}"


def true_word(mask: Mask) -> str:
    return "1" if mask.kind in (FLOAT01, INT) else "True"


class MaskRule(Rule):
    """Shared plumbing: the file's mask analysis and the report."""

    def analysis(self) -> MaskAnalysis:
        return analysis_for(self.ctx)

    def _report(self, where: Sink, value: Mask, module_ev, message: str, **fmt) -> Report:
        evidence = self.analysis().evidence(where, value, module_ev, construction_evidence)
        return self.report(where.site.node, evidence, message, **fmt)
