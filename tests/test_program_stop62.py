"""Misses of probe AD and later probes, and release reviews' findings,
mended in the thirty-third stop, each a package of several files run
through flake8 per file, over the package and through ``check``."""

from __future__ import annotations

import pathlib

from fixture_expect import (
    assert_package_runs,
    copied,
    flake8_in_project,
    write_package,
    source_rows as _rows,
)

from flake8_mha.lint.engine import analyze_file, analyze_source


def test_subclass_variants_keep_the_project_facts():
    # probe AD's AD14 (a subclass with a forward of its own), AD18 (a subclass
    # that only adds a method, built with the base's __init__) and AD19
    # (``functools.partial`` of a project class bound in the calling file)
    found = assert_package_runs(
        "fixtures/program_calls/subclass_variants",
        [
            ("attention.py", 22, 15, "MHA014"),
            ("attention.py", 33, 16, "MHA005"),
            ("model.py", 21, 39, "MHA008"),
        ],
        select="MHA",
    )
    assert found[0].msg.startswith(
        "enable_gqa=True with 12 query heads over 5 key/value heads, which do not divide"
    )
    assert found[1].msg.endswith(
        "every call of DayAggregator.forward in the project (1) has mask=None"
    )
    assert found[2].msg.startswith("embed_dim=72 is not divisible by num_heads=16")
    assert found[2].msg.endswith(
        "this call builds it through FeederBlock() at"
        " fixtures/program_calls/subclass_variants/attention.py:39"
    )


_AGGREGATOR = (
    "import torch.nn as nn\n"
    "class Agg(nn.Module):\n"
    "    def __init__(self, dim, heads):\n"
    "        super().__init__()\n"
    "        layer = nn.TransformerEncoderLayer(dim, heads, batch_first=True)\n"
    "        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)\n"
    "    def forward(self, x, mask=None):\n"
    "        return self.enc(x, mask=mask, is_causal=True)\n"
    "{sub}"
    "class Net(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.agg = Agg(32, 4)\n"
    "    def forward(self, x):\n"
    "        return self.agg(x)\n"
)


def test_a_subclass_with_its_own_forward_leaves_the_base_calls_settled(tmp_path):
    own = (
        "class Masked(Agg):\n"
        "    def forward(self, x, mask=None):\n"
        "        m = nn.Transformer.generate_square_subsequent_mask(x.size(1))\n"
        "        return self.enc(x, mask=m, is_causal=True)\n"
    )
    assert _rows(_AGGREGATOR.format(sub=own), {"MHA005"}, tmp_path) == [(8, 16, "MHA005")]
    assert _rows(_AGGREGATOR.format(sub=""), {"MHA005"}, tmp_path) == [(8, 16, "MHA005")]


def test_a_subclass_that_may_run_the_base_forward_unsettles_its_calls(tmp_path):
    # its instances run Agg.forward with masks the project does not show
    inherited = "class Tagged(Agg):\n    def extra_repr(self):\n        return 'tagged'\n"
    calls_super = (
        "class Masked(Agg):\n"
        "    def forward(self, x, mask=None):\n"
        "        return super().forward(x, mask)\n"
    )
    assert _rows(_AGGREGATOR.format(sub=inherited), {"MHA005"}, tmp_path) == []
    assert _rows(_AGGREGATOR.format(sub=calls_super), {"MHA005"}, tmp_path) == []


_GROUPED = (
    "import torch.nn as nn\n"
    "import torch.nn.functional as F\n"
    "class GQA(nn.Module):\n"
    "    def __init__(self, d, h, kv):\n"
    "        super().__init__()\n"
    "        self.h, self.kv = h, kv\n"
    "        self.q = nn.Linear(d, d)\n"
    "        self.k = nn.Linear(d, kv * (d // h))\n"
    "    def forward(self, x):\n"
    "        b, n, d = x.shape\n"
    "        q = self.q(x).view(b, n, self.h, -1).transpose(1, 2)\n"
    "        k = self.k(x).view(b, n, self.kv, -1).transpose(1, 2)\n"
    "        return F.scaled_dot_product_attention(q, k, k, enable_gqa=True)\n"
    "{sub}"
    "class Net(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.attn = GQA(96, 12, 4)\n"
    "{built}"
)


def test_a_subclass_without_an_init_is_built_with_the_base_parameters(tmp_path):
    tagged = "class Tagged(GQA):\n    def extra_repr(self):\n        return 'tagged'\n"
    # never built: the base's constructions settle its head counts (12 over 4)
    assert _rows(_GROUPED.format(sub=tagged, built=""), {"MHA014"}, tmp_path) == []
    # built with 5 key/value heads: a construction of the base
    bad = "        self.more = Tagged(96, 12, 5)\n"
    assert _rows(_GROUPED.format(sub=tagged, built=bad), {"MHA014"}, tmp_path) == [
        (13, 16, "MHA014")
    ]
    # a subclass with an __init__ of its own that does not hand its sizes on plainly
    own_init = "class Wide(GQA):\n    def __init__(self, *args):\n        super().__init__(*args)\n"
    assert (
        _rows(
            _GROUPED.format(sub=own_init, built=bad.replace("Tagged", "Wide")), {"MHA014"}, tmp_path
        )
        == []
    )


def test_a_dataclass_subclass_is_not_taken_for_the_base_init(tmp_path):
    decorated = (
        "import dataclasses\n@dataclasses.dataclass\nclass Tagged(GQA):\n    note: str = ''\n"
    )
    bad = "        self.more = Tagged(96, 12, 5)\n"
    assert _rows(_GROUPED.format(sub=decorated, built=bad), {"MHA014"}, tmp_path) == []


_BLOCK = (
    "from functools import partial\n"
    "import torch.nn as nn\n"
    "class Block(nn.Module):\n"
    "    def __init__(self, d, n_heads):\n"
    "        super().__init__()\n"
    "        self.attn = nn.MultiheadAttention(d, n_heads, batch_first=True)\n"
    "make = partial(Block, n_heads={heads})\n"
    "block = make(72)\n"
)


def test_a_partial_of_a_project_class_is_a_construction_of_it(tmp_path):
    assert _rows(_BLOCK.format(heads=16), {"MHA008"}, tmp_path) == [(8, 9, "MHA008")]
    assert _rows(_BLOCK.format(heads=8), {"MHA008"}, tmp_path) == []
    # the call's own keyword overrides the partial's
    assert (
        _rows(
            _BLOCK.format(heads=16).replace("make(72)", "make(72, n_heads=8)"), {"MHA008"}, tmp_path
        )
        == []
    )


def test_class_picked_in_the_expression_that_builds_it():
    # probe AD's extra miss: ``self.mix = (GatedMix if gated else PlainMix)()``;
    # the chain names the class the default of ``gated`` picks
    found = assert_package_runs(
        "fixtures/program_calls/class_choice_inline",
        [("model.py", 19, 13, "MHA002")],
        select="MHA",
    )
    assert found[0].msg.endswith(
        "the call reaches scaled_dot_product_attention at"
        " fixtures/program_calls/class_choice_inline/kernels.py:9"
        " through SpeakerBlock.forward() -> PlainMix.forward()"
    )


def test_a_list_of_encoders_a_factory_builds_gets_the_mask():
    # probe AD's AD22: ``nn.ModuleList([build_encoder(...) ...])``, a loop over it
    found = assert_package_runs(
        "fixtures/program_calls/factory_encoder_lists",
        [("model.py", 15, 16, "MHA004")],
        select="MHA",
    )
    assert found[0].msg.endswith(
        "the call reaches TransformerEncoder's mask at"
        " fixtures/program_calls/factory_encoder_lists/blocks.py:18 through TemporalStack.forward()"
    )


def test_a_bias_added_by_a_helper_beside_the_attention_is_judged_at_the_call():
    # probe AD's AD09: ``scores = add_bias(scores, bias)`` with ``add_bias`` in the
    # callee's own file; the caller in another file hands a float 0/1 keep-mask
    found = assert_package_runs(
        "fixtures/program_calls/bias_helpers_beside",
        [("blocks.py", 10, 12, "MHA004")],
        select="MHA",
    )
    assert found[0].msg.startswith(
        "mask from line 9 (adj > 0) is a float32 0/1 keep-mask added to the attention scores"
    )
    assert found[0].msg.endswith(
        "the call reaches scores + mask at"
        " fixtures/program_calls/bias_helpers_beside/attention.py:12 through attend()"
    )


_ZEROED = (
    "import torch\n"
    "def attend(q, k, v, {param}):\n"
    "    k = k.masked_fill({cond}, 0.0)\n"
    "    v = v.masked_fill({cond}, 0.0)\n"
    "    scores = torch.matmul(q, k.transpose(1, 2)) / 8.0\n"
    "    return torch.matmul(scores.softmax(dim=-1), v)\n"
)


def test_keys_zero_filled_where_a_mask_by_its_name_is_false(tmp_path):
    # review 32's linformer-pytorch: ``K.masked_fill_(~mask, 0.0)`` with
    # ``mask = input_mask[:, :, None]``, nothing masking the scores
    for param, cond in (
        ("input_mask", "~input_mask[:, :, None]"),
        ("mask", "mask == 0"),
        ("keep", "~keep"),
        ("keep", "keep.logical_not()"),
    ):
        src = _ZEROED.format(param=param, cond=cond)
        assert _rows(src, {"MHA015"}, tmp_path) == [(3, 9, "MHA015"), (4, 9, "MHA015")], cond
    # not a mask by its name, or a fill that is not zero: silent
    assert _rows(_ZEROED.format(param="gate", cond="~gate"), {"MHA015"}, tmp_path) == []
    src = _ZEROED.format(param="mask", cond="~mask").replace("0.0)", "1.0)")
    assert _rows(src, {"MHA015"}, tmp_path) == []
    # the scores masked too: silent
    masked = _ZEROED.format(param="keep", cond="~keep").replace(
        "/ 8.0\n", "/ 8.0\n    scores = scores.masked_fill(~keep, float('-inf'))\n"
    )
    assert _rows(masked, {"MHA015"}, tmp_path) == []


def test_a_keep_parameter_is_judged_at_its_calls_or_by_its_name_without_one(tmp_path):
    src = _ZEROED.format(param="keep", cond="~keep").replace("masked_fill(~keep, 0.0)", "mul(keep)")
    assert _rows(src, {"MHA015"}, tmp_path) == [(3, 9, "MHA015"), (4, 9, "MHA015")]
    called = src + "def run(q, k, v, tokens):\n    return attend(q, k, v, tokens != 0)\n"
    assert _rows(called, {"MHA015"}, tmp_path) == [(8, 12, "MHA015")]


def test_kv_heads_tiled_by_an_einops_pattern_counted_from_the_right(tmp_path):
    # review 32's ring-attention-pytorch: ``'... h d -> ... (g h) d'``
    src = (
        "import torch.nn.functional as F\n"
        "from einops import repeat\n"
        "def attend(q, k, v):\n"
        "    groups = q.shape[-2] // k.shape[-2]\n"
        "    k, v = map(lambda t: repeat(t, '{pattern}', g=groups), (k, v))\n"
        "    return F.scaled_dot_product_attention(q, k, v)\n"
    )
    tiled = src.format(pattern="... h d -> ... (g h) d")
    assert _rows(tiled, {"MHA904"}, tmp_path) == [(5, 26, "MHA904")]
    grouped = src.format(pattern="... h d -> ... (h g) d")
    assert _rows(grouped, {"MHA904"}, tmp_path) == []
    # the axis before the ellipsis counted from the left, as before
    assert _rows(src.format(pattern="b h ... -> b (g h) ..."), {"MHA904"}, tmp_path) == [
        (5, 26, "MHA904")
    ]


_CHOSEN = (
    "import torch\n"
    "import torch.nn as nn\n"
    "import torch.nn.functional as F\n"
    "class Plain(nn.Module):\n"
    "    def forward(self, q, k, v, m):\n"
    "        return F.scaled_dot_product_attention(q, k, v, attn_mask=m[:, None, None, :])\n"
    "class Gated(Plain):\n"
    "    def forward(self, q, k, v, m):\n"
    "        out = F.scaled_dot_product_attention(q, k, v, attn_mask=m[:, None, None, :])\n"
    "        return out * 0.5\n"
    "class Block(nn.Module):\n"
    "    def __init__(self, gated=False):\n"
    "        super().__init__()\n"
    "        {build}\n"
    "    def forward(self, q, k, v, m):\n"
    "        return self.mix(q, k, v, m)\n"
    "class Net(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.stack = Block()\n"
    "    def forward(self, q, k, v, lengths):\n"
    "        pad = torch.arange(k.size(2))[None, :] >= lengths[:, None]\n"
    "        return self.stack(q, k, v, pad)\n"
)


def test_a_mask_through_one_of_two_classes_is_reported_once_at_the_call(tmp_path):
    # probe AD's MSG_AD01: reported at the call, naming the class the default
    # picks, and not again at the other class's SDPA call
    for build in (
        "self.mix = (Gated if gated else Plain)()",
        "cls = Gated if gated else Plain; self.mix = cls()",
    ):
        path = tmp_path / "t.py"
        source = _CHOSEN.replace("{build}", build)
        path.write_text(source)
        found = analyze_source(source, str(path), {"MHA002"})
        assert [(f.line, f.col, f.code) for f in found] == [(23, 16, "MHA002")], build
        assert found[0].message.endswith(
            "the call reaches scaled_dot_product_attention at t.py:6"
            " through Block.forward() -> Plain.forward()"
        )


def test_a_mask_handed_down_through_a_stage_is_none_in_every_block():
    # probe AE's AE02: model -> stage (a loop over a ModuleList) -> block, and a
    # block built and called on the spot (``DecoderBlock(32, 4)(x)``)
    found = assert_package_runs(
        "fixtures/program_calls/handed_down_masks",
        [("blocks.py", 12, 18, "MHA005")],
        select="MHA",
    )
    assert found[0].msg.endswith(
        "every call of DecoderBlock.forward in the project (2) has attn_mask=None"
    )


def test_each_construction_of_a_layer_that_hands_on_its_sizes_is_read_on_its_own():
    # probe AE's AE17: two layers built with 4 and 2 key/value heads for 6
    found = assert_package_runs(
        "fixtures/program_calls/constructions_apart",
        [("attention.py", 19, 15, "MHA014")],
        select="MHA",
    )
    assert found[0].msg.endswith(
        "one construction of GQASelfAttention in the project passes dim=48, heads=6, kv_heads=4"
    )


def test_a_softmax_helper_of_another_file_over_einsum_scores():
    # probe AE's AE19: ``gated_softmax(scores, keep)`` (the rule page's example)
    # on DIN's ``einsum("bd,btd->bt", ...)`` scores, the weights used by einsum
    found = assert_package_runs(
        "fixtures/program_calls/gated_helpers",
        [("layers.py", 17, 13, "MHA012")],
        select="MHA",
    )
    assert found[0].msg.endswith(
        "the call reaches scores * keep at fixtures/program_calls/gated_helpers/utils.py:7"
        " through gated_softmax()"
    )


def test_a_bare_n_indexed_per_sample_against_an_arange_is_a_count(tmp_path):
    # probe AE's AE10: ``arange(S)[None, :] < n[:, None]``, True on the real items
    src = (
        "import torch\n"
        "import torch.nn.functional as F\n"
        "def f(q, k, v, n):\n"
        "    keep = torch.arange(k.size(2))[None, :] < {n}\n"
        "    m = keep[:, None, :, None].to(k.dtype)\n"
        "    return F.scaled_dot_product_attention(q, k * m, v * m)\n"
    )
    assert _rows(src.replace("{n}", "n[:, None]"), {"MHA015"}, tmp_path) == [(6, 12, "MHA015")]
    # unshaped, ``n`` may be one bound for every sample: unknown
    assert _rows(src.replace("{n}", "n"), {"MHA015"}, tmp_path) == []


_MIXIN = (
    "import torch.nn as nn\n"
    "import torch.nn.functional as F\n"
    "class SDPAMixin:\n"
    "    attn_dropout = 0.1\n"
    "    def sdpa(self, q, k, v):\n"
    "        return F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_dropout)\n"
    "class SelfAttention(SDPAMixin, nn.Module):\n"
    "    def forward(self, q, k, v):\n"
    "        return self.sdpa(q, k, v)\n"
)


def test_a_mixin_mixed_only_into_modules_is_judged_as_a_module(tmp_path):
    # probe AE's AE14: dropout of a mixin's SDPA stays on after model.eval()
    assert _rows(_MIXIN, {"MHA007"}, tmp_path) == [(6, 16, "MHA007")]
    # also mixed into a class that is no module: not sure it runs on one
    other = _MIXIN + "class Exporter(SDPAMixin):\n    training = False\n"
    assert _rows(other, {"MHA007"}, tmp_path) == []
    # mixed into nothing: as before
    alone = _MIXIN.split("class SelfAttention")[0]
    assert _rows(alone, {"MHA007"}, tmp_path) == []


def test_keys_masked_by_a_pair_helper_of_another_file_are_judged_at_the_call():
    # probe AE's AE10, probe AD's AD10/AD28 message: ``k, v = apply_cloud(k, v,
    # clear)`` imported; the caller's keep-mask is judged where it is made
    found = assert_package_runs(
        "fixtures/program_calls/kv_pair_helpers_apart",
        [("model.py", 20, 13, "MHA015")],
        select="MHA",
    )
    assert found[0].msg.startswith(
        "mask from line 19 (torch.isfinite(obs).all(-1) & (dates < n_date...) is a keep-mask"
    )
    assert found[0].msg.endswith(
        "the call reaches scaled_dot_product_attention's keys and values at"
        " fixtures/program_calls/kv_pair_helpers_apart/attention.py:25"
        " through CloudGatedAttention.forward()"
    )


def test_an_edit_of_the_pair_helper_changes_the_finding_with_the_cache_on(tmp_path):
    (tmp_path / "setup.cfg").write_text("[flake8]\n")
    pkg = copied(pathlib.Path("fixtures/program_calls/kv_pair_helpers_apart"), tmp_path)

    def run():
        return flake8_in_project(tmp_path, f"{pkg.name}/model.py", "MHA015")

    assert run() == (1, [[f"{pkg.name}/model.py:20:13:", "MHA015"]])
    utils = pkg / "utils.py"
    text = utils.read_text()
    utils.write_text(text.replace("return k * m, v * m", "return k, v"))
    assert run() == (0, [])
    utils.write_text(text)
    assert run() == (1, [[f"{pkg.name}/model.py:20:13:", "MHA015"]])


_HEAD = (
    "import torch.nn as nn\n"
    "import torch.nn.functional as F\n"
    "class Head(nn.Module):\n"
    "    def __init__(self, dropout=0.0):\n"
    "        super().__init__()\n"
    "        self.dropout = dropout\n"
    "    def forward(self, x):\n"
    "        return F.scaled_dot_product_attention(x, x, x, dropout_p=self.dropout)\n"
)


def test_a_construction_built_only_when_none_is_handed_in_settles_nothing(tmp_path):
    # review 33's transformer-builder: ``nn.ModuleList(heads) or nn.ModuleList([Head()])``;
    # the heads a user hands in are built outside the project, with any dropout
    def found(name, build):
        multi = (
            "import torch.nn as nn\n"
            "from .head import Head\n"
            "class Multi(nn.Module):\n"
            "    def __init__(self, heads=None):\n"
            "        super().__init__()\n"
            f"        self.heads = {build}\n"
        )
        pkg = write_package(tmp_path / name / "pkg", {"head.py": _HEAD, "multi.py": multi})
        return [(f.code, f.line, f.col) for f in analyze_file(str(pkg / "head.py"), ["MHA007"])]

    assert found("or", "nn.ModuleList(heads) or nn.ModuleList([Head()])") == [("MHA007", 8, 16)]
    assert found("ifexp", "heads if heads is not None else nn.ModuleList([Head()])") == [
        ("MHA007", 8, 16)
    ]
    # every construction the project makes leaves dropout at 0: silent
    assert found("plain", "nn.ModuleList([Head()])") == []
    # built under a test of None with known arguments: still the project's
    assert found("guarded", "nn.ModuleList([Head()]) if heads is None else None") == []


def test_a_class_method_that_calls_cls_builds_the_class():
    # probe AF's AF04: ``return cls(cfg.D_MODEL, cfg.N_HEADS)`` in a @classmethod
    found = assert_package_runs(
        "fixtures/program_calls/classmethod_builders",
        [("layers.py", 16, 16, "MHA008")],
        select="MHA",
    )
    assert found[0].msg == (
        "d_model=200 is not divisible by nhead=6: TransformerEncoderLayer raises at"
        " construction; this call builds it through EncoderWrapper() at"
        " fixtures/program_calls/classmethod_builders/layers.py:11"
    )


_BASE_DEFAULT = (
    "import torch.nn as nn\n"
    "import torch.nn.functional as F\n"
    "class Base(nn.Module):\n"
    "    attn_p: float = 0.0\n"
    "    def attend(self, q, k, v):\n"
    "        return F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_p)\n"
    "class Sensor(Base):\n"
    "    def __init__(self, p={p}):\n"
    "        super().__init__()\n"
    "        self.attn_p = {value}\n"
)


def test_a_class_default_is_joined_with_what_subclasses_set_on_their_instances(tmp_path):
    # probe AF's AF06: the base's ``attn_p: float = 0.0`` hid the subclass's 0.2
    src = _BASE_DEFAULT.format(p="0.2", value="p")
    assert _rows(src, {"MHA007"}, tmp_path) == [(6, 16, "MHA007")]
    assert _rows(_BASE_DEFAULT.format(p="0.2", value="0.2"), {"MHA007"}, tmp_path) == [
        (6, 16, "MHA007")
    ]
    # the subclass keeps it at 0 too: still never on
    assert _rows(_BASE_DEFAULT.format(p="0.0", value="0.0"), {"MHA007"}, tmp_path) == []


_PADDING = (
    "import torch\n"
    "import torch.nn.functional as F\n"
    "def f(q, k, v, n_utts):\n"
    "{made}"
    "    return F.scaled_dot_product_attention(q, k, v, attn_mask=pad[:, None, None, :])\n"
)


def test_padding_from_an_expanded_arange_or_a_filled_bool_tensor(tmp_path):
    # probe AF's AF21
    expanded = "    pad = torch.arange(k.size(2)).expand(n_utts.size(0), -1) >= n_utts[:, None]\n"
    assert _rows(_PADDING.format(made=expanded), {"MHA002"}, tmp_path) == [(5, 12, "MHA002")]
    filled = (
        "    pos = torch.arange(k.size(2))[None, :]\n"
        "    pad = torch.zeros(n_utts.size(0), k.size(2), dtype=torch.bool)\n"
        "    pad = pad.masked_fill(pos >= n_utts[:, None], True)\n"
    )
    assert _rows(_PADDING.format(made=filled), {"MHA002"}, tmp_path) == [(7, 12, "MHA002")]
    # the same filled into ones: the inverse, a keep-mask, right for SDPA
    kept = filled.replace("torch.zeros", "torch.ones").replace(", True)", ", False)")
    assert _rows(_PADDING.format(made=kept), {"MHA002"}, tmp_path) == []
    # a bool tensor of zeros filled with zeros where a mask says: unknown, silent
    nothing = filled.replace(", True)", ", False)")
    assert _rows(_PADDING.format(made=nothing), {"MHA002"}, tmp_path) == []
