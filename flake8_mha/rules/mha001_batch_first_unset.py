"""MHA001 (a module left to the default batch_first=False fed batch-first or
unknown data) and MHA903 (opt-in: the same default, fed only sequence-first
data: correct but implicit), with MHA903's fix.  Two sides of one question,
read from the layout analysis (``_layout_rule``)."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from ..analysis.events import Construction
from ..analysis.layout import BATCH_FIRST, SEQ_FIRST, UNBATCHED, CallLayout
from ._layout_rule import LAYOUT_MODULES_DOC, call_layouts, default_left, hooked, kept_in, where
from .autofix import Fix, FixContext, add_keyword, register
from .base import Example, Report, Rule
from .construction import construction_evidence


class BatchFirstUnset(Rule):
    CODE = "MHA001"
    NAME = "batch-first-unset"
    MESSAGE = (
        "{module} built without batch_first: (N, L, E) input silently mixes samples "
        "across the batch"
    )
    MESSAGE_KNOWN = (
        "{module} built without batch_first is fed batch-first data ({where}): it reads "
        "axis 0 as the sequence and mixes samples across the batch"
    )
    WHAT = f"""
        Flags {LAYOUT_MODULES_DOC} (and classes that subclass them) built without a
        `batch_first` argument when, on some call in the file, the data it is fed
        is batch-first `(N, L, E)` or of unknown layout, or when the module is
        never called in the file. Any explicit value, `True` or `False`, is
        accepted, and so is a `**kwargs` splat that may carry it (a
        `**asdict(cfg)` of a parameter annotated with a `@dataclass` of the
        file carries only its fields: one without `batch_first` leaves the
        default, probe AC's AC29; so does a dict the code writes out, in this
        file or imported from another, `**LAYER_KW` of `LAYER_KW =
        dict(dropout=0.0, norm_first=True)`, probe AN's AN27, unless the
        file changes it by item).

        The layout of the data comes from the code only (docs/evidence.md,
        "Layout evidence"): einops patterns and `einsum` strings,
        shape-unpacking names (`B, L, D = x.shape`, or one batch size such as
        `bs = x.shape[1]`) and
        `view`/`reshape`/`torch.randn` with named sizes, `repeat` by a named
        size (`q.unsqueeze(1).repeat(1, batch_size, 1)`),
        `transpose`/`permute`/`swapaxes`/`movedim`/`flatten`/`unflatten` of a
        known layout, embeddings of ids of known layout, convolution feature
        maps `(N, C, ...)`, layout-preserving operations, an attention
        module's own output, shape comments (at the end of the line, on the
        line above, just below a reshape, or after a parameter in the
        signature), docstring entries that give a parameter's shape (also on
        the lines below the entry, as transformers writes them), a shape
        check's message opening a function (`raise ValueError("x must have
        shape (n_seq, n_batch, n_feats)")`) and jaxtyping annotations,
        followed through locals, helpers, methods, callers and module calls
        (`self.block(x)`, an `nn.ModuleList` looped over or indexed, an
        `nn.Sequential` of the file's blocks, and what a block's `forward`
        returns). When the data is known to be batch-first, the message says
        so and names the line that decided it.

        An axis swap (`x.permute(1, 0, 2)`, `x.transpose(0, 1)`) of data whose
        layout the code never states, passed straight to the module call (or
        to a module of the file whose `forward` reaches it), is the conversion
        to the layout the module reads: that call is not reported.

        A module fed data known to be sequence-first on every call is correct:
        it is not reported here (the opt-in MHA903 asks to say so explicitly).
        """
    WHY = """
        `batch_first` defaults to `False`: these modules read their input as
        `(L, N, E)` (sequence first). Fed batch-first data, the module attends
        across the *batch* instead of across the sequence: every sample's output
        depends on the other samples. Nothing raises, the loss still goes down,
        and the numbers are wrong (torch 2.13, E=64, 8 heads, N=4, L=10: changing
        only sample 1 moves sample 0's output by 0.48).
        """
    EXAMPLE = """
        import torch.nn as nn

        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(1000, 64)
                self.attn = nn.MultiheadAttention(embed_dim=64, num_heads=8)

            def forward(self, tokens):
                B, L = tokens.shape
                x = self.embed(tokens)  # (B, L, E)
                return self.attn(x, x, x, need_weights=False)[0]
        """
    USE_INSTEAD = """
        import torch.nn as nn

        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(1000, 64)
                self.attn = nn.MultiheadAttention(embed_dim=64, num_heads=8, batch_first=True)

            def forward(self, tokens):
                x = self.embed(tokens)  # (B, L, E)
                return self.attn(x, x, x, need_weights=False)[0]
        """
    DECISIONS = """
        - `nn.TransformerEncoder`/`nn.TransformerDecoder` take no `batch_first`;
          the layer they are built from carries the finding, and their calls
          count as the layer's calls.
        - A subclass with its own `__init__` is reported at its
          `super().__init__(...)` call; one without is reported where it is built.
          A `forward` of its own that calls `super().forward(x, x, x, ...)` calls
          that module: it is fed what the subclass's callers feed its `forward`.
          An encoder or decoder layer of another project file that keeps
          torch's `__init__` and runs a `forward` of its own is judged where
          it is built when that `forward` hands its first parameter, through
          the layer's norms, dropouts and residual sums only, to
          `self.self_attn` or torch's `self._sa_block`: it is fed what its
          callers hand it by place (docs/reach.md).
        - An `nn.MultiheadAttention` kept on `self.<attr>` whose every use in the file reads an
          attribute of it (`self.attn.in_proj_weight`, `self.attn.out_proj(out)`,
          `self.attn.num_heads`) and that nothing calls is not reported: its
          weights serve hand-written attention and its `forward` never runs
          (mmaction's UniFormerV2). Any other use of an attribute of that name in
          the file (a call, an argument, an alias) keeps the finding. A
          transformer module used only through its parts (`self.transformer.encoder(x)`)
          keeps it: the parts run with its `batch_first`.
        - The calls of an `nn.Transformer`'s own encoder and decoder
          (`self.transformer.encoder(src)`, `.decoder(tgt, memory)`, also
          through `.forward`) are calls of the Transformer: the layout they
          are fed decides as a call of the whole does. Not when the
          construction hands in a `custom_encoder`/`custom_decoder` on every
          path: that part is the caller's own module. One that may be None
          (darts builds it only under a setting) leaves torch's part, read
          with the Transformer's `batch_first`.
        - Unknown layout is reported (as before the layout analysis): no prior is
          assumed either way, and the default is a trap whenever the data is
          batch-first. A module never called in the file is reported too. A
          call on the other side of a flag that `__init__` sets beside the
          construction, and nowhere else (shiba: `self.config.
          deep_transformer_requires_transpose = True` where torch's stack is
          built, the other branch keeping the caller's own), never runs that
          module and is not read (`fixtures/MHA001_stack_choice.py`); a module
          a factory of another file returns (one of several classes) is fed
          what that factory's callers pass (`fixtures/program_layout/factory_classes/`).
        - A swap is followed through `q, k, v = q.permute(1, 0, 2),
          k.permute(...), v.permute(...)`, through casts chained after it
          (`window.float().to(device)`), and into the inputs an
          `nn.TransformerDecoder` is given by a splat of a helper's tuple
          (`self.decoder(*self.encode(src, c, tgt))`). A sum `x + f(x)`
          whose second term's layout is unknown is `x`.
        - A size that multiplies a batch name with another
          (`seq_len * batch_size`) is a batch axis: attention mixes across
          neither. A batch or sequence name under a qualifier (`local_bs`,
          `cur_len`) is that name.
        - A module stored on `self.<attr>` that may hold something else
          (`MHA(...) if flag else None`, `if`/`elif` branches building other
          kinds) is fed what the class's calls of `self.<attr>` pass, those
          that give the module's required inputs (`self.mixer(x)` runs the
          other kind); a swap before a call that reaches such an attribute
          is the conversion, as for any attention module (cn-clip's
          `nn.MultiheadAttention(d, h) if not flash else FlashMHA(d, h)`,
          `fixtures/program_layout/clip_flash/`).
        - An axis swap right before the call counts only when the data's
          layout is otherwise unknown, and only through at most one local
          assignment (`x = x.permute(1, 0, 2)  # NLD -> LND`, then the call),
          or through up to four per-token steps that rebind the data, each a
          call of a module kept on `self` with the data as its one argument,
          possibly scaled (`x = self.project(x) * math.sqrt(d)`, then `x =
          self.pos_enc(x)`, as in mvts_transformer): in the released packages
          reviewed, every such swap was the conversion to sequence-first. A
          module of unknown kind passes the conversion on; any stated layout
          decides over it.
        - Data that a `forward` receives from outside the project (its class is
          built from a registry by a config, or by the package's users: no file
          of the project calls it) says nothing about the layout either way.
          When the project's own calls feed the module, they decide; when none
          does, the layout stays unknown and the module is reported
          (mmpretrain's CLIP blocks, run by its tower and by a registered
          transformer).
        - `torch.utils.checkpoint.checkpoint(block, x, ...)` gives back what
          `block(x, ...)` does (its own keywords, such as `use_reentrant`, are
          not the block's): open_clip runs each block one way or the other.
        - A member of an `nn.Sequential` after the first is fed the output of
          the one before it; a member whose output layout is not known makes
          the rest of the chain unknown.
        - Unbatched 2-D input `(L, E)` has no batch axis: a module fed only
          unbatched data is not reported (nor by MHA903). `squeeze(0)` of the
          batch axis says the batch is one sample and drops it
          (`conv(mel.unsqueeze(0)).squeeze(0)`, then `.transpose(0, 1)`): the
          data is unbatched from there on. A batch size read from token ids
          (`batch_size = ids.size(0)`, a name that says ids or tokens) states
          them 2-D `(N, T)`, and a shape comment on a later statement that
          states another rank than the size read (`input =
          input.transpose(0, 1)  # shape: [T, N]`) is taken as the layout.
        - A length-1 query (a learned pooling query `q.expand(B, 1, E)`) is read
          like any other: its layout comes from the code, not from its sizes; a
          literal `1` in a shape has no role, the named batch size decides.
        - Nested tensors (`torch.nested.*`) are batch-first `(N, *, E)`.
        - One module fed both layouts on different calls: reported here when any
          call is batch-first (that call is named), whatever the others. The
          same when the layouts of several callers meet before one call (a
          block's `forward` fed sequence-first frames by one caller and
          batch-first tokens by another): the batch-first caller is named.
        - When the inputs of one call disagree (query batch-first, key
          sequence-first) the call's layout counts as unknown.
        - A construction under a test that names `"batch_first"` (torch-ecg's
          `if "batch_first" in get_kwargs(nn.TransformerEncoderLayer):` with
          the flag, `else:` without it) is the fallback for a torch that has
          no such argument: not left to the default by choice, not reported
          (nor by MHA903).
        - Never auto-fixed (`--fix` leaves it alone, see `fix.NEVER_FIXED`): even
          where every call feeds known batch-first data, `batch_first=True` also
          changes the layout of the module's output and of its attention
          weights, which the code downstream reads; the author decides.
        - A module on which its class registers a forward pre-hook
          (`self.attn.register_forward_pre_hook(...)`) reads what the hook
          hands it, which may be laid out anew: not judged (a CLIP port that
          transposes inside the hook; docs/reach.md, "Generators, hooks,
          loop names").
        """
    REFERENCES = ("https://pytorch.org/docs/stable/generated/torch.nn.MultiheadAttention.html",)
    VALID = [
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=True)\n",
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=False)\n",
        "import torch.nn as nn\ndef make(**kw):\n    return nn.MultiheadAttention(64, 8, **kw)\n",
        "class MultiheadAttention:\n    pass\nattn = MultiheadAttention(64, 8)\n",
        "import torch.nn as nn\nenc = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 8, batch_first=True), 2)\n",
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8)\n"
        "def f(x):\n    x = x.permute(1, 0, 2)  # (B, L, E) -> (L, B, E)\n    return attn(x, x, x)[0]\n",
    ]
    INVALID = [
        Example("import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8)\n", 2, 8),
        Example(
            "from torch import nn\nlayer = nn.TransformerEncoderLayer(d_model=64, nhead=8)\n", 2, 9
        ),
        Example(
            "import torch.nn as nn\n\nclass Attn(nn.MultiheadAttention):\n"
            "    def __init__(self, dim):\n        super().__init__(dim, 8)\n",
            5,
            9,
        ),
        Example(
            "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8)\n"
            "def f(x):\n    B, L, E = x.shape\n    return attn(x, x, x)[0]\n",
            2,
            8,
        ),
    ]

    def on_construction(self, ev: Construction) -> Iterator[Report]:
        if not default_left(ev, getattr(self.ctx, "project", None)):
            return
        calls, analysis = call_layouts(self, ev)
        known = [c for _, c in calls if c.kind == BATCH_FIRST]
        unknown = [c for _, c in calls if c.kind is None]
        if not known and not unknown and calls:
            return  # every call feeds sequence-first data
        target = kept_in(ev)  # asked only of a module about to be reported: a walk of its class
        if target is not None and hooked(ev.site, target):
            return  # a forward pre-hook may lay its input out (probe AO's FALSE02)
        evidence = construction_evidence(self.ctx, ev)
        if known:
            evidence.update(analysis.evidence(known[0]))
            yield self.report(
                ev.site.node,
                evidence,
                self.MESSAGE_KNOWN,
                module=ev.spec.name,
                where=where(analysis, known[0]),
            )
            return
        if not calls and analysis.weights_only(ev):
            return  # its weights serve hand-written attention; it is never run
        if unknown or not calls:
            evidence.update(analysis.evidence(unknown[0] if unknown else CallLayout(None)))
            evidence["called"] = bool(calls)
            yield self.report(ev.site.node, evidence, module=ev.spec.name)


class BatchFirstImplicit(Rule):
    CODE = "MHA903"
    NAME = "batch-first-implicit"
    CATEGORY = "opinionated"
    DEFAULT_ENABLED = False
    MESSAGE = (
        "{module} built without batch_first is fed sequence-first data on every call "
        "({where}): correct, but say batch_first=False"
    )
    FIX_TITLE = "Add `batch_first=False` to the construction"
    WHAT = f"""
        Flags {LAYOUT_MODULES_DOC} (and their subclasses) left to the default
        `batch_first=False` whose every call in the file feeds data known to be
        sequence-first `(L, N, E)`: exactly the modules MHA001 no longer reports.
        Off by default.
        """
    WHY = """
        The code is correct, but the reader must trace the data to know it: the
        next edit that feeds batch-first data (or copies the construction into
        a batch-first model) mixes samples silently (MHA001). Saying
        `batch_first=False` makes the layout part of the module's definition.
        """
    EXAMPLE = """
        import torch.nn as nn

        attn = nn.MultiheadAttention(64, 8)

        def encode(x):
            x = x.transpose(0, 1)  # (B, L, E) -> (L, B, E)
            return attn(x, x, x, need_weights=False)[0]
        """
    USE_INSTEAD = """
        import torch.nn as nn

        attn = nn.MultiheadAttention(64, 8, batch_first=False)

        def encode(x):
            x = x.transpose(0, 1)  # (B, L, E) -> (L, B, E)
            return attn(x, x, x, need_weights=False)[0]
        """
    DECISIONS = """
        - Every call must be known sequence-first; unbatched `(L, E)` calls do
          not count against it, but a module fed only unbatched data is not
          reported. One call of unknown layout and the module is MHA001's.
        - An axis swap of data of unknown layout right before the call (the
          CLIP pattern: `x.permute(1, 0, 2)  # NLD -> LND`) counts as
          sequence-first data: the message names the swap.
        - The fix writes exactly what torch already does: the numbers do not
          change. A construction with a `**kwargs` splat is never reported.
        - MHA902 (also opt-in) reports every explicit `batch_first=False`: the two
          are opposite team preferences (say the layout vs. keep everything
          batch-first); enable one of them. The fixed line is MHA902's.
        - The confirmer shows no damage (NOT REPRODUCED): the code is correct.
        """
    VALID = [
        "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=False)\n"
        "def f(x):\n    x = x.transpose(0, 1)  # (B, L, E)\n    return attn(x, x, x)[0]\n",
    ]
    INVALID = [
        Example(
            "import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8)\n"
            "def f(x):\n    B, L, E = x.shape\n    x = x.transpose(0, 1)\n    return attn(x, x, x)[0]\n",
            2,
            8,
            fixed="import torch.nn as nn\nattn = nn.MultiheadAttention(64, 8, batch_first=False)\n"
            "def f(x):\n    B, L, E = x.shape\n    x = x.transpose(0, 1)\n    return attn(x, x, x)[0]\n",
        ),
    ]

    def on_construction(self, ev: Construction) -> Iterator[Report]:
        if not default_left(ev, getattr(self.ctx, "project", None)):
            return
        calls, analysis = call_layouts(self, ev)
        kinds = [c.kind for _, c in calls]
        if (
            not kinds
            or any(k not in (SEQ_FIRST, UNBATCHED) for k in kinds)
            or SEQ_FIRST not in kinds
        ):
            return
        # the call whose evidence names the most axes (a shape comment over ``bs = x.shape[1]``)
        first = max(
            (c for _, c in calls if c.kind == SEQ_FIRST),
            key=lambda c: sum(r is not None for r in (c.layout.roles if c.layout else ())),
        )
        evidence = construction_evidence(self.ctx, ev)
        evidence.update(analysis.evidence(first))
        yield self.report(ev.site.node, evidence, module=ev.spec.name, where=where(analysis, first))


def _batch_first_false(call: cst.Call, ctx: FixContext) -> Optional[cst.Call]:
    if isinstance(call.func, cst.Name) and call.func.value == "super":
        return None  # ``super()`` of ``super().__init__(d, h)``: the call after it is the one
    if any(a.star for a in call.args) or any(
        a.keyword is not None and a.keyword.value == "batch_first" for a in call.args
    ):
        return None
    return add_keyword(call, "batch_first", cst.Name("False"))


FIX = register(
    Fix(
        "MHA903",
        BatchFirstImplicit.FIX_TITLE,
        "`batch_first=False` is torch's default: writing it changes nothing the module computes. "
        "A call with a `*args`/`**kwargs` splat, or one that already passes batch_first, is left "
        "alone.",
        _batch_first_false,
    )
)
