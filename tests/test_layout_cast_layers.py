"""Review 21's chronocratic-models (mvts_transformer's encoder): the layer
handed to ``nn.TransformerEncoder`` through ``typing.cast`` is the layer
itself, for the layout its ``batch_first`` reads and for the data the
container feeds a layer class of the file.  Before, the cast hid both and
MHA001 was reported twice on sequence-first data."""

from __future__ import annotations

from flake8_mha.lint.engine import analyze_source

SOURCE = """\
from typing import cast

from torch import nn


class BatchNormEncoderLayer(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d, h)
        self.norm = nn.BatchNorm1d(d)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        out = self.self_attn(src, src, src, key_padding_mask=src_key_padding_mask,
                             need_weights=False)[0]
        src = (src + out).permute(1, 2, 0)  # (batch_size, d_model, seq_len)
        return self.norm(src).permute(2, 0, 1)  # (seq_len, batch_size, d_model)


class Encoder(nn.Module):
    def __init__(self, d=64, h=8, channel_norm=False):
        super().__init__()
        if channel_norm:
            layer = nn.TransformerEncoderLayer(d, h, 4 * d)
        else:
            layer = BatchNormEncoderLayer(d, h)
        self.encoder = nn.TransformerEncoder(cast("nn.TransformerEncoderLayer", layer), 2,
                                             enable_nested_tensor=False)

    def forward(self, x, keep):
        inp = x.permute(1, 0, 2)
        return self.encoder(inp, src_key_padding_mask=~keep).permute(1, 0, 2)
"""


def test_no_mha001_on_the_sequence_first_data_behind_a_cast(tmp_path):
    path = str(tmp_path / "ts_transformer.py")
    assert analyze_source(SOURCE, path, ["MHA001", "MHA010"]) == []
    got = analyze_source(SOURCE, path, ["MHA903"])
    assert [(f.line, f.col, f.code) for f in got] == [(9, 26, "MHA903"), (23, 21, "MHA903")]
    assert all("line 30: `x.permute(1, 0, 2)`" in f.message for f in got)


def test_the_same_layers_fed_batch_first_data(tmp_path):
    batch_first = SOURCE.replace(
        "        inp = x.permute(1, 0, 2)\n", "        inp = x  # (N, L, E)\n"
    )
    got = analyze_source(batch_first, str(tmp_path / "ts_transformer.py"), ["MHA001"])
    assert [(f.line, f.col) for f in got] == [(9, 26), (23, 21)]
