"""Issue 26, item 5: a subclass's ``super().__init__(BIG_DIM, BIG_HEADS)``
is a construction of its project base, with the sizes it hands it (probe P's
B03: an ``nn.MultiheadAttention(embed_dim, heads)`` built by the base, 200
over 16 heads from a config file).  Reported at the ``super().__init__``
call, per file and through ``check``, when the base is also built with other
sizes; when every construction passes the same, at the module (MHA008's
page)."""

from __future__ import annotations

from fixture_expect import write_package

from flake8_mha.lint.engine import analyze_file

CONFIG = "DIM = 64\nHEADS = 8\nBIG_DIM = 200\nBIG_HEADS = 16\n"
LAYERS = (
    "from torch import nn\n\n"
    "from .config import BIG_DIM, BIG_HEADS\n\n\n"
    "class Layer(nn.Module):\n"
    "    def __init__(self, embed_dim, heads):\n"
    "        super().__init__()\n"
    "        self.attn = nn.MultiheadAttention(embed_dim, heads, batch_first=True)\n\n\n"
    "class BigLayer(Layer):\n"
    "    def __init__(self):\n"
    "        super().__init__(BIG_DIM, BIG_HEADS)\n"
)
MODEL = (
    "from .config import DIM, HEADS\n"
    "from .layers import Layer\n\n\n"
    "def build():\n"
    "    return Layer(DIM, HEADS)\n"
)


def test_the_super_call_of_a_subclass_is_a_construction(tmp_path):
    pkg = write_package(
        tmp_path / "pkg", {"config.py": CONFIG, "layers.py": LAYERS, "model.py": MODEL}
    )
    got = analyze_file(str(pkg / "layers.py"), ["MHA008"])
    assert [(f.line, f.col, f.code) for f in got] == [(14, 9, "MHA008")]
    assert "embed_dim=200 is not divisible by num_heads=16" in got[0].message
    assert "through Layer() at " in got[0].message
    assert analyze_file(str(pkg / "model.py"), ["MHA008"]) == []


def test_right_sizes_in_the_super_call(tmp_path):
    layers = LAYERS.replace("super().__init__(BIG_DIM, BIG_HEADS)", "super().__init__(BIG_DIM, 8)")
    pkg = write_package(
        tmp_path / "pkg", {"config.py": CONFIG, "layers.py": layers, "model.py": MODEL}
    )
    assert analyze_file(str(pkg / "layers.py"), ["MHA008"]) == []
