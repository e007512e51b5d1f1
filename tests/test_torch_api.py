"""torch_api.py describes torch without importing it; check it against the installed torch."""
from __future__ import annotations

import inspect

import pytest

from flake8_mha.core import torch_api

torch = pytest.importorskip("torch")


def _params(fn, skip_self=True):
    sig = inspect.signature(fn)
    out = []
    for i, (name, p) in enumerate(sig.parameters.items()):
        if skip_self and i == 0:
            continue
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        out.append((name, p.default))
    return out


@pytest.mark.parametrize("spec", list(torch_api.MODULES.values()), ids=lambda s: s.name)
def test_module_signatures_match_torch(spec):
    cls = getattr(torch.nn, spec.name)
    for ours, theirs in ((spec.init, cls.__init__), (spec.forward, cls.forward)):
        real = _params(theirs)
        assert list(ours.names) == [n for n, _ in real]
        for name, default in real:
            if default is inspect.Parameter.empty:
                assert not ours.has_default(name), name
            elif isinstance(default, (bool, int, float, type(None))):
                assert ours.default(name) == default and type(ours.default(name)) is type(default), name


def test_sdpa_signature_matches_torch():
    import re

    # a builtin: its signature is the first line of its docstring
    doc = torch.nn.functional.scaled_dot_product_attention.__doc__
    head = re.search(r"scaled_dot_product_attention\((.*?)\)\s*->", doc, re.S).group(1)
    real = [part.split("=")[0].strip() for part in head.split(",") if part.strip()]
    assert list(torch_api.SDPA_SIGNATURE.names) == real


@pytest.mark.parametrize("alias,canonical", [
    ("torch.nn.modules.activation.MultiheadAttention", "torch.nn.MultiheadAttention"),
    ("torch.nn.modules.transformer.TransformerEncoderLayer", "torch.nn.TransformerEncoderLayer"),
    ("torch.nn.modules.container.ModuleList", "torch.nn.ModuleList"),
])
def test_aliases_name_the_same_object(alias, canonical):
    import importlib

    def resolve(dotted):
        mod, _, attr = dotted.rpartition(".")
        return getattr(importlib.import_module(mod), attr)

    assert torch_api.canonical(alias) == canonical
    assert resolve(alias) is resolve(canonical)


def test_mask_conventions_match_torch():
    """What torch_api says a bool True means, measured: SDPA attends where True,
    nn.MultiheadAttention ignores where True."""
    import torch.nn.functional as F

    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 1, 3, 4) for _ in range(3))
    only_first = torch.tensor([True, False, False]).expand(3, 3)  # (L, S)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=only_first)
    assert torch_api.SDPA_MASK_CONVENTION is torch_api.MaskConvention.ATTEND
    assert torch.allclose(out, v[..., :1, :].expand_as(out), atol=1e-6)

    mha = torch.nn.MultiheadAttention(4, 1, batch_first=True).eval()
    x = torch.randn(1, 3, 4)
    spec = torch_api.MULTIHEAD_ATTENTION
    assert spec.mask_convention is torch_api.MaskConvention.IGNORE
    with torch.no_grad():
        masked = mha(x, x, x, key_padding_mask=torch.tensor([[False, True, True]]),
                     need_weights=False)[0]
        first_key_only = mha(x, x[:, :1], x[:, :1], need_weights=False)[0]
    assert torch.allclose(masked, first_key_only, atol=1e-6)
