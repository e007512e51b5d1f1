"""Sequence-first data the code never states as such (release review 7):
image patches made by ``F.unfold`` and swapped, with a position table added
right before the call (spandrel's IPT: ``self.encoder(x + pos)``), and text
swapped into layers a two-return ``_get_clones`` makes (groundingdino: shared
or copied layers).  Neither gets MHA001 (their MHA903 says they are right);
a layer fed batch-first data beside them does.  Through a stack of another
file's layers, the caller's data reaches the layer (a conv map flattened to
(N, L, C) gives MHA001 naming the caller's line).  And MHA102: a query one
position long builds (N, 1, S) weights, nothing to save; a pair whose only
read is ``[0]`` before it is rebound throws the weights away."""

from __future__ import annotations

import pathlib
import textwrap

from fixture_expect import assert_package_runs, copied

from flake8_mha.lint.engine import analyze_file, analyze_source

PKG = "fixtures/program_layout/patches"


def test_over_the_package_one_file_at_a_time_and_through_check():
    assert_package_runs(PKG, [("layers.py", 21, 26, "MHA001")], select="MHA0,MHA1")


def test_the_sequence_first_layer_is_mha903():
    got = analyze_file(f"{PKG}/layers.py", ["MHA001", "MHA903"])
    assert [(f.line, f.col, f.code) for f in got] == [(12, 26, "MHA903"), (21, 26, "MHA001")]


def test_a_caller_that_feeds_batch_first_patches_is_reported(tmp_path):
    pkg = copied(pathlib.Path(PKG), tmp_path)
    vit = pkg / "vit.py"
    text = vit.read_text(encoding="utf-8")
    bad = text.replace(
        "        self.pe = nn.Embedding(num_patches, d_model)\n",
        "        self.pe = nn.Embedding(num_patches, d_model)\n"
        "        self.conv = nn.Conv2d(3, d_model, patch, stride=patch)\n",
    ).replace(
        "return self.encoder(x + pos)",
        "return self.encoder(self.conv(image).flatten(2).transpose(1, 2))",
    )
    assert bad.count("self.conv") == 2
    vit.write_text(bad, encoding="utf-8")
    got = analyze_file(str(pkg / "layers.py"), ["MHA001"])
    assert [(f.line, f.col) for f in got] == [(12, 26), (21, 26)]
    assert "vit.py line 35: `self.conv(image).flatten(2).transpose(1, 2)`" in got[0].message


ONE_FILE = textwrap.dedent(
    """\
    import copy

    import torch.nn.functional as F
    from torch import nn


    def _get_clones(module, N, layer_share=False):
        if layer_share:
            return nn.ModuleList([module for i in range(N)])
        return nn.ModuleList([copy.deepcopy(module) for i in range(N)])


    class Layer(nn.Module):
        def __init__(self, d_model, nhead):
            super().__init__()
            self.self_attn = nn.MultiheadAttention(d_model, nhead)

        def forward(self, src):
            return src + self.self_attn(src, src, src, need_weights=False)[0]


    class Encoder(nn.Module):
        def __init__(self, d_model=72, nhead=4):
            super().__init__()
            self.layers = _get_clones(Layer(d_model, nhead), 2)
            self.pe = nn.Embedding(16, d_model)

        def forward(self, image, position_ids):
            x = F.unfold(image, 3, stride=3).transpose(1, 2).transpose(0, 1)
            pos = self.pe(position_ids).transpose(0, 1)
            output = x + pos
            for layer in self.layers:
                output = layer(output)
            return output
    """
)


def test_in_one_file_neither_is_reported():
    assert analyze_source(ONE_FILE, "one.py", ["MHA001"]) == []
    call = ONE_FILE.replace("output = x + pos", "output = x")
    assert analyze_source(call, "one.py", ["MHA001"]) == []
    # IPT: the patches projected and added back under a flag before the call
    mlp = ONE_FILE.replace(
        "        pos = self.pe(position_ids).transpose(0, 1)\n",
        "        if self.mlp:\n"
        "            x = self.drop(self.proj(x)) + x\n"
        "        pos = self.pe(position_ids).transpose(0, 1)\n",
    )
    assert mlp != ONE_FILE
    assert analyze_source(mlp, "one.py", ["MHA001"]) == []
    moved = mlp.replace("x = self.drop(self.proj(x)) + x", "x = x.transpose(0, 1)")
    assert [f.code for f in analyze_source(moved, "one.py", ["MHA001"])] == ["MHA001"]


POOL = textwrap.dedent(
    """\
    import torch
    from torch import nn


    class Pool(nn.Module):
        def __init__(self, dim=256, heads=2):
            super().__init__()
            self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
            self.query = nn.Parameter(torch.randn(1, 1, dim))

        def forward(self, x):
            B, S, E = x.shape
            queries = self.query.repeat(B, 1, 1)
            return self.attn(query=queries, key=x, value=x)[0]
    """
)


def test_mha102_one_query_builds_nothing_worth_saving():
    assert analyze_source(POOL, "pool.py", ["MHA102"]) == []
    for query in ("x[:, :1]", "x[:, 0].unsqueeze(1)", "x[:, -1:]", "x[:, None, 0]"):
        src = POOL.replace("self.query.repeat(B, 1, 1)", query)
        assert analyze_source(src, "pool.py", ["MHA102"]) == [], query
    # braindecode: an einops layer that adds the query axis
    held = POOL.replace(
        "        self.query = nn.Parameter(torch.randn(1, 1, dim))\n",
        "        self.query = nn.Parameter(torch.randn(1, 1, dim))\n"
        '        self.add_query_axis = Rearrange("b c -> b 1 c")\n',
    ).replace("self.query.repeat(B, 1, 1)", "self.add_query_axis(x[:, 0])")
    held = "from einops.layers.torch import Rearrange\n" + held
    assert analyze_source(held, "pool.py", ["MHA102"]) == []
    wide = held.replace('"b c -> b 1 c"', '"b c -> b c 1"')
    assert [(f.line, f.col) for f in analyze_source(wide, "pool.py", ["MHA102"])] == [(16, 16)]
    longer = POOL.replace("torch.randn(1, 1, dim)", "torch.randn(1, 4, dim)")
    got = analyze_source(longer, "pool.py", ["MHA102"])
    assert [(f.line, f.col) for f in got] == [(14, 16)]
    seq_first = POOL.replace(", batch_first=True", "")  # (B, 1, E) read as L=B, N=1
    assert [(f.line, f.col) for f in analyze_source(seq_first, "pool.py", ["MHA102"])] == [(14, 16)]


def test_mha102_the_pair_read_only_at_its_first_before_a_rebinding():
    src = textwrap.dedent(
        """\
        from torch import nn


        class Layer(nn.Module):
            def __init__(self, d_model=64, nhead=8):
                super().__init__()
                self.self_attn = nn.MultiheadAttention(d_model, nhead)
                self.norm1 = nn.LayerNorm(d_model)
                self.norm2 = nn.LayerNorm(d_model)

            def forward(self, src):
                src2 = self.norm1(src)
                src2 = self.self_attn(src2, src2, src2)
                src = src + src2[0]
                src2 = self.norm2(src)
                return src + src2
        """
    )
    got = analyze_source(src, "layer.py", ["MHA102"])
    assert [(f.line, f.col) for f in got] == [(13, 16)]
    kept = src.replace("src = src + src2[0]", "src = src + src2[0] + src2[1].sum()")
    assert analyze_source(kept, "layer.py", ["MHA102"]) == []
    never_rebound = src.replace("        src2 = self.norm2(src)\n", "")
    assert analyze_source(never_rebound, "layer.py", ["MHA102"]) == []


def test_a_cast_after_the_swap_keeps_it():
    # deepod's TranAD: ``window = batch_x.permute(1, 0, 2)`` then ``window = window.float()``
    src = textwrap.dedent(
        """\
        import torch.nn as nn


        class Layer(nn.Module):
            def __init__(self, d_model, nhead):
                super().__init__()
                self.self_attn = nn.MultiheadAttention(d_model, nhead)

            def forward(self, src):
                return src + self.self_attn(src, src, src, need_weights=False)[0]


        def fit(loader, n_features):
            model = Layer(2 * n_features, n_features)
            for batch_x in loader:
                window = batch_x.permute(1, 0, 2)
                window = window.float()
                model(window)
        """
    )
    assert analyze_source(src, "tranad.py", ["MHA001"]) == []
    unswapped = src.replace("batch_x.permute(1, 0, 2)", "batch_x")
    assert [f.code for f in analyze_source(unswapped, "tranad.py", ["MHA001"])] == ["MHA001"]
