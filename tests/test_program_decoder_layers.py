"""Issue 26, items 1 and 4: fairseq's decoder layer holds two
``nn.MultiheadAttention`` modules and returns ``(x, attn)``.

``fixtures/program_calls/decoder_layers``: the self-attention takes the
layer's ``self_attn_padding_mask``, the cross-attention its
``encoder_padding_mask``; a decoder gives the target's keep-mask
(``tokens.ne(pad)``) as the self-attention's padding mask (MHA003 at its
call), its twin the ignore-mask (silent).  Both modules are fed T x B x C
data through ``x, attn = layer(...)`` in a loop: no MHA001 (the opt-in
MHA903 says so)."""
from __future__ import annotations

from fixture_expect import assert_package_runs, write_package

from flake8_mha.lint.engine import analyze_file

PKG = "fixtures/program_calls/decoder_layers"


def test_per_file_over_the_package_and_through_check():
    found = assert_package_runs(PKG, [("decoder.py", 26, 23, "MHA003")], select="MHA0,MHA1")
    assert found[0].msg.endswith(
        "through DecoderLayer.forward()"), found[0].msg


def test_sequence_first_data_through_the_loop_is_said_by_mha903():
    got = sorted((f.path.rsplit("/", 1)[-1], f.line, f.col, f.code)
                 for f in analyze_file(f"{PKG}/layers.py", ["MHA001", "MHA903"]))
    assert got == [("layers.py", 10, 26, "MHA903"), ("layers.py", 12, 29, "MHA903")]


LAYER = '''\
import torch.nn as nn


class Layer(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d, h, batch_first=True)
        self.cross_attn = nn.MultiheadAttention(d, h, batch_first=True)

    def forward(self, x, mem, pad=None, mem_pad=None):
        x = x + self.self_attn(x, x, x, key_padding_mask=pad, need_weights=False)[0]
        return x + self.cross_attn(x, mem, mem, key_padding_mask=MEM, need_weights=False)[0]
'''

CALLER = '''\
import torch.nn as nn

from .layer import Layer


class Dec(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.emb = nn.Embedding(10, d)
        self.layer = Layer(d, h)

    def forward(self, tokens, mem, src_tokens):
        return self.layer(self.emb(tokens), mem, pad=tokens != 1, mem_pad=src_tokens == 1)
'''


def test_each_module_of_a_layer_is_judged_with_its_own_mask(tmp_path):
    """The second module given nothing, the same parameter, or another
    parameter: the first module's mask is judged at the caller each time."""
    for i, mem in enumerate(("None", "pad", "mem_pad")):
        pkg = write_package(tmp_path / f"p{i}", {
            "layer.py": LAYER.replace("MEM", mem), "dec.py": CALLER})
        got = [(f.code, f.line, f.col) for f in analyze_file(str(pkg / "dec.py"), ["MHA003"])]
        assert got == [("MHA003", 13, 16)], mem
