"""MHA013 and MHA904: grouped-query attention whose K/V heads are tiled, where
the file also groups them (MHA013) or anywhere (MHA904, opt-in).  MHA014 is in
``mha014_gqa_heads_do_not_divide.py``.

The analysis (which call expands which axis of which tensor, and why we
believe it is the K/V head axis) is in ``flake8_mha/analysis/gqa.py`` and
``flake8_mha/analysis/heads.py``; these classes decide what to report.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional

import libcst as cst

from ..analysis.flow import CallSite
from ..analysis.gqa import (
    GROUP,
    TILE,
    Expansion,
    GqaAnalysis,
    as_int,
    axes_text,
    code_text,
    line_of,
)
from ..analysis.heads import KV_HELPER, KV_TENSOR, NOT_KV, names_of
from ..analysis.program.returns import helper_reading, may_be_helper, overriding_readings
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
# the same forms where they group the heads (the new axis after the heads)
_GROUP_TEXT = {
    "expand": "a new axis after the heads, expanded and merged",
    "einops": "einops (h r)",
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


HELPER = "helper"  # an Expansion's ``decided``: read in the helper another file defines


def read_kv_helper(ctx, func: cst.FunctionDef, fscope) -> Optional[dict]:
    """A helper's K/V head expansion, read in its own file with the file's
    GQA analysis: every expansion in it groups, or every one tiles, its
    parameter ``params[0]`` (``def repeat_kv(x, n_rep): ... expand ...
    reshape``); ``factor``: the parameter that gives the repeat count."""
    analysis = GqaAnalysis.of(ctx)
    analysis.torch_assumed = True  # the caller's file imports torch
    exps = [e for e in analysis.expansions() if e.site.function is func]
    if not exps or len({e.kind for e in exps}) != 1 or any(e.via == "enable_gqa" for e in exps):
        return None
    p = func.params
    names = [x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)]
    first = exps[0]
    if first.tensor not in names:
        return None
    factor = first.factor.value if isinstance(first.factor, cst.Name) else None
    return {
        "params": [first.tensor] + ([factor] if factor in names else []),
        "factor": factor if factor in names else None,
        "kind": first.kind,
        "via": first.via,
        "head_axis": first.head_axis,
        "rank": first.rank,
        "line": line_of(ctx, [first.node])[id(first.node)],
        "expansion": code_text(ctx, first.node),
    }


def helper_expansions(ctx) -> List[Expansion]:
    """The calls of this file that hand a key or value to a helper another
    project file defines whose every expansion groups (or tiles) it
    (``k = repeat_kv(k, self.n_rep)``): each as an expansion at the call.  The
    linted file's own helpers are read in place (their expansions are the
    file's)."""
    got = ctx.analyses.get("gqa helpers")
    if got is not None:
        return got
    got = []
    ctx.analyses["gqa helpers"] = got
    analysis = GqaAnalysis.of(ctx)
    if getattr(ctx, "project", None) is None or not analysis.expansions():
        return got  # two paths need one in the file (a tiling, or a grouping) to meet
    for site in ctx.flow.calls:
        call = site.node
        if not call.args or call.args[0].keyword is not None or call.args[0].star:
            continue
        if not isinstance(call.func, (cst.Name, cst.Attribute)):
            continue
        tensor = names_of(call.args[0].value)
        callee = names_of(call.func)
        kv = (
            bool(tensor)
            and KV_TENSOR.match(tensor[0].lower())
            and not NOT_KV.search(tensor[0].lower())
        )
        if not tensor or not (kv or (callee and KV_HELPER.search(callee[0].lower()))):
            continue
        if not may_be_helper(ctx.resolver.qualname(call.func, site.env, site.scope)):
            continue  # torch's, einops': no helper of the project
        name = None
        if ctx.resolver.own_function(call, site.env, site.scope) is not None:
            overridden = _overriding(ctx, call, site)  # its own method is the file's
            if overridden is None:
                continue
            helper, name = overridden
        else:
            helper = helper_reading(ctx, call, site.env, site.scope, "gqa", read_kv_helper)
        if helper is None:
            continue
        name = name or code_text(ctx, call.func)
        form = helper.form
        exp = Expansion(
            form["kind"],
            form["via"],
            site,
            form.get("head_axis"),
            form.get("rank"),
            helper.args.get(form.get("factor") or ""),
            analysis.layouts.of(call.args[0].value, site.env, site.scope),
            tensor=tensor[0],
            decided=HELPER,
            deciding=[call],
        )
        if exp.n_kv() == 1:
            continue  # one KV head handed in (multi-query): tiling and grouping agree
        got.append(exp)
        got[-1].helper = f"{name}() at {helper.where}:{form['line']}"  # type: ignore[attr-defined]
    return got


def _overriding(ctx, call: cst.Call, site: CallSite):
    """``self._expand_kv(k, v)`` in a class of this file that a used subclass
    of another project file overrides with a tiling (probe AE's AE30): (its
    reading, ``Sub._expand_kv``); None otherwise."""
    for sub, got in overriding_readings(ctx, call, site.scope, "gqa", read_kv_helper):
        if got is not None and got.form.get("kind") == TILE:
            return got, f"{sub}.{call.func.attr.value}"
    return None


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
          `torch.cat`; einops patterns (also an axis after `...`, counted from
          the right: `'... h d -> ... (g h) d'`); `b, n_kv, s, d = x.shape`; or a repeat
          factor named like `n_rep`/`num_key_value_groups`/`num_queries_per_kv` or
          computed as `num_heads // num_kv_heads`. When the layout names the head
          axis, the expanded axis must be it.
        - The tensor must be a key or value: named so (`k`, `v`, `key_states`,
          `xk`, `past_key`, ...) somewhere along its definitions, or the first
          argument of a helper named like `repeat_kv`; the name of a generator
          over the pair (`(repeat(t, ...) for t in (k, v))`) counts, and so
          does a one-parameter lambda mapped over it (`map(lambda t:
          repeat(t, ...), (k, v))`, spear-tts; release review 31).
        - Never reported: axis 0 (the batch: beams), a factor named like a beam,
          batch or sample count, a sequence length or the query head count
          (multi-query, where one KV head makes tiling and grouping agree), a KV
          head count statically 1 (also a helper's parameter every call of it
          hands one head, or a helper of another file handed one: probe AD's
          `tile_kv(k, n_heads)` of a multi-query key), the last axis, a tensor whose layout puts the
          heads elsewhere, and files that do not import torch.
        - "Groups the other way" is decided per file: any SDPA call whose
          `enable_gqa` is not statically False, or any grouping expansion found
          with the same evidence as a tiling.
        - A helper of another project file counts as its expansion, read in its
          own file with the same evidence: `key_states = repeat_kv(k,
          self.n_rep)` (Llama's, a new axis after the heads) groups, so a tiling
          in the caller's file is MHA013's, naming the helper; a call of a
          helper that tiles (`k = tile_kv(k, n_rep)`) in a file that also
          groups is reported at the call, naming where the helper tiles. The
          linted file's own helpers are read in place, as before. A file that
          only calls a grouping helper is silent.
        - A method of the file (`self._expand_kv(k, v)`) that a subclass in
          another project file overrides with a tiling, the subclass named
          somewhere in the project, is that tiling at the call: in a file
          that groups (the base's `enable_gqa=True` path) the call reports,
          naming the override (`fixtures/program_calls/kv_overrides/`).
        - A method the class inherits from a base or mixin of another project
          file (`class Attention(RepeatKVMixin, nn.Module)` calling
          `self.expand_kv(k, v)`, the mixin in `kv.py`) is read there, as an
          override is: a tiling reports at the call in a file that groups
          (probe AN's AN05, `fixtures/program_calls/kv_mixins/`).
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
        helpers = helper_expansions(self.ctx)
        exp = analysis.tiling_at(site) or next(
            (h for h in helpers if h.site is site and h.kind == TILE), None
        )
        if exp is None:
            return
        others = analysis.groupings() + [h for h in helpers if h.kind == GROUP]
        if not others:
            return
        other = next((o for o in others if o.via == "enable_gqa"), others[0])
        other_text = _GROUP_TEXT.get(other.via) or _VIA_TEXT.get(other.via, other.via)
        if other.decided == HELPER:  # ``repeat_kv(k, n_rep)`` of another file
            other_text = f"{other_text} in {other.helper}, called"
        evidence = expansion_evidence(self.ctx, exp, other)
        report = self.report(
            site.node,
            evidence,
            via=_VIA_TEXT.get(exp.via, exp.via),
            other=other_text,
            line=evidence["other_path"]["line"],
        )
        if exp.decided == HELPER:  # ``tile_kv(k, n_rep)``: the tiling is the helper's
            report.message += f"; the call tiles them in {exp.helper}"
        yield report


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
