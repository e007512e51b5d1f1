"""Misses of probes AD, AE and AF mended in the thirty-fourth stop, each a
package of several files run through flake8 per file, over the package and
through ``check``, and the one-file forms beside them."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs, copied, flake8_in_project, source_rows as _rows

from flake8_mha.lint.engine import analyze_source


def test_choices_the_constructions_fix_are_followed():
    # probe AD's AD26 (a mask maker chosen by a flag no construction sets), AD07
    # (a class handed to ``__init__``, its default and another's) and probe
    # AF's AF15 (a tiling helper chosen by a flag left to its default)
    found = assert_package_runs(
        "fixtures/program_calls/choices_fixed",
        [
            ("layers.py", 20, 13, "MHA002"),
            ("layers.py", 36, 13, "MHA002"),
            ("layers.py", 65, 16, "MHA016"),
            ("layers.py", 104, 16, "MHA012"),
        ],
        select="MHA",
    )
    assert found[0].msg.startswith(
        "mask from line 20 (self.causal() -> fixtures/program_calls/choices_fixed/masks.py:10:"
        " torch.triu("
    )
    # built both ways: judged per construction, the message names the one
    assert found[1].msg.endswith(
        "one construction of SubtitleRefiner in the project passes max_len=64, keep_style=False"
    )
    assert found[2].msg.startswith(
        "`self.expand(struct, self.num_heads)` repeats the mask head-major"
    )
    assert found[3].msg.endswith(
        "the call reaches scores * mask at fixtures/program_calls/choices_fixed/layers.py:85"
        " through NeighbourAttention.forward()"
    )


_REFINER = (
    "import torch\n"
    "import torch.nn as nn\n"
    "import torch.nn.functional as F\n"
    "class Ignore:\n"
    "    def __init__(self, n):\n"
    "        self.tri = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)\n"
    "    def __call__(self, n):\n"
    "        return self.tri[:n, :n]\n"
    "class Keep:\n"
    "    def __init__(self, n):\n"
    "        self.tri = torch.tril(torch.ones(n, n, dtype=torch.bool))\n"
    "    def __call__(self, n):\n"
    "        return self.tri[:n, :n]\n"
    "class Refiner(nn.Module):\n"
    "    def __init__(self, n=32, keep_style=False):\n"
    "        super().__init__()\n"
    "        self.causal = Keep(n) if keep_style else Ignore(n)\n"
    "    def forward(self, q, k, v):\n"
    "        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.causal(q.size(-2)))\n"
    "class Net(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "{built}"
)


def test_a_mask_maker_chosen_by_a_flag_is_the_one_the_constructions_pick(tmp_path):
    left = "        self.r = Refiner()\n"
    assert _rows(_REFINER.format(built=left), {"MHA002"}, tmp_path) == [(19, 16, "MHA002")]
    keep = "        self.r = Refiner(keep_style=True)\n"
    assert _rows(_REFINER.format(built=keep), {"MHA002"}, tmp_path) == []
    # built both ways: each construction on its own, the ignore-mask one reported
    both = left + keep.replace("self.r", "self.s")
    assert _rows(_REFINER.format(built=both), {"MHA002"}, tmp_path) == [(19, 16, "MHA002")]
    both_keep = keep + keep.replace("self.r", "self.s").replace("True", "1")
    assert _rows(_REFINER.format(built=both_keep), {"MHA002"}, tmp_path) == []


_LOCAL = (
    "import torch\n"
    "import torch.nn as nn\n"
    "class Plain(nn.Module):\n"
    "    def forward(self, q, k, v, valid):\n"
    "        s = q @ k.transpose(-2, -1)\n"
    "        s = s * valid[:, None, :]\n"
    "        return s.softmax(dim=-1) @ v\n"
    "class Filled(Plain):\n"
    "    def forward(self, q, k, v, valid):\n"
    "        s = q @ k.transpose(-2, -1)\n"
    "        s = s.masked_fill(~valid[:, None, :], float('-inf'))\n"
    "        return s.softmax(dim=-1) @ v\n"
    "class Block(nn.Module):\n"
    "    def __init__(self, local_cls={default}):\n"
    "        super().__init__()\n"
    "        self.local = local_cls()\n"
    "    def forward(self, x, lengths):\n"
    "        valid = torch.arange(x.size(1))[None, :] < lengths[:, None]\n"
    "        return self.local(x, x, x, valid)\n"
    "class Net(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.a = Block()\n"
    "        self.b = Block(local_cls=Filled)\n"
)


def test_a_class_handed_to_init_runs_for_each_construction(tmp_path):
    # one construction leaves the default (the product), one hands the fill; the
    # mask is judged at the call that hands it
    # the product is still judged (a correct sibling never hides a wrong one)
    assert _rows(_LOCAL.format(default="Plain"), {"MHA012"}, tmp_path) == [(19, 16, "MHA012")]
    # every construction runs the fill: nothing to report
    only_filled = _LOCAL.format(default="Filled").replace("        self.a = Block()\n", "")
    assert _rows(only_filled, {"MHA012"}, tmp_path) == []


def test_a_registry_of_another_file_reaches_each_of_its_classes():
    # probe AE's AE03 and AE04: ``MIXERS[kind](dim, heads)`` of a registry in
    # another file, whose classes reach different sinks; the calling file names
    # no attention word (the project-aware gate lets it in by the registry)
    found = assert_package_runs(
        "fixtures/program_calls/registry_kinds",
        [("model.py", 22, 17, "MHA004"), ("model.py", 22, 17, "MHA012")],
        select="MHA",
    )
    by_code = {f.code: f.msg for f in found}
    assert by_code["MHA004"].endswith(
        "the call reaches scores + mask at fixtures/program_calls/registry_kinds/kinds.py:34"
        " through PeakBlock.forward() -> BiasedAttention.forward()"
    )
    assert by_code["MHA012"].endswith(
        "the call reaches scores * mask at fixtures/program_calls/registry_kinds/kinds.py:26"
        " through PeakBlock.forward() -> ScaledAttention.forward()"
    )


def test_instances_a_class_method_builds_are_constructions_and_calls():
    # probe AF's AF03 (a wrapper built by ``EncoderWrapper.from_config()``, then
    # called with a keep-mask) and AF17 (head counts a class method builds from
    # a config module, the class also built that way in another file)
    found = assert_package_runs(
        "fixtures/program_calls/classmethod_instances",
        [("layers.py", 44, 16, "MHA014"), ("model.py", 20, 13, "MHA003")],
        select="MHA",
    )
    by_code = {f.code: f.msg for f in found}
    assert by_code["MHA014"].endswith(
        "one construction of TileAttention in the project passes dim=96, num_heads=12,"
        " num_kv_heads=5"
    )
    assert by_code["MHA003"].endswith(
        "the call reaches TransformerEncoder's src_key_padding_mask at"
        " fixtures/program_calls/classmethod_instances/layers.py:22 through"
        " EncoderWrapper.forward()"
    )


_BUILDER = (
    "import torch.nn as nn\n"
    "class Wrapper(nn.Module):\n"
    "    def __init__(self, d, h):\n"
    "        super().__init__()\n"
    "        layer = nn.TransformerEncoderLayer(d, h, 128, batch_first=True)\n"
    "        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)\n"
    "    @classmethod\n"
    "    def from_config(cls):\n"
    "        {body}\n"
    "    def forward(self, x, mask=None):\n"
    "        return self.encoder(x, src_key_padding_mask=mask)\n"
    "class Model(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.encoder = Wrapper.from_config()\n"
    "    def forward(self, x, ids):\n"
    "        return self.encoder(x, mask=ids != 0)\n"
)


def test_a_class_method_that_returns_its_class_builds_an_instance(tmp_path):
    assert _rows(_BUILDER.format(body="return cls(64, 4)"), {"MHA003"}, tmp_path) == [
        (17, 16, "MHA003")
    ]
    # a class method that returns something else builds nothing known
    other = "return nn.Identity()"
    assert _rows(_BUILDER.format(body=other), {"MHA003"}, tmp_path) == []


def test_a_partial_bound_to_the_instance_own_rate_is_judged_at_the_call():
    # probe AF's AF22: ``partial(F.sdpa, dropout_p=self.attn_dropout)`` stored in
    # ``__init__``; a construction with rate 0 and a gated override stay silent
    found = assert_package_runs(
        "fixtures/program_calls/partial_own_dropout",
        [("layers.py", 20, 13, "MHA007")],
        select="MHA",
    )
    assert found[0].msg.endswith(
        "the call reaches scaled_dot_product_attention at"
        " fixtures/program_calls/partial_own_dropout/layers.py:15 through"
        " functools.partial(scaled_dot_product_attention)"
    )


def test_keywords_in_a_dict_bound_once_reach_the_callee():
    # probe AG's AG04 and AG30 (a local dict splatted into a block's **kwargs)
    # and AG18 (``**self.layer_kwargs`` into a torch encoder layer)
    found = assert_package_runs(
        "fixtures/program_calls/kwargs_dicts",
        [
            ("block.py", 27, 17, "MHA005"),
            ("model.py", 18, 15, "MHA004"),
            ("model.py", 32, 16, "MHA002"),
        ],
        select="MHA",
    )
    by_code = {f.code: f.msg for f in found}
    assert by_code["MHA004"].startswith(
        "mask from line 17 (keep[:, None, None, :].float()) is a float32 0/1 mask"
    )
    assert by_code["MHA002"].endswith(
        "the call reaches scaled_dot_product_attention at"
        " fixtures/program_calls/kwargs_dicts/attn.py:9 through Block.forward() ->"
        " Attention.forward()"
    )


_LAYER = (
    "import torch.nn as nn\n"
    "class Enc(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.layer = nn.TransformerEncoderLayer(32, 4, batch_first=True)\n"
    "        self.kw = {{'is_causal': True}}\n"
    "{change}"
    "    def forward(self, x, pad):\n"
    "        return self.layer(x, src_key_padding_mask=pad, {splat})\n"
)


def test_a_dict_splat_into_a_torch_module_gives_its_literals(tmp_path):
    written = _LAYER.format(change="", splat="**{'is_causal': True}")
    assert _rows(written, {"MHA005"}, tmp_path) == [(8, 16, "MHA005")]
    held = _LAYER.format(change="", splat="**self.kw")
    assert _rows(held, {"MHA005"}, tmp_path) == [(8, 16, "MHA005")]
    # changed in place after: what it holds at the call is not known
    changed = "    def off(self):\n        self.kw['is_causal'] = False\n"
    assert _rows(_LAYER.format(change=changed, splat="**self.kw"), {"MHA005"}, tmp_path) == []


def test_tiling_helpers_with_locals_and_the_fix_that_keeps_other_repeats():
    # probe AG's AG28 (a helper that inverts and expands into a local, then
    # tiles it head-major with einops) and AG15 (the fix must keep the
    # helper's other repeat factors, else the mask loses its query axis)
    found = assert_package_runs(
        "fixtures/program_calls/tiling_locals",
        [("heads.py", 16, 18, "MHA016"), ("heads.py", 32, 18, "MHA016")],
        select="MHA",
    )
    assert found[0].msg.endswith("(use blocked.repeat_interleave(heads, dim=0) in the helper)")
    assert found[1].msg.endswith(
        "(use pad[:, None].repeat_interleave(num_heads, dim=0).repeat(1, pad.size(1), 1)"
        " in the helper)"
    )


def test_a_torch_module_from_a_registry_of_another_file_is_built_where_indexed():
    # probe AF's AF19: ``MIXERS[kind](dim, heads)`` with ``MIXERS = {"mha":
    # nn.MultiheadAttention, "linear": LinearMixer}`` in registry.py and every
    # construction passing kind="mha": a MultiheadAttention without batch_first,
    # fed batch-first data by the model
    found = assert_package_runs(
        "fixtures/program_calls/registry_modules",
        [("blocks.py", 12, 22, "MHA001")],
        select="MHA",
    )
    assert "registry_modules/model.py line 16: `rearrange(field," in found[0].msg


_LAYERS = (
    "from functools import partial\n"
    "import torch.nn as nn\n"
    "Layer = partial(nn.TransformerDecoderLayer, dim_feedforward=128, dropout=0.0)\n"
    "AuxLayer = partial(nn.TransformerDecoderLayer, dim_feedforward=128, batch_first=True)\n"
    "class TextDecoder(nn.Module):\n"
    "    def __init__(self, aux=False):\n"
    "        super().__init__()\n"
    "        make = AuxLayer if aux else Layer\n"
    "        self.layer = make(32, 4)\n"
    "    def forward(self, tgt, memory):\n"
    "        return self.layer(tgt, memory)\n"
    "class Recognizer(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.decoder = TextDecoder({aux})\n"
    "    def forward(self, tgt_ids, feats):\n"
    "        memory = feats.flatten(2).permute(0, 2, 1)  # (N, HW, C)\n"
    "        tgt = self.embed(tgt_ids)  # (N, T, C)\n"
    "        return self.decoder(tgt, memory)\n"
)


def test_a_layer_picked_into_a_local_by_a_fixed_flag_is_that_layer(tmp_path):
    # probe AD's AD25: ``make = AuxLayer if aux else Layer; self.layer = make(32, 4)``
    # with every construction leaving ``aux`` False: the partial without batch_first
    assert _rows(_LAYERS.format(aux=""), {"MHA001"}, tmp_path) == [(9, 22, "MHA001")]
    assert _rows(_LAYERS.format(aux="aux=True"), {"MHA001"}, tmp_path) == []


_NEEDS = (
    "import torch.nn as nn\n"
    "class Net(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.transformer = nn.Transformer(d_model=16, nhead=4)\n"
    "    def forward(self, x_in):\n"
    "        # {comment}\n"
    "        x_past = x_in.concatenate_past_features()\n"
    "        src = x_past.permute(1, 0, 2)\n"
    "        return self.transformer.encoder(src)\n"
)


def test_a_comment_on_what_a_module_needs_is_not_the_shape_of_the_line_below(tmp_path):
    # release review 35's darts: the comment states what nn.Transformer reads;
    # the swap below converts to it (MHA903, opt-in), not away from it (MHA001)
    needs = "PyTorch's nn.Transformer needs (seq_len, batch_size, features)"
    assert _rows(_NEEDS.format(comment=needs), {"MHA001", "MHA903"}, tmp_path) == [
        (5, 28, "MHA903")
    ]
    # a comment that states the data's own layout still counts
    stated = "x_past: (batch_size, seq_len, features)"
    assert _rows(_NEEDS.format(comment=stated), {"MHA001", "MHA903"}, tmp_path) == [
        (5, 28, "MHA903")
    ]


_HOOK = (
    "import torch.nn as nn\n"
    "class Masked(nn.Module):\n"
    "    def __init__(self, dim, num_heads):\n"
    "        super().__init__()\n"
    "        self.num_heads = num_heads\n"
    "        self.attn = nn.MultiheadAttention(dim, num_heads, batch_first=True)\n"
    "    def expand_heads(self, mask):\n"
    "        return mask.repeat_interleave(self.num_heads, dim=0)\n"
    "    def forward(self, x, pad):\n"
    "        mask = pad[:, None, :].expand(-1, x.shape[1], -1)\n"
    "        return self.attn(x, x, x, attn_mask=self.expand_heads(mask), need_weights=False)[0]\n"
    "class Tooth(Masked):\n"
    "    def expand_heads(self, mask):\n"
    "        return mask.repeat(self.num_heads, 1, 1)\n"
    "{use}"
)


def test_a_subclass_overriding_a_hook_with_a_head_major_tiling(tmp_path):
    # probe AH's AH05 in one file: the base tiles right, its subclass's
    # override of the hook wrong; the subclass built in the file
    used = "def build():\n    return Tooth(32, 4)\n"
    path = tmp_path / "t.py"
    path.write_text(_HOOK.format(use=used))
    found = analyze_source(_HOOK.format(use=used), str(path), {"MHA016"})
    assert [(f.line, f.col, f.code) for f in found] == [(11, 16, "MHA016")]
    assert "(as Tooth overrides it)" in found[0].message
    assert found[0].message.endswith("in Tooth's override)")
    # never built nor named anywhere: its override never runs
    assert _rows(_HOOK.format(use=""), {"MHA016"}, tmp_path) == []


def test_weights_unpacked_into_a_local_named_like_the_module(tmp_path):
    # probe AH's AH26: ``h, attn = self.attn(...)``, ``attn`` never read; the
    # attribute's name is no read of the local
    src = (
        "import torch.nn as nn\n"
        "class Block(nn.Module):\n"
        "    def __init__(self, d, h):\n"
        "        super().__init__()\n"
        "        self.attn = nn.MultiheadAttention(d, h, dropout=0.0, batch_first=True)\n"
        "    def forward(self, x, pad):\n"
        "        h, attn = self.attn(x, x, x, key_padding_mask=pad)\n"
        "        return x + h\n"
    )
    assert _rows(src, {"MHA102"}, tmp_path) == [(7, 19, "MHA102")]
    read = src.replace("return x + h", "return x + h, attn")
    assert _rows(read, {"MHA102"}, tmp_path) == []


_COPY = (
    "import torch.nn as nn\n"
    "import torch.nn.functional as F\n"
    "class Copy(nn.Module):\n"
    "    def forward(self, q, memory, key_padding_mask):\n"
    "        m = key_padding_mask[:, None, None, :]\n"
    "        return F.scaled_dot_product_attention(q, memory, memory, attn_mask=m)\n"
    "class Headline(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        layer = nn.TransformerDecoderLayer(32, 4, batch_first=True)\n"
    "        self.decoder = nn.TransformerDecoder(layer, 2)\n"
    "        self.copy = Copy()\n"
    "    def decode(self, tgt, memory, src_pad):\n"
    "        h = self.decoder(tgt, memory, {decoder_mask})\n"
    "        return self.copy(h[:, None], memory[:, None], src_pad)\n"
    "    def forward(self, src, tgt, memory):\n"
    "        return self.decode(tgt, memory, src.eq(0))\n"
)


def test_a_mask_that_is_right_for_a_module_on_the_way_is_not_to_be_inverted_at_its_source(
    tmp_path,
):
    # probe AH's AH19: the same padding mask feeds the decoder's
    # memory_key_padding_mask (right) and SDPA (wrong); inverting it where it
    # is made, as the message used to say, breaks the decoder (measured 1.02 off)
    path = tmp_path / "t.py"
    src = _COPY.format(decoder_mask="memory_key_padding_mask=src_pad")
    path.write_text(src)
    found = analyze_source(src, str(path), {"MHA002"})
    assert [(f.line, f.col, f.code) for f in found] == [(17, 16, "MHA002")]
    assert found[0].message.endswith(
        "; it also hands the same mask to TransformerDecoder's memory_key_padding_mask, which"
        " reads it the other way: change it only on its way to scaled_dot_product_attention"
    )
    src = _COPY.format(decoder_mask="tgt_is_causal=False")
    path.write_text(src)
    found = analyze_source(src, str(path), {"MHA002"})
    assert "it also hands" not in found[0].message


def test_the_causal_hint_a_decoder_drops_is_not_said_to_be_its_fastpath(tmp_path):
    # probe AH's AH20: nn.TransformerDecoder has no fastpath; in eval the hint is
    # dropped all the same (measured 1.48 off the causal output)
    src = (
        "import torch.nn as nn\n"
        "layer = nn.TransformerDecoderLayer(32, 4, batch_first=True)\n"
        "dec = nn.TransformerDecoder(layer, 2)\n"
        "def run(tgt, memory):\n"
        "    return dec(tgt, memory, tgt_is_causal=True)\n"
    )
    path = tmp_path / "t.py"
    path.write_text(src)
    found = analyze_source(src, str(path), {"MHA005"})
    assert [(f.line, f.col, f.code) for f in found] == [(5, 12, "MHA005")]
    assert found[0].message.endswith("silently ignores the causal hint in inference")


def test_an_edit_of_the_registry_of_another_file_changes_the_finding_with_the_cache_on(tmp_path):
    # the registry file is a dependency of blocks.py's cached findings
    (tmp_path / "setup.cfg").write_text("[flake8]\n")
    pkg = copied(pathlib.Path("fixtures/program_calls/registry_modules"), tmp_path)

    def run():
        return flake8_in_project(tmp_path, f"{pkg.name}/blocks.py", "MHA001")

    assert run() == (1, [[f"{pkg.name}/blocks.py:12:22:", "MHA001"]])
    registry = pkg / "registry.py"
    text = registry.read_text()
    registry.write_text(text.replace('"mha": nn.MultiheadAttention,', '"mha": LinearMixer,'))
    assert run() == (0, [])
    registry.write_text(text)
    assert run() == (1, [[f"{pkg.name}/blocks.py:12:22:", "MHA001"]])
