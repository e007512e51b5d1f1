"""MHA101: an odd number of heads keeps the module off the fastpath."""

from __future__ import annotations

import libcst as cst

from typing import Iterator

from ..analysis.events import Construction
from ..core.torch_api import FASTPATH_BLOCKERS
from ..analysis.flow import CallSite
from ..analysis.layout import SEQ_FIRST
from ._layout_rule import call_layouts, default_left
from ..analysis.values import each_subclass
from .base import Example, Report, Rule
from .construction import (
    replaces_forward,
    construction_evidence,
    handed_sizes,
    init_value,
    int_or_none,
    judged_at_callers,
)


class OddNumHeads(Rule):
    CODE = "MHA101"
    NAME = "odd-num-heads"
    CATEGORY = "performance"
    MESSAGE = "{heads_name}={heads} is odd: {module} never takes the fast inference path"
    WHAT = """
        Flags a module built with a statically odd `num_heads` (`nhead`),
        `num_heads=1` included.
        """
    WHY = """
        The inference fastpath of `nn.MultiheadAttention` and
        `nn.TransformerEncoderLayer` (fused native kernels, nested tensors for
        padded batches) requires an even number of heads. With an odd count
        every inference call silently takes the slow, general path.
        """
    EXAMPLE = """
        import torch.nn as nn

        attn = nn.MultiheadAttention(embed_dim=96, num_heads=3, batch_first=True)
        """
    USE_INSTEAD = """
        import torch.nn as nn

        attn = nn.MultiheadAttention(embed_dim=96, num_heads=4, batch_first=True)
        """
    DECISIONS = """
        - Not reported in test files (`test_*.py`, `*_test.py`, `conftest.py`,
          or a file right in a folder named `test`, `tests` or `testing`): the
          cost is speed only, and a test's speed is nobody's (a shape test that
          throws the weights away, shipped in a release). The other codes are
          reported there as anywhere.
        - `num_heads=1` is odd and is reported (RULES.md).
        - A head count that is a class attribute which subclasses of the
          file set apart (`num_heads = 5` in the base, `4` in a subclass) is
          read once per class the file uses, as MHA008 reads it; the message
          names the class (`(in an instance of SeqEncoder)`).
        - A head count that is a parameter of the class or function building
          the module is reported at the call that hands it (`Mixer(dim, 5)`,
          naming the construction), as MHA008's sizes are; one every
          construction leaves to the class's default, at the module.
        - Reported beside MHA008 when both apply: each code is about its own fact.
        - Silent when every call of an `nn.MultiheadAttention` gives it a
          query that is another tensor than its key (`attn(x, memory,
          memory)`): the fastpath takes self-attention only, so the head count
          changes nothing (kairos-fm's cross-attention); also when the head
          count is the class's constructor parameter and the module kept on
          `self` is only ever called so (probe AD's `CrossBlock(96, 3)`).
        - Silent when another setting written at the construction already keeps
          the fastpath off, whatever the head count (TORCH_FACTS, "fastpath"):
          an explicit `batch_first=False`, `bias=False`, `add_bias_kv=True`,
          `add_zero_attn=True`, or `kdim`/`vdim` different from `embed_dim`.
          The finding would be moot there: the confirmer's witness, built with
          those settings, shows the same kernel for odd and even heads. A
          `batch_first` left to its default is still reported: MHA001 asks for
          `batch_first=True`, and then the head count matters. Not when every
          call feeds it sequence-first data (MHA001 silent): the module is
          right as it is and off the fastpath at any head count
          (neuralhydrology's one-head attention over feature groups). Nor on
          a subclass of `nn.MultiheadAttention` whose own `forward` never runs
          torch's (torchtext's T5 attention): no fastpath to lose.
        - What it costs on a CPU, honestly: nothing measurable, often the
          opposite. The fastpath an odd count loses is *slower* than the SDPA
          path the odd count takes with `need_weights=False`: the seed measured
          the SDPA path 1.4x faster, TORCH_FACTS item 17 the odd module at
          0.66x the even one's time (N=16, L=128, 5 vs 8 heads), and 0.70x
          with `batch_first=False` where neither takes the fastpath. The default
          call (`need_weights=True`) runs the math path instead: 0.9-2.1x the
          fastpath's time in the confirmer's runs, medians 0.96-1.24x under
          load (bench/RESULTS.md, issue 13). The rule states a kernel fact (fused inference
          kernels and nested tensors for padded batches are off), which
          matters on accelerators and for padded batches; the confirmer
          reports the time with its spread and never calls the odd count slow
          when it was not.
        """
    VALID = [
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n",
        "import torch.nn as nn\nmodel = nn.Transformer(batch_first=True)\n",
        "import torch.nn as nn\nattn = nn.MultiheadAttention(96, 3, batch_first=False)\n",
        "import torch.nn as nn\nattn = nn.MultiheadAttention(96, 3, bias=False, batch_first=True)\n",
    ]
    INVALID = [
        Example(
            "import torch.nn as nn\nattn = nn.MultiheadAttention(96, 3, batch_first=True)\n", 2, 8
        ),
        Example(
            "import torch.nn as nn\nattn = nn.MultiheadAttention(64, num_heads=1, batch_first=True)\n",
            2,
            8,
        ),
    ]

    def on_call(self, site: CallSite) -> Iterator[Report]:
        """A call of a function or class of the project that builds the module
        with a head count its parameters give (``make_layer(EMBED_DIM,
        NUM_HEADS)``): judged at the call, with the call's values, unless
        the construction writes a setting that keeps the fastpath off anyway
        (docs/reach.md, "Sizes handed to a construction")."""
        for entry, _, heads, evidence, tail in handed_sizes(self.ctx, site, judged=("heads",)):
            if heads <= 0 or heads % 2 == 0 or entry.get("fastpath_off"):
                continue
            yield self.report(
                site.node,
                evidence,
                self.MESSAGE + tail,
                heads_name=entry["heads_name"],
                heads=heads,
                module=entry["module"],
            )

    def on_construction(self, ev: Construction) -> Iterator[Report]:
        spec = ev.spec
        if spec.heads_param is None:
            return
        for sub, heads in each_subclass(
            lambda: int_or_none(init_value(self.ctx, ev, spec.heads_param))
        ):
            if heads is None or heads <= 0 or heads % 2 == 0:
                continue
            if self._fastpath_off(ev) or self._fed_sequence_first(ev):
                return
            if judged_at_callers(self.ctx, ev, ("heads",)) or self._only_cross_attention(ev):
                return
            report = self.report(
                ev.site.node,
                {**construction_evidence(self.ctx, ev), "num_heads": heads},
                heads_name=spec.heads_param,
                heads=heads,
                module=spec.name,
            )
            if sub is not None:  # a class attribute its subclasses set apart (AM18)
                report.message += f" (in an instance of {sub})"
            yield report
            return

    def _fed_sequence_first(self, ev: Construction) -> bool:
        """Left to the default ``batch_first=False`` and fed sequence-first data
        at every call: right as it is, and off the fastpath whatever the head
        count (MHA001 is silent there too)."""
        if not default_left(ev, getattr(self.ctx, "project", None)):
            return False
        layouts, _ = call_layouts(self, ev)
        return bool(layouts) and all(layout.kind == SEQ_FIRST for _, layout in layouts)

    def _only_cross_attention(self, ev: Construction) -> bool:
        """Every call of the module gives it a query that is not its key
        (kairos' cross-attention): the fastpath takes self-attention only,
        so no head count would give it one."""
        if ev.spec.name != "MultiheadAttention":
            return False
        calls = self.ctx.module_calls_of(ev)
        if not calls:
            return False
        for call in calls:
            query, key = call.args.get("query"), call.args.get("key")
            if query is None or key is None:
                return False
            if not (isinstance(query, cst.Name) and isinstance(key, cst.Name)):
                return False  # ``x[:, :1]`` against ``x``: not told apart here
            if query.value == key.value:
                return False
        return True

    def _fastpath_off(self, ev: Construction) -> bool:
        """A setting written at the construction keeps the fastpath off anyway,
        or the class's own ``forward`` never runs torch's."""
        if replaces_forward(self.ctx, ev):
            return True
        names = ev.spec.init.names
        for key, off in {"batch_first": False, **FASTPATH_BLOCKERS}.items():
            expr = ev.args.get(key)
            if key in names and expr is not None and self.ctx.value(expr, ev.site) is off:
                return True
        embed = (
            int_or_none(init_value(self.ctx, ev, ev.spec.embed_param))
            if ev.spec.embed_param
            else None
        )
        for key in ("kdim", "vdim"):
            expr = ev.args.get(key)
            value = (
                int_or_none(self.ctx.value(expr, ev.site))
                if key in names and expr is not None
                else None
            )
            if embed is not None and value is not None and value != embed:
                return True
        return False
