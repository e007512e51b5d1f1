"""The thirty-ninth stop.  Issue 26: what probe AM left open across files,
and what probe AN and release review 40 found."""

from __future__ import annotations

from fixture_expect import source_rows as _rows, write_package
from flake8_mha.lint.engine import analyze_file

TRACED = """\
import torch.nn as nn


class Traced(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.inner = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, *args, **kwargs):
        return self.inner(*args, **kwargs)
"""

LAYER = """\
import torch.nn as nn

from .trace import Traced


class Layer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.mixer = Traced(dim, heads)

    def forward(self, x, pad):
        out, _ = self.mixer(x, x, x, key_padding_mask=pad)
        return x + out
"""


def _traced(tmp_path, layer):
    pkg = write_package(tmp_path / "pkg", {"trace.py": TRACED, "layer.py": layer})
    found = analyze_file(str(pkg / "trace.py"), ["MHA102"])
    return [(f.line, f.col, f.code) for f in found], found


def test_a_tracing_wrapper_of_another_file_hands_its_callers_the_weights(tmp_path):
    # probe AM's AM30 across files: ``forward(self, *args, **kwargs)``
    rows, found = _traced(tmp_path, LAYER)
    assert rows == [(10, 16, "MHA102")]
    assert "every caller of `Traced.forward` (pkg/layer.py line 12)" in found[0].message
    # the layer's own file says nothing: the finding is the wrapper's
    assert analyze_file(str(tmp_path / "pkg" / "layer.py"), ["MHA102"]) == []


def test_a_tracing_wrapper_whose_caller_decides_the_weights_is_silent(tmp_path):
    by_keyword = LAYER.replace("key_padding_mask=pad)", "key_padding_mask=pad, need_weights=False)")
    assert _traced(tmp_path / "a", by_keyword)[0] == []
    by_place = LAYER.replace(
        "self.mixer(x, x, x, key_padding_mask=pad)", "self.mixer(x, x, x, pad, False)"
    )
    assert _traced(tmp_path / "b", by_place)[0] == []
    # the padding mask by place is not need_weights: still reported
    mask_by_place = LAYER.replace(
        "self.mixer(x, x, x, key_padding_mask=pad)", "self.mixer(x, x, x, pad)"
    )
    assert _traced(tmp_path / "d", mask_by_place)[0] == [(10, 16, "MHA102")]
    read = LAYER.replace("out, _ = self.mixer", "out, w = self.mixer").replace(
        "return x + out", "return x + out, w.mean()"
    )
    assert _traced(tmp_path / "c", read)[0] == []


def test_a_tracing_wrapper_in_the_same_file_is_reported_once_at_its_caller(tmp_path):
    same = TRACED + "\n\n" + LAYER.split("from .trace import Traced\n\n\n")[1]
    assert _rows(same, ["MHA102"], tmp_path) == [(19, 18, "MHA102")]


MAPPED = """\
import torch
import torch.nn as nn


def run():
    num_heads, input_dim, batch_size, q_len = 8, 256, 32, 20
    q = torch.randn(batch_size, q_len, input_dim)
    attention = nn.MultiheadAttention(input_dim, num_heads)
    permute = lambda t: t.permute(1, 0, 2)
    qt, kt, vt = map(permute, [q, q, q])
    return attention(qt, kt, vt, need_weights=False)[0]
"""


def test_an_axis_swap_in_a_lambda_mapped_over_the_inputs_is_their_conversion(tmp_path):
    # release review 40's carefree-learn test: ``map(permute, [q, k, v])``
    assert _rows(MAPPED, ["MHA001"], tmp_path) == []
    rows = analyze_file_rows(MAPPED, ["MHA903"], tmp_path)
    assert rows == [(8, 17, "MHA903", "line 10: `map(permute, [q, q, q])`")]
    # no swap: the batch-first data reaches the module
    kept = MAPPED.replace("lambda t: t.permute(1, 0, 2)", "lambda t: t.contiguous()")
    assert _rows(kept, ["MHA001"], tmp_path) == [(8, 17, "MHA001")]
    called = MAPPED.replace("qt, kt, vt = map(permute, [q, q, q])", "qt = kt = vt = permute(q)")
    assert _rows(called, ["MHA001"], tmp_path) == []
    inline = MAPPED.replace("map(permute, [q, q, q])", "(t.transpose(0, 1) for t in (q, q, q))")
    assert _rows(inline, ["MHA001"], tmp_path) == []


def analyze_file_rows(source, codes, tmp_path):
    path = tmp_path / "m.py"
    path.write_text(source)
    found = analyze_file(str(path), codes)
    return [
        (f.line, f.col, f.code, f.message.split("(L, N, ?), ")[1].split("): ")[0]) for f in found
    ]


def test_a_name_with_an_x_in_it_is_one_axis_of_a_spaced_shape_comment():
    from flake8_mha.analysis.layout.domain import parse_shape_comment

    # release review 40's pororo: ``# bsz x max_pos`` is two axes, not three
    assert parse_shape_comment("# bsz x max_pos") == {None: ("batch", None)}
    assert parse_shape_comment("# max_len x bsz x embed_dim") == {None: ("seq", "batch", "embed")}
    assert parse_shape_comment("# BxTxC") == {None: ("batch", "seq", "channel")}


SWARM = """\
import torch
import torch.nn as nn


class Swarmulator:
    def __init__(self, D=3, heads=4, N=100, batch_size=8):
        self.xi = torch.randn(N, D)
        self.oi = torch.randn(N, D)
        self.oi /= torch.norm(self.oi, dim=1).unsqueeze(1)
        self.attention_xi = nn.MultiheadAttention(embed_dim=D, num_heads=heads)
        self.attention_oi = nn.MultiheadAttention(embed_dim=D, num_heads=heads)

    def evolution_of_xi(self):
        attn_output, _ = self.attention_xi(self.xi, self.xi, self.xi, need_weights=False)
        return attn_output

    def evolution_of_oi(self):
        attn_output, _ = self.attention_oi(self.oi, self.oi, self.oi, need_weights=False)
        return attn_output

    def RK4_step(self, y, evolution_func, dt=0.01):
        k1 = dt * evolution_func()
        k2 = dt * evolution_func()
        return y + (k1 + k2) / 2

    def simulation(self, num_steps=1000):
        for _ in range(num_steps):
            self.xi = self.RK4_step(self.xi, self.evolution_of_xi)
            self.oi = self.RK4_step(self.oi, self.evolution_of_oi)
            self.oi /= torch.norm(self.oi, dim=1).unsqueeze(1)
"""


def test_an_unbatched_state_stepped_by_a_helper_handed_its_update_stays_unbatched(tmp_path):
    # review 39's swarmalator as released: an RK4 step handed the bound method
    # that runs the attention, and the state normalised in place
    assert _rows(SWARM, ["MHA001"], tmp_path) == []
    batched = SWARM.replace(
        "self.xi = torch.randn(N, D)", "self.xi = torch.randn(batch_size, N, D)"
    )
    assert _rows(batched, ["MHA001"], tmp_path) == [(10, 29, "MHA001")]
    oi_batched = SWARM.replace(
        "self.oi = torch.randn(N, D)", "self.oi = torch.randn(batch_size, N, D)"
    )
    assert _rows(oi_batched, ["MHA001"], tmp_path) == [(11, 29, "MHA001")]


BRANCHED = """\
import torch.nn.functional as F

FAST = False

if FAST:
    from torch.library import custom_op

    @custom_op("pkg::_sdpa", mutates_args=())
    def _sdpa(q, k, v, attn_mask=None, dropout_p=0.0):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p)

else:

    def _sdpa(q, k, v, attn_mask=None, dropout_p=0.0):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p)
"""

BLOCK = """\
import torch.nn as nn

from .kernels import _sdpa


class Block(nn.Module):
    def __init__(self, p=0.1):
        super().__init__()
        self.p = p

    def forward(self, q, k, v):
        return _sdpa(q, k, v, dropout_p=self.p)
"""


def test_a_function_defined_in_each_branch_of_an_if_is_followed(tmp_path):
    # review 39's eole as released: ``_sdpa`` a custom op under ``if``, plain in ``else``
    pkg = write_package(tmp_path / "pkg", {"kernels.py": BRANCHED, "block.py": BLOCK})
    found = analyze_file(str(pkg / "block.py"), ["MHA007"])
    assert [(f.line, f.col, f.code) for f in found] == [(12, 16, "MHA007")]
    assert "pkg/kernels.py:15 through _sdpa()" in found[0].message
    # the branches differ (one gates its dropout): unknown, silent
    (pkg / "kernels.py").write_text(
        BRANCHED.replace(
            "attn_mask=attn_mask, dropout_p=dropout_p)\n\nelse:",
            "attn_mask=attn_mask, dropout_p=0.0)\n\nelse:",
        )
    )
    assert analyze_file(str(pkg / "block.py"), ["MHA007"]) == []


LAYER_KW = """\
import torch.nn as nn

LAYER_KW = dict(dim_feedforward=256, dropout=0.0, activation="gelu", norm_first=True)


class Stage(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(dim, heads, **LAYER_KW)

    def forward(self, x):
        B, N, C = x.shape
        return self.layer(x)
"""


def test_a_splat_of_a_dict_written_out_carries_only_its_keys(tmp_path):
    # probe AN's AN27: ``**LAYER_KW`` with no batch_first in it
    assert _rows(LAYER_KW, ["MHA001"], tmp_path) == [(9, 22, "MHA001")]
    carried = LAYER_KW.replace("norm_first=True)", "norm_first=True, batch_first=True)")
    assert _rows(carried, ["MHA001"], tmp_path) == []
    literal = LAYER_KW.replace(
        'dict(dim_feedforward=256, dropout=0.0, activation="gelu", norm_first=True)',
        '{"dim_feedforward": 256, "dropout": 0.0}',
    )
    assert _rows(literal, ["MHA001"], tmp_path) == [(9, 22, "MHA001")]
    augmented = LAYER_KW.replace(
        "norm_first=True)\n", 'norm_first=True)\nLAYER_KW |= {"batch_first": True}\n'
    )
    assert _rows(augmented, ["MHA001"], tmp_path) == []


def test_a_splat_of_another_file_s_dict_carries_only_its_keys(tmp_path):
    config, _, layers = LAYER_KW.partition("\n\n\nclass Stage")
    layers = "import torch.nn as nn\n\nfrom .config import LAYER_KW\n\n\nclass Stage" + layers
    pkg = write_package(
        tmp_path / "pkg", {"config.py": config.split("\n\n", 1)[1] + "\n", "layers.py": layers}
    )
    found = analyze_file(str(pkg / "layers.py"), ["MHA001"])
    assert [(f.line, f.col, f.code) for f in found] == [(9, 22, "MHA001")]
    (pkg / "config.py").write_text("LAYER_KW = dict(dropout=0.0, batch_first=True)\n")
    assert analyze_file(str(pkg / "layers.py"), ["MHA001"]) == []
    # a dict changed by item elsewhere in its file: its keys are not known
    (pkg / "config.py").write_text('LAYER_KW = dict(dropout=0.0)\nLAYER_KW["batch_first"] = True\n')
    assert analyze_file(str(pkg / "layers.py"), ["MHA001"]) == []
    # or by ``|=``: the same
    pkg = write_package(
        tmp_path / "b",
        {
            "config.py": "LAYER_KW = dict(dropout=0.0)\nLAYER_KW |= dict(batch_first=True)\n",
            "layers.py": layers,
        },
    )
    assert analyze_file(str(pkg / "layers.py"), ["MHA001"]) == []


RECORD = """\
from typing import NamedTuple

import torch
import torch.nn as nn

PAD_ID = 0


class Batch(NamedTuple):
    input_ids: torch.Tensor
    mask: torch.Tensor


def collate(seqs):
    input_ids = torch.nn.utils.rnn.pad_sequence(seqs, batch_first=True, padding_value=PAD_ID)
    return Batch(input_ids=input_ids, mask=input_ids.ne(PAD_ID))


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 32)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, batch_first=True), 2)

    def forward(self, batch: Batch):
        return self.encoder(self.embed(batch.input_ids), src_key_padding_mask=batch.mask)
"""


def test_a_field_of_a_record_class_holds_what_its_constructions_give(tmp_path):
    # probe AN's AN13: a NamedTuple batch whose mask the collate function fills
    assert _rows(RECORD, ["MHA003"], tmp_path) == [(26, 16, "MHA003")]
    right = RECORD.replace("mask=input_ids.ne(PAD_ID)", "mask=input_ids.eq(PAD_ID)")
    assert _rows(right, ["MHA003"], tmp_path) == []
    positional = RECORD.replace(
        "Batch(input_ids=input_ids, mask=input_ids.ne(PAD_ID))",
        "Batch(input_ids, input_ids.ne(PAD_ID))",
    )
    assert _rows(positional, ["MHA003"], tmp_path) == [(26, 16, "MHA003")]
    dataclass = RECORD.replace("from typing import NamedTuple", "from dataclasses import dataclass")
    dataclass = dataclass.replace("class Batch(NamedTuple):", "@dataclass\nclass Batch:")
    assert _rows(dataclass, ["MHA003"], tmp_path) == [(27, 16, "MHA003")]
    # a construction that leaves the field to an unknown value: unknown
    unknown = RECORD + "\n\ndef rebuild(ids, m):\n    return Batch(input_ids=ids, mask=m)\n"
    assert _rows(unknown, ["MHA003"], tmp_path) == []


def test_a_field_of_a_record_class_of_another_file(tmp_path):
    data, _, model = RECORD.partition("\n\n\nclass Classifier")
    model = "import torch.nn as nn\n\nfrom .data import Batch\n\n\nclass Classifier" + model
    pkg = write_package(tmp_path / "pkg", {"data.py": data + "\n", "model.py": model})
    found = analyze_file(str(pkg / "model.py"), ["MHA003"])
    assert [(f.line, f.col, f.code) for f in found] == [(13, 16, "MHA003")]
    assert "batch.mask -> pkg/data.py:16: input_ids.ne(PAD_ID)" in found[0].message
    (pkg / "data.py").write_text(
        data.replace("input_ids.ne(PAD_ID)", "input_ids.eq(PAD_ID)") + "\n"
    )
    assert analyze_file(str(pkg / "model.py"), ["MHA003"]) == []


ZIPPED_MASKS = """\
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class GatedSelfAttention(nn.Module):
    def forward(self, q, k, v, mask):
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        scores = scores * mask
        return torch.matmul(F.softmax(scores, dim=-1), v)


class GatedRec(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([GatedSelfAttention() for _ in range(2)])

    def forward(self, q, k, v, log_seqs):
        keep = log_seqs > 0
        pad_keep = keep[:, None, None, :].float()
        causal = torch.ones(q.shape[2], q.shape[2]).tril()
        for blk, m in zip(self.blocks, (pad_keep, causal)):
            q = blk(q, k, v, m)
        return q
"""


def test_masks_zipped_with_the_blocks_reach_each_block(tmp_path):
    # probe AN's AN15: ``for blk, m in zip(self.blocks, (pad_keep, causal))``
    assert _rows(ZIPPED_MASKS, ["MHA012"], tmp_path) == [(25, 17, "MHA012")]
    enumerated = ZIPPED_MASKS.replace(
        "for blk, m in zip(self.blocks, (pad_keep, causal)):",
        "for i, m in enumerate((pad_keep, causal)):",
    ).replace("q = blk(q, k, v, m)", "q = self.blocks[i](q, k, v, m)")
    assert _rows(enumerated, ["MHA012"], tmp_path) == [(25, 17, "MHA012")]
    unknown = ZIPPED_MASKS.replace("(pad_keep, causal)", "self.masks")
    assert _rows(unknown, ["MHA012"], tmp_path) == []


STACKS = """\
import torch.nn as nn


class CausalPatchStack(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, n_heads, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)

    def forward(self, x, mask=None):
        return self.encoder(x, mask=mask, is_causal=True)
"""

FORECASTER = """\
import torch.nn as nn

from .encoder import CausalPatchStack


class MultiScaleForecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeds = nn.ModuleList([nn.Linear(p, 64) for p in (8, 16)])
        self.stacks = nn.ModuleList([CausalPatchStack(64, 4) for _ in (8, 16)])

    def forward(self, x):
        outs = []
        for stack, embed in zip(self.stacks, self.embeds):
            outs.append(stack(embed(x)))
        return outs
"""


def test_calls_of_blocks_walked_by_zip_are_their_calls(tmp_path):
    # probe AN's AN20: the stacks' only calls are in a zip loop, none with a mask
    pkg = write_package(tmp_path / "pkg", {"encoder.py": STACKS, "model.py": FORECASTER})
    found = analyze_file(str(pkg / "encoder.py"), ["MHA005"])
    assert [(f.line, f.col, f.code) for f in found] == [(11, 16, "MHA005")]
    assert (
        "every call of CausalPatchStack.forward in the project (1) has mask=None"
        in found[0].message
    )
    (pkg / "model.py").write_text(
        FORECASTER.replace("stack(embed(x))", "stack(embed(x), mask=self.causal)")
    )
    assert analyze_file(str(pkg / "encoder.py"), ["MHA005"]) == []


TEXT_DECODER = """\
from typing import Optional

import torch.nn as nn
from torch import Tensor


class TextDecoder(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        layer = nn.TransformerDecoderLayer(d, h, batch_first=True)
        self.blocks = nn.TransformerDecoder(layer, 2)

    def __call__(self, x: Tensor, xa: Tensor, mask: Optional[Tensor] = None) -> Tensor:
        return super().__call__(x, xa, mask)

    def forward(self, x, xa, mask=None):
        return self.blocks(x, xa, tgt_mask=mask, tgt_is_causal=True)
"""

WHISPER = """\
import torch.nn as nn

from .decoder import TextDecoder


class Whisper(nn.Module):
    def __init__(self):
        super().__init__()
        self.decoder = TextDecoder(64, 4)

    def forward(self, x, xa):
        return self.decoder(x, xa)

    def head_weights(self):
        return self.decoder.blocks.layers[0].linear1.weight
"""


def test_reading_a_submodule_of_a_held_module_does_not_hand_it_away(tmp_path):
    # probe AN's AN10: ``self.decoder.blocks.layers[0]`` beside the decoder's only call
    pkg = write_package(tmp_path / "pkg", {"decoder.py": TEXT_DECODER, "model.py": WHISPER})
    found = analyze_file(str(pkg / "decoder.py"), ["MHA005"])
    assert [(f.line, f.col, f.code) for f in found] == [(17, 16, "MHA005")]
    # ``self.decoder.forward`` read: it may run with a mask elsewhere
    (pkg / "model.py").write_text(WHISPER.replace(".blocks.layers[0].linear1.weight", ".forward"))
    assert analyze_file(str(pkg / "decoder.py"), ["MHA005"]) == []
    # a method called on the decoder may run it too (release review 32's
    # braindecode LUNA: ``self.cross_attn.initialize_weights()``)
    pkg = write_package(
        tmp_path / "b",
        {
            "decoder.py": TEXT_DECODER,
            "model.py": WHISPER.replace(".linear1.weight", "").replace(
                "self.decoder.blocks.layers[0]", "self.decoder.reset()"
            ),
        },
    )
    assert analyze_file(str(pkg / "decoder.py"), ["MHA005"]) == []


SPEECH_BATCH = """\
from dataclasses import dataclass

import torch


@dataclass
class SpeechBatch:
    feats: torch.Tensor
    frame_mask: torch.Tensor

    @classmethod
    def collate(cls, feats, lens):
        frame_mask = torch.arange(feats.shape[1])[None, :] >= lens[:, None]
        return cls(feats, frame_mask)
"""

SPEECH_MODEL = """\
import torch.nn as nn
import torch.nn.functional as F

from .collate import SpeechBatch


class Encoder(nn.Module):
    def forward(self, q, k, v, batch: SpeechBatch):
        mask = batch.frame_mask[:, None, None, :]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
"""


def test_a_record_built_by_its_own_classmethod(tmp_path):
    # probe AN's AN17: ``return cls(feats, frame_mask)`` in ``SpeechBatch.collate``
    pkg = write_package(tmp_path / "pkg", {"collate.py": SPEECH_BATCH, "model.py": SPEECH_MODEL})
    found = analyze_file(str(pkg / "model.py"), ["MHA002"])
    assert [(f.line, f.col, f.code) for f in found] == [(10, 16, "MHA002")]
    (pkg / "model.py").write_text(SPEECH_MODEL.replace("batch.frame_mask[", "~batch.frame_mask["))
    assert analyze_file(str(pkg / "model.py"), ["MHA002"]) == []


MIXIN = """\
import torch.nn.functional as F


class SDPAMixin:
    attn_dropout = 0.1

    def attend(self, q, k, v, mask=None):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=self.attn_dropout)
"""

MIXED = """\
import torch.nn as nn

from .ops import SDPAMixin


class MaskedCrossAttention(SDPAMixin, nn.Module):
    def forward(self, q, k, v, mask):
        return self.attend(q, k, v, mask)
"""


def test_a_mixin_mixed_into_module_classes_of_other_files(tmp_path):
    # probe AN's AN21: ``class SDPAMixin:`` in ops.py, mixed in by xattn.py
    pkg = write_package(tmp_path / "pkg", {"ops.py": MIXIN, "xattn.py": MIXED})
    found = analyze_file(str(pkg / "ops.py"), ["MHA007"])
    assert [(f.line, f.col, f.code) for f in found] == [(8, 16, "MHA007")]
    # also mixed into a class that is no module: its methods may run anywhere
    plain = "from .ops import SDPAMixin\n\n\nclass Scorer(SDPAMixin):\n    pass\n"
    pkg = write_package(tmp_path / "b", {"ops.py": MIXIN, "xattn.py": MIXED, "plain.py": plain})
    assert analyze_file(str(pkg / "ops.py"), ["MHA007"]) == []
