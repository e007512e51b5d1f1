"""MHA001 on released code that swaps its data right (release review 8):
each form below gave a false MHA001 on sequence-first data.

- deepod's TranAD (``fixtures/program_layout/time_windows``): the swap kept
  through ``window.float().to(device)``, ``view(1, local_bs, n)`` naming the
  batch, a decoder fed ``*self.encode(...)`` from another file;
- pykt's SAKT: ``q, k, v = q.permute(1, 0, 2), k.permute(...), ...``;
- mmaction's UniFormerV2: ``x = x + self.drop_path(self.attention(self.ln_1(x)))``
  in blocks run in a loop;
- neuralhydrology: ``query.view(1, seq_len * batch_size, embed_dim)``, a
  batch merged with the sequence."""

from __future__ import annotations

import textwrap

from fixture_expect import assert_package_runs

from flake8_mha.lint.engine import analyze_source


def _found(src, codes=("MHA001",)):
    src = textwrap.dedent(src)
    return [(f.code, f.line, f.col) for f in analyze_source(src, "m.py", list(codes))]


def test_tranad_over_three_files():
    assert_package_runs("fixtures/program_layout/time_windows",
                        [("layers.py", 36, 26, "MHA001")], select="MHA0,MHA1")


SAKT = """\
    import torch.nn as nn


    class Blocks(nn.Module):
        def __init__(self, emb_size, heads):
            super().__init__()
            self.attn = nn.MultiheadAttention(emb_size, heads)

        def forward(self, q=None, k=None, v=None):
            SWAP
            attn_emb, _ = self.attn(q, k, v, need_weights=False)
            return attn_emb.permute(1, 0, 2)


    class SAKT(nn.Module):
        def __init__(self, emb_size, heads):
            super().__init__()
            self.blocks = nn.ModuleList([Blocks(emb_size, heads) for _ in range(2)])

        def forward(self, qemb, xemb):
            for i in range(2):
                xemb = self.blocks[i](qemb, xemb, xemb)
            return xemb
    """


def test_a_swap_of_three_in_one_line_is_the_conversion():
    src = SAKT.replace("SWAP", "q, k, v = q.permute(1, 0, 2), k.permute(1, 0, 2), v.permute(1, 0, 2)")
    assert _found(src) == []


def test_without_the_swap_the_layout_is_unknown_and_reported():
    src = SAKT.replace("SWAP", "pass")
    assert _found(src) == [("MHA001", 7, 21)]


UNIFORMER = """\
    import torch
    import torch.nn as nn


    class Block(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.attn = nn.MultiheadAttention(d, h)
            self.ln_1 = nn.LayerNorm(d)
            self.drop_path = nn.Identity()

        def attention(self, x):
            return self.attn(x, x, x, need_weights=False)[0]

        def forward(self, x, T=8):
            if self.local:
                tmp_x = x[1:, :, :]
                L, NT, C = tmp_x.shape
                tmp_x = tmp_x.view(NT, C, L).permute(2, 0, 1).contiguous().view(L, NT, C)
                x = torch.cat([x[:1, :, :], tmp_x], dim=0)
            x = x + self.drop_path(self.attention(self.ln_1(x)))
            return x


    class Transformer(nn.Module):
        def __init__(self, d, h, n):
            super().__init__()
            self.resblocks = nn.ModuleList([Block(d, h) for _ in range(n)])

        def forward(self, x):
            for i, resblock in enumerate(self.resblocks):
                x = resblock(x, 8)
            return x


    class Vision(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.transformer = Transformer(d, h, 4)

        def forward(self, x):
            x = FEED
            return self.transformer(x)
    """


def test_a_residual_in_blocks_run_in_a_loop_keeps_the_swap():
    assert _found(UNIFORMER.replace("FEED", "x.permute(1, 0, 2)  # NLD -> LND")) == []


def test_the_same_blocks_fed_batch_first_are_reported():
    src = UNIFORMER.replace("FEED", "x.view(B, L, C)")
    assert _found(src) == [("MHA001", 8, 21)]
    (f,) = analyze_source(textwrap.dedent(src), "m.py", ["MHA001"])
    assert "line 42: `x.view(B, L, C)`" in f.message


MERGED = """\
    import torch.nn as nn


    class Groups(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.attention = nn.MultiheadAttention(embed_dim=d, num_heads=2)

        def forward(self, query, key, n_groups, seq_len, batch_size, embed_dim):
            query = query.view(SHAPE)
            key = key.view(n_groups, seq_len * batch_size, embed_dim)
            return self.attention(query, key, key, need_weights=False)[0]
    """


def test_a_batch_merged_with_the_sequence_is_a_batch_axis():
    assert _found(MERGED.replace("SHAPE", "1, seq_len * batch_size, embed_dim")) == []
    got = _found(MERGED.replace("SHAPE", "seq_len * batch_size, 1, embed_dim"))
    assert got == [("MHA001", 7, 26)]


def test_a_qualified_batch_name_names_the_batch():
    src = """\
        import torch.nn as nn
        attn = nn.MultiheadAttention(16, 2)
        def run(x, local_bs, n):
            y = x.view(local_bs, 1, n)
            return attn(y, y, y, need_weights=False)[0]
        """
    assert _found(src) == [("MHA001", 2, 8)]


BOXES = """\
    import torch.nn as nn


    class BboxDecoderLayer(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.self_attn = nn.MultiheadAttention(d, h, batch_first=True)
            self.cross_attn = nn.MultiheadAttention(d, h, batch_first=True)
            self.norm = nn.LayerNorm(d)

        def forward(self, x, memory, batch_mask=None):
            \"\"\"x: cell states, shape (N, D); memory: (N, S, D).\"\"\"
            x_unsq = x.unsqueeze(0)
            sa_out, _ = self.self_attn(x_unsq, x_unsq, x_unsq, attn_mask=batch_mask, need_weights=False)
            x = self.norm(x + sa_out.squeeze(0))
            x_unsq = FEED
            ca_out, _ = self.cross_attn(x_unsq, memory, memory, need_weights=False)
            return x + ca_out.squeeze(1)
    """


def test_cells_as_one_sequence_then_as_one_token_queries():
    # docling's box decoder: (N, D) cells, N neither batch nor sequence alone
    assert _found(BOXES.replace("FEED", "x.unsqueeze(1)"), ["MHA010"]) == []


def test_only_an_inserted_axis_is_exempt():
    # the same (L, 1, D) made by a swap states a sequence-first layout: reported
    got = _found(BOXES.replace("FEED", "sa_out.transpose(0, 1)"), ["MHA010"])
    assert got == [("MHA010", 17, 21)]


DECODE = """\
    import torch.nn as nn


    class DecoderLayer(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.self_attn = nn.MultiheadAttention(d, h)

        def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                    memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
            return tgt + self.self_attn(tgt, memory, memory)[0]


    class Net(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.decoder = nn.TransformerDecoder(DecoderLayer(d, h), 1)

        def forward(self, window, n_features):
            local_bs = window.shape[1]
            elem = window[-1, :, :].view(LEN, local_bs, n_features)
            return self.decoder(elem, window)
    """


def test_a_query_one_step_long_by_its_callers_view_saves_nothing():
    # deepod's TranAD: the last step of each window, ``view(1, local_bs, n)``
    assert _found(DECODE.replace("LEN", "1"), ["MHA102"]) == []
    assert _found(DECODE.replace("LEN", "2"), ["MHA102"]) == [("MHA102", 11, 22)]


ONE_HEAD = """\
    import torch.nn as nn


    class Groups(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.attention = nn.MultiheadAttention(embed_dim=d, num_heads=1)

        def forward(self, query, key, n_groups, seq_len, batch_size, embed_dim):
            query = query.view(SHAPE)
            return self.attention(query, key, key, need_weights=False)[0]
    """


def test_an_odd_head_count_fed_sequence_first_data_is_moot():
    # neuralhydrology: at batch_first=False the fastpath is off at any head count
    assert _found(ONE_HEAD.replace("SHAPE", "1, seq_len * batch_size, embed_dim"),
                  ["MHA001", "MHA101"]) == []
    got = _found(ONE_HEAD.replace("SHAPE", "seq_len * batch_size, 1, embed_dim"),
                 ["MHA001", "MHA101"])
    # its one call cross-attends (query is not key): no fastpath at any head count
    assert got == [("MHA001", 7, 26)]
    self_attention = ONE_HEAD.replace("(query, key, key,", "(query, query, query,")
    got = _found(self_attention.replace("SHAPE", "seq_len * batch_size, 1, embed_dim"),
                 ["MHA001", "MHA101"])
    assert got == [("MHA001", 7, 26), ("MHA101", 7, 26)]
