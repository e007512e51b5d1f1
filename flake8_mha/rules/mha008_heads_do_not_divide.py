"""MHA008: embed_dim not divisible by num_heads."""

from __future__ import annotations

from typing import Iterator


from ..analysis.events import Construction
from ..analysis.flow import CallSite
from ..analysis.sequences import each_pass
from ..analysis.values import each_subclass
from .base import Example, Report, Rule
from .construction import (
    construction_evidence,
    handed_sizes,
    init_value,
    int_or_none,
    judged_at_callers,
)


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
        - Known values are literals, module-level constants of the file or of
          the project file they are imported from (and arithmetic on them), and
          a constructor parameter that every construction of its class in the
          project passes alike, or leaves at a default that is such a constant
          (`def __init__(self, embed_dim=TAG_DIM, num_heads=TAG_HEADS)`, built
          `Block()` everywhere). Config objects, values from outside the
          project, and parameters whose constructions disagree are unknown: no
          report at the construction.
        - Sizes that are parameters of the function or class that builds the
          module are judged at each call of it, in the file or across files
          (`build_attention(AUDIO_DIM, AUDIO_HEADS)`, `Block(100, 8)` beside a
          correct `Block(128, 8)`), with the call's values; the finding names
          the construction. They enter the program there, so the call reports
          even when every construction of the class passes the same sizes;
          only sizes every construction leaves to the class's own defaults
          (`def __init__(self, dim=100, heads=8)`, built `Block()`) are
          reported at the module (docs/reach.md, "Sizes handed to a
          construction"). Constructions every run makes count, and one under
          `if cross_heads is not None:` (or `if cross_heads:`) at the calls
          that give that parameter a value; not one under any other test or
          in `... if heads else nn.Identity()`. The sizes may pass through
          further constructions first, in the callee's file (`Encoder(d, h,
          depth)` building `Layer(d, h)`), in other project files
          (`FTTransformer(d_token=100, n_heads=8)` building `Block(d_token,
          n_heads)` of `layers.py`), or a class method returning `cls(...)`
          (`Encoder.from_width(96, heads=5)`): the call that hands them
          reports, and the calls between, which only hand them on, do not.
        - Sizes written out as a tuple or list (`EMBED_DIMS = (64, 128, 320,
          512)` in the file or a project file it imports; a list only when
          nothing changes it in place) are known at a known index
          (`EMBED_DIMS[2]`, `NUM_HEADS[-1]`). A construction or call in a loop
          or comprehension over such sequences (`zip`, `enumerate`, `range`,
          `reversed`) is judged once per pass, each loop name pinned to that
          pass's element, at most 64 passes; the first wrong pass reports and
          the message names it (`(in the loop at line 13, pass 3 of 4)`)
          (docs/reach.md, "Sizes written out as tuples, and loops over them").
        - A head count or width that is a class attribute which subclasses of
          the class's file set apart (`num_heads = 4` in the base, `num_heads
          = 8` in `WidePooling`) is judged once per subclass the code uses
          (named outside its own `class` statement) that inherits the base's
          `__init__` as it is, with the attributes it sets or inherits and
          the sizes its own constructions pass; the message names it (`(in
          an instance of WidePooling)`). The base's own value is read too when
          its file names the base beside its own and its subclasses' `class`
          statements (its `__init__`'s parameters then unknown). A subclass
          in another file, or one with an `__init__` of its own, is not read
          this way (`fixtures/program_calls/subclass_heads/`).
        - A size the call gives by keyword or position beside a `**kwargs`
          splat is known (the splat cannot give it again: Python would
          raise): `Net(embed_dim=640, num_heads=12, **kwargs)`,
          `cls(dim=1000, heads=16, **kwargs)`. A size left to its default
          beside the splat may come from it, and any `*args` splat leaves
          every position unknown: not judged.
        """
    VALID = [
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n",
        "import torch.nn as nn\ndef f(d, h):\n    return nn.MultiheadAttention(d, h, batch_first=True)\n",
    ]
    INVALID = [
        Example(
            "import torch.nn as nn\nattn = nn.MultiheadAttention(10, 4, batch_first=True)\n", 2, 8
        ),
        Example(
            "import torch.nn as nn\nE = 64 * 3\nattn = nn.MultiheadAttention(E, 5, batch_first=True)\n",
            3,
            8,
        ),
        Example("import torch.nn as nn\nmodel = nn.Transformer(nhead=6, batch_first=True)\n", 2, 9),
    ]

    def on_call(self, site: CallSite) -> Iterator[Report]:
        """A call of a function or class of the project that builds the module
        with sizes its parameters give (``build_attention(AUDIO_DIM,
        AUDIO_HEADS)``, ``Block(100, 8)``): judged at the call, with the
        call's values (docs/reach.md, "Sizes handed to a construction"); in a
        loop over sizes the code writes out, once per pass (the first wrong
        pass reports)."""
        call = site.node
        for where, handed in each_pass(lambda: list(handed_sizes(self.ctx, site))):
            wrong = [h for h in handed if not (h[2] > 0 and h[1] > 0 and h[1] % h[2] == 0)]
            for entry, embed, heads, evidence, tail in wrong:
                tail += _in(where)
                nonpositive = [(entry["heads_name"], heads), (entry["embed_name"], embed)]
                for name, value in nonpositive:
                    if value <= 0:
                        yield self.report(
                            call,
                            evidence,
                            self.MESSAGE_NONPOSITIVE + tail,
                            name=name,
                            value=value,
                            module=entry["module"],
                        )
                        break
                else:
                    yield self.report(
                        call,
                        evidence,
                        self.MESSAGE + tail,
                        embed_name=entry["embed_name"],
                        embed=embed,
                        heads_name=entry["heads_name"],
                        heads=heads,
                        module=entry["module"],
                    )
            if wrong:
                return

    def on_construction(self, ev: Construction) -> Iterator[Report]:
        spec = ev.spec
        if spec.embed_param is None:
            return

        def sizes():
            return (
                int_or_none(init_value(self.ctx, ev, spec.embed_param)),
                int_or_none(init_value(self.ctx, ev, spec.heads_param)),
            )

        for sub, passes in each_subclass(lambda: list(each_pass(sizes))):
            for where, (embed, heads) in passes:
                wrong = (embed is not None and embed <= 0) or (heads is not None and heads <= 0)
                if wrong or (embed is not None and heads is not None and embed % heads != 0):
                    if sub is not None:
                        where = f"an instance of {sub}" + (f", {where}" if where else "")
                    yield from self._judged(ev, embed, heads, where)
                    return

    def _judged(self, ev: Construction, embed, heads, where) -> Iterator[Report]:
        spec = ev.spec
        if judged_at_callers(self.ctx, ev):
            return  # the calls that hand the sizes report
        evidence = construction_evidence(self.ctx, ev)
        if where is not None:  # the pass's sizes, not the loop's unknown ones
            evidence = {**evidence, "embed_dim": embed, "num_heads": heads}
        for name, value in ((spec.heads_param, heads), (spec.embed_param, embed)):
            if value is not None and value <= 0:
                yield self.report(
                    ev.site.node,
                    evidence,
                    self.MESSAGE_NONPOSITIVE + _in(where),
                    name=name,
                    value=value,
                    module=spec.name,
                )
                return
        if embed is None or heads is None:
            return
        yield self.report(
            ev.site.node,
            evidence,
            self.MESSAGE + _in(where),
            embed_name=spec.embed_param,
            embed=embed,
            heads_name=spec.heads_param,
            heads=heads,
            module=spec.name,
        )


def _in(where) -> str:
    """The message's end naming the loop pass that has the sizes."""
    return f" (in {where})" if where else ""
