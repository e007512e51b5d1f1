"""The forty-first stop.  Issue 26: what probe AN left open across files."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs, copied, flake8_in_project, write_package
from flake8_mha.lint.engine import analyze_file

BASE = """\
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    attn_pdrop = 0.0

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_pdrop, is_causal=True)
"""

SUB = """\
import torch.nn as nn

from .attention import Attention


class DropAttention(Attention):
    attn_pdrop = 0.1


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = DropAttention()

    def forward(self, q, k, v):
        return self.attn(q, k, v)
"""


def _dropout(tmp_path, sub, base=BASE):
    pkg = write_package(tmp_path / "pkg", {"attention.py": base, "model.py": sub})
    return [(f.line, f.col, f.code) for f in analyze_file(str(pkg / "attention.py"), ["MHA007"])]


def test_a_subclass_of_another_file_that_sets_the_class_dropout_is_reported(tmp_path):
    # probe AN's AN03: the base's ``attn_pdrop = 0.0``, a used subclass's 0.1
    assert _dropout(tmp_path, SUB) == [(9, 16, "MHA007")]
    found = analyze_file(str(tmp_path / "pkg" / "attention.py"), ["MHA007"])
    # the base's own value is 0: the message names the subclass whose instances drop
    assert found[0].message.endswith("(DropAttention in pkg/model.py sets attn_pdrop = 0.1)")
    assert found[0].evidence["dropout_p"] == 0.1


def test_an_edit_of_the_subclass_changes_the_base_finding_with_the_cache_on(tmp_path):
    """flake8's results cache on: attention.py unchanged, its finding follows
    what the subclass in recipes.py sets."""
    (tmp_path / "setup.cfg").write_text("[flake8]\n")
    pkg = copied(pathlib.Path("fixtures/program_calls/subclass_attrs"), tmp_path)

    def run():
        return flake8_in_project(tmp_path, f"{pkg.name}/attention.py", "MHA007")

    assert run() == (1, [[f"{pkg.name}/attention.py:19:15:", "MHA007"]])
    recipes = pkg / "recipes.py"
    text = recipes.read_text()
    recipes.write_text(text.replace("attn_pdrop = 0.1", "attn_pdrop = 0.0"))
    assert run() == (0, [])
    recipes.write_text(text)
    assert run() == (1, [[f"{pkg.name}/attention.py:19:15:", "MHA007"]])


def test_a_subclass_of_the_same_file_is_named_too(tmp_path):
    one = BASE + "\n\n" + SUB.split("from .attention import Attention\n\n\n")[1]
    pkg = write_package(tmp_path / "pkg", {"attention.py": one})
    found = analyze_file(str(pkg / "attention.py"), ["MHA007"])
    assert [(f.line, f.col, f.code) for f in found] == [(9, 16, "MHA007")]
    assert found[0].message.endswith("(DropAttention sets attn_pdrop = 0.1)")


def test_a_subclass_that_keeps_zero_or_is_never_used_changes_nothing(tmp_path):
    assert _dropout(tmp_path / "a", SUB.replace("attn_pdrop = 0.1", "attn_pdrop = 0.0")) == []
    assert _dropout(tmp_path / "b", SUB.replace("DropAttention()", "Attention()")) == []
    # a value the subclass reads from elsewhere is not known: the base's 0 is not either
    assert _dropout(tmp_path / "c", SUB.replace("attn_pdrop = 0.1", "attn_pdrop = P")) == [
        (9, 16, "MHA007")
    ]
    # set on the instance by a subclass's ``__init__``
    in_init = SUB.replace(
        "    attn_pdrop = 0.1\n",
        "    def __init__(self):\n        super().__init__()\n        self.attn_pdrop = 0.1\n",
    )
    assert _dropout(tmp_path / "d", in_init) == [(9, 16, "MHA007")]


def test_a_class_body_value_does_not_hide_what_the_base_sets_on_its_instances(tmp_path):
    # the base's ``__init__`` sets ``self.attn_pdrop = 0.0`` after the class
    # body's 0.1 is read: the instance's 0 wins
    base = BASE.replace(
        "    attn_pdrop = 0.0\n",
        "    def __init__(self):\n        super().__init__()\n        self.attn_pdrop = 0.0\n",
    )
    assert _dropout(tmp_path, SUB, base) == []


def test_the_subclass_fixture_reports_alike_per_file_per_package_and_in_check():
    assert_package_runs(
        "fixtures/program_calls/subclass_attrs", [("attention.py", 19, 15, "MHA007")]
    )


DECODER = """\
import torch.nn as nn


class TextDecoder(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.token_embedding = nn.Embedding(100, d)
        layer = nn.TransformerDecoderLayer(d, h, batch_first=True)
        self.blocks = nn.TransformerDecoder(layer, 2)

    def generate(self, x, xa):
        return self(x, xa)

    def forward(self, x, xa, mask=None):
        return self.blocks(self.token_embedding(x), xa, tgt_mask=mask, tgt_is_causal=True)
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

    def states(self, x):
        return self.decoder.token_embedding(x)
"""


def _causal(tmp_path, model):
    pkg = write_package(tmp_path / "pkg", {"decoder.py": DECODER, "model.py": model})
    return [(f.line, f.col, f.code) for f in analyze_file(str(pkg / "decoder.py"), ["MHA005"])]


def test_a_submodule_called_on_a_held_decoder_does_not_hide_its_callers(tmp_path):
    # probe AN's AN10: ``self.decoder.token_embedding(x)`` runs the embedding,
    # not the decoder's forward; the one call of the decoder passes no mask
    assert _causal(tmp_path, WHISPER) == [(15, 16, "MHA005")]


def test_a_method_of_the_decoder_or_the_decoder_read_whole_leaves_its_callers_unknown(tmp_path):
    # ``generate`` is the decoder's own method: what it passes is not read here
    method = WHISPER.replace("self.decoder.token_embedding(x)", "self.decoder.generate(x, x)")
    assert _causal(tmp_path / "a", method) == []
    handed = WHISPER.replace("return self.decoder.token_embedding(x)", "return self.decoder")
    assert _causal(tmp_path / "b", handed) == []
    run = WHISPER.replace("self.decoder.token_embedding(x)", "self.decoder.forward(x, x, x)")
    assert _causal(tmp_path / "c", run) == []


def test_the_submodule_fixture_reports_alike_per_file_per_package_and_in_check():
    assert_package_runs(
        "fixtures/program_calls/submodule_reads", [("decoder.py", 25, 13, "MHA005")]
    )


LAYER = """\
import torch.nn as nn


class PatchEncoderLayer(nn.TransformerEncoderLayer):
    def __init__(self, d_model, n_heads, batch_first=False):
        super().__init__(d_model, n_heads, 128, 0.1, batch_first=batch_first, norm_first=True)
"""

BACKBONE = """\
import torch.nn as nn

from .encoder import PatchEncoderLayer


class PatchTST(nn.Module):
    def __init__(self):
        super().__init__()
        self.W_P = nn.Linear(16, 64)
        self.layers = nn.ModuleList([PatchEncoderLayer(64, 4) for _ in range(2)])

    def forward(self, x):
        bs, n_vars, patch_num, _ = x.shape
        u = self.W_P(x).reshape(bs * n_vars, patch_num, 64)  # (bs * n_vars, patch_num, d_model)
        for layer in self.layers:
            u = layer(u)
        return u
"""


def _layout(tmp_path, layer, backbone=BACKBONE):
    pkg = write_package(tmp_path / "pkg", {"encoder.py": layer, "model.py": backbone})
    return {
        name: [(f.line, f.col, f.code) for f in analyze_file(str(pkg / name), ["MHA001", "MHA010"])]
        for name in ("encoder.py", "model.py")
    }


def test_a_torch_layer_subclass_of_another_file_brings_its_init_flag_to_the_call(tmp_path):
    # probe AN's AN19: ``super().__init__(..., batch_first=False)`` in encoder.py
    explicit = LAYER.replace("batch_first=batch_first", "batch_first=False")
    assert _layout(tmp_path / "a", explicit) == {"encoder.py": [], "model.py": [(16, 17, "MHA010")]}
    # the flag a parameter of its ``__init__`` gives, left at its default by the call
    assert _layout(tmp_path / "b", LAYER) == {"encoder.py": [], "model.py": [(16, 17, "MHA010")]}


def test_a_layer_subclass_built_batch_first_or_left_at_the_default_is_not_reported_twice(tmp_path):
    passed = BACKBONE.replace("PatchEncoderLayer(64, 4)", "PatchEncoderLayer(64, 4, True)")
    assert _layout(tmp_path / "a", LAYER, passed) == {"encoder.py": [], "model.py": []}
    # torch's default: MHA001 at the ``super().__init__`` call, as in one file, not
    # MHA010 at the call as well
    default = LAYER.replace(", batch_first=batch_first", "")
    assert _layout(tmp_path / "b", default) == {"encoder.py": [(6, 9, "MHA001")], "model.py": []}


def test_the_layer_subclass_fixture_reports_alike_per_file_per_package_and_in_check():
    assert_package_runs(
        "fixtures/program_calls/layer_subclass_init",
        [("backbone.py", 19, 17, "MHA010")],
        select="MHA0",
    )


DETR_LAYERS = """\
import copy

import torch.nn as nn


def _get_clones(module, N):
    return nn.ModuleList([copy.deepcopy(module) for i in range(N)])


class EncoderLayer(nn.Module):
    def __init__(self, d_model, nhead):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, nhead)

    def forward(self, src, src_key_padding_mask=None):
        return self.self_attn(src, src, src, key_padding_mask=src_key_padding_mask, need_weights=False)[0]


class Encoder(nn.Module):
    def __init__(self, encoder_layer, num_layers):
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)

    def forward(self, src, src_key_padding_mask=None):
        for layer in self.layers:
            src = layer(src, src_key_padding_mask=src_key_padding_mask)
        return src


class Transformer(nn.Module):
    def __init__(self, d_model=64, nhead=8):
        super().__init__()
        encoder_layer = EncoderLayer(d_model, nhead)
        self.encoder = Encoder(encoder_layer, 2)

    def forward(self, src, mask):
        src = src.flatten(2).permute(2, 0, 1)
        return self.encoder(src, src_key_padding_mask=mask.flatten(1))
"""

DETR = """\
import torch
import torch.nn as nn

from .transformer import Transformer


class DETR(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = Transformer()

    def forward(self, src, sizes):
        h, w = src.shape[-2:]
        ys = torch.arange(h)
        xs = torch.arange(w)
        valid = (ys[None, :, None] < sizes[:, 0, None, None]) & (xs[None, None, :] < sizes[:, 1, None, None])
        return self.transformer(src, valid)
"""


def _detr(tmp_path, layers=DETR_LAYERS, detr=DETR):
    pkg = write_package(tmp_path / "pkg", {"transformer.py": layers, "detr.py": detr})
    return [(f.line, f.col, f.code) for f in analyze_file(str(pkg / "detr.py"), ["MHA003"])]


def test_a_cloned_layer_handed_in_and_a_flattened_mask_are_followed(tmp_path):
    # probe AN's AN11: ``_get_clones(encoder_layer, n)`` of the layer the
    # constructor is handed, built into a local first; ``mask.flatten(1)``
    assert _detr(tmp_path) == [(17, 16, "MHA003")]
    inverted = DETR.replace("(src, valid)", "(src, ~valid)")
    assert _detr(tmp_path / "a", detr=inverted) == []
    # the copies written out as a comprehension
    comprehension = DETR_LAYERS.replace(
        "_get_clones(encoder_layer, num_layers)",
        "nn.ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])",
    )
    assert _detr(tmp_path / "b", comprehension) == [(17, 16, "MHA003")]


def test_a_handed_layer_that_is_not_one_construction_settles_nothing(tmp_path):
    # the local is bound twice: which layer the encoder copies is not known here
    twice = DETR_LAYERS.replace(
        "        encoder_layer = EncoderLayer(d_model, nhead)\n",
        "        encoder_layer = EncoderLayer(d_model, nhead)\n"
        "        if nhead > 8:\n            encoder_layer = nn.Identity()\n",
    )
    assert _detr(tmp_path / "a", twice) == []
    # the layer the encoder is handed comes from the caller of Transformer
    handed = DETR_LAYERS.replace(
        "def __init__(self, d_model=64, nhead=8):", "def __init__(self, encoder_layer):"
    ).replace("        encoder_layer = EncoderLayer(d_model, nhead)\n", "")
    assert _detr(tmp_path / "b", handed, DETR.replace("Transformer()", "Transformer(None)")) == []


def test_the_cloned_layers_fixture_reports_alike_per_file_per_package_and_in_check():
    assert_package_runs(
        "fixtures/program_calls/injected_clones", [("detr.py", 20, 16, "MHA003")], select="MHA0"
    )


NANO = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(n, n, dtype=torch.bool)).view(1, 1, n, n))

    def forward(self, q, k, v, key_keep):
        T = q.shape[2]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.bias[:, :, :T, :T] & key_keep[:, None, None, :])
"""

SAMPLER = """\
from .attention import CausalSelfAttention


def generate(idx, q, k, v, pad_id):
    attn = CausalSelfAttention(64)
    pad = idx == pad_id
    return attn(q, k, v, pad)
"""


def _sampled(tmp_path, sampler=SAMPLER, attention=NANO):
    pkg = write_package(tmp_path / "pkg", {"attention.py": attention, "generate.py": sampler})
    return [(f.line, f.col, f.code) for f in analyze_file(str(pkg / "generate.py"), ["MHA002"])]


def test_a_mask_joined_with_the_callees_own_keep_mask_is_judged_at_the_call(tmp_path):
    # probe AN's AN04: ``self.bias[...] & key_keep[...]`` keeps what True means
    assert _sampled(tmp_path) == [(7, 12, "MHA002")]
    assert _sampled(tmp_path / "a", SAMPLER.replace("pad)", "~pad)")) == []
    either = NANO.replace(
        "self.bias[:, :, :T, :T] & key_keep", "self.bias[:, :, :T, :T] | key_keep"
    )
    assert _sampled(tmp_path / "b", attention=either) == [(7, 12, "MHA002")]


def test_a_join_of_two_parameters_is_no_step_of_either(tmp_path):
    two = NANO.replace(
        "def forward(self, q, k, v, key_keep):", "def forward(self, q, k, v, key_keep, other):"
    )
    two = two.replace("self.bias[:, :, :T, :T] & key_keep", "other & key_keep")
    assert _sampled(tmp_path, SAMPLER.replace("(q, k, v, pad)", "(q, k, v, pad, pad)"), two) == []


def test_a_parameter_annotated_with_a_project_class_is_called_as_its_instance(tmp_path):
    annotated = SAMPLER.replace(
        "def generate(idx, q, k, v, pad_id):\n    attn = CausalSelfAttention(64)\n",
        "def generate(attn: CausalSelfAttention, idx, q, k, v, pad_id):\n",
    )
    assert _sampled(tmp_path / "a", annotated) == [(6, 12, "MHA002")]
    quoted = annotated.replace("attn: CausalSelfAttention", 'attn: "CausalSelfAttention"')
    assert _sampled(tmp_path / "b", quoted) == [(6, 12, "MHA002")]
    # any other annotation says nothing of what is called
    optional = "from typing import Optional\n" + annotated.replace(
        "attn: CausalSelfAttention", "attn: Optional[CausalSelfAttention]"
    )
    assert _sampled(tmp_path / "c", optional) == []
    bare = annotated.replace("attn: CausalSelfAttention", "attn")
    assert _sampled(tmp_path / "d", bare) == []


def test_the_buffer_join_fixture_reports_alike_per_file_per_package_and_in_check():
    assert_package_runs(
        "fixtures/program_calls/buffer_joins", [("sample.py", 11, 12, "MHA002")], select="MHA0"
    )


MIXIN = """\
from einops import repeat


class RepeatKVMixin:
    def expand_kv(self, k, v):
        k = repeat(k, "b h s d -> b (r h) s d", r=self.n_rep)
        v = repeat(v, "b h s d -> b (r h) s d", r=self.n_rep)
        return k, v
"""

GQA = """\
import torch.nn as nn
import torch.nn.functional as F

from .kv import RepeatKVMixin


class Attention(RepeatKVMixin, nn.Module):
    def __init__(self, n_heads, n_kv_heads):
        super().__init__()
        self.n_rep = n_heads // n_kv_heads

    def forward(self, q, k, v, fused=True):
        if fused:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        k, v = self.expand_kv(k, v)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
"""


def _grouped(tmp_path, mixin=MIXIN, gqa=GQA):
    pkg = write_package(tmp_path / "pkg", {"kv.py": mixin, "attention.py": gqa})
    return [(f.line, f.col, f.code) for f in analyze_file(str(pkg / "attention.py"), ["MHA013"])]


def test_a_mixin_method_of_another_file_is_read_where_the_class_calls_it(tmp_path):
    # probe AN's AN05: the einops tiling of a mixin beside ``enable_gqa``
    assert _grouped(tmp_path) == [(15, 16, "MHA013")]
    interleaved = MIXIN.replace(
        'repeat(k, "b h s d -> b (r h) s d", r=self.n_rep)',
        "k.repeat_interleave(self.n_rep, dim=1)",
    ).replace(
        'repeat(v, "b h s d -> b (r h) s d", r=self.n_rep)',
        "v.repeat_interleave(self.n_rep, dim=1)",
    )
    assert _grouped(tmp_path / "a", interleaved) == []
    # a method of the class's own runs, not the mixin's
    own = GQA.replace(
        "    def forward(",
        "    def expand_kv(self, k, v):\n        return k, v\n\n    def forward(",
    )
    assert _grouped(tmp_path / "b", gqa=own) == []


def test_the_mixin_fixture_reports_alike_per_file_per_package_and_in_check():
    assert_package_runs(
        "fixtures/program_calls/kv_mixins", [("attention.py", 19, 16, "MHA013")], select="MHA0"
    )


T5_STACK = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Attn(nn.Module):
    def forward(self, q, k, v, position_bias):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=position_bias)


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.rel = nn.Embedding(32, 4)
        self.attn = Attn()

    def forward(self, q, k, v, extended_attention_mask=None):
        L = q.shape[2]
        position_bias = self.rel(torch.arange(L)[:, None] - torch.arange(L)[None, :] + 16).permute(2, 0, 1)[None]
        if extended_attention_mask is not None:
            position_bias = position_bias + extended_attention_mask
        return self.attn(q, k, v, position_bias)
"""

T5_MODEL = """\
import torch
import torch.nn as nn

from .stack import Stack


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.stack = Stack()

    def forward(self, q, k, v, input_ids, attention_mask):
        extended = attention_mask[:, None, None, :].to(torch.float32)
        return self.stack(q, k, v, extended)
"""


def _folded(tmp_path, stack=T5_STACK, model=T5_MODEL):
    pkg = write_package(tmp_path / "pkg", {"stack.py": stack, "model.py": model})
    return [(f.line, f.col, f.code) for f in analyze_file(str(pkg / "model.py"), ["MHA004"])]


def test_a_mask_folded_into_the_callees_bias_is_judged_at_each_call(tmp_path):
    # probe AN's AN07: T5's ``position_bias = position_bias + extended_attention_mask``
    assert _folded(tmp_path) == [(14, 16, "MHA004")]
    unguarded = T5_STACK.replace(
        "        if extended_attention_mask is not None:\n            position_bias = position_bias",
        "        position_bias = position_bias",
    )
    assert _folded(tmp_path / "a", unguarded) == [(14, 16, "MHA004")]
    augmented = T5_STACK.replace(
        "position_bias = position_bias + extended_attention_mask",
        "position_bias += extended_attention_mask",
    )
    assert _folded(tmp_path / "b", augmented) == [(14, 16, "MHA004")]
    additive = T5_MODEL.replace(
        "extended = attention_mask[:, None, None, :].to(torch.float32)",
        "extended = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -1e9",
    )
    assert _folded(tmp_path / "c", model=additive) == []


def test_the_folded_mask_fixture_reports_alike_per_file_per_package_and_in_check():
    assert_package_runs(
        "fixtures/program_calls/bias_masks_sdpa", [("model.py", 17, 13, "MHA004")], select="MHA0"
    )


CHOSEN_LAYERS = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class DecoderSelfAttention(nn.Module):
    def forward(self, q, k, v, causal_mask):
        scores = torch.matmul(q, k.transpose(3, 2))
        scores = scores.masked_fill(causal_mask, torch.finfo(scores.dtype).min)
        return torch.matmul(F.softmax(scores, dim=-1), v)


class EncoderAttention(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)
"""

CHOSEN_STACK = """\
import torch
import torch.nn as nn

from .layers import DecoderSelfAttention, EncoderAttention


class Block(nn.Module):
    def __init__(self, is_decoder):
        super().__init__()
        self.is_decoder = is_decoder
        self.attn = DecoderSelfAttention() if is_decoder else EncoderAttention()

    def forward(self, q, k, v, causal_mask=None):
        if self.is_decoder:
            return self.attn(q, k, v, causal_mask)
        return self.attn(q, k, v)


class Stack(nn.Module):
    def __init__(self, is_decoder):
        super().__init__()
        self.block = nn.ModuleList([Block(is_decoder) for _ in range(2)])

    def forward(self, q, k, v):
        L = q.shape[2]
        causal = torch.tril(torch.ones(L, L, dtype=torch.bool))
        for layer in self.block:
            q = layer(q, k, v, causal)
        return q
"""


def _chosen(tmp_path, stack=CHOSEN_STACK, layers=CHOSEN_LAYERS):
    pkg = write_package(tmp_path / "pkg", {"layers.py": layers, "stack.py": stack})
    return [(f.line, f.col, f.code) for f in analyze_file(str(pkg / "stack.py"), ["MHA003"])]


def test_a_class_chosen_in_one_expression_is_followed_at_the_call_that_hands_the_mask(tmp_path):
    # probe AN's AN08: the keep-triangle enters at the stack's loop call, not
    # at the block's own call of its attention
    assert _chosen(tmp_path) == [(28, 17, "MHA003")]
    inverted = CHOSEN_STACK.replace("q = layer(q, k, v, causal)", "q = layer(q, k, v, ~causal)")
    assert _chosen(tmp_path / "a", inverted) == []


def test_a_class_whose_forward_cannot_take_the_call_is_not_what_it_runs(tmp_path):
    # both attentions take the four arguments: either may run the call, and the
    # fill's finding stays where the mask enters
    four = CHOSEN_LAYERS.replace(
        "def forward(self, q, k, v):", "def forward(self, q, k, v, m=None):"
    )
    assert _chosen(tmp_path / "a", layers=four) == [(28, 17, "MHA003")]
    # one call for both: the encoder attention cannot take a fourth argument, so
    # the call runs the decoder's
    one_call = CHOSEN_STACK.replace(
        "        if self.is_decoder:\n            return self.attn(q, k, v, causal_mask)\n"
        "        return self.attn(q, k, v)\n",
        "        return self.attn(q, k, v, causal_mask)\n",
    )
    assert _chosen(tmp_path / "b", one_call) == [(26, 17, "MHA003")]


def test_the_class_choice_fixture_reports_alike_per_file_per_package_and_in_check():
    assert_package_runs(
        "fixtures/program_calls/class_choice_calls", [("stack.py", 22, 17, "MHA003")], select="MHA0"
    )


GPT_MODEL = """\
import torch.nn as nn

from .attention import CausalSelfAttention


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(h=nn.ModuleList([CausalSelfAttention(64) for _ in range(2)])))

    def forward(self, q, k, v, key_keep):
        for block in self.transformer.h:
            q = block(q, k, v, key_keep)
        return q


def generate(idx, q, k, v, pad_id):
    model = GPT()
    pad = idx == pad_id
    return model(q, k, v, pad)
"""

GPT_ATTENTION = NANO.replace(
    "attn_mask=self.bias[:, :, :T, :T] & key_keep[:, None, None, :]",
    "attn_mask=key_keep[:, None, None, :]",
)


def _gpt(tmp_path, model=GPT_MODEL):
    pkg = write_package(tmp_path / "pkg", {"attention.py": GPT_ATTENTION, "generate.py": model})
    return [(f.line, f.col, f.code) for f in analyze_file(str(pkg / "generate.py"), ["MHA002"])]


def test_a_list_held_in_a_module_dict_is_looped_as_nanogpt_writes_it(tmp_path):
    # probe AN's AN04d: ``for block in self.transformer.h``
    assert _gpt(tmp_path) == [(20, 12, "MHA002")]
    braces = GPT_MODEL.replace(
        "nn.ModuleDict(dict(h=nn.ModuleList([CausalSelfAttention(64) for _ in range(2)])))",
        'nn.ModuleDict({"h": nn.ModuleList([CausalSelfAttention(64) for _ in range(2)])})',
    )
    assert _gpt(tmp_path / "a", braces) == [(20, 12, "MHA002")]
    assert _gpt(tmp_path / "b", GPT_MODEL.replace("(q, k, v, pad)", "(q, k, v, ~pad)")) == []
    # another member of the dict is not the blocks
    other = GPT_MODEL.replace(
        "dict(h=nn.ModuleList(", "dict(wte=nn.Embedding(9, 4), h=nn.ModuleList("
    )
    other = other.replace("for block in self.transformer.h:", "for block in self.transformer.wte:")
    assert _gpt(tmp_path / "c", other) == []


def test_a_subclass_that_only_sets_an_attribute_is_followed_from_the_entry(tmp_path):
    # probe AN's AN04c: ``class FinetuneAttention(CausalSelfAttention): attn_pdrop = 0.1``
    held = GPT_MODEL.replace(
        "class GPT(nn.Module):",
        "class FinetuneAttention(CausalSelfAttention):\n    attn_pdrop = 0.1\n\n\nclass GPT(nn.Module):",
    ).replace("CausalSelfAttention(64) for", "FinetuneAttention(64) for")
    assert _gpt(tmp_path, held) == [(24, 12, "MHA002")]


def test_the_module_dict_fixture_reports_alike_per_file_per_package_and_in_check():
    assert_package_runs(
        "fixtures/program_calls/module_dict_members",
        [("sample.py", 12, 12, "MHA002")],
        select="MHA0",
    )
