"""Modules reached through containers whose calls the layout analysis once
lost (MONAI's MIL model, docs/evidence.md "Containers"):

- an attribute that holds a ``TransformerEncoder`` in one branch and an
  ``nn.ModuleList`` in another: its call can only run the encoder;
- ``typing.cast(nn.ModuleList, self.levels)[1]``: the member written second
  in the literal list, not any member;
- a torch encoder written as a member of an ``nn.Sequential``: fed what the
  members before it give back at each call of the ``Sequential``;
- ``torch.cat`` of tensors each swapped from an unknown layout: one
  conversion.

Each case checks the exact (code, line, column) and the evidence line.
"""
from __future__ import annotations

import textwrap

from flake8_mha.lint.engine import analyze_source

CODES = ["MHA001", "MHA903"]
HEAD = "from typing import cast\n\nimport torch\nimport torch.nn as nn\n"  # lines 1-4


def got(body: str):
    src = HEAD + textwrap.dedent(body)
    return sorted(
        (f.code, f.line, f.col, f.evidence.get("layout_line"))
        for f in analyze_source(src, "t.py", CODES)
    )


BRANCHES = """\
class Head(nn.Module):
    def __init__(self, dim, pyramid):
        super().__init__()
        self.transformer = None
        if not pyramid:
            layer = nn.TransformerEncoderLayer(dim, 8)
            self.transformer = nn.TransformerEncoder(layer, 2)
        else:
            self.transformer = nn.ModuleList([nn.Linear(dim, dim), nn.Linear(dim, dim)])

    def forward(self, x):
        B, L, E = x.shape
        x = self.transformer(FEED)
        return x
"""


def test_a_call_of_an_attribute_that_may_be_a_modulelist_runs_the_module():
    # the layer on line 10; ``B, L, E = x.shape`` on line 16, the call on line 17
    assert got(BRANCHES.replace("FEED", "x.permute(1, 0, 2)")) == [("MHA903", 10, 21, 17)]
    assert got(BRANCHES.replace("FEED", "x")) == [("MHA001", 10, 21, 16)]


def test_a_modulelist_alone_is_not_callable_and_says_nothing():
    body = BRANCHES.replace(
        "self.transformer = nn.TransformerEncoder(layer, 2)", "self.other = layer"
    ).replace("FEED", "x.permute(1, 0, 2)")
    # the layer's own calls are unknown: today's finding, without evidence
    assert got(body) == [("MHA001", 10, 21, None)]


LEVELS = """\
class Pyramid(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.levels = nn.ModuleList(
            [
                nn.TransformerEncoder(nn.TransformerEncoderLayer(dim, 8), 2),
                nn.Sequential(nn.Linear(2 * dim, dim), nn.TransformerEncoder(nn.TransformerEncoderLayer(dim, 8), 2)),
            ]
        )

    def forward(self, fine, coarse):
        B, L, E = fine.shape
        levels = cast(nn.ModuleList, self.levels)
        x = levels[0](FIRST)
        return levels[1](torch.cat((x, SECOND), dim=2))
"""


def test_an_index_into_a_literal_list_runs_that_member():
    # the layers on lines 10 (col 39) and 11 (col 78); the shapes on line 16
    seq = LEVELS.replace("FIRST", "fine.permute(1, 0, 2)")
    seq = seq.replace("SECOND", "coarse.permute(1, 0, 2)")
    assert got(seq) == [("MHA903", 10, 39, 18), ("MHA903", 11, 78, 18)]
    # the first level fed batch-first data: both, since the second is fed its output
    mixed = LEVELS.replace("FIRST", "fine").replace("SECOND", "coarse.permute(1, 0, 2)")
    assert got(mixed) == [("MHA001", 10, 39, 16), ("MHA001", 11, 78, 18)]  # its output


def test_an_index_out_of_the_literal_or_a_list_filled_later_runs_any_member():
    out = LEVELS.replace("levels[1]", "levels[2]")
    out = out.replace("FIRST", "fine.permute(1, 0, 2)").replace("SECOND", "coarse")
    # ``levels[2]`` is no member: it may be either, so it is no known call of
    # the second; the first is still run by ``levels[0]``
    assert got(out) == [("MHA001", 11, 78, None), ("MHA903", 10, 39, 18)]
    filled = out.replace(
        "        )\n\n    def forward", "        )\n        self.levels.append(nn.Identity())\n\n    def forward"
    )
    assert "append" in filled
    assert got(filled.replace("levels[2]", "levels[1]")) == [
        ("MHA001", 10, 39, None), ("MHA001", 11, 78, None)]


SEQUENTIAL = """\
class Tower(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.blocks = nn.Sequential(
            nn.Linear(dim, dim),
            MIDDLE,
            nn.TransformerEncoderLayer(dim, 8),
        )

    def forward(self, x):
        B, L, E = x.shape
        return self.blocks(FEED)
"""


def test_a_torch_encoder_inside_a_sequential_is_fed_what_comes_before_it():
    # the layer on line 11; the shapes on line 15, the call on line 16
    keep = SEQUENTIAL.replace("MIDDLE", "nn.LayerNorm(dim)")
    assert got(keep.replace("FEED", "x.transpose(0, 1)")) == [("MHA903", 11, 13, 16)]
    assert got(keep.replace("FEED", "x")) == [("MHA001", 11, 13, 15)]
    # a member of unknown output before it: the layout is lost, today's finding
    lost = SEQUENTIAL.replace("MIDDLE", "nn.Flatten()").replace("FEED", "x.transpose(0, 1)")
    assert got(lost) == [("MHA001", 11, 13, None)]


def test_a_concatenation_of_swaps_is_one_conversion_and_a_stated_layout_decides():
    body = """\
    class Head(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(dim, 8), 2)

        def forward(self, a, b):
            return self.enc(torch.cat((a.permute(1, 0, 2), SECOND), dim=2))
    """
    # the layer on line 8; the call on line 11
    assert got(body.replace("SECOND", "b.permute(1, 0, 2)")) == [("MHA903", 8, 42, 11)]
    stated = body.replace("SECOND", "b").replace(
        "def forward(self, a, b):", "def forward(self, a, b):\n            N, L, E = b.shape"
    )
    assert got(stated) == [("MHA001", 8, 42, 11)]


ROTATED = """\
class Layer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.mha = nn.MultiheadAttention(d, 4BATCH_FIRST)

    def forward(self, x):
        tomha = x.permute(ORDER)
        return self.mha(tomha, tomha, tomha, need_weights=False)[0]
"""


def test_a_channels_first_map_rotated_before_the_call_is_sequence_first():
    # asteroid's DPTNet: ``(batch, channels, seq_len)`` permuted (2, 0, 1); the
    # attention on line 8, the permute on line 11
    def case(order, batch_first=""):
        body = ROTATED.replace("ORDER", order).replace("BATCH_FIRST", batch_first)
        return got(body) if not batch_first else sorted(
            (f.code, f.line, f.col, f.evidence.get("layout_line"))
            for f in analyze_source(HEAD + body, "t.py", ["MHA010"])
        )

    assert case("2, 0, 1") == [("MHA903", 8, 20, 11)]
    # a batch-first module fed it mixes the batch: MHA010 at the call, line 12
    assert case("2, 0, 1", ", batch_first=True") == [("MHA010", 12, 16, 11)]
    # channels moved last with the batch kept first is batch-first data: no conversion
    assert case("0, 2, 1") == [("MHA001", 8, 20, None)]
    assert case("1, 2, 0") == [("MHA001", 8, 20, None)]


CLIP_BLOCKS = """\
class LayerNorm(nn.LayerNorm):
    def forward(self, x):
        orig_type = x.dtype
        ret = super().forward(x.type(torch.float32))
        return ret.type(orig_type)


class Block(nn.Module):
    def __init__(self, d, return_attention=False):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, 8)
        self.ln_1 = LayerNorm(d)
        self.return_attention = return_attention

    def forward(self, x):
        h = self.ln_1(x)
        if self.return_attention:
            y, weights = self.attn(h, h, h)
            return x + y, weights
        return x + self.attn(h, h, h, need_weights=False)[0]


class Tower(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.n = n
        self.blocks = nn.ModuleList()
        for _ in range(n - 1):
            self.blocks.append(Block(d))
        self.blocks.append(Block(d, return_attention=True))

    def forward(self, x):
        B, L, E = x.shape
        x = x.permute(1, 0, 2)
        for idx, blk in enumerate(self.blocks):
            if idx < self.n - 1:
                x = blk(x)
            else:
                x, weights = blk(x)
        return x, weights
"""


def test_mmpretrain_s_clip_blocks_keep_the_layout():
    # a LayerNorm subclass casting to float and back through ``super().forward``,
    # and a block that returns ``x`` on one branch and ``(x, weights)`` on the
    # other: read whole, the loop's ``x`` is the tensor; unpacked, the tuple
    # the attention on line 15, the shapes on line 37, the permute on line 38
    assert got(CLIP_BLOCKS) == [("MHA903", 15, 21, 38)]
    assert got(CLIP_BLOCKS.replace("x = x.permute(1, 0, 2)", "pass")) == [("MHA001", 15, 21, 37)]
    # without the reading of ``super().forward`` the layout is lost at ``ln_1`` (a
    # method of two arguments no one can read: one of a single argument is a
    # per-token step that keeps sequence-first data so, ``calls.fed_alone``)
    lost = CLIP_BLOCKS.replace("super().forward(x.type(torch.float32))", "self.cast(x, 2)")
    assert got(lost) == [("MHA001", 15, 21, None)]


FACTORIES = """\
def build_attn(dim, heads=8):
    attn = nn.MultiheadAttention(dim, heads)
    return attn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = build_attn(64)
        self.d = self._make(64)

    def _make(self, dim):
        return nn.MultiheadAttention(dim, 4)

    def forward(self, x):
        B, L, E = x.shape
        y = self.d(x, x, x, need_weights=False)[0]
        x = x.transpose(0, 1)
        return self.c(x, x, x, need_weights=False)[0], y
"""


def test_a_module_a_factory_of_the_file_builds_is_what_its_calls_run():
    # the function's construction on line 6, the method's on line 17; the shapes
    # on line 20, the swap on line 22
    assert got(FACTORIES) == [("MHA001", 17, 16, 20), ("MHA903", 6, 12, 22)]
    # a branch that gives back None: a call of it would raise, the module runs
    optional = FACTORIES.replace("    return attn\n", "    if heads > 8:\n        return None\n    return attn\n")
    assert got(optional) == [("MHA001", 19, 16, 22), ("MHA903", 6, 12, 24)]
    # a branch that gives back what is not known: its calls may run anything
    other = FACTORIES.replace("    return attn\n", "    if heads > 8:\n        return make_other(dim)\n    return attn\n")
    assert got(other) == [("MHA001", 6, 12, None), ("MHA001", 19, 16, 22)]


OPENMMLAB = """\
from mmengine.model import ModuleList


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, 8)

    def forward(self, x):
        return x + self.attn(x, x, x, need_weights=False)[0]


class Tower(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.blocks = ModuleList([Block(d) for _ in range(n)])

    def forward(self, x):
        SHAPE = x.shape
        for blk in self.blocks:
            x = blk(x)
        return x
"""


def test_openmmlab_s_containers_hold_and_run_their_modules():
    # mmengine's ModuleList (mmaction's UniFormerV2): the attention on line 11,
    # the shapes on line 23
    assert got(OPENMMLAB.replace("SHAPE", "L, N, C")) == [("MHA903", 11, 21, 23)]
    assert got(OPENMMLAB.replace("SHAPE", "N, L, C")) == [("MHA001", 11, 21, 23)]


def test_a_stated_sequence_and_features_leave_the_batch_the_other_axis():
    # ``L, NT, C = x.shape``: NT (batch times frames) names nothing, but a 3-D
    # attention input whose sequence and features are stated has its batch
    # in the axis left
    assert got(OPENMMLAB.replace("SHAPE", "L, NT, C")) == [("MHA903", 11, 21, 23)]
    assert got(OPENMMLAB.replace("SHAPE", "NT, L, C")) == [("MHA001", 11, 21, 23)]
    # the features not stated: nothing is known
    assert got(OPENMMLAB.replace("SHAPE", "L, NT, Q")) == [("MHA001", 11, 21, None)]


def test_a_reshape_by_channel_names_the_channels():
    # pypots' CSDI: ``reshape(B * K, channel, L)`` then ``permute(2, 0, 1)``
    body = OPENMMLAB.replace(
        "        SHAPE = x.shape\n",
        "        B, channel, K, L = x.shape\n"
        "        x = x.reshape(B * K, channel, L).permute(2, 0, 1)\n",
    )
    assert got(body) == [("MHA903", 11, 21, 24)]


WEIGHTS = """\
class Extractor(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, 8)
        nn.init.xavier_uniform_(self.attn.in_proj_weight)

    def forward(self, x, y):
        d = self.attn.embed_dim
        q = x @ self.attn.in_proj_weight[:d].T
        k = y @ self.attn.in_proj_weight[d:-d].T
        v = y @ self.attn.in_proj_weight[-d:].T
        out = (q @ k.transpose(-2, -1)).softmax(dim=-1) @ v
        return self.attn.out_proj(out)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, 8)

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]
"""


def test_a_module_kept_only_for_its_weights_is_not_reported():
    # mmaction's UniFormerV2 Extractor: the attention on line 8 is never run;
    # the Block's, on line 23, is called with data of unknown layout
    assert got(WEIGHTS) == [("MHA001", 23, 21, None)]
    # the module called, handed on, or called from outside its class: reported
    called = WEIGHTS.replace("return self.attn.out_proj(out)", "return self.attn(out, out, out)[0]")
    assert got(called) == [("MHA001", 8, 21, None), ("MHA001", 23, 21, None)]
    handed = WEIGHTS.replace("d = self.attn.embed_dim", "d = run(self.attn)")
    assert got(handed) == [("MHA001", 8, 21, None), ("MHA001", 23, 21, None)]
    outside = WEIGHTS + "\n\ndef probe(e, x):\n    return e.attn(x, x, x)\n"
    assert got(outside) == [("MHA001", 8, 21, None), ("MHA001", 23, 21, None)]


def test_a_transformer_used_through_its_parts_is_still_judged():
    # darts: ``self.transformer.encoder(...)`` runs a part built with the
    # Transformer's batch_first, so reading only its attributes is no excuse
    body = """\
    class Forecaster(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.transformer = nn.Transformer(d, 8)

        def forward(self, src):
            return self.transformer.encoder(src)
    """
    assert got(body) == [("MHA001", 8, 28, None)]


FACTORY = "import torch.nn as nn\n\n\ndef build(width):\n    return nn.MultiheadAttention(width, 8)\n"
USER = """\
import torch.nn as nn

from .factories import build


class Tower(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.embed = nn.Embedding(100, width)
        self.attn = build(width)

    def forward(self, ids):
        x = self.embed(ids)
        x = x.permute(1, 0, 2)  # NLD -> LND
        return self.attn(x, x, x)[0]
"""


def _factory_package(tmp_path, user: str):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "factories.py").write_text(FACTORY)
    (pkg / "tower.py").write_text(user)
    path = pkg / "factories.py"
    return [
        (f.code, f.line, f.col, f.evidence.get("layout_file"), f.evidence.get("layout_line"))
        for f in analyze_source(FACTORY, str(path), CODES)
    ]


def test_a_module_a_factory_of_another_file_builds_is_what_its_callers_run(tmp_path):
    """``self.attn = build(width)``, ``build`` imported from the file that
    builds and returns the module: the caller's swap to sequence-first
    reaches the construction (MHA903, naming the caller's line), and
    batch-first data fed there gives MHA001 with that line."""
    assert _factory_package(tmp_path, USER) == [("MHA903", 5, 12, "pkg/tower.py", 14)]
    (tmp_path / "b").mkdir()
    batch_first = USER.replace("        x = x.permute(1, 0, 2)  # NLD -> LND\n", "").replace(
        "x = self.embed(ids)", "x = self.embed(ids)  # (batch, seq, width)"
    )
    assert _factory_package(tmp_path / "b", batch_first) == [("MHA001", 5, 12, "pkg/tower.py", 13)]


def test_a_factory_result_used_otherwise_keeps_the_finding(tmp_path):
    """Kept anywhere but on ``self`` (a list, an argument), its calls are not
    followed: unknown, and MHA001 stays."""
    other = USER.replace("self.attn = build(width)", "self.attn = [build(width)][0]")
    assert _factory_package(tmp_path, other) == [("MHA001", 5, 12, None, None)]


MVTS = '''\
import math

import torch
from torch import nn


def get_pos_encoder(kind):
    return {"fixed": nn.Identity, "learnable": nn.Dropout}[kind]


class Encoder(nn.Module):
    def __init__(self, feat_dim, d_model, pos_encoding="fixed"):
        super().__init__()
        self.d_model = d_model
        self.project_inp = nn.Linear(feat_dim, d_model)
        self.pos_enc = get_pos_encoder(pos_encoding)(d_model)
        layer = nn.TransformerEncoderLayer(d_model, 8)
        self.transformer_encoder = nn.TransformerEncoder(layer, 2)

    def forward(self, X, padding_masks):
        inp = X.permute(1, 0, 2)
        inp = self.project_inp(inp) * math.sqrt(self.d_model)
        inp = self.pos_enc(inp)
        out = self.transformer_encoder(inp, src_key_padding_mask=~padding_masks)
        return out.permute(1, 0, 2)
'''


def _mvts(text: str):
    return [
        (f.code, f.line, f.col, f.evidence.get("layout_line"))
        for f in analyze_source(text, "mvts.py", CODES)
    ]


def test_a_swap_followed_through_per_token_steps_to_the_module_call():
    """mvts_transformer (sktime, tsai): the swap, then a projection scaled by
    a number and a positional encoding no one can read, each rebinding the
    data, then the encoder: the swap is the conversion (MHA903, naming it)."""
    assert _mvts(MVTS) == [("MHA903", 17, 17, 21)]
    # no swap: the steps alone say nothing, and MHA001 stays
    unswapped = MVTS.replace("inp = X.permute(1, 0, 2)", "inp = X")
    assert _mvts(unswapped) == [("MHA001", 17, 17, None)]
    # a step that takes more than the data (a known reshaping helper, two
    # arguments) ends the chain
    two = MVTS.replace("inp = self.pos_enc(inp)", "inp = self.pos_enc(inp, X)")
    assert _mvts(two) == [("MHA001", 17, 17, None)]


def test_a_layer_chosen_between_torch_s_and_a_class_of_the_file():
    """mvts_transformer's ``encoder_layer`` is a ``TransformerEncoderLayer``
    on one branch and a ``BatchNorm`` layer class of the file on the other:
    the encoder built from it runs the torch layer (the class's own
    attention is judged where it is built), so the swap reaches it."""
    branch = MVTS.replace(
        "        layer = nn.TransformerEncoderLayer(d_model, 8)\n",
        "        if norm == 'LayerNorm':\n"
        "            layer = nn.TransformerEncoderLayer(d_model, 8)\n"
        "        else:\n"
        "            layer = BatchNormLayer(d_model)\n",
    ).replace('pos_encoding="fixed"):', 'pos_encoding="fixed", norm="BatchNorm"):')
    branch += (
        "\n\nclass BatchNormLayer(nn.Module):\n"
        "    def __init__(self, d_model):\n"
        "        super().__init__()\n"
        "        self.norm = nn.BatchNorm1d(d_model)\n\n"
        "    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=None):\n"
        "        return src\n"
    )
    assert _mvts(branch) == [("MHA903", 18, 21, 24)]


ROUND_TRIP = """\
class Imputer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.pos = PositionalEncoding(dim)
        self.time_layer = nn.TransformerEncoder(nn.TransformerEncoderLayer(dim, 8), 1)

    def forward(self, last, decay):
        a = self.pos(last.permute(1, 0, 2)).permute(1, 0, 2)
        b = self.pos(decay.permute(1, 0, 2)).permute(1, 0, 2)
        data = torch.cat([a, b], dim=1)
        return self.time_layer(data)


class PositionalEncoding(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.pe = nn.Parameter(torch.zeros(512, 1, dim))

    def forward(self, x):
        return x + self.pe[: x.size(0)]
"""


def test_a_concatenation_kept_in_a_local_is_not_a_conversion():
    """pypots' CSAI (a real bug): each operand is swapped to sequence-first
    for a positional encoding and swapped back, then concatenated into a
    local fed to an encoder left sequence-first.  The swaps back are not
    conversions for that encoder: a concatenation's operands count only
    when the concatenation is passed straight to the call."""
    assert got(ROUND_TRIP) == [("MHA001", 9, 49, None)]


def test_a_factory_result_returned_by_a_method_is_unknown_not_an_error(tmp_path):
    """``return build(64)`` in a method of the caller's class: a statement
    with no target.  The factory's module is then used otherwise (unknown),
    and the analysis does not fail (it once raised, giving MHA000)."""
    other = USER.replace(
        "        self.attn = build(width)\n", ""
    ) + "\n    def make(self, width):\n        return build(width)\n"
    assert _factory_package(tmp_path, other) == [("MHA001", 5, 12, None, None)]
