"""torch_api.py describes torch without importing it; check it against the installed torch."""
from __future__ import annotations

import inspect

import pytest

from flake8_mha import torch_api

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
