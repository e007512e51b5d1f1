"""Subclasses of torch's encoder/decoder and their layers that run a
``forward`` of their own (docling's table decoder, release review 8): the
container's ``self.layers`` are clones of the layer every construction hands
it, and the layer's ``self.self_attn``/``self.multihead_attn`` are the
modules torch's ``__init__`` built, read with the layer's ``batch_first``
(``fixtures/MHA001_subclassed_layers.py``)."""

from __future__ import annotations

import pathlib

from flake8_mha.lint.engine import analyze_source, select_codes

FIXTURE = pathlib.Path("fixtures/MHA001_subclassed_layers.py")


def _with_init(src, init):
    """``src`` with ``init`` written before its class's first ``forward``."""
    return src.replace("    def forward(self,", init + "\n    def forward(self,", 1)


def _found(src, codes=("MHA001",)):
    return [(f.code, f.line, f.col) for f in analyze_source(src, "m.py", list(codes))]


def test_the_fixture():
    text = FIXTURE.read_text(encoding="utf-8")
    assert _found(text) == [("MHA001", 73, 36)]
    # the good model is fed sequence-first on every call: MHA903's, named by its evidence
    implicit = analyze_source(text, "m.py", ["MHA903"])
    assert [(f.code, f.line, f.col) for f in implicit] == [("MHA903", 43, 35)]
    assert "line 46" in implicit[0].message


PLAIN_LAYER = """\
import torch
from torch import nn


class Decoder(nn.TransformerDecoder):
    def forward(self, tgt, memory=None):
        output = tgt
        for i, mod in enumerate(self.layers):
            output = mod(output, memory)
        return output


class Model(nn.Module):
    def __init__(self, vocab, d, h):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.decoder = Decoder(nn.TransformerDecoderLayer(d, h), 3)

    def forward(self, tags, memory):
        FEED
"""


def test_a_torch_layer_looped_by_a_decoder_subclass_is_fed_what_the_decoder_is():
    swapped = PLAIN_LAYER.replace(
        "FEED", "return self.decoder(self.embed(tags).permute(1, 0, 2), memory)"
    )
    assert _found(swapped) == []
    batch_first = PLAIN_LAYER.replace(
        "FEED", "B, T = tags.shape\n        return self.decoder(self.embed(tags), memory)"
    )
    found = analyze_source(batch_first, "m.py", ["MHA001"])
    assert [(f.code, f.line, f.col) for f in found] == [("MHA001", 17, 32)]
    assert "fed batch-first data" in found[0].message


def test_a_decoder_subclass_with_its_own_init_keeps_the_layers_unknown():
    # its own ``__init__`` may build ``self.layers`` otherwise: not read as torch's clones
    src = _with_init(
        PLAIN_LAYER, "    def __init__(self, layer, n):\n        super().__init__(layer, n)\n"
    ).replace("FEED", "return self.decoder(self.embed(tags).permute(1, 0, 2), memory)")
    found = analyze_source(src, "m.py", ["MHA001"])
    assert [(f.code, f.line) for f in found] == [("MHA001", 20)]
    assert found[0].evidence["called"] is False


LAYER = """\
from torch import nn


class Layer(nn.TransformerEncoderLayer):
    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        x = self.norm1(x + self.dropout1(CALL))
        return self.norm2(x + self.linear2(self.dropout(self.activation(self.linear1(x)))))


enc = nn.TransformerEncoder(Layer(64, 8, batch_first=True), 2)
"""


def test_the_attention_torch_built_in_a_layer_subclass_is_a_module_call():
    every = select_codes()
    kept = LAYER.replace("CALL", "self.self_attn(x, x, x, attn_mask=src_mask)[0]")
    assert _found(kept, every) == [("MHA102", 7, 42)]
    lean = LAYER.replace(
        "CALL", "self.self_attn(x, x, x, attn_mask=src_mask, need_weights=False)[0]"
    )
    assert _found(lean, every) == []


def test_an_attribute_the_subclass_assigns_itself_is_its_own():
    # ``self.self_attn`` rebuilt by the class: that module, not torch's
    init = "    def __init__(self, d, h, **kw):\n        super().__init__(d, h, **kw)\n"
    src = _with_init(LAYER, init + "        self.self_attn = Fused(d, h)\n").replace(
        "CALL", "self.self_attn(x, x, x)[0]"
    )
    assert _found(src, select_codes()) == []
