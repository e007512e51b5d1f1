"""Probe W's misses, each a package of several files run through flake8 per
file, over the package and through ``check``: a mask reduced over its
features (``isnan(obs).any(-1)``), a mask cast to numbers before it is
multiplied into the scores, one construction of a GQA class among several,
queries tiled sequence-first beside batch-first memory, and token ids whose
padding mask says they are batch-first."""

from __future__ import annotations

from fixture_expect import ROOT, assert_package_runs, write_package
from flake8_mha.analysis.program.fills import KV
from flake8_mha.analysis.program.kv_scores import HANDWRITTEN
from flake8_mha.analysis.program.summaries import summarise
from flake8_mha.lint.engine import analyze_source


def test_a_missing_band_on_any_feature_hides_the_date():
    assert_package_runs(
        "fixtures/program_calls/reduced_masks", [("model.py", 19, 16, "MHA002")], select="MHA"
    )


def test_a_reduction_over_no_axis_is_no_mask():
    src = (
        "import torch\nimport torch.nn.functional as F\n"
        "def f(q, k, v, obs):\n"
        "    m = torch.isnan(obs).any()\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=m)\n"
    )
    assert analyze_source(src, "a.py", ["MHA002"]) == []


def test_a_keep_mask_cast_to_float_and_multiplied_into_the_scores():
    assert_package_runs(
        "fixtures/program_calls/cast_score_masks", [("model.py", 18, 16, "MHA012")], select="MHA"
    )


def test_a_count_divided_by_a_hop_is_still_a_count():
    src = (
        "import torch\nimport torch.nn.functional as F\n"
        "def f(q, k, v, n_samples, hop):\n"
        "    frames = n_samples // hop + 1\n"
        "    keep = torch.arange(k.size(2))[None, :] < frames[:, None]\n"
        "    return F.scaled_dot_product_attention(q, k, v, attn_mask=~keep[:, None, None, :])\n"
    )
    found = analyze_source(src, "a.py", ["MHA002"])
    assert [(f.code, f.line, f.col) for f in found] == [("MHA002", 6, 12)]
    # a count divided by another per-sample count is not one count per sample
    other = src.replace("n_samples // hop + 1", "n_samples // lengths").replace(
        "n_samples, hop", "n_samples, lengths"
    )
    assert analyze_source(other, "a.py", ["MHA002"]) == []


def test_one_construction_of_a_gqa_class_among_several():
    assert_package_runs(
        "fixtures/program_calls/gqa_instances", [("attention.py", 19, 16, "MHA014")], select="MHA"
    )


def test_constructions_that_all_divide_give_nothing(tmp_path):
    pkg = write_package(
        tmp_path / "pkg",
        {
            "attn.py": (ROOT / "fixtures/program_calls/gqa_instances/attention.py").read_text(),
            "model.py": "import torch.nn as nn\n\nfrom .attn import GQAttention\n\n\n"
            "class M(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.a = GQAttention(8, 2, 16)\n"
            "        self.b = GQAttention(6, 3, 16)\n",
        },
    )
    attn = pkg / "attn.py"
    assert analyze_source(attn.read_text(), str(attn), ["MHA014"]) == []


def test_queries_tiled_sequence_first_beside_batch_first_memory():
    assert_package_runs(
        "fixtures/program_layout/query_layouts", [("policy.py", 18, 26, "MHA010")], select="MHA"
    )


def test_inputs_that_disagree_on_a_module_whose_layout_is_not_stated_stay_unknown():
    src = (
        "import torch.nn as nn\n\n\n"
        "class P(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.attn = nn.MultiheadAttention(64, 8, batch_first=flag())\n"
        "        self.q = nn.Embedding(10, 64)\n\n"
        "    def forward(self, memory):\n"
        "        B, S, D = memory.shape\n"
        "        q = self.q.weight.unsqueeze(1).repeat(1, B, 1)\n"
        "        return self.attn(q, memory, memory)\n"
    )
    assert analyze_source(src, "a.py", ["MHA001", "MHA010"]) == []


def test_ids_compared_into_a_key_padding_mask_are_batch_first():
    assert_package_runs(
        "fixtures/program_layout/padded_ids",
        # steps.py: the embedding in a method, the mask from a helper of masks.py
        [("encoder.py", 18, 17, "MHA010"), ("steps.py", 25, 17, "MHA010")],
        select="MHA0,MHA1",
    )


def test_keys_of_an_einsum_pooling_multiplied_by_a_parameter():
    src = (
        "import math\nimport torch\n"
        "def pool(query, emb, keep):\n"
        "    k = emb * keep[..., None]\n"
        "    v = emb * keep[..., None]\n"
        '    scores = torch.einsum("d,bvcd->bvc", query, k) / math.sqrt(emb.size(-1))\n'
        "    w = scores.softmax(dim=-1)\n"
        '    return torch.einsum("bvc,bvcd->bvd", w, v)\n'
    )
    reach = summarise(src)["pool"]["reach"]
    assert reach[KV]["param"] == "keep"
    assert reach[KV]["ops"][-1] == [KV, "keys and values", HANDWRITTEN]


def test_queries_through_a_rotary_helper_keep_their_heads(tmp_path):
    # probe W's W08: a draft construction of 6 over 4 heads beside the main 8 over 2,
    # the queries and keys passed through ``rotary(...)`` before SDPA
    attention = (ROOT / "fixtures/program_calls/gqa_instances/attention.py").read_text()
    attention = attention.replace(
        "        k, v = kv.chunk(2, dim=1)\n",
        "        k, v = kv.chunk(2, dim=1)\n        q, k = rotary(q), rotary(k)\n",
    ).replace(
        "import torch.nn.functional as F\n",
        "import torch.nn.functional as F\n\nfrom .utils import rotary\n",
    )
    pkg = write_package(
        tmp_path / "pkg",
        {
            "utils.py": "def rotary(x, base=10000.0):\n    return x\n",
            "attention.py": attention,
            "config.py": (ROOT / "fixtures/program_calls/gqa_instances/config.py").read_text(),
            "model.py": (ROOT / "fixtures/program_calls/gqa_instances/model.py").read_text(),
        },
    )
    path = pkg / "attention.py"
    found = analyze_source(path.read_text(), str(path), ["MHA014"])
    assert [(f.code, f.line) for f in found] == [("MHA014", 22)]
    assert "6 query heads over 4" in found[0].message
