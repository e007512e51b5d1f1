"""Probe T (twenty-seventh stop): what it found missed, misread or said
twice, each at the exact code, line and column.

- ``config_modules``: sizes read as ``cfg.NAME`` from a config module
  imported whole; a decoder that builds two modules alike is one MHA008
  naming both lines; keys and values cut from one projection by ``chunk``
  have half its heads (MHA014: 12 over 8 reported, a chunk of 2 * 4 heads
  over 12 silent).
- SAINT's intersample ``rearrange(x, "b n d -> 1 b (n d)")`` is one
  sequence of the batch's rows: no MHA010.
- Keep-masks from ``num_agents``; a left-padding mask ``arange < S -
  lengths`` is True on the padding.
- MHA005 through a wrapper names the flag, not the mask argument beside it.
- A block reached with its own causal mask and a caller's padding is judged
  for the padding at the callers only."""

from __future__ import annotations

import textwrap

from fixture_expect import assert_package_runs

from flake8_mha.lint.engine import analyze_file, analyze_source

PKG = "fixtures/program_calls/config_modules"


def _found(src, codes=None):
    got = analyze_source(textwrap.dedent(src), "t.py", codes)
    return [(f.code, f.line, f.col) for f in got]


def test_config_modules():
    assert_package_runs(PKG, [("attention.py", 20, 16, "MHA014"), ("model.py", 13, 24, "MHA008")])
    (f,) = analyze_file(f"{PKG}/model.py", ["MHA008"])
    assert f.message.endswith(
        f"this call builds it through Decoder() at {PKG}/decoder.py:9 and {PKG}/decoder.py:10"
    )
    (g,) = analyze_file(f"{PKG}/attention.py", ["MHA014"])
    assert "12 query heads over 8 key/value heads" in g.message


GQA = """\
    import torch.nn.functional as F

    H, KV, D = 12, {kv}, 8

    def attend(x, wq, wkv):
        b, s, _ = x.shape
        q = (x @ wq).view(b, s, H, D).transpose(1, 2)
        kv = (x @ wkv).view(b, s, 2 * KV, D).transpose(1, 2)
        k, v = kv.{cut}
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    """


def test_keys_and_values_cut_from_one_projection():
    # 2 * 4 heads cut in two: 4 each, which divide 12 (the file runs)
    assert _found(GQA.format(kv=4, cut="chunk(2, dim=1)"), ["MHA014"]) == []
    assert _found(GQA.format(kv=4, cut="split(KV, dim=1)"), ["MHA014"]) == []
    for cut in ("chunk(2, dim=1)", "split(KV, dim=1)"):
        assert _found(GQA.format(kv=5, cut=cut), ["MHA014"]) == [("MHA014", 10, 12)]


def test_intersample_attention_is_one_sequence_of_rows():
    src = """\
        import torch.nn as nn
        from einops import rearrange

        class Intersample(nn.Module):
            def __init__(self, dim, features, heads=4):
                super().__init__()
                self.attn = nn.MultiheadAttention(dim * features, heads, batch_first=True)

            def forward(self, x):
                n = x.shape[1]
                rows = rearrange(x, "b n d -> 1 b (n d)")
                rows = self.attn(rows, rows, rows, need_weights=False)[0]
                return rearrange(rows, "1 b (n d) -> b n d", n=n)

            def forward_swapped(self, x):
                rows = rearrange(x, "b n d -> n b d")
                return self.attn(rows, rows, rows, need_weights=False)[0]
        """
    assert _found(src, ["MHA010"]) == [("MHA010", 17, 16)]


MASKS = """\
    import torch
    import torch.nn.functional as F

    def agents(q, k, v, num_agents, n):
        keep = torch.arange(n)[None, :] < num_agents[:, None]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=~keep[:, None, None, :])

    def left(q, k, v, lengths, seq_len):
        pos = torch.arange(seq_len, device=lengths.device)
        pad = pos[None, :] < (seq_len - lengths)[:, None]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=pad[:, None, None, :])

    def left_keep(q, k, v, lengths, seq_len):
        pos = torch.arange(seq_len, device=lengths.device)
        keep = pos[None, :] >= seq_len - lengths[:, None]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])

    def not_a_start(q, k, v, lengths, prefix_len, seq_len):
        pos = torch.arange(seq_len, device=lengths.device)
        m = pos[None, :] < (lengths - prefix_len)[:, None]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m[:, None, None, :])
    """


def test_agent_counts_and_left_padding():
    assert _found(MASKS, ["MHA002"]) == [("MHA002", 6, 12), ("MHA002", 11, 12)]


WRAPPED = """\
    import torch.nn as nn

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            layer = nn.TransformerEncoderLayer(32, 4, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2)

        def forward(self, x, padding_mask=None, attn_mask=None, causal=False):
            return self.encoder(
                x, mask=attn_mask, src_key_padding_mask=padding_mask, is_causal=causal
            )

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = Encoder()

        def forward(self, x, pad):
            return self.encoder(x, padding_mask=pad, causal=True)
    """


def test_mha005_through_a_wrapper_names_the_flag():
    (f,) = analyze_source(textwrap.dedent(WRAPPED), "t.py", ["MHA005"])
    assert (f.line, f.col) == (20, 16)
    assert "the call reaches TransformerEncoder's is_causal at " in f.message


BLOCKS = """\
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Attention(nn.Module):
        def forward(self, x, mask):
            return F.scaled_dot_product_attention(x, x, x, attn_mask=mask)

    class DecoderLayer(nn.Module):
        def __init__(self):
            super().__init__()
            self.self_attn = Attention()
            self.cross_attn = Attention()

        def forward(self, x, self_mask, enc_mask):
            return self.cross_attn(self.self_attn(x, self_mask), enc_mask)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = DecoderLayer()

        def decode(self, x, enc_mask):
            causal = torch.ones(x.size(2), x.size(2), dtype=torch.bool).tril()
            return self.layer(x, {causal}, enc_mask)

        def forward(self, x, tokens):
            pad = (tokens == 0)[:, None, None, :]
            return self.decode(x, pad)
    """


def test_a_callers_padding_is_judged_at_the_caller_only():
    """The padding a parameter of ``decode`` gives is judged at ``decode``'s
    caller (once), the causal mask made in ``decode`` where it is made."""
    assert _found(BLOCKS.format(causal="causal"), ["MHA002"]) == [("MHA002", 29, 16)]
    assert _found(BLOCKS.format(causal="~causal"), ["MHA002"]) == [
        ("MHA002", 25, 16),
        ("MHA002", 29, 16),
    ]
