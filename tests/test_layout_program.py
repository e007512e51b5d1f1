"""Layout through the program (issue 26, item 4): module calls and containers.

The data's layout flows into a module's ``forward`` from every call of it
(``self.block(x)``, a loop or an index over an ``nn.ModuleList``, a call of an
``nn.Sequential`` of the file's module classes) and back out of it; an axis
swap of data whose layout the code never states, fed straight to a module
call, is the conversion to the layout that module reads (docs/evidence.md);
shape comments count above, at the end of, and just below a statement.

Each case checks the exact (code, line, column) and the line the layout
evidence names.
"""
from __future__ import annotations

import textwrap

import pytest

from flake8_mha.analysis import focus
from flake8_mha.lint.engine import analyze_file, analyze_source

CODES = ["MHA001", "MHA010", "MHA903"]
HEAD = "import torch\nimport torch.nn as nn\nfrom collections import OrderedDict\n"  # lines 1-3

# the residual block of the CLIP pattern: the attention is built on line 7
BLOCK = """\
class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, 8)
        self.ln_1 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(OrderedDict([("fc", nn.Linear(d, 4 * d)), ("proj", nn.Linear(4 * d, d))]))

    def attention(self, x):
        return self.attn(x, x, x, need_weights=False)[0]

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        x = x + self.mlp(x)
        return x
"""
BUILT = (7, 21)  # where ``nn.MultiheadAttention`` stands
AFTER = 4 + BLOCK.count("\n")  # the first line after the block


def findings(body: str, codes=CODES):
    src = HEAD + BLOCK + textwrap.dedent(body)
    return analyze_source(src, "t.py", codes)


def only(body: str, codes=CODES):
    found = findings(body, codes)
    assert len(found) == 1, [(f.code, f.line, f.col, f.message) for f in found]
    return found[0]


def line_of(body: str, text: str) -> int:
    """The line of the file (HEAD + BLOCK + body) where ``text`` first stands."""
    for i, line in enumerate(textwrap.dedent(body).splitlines()):
        if text in line:
            return AFTER + i
    raise AssertionError(text)


CLIP_TOWER = """\
class Transformer(nn.Module):
    def __init__(self, width, layers):
        super().__init__()
        self.resblocks = nn.Sequential(*[Block(width) for _ in range(layers)])

    def forward(self, x):
        return self.resblocks(x)


class TextTower(nn.Module):
    def __init__(self, vocab, width, layers):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab, width)
        self.transformer = Transformer(width, layers)

    def forward(self, text):
        x = self.token_embedding(text)
        x = x.permute(1, 0, 2)  # NLD -> LND
        x = self.transformer(x)
        x = x.permute(1, 0, 2)  # LND -> NLD
        return x
"""


# ----------------------------------------------------------------------- the CLIP pattern

def test_clip_pattern_fed_sequence_first_gives_no_mha001():
    f = only(CLIP_TOWER, ["MHA001", "MHA010", "MHA903"])
    # opt-in MHA903: correct but implicit, and the evidence is the swap
    assert (f.code, f.line, f.col) == ("MHA903",) + BUILT
    assert f.evidence["layout_line"] == line_of(CLIP_TOWER, "x = x.permute(1, 0, 2)  # NLD")
    assert f.evidence["layout_how"] == "axis swap before the module call"
    assert f.evidence["layout_kind"] == "sequence-first"
    assert findings(CLIP_TOWER, ["MHA001", "MHA010"]) == []


def test_same_blocks_fed_batch_first_give_mha001():
    body = CLIP_TOWER.replace(
        "        x = self.token_embedding(text)\n        x = x.permute(1, 0, 2)  # NLD -> LND\n",
        "        B, L = text.shape\n        x = self.token_embedding(text)\n",
    )
    f = only(body)
    assert (f.code, f.line, f.col) == ("MHA001",) + BUILT
    assert f.evidence["layout_line"] == line_of(body, "x = self.token_embedding(text)")
    assert f.evidence["layout_kind"] == "batch-first"
    assert "is fed batch-first data ((N, L, E), line" in f.message


SECOND_TOWER = """\


from einops import rearrange


class ImageTower(nn.Module):
    def __init__(self, width, layers):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 16, 16)
        self.transformer = Transformer(width, layers)

    def forward(self, image):
        x = self.conv1(image)
        x = x.reshape(x.shape[0], x.shape[1], -1).permute(0, 2, 1)
        x = rearrange(x, "b n d -> n b d")
        x = self.transformer(x)
        return x
"""


def test_two_towers_stating_sequence_first_differently_agree():
    # the text tower's swap gives (L, N, ?), the image tower's pattern (L, N, E): both
    # sequence-first, so together sequence-first (they were joined to unknown: MHA001)
    body = CLIP_TOWER + SECOND_TOWER
    f = only(body)
    assert (f.code, f.line, f.col) == ("MHA903",) + BUILT
    assert f.evidence["layout_kind"] == "sequence-first"
    assert findings(body, ["MHA001", "MHA010"]) == []


def test_two_towers_one_batch_first_give_mha001():
    body = CLIP_TOWER + SECOND_TOWER.replace('rearrange(x, "b n d -> n b d")', 'rearrange(x, "b n d -> b n d")')
    f = only(body)
    assert (f.code, f.line, f.col) == ("MHA001",) + BUILT


def test_known_layout_beats_the_swap():
    # batch-first data made batch-first again by a swap of the wrong axes: the
    # known layout decides, not the swap
    body = """\
    class Tower(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.Sequential(Block(64), Block(64))

        def forward(self, x):
            L, B, E = x.shape
            return self.blocks(x.permute(1, 0, 2))
    """
    f = only(body)
    assert (f.code, f.line, f.col, f.evidence["layout_kind"]) == ("MHA001",) + BUILT + (
        "batch-first",)
    assert f.evidence["layout_how"] == "permute"


# ----------------------------------------------------------------------- containers

def _seq_first(body: str, swap_text: str) -> None:
    f = only(body)
    assert (f.code, f.line, f.col) == ("MHA903",) + BUILT
    assert f.evidence["layout_line"] == line_of(body, swap_text)
    assert f.evidence["layout_kind"] == "sequence-first"


def _batch_first(body: str) -> None:
    f = only(body)
    assert (f.code, f.line, f.col, f.evidence["layout_kind"]) == ("MHA001",) + BUILT + (
        "batch-first",)


SEQUENTIAL_FORMS = {
    "list": "nn.Sequential(Block(64), Block(64))",
    "starred_comprehension": "nn.Sequential(*[Block(64) for _ in range(4)])",
    "starred_list": "nn.Sequential(*[Block(64), Block(64)])",
    "ordered_dict": 'nn.Sequential(OrderedDict([("b0", Block(64)), ("b1", Block(64))]))',
    "ordered_dict_comprehension": (
        'nn.Sequential(OrderedDict([(f"b{i}", Block(64)) for i in range(4)]))'),
    "with_torch_members": "nn.Sequential(nn.LayerNorm(64), Block(64), nn.Dropout(0.1))",
}


def _sequential_body(built: str, feed: str) -> str:
    return f"""\
    class Tower(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = {built}

        def forward(self, x):
            B, L, E = x.shape
            return self.blocks({feed})
    """


def test_every_sequential_form_carries_the_layout_to_its_members():
    for name, built in SEQUENTIAL_FORMS.items():
        _seq_first(_sequential_body(built, "x.transpose(0, 1)"), "x.transpose(0, 1)")
        _batch_first(_sequential_body(built, "x"))


def test_modulelist_loop_and_index_carry_the_layout():
    loop = """\
    class Tower(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([Block(64) for _ in range(4)])

        def forward(self, x):
            B, L, E = x.shape
            x = x.transpose(0, 1)
            for blk in self.blocks:
                x = blk(x)
            return x
    """
    _seq_first(loop, "x = x.transpose(0, 1)")
    _batch_first(loop.replace("x = x.transpose(0, 1)", "x = x * 1"))
    index = loop.replace("for blk in self.blocks:\n            x = blk(x)",
                         "x = self.blocks[0](x)")
    _seq_first(index, "x = x.transpose(0, 1)")


def test_a_loop_over_a_sequential_carries_the_layout():
    # OneFormer's text transformer: ``for layer in self.layers`` over a Sequential
    body = """\
    class Tower(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.Sequential(*[Block(64) for _ in range(4)])
            self.emb = nn.Embedding(10, 64)
            self.pos = nn.Parameter(torch.empty(77, 64))

        def forward(self, text):
            h = self.emb(text) + self.pos
            h = h.permute(1, 0, 2)
            for layer in self.layers:
                h = layer(h)
            return h
    """
    _seq_first(body, "h = h.permute(1, 0, 2)")
    # a swap before a method (not a module's call) says nothing
    helper = body.replace("            for layer in self.layers:\n                h = layer(h)\n"
                          "            return h\n",
                          "            return self.run(h)\n\n"
                          "        def run(self, h):\n"
                          "            for layer in self.layers:\n"
                          "                h = layer(h)\n"
                          "            return h\n")
    assert helper != body
    assert [(f.code, f.line, f.evidence["layout_kind"]) for f in findings(helper)] == [
        ("MHA001", BUILT[0], None)]


def test_layers_cloned_by_a_helper_carry_the_layout():
    # DETR's ``_get_clones``: a ModuleList of deep copies of the layer it is given
    body = """\
    import copy


    def _get_clones(module, N):
        return nn.ModuleList([copy.deepcopy(module) for i in range(N)])


    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            layer = Block(64)
            self.layers = _get_clones(layer, 6)

        def forward(self, tgt):
            B, L, E = tgt.shape
            out = tgt.transpose(0, 1)
            for layer in self.layers:
                out = layer(out)
            return out
    """
    _seq_first(body, "out = tgt.transpose(0, 1)")
    _batch_first(body.replace("out = tgt.transpose(0, 1)", "out = tgt"))


ENCODER_BUILT_BY_PARENT = """\
    import copy


    def _get_clones(module, N):
        return nn.ModuleList([copy.deepcopy(module) for i in range(N)])


    class Encoder(nn.Module):
        def __init__(self, layer, num_layers):
            super().__init__()
            self.layers = _get_clones(layer, num_layers)

        def forward(self, src):
            out = src
            for layer in self.layers:
                out = layer(out)
            return out


    class Parent(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = Encoder(Block(64), 6)

        def forward(self, x):
            B, L, E = x.shape
            return self.encoder(x.transpose(0, 1))
    """


def test_layers_cloned_from_a_constructor_parameter_carry_the_layout():
    # DETR: the parent builds the layer and hands it to the encoder's constructor
    body = ENCODER_BUILT_BY_PARENT
    _seq_first(body, "return self.encoder(x.transpose(0, 1))")
    _batch_first(body.replace("self.encoder(x.transpose(0, 1))", "self.encoder(x)"))


@pytest.mark.parametrize(
    "other",
    [
        "Encoder(*parts)",  # a splat: what it passes is not known
        "Encoder(num_layers=2, layer=None)",  # not a module the file builds
    ],
)
def test_a_constructor_parameter_is_unknown_unless_every_construction_settles_it(other):
    body = ENCODER_BUILT_BY_PARENT + textwrap.indent(
        textwrap.dedent(f"""\


            def other(parts):
                return {other}
            """),
        "    ",
    )
    f = only(body)
    assert (f.code, f.line, f.col, f.evidence["layout_kind"]) == ("MHA001",) + BUILT + (None,)


def test_a_user_layer_run_by_torch_s_transformer_decoder():
    # timm's ML-Decoder: torch's TransformerDecoder runs the file's own layer
    body = """\
    class Layer(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.norm1 = nn.LayerNorm(d)
            self.multihead_attn = nn.MultiheadAttention(d, 8)

        def forward(self, tgt, memory, tgt_mask=None, memory_mask=None):
            tgt = self.norm1(tgt)
            tgt2 = self.multihead_attn(tgt, memory, memory)[0]
            return tgt + tgt2


    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.query_embed = nn.Embedding(20, 64)
            self.decoder = nn.TransformerDecoder(Layer(64), num_layers=2)

        def forward(self, x):
            bs = x.shape[0]
            tgt = self.query_embed.weight.unsqueeze(1).expand(-1, bs, -1)
            return self.decoder(tgt, x.transpose(0, 1))
    """
    found = [(f.code, f.line, f.col, f.evidence["layout_line"]) for f in findings(body)]
    mine = [f for f in found if f[1] == line_of(body, "self.multihead_attn = ")]
    assert mine == [("MHA903", line_of(body, "self.multihead_attn = "), 31,
                     line_of(body, "tgt = self.query_embed"))]
    # batch-first queries and memory (``bs = x.shape[0]`` says x is batch-first:
    # its transpose would be sequence-first memory, a conflict with no one layout)
    bad = body.replace(".expand(-1, bs, -1)", ".expand(bs, -1, -1)").replace(
        "x.transpose(0, 1)", "x")
    mine = [f for f in findings(bad) if f.line == line_of(body, "self.multihead_attn = ")]
    assert [(f.code, f.evidence["layout_kind"]) for f in mine] == [("MHA001", "batch-first")]


def test_a_member_that_changes_the_layout_is_followed(monkeypatch):
    monkeypatch.setattr(focus, "FOCUS", False)  # Flip names no attention word
    body = """\
    class Flip(nn.Module):
        def forward(self, x):
            return x.transpose(0, 1)


    class Tower(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.Sequential(Flip(), Block(64))

        def forward(self, x):
            B, L, E = x.shape
            return self.blocks(x)
    """
    f = only(body)
    assert (f.code, f.line, f.col) == ("MHA903",) + BUILT
    assert f.evidence["layout_line"] == line_of(body, "return x.transpose(0, 1)")
    # the block after Flip is fed Flip's output: batch-first data made sequence-first
    _batch_first(body.replace("return self.blocks(x)", "return self.blocks(x.transpose(0, 1))"))


def test_layout_flows_back_out_of_the_blocks():
    # the tower reads the chain's output: a second attention fed it sees its layout
    body = """\
    class Tower(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.Sequential(*[Block(64) for _ in range(2)])
            self.pool = nn.MultiheadAttention(64, 8)

        def forward(self, x):
            B, L, E = x.shape
            h = self.blocks(x.transpose(0, 1))
            return self.pool(h, h, h)[0]
    """
    found = sorted((f.code, f.line, f.col, f.evidence["layout_line"]) for f in findings(body))
    swap = line_of(body, "h = self.blocks(")
    assert found == [("MHA903",) + BUILT + (swap,),
                     ("MHA903", line_of(body, "self.pool = "), 21, swap)]


# ----------------------------------------------------------------------- the swap as evidence

def test_swap_of_unknown_data_before_a_module_call_is_the_conversion():
    forms = [
        "attn(x.permute(1, 0, 2), k, k)",
        "attn(x.transpose(0, 1), k, k)",
        "attn(x.transpose(1, 0), k, k)",
        "attn(x.swapaxes(0, 1), k, k)",
        "attn(torch.transpose(x, 0, 1), k, k)",
        'attn(rearrange(x, "p q r -> q p r"), k, k)',
    ]
    for call in forms:
        body = f"""\
        from einops import rearrange
        attn = nn.MultiheadAttention(64, 8)
        def f(x):
            k = {call[5:call.index(", k, k")]}
            return {call.replace(", k, k", ", k, k")}[0]
        """
        found = [(f.code, f.line, f.col) for f in findings(body)]
        # the block's own attention is never called: MHA001 on it, MHA903 on attn
        assert found == [("MHA001",) + BUILT, ("MHA903", line_of(body, "attn = "), 8)], call


def test_swap_through_one_local_assignment_counts_not_two():
    one = """\
    attn = nn.MultiheadAttention(64, 8)
    def f(x):
        y = x.transpose(0, 1)
        return attn(y, y, y)[0]
    """
    found = {f.code: f for f in findings(one)}
    assert found["MHA903"].line == line_of(one, "attn = ")
    assert found["MHA903"].evidence["layout_line"] == line_of(one, "y = x.transpose")
    two = one.replace("return attn(y, y, y)[0]", "z = y\n    return attn(z, z, z)[0]")
    assert [(f.code, f.line) for f in findings(two)] == [
        ("MHA001", BUILT[0]), ("MHA001", line_of(two, "attn = "))]


def test_swap_before_a_plain_function_is_not_evidence():
    body = """\
    attn = nn.MultiheadAttention(64, 8)
    def double(t):
        return t * 2
    def f(x):
        y = double(x.transpose(0, 1))
        return attn(y, y, y)[0]
    """
    assert [(f.code, f.line) for f in findings(body)] == [
        ("MHA001", BUILT[0]), ("MHA001", line_of(body, "attn = "))]


def test_swap_never_makes_a_mismatch():
    body = """\
    attn = nn.MultiheadAttention(64, 8, batch_first=True)
    def f(x):
        y = x.transpose(0, 1)
        return attn(y, y, y)[0]
    """
    assert [(f.code, f.line) for f in findings(body)] == [("MHA001", BUILT[0])]


def test_a_comment_on_the_swap_says_more_than_the_swap():
    body = """\
    attn = nn.MultiheadAttention(64, 8)
    def f(x):
        y = x.transpose(0, 1)  # (B, L, E)
        return attn(y, y, y)[0]
    """
    got = {f.code: f for f in findings(body)}
    assert set(got) == {"MHA001"}
    mine = [f for f in findings(body) if f.line == line_of(body, "attn = ")]
    assert mine[0].evidence["layout_kind"] == "batch-first"
    assert mine[0].evidence["layout_how"] == "shape comment"


# ----------------------------------------------------------------------- shape comments

def _comment_case(where: str) -> str:
    lines = {
        "end": ("    y = x.transpose(0, 1)  # y: (B, L, E)\n", ""),
        "above": ("    # y: (B, L, E)\n    y = x.transpose(0, 1)\n", ""),
        "below": ("    y = x.transpose(0, 1)\n    # y: (B, L, E)\n", ""),
    }[where]
    # ``scale = 1.0`` keeps the comment below from being the one above the call
    return ("attn = nn.MultiheadAttention(64, 8)\n"
            "def f(x):\n" + lines[0] + "    scale = 1.0\n    return attn(y, y, y)[0] * scale\n")


def test_shape_comments_count_above_at_the_end_and_just_below():
    for where in ("end", "above", "below"):
        body = _comment_case(where)
        mine = [f for f in findings(body) if f.line == line_of(body, "attn = ")]
        assert [(f.code, f.col) for f in mine] == [("MHA001", 8)], where
        assert mine[0].evidence["layout_kind"] == "batch-first", where
        assert mine[0].evidence["layout_line"] == line_of(body, "# y: (B, L, E)"), where


def test_a_parameter_s_own_comment_in_the_signature_counts():
    for comment, kind in (("# nq, bs, d_model", "sequence-first"),
                          ("# (B, L, E)", "batch-first"),
                          ("# bs x seq_len x d_model", "batch-first")):
        body = ("attn = nn.MultiheadAttention(64, 8)\n"
                "def f(\n"
                f"    tgt,  {comment}\n"
                "    other=None,  # pos for query. MLP(Sine(pos))\n"
                "):\n"
                "    return attn(tgt, tgt, tgt)[0]\n")
        mine = [f for f in findings(body, ["MHA001", "MHA903"])
                if f.line == line_of(body, "attn = ")]
        assert len(mine) == 1, comment
        assert mine[0].evidence["layout_kind"] == kind, comment
        assert mine[0].evidence["layout_line"] == line_of(body, comment), comment
    # prose is not a shape
    body = ("attn = nn.MultiheadAttention(64, 8)\n"
            "def f(\n"
            "    tgt,  # the queries, already normalised\n"
            "):\n"
            "    return attn(tgt, tgt, tgt)[0]\n")
    mine = [f for f in findings(body) if f.line == line_of(body, "attn = ")]
    assert [(f.code, f.evidence["layout_kind"]) for f in mine] == [("MHA001", None)]


def test_a_comment_below_counts_only_for_a_statement_that_changes_the_axes():
    # the comment below the embedding heads the transpose: it is not the embedding's
    body = ("emb = nn.Embedding(10, 64)\n"
            "attn = nn.MultiheadAttention(64, 8)\n"
            "def f(ids):\n"
            "    x = emb(ids)\n"
            "    # (L, B, E) for the attention\n"
            "    x = x.transpose(0, 1)\n"
            "    return attn(x, x, x)[0]\n")
    mine = [f for f in findings(body) if f.line == line_of(body, "attn = ")]
    assert [(f.code, f.evidence["layout_how"]) for f in mine] == [
        ("MHA903", "axis swap before the module call")]


def test_a_comment_naming_the_argument_beats_the_swap():
    body = ("attn = nn.MultiheadAttention(64, 8)\n"
            "def f(x):\n"
            "    y = x.transpose(0, 1)\n"
            "    return attn(y, y, y)[0]  # y: (B, L, E)\n")
    mine = [f for f in findings(body) if f.line == line_of(body, "attn = ")]
    assert [(f.code, f.evidence["layout_kind"]) for f in mine] == [("MHA001", "batch-first")]


# ----------------------------------------------------------------------- across files

import os  # noqa: E402
import pathlib  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ROOT / "fixtures" / "program_layout"
_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>MHA\d{3}) (?P<msg>.*)$")
GOOD = "fixtures/program_layout/clip_like"
BAD = "fixtures/program_layout/clip_like_batch_first"
FILES = ("__init__.py", "block.py", "transformer.py", "tower.py")
BAD_MESSAGE = (
    "MultiheadAttention built without batch_first is fed batch-first data ((N, L, E), "
    "clip_like_batch_first/tower.py line 15: `self.token_embedding(text)`): it reads axis 0 "
    "as the sequence and mixes samples across the batch")


def _run(*args, tool=("-m", "flake8", "--isolated")):
    proc = subprocess.run([sys.executable, *tool, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    found = set()
    for line in proc.stdout.splitlines():
        m = _LINE.match(line)
        assert m is not None, line
        found.add((os.path.normpath(m["path"]), int(m["line"]), int(m["col"]), m["code"],
                   m["msg"]))
    return proc.returncode, found


def _at(package, *rows):
    return {(os.path.normpath(f"{package}/{name}"), line, col, code, msg)
            for name, line, col, code, msg in rows}


def test_clip_package_per_file_and_whole_give_the_same_findings():
    """Issue 26's 'Done when': the CLIP pattern over three files, sequence-first,
    gives no MHA001; the same blocks fed batch-first give MHA001 at the block,
    naming the tower's line; per file and over the package alike."""
    want = _at(BAD, ("block.py", 11, 21, "MHA001", BAD_MESSAGE))
    status, whole = _run("--select", "MHA0,MHA1", GOOD, BAD)
    assert (status, whole) == (1, want)
    per_file = set()
    for package in (GOOD, BAD):
        for name in FILES:
            per_file |= _run("--select", "MHA0,MHA1", f"{package}/{name}")[1]
    assert per_file == want
    # an editor's way: the buffer on stdin, named by its path
    stdin = set()
    for package in (GOOD, BAD):
        path = f"{package}/block.py"
        proc = subprocess.run(
            [sys.executable, "-m", "flake8", "--isolated", "--select", "MHA0,MHA1",
             "--stdin-display-name", path, "-"],
            cwd=ROOT, input=(ROOT / path).read_text(), capture_output=True, text=True,
            timeout=300)
        for line in proc.stdout.splitlines():
            m = _LINE.match(line)
            stdin.add((os.path.normpath(m["path"]), int(m["line"]), int(m["col"]), m["code"],
                       m["msg"]))
    assert stdin == want


def test_clip_package_opt_in_mha903_names_the_tower_swap():
    status, got = _run("--select", "MHA001,MHA903", f"{GOOD}/block.py")
    assert status == 1
    assert got == _at(GOOD, ("block.py", 11, 21, "MHA903",
                             "MultiheadAttention built without batch_first is fed sequence-first "
                             "data on every call ((L, N, ?), clip_like/tower.py line 15: "
                             "`x.permute(1, 0, 2)`): correct, but say batch_first=False"))


def test_clip_package_through_flake8_mha_check():
    tool = ("-m", "flake8_mha.frontends.cli", "check", "--no-cache")
    status, got = _run("--select", "MHA001,MHA010", GOOD, BAD, tool=tool)
    assert (status, got) == (1, _at(BAD, ("block.py", 11, 21, "MHA001", BAD_MESSAGE)))
    status, got = _run("--select", "MHA001,MHA010", GOOD, tool=tool)
    assert (status, got) == (0, set())


def _package(tmp_path, tower_forward: str) -> pathlib.Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "block.py").write_text(
        "import torch.nn as nn\n\n\n" + BLOCK.replace("nn.Sequential(OrderedDict([", "nn.Sequential(dict([")
    )
    (pkg / "tower.py").write_text(
        "import torch.nn as nn\n\nfrom .block import Block\n\n\n"
        "class Tower(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.blocks = nn.ModuleList([Block(64) for _ in range(2)])\n\n"
        "    def forward(self, x):\n" + tower_forward)
    return pkg


def test_an_edit_of_the_calling_file_changes_the_block_s_finding(tmp_path):
    loop = "        for blk in self.blocks:\n            x = blk(x)\n        return x\n"
    pkg = _package(tmp_path, "        x = x.transpose(0, 1)\n" + loop)
    block = pkg / "block.py"

    def lint():
        return [(f.code, f.line, f.col, f.evidence.get("layout_file"))
                for f in analyze_source(block.read_text(), str(block), CODES)]

    assert lint() == [("MHA903", 7, 21, "pkg/tower.py")]
    (pkg / "tower.py").write_text((pkg / "tower.py").read_text().replace(
        "        x = x.transpose(0, 1)\n", "        x = x.contiguous()  # (B, L, E)\n"))
    assert lint() == [("MHA001", 7, 21, "pkg/tower.py")]


def test_a_block_no_file_calls_keeps_today_s_finding(tmp_path):
    pkg = _package(tmp_path, "        return x\n")
    block = pkg / "block.py"
    found = analyze_source(block.read_text(), str(block), CODES)
    assert [(f.code, f.line, f.col, f.evidence["layout_kind"]) for f in found] == [
        ("MHA001", 7, 21, None)]


LOOP = "fixtures/program_layout/modulelist_loop"
LOOP_MESSAGE = (
    "MultiheadAttention built without batch_first is fed batch-first data ((N, L, E), "
    "modulelist_loop/model.py line 18: `self.embed(ids)`): it reads axis 0 as the sequence "
    "and mixes samples across the batch")


def test_modulelist_loop_and_index_across_files_per_file_and_whole():
    want = _at(LOOP, ("blocks.py", 18, 21, "MHA001", LOOP_MESSAGE))
    assert _run("--select", "MHA0,MHA1", LOOP) == (1, want)
    per_file = set()
    for name in ("__init__.py", "blocks.py", "stacks.py", "model.py"):
        per_file |= _run("--select", "MHA0,MHA1", f"{LOOP}/{name}")[1]
    assert per_file == want
    # the sequence-first block: the opt-in MHA903 names model.py's permute
    status, got = _run("--select", "MHA903", f"{LOOP}/blocks.py")
    assert [(g[1], g[2], g[3]) for g in got] == [(7, 21, "MHA903")]
    assert "modulelist_loop/model.py line 15: `self.stem(images).flatten(2).permute(2, 0, 1)`" in (
        next(iter(got))[4])


def test_a_broken_file_of_the_project_never_breaks_the_block_s_analysis(tmp_path):
    pkg = _package(tmp_path, "        return x\n")
    (pkg / "broken.py").write_text("from .block import Block\nBlock(64)(x.transpose(0, 1)\n")
    (pkg / "latin.py").write_bytes(b"from .block import Block\n# caf\xe9\n")
    block = pkg / "block.py"
    found = analyze_source(block.read_text(), str(block), CODES)
    assert [(f.code, f.line, f.col, f.evidence["layout_kind"]) for f in found] == [
        ("MHA001", 7, 21, None)]


def _same_in_every_mode(package, names, want, select="MHA001,MHA903"):
    """flake8 over the package, flake8 one file at a time, and ``check``
    report ``want`` alike."""
    assert _run("--select", select, package) == (1, want)
    per_file = set()
    for name in names:
        per_file |= _run("--select", select, f"{package}/{name}")[1]
    assert per_file == want
    tool = ("-m", "flake8_mha.frontends.cli", "check", "--no-cache")
    assert _run("--select", select, package, tool=tool) == (1, want)


REGISTRY = "fixtures/program_layout/registry_entry"
REGISTRY_SEQ = (
    "MultiheadAttention built without batch_first is fed sequence-first data on every call "
    "((L, N, C), registry_entry/tower.py line 16: `x.permute(1, 0, 2)`): correct, but say "
    "batch_first=False")
REGISTRY_BATCH = (
    "MultiheadAttention built without batch_first is fed batch-first data ((N, L, E), "
    "registry_entry/tower.py line 28: `# (B, L, E)`): it reads axis 0 as the sequence and "
    "mixes samples across the batch")


def test_data_from_outside_the_project_leaves_the_layout_to_the_project_s_calls():
    """A class no file of the project calls (built from a registry) loops the
    blocks over its ``forward``'s own data: the project's calls decide, so the
    sequence-first block gives no MHA001 and the batch-first one still does;
    per file, over the package, and through ``check`` alike (mmpretrain)."""
    want = _at(REGISTRY, ("blocks.py", 9, 21, "MHA903", REGISTRY_SEQ),
               ("token_blocks.py", 8, 21, "MHA001", REGISTRY_BATCH))
    _same_in_every_mode(REGISTRY, ("__init__.py", "blocks.py", "token_blocks.py", "tower.py", "registry.py"), want)


def test_a_block_only_data_from_outside_reaches_keeps_today_s_finding(tmp_path):
    """The outside caller's data says nothing either way: a block that only
    the registry's class runs stays unknown, and MHA001 stays."""
    pkg = _package(tmp_path, "        return x\n")
    (pkg / "registry.py").write_text(
        "import torch.nn as nn\n\nfrom .block import Block\n\n\n"
        "class Configured(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.blocks = nn.ModuleList([Block(64) for _ in range(2)])\n\n"
        "    def forward(self, x):\n"
        "        for blk in self.blocks:\n"
        "            x = blk(x)\n"
        "        return x\n")
    block = pkg / "block.py"
    found = analyze_source(block.read_text(), str(block), CODES)
    assert [(f.code, f.line, f.col, f.evidence["layout_kind"]) for f in found] == [
        ("MHA001", 7, 21, None)]


POST_NORM = "fixtures/program_layout/post_norm"
POST_NORM_SEQ = (
    "MultiheadAttention built without batch_first is fed sequence-first data on every call "
    "((L, N, ?), post_norm/series.py line 18: `X.permute(1, 0, 2)`): correct, but say "
    "batch_first=False")
POST_NORM_BATCH = (
    "MultiheadAttention built without batch_first is fed batch-first data ((N, L, E), "
    "post_norm/tokens.py line 13: `# (batch, seq_len, d_model)`): it reads axis 0 as the "
    "sequence and mixes samples across the batch")


def test_a_layer_of_another_file_run_by_torch_s_encoder_is_fed_the_encoder_s_input():
    """``nn.TransformerEncoder(Layer(...), n)`` with the layer class in another
    file: every pass is fed what the model feeds the encoder, because the
    layer's ``permute(1, 2, 0)``, ``BatchNorm1d``, ``permute(2, 0, 1)`` gives
    back the axes it was fed (mvts_transformer, in sktime and tsai)."""
    want = _at(POST_NORM, ("layers.py", 10, 26, "MHA903", POST_NORM_SEQ),
               ("token_layers.py", 8, 26, "MHA001", POST_NORM_BATCH))
    _same_in_every_mode(POST_NORM, ("__init__.py", "layers.py", "token_layers.py", "series.py", "tokens.py"), want)


def test_a_layer_that_does_not_give_its_axes_back_is_not_followed_past_the_first_pass(tmp_path):
    """A layer whose output is laid out otherwise (here batch-first after a
    swap it never undoes) feeds the next pass something else: unknown, so
    MHA001 stays even though the model swaps to sequence-first."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    layers = (ROOT / POST_NORM / "layers.py").read_text()
    (pkg / "layers.py").write_text(layers.replace(
        "        return src.permute(2, 0, 1)\n", "        return src.permute(0, 2, 1)\n", 1))
    (pkg / "series.py").write_text((ROOT / POST_NORM / "series.py").read_text())
    found = analyze_source((pkg / "layers.py").read_text(), str(pkg / "layers.py"), CODES)
    assert [(f.code, f.line, f.col) for f in found] == [("MHA001", 10, 26)]


CHECKPOINTED = "fixtures/program_layout/checkpointed"
CHECKPOINTED_SEQ = (
    "MultiheadAttention built without batch_first is fed sequence-first data on every call "
    "((L, N, ?), checkpointed/text.py line 17: `x.permute(1, 0, 2)`): correct, but say "
    "batch_first=False")
CHECKPOINTED_BATCH = (
    "MultiheadAttention built without batch_first is fed batch-first data ((N, L, E), "
    "checkpointed/model.py line 14: `# (batch, seq_len, width)`): it reads axis 0 as the "
    "sequence and mixes samples across the batch")


def test_a_checkpointed_block_gives_back_what_the_block_does():
    """``checkpoint(r, x, attn_mask, use_reentrant=False)`` runs ``r(x,
    attn_mask)``: open_clip's loop over its blocks keeps the layout on both
    branches; per file, over the package and through ``check``."""
    want = _at(CHECKPOINTED, ("blocks.py", 11, 21, "MHA903", CHECKPOINTED_SEQ),
               ("token_blocks.py", 9, 21, "MHA001", CHECKPOINTED_BATCH))
    _same_in_every_mode(CHECKPOINTED, ("__init__.py", "blocks.py", "text.py", "token_blocks.py", "model.py"), want)


CONTAINERS = "fixtures/program_layout/factory_containers"


def test_the_layer_of_an_encoder_a_factory_returns_is_fed_what_its_callers_feed():
    """``layer = nn.TransformerDecoderLayer(...)``; ``return
    nn.TransformerDecoder(layer, n)`` in one file, the decoder kept on
    ``self`` and called in another: the layer is judged by that call (probe
    p04 of issue 26 gave the plain MHA001 on sequence-first data)."""
    status, got = _run("--select", "MHA001,MHA903", CONTAINERS)
    rows = sorted((os.path.basename(g[0]), g[1], g[2], g[3]) for g in got)
    assert (status, rows) == (1, [("build.py", 6, 13, "MHA001"),
                                  ("seq_build.py", 7, 13, "MHA903"),
                                  ("seq_build.py", 12, 34, "MHA903")])
    messages = {g[1]: g[4] for g in got}
    assert "factory_containers/model.py line 16: `# (B, T, D)`" in messages[6]
    assert "factory_containers/model.py line 18: `tgt.transpose(0, 1)`" in messages[7]
    assert "factory_containers/model.py line 19: `memory.transpose(0, 1)`" in messages[12]
    per_file = set()
    for name in ("__init__.py", "build.py", "seq_build.py", "model.py"):
        per_file |= _run("--select", "MHA001,MHA903", f"{CONTAINERS}/{name}")[1]
    assert per_file == got


# ------------------------------------------------------------------- DETR's cloned layers

DETR = "fixtures/program_layout/detr"
DETR_SEQ = (
    "MultiheadAttention built without batch_first is fed sequence-first data on every call "
    "((L, N, C), line 50: `src.flatten(2).permute(2, 0, 1)`): correct, but say "
    "batch_first=False")
DETR_BATCH = (
    "MultiheadAttention built without batch_first is fed batch-first data ((N, L, E), line 41: "
    "`self.embed(ids)`): it reads axis 0 as the sequence and mixes samples across the batch")


def test_detr_s_layers_per_file_and_over_the_package():
    """The layer handed to the encoder's constructor and cloned there is fed
    what the parent feeds the encoder: sequence-first image features give
    MHA903 (opt-in), batch-first tokens MHA001; per file as over the package."""
    want = _at(DETR, ("transformer.py", 16, 26, "MHA903", DETR_SEQ),
               ("tokens.py", 15, 26, "MHA001", DETR_BATCH))
    assert _run("--select", "MHA0,MHA1,MHA903", DETR) == (1, want)
    for name in ("transformer.py", "tokens.py", "model.py"):
        mine = {row for row in want if row[0].endswith(name)}
        assert _run("--select", "MHA0,MHA1,MHA903", f"{DETR}/{name}") == (
            1 if mine else 0, mine)
    # by default MHA903 is off: the correct encoder reports nothing
    assert _run("--select", "MHA0,MHA1", f"{DETR}/transformer.py") == (0, set())


SPLIT = "fixtures/program_layout/detr_split"


def test_a_layer_handed_to_an_encoder_of_another_file_is_fed_what_the_model_feeds():
    """The layer and the encoder that clones its constructor's parameter in
    one file, the model that builds both in another: the encoder's file is
    read with that parameter holding the model's layer.  The token layer is
    called by keyword (``layer(tokens=x)``)."""
    seq = (
        "MultiheadAttention built without batch_first is fed sequence-first data on every "
        "call ((L, N, C), detr_split/model.py line 15: `src.flatten(2).permute(2, 0, 1)`): "
        "correct, but say batch_first=False")
    batch = (
        "MultiheadAttention built without batch_first is fed batch-first data ((N, L, E), "
        "detr_split/tokens.py line 16: `self.embed(ids)`): it reads axis 0 as the sequence "
        "and mixes samples across the batch")
    want = _at(SPLIT, ("layers.py", 15, 26, "MHA903", seq),
               ("token_layers.py", 14, 21, "MHA001", batch))
    assert _run("--select", "MHA0,MHA1,MHA903", SPLIT) == (1, want)
    for name in ("layers.py", "token_layers.py"):
        mine = {row for row in want if row[0].endswith("/" + name)}
        assert _run("--select", "MHA0,MHA1,MHA903", f"{SPLIT}/{name}") == (1, mine)
    # without the other files, nothing feeds them: the plain message
    status, alone = _run("--select", "MHA0,MHA1,MHA903", "--mha-no-project-wide", SPLIT)
    assert {(r[0], r[1], r[3]) for r in alone} == {
        (os.path.normpath(f"{SPLIT}/layers.py"), 15, "MHA001"),
        (os.path.normpath(f"{SPLIT}/token_layers.py"), 14, "MHA001")}


# ------------------------------------------------- modules handed to a layer of another file

HANDED = ROOT / "fixtures" / "program_layout" / "handed"


def test_a_module_handed_to_a_layer_of_another_file_is_fed_what_that_layer_feeds():
    found = analyze_file(str(HANDED / "build.py"), ["MHA001", "MHA903"])
    found += analyze_file(str(HANDED / "tokens.py"), ["MHA001", "MHA903"])
    assert [(f.code, f.line, f.col) for f in found] == [("MHA903", 11, 25), ("MHA001", 8, 23)]
    assert found[0].evidence["layout_file"].endswith("handed/layers.py")
    assert found[0].evidence["layout_line"] == 16  # tgt: ...  # nq, bs, d_model
    assert found[1].evidence["layout_line"] == 31  # B, L, D = x.shape
    assert "is fed batch-first data ((N, L, E)" in found[1].message
    # alone, nothing calls them: both keep the plain MHA001
    for name, line in (("build.py", 11), ("tokens.py", 8)):
        text = (HANDED / name).read_text()
        alone = analyze_source(text, str(HANDED / name), ["MHA001", "MHA903"], project=False)
        assert [(f.code, f.line) for f in alone] == [("MHA001", line)]


def test_a_default_module_kept_with_or_is_fed_what_the_attribute_s_calls_feed():
    found = analyze_file(str(HANDED / "layers.py"), ["MHA001", "MHA903"])
    assert [(f.code, f.line, f.col) for f in found] == [("MHA903", 12, 44)]
    src = HEAD + textwrap.dedent("""\
        class Layer(nn.Module):
            def __init__(self, attention=None):
                super().__init__()
                self.attn = attention or nn.MultiheadAttention(64, 8)

            def forward(self, x):
                B, L, D = x.shape
                return self.attn(x, x, x)[0]
        """)
    got = analyze_source(src, "t.py", ["MHA001", "MHA903"])
    assert [(f.code, f.line, f.col) for f in got] == [("MHA001", 7, 34)]
    assert "is fed batch-first data" in got[0].message


# ------------------------------------------- a default that no construction lets run

ALWAYS = ROOT / "fixtures" / "program_layout" / "always_handed"


def test_a_default_every_construction_replaces_is_not_judged():
    """SAM 3: ``self_attention or nn.MultiheadAttention(...)`` where every
    construction of the layer in the package builds the module itself."""
    layers = ALWAYS / "layers.py"
    found = analyze_file(str(layers), ["MHA001", "MHA903"])
    assert [(f.code, f.line, f.col) for f in found] == [("MHA001", 24, 46)]
    # this file alone: nothing says the default never runs
    alone = analyze_source(layers.read_text(), str(layers), ["MHA001"], project=False)
    assert [(f.code, f.line, f.col) for f in alone] == [("MHA001", 10, 44), ("MHA001", 24, 46)]


@pytest.mark.parametrize(
    "handed",
    [
        "self_attention=attention",  # a name: it may be None
        "self_attention=None",
        "**options",
    ],
)
def test_a_default_is_judged_unless_every_construction_builds_the_module(tmp_path, handed):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    layers = pkg / "layers.py"
    layers.write_text((ALWAYS / "layers.py").read_text())
    (pkg / "build.py").write_text(
        "import torch.nn as nn\n\nfrom .layers import EncoderLayer\n\n\n"
        "def build_encoder(attention=None, **options):\n"
        "    a = EncoderLayer(256, self_attention=nn.MultiheadAttention(256, 8, batch_first=True))\n"
        f"    return a, EncoderLayer(256, {handed})\n"
    )
    found = analyze_file(str(layers), ["MHA001"])
    assert [(f.code, f.line, f.col) for f in found] == [("MHA001", 10, 44), ("MHA001", 24, 46)]


def test_the_same_answer_when_another_file_is_read_again(monkeypatch):
    """A file read for its layouts can be dropped and read again during one
    analysis (more files read than are kept): each rule that asks must still
    get the same answer (a silent MHA903 and MHA001 at SAM 3's build file)."""
    from flake8_mha.analysis.layout import project_callers

    want = [(f.code, f.line, f.col) for f in analyze_file(str(HANDED / "build.py"),
                                                          ["MHA001", "MHA903"])]
    assert want == [("MHA903", 11, 25)]
    monkeypatch.setattr(project_callers, "MAX_UNITS", 1)
    monkeypatch.setattr(project_callers, "_UNITS", {})
    got = [(f.code, f.line, f.col) for f in analyze_file(str(HANDED / "build.py"),
                                                         ["MHA001", "MHA903"])]
    assert got == want


# ------------------------------------------------ nn.Transformer's parts run on their own

SEQ2SEQ = """\
class Seq2Seq(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.transformer = nn.Transformer(d, 8{extra})
        self.embed = nn.Embedding(100, d)

    def encode(self, tokens):
        x = self.embed(tokens)  # (N, S, E)
{body}
"""
TRANSFORMER = (AFTER + 3, 28)  # where ``nn.Transformer`` stands


def _seq2seq(body: str, extra: str = ""):
    text = SEQ2SEQ.format(extra=extra, body=textwrap.indent(textwrap.dedent(body), " " * 8))
    return [(f.code, f.line, f.col, f.message) for f in findings(text)
            if (f.line, f.col) == TRANSFORMER]


def test_the_encoder_of_a_transformer_reads_its_batch_first():
    got = _seq2seq("return self.transformer.encoder(x)\n")
    assert [g[:3] for g in got] == [("MHA001",) + TRANSFORMER]
    assert f"line {AFTER + 7}: `# (N, S, E)`" in got[0][3]


@pytest.mark.parametrize("body", [
    "x = x.transpose(0, 1)  # (S, N, E)\nreturn self.transformer.encoder(x)\n",
    "x = x.transpose(0, 1)\nreturn self.transformer.encoder.forward(x)\n",
    "m = self.transformer.encoder(x.transpose(0, 1))\n"
    "return self.transformer.decoder(x.transpose(0, 1), m)\n",
])
def test_sequence_first_data_into_a_part_is_not_reported(body):
    assert [g[:3] for g in _seq2seq(body)] == [("MHA903",) + TRANSFORMER]


def test_a_part_fed_sequence_first_beside_a_whole_call_fed_batch_first():
    body = ("m = self.transformer.encoder(x.transpose(0, 1))\n"
            "return self.transformer(x, x)\n")
    assert [g[:3] for g in _seq2seq(body)] == [("MHA001",) + TRANSFORMER]


def test_a_custom_encoder_is_not_the_transformers_part():
    # the encoder the caller handed in is its own module: its calls say nothing of this one
    got = _seq2seq("x = x.transpose(0, 1)\nreturn self.transformer.encoder(x)\n",
                   extra=", custom_encoder=nn.Identity()")
    assert [g[:3] for g in got] == [("MHA001",) + TRANSFORMER]
    assert "fed" not in got[0][3]


# ------------------------------------ a swap under a branch the program never takes

GUARDED = ROOT / "fixtures" / "program_layout" / "guarded_swaps"
MIXER_MESSAGE = (
    "MultiheadAttention built with batch_first=True is fed sequence-first data ((L, N, E), "
    "line 17: `x.transpose(0, 1)`): samples mix across the batch")


def test_a_swap_guarded_by_a_flag_the_project_fixes_is_followed_one_way():
    """open_clip's ``if not self.batch_first: x = x.transpose(0, 1)``: every
    construction leaves batch_first=True, so the blocks get the batch-first
    tokens (no MHA010); the mixer's guard is always taken (MHA010)."""
    from fixture_expect import assert_package_runs

    pkg = "fixtures/program_layout/guarded_swaps"
    found = assert_package_runs(pkg, [("mixer.py", 18, 16, "MHA010")])
    assert [f.msg for f in found] == [MIXER_MESSAGE]


@pytest.mark.parametrize("built, want", [
    # the one construction says batch_first=False: the transpose runs, and the
    # blocks' attention is built batch_first=False too
    ("Transformer(width=width, layers=layers, heads=heads, batch_first=False)", []),
    # the file alone, or constructions that disagree: the flag may be either,
    # and the attention's batch_first is no stated value
    ("Transformer(width=width, layers=layers, heads=heads, batch_first=self.bf)", []),
])
def test_a_swap_guarded_by_the_module_s_own_flag(tmp_path, built, want):
    from fixture_expect import copied

    pkg = copied(GUARDED, tmp_path)
    towers = pkg / "towers.py"
    towers.write_text(towers.read_text().replace(
        "Transformer(width=width, layers=layers, heads=heads)", built))
    found = analyze_file(str(pkg / "blocks.py"), ["MHA001", "MHA010"])
    assert [(f.code, f.line, f.col) for f in found] == want


def test_a_swap_the_program_always_takes_is_judged_and_one_it_never_takes_is_not(tmp_path):
    from fixture_expect import copied

    pkg = copied(GUARDED, tmp_path)
    towers = pkg / "towers.py"
    mixer = str(pkg / "mixer.py")
    assert [(f.code, f.line) for f in analyze_file(mixer, ["MHA010"])] == [("MHA010", 18)]
    towers.write_text(towers.read_text().replace(
        "Mixer(width, heads)", "Mixer(width, heads, seq_first_input=True)"))
    assert analyze_file(mixer, ["MHA010"]) == []  # never taken: batch-first data, as built


@pytest.mark.parametrize("fed, want", [
    # darts' forecaster: the data turned sequence-first right before the encoder
    ("src = x.permute(1, 0, 2)\n        return self.transformer.encoder(src)", [("MHA903", 7, 28)]),
    ("src = x.permute(1, 0, 2)\n        return self.transformer.encoder.forward(src)",
     [("MHA903", 7, 28)]),
    # through a per-token step given a setting beside the data (darts' positional encoding)
    ("src = x.permute(1, 0, 2)\n        return self.transformer.encoder(self.pos(src, start_pos=0))",
     [("MHA903", 7, 28)]),
    # stated batch-first data into the encoder of a sequence-first Transformer
    ("B, L, E = x.shape\n        return self.transformer.encoder(x)", [("MHA001", 7, 28)]),
])
def test_a_swap_right_before_a_transformer_part_is_the_conversion(fed, want):
    src = textwrap.dedent("""\
        import torch.nn as nn


        class Forecaster(nn.Module):
            def __init__(self):
                super().__init__()
                self.transformer = nn.Transformer(d_model=64, nhead=4)

            def forward(self, x):
                FED
        """).replace("FED", fed)
    got = analyze_source(src, "t.py", ["MHA001", "MHA903"])
    assert [(f.code, f.line, f.col) for f in got] == want


@pytest.mark.parametrize("pattern, want", [
    # TimeSformer's divided attention: time-major rows, (batch, patch) as the batch
    ("b (t n) d -> t (b n) d", [("MHA903", 7, 21)]),
    ("b (t n) d -> n (b t) d", [("MHA903", 7, 21)]),
    # the same rows batch-first: the default reads the frames as the batch
    ("b (t n) d -> (b n) t d", [("MHA001", 7, 21)]),
    # the batch merged with the channels names no axis: unknown, reported as such
    ("b (t n) d -> t n (b d)", [("MHA001", 7, 21)]),
])
def test_a_batch_merged_with_part_of_the_sequence_is_the_batch(pattern, want):
    src = textwrap.dedent("""\
        from einops import rearrange
        import torch.nn as nn

        class Divided(nn.Module):
            def __init__(self, dim, heads):
                super().__init__()
                self.attn = nn.MultiheadAttention(dim, heads)

            def forward(self, x, t):
                B, L, D = x.shape
                xt = rearrange(x, "PATTERN", t=t)
                return self.attn(xt, xt, xt, need_weights=False)[0]
        """).replace("PATTERN", pattern)
    got = analyze_source(src, "t.py", ["MHA001", "MHA903"])
    assert [(f.code, f.line, f.col) for f in got] == want
    if want[0][0] == "MHA001" and "(b n) t d" in pattern:
        assert "is fed batch-first data" in got[0].message


@pytest.mark.parametrize("custom, want", [
    # darts: a custom encoder only under a setting, else None: torch builds the part
    ("enc = None\n        if glu:\n            enc = nn.TransformerEncoder(layer, 2)", "MHA903"),
    # always the caller's own encoder: the part is not the Transformer's, which
    # nothing calls (the layer it is built from gets its own finding)
    ("enc = nn.TransformerEncoder(layer, 2)", "MHA001"),
])
def test_a_custom_encoder_that_may_be_none_leaves_the_part_the_transformer_s(custom, want):
    src = textwrap.dedent("""\
        import torch.nn as nn


        class Forecaster(nn.Module):
            def __init__(self, glu=False):
                super().__init__()
                layer = nn.TransformerEncoderLayer(64, 4)
                CUSTOM
                self.transformer = nn.Transformer(
                    d_model=64, nhead=4, custom_encoder=enc)

            def forward(self, x):
                src = x.permute(1, 0, 2)
                return self.transformer.encoder(src)
        """).replace("CUSTOM", custom)
    line = src.splitlines().index("        self.transformer = nn.Transformer(") + 1
    got = analyze_source(src, "t.py", ["MHA001", "MHA903"])
    assert [(f.code, f.col) for f in got if f.line == line] == [(want, 28)]


@pytest.mark.parametrize("comment, want", [
    ("# (num_points, dim)", []),  # two axes, no batch: one unbatched sample
    ("# (batch_size, dim)", [("MHA001", 7, 21)]),  # a batch of vectors: no sequence stated
    ("# (B, num_points, dim)", [("MHA001", 7, 21)]),
])
def test_a_two_axis_shape_comment_without_a_batch_is_unbatched(comment, want):
    src = textwrap.dedent("""\
        import torch.nn as nn

        class PointMixer(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.embed = nn.Linear(3, dim)
                self.attn = nn.MultiheadAttention(dim, 4)

            def forward(self, points):
                x = self.embed(points)  COMMENT
                return self.attn(x, x, x, need_weights=False)[0]
        """).replace("COMMENT", comment)
    got = analyze_source(src, "t.py", ["MHA001"])
    assert [(f.code, f.line, f.col) for f in got] == want
