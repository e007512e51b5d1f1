"""MHA005: is_causal=True without its mask, on a torch module."""

from __future__ import annotations

from typing import Iterator

from ..analysis.events import ModuleCall
from ..analysis.values import definitely
from ._evidence import module_call_evidence
from .base import Example, Report, Rule


class IsCausalWithoutMask(Rule):
    CODE = "MHA005"
    NAME = "is-causal-without-mask"
    MESSAGE = (
        "{flag}=True without {mask_arg}: {module} raises in training and silently ignores "
        "the causal hint {where}"
    )
    WHAT = """
        Flags a call of `nn.MultiheadAttention` or a Transformer module with a
        literal `is_causal=True` (`src_is_causal`, `tgt_is_causal`,
        `memory_is_causal`) and without the mask that flag belongs to
        (`attn_mask`, `src_mask`, `mask`, `tgt_mask`, `memory_mask`).
        """
    WHY = """
        For the torch modules, `is_causal` is only a *hint* that the mask you
        pass is causal; it does not build one. In training the call raises
        `RuntimeError: Need attn_mask if specifying the is_causal hint`. In
        inference (eval, no grad, batch-first, even heads) the fastpath drops
        the hint and attends to the future without a word: 0.88 away from the
        causal output on torch 2.13.
        """
    EXAMPLE = """
        out, _ = self.attn(x, x, x, is_causal=True, need_weights=False)
        """
    USE_INSTEAD = """
        L = x.size(1)
        causal = nn.Transformer.generate_square_subsequent_mask(L, device=x.device)
        out, _ = self.attn(x, x, x, attn_mask=causal, is_causal=True, need_weights=False)
        """
    DECISIONS = """
        - Only a statically true flag counts; a variable flag is not reported.
        - The mask counts as given unless it is missing or statically `None`.
        - Not for `F.scaled_dot_product_attention`, where `is_causal=True`
          without a mask is the right way to ask for causal attention.
        - A mask that is a parameter of the function (or of the module's
          `forward`) counts as missing when every call of it in the project
          leaves it `None`: then the hint alone reaches the module, and the
          message says which calls decided it (docs/reach.md, "Facts from the
          callers"). One call that passes a mask, or that the analysis cannot
          read, leaves the mask given. The calls of a module's instances
          include those kept in `nn.ModuleList`/`nn.Sequential` and called in
          a loop over it or by index.
        - A call under `if self.causal:` where every construction in the
          project passes `causal=False` never runs in the program: not judged
          (nor is any call in a branch the program never takes).
        - A wrapper that passes the hint True itself and the mask from a
          parameter that defaults to None (`def decode(self, tgt, memory,
          tgt_mask=None)` calling the decoder with `tgt_mask=tgt_mask,
          tgt_is_causal=True`), whose calls disagree: each call that leaves
          the mask out is reported where it is made, naming the wrapper
          (`fixtures/program_calls/causal_hints/`); when every call leaves it
          out, the wrapper's own call is reported once, as above.
        """
    VALID = [
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n"
        "def f(x, m):\n    return attn(x, x, x, attn_mask=m, is_causal=True)\n",
    ]
    INVALID = [
        Example(
            "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n"
            "def f(x):\n    return attn(x, x, x, is_causal=True)[0]\n",
            4,
            12,
        ),
        Example(
            "import torch.nn as nn\nlayer = nn.TransformerEncoderLayer(64, 8, batch_first=True)\n"
            "def f(x):\n    return layer(x, is_causal=True)\n",
            4,
            12,
        ),
    ]

    def on_module_call(self, ev: ModuleCall) -> Iterator[Report]:
        site = ev.site
        for pair in ev.spec.causal_pairs:
            flag = ev.args.get(pair.flag)
            if flag is None or self.ctx.value(flag, site) is not True:
                continue
            mask = ev.args.get(pair.mask)
            if mask is not None and not definitely(mask, site.env, site.scope, None):
                continue
            if mask is None and ev.args.maybe_given(pair.mask):
                continue
            evidence = module_call_evidence(self.ctx, ev)
            evidence.update(flag=pair.flag, mask_arg=pair.mask)
            # a decoder has no fastpath of its own; in eval its layers drop the hint all the same
            where = "in inference" if "Decoder" in ev.spec.name else "on the inference fastpath"
            yield self.report(
                site.node,
                evidence,
                flag=pair.flag,
                mask_arg=pair.mask,
                module=ev.spec.name,
                where=where,
            )
