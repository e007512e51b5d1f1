"""The lean start-position finder agrees with LibCST's PositionProvider on every node."""
from __future__ import annotations

import pathlib

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from flake8_mha.lint.engine import start_positions
from fixture_expect import fixture_files

TRICKY = [
    "x = 1\r\ny = f(\r\n    a,\r\n    b)\r\n",
    "a = 1\rb = g(a)\r",
    "\x0cimport torch\n\x0c\nz = torch.nn.MultiheadAttention(4, 2)\n",
    "if True:\n\tx = (  # comment\n\t\tfoo(1)\n\t)\n",
    "@dec(\n  1)\n@other\ndef f(a, *, b=(1 +\n 2)):\n    return (((a)))\n",
    "s = f'{x!r:>{w}}' + rb'\\x00' b'''\nmulti\n'''\n",
    "x = \\\n    call(a)[1].b(c)\nlambda: (yield)\n",
    "class A(B, metaclass=M):\n    x: int = (1)\n    def g(self): ...\n",
    "",
    "\n\n# only a comment",
    "with (a as b, c as d):\n    pass\nmatch x:\n    case [1, *rest] if rest:\n        pass\n",
]


class _All(cst.CSTVisitor):
    def __init__(self):
        self.nodes = []

    def on_visit(self, node):
        self.nodes.append(node)
        return True


def _compare(source: str) -> int:
    module = cst.parse_module(source)
    collector = _All()
    module.visit(collector)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    got = start_positions(module, collector.nodes)
    for node in collector.nodes:
        want = expected[node].start
        assert got[id(node)] == (want.line, want.column), (type(node).__name__, source[:80])
    return len(collector.nodes)


@pytest.mark.parametrize("source", TRICKY)
def test_tricky_sources(source):
    _compare(source)


def test_fixtures_and_package_sources():
    root = pathlib.Path(__file__).resolve().parent.parent
    paths = list(fixture_files()) + sorted((root / "flake8_mha").glob("*.py"))
    assert paths
    total = 0
    for path in paths:
        total += _compare(path.read_text(encoding="utf-8"))
    assert total > 1000


def test_early_stop_gives_the_same_start_for_a_few_nodes():
    call = "y = torch.nn.functional.scaled_dot_product_attention(q, k, v)\n"
    source = "import torch\n" + "x = 1\n" * 50 + call + "z = 2\n" * 50
    module = cst.parse_module(source)
    call = module.body[51].body[0].value
    assert isinstance(call, cst.Call)
    assert start_positions(module, [call, call])[id(call)] == (52, 4)


def test_a_large_real_module():
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("torch is not installed: no large real module at hand")
    root = pathlib.Path(list(spec.submodule_search_locations)[0])
    path = root / "nn" / "modules" / "activation.py"
    if not path.exists():
        pytest.skip(f"{path} not found")
    assert _compare(path.read_text(encoding="utf-8")) > 10000
