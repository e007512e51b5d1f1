"""Release review 21 (twenty-seventh stop): MHA102 where
``need_weights=False`` is not known to save anything, each at the exact
code, line and column.

torchdiff's self-attention blocks (``batch_first=True``, even heads, bias,
dropout 0.1) take the fastpath at inference, where the weights cost about
1.05x, and in training the dropout leaves no saving (TORCH_FACTS 13): seven
such findings were false.  A call that leaves out the key and value raises
before it computes anything."""

from __future__ import annotations

import textwrap

from flake8_mha.lint.engine import analyze_source

BLOCK = """\
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self, dim=64):
            super().__init__()
            self.attn = nn.MultiheadAttention(dim, {heads}, dropout={dropout}, batch_first={bf}{more})

        def forward(self, x, y, pad):
            out, _ = self.attn({call})
            return out

    block = Block()
    """


def _found(**kw):
    args = dict(heads=8, dropout=0.1, bf=True, more="", call="x, x, x")
    args.update(kw)
    got = analyze_source(textwrap.dedent(BLOCK.format(**args)), "t.py", ["MHA102"])
    return [(f.code, f.line, f.col) for f in got]


def test_self_attention_on_the_fastpath_with_dropout_is_silent():
    assert _found() == []
    assert _found(dropout="p") == []  # a dropout not known to be 0


def test_what_keeps_the_weights_costly_is_reported():
    here = [("MHA102", 9, 18)]
    assert _found(dropout=0.0) == here  # training: manual softmax against SDPA
    assert _found(heads=7) == here  # odd heads: never the fastpath
    assert _found(bf=False) == here
    assert _found(more=", bias=False") == here
    assert _found(call="x, y, y") == here  # cross-attention
    assert _found(call="x, x, x, key_padding_mask=pad") == here  # a mask of unknown dtype


def test_a_call_without_key_and_value_is_not_judged():
    assert _found(call="x, key_padding_mask=pad") == []


CROSS = """\
    import torch.nn as nn

    class Denoiser(nn.Module):
        def __init__(self, dim=96):
            super().__init__()
            self.cross = nn.MultiheadAttention(dim, 3, batch_first=True)

        def forward(self, x, cond):
            return self.cross({call}, need_weights=False)[0]
    """


def test_odd_heads_of_a_module_only_ever_cross_attending_are_moot():
    """kairos-fm: the fastpath takes self-attention only; a module every call
    gives another tensor as its key loses nothing to an odd head count."""

    def found(call):
        got = analyze_source(textwrap.dedent(CROSS.format(call=call)), "t.py", ["MHA101"])
        return [(f.code, f.line, f.col) for f in got]

    assert found("x, cond, cond") == []
    assert found("x, x, x") == [("MHA101", 6, 22)]


def _layout(src):
    got = analyze_source(textwrap.dedent(src), "t.py", ["MHA001", "MHA903"])
    return [(f.code, f.line, f.col) for f in got]


def test_a_shape_comment_that_writes_name_shape():
    """elfragmentador: ``# x shape [S, N, d_model]`` above the call names x's layout
    (as ``# x: (S, N, E)`` does): sequence-first, right for the default module."""
    src = """\
        import torch.nn as nn

        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 4), 2)

            def forward(self, seq):
                x = self.embed(seq)
                # x {form}
                return self.enc(x)
        """
    for form in ("shape [S, N, d_model]", "shape: (S, N, E)", "has shape (S, N, E)"):
        assert _layout(src.format(form=form)) == [("MHA903", 6, 42)]
    assert _layout(src.format(form="shape [N, S, d_model]")) == [("MHA001", 6, 42)]


def test_sequence_first_data_through_a_module_no_one_can_read():
    """chronocratic's TST: documented ``(batch, seq, feat)`` data permuted to
    sequence-first, then through a positional encoder built by a factory of
    classes (``get_pos_encoder(kind)(d)``): still sequence-first."""
    src = """\
        import torch.nn as nn

        def get_pos_encoder(kind):
            return {"fixed": nn.Identity}[kind]

        class TST(nn.Module):
            def __init__(self):
                super().__init__()
                self.pos_enc = get_pos_encoder("fixed")(64)
                self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 4), 2)

            def forward(self, x):
                \"\"\"x: (batch_size, seq_length, input_dim) tensor.\"\"\"
                inp = x.permute(1, 0, 2)
                inp = self.pos_enc(inp)
                return self.enc(inp)
        """
    assert _layout(src) == [("MHA903", 10, 42)]
