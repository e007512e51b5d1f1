"""Issue 14, within one file: module identity through nn.Transformer submodules,
ModuleDict entries, zip/enumerate, setattr/getattr name templates; derived
constants and positional constructor arguments; branch-chosen dropout.
Each found pattern beside the look-alike that must stay unknown."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

from fixture_expect import FIXTURES, ROOT, expected
from flake8_mha.lint.engine import analyze_source

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def found(body, codes=("MHA004", "MHA005", "MHA007", "MHA008", "MHA101", "MHA102")):
    src = HEADER + textwrap.dedent(body)
    return [(f.code, f.line, f.col) for f in analyze_source(src, codes=list(codes))]


def line_of(body, needle):
    """The line of the file ``found`` builds on which ``needle`` first occurs."""
    src = HEADER + textwrap.dedent(body)
    return next(i for i, line in enumerate(src.splitlines(), 1) if needle in line)


# ------------------------------------------------------- nn.Transformer submodules

TRANSFORMER = """
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.t = nn.Transformer(64, 8, batch_first=True{extra})

    def forward(self, x):
        return self.t.{call}
"""


@pytest.mark.parametrize("call,code", [
    ("encoder(x, is_causal=True)", "MHA005"),
    ("decoder(x, x, tgt_is_causal=True)", "MHA005"),
    ("encoder.layers[0](x, is_causal=True)", "MHA005"),
    ("decoder.layers[1](x, x, tgt_is_causal=True)", "MHA005"),
])
def test_transformer_submodules_are_module_calls(call, code):
    assert found(TRANSFORMER.format(extra="", call=call)) == [(code, 11, 16)]


@pytest.mark.parametrize("extra", [", custom_encoder=enc", ", **kw"])
def test_transformer_with_a_custom_encoder_is_unknown(extra):
    src = TRANSFORMER.replace("def __init__(self)", "def __init__(self, enc, kw)")
    assert found(src.format(extra=extra, call="encoder(x, is_causal=True)")) == []
    assert found(src.format(extra=extra, call="encoder.layers[0](x, is_causal=True)")) == []


def test_transformer_subclass_submodules_are_unknown():
    src = """
    class MyT(nn.Transformer):
        pass

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.t = MyT(64, 8, batch_first=True)

        def forward(self, x):
            return self.t.encoder(x, is_causal=True)
    """
    assert found(src) == []


def test_encoder_layers_are_the_layer_it_was_given():
    src = """
    class M(nn.Module):
        def __init__(self, make):
            super().__init__()
            self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 8, batch_first=True), 2)
            self.other = nn.TransformerEncoder(make(), 2)

        def forward(self, x):
            x = self.other.layers[0](x, is_causal=True)
            return self.enc.layers[0](x, is_causal=True)
    """
    assert found(src) == [("MHA005", 13, 16)]


# ------------------------------------------------------------------ ModuleDict

MODULE_DICT = """
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.ModuleDict({entries})

    def forward(self, x, name):
        h, _ = self.attn[{key}](x, x, x)
        return h
"""


@pytest.mark.parametrize("entries,key,want", [
    ('{"self": nn.MultiheadAttention(64, 8, batch_first=True)}', '"self"', [("MHA102", 11, 16)]),
    ('{"a": nn.MultiheadAttention(64, 8, batch_first=True), '
     '"b": nn.MultiheadAttention(64, 8, batch_first=True)}', "name", [("MHA102", 11, 16)]),
    ("dict(a=nn.MultiheadAttention(64, 8, batch_first=True))", '"a"', [("MHA102", 11, 16)]),
    # a mixed dict, an unknown argument, an empty dict filled later: unknown
    ('{"a": nn.MultiheadAttention(64, 8, batch_first=True), "b": nn.Linear(64, 64)}', "name", []),
    ("modules", "name", []),
    ("", '"self"', []),
    # a literal key after a ``**`` splat is that entry; one before it may be replaced
    ('{**base, "a": nn.MultiheadAttention(64, 8, batch_first=True)}', '"a"', [("MHA102", 11, 16)]),
    ('{"a": nn.MultiheadAttention(64, 8, batch_first=True), **base}', '"a"', []),
])
def test_module_dict_entries(entries, key, want):
    src = MODULE_DICT.format(entries=entries, key=key).replace("(self):", "(self, modules=None, base=None):", 1)
    assert found(src) == want


@pytest.mark.parametrize("change", [
    'self.attn["self"] = nn.Linear(64, 64)',
    'self.attn.update({"self": nn.Linear(64, 64)})',
    'del self.attn["self"]',
])
def test_container_changed_in_place_is_unknown(change):
    src = MODULE_DICT.format(entries='{"self": nn.MultiheadAttention(64, 8, batch_first=True)}',
                             key='"self"')
    src = src.replace("    def forward", "    def swap(self):\n        " + change + "\n\n    def forward")
    assert found(src) == []


# ------------------------------------------------------------- zip / enumerate

LOOP = """
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.attns = nn.ModuleList([nn.MultiheadAttention(64, 8, batch_first=True) for _ in range(3)])
        self.projs = nn.ModuleList([nn.Linear(64, 64) for _ in range(3)])

    def forward(self, feats):
        for {target} in {iterable}:
            h, _ = {attn}(f, f, f)
        return h
"""


@pytest.mark.parametrize("target,iterable,attn,want", [
    ("f, a, p", "zip(feats, self.attns, self.projs)", "a", [("MHA102", 20)]),
    ("i, (f, a)", "enumerate(zip(feats, self.attns))", "a", [("MHA102", 20)]),
    ("(f, a), i", "zip(zip(feats, self.attns), range(3))", "a", [("MHA102", 20)]),
    ("i, a", "enumerate(self.attns, 1)", "a", [("MHA102", 20)]),
    ("i, (f, a)", "enumerate(zip(feats, self.attns, strict=True), start=1)", "a", [("MHA102", 20)]),
    # the wrong element, a splat, a shadowed zip: unknown
    ("f, p", "zip(feats, self.projs)", "p", []),
    ("f, a", "zip(*pairs)", "a", []),
    ("f, a", "reversed(list(zip(feats, self.attns)))", "a", []),
])
def test_zip_and_enumerate_keep_module_identity(target, iterable, attn, want):
    src = LOOP.format(target=target, iterable=iterable, attn=attn).replace(
        "forward(self, feats)", "forward(self, feats, pairs=())")
    line = line_of(src, "h, _ =")
    assert found(src) == [(code, line, col) for code, col in want]


def test_a_local_zip_is_not_the_builtin():
    src = LOOP.format(target="f, a", iterable="zip(feats, self.attns)", attn="a")
    assert found("def zip(*a):\n    return a\n" + src) == []


# ---------------------------------------------------------- setattr / getattr

STAGES = """
class M(nn.Module):
    def __init__(self, names):
        super().__init__()
        for i in range(3):
            setattr(self, f"stage_{{i}}_reduction", nn.MultiheadAttention(64, 8, batch_first=True))
{more}
    def forward(self, x, lengths):
        pad = (torch.arange(x.shape[1])[None, :] >= lengths[:, None]).long()
        for i in range(3):
            x, _ = getattr(self, {name})(x, x, x, key_padding_mask=pad, need_weights=False)
        return x
"""


@pytest.mark.parametrize("more,name,want", [
    ("", 'f"stage_{i}_reduction"', [("MHA004", 20)]),
    ("        self.proj = nn.Linear(64, 64)\n", 'f"stage_{i}_reduction"', [("MHA004", 20)]),
    ('        setattr(self, "head", nn.Linear(64, 64))\n', 'f"stage_{i}_reduction"', [("MHA004", 20)]),
    # other literal parts; a dynamic setattr; a template that may name another
    # setattr's attribute; a plain attribute the template may name: unknown
    ("", 'f"stage_{i}_proj"', []),
    ("        for n in names:\n            setattr(self, n, nn.Identity())\n", 'f"stage_{i}_reduction"', []),
    ('        setattr(self, f"stage_{i}", nn.Identity())\n', 'f"stage_{i}_reduction"', []),
    ("        self.stage_9_reduction = nn.Identity()\n", 'f"stage_{i}_reduction"', []),
    ("", "name_of(i)", []),
])
def test_getattr_matches_setattr_templates(more, name, want):
    src = STAGES.format(more=more, name=name).replace("def forward", "def name_of(self, i):\n        return str(i)\n\n    def forward")
    line = line_of(src, "getattr(self")
    assert found(src) == [(code, line, col) for code, col in want]


def test_getattr_on_another_object_is_unknown():
    src = STAGES.format(more="", name='f"stage_{i}_reduction"').replace(
        "getattr(self,", "getattr(lengths,")
    assert found(src) == []


# ----------------------------------------------- constants and positional arguments

def test_derived_module_constants():
    src = """
    BASE = 64
    WIDTH = 3 * BASE
    HEADS = WIDTH // 64
    BAD = HEADS * 3 + 1
    a = nn.MultiheadAttention(WIDTH, HEADS, batch_first=True)
    b = nn.MultiheadAttention(WIDTH, BAD, batch_first=True)
    c = nn.MultiheadAttention(WIDTH, HEADS * 2, batch_first=True)
    """
    assert found(src) == [("MHA101", 9, 5), ("MHA008", 10, 5)]


def test_positional_constructor_arguments_beyond_the_first_two():
    src = """
    a = nn.MultiheadAttention(64, 8, 0.0, False, batch_first=True)
    b = nn.MultiheadAttention(64, 8, 0.0, True, True, False, None, None, True)
    c = nn.MultiheadAttention(64, 8, 0.0, True, False, False, None, None, True)
    d = nn.TransformerEncoderLayer(64, 8, 512, 0.1, "relu", 1e-5, True, False, False)
    e = nn.MultiheadAttention(64, 8, 0.0, True, False, False, None, None, False)
    """
    assert found(src, ("MHA901", "MHA902")) == [
        ("MHA901", 5, 5), ("MHA901", 6, 5), ("MHA901", 8, 5), ("MHA902", 9, 5)]


# ----------------------------------------------------------- branch-chosen dropout

@pytest.mark.parametrize("body,want", [
    ("p = self.p if self.training else 0.0\n", []),
    ("p = self.p\nif not self.training:\n    p = 0.0\n", []),
    ("p = 0.0\nif self.training:\n    p = self.p\n", []),
    ("p = self.p\n", [("MHA007", "call", 16)]),
])
def test_dropout_chosen_by_branches(body, want):
    lines = textwrap.indent(body, " " * 8)
    src = ("class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
           "        self.p = 0.1\n\n    def forward(self, q, k, v):\n" + lines
           + "        return F.scaled_dot_product_attention(q, k, v, dropout_p=p)\n")
    line = line_of(src, "scaled_dot_product_attention(")
    assert found(src) == [(c, line, col) for c, _, col in want]


# ---------------------------------------------------------------- the fixture

FIXTURE = FIXTURES / "MHA102_reach_patterns.py"
_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>MHA\d{3}) ")


def test_fixture_through_the_engine():
    got = {(f.line, f.col, f.code) for f in analyze_source(FIXTURE.read_text(encoding="utf-8"))}
    assert got == expected(FIXTURE)
    assert len(got) == 12


def test_fixture_through_real_flake8():
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "MHA",
         os.path.join("fixtures", FIXTURE.name)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    got = set()
    for line in proc.stdout.splitlines():
        m = _LINE.match(line)
        assert m, line
        got.add((int(m["line"]), int(m["col"]), m["code"]))
    assert got == expected(FIXTURE)
    assert "21:18: MHA005 is_causal=True without mask: TransformerEncoder" in proc.stdout
    assert "88:20: MHA004 " in proc.stdout


@pytest.mark.parametrize("owner", ["self.t.encoder", "self.enc"])
def test_loop_over_encoder_layers(owner):
    src = """
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.t = nn.Transformer(64, 8, batch_first=True)
            self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 8, batch_first=True), 2)

        def forward(self, x):
            for layer in OWNER.layers:
                x = layer(x, is_causal=True)
            return x
    """.replace("OWNER", owner)
    assert found(src) == [("MHA005", line_of(src, "x = layer("), 17)]
