"""MHA002: a True = ignore mask given to SDPA, and its fix (invert it at the sink)."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from ..core import torch_api
from ..analysis.events import SdpaCall
from ..analysis.flow import CallSite
from ..analysis.masks import ADDITIVE, BOOL, IGNORE, KEEP, Mask, Sink
from .autofix import Fix, FixContext, invert, register, rewrite_argument
from ._mask_rule import MaskRule, described, fills_attention_scores, fix_words, sink_text
from ._mask_rule import joined_ignore, reshaped_from, true_word
from .base import Example, Report


class IgnoreMaskToSdpa(MaskRule):
    CODE = "MHA002"
    NAME = "ignore-mask-to-sdpa"
    MESSAGE = "{mask} means {what} = ignore; {sink} treats True as attend ({fix})"
    WHAT = """
        Flags a mask whose True means *ignore* (the `nn.MultiheadAttention`
        convention) that reaches `F.scaled_dot_product_attention`'s `attn_mask`,
        where True means *attend*: `tokens == pad_id`, `tokens.eq(pad)`,
        ids compared with the name an `nn.Embedding(..., padding_idx=REST)` of
        the file takes as its padding id (`chords == REST`, whatever the name),
        `arange(S)[None, :] >= lengths[:, None]`, `triu(ones(L, L), 1).bool()`,
        `attention_mask == 0`, a parameter named `key_padding_mask`, followed
        through locals, `self.<buffer>`, slicing, `.to(device)`, `unsqueeze`,
        helper functions of the same file and branches.
        """
    WHY = """
        The two APIs read a bool mask the opposite way round. Handed an MHA
        padding mask, SDPA attends *only* to the padding and ignores every real
        token; a sample without padding gets every key masked and SDPA returns
        zeros for it. Nothing raises (torch 2.13: 1.35 off against the module
        with the same mask; inverted with `~`: 1.8e-07).
        """
    EXAMPLE = """
        pad = tokens == self.pad_id                      # True = padding
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=pad[:, None, None, :])
        """
    USE_INSTEAD = """
        pad = tokens == self.pad_id                      # True = padding
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=~pad[:, None, None, :])
        """
    DECISIONS = """
        - `causal & pad` with `pad` an ignore-mask known from the code (a
          left-padded batch's `arange(S) < (S - lengths)`, no triangle) is
          True only on the padding whatever the other side is: every real
          key is masked out. Reported naming `pad` and the `&`
          (`fixtures/program_calls/joined_masks/`; the same conjunction
          inverted into a fill is MHA003's).
        - The meaning must be known from the code: a pad-id comparison, an
          `arange` against lengths, a triangle of ones, an inversion of a known
          keep-mask. A parameter named `key_padding_mask`, `src_key_padding_mask`,
          `padding_mask` or `pad_mask` counts only when nothing in the file says
          more (no call of that function in the file passes a mask whose meaning
          is known), and no other file of the project hands that parameter a
          mask: there the mask enters at that call, is judged there with what
          the caller's code says, and the names on the way say nothing
          (`fixtures/program_calls/named_params/`). The name is the evidence
          where the mask comes from outside the project.
        - So is the name of a field of a batch the code does not build where
          it reads it: `batch.pad_mask`, `batch["key_padding_mask"]` (a
          dataclass or dict a collate function filled, handed in as a
          parameter) with one of those names is True = ignore, as the
          tokenizer's `batch["attention_mask"]` is 1 = keep. A wrapper's own
          `kwargs["pad_mask"]` is not a field: its callers say what it is.
          Probe AH's AH04; `fixtures/program_calls/batch_fields/`.
        - A test for zeros whose operand says nothing (`(images == 0).all(dim=1)`,
          `x.abs().sum(-1) == 0`: padded pixels or frames, zero-filled by the
          collator) is True = ignore when the local it is bound to says
          padding (`pad`, `padding`, `pad_mask`, `is_pad`), weak evidence as a
          name is; not a test for non-zeros (`!= 0` marks what is there), nor
          one of a length, a count, a mask or a pad id or amount (`pad_len ==
          0` marks the rows *without* padding). A mask resampled to a feature
          map (`F.interpolate(pad[:, None].float(), size=...).bool()[:, 0]`,
          DETR's backbones) keeps its meaning. Probe AQ's AQ24;
          `fixtures/program_calls/padded_pixels/`.
        - `torch.where(mask, scores, -inf)` keeps the scores where the mask is
          True, the same door as SDPA: an ignore-mask there is reported too; one
          whose meaning comes from a triangle, or from one tensor of ids
          against itself, only where the filled tensor is
          attention scores that reach a softmax (see MHA003). `einx.where(desc,
          mask, scores, -inf)` is read the same way (see MHA003). A project
          function that keeps scores so by its mask parameter (`def
          gate(sim, keep): return torch.where(keep, sim, -inf)`) is judged at
          each call with the caller's mask, and reported there. When it is
          the callee that inverts the mask it is handed (`ignore =
          attention_mask == 0` before SDPA, a tokenizer's mask handed in),
          either side may be the mistake: the message names the argument as
          written, says the callee inverts it, and suggests no `~` at the
          call (on an int64 mask `~` gives -1/-2: every key would be masked).
          The same for MHA003.
        - A float or integer 0/1 ignore-mask reports MHA004 as well.
        - A sliding window made of two triangles takes its meaning from the
          causal one: `triu(ones, 1) | tril(ones, diagonal=-window)` marks the
          future and the far past (True = ignore), `tril(ones) & triu(ones,
          diagonal=-window)` keeps the near past (True = keep); other pairs
          say nothing. An id compared with -1 or -100 (`point_labels != -1`,
          a padded point, an ignored label) is present where it differs
          (True = keep), weak evidence as a name is.
        - `arange` against lengths also counts a per-sample count by its name
          (`num_agents[:, None]`, `n_valid`, `token_count`, a bare `n[:, None]`;
          any `n_<things>` indexed per sample but the model's own heads, dims,
          experts, channels and the like: a sample's `n_layers` counts),
          the arange expanded per sample (`arange(S).expand(B, -1)`), a bool
          tensor of zeros filled with True where a comparison holds (that
          comparison; of ones filled with False, its inverse), and a left-padded
          batch's start: `arange(S)[None, :] < (S - lengths)[:, None]` is True
          on the padding (True = ignore), `>=` on the tokens; the total must be
          the padded length (`S`, `seq_len`, `max_len`, `x.size(1)`), never a
          second per-sample count (`lengths - prefix_len` says nothing).
          A count divided by a size or shifted by a number is a count
          (`n_samples // hop + 1`, `torch.div(n_samples, hop,
          rounding_mode="floor")`: the STFT frames of each signal).
          A padded image's valid pixels count the same way, row and column
          apart (`ys[None, :, None] < image_sizes[:, 0, None, None]`, one
          column of per-sample (h, w) sizes), joined by `&` and flattened
          to the keys (`.flatten(1)`: (N, H, W) to (N, H*W); `flatten` keeps
          a mask's meaning). `torch.isnan(x)` and `isinf` are True on the
          missing cells (True = ignore), `isfinite` on the present ones;
          `.any(-1)`/`.all(-1)` over the features keeps the cells' meaning for
          the positions (`torch.isnan(obs).any(-1)`: a date is hidden when a
          band is missing; `fixtures/program_calls/reduced_masks/`), over no
          axis it is a single bool, no mask.
        - Branches join: a mask that is an ignore-mask on one path and unknown or
          a keep-mask on another is not reported; `None` on a path does not count.
        - Star-arguments are spread as Python spreads them: `sdpa(*args)` after
          `args = (q, k, v, mask)`, `args = (*args, mask)` or a list literal,
          and `sdpa(q, k, v, **kw)` after `kw = dict(attn_mask=mask)` or
          `{"attn_mask": mask}` (the same for MHA003, MHA004, MHA009 and calls
          of the file's own modules). Only positions that can be counted are
          bound: after a splat of unknown length (a `*args` parameter) nothing
          is, and a list or dict changed in place (`append`, `args[3] = ...`,
          `update`) is not spread at all.
        - A mask a method of a module-level class makes from a choice its
          constructor's parameter fixes (`self.causal = CausalKeep(n) if
          keep_style else CausalMask(n)`) is the one the project's
          constructions pick; a class built both ways is read once per
          construction, and the message names the one whose mask is wrong
          (`one construction of SubtitleRefiner in the project passes
          keep_style=False`).
        - A mask that reaches SDPA through a function that also hands it to a
          torch module's mask argument (`memory_key_padding_mask`), where its
          convention is right: the message says so, and to change it only on
          its way to SDPA (inverting it where it is made breaks the module).
        - A mask the class asks an abstract method of its own for (`mask =
          self.build_mask(lengths, t)` with the base's `build_mask` raising
          `NotImplementedError`, `...`, `pass` or an `@abstractmethod`) is
          judged once per used subclass that overrides it, in the base's file
          or another project file; the finding is at the base's call, the
          message naming the subclass and its override's file and line
          (`fixtures/program_calls/mask_hooks/`). A base whose own method
          returns a mask is judged by that mask alone.
        """
    VALID = [
        "import torch.nn.functional as F\n"
        "def attend(q, k, v, tokens, pad_id):\n"
        "    pad = tokens == pad_id\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=~pad[:, None, None, :])\n",
        "import torch\nimport torch.nn.functional as F\n"
        "def attend(q, k, v, L):\n"
        "    causal = torch.tril(torch.ones(L, L, dtype=torch.bool))\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=causal)\n",
    ]
    INVALID = [
        Example(
            "import torch.nn.functional as F\n"
            "def attend(q, k, v, tokens, pad_id):\n"
            "    pad = tokens == pad_id\n"
            "    return F.scaled_dot_product_attention(q, k, v, attn_mask=pad[:, None, None, :])\n",
            4,
            12,
        ),
        Example(
            "import torch\nimport torch.nn.functional as F\n"
            "def attend(q, k, v, L):\n"
            "    future = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)\n"
            "    return F.scaled_dot_product_attention(q, k, v, future)\n",
            5,
            12,
        ),
    ]

    def on_sdpa_call(self, ev: SdpaCall) -> Iterator[Report]:
        got = self.sdpa_mask(ev)
        if got is None:
            return
        sink, mask = got
        joined = self._joined(sink) if mask.meaning is None else None
        if mask.meaning == IGNORE and mask.kind != ADDITIVE:
            yield self._message(sink, mask)
        elif joined is not None:
            yield joined
        elif mask.meaning is None:  # each construction, or subclass, of the class on its own
            wrong = lambda m: m.meaning == IGNORE and m.kind != ADDITIVE  # noqa: E731
            one = self.instance_value(sink, wrong) or self.override_value(sink, wrong)
            if one is not None:
                report = self._message(sink, one[0])
                report.message += one[1]
                yield report

    def on_call(self, site: CallSite) -> Iterator[Report]:
        a = self.analysis()
        sink = a.fill_sink(site)
        if sink is None or sink.door != KEEP:
            return
        mask = a.value(sink)
        if (
            mask.meaning == IGNORE
            and mask.kind in (BOOL, None)
            and (not (mask.causal or mask.pairwise) or fills_attention_scores(self.ctx, sink))
        ):
            yield self._message(sink, mask)

    def on_fill_call(self, ev) -> Iterator[Report]:
        got = self.fill_mask(ev, KEEP)
        if got is not None and got[1].meaning == IGNORE:
            yield self._message(got[0], got[1], shown=got[2])

    def _joined(self, sink: Sink) -> Optional[Report]:
        """``causal & pad`` handed to SDPA, ``pad`` True on the padding: only
        the padding is attended (``joined_ignore``); reported naming it."""
        a = self.analysis()
        part = joined_ignore(a, reshaped_from(sink.expr), sink.site.env, sink.site.scope)
        if part is None:
            return None
        shown = f"{a.evaluator.describe(part.origin)}, joined by &,"
        return self._message(sink, part, shown, "make that part a keep-mask before the &")

    def _message(self, sink: Sink, mask: Mask, shown=None, fix=None) -> Report:
        a = self.analysis()
        return self._report(
            sink,
            mask,
            None,
            self.MESSAGE,
            mask=shown or described(a, mask),
            what=true_word(mask),
            sink=sink_text(sink),
            fix=fix or fix_words(a, mask, "invert it: ~mask"),
        )


# -- the fix ---------------------------------------------------------------------


def _decided_here(line: Optional[int], ctx: FixContext) -> bool:
    """Whether the line that decided the mask's meaning is inside the function
    (or module code) that holds the sink."""
    if not isinstance(line, int):
        return False
    func = ctx.enclosing_function()
    if func is None:
        return True
    first, last = ctx.lines(func)
    return first <= line <= last


def _invert_ignore_mask(call: cst.Call, ctx: FixContext) -> Optional[cst.Call]:
    mask = ctx.finding.evidence.get("mask") or {}
    if mask.get("kind") != "bool":
        return None  # ~ on a float 0/1 mask raises, on an integer one gives -1/-2: no fix
    if not _decided_here(mask.get("line"), ctx):
        return None  # the meaning came from one caller: others may pass the other kind
    names = ctx.qualnames(ctx.original.func)
    if any(n.endswith("scaled_dot_product_attention") for n in names):
        return rewrite_argument("attn_mask", invert, torch_api.SDPA_SIGNATURE)(call, ctx)
    if "torch.where" in names:  # torch.where(mask, scores, -inf) keeps where True, like SDPA
        return rewrite_argument("condition", invert, torch_api.WHERE_SIGNATURE)(call, ctx)
    return None


FIX = register(
    Fix(
        "MHA002",
        "Invert the mask where it is used: `attn_mask=~mask`",
        "The mask's True means ignore; SDPA's bool attn_mask (and torch.where's condition) keeps "
        "where True. `~` at the sink flips exactly that argument and nothing upstream, so other "
        "users of the mask are untouched. Only for a bool mask (`~` on a float or integer 0/1 "
        "mask is wrong: that is MHA004's business); a mask already written `~m` at the sink is "
        "left alone; a mask whose meaning was decided in a caller (the sink's function receives it "
        "as a parameter) is left alone too, since other callers may pass the other convention.",
        _invert_ignore_mask,
    )
)
