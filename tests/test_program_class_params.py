"""Issue 26, items 1 and 3: a block that builds its attention from a class it
is handed (decision transformer's ``Block(MaskedSelfAttention, dim, heads)``
with ``self.attn = attn_cls(dim, heads)``; BERT4Rec's ``kind=...`` with
``self.attention = kind(heads, dim)``) holds the class every construction of
the block in the project names for that parameter.

``fixtures/program_calls/class_params``: the models hand the blocks their
attention classes and feed them padding masks; SDPA two calls away reads
True as attend: MHA002 at the model's calls, per file, over the package and
through ``check``; the inverted masks beside them are silent.  Constructions
that name two classes, or none, settle nothing; the same program in one file
reports the same."""

from __future__ import annotations

import pathlib

from fixture_expect import assert_package_runs, package_texts, write_package

from flake8_mha.lint.engine import analyze_file, analyze_source

PKG = pathlib.Path("fixtures/program_calls/class_params")


def test_per_file_over_the_package_and_through_check():
    assert_package_runs(str(PKG), [("model.py", 21, 17, "MHA002"), ("model.py", 41, 16, "MHA002")])


def test_the_findings_name_the_chain():
    got = analyze_file(str(PKG / "model.py"), ["MHA002"])
    assert [(f.line, f.col, f.code) for f in got] == [(21, 17, "MHA002"), (41, 16, "MHA002")]
    assert "through Block.forward() -> MaskedSelfAttention.forward()" in got[0].message
    assert "through TransformerBlock.forward() -> MultiHeadedAttention.forward()" in got[1].message


def _with_model(tmp_path, old: str, new: str):
    texts = package_texts(PKG)
    model = texts["model.py"]
    texts["model.py"] = model.replace(old, new)
    assert texts["model.py"] != model
    return write_package(tmp_path / "pkg", texts)


def test_each_instance_holds_the_class_it_is_built_with(tmp_path):
    """Another construction that hands another class does not hide this
    one's: the call of ``self.block`` runs the class its construction names
    (probe P's decision transformer: ``GPT(config)`` beside ``GPT(config,
    attn_cls=MaskedSelfAttention)``)."""
    pkg = _with_model(
        tmp_path,
        "        self.block = TransformerBlock(hidden, heads, kind=MultiHeadedAttention)\n",
        "        self.block = TransformerBlock(hidden, heads, kind=MultiHeadedAttention)\n"
        "        self.other = TransformerBlock(hidden, heads, kind=nn.Identity)\n",
    )
    got = analyze_file(str(pkg / "model.py"), ["MHA002"])
    assert [(f.line, f.col, f.code) for f in got] == [(21, 17, "MHA002"), (42, 16, "MHA002")]


def test_a_call_whose_instance_is_not_known_settles_nothing(tmp_path):
    """Two constructions with different classes, and a call that may run
    either (a list of both): unknown."""
    pkg = _with_model(
        tmp_path,
        "        self.block = TransformerBlock(hidden, heads, kind=MultiHeadedAttention)\n",
        "        self.block = TransformerBlock(hidden, heads, kind=MultiHeadedAttention)\n"
        "        self.other = TransformerBlock(hidden, heads, kind=nn.Identity)\n"
        "        self.both = [self.block, self.other]\n",
    )
    model = (pkg / "model.py").read_text(encoding="utf-8")
    model = model.replace(
        "        return self.block(x, mask)  # MHA002:16\n",
        "        for block in self.both:\n            x = block(x, mask)\n        return x\n",
    )
    (pkg / "model.py").write_text(model, encoding="utf-8")
    got = analyze_file(str(pkg / "model.py"), ["MHA002"])
    assert [(f.line, f.col, f.code) for f in got] == [(21, 17, "MHA002")]


def test_a_construction_naming_no_class_settles_nothing(tmp_path):
    pkg = _with_model(
        tmp_path,
        "[Block(MaskedSelfAttention, dim, heads) for _ in range(depth)]",
        "[Block(make_attention(), dim, heads) for _ in range(depth)]",
    )
    got = analyze_file(str(pkg / "model.py"), ["MHA002"])
    assert [(f.line, f.col, f.code) for f in got] == [(41, 16, "MHA002")]


def test_a_class_default_is_not_read_as_handed(tmp_path):
    """timm's ``attn_layer=Attention`` keeps its own reading: the default,
    unless a construction in the file passes another."""
    texts = package_texts(PKG)
    texts["blocks.py"] = texts["blocks.py"].replace(
        "def __init__(self, hidden, heads, kind=None):",
        "def __init__(self, hidden, heads, kind=MultiHeadedAttention):",
    ).replace("import torch.nn as nn\n", "import torch.nn as nn\n\nfrom .attention import MultiHeadedAttention\n")
    texts["model.py"] = texts["model.py"].replace(
        "TransformerBlock(hidden, heads, kind=MultiHeadedAttention)", "TransformerBlock(hidden, heads)"
    )
    pkg = write_package(tmp_path / "pkg", texts)
    got = analyze_file(str(pkg / "model.py"), ["MHA002"])
    assert [(f.line, f.col, f.code) for f in got] == [(21, 17, "MHA002"), (41, 16, "MHA002")]


def test_the_same_program_in_one_file(tmp_path):
    texts = package_texts(PKG)
    one = "\n\n".join([texts["attention.py"], texts["blocks.py"], texts["model.py"]])
    one = one.replace("from .attention import MaskedSelfAttention, MultiHeadedAttention\n", "")
    one = one.replace("from .blocks import Block, TransformerBlock\n", "")
    path = tmp_path / "one.py"
    path.write_text(one, encoding="utf-8")
    got = analyze_source(one, str(path), ["MHA002"])
    lines = one.splitlines()
    first = lines.index("            x = block(x, pad)  # MHA002:17") + 1
    second = lines.index("        return self.block(x, mask)  # MHA002:16") + 1
    assert [(f.line, f.col, f.code) for f in got] == [(first, 17, "MHA002"), (second, 16, "MHA002")]


_ATTN = (
    "import torch.nn as nn\n"
    "import torch.nn.functional as F\n\n\n"
    "class SelfAttn(nn.Module):\n"
    "    def __init__(self, d):\n"
    "        super().__init__()\n"
    "        self.qkv = nn.Linear(d, 3 * d)\n\n"
    "    def forward(self, x, mask=None):\n"
    "        q, k, v = self.qkv(x).chunk(3, dim=-1)\n"
    "        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)\n\n\n"
    "class InvertingAttn(SelfAttn):\n"
    "    def forward(self, x, mask=None):\n"
    "        q, k, v = self.qkv(x).chunk(3, dim=-1)\n"
    "        return F.scaled_dot_product_attention(q, k, v, attn_mask=~mask)\n"
)
_BLOCKS = (
    "import torch.nn as nn\n\n"
    "from .attn import SelfAttn\n\n\n"
    "class Block(nn.Module):\n"
    "    def __init__(self, d, attn_cls=SelfAttn):\n"
    "        super().__init__()\n"
    "        self.attn = attn_cls(d)\n\n"
    "    def forward(self, x, mask=None):\n"
    "        return x + self.attn(x, mask)\n\n\n"
    "class GPT(nn.Module):\n"
    "    def __init__(self, d, attn_cls=SelfAttn):\n"
    "        super().__init__()\n"
    "        self.blocks = nn.ModuleList([Block(d, attn_cls) for _ in range(2)])\n\n"
    "    def forward(self, x, mask=None):\n"
    "        for b in self.blocks:\n"
    "            x = b(x, mask)\n"
    "        return x\n"
)
_MODEL = (
    "import torch.nn as nn\n\n"
    "from .attn import InvertingAttn, SelfAttn\n"
    "from .blocks import GPT\n\n\n"
    "class Model(nn.Module):\n"
    "    def __init__(self, d=16):\n"
    "        super().__init__()\n"
    "        self.emb = nn.Embedding(10, d)\n"
    "        self.gpt = GPT(d, attn_cls={cls})\n\n"
    "    def forward(self, ids):\n"
    "        pad = (ids == 0)[:, None, None, :]\n"
    "        return self.gpt(self.emb(ids), pad)\n"
)


def test_a_class_handed_through_two_constructors(tmp_path):
    """GPT's ``Block(d, attn_cls)`` hands on the class its own constructions name."""
    pkg = write_package(
        tmp_path / "pkg",
        {"attn.py": _ATTN, "blocks.py": _BLOCKS, "model.py": _MODEL.format(cls="SelfAttn")},
    )
    got = analyze_file(str(pkg / "model.py"), ["MHA002"])
    assert [(f.line, f.col, f.code) for f in got] == [(15, 16, "MHA002")]
    assert "through GPT.forward() -> Block.forward() -> SelfAttn.forward()" in got[0].message


def test_a_class_default_overridden_in_another_file(tmp_path):
    """The class default (``attn_cls=SelfAttn``) is not what the blocks hold
    when the project's one construction hands another class."""
    pkg = write_package(
        tmp_path / "pkg",
        {"attn.py": _ATTN, "blocks.py": _BLOCKS, "model.py": _MODEL.format(cls="InvertingAttn")},
    )
    assert analyze_file(str(pkg / "model.py"), ["MHA002", "MHA003"]) == []


def test_a_class_default_left_as_it_is(tmp_path):
    model = _MODEL.format(cls="SelfAttn").replace("GPT(d, attn_cls=SelfAttn)", "GPT(d)")
    pkg = write_package(tmp_path / "pkg", {"attn.py": _ATTN, "blocks.py": _BLOCKS, "model.py": model})
    got = analyze_file(str(pkg / "model.py"), ["MHA002"])
    assert [(f.line, f.col, f.code) for f in got] == [(15, 16, "MHA002")]


def test_two_constructions_of_the_chain_each_with_its_class(tmp_path):
    """Probe P's B29: ``GPT(d)`` (the default class) beside ``GPT(d,
    attn_cls=InvertingAttn)``: each call judged with its own instance's
    class, through ``Block(d, attn_cls)``."""
    model = (
        "import torch.nn as nn\n\n"
        "from .attn import InvertingAttn\n"
        "from .blocks import GPT\n\n\n"
        "class Model(nn.Module):\n"
        "    def __init__(self, d=16):\n"
        "        super().__init__()\n"
        "        self.emb = nn.Embedding(10, d)\n"
        "        self.plain = GPT(d)\n"
        "        self.inverting = GPT(d, attn_cls=InvertingAttn)\n\n"
        "    def forward(self, ids):\n"
        "        pad = (ids == 0)[:, None, None, :]\n"
        "        x = self.inverting(self.emb(ids), pad)\n"
        "        return self.plain(x, pad)\n"
    )
    pkg = write_package(tmp_path / "pkg", {"attn.py": _ATTN, "blocks.py": _BLOCKS, "model.py": model})
    got = analyze_file(str(pkg / "model.py"), ["MHA002", "MHA003"])
    assert [(f.line, f.col, f.code) for f in got] == [(17, 16, "MHA002")]
