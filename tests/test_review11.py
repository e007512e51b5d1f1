"""Release review 11 (twenty-first stop): each false finding cut to its form,
with the exact code, line and column (pero-ocr's subclasses with their own
``__init__``, pyiqa's TOPIQ list of features, recstudio's attention branch)."""

from __future__ import annotations

import textwrap

import pytest
from fixture_expect import write_package

from flake8_mha.lint.engine import analyze_source


def _found(src, codes, path="m.py"):
    return [(f.code, f.line, f.col) for f in analyze_source(textwrap.dedent(src), path, codes)]


LAYOUT = ["MHA001", "MHA903"]

# -- pero-ocr: a subclass with an ``__init__`` of its own runs torch's ``forward``

OWN_INIT = """\
import torch
from torch import nn


class EncLayer(nn.TransformerEncoderLayer):
    def __init__(self, d, h):
        super().__init__(d, h, 4 * d, 0.0)


class CachedMHA(nn.MultiheadAttention):
    def __init__(self, d, h):
        super().__init__(d, h)
        self.cache = None


class LineEncoder(nn.Module):
    def __init__(self, d=64, h=4):
        super().__init__()
        self.proj = nn.Conv1d(3, d, 1)
        self.enc = EncLayer(d, h)
        self.attn = CachedMHA(d, h)

    def forward(self, feats):
        x = FED
        x = self.enc(x)
        return self.attn(x, x, x, need_weights=False)[0]
"""


def test_the_calls_of_an_own_init_subclass_feed_its_super_call():
    fed = OWN_INIT.replace("FED", "self.proj(feats).permute(2, 0, 1)  # (W, N, C)")
    assert _found(fed, LAYOUT) == [("MHA903", 7, 9), ("MHA903", 12, 9)]
    # the same calls fed batch-first: the damage is there
    fed = OWN_INIT.replace("FED", "self.proj(feats).transpose(1, 2)  # (N, W, C)")
    assert _found(fed, LAYOUT) == [("MHA001", 7, 9), ("MHA001", 12, 9)]


DECODER = """\
import torch
from torch.nn import ModuleList, TransformerDecoder, TransformerDecoderLayer


class Layer(TransformerDecoderLayer):
    def __init__(self, d, h):
        super().__init__(d, h, 4 * d, 0.0)


class Decoder(TransformerDecoder):
    def __init__(self, n, d, h):
        super().__init__(None, 0)
        LAYERS


class OCR(torch.nn.Module):
    def __init__(self, d=64, h=4):
        super().__init__()
        self.proj = torch.nn.Conv1d(3, d, 1)
        self.dec = Decoder(2, d, h)

    def forward(self, feats):
        memory = self.proj(feats).permute(2, 0, 1)  # (N, C, W) -> (W, N, C)
        return self.dec(memory, memory)
"""


@pytest.mark.parametrize(
    "layers, want",
    [
        ("self.layers = ModuleList([Layer(d, h) for _ in range(n)])", [("MHA903", 7, 9)]),
        (
            "make = lambda: Layer(d, h)\n        self.layers = ModuleList([make() for _ in range(n)])",
            [("MHA903", 7, 9)],
        ),
        # torch's own layer (the subclass, built nowhere, is judged alone: MHA001's page)
        (
            "self.layers = ModuleList([TransformerDecoderLayer(d, h) for _ in range(n)])",
            [("MHA001", 7, 9), ("MHA903", 13, 35)],
        ),
    ],
)
def test_a_decoder_that_builds_its_own_layers_runs_them(layers, want):
    assert _found(DECODER.replace("LAYERS", layers), LAYOUT) == want


def test_the_axes_after_the_first_named_by_a_shape_slice():
    src = """\
    import torch.nn as nn


    class Layer(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.attn = nn.MultiheadAttention(d, h)

        def step(self, tgt):
            SLICE = tgt.shape[1:]
            return self.attn(tgt, tgt, tgt, need_weights=False)[0]
    """
    assert _found(src.replace("SLICE", "batch, emb"), LAYOUT) == [("MHA903", 7, 21)]
    # ``[1:]`` of a batch-first tensor names the sequence and the width
    assert _found(src.replace("SLICE", "seq_len, dim"), LAYOUT) == [("MHA001", 7, 21)]


# -- pyiqa's TOPIQ: features kept in a list, then one taken back

LIST = """\
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, h)

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Conv2d(3, 64, 1)
        self.block = Block(64, 4)

    def forward(self, img):
        feats = []
        for s in (1, 2):
            f = self.proj(img[:, :, ::s, ::s])
            feats.append(f.flatten(2).SWAP)
        return self.block(feats[0]).mean(dim=0)
"""


def test_an_item_of_a_list_filled_by_append_has_the_layout_appended():
    assert _found(LIST.replace("SWAP", "permute(2, 0, 1)"), LAYOUT) == [("MHA903", 7, 21)]
    assert _found(LIST.replace("SWAP", "transpose(1, 2)"), LAYOUT) == [("MHA001", 7, 21)]


# -- recstudio: the module is built on a branch no construction takes

BRANCH = """\
import torch


class AttentionLayer(torch.nn.Module):
    def __init__(self, q_dim, n_head=1, attention_type="feedforward"):
        super().__init__()
        if attention_type == "feedforward":
            self.mlp = torch.nn.Linear(2 * q_dim, 1)
        elif attention_type == "multi-head":
            self.attn_layer = torch.nn.MultiheadAttention(q_dim, n_head, batch_first=True)
"""


def test_a_branch_every_construction_turns_away_builds_nothing(tmp_path):
    def run(built):
        pkg = write_package(
            tmp_path / str(len(built)) / "pkg", {"layers.py": BRANCH, "model.py": built}
        )
        path = pkg / "layers.py"
        found = analyze_source(path.read_text(), str(path), ["MHA101"])
        return [(f.code, f.line, f.col) for f in found]

    assert run("from .layers import AttentionLayer\n\nLAYER = AttentionLayer(8)\n") == []
    assert run(
        "from .layers import AttentionLayer\n\n"
        "LAYER = AttentionLayer(8, attention_type='multi-head')\n"
    ) == [("MHA101", 10, 31)]


# -- release review 12, terratorch's wave encoder: learned tokens, no batch axis

WAVES = """\
import torch
import torch.nn as nn


class WavesTransformer(nn.Module):
    def __init__(self, wave_dim, num_latent_tokens, num_heads=4):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=wave_dim, nhead=num_heads, dropout=0FLAG)
        self.encoder = nn.TransformerEncoder(layer, 1)
        self.weight_tokens = nn.Parameter(torch.randn(num_latent_tokens, wave_dim) * 0.02)
        self.bias_token = nn.Parameter(torch.randn(1, wave_dim) * 0.02)

    def forward(self, x):
        x = torch.cat([self.weight_tokens, x, self.bias_token], dim=0)
        return self.encoder(x)
"""


@pytest.mark.parametrize("flag", ["", ", batch_first=False"])
def test_learned_tokens_of_two_sizes_are_one_unbatched_sequence(flag):
    assert _found(WAVES.replace("FLAG", flag), LAYOUT + ["MHA902"]) == []


def test_a_batch_named_among_two_sizes_is_not_unbatched():
    src = WAVES.replace("FLAG", "").replace(
        "torch.randn(num_latent_tokens, wave_dim)", "torch.randn(batch_size, wave_dim)"
    )
    src = src.replace("torch.randn(1, wave_dim)", "torch.randn(batch_size, wave_dim)")
    assert _found(src, ["MHA001"]) == [("MHA001", 8, 17)]


# -- release review 12, terratorch's DETR: ``forward_pre`` runs only if normalize_before

DETR = """\
import torch.nn as nn


class EncoderLayer(nn.Module):
    def __init__(self, d_model, nhead, normalize_before=False):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, nhead)
        self.norm = nn.LayerNorm(d_model)
        self.normalize_before = normalize_before

    def forward_post(self, src):
        src = src + self.self_attn(src, src, src)[0]
        return self.norm(src)

    def forward_pre(self, src):
        src2 = self.norm(src)
        return src + self.self_attn(src2, src2, src2)[0]

    def forward(self, src):
        if self.normalize_before:
            return self.forward_pre(src)
        return self.forward_post(src)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = EncoderLayer(256, 8BEFORE)

    def forward(self, x):
        return self.layer(x.flatten(2).permute(2, 0, 1))
"""


def test_a_method_run_only_from_a_branch_the_program_never_takes_is_not_judged(tmp_path):
    def run(before, name):
        path = tmp_path / name  # a file on disk: what every construction passes is the project's
        path.write_text(DETR.replace("BEFORE", before))
        found = analyze_source(path.read_text(), str(path), ["MHA102"])
        return [(f.code, f.line, f.col) for f in found]

    assert run("", "a.py") == [("MHA102", 12, 21)]
    # every construction passes True: ``forward_post`` runs only after ``if
    # self.normalize_before: return ...``, which always returns (the thirty-seventh
    # stop reads the rest of a block after ``if c: return`` as run where ``c`` is false)
    assert run(", normalize_before=True", "b.py") == [("MHA102", 17, 22)]
