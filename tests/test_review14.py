"""Release review 14 (twenty-third stop): the false findings it found, each
as the smallest code that gave it, and the miss it found.

- moltransformer: ``batch_size = ids.size(0)`` on token ids made the layout
  of ``self.emb(ids).permute(1, 0, 2)`` unknown (MHA001 on sequence-first
  data), and so did ``self.dec(tgt.float(), ...)`` after ``tgt =
  ...permute(1, 0, 2)``;
- linmult: MHA102 in the unit tests the release ships (a speed finding in a
  test is nobody's cost), and a module built by a static method of a
  factory class, whose weights are thrown away, was missed."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from flake8_mha.lint.engine import analyze_source
from flake8_mha.lint.selection import in_tests

LAYOUT = ("MHA001", "MHA101", "MHA903")


def _found(src, path="m.py", codes=LAYOUT):
    return [(f.code, f.line, f.col) for f in analyze_source(textwrap.dedent(src), path, codes)]


BATCH_SIZE = """\
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 32)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 3, 64, 0.1), num_layers=2)

    def forward(self, ids):
        x = self.emb(ids).permute(1, 0, 2)
        batch_size = ids.size(0)
        return self.enc(x, src_key_padding_mask=(ids == 0))
"""


def test_a_batch_size_read_from_token_ids_says_nothing_of_the_embedded_data():
    assert _found(BATCH_SIZE) == [("MHA903", 8, 42)]
    # a shape unpacking states the ids' rank, and is read: (N, S) embedded is (N, S, E)
    stated = BATCH_SIZE.replace("batch_size = ids.size(0)", "batch_size, n = ids.shape")
    assert _found(stated) == [("MHA903", 8, 42)]
    batch_first = stated.replace(".permute(1, 0, 2)", "")
    assert _found(batch_first) == [("MHA001", 8, 42), ("MHA101", 8, 42)]


def test_a_cast_in_the_module_call_keeps_the_swap_it_is_made_on():
    src = """\
    import torch
    import torch.nn as nn


    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(100, 32)
            self.dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(32, 4, 64, 0.1), num_layers=2)

        def greedy(self, memory, max_len: int = 20):
            memory_ = memory[:, 0, :].reshape((max_len, 1, 32))
            ys = torch.tensor([[1]], dtype=torch.long)
            for _ in range(max_len):
                tgt = self.emb(ys).permute(1, 0, 2)
                out = self.dec(tgt.float(), memory_.float())
                ys = torch.cat((ys, out[-1].argmax(-1, keepdim=True)), dim=1)
            return ys
    """
    assert _found(src) == [("MHA903", 9, 42)]


SPEED = """\
import torch.nn as nn

attn = nn.MultiheadAttention(96, 3, batch_first=True)


def shape_test(x, ids):
    out, _ = attn(x, x, x, key_padding_mask=ids != 0)
    return out.shape
"""


def test_speed_codes_are_not_reported_in_test_files():
    codes = ("MHA101", "MHA102", "MHA003")
    assert _found(SPEED, "pkg/model.py", codes) == [
        ("MHA101", 3, 8),
        ("MHA003", 7, 14),
        ("MHA102", 7, 14),
    ]
    for path in ("pkg/test/test_attention.py", "tests/helpers.py", "attn_test.py", "conftest.py"):
        assert _found(SPEED, path, codes) == [("MHA003", 7, 14)], path


def test_what_is_a_test_file():
    yes = ["test_x.py", "a/tests/x.py", "a/test/x.py", "a/testing/x.py", "a/x_test.py", "conftest.py"]
    no = ["model.py", "test.py", "tests.py", "contest.py", "home/tests/proj/model.py", "a/latest.py"]
    assert [p for p in yes if not in_tests(p)] == []
    assert [p for p in no if in_tests(p)] == []


def test_speed_codes_in_a_test_file_through_flake8(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_attention.py").write_text(SPEED)
    (tmp_path / "model.py").write_text(SPEED)
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "MHA", "model.py", "tests"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    rows = sorted(line.split(" ", 2)[:2] for line in proc.stdout.splitlines())
    assert (proc.returncode, rows) == (1, [
        ["model.py:3:8:", "MHA101"],
        ["model.py:7:14:", "MHA003"],
        ["model.py:7:14:", "MHA102"],
        ["tests/test_attention.py:7:14:", "MHA003"],
    ])


def test_a_module_a_static_method_of_a_factory_class_builds():
    src = """\
    import torch.nn as nn


    class Factory:
        @staticmethod
        def create(d_model, n_heads):
            return nn.MultiheadAttention(embed_dim=d_model, num_heads=n_heads, batch_first=True)

        @classmethod
        def build(cls, d_model):
            return nn.MultiheadAttention(d_model, 8, batch_first=True)

        def plain(self, d_model):
            return nn.MultiheadAttention(d_model, 8, batch_first=True)


    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = Factory.create(64, 8)
            self.b = Factory.build(64)
            self.c = Factory.plain(None, 64)

        def forward(self, x):
            x, _ = self.a(x, x, x)
            y = self.b(x, x, x)[0]
            return self.c(y, y, y)[0]
    """
    # ``Factory.plain`` is a method called through its class: its ``self`` is an argument
    assert _found(src, codes=("MHA102",)) == [("MHA102", 25, 16), ("MHA102", 26, 13)]
