"""Layouts that paths disagree on, swaps with a copy after them, and norms
built through a constructor parameter (issue 26):

- two callers of one module, one feeding what it reads and one the
  opposite layout: the wrong one is reported, naming its evidence (a
  correct sibling no longer hides it);
- ``x.transpose(0, 1).contiguous()`` right before the call is the swap;
- ``self.ln_1 = norm_layer(d)`` with ``norm_layer=nn.LayerNorm`` keeps the
  layout as ``nn.LayerNorm(d)`` does.

Each case checks the exact (code, line, column) and the evidence line."""
from __future__ import annotations

import textwrap

from fixture_expect import assert_package_runs, flake8_run
from flake8_mha.lint.engine import analyze_source

PACKAGE = "fixtures/program_layout/mixed_towers"
WANT = [("blocks.py", 14, 17, "MHA010"), ("pooled.py", 9, 21, "MHA001")]
HEAD = "import torch\nimport torch.nn as nn\n"  # lines 1-2


def got(body: str, codes=("MHA001", "MHA010", "MHA903")):
    src = HEAD + textwrap.dedent(body)
    return sorted(
        (f.code, f.line, f.col, f.evidence.get("layout_line"))
        for f in analyze_source(src, "t.py", list(codes))
    )


def test_over_the_package_one_file_at_a_time_and_through_check():
    found = assert_package_runs(PACKAGE, WANT)
    messages = {f.code: f.msg for f in found}
    assert "video.py line 15: `frames.permute(1, 0, 2)`" in messages["MHA010"]
    assert "video.py line 20: `B, T, C = frames.shape`" in messages["MHA001"]


SIBLINGS = """\
class Mixer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, 8, batch_first={stated})

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.mix = Mixer(d)

    def tokens(self, x):
        B, L, E = x.shape
        return self.mix(x)

    def frames(self, x):
        B, L, E = x.shape
        return self.mix(x.transpose(0, 1))
"""


def test_a_correct_sibling_caller_does_not_hide_a_wrong_one():
    # batch-first module: the swapped caller (line 23) is wrong
    assert got(SIBLINGS.format(stated="True")) == [("MHA010", 9, 16, 23)]
    # sequence-first module: the caller that feeds its tokens as they are (line 18) is
    assert got(SIBLINGS.format(stated="False")) == [("MHA010", 9, 16, 18)]
    # left to the default: MHA001 names the batch-first caller
    assert got(SIBLINGS.replace(", batch_first={stated}", "")) == [("MHA001", 6, 21, 18)]
    # a batch_first the code does not state: unknown, neither reading is reported
    unknown = SIBLINGS.replace("batch_first={stated}", "batch_first=bf").replace(
        "def __init__(self, d):\n        super().__init__()\n        self.attn",
        "def __init__(self, d, bf=None):\n        super().__init__()\n        self.attn", 1)
    assert got(unknown) == []


def test_a_copy_after_the_swap_keeps_the_swap():
    assert got("""\
        class E(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.MultiheadAttention(256, 4)

            def forward(self, x):
                h = x.transpose(0, 1).contiguous()
                return self.a(h, h, h, need_weights=False)[0]
        """) == [("MHA903", 6, 18, 9)]


def test_a_norm_built_through_a_parameter_with_a_class_default_keeps_the_layout():
    assert got("""\
        class Block(nn.Module):
            def __init__(self, d, norm_layer=nn.LayerNorm):
                super().__init__()
                self.norm = norm_layer(d)
                self.attn = nn.MultiheadAttention(d, 8, batch_first=True)

            def forward(self, x):
                h = self.norm(x)
                return self.attn(h, h, h, need_weights=False)[0]


        block = Block(64)


        def run(feats):
            B, T, C = feats.shape
            return block(feats.permute(1, 0, 2))
        """) == [("MHA010", 11, 16, 19)]


def test_the_callers_own_evidence_passed_through_another_file_keeps_its_place(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "encoding.py").write_text(textwrap.dedent('''\
        import torch.nn as nn


        class PositionalEncoding(nn.Module):
            def __init__(self, d, max_len=512):
                super().__init__()
                self.pe = nn.Parameter(torch.zeros(max_len, 1, d))

            def forward(self, x):
                """Shape:
                    x: [sequence length, batch size, embed dim]
                """
                return x + self.pe[: x.size(0)]
        '''))
    (pkg / "model.py").write_text(textwrap.dedent('''\
        import torch.nn as nn

        from .encoding import PositionalEncoding


        class Classifier(nn.Module):
            def __init__(self, d=64):
                super().__init__()
                self.pos_enc = PositionalEncoding(d)
                self.encoder = nn.TransformerEncoderLayer(d, 8)

            def forward(self, X):
                inp = X.permute(1, 0, 2)
                inp = self.pos_enc(inp)
                return self.encoder(inp)
        '''))
    status, found = flake8_run(str(pkg / "model.py"), select="MHA903")
    assert (status, [(f.line, f.col, f.code) for f in found]) == (1, [(10, 24, "MHA903")])
    # the swap is model.py's own line 13, not a line of encoding.py
    assert "line 13: `X.permute(1, 0, 2)`" in found[0].msg and "encoding.py" not in found[0].msg


def test_a_reshape_sized_by_the_tensors_own_axes_keeps_their_roles():
    assert got("""\
        class V(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.conv1 = nn.Conv2d(3, width, 16, 16, bias=False)
                self.attn = nn.MultiheadAttention(width, 8)

            def forward(self, x):
                x = self.conv1(x)
                B, C, H, W = x.shape
                z = x.view(x.size(0), x.shape[1], -1).transpose(1, 2)
                return self.attn(z, z, z, need_weights=False)[0]
        """) == [("MHA001", 7, 21, 12)]


def test_a_shape_unpacking_whose_names_the_function_reuses_later_still_speaks():
    # ``bsz, max_len, _ = ...size()`` written twice: the first is rebound by the second
    assert got("""\
        class E(nn.Module):
            def __init__(self):
                super().__init__()
                self.a1 = nn.MultiheadAttention(256, 4)
                self.a2 = nn.MultiheadAttention(256, 4)

            def forward(self, x, y):
                x = self.proj(x)
                bsz, max_len, _ = x.size()
                a = self.a1(x, x, x, need_weights=False)[0]
                bsz, max_len, _ = y.size()
                return a, self.a2(y, y, y, need_weights=False)[0]
        """) == [("MHA001", 6, 19, 11), ("MHA001", 7, 19, 13)]


def test_a_comment_on_an_unpacking_speaks_of_its_first_target():
    # fairseq's S2T encoder: ``x, input_lengths = self.subsample(...)  # T x B x C``
    body = """\
        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.subsample = Subsampler()
                self.layer = nn.TransformerEncoderLayer(256, 4, batch_first=True)

            def forward(self, src_tokens, src_lengths):
                x, input_lengths = self.subsample(src_tokens, src_lengths)  {comment}
                return self.layer(x)
        """
    assert got(body.format(comment="# T x B x C")) == [("MHA010", 11, 16, 10)]
    # a comment that names another target is not the first one's
    assert got(body.format(comment="# input_lengths: (B, T)")) == []


UNUSED_NAMES = """\
class Inject(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.cross = nn.MultiheadAttention(dim, 4, batch_first=True)
        self.plain = nn.MultiheadAttention(dim, 4)

    def forward(self, x):
        UNPACK = x.shape
        side = int(n ** 0.5)
        return self.cross(x, x, x, need_weights=False)[0], self.plain(x, x, x, need_weights=False)[0]
"""


def test_an_unused_name_with_an_underscore_still_names_its_axis():
    """torchgeo's ChangeViT: ``_b, n, _d = vit_feats.shape`` is (B, N, D),
    einops' tokens beside a batch: the batch-first module is right (no
    MHA010), the default one is fed batch-first data (MHA001, from line 10)."""
    assert got(UNUSED_NAMES.replace("UNPACK", "_b, n, _d")) == [("MHA001", 7, 22, 10)]


def test_n_alone_says_nothing():
    """``_, n, _ = x.shape``: torch's docs call the batch N, einops calls the
    tokens n; alone, it decides no layout: no MHA010, and MHA001 on the
    default module names no evidence line."""
    assert got(UNUSED_NAMES.replace("UNPACK", "_, n, _")) == [("MHA001", 7, 22, None)]
