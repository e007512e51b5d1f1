"""Probe O and release review 16 (twenty-fourth stop): what they found
missed or misread, each at the exact code, line and column.

- ``recsys``: ``seq > 0`` on item ids is a keep-mask; blocks appended to an
  ``nn.ModuleList()`` in a loop and called by index are torch modules whose
  masks a caller hands in.
- ``vit_factory``: an odd head count handed to a layer factory is MHA101 at
  the call; a factory that passes ``**kwargs`` on still hands the sizes it
  names.
- ``transformer_wrapper``: a wrapper of the whole ``nn.Transformer`` hands
  it the caller's padding mask (vietocr's ``.float()``).
- A tokenizer's ``attention_mask`` parameter beside the token ids is an
  int64 mask; token ids whose batch size is read before they are transposed
  are sequence-first, not of unknown layout (deep-phonemizer)."""

from __future__ import annotations

import textwrap

from fixture_expect import assert_package_runs

from flake8_mha.lint.engine import analyze_source


def test_recsys():
    assert_package_runs(
        "fixtures/program_calls/recsys",
        [("model.py", 18, 13, "MHA003"), ("model.py", 20, 16, "MHA012")],
    )


def test_vit_factory():
    assert_package_runs(
        "fixtures/program_calls/vit_factory",
        [
            ("layers.py", 15, 12, "MHA902"),
            ("vit.py", 12, 22, "MHA101"),
            ("vit.py", 13, 23, "MHA008"),
            ("vit.py", 13, 23, "MHA101"),
        ],
    )


def test_transformer_wrapper():
    assert_package_runs(
        "fixtures/program_calls/transformer_wrapper", [("model.py", 16, 15, "MHA004")]
    )


def _found(src, codes):
    return [(f.code, f.line, f.col) for f in analyze_source(textwrap.dedent(src), "m.py", codes)]


HF = """\
import torch.nn.functional as F
from torch import nn


class Encoder(nn.Module):
    def forward(self, q, {params}):
        return F.scaled_dot_product_attention(q, q, q, attn_mask=attention_mask[:, None, None, :])
"""


def test_a_tokenizer_mask_parameter_beside_the_ids_is_an_integer_mask():
    assert _found(HF.format(params="input_ids, attention_mask"), ["MHA004"]) == [("MHA004", 7, 16)]
    # alone (an attention layer's parameter) it is whatever the model made of it
    assert _found(HF.format(params="attention_mask"), ["MHA004"]) == []


DP = """\
import torch.nn as nn


class Seq2Seq(nn.Module):
    def __init__(self, vocab, d_model=512):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.transformer = nn.Transformer(d_model=d_model, nhead=8)

    def encode(self, text):
        batch_size = text.size(0)
        text = text.transpose(0, 1)  # shape: [T, N]
        x = self.embed(text)
        return self.transformer.encoder(x), batch_size
"""


def test_token_ids_transposed_after_their_batch_size_is_read():
    # the comment on the transpose states the rank the size read cannot
    assert _found(DP, ["MHA001", "MHA903"]) == [("MHA903", 8, 28)]
    # named as ids, the size read itself says they are 2-D
    ids = DP.replace("  # shape: [T, N]", "").replace("text", "token_ids")
    assert _found(ids, ["MHA001", "MHA903"]) == [("MHA903", 8, 28)]
    # neither: the rank is unknown, and so the layout (MHA001's stated exception)
    bare = DP.replace("  # shape: [T, N]", "")
    assert _found(bare, ["MHA001", "MHA903"]) == [("MHA001", 8, 28)]
    # not transposed: a size read alone states no rank, the layout is unknown (MHA001)
    assert _found(DP.replace("text = text.transpose(0, 1)", "pass"), ["MHA001"]) == [
        ("MHA001", 8, 28)
    ]


def test_a_caller_of_unknown_layout_does_not_hide_a_known_wrong_one(tmp_path):
    # whisperish: one caller swaps batch-first data to sequence-first, the other
    # feeds data of unknown layout; the module is built batch_first=True
    from flake8_mha.lint.engine import analyze_file

    pkg = tmp_path / "pk"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "blocks.py").write_text(
        "import torch.nn as nn\n\n\n"
        "class Block(nn.Module):\n"
        "    def __init__(self, d, h):\n"
        "        super().__init__()\n"
        "        self.attn = nn.MultiheadAttention(d, h, batch_first=True)\n\n"
        "    def forward(self, x):\n"
        "        return self.attn(x, x, x, need_weights=False)[0]\n"
    )
    model = (
        "import torch.nn as nn\n\n"
        "from .blocks import Block\n\n\n"
        "class Decoder(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.emb = nn.Embedding(100, 64)\n"
        "        self.block = Block(64, 4)\n\n"
        "    def forward(self, tokens):\n"
        "        return self.block(self.emb(tokens))\n\n"
        "    def forward_time_first(self, tokens):\n"
        "        x = self.emb(tokens)  # (batch, n_ctx, d)\n"
        "        x = x.transpose({swap})\n"
        "        return self.block(x)\n"
    )
    (pkg / "model.py").write_text(model.format(swap="0, 1"))
    got = analyze_file(str(pkg / "blocks.py"), ["MHA010"])
    assert [(f.line, f.col, f.code) for f in got] == [(10, 16, "MHA010")]
    assert "model.py line 17: `x.transpose(0, 1)`" in got[0].message
    (pkg / "model.py").write_text(model.format(swap="1, 2").replace("x.transpose(1, 2)", "x"))
    assert analyze_file(str(pkg / "blocks.py"), ["MHA010"]) == []


def _package(tmp_path, files):
    pkg = tmp_path / "pk"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, text in files.items():
        (pkg / name).write_text(textwrap.dedent(text))
    return pkg


def test_named_arguments_beside_a_kwargs_splat_are_followed(tmp_path):
    # hf_decoder: ``layer(h, attention_mask=mask, **kwargs)`` over a ModuleList
    from flake8_mha.lint.engine import analyze_file

    pkg = _package(
        tmp_path,
        {
            "layers.py": """\
            import torch.nn.functional as F
            from torch import nn


            class Layer(nn.Module):
                def forward(self, h, attention_mask=None, is_causal=False):
                    return F.scaled_dot_product_attention(
                        h, h, h, attn_mask=attention_mask, is_causal=is_causal
                    )
            """,
            "model.py": """\
            from torch import nn

            from .layers import Layer


            class Encoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.embed = nn.Embedding(100, 64)
                    self.layers = nn.ModuleList([Layer() for _ in range(2)])

                def forward(self, input_ids, attention_mask, **kwargs):
                    h = self.embed(input_ids)
                    mask = attention_mask[:, None, None, :]
                    for layer in self.layers:
                        h = layer(h, attention_mask=mask, **kwargs)
                    return h
            """,
        },
    )
    got = analyze_file(str(pkg / "model.py"), ["MHA004", "MHA006"])
    # the int64 tokenizer mask at the call; ``is_causal`` may come in the
    # splat, so it is unknown: no MHA006 from its default
    assert [(f.line, f.col, f.code) for f in got] == [(16, 17, "MHA004")]


def test_a_module_made_by_a_partial_alias_is_held(tmp_path):
    # speechnet: ``make_attn = partial(nn.MultiheadAttention, batch_first=True)``,
    # ``self.attn = make_attn(d, h)``, a caller's keep-mask handed in
    from flake8_mha.lint.engine import analyze_file

    pkg = _package(
        tmp_path,
        {
            "layer.py": """\
            import functools

            from torch import nn

            make_attn = functools.partial(nn.MultiheadAttention, batch_first=True)


            class Layer(nn.Module):
                def __init__(self, d=64, h=4):
                    super().__init__()
                    self.attn = make_attn(d, h)

                def forward(self, x, pad_mask):
                    return self.attn(x, x, x, key_padding_mask=pad_mask, need_weights=False)[0]
            """,
            "model.py": """\
            from torch import nn

            from .layer import Layer


            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layer = Layer()

                def forward(self, x, ids):
                    return self.layer(x, ids != 0)
            """,
        },
    )
    got = analyze_file(str(pkg / "model.py"), ["MHA003"])
    assert [(f.line, f.col, f.code) for f in got] == [(12, 16, "MHA003")]


SONATI = """\
import torch.nn as nn


class CrossBlock(nn.Module):
    def __init__(self, d_model, nhead):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, nhead, batch_first=True)

    def forward(self, q, kv):
        attn_out, _ = self.attn(q, kv, kv)
        return q + attn_out


class Imputer(nn.Module):
    def __init__(self, in_dim, d_model=64, nhead=4):
        super().__init__()
        self.proj = nn.Linear(in_dim, d_model)
        self.block = CrossBlock(d_model, nhead)

    def forward(self, query, neighbours):
        q = self.proj(query).unsqueeze({axis}){comment}
        return self.block(q, self.proj(neighbours))[:, 0]
"""


def test_a_one_position_query_from_the_caller_saves_nothing():
    # review 16's sonati: the caller's ``unsqueeze(1)  # (B, 1, D)``, as in the method
    assert _found(SONATI.format(axis=1, comment="  # (B, 1, D)"), ["MHA102"]) == []
    assert _found(SONATI.format(axis=0, comment="  # (1, B, D)"), ["MHA102"]) == [
        ("MHA102", 10, 23)
    ]
