"""Misses of probe Z and later probes, and release reviews' false findings
mended in the thirty-first stop, each a package of several files run through
flake8 per file, over the package and through ``check``."""

from __future__ import annotations

import pathlib

from fixture_expect import (
    assert_package_runs,
    copied,
    flake8_in_project,
    flake8_run,
    write_package,
)


def test_a_window_added_through_a_helper_beside_a_padding_fill():
    # probe Z's Z30 in its package form: ``masked_fill(pad, -inf)`` and
    # ``apply_windows(scores, windows)`` (utils.py) in one function
    found = assert_package_runs(
        "fixtures/program_calls/filled_and_added", [("model.py", 21, 13, "MHA004")], select="MHA"
    )
    assert found[0].msg.endswith(
        "the call reaches scores + mask at"
        " fixtures/program_calls/filled_and_added/attention.py:20 through StopAttention.forward()"
    )


def test_the_padding_fill_beside_an_added_window_is_judged_at_the_call(tmp_path):
    # the same call hands a keep-mask where the fill removes: MHA003, named at the fill's line
    pkg = copied(pathlib.Path("fixtures/program_calls/filled_and_added"), tmp_path)
    model = pkg / "model.py"
    model.write_text(
        model.read_text().replace("pad = depots == PAD_STOP", "pad = depots != PAD_STOP")
    )
    status, found = flake8_run(str(pkg), select="MHA")
    assert status == 1
    rows = [(f.path.rsplit("/", 1)[-1], f.line, f.col, f.code) for f in found]
    assert rows == [
        ("model.py", 21, 13, "MHA003"),
        ("model.py", 21, 13, "MHA004"),
        ("model.py", 28, 13, "MHA003"),
    ]
    assert found[0].msg.endswith(
        "the call reaches masked_fill(mask, -inf) at filled_and_added/attention.py:19"
        " through StopAttention.forward()"
    )


def test_one_mask_filled_when_bool_and_added_when_not_is_one_sink(tmp_path):
    # the helper fills a bool mask and adds a float one: a bool keep-mask handed
    # in is inverted where it is filled, never "added"
    pkg = write_package(
        tmp_path / "pkg",
        {
            "attention.py": (
                "import torch\n"
                "def attend(q, k, v, mask):\n"
                "    scores = q @ k.transpose(-2, -1)\n"
                "    if mask.dtype == torch.bool:\n"
                "        scores = scores.masked_fill(~mask, float('-inf'))\n"
                "    else:\n"
                "        scores = scores + mask\n"
                "    return torch.softmax(scores, dim=-1) @ v\n"
            ),
            "model.py": (
                "from .attention import attend\n"
                "def run(tokens, q, k, v):\n"
                "    keep = tokens != 0\n"
                "    return attend(q, k, v, keep[:, None, None, :])\n"
            ),
        },
    )
    assert flake8_run(str(pkg), select="MHA") == (0, [])


def test_a_lambda_a_factory_of_another_file_returns_kept_on_self():
    # ``self.kernel = make_kernel()``, whose last statement returns a lambda
    # calling SDPA; the rests compared with the embedding's padding id
    found = assert_package_runs(
        "fixtures/program_calls/factory_lambdas", [("model.py", 25, 15, "MHA002")], select="MHA"
    )
    assert "(chords == REST) means True = ignore" in found[0].msg
    assert found[0].msg.endswith(
        "the call reaches scaled_dot_product_attention at"
        " fixtures/program_calls/factory_lambdas/kernels.py:7 through the function make_kernel() returns"
    )


def test_an_edit_of_the_lambda_factory_changes_the_finding_with_the_cache_on(tmp_path):
    """flake8's results cache on: model.py unchanged, the finding follows
    what the lambda of kernels.py hands SDPA."""
    (tmp_path / "setup.cfg").write_text("[flake8]\n")
    pkg = copied(pathlib.Path("fixtures/program_calls/factory_lambdas"), tmp_path)

    def run():
        return flake8_in_project(tmp_path, f"{pkg.name}/model.py", "MHA002")

    assert run() == (1, [[f"{pkg.name}/model.py:25:15:", "MHA002"]])
    kernels = pkg / "kernels.py"
    text = kernels.read_text()
    kernels.write_text(text.replace("attn_mask=m,", "attn_mask=~m,"))  # the kernel inverts it
    assert run() == (1, [[f"{pkg.name}/model.py:31:15:", "MHA002"]])  # the other call is wrong
    kernels.write_text(text)
    assert run() == (1, [[f"{pkg.name}/model.py:25:15:", "MHA002"]])


_PADDING_IDX = (
    "import torch.nn as nn\n"
    "import torch.nn.functional as F\n"
    "BLANK = 3\n"
    "class Reader(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.embed = nn.Embedding(10, 8, padding_idx={idx})\n"
    "    def forward(self, q, k, v, notes):\n"
    "        blank = notes == BLANK\n"
    "        return F.scaled_dot_product_attention(q, k, v, attn_mask=blank[:, None, None, :])\n"
)


def test_ids_compared_with_the_embeddings_padding_id_by_its_name():
    from flake8_mha.lint.engine import analyze_source

    found = analyze_source(_PADDING_IDX.format(idx="BLANK"), "reader.py", ["MHA002"])
    assert [(f.code, f.line, f.col) for f in found] == [("MHA002", 10, 16)]
    # a literal padding id, or none: ``BLANK`` is a value like any other
    for idx in ("0", "None"):
        assert analyze_source(_PADDING_IDX.format(idx=idx), "reader.py", ["MHA002"]) == []


_ELIF_BUILT = (
    "import torch.nn as nn\n"
    "class Reg(nn.Module):\n"
    "    def __init__(self, dim, method):\n"
    "        super().__init__()\n"
    "        self.method = method\n"
    "        if method == 'fc':\n"
    "            self.mid = nn.Linear(2 * dim, dim)\n"
    "        elif method == 'attention':\n"
    "            self.mid = nn.MultiheadAttention(dim, num_heads=1)\n"
    "    def forward(self, stack_emb):\n"
    "        if self.method == 'fc':\n"
    "            out = self.mid(stack_emb.flatten(1))\n"
    "        elif self.method == 'attention':\n"
    "            perm = stack_emb.permute(1, 0, 2)\n"
    "            att, _ = self.mid(perm, perm, perm)\n"
    "            out = att.permute(1, 0, 2).mean(dim=1)\n"
    "        return out\n"
)


def test_a_module_built_in_an_elif_of_init_is_analyzed():
    # release review 28's rxngraphormer: the block beside the construction was
    # looked for in an ``elif`` as if it were a list of statements (MHA000)
    from flake8_mha.lint.engine import analyze_source

    found = analyze_source(_ELIF_BUILT, "reg.py", ["MHA0", "MHA903"])
    assert [(f.code, f.line, f.col) for f in found] == [("MHA903", 9, 24)]


def test_a_layer_run_by_torchs_encoder_gets_a_float_padding_mask():
    # release review 28's perttf: ``nn.TransformerEncoder(SDPALayer(...), n)``
    # in model.py; the layer hands ``src_key_padding_mask`` on to SDPA, which
    # is right there (torch made it 0/-inf); the pooling call is still wrong
    assert_package_runs(
        "fixtures/program_calls/encoder_layers", [("model.py", 24, 16, "MHA002")], select="MHA"
    )


def test_the_same_layer_called_by_hand_keeps_the_name_reading():
    from flake8_mha.lint.engine import analyze_source

    src = (
        pathlib.Path("fixtures/program_calls/encoder_layers/layers.py").read_text()
        + "\n\nclass Direct(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.layer = SDPALayer(64, 4)\n"
    )
    found = analyze_source(src, "layers.py", ["MHA002"])
    # the layer's parameter, and the pooling's ``key_padding_mask``, by their names
    assert [(f.code, f.line, f.col) for f in found] == [("MHA002", 30, 32), ("MHA002", 43, 16)]
    one = src.replace(
        "self.layer = SDPALayer(64, 4)", "self.layer = nn.TransformerEncoder(SDPALayer(64, 4), 2)"
    )
    found = analyze_source(one, "layers.py", ["MHA002"])
    assert [(f.code, f.line, f.col) for f in found] == [("MHA002", 43, 16)]


def _rows(found):
    return [(f.code, f.line, f.col) for f in found]


def test_layers_of_a_loop_over_pairs_keep_their_one_position_query():
    # release review 28's sonati: ``for nb, layers in ((a, self.t), (b, self.s))``
    # then ``for layer in layers``; the query is ``unsqueeze(1)``: one position
    from flake8_mha.lint.engine import analyze_source

    src = (
        "import torch.nn as nn\n"
        "class Block(nn.Module):\n"
        "    def __init__(self, d):\n"
        "        super().__init__()\n"
        "        self.attn = nn.MultiheadAttention(d, 4, batch_first=True, dropout=0.1)\n"
        "    def forward(self, q, kv):\n"
        "        out, _ = self.attn(q, kv, kv)\n"
        "        return q + out\n"
        "class Model(nn.Module):\n"
        "    def __init__(self, d=64):\n"
        "        super().__init__()\n"
        "        self.proj = nn.Linear(8, d)\n"
        "        self.temporal = nn.ModuleList([Block(d) for _ in range(3)])\n"
        "        self.spatial = nn.ModuleList([Block(d) for _ in range(3)])\n"
        "    def forward(self, query, time_nb, space_nb):\n"
        "        q = self.proj(query).unsqueeze(1)  # (B, 1, D)\n"
        "        for nb, layers in ((time_nb, self.temporal), (space_nb, self.spatial)):\n"
        "            n = self.proj(nb)\n"
        "            for layer in layers:\n"
        "                q = layer(q, n)\n"
        "        return q[:, 0]\n"
    )
    assert analyze_source(src, "m.py", ["MHA102"]) == []
    longer = src.replace("q = self.proj(query).unsqueeze(1)  # (B, 1, D)", "q = self.proj(query)")
    assert _rows(analyze_source(longer, "m.py", ["MHA102"])) == [("MHA102", 7, 18)]


_TACTIS = (
    "import torch.nn as nn\n"
    "class TemporalEncoder(nn.Module):\n"
    "    def __init__(self, dim, heads):\n"
    "        super().__init__()\n"
    "        self.time = nn.TransformerEncoderLayer(dim, heads, 16, 0.1)\n"
    "        self.series = nn.TransformerEncoderLayer(dim, heads, 16, 0.1)\n"
    "    def forward(self, encoded):\n"
    "        b, s, t = encoded.shape[0], encoded.shape[1], encoded.shape[2]\n"
    "        data = encoded.flatten(start_dim=0, end_dim=1)\n"
    "        data = data.transpose(0, 1)\n"
    "        data = self.time(data)\n"
    "        data = data.transpose(0, 1).unflatten(dim=0, sizes=(b, s))\n"
    "        data = data.transpose(1, 2).flatten(start_dim=0, end_dim=1)\n"
    "        data = self.series(data.transpose(0, 1))\n"
    "        return data\n"
    "class Model(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.enc = TemporalEncoder(64, 4)\n"
    "    def forward(self, hist, pred):\n"
    "        flow = torch.cat([hist, pred], dim=2)  # Shape: [batch, num_series, steps, size]\n"
    "        return self.enc(flow)\n"
)


def test_a_batch_flattened_with_series_then_swapped_is_sequence_first():
    # release review 28's tactis: the caller's comment states only the batch
    # axis; flattened with the series and swapped, the data is sequence-first
    from flake8_mha.lint.engine import analyze_source

    assert analyze_source(_TACTIS, "enc.py", ["MHA001", "MHA010"]) == []
    assert _rows(analyze_source(_TACTIS, "enc.py", ["MHA903"])) == [
        ("MHA903", 5, 21),
        ("MHA903", 6, 23),
    ]


def test_a_tutorial_docstring_against_a_stated_batch_first_is_not_a_mismatch():
    # release review 28's tecsas: PyTorch's tutorial docstring beside batch_first=True
    from flake8_mha.lint.engine import analyze_source

    src = (
        "import math\n"
        "import torch.nn as nn\n"
        "class Discrete(nn.Module):\n"
        "    def __init__(self, ntoken, d_model, nhead, nlayers):\n"
        "        super().__init__()\n"
        "        self.d_model = d_model\n"
        "        self.encoder = nn.Embedding(ntoken, d_model)\n"
        "        layer = nn.TransformerEncoderLayer(d_model, nhead, 256, 0.0, batch_first=True)\n"
        "        self.transformer_encoder = nn.TransformerEncoder(layer, nlayers)\n"
        "    def forward(self, src, src_mask):\n"
        '        """\n'
        "        Args:\n"
        "            src: Tensor, shape [seq_len, batch_size]\n"
        '        """\n'
        "        src = self.encoder(src) * math.sqrt(self.d_model)\n"
        "        return self.transformer_encoder(src, src_mask)\n"
    )
    assert analyze_source(src, "m.py", ["MHA010"]) == []
    # a shape comment on the code is the code's evidence: still a mismatch
    commented = src.replace(
        "src = self.encoder(src) * math.sqrt(self.d_model)",
        "src = self.encoder(src) * math.sqrt(self.d_model)  # (L, N, E)",
    ).replace("            src: Tensor, shape [seq_len, batch_size]\n", "")
    assert _rows(analyze_source(commented, "m.py", ["MHA010"])) == [("MHA010", 15, 16)]


def test_a_module_dict_a_factory_of_another_file_returns():
    # probe AA's AA17 and AA18: ``self.mixers = build_mixers(d, h)``, then
    # ``self.mixers["temporal"](...)``; each key's calls feed its own module
    found = assert_package_runs(
        "fixtures/program_calls/factory_dicts",
        [("mixers.py", 10, 24, "MHA001"), ("model.py", 16, 22, "MHA102")],
        select="MHA",
    )
    assert "model.py line 25: `# patches: (batch, cells, dim)`" in found[0].msg


_DICT_FACTORY = (
    "import torch.nn as nn\n"
    "def build_mixers(dim, heads):\n"
    '    return nn.ModuleDict({"spatial": nn.MultiheadAttention(dim, heads)})\n'
    "class Mixer(nn.Module):\n"
    "    def __init__(self, dim, heads):\n"
    "        super().__init__()\n"
    "        self.mixers = build_mixers(dim, heads)\n"
    "    def forward(self, x):\n"
    "        h = x.transpose(0, 1)  # (L, B, D)\n"
    '        return self.mixers["spatial"](h, h, h<weights>)[0].transpose(0, 1)\n'
)


def test_a_module_dict_a_factory_of_the_same_file_returns():
    # probe AA's R2 and R3 in one file: followed as when written inline
    from flake8_mha.lint.engine import analyze_source

    fed = _DICT_FACTORY.replace("<weights>", ", need_weights=False")
    assert analyze_source(fed, "mixer.py", ["MHA001", "MHA102"]) == []
    assert _rows(analyze_source(fed, "mixer.py", ["MHA903"])) == [("MHA903", 3, 38)]
    kept = _DICT_FACTORY.replace("<weights>", "")
    assert _rows(analyze_source(kept, "mixer.py", ["MHA102"])) == [("MHA102", 10, 16)]


def test_one_helper_call_that_masks_keys_and_values_names_both(tmp_path):
    # probe AA's AA27: ``k, v = mask_kv(self.k(x), self.v(x), keep)``, the helper
    # of another file returning ``k * m, v * m``
    pkg = write_package(
        tmp_path / "pkg",
        {
            "utils.py": (
                "def mask_kv(k, v, keep):\n"
                "    m = keep[..., None].to(k.dtype)\n"
                "    return k * m, v * m\n"
            ),
            "layers.py": (
                "import torch\n"
                "import torch.nn as nn\n"
                "from .utils import mask_kv\n"
                "class CellAttention(nn.Module):\n"
                "    def __init__(self, dim):\n"
                "        super().__init__()\n"
                "        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)\n"
                "    def forward(self, x, keep):\n"
                "        q = self.q(x)\n"
                "        k, v = mask_kv(self.k(x), self.v(x), keep)\n"
                "        scores = q @ k.transpose(-2, -1)\n"
                "        return torch.softmax(scores, dim=-1) @ v\n"
            ),
        },
    )
    status, found = flake8_run(str(pkg), select="MHA015")
    assert (status, [(f.line, f.col, f.code) for f in found]) == (1, [(10, 16, "MHA015")])
    assert "is applied to the keys and values instead of the attention scores" in found[0].msg


def test_a_default_every_construction_leaves_is_called_the_default(tmp_path):
    # probe AA's AA26: ``_Heads.__init__(self, dim, heads, dropout=0.1)``, built
    # ``FusedAttention(dim, heads)``: no construction passes the dropout
    pkg = write_package(
        tmp_path / "pkg",
        {
            "attention.py": (
                "import torch.nn as nn\n"
                "import torch.nn.functional as F\n"
                "class FusedAttention(nn.Module):\n"
                "    def __init__(self, dim, heads, dropout=0.1):\n"
                "        super().__init__()\n"
                "        self.p = dropout\n"
                "    def forward(self, q, k, v):\n"
                "        return F.scaled_dot_product_attention(q, k, v, dropout_p=self.p)\n"
            ),
            "model.py": (
                "import torch.nn as nn\n"
                "from .attention import FusedAttention\n"
                "class Model(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.attn = FusedAttention(64, 4)\n"
            ),
        },
    )
    status, found = flake8_run(str(pkg), select="MHA007")
    assert (status, [(f.line, f.col, f.code) for f in found]) == (1, [(8, 16, "MHA007")])
    assert found[0].msg.endswith(
        "every construction of FusedAttention in the project (1) leaves the default dropout=0.1"
    )


def test_a_file_whose_indentation_mixes_tabs_and_spaces_says_where():
    # release review 29's diffnovo-dia: Python compiles it, LibCST does not
    from flake8_mha.lint.engine import analyze_source

    src = (
        "import torch.nn as nn\n"
        "def f(x):\n"
        "    return x\n"
        "def g(spect_f):\n"
        "\t        out_f = spect_f\n"
        "\t        with open(out_f) as h:\n"
        "                      return nn.MultiheadAttention(8, 2)\n"
    )
    compile(src, "g.py", "exec")
    found = analyze_source(src, "g.py", ["MHA000"])
    assert [(f.code, f.line) for f in found] == [("MHA000", 1)]
    assert found[0].message.endswith(
        "LibCST cannot parse this file (its indentation mixes tabs and spaces from line 5)"
    )


def test_an_activation_between_a_swap_and_the_layer_keeps_the_conversion():
    # release review 29's trecover: ``F.relu(self.mapping(src)) * self.scale``
    # after ``src.transpose(0, 1)``: sequence-first, as without the relu
    from flake8_mha.lint.engine import analyze_source

    src = (
        "import math\n"
        "import torch.nn as nn\n"
        "import torch.nn.functional as F\n"
        "class TRecover(nn.Module):\n"
        "    def __init__(self, token_size, d_model, n_heads):\n"
        "        super().__init__()\n"
        "        self.scale = math.sqrt(d_model)\n"
        "        self.mapping = nn.Linear(token_size, d_model)\n"
        "        layer = nn.TransformerEncoderLayer(d_model=d_model, nhead=n_heads)\n"
        "        self.encoder = nn.TransformerEncoder(layer, num_layers=1)\n"
        "    def encode(self, src):\n"
        "        src = src.transpose(0, 1)\n"
        "        src = F.relu(self.mapping(src)) * self.scale\n"
        "        return self.encoder(src=src)\n"
    )
    assert analyze_source(src, "m.py", ["MHA001"]) == []
    assert _rows(analyze_source(src, "m.py", ["MHA903"])) == [("MHA903", 9, 17)]


def test_a_lambda_kept_on_self_in_another_file_is_its_body(tmp_path):
    # probe AB's AB21: ``self.attend = lambda q, k, v, m: F.sdpa(..., attn_mask=m)``
    pkg = write_package(
        tmp_path / "pkg",
        {
            "attention.py": (
                "import torch.nn as nn\n"
                "import torch.nn.functional as F\n"
                "class CitationAttention(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.attend = lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)\n"
                "    def forward(self, q, k, v, mask):\n"
                "        return self.attend(q, k, v, mask)\n"
            ),
            "model.py": (
                "import torch.nn as nn\n"
                "from .attention import CitationAttention\n"
                "class Net(nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.cite = CitationAttention()\n"
                "    def forward(self, q, k, v, ids):\n"
                "        pad = ids.eq(0)\n"
                "        keep = ids.ne(0)\n"
                "        self.cite(q, k, v, keep[:, None, None, :])\n"
                "        return self.cite(q, k, v, pad[:, None, None, :])\n"
            ),
        },
    )
    for target in (pkg, pkg / "model.py"):
        status, found = flake8_run(str(target), select="MHA002")
        assert (status, [(f.line, f.col, f.code) for f in found]) == (1, [(11, 16, "MHA002")])


def test_a_dropout_keyword_beside_a_splat_is_the_calls_dropout():
    # probe AB's AB06: ``F.sdpa(q, k, v, dropout_p=self.p, **kw)``
    from flake8_mha.lint.engine import analyze_source

    src = (
        "import torch.nn as nn\n"
        "import torch.nn.functional as F\n"
        "class SDPACore(nn.Module):\n"
        "    def __init__(self, p=0.1):\n"
        "        super().__init__()\n"
        "        self.p = p\n"
        "    def forward(self, q, k, v, **kw):\n"
        "        return F.scaled_dot_product_attention(q, k, v, dropout_p=self.p, **kw)\n"
        "    def from_splat(self, q, k, v, **kw):\n"
        "        return F.scaled_dot_product_attention(q, k, v, **kw)\n"
    )
    assert _rows(analyze_source(src, "core.py", ["MHA007"])) == [("MHA007", 8, 16)]


def test_a_class_a_registry_of_one_class_names():
    # probe AB's AB27 (torch's class) and AB09 (the project's class)
    from flake8_mha.lint.engine import analyze_source

    torch_one = (
        "import torch.nn as nn\n"
        "from einops import rearrange\n"
        'ATTN_REGISTRY = {"mha": nn.MultiheadAttention}\n'
        "class PatchBlock(nn.Module):\n"
        '    def __init__(self, attn="mha"):\n'
        "        super().__init__()\n"
        "        self.attn = ATTN_REGISTRY[attn](48, 4)\n"
        "    def forward(self, img):\n"
        '        x = rearrange(img, "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=4, p2=4)\n'
        "        return self.attn(x, x, x, need_weights=False)[0]\n"
    )
    assert _rows(analyze_source(torch_one, "reef.py", ["MHA001"])) == [("MHA001", 7, 21)]
    two = torch_one.replace(
        '{"mha": nn.MultiheadAttention}', '{"mha": nn.MultiheadAttention, "id": nn.Identity}'
    )
    assert analyze_source(two, "reef.py", ["MHA001"]) == []


def test_a_label_to_ignore_compared_is_a_keep_mask():
    # probe AB's AB28: ``labels != IGNORE`` (segmentation's 255)
    from flake8_mha.lint.engine import analyze_source

    src = (
        "import torch\n"
        "IGNORE = 255\n"
        "def pool(q, k, v, labels):\n"
        "    keep = labels != IGNORE\n"
        '    scores = torch.einsum("bqd,bkd->bqk", q, k)\n'
        "    scores = scores * keep[:, None, :]\n"
        '    return torch.einsum("bqk,bkd->bqd", torch.softmax(scores, dim=-1), v)\n'
    )
    assert _rows(analyze_source(src, "pool.py", ["MHA012"])) == [("MHA012", 6, 14)]


def test_a_project_class_a_registry_of_one_class_builds(tmp_path):
    # probe AB's AB09: ``ENCODERS[name](52, N_HEADS)``, the sizes judged at that call
    pkg = write_package(
        tmp_path / "pkg",
        {
            "model.py": (
                "import torch.nn as nn\n"
                "N_HEADS = 8\n"
                "class CardSetAttention(nn.Module):\n"
                "    def __init__(self, dim, heads):\n"
                "        super().__init__()\n"
                "        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)\n"
                'ENCODERS = {"set": CardSetAttention}\n'
                "def build(name):\n"
                "    return ENCODERS[name](52, N_HEADS)\n"
            ),
        },
    )
    status, found = flake8_run(str(pkg), select="MHA008")
    assert (status, [(f.line, f.col, f.code) for f in found]) == (1, [(9, 12, "MHA008")])
    assert found[0].msg.endswith("this call builds it through CardSetAttention() at pkg/model.py:6")


def test_the_fix_for_keys_masked_before_sdpa_gives_the_3d_shape_too():
    # probe AB's AB10: 3-D inputs take ``keep[:, None, :]``
    from flake8_mha.lint.engine import analyze_source

    src = (
        "import torch.nn.functional as F\n"
        "def run(tokens, q, k, v):\n"
        "    keep = tokens != 0\n"
        "    return F.scaled_dot_product_attention(q, k * keep[..., None], v)\n"
    )
    found = analyze_source(src, "run.py", ["MHA015"])
    assert _rows(found) == [("MHA015", 4, 12)]
    assert found[0].message.endswith(
        "(mask the scores with -inf: attn_mask=keep[:, None, None, :]"
        " (keep[:, None, :] for 3-D inputs))"
    )


def test_a_dict_literal_splat_at_a_wrappers_call_is_its_keywords():
    # probe AB's AB18: ``self.meters(x, **{"key_padding_mask": missing_mask(ids)})``
    # into ``self.attn(x, x, x, need_weights=False, **mask_kw)``
    from flake8_mha.lint.engine import analyze_source

    src = (
        "import torch.nn as nn\n"
        "def missing_mask(ids):\n"
        "    return (ids == 0).float()\n"
        "class Meters(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.attn = nn.MultiheadAttention(32, 4, batch_first=True)\n"
        "    def forward(self, x, **mask_kw):\n"
        "        out, _ = self.attn(x, x, x, need_weights=False, **mask_kw)\n"
        "        return out\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.meters = Meters()\n"
        "    def forward(self, x, ids):\n"
        '        return self.meters(x, **{"key_padding_mask": missing_mask(ids)})\n'
    )
    assert _rows(analyze_source(src, "grid.py", ["MHA004"])) == [("MHA004", 16, 16)]
