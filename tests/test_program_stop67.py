"""The thirty-eighth stop.  Issue 26: litgpt's soft-capped path written as
an ``if``/``else`` (the default mask made inside the soft-capped ``if``),
and what release review 39 and probe AM found."""

from __future__ import annotations

from fixture_expect import source_rows as _rows, write_package
from flake8_mha.lint.engine import analyze_file

SOFTCAPPED = """\
import math

import torch
import torch.nn.functional as F
from torch import nn


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config

    def forward(self, q, k, v, mask=None):
        return self.scaled_dot_product_attention(q, k, v, mask)

    def scaled_dot_product_attention(self, q, k, v, mask=None):
        scale = 1.0 / math.sqrt(q.size(-1))
        if self.config.attention_logit_softcapping is not None:
            scores = q @ k.mT * scale
            scores = torch.tanh(scores / 50.0) * 50.0
            if mask is None:
                mask = torch.ones(q.size(2), q.size(2), dtype=q.dtype).triu(diagonal=1)
                mask.masked_fill_(mask.bool(), torch.finfo(q.dtype).min)
            scores = scores + mask
            y = F.softmax(scores, dim=-1, dtype=torch.float).to(dtype=q.dtype) @ v
        else:
            y = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, scale=scale, is_causal=mask is None
            )
        return y.transpose(1, 2)


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attn = CausalSelfAttention(config)

    def forward(self, q, k, v):
        T = q.size(2)
        keep = torch.tril(torch.ones(T, T, dtype=torch.bool))
        return self.attn(q, k, v, keep)
"""


def test_a_default_made_inside_the_soft_capped_if_reads_the_caller_s_mask_after_it(tmp_path):
    # litgpt 0.5.13's ``scaled_dot_product_attention``: ``if softcapping is not
    # None: ... if mask is None: mask = <bias> ... scores + mask`` beside SDPA
    # in the ``else:``; a bool keep-mask from the caller is added (nothing masked)
    assert _rows(SOFTCAPPED, ["MHA002", "MHA003", "MHA004"], tmp_path) == [(41, 16, "MHA004")]
    # a float bias from the caller is right at both sinks
    additive = SOFTCAPPED.replace(
        "        return self.attn(q, k, v, keep)",
        "        bias = torch.zeros(T, T).masked_fill(~keep, float('-inf'))\n"
        "        return self.attn(q, k, v, bias)",
    )
    assert _rows(additive, ["MHA002", "MHA003", "MHA004"], tmp_path) == []
    # a second store of the mask beside the default: the caller's value is not
    # read through it (the join is unknown, never a guess)
    rebound = SOFTCAPPED.replace(
        "            scores = scores + mask\n",
        "            mask = mask[..., : k.size(2)] if k.size(2) < 8 else torch.zeros_like(scores)\n"
        "            scores = scores + mask\n",
    )
    assert _rows(rebound, ["MHA004"], tmp_path) == []


ROLLOUT = """\
import torch.nn as nn


class RolloutLayer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.maps = []
        self.attn.register_forward_hook(self._keep_map)

    def _keep_map(self, module, inputs, output):
        self.maps.append(output[1])

    def forward(self, x, pad):
        out, _ = self.attn(x, x, x, key_padding_mask=pad)
        return x + out
"""


def test_a_forward_hook_reads_the_weights_the_call_drops(tmp_path):
    # probe AM's FALSE01: attention rollout keeps the weights through a hook;
    # need_weights=False would hand it None
    assert _rows(ROLLOUT, ["MHA102"], tmp_path) == []
    unhooked = ROLLOUT.replace("        self.attn.register_forward_hook(self._keep_map)\n", "")
    assert _rows(unhooked, ["MHA102"], tmp_path) == [(14, 18, "MHA102")]


REGISTRY = """\
import torch
import torch.nn.functional as F
from torch import nn


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0):
    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)
    return torch.matmul(attn_weights, value), attn_weights


def sdpa_attention_forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None):
    out = F.scaled_dot_product_attention(
        query, key, value, attn_mask=attention_mask, dropout_p=dropout, scale=scaling
    )
    return out.transpose(1, 2), None


ATTENTION_FUNCTIONS = {"eager": eager_attention_forward, "sdpa": sdpa_attention_forward}


class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.scaling = config.head_dim**-0.5
        self.attention_dropout = config.attention_dropout

    def forward(self, q, k, v, attention_mask=None):
        attention_interface = eager_attention_forward
        if self.config._attn_implementation != "eager":
            attention_interface = ATTENTION_FUNCTIONS[self.config._attn_implementation]
        out, _ = attention_interface(
            self,
            q,
            k,
            v,
            attention_mask,
            dropout=0.0 if not self.training else self.attention_dropout,
            scaling=self.scaling,
        )
        return out
"""


def test_a_function_chosen_from_a_dict_of_functions_is_followed(tmp_path):
    # probe AM's AM22 and transformers' ``ALL_ATTENTION_FUNCTIONS`` pattern:
    # the dropout gated on self.training is right on every entry
    assert _rows(REGISTRY, ["MHA007"], tmp_path) == []
    ungated = REGISTRY.replace(
        "dropout=0.0 if not self.training else self.attention_dropout",
        "dropout=self.attention_dropout",
    )
    # the SDPA entry keeps dropout on in eval (the eager one gates it itself)
    assert _rows(ungated, ["MHA007"], tmp_path) == [(36, 18, "MHA007")]
    # a literal key picks its entry; a plain alias is the function
    literal = ungated.replace(
        "ATTENTION_FUNCTIONS[self.config._attn_implementation]", 'ATTENTION_FUNCTIONS["sdpa"]'
    )
    assert _rows(literal, ["MHA007"], tmp_path) == [(36, 18, "MHA007")]
    eager_only = ungated.replace(
        "ATTENTION_FUNCTIONS[self.config._attn_implementation]", 'ATTENTION_FUNCTIONS["eager"]'
    )
    assert _rows(eager_only, ["MHA007"], tmp_path) == []
    aliased = ungated.replace(
        "ATTENTION_FUNCTIONS[self.config._attn_implementation]", "sdpa_attention_forward"
    )
    assert _rows(aliased, ["MHA007"], tmp_path) == [(36, 18, "MHA007")]


DEEP = """\
import torch.nn as nn


class Enc(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.conv = nn.Conv1d(80, d, 3, padding=1)
        layer = nn.TransformerEncoderLayer(d, h, batch_first=True)
        self.layers = nn.TransformerEncoder(layer, 2)
        self.attn = nn.MultiheadAttention(d, h)


class Recognizer(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.encoder = Enc(d, h)

    def encode(self, mel):
        feats = self.encoder.conv(mel).permute(0, 2, 1)
        feats = feats.transpose(0, 1)
        return self.encoder.layers(feats)

    def pool(self, x):
        x = x.transpose(0, 1)  # (L, N, E)
        return self.encoder.attn(x, x, x, need_weights=False)[0]
"""


def test_a_module_reached_through_an_attribute_of_a_held_module(tmp_path):
    # probe AM's AM07: ``self.encoder.layers`` and ``self.encoder.conv``, two
    # attributes deep: the conv's (N, C, L) made (L, N, C) into a batch_first
    # encoder; the MultiheadAttention is fed sequence-first data (no MHA001)
    assert _rows(DEEP, ["MHA001", "MHA010"], tmp_path) == [(21, 16, "MHA010")]
    batch_first = DEEP.replace(
        "        x = x.transpose(0, 1)  # (L, N, E)\n", "        b, n, e = x.shape\n"
    )
    assert _rows(batch_first, ["MHA001", "MHA010"], tmp_path) == [
        (10, 21, "MHA001"),
        (21, 16, "MHA010"),
    ]


SPLATTED = """\
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, embed_dim=768, num_heads=12):
        super().__init__()
        self.attn = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]


def hybrid(**kwargs):
    return Net(embed_dim=640, num_heads=12, **kwargs)
"""


def test_sizes_given_by_keyword_beside_a_kwargs_splat_are_known(tmp_path):
    # probe AM's AM06 and AM29: the splat cannot give a keyword the call gives
    assert _rows(SPLATTED, ["MHA008"], tmp_path) == [(14, 12, "MHA008")]
    # a size left to the default may come from the splat: unknown
    left = SPLATTED.replace(
        "Net(embed_dim=640, num_heads=12, **kwargs)", "Net(embed_dim=640, **kwargs)"
    )
    assert _rows(left, ["MHA008"], tmp_path) == []
    # a positional splat leaves every position unknown
    starred = SPLATTED.replace("def hybrid(**kwargs):", "def hybrid(*args):").replace(
        "Net(embed_dim=640, num_heads=12, **kwargs)", "Net(*args, embed_dim=640, num_heads=12)"
    )
    assert _rows(starred, ["MHA008"], tmp_path) == []


def test_a_mask_read_by_key_from_a_helper_s_dict(tmp_path):
    # probe AM's AM01 and AM14: ``masks = build_masks(tokens)`` then ``masks["pad"]``,
    # the helper in this file or another; the other key is right
    pkg = write_package(
        tmp_path / "pkg",
        {
            "masks.py": 'def build_masks(tokens):\n    pad = tokens == 0\n    return {"pad": pad, "keep": ~pad}\n',
            "attn.py": DICT_CALLER,
        },
    )
    assert [(f.line, f.col, f.code) for f in analyze_file(str(pkg / "attn.py"), ["MHA002"])] == [
        (8, 12, "MHA002")
    ]
    one_file = DICT_CALLER.replace(
        "from .masks import build_masks\n",
        'def build_masks(tokens):\n    pad = tokens == 0\n    return {"pad": pad, "keep": ~pad}\n',
    )
    assert _rows(one_file, ["MHA002"], tmp_path) == [(10, 12, "MHA002")]


DICT_CALLER = """\
import torch.nn.functional as F

from .masks import build_masks


def attend(q, k, v, tokens):
    masks = build_masks(tokens)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=masks["pad"][:, None, None, :])


def attend_keep(q, k, v, tokens):
    masks = build_masks(tokens)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=masks["keep"][:, None, None, :])
"""

T5_BIAS = """\
import torch
import torch.nn.functional as F


def encode(q, bias, input_ids, attention_mask):
    ext = attention_mask[:, None, None, :].to(torch.float32)
    position_bias = bias + ext
    return F.scaled_dot_product_attention(q, q, q, attn_mask=position_bias)
"""


def test_a_float_keep_mask_folded_into_a_position_bias_is_still_added(tmp_path):
    # probe AM's AM12: T5's bias plus a 0/1 mask; nothing is masked
    assert _rows(T5_BIAS, ["MHA004"], tmp_path) == [(8, 12, "MHA004")]
    additive = T5_BIAS.replace(
        "    ext = attention_mask[:, None, None, :].to(torch.float32)\n",
        "    ext = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -1e9\n",
    )
    assert _rows(additive, ["MHA004"], tmp_path) == []


PROPERTY_MASK = """\
import torch
import torch.nn as nn


class Batch:
    def __init__(self, x, lengths):
        self.x = x
        self.lengths = lengths

    @property
    def padding(self):
        steps = torch.arange(self.x.shape[1])
        return (steps[None, :] >= self.lengths[:, None]).float()


class Model(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, h, batch_first=True)

    def forward(self, batch: Batch):
        x = batch.x
        return self.attn(x, x, x, key_padding_mask=batch.padding, need_weights=False)[0]
"""


def test_a_mask_from_a_property_of_a_parameter_annotated_with_its_class(tmp_path):
    # probe AM's AM08: a float 0/1 padding mask of ``batch: Batch``'s property
    assert _rows(PROPERTY_MASK, ["MHA004"], tmp_path) == [(23, 16, "MHA004")]
    as_bool = PROPERTY_MASK.replace(".float()", "")
    assert _rows(as_bool, ["MHA003", "MHA004"], tmp_path) == []


MODULE_HELPER = """\
import torch.nn as nn
import torch.nn.functional as F


class MaskKV(nn.Module):
    def forward(self, k, v, keep):
        m = keep[:, None, :, None].to(k.dtype)
        return k * m, v * m


class SensorAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.mask_kv = MaskKV()

    def forward(self, q, k, v, tokens):
        observed = tokens != 0
        k, v = self.mask_kv(k, v, observed)
        return F.scaled_dot_product_attention(q, k, v)
"""


def test_keys_and_values_zeroed_by_a_module_s_forward(tmp_path):
    # probe AM's AM27: the helper is an nn.Module held on self
    assert _rows(MODULE_HELPER, ["MHA015"], tmp_path) == [(19, 16, "MHA015")]
    scored = MODULE_HELPER.replace(
        "F.scaled_dot_product_attention(q, k, v)",
        "F.scaled_dot_product_attention(q, k, v, attn_mask=observed[:, None, None, :])",
    )
    assert _rows(scored, ["MHA015"], tmp_path) == []


ITEM_STORED = """\
import torch.nn as nn

PAD_ID = 0


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(64, 8, batch_first=True)

    def forward(self, x, ids):
        masks = {}
        masks["key_padding"] = ids != PAD_ID
        return self.attn(x, x, x, key_padding_mask=masks["key_padding"], need_weights=False)[0]
"""


def test_a_mask_stored_into_a_dict_by_key_and_read_back(tmp_path):
    # probe AM's AM17: ``masks["key_padding"] = ids != PAD_ID`` is a keep-mask
    assert _rows(ITEM_STORED, ["MHA003"], tmp_path) == [(14, 16, "MHA003")]
    assert _rows(ITEM_STORED.replace("ids != PAD_ID", "ids == PAD_ID"), ["MHA003"], tmp_path) == []
    # a store on some paths only leaves the dict unknown
    branched = ITEM_STORED.replace(
        '        masks["key_padding"] = ids != PAD_ID\n',
        '        if ids is not None:\n            masks["key_padding"] = ids != PAD_ID\n',
    )
    assert _rows(branched, ["MHA003"], tmp_path) == []


PARTIAL_EXPANSION = """\
import functools

import torch.nn as nn


def repeat_for_heads(mask, num_heads):
    return mask.repeat(num_heads, 1, 1)


class Layer(nn.Module):
    def __init__(self, d, nhead):
        super().__init__()
        self.nhead = nhead
        self.attn = nn.MultiheadAttention(d, nhead, batch_first=True)
        self.expand = functools.partial(repeat_for_heads, num_heads=nhead)

    def forward(self, tgt, memory, region_logits):
        outside = region_logits.sigmoid() < 0.5
        return self.attn(tgt, memory, memory, attn_mask=self.expand(outside), need_weights=False)[0]
"""


def test_a_head_expansion_held_as_a_partial_on_self(tmp_path):
    # probe AM's AM13: ``self.expand = partial(repeat_for_heads, num_heads=nhead)``
    assert _rows(PARTIAL_EXPANSION, ["MHA016"], tmp_path) == [(19, 16, "MHA016")]
    batch_major = PARTIAL_EXPANSION.replace(
        "mask.repeat(num_heads, 1, 1)", "mask.repeat_interleave(num_heads, dim=0)"
    )
    assert _rows(batch_major, ["MHA016"], tmp_path) == []


PROPERTY_EXPANSION = """\
import torch.nn as nn


class RegionAttention(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.mha = nn.MultiheadAttention(dim, num_heads, batch_first=True)
        self._blocked = None

    @property
    def attn_mask(self):
        return self._blocked.repeat(self.num_heads, 1, 1)

    def forward(self, x, region_ids):
        self._blocked = region_ids[:, :, None] != region_ids[:, None, :]
        return self.mha(x, x, x, attn_mask=self.attn_mask, need_weights=False)[0]
"""


def test_a_head_expansion_made_by_a_property(tmp_path):
    # probe AM's AM23: the property repeats a per-sample mask head-major
    assert _rows(PROPERTY_EXPANSION, ["MHA016"], tmp_path) == [(17, 16, "MHA016")]
    batch_major = PROPERTY_EXPANSION.replace(
        ".repeat(self.num_heads, 1, 1)", ".repeat_interleave(self.num_heads, dim=0)"
    )
    assert _rows(batch_major, ["MHA016"], tmp_path) == []


FORWARDER = """\
import torch.nn as nn


class Traced(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.inner = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, *args, **kwargs):
        return self.inner(*args, **kwargs)


class Layer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.mixer = Traced(dim, heads)

    def forward(self, x, pad):
        out, _ = self.mixer(x, x, x, key_padding_mask=pad)
        return x + out
"""


def test_a_wrapper_that_hands_every_argument_on_is_its_module(tmp_path):
    # probe AM's AM30: ``forward(self, *args, **kwargs)`` returning
    # ``self.inner(*args, **kwargs)``: the call is the MultiheadAttention's
    assert _rows(FORWARDER, ["MHA102"], tmp_path) == [(19, 18, "MHA102")]
    kept = FORWARDER.replace(
        "        out, _ = self.mixer(", "        out, w = self.mixer("
    ).replace("        return x + out", "        return x + out, w")
    assert _rows(kept, ["MHA102"], tmp_path) == []
    changed = FORWARDER.replace(
        "        return self.inner(*args, **kwargs)",
        "        kwargs['need_weights'] = False\n        return self.inner(*args, **kwargs)",
    )
    assert _rows(changed, ["MHA102"], tmp_path) == []


LITERAL_KIND = """\
from typing import Literal

import torch.nn.functional as F


def make_padding_mask(ids, pad_id, kind: Literal["keep", "ignore"] = "ignore"):
    if kind == "ignore":
        return ids == pad_id
    return ids != pad_id


def attend(q, k, v, ids):
    pad = make_padding_mask(ids, 0, kind="ignore")
    return F.scaled_dot_product_attention(q, k, v, attn_mask=pad[:, None, None, :])
"""


def test_a_builder_s_path_chosen_by_a_literal_argument(tmp_path):
    # probe AM's AM19: the call's ``kind="ignore"`` takes the first return only
    assert _rows(LITERAL_KIND, ["MHA002"], tmp_path) == [(14, 12, "MHA002")]
    keep = LITERAL_KIND.replace('kind="ignore")', 'kind="keep")')
    assert _rows(keep, ["MHA002"], tmp_path) == []
    # left to the default: the default decides
    default = LITERAL_KIND.replace(', kind="ignore")', ")")
    assert _rows(default, ["MHA002"], tmp_path) == [(14, 12, "MHA002")]
    # a kind not known at the call joins both paths: unknown
    handed = LITERAL_KIND.replace("def attend(q, k, v, ids):", "def attend(q, k, v, ids, kind):")
    handed = handed.replace('kind="ignore")', "kind=kind)")
    assert _rows(handed, ["MHA002"], tmp_path) == []


def test_a_builder_of_another_file_takes_the_path_a_literal_argument_chooses(tmp_path):
    # probe AM's AM19 as its package has it: the builder in masks.py
    masks, _, caller = LITERAL_KIND.partition("\n\n\ndef attend")
    pkg = write_package(
        tmp_path / "pkg",
        {
            "masks.py": masks.replace("import torch.nn.functional as F\n", ""),
            "attn.py": "import torch.nn.functional as F\n\nfrom .masks import make_padding_mask\n\n\n"
            "def attend" + caller + "\n\ndef attend_keep(q, k, v, ids):\n"
            '    keep = make_padding_mask(ids, 0, kind="keep")\n'
            "    return F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])\n",
        },
    )
    found = analyze_file(str(pkg / "attn.py"), ["MHA002"])
    assert [(f.line, f.col, f.code) for f in found] == [(8, 12, "MHA002")]
    assert "make_padding_mask() -> pkg/masks.py:7: ids == pad_id" in found[0].message


def test_a_property_of_a_batch_class_of_another_file(tmp_path):
    # probe AM's AM08 as its package has it: ``batch: Batch`` imported from batch.py
    batch, _, model = PROPERTY_MASK.partition("\n\n\nclass Model")
    pkg = write_package(
        tmp_path / "pkg",
        {
            "batch.py": batch + "\n",
            "model.py": "import torch.nn as nn\n\nfrom .batch import Batch\n\n\nclass Model"
            + model,
        },
    )
    found = analyze_file(str(pkg / "model.py"), ["MHA003", "MHA004"])
    assert [(f.line, f.col, f.code) for f in found] == [(13, 16, "MHA004")]
    assert "batch.padding -> pkg/batch.py:13" in found[0].message
    (pkg / "batch.py").write_text(batch.replace(".float()", "") + "\n")
    assert analyze_file(str(pkg / "model.py"), ["MHA003", "MHA004"]) == []


def test_keys_and_values_zeroed_by_a_module_of_another_file(tmp_path):
    # probe AM's AM27 across files: ``self.mask_kv = MaskKV()`` and a
    # ModuleDict's ``self.ops["mask_kv"]``, MaskKV in ops.py
    helper, _, user = MODULE_HELPER.partition("\n\n\nclass SensorAttention")
    user = "class SensorAttention" + user
    user = user.replace(
        "        self.mask_kv = MaskKV()\n",
        '        self.mask_kv = MaskKV()\n        self.ops = nn.ModuleDict({"mask_kv": MaskKV()})\n',
    )
    user += (
        "\n    def forward_keyed(self, q, k, v, tokens):\n"
        "        observed = tokens != 0\n"
        '        k, v = self.ops["mask_kv"](k, v, observed)\n'
        "        return F.scaled_dot_product_attention(q, k, v)\n"
    )
    head = "import torch.nn as nn\nimport torch.nn.functional as F\n\nfrom .ops import MaskKV\n\n\n"
    pkg = write_package(tmp_path / "pkg", {"ops.py": helper + "\n", "attn.py": head + user})
    found = analyze_file(str(pkg / "attn.py"), ["MHA015"])
    assert [(f.line, f.col, f.code) for f in found] == [(16, 16, "MHA015"), (21, 16, "MHA015")]


COLLATED = """\
import torch.nn as nn

PAD_ID = 0


def collate(ids):
    return {"input_ids": ids, "key_padding": ids != PAD_ID}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(64, 8, batch_first=True)

    def forward(self, x, batch):
        return self.attn(x, x, x, key_padding_mask=batch["key_padding"], need_weights=False)[0]


def step(x, ids):
    model = Model()
    return model(x, collate(ids))
"""


def test_a_mask_read_by_key_from_a_parameter_its_callers_fill(tmp_path):
    # probe AM's AM17: the collate function's dict, handed to the model
    assert _rows(COLLATED, ["MHA003"], tmp_path) == [(16, 16, "MHA003")]
    right = COLLATED.replace('"key_padding": ids != PAD_ID', '"key_padding": ids == PAD_ID')
    assert _rows(right, ["MHA003"], tmp_path) == []


ATTENTION_MODULE = """\
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)

    def forward(self, x, kv_source=None, attn_mask=None, is_causal=False):
        b, t, _ = x.shape
        src = x if kv_source is None else kv_source
        q = self.q(x).view(b, t, self.heads, -1).transpose(1, 2)
        k, v = self.kv(src).view(b, src.shape[1], 2, self.heads, -1).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal)
        return out.transpose(1, 2).reshape(b, t, -1)
"""

DECODER_LAYER = """\
import torch.nn as nn

from .modules import Attention


class DecoderLayer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.self_attn = Attention(dim, heads)
        self.cross_attn = Attention(dim, heads)

    def forward(self, x, memory, self_mask, cross_mask, is_causal=False):
        x = x + self.self_attn(x, attn_mask=self_mask, is_causal=is_causal)
        return x + self.cross_attn(x, kv_source=memory, attn_mask=cross_mask)


class Decoder(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.layer = DecoderLayer(dim, heads)

    def forward(self, x, memory, cross_mask):
        return self.layer(x, memory, None, cross_mask, is_causal=True)
"""


def test_the_cross_attention_s_mask_is_not_joined_to_the_self_attention_s_flag(tmp_path):
    # review 39's altamt (false MHA006): the second instance's call gives no is_causal
    pkg = write_package(
        tmp_path / "pkg", {"modules.py": ATTENTION_MODULE, "model.py": DECODER_LAYER}
    )
    assert analyze_file(str(pkg / "model.py"), ["MHA006"]) == []
    # the self-attention given a mask and is_causal=True is still the rule's
    (pkg / "model.py").write_text(
        DECODER_LAYER.replace(
            "self.layer(x, memory, None, cross_mask, is_causal=True)",
            "self.layer(x, memory, cross_mask, cross_mask, is_causal=True)",
        )
    )
    found = analyze_file(str(pkg / "model.py"), ["MHA006"])
    assert [(f.line, f.col, f.code) for f in found] == [(23, 16, "MHA006")]


CACHED = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, dim, heads, dropout):
        super().__init__()
        self.heads = heads
        self.dropout_p = dropout
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x, cache=None):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        total = k.size(2)
        is_causal = cache is None and t > 1
        attn_mask = None
        if cache is not None and t > 1:
            attn_mask = torch.ones(t, total, dtype=torch.bool).tril(total - t)
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=attn_mask, dropout_p=self.dropout_p if self.training else 0.0,
            is_causal=is_causal,
        )
"""

TYPED = """\
import torch
import torch.nn.functional as F


def attend(xq, xk, xv, mask=None):
    is_causal = (mask == "causal") if isinstance(mask, str) else False
    mask = mask if isinstance(mask, torch.Tensor) else None
    return F.scaled_dot_product_attention(xq, xk, xv, is_causal=is_causal, attn_mask=mask)
"""


def test_a_flag_and_a_mask_their_sources_keep_apart(tmp_path):
    # review 39's anthracite and lingua (false MHA006): ``cache is None`` against
    # ``cache is not None``; a string against a tensor
    assert _rows(CACHED, ["MHA006"], tmp_path) == []
    assert _rows(TYPED, ["MHA006"], tmp_path) == []
    both = CACHED.replace(
        "        if cache is not None and t > 1:", "        if cache is None and t > 1:"
    )
    assert _rows(both, ["MHA006"], tmp_path) == [(24, 16, "MHA006")]
    strings = TYPED.replace("isinstance(mask, torch.Tensor)", "isinstance(mask, str)")
    assert _rows(strings, ["MHA006"], tmp_path) == [(8, 12, "MHA006")]


SWARM = """\
import torch
import torch.nn as nn


class Swarm:
    def __init__(self, N=100, D=8, heads=4):
        self.xi = torch.randn(N, D)
        self.attention_xi = nn.MultiheadAttention(embed_dim=D, num_heads=heads)

    def evolution_of_xi(self):
        out, _ = self.attention_xi(self.xi, self.xi, self.xi, need_weights=False)
        return out

    def step(self, dt=0.01):
        self.xi = self.xi + dt * self.evolution_of_xi()
"""


def test_an_unbatched_state_updated_by_its_own_attention_stays_unbatched(tmp_path):
    # review 39's swarmalator (false MHA001): (N, D) fed unbatched; the Euler
    # step ``self.xi + dt * f()`` keeps it so
    assert _rows(SWARM, ["MHA001"], tmp_path) == []
    batched = SWARM.replace("torch.randn(N, D)", "torch.randn(4, N, D)  # (B, L, E)")
    assert _rows(batched, ["MHA001"], tmp_path) == [(8, 29, "MHA001")]


def test_a_wrapper_defined_in_a_package_s_init_opens_the_gate(tmp_path):
    # review 39's eole: ``from eole.ops import _sdpa``, the helper written in
    # ``eole/ops/__init__.py``; the module file names no attention word
    root = tmp_path / "eole"
    (root / "ops").mkdir(parents=True)
    (root / "modules").mkdir()
    for init in ("__init__.py", "modules/__init__.py"):
        (root / init).write_text("")
    (root / "ops" / "__init__.py").write_text(
        "import torch.nn.functional as F\n\n\n"
        "def _sdpa(q, k, v, attn_mask=None, dropout_p=0.0):\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p)\n"
    )
    user = root / "modules" / "mha.py"
    user.write_text(
        "import torch.nn as nn\n\nfrom eole.ops import _sdpa\n\n\n"
        "class SelfMHA(nn.Module):\n"
        "    def __init__(self, p=0.1):\n"
        "        super().__init__()\n"
        "        self.dropout_p = p\n\n"
        "    def forward(self, q, k, v, attn_mask=None):\n"
        "        return _sdpa(q, k, v, attn_mask=attn_mask, dropout_p=self.dropout_p)\n"
    )
    found = analyze_file(str(user), ["MHA007"])
    assert [(f.line, f.col, f.code) for f in found] == [(12, 16, "MHA007")]


GENERATED = """\
import torch
import torch.nn.functional as F


def attend(q, k, v, lengths):
    keep = torch.arange(k.shape[2])[None, :] < lengths[:, None]
    k, v = (t * keep[:, None, :, None] for t in (k, v))
    return F.scaled_dot_product_attention(q, k, v)
"""


def test_keys_and_values_masked_in_a_generator_expression(tmp_path):
    # probe AM's AM16: ``k, v = (t * keep[...] for t in (k, v))``
    assert _rows(GENERATED, ["MHA015"], tmp_path) == [(8, 12, "MHA015")]
    scored = GENERATED.replace(
        "F.scaled_dot_product_attention(q, k, v)",
        "F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])",
    )
    assert _rows(scored, ["MHA015"], tmp_path) == []
    reshaped = GENERATED.replace(
        "(t * keep[:, None, :, None] for t in (k, v))", "(t * 2.0 for t in (k, v))"
    )
    assert _rows(reshaped, ["MHA015"], tmp_path) == []


def test_a_dict_of_functions_of_another_file(tmp_path):
    # probe AM's AM22 as its package has it: ATTENTION_FUNCTIONS in attention_impls.py
    impls, _, user = REGISTRY.partition("\n\n\nclass Attention")
    user = (
        "from torch import nn\n\nfrom .attention_impls import ATTENTION_FUNCTIONS, "
        "eager_attention_forward\n\n\nclass Attention" + user
    ).replace(
        "dropout=0.0 if not self.training else self.attention_dropout",
        "dropout=self.attention_dropout",
    )
    pkg = write_package(tmp_path / "pkg", {"attention_impls.py": impls + "\n", "modeling.py": user})
    found = analyze_file(str(pkg / "modeling.py"), ["MHA007"])
    assert [(f.line, f.col, f.code) for f in found] == [(17, 18, "MHA007")]
    (pkg / "modeling.py").write_text(
        user.replace(
            "dropout=self.attention_dropout",
            "dropout=0.0 if not self.training else self.attention_dropout",
        )
    )
    assert analyze_file(str(pkg / "modeling.py"), ["MHA007"]) == []


def test_a_flag_and_a_mask_kept_apart_beside_a_star_import(tmp_path):
    # review 39's zuna xattn.py: ``from lingua.transformer import *`` makes
    # ``isinstance`` and ``str`` names of that import, read anew at each lookup
    pkg = write_package(
        tmp_path / "pkg",
        {
            "base.py": "import torch\n",
            "xattn.py": TYPED.replace("import torch\n", "from .base import *\nimport torch\n", 1),
        },
    )
    assert analyze_file(str(pkg / "xattn.py"), ["MHA006"]) == []
