"""MHA014: SDPA with ``enable_gqa=True`` whose statically known query and KV
head counts do not divide.  The layouts come from ``flake8_mha/analysis/heads.py``."""

from __future__ import annotations

from typing import Iterator

from ..analysis.events import SdpaCall
from ..analysis.gqa import GqaAnalysis, as_int, axes_text, code_text, line_of, sdpa_gqa_flag
from .base import Example, Report, Rule
from .construction import one_construction
from ..analysis.values import each_subclass


class GqaHeadsDoNotDivide(Rule):
    CODE = "MHA014"
    NAME = "gqa-heads-do-not-divide"
    MESSAGE = (
        "enable_gqa=True with {hq} query heads over {hkv} key/value heads, which do not "
        "divide: SDPA raises RuntimeError at the first forward call"
    )
    WHAT = """
        Flags `F.scaled_dot_product_attention(..., enable_gqa=True)` whose query
        and key head counts are both known statically and do not divide. The
        counts are the sizes SDPA reads as heads (axis -3 of 4-D inputs), followed
        from `view`/`reshape`/einops through `transpose`/`permute`, and must be
        literals, module constants, or `self.<attr>` set from constants.
        """
    WHY = """
        With `enable_gqa=True`, SDPA needs the query head count to be a multiple
        of the key/value head count. Otherwise the first forward call raises
        `RuntimeError: Number of heads in key and value must divide the number of
        heads in` (torch 2.13's message, cut off as shown), usually after the
        model was built and the data loaded.
        """
    EXAMPLE = """
        import torch.nn.functional as F

        N_HEADS, N_KV_HEADS, HEAD_DIM = 12, 5, 64

        def attend(x, kv, B, L):
            q = x.view(B, L, N_HEADS, HEAD_DIM).transpose(1, 2)
            k = kv.view(B, L, N_KV_HEADS, HEAD_DIM).transpose(1, 2)
            return F.scaled_dot_product_attention(q, k, k, enable_gqa=True)
        """
    USE_INSTEAD = """
        import torch.nn.functional as F

        N_HEADS, N_KV_HEADS, HEAD_DIM = 12, 4, 64

        def attend(x, kv, B, L):
            q = x.view(B, L, N_HEADS, HEAD_DIM).transpose(1, 2)
            k = kv.view(B, L, N_KV_HEADS, HEAD_DIM).transpose(1, 2)
            return F.scaled_dot_product_attention(q, k, k, enable_gqa=True)
        """
    DECISIONS = """
        - `enable_gqa` must be statically True: `True`, a constant, or a
          comparison of known counts such as `self.h_kv != self.h`.
        - Only 4-D query and key whose layouts the code states; parameters,
          config attributes and `-1` sizes are unknown: no report.
        - Without `enable_gqa`, unequal head counts raise a different error (a
          size mismatch): not this rule.
        - Keys and values cut from one projection along the head axis have a
          piece of its heads: `kv.chunk(2, dim=1)` of `2 * num_kv_heads` heads
          gives `num_kv_heads` each, `kv.split(size, dim=1)` `size`; a cut
          into uneven sections says nothing.
        - Keys and values that a KV cache replaces only when one is given
          (`if cache is not None: k, v = cache.update(k, v)`, the cache a
          parameter defaulting to None) keep their count on the calls that
          give none: that path raises (`tests/test_gqa_cache_branch.py`).
        - The counts may come from the project's constructions of the class
          (`GroupedAttention(cfg.HIDDEN_SIZE, cfg.NUM_ATTENTION_HEADS,
          cfg.NUM_KV_HEADS)` with `from . import config as cfg`); the finding
          is then where SDPA gets them (`fixtures/program_calls/config_modules/`).
          When the constructions disagree (a speculative decoder's main
          `GQAttention(8, 2, 16)` and draft `GQAttention(6, 4, 16)`), each is
          read on its own: one whose counts do not divide is reported, and
          the message says what it passes (`fixtures/program_calls/gqa_instances/`).
          The counts may be handed down through classes that build the next
          one with their own parameters, up to three, and a module-level
          `functools.partial` of such a class is one of its constructions
          (`make_draft = functools.partial(Transformer, 96, 6, 4)`, then
          `make_draft(1)`: `fixtures/program_calls/draft_partials/`).
        - Counts that are class attributes which subclasses of the file set
          apart (`DraftAttention(GroupedQueryAttention)` with `n_heads =
          DRAFT_HEADS`) are read once per used subclass that inherits the
          base's `__init__`; the message names the one whose counts do not
          divide (`fixtures/program_calls/subclass_heads/`).
        - A call whose name says rotary (`rotary(q)`, `apply_rotary_emb(k, freqs)`)
          keeps the layout of its first argument.
        - Heads split by a helper (`split_heads(self.q_proj(x), N_HEAD)` with
          `def split_heads(x, n): return x.view(b, t, n, -1).transpose(1,
          2)`), of this file or another project file: the head axis is sized
          by what the call hands the helper's parameter, or by the number the
          helper writes itself; a helper with more than one `return` is not
          read (`fixtures/program_calls/head_helpers/`).
        """
    VALID = [
        "import torch.nn.functional as F\n"
        "def attend(x, B, L):\n"
        "    q = x.view(B, L, 12, 64).transpose(1, 2)\n"
        "    k = x.view(B, L, 4, 64).transpose(1, 2)\n"
        "    return F.scaled_dot_product_attention(q, k, k, enable_gqa=True)\n",
    ]
    INVALID = [
        Example(
            "import torch.nn.functional as F\n"
            "def attend(x, B, L):\n"
            "    q = x.view(B, L, 12, 64).transpose(1, 2)\n"
            "    k = x.view(B, L, 5, 64).transpose(1, 2)\n"
            "    return F.scaled_dot_product_attention(q, k, k, enable_gqa=True)\n",
            5,
            12,
        ),
    ]

    def on_sdpa_call(self, ev: SdpaCall) -> Iterator[Report]:
        site = ev.site
        if not sdpa_gqa_flag(ev.args.get("enable_gqa"), site.env, site.scope):
            return
        layouts = self._layouts(ev)
        if layouts is None:
            return
        counts = [as_int(layout.axes[1].value()) for layout in layouts]
        told = ""
        if None in counts:  # each construction of the class on its own
            counts, told = self._one_instance(layouts, site)
        if counts is None or None in counts:  # each subclass that sets the counts apart
            counts, told = self._one_subclass(layouts)
        if counts is None or None in counts or min(counts) <= 0:
            return
        hq, hkv = counts
        if hq % hkv == 0:
            return
        nodes = layouts[0].decided_by + layouts[1].decided_by + [site.node]
        lines = line_of(self.ctx, nodes)
        evidence = {
            "module": "scaled_dot_product_attention",
            "enable_gqa": True,
            "num_heads": hq,
            "num_kv_heads": hkv,
            "head_axis": 1,
            "layout": {"query": axes_text(layouts[0]), "key": axes_text(layouts[1])},
            "decided_by": [
                {"line": lines[id(n)], "code": code_text(self.ctx, n)} for n in dict.fromkeys(nodes)
            ],
        }
        report = self.report(site.node, evidence, hq=hq, hkv=hkv)
        report.message += told
        yield report

    def _layouts(self, ev: SdpaCall):
        """The query's and the key's 4-D layouts, heads on axis 1; else None."""
        analysis = GqaAnalysis.of(self.ctx)
        site = ev.site
        layouts = []
        for name in ("query", "key"):
            expr = ev.args.get(name)
            layout = analysis.layouts.of(expr, site.env, site.scope) if expr is not None else None
            if layout is None or layout.rank != 4:
                return None
            named = layout.head_axis()
            if named is not None and named != 1:
                return None  # the code names another axis as heads: not sure what SDPA gets
            layouts.append(layout)
        return layouts

    def _one_subclass(self, layouts):
        """The counts an instance of a subclass of the method's file gives,
        when the subclasses set them apart as class attributes (probe AM's
        AM10: ``DraftAttention(GroupedQueryAttention)`` with ``n_heads =
        DRAFT_HEADS``): the first that does not divide, and the message's
        end naming it; (None, "") when none is known not to."""
        for sub, counts in each_subclass(
            lambda: [as_int(layout.axes[1].value()) for layout in layouts]
        ):
            if sub is not None and None not in counts and min(counts) > 0:
                if counts[0] % counts[1]:
                    return counts, f"; an instance of {sub} has these counts"
        return None, ""

    def _one_instance(self, layouts, site):
        """The counts one construction of the method's class gives, when the
        constructions disagree (``GQAttention(8, 2)`` beside ``GQAttention(6,
        4)``, probe W's W08): the first that does not divide, and what it
        passes; (None, "") when none is known not to."""
        cls = site.scope.cls
        if cls is None:
            return None, ""

        def judge():
            counts = [as_int(layout.axes[1].value()) for layout in layouts]
            bad = None not in counts and min(counts) > 0 and counts[0] % counts[1]
            return counts if bad else None

        return one_construction(site.scope, cls, judge) or (None, "")
