"""Issue 26, item 1: a module kept inside a transparent wrapper is called
like any other.

``fixtures/program_calls/wrapped``: vit-pytorch's ``self.layers.append(
nn.ModuleList([PreNorm(dim, Attention(dim)), PreNorm(dim, FeedForward(dim))]))``
after ``self.layers = nn.ModuleList([])``, called ``for attn, ff in
self.layers: attn(x, mask=mask)``; and ``Residual(PreNorm(dim,
Attention(dim)))`` appended to an empty ``nn.ModuleList()``.  ``PreNorm``
and ``Residual`` hand ``**kwargs`` on to the module they were built with,
so the encoders' padding mask reaches SDPA (MHA002 at their calls)."""
from __future__ import annotations

from fixture_expect import assert_package_runs, write_package

from flake8_mha.lint.engine import analyze_file

PKG = "fixtures/program_calls/wrapped"


def test_per_file_over_the_package_and_through_check():
    found = assert_package_runs(PKG, [
        ("encoders.py", 16, 16, "MHA002"),
        ("encoders.py", 31, 16, "MHA002"),
    ])
    chains = sorted(f.msg.rsplit(" through ", 1)[-1] for f in found)
    assert chains == ["ResidualStack.forward() -> Attention.forward()",
                      "Transformer.forward() -> Attention.forward()"]


STACK = '''\
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def forward(self, x, mask=None):
        return F.scaled_dot_product_attention(x, x, x, attn_mask=mask)


class Wrap(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fn = fn

    def forward(self, x, **kwargs):
        BODY


class Stack(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.layers = nn.ModuleList([])
        self.layers.append(Wrap(dim, Attention()))

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask=mask)
        return x
'''

CALLER = '''\
import torch.nn as nn

from .stack import Stack


class Encoder(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.stack = Stack(dim)

    def forward(self, x, ids):
        return self.stack(x, mask=ids == 0)
'''


def _found(tmp_path, body):
    pkg = write_package(tmp_path / "pkg", {
        "stack.py": STACK.replace("BODY", body), "model.py": CALLER})
    return [(f.code, f.line, f.col) for f in analyze_file(str(pkg / "model.py"), ["MHA002"])]


def test_a_wrapper_that_hands_its_keywords_on_is_the_module_it_wraps(tmp_path):
    assert _found(tmp_path, "return self.fn(self.norm(x), **kwargs)") == [("MHA002", 12, 16)]


def test_a_wrapper_that_drops_or_reads_its_keywords_is_not_followed(tmp_path):
    """The mask never reaches the module (``self.fn(x)``), or the wrapper
    reads its keywords itself (``kwargs.pop("mask")``): not transparent."""
    assert _found(tmp_path / "a", "return self.fn(self.norm(x))") == []
    assert _found(tmp_path / "b", "kwargs.pop('mask', None)\n        return self.fn(x, **kwargs)") == []
