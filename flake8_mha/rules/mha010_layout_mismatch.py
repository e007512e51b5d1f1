"""MHA010: a module whose batch_first is stated, fed data of the other
layout on a call (read from the layout analysis, ``_layout_rule``)."""

from __future__ import annotations

from typing import Any, Dict, Iterator

import libcst as cst

from ..analysis.events import ModuleCall
from ..analysis.layout import analysis_for
from ..analysis.layout.comments import DocLine
from ._layout_rule import LAYOUT_MODULES_DOC, KIND_TEXT, hooked, where
from .base import Example, Report, Rule
from .construction import construction_evidence


class LayoutMismatch(Rule):
    CODE = "MHA010"
    NAME = "layout-mismatch"
    MESSAGE = (
        "{module} built with batch_first={stated} is fed {kind} data ({where}): "
        "samples mix across the batch"
    )
    WHAT = f"""
        Flags a call of {LAYOUT_MODULES_DOC} (and `nn.TransformerEncoder`/`Decoder`
        through their layer) whose `batch_first` is stated, `True` or an
        explicit `False`, when the data the call feeds is known to have the
        other layout: e.g. layers built `batch_first=True` then fed
        `x.transpose(0, 1)` of batch-first data. Reported on the call. The
        layout comes from the code only, as for MHA001.
        """
    WHY = """
        The module reads the batch axis as the sequence axis: every sample
        attends over the other samples of the batch. Nothing raises when the
        sizes happen to fit, the loss still goes down, the numbers are wrong
        (one real release: sample 0's output moves by 0.375 when only sample 1
        changes).
        """
    EXAMPLE = """
        import torch.nn as nn

        layer = nn.TransformerEncoderLayer(64, 8, batch_first=True)

        def encode(x):
            B, L, E = x.shape
            return layer(x.transpose(0, 1))
        """
    USE_INSTEAD = """
        import torch.nn as nn

        layer = nn.TransformerEncoderLayer(64, 8, batch_first=True)

        def encode(x):
            B, L, E = x.shape
            return layer(x)
        """
    DECISIONS = """
        - Only a statically known `batch_first` counts (a literal or a module
          constant); a variable, a `**kwargs` splat, or the default (MHA001's
          business) is not this rule's. A subclass with its own `__init__`
          states it in its one `super().__init__(..., batch_first=True)`,
          in the file of the call or in another project file (a literal, or
          a parameter of its `__init__` bound at the construction; probe AN's
          AN19, `fixtures/program_calls/layer_subclass_init/`).
        - Reported per call: one module fed both layouts has only its
          mismatched calls reported. Where the layouts of several callers
          meet before the call (a `forward` that two towers feed, one
          batch-first, one sequence-first), the call is reported with the
          caller that feeds the layout the module does not read: a correct
          sibling never hides a wrong one, and neither does a caller whose
          layout is unknown (`self.block(self.emb(tokens))` beside a caller
          that swaps batch-first data to sequence-first).
        - Unbatched `(L, E)` data is not reported. Inputs of one call that
          disagree (queries tiled `weight.unsqueeze(1).repeat(1, B, 1)`,
          sequence-first, beside batch-first memory) are reported when the
          module's `batch_first` is stated: the input it contradicts is fed
          wrong (`fixtures/program_layout/query_layouts/`); unstated, they
          are not (torch raises, or a reading is wrong).
        - An axis swap of data whose layout the code never states, right
          before the call, is the conversion to the layout the module reads:
          never a mismatch.
        - Never auto-fixed: whether the transpose or the flag is wrong is the
          author's call.
        - A docstring's shape alone (the data as it enters, or its embedding)
          against a stated `batch_first` is not reported: a docstring is prose
          that goes stale, and PyTorch's tutorial's `src: Tensor, shape
          [seq_len, batch_size]` is copied beside `batch_first=True` code
          that feeds batch-first data (release review 28's tecsas: its input
          in the docstring's layout raises). A shape comment, or the code's
          own swaps and shape unpacking, still count.
        - A `batch_first=True` module fed `x.unsqueeze(1)` attends over an
          axis one position long: each row of `x` is its own sample
          (docling's box decoder turns the cells a first attention read as a
          sequence into a batch of one-token queries). Nothing mixes across
          the batch: not reported. So is an einops pattern that puts a unit
          axis first or second (SAINT's intersample `rearrange(x, "b n d -> 1 b
          (n d)")`): one sequence of the batch's rows, attended on purpose.
        - A call of a module on which its class registers a forward pre-hook
          is not judged: the hook may lay out what the module reads.
        """
    VALID = [
        "import torch.nn as nn\nlayer = nn.TransformerEncoderLayer(64, 8, batch_first=True)\n"
        "def f(x):\n    B, L, E = x.shape\n    return layer(x)\n",
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n"
        "def f(x):\n    B, L, E = x.shape\n    q = x.view(B, L, 8, 8).transpose(1, 2)\n    return attn(x, x, x)[0]\n",
    ]
    INVALID = [
        Example(
            "import torch.nn as nn\nlayer = nn.TransformerEncoderLayer(64, 8, batch_first=True)\n"
            "def f(x):\n    B, L, E = x.shape\n    return layer(x.transpose(0, 1))\n",
            5,
            12,
        ),
    ]

    def on_module_call(self, ev: ModuleCall) -> Iterator[Report]:
        analysis = analysis_for(self.ctx)
        stated = analysis.stated_batch_first(ev)
        if stated is None:
            return
        got = analysis.of_call(ev)
        if got.batch_first is None or got.batch_first == stated:
            return
        if stated and _inserted_axis_one(got.layout):
            return  # the module attends over a length-1 axis: nothing mixes
        if isinstance(getattr(got.layout, "node", None), DocLine):
            return  # a docstring's shape against the flag the code states
        if hooked(ev.site, ev.site.node.func):
            return  # a forward pre-hook may lay its input out
        ctor = ev.single_ctor()
        evidence: Dict[str, Any] = (
            construction_evidence(self.ctx, ctor) if ctor is not None else {"module": ev.spec.name}
        )
        evidence["batch_first"] = stated
        evidence.update(analysis.evidence(got))
        module = ev.spec.name
        if not ev.spec.has_batch_first:
            module += " (its layers)"
        yield self.report(
            ev.site.node,
            evidence,
            module=module,
            stated=stated,
            kind=KIND_TEXT[got.kind],
            where=where(analysis, got),
        )


def _inserted_axis_one(layout) -> bool:
    """The data is ``x.unsqueeze(1)``: axis 1 is one position long."""
    node = getattr(layout, "node", None)
    if not (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "unsqueeze"
        and len(node.args) == 1
    ):
        return False
    arg = node.args[0].value
    return isinstance(arg, cst.Integer) and arg.value == "1"
