"""Release review 13 (twenty-second stop): each false finding cut to its
form, with the exact code, line and column.  mmhuman3d's DeciWatch feeds
its attention sequence-first data four method calls below the permute;
classy-vision's ViT keeps its blocks in ``nn.Sequential(OrderedDict(layers))``
of ``(name, block)`` pairs appended in a loop, and torchvision's in an
``OrderedDict`` filled by ``layers[name] = block``.  Each is read as
sequence-first (MHA903, opt-in), where it was MHA001's unknown layout."""

from __future__ import annotations

import textwrap

from flake8_mha.lint.engine import analyze_source

LAYOUT = ["MHA001", "MHA903"]


def _found(src, codes=LAYOUT, path="m.py"):
    return [(f.code, f.line, f.col) for f in analyze_source(textwrap.dedent(src), path, codes)]


def _hops(n: int) -> str:
    """A module whose data is made sequence-first ``n`` method calls above its attention."""
    calls = "".join(
        f"\n    def h{i}(self, h):\n        return self.h{i + 1}(h)\n" for i in range(1, n)
    )
    return (
        "from torch import nn\n\n\n"
        "class M(nn.Module):\n"
        "    def __init__(self, d):\n"
        "        super().__init__()\n"
        "        self.attn = nn.MultiheadAttention(d, 4)\n"
        "        self.proj = nn.Linear(d, d)\n\n"
        "    def forward(self, x):\n"
        "        b, c, _ = x.shape\n"
        "        h = self.proj(x.permute(2, 0, 1))\n"
        "        return self.h1(h)\n"
        + calls
        + f"\n    def h{n}(self, h):\n        return self.attn(h, h, h, need_weights=False)[0]\n"
    )


def test_sequence_first_data_four_and_six_method_calls_down_is_read():
    for n in (3, 4, 6):
        assert _found(_hops(n)) == [("MHA903", 7, 21)], n


PAIRS = """\
from collections import OrderedDict

from torch import nn


class Block(nn.Module):
    def __init__(self, heads, width):
        super().__init__()
        self.ln = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads)

    def forward(self, x):
        y = self.ln(x)
        return x + self.attn(y, y, y, need_weights=False)[0]


class Encoder(nn.Module):
    def __init__(self, depth, heads, width):
        super().__init__()
        layers = []
        for i in range(depth):
            layers.append((f"layer_{i}", Block(heads, width)))
        self.layers = nn.Sequential(OrderedDict(layers))

    def forward(self, x):
        return self.layers(x)


class ViT(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.width = width
        self.conv_proj = nn.Conv2d(3, width, kernel_size=8, stride=8)
        self.encoder = Encoder(2, 4, width)

    def forward(self, x):
        n, c, h, w = x.shape
        x = self.conv_proj(x)
        x = x.reshape(n, self.width, -1)
        x = x.permute(@ORDER@)  # @COMMENT@
        return self.encoder(x)
"""

FILLED = PAIRS.replace(
    '        layers = []\n        for i in range(depth):\n'
    '            layers.append((f"layer_{i}", Block(heads, width)))\n'
    "        self.layers = nn.Sequential(OrderedDict(layers))\n",
    "        layers = OrderedDict()\n        for i in range(depth):\n"
    '            layers[f"layer_{i}"] = Block(heads, width)\n'
    "        self.layers = nn.Sequential(layers)\n",
)


def _fed(src: str, order: str, comment: str) -> str:
    return src.replace("@ORDER@", order).replace("@COMMENT@", comment)


def test_blocks_kept_as_named_pairs_are_fed_what_the_sequential_is_fed():
    for src in (PAIRS, FILLED):
        seq_first = _fed(src, "2, 0, 1", "(S, N, E)")
        assert _found(seq_first) == [("MHA903", 10, 21)]
        batch_first = _fed(src, "0, 2, 1", "(N, S, E)")
        assert _found(batch_first) == [("MHA001", 10, 21)]


def test_a_stored_item_is_one_of_the_containers_members():
    assert FILLED != PAIRS  # the replacement above took
    src = FILLED.replace("layers = OrderedDict()", "layers = {}")
    assert _found(_fed(src, "2, 0, 1", "(S, N, E)")) == [("MHA903", 10, 21)]


# -- stackformer: SDPA's arguments gathered in a dict, then ``**kwargs``

SPLAT_ENGINE = """\
import torch.nn.functional as F


def run(q, k, v, attn_mask=None, is_causal=False):
    kwargs = {"attn_mask": attn_mask, "is_causal": is_causal}
    return F.scaled_dot_product_attention(q, k, v, **kwargs)


def caller(q, k, v, mask):
    return run(q, k, v, attn_mask=mask)
"""


def test_a_flag_handed_on_through_a_dict_is_the_parameter_it_holds():
    assert _found(SPLAT_ENGINE, ["MHA006"]) == []
    literal = SPLAT_ENGINE.replace('"is_causal": is_causal', '"is_causal": True')
    assert _found(literal, ["MHA006"]) == [("MHA006", 6, 12)]


def test_a_dropout_gathered_in_a_dict_is_followed_from_another_file():
    from fixture_expect import assert_package_runs

    found = assert_package_runs(
        "fixtures/program_calls/dict_splats", [("attention.py", 21, 15, "MHA007")],
        select="MHA0,MHA1",
    )
    assert "through run_attention() -> run_sdpa()" in found[0].msg


def test_the_dict_a_summary_reads_and_the_ones_it_does_not():
    import ast

    from flake8_mha.analysis.program.summaries import summarise

    def reach(body: str) -> dict:
        src = (
            "import torch.nn.functional as F\n"
            "def f(q, k, v, m=None, p=0.0):\n" + body
            + "    return F.scaled_dot_product_attention(q, k, v, **kw)\n"
        )
        ast.parse(src)
        got = summarise(src).get("f", {}).get("reach", {})
        return {k for k in got if k in ("attn_mask", "dropout_p", "is_causal")}

    assert reach('    kw = {"attn_mask": m, "dropout_p": p}\n') == {"attn_mask", "dropout_p"}
    assert reach("    kw = dict(dropout_p=p)\n    kw['attn_mask'] = m\n") == {
        "attn_mask", "dropout_p"}
    # given twice, changed in place, or rebound: what it holds depends on the path
    assert reach('    kw = {"dropout_p": p}\n    if m is not None:\n'
                 '        kw["dropout_p"] = 0.0\n') == set()
    assert reach('    kw = {"dropout_p": p}\n    kw.update(attn_mask=m)\n') == set()
    assert reach('    kw = {"dropout_p": p}\n    kw = {}\n') == set()


def test_a_norm_made_by_a_module_level_partial_keeps_the_layout():
    # classy-vision's ``LayerNorm = partial(nn.LayerNorm, eps=1e-6)`` before the attention
    src = PAIRS.replace(
        "from torch import nn\n", "from functools import partial\n\nfrom torch import nn\n\n"
        "LayerNorm = partial(nn.LayerNorm, eps=1e-6)\n", 1,
    ).replace("self.ln = nn.LayerNorm(width)", "self.ln = LayerNorm(width)")
    assert "self.ln = LayerNorm(width)" in src
    assert _found(_fed(src, "2, 0, 1", "(S, N, E)")) == [("MHA903", 14, 21)]
    assert _found(_fed(src, "0, 2, 1", "(N, S, E)")) == [("MHA001", 14, 21)]
