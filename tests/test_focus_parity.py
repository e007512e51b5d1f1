"""The focused parse (``focus.py``: irrelevant definitions blanked) gives
exactly the findings of the full parse: code, line, column, message and
evidence (what the confirmer runs on), on
every fixture, every rule's examples and torch's own attention files."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

from fixture_expect import fixture_files
from flake8_mha.analysis import focus as focus_mod
from flake8_mha.lint.engine import analyze_source, select_codes
from flake8_mha.rules.base import all_rules

EVERY = select_codes(["MHA"])
TORCH_FILES = ("nn/modules/activation.py", "nn/modules/transformer.py", "nn/functional.py")


def _both(source: str, path: str):
    focused = analyze_source(source, path, EVERY)
    focus_mod.FOCUS = False
    try:
        full = analyze_source(source, path, EVERY)
    finally:
        focus_mod.FOCUS = True
    as_rows = lambda fs: [(f.code, f.line, f.col, f.message, repr(f.evidence)) for f in fs]  # noqa: E731
    return as_rows(focused), as_rows(full)


def _torch_file(rel: str) -> pathlib.Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("torch is not installed")
    return pathlib.Path(list(spec.submodule_search_locations)[0]) / rel


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.name)
def test_fixture_findings_are_those_of_the_full_parse(path):
    focused, full = _both(path.read_text(encoding="utf-8"), str(path))
    assert focused == full


def _examples():
    for rule in all_rules():
        for i, src in enumerate(rule.VALID):
            yield pytest.param(src, id=f"{rule.CODE}-valid-{i}")
        for i, ex in enumerate(rule.INVALID):
            yield pytest.param(ex.source, id=f"{rule.CODE}-invalid-{i}")


@pytest.mark.parametrize("source", list(_examples()))
def test_rule_example_findings_are_those_of_the_full_parse(source):
    focused, full = _both(source, "example.py")
    assert focused == full


@pytest.mark.parametrize("rel", TORCH_FILES)
def test_torch_attention_file_findings_are_those_of_the_full_parse(rel):
    path = _torch_file(rel)
    source = path.read_text(encoding="utf-8")
    focused, full = _both(source, str(path))
    assert focused == full


@pytest.mark.parametrize("rel", ["nn/modules/activation.py", "nn/functional.py"])
def test_torch_attention_files_are_parsed_in_part(rel):
    """The point of focus: what cannot matter is never handed to LibCST (in
    transformer.py every definition is about attention: it is parsed whole)."""
    source = _torch_file(rel).read_text(encoding="utf-8")
    kept = sum(1 for line in focus_mod.focus(source).splitlines() if line.strip())
    total = sum(1 for line in source.splitlines() if line.strip())
    assert kept < 0.8 * total


def test_a_method_that_calls_what_init_built_is_kept():
    src = (
        "import torch.nn as nn\n"
        "class Block(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.attn = nn.MultiheadAttention(64, 8)\n"
        "    def unrelated(self, x):\n"
        "        return x + 1\n"
        "    def forward(self, x):\n"
        "        return self.attn(x, x, x)\n"
    )
    out = focus_mod.focus(src)
    assert "return self.attn(x, x, x)" in out
    assert "return x + 1" not in out
    assert out.count("\n") == src.count("\n")
    focused, full = _both(src, "block.py")
    assert focused == full and [r[:3] for r in full] == [("MHA001", 5, 21)]


def test_a_function_that_uses_an_instance_of_a_relevant_class_is_kept():
    src = (
        "import torch.nn as nn\n"
        "class Block(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.attn = nn.MultiheadAttention(64, 8)\n"
        "    def forward(self, x):\n"
        "        return self.attn(x, x, x)[0]\n"
        "block = Block()\n"
        "def run(x):\n"
        "    B, L, E = x.shape\n"
        "    return block(x)\n"
        "def other(x):\n"
        "    return x\n"
    )
    out = focus_mod.focus(src)
    assert "return block(x)" in out and "    return x\n" not in out
    focused, full = _both(src, "block.py")
    assert focused == full and "line 10" in full[0][3]


def test_module_statements_that_nothing_kept_reads_go():
    src = (
        "import torch\n"
        "TABLE = [dict(name='abs'), dict(name='neg')]\n"
        "register(TABLE)\n"
        "LIMIT = 3\n"
        "def f(q):\n"
        "    return torch.softmax(q, -1)[:LIMIT]\n"
    )
    out = focus_mod.focus(src)
    assert "TABLE" not in out and "LIMIT = 3" in out and out.count("\n") == src.count("\n")


def test_a_function_that_uses_a_relevant_class_is_kept():
    src = (
        "import torch.nn as nn\n"
        "class MyAttn(nn.MultiheadAttention):\n"
        "    pass\n"
        "def helper(x):\n"
        "    return x * 2\n"
        "def run(q):\n"
        "    m = MyAttn(64, 8)\n"
        "    return m(q, q, q)\n"
    )
    out = focus_mod.focus(src)
    assert "m = MyAttn(64, 8)" in out and "return x * 2" not in out


def test_a_class_whose_every_method_goes_keeps_a_body():
    src = (
        "import torch\n"
        "class Cfg:\n"
        "    def a(self):\n"
        "        return 1\n"
        "    def b(self):\n"
        "        return 2\n"
        "def f(q):\n"
        "    return torch.softmax(q, -1)\n"
        "Cfg.extra = torch.softmax\n"
    )
    out = focus_mod.focus(src)
    compile(out, "x.py", "exec")
    assert "return 1" not in out and out.count("\n") == src.count("\n")


def test_a_file_libcst_refuses_is_still_reported_so():
    """A statement LibCST's parser gives up on (10,000 implicitly joined strings on
    one line) is not hidden by focus: the file gets the MHA000 the full parse gives."""
    strings = " ".join(["'a'"] * 10_000)
    src = f"import torch  # nn.Transformer\nx = {strings}\n"
    focused, full = _both(src, "d.py")
    assert focused == full and [r[0] for r in full] == ["MHA000"]


def test_the_forward_of_a_class_kept_code_builds_is_kept():
    # LAVIS's CLIP: a LayerNorm subclass whose forward names nothing relevant;
    # blanked, the layout died at ``self.ln_1(x)`` and MHA001 fired on
    # sequence-first data
    src = (
        "import torch.nn as nn\n"
        "import torch.nn.functional as F\n"
        "class LayerNorm(nn.LayerNorm):\n"
        "    def forward(self, x):\n"
        "        orig_type = x.dtype\n"
        "        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)\n"
        "        return x.to(orig_type)\n"
        "    def extra_repr(self):\n"
        "        return 'fp16-safe'\n"
        "class Block(nn.Module):\n"
        "    def __init__(self, d):\n"
        "        super().__init__()\n"
        "        self.attn = nn.MultiheadAttention(d, 8)\n"
        "        self.ln_1 = LayerNorm(d)\n"
        "    def forward(self, x):\n"
        "        h = self.ln_1(x)\n"
        "        return self.attn(h, h, h, need_weights=False)[0]\n"
        "class Tower(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.block = Block(64)\n"
        "    def forward(self, x):\n"
        "        x = x.permute(1, 0, 2)  # NLD -> LND\n"
        "        return self.block(x)\n"
    )
    out = focus_mod.focus(src)
    assert "return x.to(orig_type)" in out and "fp16-safe" not in out
    focused, full = _both(src, "clip.py")
    assert focused == full and [r[:3] for r in full] == [("MHA903", 13, 21)]  # not MHA001
