"""Probe V's B19 (MOTR's query interaction module): ``make_self_attn =
partial(nn.MultiheadAttention, 128, 8, dropout=0.0)`` in one file, called
``make_self_attn()`` in another, builds the module there, as in one file:
fed batch-first queries, MHA001 at the call that builds it."""

from __future__ import annotations

from flake8_mha.lint.engine import analyze_file

FACTORY = """\
from functools import partial

import torch.nn as nn

make_self_attn = partial(nn.MultiheadAttention, 128, 8, dropout=0.0)
make_batch_first = partial(nn.MultiheadAttention, 128, 8, batch_first=True)
"""

QIM = """\
import torch.nn as nn

from .factory import make_batch_first, make_self_attn


class QIM(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn = make_self_attn()
        self.other = make_batch_first()

    def forward(self, track_queries):
        B, Q, D = track_queries.shape
        q = track_queries
        out = self.self_attn(q, q, q, need_weights=False)[0]
        return out + self.other(q, q, q, need_weights=False)[0]
"""


def test_a_partial_of_another_file_builds_the_module_at_its_call(tmp_path):
    pkg = tmp_path / "m"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "factory.py").write_text(FACTORY)
    (pkg / "qim.py").write_text(QIM)
    got = analyze_file(str(pkg / "qim.py"), ["MHA001", "MHA010"])
    assert [(f.line, f.col, f.code) for f in got] == [(9, 26, "MHA001")]
    assert (
        "fed batch-first data ((N, ?, E), line 13: `B, Q, D = track_queries.shape`)"
        in got[0].message
    )
    assert analyze_file(str(pkg / "factory.py"), ["MHA001", "MHA010"]) == []
