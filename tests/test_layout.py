"""The layout analysis and its rules: MHA001 (changed), MHA010, MHA903.

Each evidence kind of RULES.md "Layout" is checked through the engine with the
exact (code, line, col) and the line the layout evidence names; the traps stay
silent; the rules are checked through real flake8 and the CLI; the witnesses
run real torch.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from flake8_mha.lint.engine import analyze_source

CODES = ["MHA001", "MHA010", "MHA903"]
HEAD = "import torch\nimport torch.nn as nn\n"  # lines 1-2


def findings(body: str, codes=CODES):
    src = HEAD + textwrap.dedent(body)
    return analyze_source(src, "t.py", codes)


def got(body: str, codes=CODES):
    return [(f.code, f.line, f.col) for f in findings(body, codes)]


def only(body: str, codes=CODES):
    found = findings(body, codes)
    assert len(found) == 1, [(f.code, f.line, f.col, f.message) for f in found]
    return found[0]


# ----------------------------------------------------------------------- evidence kinds

# (name, body with attention built on line 3, code, layout_line, layout_how)
EVIDENCE = [
    ("einops", """\
        attn = nn.MultiheadAttention(64, 8)
        from einops import rearrange
        def f(x):
            x = rearrange(x, "b n d -> n b d")
            return attn(x, x, x)[0]
        """, "MHA903", 6, "einops pattern"),
    ("einops_to_batch_first", """\
        attn = nn.MultiheadAttention(64, 8)
        from einops import rearrange
        def f(x):
            x = rearrange(x, "l b d -> b l d")
            return attn(x, x, x)[0]
        """, "MHA001", 6, "einops pattern"),
    ("einsum", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(x, w):
            y = torch.einsum("bld,de->lbe", x, w)
            return attn(y, y, y)[0]
        """, "MHA903", 5, "einsum string"),
    ("shape_unpacking", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(x):
            B, L, D = x.shape
            return attn(x, x, x)[0]
        """, "MHA001", 5, "shape unpacking"),
    ("size_unpacking_then_transpose", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(x):
            bsz, seq_len, _ = x.size()
            y = x.transpose(0, 1)
            return attn(y, y, y)[0]
        """, "MHA903", 6, "transpose"),
    ("view_named", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(flat, B, L):
            x = flat.view(B, L, -1)
            return attn(x, x, x)[0]
        """, "MHA001", 5, "view with named sizes"),
    ("reshape_named_seq_first", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(flat, seq_len, batch_size):
            x = flat.reshape(seq_len, batch_size, 64)
            return attn(x, x, x)[0]
        """, "MHA903", 5, "reshape with named sizes"),
    ("randn_named", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(B, L, E):
            x = torch.randn(B, L, E)
            return attn(x, x, x)[0]
        """, "MHA001", 5, "torch.randn with named sizes"),
    ("permute", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(x):
            B, L, E = x.shape
            y = x.permute(1, 0, 2)
            return attn(y, y, y)[0]
        """, "MHA903", 6, "permute"),
    ("swapaxes", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(x):
            B, L, E = x.shape
            y = x.swapaxes(0, 1)
            return attn(y, y, y)[0]
        """, "MHA903", 6, "swapaxes"),
    ("movedim", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(x):
            B, L, E = x.shape
            y = torch.movedim(x, 1, 0)
            return attn(y, y, y)[0]
        """, "MHA903", 6, "movedim"),
    ("flatten_conv_feature_map", """\
        attn = nn.MultiheadAttention(64, 8)
        conv = nn.Conv2d(3, 64, 3)
        def f(images):
            src = conv(images).flatten(2).permute(2, 0, 1)
            return attn(src, src, src)[0]
        """, "MHA903", 6, "permute"),
    ("unflatten", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(x):
            # x: (N, C, H, W)
            y = x.flatten(2).unflatten(2, (H, W)).flatten(2).transpose(1, 2)
            return attn(y, y, y)[0]
        """, "MHA001", 6, "transpose"),
    ("embedding_of_ids", """\
        attn = nn.MultiheadAttention(64, 8)
        emb = nn.Embedding(100, 64)
        def f(ids):
            bsz, seq_len = ids.shape
            h = emb(ids)
            return attn(h, h, h)[0]
        """, "MHA001", 7, "embedding of ids"),
    ("conv1d_permuted", """\
        attn = nn.MultiheadAttention(64, 8)
        conv = nn.Conv1d(1, 64, 5)
        def f(wave):
            s = conv(wave).permute(2, 0, 1)
            return attn(s, s, s)[0]
        """, "MHA903", 6, "permute"),
    ("preserving_ops_and_residual", """\
        attn = nn.MultiheadAttention(64, 8)
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(8, 64)
                self.norm = nn.LayerNorm(64)
                self.drop = nn.Dropout(0.1)
                self.pos = nn.Parameter(torch.zeros(1, 64))
            def forward(self, x):
                B, L, F = x.shape
                h = self.drop(torch.relu(self.norm(self.proj(x)))) + self.pos
                return attn(h, h, h)[0]
        """, "MHA001", 12, "shape unpacking"),
    ("module_output", """\
        attn = nn.MultiheadAttention(64, 8)
        first = nn.MultiheadAttention(64, 8, batch_first=False)
        def f(x):
            # x: (L, N, E)
            y, _ = first(x, x, x)
            return attn(y, y, y)[0]
        """, "MHA903", 7, "module output"),
    ("comment_same_line", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(feats):
            x = feats.mean(-1)  # (L, N, E)
            return attn(x, x, x)[0]
        """, "MHA903", 5, "shape comment"),
    ("comment_previous_line", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(feats):
            # (B, L, E)
            x = feats.mean(-1)
            return attn(x, x, x)[0]
        """, "MHA001", 5, "shape comment"),
    ("comment_named", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(x):
            return attn(x, x, x)[0]  # x: (L, N, E)
        """, "MHA903", 5, "shape comment"),
    ("comment_bs_x_seq_len", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(h):
            # bs x seq_len x d_model
            states = h.float()
            return attn(states, states, states)[0]
        """, "MHA001", 5, "shape comment"),
    ("comment_arrow", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(fmap):
            src = fmap.permute(2, 3, 0, 1).flatten(0, 1)  # (N, C, H, W) -> (H * W, N, C)
            return attn(src, src, src)[0]
        """, "MHA903", 5, "shape comment"),
    # ESM's arrow: the data after the swap is sequence-first
    ("comment_fat_arrow", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(x):
            x = x.transpose(0, 1)  # (B, T, E) => (T, B, E)
            return attn(x, x, x)[0]
        """, "MHA903", 5, "shape comment"),
    ("docstring_google_style", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(embed):
            '''Decode.

            Args:
                embed (torch.Tensor): Input embeddings with shape (bs, num_queries, d_model).
            '''
            return attn(embed, embed, embed)[0]
        """, "MHA001", 8, "shape comment"),
    # transformers' docstrings: the entry's type, or its description on the
    # lines below it, states the shape; the evidence is the entry's line
    ("docstring_description_below", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(hidden_states):
            '''
            Args:
                hidden_states (`torch.Tensor`):
                    Input to the layer of shape `(seq_len, batch, embed_dim)`.
            '''
            return attn(hidden_states, hidden_states, hidden_states)[0]
        """, "MHA903", 7, "shape comment"),
    ("docstring_shape_in_the_type", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(inputs_embeds):
            r'''
            Args:
                inputs_embeds (`torch.Tensor` of shape `(batch_size, sequence_length, hidden_size)`):
                    The embeddings.
            '''
            return attn(inputs_embeds, inputs_embeds, inputs_embeds)[0]
        """, "MHA001", 7, "shape comment"),
    ("docstring_sphinx_param", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(x):
            '''Encode.

            :param x: the tokens, of shape (batch, seq, dim)
            '''
            return attn(x, x, x)[0]
        """, "MHA001", 7, "shape comment"),
    ("docstring_entry_without_a_type", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(memory):
            '''Args:
                memory: features
                    with shape (L, N, E)
            '''
            return attn(memory, memory, memory)[0]
        """, "MHA903", 6, "shape comment"),
    # ``repeat`` by a named size: that axis takes the size's role
    ("repeat_by_a_named_size", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(src, query):
            batch_size = src.shape[0]
            q = query.unsqueeze(1).repeat(1, batch_size, 1)
            return attn(q, q, q)[0]
        """, "MHA903", 6, "repeat with named sizes"),
    # ``tensor if pos is None else tensor + pos``: pos has a known layout, so it
    # is no None, and the sum has pos's layout
    ("none_test_of_known_data", """\
        attn = nn.MultiheadAttention(64, 8)
        def with_pos(tensor, pos):
            return tensor if pos is None else tensor + pos
        def f(x, pos_embed):
            # (L, N, E)
            pos = pos_embed.float()
            q = with_pos(x, pos)
            return attn(q, q, x)[0]
        """, "MHA903", 7, "shape comment"),
    ("jaxtyping", """\
        attn = nn.MultiheadAttention(64, 8)
        from jaxtyping import Float
        def f(x: Float[torch.Tensor, "batch seq dim"]):
            return attn(x, x, x)[0]
        """, "MHA001", 5, "jaxtyping annotation"),
    ("through_helper", """\
        attn = nn.MultiheadAttention(64, 8)
        def to_seq_first(t):
            return t.transpose(0, 1)
        def f(x):
            B, L, E = x.shape
            y = to_seq_first(x)
            return attn(y, y, y)[0]
        """, "MHA903", 5, "transpose"),
    ("through_callers", """\
        attn = nn.MultiheadAttention(64, 8)
        def encode(x):
            return attn(x, x, x)[0]
        def main(tokens_emb):
            B, L, E = tokens_emb.shape
            return encode(tokens_emb.transpose(0, 1))
        """, "MHA903", 8, "transpose"),
    ("through_method_and_forward_callers", """\
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.attn = nn.MultiheadAttention(64, 8)
            def forward(self, x):
                return self.attn(x, x, x)[0]
        block = Block()
        def run(x):
            B, L, E = x.shape
            return block(x)
        """, "MHA001", 11, "shape unpacking"),
    ("nested_tensor", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(chunks):
            x = torch.nested.nested_tensor(chunks)
            return attn(x, x, x)[0]
        """, "MHA001", 5, "nested tensor"),
    # a slice keeps every axis; a concatenation keeps what its known operands say
    ("slice_keeps_the_layout", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(x, n):
            B, L, D = x.shape
            y = x[:, :n]
            return attn(y, y, y)[0]
        """, "MHA001", 5, "shape unpacking"),
    ("a_helper_s_returned_tuple_unpacked", """\
        attn = nn.MultiheadAttention(64, 8)
        def prepare(x):
            y = x.transpose(0, 1)  # (L, N, E)
            return y, y.shape[0]
        def f(x):
            y, n = prepare(x)
            return attn(y, y, y)[0]
        """, "MHA903", 5, "shape comment"),
    ("concat_with_a_token_of_unknown_layout", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(x, token):
            y = x.transpose(0, 1)  # (L, N, E)
            y = torch.cat([token, y[1:]], dim=0)
            return attn(y, y, y)[0]
        """, "MHA903", 5, "shape comment"),
    # one size named as the batch places the batch axis (SAM 3's segmentation head)
    ("one_batch_size_from_axis_1", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(hidden, prompt):
            bs = hidden.shape[1]
            out = attn(query=hidden, key=prompt, value=prompt)[0]
            return out.view(-1, bs, 64)
        """, "MHA903", 5, "shape unpacking"),
    ("one_batch_size_from_axis_0", """\
        attn = nn.MultiheadAttention(64, 8)
        def f(x):
            batch_size = x.size(0)
            return attn(x, x, x)[0].view(batch_size, -1)
        """, "MHA001", 5, "shape unpacking"),
]


@pytest.mark.parametrize(
    "size",
    [
        "n = x.shape[1]",  # the batch in torch's docs, the sequence in einops
        "seq_len = x.shape[0]",  # a length alone does not place the batch
        "bs = x.shape[2]",  # not an axis of the module's 3-D input that places it
        "bs = y.shape[1]",  # another tensor
    ],
)
def test_one_size_that_does_not_place_the_batch_is_no_evidence(size):
    f = only(f"""\
        attn = nn.MultiheadAttention(64, 8)
        def f(x, y):
            {size}
            return attn(x, x, x)[0]
        """)
    assert (f.code, f.line, f.evidence["layout_kind"]) == ("MHA001", 3, None)


def test_channels_and_embedding_name_one_axis():
    """``(seq_len, batch, embed_dim)`` plus ``[num_queries, batch_size,
    num_channels]`` is sequence-first: the last axis is the features in both."""
    f = only("""\
        attn = nn.MultiheadAttention(64, 8)
        def f(x, weight):  # x: (L, N, E)
            # [num_queries, batch_size, num_channels]
            pos = weight.unsqueeze(1).float()
            q = x + pos
            return attn(q, q, q)[0]
        """, ["MHA001", "MHA903"])
    assert (f.code, f.line, f.col) == ("MHA903", 3, 8)


def test_a_method_chosen_by_a_conditional_is_called():
    """``fn = self.forward_pre if self.pre_norm else self.forward_post`` then
    ``fn(x)``: each method is called with ``x`` (SAM 3's and DETR's layers)."""
    f = only("""\
        class Layer(nn.Module):
            def __init__(self, pre_norm):
                super().__init__()
                self.attn = nn.MultiheadAttention(64, 8)
                self.pre_norm = pre_norm
            def forward_pre(self, x):
                return self.attn(x, x, x)[0]
            def forward_post(self, x):
                return x + self.attn(x, x, x)[0]
            def forward(self, x):
                fn = self.forward_pre if self.pre_norm else self.forward_post
                return fn(x)
        layer = Layer(True)
        def run(feats):
            x = feats.flatten(2).permute(2, 0, 1)  # (N, C, H, W) -> (HW, N, C)
            return layer(x)
        """)
    assert (f.code, f.line, f.col) == ("MHA903", 6, 21)
    assert f.evidence["layout_line"] == 17


def test_sam3_s_geometry_encoder_in_one_file():
    """What SAM 3's geometry encoder does to its prompts before its layers,
    in one file: a batch size read from one definition of the data (joined
    later with others), a helper's returned sequence built by
    ``torch.zeros((max_length, batch_size, hidden_size))`` and written by
    ``scatter``, a projection first set to None, and a layer whose output
    comes back through ``fwd_fn``."""
    f = only("""\
        def concat(seq1, seq2):
            max_length, batch_size, hidden_size = 9, seq1.size(1), seq1.size(2)
            out = torch.zeros((max_length, batch_size, hidden_size))
            out = out.scatter(0, seq1.long(), seq2)
            return out, max_length
        class Layer(nn.Module):
            def __init__(self, pre_norm):
                super().__init__()
                self.attn = nn.MultiheadAttention(64, 8)
                self.pre_norm = pre_norm
            def forward_pre(self, tgt):
                return tgt + self.attn(tgt, tgt, tgt)[0]
            def forward_post(self, tgt):
                return tgt + self.attn(tgt, tgt, tgt)[0]
            def forward(self, tgt):
                fwd_fn = self.forward_pre if self.pre_norm else self.forward_post
                return fwd_fn(tgt)
        class Geometry(nn.Module):
            def __init__(self, proj, n):
                super().__init__()
                self.final_proj = None
                if proj:
                    self.final_proj = nn.Linear(64, 64)
                self.layers = nn.ModuleList([Layer(True) for _ in range(n)])
            def encode(self, boxes):
                return boxes.float(), boxes
            def forward(self, boxes, cls):
                embeds, mask = self.encode(boxes)
                bs = embeds.shape[1]
                if cls is not None:
                    embeds, n = concat(embeds, cls)
                if self.final_proj is not None:
                    embeds = self.final_proj(embeds)
                for layer in self.layers:
                    embeds = layer(embeds)
                return embeds
        """)
    assert (f.code, f.line, f.col) == ("MHA903", 11, 21)
    assert f.evidence["layout"] == "(?, N, E)"


def test_an_element_of_the_tuple_a_layer_returns():
    """transformers' layers return ``outputs = (hidden_states,)``, maybe
    ``outputs += (weights,)``, through ``forward_post``; the caller keeps
    ``layer_outputs[0]`` for the next layer."""
    f = only("""\
        class Layer(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.attn = nn.MultiheadAttention(d, 8)
            def forward_post(self, hidden_states, output_attentions=False):
                hidden_states, weights = self.attn(hidden_states, hidden_states, hidden_states)
                outputs = (hidden_states,)
                if output_attentions:
                    outputs += (weights,)
                return outputs
            def forward(self, hidden_states, output_attentions=False):
                outputs = self.forward_post(hidden_states, output_attentions)
                return outputs
        class Decoder(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.layers = nn.ModuleList([Layer(d) for _ in range(3)])
            def forward(self, feats):
                hidden_states = feats.flatten(2).permute(2, 0, 1)  # (N, C, H, W) -> (HW, N, C)
                for layer in self.layers:
                    layer_outputs = layer(hidden_states)
                    hidden_states = layer_outputs[0]
                return hidden_states
        """)
    assert (f.code, f.line, f.col) == ("MHA903", 6, 21)
    assert f.evidence["layout_line"] == 21


def test_a_tensor_s_own_index_is_no_layout():
    """``x[0]`` of a tensor drops its first axis: no layout comes of it."""
    f = only("""\
        attn = nn.MultiheadAttention(64, 8)
        def f(feats):
            x = feats.flatten(2).permute(2, 0, 1)  # (N, C, H, W) -> (HW, N, C)
            y = x[0]
            return attn(y, y, y)[0]
        """)
    assert (f.code, f.line, f.evidence["layout_kind"]) == ("MHA001", 3, None)


def test_n_beside_a_batch_and_a_sequence_is_no_role():
    """SpeechBrain's ``[B, L, N]``: N is the filters, not a second sequence;
    the layout is batch-first all the same."""
    f = only("""\
        attn = nn.MultiheadAttention(64, 8)
        def f(src):
            '''Arguments
            ---------
            src : torch.Tensor
                Tensor shape [B, L, N]
            '''
            return attn(src, src, src)[0]
        """)
    assert (f.code, f.line, f.evidence["layout"], f.evidence["layout_line"]) == (
        "MHA001", 3, "(N, L, ?)", 7)


def test_n_beside_an_unnamed_size_is_no_batch():
    """ESPnet's DPTNet: ``reshape(batch * n_chunks, chunk_size, N)``, N the
    features; the layer then permutes to sequence-first as its comment says."""
    f = only("""\
        attn = nn.MultiheadAttention(64, 8)
        def layer(x):
            # (batch, seq, input_size) -> (seq, batch, input_size)
            src = x.permute(1, 0, 2)
            return attn(src, src, src)[0].permute(1, 0, 2)
        def run(x, batch, n_chunks, chunk_size, N):
            x = x.transpose(1, -1).reshape(batch * n_chunks, chunk_size, N)
            return layer(x)
        """, ["MHA001", "MHA903"])
    # ``batch * n_chunks`` is a batch axis merged with another: the reshape
    # states (N, ?, ?) and the permute makes it sequence-first
    assert (f.code, f.line, f.evidence["layout_line"]) == ("MHA903", 3, 6)


def test_a_docstring_s_returns_section_is_not_its_parameters():
    f = only("""\
        attn = nn.MultiheadAttention(64, 8)
        def f(x):
            '''Encode.

            Returns:
                x (torch.Tensor): the output, of shape (B, L, E).
            '''
            return attn(x, x, x)[0]
        """)
    assert (f.code, f.line, f.evidence["layout_kind"]) == ("MHA001", 3, None)


def test_repeat_by_a_size_it_cannot_name_is_no_evidence():
    """``n`` alone, ``h`` alone, or ``x.shape[0]`` of data of unknown layout."""
    for count in ("n, 1, 1", "1, h, 1", "x.shape[0], 1, 1", "*sizes"):
        f = only(f"""\
            attn = nn.MultiheadAttention(64, 8)
            def f(x, t, n, h, sizes):
                q = t.repeat({count})
                return attn(q, q, q)[0]
            """)
        assert (f.code, f.line, f.evidence["layout_kind"]) == ("MHA001", 3, None), count


@pytest.mark.parametrize("name,body,code,line,how", EVIDENCE, ids=[e[0] for e in EVIDENCE])
def test_each_evidence_kind_decides_the_layout(name, body, code, line, how):
    f = only(body)
    built = 6 if name == "through_method_and_forward_callers" else 3
    col = 21 if built == 6 else 8
    assert (f.code, f.line, f.col) == (code, built, col)
    assert f.evidence["layout_line"] == line
    assert f.evidence["layout_how"] == how
    assert f.evidence["batch_first_data"] is (code == "MHA001")


def test_known_batch_first_message_names_the_evidence_line():
    f = only(EVIDENCE[3][1])
    assert f.message == ("MultiheadAttention built without batch_first is fed batch-first data "
                         "((N, L, E), line 5: `B, L, D = x.shape`): it reads axis 0 as the "
                         "sequence and mixes samples across the batch")


def test_unknown_layout_and_never_called_keep_the_plain_message():
    never = only("attn = nn.MultiheadAttention(64, 8)\n")
    unknown = only("""\
        attn = nn.MultiheadAttention(64, 8)
        def f(x):
            y = x * 2  # no evidence of x
            return attn(y, y, y)[0]
        """)
    for f in (never, unknown):
        assert (f.code, f.line, f.col) == ("MHA001", 3, 8)
        assert f.message.endswith("built without batch_first: (N, L, E) input silently mixes "
                                  "samples across the batch")
        assert f.evidence["layout_kind"] is None
    assert never.evidence["called"] is False and unknown.evidence["called"] is True



def test_a_fallback_built_where_the_torch_has_no_batch_first_is_not_reported():
    """torch-ecg: ``if "batch_first" in get_kwargs(nn.TransformerEncoderLayer):``
    builds the layer with the flag, ``else:`` without it, for a torch that
    has none (< 1.9). The fallback is not left to the default by choice:
    neither MHA001 nor MHA903. A test that names something else keeps it."""
    code = """\
        class M(nn.Module):
            def __init__(self, d, h, bf):
                super().__init__()
                if TEST:
                    layer = nn.TransformerEncoderLayer(d, h, batch_first=bf)
                else:
                    layer = nn.TransformerEncoderLayer(d, h)
                self.encoder = nn.TransformerEncoder(layer, 2)
        """
    fallback = code.replace("TEST", '"batch_first" in get_kwargs(nn.TransformerEncoderLayer)')
    assert got(fallback) == []
    other = code.replace("TEST", "bf")
    assert got(other) == [("MHA001", 9, 21)]

# ----------------------------------------------------------------------- traps

def test_head_transpose_does_not_move_the_batch_axis():
    # transpose(1, 2) of (B, L, H, D) and (B, E, L): batch stays first
    f = only("""\
        attn = nn.MultiheadAttention(64, 8)
        def f(x):
            B, E, L = x.shape  # a (B, E, L) signal
            y = x.transpose(1, 2)
            return attn(y, y, y)[0]
        """)
    assert (f.code, f.line, f.col, f.evidence["layout"]) == ("MHA001", 3, 8, "(N, L, E)")


def test_round_trip_is_followed():
    assert got("""\
        attn = nn.MultiheadAttention(64, 8, batch_first=True)
        def f(x):
            B, L, E = x.shape
            y = x.transpose(0, 1)
            y = y.transpose(0, 1)
            return attn(y, y, y)[0]
        """) == []


def test_hand_written_attention_head_transpose_is_silent():
    assert got("""\
        import torch.nn.functional as F
        mixer = nn.MultiheadAttention(64, 8, batch_first=True)
        def f(x, wq):
            B, L, E = x.shape
            q = (x @ wq).view(B, L, 8, 8).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, q, q).transpose(1, 2).reshape(B, L, E)
            return mixer(x, y, y)[0]
        """) == []


def test_unbatched_input_is_neither_rule():
    assert got("""\
        attn = nn.MultiheadAttention(64, 8)
        def f(seq_len):
            x = torch.randn(seq_len, 64)
            return attn(x, x, x)[0]
        """, ["MHA001", "MHA010", "MHA903"]) == []


def test_inputs_that_disagree_name_the_one_the_stated_layout_contradicts():
    body = """\
        attn = nn.MultiheadAttention(64, 8, batch_first=True)
        def f(x, m):
            B, L, E = x.shape
            S, N, E2 = m.shape
            return attn({q}, x, x)[0]
        """
    # query (S, N, ?), key (N, L, E), the module stated batch-first: the query is
    # fed wrong (probe W's W15: torch raises, or mixes samples when S == N)
    assert got(body.format(q="m")) == [("MHA010", 7, 12)]
    assert got(body.format(q="m.transpose(0, 1)")) == []
    # not stated: not ours to pick
    unstated = body.format(q="m").replace("batch_first=True", "batch_first=flag()")
    assert got(unstated) == []
    assert got(body.format(q="m").replace("x, x)", "m, m)")) == [("MHA010", 7, 12)]


# ----------------------------------------------------------------------- MHA010

def test_mha010_stated_true_fed_a_transpose_of_batch_first_data():
    f = only("""\
        layer = nn.TransformerEncoderLayer(64, 8, batch_first=True)
        enc = nn.TransformerEncoder(layer, num_layers=2)
        def f(x):
            bsz, seq_len, _ = x.shape
            return enc(x.transpose(0, 1))
        """)
    assert (f.code, f.line, f.col) == ("MHA010", 7, 12)
    assert f.evidence["batch_first"] is True
    assert f.evidence["layout_kind"] == "sequence-first"
    assert f.evidence["layout_line"] == 7


def test_mha010_explicit_false_fed_batch_first_and_one_module_fed_both():
    assert got("""\
        attn = nn.MultiheadAttention(64, 8, batch_first=False)
        def f(x):
            B, L, E = x.shape
            a = attn(x, x, x)[0]
            s = x.transpose(0, 1)
            b = attn(s, s, s)[0]
            return a, b
        """) == [("MHA010", 6, 9)]


def test_mha010_needs_a_stated_known_flag():
    assert got("""\
        def f(x, flag, **kw):
            a = nn.MultiheadAttention(64, 8, batch_first=flag)
            b = nn.MultiheadAttention(64, 8, **kw)
            s = x.transpose(0, 1)
            B, L, E = x.shape
            return a(s, s, s)[0], b(s, s, s)[0]
        """, ["MHA010"]) == []


def test_default_module_fed_both_layouts_is_mha001_naming_the_batch_first_call():
    f = only("""\
        attn = nn.MultiheadAttention(64, 8)
        def f(x):
            B, L, E = x.shape
            s = x.transpose(0, 1)
            return attn(s, s, s)[0], attn(x, x, x)[0]
        """)
    assert (f.code, f.line, f.col, f.evidence["layout_line"]) == ("MHA001", 3, 8, 5)


def test_subclass_and_container_layers_are_covered():
    assert got("""\
        class Attn(nn.MultiheadAttention):
            pass
        a = Attn(64, 8)
        dec_layer = nn.TransformerDecoderLayer(64, 8)
        dec = nn.TransformerDecoder(dec_layer, 2)
        def f(x, mem):
            # x: (L, N, E)
            # mem: (S, N, E)
            return a(x, x, x)[0], dec(x, mem)
        """) == [("MHA903", 5, 5), ("MHA903", 6, 13)]


# ----------------------------------------------------------------------- flake8, CLI, fix

BAD_FILE = HEAD + textwrap.dedent("""\
    layer = nn.TransformerEncoderLayer(64, 8, batch_first=True)
    seq_attn = nn.MultiheadAttention(64, 8)
    def f(x):
        B, L, E = x.shape
        s = x.transpose(0, 1)
        return layer(s), seq_attn(s, s, s, need_weights=False)[0]
    """)


def _flake8(path, *args):
    proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", *args, str(path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    return [line.split(":", 1)[1] for line in proc.stdout.splitlines() if ": MHA" in line]


def test_through_real_flake8(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(BAD_FILE, encoding="utf-8")
    assert _flake8(path) == [
        "8:12: MHA010 TransformerEncoderLayer built with batch_first=True is fed sequence-first "
        "data ((L, N, E), line 7: `x.transpose(0, 1)`): samples mix across the batch"]
    opted = _flake8(path, "--enable-extensions", "MHA9")
    assert [line.split(" ", 2)[:2] for line in opted] == [["4:12:", "MHA903"], ["8:12:", "MHA010"]]


def test_mha903_is_off_by_default_and_fixed_through_the_cli(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(BAD_FILE, encoding="utf-8")
    run = [sys.executable, "-m", "flake8_mha.frontends.cli", "check"]
    default = subprocess.run(run + ["model.py"], cwd=tmp_path, capture_output=True, text=True)
    assert [line.split(" ")[:2] for line in default.stdout.splitlines()] == [["model.py:8:12:", "MHA010"]]
    diff = subprocess.run(run + ["--select", "MHA903", "--diff", "model.py"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert diff.returncode == 1, diff.stderr
    assert "-seq_attn = nn.MultiheadAttention(64, 8)\n" \
           "+seq_attn = nn.MultiheadAttention(64, 8, batch_first=False)\n" in diff.stdout
    assert path.read_text(encoding="utf-8") == BAD_FILE
    subprocess.run(run + ["--select", "MHA903", "--fix", "model.py"], cwd=tmp_path,
                   capture_output=True, text=True)
    after = analyze_source(path.read_text(encoding="utf-8"), "model.py", CODES)
    assert [(f.code, f.line) for f in after] == [("MHA010", 8)]


def test_layout_evidence_is_in_the_json_output(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(BAD_FILE, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "flake8_mha.frontends.cli", "check", "--format", "json",
                           "model.py"], cwd=tmp_path, capture_output=True, text=True)
    data = json.loads(proc.stdout)
    items = data["findings"] if isinstance(data, dict) else data
    ev = items[0]["evidence"]
    assert (ev["layout"], ev["layout_kind"], ev["layout_line"], ev["batch_first"]) == (
        "(L, N, E)", "sequence-first", 7, True)


def test_explain_new_codes():
    for code in ("MHA010", "MHA903"):
        proc = subprocess.run([sys.executable, "-m", "flake8_mha.frontends.cli", "explain", code],
                              capture_output=True, text=True)
        assert proc.returncode == 0 and proc.stdout.startswith(f"# {code}: "), proc.stderr


# ----------------------------------------------------------------------- witnesses (torch)

def _witness(code, evidence):
    pytest.importorskip("torch")
    from flake8_mha.confirm.witnesses import WITNESSES

    return WITNESSES[code].run(evidence)


def test_mha010_witness_feeds_the_codes_layout_and_measures_the_leak():
    f = only("""\
        layer = nn.TransformerEncoderLayer(64, 8, batch_first=True)
        def f(x):
            B, L, E = x.shape
            return layer(x.transpose(0, 1))
        """)
    out = _witness("MHA010", f.evidence)
    assert out["verdict"] == "CONFIRMED"
    assert out["measured"]["data_layout"] == "(L, N, E)"
    assert out["measured"]["leak"] > 0.1
    assert out["measured"]["leak_batch_first_false"] == 0.0
    assert out["assumed"] == []


def test_mha001_witness_uses_the_inferred_layout_or_says_it_assumed_one():
    known = _witness("MHA001", only(EVIDENCE[3][1]).evidence)
    assert known["verdict"] == "CONFIRMED" and known["assumed"] == []
    unknown = _witness("MHA001", only("attn = nn.MultiheadAttention(64, 8)\n").evidence)
    assert unknown["verdict"] == "CONFIRMED*"  # the damage rests on the assumed layout
    assert unknown["depends_on"] == unknown["assumed"]
    assert unknown["assumed"] == ["layout of the data unknown (the code does not say it): "
                                  "assumed (N, L, E)"]
    harmless = _witness("MHA001", {"module": "MultiheadAttention", "embed_dim": 64,
                                   "num_heads": 8, "layout_kind": "sequence-first"})
    assert harmless["verdict"] == "NOT REPRODUCED" and harmless["measured"]["leak"] == 0.0


def test_mha903_witness_shows_the_code_is_correct():
    f = only(EVIDENCE[0][1])
    out = _witness("MHA903", f.evidence)
    assert out["verdict"] == "NOT REPRODUCED"
    assert out["measured"]["leak"] == 0.0
    assert out["damage"].startswith("no damage")


def test_mha010_a_subclass_states_its_flag_in_super_init():
    """``class TabEncoderLayer(nn.TransformerEncoderLayer)`` whose own
    ``__init__`` passes ``batch_first=True`` to ``super().__init__``: that
    call states the flag, so sequence-first data fed to an instance is
    MHA010 at the call, as for the torch layer itself."""
    code = """\
        class TabEncoderLayer(nn.TransformerEncoderLayer):
            def __init__(self, d_token=192, n_heads=8):
                super().__init__(d_token, n_heads, batch_first=True)

        class TabTransformer(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(10, 192)
                self.layer = TabEncoderLayer()

            def forward(self, x_cat):
                x = self.emb(x_cat)  # (B, F, d)
                return self.layer(XS)
        """
    assert got(code.replace("XS", "x.transpose(0, 1)")) == [("MHA010", 15, 16)]
    assert got(code.replace("XS", "x")) == []
