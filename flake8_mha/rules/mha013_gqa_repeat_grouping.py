"""MHA013 and MHA904: grouped-query attention whose K/V heads are tiled, where
the file also groups them (MHA013) or anywhere (MHA904, opt-in).  MHA014 is in
``mha014_gqa_heads_do_not_divide.py``.

The analysis (which call expands which axis of which tensor, and why we
believe it is the K/V head axis) is in ``flake8_mha/analysis/gqa.py`` and
``flake8_mha/analysis/heads.py``; these classes decide what to report.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, Optional

from ..analysis.flow import CallSite
from ..analysis.gqa import TILE, Expansion, GqaAnalysis, as_int, axes_text, code_text, line_of
from .base import Example, Rule, Report

_VIA_TEXT = {
    "repeat": ".repeat",
    "tile": ".tile",
    "expand": "a new axis before the heads, expanded and merged",
    "einops": "einops (r h)",
    "repeat_interleave": "repeat_interleave",
    "enable_gqa": "enable_gqa",
    "cat": "torch.cat of copies",
}


def expansion_evidence(ctx, exp: Expansion, other: Optional[Expansion] = None) -> Dict[str, Any]:
    """What a witness needs: head counts, the head axis, and the lines that decided them."""
    nodes = list(exp.deciding) + ([other.node] if other is not None else [])
    lines = line_of(ctx, nodes)
    n_rep, n_kv = as_int(exp.n_rep()), as_int(exp.n_kv())
    evidence: Dict[str, Any] = {
        "grouping": exp.kind,
        "via": exp.via,
        "tensor": exp.tensor,
        "head_axis": exp.head_axis,
        "rank": exp.rank,
        "head_axis_from": exp.decided,
        "layout": axes_text(exp.layout),
        "num_kv_heads": n_kv,
        "n_rep": n_rep,
        "num_heads": n_kv * n_rep if n_kv is not None and n_rep is not None else None,
        "decided_by": [
            {"line": lines[id(n)], "code": code_text(ctx, n)} for n in dict.fromkeys(exp.deciding)
        ],
    }
    if other is not None:
        evidence["other_path"] = {
            "via": other.via,
            "grouping": other.kind,
            "line": lines[id(other.node)],
            "code": code_text(ctx, other.node),
        }
    return evidence


class _Tiling(Rule):
    def analysis(self) -> GqaAnalysis:
        return GqaAnalysis.of(self.ctx)


class GqaRepeatGrouping(_Tiling):
    CODE = "MHA013"
    NAME = "gqa-repeat-grouping"
    MESSAGE = (
        "K/V heads tiled with {via}: query head i meets KV head i % n_kv, but {other} on "
        "line {line} pairs it with KV head i // n_rep: the two paths give different numbers"
    )
    WHAT = """
        Flags grouped-query attention whose key/value heads are *tiled* to the
        query heads (`k.repeat(1, n_rep, 1, 1)`, `torch.tile`, `torch.cat([k] *
        n_rep, dim=1)`, a new axis inserted *before* the head axis then expanded
        and merged, einops `(r h)`) in a
        file that also *groups* them (`F.scaled_dot_product_attention(...,
        enable_gqa=True)`, also as `functools.partial(F.scaled_dot_product_attention,
        enable_gqa=True)`, `repeat_interleave(n_rep, dim=head_axis)`, a new axis
        *after* the head axis, the Llama `repeat_kv`). Reported on the tiling call.
        """
    WHY = """
        `enable_gqa=True` and `repeat_interleave` pair query head `i` with KV head
        `i // n_rep`; tiling pairs it with `i % n_kv`. A model whose fused path
        uses `enable_gqa` and whose fallback path tiles computes different
        attention on the same weights, silently (2.73 apart for 8 query heads
        over 2 KV heads, measured on torch 2.13). Pretrained GQA checkpoints are
        grouped contiguously too.
        """
    EXAMPLE = """
        import torch.nn.functional as F

        def attend(q, k, v, n_rep, fused):
            if fused:
                return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
            k = k.repeat(1, n_rep, 1, 1)
            v = v.repeat(1, n_rep, 1, 1)
            return F.scaled_dot_product_attention(q, k, v)
        """
    USE_INSTEAD = """
        import torch.nn.functional as F

        def attend(q, k, v, n_rep, fused):
            if fused:
                return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
            k = k.repeat_interleave(n_rep, dim=1)
            v = v.repeat_interleave(n_rep, dim=1)
            return F.scaled_dot_product_attention(q, k, v)
        """
    DECISIONS = """
        - The head axis comes from the code: `view`/`reshape` arguments named
          like head counts (`n_kv_heads`, `num_key_value_heads`, `self.h_kv`,
          `num_heads`) followed through `transpose`, `permute`, indexing and
          `torch.cat`; einops patterns; `b, n_kv, s, d = x.shape`; or a repeat
          factor named like `n_rep`/`num_key_value_groups`/`num_queries_per_kv` or
          computed as `num_heads // num_kv_heads`. When the layout names the head
          axis, the expanded axis must be it.
        - The tensor must be a key or value: named so (`k`, `v`, `key_states`,
          `xk`, `past_key`, ...) somewhere along its definitions, or the first
          argument of a helper named like `repeat_kv`.
        - Never reported: axis 0 (the batch: beams), a factor named like a beam,
          batch or sample count, a sequence length or the query head count
          (multi-query, where one KV head makes tiling and grouping agree), a KV
          head count statically 1, the last axis, a tensor whose layout puts the
          heads elsewhere, and files that do not import torch.
        - "Groups the other way" is decided per file: any SDPA call whose
          `enable_gqa` is not statically False, or any grouping expansion found
          with the same evidence as a tiling.
        - A file that only tiles is MHA904's (opt-in), not MHA013's.
        """
    REFERENCES = (
        "torch.nn.functional.scaled_dot_product_attention (`enable_gqa`): "
        "https://pytorch.org/docs/stable/generated/torch.nn.functional.scaled_dot_product_attention.html",
        "Ainslie et al., GQA, arXiv:2305.13245",
    )
    VALID = [
        "import torch.nn.functional as F\n"
        "def repeat_kv(x, n_rep):\n"
        "    b, n_kv, s, d = x.shape\n"
        "    x = x[:, :, None, :, :].expand(b, n_kv, n_rep, s, d)\n"
        "    return x.reshape(b, n_kv * n_rep, s, d)\n"
        "def attend(q, k, v):\n"
        "    return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)\n",
        "import torch\nimport torch.nn.functional as F\n"
        "def beams(k, v, q, num_beams):\n"
        "    k = k.repeat(num_beams, 1, 1, 1)\n"
        "    return F.scaled_dot_product_attention(q, k, v.repeat(num_beams, 1, 1, 1), enable_gqa=True)\n",
    ]
    INVALID = [
        Example(
            "import torch.nn.functional as F\n"
            "def attend(q, k, v, n_rep, fused):\n"
            "    if fused:\n"
            "        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)\n"
            "    k = k.repeat(1, n_rep, 1, 1)\n"
            "    return F.scaled_dot_product_attention(q, k, v)\n",
            5,
            9,
        ),
    ]

    def on_call(self, site: CallSite) -> Iterator[Report]:
        analysis = self.analysis()
        exp = analysis.tiling_at(site)
        if exp is None:
            return
        others = analysis.groupings()
        if not others:
            return
        other = next((o for o in others if o.via == "enable_gqa"), others[0])
        other_text = (
            "enable_gqa" if other.via == "enable_gqa" else _VIA_TEXT.get(other.via, other.via)
        )
        evidence = expansion_evidence(self.ctx, exp, other)
        yield self.report(
            site.node,
            evidence,
            via=_VIA_TEXT.get(exp.via, exp.via),
            other=other_text,
            line=evidence["other_path"]["line"],
        )


class GqaRepeatTiling(_Tiling):
    CODE = "MHA904"
    NAME = "gqa-repeat-tiling"
    CATEGORY = "opinionated"
    DEFAULT_ENABLED = False
    MESSAGE = (
        "K/V heads tiled with {via}: query head i meets KV head i % n_kv, not i // n_rep as "
        "enable_gqa, repeat_interleave and pretrained GQA checkpoints group them"
    )
    WHAT = """
        Flags every expansion of key/value heads by tiling (`k.repeat(1, n_rep,
        1, 1)`, `torch.tile`, `torch.cat([k] * n_rep, dim=1)`, a new axis
        inserted before the head axis then
        expanded and merged, einops `(r h)`), even in a file that has no other
        path. Off by default.
        """
    WHY = """
        A model that tiles is self-consistent when trained from scratch, but
        pairs query head `i` with KV head `i % n_kv`: torch's `enable_gqa=True`,
        `repeat_interleave` and every pretrained GQA checkpoint pair it with
        `i // n_rep`. Loading such weights, or switching to the fused path later,
        changes the numbers silently (2.73 for 8 query heads over 2 KV heads,
        torch 2.13).
        """
    EXAMPLE = """
        def expand_kv(k, v, n_rep):
            return k.repeat(1, n_rep, 1, 1), v.repeat(1, n_rep, 1, 1)
        """
    USE_INSTEAD = """
        def expand_kv(k, v, n_rep):
            return k.repeat_interleave(n_rep, dim=1), v.repeat_interleave(n_rep, dim=1)
        """
    DECISIONS = """
        - The same evidence as MHA013 (head axis, key/value tensor, no beam or
          batch factor, no single KV head); MHA013 and MHA904 may both report one
          call when the file also groups.
        - The expand/reshape tiling (`x[:, None].expand(...).reshape(...)`) counts
          as well as `.repeat`: it pairs the heads the same way.
        """
    VALID = [
        "import torch\ndef expand_kv(k, n_rep):\n    return k.repeat_interleave(n_rep, dim=1)\n",
        "import torch\ndef mqa(k, num_heads):\n    return k.repeat(1, num_heads, 1, 1)\n",
    ]
    INVALID = [
        Example(
            "import torch\ndef expand_kv(k, n_rep):\n    return k.repeat(1, n_rep, 1, 1)\n", 3, 12
        ),
    ]

    def on_call(self, site: CallSite) -> Iterator[Report]:
        exp = self.analysis().tiling_at(site)
        if exp is None or exp.kind != TILE:
            return
        yield self.report(
            site.node, expansion_evidence(self.ctx, exp), via=_VIA_TEXT.get(exp.via, exp.via)
        )
