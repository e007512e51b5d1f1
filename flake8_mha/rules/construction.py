"""Rules on how a torch attention module is built: MHA008, MHA101,
MHA901, MHA902 (MHA001 is in rules/layout.py).  Each receives ``Construction`` events."""
from __future__ import annotations

from typing import Any, Dict, Iterator

from ..events import Construction
from ..values import UNKNOWN
from .base import Example, Report, Rule

_MODULES_DOC = (
    "`nn.MultiheadAttention`, `nn.TransformerEncoderLayer`, `nn.TransformerDecoderLayer` "
    "and `nn.Transformer`"
)


def init_value(ctx, ev: Construction, name: str):
    """The statically known value of a constructor argument (torch's default
    when it is not passed), or UNKNOWN."""
    expr = ev.args.get(name)
    if expr is not None:
        return ctx.value(expr, ev.site)
    if ev.args.maybe_given(name) or not ev.spec.init.has_default(name):
        return UNKNOWN
    return ev.spec.init.default(name)


def _int(v):
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def construction_evidence(ctx, ev: Construction) -> Dict[str, Any]:
    spec = ev.spec
    out: Dict[str, Any] = {"module": spec.name}
    if spec.embed_param:
        out["embed_dim"] = _int(init_value(ctx, ev, spec.embed_param))
        out["num_heads"] = _int(init_value(ctx, ev, spec.heads_param))
    for key in ("dropout", "batch_first", "bias", "add_bias_kv", "add_zero_attn", "kdim", "vdim"):
        if key in spec.init.names:
            v = init_value(ctx, ev, key)
            out[key] = None if v is UNKNOWN or isinstance(v, str) else v
    if ev.cls is not None:
        out["subclass"] = ev.cls.name
    return out


class BatchFirstFalse(Rule):
    CODE = "MHA902"
    NAME = "batch-first-false"
    CATEGORY = "opinionated"
    DEFAULT_ENABLED = False
    MESSAGE = "{module} built with batch_first=False: it expects (L, N, E) input, unlike the rest of the model"
    WHAT = f"""
        Flags {_MODULES_DOC} built with an explicit `batch_first=False`.
        Off by default: for teams that keep every tensor batch-first.
        """
    WHY = """
        A sequence-first module in a batch-first code base needs a transpose at
        every call; forget one and samples silently mix (see MHA001). Batch-first
        modules also take the inference fastpath; sequence-first ones never do.
        """
    EXAMPLE = """
        import torch.nn as nn

        attn = nn.MultiheadAttention(256, 8, batch_first=False)
        """
    USE_INSTEAD = """
        import torch.nn as nn

        attn = nn.MultiheadAttention(256, 8, batch_first=True)
        """
    DECISIONS = """
        - Reported only when the value is statically `False` (a literal or a
          module constant); a variable is not reported.
        """
    VALID = [
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n",
        "import torch.nn as nn\ndef f(bf):\n    return nn.MultiheadAttention(64, 8, batch_first=bf)\n",
    ]
    INVALID = [
        Example("import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=False)\n", 2, 8),
    ]

    def on_construction(self, ev: Construction) -> Iterator[Report]:
        expr = ev.args.get("batch_first")
        if expr is None or not ev.spec.has_batch_first:
            return
        if self.ctx.value(expr, ev.site) is False:
            yield self.report(ev.site.node, construction_evidence(self.ctx, ev), module=ev.spec.name)


class HeadsDoNotDivide(Rule):
    CODE = "MHA008"
    NAME = "heads-do-not-divide"
    MESSAGE = "{embed_name}={embed} is not divisible by {heads_name}={heads}: {module} raises at construction"
    MESSAGE_NONPOSITIVE = "{name}={value} must be greater than 0: {module} raises at construction"
    WHAT = """
        Flags a module whose `embed_dim` (`d_model`) is not divisible by its
        `num_heads` (`nhead`), or whose head count or width is not positive,
        when both values are known statically: literals, module-level constants,
        locals assigned once, simple arithmetic, and torch's own defaults
        (`nn.Transformer` defaults to `d_model=512, nhead=8`).
        """
    WHY = """
        torch splits the embedding evenly across the heads. An uneven split
        raises `AssertionError: embed_dim must be divisible by num_heads` when the
        model is built, typically minutes into a job after data loading, or in
        a config sweep where only some combinations fail. A non-positive count
        raises `ValueError: embed_dim and num_heads must be greater than 0`.
        """
    EXAMPLE = """
        import torch.nn as nn

        D_MODEL = 100
        layer = nn.TransformerEncoderLayer(d_model=D_MODEL, nhead=8, batch_first=True)
        """
    USE_INSTEAD = """
        import torch.nn as nn

        D_MODEL = 128
        layer = nn.TransformerEncoderLayer(d_model=D_MODEL, nhead=8, batch_first=True)
        """
    DECISIONS = """
        - Values from parameters, config objects or other files are unknown: no report.
        """
    VALID = [
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n",
        "import torch.nn as nn\ndef f(d, h):\n    return nn.MultiheadAttention(d, h, batch_first=True)\n",
    ]
    INVALID = [
        Example("import torch.nn as nn\nattn = nn.MultiheadAttention(10, 4, batch_first=True)\n", 2, 8),
        Example("import torch.nn as nn\nE = 64 * 3\nattn = nn.MultiheadAttention(E, 5, batch_first=True)\n", 3, 8),
        Example("import torch.nn as nn\nmodel = nn.Transformer(nhead=6, batch_first=True)\n", 2, 9),
    ]

    def on_construction(self, ev: Construction) -> Iterator[Report]:
        spec = ev.spec
        if spec.embed_param is None:
            return
        embed = _int(init_value(self.ctx, ev, spec.embed_param))
        heads = _int(init_value(self.ctx, ev, spec.heads_param))
        evidence = construction_evidence(self.ctx, ev)
        for name, value in ((spec.heads_param, heads), (spec.embed_param, embed)):
            if value is not None and value <= 0:
                yield self.report(ev.site.node, evidence, self.MESSAGE_NONPOSITIVE,
                                  name=name, value=value, module=spec.name)
                return
        if embed is None or heads is None:
            return
        if embed % heads != 0:
            yield self.report(ev.site.node, evidence, embed_name=spec.embed_param, embed=embed,
                              heads_name=spec.heads_param, heads=heads, module=spec.name)


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
        - `num_heads=1` is odd and is reported (RULES.md).
        - Reported beside MHA008 when both apply: each code is about its own fact.
        """
    VALID = [
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n",
        "import torch.nn as nn\nmodel = nn.Transformer(batch_first=True)\n",
    ]
    INVALID = [
        Example("import torch.nn as nn\nattn = nn.MultiheadAttention(96, 3, batch_first=True)\n", 2, 8),
        Example("import torch.nn as nn\nattn = nn.MultiheadAttention(64, num_heads=1, batch_first=True)\n", 2, 8),
    ]

    def on_construction(self, ev: Construction) -> Iterator[Report]:
        spec = ev.spec
        if spec.heads_param is None:
            return
        heads = _int(init_value(self.ctx, ev, spec.heads_param))
        if heads is not None and heads > 0 and heads % 2 == 1:
            yield self.report(ev.site.node, construction_evidence(self.ctx, ev),
                              heads_name=spec.heads_param, heads=heads, module=spec.name)


class FastpathBlocker(Rule):
    CODE = "MHA901"
    NAME = "fastpath-blocker"
    CATEGORY = "opinionated"
    DEFAULT_ENABLED = False
    MESSAGE = "{module} built with {blockers}: the inference fastpath is off for it"
    WHAT = """
        Flags settings that statically disable the inference fastpath:
        `bias=False`, `add_bias_kv=True`, `add_zero_attn=True`, and `kdim`/`vdim`
        different from `embed_dim` on a module that the file calls for
        self-attention (query, key and value the same tensor). One finding per
        construction, listing every blocker. Off by default.
        """
    WHY = """
        `nn.MultiheadAttention` takes its fused inference kernel only when none
        of these is set. `bias=False` turns it off without any message.
        """
    EXAMPLE = """
        import torch.nn as nn

        attn = nn.MultiheadAttention(256, 8, bias=False, batch_first=True)
        """
    USE_INSTEAD = """
        import torch.nn as nn

        attn = nn.MultiheadAttention(256, 8, batch_first=True)
        """
    DECISIONS = """
        - `kdim`/`vdim` count only on a module the file calls with the same
          tensor as query, key and value: a cross-attention module with other
          key widths never takes the fastpath anyway, and the setting is needed.
        - `bias=False` also counts on `nn.TransformerEncoderLayer`/`DecoderLayer`/
          `nn.Transformer`, whose attention inherits it.
        """
    VALID = [
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n",
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, kdim=32, vdim=32, batch_first=True)\n"
        "def f(q, k, v):\n    return attn(q, k, v, need_weights=False)\n",
    ]
    INVALID = [
        Example("import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, bias=False, add_zero_attn=True, batch_first=True)\n", 2, 8),
    ]

    def on_construction(self, ev: Construction) -> Iterator[Report]:
        blockers = []
        names = ev.spec.init.names
        for key, bad in (("bias", False), ("add_bias_kv", True), ("add_zero_attn", True)):
            expr = ev.args.get(key)
            if key in names and expr is not None and self.ctx.value(expr, ev.site) is bad:
                blockers.append(f"{key}={bad}")
        embed = _int(init_value(self.ctx, ev, ev.spec.embed_param)) if ev.spec.embed_param else None
        if embed is not None and "kdim" in names:
            for key in ("kdim", "vdim"):
                expr = ev.args.get(key)
                value = _int(self.ctx.value(expr, ev.site)) if expr is not None else None
                if value is not None and value != embed and self.ctx.used_for_self_attention(ev):
                    blockers.append(f"{key}={value}")
        if blockers:
            evidence = construction_evidence(self.ctx, ev)
            evidence["blockers"] = blockers
            yield self.report(ev.site.node, evidence, module=ev.spec.name, blockers=", ".join(blockers))


class AnalyzerError(Rule):
    CODE = "MHA000"
    NAME = "analyzer-error"
    CATEGORY = "internal"
    MESSAGE = "flake8-mha could not analyze this file: {reason}"
    WHAT = """
        Reported once, at the top of a file that the analyzer could not read or
        analyze (undecodable bytes, a file LibCST cannot parse, nesting too deep,
        a file too large, or an internal error). flake8 goes on with the other
        files; a Python syntax error is left to flake8's own E999.
        """
    WHY = """
        A linter that silently skips a file gives false confidence; one that
        crashes stops the whole run. MHA000 is neither: it says what happened.
        """
    EXAMPLE = """
        # a file saved as latin-1 without a coding cookie
        """
    USE_INSTEAD = """
        # -*- coding: latin-1 -*-
        """
    VALID = ["x = 1\n"]
    INVALID = []
