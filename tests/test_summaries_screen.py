"""The text screen of ``summaries.summarise`` changes how much is read, never
what a summary says: the tables with and without it are equal on every
fixture, on torch's own ``nn`` package when it is installed, and on spellings
written to test the screen's edges."""

from __future__ import annotations

import ast
import importlib.util
import pathlib

import pytest

from flake8_mha.analysis.program import summaries
from flake8_mha.analysis.program.summaries import REEXPORTS, summarise
from flake8_mha.analysis.program.sdpa_names import sdpa_names_of

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _sources():
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")
    spec = importlib.util.find_spec("torch")  # finds torch without importing it
    if spec is not None and spec.submodule_search_locations:
        nn = pathlib.Path(list(spec.submodule_search_locations)[0]) / "nn"
        for path in sorted(nn.rglob("*.py")):
            yield (
                "torch/" + path.relative_to(nn.parent).as_posix(),
                path.read_text(encoding="utf-8"),
            )


@pytest.mark.parametrize("name,source", list(_sources()), ids=lambda v: v[:60])
def test_same_tables_with_and_without_the_screen(name, source):
    init = name.endswith("__init__.py")
    assert summarise(source, init, screen=True) == summarise(source, init, screen=False)


EDGES = {
    "aliased direct import": """
from torch.nn.functional import scaled_dot_product_attention as sdpa

def helper(x):
    return x

def attend(q, k, v, mask):
    return sdpa(q, k, v, attn_mask=mask)
""",
    "call split over a continuation line": """
import torch.nn.functional as F

def attend(q, k, v, mask):
    return F.\\
        scaled_dot_product_attention(q, k, v, attn_mask=mask)
""",
    "old Mac line endings": (
        "import torch.nn.functional as F\r\rdef noop(x):\r    return x\r\r"
        "def attend(q, k, v, mask):\r    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)\r"
    ),
    "factory and decorated method": """
import functools
import torch.nn.functional as F

def make(causal):
    def call(q, k, v, is_causal=causal):
        return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    return call

class Attn:
    @functools.wraps(make)
    def forward(self, q, k, v, mask=None):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
""",
}


@pytest.mark.parametrize("name", sorted(EDGES))
def test_edges_are_summarised(name):
    source = EDGES[name]
    got = summarise(source, screen=True)
    assert got == summarise(source, screen=False)
    assert got, "the wrapper must be found"


def test_old_mac_line_endings_find_the_right_function():
    got = summarise(EDGES["old Mac line endings"])
    assert set(got) == {"attend"}
    assert got["attend"]["reach"]["attn_mask"]["param"] == "mask"


def test_a_module_without_the_word_is_not_parsed(monkeypatch):
    calls = []
    real = ast.parse
    monkeypatch.setattr(summaries.ast, "parse", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert summarise("import torch\n\ndef f(x):\n    return torch.softmax(x, -1)\n") == {}
    assert calls == []
    # a package's __init__ is read for its re-exports all the same
    init = summarise("from .attention import Attention\n", package_init=True)
    assert init == {REEXPORTS: {"Attention": [1, "attention.Attention"]}}
    assert calls == [1]


@pytest.mark.parametrize(
    "source,expected",
    [
        ("from . import attention\n", {"attention": [1, "attention"]}),
        ("from .. import attend as a\n", {"a": [2, "attend"]}),
        ("from\\\n    .attention import Attention\n", {"Attention": [1, "attention.Attention"]}),
        (
            "try:\n    from .fast import attend\nexcept ImportError:\n    attend = None\n",
            {"attend": [1, "fast.attend"]},
        ),
        ("from torch.nn import functional\nimport os.path\n", None),
    ],
)
def test_reexports_are_read_through_the_screen(source, expected):
    got = summarise(source, package_init=True)
    assert got == summarise(source, package_init=True, screen=False)
    assert got.get(REEXPORTS) == expected


def _imports_by_full_walk(tree):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


@pytest.mark.parametrize("name,source", list(_sources()), ids=lambda v: v[:60])
def test_the_statement_walk_finds_every_import(name, source):
    # ``sdpa_names_of`` reads imports from ``statements``, which skips expressions
    tree = ast.parse(source)
    found = [n for n in summaries.statements(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert sorted(map(id, found)) == sorted(map(id, _imports_by_full_walk(tree)))


IMPORT_PLACES = """
import torch as t0
if x:
    import torch as t1
elif y:
    import torch as t2
else:
    import torch as t3
try:
    import torch as t4
except ImportError:
    import torch as t5
else:
    import torch as t7
finally:
    import torch as t8
try:
    pass
except* ValueError:
    import torch as t6
for i in range(3):
    import torch as t9
else:
    import torch as t10
while False:
    import torch as t11
with open("f") as fh:
    import torch as t12
async def f():
    async with a:
        import torch as t13
    async for b in c:
        import torch as t14
class C:
    def m(self):
        def inner():
            from torch.nn.functional import scaled_dot_product_attention as t15
match v:
    case 1:
        import torch as t16
"""


def test_the_statement_walk_reaches_imports_in_every_block():
    tree = ast.parse(IMPORT_PLACES)
    direct, modules = sdpa_names_of(tree)
    assert direct == {"t15"}
    assert {local for local, _ in modules} == {f"t{i}" for i in range(17) if i != 15}
