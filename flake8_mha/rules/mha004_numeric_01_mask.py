"""MHA004: a float or integer 0/1 mask given as an attention mask."""

from __future__ import annotations

from typing import Iterator

from ..analysis.events import ModuleCall, SdpaCall
from ..analysis.flow import CallSite
from ..analysis.masks import FLOAT01, IGNORE, INT, KEEP, Mask, Sink
from ._mask_rule import MaskRule, sink_text
from .base import Example, Report


class NumericZeroOneMask(MaskRule):
    CODE = "MHA004"
    NAME = "numeric-01-mask"
    MESSAGE = "{mask} is {dtype} 0/1 mask; {sink} {consequence}: pass a bool mask"
    MESSAGE_FLOAT = "adds a float mask to the scores, so nothing is masked"
    MESSAGE_INT = "raises on an integer mask"
    WHAT = """
        Flags a 0/1 mask made floating point (`.float()`, `.half()`,
        `.to(dtype)`, `.type_as(x)`, or built as float ones such as
        `tril(ones(L, L))`) or integer (`.long()`, `.int()`, `.to(torch.uint8)`,
        a tokenizer's `attention_mask`) that reaches an attention mask argument
        of `nn.MultiheadAttention`, a Transformer module or
        `F.scaled_dot_product_attention`.
        """
    WHY = """
        A floating-point mask is *added* to the attention logits: 0/1 values
        shift scores by one and mask nothing (torch 2.13: 0.91 off for a float
        padding mask, 1.13 for a float causal triangle). On the
        `TransformerEncoderLayer` inference fastpath the same float mask is read
        as bool instead, so training and evaluation disagree. Integer masks raise
        (`AssertionError: only bool and floating types of key_padding_mask are
        supported`).
        """
    EXAMPLE = """
        causal = torch.triu(torch.ones(L, L), diagonal=1)    # float32 0/1
        out = self.encoder(x, mask=causal)
        """
    USE_INSTEAD = """
        causal = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)
        out = self.encoder(x, mask=causal)
        # or an additive mask: nn.Transformer.generate_square_subsequent_mask(L)
        """
    DECISIONS = """
        - `1 - mask` of a mask the code does not show (a parameter or a batch
          entry named `mask`, `src_mask`, `valid`, `keep`: a collate
          function's, or the caller's outside the project) holds numbers:
          torch refuses `-` on a bool tensor, so the mask is float or integer
          and `1 - mask` its 0/1 inversion; reported as a float mask (what a
          collate function's `torch.zeros(...)` makes; an integer one raises
          instead). UCE's `src_key_padding_mask=(1 - mask)`, release review
          46. `1 - alpha` of any other name is no mask.
        - A 0/1 mask added into a bias (`position_bias + mask01`, T5's
          relative bias folded with a float keep-mask) is still a 0/1 mask
          added: the sum handed to SDPA or an attention module as its mask
          is reported as the mask itself would be. An additive mask or a
          bias of unknown values on both sides is not.
        - Only a mask known to hold 0 and 1 is reported: one whose 0/1 meaning
          is known, or a comparison cast to numbers whatever it means
          (`(x_cat == MISSING_ID).float()`); a float tensor of zeros, a bias,
          or an additive mask (`masked_fill(m, -inf)`, `(1 - m) * -1e4`,
          `generate_square_subsequent_mask`) is what a float mask should be
          and is never reported.
        - A graph's adjacency (a name `adj`, `adjacency`, `adj_matrix`) is
          nonzero on an edge, the pairs a node attends: made bool
          (`adj.bool()`) or compared with 0 (`adj > 0`, `adj != 0`) it is a
          keep-mask (`adj == 0` an ignore-mask), also OR-ed with the
          self-loops of `torch.eye(n)`. Graphormer-style `scores +
          (adj.bool() | eye).float()` is reported; the raw adjacency added
          as a bias (`scores + adj`) is not: nothing says it is 0/1.
        - A comparison joined to a causal triangle by `|` (`future |
          (attention_mask == 0)`, BLOOM's mask) hides where the triangle
          does, and by `&` to a lower triangle keeps with it: masks are
          united with masks of their own meaning. The comparison alone
          (`attention_mask == 0` of an attention layer's parameter, which
          transformers makes additive or 1 = keep) says nothing. A mask
          added after another term (`scores + alibi + causal_mask`) is added
          to the scores (`fixtures/program_calls/alibi_masks/`).
        - A mask changed in place is unknown (`m.fill_(v)`, `m[i] = v`), except
          where the code writes 0 or 1 (`True`/`False`) into it: a prefix-LM
          mask made as `causal = torch.tril(torch.ones(T, T))` then
          `causal[:, :prefix] = 1.0` is still a float 0/1 keep-mask (probe I).
          The same holds for every mask rule. A tensor of zeros into which
          the code writes only ones (`node_mask = torch.zeros(B, N)`, then
          `node_mask[batch, idx] = 1.0`, `to_dense_batch`'s way) is a 0/1
          mask of the written positions, its meaning unsaid: reported here
          as a float one (`tests/test_mask_written_ones.py`).
        - A parameter named `attention_mask` is the tokenizer's int64 mask only
          beside a parameter holding the token ids (`forward(self, input_ids,
          attention_mask)`, as `batch["attention_mask"]` and
          `inputs.attention_mask` are), unless the function's docstring
          describes it as a mask over the scores (its entry names
          scaled_dot_product_attention, gives three axes or more, or says
          additive or -inf: kornia's PaliGemma, release review 30); alone (an
          attention layer's parameter) it is whatever the model made of it,
          and not assumed integer.
        - A numeric mask that also has the wrong meaning for its argument reports
          MHA002/MHA003 as well.
        - `masked_fill` and `torch.where` are not attention mask arguments: a
          numeric mask there raises at once.
        - Hand-written attention: a bool or 0/1 keep- or ignore-mask added to
          (or, float or integer, subtracted from) attention scores that flow
          into softmax (`scores + mask`, `logits + (ids_i == ids_j).float()`,
          `scores += mask`, `scores.add_(mask)`) is reported where it is added;
          so is a comparison cast to numbers whatever it means (`scores +
          (eta <= close).float()`: the fix cannot say which side to remove,
          `fixtures/MHA004_added_comparison.py`), but not one scaled by a
          weight (`(dist < r).float() * w`, a bias). The fix fills the
          positions to remove: `~mask` of a bool keep-mask, `mask == 0` of a
          float or integer one (`~` raises on a float tensor).
          What counts as attention scores: see MHA012's page. Not reported when
          the mask is already additive (-inf or large negative filled, `(1.0 -
          m) * -10000.0`, `torch.where(m, 0, -inf)`), of unknown kind, or when
          a -inf fill between the addition and the softmax removes the masked
          positions anyway (a fill of the same mask, or of one made from it:
          a fill of another mask removes other positions, as MHA012's page says). When the added term is a parameter of a function
          of the project (in this file or another), each caller's mask is
          judged at its call instead, naming the chain: a right caller beside
          a wrong one no longer hides it (docs/reach.md, "Fills of scores").
          Scores and mask both handed to a helper whose one return adds them
          (`add_bias(scores, mask)`, of this file or another project file)
          are judged at its call, as if added there, naming the helper.
          A function that also fills its scores with a padding mask is read
          the same way, each at its own line (a padding fill and a window
          added: `fixtures/program_calls/filled_and_added/`), unless the
          added term reads a name the fill's mask reads (one mask filled
          when bool and added when not is one mask, judged at the fill).
        - A mask added together with a position bias counts too: T5's fold
          (`position_bias = position_bias + mask`, then the bias added to the
          scores: the one 0/1 summand of a local bound once to a sum, or the
          one mask-named operand a parameter's stores add into it), and a bias
          added before the mask (`scores = scores + alibi; scores = scores +
          attention_mask`: of several added terms, the one named a mask, or
          else the one that is a parameter, bare, beside terms made in the
          function: AlphaFold's row attention adds the pair bias it computes,
          then its `bias` parameter, which a caller handing a 0/1 keep-mask
          gets wrong, reported at that call; probe AR's AR10).
          HuggingFace T5's form, the fold made under `if position_bias is
          None:` and the bias handed to SDPA, is judged at the calls that
          leave `position_bias` None (the stack's first block; a call that
          always gives a bias of its own folds no mask):
          `fixtures/program_calls/t5_defaulted_bias/`.
        """
    VALID = [
        "import torch\nimport torch.nn.functional as F\n"
        "def attend(q, k, v, keep):\n"
        "    bias = torch.zeros(keep.shape, dtype=q.dtype)\n"
        "    bias = bias.masked_fill(~keep.bool(), float('-inf'))\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=bias)\n",
        "import torch\nimport torch.nn as nn\n"
        "layer = nn.TransformerEncoderLayer(64, 8, batch_first=True)\n"
        "def f(x, L):\n"
        "    return layer(x, src_mask=torch.triu(torch.ones(L, L, dtype=torch.bool), 1))\n",
    ]
    INVALID = [
        Example(
            "import torch\nimport torch.nn as nn\n"
            "layer = nn.TransformerEncoderLayer(64, 8, batch_first=True)\n"
            "def f(x, L):\n"
            "    return layer(x, src_mask=torch.triu(torch.ones(L, L), 1))\n",
            5,
            12,
        ),
    ]

    def on_module_call(self, ev: ModuleCall) -> Iterator[Report]:
        a = self.analysis()
        for sink in a.module_sinks(ev):
            yield from self._check(sink, a.value(sink), ev)

    def on_sdpa_call(self, ev: SdpaCall) -> Iterator[Report]:
        got = self.sdpa_mask(ev)
        if got is not None:
            yield from self._check(*got, None)

    def on_call(self, site: CallSite) -> Iterator[Report]:
        from .handwritten import scores_added  # hand-written attention: scores + mask

        yield from scores_added(self, site)

    def on_fill_call(self, ev) -> Iterator[Report]:
        """A call of a project function that adds its mask parameter to its
        attention scores before softmax (Whisper's ``qk + mask``): the
        caller's mask, judged at the call as if added there."""
        if ev.door != "add":
            return
        from .handwritten import added_through

        yield from added_through(self, ev)

    def _check(self, sink: Sink, mask: Mask, module_ev) -> Iterator[Report]:
        a = self.analysis()
        if mask.kind not in (FLOAT01, INT) or mask.fill:
            return
        if mask.meaning not in (KEEP, IGNORE) and not (mask.zero_one and mask.meaning is None):
            return
        if mask.kind == FLOAT01:
            dtype = mask.dtype or "floating-point"
            consequence = self.MESSAGE_FLOAT
        else:
            dtype = mask.dtype or "integer"
            consequence = self.MESSAGE_INT
        article = "an" if dtype.startswith("int") else "a"
        yield self._report(
            sink,
            mask,
            module_ev,
            self.MESSAGE,
            mask=a.evaluator.describe(mask.kind_origin or mask.origin),
            dtype=f"{article} {dtype}",
            sink=sink_text(sink),
            consequence=consequence,
        )
