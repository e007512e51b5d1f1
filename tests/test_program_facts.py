"""Facts the rest of the package fixes about a layer (issue 26, "facts from
the whole project"):

- a constructor default that names a constant of the package
  (``embed_dim=TAG_DIM`` after ``from .config import TAG_DIM``) is that
  constant when every construction leaves it out (MHA008);
- the calls of instances kept in containers (``nn.ModuleList([Block() for
  _ in range(n)])``, ``nn.Sequential(*[...])``) and called in loops (``for
  blk in self.blocks``, ``enumerate``) or by item (``self.blocks[i](x)``)
  are the layer's calls: a mask parameter none of them fills is None
  (MHA005);
- a branch under ``if self.causal:`` never runs when every construction
  passes ``causal=False``: nothing in it is judged.

Checked as a user sees it: the exact code, line and column, over the
package, one file at a time and through ``check``."""
from __future__ import annotations

import ast
import textwrap

from fixture_expect import ROOT, assert_package_runs
from flake8_mha.analysis.program import call_index, callers
from flake8_mha.core.torch_api import TRIGGER_WORDS

PACKAGE = "fixtures/program_calls/facts"
WANT = [
    ("layers.py", 13, 21, "MHA008"),
    ("layers.py", 36, 16, "MHA005"),
    ("layers.py", 74, 20, "MHA005"),
]


def test_over_the_package_one_file_at_a_time_and_through_check():
    assert [w for w in TRIGGER_WORDS if w in (ROOT / PACKAGE / "tagger.py").read_text()] == []
    assert_package_runs(PACKAGE, WANT)


def _calls(text: str, cls: str):
    index = call_index.Index(ast.parse(textwrap.dedent(text)))
    return callers._instance_calls([index], cls, callers._kept([index], cls))


def test_items_of_containers_are_called_in_loops_and_by_index():
    got = _calls("""
        class M:
            def __init__(self):
                self.blocks = nn.ModuleList([Block(d) for _ in range(2)])
                self.seq = nn.Sequential(*[Block(d), Block(d)])
            def forward(self, x, m):
                for blk in self.blocks:
                    x = blk(x)
                for i, blk in enumerate(self.blocks):
                    x = blk(x, mask=m)
                x = self.blocks[0](x, 1)
                return self.seq(x)
        """, "Block")
    assert sorted((len(c.args), sorted(c.keywords)) for c in got) == [
        (1, []), (1, []), (1, ["mask"]), (2, [])]


def test_a_container_read_otherwise_or_filled_by_another_class_is_not_followed():
    read = """
        class M:
            def __init__(self):
                self.blocks = nn.ModuleList([Block(d) for _ in range(2)])
            def forward(self, x):
                for blk in self.blocks:
                    x = blk(x)
                return x, len(self.blocks)
        """
    assert _calls(read, "Block") is None  # read by len(): its use is not all calls
    other = """
        class M:
            def __init__(self):
                self.blocks = nn.ModuleList([Block(d) for _ in range(2)])
            def forward(self, x):
                for blk in self.blocks:
                    x = blk(x)
                return x
        class N:
            def __init__(self):
                self.blocks = nn.ModuleList([Other(d) for _ in range(2)])
            def forward(self, x, m):
                for blk in self.blocks:
                    x = blk(x, m)
                return x
        """
    got = _calls(other, "Block")
    assert [len(c.args) for c in got] == [1]  # N's loop calls Other's instances
    handed = """
        class M:
            def __init__(self):
                self.blocks = nn.ModuleList([Block(d) for _ in range(2)])
            def forward(self, x):
                for blk in self.blocks:
                    x = run(blk, x)
                return x
        """
    assert _calls(handed, "Block") is None  # an item handed to a function
