"""Codes only the runtime sanitizer reports (``flake8_mha.sanitizer``).

A runtime code is documented like a rule (page, ``flake8-mha explain``) but
is no static rule: it subscribes to no event, and is kept out of the static
``REGISTRY``, so ``--select MHA``, the flake8 plugin, SARIF's rule list and
the fixture/witness consistency tests never see it.  ``runtime_rules()``
lists these classes for the docs generator and ``explain``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Dict, List

from .base import Rule

RUNTIME: Dict[str, type] = {}


class RuntimeRule(Rule):
    """A code the sanitizer reports from real values; never reported statically."""

    DEFAULT_ENABLED = False
    RUNTIME_ONLY: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # deliberately not Rule.__init_subclass__: no entry in the static REGISTRY
        if cls.CODE:
            if cls.CODE in RUNTIME:
                raise RuntimeError(f"duplicate runtime code {cls.CODE}")
            RUNTIME[cls.CODE] = cls


class FullyMaskedRows(RuntimeRule):
    CODE = "MHA011"
    NAME = "fully-masked-rows"
    MESSAGE = "{place}: all {keys} keys masked ({consequence})"
    WHAT = """
        Reported by the runtime sanitizer when an attention call runs with a
        query (a row of the mask) whose keys are all masked out: every entry
        of the row is True in a `key_padding_mask`/`attn_mask` of
        `nn.MultiheadAttention` or a Transformer module (True = ignore), every
        entry is False in a bool `attn_mask` of
        `F.scaled_dot_product_attention` (True = keep), or every entry is
        `-inf` in a float mask. The message names the first such row, and the
        batch item when the mask has one (`row 0 of batch item 1: all 12 keys
        masked (nn.MultiheadAttention returns NaN for that query)`).

        Whether a row ends up fully masked depends on the data (a sequence
        that is all padding, a causal mask combined with left padding), so no
        static rule reports it; `flake8-mha check` and the flake8 plugin never
        emit MHA011.
        """
    WHY = """
        A softmax over keys that are all masked has nothing to normalise.
        `nn.MultiheadAttention` returns NaN for that query, on the fastpath
        and on the `need_weights=True` path alike, and the NaN spreads through
        every later layer and into the loss. `F.scaled_dot_product_attention`
        returns 0.0 for that row instead, with no NaN and no warning: the
        output is silently wrong rather than loudly broken (both measured on
        torch 2.13).
        """
    EXAMPLE = """
        import torch
        import torch.nn as nn

        attn = nn.MultiheadAttention(64, 8, batch_first=True)
        x = torch.randn(2, 5, 64)
        pad = torch.tensor([[False, False, False, True, True],  # True = padding
                            [True] * 5])  # sample 1 is all padding
        out, _ = attn(x, x, x, key_padding_mask=pad)  # out[1] is all NaN
        """
    USE_INSTEAD = """
        import torch
        import torch.nn as nn

        attn = nn.MultiheadAttention(64, 8, batch_first=True)
        x = torch.randn(2, 5, 64)
        pad = torch.tensor([[False, False, False, True, True], [True] * 5])
        keep = ~pad.all(dim=1)  # drop the samples with nothing to attend to
        out, _ = attn(x[keep], x[keep], x[keep], key_padding_mask=pad[keep])
        """
    DECISIONS = """
        - Runtime only: the sanitizer sees the mask's values; the static
          analysis sees only its construction, and a row is fully masked only
          for some inputs. The class exists so that the code has a page and
          `flake8-mha explain MHA011` works; it subscribes to no event and is
          not in the static registry, so `--select MHA` does not list it.
        - There is no confirmer witness: the sanitizer's report is itself the
          measurement (it looked at the mask that ran).
        """
    VALID = ["pad = torch.tensor([[False, False, True]])\n"]


def runtime_rules() -> List[type]:
    return [RUNTIME[code] for code in sorted(RUNTIME)]
