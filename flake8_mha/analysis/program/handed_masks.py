"""Whether another file of the project hands a function's mask parameter a
mask of its own (part of ``callsites.Project``): that call is judged with
its mask where the fact enters the chain, and the parameter's name is then
no evidence in the function's own file (``masks/calls.handed_by_project``)."""

from __future__ import annotations

import os

import libcst as cst

from ...core.atomic import read_regular
from . import callers, passed_down, signatures
from .files import decode
from .fills import KV
from .summaries import TRUE_HINT


class HandedMasks:
    """A mixin of ``callsites.Project``: it reads ``_own``, ``_own_source``,
    ``_answers`` and ``results_kept`` of the project."""

    def reaches_kv(self, key: str, param: str) -> bool:
        """This file's function ``key`` multiplies its parameter ``param`` into
        keys or values its summary follows (the ``KV`` sink): each call that
        hands it a mask is judged with that mask.  Not when nothing in the
        project calls it (its callers are outside: the parameter's name is
        the evidence, review 32's linformer ``keep``)."""
        how = self._own().get(key, {}).get("reach", {}).get(KV)
        if not isinstance(how, dict) or how.get("param") != param:
            return False
        return self.results_kept(key, some=True) != []

    def passed_elsewhere(self, key: str, param: str, kv: bool = False) -> bool:
        """Whether a call in another file hands this file's function ``key``
        an expression (not a literal, not the default) for ``param``: a mask
        made there and judged at that call.  ``kv``: keys or values
        multiplied by it, judged at the calls only where the summary reaches
        SDPA's; a call that hands on, bare, a parameter of its own makes no
        mask unless something in the project calls the function it is in
        (then the mask comes from further up, judged there)."""
        asked = ("passed", key, param, kv)
        if asked not in self._answers:
            made = False
            if not kv or self._own().get(key, {}).get("reach", {}).get(KV):
                sign = signatures.function_signature(self._own_source or "", key)
                found = self.results_kept(key, some=True) or ()
                made = any(
                    f is not None
                    and bound.get(param) == signatures.UNKNOWN
                    and not (kv and self._handed_on(path, line, param, sign))
                    for f, line, _, bound, path in found
                )
            self._answers[asked] = (made, None)
        return self._answers[asked][0]

    def _handed_on(self, path: str, line: int, param: str, sign) -> bool:
        """The call at ``line`` of ``path`` hands on its own parameter, and
        nothing in the project calls the function it is in (an entry point
        such as a model's ``forward``)."""
        ups = passed_down.hands_on_own(path, line, param, sign)
        return ups is not None and all(self.results_kept(up, path) == [] for up in ups)

    def hint_left(self, summary: dict, filename: str, spec, left: set, own: set) -> dict:
        """The causal hint a wrapper passes True itself and the mask this
        call leaves to its default None (``decode(tgt, memory)`` of ``def
        decode(self, tgt, memory, tgt_mask=None)``, which calls the decoder
        with ``tgt_mask=tgt_mask, tgt_is_causal=True``: probe AP's AP10), as
        the module call's arguments, when another call in the project hands
        that mask (else every call leaves it and the wrapper's own call is
        judged in its file, ``lint/facts.from_callers``); {} otherwise."""
        out: dict = {}
        hints = {
            s.split(".", 1)[1].removesuffix(TRUE_HINT)
            for s in summary.get("module_own", ())
            if s.endswith(TRUE_HINT)
        }
        for pair in spec.causal_pairs:
            if pair.mask not in left or pair.flag not in hints or pair.flag not in own:
                continue
            param = summary["reach"].get(f"{spec.name}.{pair.mask}", {}).get("param")
            if param is not None and self._callers_disagree(filename, summary["name"], param):
                out.update({pair.mask: cst.Name("None"), pair.flag: cst.Name("True")})
                own.discard(pair.flag)
        return out

    def _callers_disagree(self, filename: str, key: str, param: str) -> bool:
        """Some call in the project of ``key`` of ``filename`` hands ``param``
        something, and not every call leaves it None, directly or handed down
        bare from its own callers (when every one does, the wrapper's own
        call is judged: ``Project.called``); False where that cannot be read."""
        own = os.path.abspath(filename) == os.path.abspath(self.path)
        found = self.results_kept(key, None if own else filename)
        if not found or all(bound.get(param) is None for _, _, _, bound, _ in found):
            return False
        try:
            text = self._own_source if own else decode(read_regular(filename, callers.MAX_BYTES))
            signature = signatures.function_signature(text or "", key)
            if signature is None:
                return False
            got = passed_down.value_up(
                filename, key, signature, param, text if own else None, self.depend
            )
        except (OSError, ValueError, RecursionError, UnicodeDecodeError, LookupError):
            return False
        return got is None or got[0] is not None
